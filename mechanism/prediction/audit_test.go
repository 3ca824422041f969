package prediction

import (
	"fmt"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// halfNoise is a deliberately broken sampler: it draws with half the scale
// it is asked for, so an answer calibrated for ε really gives about 2ε.
type halfNoise struct{ n noise.Sampler }

func (h halfNoise) DiscreteLaplace(t float64) (int64, error) { return h.n.DiscreteLaplace(t / 2) }
func (h halfNoise) DiscreteGaussian(sigma float64) (int64, error) {
	return h.n.DiscreteGaussian(sigma / 2)
}

// labelEvents are the events {out = b} and {out ≠ b} for every label.
func labelEvents(labels int) []dpaudit.Event {
	var evs []dpaudit.Event
	for b := range labels {
		fb := float64(b)
		evs = append(evs,
			dpaudit.Event{Name: fmt.Sprintf("label = %d", b), In: func(o []float64) bool { return o[0] == fb }},
			dpaudit.Event{Name: fmt.Sprintf("label ≠ %d", b), In: func(o []float64) bool { return o[0] != fb }})
	}
	return evs
}

// TestClassifyAudit runs the soft majority many times on two neighbouring
// vote vectors and bounds ε from below (internal/dpaudit, Clopper–Pearson,
// alpha = 1e-6 over all events and both directions). Three labels, r = 3
// models, ε = 1: D has votes (3, 0, 0) and D' (2, 1, 0), one model's vote
// moved, where label 1's true privacy loss is 0.689 (below ε: the bound
// must not exceed 1). The broken variant scales the votes by 2, that is
// samples ∝ exp(ε·votes), whose loss on the same pair is 1.687 and must be
// caught (bound above ε = 1). A false failure of the calibrated case has
// probability ≤ 1e-6; the seeds are fixed, so the test is deterministic.
func TestClassifyAudit(t *testing.T) {
	const eps, trials, alpha = 1.0, 200000, 1e-6
	d, d2 := []int{3, 0, 0}, []int{2, 1, 0}
	for i, scale := range []int{1, 2} {
		nz := noise.New(noise.SeededSource(uint64(300 + i)))
		run := func(votes []int) [][]float64 {
			v := make([]int, len(votes))
			for j := range votes {
				v[j] = scale * votes[j]
			}
			out := make([][]float64, trials)
			for k := range out {
				b, err := Classify(v, eps, nz)
				if err != nil {
					t.Fatal(err)
				}
				out[k] = []float64{float64(b)}
			}
			return out
		}
		a, b := run(d), run(d2)
		r := dpaudit.LowerBound(a, b, labelEvents(len(d)), 0, alpha)
		t.Logf("votes ×%d: %v", scale, r)
		switch {
		case scale == 1 && r.Epsilon > eps:
			t.Errorf("calibrated: lower bound %v exceeds the claimed ε=%v", r.Epsilon, eps)
		case scale == 2 && r.Epsilon <= eps:
			t.Errorf("votes ×2: the audit did not catch it: lower bound %v ≤ ε=%v", r.Epsilon, eps)
		}
	}
}

// TestRegressAndEvaluateAudit audits the noisy clamped average and the
// private evaluation on neighbours that differ in one model's prediction
// (or all of its losses) moving from one bound to the other, the most one
// unit can: the calibrated mechanism must not show a lower bound above its
// ε, the same mechanism with half the noise must (alpha = 1e-6 per case,
// 42 threshold events × 2 directions; fixed seeds). Gaussian at ε = 2,
// δ = 1e-5, where threshold tests can see the halving (as in
// mechanism/aggregate's audit).
func TestRegressAndEvaluateAudit(t *testing.T) {
	const trials, alpha = 100000, 1e-6
	type answer func(n noise.Sampler, neighbour bool) (float64, float64, error) // value, claimed δ
	cases := []struct {
		name string
		eps  float64
		run  answer
	}{}
	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		eps, delta := 1.0, 0.0
		if kind == noise.Gaussian {
			eps, delta = 2, 1e-5
		}
		reg, err := NewRegressor(RegressSpec{Lo: -60, Hi: 240, Noise: kind, Epsilon: eps, Delta: delta})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			eps  float64
			run  answer
		}{"regress/" + string(kind), eps, func(n noise.Sampler, nb bool) (float64, float64, error) {
			preds := []float64{12, -3, 40, 7, -60}
			if nb {
				preds[4] = 1000 // clamped to 240
			}
			v, err := reg.Regress(preds, n)
			return v, delta, err
		}})
		ev, err := NewEvaluator(EvalSpec{MaxLoss: 1, Queries: 4, Noise: kind, Epsilon: eps, Delta: delta})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			eps  float64
			run  answer
		}{"evaluate/" + string(kind), eps, func(n noise.Sampler, nb bool) (float64, float64, error) {
			losses := [][]float64{{0, 1, 0, 0}, {1, 1, 0, 1}, {0, 0, 0, 0}}
			if nb {
				losses[2] = []float64{1, 1, 1, 1}
			}
			v, err := ev.Evaluate(losses, n)
			return v, delta, err
		}})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, broken := range []bool{false, true} {
				var nz noise.Sampler = noise.New(noise.SeededSource(uint64(400 + i)))
				if broken {
					nz = halfNoise{nz}
				}
				var delta float64
				draw := func(nb bool) [][]float64 {
					out := make([][]float64, trials)
					for k := range out {
						v, d, err := tc.run(nz, nb)
						if err != nil {
							t.Fatal(err)
						}
						delta = d
						out[k] = []float64{v}
					}
					return out
				}
				a, b := draw(false), draw(true)
				r := dpaudit.LowerBound(a, b, dpaudit.Thresholds(a, b, 0, dpaudit.Quantiles), delta, alpha)
				label := fmt.Sprintf("calibrated (ε=%g, δ=%g)", tc.eps, delta)
				if broken {
					label = "half the noise"
				}
				t.Logf("%s: %v", label, r)
				switch {
				case !broken && r.Epsilon > tc.eps:
					t.Errorf("%s: lower bound %v exceeds the claimed ε=%v", label, r.Epsilon, tc.eps)
				case broken && r.Epsilon <= tc.eps:
					t.Errorf("%s: the audit did not catch it: lower bound %v ≤ ε=%v", label, r.Epsilon, tc.eps)
				}
			}
		})
	}
}
