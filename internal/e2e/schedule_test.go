package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

// The release schedule against the embedded broker, on the wall clock
// (issue 11 items 1 and 2; DESIGN section 5): which windows are charged,
// and when, must not depend on event times.

// scheduleStream is the stream of the schedule tests (and the stall
// tests): count and sum at ε = 0.1 each, a lifetime budget of ε = 10.
func scheduleStream(partitions int) *testkit.Stream {
	return testkit.NewStream("trips", "events").Partitions(partitions).Budget(10, 1e-6).Releases(
		testkit.Count("n").Epsilon(0.1),
		testkit.Sum("total", "v", 0, 10).Epsilon(0.1))
}

// oldEventsConfig is issue 11 item 1's pipeline: scheduleStream with 10 s
// windows.
func oldEventsConfig() *testkit.Pipeline {
	return testkit.NewPipeline(scheduleStream(4).Window(10*time.Second, 0, time.Second))
}

// unitsOn returns n units (prefix0, prefix1, ...) whose records belong on
// one of the given partitions (murmur2, of count), alternating between
// them.
func unitsOn(prefix string, n, count int, partitions ...int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		u := fmt.Sprintf("%s%d", prefix, i)
		if kafkaio.PartitionFor([]byte(u), count) == partitions[len(out)%len(partitions)] {
			out = append(out, u)
		}
	}
	return out
}

// deadLetterReasons counts the dead letters by reason.
func (h *harness) deadLetterReasons() map[string]int {
	h.t.Helper()
	out := map[string]int{}
	for _, m := range h.ReadAll(h.cfg.Topics.DeadLetter) {
		out[header(m, "dpstream.reason")]++
	}
	return out
}

func header(m kafka.Message, key string) string {
	for _, hd := range m.Headers {
		if hd.Key == key {
			return string(hd.Value)
		}
	}
	return ""
}

// recordedStart returns the stream's start recorded in the ledger.
func (h *harness) recordedStart(stream string) (int64, bool) {
	h.t.Helper()
	book := ledgerBooks{}
	for _, m := range h.ReadAll(h.cfg.Topics.Ledger) {
		if _, err := book.Apply(m); err != nil {
			h.t.Fatalf("ledger: %v", err)
		}
	}
	st, ok := book.Start(stream)
	return st.Start, ok
}

// eventually polls cond until it holds (true) or the timeout passes
// (false, after reporting an error), failing at once if an instance failed:
// the caller goes on to check what happened instead.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool, instances ...*instance) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		for _, in := range instances {
			in.check(t)
		}
		if time.Now().After(deadline) {
			t.Errorf("timed out after %s waiting for %s", timeout, what)
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// released reports whether both releases of window w are published.
func released(rs []schema.Release, w int64) bool {
	n := 0
	for _, r := range rs {
		if r.WindowStart == w {
			n++
		}
	}
	return n >= 2
}

// TestOldEventsSpendNothing is issue 11 item 1: six events 30 days old,
// sent to a fresh pipeline before its partitions go idle, made every
// partition report MaxGapWindows empty historical windows, and the release
// stage charged them until the lifetime budget was gone. Under the
// schedule the stream starts at the window holding the wall clock at its
// first run (recorded in the ledger): the old events are dead-lettered as
// before_start, no window before the start is released or charged, and
// the real windows after it are released with budget to spare. The same
// holds after a restart, on partitions that never committed a watermark.
func TestOldEventsSpendNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oldEventsConfig())
	h.useWallClock()
	const size = int64(10_000)
	topic := h.cfg.Streams[0].Topic
	t0 := time.Now().UnixMilli()
	old := t0 - 30*24*3_600_000
	oldEvents := func(units []string) []map[string]any {
		var evs []map[string]any
		for i, u := range units {
			evs = append(evs, map[string]any{"user": u, "ts": old + int64(i)*3_600_000, "v": 5.0})
		}
		return evs
	}
	nowEvents := func(units []string) ([]map[string]any, int64) {
		ts := time.Now().UnixMilli()
		var evs []map[string]any
		for _, u := range units {
			evs = append(evs, map[string]any{"user": u, "ts": ts, "v": 3.0})
		}
		return evs, ts / size * size
	}
	// Partitions 0 and 1 get every record of the first life; 2 and 3 none,
	// so they never commit a watermark.
	front, back := unitsOn("f", 6, 4, 0, 1), unitsOn("b", 6, 4, 2, 3)
	check := func(life string, wantBeforeStart int) int64 {
		t.Helper()
		start, ok := h.recordedStart("trips")
		if !ok {
			t.Errorf("%s: no start recorded in the ledger for stream trips", life)
			start = t0 / size * size
		} else if start < t0/size*size || start > time.Now().UnixMilli() {
			t.Errorf("%s: recorded start %d, want the window holding the first run's wall clock (test began at %d)", life, start, t0)
		}
		ids := map[string]int{}
		var historical, refused []string
		for _, r := range h.releases() {
			ids[r.ReleaseID]++
			if r.WindowStart < t0/size*size {
				historical = append(historical, r.ReleaseID)
			}
			if r.Status != "ok" {
				refused = append(refused, r.ReleaseID)
			}
		}
		if len(historical) > 0 {
			t.Errorf("%s: %d releases of windows before the stream's first run, e.g. %s", life, len(historical), historical[0])
		}
		if len(refused) > 0 {
			t.Errorf("%s: %d releases refused (not ok), e.g. %s: the budget must last 50 windows", life, len(refused), refused[0])
		}
		for id, n := range ids {
			if n != 1 {
				t.Errorf("%s: %s published %d times", life, id, n)
			}
		}
		charged := 0
		for _, lc := range h.ledger() {
			if lc.WindowStart < start {
				charged++
			}
		}
		if charged > 0 {
			t.Errorf("%s: the ledger charges %d releases of windows before the start %d", life, charged, start)
		}
		dl := h.deadLetterReasons()
		if dl["before_start"] != wantBeforeStart || dl["late"] != 0 || len(dl) != 1 {
			t.Errorf("%s: dead letters %v, want %d before_start and nothing else", life, dl, wantBeforeStart)
		}
		if w := (time.Now().UnixMilli()-start)/size + 2; int64(len(ids)) > 2*w {
			t.Errorf("%s: %d releases, more than the %d windows since the start allow", life, len(ids), w)
		}
		return start
	}

	// First life: the old events are in the topic before the pipeline
	// starts, so its partitions read them before they can go idle.
	h.ProduceJSON(topic, oldEvents(front), "user")
	first := h.start("first", pipeline.Stages{Accumulate: true, Release: true}, nil)
	evs, w1 := nowEvents(front)
	h.ProduceJSON(topic, evs, "user")
	eventually(t, 60*time.Second, fmt.Sprintf("the releases of window %d", w1), func() bool { return released(h.releases(), w1) }, first)
	start := check("first life", 6)
	first.stop()

	// A restart: partitions 2 and 3 never committed a watermark; six old
	// events reach them first.
	h.ProduceJSON(topic, oldEvents(back), "user")
	second := h.start("second", pipeline.Stages{Accumulate: true, Release: true}, nil)
	evs, w2 := nowEvents(append(front[:2], back[:2]...))
	h.ProduceJSON(topic, evs, "user")
	eventually(t, 60*time.Second, fmt.Sprintf("the releases of window %d after the restart", w2), func() bool { return released(h.releases(), w2) }, second)
	if again := check("after the restart", 12); again != start {
		t.Errorf("the restart recorded a new start %d; the first run's %d must stay", again, start)
	}
	second.stop()
}

