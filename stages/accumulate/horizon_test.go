package accumulate

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/dpstream/dpstream/schema"
)

// horizonStream is testStream with k = MaxWindows windows per horizon of
// T windows (1 s each), and grace windows of grace.
func horizonStream(k int, T, grace int64) *Stream {
	s := testStream()
	s.MaxWindows, s.Horizon, s.Grace = k, T, grace*s.Size
	return s
}

// feedUW adds events (unit, window index) at offsets from off on, in order,
// each 1 ms into its window, and returns their outcomes and the partials
// they closed.
func feedUW(t *testing.T, p *Partition, off int64, evs ...struct {
	unit string
	w    int64
}) ([]Outcome, []schema.Partial) {
	t.Helper()
	var outs []Outcome
	var parts []schema.Partial
	for i, e := range evs {
		out, closed := mustAdd(t, p, ev(off+int64(i), e.unit, e.w*p.s.Size+1, 1))
		outs = append(outs, out)
		parts = append(parts, closed...)
	}
	return outs, parts
}

type uw = struct {
	unit string
	w    int64
}

// closeAll closes every open window and returns the partials.
func closeAll(p *Partition) []schema.Partial {
	return p.advance(math.MaxInt64 / 2)
}

// keptPer returns events kept and dropped per window start of parts.
func keptPer(parts []schema.Partial) map[int64][2]int64 {
	out := map[int64][2]int64{}
	for _, pt := range parts {
		if pt.Events > 0 || pt.Dropped > 0 {
			out[pt.WindowStart/1000] = [2]int64{pt.Events, pt.Dropped}
		}
	}
	return out
}

// TestMaxWindows checks the rule on one partition: a unit in k+3 windows
// keeps exactly its first k by offset, whatever the order of the windows,
// another unit is not affected, a new horizon starts afresh, and the L
// bound still applies inside an admitted window.
func TestMaxWindows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		k     int
		T     int64
		grace int64
		evs   []uw
		want  []Outcome
		// kept and dropped events per window index
		per map[int64][2]int64
	}{
		{"first k of k+3, in order", 3, 100, 0,
			[]uw{{"u", 0}, {"u", 1}, {"v", 1}, {"u", 2}, {"u", 3}, {"v", 3}, {"u", 4}, {"u", 5}},
			[]Outcome{Accepted, Accepted, Accepted, Accepted, Dropped, Accepted, Dropped, Dropped},
			map[int64][2]int64{0: {1, 0}, 1: {2, 0}, 2: {1, 0}, 3: {1, 1}, 4: {0, 1}, 5: {0, 1}}},
		{"out of order: first k by offset, not by time", 3, 100, 20,
			[]uw{{"u", 5}, {"u", 2}, {"u", 7}, {"u", 2}, {"u", 3}, {"u", 1}, {"u", 7}},
			[]Outcome{Accepted, Accepted, Accepted, Accepted, Dropped, Dropped, Accepted},
			map[int64][2]int64{1: {0, 1}, 2: {2, 0}, 3: {0, 1}, 5: {1, 0}, 7: {2, 0}}},
		{"L still applies in an admitted window", 1, 100, 0,
			[]uw{{"u", 0}, {"u", 0}, {"u", 0}, {"u", 1}},
			[]Outcome{Accepted, Accepted, Dropped, Dropped},
			map[int64][2]int64{0: {2, 1}, 1: {0, 1}}},
		{"a new horizon starts afresh", 2, 4, 0,
			[]uw{{"u", 0}, {"u", 1}, {"u", 2}, {"u", 3}, {"u", 4}, {"u", 5}, {"u", 6}, {"u", 8}},
			[]Outcome{Accepted, Accepted, Dropped, Dropped, Accepted, Accepted, Dropped, Accepted},
			map[int64][2]int64{0: {1, 0}, 1: {1, 0}, 2: {0, 1}, 3: {0, 1}, 4: {1, 0}, 5: {1, 0}, 6: {0, 1}, 8: {1, 0}}},
		{"horizons aligned to the epoch, not to the first event", 2, 4, 0,
			[]uw{{"u", 3}, {"u", 4}, {"u", 5}, {"u", 6}},
			[]Outcome{Accepted, Accepted, Accepted, Dropped},
			map[int64][2]int64{3: {1, 0}, 4: {1, 0}, 5: {1, 0}, 6: {0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(horizonStream(tc.k, tc.T, tc.grace), 0, 1, NoWatermark)
			outs, parts := feedUW(t, p, 0, tc.evs...)
			if !slices.Equal(outs, tc.want) {
				t.Errorf("outcomes %v, want %v", outs, tc.want)
			}
			parts = append(parts, closeAll(p)...)
			if got := keptPer(parts); fmt.Sprint(got) != fmt.Sprint(tc.per) {
				t.Errorf("kept and dropped per window %v, want %v", got, tc.per)
			}
		})
	}
}

