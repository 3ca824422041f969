package regression

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// regAuditPair returns two neighbouring windows for a regression audit with
// one feature and no intercept (d = 1): d0 has 100 rows, and d1 adds one
// privacy unit's l rows at the worst case x = 1, y = 1, which moves XᵀX, Xᵀy
// and λ_min(XᵀX) = XᵀX by their full sensitivities (L·2³² units, L·2³² units
// and L·d = L).
func regAuditPair(t *testing.T, l int) (d0, d1 Stats) {
	t.Helper()
	sc := regScaling(1, false)
	d0 = NewStats(1)
	for i := range 100 {
		x := math.Sin(float64(i)) // spread over [−1, 1]
		xu, yu, _, err := sc.Row([]float64{x}, 0.5*x+0.1*math.Cos(float64(3*i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := d0.AddRow(xu, yu); err != nil {
			t.Fatal(err)
		}
	}
	d1 = NewStats(1)
	if err := d1.Merge(d0); err != nil {
		t.Fatal(err)
	}
	for range l {
		if err := d1.AddRow([]int64{regressionOne}, regressionOne); err != nil {
			t.Fatal(err)
		}
	}
	return d0, d1
}

// regHalfNoise is halfNoise (audit_test.go) with the halved discrete
// Gaussian scale rounded down to an integer: still about half the noise
// (σ is at least 2¹⁹ grid steps here), and the sampler keeps its fast
// integer path, which matters under the race detector.
type regHalfNoise struct{ n noise.Sampler }

func (h regHalfNoise) DiscreteLaplace(t float64) (int64, error) { return h.n.DiscreteLaplace(t / 2) }
func (h regHalfNoise) DiscreteGaussian(sigma float64) (int64, error) {
	return h.n.DiscreteGaussian(math.Max(math.Floor(sigma/2), 1))
}

// regAuditRun runs the audit of one mechanism: trials outputs on each of
// the two windows, thresholds on the given coordinate, and the ε lower
// bound at the claimed δ with confidence 1 − alpha. The calibrated
// mechanism must not exceed its claimed ε; the same mechanism drawing half
// the noise (regHalfNoise) must.
func regAuditRun(t *testing.T, eps, delta float64, coord, trials int, seed uint64,
	run func(nz noise.Sampler, second bool) []float64) {
	t.Helper()
	const alpha = 1e-6
	for _, broken := range []bool{false, true} {
		var nz noise.Sampler = noise.New(stattest.NewFastSource(seed))
		if broken {
			nz = regHalfNoise{nz}
		}
		a := make([][]float64, trials)
		b := make([][]float64, trials)
		for i := range trials {
			a[i] = run(nz, false)
			b[i] = run(nz, true)
		}
		r := dpaudit.LowerBound(a, b, dpaudit.Thresholds(a, b, coord, dpaudit.Quantiles), delta, alpha)
		label := fmt.Sprintf("calibrated (claimed ε=%g, δ=%g)", eps, delta)
		if broken {
			label = "half the noise"
		}
		t.Logf("%s: %v", label, r)
		switch {
		case !broken && r.Epsilon > eps:
			t.Errorf("%s: lower bound %v exceeds the claimed ε=%v", label, r.Epsilon, eps)
		case broken && r.Epsilon <= eps:
			t.Errorf("%s: the audit did not catch it: lower bound %v ≤ ε=%v", label, r.Epsilon, eps)
		}
	}
}

// TestSSPPrivacyAudit audits SSP's noise step, the only part of the release
// that touches the data (the solve is post-processing): noisyGram with the
// calibrated XᵀX and Xᵀy components, run 30000 times on two neighbouring
// windows that differ by one unit's L = 2 rows at the worst case (both
// statistics move by their full sensitivity). The output is the pair of
// noisy statistics in grid steps and the Neyman–Pearson statistic
// T = Σ_c Δ_c·o_c/σ_c² (with discrete Gaussian noise the log-likelihood
// ratio of the pair is increasing in T, so thresholds on T are the most
// powerful tests, also for half the noise). Budget ε = 2, δ = 1e-3: SSP is
// calibrated through zCDP, whose conversion leaves a margin the tests
// cannot see at small δ (as in TestHistogramPrivacyAudit); the calibration
// path is the same for every δ. The bound is wrong with probability at most
// alpha = 1e-6 (Clopper–Pearson with a union bound over all events and both
// directions), the false-failure rate of the calibrated check; the seed is
// fixed.
func TestSSPPrivacyAudit(t *testing.T) {
	t.Parallel()
	const eps, delta, l, trials = 2, 1e-3, 2, 30000
	c, err := Calibrate(Spec{Method: MethodSSP, Epsilon: eps, Delta: delta,
		Scaling: regScaling(1, false), MaxContributions: l})
	if err != nil {
		t.Fatal(err)
	}
	cg, cy := c.Components[0], c.Components[1]
	d0, d1 := regAuditPair(t, l)
	// Weights of T in grid steps: Δ_c/σ_c² with both in steps.
	wg := (cg.Sensitivity / cg.Granularity) / math.Pow(cg.Scale/cg.Granularity, 2)
	wy := (cy.Sensitivity / cy.Granularity) / math.Pow(cy.Scale/cy.Granularity, 2)
	regAuditRun(t, eps, delta, 2, trials, 401, func(nz noise.Sampler, second bool) []float64 {
		st := d0
		if second {
			st = d1
		}
		xtx, xty, err := noisyGram(cg, cy, st, nz)
		if err != nil {
			t.Fatal(err)
		}
		og, oy := xtx.At(0, 0)/cg.Granularity, xty.AtVec(0)/cy.Granularity
		return []float64{og, oy, wg*og + wy*oy}
	})
}

// TestRegressionLambdaMinPrivacyAudit audits the λ_min release (releaseLambdaMin: the
// exact grid index plus discrete Gaussian noise), as used by AdaSSP, on two
// neighbouring windows whose λ_min differs by the full sensitivity L·d. The
// component alone is ρ_λ-zCDP; the claimed ε is the one at which it is
// (ε, 1e-3)-DP by noise.ZCDPDelta, and the spec's budget (ε = 3.6) is chosen so
// that this is about 2, where half the noise is visible (see
// TestSSPPrivacyAudit). 30000 trials; false-failure rate alpha = 1e-6.
func TestRegressionLambdaMinPrivacyAudit(t *testing.T) {
	t.Parallel()
	const delta, l, trials = 1e-3, 2, 30000
	c, err := Calibrate(Spec{Method: MethodAdaSSP, Epsilon: 3.6, Delta: 1e-3,
		Scaling: regScaling(1, false), MaxContributions: l})
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Components[0]
	rho := componentRho(cl)
	// The smallest ε with noise.ZCDPDelta(ε, ρ_λ) ≤ δ, by bisection.
	lo, hi := 0.0, 20.0
	for range 100 {
		if mid := (lo + hi) / 2; noise.ZCDPDelta(mid, rho) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	d0, d1 := regAuditPair(t, l)
	regAuditRun(t, hi, delta, 0, trials, 402, func(nz noise.Sampler, second bool) []float64 {
		st := d0
		if second {
			st = d1
		}
		v, err := releaseLambdaMin(cl, st, nz)
		if err != nil {
			t.Fatal(err)
		}
		return []float64{v}
	})
}
