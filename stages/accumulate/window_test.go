package accumulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	mdensity "github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/schema"
)

// testStream is a small stream whose numbers are easy to follow by hand:
// 1 s windows, 200 ms grace, L = 2, and one release of every kind on a
// field bounded to [0, 10] (midpoint 5, histogram edges 0, 2, 4, 6, 8, 10).
func testStream() *Stream {
	return build(&Stream{Name: "trips", Size: 1000, Grace: 200, IdleTimeout: 30 * time.Second, MaxEvents: 2},
		relSpec{Name: "n", Kind: "count"},
		relSpec{Name: "total", Kind: "sum", Field: "v", Lo: 0, Hi: 10},
		relSpec{Name: "avg", Kind: "mean", Field: "v", Lo: 0, Hi: 10},
		relSpec{Name: "hist", Kind: "histogram", Field: "v", Lo: 0, Hi: 10, Bins: 5},
	)
}

// ev is an event of testStream carrying value v for every valued release.
func ev(off int64, unit string, t int64, v float64) Event {
	return Event{Offset: off, Unit: unit, Time: t, Values: []float64{0, v, v, v}}
}

// mustAdd is Partition.Add for events that must not fail.
func mustAdd(t testing.TB, p *Partition, e Event) (Outcome, []schema.Partial) {
	t.Helper()
	out, closed, err := p.Add(e)
	if err != nil {
		t.Fatalf("Add(offset %d): %v", e.Offset, err)
	}
	return out, closed
}

func starts(ps []schema.Partial) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = p.WindowStart
	}
	return out
}

// diffPartial describes how got differs from want ("" when equal). Empty and
// nil bin slices are equal: the schema only says "empty unless histogram".
func diffPartial(got, want schema.Partial) string {
	var d []string
	add := func(field string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", field, g, w))
		}
	}
	add("Stream", got.Stream, want.Stream)
	add("WindowStart", got.WindowStart, want.WindowStart)
	add("WindowEnd", got.WindowEnd, want.WindowEnd)
	add("Partition", got.Partition, want.Partition)
	add("Partitions", got.Partitions, want.Partitions)
	add("Events", got.Events, want.Events)
	add("Units", got.Units, want.Units)
	add("Dropped", got.Dropped, want.Dropped)
	add("FirstOffset", got.FirstOffset, want.FirstOffset)
	add("LastOffset", got.LastOffset, want.LastOffset)
	if len(got.Stats) != len(want.Stats) {
		d = append(d, fmt.Sprintf("len(Stats): got %d, want %d", len(got.Stats), len(want.Stats)))
	} else {
		for i := range got.Stats {
			g, w := got.Stats[i], want.Stats[i]
			add(fmt.Sprintf("Stats[%d].Release", i), g.Release, w.Release)
			add(fmt.Sprintf("Stats[%d].Count", i), g.Count, w.Count)
			add(fmt.Sprintf("Stats[%d].SumUnits", i), g.SumUnits, w.SumUnits)
			add(fmt.Sprintf("Stats[%d].CenteredSumUnits", i), g.CenteredSumUnits, w.CenteredSumUnits)
			add(fmt.Sprintf("Stats[%d].Clamped", i), g.Clamped, w.Clamped)
			if !slices.Equal(g.Bins, w.Bins) {
				d = append(d, fmt.Sprintf("Stats[%d].Bins: got %v, want %v", i, g.Bins, w.Bins))
			}
		}
	}
	add("UnitsTruncated", got.UnitsTruncated, want.UnitsTruncated)
	// Contributions must be identical bit for bit (DESIGN invariant 2).
	if !slices.EqualFunc(got.UnitContributions, want.UnitContributions, func(g, w schema.UnitContribution) bool {
		return g.Unit == w.Unit && slices.EqualFunc(g.Norms, w.Norms, func(a, b []float64) bool {
			return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
		})
	}) {
		d = append(d, fmt.Sprintf("UnitContributions: got %v, want %v", got.UnitContributions, want.UnitContributions))
	}
	return strings.Join(d, "; ")
}

// emptyPartial is what a window with no event on the partition must look
// like: offsets -1, zero statistics, and all-zero bins of the configured
// length for histograms.
func emptyPartial(s *Stream, start int64, id, count int32) schema.Partial {
	p := schema.Partial{Stream: s.Name, WindowStart: start, WindowEnd: start + s.Size, Partition: id, Partitions: count,
		FirstOffset: -1, LastOffset: -1}
	for _, r := range specsOf(s) {
		rs := schema.ReleaseStats{Release: r.Name}
		if r.Kind == "histogram" {
			rs.Bins = make([]int64, r.Bins)
		}
		p.Stats = append(p.Stats, rs)
	}
	return p
}

func TestWindowStart(t *testing.T) {
	s := &Stream{Size: 1000}
	for _, tc := range []struct{ t, want int64 }{
		{0, 0}, {1, 0}, {999, 0}, {1000, 1000}, {1999, 1000},
		{-1, -1000}, {-999, -1000}, {-1000, -1000}, {-1001, -2000},
		{1714550400123, 1714550400000},
	} {
		if got := s.WindowStart(tc.t); got != tc.want {
			t.Errorf("WindowStart(%d) = %d, want %d", tc.t, got, tc.want)
		}
	}
}