// TestMaxWindowsStateDropped: a horizon's state is dropped once the
// watermark has passed its end, so memory holds the current horizon only.
func TestMaxWindowsStateDropped(t *testing.T) {
	p := NewPartition(horizonStream(2, 4, 0), 0, 1, NoWatermark)
	feedUW(t, p, 0, uw{"u", 0}, uw{"v", 1}, uw{"u", 3})
	if len(p.horizons) != 1 {
		t.Fatalf("%d horizons, want 1", len(p.horizons))
	}
	feedUW(t, p, 3, uw{"w", 5})
	if _, ok := p.horizons[0]; ok || len(p.horizons) != 1 {
		t.Errorf("horizons %v after the watermark passed horizon 0's end, want only horizon 1", p.horizons)
	}
}

// TestMaxWindowsRestart: a partition that resumes from its commit point
// mid-horizon does not replay the admissions of the windows closed before
// it, so it must take every unit to have used them: the restarted
// partition still drops the unit's (k+1)-th window. Without the fail-safe
// in NewPartitionResumed the replay would admit it (the unit would be in
// k+1 windows of the horizon across the two runs' partials).
func TestMaxWindowsRestart(t *testing.T) {
	const k = 2
	s := horizonStream(k, 10, 0)
	run1 := NewPartition(s, 0, 1, NoWatermark)
	// u joins windows 0 and 1 (k of them); x opens window 2, closing 0 and 1.
	_, emitted := feedUW(t, run1, 0, uw{"u", 0}, uw{"u", 1}, uw{"x", 2})
	if got := starts(emitted); !slices.Equal(got, []int64{0, 1000}) {
		t.Fatalf("emitted windows %v, want 0 and 1000", got)
	}
	off, md, ok := run1.CommitPoint()
	if !ok || off != 2 {
		t.Fatalf("commit point %d (%v), want offset 2", off, ok)
	}
	// The first run goes on: u's third window is dropped.
	if outs, _ := feedUW(t, run1, 3, uw{"u", 2}); outs[0] != Dropped {
		t.Fatalf("first run: u's third window %v, want dropped", outs[0])
	}
	// Restart from the commit point: the replay starts at offset 2.
	res, err := DecodeResume(md)
	if err != nil {
		t.Fatal(err)
	}
	run2 := NewPartitionResumed(s, 0, 1, res)
	if n := run2.AssumedWindows(res.Closed); n != 2 {
		t.Errorf("assumed windows %d, want 2 (windows 0 and 1 closed before the commit)", n)
	}
	outs, _ := feedUW(t, run2, 2, uw{"x", 2}, uw{"u", 2}, uw{"u", 3})
	// x, whose window 2 the first run kept, loses it too: with n = k
	// windows closed before the commit no unit may join another (the
	// fail-safe's cost).
	if want := []Outcome{Dropped, Dropped, Dropped}; !slices.Equal(outs, want) {
		t.Errorf("replay outcomes %v, want %v: u was in k = %d windows before the commit", outs, want, k)
	}
	parts := closeAll(run2)
	for _, pt := range parts {
		if pt.WindowStart < 2000 {
			t.Errorf("replay emitted window %d, closed before the commit", pt.WindowStart)
		}
	}
	// The next horizon is not affected.
	run3 := NewPartitionResumed(s, 0, 1, res)
	if outs, _ := feedUW(t, run3, 2, uw{"u", 10}, uw{"u", 11}); !slices.Equal(outs, []Outcome{Accepted, Accepted}) {
		t.Errorf("next horizon after a restart: %v, want both accepted", outs)
	}
}

// TestMaxWindowsRestartEarly: after a restart in a horizon's n-th window
// every unit gets at most k − n more windows of it, the fail-safe's cost:
// u, which had one window, gets its second, and v, which had none, only
// one.
func TestMaxWindowsRestartEarly(t *testing.T) {
	s := horizonStream(2, 10, 0)
	run1 := NewPartition(s, 0, 1, NoWatermark)
	feedUW(t, run1, 0, uw{"u", 0}, uw{"x", 1})
	_, md, _ := run1.CommitPoint()
	res, err := DecodeResume(md)
	if err != nil {
		t.Fatal(err)
	}
	run2 := NewPartitionResumed(s, 0, 1, res)
	outs, _ := feedUW(t, run2, 1, uw{"x", 1}, uw{"u", 2}, uw{"u", 3}, uw{"v", 3}, uw{"v", 4})
	if want := []Outcome{Accepted, Accepted, Dropped, Accepted, Dropped}; !slices.Equal(outs, want) {
		t.Errorf("outcomes %v, want %v", outs, want)
	}
}

