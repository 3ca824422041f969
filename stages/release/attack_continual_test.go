package release

import (
	"fmt"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// scaleRecorder is a sampler that records every discrete Gaussian scale it
// is asked for and returns 0.
type scaleRecorder struct{ scales *[]float64 }

func (s scaleRecorder) DiscreteLaplace(float64) (int64, error) { return 0, nil }
func (s scaleRecorder) DiscreteGaussian(sigma float64) (int64, error) {
	*s.scales = append(*s.scales, sigma)
	return 0, nil
}

// attackPlan calibrates stream "s" with one continual count "n".
func attackPlan(t *testing.T, unit string, maxEvents int, eps float64, horizon int, method string) []plan.Stream {
	t.Helper()
	yaml := fmt.Sprintf(`streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: %s
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: %d}
    budget: {epsilon: 100, delta: 1e-5}
    releases:
      - {name: n, kind: count, noise: gaussian, epsilon: %g, delta: 1e-6, continual: {horizon: %d, method: %s}}
`, unit, maxEvents, eps, horizon, method)
	return mustPlan(t, yaml)
}

// TestAttackConfigChangeMidHorizonUndercharges: the horizon is charged
// once, at its first window, for the ρ of the configuration then in force.
// A restart under a configuration that needs less noise for the same
// factorization (a larger epsilon, privacy_unit user → event, a smaller
// max_events_per_window) replays the step log — the fingerprint names only
// the factor (method, T, ĉ), not σ — and continues the already-charged
// horizon with the smaller σ and no further charge. The horizon's rows are
// then released with less noise than the ledger's one charge pays for:
// the ledger records ρ₁ while the release is ρ₂ > ρ₁ zCDP.
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackConfigChangeMidHorizonUndercharges(t *testing.T) {
	for _, tc := range []struct {
		name             string
		unit1, unit2     string
		events1, events2 int
		eps1, eps2       float64
	}{
		{"epsilon 1 to 8", "event", "event", 1, 1, 1, 8},
		{"privacy unit user to event", "user", "event", 1, 1, 1, 1},
		{"max_events_per_window 8 to 1", "user", "user", 8, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{"tree", "sqrt"} {
				before := attackPlan(t, tc.unit1, tc.events1, tc.eps1, 8, method)
				after := attackPlan(t, tc.unit2, tc.events2, tc.eps2, 8, method)
				var s1, s2 []float64
				r1 := NewReleaser(before, scaleRecorder{&s1})
				ledger := ledgerOf(t, r1, 0, 3, 5)
				var charged []schema.NoiseComponent
				for _, lc := range ledger {
					charged = append(charged, lc.Charges...)
				}
				if len(charged) != 1 {
					t.Fatalf("%s: %d charges before the restart, want the horizon's one", method, len(charged))
				}
				r2 := NewReleaser(after, scaleRecorder{&s2})
				for _, lc := range ledger {
					if _, err := r2.Restore(lc); err != nil {
						t.Fatal(err)
					}
				}
				outs, err := r2.ReleaseWindow(window(3, 5), time.UnixMilli(0))
				if err != nil {
					t.Fatal(err)
				}
				o := outs[0]
				if o.Release.Status != StatusOK {
					continue // refused or skipped: safe
				}
				if len(o.Charge.Charges) > 0 {
					continue // charged again: accounted
				}
				if len(s2) == 0 {
					t.Fatalf("%s: no noise drawn for window 3", method)
				}
				if s2[len(s2)-1] < s1[0]*(1-1e-9) {
					t.Errorf("%s: window 3 continues a horizon charged at ρ=%.4g (σ %.4g lattice units) with σ %.4g and no charge: σ smaller by %.3g², the horizon under-charged",
						method, charged[0].Epsilon, s1[0], s2[len(s2)-1], s1[0]/s2[len(s2)-1])
				}
			}
		})
	}
}

