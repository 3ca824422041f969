package aggregate

import (
	"fmt"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// halfNoise is a deliberately broken Noise: it draws with half the scale it
// is asked for, so a release calibrated for ε really gives about 2ε. The
// audits must catch it.
type halfNoise struct{ n noise.Sampler }

func (h halfNoise) DiscreteLaplace(t float64) (int64, error) { return h.n.DiscreteLaplace(t / 2) }
func (h halfNoise) DiscreteGaussian(sigma float64) (int64, error) {
	return h.n.DiscreteGaussian(sigma / 2)
}

// auditCase is one release kind with two neighbouring inputs: D, and D plus
// one privacy unit's L events placed where they move the output most.
type auditCase struct {
	name  string
	spec  Spec
	d, d2 Stats
	coord int // output coordinate whose thresholds are tested
}

func auditCases() []auditCase {
	const L = 2
	// The sum on [0, 10] is in units of q = 2^-26; an event at the bound
	// adds 10·2^26 units (the most one event can).
	const q, atHi = 0x1p-26, 10 << 26
	var cases []auditCase
	for _, noiseKind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		// Threshold tests see a Gaussian's loss only through moderate tails,
		// so its audit uses ε = 2, where halving σ moves the reachable bound
		// well past the claim (ε ≈ 1.3 calibrated vs ≈ 2.4 broken).
		eps, delta := 1.0, 0.0
		if noiseKind == noise.Gaussian {
			eps, delta = 2, 1e-5
		}
		cases = append(cases,
			auditCase{name: "count/" + string(noiseKind),
				spec: Spec{Kind: KindCount, Noise: noiseKind, Epsilon: eps, Delta: delta, MaxContributions: L},
				d:    Stats{Count: 100}, d2: Stats{Count: 100 + L}},
			auditCase{name: "sum/" + string(noiseKind),
				spec: Spec{Kind: KindSum, Noise: noiseKind, Epsilon: eps, Delta: delta, Lo: 0, Hi: 10, MaxContributions: L},
				d:    Stats{Count: 100, SumUnits: 431.5 / q}, d2: Stats{Count: 100 + L, SumUnits: 431.5/q + L*atHi}},
			// With L = 4096 the output grid is coarser than the quantum, so
			// Release regrids the integer sum (the base one sits off the
			// grid); the neighbour moves it by the full sensitivity.
			auditCase{name: "sum regridded/" + string(noiseKind),
				spec: Spec{Kind: KindSum, Noise: noiseKind, Epsilon: eps, Delta: delta, Lo: 0, Hi: 10, MaxContributions: 4096},
				d:    Stats{Count: 100, SumUnits: 431.5/q - 1}, d2: Stats{Count: 100 + 4096, SumUnits: 431.5/q - 1 + 4096*atHi}},
			auditCase{name: "histogram/" + string(noiseKind),
				spec: Spec{Kind: KindHistogram, Noise: noiseKind, Epsilon: eps, Delta: delta, Lo: 0, Hi: 10, Bins: 2, MaxContributions: L},
				d:    Stats{Count: 100, Bins: []int64{55, 45}}, d2: Stats{Count: 100 + L, Bins: []int64{55 + L, 45}}},
		)
	}
	return cases
}

// outputs runs the release n times on s and returns the released vectors
// (the value, or the noisy counts).
func outputs(t *testing.T, c Calibration, s Stats, nz noise.Sampler, n int) [][]float64 {
	t.Helper()
	out := make([][]float64, n)
	for i := range out {
		r, err := Release(c, s, nz)
		if err != nil {
			t.Fatal(err)
		}
		if r.Value != nil {
			out[i] = []float64{*r.Value}
		} else {
			out[i] = append([]float64(nil), r.NoisyCounts...)
		}
	}
	return out
}

// TestPrivacyAudit runs each release kind many times on two neighbouring
// inputs and computes a Clopper–Pearson lower bound on ε over threshold
// tests of the output (internal/dpaudit). The calibrated mechanism must not
// show a bound above its claimed ε; the same mechanism with half the noise
// must. The bound is wrong with probability at most alpha = 1e-6 per case
// (union bound over 42 events × 2 directions), so the calibrated case fails
// falsely with probability ≤ 1e-6; the seeds are fixed, so runs are
// deterministic.
func TestPrivacyAudit(t *testing.T) {
	const trials, alpha = 100000, 1e-6
	for i, tc := range auditCases() {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Calibrate(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, broken := range []bool{false, true} {
				var nz noise.Sampler = noise.New(noise.SeededSource(uint64(100 + i)))
				if broken {
					nz = halfNoise{nz}
				}
				a := outputs(t, c, tc.d, nz, trials)
				b := outputs(t, c, tc.d2, nz, trials)
				r := dpaudit.LowerBound(a, b, dpaudit.Thresholds(a, b, tc.coord, dpaudit.Quantiles), tc.spec.Delta, alpha)
				label := fmt.Sprintf("calibrated (claimed ε=%g, δ=%g)", tc.spec.Epsilon, tc.spec.Delta)
				if broken {
					label = "half the noise"
				}
				t.Logf("%s: %v", label, r)
				switch {
				case !broken && r.Epsilon > tc.spec.Epsilon:
					t.Errorf("%s: lower bound %v exceeds the claimed ε=%v", label, r.Epsilon, tc.spec.Epsilon)
				case broken && r.Epsilon <= tc.spec.Epsilon:
					t.Errorf("%s: the audit did not catch it: lower bound %v ≤ ε=%v", label, r.Epsilon, tc.spec.Epsilon)
				}
			}
		})
	}
}
