package accumulate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/schema"
)

// scheduleStream is testStream with a start (a window boundary) and the
// default skew.
func scheduleStream(start int64) *Stream {
	s := testStream()
	s.Start, s.MaxSkew = start, DefaultMaxSkew.Milliseconds()
	return s
}

// windowsOf returns the window starts from first to last (inclusive) of a
// 1 s stream.
func windowsOf(first, last int64) []int64 {
	var out []int64
	for w := first; w <= last; w += 1000 {
		out = append(out, w)
	}
	return out
}

// TestStartBoundsPartials: a partition that never committed a watermark
// starts at the stream's start, so the windows it reports, empty ones
// included, are exactly those from the start up to the wall clock minus
// grace, whatever event times it saw. Issue 11 item 1: on a fresh
// partition, one event 30 days old made the partition report (and the
// release stage charge) MaxGapWindows empty historical windows.
func TestStartBoundsPartials(t *testing.T) {
	const start = int64(1_750_000_000_000)
	now := time.UnixMilli(start + 5_500) // grace 200: windows up to start+4s close
	old := start - 30*24*3_600_000
	for _, tc := range []struct {
		name   string
		events []Event
		wm     int64 // the committed watermark resumed from (NoWatermark: none)
		want   []int64
	}{
		{name: "fresh, no events", wm: NoWatermark, want: windowsOf(start, start+4000)},
		{name: "fresh, an old event", wm: NoWatermark, events: []Event{ev(0, "a", old, 1)}, want: windowsOf(start, start+4000)},
		{name: "fresh, six old events", wm: NoWatermark, want: windowsOf(start, start+4000), events: []Event{
			ev(0, "a", old, 1), ev(1, "b", old+1000, 1), ev(2, "c", old+7*86_400_000, 1),
			ev(3, "d", old+8*86_400_000, 1), ev(4, "e", start-1, 1), ev(5, "f", start-86_400_000, 1)}},
		{name: "committed before the start", wm: start - 3_600_000, want: nil},
		{name: "committed before the start, an old event", wm: start - 3_600_000, events: []Event{ev(0, "a", old, 1)}, want: nil},
		{name: "committed after the start", wm: start + 2000, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scheduleStream(start)
			s.IdleTimeout = time.Second
			p := NewPartitionResumed(s, 0, 1, Resume{Watermark: tc.wm, Closed: tc.wm})
			var got []schema.Partial
			for _, e := range tc.events {
				e.Clock = now.UnixMilli()
				out, closed := mustAdd(t, p, e)
				if out != Late {
					t.Errorf("event at %d before the start: outcome %v, want Late", e.Time, out)
				}
				got = append(got, closed...)
			}
			got = append(got, p.Idle(now, time.Minute)...)
			for _, part := range got {
				if part.WindowStart < start {
					t.Fatalf("partial for window %d, before the start %d", part.WindowStart, start)
				}
			}
			if len(got) > len(windowsOf(start, start+4000)) {
				t.Fatalf("%d partials, want at most one per window from the start to the wall clock (%d)", len(got), len(windowsOf(start, start+4000)))
			}
			// A partition that resumed from a watermark reports from there
			// (by idle time); a fresh one follows the wall clock from the
			// start on.
			if tc.wm == NoWatermark && !slices.Equal(starts(got), tc.want) {
				t.Errorf("windows %v, want %v", starts(got), tc.want)
			}
			if p.Watermark() < start {
				t.Errorf("watermark %d, before the start %d", p.Watermark(), start)
			}
		})
	}
}

// TestClockCapsWatermark: events may lead their record's clock by up to
// max_skew, but the watermark never passes that clock minus grace, so an
// event stamped ahead cannot close windows early or make the honest events
// after it late. Issue 11 item 2: one event an hour ahead moved the
// watermark forward, dead-lettered every honest event after it as late and
// closed the hundreds of windows in between at once.
func TestClockCapsWatermark(t *testing.T) {
	const start = int64(1_750_000_000_000)
	c := start + 10_000 // the records' clock
	for _, lead := range []int64{200, 1_000, 30_000, 59_999} {
		t.Run(fmt.Sprintf("lead %dms", lead), func(t *testing.T) {
			s := scheduleStream(start)
			p := NewPartition(s, 0, 1, NoWatermark)
			at := func(e Event, clock int64) Event { e.Clock = clock; return e }
			_, closed := mustAdd(t, p, at(ev(0, "x", c+lead, 1), c))
			for _, part := range closed {
				if part.WindowEnd > c-s.Grace {
					t.Errorf("window [%d, %d) closed at clock %d: before its end plus grace", part.WindowStart, part.WindowEnd, c)
				}
			}
			if p.Watermark() > c-s.Grace {
				t.Errorf("watermark %d passed the clock %d minus grace %d", p.Watermark(), c, s.Grace)
			}
			// Honest events after it, at their own clock: none is late.
			for i, d := range []int64{-150, 0, 100, 400} {
				out, _ := mustAdd(t, p, at(ev(int64(1+i), "h", c+d, 1), c+max(d, 0)))
				if out == Late {
					t.Errorf("honest event at clock%+dms after one %dms ahead: Late (watermark %d)", d, lead, p.Watermark())
				}
			}
		})
	}
}