// TestAddWatermarkAndClosing follows the watermark (max event time − grace)
// event by event and checks which windows each event closes: a window
// [s, s+size) closes exactly when the watermark reaches s+size, gap windows
// close with it, and an event whose window has closed is Late.
func TestAddWatermarkAndClosing(t *testing.T) {
	type step struct {
		ev         Event
		want       Outcome
		wantWM     int64
		wantClosed []int64
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"epoch-aligned windows close at wm >= end", []step{
			{ev(0, "a", 100, 1), Accepted, -100, nil},            // window -1000 holds wm -100: it is open
			{ev(1, "a", 1199, 1), Accepted, 999, []int64{-1000}}, // window 0 ends at 1000 > 999
			{ev(2, "b", 1200, 1), Accepted, 1000, []int64{0}},    // wm reaches the end exactly
			{ev(3, "b", 999, 1), Late, 1000, nil},                // window 0 closed
			{ev(4, "c", 1000, 1), Accepted, 1000, nil},           // window 1000 still open
			{ev(5, "c", 800, 1), Late, 1000, nil},                // does not move the watermark back
			{ev(6, "c", 4250, 1), Accepted, 4050, []int64{1000, 2000, 3000}},
			{ev(7, "a", 3999, 1), Late, 4050, nil},
			{ev(8, "a", 4000, 1), Accepted, 4050, nil},
			{ev(9, "a", 4100, 1), Accepted, 4050, nil}, // below the max: watermark unchanged
		}},
		{"negative event times", []step{
			{ev(0, "a", -1500, 1), Accepted, -1700, nil},
			{ev(1, "a", -299, 1), Accepted, -499, []int64{-2000}},
			{ev(2, "a", -1001, 1), Late, -499, nil},
			{ev(3, "a", -1000, 1), Accepted, -499, nil},
			{ev(4, "a", 200, 1), Accepted, 0, []int64{-1000}},
		}},
		{"a fresh partition starts at the window holding its first watermark", []step{
			{ev(0, "a", 5100, 1), Accepted, 4900, nil}, // window 4000 is open at wm 4900
			{ev(1, "a", 4850, 1), Accepted, 4900, nil}, // and accepts events within grace
			{ev(2, "a", 5200, 1), Accepted, 5000, []int64{4000}},
			{ev(3, "a", 8199, 1), Accepted, 7999, []int64{5000, 6000}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testStream()
			p := NewPartition(s, 2, 4, NoWatermark)
			if p.Watermark() != NoWatermark {
				t.Fatalf("fresh partition: watermark %d, want NoWatermark", p.Watermark())
			}
			for i, st := range tc.steps {
				out, closed := mustAdd(t, p, st.ev)
				if out != st.want {
					t.Errorf("step %d (t=%d): outcome %v, want %v", i, st.ev.Time, out, st.want)
				}
				if p.Watermark() != st.wantWM {
					t.Errorf("step %d (t=%d): watermark %d, want %d", i, st.ev.Time, p.Watermark(), st.wantWM)
				}
				if got := starts(closed); !slices.Equal(got, st.wantClosed) {
					t.Errorf("step %d (t=%d): closed windows %v, want %v", i, st.ev.Time, got, st.wantClosed)
				}
				for _, c := range closed {
					if c.Stream != s.Name || c.WindowEnd != c.WindowStart+s.Size || c.Partition != 2 || c.Partitions != 4 {
						t.Errorf("step %d: partial header %q [%d, %d) partition %d/%d, want %q [s, s+%d) partition 2/4",
							i, c.Stream, c.WindowStart, c.WindowEnd, c.Partition, c.Partitions, s.Name, s.Size)
					}
				}
			}
		})
	}
}

// TestPartialContents checks every field of the partials of a short stream
// against values worked out by hand: contribution bounding (first L events
// of a unit per window, by offset, independently per window), clamping
// (counted, clamped values in the edge bins), exact sums and an empty gap
// window.
func TestPartialContents(t *testing.T) {
	s := testStream() // L = 2, bounds [0, 10], bins of width 2
	p := NewPartition(s, 0, 1, NoWatermark)
	type step struct {
		ev   Event
		want Outcome
	}
	steps := []step{
		{ev(0, "a", 10, 3), Accepted},
		{ev(1, "b", 20, -4), Accepted},  // clamped to 0
		{ev(2, "a", 30, 12), Accepted},  // clamped to 10; a's second event in window 0
		{ev(3, "a", 40, 1), Dropped},    // a's third event in window 0
		{ev(4, "c", 1100, 5), Accepted}, // window 1000; wm 900
		{ev(5, "a", 990, 7), Dropped},   // window 0 is still open; a is full there
		{ev(6, "a", 1150, 9), Accepted}, // window 1000: a's count starts afresh
		{ev(7, "a", 1180, 2), Accepted},
		{ev(8, "a", 1190, -100), Dropped}, // dropped before clamping: not counted as clamped
		{ev(9, "b", 1200, 2.5), Accepted}, // wm 1000 closes window 0
		{ev(10, "z", 3300, 4), Accepted},  // wm 3100 closes 1000 and the empty 2000
	}
	var got []schema.Partial
	for i, st := range steps {
		out, closed := mustAdd(t, p, st.ev)
		if out != st.want {
			t.Errorf("offset %d: outcome %v, want %v", i, out, st.want)
		}
		got = append(got, closed...)
	}

	// Fixed-point units: the sum on [0, 10] has quantum 2^-26 (the smallest
	// power of two ≥ 10 is 2^4, and 4 − 30 = −26); the mean's centered
	// values lie in [−5, 5], quantum 2^-27. Every value here is a multiple
	// of both, so its units are exactly v·2^26 and (v − 5)·2^27.
	const sumUnit, meanUnit = 1 << 26, 1 << 27
	w0 := schema.Partial{Stream: "trips", WindowStart: 0, WindowEnd: 1000, Partition: 0, Partitions: 1,
		Events: 3, Units: 2, Dropped: 2, FirstOffset: 0, LastOffset: 5,
		Stats: []schema.ReleaseStats{
			{Release: "n", Count: 3},
			{Release: "total", Count: 3, SumUnits: (3 + 0 + 10) * sumUnit, Clamped: 2},
			{Release: "avg", Count: 3, CenteredSumUnits: ((3 - 5) + (0 - 5) + (10 - 5)) * meanUnit, Clamped: 2},
			{Release: "hist", Count: 3, Bins: []int64{1, 1, 0, 0, 1}, Clamped: 2}, // 0→bin 0, 3→bin 1, 10→bin 4
		}}
	w1 := schema.Partial{Stream: "trips", WindowStart: 1000, WindowEnd: 2000, Partition: 0, Partitions: 1,
		Events: 4, Units: 3, Dropped: 1, FirstOffset: 4, LastOffset: 9,
		Stats: []schema.ReleaseStats{
			{Release: "n", Count: 4},
			{Release: "total", Count: 4, SumUnits: (5 + 9 + 2 + 2.5) * sumUnit},
			{Release: "avg", Count: 4, CenteredSumUnits: ((5 - 5) + (9 - 5) + (2 - 5) + (2.5 - 5)) * meanUnit},
			{Release: "hist", Count: 4, Bins: []int64{0, 2, 1, 0, 1}}, // 5→2, 9→4, 2→1 (left edge), 2.5→1
		}}
	w2 := emptyPartial(s, 2000, 0, 1)
	// Window -1000 holds the first watermark (10 − 200), so it was open on
	// this partition and closes empty.
	want := []schema.Partial{emptyPartial(s, -1000, 0, 1), w0, w1, w2}
	if len(got) != len(want) {
		t.Fatalf("emitted windows %v, want %v", starts(got), starts(want))
	}
	for i := range want {
		if d := diffPartial(got[i], want[i]); d != "" {
			t.Errorf("window %d: %s", want[i].WindowStart, d)
		}
	}
	if p.OpenWindows() != 1 {
		t.Errorf("OpenWindows = %d, want 1 (window 3000)", p.OpenWindows())
	}
}

