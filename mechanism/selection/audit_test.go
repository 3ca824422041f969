package selection

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// The privacy audit runs each selection many times on neighbouring windows
// and bounds ε from below with internal/dpaudit (Clopper–Pearson intervals
// over a family of events, union-bounded). A unit holds L0 keys; the two
// neighbour pairs are
//
//   - creation: the L0 keys are absent (n = 0) without the unit and held by
//     it alone (n = 1) with it, where only δ protects the unit;
//   - growth: the L0 keys have n0 units without it and n0 + 1 with it, at
//     n0 where the release probability is moderate (UnitsFor(0.1) and the
//     threshold of the variant audited), where the ε part binds.
//
// The output audited is, per run, the number of keys released and the
// smallest, the largest and the sum of the released noisy counts (−1 for a
// dropped key, and always for Optimal, which has none): what an observer of
// the release sees, reduced to statistics whose tails carry the privacy
// loss.

// auditEps and auditDelta are the audited budget: a δ large enough that
// a mechanism spending several times it is visible in 10^5 runs.
const (
	auditEps    = 1.0
	auditDelta  = 1e-3
	auditTrials = 100000
	auditAlpha  = 1e-6
)

// auditVariant is a selector to audit: the calibrated one, or a broken copy
// and the neighbour pair that must catch it.
type auditVariant struct {
	name     string
	s        *Selector
	broken   bool
	caughtBy string // "creation" or "growth" for a broken variant
}

// auditVariants returns the calibrated selector and its broken copies:
// for the thresholding methods the threshold halved (created keys leak far
// beyond δ) and half the noise (the counts leak 2ε); for Optimal π computed
// with 2ε, and with 5δ.
func auditVariants(t *testing.T, m Method, l0 int) []auditVariant {
	t.Helper()
	s := mustNew(t, Params{Method: m, Epsilon: auditEps, Delta: auditDelta, MaxKeys: l0})
	vs := []auditVariant{{name: "calibrated", s: s}}
	if m == Optimal {
		for _, b := range []struct {
			name     string
			eps, dl  float64
			caughtBy string
		}{{"π with 2ε", 2 * auditEps, auditDelta, "growth"}, {"π with 5δ", auditEps, 5 * auditDelta, "creation"}} {
			pi, err := optimalPi(b.eps/float64(l0), b.dl/float64(l0))
			if err != nil {
				t.Fatal(err)
			}
			c := *s
			c.pi = pi
			vs = append(vs, auditVariant{name: b.name, s: &c, broken: true, caughtBy: b.caughtBy})
		}
		return vs
	}
	half := *s
	half.tau = s.tau / 2
	noisy := *s
	noisy.scale = s.scale / 2
	return append(vs,
		auditVariant{name: fmt.Sprintf("threshold halved (%d → %d)", s.tau, half.tau), s: &half, broken: true, caughtBy: "creation"},
		auditVariant{name: "half the noise", s: &noisy, broken: true, caughtBy: "growth"})
}

// auditOutputs runs the selection trials times on l0 keys of units units
// each and returns, per run, [keys released, smallest released count,
// largest released count, sum of the counts if all were released]; a
// dropped key's count is −1, as is the sum when one was dropped.
func auditOutputs(t *testing.T, s *Selector, units int64, l0 int, ns noise.Sampler) [][]float64 {
	t.Helper()
	out := make([][]float64, auditTrials)
	for i := range out {
		kept, lo, hi, sum := 0.0, math.Inf(1), math.Inf(-1), 0.0
		for range l0 {
			var v int64
			var keep bool
			var err error
			if s.HasNoisyCount() {
				v, keep, err = s.Noisy(ns, units)
			} else {
				keep, err = s.Keep(ns, units)
			}
			if err != nil {
				t.Fatal(err)
			}
			val := -1.0
			if keep {
				kept++
				if s.HasNoisyCount() {
					val = float64(v)
				}
			}
			lo, hi, sum = math.Min(lo, val), math.Max(hi, val), sum+val
		}
		if lo < 0 {
			sum = -1 // a dropped key: no sum is observed
		}
		out[i] = []float64{kept, lo, hi, sum}
	}
	return out
}

// auditEvents is the event family: at least / at most j keys released, and
// threshold tests on the smallest, the largest and the sum of the released
// counts (the sum carries the discrete Gaussian's loss over several keys).
func auditEvents(a, b [][]float64, l0 int) []dpaudit.Event {
	var evs []dpaudit.Event
	for j := 0; j <= l0; j++ {
		j := float64(j)
		evs = append(evs,
			dpaudit.Event{Name: fmt.Sprintf("released ≥ %g", j), In: func(o []float64) bool { return o[0] >= j }},
			dpaudit.Event{Name: fmt.Sprintf("released ≤ %g", j), In: func(o []float64) bool { return o[0] <= j }})
	}
	for coord := 1; coord <= 3; coord++ {
		evs = append(evs, dpaudit.Thresholds(a, b, coord, dpaudit.Quantiles)...)
	}
	return evs
}

// TestPrivacyAudit audits every method with L0 = 1 and 2 at ε = 1,
// δ = 1e-3. The calibrated selector must show no lower bound above ε on
// any neighbour pair; each broken copy must show one on the pair named for
// it. Each bound is wrong with probability at most alpha = 1e-6 (union over
// its events and both directions), and the calibrated selectors are
// audited on 18 pairs, so the false-failure rate is below 2e-5; the seeds
// are fixed, so runs are deterministic. About 3 s on two shared cores
// (25 s under -race).
func TestPrivacyAudit(t *testing.T) {
	for mi, m := range []Method{Laplace, Gaussian, Optimal} {
		for _, l0 := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/L0=%d", m, l0), func(t *testing.T) {
				// A seed per case, so a subtest run alone sees the same draws.
				seed := uint64(1000*(mi+1) + 100*l0)
				for _, v := range auditVariants(t, m, l0) {
					type pair struct {
						name string
						n0   int64
					}
					// A broken copy runs only the pairs meant to catch it.
					var pairs []pair
					if !v.broken || v.caughtBy == "creation" {
						pairs = append(pairs, pair{"creation (0 vs 1)", 0})
					}
					if !v.broken || v.caughtBy == "growth" {
						for _, n0 := range []int64{v.s.UnitsFor(0.1), int64(v.s.Threshold())} {
							pairs = append(pairs, pair{fmt.Sprintf("growth (%d vs %d)", n0, n0+1), n0})
						}
					}
					caught := false
					for _, pr := range pairs {
						seed++
						ns := noise.New(stattest.NewFastSource(seed))
						a := auditOutputs(t, v.s, pr.n0, l0, ns)
						b := auditOutputs(t, v.s, pr.n0+1, l0, ns)
						r := dpaudit.LowerBound(a, b, auditEvents(a, b, l0), auditDelta, auditAlpha)
						t.Logf("%s, %s: %v", v.name, pr.name, r)
						if !v.broken && r.Epsilon > auditEps {
							t.Errorf("%s, %s: lower bound %v exceeds the claimed ε = %v", v.name, pr.name, r.Epsilon, auditEps)
						}
						if v.broken && r.Epsilon > auditEps {
							caught = true
						}
					}
					if v.broken && !caught {
						t.Errorf("%s: the audit did not catch it on the %s pairs", v.name, v.caughtBy)
					}
				}
			})
		}
	}
}