// TestAssumeUsed: the fail-safe for a horizon whose admissions are
// unknown: with n ≥ k (or n < 0, all) no unit gets a window of it, with
// n < k each gets k − n, and the next horizon is unaffected.
func TestAssumeUsed(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []Outcome
	}{
		{-1, []Outcome{Dropped, Dropped, Dropped, Accepted}},
		{5, []Outcome{Dropped, Dropped, Dropped, Accepted}},
		{2, []Outcome{Accepted, Dropped, Accepted, Accepted}},
		{0, []Outcome{Accepted, Accepted, Accepted, Accepted}},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			p := NewPartition(horizonStream(3, 10, 20), 0, 1, NoWatermark)
			p.AssumeUsed(0, tc.n)
			outs, _ := feedUW(t, p, 0, uw{"u", 1}, uw{"u", 2}, uw{"v", 2}, uw{"u", 12})
			if !slices.Equal(outs, tc.want) {
				t.Errorf("outcomes %v, want %v", outs, tc.want)
			}
		})
	}
}

// TestMemoryPerHorizonUnit measures the state one unit leaves in its
// horizon once its window has closed: what max_windows costs per unit of
// the current horizon.
func TestMemoryPerHorizonUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 10⁵ units")
	}
	const units = 100_000
	p := NewPartition(horizonStream(3, 1000, 0), 0, 1, NoWatermark)
	evs := make([]Event, units)
	for i := range evs {
		evs[i] = ev(int64(i), fmt.Sprintf("u%07d", i), 1, 1)
	}
	measure := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := measure()
	for _, e := range evs {
		mustAdd(t, p, e)
	}
	// Close window 0 (the horizon goes on): only the horizon's state stays.
	if parts := p.advance(p.s.Size); len(parts) != 1 || parts[0].Units != units {
		t.Fatalf("closing window 0: %d partials", len(parts))
	}
	after := measure()
	runtime.KeepAlive(p)
	runtime.KeepAlive(evs)
	perUnit := float64(after-before) / units
	t.Logf("%.0f bytes per unit of the current horizon with one admitted window (the unit's string, shared with the event here, not included; add its length rounded up to 8, and 16 for its header, when the event is gone)", perUnit)
	if perUnit > 256 || math.IsNaN(perUnit) {
		t.Errorf("%.0f bytes per unit, more than 256", perUnit)
	}
}

// TestMaxWindowsReplayAcceptsMore is the replay that accepts an event the
// first run rejected (a record stamped ahead of the first run's clock,
// rejected as future then, in time now): run 1 rejects u's event in window
// 5, admits u in windows 0 and 1 (k = 2) and emits them, and dies before
// its first commit. The replay, from the start, sees the event of window 5
// first. Without AssumeUpTo it admits window 5 and window 0, and u is in
// three windows of the horizon across the two runs' partials (run 1's of
// window 1, which the merger took first). With it, every window that could
// have closed by the restart's clock counts as used, and u gets none.
func TestMaxWindowsReplayAcceptsMore(t *testing.T) {
	s := horizonStream(2, 10, 6) // grace: window 5's event does not make 0 and 1 late
	run1 := NewPartition(s, 0, 1, NoWatermark)
	_, emitted := feedUW(t, run1, 1, uw{"u", 0}, uw{"u", 1}, uw{"x", 8})
	if got := keptPer(emitted); got[0] != [2]int64{1, 0} || got[1] != [2]int64{1, 0} {
		t.Fatalf("run 1 emitted %v, want u's event kept in windows 0 and 1", got)
	}
	replay := func(assume bool) []Outcome {
		p := NewPartition(s, 0, 1, NoWatermark)
		if assume {
			// The restart's clock is past window 8's end plus grace:
			// windows up to 2 may have been emitted (and more, within
			// MaxSkew), which is k already.
			if n := p.AssumeUpTo(9000); n != 2 {
				t.Errorf("AssumeUpTo: %d windows assumed, want k = 2", n)
			}
		}
		outs, _ := feedUW(t, p, 0, uw{"u", 5}, uw{"u", 0}, uw{"u", 1})
		return outs
	}
	if got, want := replay(false), []Outcome{Accepted, Accepted, Dropped}; !slices.Equal(got, want) {
		t.Fatalf("without AssumeUpTo: %v, want %v (the hole this test is about)", got, want)
	}
	if got, want := replay(true), []Outcome{Dropped, Dropped, Dropped}; !slices.Equal(got, want) {
		t.Errorf("with AssumeUpTo: %v, want %v: u was in k windows run 1 emitted", got, want)
	}
	// A horizon that begins after the restart's clock plus MaxSkew (60 s,
	// 60 windows here) is not affected.
	p := NewPartition(s, 0, 1, NoWatermark)
	p.AssumeUpTo(9000)
	if outs, _ := feedUW(t, p, 0, uw{"u", 70}, uw{"u", 71}); !slices.Equal(outs, []Outcome{Accepted, Accepted}) {
		t.Errorf("horizon 7: %v, want both accepted", outs)
	}
}