// TestGapWindowsAreEmpty: a watermark jump emits one partial for every
// window it passes, in window order, and those without events are empty
// with histograms of the configured length.
func TestGapWindowsAreEmpty(t *testing.T) {
	s := testStream()
	p := NewPartition(s, 1, 3, NoWatermark)
	mustAdd(t, p, ev(0, "a", 500, 5))
	_, closed := mustAdd(t, p, ev(1, "a", 6200, 5)) // wm 6000: windows 0..5000 close
	if got, want := starts(closed), []int64{0, 1000, 2000, 3000, 4000, 5000}; !slices.Equal(got, want) {
		t.Fatalf("closed %v, want %v", got, want)
	}
	if closed[0].Events != 1 {
		t.Errorf("window 0: Events %d, want 1", closed[0].Events)
	}
	for _, c := range closed[1:] {
		if d := diffPartial(c, emptyPartial(s, c.WindowStart, 1, 3)); d != "" {
			t.Errorf("gap window %d: %s", c.WindowStart, d)
		}
		if h := c.Stats[3].Bins; h == nil || len(h) != 5 {
			t.Errorf("gap window %d: histogram bins %v, want 5 zero bins", c.WindowStart, h)
		}
	}
}

// TestMaxGapWindows: a jump of more than MaxGapWindows windows closes the
// open windows and emits only the last MaxGapWindows windows, in order.
func TestMaxGapWindows(t *testing.T) {
	s := testStream()
	p := NewPartition(s, 0, 1, NoWatermark)
	mustAdd(t, p, ev(0, "a", 500, 5))
	mustAdd(t, p, ev(1, "a", 700, 5))
	jump := int64(2*MaxGapWindows+1)*s.Size + s.Grace // wm = (2·Max+1)·size
	_, closed := mustAdd(t, p, ev(2, "a", jump, 5))
	if len(closed) != MaxGapWindows+1 {
		t.Fatalf("closed %d windows, want %d (the open one and the last %d)", len(closed), MaxGapWindows+1, MaxGapWindows)
	}
	if closed[0].WindowStart != 0 || closed[0].Events != 2 {
		t.Errorf("first partial: window %d with %d events, want the open window 0 with 2", closed[0].WindowStart, closed[0].Events)
	}
	firstOpen := int64(2*MaxGapWindows+1) * s.Size
	for i, c := range closed[1:] {
		if want := firstOpen - int64(MaxGapWindows-i)*s.Size; c.WindowStart != want || c.Events != 0 {
			t.Fatalf("partial %d: window %d (%d events), want empty window %d", i+1, c.WindowStart, c.Events, want)
		}
	}
	if p.OpenWindows() != 1 {
		t.Errorf("OpenWindows = %d, want 1", p.OpenWindows())
	}
}

// TestLateEventChangesNothing runs one stream with and without late events
// slipped in between (at odd offsets; the stream itself uses even ones) and
// requires identical partials and watermarks.
func TestLateEventChangesNothing(t *testing.T) {
	s := testStream()
	base := []Event{
		ev(0, "a", 100, 1), ev(2, "b", 1300, 2), ev(4, "a", 1350, 3),
		ev(6, "c", 2500, 4), ev(8, "a", 2600, 5), ev(10, "a", 4300, 6),
	}
	late := map[int]Event{ // inserted after base[i]
		2: ev(5, "a", 999, 9),    // window 0 closed at wm 1150
		3: ev(7, "new", 500, 11), // a unit never seen, out-of-bounds value
		4: ev(9, "a", 1999, 0),   // window 1000: end 2000 <= wm 2400
		5: ev(11, "c", 3999, 7),  // window 3000: closed at wm 4100 just now
	}
	run := func(withLate bool) ([]schema.Partial, []int64) {
		p := NewPartition(s, 0, 1, NoWatermark)
		var parts []schema.Partial
		var wms []int64
		for i, e := range base {
			_, c := mustAdd(t, p, e)
			parts = append(parts, c...)
			if l, ok := late[i]; ok && withLate {
				open := p.OpenWindows()
				out, c := mustAdd(t, p, l)
				if out != Late || len(c) != 0 || p.OpenWindows() != open {
					t.Errorf("late event at offset %d: outcome %v, %d partials, open %d→%d; want Late, none, unchanged",
						l.Offset, out, len(c), open, p.OpenWindows())
				}
			}
			wms = append(wms, p.Watermark())
		}
		parts = append(parts, p.Idle(time.Time{}, time.Hour)...) // close everything left
		return parts, wms
	}
	want, wantWM := run(false)
	got, gotWM := run(true)
	if !slices.Equal(gotWM, wantWM) {
		t.Errorf("watermarks with late events %v, without %v", gotWM, wantWM)
	}
	if len(got) != len(want) {
		t.Fatalf("windows with late events %v, without %v", starts(got), starts(want))
	}
	for i := range want {
		if d := diffPartial(got[i], want[i]); d != "" {
			t.Errorf("window %d: %s", want[i].WindowStart, d)
		}
	}
}

