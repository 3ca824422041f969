package quantile

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// halfNoise is a deliberately broken Sampler: it draws with half the scale
// it is asked for, as if the sensitivity had been underestimated by 2×, so
// a release calibrated for ε really gives about 2ε. The audits must catch
// it.
type halfNoise struct{ n noise.Sampler }

func (h halfNoise) DiscreteLaplace(t float64) (int64, error) { return h.n.DiscreteLaplace(t / 2) }
func (h halfNoise) DiscreteGaussian(sigma float64) (int64, error) {
	return h.n.DiscreteGaussian(sigma / 2)
}

// auditBudget returns the audit's budget for a noise kind. Threshold tests
// see a Gaussian's loss only through moderate tails and these releases are
// calibrated through zCDP, whose conversion leaves a margin the tests cannot
// reach at δ = 1e-5; ε = 2 and δ = 1e-3 make half the noise show (as in
// aggregate's histogram audit).
func auditBudget(kind noise.Kind) (eps, delta float64) {
	if kind == noise.Gaussian {
		return 2, 1e-3
	}
	return 1, 0
}

// verdict fails t when the calibrated mechanism shows a lower bound above
// its claimed ε, or the broken one does not.
func verdict(t *testing.T, broken bool, eps float64, r dpaudit.Result, label string) {
	t.Helper()
	t.Logf("%s: %v", label, r)
	switch {
	case !broken && r.Epsilon > eps:
		t.Errorf("%s: lower bound %v exceeds the claimed ε=%v", label, r.Epsilon, eps)
	case broken && r.Epsilon <= eps:
		t.Errorf("%s: the audit did not catch it: lower bound %v ≤ ε=%v", label, r.Epsilon, eps)
	}
}

// TestReleasePrivacyAudit audits the released quantile end to end with
// internal/dpaudit: a flat tree (h = 1, b = 2 leaves) and L = 2, on two
// neighbouring windows, d with 10^6 events in leaf 1 and d plus one unit
// whose 2 events are in leaf 0. The released median is then
// mid + w·(1/2 − d₀/(2·d₁)) with d_j the clamped noisy leaf counts, and
// d₁ ≈ 10^6 makes it a decreasing function of d₀ = max(c₀ + Z, 0) alone,
// so thresholds on it see the whole privacy loss of the leaf the unit
// changes (for the clamped atom d₀ = 0 too). The calibrated release must
// not show a lower bound above its ε; the same release drawing half the
// noise (halfNoise) must. Each bound is wrong with probability at most
// alpha = 1e-6 (union bound over events and directions); the seeds are
// fixed, so the runs are deterministic.
//
// A taller tree hides part of the loss from the output (a node's noise is
// read only relative to its siblings', and below a node only when the
// search enters it), so the h factor of the sensitivity is audited on the
// noisy node counts themselves (TestNodeNoisePrivacyAudit) and by the
// enumeration of TestSensitivityBruteForce.
func TestReleasePrivacyAudit(t *testing.T) {
	const trials, alpha = 100000, 1e-6
	tr := Tree{Lo: 0, Hi: 100, Branching: 2, Height: 1}
	d := Counts{1, 1000000}
	d2 := Counts{0, 2, 1, 1000000}
	for i, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			eps, delta := auditBudget(kind)
			s := Spec{Noise: kind, Epsilon: eps, Delta: delta, Tree: tr, Ranks: []float64{0.5}, Bounds: bounds(2, 1, 0)}
			c, err := Calibrate(s)
			if err != nil {
				t.Fatal(err)
			}
			run := func(counts Counts, nz noise.Sampler) [][]float64 {
				out := make([][]float64, trials)
				for j := range out {
					r, err := Release(c, counts, nz)
					if err != nil {
						t.Fatal(err)
					}
					out[j] = r.Quantiles
				}
				return out
			}
			for _, broken := range []bool{false, true} {
				var nz noise.Sampler = noise.New(stattest.NewFastSource(uint64(500 + i)))
				label := fmt.Sprintf("calibrated (claimed ε=%g, δ=%g, scale %.4g)", eps, delta, c.Components[0].Scale)
				if broken {
					nz, label = halfNoise{nz}, "half the noise"
				}
				a, b := run(d, nz), run(d2, nz)
				verdict(t, broken, eps, dpaudit.LowerBound(a, b, dpaudit.AtLeastAtMost(a, b, 0, dpaudit.Quantiles), delta, alpha), label)
			}
		})
	}
}

