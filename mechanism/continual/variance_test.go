package continual

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpstream/dpstream/internal/racedetect"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// measure runs reps seeded releases of the plan over its whole horizon at
// zCDP rho, with the exact discrete Gaussian on the plan's lattice (the
// production path, Run), and returns the empirical variance of the
// released total at every window (the error's mean is known to be 0, so
// the estimate is the mean squared error; its standard error is
// var·√(2/reps)).
func measure(t *testing.T, p *Plan, rho float64, reps int, seed uint64) []float64 {
	t.Helper()
	sigma, err := p.SigmaForRho(rho)
	if err != nil {
		t.Fatal(err)
	}
	s := noise.New(noise.SeededSource(seed))
	x := make([]int64, p.t)
	for i := range x {
		x[i] = int64(i % 3)
	}
	mse := make([]float64, p.t)
	for rep := 0; rep < reps; rep++ {
		got, _, err := Run(p, s, sigma, x)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for i, v := range got {
			sum += x[i]
			e := v - float64(sum)
			mse[i] += e * e
		}
	}
	for i := range mse {
		mse[i] /= float64(reps)
	}
	return mse
}

// TestMaxVarianceAgainstTheory: at T = 1024 and ρ = 0.5, for units in one
// window (k = 1) and in every window (k = T), the measured variance at the
// worst window (argmax_t ‖B_t‖²) is within 5 SE of σ²·max_t ‖B_t‖²; at
// k = 1 sqrt and blt are ≥ 10× below per-window summation, measured and in theory;
// Auto picks per_window at k = T.
func TestMaxVarianceAgainstTheory(t *testing.T) {
	racedetect.SkipStatistical(t)
	const n, rho, reps = 1024, 0.5, 1000
	se := math.Sqrt(2.0 / reps)
	for _, k := range []int{1, n} {
		theory := map[Method]float64{}
		measured := map[Method]float64{}
		for mi, m := range Methods {
			p, err := NewPlan(m, n, k, 1)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := p.MaxVarianceAtRho(rho)
			sigma, _ := p.SigmaForRho(rho)
			worst := 0
			for i := 0; i < n; i++ {
				if p.Variance(i, sigma) > p.Variance(worst, sigma) {
					worst = i
				}
			}
			mse := measure(t, p, rho, reps, uint64(100*k+mi))
			got := mse[worst]
			maxGot := 0.0
			for _, v := range mse {
				maxGot = math.Max(maxGot, v)
			}
			if math.Abs(got-want) > 5*se*want {
				t.Errorf("k=%d %s: variance at window %d measured %.4g, theory %.4g (5 SE = %.3g)", k, m, worst, got, want, 5*se*want)
			}
			t.Logf("k=%d %-10s Δ=%-8.4g max var theory %-10.5g measured %-10.5g (±%.2g SE) at t=%d; max over t of estimates %.5g",
				k, m, p.Sensitivity(), want, got, se*want, worst, maxGot)
			theory[m], measured[m] = want, got
		}
		t.Log(fmt.Sprintf("k=%d per_window/sqrt: theory %.2f measured %.2f; per_window/tree: theory %.2f measured %.2f",
			k, theory[PerWindow]/theory[Sqrt], measured[PerWindow]/measured[Sqrt], theory[PerWindow]/theory[Tree], measured[PerWindow]/measured[Tree]))
		t.Logf("k=%d per_window/blt: theory %.2f measured %.2f", k, theory[PerWindow]/theory[BLT], measured[PerWindow]/measured[BLT])
		for _, m := range []Method{Sqrt, BLT} {
			if k == 1 && (theory[PerWindow] < 10*theory[m] || measured[PerWindow] < 10*measured[m]) {
				t.Errorf("k=1: per_window/%s = %.2f theory, %.2f measured; want ≥ 10", m, theory[PerWindow]/theory[m], measured[PerWindow]/measured[m])
			}
		}
		auto, err := Auto(n, k, 1)
		if err != nil {
			t.Fatal(err)
		}
		autoVar, _ := auto.MaxVarianceAtRho(rho)
		if autoVar > theory[PerWindow] {
			t.Errorf("k=%d: auto (%s) %.4g worse than per_window %.4g", k, auto.Method(), autoVar, theory[PerWindow])
		}
		t.Logf("k=%d: auto picks %s", k, auto.Method())
	}
}

// TestFixedPointQuality: rounding the factor to F = 24 fractional bits
// changes the worst window's variance at equal ρ (Δ²·max_t ‖B_t‖², k = 1)
// by a relative amount below 1e-6 for sqrt and blt at T = 1024, against
// the unrounded factor (sqrt: B = C; blt: B = A·C⁻¹ from the buffers).
func TestFixedPointQuality(t *testing.T) {
	const n = 1024
	for _, m := range []Method{Sqrt, BLT} {
		p, err := NewPlan(m, n, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		var c, bc []float64
		if m == Sqrt {
			c = sqrtCoefficients(n)
			bc = c
		} else {
			var r []float64
			r, c = bltCoefficients(p.blt, n)
			var pre float64
			for _, v := range r {
				pre += v
				bc = append(bc, pre)
			}
		}
		// k = 1: the largest column of a Toeplitz C is the first (Σ c²);
		// the largest row of B is the last.
		var maxRow float64
		for t := range bc {
			maxRow = math.Max(maxRow, sumSq(bc[:t+1]))
		}
		exact := sumSq(c) * maxRow
		rounded := p.Sensitivity() * p.Sensitivity() * p.maxRow
		rel := rounded/exact - 1
		t.Logf("%s T=%d: Δ²·max‖B_t‖² unrounded %.12g, F=%d %.12g, relative %+.3g", m, n, exact, fixedBits, rounded, rel)
		if math.Abs(rel) > 1e-6 {
			t.Errorf("%s: fixed-point factor moves the max variance by %.3g", m, rel)
		}
	}
}