// TestSumsAreExactUnits: a sum release's SumUnits is Σ k(clamped v) and a
// mean's CenteredSumUnits Σ k(clamped v − aggregate.Midpoint(Lo, Hi)),
// with k the quantization to the release's power-of-two quantum, ties up,
// computed here independently (refUnits, in exact rational arithmetic).
func TestSumsAreExactUnits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   string
		lo, hi float64
		values []float64
	}{
		{"mean, decimal bounds", "mean", 0.1, 100.1, []float64{50.1, 50.1, 0.1, 100.1, 70, -3, 1e9}},
		{"mean, bounds straddling zero", "mean", -3.3, 12.3, []float64{4.5, -3.3, 12.3, 0, 7.25}},
		{"mean, bounds near the float64 limit", "mean", 1e308, 1.6e308, []float64{1.2e308, 1.5e308, 0}},
		{"sum, decimal bounds", "sum", 0.1, 100.1, []float64{0.2, 0.3, 99.9, 1000, -1}},
		{"sum, bounds near the float64 limit", "sum", -1e307, 1.6e308, []float64{1.6e308, 1.7e308, -1e308, 3}},
		{"mean, symmetric bounds", "mean", -1, 1, []float64{0.5, -0.25, 2, -2}},
		{"sum, ties at half a quantum", "sum", 0, 1, []float64{0x1.8p-30, 0x1.8p-29, 0x0.8p-30, -0x0.8p-30, 1 - 0x0.8p-30}},
		{"mean, narrow bounds far from zero", "mean", 1.7e9, 1.7e9 + 100, []float64{1.7e9 + 0.25, 1.7e9 + 99.5, 1.7e9 + 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := build(&Stream{Name: "x", Size: 1000, Grace: 0, IdleTimeout: time.Second, MaxEvents: len(tc.values)},
				relSpec{Name: "r", Kind: tc.kind, Field: "v", Lo: tc.lo, Hi: tc.hi})
			p := NewPartition(s, 0, 1, NoWatermark)
			rel := specsOf(s)[0]
			var want int64
			var wantClamped int64
			for i, v := range tc.values {
				if _, c := mustAdd(t, p, Event{Offset: int64(i), Unit: "u", Time: 10, Values: []float64{v}}); len(c) != 0 {
					t.Fatalf("event %d closed a window", i)
				}
				if c := math.Min(math.Max(v, tc.lo), tc.hi); c != v {
					wantClamped++
				}
				want += refUnits(rel, v)
			}
			closed := p.Idle(time.Time{}, time.Second) // wm 1010: closes window 0 only
			if len(closed) != 1 || closed[0].WindowStart != 0 {
				t.Fatalf("closed windows %v, want [0]", starts(closed))
			}
			rs := closed[0].Stats[0]
			if rs.Count != int64(len(tc.values)) || rs.Clamped != wantClamped {
				t.Errorf("Count %d Clamped %d, want %d and %d", rs.Count, rs.Clamped, len(tc.values), wantClamped)
			}
			got, other := rs.SumUnits, rs.CenteredSumUnits
			if tc.kind == "mean" {
				got, other = other, got
			}
			if got != want || other != 0 {
				t.Errorf("%s units = %d (other sum %d), want %d (and 0)", tc.kind, got, other, want)
			}
		})
	}
}

