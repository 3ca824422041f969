package accumulate

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/schema"
)

// The schedule's backstop (Partition.Pace, partitionWorker.due): no input
// can hold a partition's windows, and so every release of its stream,
// back beyond their end + grace + idle timeout on the wall clock.

// stallStart is the streams' start in these tests, a window boundary.
const stallStart = int64(1_750_000_000_000)

// stallStream is a count stream of 1 s windows with grace 200 ms, idle
// timeout 1 s and the default max_skew, starting at stallStart.
func stallStream() *Stream {
	return build(&Stream{Name: "s", Size: 1000, Grace: 200, IdleTimeout: time.Second, MaxEvents: 1000,
		Start: stallStart, MaxSkew: DefaultMaxSkew.Milliseconds()}, relSpec{Name: "n", Kind: "count"})
}

// TestPace drives Partition.Pace directly: it leaves a watermark that keeps
// up with its best pace alone, advances one that falls more than the idle
// timeout behind it, whatever moved the watermark before, and never passes
// the wall clock minus grace.
func TestPace(t *testing.T) {
	const t0 = stallStart + 120_000 // wall clock at the first Pace call
	at := func(ms int64) time.Time { return time.UnixMilli(t0 + ms) }
	withClock := func(e Event, clock int64) Event { e.Clock = clock; return e }
	type step struct {
		add    *Event // added before the call
		now    int64  // ms after t0
		wantWM int64
	}
	e := func(e Event) *Event { return &e }
	for _, tc := range []struct {
		name    string
		resumed int64 // committed watermark (NoWatermark: none)
		steps   []step
	}{
		{name: "no pace of its own: the wall clock's once the idle timeout has passed", resumed: NoWatermark, steps: []step{
			{now: 0, wantWM: stallStart},
			{now: 999, wantWM: stallStart},
			{now: 1000, wantWM: t0 + 1000 - 200 - 1000},
			{now: 5000, wantWM: t0 + 5000 - 1200},
		}},
		{name: "an event sets the pace; a watermark that stands still is advanced one idle timeout behind it", resumed: NoWatermark, steps: []step{
			{add: e(withClock(ev(0, "a", t0-50, 1), t0)), now: 0, wantWM: t0 - 250},
			{now: 1000, wantWM: t0 - 250},
			{now: 1500, wantWM: t0 - 250 + 500},
			{now: 9000, wantWM: t0 - 250 + 8000},
		}},
		{name: "a creeping watermark is not progress", resumed: NoWatermark, steps: []step{
			{add: e(withClock(ev(0, "a", t0, 1), t0)), now: 0, wantWM: t0 - 200},
			{add: e(withClock(ev(1, "a", t0+1, 1), t0+1)), now: 1000, wantWM: t0 - 199},
			{add: e(withClock(ev(2, "a", t0+2, 1), t0+2)), now: 2000, wantWM: t0 + 800},
			{add: e(withClock(ev(3, "a", t0+3, 1), t0+3)), now: 3000, wantWM: t0 + 1800},
		}},
		{name: "record timestamps in the past hold the clock: not progress", resumed: NoWatermark, steps: []step{
			{add: e(withClock(ev(0, "a", t0-100, 1), t0-100)), now: 0, wantWM: t0 - 300},
			{add: e(withClock(ev(1, "a", t0+900, 1), t0-100)), now: 1000, wantWM: t0 - 300},
			{add: e(withClock(ev(2, "a", t0+1900, 1), t0-100)), now: 2000, wantWM: t0 + 700},
		}},
		{name: "a consumer catching up sets a new best pace all along", resumed: NoWatermark, steps: []step{
			{add: e(withClock(ev(0, "a", t0-60_000, 1), t0)), now: 0, wantWM: t0 - 60_200},
			{add: e(withClock(ev(1, "a", t0-58_000, 1), t0+1500)), now: 1500, wantWM: t0 - 58_200},
			{add: e(withClock(ev(2, "a", t0-56_000, 1), t0+3000)), now: 3000, wantWM: t0 - 56_200},
		}},
		{name: "a resumed partition keeps the lag it resumed with", resumed: t0 - 30_000, steps: []step{
			{now: 0, wantWM: t0 - 30_000},
			{now: 1000, wantWM: t0 - 30_000},
			{now: 4000, wantWM: t0 - 30_000 + 3000},
		}},
		{name: "never past the wall clock minus grace", resumed: t0 + 5000, steps: []step{
			{now: 0, wantWM: t0 + 5000},
			{now: 8000, wantWM: t0 + 8000 - 1000},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stallStream()
			p := NewPartitionResumed(s, 0, 1, Resume{Watermark: tc.resumed, Closed: tc.resumed})
			for i, st := range tc.steps {
				if st.add != nil {
					mustAdd(t, p, *st.add)
				}
				now := at(st.now)
				for _, part := range p.Pace(now) {
					if part.WindowEnd+s.Grace > now.UnixMilli() {
						t.Errorf("step %d: window [%d, %d) closed at %d, before its end plus grace", i, part.WindowStart, part.WindowEnd, now.UnixMilli())
					}
				}
				if got := p.Watermark(); got != st.wantWM {
					t.Errorf("step %d (now t0%+dms): watermark t0%+d, want t0%+d", i, st.now, got-t0, st.wantWM-t0)
				}
			}
		})
	}
	if got := NewPartition(stallStream(), 0, 1, NoWatermark).Pace(time.Time{}); got != nil {
		t.Errorf("Pace without a wall clock closed %v", starts(got))
	}
}

