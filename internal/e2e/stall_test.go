package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
)

// No producer can hold the release schedule back (DESIGN section 5; the
// accumulate stage's Partition.Pace): the release stage needs every input
// partition's partial of a window, so one partition whose windows never
// close holds every release of the stream. On main, a trickle of records
// that do not move a partition's watermark (rejected or late ones, or
// accepted events whose Kafka timestamps are in the past) kept it from
// ever being idle, and nothing was released while it lasted. These tests
// run on the wall clock: honest events on partitions 0 and 1, an attacker
// on partition 2, and every window must be released within its end +
// grace + idle_timeout, plus a generous slack, of the wall clock.

// stallConfig is scheduleStream on three partitions, with 2 s windows, a
// grace period and an idle timeout of 2 s, and start as the stream's
// start (zero: none, recorded at the first run).
func stallConfig(start time.Time) *testkit.Pipeline {
	return testkit.NewPipeline(scheduleStream(3).Start(start).Window(stallSize, stallGrace, stallIdle).MaxEvents(5))
}

const (
	stallSize  = 2 * time.Second
	stallGrace = 500 * time.Millisecond
	stallIdle  = 2 * time.Second
	// stallSlack is what the test allows beyond end + grace + idle_timeout
	// for the stages' own pace (ticks, the release stage's polling, the
	// ledger round trips) on a loaded machine: generous, and scaled with
	// the settings.
	stallSlack = 5*time.Second + 2*(stallSize+stallGrace+stallIdle)
)

// attacker sends record(i, now) to the input topic every 200 ms until
// stopped; a send that fails is a test error.
type attacker struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sent   int
}

func (h *harness) attack(record func(i int, now time.Time) kafka.Message) *attacker {
	ctx, cancel := context.WithCancel(context.Background())
	a := &attacker{cancel: cancel}
	w := h.Conn.NewWriter(h.cfg.Streams[0].Topic)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer w.Close()
		for i := 0; ; i++ {
			if err := w.WriteMessages(ctx, record(i, time.Now())); err != nil {
				if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
					h.t.Errorf("attacker: %v", err)
				}
				return
			}
			a.sent++
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	h.t.Cleanup(a.stop)
	return a
}

func (a *attacker) stop() {
	a.cancel()
	a.wg.Wait()
}

// stallRun is one scenario: the attack starts before the pipeline (and so
// meets partitions that never went idle) or once the pipeline has released
// its first window.
type stallRun struct {
	start       time.Time // the stream's configured start (zero: recorded at the first run)
	attackFirst bool
	// record is the attacker's i-th record at now; start is the stream's
	// start (recorded in the ledger once the pipeline has released a
	// window, the configured one before).
	record func(start int64, i int, now time.Time) kafka.Message
}