// TestIdle: nothing moves before the idle timeout; afterwards event time is
// taken to have advanced with the wall clock since the last event (a
// partition that never saw an event follows the wall clock itself, a
// restarted one resumes from its committed watermark), and repeated calls
// while the partition stays quiet do not compound.
func TestIdle(t *testing.T) {
	const T = 1_700_000_000_000 // wall clock at the first Idle call, a multiple of the window size
	wall := func(dt time.Duration) time.Time { return time.UnixMilli(T).Add(dt) }
	s := testStream() // idle timeout 30 s, grace 200 ms, size 1 s
	seq := func(from, to int64) []int64 {
		var out []int64
		for x := from; x < to; x += 1000 {
			out = append(out, x)
		}
		return out
	}
	type call struct {
		now        time.Time
		idleFor    time.Duration
		wantWM     int64
		wantClosed []int64
	}
	for _, tc := range []struct {
		name    string
		startWM int64
		events  []Event
		calls   []call
	}{
		{"before the timeout nothing happens", NoWatermark, []Event{ev(0, "a", 1500, 1)}, []call{
			{wall(0), 30*time.Second - time.Millisecond, 1300, nil},
			{wall(0), 0, 1300, nil},
		}},
		{"after the timeout the watermark moves by the idle time", NoWatermark, []Event{ev(0, "a", 1500, 1)}, []call{
			{wall(0), 30 * time.Second, 1500 + 30000 - 200, seq(1000, 31000)},
			{wall(100 * time.Millisecond), 30*time.Second + 100*time.Millisecond, 1500 + 30100 - 200, nil},
			{wall(time.Second), 31 * time.Second, 1500 + 31000 - 200, []int64{31000}},
		}},
		{"a never-seen partition follows the wall clock", NoWatermark, nil, []call{
			{wall(0), time.Second, NoWatermark, nil},
			{wall(0), 30 * time.Second, T - 200, nil},
			{wall(100 * time.Millisecond), 30*time.Second + 100*time.Millisecond, T - 100, nil},
			{wall(5 * time.Second), 35 * time.Second, T + 4800, seq(T-1000, T+4000)},
		}},
		{"a restarted partition resumes from its committed watermark", 10_000, nil, []call{
			{wall(0), 30 * time.Second, 10_000 + 30_000, seq(10_000, 40_000)},
			{wall(100 * time.Millisecond), 30*time.Second + 100*time.Millisecond, 10_000 + 30_100, nil},
			{wall(2 * time.Second), 32 * time.Second, 10_000 + 32_000, []int64{40_000, 41_000}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(s, 0, 1, tc.startWM)
			for _, e := range tc.events {
				mustAdd(t, p, e)
			}
			for i, c := range tc.calls {
				closed := p.Idle(c.now, c.idleFor)
				if p.Watermark() != c.wantWM {
					t.Errorf("call %d (idle %v): watermark %d, want %d", i, c.idleFor, p.Watermark(), c.wantWM)
				}
				if got := starts(closed); !slices.Equal(got, c.wantClosed) {
					if len(got) > 8 || len(c.wantClosed) > 8 {
						t.Errorf("call %d (idle %v): closed %d windows, want %d", i, c.idleFor, len(got), len(c.wantClosed))
					} else {
						t.Errorf("call %d (idle %v): closed %v, want %v", i, c.idleFor, got, c.wantClosed)
					}
				}
			}
		})
	}
}

// TestIdleThenLate: once idleness has closed a window, an event for it is
// late.
func TestIdleThenLate(t *testing.T) {
	s := testStream()
	p := NewPartition(s, 0, 1, NoWatermark)
	mustAdd(t, p, ev(0, "a", 1500, 1))
	if closed := p.Idle(time.Time{}, s.IdleTimeout); len(closed) == 0 || closed[0].WindowStart != 1000 || closed[0].Events != 1 {
		t.Fatalf("Idle closed %v, want window 1000 (with its event) first", starts(closed))
	}
	if out, _ := mustAdd(t, p, ev(1, "b", 1600, 1)); out != Late {
		t.Errorf("event in the idle-closed window: %v, want Late", out)
	}
}

func TestCommitPoint(t *testing.T) {
	s := testStream()
	add := func(e Event) func(*Partition) { return func(p *Partition) { mustAdd(t, p, e) } }
	skip := func(o int64) func(*Partition) { return func(p *Partition) { p.Skip(o) } }
	idle := func(p *Partition) { p.Idle(time.Time{}, s.IdleTimeout) }
	for _, tc := range []struct {
		name    string
		ops     []func(*Partition)
		wantOK  bool
		wantOff int64
		wantWM  int64
	}{
		{"nothing processed", nil, false, 0, 0},
		{"only rejected records", []func(*Partition){skip(0), skip(1), skip(2)}, true, 3, NoWatermark},
		{"one open window from the first record",
			[]func(*Partition){add(ev(0, "a", 100, 1)), add(ev(1, "a", 200, 1))}, true, 0, NoWatermark},
		{"oldest open window's first offset and the watermark before it",
			[]func(*Partition){add(ev(0, "a", 100, 1)), add(ev(1, "a", 1100, 1)), add(ev(2, "a", 1250, 1))}, true, 1, -100},
		{"oldest by offset, not by window start",
			[]func(*Partition){add(ev(0, "a", 1100, 1)), add(ev(1, "a", 950, 1))}, true, 0, NoWatermark},
		{"no open window: next offset and the watermark",
			[]func(*Partition){add(ev(0, "a", 100, 1)), idle, add(ev(1, "a", 500, 1)), skip(2)}, true, 3, 100 + 30000 - 200},
		{"no open window: a trailing late record is consumed",
			[]func(*Partition){add(ev(0, "a", 100, 1)), idle, add(ev(1, "a", 500, 1))}, true, 2, 100 + 30000 - 200},
		{"late and rejected records after the open window do not move it",
			[]func(*Partition){add(ev(0, "a", 100, 1)), add(ev(1, "a", 1300, 1)), add(ev(2, "a", 50, 1)), skip(3)}, true, 1, -100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(s, 0, 1, NoWatermark)
			for _, op := range tc.ops {
				op(p)
			}
			off, md, ok := p.CommitPoint()
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			res, err := DecodeResume(md)
			if err != nil {
				t.Fatalf("DecodeResume(%q): %v", md, err)
			}
			if wm := res.Watermark; off != tc.wantOff || wm != tc.wantWM {
				t.Errorf("commit point (%d, wm %d), want (%d, wm %d)", off, wm, tc.wantOff, tc.wantWM)
			}
		})
	}
}

func TestWatermarkMetadata(t *testing.T) {
	for _, wm := range []int64{NoWatermark, math.MinInt64 + 1, -1, 0, 1, 1714550400000, math.MaxInt64} {
		md := EncodeWatermark(wm)
		got, err := DecodeWatermark(md)
		if err != nil || got != wm {
			t.Errorf("DecodeWatermark(EncodeWatermark(%d) = %q) = %d, %v; want %d, nil", wm, md, got, err, wm)
		}
	}
	if got, err := DecodeWatermark(""); err != nil || got != NoWatermark {
		t.Errorf(`DecodeWatermark("") = %d, %v; want NoWatermark, nil (no metadata)`, got, err)
	}
	for _, md := range []string{
		"kafka-streams-v2",
		"dpstream/v2 wm=5",
		"dpstream/v1 wm=",
		"dpstream/v1 wm=12x",
		"dpstream/v1 wm=99999999999999999999",
		"dpstream/v1 wm= 5",
		" dpstream/v1 wm=5",
	} {
		got, err := DecodeWatermark(md)
		if err == nil || got != NoWatermark {
			t.Errorf("DecodeWatermark(%q) = %d, %v; want NoWatermark and an error", md, got, err)
		}
	}
}

func TestResumeMetadata(t *testing.T) {
	for _, r := range []Resume{
		{NoWatermark, NoWatermark}, {NoWatermark, 0}, {-1, -1}, {0, 1714550400000}, {1714550400000, 1714550400000}, {5, math.MaxInt64},
	} {
		md := EncodeResume(r)
		got, err := DecodeResume(md)
		if err != nil || got != r {
			t.Errorf("DecodeResume(EncodeResume(%+v) = %q) = %+v, %v; want %+v, nil", r, md, got, err, r)
		}
	}
	// Commits made before the closed mark existed resume as they did.
	for md, want := range map[string]Resume{
		"":                      {NoWatermark, NoWatermark},
		"dpstream/v1 wm=none":   {NoWatermark, NoWatermark},
		"dpstream/v1 wm=123456": {123456, 123456},
	} {
		if got, err := DecodeResume(md); err != nil || got != want {
			t.Errorf("DecodeResume(%q) = %+v, %v; want %+v, nil", md, got, err, want)
		}
	}
	for _, md := range []string{
		"dpstream/v1 wm=5 closed=",
		"dpstream/v1 wm=5 closed=4", // closed before the watermark: not written by CommitPoint
		"dpstream/v1 wm=5 closed=x",
		"dpstream/v1 wm=5 closed=7 more", // trailing text
		"dpstream/v1 wm=x closed=7",
		"other closed=7",
	} {
		if got, err := DecodeResume(md); err == nil || got.Watermark != NoWatermark {
			t.Errorf("DecodeResume(%q) = %+v, %v; want NoWatermark and an error", md, got, err)
		}
	}
}