// workerSim drives a partitionWorker without Kafka: records go through
// record, ticks through due, on a fake clock.
type workerSim struct {
	t      *testing.T
	w      *partitionWorker
	now    time.Time
	off    int64
	closed map[int64]time.Time // window start → when its partial was emitted
	byTick []int64             // windows closed by the clock (due), in order
	late   int
}

// newWorkerSim returns a simulation of partition 0 of 2 of stallStream,
// fresh (no committed watermark), at wall clock now.
func newWorkerSim(t *testing.T, now time.Time) *workerSim {
	t.Helper()
	dec, err := schema.NewDecoder(schema.FormatJSON, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := stallStream()
	x := &workerSim{t: t, now: now, closed: map[int64]time.Time{}}
	st := &Stage{cfg: Config{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return x.now }},
		dlqMaxValue: 1 << 20}
	in := &Input{Stream: s, Topic: "events", Decoder: dec, Extractor: &Extractor{Unit: "user", EventTime: "ts", Fields: []string{""}}}
	x.w = &partitionWorker{s: st, in: in, a: kafkaio.Assignment{Topic: "events"}, log: st.cfg.Log,
		part: NewPartition(s, 0, 2, NoWatermark), lastMsg: now, lastCommit: now, backlogEnd: -1}
	return x
}

// stallUnit returns a unit whose records belong on partition p of 2.
func stallUnit(prefix string, p int) string {
	for i := 0; ; i++ {
		if u := fmt.Sprintf("%s%d", prefix, i); kafkaio.PartitionFor([]byte(u), 2) == p {
			return u
		}
	}
}

// send processes one record at the next offset, sent (Kafka timestamp) at
// sent, with the partition's end behind records after it.
func (x *workerSim) send(value string, sent time.Time, behind int64) {
	x.t.Helper()
	m := kafka.Message{Topic: "events", Offset: x.off, HighWaterMark: x.off + 1 + behind, Value: []byte(value), Time: sent}
	x.off++
	if err := x.w.record(context.Background(), m); err != nil {
		x.t.Fatalf("record at %d: %v", m.Offset, err)
	}
	x.collect(false)
}

// tick runs the worker's tick without Kafka: due, then emit.
func (x *workerSim) tick() {
	x.t.Helper()
	if err := x.w.emit(x.w.due(x.now)); err != nil {
		x.t.Fatal(err)
	}
	x.collect(true)
}