// TestIdleFollowsWallClock: an idle partition's watermark follows the wall
// clock, and never passes it minus grace, even when its last event was
// ahead of the wall clock.
func TestIdleFollowsWallClock(t *testing.T) {
	const start = int64(1_750_000_000_000)
	now := start + 20_000
	s := scheduleStream(start)
	s.IdleTimeout = time.Second
	p := NewPartition(s, 0, 1, NoWatermark)
	e := ev(0, "x", now+45_000, 1)
	e.Clock = now
	mustAdd(t, p, e)
	for _, idle := range []time.Duration{time.Second, 10 * time.Second, time.Hour} {
		wall := time.UnixMilli(now + idle.Milliseconds())
		for _, part := range p.Idle(wall, idle) {
			if part.WindowEnd+s.Grace > wall.UnixMilli() {
				t.Fatalf("idle %s: window [%d, %d) closed at wall clock %d, before its end plus grace", idle, part.WindowStart, part.WindowEnd, wall.UnixMilli())
			}
		}
		if want := min(now+45_000+idle.Milliseconds(), wall.UnixMilli()) - s.Grace; p.Watermark() != want {
			t.Errorf("idle %s: watermark %d, want %d", idle, p.Watermark(), want)
		}
	}
}

// TestRestartIsExactWithClock is TestRestartIsExact on a stream with a
// start, whose records carry clocks that some events lead (by up to
// max_skew) and some trail: the cap depends only on each record's clock,
// which a replay sees again, so a restart at any point rebuilds exactly the
// partials of the uninterrupted run.
func TestRestartIsExactWithClock(t *testing.T) {
	const id, count = 2, 4
	for _, pr := range profiles {
		for seed := uint64(1); seed <= 2; seed++ {
			s := pr.stream()
			recs := randomRecords(seed, 200, s, pr)
			r := rand.New(rand.NewPCG(seed, 0xc10c))
			first := int64(-1)
			for i := range recs {
				if recs[i].skip {
					continue
				}
				if first < 0 {
					first = recs[i].ev.Time
				}
				// The clock trails most events a little, and some events
				// lead it by up to the skew (a producer whose clock is ahead).
				recs[i].ev.Clock = recs[i].ev.Time + 50 - r.Int64N(3*s.Size)
			}
			s.Start, s.MaxSkew = s.WindowStart(first), DefaultMaxSkew.Milliseconds()
			want := feed(t, NewPartition(s, id, count, NoWatermark), recs)
			if len(want) == 0 {
				t.Fatalf("%s seed %d: the uninterrupted run closed no window", pr.name, seed)
			}
			for k := 0; k <= len(recs); k++ {
				p := NewPartition(s, id, count, NoWatermark)
				got := feed(t, p, recs[:k])
				checkRestart(t, fmt.Sprintf("%s seed %d cut %d", pr.name, seed, k), s, p, got, recs, k, want)
			}
		}
	}
}

// TestCommitBeforeAnyEvent: a partition whose records were all rejected
// (the six old events of issue 11 item 1, say) commits their offsets, but
// not the stream's start as a watermark: after a restart it must still
// follow the wall clock from the start, not advance from the start by idle
// time, which would hold its windows, and so every window of the stream,
// back by the time since the start.
func TestCommitBeforeAnyEvent(t *testing.T) {
	const start = int64(1_750_000_000_000)
	now := time.UnixMilli(start + 3_600_000) // an hour after the start
	s := scheduleStream(start)
	s.IdleTimeout = time.Second
	p := NewPartition(s, 0, 1, NoWatermark)
	for off := range int64(6) {
		p.Skip(off) // rejected: before_start
	}
	off, md, ok := p.CommitPoint()
	if !ok || off != 6 {
		t.Fatalf("CommitPoint = %d, %q, %v; want offset 6", off, md, ok)
	}
	res, err := DecodeResume(md)
	if err != nil {
		t.Fatal(err)
	}
	q := NewPartitionResumed(s, 0, 1, res)
	got := q.Idle(now, 2*time.Second)
	if q.Watermark() != now.UnixMilli()-s.Grace {
		t.Errorf("after a restart, idle: watermark %d, want the wall clock minus grace %d (metadata %q)", q.Watermark(), now.UnixMilli()-s.Grace, md)
	}
	if len(got) == 0 || got[0].WindowStart != start {
		t.Errorf("after a restart, idle: first window %v, want the start %d", starts(got[:min(len(got), 1)]), start)
	}
}