// record is one input record of the restart tests: an event, or a record
// that the extractor rejected (Skip).
type record struct {
	skip bool
	ev   Event
}

func feed(t testing.TB, p *Partition, recs []record) []schema.Partial {
	t.Helper()
	var out []schema.Partial
	for _, r := range recs {
		if r.skip {
			p.Skip(r.ev.Offset)
			continue
		}
		_, c := mustAdd(t, p, r.ev)
		out = append(out, c...)
	}
	return out
}

// profile shapes a random stream for the restart tests.
type profile struct {
	name   string
	stream func() *Stream
	step   int64 // event time advances by up to step ms per record
}

// profiles: a dense stream (several events per window, mild disorder) and
// a sparse one whose disorder spans windows (grace 2.5 windows, L = 1), so
// that windows are often opened out of start order and CommitPoint must
// pick the oldest open window by offset, not by start.
var profiles = []profile{
	{"dense", testStream, 400},
	{"sparse", func() *Stream {
		s := testStream()
		s.Grace, s.MaxEvents = 2500, 1
		return s
	}, 1200},
}

// randomRecords is a deterministic stream of n records for one partition:
// five units, event times moving forward by up to pr.step ms with disorder
// inside the grace period, occasional jumps over several windows, events
// that are late, rejected records, and values inside and outside the
// bounds.
func randomRecords(seed uint64, n int, s *Stream, pr profile) []record {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	units := []string{"u1", "u2", "u3", "u4", "u5"}
	base := int64(1_714_550_000_000) + r.Int64N(s.Size)
	recs := make([]record, n)
	for i := range recs {
		off := int64(i)
		if r.IntN(20) == 0 {
			recs[i] = record{skip: true, ev: Event{Offset: off}}
			continue
		}
		switch {
		case r.IntN(50) == 0:
			base += 3*s.Size + r.Int64N(3*s.Size) // a jump over a few empty windows
		default:
			base += r.Int64N(pr.step)
		}
		t := base - r.Int64N(s.Grace+1) // disorder within grace
		if r.IntN(15) == 0 {
			t = base - s.Grace - s.Size*(1+r.Int64N(3)) // most likely late
		}
		if r.IntN(25) == 0 {
			t = s.WindowStart(base) // exactly on a window boundary
		}
		v := -2 + 14*r.Float64()
		recs[i] = record{ev: Event{Offset: off, Unit: units[r.IntN(len(units))], Time: t, Values: []float64{0, v, v, v}}}
	}
	return recs
}

// referencePartials is an independent, deliberately naive statement of what
// an uninterrupted run must emit: the watermark is max event time − grace;
// an event is late when its window ended at or before the watermark when
// it arrived; every window from the one holding the first watermark up to
// the last closed one is emitted, in order; a unit keeps its first L events
// per window by offset; values are clamped to [Lo, Hi] and sums are exact
// sums of refUnits.
func referencePartials(s *Stream, id, count int32, recs []record) ([]schema.Partial, []Outcome) {
	var outcomes []Outcome
	var (
		started   bool
		maxT, wm  int64
		firstFrom int64
		byWindow  = map[int64][]Event{}
	)
	for _, r := range recs {
		if r.skip {
			continue
		}
		e := r.ev
		start := s.WindowStart(e.Time)
		if started && start+s.Size <= wm {
			outcomes = append(outcomes, Late)
			continue
		}
		n := 0
		for _, o := range byWindow[start] {
			if o.Unit == e.Unit {
				n++
			}
		}
		if n < s.MaxEvents {
			outcomes = append(outcomes, Accepted)
		} else {
			outcomes = append(outcomes, Dropped)
		}
		byWindow[start] = append(byWindow[start], e)
		if !started {
			started, maxT, wm = true, e.Time, e.Time-s.Grace
			firstFrom = s.WindowStart(wm)
		}
		maxT = max(maxT, e.Time)
		wm = max(wm, maxT-s.Grace)
	}
	if !started {
		return nil, outcomes
	}
	var out []schema.Partial
	for start := firstFrom; start+s.Size <= wm; start += s.Size {
		p := emptyPartial(s, start, id, count)
		evs := byWindow[start]
		if len(evs) > 0 {
			p.FirstOffset, p.LastOffset = evs[0].Offset, evs[len(evs)-1].Offset
		}
		kept := map[string]int{}
		for _, e := range evs {
			if kept[e.Unit] == s.MaxEvents {
				p.Dropped++
				continue
			}
			kept[e.Unit]++
			p.Events++
			for i, rel := range specsOf(s) {
				rs := &p.Stats[i]
				rs.Count++
				if rel.Kind == "count" {
					continue
				}
				v := math.Min(math.Max(e.Values[i], rel.Lo), rel.Hi)
				if v != e.Values[i] {
					rs.Clamped++
				}
				switch rel.Kind {
				case "sum":
					rs.SumUnits += refUnits(rel, e.Values[i])
				case "mean":
					rs.CenteredSumUnits += refUnits(rel, e.Values[i])
				case "histogram":
					rs.Bins[aggregate.BinIndex(v, rel.Lo, rel.Hi, rel.Bins)]++
				}
			}
		}
		p.Units = int64(len(kept))
		out = append(out, p)
	}
	return out, outcomes
}

func checkAgainst(t *testing.T, what string, got, want []schema.Partial) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d partials, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := diffPartial(got[i], want[i]); d != "" {
			t.Fatalf("%s: partial %d (window %d): %s", what, i, want[i].WindowStart, d)
		}
	}
}

