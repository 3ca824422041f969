package running_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// halfL2 is a broken continual statistic: it claims half the histogram's
// L2 sensitivity, so the plan calibrates half the noise it needs.
type halfL2 struct{ kind.Totals }

func (h halfL2) TotalsShape() kind.TotalsShape {
	s := h.Totals.TotalsShape()
	s.L2 /= 2
	return s
}

// TestPrivacyAudit audits a continual histogram end to end through the
// kind (running.Plan, its Run, the published running totals), for the
// vector argument the package states: a unit moves the bins' vector by at
// most L2 per window (here L = 3 with max_per_bin 2: d = (2, 1, 0), L2 =
// √5), and the whole release is calibrated to L2 times the factor's
// sensitivity. Horizon 1, so the factor is [1] for every method and the
// published totals are the mechanism's output itself (tree: lattice 1;
// sqrt: lattice 2^−24). The statistic is the projection of the totals on
// d, the likelihood-ratio statistic of the two output laws. The claim
// audited is the charge's own, ρ-zCDP, in its tightest (ε, δ) form: the
// Gaussian mechanism with Δ/σ = √(2ρ) is exactly ε*-DP at δ with
// GaussianDelta(ε*, σ/Δ, 1) = δ. (The release's configured ε = 4 comes
// from the looser zCDP conversion; ε* = 3.70. With these samples the
// lower bound for half the noise, about 3.9, falls between the two, and
// for the right noise about 1.9: the audit resolves the tight claim.)
// The calibrated plan must stay at or below
// ε*; the broken one (L2 halved, so half the noise) must be caught. Fixed
// seeds; the bound errs with probability at most alpha = 1e-6.
func TestPrivacyAudit(t *testing.T) {
	const trials, alpha, eps, delta = 60000, 1e-6, 4.0, 1e-5
	for ci, method := range []string{"tree", "sqrt"} {
		t.Run(method, func(t *testing.T) {
			src := strings.Replace(strings.Replace(head, "%s", "", 1), "budget: {epsilon: 100", "budget: {epsilon: 1000", 1) +
				fmt.Sprintf("      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, max_per_bin: 2, noise: gaussian, epsilon: %g, delta: %g, continual: {horizon: 1, method: %s}}\n", eps, delta, method)
			cfg, err := config.Parse([]byte(src), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ps, err := plan.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			good := ps[0].Releases[0].Kind.(*running.Plan)
			if l2 := good.Totals.TotalsShape().L2; l2 != math.Sqrt(5) {
				t.Fatalf("L2 %v, want √5", l2)
			}
			st := &cfg.Streams[0]
			bad, err := running.New(st, st.Releases[0], halfL2{good.Totals})
			if err != nil {
				t.Fatal(err)
			}
			d := []float64{2, 1, 0}
			rho := good.Charges()[0].Noise.Epsilon
			tight := tightEpsilon(t, rho, delta)
			t.Logf("ρ = %.5g: tight ε* = %.4g at δ = %g (configured ε = %g)", rho, tight, delta, eps)
			x := []int64{7, 4, 9}
			x2 := []int64{x[0] + 2, x[1] + 1, x[2]}
			for _, tc := range []struct {
				p      kind.Running
				broken bool
			}{{good, false}, {bad.(kind.Running), true}} {
				seed := uint64(500 + 10*ci)
				a := auditOutputs(t, tc.p, x, d, trials, seed)
				b := auditOutputs(t, tc.p, x2, d, trials, seed+1)
				r := dpaudit.LowerBound(a, b, dpaudit.Thresholds(a, b, 0, dpaudit.Quantiles), delta, alpha)
				t.Logf("broken=%v: %v", tc.broken, r)
				switch {
				case !tc.broken && r.Epsilon > tight:
					t.Errorf("calibrated: lower bound %v exceeds the charge's ε* = %v", r.Epsilon, tight)
				case tc.broken && r.Epsilon <= tight:
					t.Errorf("L2 halved: not caught, lower bound %v ≤ ε* = %v", r.Epsilon, tight)
				}
			}
		})
	}
}

// auditOutputs releases bins x through a fresh run of p trials times and
// returns each trial's projection of the running totals on d.
func auditOutputs(t *testing.T, p kind.Running, x []int64, d []float64, trials int, seed uint64) [][]float64 {
	t.Helper()
	s := noise.New(noise.SeededSource(seed))
	out := make([][]float64, trials)
	for i := range out {
		run, err := p.NewRun()
		if err != nil {
			t.Fatal(err)
		}
		var rel schema.Release
		if _, err := run.Release(aggregate.Stats{Bins: x}, 0, s, &rel); err != nil {
			t.Fatal(err)
		}
		var u float64
		for j, v := range rel.RunningTotals {
			u += v * d[j]
		}
		out[i] = []float64{u}
	}
	return out
}

// tightEpsilon returns the ε at which the Gaussian mechanism of
// sensitivity/σ = √(2ρ) is (ε, δ)-DP exactly (bisection on the
// Balle–Wang curve, noise.GaussianDelta).
func tightEpsilon(t *testing.T, rho, delta float64) float64 {
	t.Helper()
	sigma := 1 / math.Sqrt(2*rho)
	lo, hi := 0.0, 100.0
	for range 200 {
		mid := (lo + hi) / 2
		if noise.GaussianDelta(mid, sigma, 1) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