func (sc stallRun) run(t *testing.T) {
	h := newHarness(t, stallConfig(sc.start))
	h.useWallClock()
	topic := h.cfg.Streams[0].Topic
	honestUnits := unitsOn("h", 4, 3, 0, 1)
	honest := map[string]bool{}
	for _, u := range honestUnits {
		honest[u] = true
	}
	produced := 0
	produceHonest := func() int64 {
		ts := time.Now().UnixMilli()
		var evs []map[string]any
		for _, u := range honestUnits {
			evs = append(evs, map[string]any{"user": u, "ts": ts, "v": 2.0})
		}
		h.ProduceJSON(topic, evs, "user")
		produced += len(evs)
		return ts
	}
	var a *attacker
	startAttack := func(start int64) time.Time {
		a = h.attack(func(i int, now time.Time) kafka.Message { return sc.record(start, i, now) })
		return time.Now()
	}
	var attackedAt time.Time
	if sc.attackFirst {
		attackedAt = startAttack(sc.start.UnixMilli())
		time.Sleep(time.Second) // the pipeline starts with the attack's records in the topic
	}
	in := h.start("p", pipeline.Stages{Accumulate: true, Release: true}, nil)

	// Honest events every half second until the pipeline releases a window
	// (on main, with the attack running, it never did).
	var first time.Time
	size := stallSize.Milliseconds()
	if !eventually(t, 90*time.Second, "the first release", func() bool {
		produceHonest()
		time.Sleep(500 * time.Millisecond)
		if rs := h.releases(); len(rs) > 0 {
			first = time.Now()
			return true
		}
		return false
	}, in) {
		return
	}
	if !sc.attackFirst {
		start, ok := h.recordedStart("trips")
		if !ok {
			t.Fatal("no start recorded in the ledger after a release")
		}
		attackedAt = startAttack(start)
	}
	// Five more windows of honest events with the attack running.
	var last int64
	for end := time.Now().Add(5 * stallSize); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		last = produceHonest() / size * size
	}
	from := max(first.UnixMilli(), attackedAt.UnixMilli())/size*size + size
	ok := eventually(t, 90*time.Second, fmt.Sprintf("the releases of every window up to %d", last), func() bool {
		rs := h.releases()
		for w := from; w <= last; w += size {
			if !released(rs, w) {
				return false
			}
		}
		return true
	}, in)
	a.stop()
	in.stop()
	if a.sent == 0 {
		t.Fatal("the attacker sent nothing")
	}
	if !ok {
		return
	}

	// Every window from the attack (or the first release) on was released
	// within end + grace + idle_timeout + slack on the wall clock, and
	// none before its end plus grace.
	deadline := (stallGrace + stallIdle + stallSlack).Milliseconds()
	var slowest int64
	for _, r := range h.releases() {
		if r.WindowStart >= from && r.WindowStart <= last {
			slowest = max(slowest, r.PublishedAt-r.WindowEnd)
		}
		if r.PublishedAt < r.WindowEnd+stallGrace.Milliseconds() {
			t.Errorf("%s published at %s, before its end plus grace", r.ReleaseID, time.UnixMilli(r.PublishedAt).UTC().Format(time.RFC3339Nano))
		}
		if r.WindowStart >= from && r.WindowStart <= last && r.PublishedAt > r.WindowEnd+deadline {
			t.Errorf("%s published %s after its end: the attack held it back beyond grace + idle_timeout + slack (%s)", r.ReleaseID,
				time.Duration(r.PublishedAt-r.WindowEnd)*time.Millisecond, time.Duration(deadline)*time.Millisecond)
		}
	}
	t.Logf("windows %d..%d: the slowest released %s after its end (deadline %s)", from, last,
		time.Duration(slowest)*time.Millisecond, time.Duration(deadline)*time.Millisecond)
	// The attack cost honest events nothing: none late, and the attacker's
	// records were dead-lettered on its own partition.
	var attackerDL int
	honestDL := map[string]int{}
	for _, m := range h.ReadAll(h.cfg.Topics.DeadLetter) {
		var v struct{ User string }
		if json.Unmarshal(m.Value, &v) == nil && honest[v.User] {
			honestDL[header(m, "dpstream.reason")]++
			continue
		}
		if header(m, "dpstream.partition") == "2" {
			attackerDL++
		}
	}
	if honestDL["late"] > 0 || honestDL["future"] > 0 {
		t.Errorf("honest events dead-lettered: %v", honestDL)
	}
	if attackerDL == 0 {
		t.Errorf("none of the attacker's %d records was dead-lettered", a.sent)
	}
	var counted int64
	for _, byPart := range h.partials()["trips"] {
		for p, part := range byPart {
			if p != 2 {
				counted += part.Events + part.Dropped
			}
		}
	}
	if lost := int64(produced - honestDL["before_start"]); counted != lost {
		t.Errorf("partitions 0 and 1 counted %d events, want the %d honest ones produced in the schedule", counted, lost)
	}
}

// TestTrickleStallsNothing: a record every 200 ms on one partition, each
// undecodable, misrouted, before the start, an hour ahead, or late, sent
// once the pipeline runs. None moves the partition's watermark and the
// partition is never silent for idle_timeout: on main its windows never
// closed, and no window of the stream was released while the trickle
// lasted. Now the partition's windows close by the wall clock once its
// watermark has fallen idle_timeout behind its pace.
func TestTrickleStallsNothing(t *testing.T) {
	t.Parallel()
	unit, elsewhere := unitsOn("a", 1, 3, 2)[0], unitsOn("e", 1, 3, 0)[0]
	stallRun{record: func(start int64, i int, now time.Time) kafka.Message {
		ev := map[string]any{"user": unit, "ts": now.UnixMilli(), "v": 9.0}
		switch i % 5 {
		case 0:
			return kafka.Message{Key: []byte(unit), Value: []byte("\x00not json")}
		case 1:
			ev["user"] = elsewhere // misrouted: read on partition 2, belongs on 0
		case 2:
			ev["ts"] = now.Add(-24 * time.Hour).UnixMilli() // before the start
		case 3:
			ev["ts"] = now.Add(time.Hour).UnixMilli() // future
		case 4:
			ev["ts"] = start // late: the first window closed before the attack
		}
		b, _ := json.Marshal(ev)
		return kafka.Message{Key: []byte(unit), Value: b}
	}}.run(t)
}

// TestOldTimestampsStallNothing: a producer sends, every 200 ms from before
// the pipeline starts, events in the current window whose Kafka record
// timestamps are 30 s old. They are accepted (the first ones counted), but
// the record's clock caps the watermark 30 s back, so they never move it,
// and they keep the partition from being idle: on main the partition,
// which had never gone idle, stayed at the stream's start and nothing was
// released.
func TestOldTimestampsStallNothing(t *testing.T) {
	t.Parallel()
	unit := unitsOn("a", 1, 3, 2)[0]
	t0 := time.Now()
	stallRun{start: t0.Add(-stallSize), attackFirst: true, record: func(_ int64, _ int, _ time.Time) kafka.Message {
		b, _ := json.Marshal(map[string]any{"user": unit, "ts": t0.UnixMilli(), "v": 9.0})
		return kafka.Message{Key: []byte(unit), Value: b, Time: t0.Add(-30 * time.Second)}
	}}.run(t)
}