// TestNodeNoisePrivacyAudit audits the noise Release adds to the node
// counts, which its guarantee is post-processing of: a b = 2, h = 3 tree,
// two keys, and bounds L = 2, L0 = 2, c = 1 (so M = 2, L1 = h·M = 6 and
// L2² = h·2 = 6). The unit puts one event in leaf 0 of each key, which
// adds 1 to the three nodes on that leaf's path in both keys: six
// coordinates, the whole sensitivity. Each trial draws those six noisy
// counts exactly as Release does (noisyTree.noisy, with the calibrated
// component) and reduces them to the Neyman–Pearson statistic of the pair
// under the calibrated noise: Σ (|o − c| − |o − c − 1|)/t for the discrete
// Laplace, Σ o for the discrete Gaussian (its log-likelihood ratio is
// increasing in it). Thresholds on it must show no more than the claimed
// ε, and must show more with half the noise: an h or L0 factor missing
// from the calibration would be caught here.
func TestNodeNoisePrivacyAudit(t *testing.T) {
	const trials, alpha = 100000, 1e-6
	tr := Tree{Lo: 0, Hi: 1, Branching: 2, Height: 3}
	base := Counts{0, 10, 3, 10, 5, 10}           // every path node of leaf 0 holds ≥ 10 events
	withUnit, err := slices.Clone(base).Add(0, 1) // Add may modify its receiver in place
	if err != nil {
		t.Fatal(err)
	}
	var path [][2]int
	for level := 1; level <= tr.Height; level++ {
		path = append(path, [2]int{level, 0})
	}
	for i, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			eps, delta := auditBudget(kind)
			s := Spec{Noise: kind, Epsilon: eps, Delta: delta, Tree: tr, Ranks: []float64{0.5}, Bounds: bounds(2, 2, 1)}
			c, err := Calibrate(s)
			if err != nil {
				t.Fatal(err)
			}
			comp := c.Components[0]
			exact := make([]float64, 0, 2*len(path))
			nt0, _ := newNoisyTree(tr, base, comp, nil)
			for range 2 { // both keys hold base in d
				for _, p := range path {
					exact = append(exact, float64(nt0.count(p[0], p[1])))
				}
			}
			stat := func(o []float64) float64 {
				v := 0.0
				for j, x := range o {
					if kind == noise.Laplace {
						v += (math.Abs(x-exact[j]) - math.Abs(x-exact[j]-1)) / comp.Scale
					} else {
						v += x
					}
				}
				return v
			}
			run := func(key0, key1 Counts, nz noise.Sampler) [][]float64 {
				out := make([][]float64, trials)
				o := make([]float64, 0, 2*len(path))
				for j := range out {
					o = o[:0]
					for _, counts := range []Counts{key0, key1} {
						nt, err := newNoisyTree(tr, counts, comp, nz)
						if err != nil {
							t.Fatal(err)
						}
						for _, p := range path {
							v, err := nt.noisy(p[0], p[1])
							if err != nil {
								t.Fatal(err)
							}
							o = append(o, v)
						}
					}
					out[j] = []float64{stat(o)}
				}
				return out
			}
			for _, broken := range []bool{false, true} {
				var nz noise.Sampler = noise.New(stattest.NewFastSource(uint64(600 + i)))
				label := fmt.Sprintf("calibrated (claimed ε=%g, δ=%g, scale %.4g, sensitivity %.4g)", eps, delta, comp.Scale, comp.Sensitivity)
				if broken {
					nz, label = halfNoise{nz}, "half the noise"
				}
				a, b := run(base, base, nz), run(withUnit, withUnit, nz)
				verdict(t, broken, eps, dpaudit.LowerBound(a, b, dpaudit.AtLeastAtMost(a, b, 0, dpaudit.Quantiles), delta, alpha), label)
			}
		})
	}
}
