package release

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// continualPlan calibrates stream "s" (window 1s, event-level unless
// unitLevel) with a continual count "n" and a continual 3-bin histogram
// "h" over horizons of `horizon` windows, method method, each at ε = 1,
// δ = 1e-6 for the whole horizon.
func continualPlan(t *testing.T, horizon int, method string, budget float64) []plan.Stream {
	t.Helper()
	yaml := fmt.Sprintf(`streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: event
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 1}
    budget: {epsilon: %g, delta: 1e-5}
    releases:
      - {name: n, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: %d, method: %s}}
      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: %d, method: %s}}
`, budget, horizon, method, horizon, method)
	return mustPlan(t, yaml)
}

// TestContinualZeroNoise checks the plumbing with zero noise: every
// window publishes the exact running total since its horizon's start and
// the window's own count as the increment; a window without data (a gap)
// adds nothing; the next horizon starts from zero; only a horizon's first
// window charges.
func TestContinualZeroNoise(t *testing.T) {
	for _, method := range []string{"per_window", "tree", "sqrt", "blt"} {
		t.Run(method, func(t *testing.T) {
			ps := continualPlan(t, 4, method, 100)
			r := NewReleaser(ps, zeroNoise{})
			counts := map[int64]int64{0: 3, 1: 5, 3: 2, 4: 7, 5: 1} // window 2 has no data; 4 starts horizon 1
			want := map[int64]float64{0: 3, 1: 8, 3: 10, 4: 7, 5: 8}
			for _, w := range []int64{0, 1, 3, 4, 5} {
				outs, err := r.ReleaseWindow(window(w, counts[w]), time.UnixMilli(0))
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					rel := o.Release
					if rel.Status != StatusOK {
						t.Fatalf("window %d %s: status %s", w, rel.Release, rel.Status)
					}
					if got := int32(w%4 + 1); rel.HorizonWindow != got || rel.Horizon != 4 {
						t.Errorf("window %d: horizon %d window %d, want 4, %d", w, rel.Horizon, rel.HorizonWindow, got)
					}
					first := w%4 == 0
					if charged := len(o.Charge.Charges) > 0; charged != first {
						t.Errorf("window %d %s: charged %v, want %v", w, rel.Release, charged, first)
					}
					var total, inc float64
					switch rel.Release {
					case "n":
						total, inc = *rel.RunningTotal, *rel.Value
					case "h":
						total, inc = rel.RunningTotals[0], rel.NoisyCounts[0]
					}
					if math.Abs(total-want[w]) > 1e-6 || math.Abs(inc-float64(counts[w])) > 1e-6 && w != 3 {
						t.Errorf("window %d %s: total %v increment %v, want %v and %v", w, rel.Release, total, inc, want[w], counts[w])
					}
				}
			}
		})
	}
}

// TestContinualRestartContinuesExactly runs windows 0..9 of a horizon in
// one releaser, and again in a releaser that stops after window 4, is
// rebuilt from its ledger charges alone (a restart), and goes on with the
// same noise stream: every published running total is bit-identical, so
// the restart drew no noise again and re-noised no total. It also checks
// that the noise is real (the totals differ from the truth).
func TestContinualRestartContinuesExactly(t *testing.T) {
	for _, method := range []string{"per_window", "tree", "sqrt", "blt"} {
		t.Run(method, func(t *testing.T) {
			ps := continualPlan(t, 16, method, 100)
			run := func(r *Releaser, from, to int64) (out []schema.Release, charges []schema.LedgerCharge) {
				for w := from; w < to; w++ {
					outs, err := r.ReleaseWindow(window(w, w+1, 2*w), time.UnixMilli(0))
					if err != nil {
						t.Fatal(err)
					}
					for _, o := range outs {
						out = append(out, o.Release)
						// The ledger keeps the encoded charge: decode it,
						// as a restart reads it.
						lc, err := schema.DecodeLedgerCharge(o.Ledger)
						if err != nil {
							t.Fatal(err)
						}
						charges = append(charges, lc)
					}
				}
				return out, charges
			}
			straight, _ := run(NewReleaser(ps, noise.New(noise.SeededSource(7))), 0, 10)

			src := noise.New(noise.SeededSource(7))
			before, charges := run(NewReleaser(ps, src), 0, 5)
			restarted := NewReleaser(ps, src)
			for _, lc := range charges {
				if _, err := restarted.Restore(lc); err != nil {
					t.Fatal(err)
				}
			}
			after, _ := run(restarted, 5, 10)
			got := append(before, after...)
			if len(got) != len(straight) {
				t.Fatalf("%d releases, want %d", len(got), len(straight))
			}
			noisy := false
			for i := range got {
				a, b := straight[i], got[i]
				at, bt := totalsOf(a), totalsOf(b)
				for j := range at {
					if at[j] != bt[j] {
						t.Errorf("%s window %d: total %v after a restart, %v straight", a.Release, a.HorizonWindow, bt[j], at[j])
					}
					if at[j] != math.Round(at[j]) || at[j] != truth(a) {
						noisy = true
					}
				}
			}
			if !noisy {
				t.Error("every total is exact: no noise was added")
			}
		})
	}
}

