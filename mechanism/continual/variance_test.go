package continual

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// measure runs reps seeded releases of the plan over its whole horizon at
// zCDP rho, with continuous Gaussian noise, and returns the empirical
// variance of the released total at every window (the error's mean is
// known to be 0, so the estimate is the mean squared error; its standard
// error is var·√(2/reps)).
func measure(t *testing.T, p *Plan, rho float64, reps int, seed uint64) []float64 {
	t.Helper()
	sigma, err := p.SigmaForRho(rho)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 14))
	draw := func() (float64, error) { return sigma * rng.NormFloat64(), nil }
	mse := make([]float64, p.t)
	for rep := 0; rep < reps; rep++ {
		r, err := NewReleaser(p, draw)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for i := 0; i < p.t; i++ {
			x := int64(i % 3)
			got, err := r.Next(x)
			if err != nil {
				t.Fatal(err)
			}
			sum += x
			e := got - float64(sum)
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