// futureConfig: short windows with a grace period, two partitions, the
// default max_skew (1m).
func futureConfig() *testkit.Pipeline {
	return testkit.NewPipeline(scheduleStream(2).Window(2*time.Second, 500*time.Millisecond, time.Second).MaxEvents(5))
}

// TestFutureEventsHideNothing is issue 11 item 2: events stamped up to an
// hour ahead moved the watermark forward, so every honest event after them
// was dead-lettered as late, and the windows in between were released and
// charged at once. Under the schedule an event more than max_skew ahead of
// the wall clock is dead-lettered as future and moves nothing; one a few
// seconds ahead is counted in its window; the honest events after them are
// all counted; and no window is released before its end plus grace has
// passed on the wall clock.
func TestFutureEventsHideNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, futureConfig())
	h.useWallClock()
	const size, grace = int64(2000), int64(500)
	topic := h.cfg.Streams[0].Topic
	units := unitsOn("u", 8, 2, 0, 1)
	in := h.start("p", pipeline.Stages{Accumulate: true, Release: true}, nil)

	now := time.Now()
	var future []map[string]any
	for i, ahead := range []time.Duration{2 * time.Minute, 10 * time.Minute, 30 * time.Minute, 59 * time.Minute} {
		for _, u := range units[i%2 : i%2+2] { // both partitions
			future = append(future, map[string]any{"user": u, "ts": now.Add(ahead).UnixMilli(), "v": 9.0})
		}
	}
	h.ProduceJSON(topic, future, "user")
	// One event a few seconds ahead (within max_skew), then honest events
	// for a few windows.
	honest := []map[string]any{{"user": units[0], "ts": now.Add(3 * time.Second).UnixMilli(), "v": 1.0}}
	h.ProduceJSON(topic, honest, "user")
	var lastWindow int64
	for round := range 4 {
		time.Sleep(700 * time.Millisecond)
		ts := time.Now().UnixMilli()
		var evs []map[string]any
		for _, u := range units[:4] {
			evs = append(evs, map[string]any{"user": u, "ts": ts, "v": float64(round)})
		}
		h.ProduceJSON(topic, evs, "user")
		honest = append(honest, evs...)
		lastWindow = max(lastWindow, ts/size*size)
	}
	lastWindow = max(lastWindow, now.Add(3*time.Second).UnixMilli()/size*size)
	eventually(t, 60*time.Second, fmt.Sprintf("the releases of window %d", lastWindow), func() bool { return released(h.releases(), lastWindow) }, in)
	in.stop()

	dl := h.deadLetterReasons()
	if dl["future"] != len(future) || dl["late"] != 0 || len(dl) != 1 {
		t.Errorf("dead letters %v, want %d future and nothing else (no honest event late)", dl, len(future))
	}
	var windows []int64
	for _, r := range h.releases() {
		if r.PublishedAt < r.WindowEnd+grace {
			t.Errorf("%s published at %s, before its end plus grace %s on the wall clock", r.ReleaseID,
				time.UnixMilli(r.PublishedAt).UTC().Format(time.RFC3339Nano), time.UnixMilli(r.WindowEnd+grace).UTC().Format(time.RFC3339Nano))
		}
		if r.Release == "n" {
			windows = append(windows, r.WindowStart)
		}
	}
	sort.Slice(windows, func(i, j int) bool { return windows[i] < windows[j] })
	if n := len(windows); n == 0 || windows[n-1] > lastWindow+10*size {
		t.Errorf("released windows %v: want none far past the last honest window %d", windows, lastWindow)
	}
	// Every honest event, and the one a few seconds ahead, is counted in
	// the partials the release stage used.
	var counted int64
	for _, byPart := range h.partials()["trips"] {
		for _, p := range byPart {
			counted += p.Events
		}
	}
	if counted != int64(len(honest)) {
		t.Errorf("the partials count %d events, want the %d honest ones (the future ones are not counted)", counted, len(honest))
	}
}