func totalsOf(r schema.Release) []float64 {
	if r.RunningTotal != nil {
		return []float64{*r.RunningTotal}
	}
	return r.RunningTotals
}

// truth is the exact running count of window HorizonWindow−1 of the test's
// data (window w has 3w+1 events).
func truth(r schema.Release) float64 {
	var s float64
	for w := 0; w < int(r.HorizonWindow); w++ {
		s += float64(3*w + 1)
	}
	return s
}

// TestContinualRefusedHorizon: a horizon whose charge does not fit the
// budget is refused at its first window and in every later window of the
// horizon, nothing charged; the restored releaser agrees.
func TestContinualRefusedHorizon(t *testing.T) {
	ps := continualPlan(t, 4, "tree", 1.1) // one horizon charge (ε ≈ 0.89 at the budget δ) fits, two (≈ 1.26) do not
	r := NewReleaser(ps, zeroNoise{})
	var charges []schema.LedgerCharge
	for w := int64(0); w < 4; w++ {
		outs, err := r.ReleaseWindow(window(w, 1), time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			charges = append(charges, o.Charge)
			want := StatusOK
			if o.Release.Release == "h" {
				want = StatusBudgetExhausted
			}
			if o.Release.Status != want {
				t.Errorf("window %d %s: %s, want %s", w, o.Release.Release, o.Release.Status, want)
			}
			if o.Release.Status != StatusOK && (o.Release.RunningTotals != nil || len(logOf(o.Charge).X) != 0) {
				t.Errorf("window %d: a refused release carries totals or a log", w)
			}
		}
	}
	live, _ := r.State("s", 0, time.UnixMilli(0))
	re := NewReleaser(ps, zeroNoise{})
	for _, lc := range charges {
		if _, err := re.Restore(lc); err != nil {
			t.Fatal(err)
		}
	}
	back, _ := re.State("s", 0, time.UnixMilli(0))
	if live.ReleasesCharged != 1 || live.ReleasesRefused != 4 || back.ReleasesCharged != live.ReleasesCharged ||
		back.ReleasesRefused != live.ReleasesRefused || back.EpsilonSpent != live.EpsilonSpent {
		t.Errorf("live state %+v, restored %+v; want 1 charged and 4 refused in both", live, back)
	}
}