// TestUninterruptedMatchesReference checks the uninterrupted runs used by
// TestRestartIsExact against the naive reference, so that the restart test
// compares against something known to be right.
func TestUninterruptedMatchesReference(t *testing.T) {
	for _, pr := range profiles {
		s := pr.stream()
		for seed := uint64(1); seed <= 3; seed++ {
			recs := randomRecords(seed, 250, s, pr)
			what := fmt.Sprintf("%s seed %d", pr.name, seed)
			wantParts, wantOut := referencePartials(s, 3, 8, recs)
			p := NewPartition(s, 3, 8, NoWatermark)
			var got []schema.Partial
			var outcomes []Outcome
			var late, dropped, clamped, outOfOrder int
			for _, r := range recs {
				if r.skip {
					p.Skip(r.ev.Offset)
					continue
				}
				if _, open := p.windows[s.WindowStart(r.ev.Time)]; !open {
					for st := range p.windows {
						if st > s.WindowStart(r.ev.Time) {
							outOfOrder++ // this event opens a window older than an open one
							break
						}
					}
				}
				out, c := mustAdd(t, p, r.ev)
				outcomes = append(outcomes, out)
				got = append(got, c...)
				switch out {
				case Late:
					late++
				case Dropped:
					dropped++
				}
			}
			if len(outcomes) != len(wantOut) {
				t.Fatalf("%s: %d outcomes, want %d", what, len(outcomes), len(wantOut))
			}
			if !slices.Equal(outcomes, wantOut) {
				for j := range wantOut {
					if outcomes[j] != wantOut[j] {
						t.Fatalf("%s: event %d: outcome %v, want %v", what, j, outcomes[j], wantOut[j])
					}
				}
			}
			checkAgainst(t, what, got, wantParts)
			for _, p := range got {
				clamped += int(p.Stats[1].Clamped)
			}
			// The generator must exercise every path, or the restart test
			// proves less than it claims.
			if late == 0 || dropped == 0 || clamped == 0 || len(got) < 20 || (pr.name == "sparse" && outOfOrder < 5) {
				t.Errorf("%s: weak stream: %d late, %d dropped, %d clamped, %d windows, %d opened out of order",
					what, late, dropped, clamped, len(got), outOfOrder)
			}
		}
	}
}

// TestRestartIsExact is DESIGN invariant 2 at the window level. For every
// cut point k: a first run processes records [0, k) and commits
// CommitPoint(); a fresh partition starts from the committed watermark and
// replays from the committed offset to the end. The release stage keeps the
// first partial of each window, so the first run's partials followed by the
// replay's, first wins, must be exactly the uninterrupted run's partials:
// no window lost, none invented, none changed.
func TestRestartIsExact(t *testing.T) {
	const id, count = 3, 8
	for _, pr := range profiles {
		s := pr.stream()
		for seed := uint64(1); seed <= 2; seed++ {
			recs := randomRecords(seed, 200, s, pr)
			want := feed(t, NewPartition(s, id, count, NoWatermark), recs)
			for k := 0; k <= len(recs); k++ {
				first := NewPartition(s, id, count, NoWatermark)
				got := feed(t, first, recs[:k])
				checkRestart(t, fmt.Sprintf("%s seed %d cut %d", pr.name, seed, k), s, first, got, recs, k, want)
			}
		}
	}
}

// TestRestartAfterIdle: a restart right after idleness closed every window
// resumes from the next offset with the idle-advanced watermark (the
// no-open-window commit point). Event times after the pause have moved on
// by about the idle time, as they would in production.
func TestRestartAfterIdle(t *testing.T) {
	const id, count = 1, 2
	for _, pr := range profiles {
		s := pr.stream()
		idle := s.IdleTimeout + 3*time.Second
		for seed := uint64(1); seed <= 2; seed++ {
			r := rand.New(rand.NewPCG(seed, 99))
			recs := randomRecords(seed, 100, s, pr)
			for k := 1; k < len(recs); k++ {
				// Records from k on happen after the pause: shift them by
				// the idle time, give or take a few windows, so the first
				// one after it sometimes lands right after the idle
				// watermark and sometimes well past it.
				after := slices.Clone(recs)
				shift := idle.Milliseconds() + r.Int64N(6*s.Size) - 2*s.Size
				for i := k; i < len(after); i++ {
					after[i].ev.Time += shift
				}
				cont := NewPartition(s, id, count, NoWatermark)
				want := feed(t, cont, after[:k])
				want = append(want, cont.Idle(time.Time{}, idle)...)
				want = append(want, feed(t, cont, after[k:])...)

				first := NewPartition(s, id, count, NoWatermark)
				got := feed(t, first, after[:k])
				got = append(got, first.Idle(time.Time{}, idle)...)
				if first.OpenWindows() != 0 {
					t.Fatalf("%s seed %d cut %d: %d windows open after %v idle", pr.name, seed, k, first.OpenWindows(), idle)
				}
				checkRestart(t, fmt.Sprintf("%s seed %d idle at %d", pr.name, seed, k), s, first, got, after, k, want)
			}
		}
	}
}

