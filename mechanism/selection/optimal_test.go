package selection

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// piGrid is the per-key (ε′, δ′) the π tests run on: ordinary, tiny and
// large budgets, so the three regimes of the recursion and the rounding
// near 1 are all exercised.
var piGrid = []struct{ eps, delta float64 }{
	{1, 1e-5}, {0.1, 1e-8}, {0.01, 1e-12}, {3, 1e-3}, {0.5, 0.2}, {1e-3, 1e-6}, {20, 1e-15}, {1, 1e-300},
}

// TestPiRecursion checks the properties of π the privacy and optimality
// claims rest on, for each budget: π(0) = 0 and π(1) = δ′ (up to the
// relative 2^−44 of slack); π nondecreasing and reaching exactly 1; the
// four (ε′, δ′) inequalities between neighbouring counts in plain float64
// (the slack makes them hold strictly); π within a relative 1e-9 of the
// exact recursion (so the slack costs no utility); and agreement with the
// paper's closed form (Desfontaines et al. 2022; Google's
// PreaggPartitionSelection): π(n) = δ′·(e^{nε′} − 1)/(e^{ε′} − 1) up to
// the crossover, then 1 − π(n) = (1 − π(n₁) + δ′/(e^{ε′} − 1))·e^{−(n−n₁)ε′}
// − δ′/(e^{ε′} − 1).
func TestPiRecursion(t *testing.T) {
	for _, g := range piGrid {
		t.Run(fmt.Sprintf("eps=%g/delta=%g", g.eps, g.delta), func(t *testing.T) {
			pi, err := optimalPi(g.eps, g.delta)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkPi(pi, g.eps, g.delta, 1); err != nil {
				t.Fatal(err)
			}
			e, d := math.Exp(g.eps), g.delta
			last := pi[len(pi)-1]
			if pi[0] != 0 || (last != 1 && (d > 1e-17 || last < 1-1e-15)) {
				t.Fatalf("π(0) = %v, π(N) = %v", pi[0], last)
			}
			if math.Abs(pi[1]-d) > 1e-11*d || pi[1] > d {
				t.Errorf("π(1) = %v, want just below δ′ = %v", pi[1], d)
			}
			em1 := math.Expm1(g.eps)
			n1 := -1 // the crossover: last n of the first regime
			for n := 1; n < len(pi); n++ {
				prev, cur := pi[n-1], pi[n]
				if cur < prev {
					t.Fatalf("π(%d) = %v < π(%d) = %v", n, cur, n-1, prev)
				}
				// The four inequalities: keep and drop, both directions.
				if cur > e*prev+d || prev > e*cur+d || 1-prev > e*(1-cur)+d || 1-cur > e*(1-prev)+d {
					t.Fatalf("π(%d) = %v, π(%d) = %v violate (ε′, δ′)", n-1, prev, n, cur)
				}
				exact := math.Min(1, math.Min(e*prev+d, 1+(prev+d-1)/e))
				if cur != 1 && (exact-cur > 1e-9*exact || (1-cur)-(1-exact) > 1e-9*(1-exact)+1e-15) {
					t.Errorf("π(%d) = %v is more than 1e-9 below the recursion's %v", n, cur, exact)
				}
				if n1 < 0 && e*prev+d > 1+(prev+d-1)/e {
					n1 = n - 1
				}
				closed := 0.0
				if n1 < 0 {
					closed = d * math.Expm1(float64(n)*g.eps) / em1
				} else {
					c := d / em1
					closed = 1 - ((1-pi[n1]+c)*math.Exp(-float64(n-n1)*g.eps) - c)
				}
				// Relative in the first regime (π is tiny there), absolute
				// after: near 1 the closed form subtracts two terms far larger
				// than 1 − π, and the slack's relative 2^−44 per step adds up.
				tol := 1e-9 * closed
				if n1 >= 0 {
					tol = 1e-9
				}
				if cur < 1 && closed < 1 && math.Abs(cur-closed) > tol {
					t.Errorf("π(%d) = %v, closed form %v", n, cur, closed)
				}
			}
			t.Logf("π reaches 1/2 at n = %d, and its last value %v at n = %d", firstAtLeast(pi, 0.5), last, len(pi)-1)
		})
	}
}

// firstAtLeast returns the first index i with pi[i] ≥ p.
func firstAtLeast(pi []float64, p float64) int {
	for i, v := range pi {
		if v >= p {
			return i
		}
	}
	return len(pi)
}

// TestPiCheckedAcrossBudgets builds Optimal over a grid of budgets and
// L0, so that the rigorous check of New (checkPi) is known to accept the
// recursion's output everywhere a configuration may land, not only on the
// hand-picked cases.
func TestPiCheckedAcrossBudgets(t *testing.T) {
	for _, eps := range []float64{1e-3, 0.0137, 0.1, 0.31, 1, 2.7, 9, 50} {
		for _, delta := range []float64{1e-20, 3e-16, 1e-12, 1e-9, 7e-7, 1e-5, 1e-3, 0.05, 0.5} {
			for _, l0 := range []int{1, 3} {
				if _, err := New(Params{Method: Optimal, Epsilon: eps, Delta: delta, MaxKeys: l0}); err != nil {
					t.Errorf("ε=%v δ=%v L0=%d: %v", eps, delta, l0, err)
				}
			}
		}
	}
}

// TestPiComposition checks the L0 > 1 treatment: Optimal runs π at
// (ε/L0, δ/L0), so its P[keep | n] is that table.
func TestPiComposition(t *testing.T) {
	s := mustNew(t, Params{Method: Optimal, Epsilon: 2, Delta: 1e-6, MaxKeys: 4})
	pi, err := optimalPi(0.5, 2.5e-7)
	if err != nil {
		t.Fatal(err)
	}
	for n := range int64(len(pi) + 3) {
		want := 1.0
		if n < int64(len(pi)) {
			want = pi[n]
		}
		if got := s.Probability(n); got != want {
			t.Fatalf("Probability(%d) = %v, π at (ε/4, δ/4) = %v", n, got, want)
		}
	}
}

// TestCheckPiRejects checks the verifier itself: π computed for a larger ε
// or δ than claimed, a decreasing table, one above δ at n = 1 by one ulp,
// and one that does not start at 0 must all be rejected.
func TestCheckPiRejects(t *testing.T) {
	const eps, delta = 1, 1e-5
	twoEps, _ := optimalPi(2*eps, delta)
	twoDelta, _ := optimalPi(eps, 2*delta)
	good, _ := optimalPi(eps, delta)
	// π(2) < π(1), while both (ε, δ) inequalities between them hold.
	decreasing := append([]float64{0, delta / 2, delta / 3}, good[3:]...)
	exactEdge := append([]float64(nil), good...)
	exactEdge[1] = math.Nextafter(delta, 1) // one ulp above δ′: P[keep | 1] > δ
	cases := []struct {
		name string
		pi   []float64
		want string
	}{
		{"π at 2ε", twoEps, "e^ε"},
		{"π at 2δ", twoDelta, "e^ε"},
		{"decreasing", decreasing, "nondecreasing"},
		{"π(0) above 0", append([]float64{delta / 2}, good[1:]...), "π(0) = 0"},
		{"π(1) above δ", exactEdge, "π(1)"},
	}
	for _, c := range cases {
		err := checkPi(c.pi, eps, delta, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: checkPi = %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
	if err := checkPi(good, eps, delta, 1); err != nil {
		t.Errorf("the calibrated table fails: %v", err)
	}
}