// TestContinualJoinedLate: a horizon whose first released window is not
// its first step (the stream started mid-horizon) logs only that window's
// step: the steps before it are public zeros, neither drawn nor logged;
// and a restart replays it exactly.
func TestContinualJoinedLate(t *testing.T) {
	ps := continualPlan(t, 8, "sqrt", 100)
	src := noise.New(noise.SeededSource(3))
	r := NewReleaser(ps, src)
	var charges []schema.LedgerCharge
	var totals []float64
	for _, w := range []int64{5, 6} {
		outs, err := r.ReleaseWindow(window(w, 4), time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			lc := o.Charge
			n := 1
			if lc.Release == "h" {
				n = 3
			}
			if int64(logOf(lc).First) != w || len(logOf(lc).X) != n || len(logOf(lc).Z) != n {
				t.Errorf("window %d %s: log from step %d with %d values, want step %d with %d", w, lc.Release, logOf(lc).First, len(logOf(lc).X), w, n)
			}
			if lc.Release == "n" && w == 5 {
				charges = append(charges, lc)
			}
			if lc.Release == "n" {
				totals = append(totals, *o.Release.RunningTotal)
			}
		}
	}
	// A releaser restored from window 5's charge alone continues to
	// window 6 exactly as the first did, from the same noise stream.
	src2 := noise.New(noise.SeededSource(3))
	r2 := NewReleaser(ps, src2)
	if _, err := r2.ReleaseWindow(window(5, 4), time.UnixMilli(0)); err != nil {
		t.Fatal(err)
	}
	re := NewReleaser(ps, src2)
	for _, lc := range charges {
		if _, err := re.Restore(lc); err != nil {
			t.Fatal(err)
		}
	}
	// Only the count's charge was restored: the restored releaser decides
	// the count of window 6 first (configuration order) and draws its
	// noise as the 5th variate of the stream, as the first releaser did.
	outs, err := re.ReleaseWindow(window(6, 4), time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(totals) != 2 || outs[0].Release.Release != "n" || *outs[0].Release.RunningTotal != totals[1] {
		t.Fatalf("window 6 after a restore: %+v, want total %v", outs[0].Release.RunningTotal, totals)
	}
}

// TestContinualOlderHorizonSkipped: a window of a horizon that has ended
// (one that arrives after a window of a later horizon) is never decided:
// it is before the release's high-water mark, charges nothing, publishes
// nothing, and leaves the current horizon's run as it was.
func TestContinualOlderHorizonSkipped(t *testing.T) {
	ps := continualPlan(t, 4, "tree", 100)
	r := NewReleaser(ps, zeroNoise{})
	for _, w := range []int64{4, 5} {
		if _, err := r.ReleaseWindow(window(w, 2), time.UnixMilli(0)); err != nil {
			t.Fatal(err)
		}
	}
	outs, err := r.ReleaseWindow(window(3, 7), time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 0 {
		t.Errorf("window 3 after window 5: %d outcomes (%s first), want none", len(outs), outs[0].Release.Status)
	}
	outs, err = r.ReleaseWindow(window(6, 1), time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	if o := outs[0]; o.Release.Status != StatusOK || *o.Release.RunningTotal != 5 || len(o.Charge.Charges) != 0 {
		t.Errorf("window 6: %s total %v with %d charges, want ok, 5 and none", o.Release.Status, o.Release.RunningTotal, len(o.Charge.Charges))
	}
}

// TestContinualChargedPerPeriod: with budget.per, a horizon is charged at
// its first window in each budget period it spans (a period's account must
// hold every mechanism touching its windows), and a restored releaser
// agrees.
func TestContinualChargedPerPeriod(t *testing.T) {
	yaml := `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: event
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 1}
    budget: {epsilon: 100, delta: 1e-5, per: 3s}
    releases:
      - {name: n, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 4, method: tree}}
`
	ps := mustPlan(t, yaml)
	r := NewReleaser(ps, zeroNoise{})
	var charged []int64
	var lcs []schema.LedgerCharge
	for w := int64(0); w < 8; w++ {
		outs, err := r.ReleaseWindow(Window{Stream: "s", Start: w * win, End: (w + 1) * win,
			Parts: []schema.Partial{{Stream: "s", WindowStart: w * win, WindowEnd: (w + 1) * win, Partitions: 1,
				Stats: []schema.ReleaseStats{{Release: "n", Count: 2}}}}}, time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		if len(outs[0].Charge.Charges) > 0 {
			charged = append(charged, w)
		}
		lcs = append(lcs, outs[0].Charge)
	}
	// Horizons [0, 4) and [4, 8); periods [0, 3), [3, 6), [6, 9).
	if want := []int64{0, 3, 4, 6}; !slices.Equal(charged, want) {
		t.Errorf("charged windows %v, want %v", charged, want)
	}
	re := NewReleaser(ps, zeroNoise{})
	for _, lc := range lcs {
		if _, err := re.Restore(lc); err != nil {
			t.Fatal(err)
		}
	}
	for p := int64(0); p < 3; p++ {
		a, _ := r.State("s", p, time.UnixMilli(0))
		b, _ := re.State("s", p, time.UnixMilli(0))
		if a.ReleasesCharged != b.ReleasesCharged || a.EpsilonSpent != b.EpsilonSpent || a.ReleasesCharged == 0 {
			t.Errorf("period %d: live %+v, restored %+v", p, a, b)
		}
	}
}

// TestContinualAlignedToStart: with a stream start, horizons begin at it,
// not at the Unix epoch.
func TestContinualAlignedToStart(t *testing.T) {
	ps := continualPlan(t, 4, "tree", 100)
	r := NewReleaser(ps, zeroNoise{})
	r.SetStart("s", 2*win)
	for w := int64(2); w < 8; w++ {
		outs, err := r.ReleaseWindow(window(w, 1), time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		o := outs[0]
		if want := int32((w-2)%4 + 1); o.Release.HorizonWindow != want || *o.Release.RunningTotal != float64(want) {
			t.Errorf("window %d: horizon window %d total %v, want %d", w, o.Release.HorizonWindow, *o.Release.RunningTotal, want)
		}
		if charged := len(o.Charge.Charges) > 0; charged != ((w-2)%4 == 0) {
			t.Errorf("window %d: charged %v", w, charged)
		}
	}
}

// mustPlan parses and calibrates a test configuration.
func mustPlan(t testing.TB, yaml string) []plan.Stream {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// eventStream calibrates an event-level stream "s" (window 1s, budget
// ε = 100 at δ = 1e-5) with the given releases, each a YAML flow mapping.
func eventStream(t *testing.T, releases ...string) []plan.Stream {
	t.Helper()
	yaml := `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: event
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 1}
    budget: {epsilon: 100, delta: 1e-5}
    releases:
`
	for _, r := range releases {
		yaml += "      - " + r + "\n"
	}
	return mustPlan(t, yaml)
}

// ledgerOf releases windows from to to−1 of r, count events each, and
// returns their ledger charges decoded from the bytes the ledger would
// hold, in order: what a restart reads.
func ledgerOf(t *testing.T, r *Releaser, from, to, count int64) []schema.LedgerCharge {
	t.Helper()
	var out []schema.LedgerCharge
	for w := from; w < to; w++ {
		outs, err := r.ReleaseWindow(window(w, count), time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			lc, err := schema.DecodeLedgerCharge(o.Ledger)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, lc)
		}
	}
	return out
}

// logOf is a continual window's step log, as its ledger charge holds it
// (kind/running's State, or the legacy fields).
func logOf(lc schema.LedgerCharge) kind.Log {
	l, _ := running.LogOf(lc)
	return l
}