// sumPlan calibrates stream "s" with one continual sum "sm" of values in
// [0, 1000].
func sumPlan(t *testing.T, unit string, eps float64, horizon int, method string) ([]plan.Stream, error) {
	t.Helper()
	yaml := fmt.Sprintf(`streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: %s
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 1}
    budget: {epsilon: 100, delta: 1e-5}
    releases:
      - {name: sm, kind: sum, field: v, bounds: [0, 1000], noise: gaussian, epsilon: %g, delta: 1e-6, continual: {horizon: %d, method: %s}}
`, unit, eps, horizon, method)
	cfg, err := config.Parse([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return plan.Build(cfg)
}

// sumWindow is window w of stream s: one partial of n events, each at the
// upper bound 1000 (2^20·1000 units of the sum's quantum 2^-20).
func sumWindow(w int64, n int64) Window {
	const units = 1000 << 20
	return Window{Stream: "s", Start: w * win, End: (w + 1) * win, Parts: []schema.Partial{{
		Stream: "s", WindowStart: w * win, WindowEnd: (w + 1) * win, Partition: 0, Partitions: 1,
		Events: n, FirstOffset: -1, LastOffset: -1,
		Stats: []schema.ReleaseStats{{Release: "sm", Count: n, SumUnits: n * units, Bins: []int64{}}},
	}}}
}

// TestAttackSqrtSumOverflowHaltsStage: an event-level continual sum with
// the sqrt (or blt) factor computes Ĉx/γ exactly in int64, with ĉ_0 = 2^24
// and x the window's sum regridded so that one event moves it by about
// 2^12 steps; the history accumulates (Σ_j ĉ_j grows like 2^25·√(t/π)).
// 2^24 events per window at the upper bound (an hour of a busy stream, or
// one producer's flood: event-level units are events; the merge accepts up
// to 2^33 per window) overflow it within a few dozen windows. The release
// then fails with an error; the stage's handler fails, recovers and
// decides the same window again, which fails again: the release stage
// stops for good (DESIGN invariant 7: bad input never stops the stream),
// and whether it stops depends on the data. The same data with tree or
// per_window releases fine.
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackSqrtSumOverflowHaltsStage(t *testing.T) {
	for _, method := range []string{"per_window", "tree", "sqrt", "blt"} {
		ps, err := sumPlan(t, "event", 1, 1024, method)
		if err != nil {
			t.Fatal(err)
		}
		r := NewReleaser(ps, zeroNoise{})
		for w := int64(0); w < 200; w++ {
			if _, err := r.ReleaseWindow(sumWindow(w, 1<<24), time.UnixMilli(0)); err != nil {
				t.Errorf("%s: window %d of 2^24 events at the bound (within the merge's limit of 2^33): %v", method, w, err)
				if _, err2 := r.ReleaseWindow(sumWindow(w, 1<<24), time.UnixMilli(0)); err2 != nil {
					t.Logf("%s: and again on retry: the stage cannot get past this window", method)
				}
				break
			}
		}
	}
}

// TestAttackSigmaBeyondSamplerAcceptedByPlan: the discrete Gaussian
// sampler takes lattice scales up to 2^50, so sqrt and blt (lattice 2^-24)
// can add noise of σ ≤ 2^26 only (mechanism/continual.Plan.LatticeScale).
// running.New never checks it: a user-level continual sum with sqrt at
// ε = 0.1 over 1024 windows (σ ≈ 1.3e8) passes plan.Build (and explain),
// then every window's release fails at the draw, halting the stage.
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackSigmaBeyondSamplerAcceptedByPlan(t *testing.T) {
	ps, err := sumPlan(t, "user", 0.1, 1024, "sqrt")
	if err != nil {
		return // refused at configuration: fine
	}
	r := NewReleaser(ps, noise.New(noise.SeededSource(1)))
	if _, err := r.ReleaseWindow(sumWindow(0, 10), time.UnixMilli(0)); err != nil {
		t.Errorf("plan.Build accepted the configuration, but its first window fails: %v", err)
	}
}

// countPlan calibrates stream "s" with a count "n": ordinary (discrete
// Laplace, ε = 1) when horizon is 0, else continual.
func countPlan(t *testing.T, horizon int) []plan.Stream {
	t.Helper()
	rel := "{name: n, kind: count, epsilon: 1}"
	if horizon > 0 {
		rel = fmt.Sprintf("{name: n, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: %d, method: tree}}", horizon)
	}
	return eventStream(t, rel)
}

// TestAttackOrdinaryToContinualHorizonFree: a release that was an
// ordinary count is made continual (same name) mid-horizon. The restore
// (then restoreRun, now kind/running's State.Replay) took any ok charge
// with charges of the release in the horizon as the horizon's charge,
// including the ordinary count's per-window discrete Laplace charge (or a
// v1 ledger charge), which paid for that window's own release only. The
// continual horizon then started at the next window and released its
// running totals without ever
// charging its ρ: the budget spent does not move.
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackOrdinaryToContinualHorizonFree(t *testing.T) {
	r1 := NewReleaser(countPlan(t, 0), zeroNoise{})
	ledger := ledgerOf(t, r1, 0, 3, 5)
	r2 := NewReleaser(countPlan(t, 8), noise.New(noise.SeededSource(1)))
	for _, lc := range ledger {
		if _, err := r2.Restore(lc); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := r2.State("s", 0, time.UnixMilli(0))
	outs, err := r2.ReleaseWindow(window(3, 5), time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	after, _ := r2.State("s", 0, time.UnixMilli(0))
	o := outs[0]
	if o.Release.Status == StatusOK && after.EpsilonSpent <= before.EpsilonSpent {
		t.Errorf("window 3 starts the continual horizon (running total %v, log from step %d) with no charge: ε spent %v before and after; "+
			"the ordinary count's charge of window 2 was taken for the horizon's", *o.Release.RunningTotal, logOf(o.Charge).First, before.EpsilonSpent)
	}
}

// TestAttackDuplicateContinualWindowCountsNothing: DESIGN invariant 8's
// defensive rule — a rebuild that finds two different valid answers for
// one release id counts both, since both may have been published. For a
// continual window after its horizon's first, each answer publishes row t
// of C·x with its own noise z_t, so the second costs up to the row's
// share of ρ more; but such a charge carries no charges (the horizon's one
// covers it), so the duplicate adds nothing to the budget spent.
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackDuplicateContinualWindowCountsNothing(t *testing.T) {
	ps := countPlan(t, 8)
	var ledger []schema.LedgerCharge
	var dupe schema.LedgerCharge
	for seed := uint64(1); seed <= 2; seed++ {
		r := NewReleaser(ps, noise.New(noise.SeededSource(seed)))
		for w := int64(0); w < 3; w++ {
			outs, err := r.ReleaseWindow(window(w, 5), time.UnixMilli(0))
			if err != nil {
				t.Fatal(err)
			}
			lc, err := schema.DecodeLedgerCharge(outs[0].Ledger)
			if err != nil {
				t.Fatal(err)
			}
			if seed == 1 {
				ledger = append(ledger, lc)
			} else if w == 2 {
				dupe = lc // another owner's answer for window 2: other noise
			}
		}
	}
	if logOf(ledger[2]).Z[0] == logOf(dupe).Z[0] {
		t.Fatal("the two answers drew the same noise; pick other seeds")
	}
	r := NewReleaser(ps, nil)
	for _, lc := range ledger {
		if _, err := r.Restore(lc); err != nil {
			t.Fatal(err)
		}
	}
	once, _ := r.State("s", 0, time.UnixMilli(0))
	dup, err := r.Restore(dupe)
	if err != nil || !dup {
		t.Fatalf("restore of the second answer: dup %v, err %v", dup, err)
	}
	twice, _ := r.State("s", 0, time.UnixMilli(0))
	if twice.EpsilonSpent <= once.EpsilonSpent {
		t.Errorf("two different answers (z = %d and %d) for window 2's row of C·x are both counted as published, yet ε spent is %v with one and %v with both",
			logOf(ledger[2]).Z[0], logOf(dupe).Z[0], once.EpsilonSpent, twice.EpsilonSpent)
	}
}

// histPlan calibrates stream "s" with a continual 3-bin histogram "h" on
// [0, hi].
func histPlan(t *testing.T, hi float64) []plan.Stream {
	t.Helper()
	return eventStream(t, fmt.Sprintf("{name: h, kind: histogram, field: v, bounds: [0, %g], bins: 3, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: tree}}", hi))
}

// TestAttackBinsRedefinedMidHorizonContinueTotals: the restore's doc
// (then restoreRun's, now kind/running's State.Replay) says a configuration changed mid-horizon leaves the horizon refused rather
// than continuing totals it cannot reproduce, but the check is the
// factor's fingerprint and the number of coordinates only. A histogram
// whose bounds change from [0, 3] to [0, 300] (same 3 bins) continues its
// running totals: window 3 publishes, under the new edges [0, 100, 200,
// 300], totals that add the old windows' counts of [0, 1) to the new
// window's counts of [0, 100).
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackBinsRedefinedMidHorizonContinueTotals(t *testing.T) {
	r1 := NewReleaser(histPlan(t, 3), zeroNoise{})
	ledger := ledgerOf(t, r1, 0, 3, 5)
	r2 := NewReleaser(histPlan(t, 300), zeroNoise{})
	for _, lc := range ledger {
		if _, err := r2.Restore(lc); err != nil {
			t.Fatal(err)
		}
	}
	outs, err := r2.ReleaseWindow(window(3, 5), time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	rel := outs[0].Release
	if rel.Status == StatusOK && len(outs[0].Charge.Charges) == 0 && rel.RunningTotals[0] != rel.NoisyCounts[0] {
		t.Errorf("window 3 under edges %v publishes running totals %v: they add the counts of the old bins (edges [0, 1, 2, 3]) of windows 0–2",
			rel.Edges, rel.RunningTotals)
	}
}
