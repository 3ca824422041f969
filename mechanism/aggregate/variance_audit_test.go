package aggregate

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// halfSquaresNoise is a deliberately broken Sampler for a variance
// release: ReleaseVariance draws the count's, the centered sum's and the
// centered squares' noise in that order, and this sampler draws every third
// one (the squares') with half the scale it is asked for. With Laplace
// noise the release is then (ε/3 + ε/3 + 2ε/3) = 4ε/3-DP; with Gaussian
// noise its ρ doubles. The audit must catch it.
type halfSquaresNoise struct {
	n     noise.Sampler
	draws *int
}

func (h halfSquaresNoise) scale(s float64) float64 {
	*h.draws++
	if *h.draws%3 == 0 {
		return s / 2
	}
	return s
}

func (h halfSquaresNoise) DiscreteLaplace(t float64) (int64, error) {
	return h.n.DiscreteLaplace(h.scale(t))
}

func (h halfSquaresNoise) DiscreteGaussian(sigma float64) (int64, error) {
	return h.n.DiscreteGaussian(h.scale(sigma))
}

// regridded returns the exact statistic k (in units of comp.Quantum) as
// ReleaseVariance rounds it to comp's grid, on the value scale: the
// centre of its noisy output.
func regridded(comp noise.Component, k int64) float64 {
	return comp.Granularity * float64(noise.RoundShift(k, uint(noise.GridShift(comp.Granularity, comp.Quantum))))
}

// TestVariancePrivacyAudit runs the variance release many times on two
// neighbouring windows, d (100 values) and d plus one unit whose L = 2
// events are at Hi, which moves all three statistics by their full
// sensitivity, and computes a Clopper–Pearson lower bound on ε
// (internal/dpaudit) over thresholds of the Neyman–Pearson statistic of
// the pair under the calibrated noise (a and b the three statistics'
// centres under d and d'): Σ_j (|o_j − a_j| − |o_j − b_j|)/t_j for the
// discrete Laplace, whose largest value is the event "all three beyond the
// shift", and Σ_j (b_j − a_j)·o_j/σ_j² for the discrete Gaussian (the
// log-likelihood ratio up to a constant); and over the same statistic with
// the squares' weight raised to what it would be with half their noise.
// The calibrated release must not show a bound above its ε; the release
// whose squares get half their noise (halfSquaresNoise: 4ε/3 with Laplace
// noise, twice the ρ with Gaussian noise) must. Each bound is wrong with
// probability at most alpha = 1e-6; the seeds are fixed.
func TestVariancePrivacyAudit(t *testing.T) {
	const alpha = 1e-6
	v, err := NewVarianceQuantizer(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var d VarianceStats
	for i := range 100 {
		if err := v.Add(&d, 3+0.05*float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	d2 := d
	for range 2 {
		if err := v.Add(&d2, 10); err != nil {
			t.Fatal(err)
		}
	}
	for i, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			// Threshold tests see a Gaussian's loss only through moderate
			// tails, and the release is calibrated through zCDP: ε = 2 and
			// δ = 1e-3 let the broken release show (as in the histogram
			// audit).
			// The Gaussian's broken variant doubles ρ only (where halving
			// every σ quadruples it), which threshold tests see only in
			// tails of probability about 1e-3; 3·10^5 trials give the
			// margin (2.13 against ε = 2 with this seed; 2.01 with 10^5).
			eps, delta, trials := 1.0, 0.0, 100000
			if kind == noise.Gaussian {
				eps, delta, trials = 2, 1e-3, 300000
			}
			c, err := CalibrateVariance(VarianceSpec{Noise: kind, Epsilon: eps, Delta: delta, Lo: 0, Hi: 10, Bounds: UnitBounds{MaxContributions: 2, MaxKeys: 1}})
			if err != nil {
				t.Fatal(err)
			}
			comps := c.Components
			centres := func(s VarianceStats) [3]float64 {
				return [3]float64{float64(s.Count), regridded(comps[1], s.SumUnits), regridded(comps[2], s.SquareUnits)}
			}
			a, b := centres(d), centres(d2)
			// The unit moves every statistic by its full sensitivity (a
			// global release: L1 = L2 = M·a grid steps).
			for j := range comps {
				if shift := math.Abs(b[j] - a[j]); shift != comps[j].Sensitivity {
					t.Fatalf("%s moves by %v, sensitivity %v", comps[j].Purpose, shift, comps[j].Sensitivity)
				}
			}
			// stats returns the Neyman–Pearson statistic of the pair with the
			// squares' weight multiplied by κ = 1 (the calibrated noise) and
			// κ = 2 (Laplace) or 4 (Gaussian), the weight they would have
			// with half their noise: an auditor who suspects one component
			// tries the direction that component would take. Both are
			// valid events for the calibrated release; LowerBound's union
			// bound covers the events of both.
			heavy := 2.0
			if kind == noise.Gaussian {
				heavy = 4
			}
			stats := func(r VarianceResult) []float64 {
				o := [3]float64{r.NoisyCount, r.NoisySum, r.NoisySquares}
				out := make([]float64, 2)
				for k, kappa := range []float64{1, heavy} {
					for j := range o {
						w := 1.0
						if j == 2 {
							w = kappa
						}
						if kind == noise.Laplace {
							out[k] += w * (math.Abs(o[j]-a[j]) - math.Abs(o[j]-b[j])) / comps[j].Scale
						} else {
							out[k] += w * (b[j] - a[j]) * o[j] / (comps[j].Scale * comps[j].Scale)
						}
					}
				}
				return out
			}
			run := func(s VarianceStats, nz noise.Sampler) [][]float64 {
				out := make([][]float64, trials)
				for j := range out {
					r, err := ReleaseVariance(c, s, nz)
					if err != nil {
						t.Fatal(err)
					}
					out[j] = stats(r)
				}
				return out
			}
			for _, broken := range []bool{false, true} {
				var nz noise.Sampler = noise.New(stattest.NewFastSource(uint64(700 + i)))
				label := fmt.Sprintf("calibrated (claimed ε=%g, δ=%g)", eps, delta)
				if broken {
					nz, label = halfSquaresNoise{n: nz, draws: new(int)}, "half the squares' noise"
				}
				oa, ob := run(d, nz), run(d2, nz)
				events := append(dpaudit.AtLeastAtMost(oa, ob, 0, dpaudit.Quantiles), dpaudit.AtLeastAtMost(oa, ob, 1, dpaudit.Quantiles)...)
				r := dpaudit.LowerBound(oa, ob, events, delta, alpha)
				t.Logf("%s: %v", label, r)
				switch {
				case !broken && r.Epsilon > eps:
					t.Errorf("%s: lower bound %v exceeds the claimed ε=%v", label, r.Epsilon, eps)
				case broken && r.Epsilon <= eps:
					t.Errorf("%s: the audit did not catch it: lower bound %v ≤ ε=%v", label, r.Epsilon, eps)
				}
			}
		})
	}
}