// checkRestart takes first's commit point after it processed recs[:k] and
// emitted got, replays recs from the committed offset on a fresh partition,
// and requires the first-wins union of got and the replay's partials to be
// exactly want, the uninterrupted run's.
func checkRestart(t *testing.T, what string, s *Stream, first *Partition, got []schema.Partial, recs []record, k int, want []schema.Partial) {
	t.Helper()
	off, md, ok := first.CommitPoint()
	res := Resume{Watermark: NoWatermark, Closed: NoWatermark}
	if ok {
		var err error
		if res, err = DecodeResume(md); err != nil {
			t.Fatalf("%s: DecodeResume(%q): %v", what, md, err)
		}
	} else if k > 0 {
		t.Fatalf("%s: no commit point after %d records", what, k)
	}
	if off < 0 || off > int64(k) {
		t.Fatalf("%s: commit offset %d outside [0, %d]", what, off, k)
	}
	wm := res.Watermark
	replay := feed(t, NewPartitionResumed(s, first.id, first.count, res), recs[off:])
	seen := map[int64]bool{}
	for _, p := range replay {
		if seen[p.WindowStart] {
			t.Fatalf("%s: replay emitted window %d twice", what, p.WindowStart)
		}
		seen[p.WindowStart] = true
	}
	wantBy := map[int64]schema.Partial{}
	for _, p := range want {
		wantBy[p.WindowStart] = p
	}
	// Not only first-wins: every partial the replay emits is the
	// uninterrupted run's (a replay rebuilds identical state, invariant
	// 2), so a second copy on the partials topic is never a different one.
	for _, p := range replay {
		if w, ok := wantBy[p.WindowStart]; ok {
			if d := diffPartial(p, w); d != "" {
				t.Fatalf("%s (commit %d, %+v): the replay emitted window %d again, differently: %s", what, off, res, p.WindowStart, d)
			}
		}
	}
	kept := map[int64]schema.Partial{}
	for _, p := range append(got, replay...) {
		if _, dup := kept[p.WindowStart]; !dup {
			kept[p.WindowStart] = p
		}
	}
	for start, w := range wantBy {
		g, ok := kept[start]
		if !ok {
			t.Fatalf("%s (commit %d, wm %d): window %d lost", what, off, wm, start)
		}
		if d := diffPartial(g, w); d != "" {
			t.Fatalf("%s (commit %d, wm %d): window %d differs: %s", what, off, wm, start, d)
		}
	}
	for start := range kept {
		if _, ok := wantBy[start]; !ok {
			t.Fatalf("%s (commit %d, wm %d): window %d was not emitted by the uninterrupted run", what, off, wm, start)
		}
	}
}

// TestExtremeEventTimes: an event time that Extract accepts must land in a
// window that contains it. An integer epoch-ms time within one window of
// math.MinInt64 makes WindowStart's floor·size wrap around to a huge
// positive start: on a fresh partition Add accepts the event into a window
// that can never close, so its partial is never emitted and CommitPoint
// stays pinned at that record for good. Either Extract must reject such
// times (as it already rejects floats beyond ±1e15 ms) or Add must.
func TestExtremeEventTimes(t *testing.T) {
	s := build(&Stream{Name: "x", Size: time.Hour.Milliseconds(), Grace: 120_000, IdleTimeout: time.Minute, MaxEvents: 1},
		relSpec{Name: "n", Kind: "count"})
	x := &Extractor{Unit: "u", EventTime: "ts", Fields: []string{""}}
	for _, ts := range []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt64 + s.Size - 1, -9e18} {
		e, rej := x.Extract(map[string]any{"u": "a", "ts": ts}, 0, time.Time{})
		if rej != nil {
			if rej.Reason != ReasonBadEventTime {
				t.Errorf("ts %d: rejected as %q, want %q", ts, rej.Reason, ReasonBadEventTime)
			}
			continue
		}
		p := NewPartition(s, 0, 1, NoWatermark)
		if out, _ := mustAdd(t, p, e); out != Accepted {
			continue
		}
		if start := s.WindowStart(e.Time); start > e.Time || e.Time-start >= s.Size {
			t.Errorf("ts %d: accepted into window starting at %d, which does not contain it", ts, start)
		}
	}
}

// TestDensityPartials checks a density release's partials: the term sums
// of the kept, clamped events equal the sums computed here with the same
// mdensity.Quantizer, the count and clamps are reported as for other kinds, a
// window without events (a gap) reports m zero sums, and an event the
// quantizer refuses (NaN) changes no release.
func TestDensityPartials(t *testing.T) {
	s := build(&Stream{Name: "trips", Size: 1000, IdleTimeout: 30 * time.Second, MaxEvents: 2},
		relSpec{Name: "n", Kind: "count"},
		relSpec{Name: "d", Kind: "density", Field: "v", Lo: 0, Hi: 10, Terms: 4},
	)
	z, err := mdensity.NewQuantizer(0, 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition(s, 0, 1, NoWatermark)
	dev := func(off int64, unit string, ts int64, v float64) Event {
		return Event{Offset: off, Unit: unit, Time: ts, Values: []float64{0, v}}
	}
	want := z.NewStats()
	for i, e := range []Event{dev(0, "a", 10, 1.5), dev(1, "a", 20, 9), dev(2, "a", 30, 4), dev(3, "b", 40, 12), dev(4, "b", 50, -3)} {
		out, _ := mustAdd(t, p, e)
		if i == 2 {
			if out != Dropped {
				t.Fatalf("third event of unit a: outcome %v, want Dropped", out)
			}
			continue
		}
		if err := z.Add(&want, e.Values[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := p.Add(dev(5, "c", 60, math.NaN())); err == nil {
		t.Fatal("NaN value accepted")
	}
	closed := mustAdd2(t, p, dev(6, "c", 2500, 5)) // closes windows 0 and 1
	if len(closed) != 2 {
		t.Fatalf("closed %d windows, want 2 (one with data, one gap)", len(closed))
	}
	d := closed[0].Stats[1]
	if d.Release != "d" || d.Count != 4 || d.Clamped != 2 || !slices.Equal(d.Terms, want.Terms) || closed[0].Stats[0].Count != 4 {
		t.Errorf("window 0: %+v (count release %+v), want count 4, 2 clamped, terms %v", d, closed[0].Stats[0], want.Terms)
	}
	if g := closed[1].Stats[1]; g.Count != 0 || !slices.Equal(g.Terms, []int64{0, 0, 0, 0}) {
		t.Errorf("empty window: %+v, want 4 zero term sums", g)
	}
	if len(closed[0].Stats[0].Terms) != 0 {
		t.Errorf("count release has terms %v", closed[0].Stats[0].Terms)
	}
}

// mustAdd2 is Partition.Add for an event that must be accepted; it returns
// the partials the event closed.
func mustAdd2(t testing.TB, p *Partition, e Event) []schema.Partial {
	t.Helper()
	_, closed := mustAdd(t, p, e)
	return closed
}
