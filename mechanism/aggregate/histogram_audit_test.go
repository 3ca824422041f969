package aggregate

import (
	"fmt"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// histAuditCase is a histogram over two fields with two neighbouring
// windows: d, and d plus one privacy unit whose events are at points (one
// per event, each placed with CellIndex).
type histAuditCase struct {
	name   string
	spec   Spec
	d      []int64
	points [][]float64
	trials int
}

// histAuditCases are the 2-D histogram releases the audit runs: L = 1 with
// each noise kind, and L = 3 with a per-cell cap of 1 and Gaussian noise,
// the unit's three events in three different cells (the case where the cap
// lowers Δ2 from 3 to √3, and σ with it).
//
// Budgets: threshold tests see a Gaussian's loss only through moderate
// tails, so the Gaussian cases use ε = 2, where halving σ moves the
// reachable bound well past the claim (as in audit_test.go). The capped
// case is calibrated through zCDP, whose conversion to (ε, δ) leaves a
// margin that the tests cannot reach at δ = 1e-5 (audit_test.go's L = 2
// histogram shows 2.11 for half the noise); δ = 1e-3 raises ρ, so more of
// the loss is visible to the tests (TestDensityPrivacyAudit does the same).
// The calibration path is the same for every δ. The capped case's
// negative check needs σ calibrated to Δ2 = √3 (σ ≈ 2.79; half of it
// then shows ε ≥ 2.7 with these trials and seed): a σ calibrated to the
// uncapped Δ2 = L = 3 (4.83) is still about 2-DP at half its size, and the
// broken mechanism is then rightly not caught.
func histAuditCases() []histAuditCase {
	two := func(noiseKind noise.Kind, eps, delta float64, l, c int) Spec {
		s := histSpec(Axis{0, 1, 2}, Axis{-1, 1, 2}) // 2×2 cells
		s.Noise, s.Epsilon, s.Delta, s.MaxContributions, s.BinCap = noiseKind, eps, delta, l, c
		return s
	}
	base := []int64{30, 25, 20, 25}
	return []histAuditCase{
		{name: "2-D L=1/laplace", spec: two(noise.Laplace, 1, 0, 1, 0), d: base,
			points: [][]float64{{0.8, -0.5}}, trials: 50000},
		{name: "2-D L=1/gaussian", spec: two(noise.Gaussian, 2, 1e-5, 1, 0), d: base,
			points: [][]float64{{0.8, -0.5}}, trials: 100000},
		{name: "2-D L=3 cap 1/gaussian", spec: two(noise.Gaussian, 2, 1e-3, 3, 1), d: base,
			points: [][]float64{{0.2, -0.5}, {0.2, 0.5}, {0.8, 0.5}}, trials: 50000},
	}
}

// histAuditOutputs runs the release n times on bins and returns, for each
// run, the noisy counts followed by the sum of the noisy counts of the
// cells in touched. That sum is the Neyman–Pearson statistic for this
// pair of windows: with discrete Gaussian noise the log-likelihood ratio
// of d plus the unit against d is Σ_{j∈touched} (2(o_j − C_j) − 1)/(2σ²),
// increasing in Σ_{j∈touched} o_j, so thresholds on it are the most
// powerful tests (and stay so with half the noise, which only rescales
// σ). With one touched cell it is that cell's noisy count.
func histAuditOutputs(t *testing.T, c Calibration, bins []int64, touched []int, nz noise.Sampler, n int) [][]float64 {
	t.Helper()
	out := make([][]float64, n)
	for i := range out {
		r, err := Release(c, Stats{Bins: bins}, nz)
		if err != nil {
			t.Fatal(err)
		}
		o := append(make([]float64, 0, len(r.NoisyCounts)+1), r.NoisyCounts...)
		s := 0.0
		for _, j := range touched {
			s += r.NoisyCounts[j]
		}
		out[i] = append(o, s)
	}
	return out
}

// TestHistogramPrivacyAudit runs 2-D histogram releases many times on two
// neighbouring windows, d and d plus one privacy unit (all its L events),
// and computes a Clopper–Pearson lower bound on ε over threshold tests
// of the sum of the unit's cells (internal/dpaudit), as TestPrivacyAudit
// does for the other kinds. The calibrated mechanism must not show a bound
// above its claimed ε; the same mechanism with half the noise (halfNoise)
// must. The bound is wrong with probability at most alpha = 1e-6 per run
// (union bound over all events and both directions), the false-failure
// rate of the calibrated check; the seeds are fixed, so runs are
// deterministic. The noise source is the unsynchronized stattest.FastSource
// (stattest.FastSource) because SeededSource's mutex dominates under -race.
func TestHistogramPrivacyAudit(t *testing.T) {
	const alpha = 1e-6
	for i, tc := range histAuditCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Calibrate(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			axes := tc.spec.HistogramAxes()
			d2 := append([]int64(nil), tc.d...)
			var touched []int
			for _, p := range tc.points {
				j := CellIndex(axes, p)
				if j < 0 {
					t.Fatalf("point %v has no cell", p)
				}
				d2[j]++
				touched = append(touched, j)
			}
			// The unit must respect the bounds the calibration assumes: at
			// most L events, at most BinCap in one cell.
			if len(tc.points) > tc.spec.MaxContributions {
				t.Fatalf("%d events for L = %d", len(tc.points), tc.spec.MaxContributions)
			}
			for j := range d2 {
				if cp := tc.spec.BinCap; cp > 0 && d2[j]-tc.d[j] > int64(cp) {
					t.Fatalf("cell %d gets %d events, cap %d", j, d2[j]-tc.d[j], cp)
				}
			}
			coord := len(tc.d) // the appended sum
			for _, broken := range []bool{false, true} {
				var nz noise.Sampler = noise.New(stattest.NewFastSource(uint64(300 + i)))
				if broken {
					nz = halfNoise{nz}
				}
				a := histAuditOutputs(t, c, tc.d, touched, nz, tc.trials)
				b := histAuditOutputs(t, c, d2, touched, nz, tc.trials)
				r := dpaudit.LowerBound(a, b, dpaudit.Thresholds(a, b, coord, dpaudit.Quantiles), tc.spec.Delta, alpha)
				label := fmt.Sprintf("calibrated (claimed ε=%g, δ=%g, σ or t = %.4g)", tc.spec.Epsilon, tc.spec.Delta, c.Components[0].Scale)
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
