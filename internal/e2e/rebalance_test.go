package e2e

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
)

// rebalanceConfig is crashConfig on a 6-partition input topic.
func rebalanceConfig() *testkit.Pipeline { return restartConfig(6) }

// TestRebalance runs the accumulate stage as three instances of one
// consumer group on a 6-partition topic, adds a fourth and a fifth and
// removes two while events are being produced (each change is a group
// rebalance that moves partitions between instances mid-window), and
// compares the outcome with a single-instance run of the same events on
// fresh topics: the partials the release stage merges are byte-identical
// per (window, input partition), so every release has the same truth
// content (only the noise differs), and invariants 1 and 2 hold in both
// runs (checkInvariants: charged once, copies identical, exact statistics).
func TestRebalance(t *testing.T) {
	evs := genEvents(23, 16, 90, 60)
	for i := range evs {
		if i%7 == 3 && evs[i]["ts"].(int64)-700 >= base {
			evs[i]["ts"] = evs[i]["ts"].(int64) - 700
		}
	}
	evs = append(evs, closers(17, 6)...)
	want := closedTruth(evs, 6)
	// Four chunks cut mid-window (a window is 90 events).
	cuts := []int{0, 4*90 + 45, 8*90 + 20, 12*90 + 70, len(evs)}

	// The single-instance run.
	single := newHarness(t, rebalanceConfig())
	ids := releaseIDs(single, want)
	one := single.start("single", pipeline.Stages{Accumulate: true, Release: true}, nil)
	single.ProduceJSON(single.cfg.Streams[0].Topic, evs, "user")
	waitFor(t, 90*time.Second, "every window released by the single instance", func() bool { return unreleased(single, ids) == 0 }, one)
	one.stop()

	// The scaled run: a release instance and three accumulate instances.
	h := newHarness(t, rebalanceConfig())
	topic := h.cfg.Streams[0].Topic
	acc := pipeline.Stages{Accumulate: true}
	rel := h.start("release", pipeline.Stages{Release: true}, nil)
	a := []*instance{h.start("acc1", acc, nil), h.start("acc2", acc, nil), h.start("acc3", acc, nil)}
	consumed := func(in *instance) float64 { return testutil.ToFloat64(in.metrics.Consumed.WithLabelValues("trips")) }
	released := func() int { return len(ids) - unreleased(h, ids) }
	// spread waits until the group settled: every live instance owns a
	// partition (it reports a lag series for each) and all six are owned.
	spread := func(what string, live ...*instance) {
		t.Helper()
		waitFor(t, 60*time.Second, what, func() bool {
			total := 0
			for _, in := range live {
				n := testutil.CollectAndCount(in.metrics.ConsumerLag)
				if n == 0 {
					return false
				}
				total += n
			}
			return total == 6
		}, append(live, rel)...)
	}
	// produce writes a chunk in eight batches 150ms apart, so a membership
	// change made just before lands while records are being consumed.
	produce := func(evs []map[string]any) {
		n := (len(evs) + 7) / 8
		for i := 0; i < len(evs); i += n {
			h.ProduceJSON(topic, evs[i:min(i+n, len(evs))], "user")
			time.Sleep(150 * time.Millisecond)
		}
	}

	spread("three instances sharing the six partitions", a...)
	produce(evs[cuts[0]:cuts[1]])
	waitFor(t, 60*time.Second, "the first windows released by three instances", func() bool { return released() >= 4 }, append(a, rel)...)
	for i, in := range a {
		if consumed(in) == 0 {
			t.Errorf("acc%d read no record: the three instances did not share the six partitions", i+1)
		}
	}

	// Add an instance while the next chunk arrives.
	a = append(a, h.start("acc4", acc, nil))
	produce(evs[cuts[1]:cuts[2]])
	waitFor(t, 60*time.Second, "windows released after acc4 joined", func() bool { return released() >= 12 }, append(a, rel)...)
	spread("four instances sharing the six partitions", a...)

	// Remove one while the third chunk arrives.
	a[0].stop()
	produce(evs[cuts[2]:cuts[3]])
	waitFor(t, 60*time.Second, "windows released after acc1 left", func() bool { return released() >= 20 }, append(a[1:], rel)...)
	spread("three instances after acc1 left", a[1:]...)

	// Remove another and add a fifth at once, then the rest of the events.
	a[1].stop()
	a = append(a, h.start("acc5", acc, nil))
	produce(evs[cuts[3]:cuts[4]])
	waitFor(t, 90*time.Second, "every window released", func() bool { return released() == len(ids) }, append(a[2:], rel)...)
	spread("acc3, acc4 and acc5 sharing the six partitions", a[2:]...)
	if consumed(a[3]) == 0 || consumed(a[4]) == 0 {
		t.Errorf("the instances that joined mid-stream read nothing (acc4 %v, acc5 %v records): no partition moved to them", consumed(a[3]), consumed(a[4]))
	}
	for _, in := range append(a[2:], rel) {
		in.stop()
	}

	for run, hh := range map[string]*harness{"single instance": single, "rebalanced": h} {
		for _, v := range checkInvariants(hh, want) {
			t.Errorf("%s: %s", run, v)
		}
	}
	// Truth content: the partials behind every release are the same bytes.
	got, base := firstPartials(h), firstPartials(single)
	var diffs []string
	for k, b := range base {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("window %d partition %d: missing after rebalances", k.w, k.p))
		case !bytes.Equal(g, b):
			diffs = append(diffs, fmt.Sprintf("window %d partition %d: partial differs from the single-instance run's", k.w, k.p))
		}
	}
	for k := range got {
		if _, ok := base[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("window %d partition %d: only in the rebalanced run", k.w, k.p))
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
	if len(base) < len(want)*6 {
		t.Errorf("the single-instance run has %d partials for %d windows × 6 partitions", len(base), len(want))
	}
	t.Logf("%d windows, %d partials compared; records read per instance: %v %v %v %v %v", len(want), len(base),
		consumed(a[0]), consumed(a[1]), consumed(a[2]), consumed(a[3]), consumed(a[4]))
}
