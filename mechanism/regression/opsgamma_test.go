package regression

import (
	"math"
	"testing"
)

// TestOPSGamma checks that γ solves the quadratic of SPEC 4.5 (substituting
// √γ back gives ε to 1e-12 relative), that it grows with ε and h and
// shrinks with the Lipschitz bound, and that the infeasible and invalid
// cases are errors.
func TestOPSGamma(t *testing.T) {
	poly := func(eps, delta, h, lip, bx, s float64) float64 {
		w := math.Sqrt2 * math.Erfcinv(delta) * (1 + 1e-9)
		lg := w * w
		return lip*lip/(2*(h+bx*bx))*s*s + math.Sqrt(lip*lip*lg/h)*s + bx*bx*(1+lg)/(2*h) - eps
	}
	cases := [][5]float64{{1, 1e-6, 1e4, 3, 2}, {0.5, 1e-5, 1e6, 10, 3}, {2, 1e-8, 500, 0.1, 1}, {1, 1e-6, 1e4, 0, 2}}
	for _, c := range cases {
		g, err := OPSGamma(c[0], c[1], c[2], c[3], c[4])
		if err != nil {
			if c[3] == 0 {
				continue
			}
			t.Fatalf("OPSGamma%v: %v", c, err)
		}
		if c[3] == 0 {
			if !math.IsInf(g, 1) {
				t.Errorf("no Lipschitz term: gamma %v, want +Inf", g)
			}
			continue
		}
		if r := poly(c[0], c[1], c[2], c[3], c[4], math.Sqrt(g)); math.Abs(r) > 1e-12*c[0] {
			t.Errorf("OPSGamma%v = %v: residual %v", c, g, r)
		}
		g2, _ := OPSGamma(2*c[0], c[1], c[2], c[3], c[4])
		g3, _ := OPSGamma(c[0], c[1], 2*c[2], c[3], c[4])
		g4, _ := OPSGamma(c[0], c[1], c[2], 2*c[3], c[4])
		if !(g2 > g && g3 > g && g4 < g) {
			t.Errorf("OPSGamma%v = %v not monotone: 2ε %v, 2h %v, 2lip %v", c, g, g2, g3, g4)
		}
	}
	for _, bad := range [][5]float64{{1, 1e-6, 1, 3, 2}, {0, 1e-6, 1e4, 3, 2}, {1, 0, 1e4, 3, 2}, {1, 1e-6, -1, 3, 2}, {1, 1e-6, 1e4, math.NaN(), 2}, {1, 1e-6, 1e4, 3, 0}} {
		if _, err := OPSGamma(bad[0], bad[1], bad[2], bad[3], bad[4]); err == nil {
			t.Errorf("OPSGamma%v accepted", bad)
		}
	}
}