func (x *workerSim) collect(byTick bool) {
	x.t.Helper()
	for _, m := range x.w.pendingPartials {
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			x.t.Fatal(err)
		}
		if _, dup := x.closed[p.WindowStart]; dup {
			x.t.Fatalf("window %d emitted twice", p.WindowStart)
		}
		if p.WindowEnd+200 > x.now.UnixMilli() {
			x.t.Errorf("window [%d, %d) closed at %d, before its end plus grace", p.WindowStart, p.WindowEnd, x.now.UnixMilli())
		}
		x.closed[p.WindowStart] = x.now
		if byTick {
			x.byTick = append(x.byTick, p.WindowStart)
		}
	}
	for _, m := range x.w.pendingDLQ {
		for _, h := range m.Headers {
			if h.Key == "dpstream.reason" && string(h.Value) == string(ReasonLate) {
				x.late++
			}
		}
	}
	x.w.pendingPartials, x.w.pendingDLQ = x.w.pendingPartials[:0], x.w.pendingDLQ[:0]
}

func event(unit string, ts int64) string { return fmt.Sprintf(`{"user":%q,"ts":%d}`, unit, ts) }

// TestNoInputStallsTheSchedule: whatever a producer sends to a partition,
// its windows close by the wall clock at the latest when it passes their
// end + grace + idle timeout (plus a tick), so the release stage, which
// needs every partition's partial, is never held back by one partition's
// input. On main, records that arrive more often than the idle timeout but
// do not move the watermark kept Idle from ever running (it measured
// idleness as "no record"), and a flood kept records in flight: the
// windows never closed.
func TestNoInputStallsTheSchedule(t *testing.T) {
	home, other := stallUnit("h", 0), stallUnit("o", 1)
	const t0 = stallStart + 2_000 // wall clock when the attack starts
	for _, tc := range []struct {
		name   string
		every  time.Duration // between records
		behind int64         // records after each one in the partition (a flood the stage is behind on)
		record func(i int, now time.Time) (value string, sent time.Time)
	}{
		{name: "undecodable", every: 200 * time.Millisecond, record: func(int, time.Time) (string, time.Time) {
			return "\x00not json", time.Time{}
		}},
		{name: "misrouted", every: 200 * time.Millisecond, record: func(_ int, now time.Time) (string, time.Time) {
			return event(other, now.UnixMilli()), now
		}},
		{name: "before_start", every: 200 * time.Millisecond, record: func(_ int, now time.Time) (string, time.Time) {
			return event(home, stallStart-3_600_000), now
		}},
		{name: "future", every: 200 * time.Millisecond, record: func(_ int, now time.Time) (string, time.Time) {
			return event(home, now.Add(time.Hour).UnixMilli()), now
		}},
		{name: "late or in the first window", every: 200 * time.Millisecond, record: func(_ int, now time.Time) (string, time.Time) {
			return event(home, stallStart), now
		}},
		{name: "record timestamps in the past", every: 200 * time.Millisecond, record: func(_ int, now time.Time) (string, time.Time) {
			return event(home, t0+100), time.UnixMilli(t0 - 30_000)
		}},
		{name: "a creeping event time", every: 200 * time.Millisecond, record: func(i int, now time.Time) (string, time.Time) {
			return event(home, t0+int64(i)), now
		}},
		{name: "a flood, always in flight", every: 5 * time.Millisecond, behind: 150, record: func(int, time.Time) (string, time.Time) {
			return "\x00not json", time.Time{}
		}},
	} {
		for _, first := range []bool{false, true} {
			name := tc.name
			if first {
				name += ", after an honest event"
			}
			t.Run(name, func(t *testing.T) {
				x := newWorkerSim(t, time.UnixMilli(t0))
				if tc.behind > 0 {
					x.w.inFlight.Store(1) // records always in flight: never idle
				}
				if first {
					x.send(event(home, t0-50), x.now, 0)
				}
				const tickEvery, run = 100 * time.Millisecond, 12 * time.Second
				nextTick, nextRec := x.now, x.now
				for i := 0; x.now.Before(time.UnixMilli(t0).Add(run)); {
					if !nextRec.After(x.now) {
						v, sent := tc.record(i, x.now)
						x.send(v, sent, tc.behind)
						i++
						nextRec = nextRec.Add(tc.every)
					}
					if !nextTick.After(x.now) {
						x.tick()
						nextTick = nextTick.Add(tickEvery)
						// The bound, once the partition has read the
						// backlog it found (here within its first second):
						// every window ending by now − grace − idle
						// timeout − a tick, and after that second, is
						// closed.
						s := x.w.in.Stream
						for e := t0 + 1000; e+s.Grace+s.IdleTimeout.Milliseconds()+tickEvery.Milliseconds() <= x.now.UnixMilli(); e += s.Size {
							if _, ok := x.closed[e-s.Size]; !ok && e-s.Size >= stallStart {
								t.Fatalf("at t0+%s window [%d, %d) (t0%+dms) is still open: the partition's windows are held back (watermark t0%+dms)",
									x.now.Sub(time.UnixMilli(t0)), e-s.Size, e, e-t0, x.w.part.Watermark()-t0)
							}
						}
					}
					x.now = minTime(nextTick, nextRec)
				}
			})
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestHonestInputUnchanged: the backstop never closes a window of a
// partition whose watermark keeps up, nor of one replaying the backlog it
// found at its assignment however slowly, nor of a live consumer catching
// up: there windows close by event time, as before, and no event is late.
func TestHonestInputUnchanged(t *testing.T) {
	home := stallUnit("h", 0)
	const t0 = stallStart + 60_000
	for _, tc := range []struct {
		name string
		n    int
		// record i is sent at now and carries event time ts; the partition
		// has behind records after it; the clock then moves by step.
		record func(i int, now time.Time) (ts int64, behind int64, step time.Duration)
	}{
		{name: "a steady live stream", n: 100, record: func(i int, now time.Time) (int64, int64, time.Duration) {
			return now.UnixMilli() - 40, 0, 200 * time.Millisecond
		}},
		{name: "a slow replay of a backlog a minute old", n: 100, record: func(i int, now time.Time) (int64, int64, time.Duration) {
			return t0 - 60_000 + int64(i)*100, int64(100 - i), 1500 * time.Millisecond
		}},
		{name: "a live consumer catching up", n: 100, record: func(i int, now time.Time) (int64, int64, time.Duration) {
			if i == 0 {
				return t0 - 30_000, 0, 100 * time.Millisecond // caught up: paced from here
			}
			return t0 - 30_000 + int64(i)*250, 5, 100 * time.Millisecond
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newWorkerSim(t, time.UnixMilli(t0))
			var recs []record
			for i := range tc.n {
				ts, behind, step := tc.record(i, x.now)
				x.send(event(home, ts), x.now, behind)
				recs = append(recs, record{ev: Event{Offset: int64(i), Unit: home, Time: ts, Values: []float64{0}}})
				for end := x.now.Add(step); x.now.Before(end); x.now = x.now.Add(100 * time.Millisecond) {
					x.tick()
				}
			}
			if len(x.byTick) > 0 {
				t.Errorf("the clock closed windows %v while events kept the watermark moving", x.byTick[:min(len(x.byTick), 5)])
			}
			if x.late > 0 {
				t.Errorf("%d events late", x.late)
			}
			// Closed by event time, as a pure replay of the records closes them.
			want := starts(feed(t, NewPartition(x.w.in.Stream, 0, 2, NoWatermark), recs))
			if len(want) < 5 {
				t.Fatalf("the records close %d windows by event time; the test needs more", len(want))
			}
			var got []int64
			for w := range x.closed {
				got = append(got, w)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("closed windows %v, want %v (by event time)", got, want)
			}
		})
	}
}
