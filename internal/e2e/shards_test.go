package e2e

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
)

// shardStreams are six stream names that fall on six distinct partitions
// of a 6-partition partials topic (ledger.PartitionOf), so that three
// release instances own two streams each.
func shardStreams() []string {
	var out []string
	seen := map[int]bool{}
	for i := 0; len(out) < 6; i++ {
		name := fmt.Sprintf("s%d", i)
		if p := ledger.PartitionOf(name, 6); !seen[p] {
			seen[p] = true
			out = append(out, name)
		}
	}
	return out
}

// shardsConfig is six streams, each on a 2-partition input topic of its
// own with a count and a histogram, over six partials and ledger
// partitions (release_partitions: 6).
func shardsConfig() *testkit.Pipeline {
	var streams []*testkit.Stream
	for _, name := range shardStreams() {
		streams = append(streams, testkit.NewStream(name, "ev-"+name).Partitions(2).
			Window(time.Second, 200*time.Millisecond, 10*time.Minute).Budget(1000, 1e-6).Releases(
			testkit.Count("n").Epsilon(0.5),
			testkit.Histogram("h", "v", 0, 10, 5).Epsilon(0.5)))
	}
	return testkit.NewPipeline(streams...).ReleasePartitions(6)
}

// TestReleaseShards runs the release stage as three instances of one
// consumer group over six streams on six partials partitions, each
// partition's streams owned and fenced by one instance at a time. While
// events arrive, one instance leaves and a fourth joins (each a rebalance
// that moves streams between instances, with checkpoints and trims going
// on). Every window of every stream is charged once and published whole,
// every published record is the ledger's payload, each stream's budget
// state counts what the ledger holds, every instance released streams,
// and some stream was released by two instances (it moved).
func TestReleaseShards(t *testing.T) {
	t.Parallel()
	h := newHarness(t, shardsConfig())
	h.checkpointEvery = time.Second
	names := shardStreams()
	const windows = 18
	evs := map[string][]map[string]any{}
	ids := map[string]bool{}
	for i, name := range names {
		e := genEvents(uint64(31+i), windows, 40, 30)
		e = append(e, closers(windows+2, 2)...)
		evs[name] = e
		for w := range closedTruth(e, 2) {
			for _, rel := range []string{"n", "h"} {
				ids[fmt.Sprintf("%s/%s/%d", name, rel, w)] = true
			}
		}
	}
	topics := map[string]string{}
	for _, st := range h.cfg.Streams {
		topics[st.Name] = st.Topic
	}
	// produce writes windows [from, to) of every stream (to > windows: the
	// closers too).
	produce := func(from, to int64) {
		for _, name := range names {
			var chunk []map[string]any
			for _, ev := range evs[name] {
				if w := (ev["ts"].(int64) - base) / 1000; w >= from && w < to {
					chunk = append(chunk, ev)
				}
			}
			h.ProduceJSON(topics[name], chunk, "user")
		}
	}
	_, relGroup := pipeline.Groups(h.cfg)
	partials := h.cfg.Topics.Partials
	acc := h.start("acc", pipeline.Stages{Accumulate: true}, nil)
	rel := map[string]*instance{}
	for _, name := range []string{"rel1", "rel2", "rel3"} {
		rel[name] = h.start(name, pipeline.Stages{Release: true}, nil)
	}
	live := func(names ...string) []*instance {
		out := []*instance{acc}
		for _, n := range names {
			out = append(out, rel[n])
		}
		return out
	}
	released := func(upTo int64) func() bool {
		return func() bool {
			want := map[string]bool{}
			for id := range ids {
				if w := windowOfID(id); w < base+upTo*1000 {
					want[id] = true
				}
			}
			return unreleased(h, want) == 0
		}
	}
	releasedBy := func(in *instance) map[string]float64 {
		out := map[string]float64{}
		for _, name := range names {
			out[name] = testutil.ToFloat64(in.metrics.Releases.WithLabelValues(name, "n", "ok"))
		}
		return out
	}

	// Three instances, two partials partitions each, before any event.
	waitFor(t, 90*time.Second, "three release instances holding two partials partitions each", func() bool {
		return h.balanced(relGroup, partials, 3, 6)
	}, live("rel1", "rel2", "rel3")...)
	produce(0, 6)
	waitFor(t, 90*time.Second, "windows 0-4 of every stream released by three instances", released(5), live("rel1", "rel2", "rel3")...)
	for _, name := range []string{"rel1", "rel2", "rel3"} {
		n := 0.0
		for _, v := range releasedBy(rel[name]) {
			n += v
		}
		if n == 0 {
			t.Errorf("%s released nothing: the three instances did not share the streams (%s)", name, h.describeGroup(relGroup))
		}
	}

	// rel2 leaves while the next windows arrive: its streams move.
	rel["rel2"].stop()
	produce(6, 12)
	waitFor(t, 90*time.Second, "windows 5-10 released after rel2 left", released(11), live("rel1", "rel3")...)

	// A fourth joins while the rest arrive.
	rel["rel4"] = h.start("rel4", pipeline.Stages{Release: true}, nil)
	waitFor(t, 90*time.Second, "rel1, rel3 and rel4 holding two partials partitions each", func() bool {
		return h.balanced(relGroup, partials, 3, 6)
	}, live("rel1", "rel3", "rel4")...)
	produce(12, windows+3)
	waitFor(t, 120*time.Second, "every window of every stream released", func() bool { return unreleased(h, ids) == 0 }, live("rel1", "rel3", "rel4")...)
	byInstance := map[string]map[string]float64{}
	for name, in := range rel {
		byInstance[name] = releasedBy(in)
	}
	for _, in := range live("rel1", "rel3", "rel4") {
		in.stop()
	}

	var violations []string
	answers, bad := readAnswers(h.fullLedger())
	violations = append(violations, bad...)
	for id := range ids {
		if answers[id] == nil {
			violations = append(violations, fmt.Sprintf("release %s (a window with events) is not in the ledger", id))
		}
	}
	violations = append(violations, checkPublished(answers, h.ReadAll(h.cfg.Topics.Releases))...)
	violations = append(violations, h.checkBudget()...)
	// One valid charge per release id (readAnswers names a duplicate with
	// another payload; this counts every valid charge, empty windows'
	// included).
	charged := map[string]int{}
	for _, lc := range h.ledger() {
		if charged[lc.ReleaseID]++; charged[lc.ReleaseID] == 2 {
			violations = append(violations, fmt.Sprintf("release %s has more than one valid charge in the ledger", lc.ReleaseID))
		}
	}
	if byInstance["rel4"] == nil || sum(byInstance["rel4"]) == 0 {
		violations = append(violations, "rel4 released nothing: no stream moved to the instance that joined")
	}
	moved := false
	for _, name := range names {
		owners := 0
		for _, by := range byInstance {
			if by[name] > 0 {
				owners++
			}
		}
		moved = moved || owners > 1
	}
	if !moved {
		violations = append(violations, fmt.Sprintf("no stream was released by two instances: nothing moved (%v)", byInstance))
	}
	trimmed := 0
	for p := range 6 {
		if h.ledgerStart(p) > 0 {
			trimmed++
		}
	}
	if trimmed == 0 {
		violations = append(violations, "no ledger partition was trimmed to a checkpoint")
	}
	sort.Strings(violations)
	for _, v := range violations {
		t.Error(v)
	}
	t.Logf("%d release ids over %d streams; releases of n by instance: %v; %d of 6 ledger partitions trimmed", len(ids), len(names), byInstance, trimmed)
}

func sum(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// windowOfID is the window start of a release id stream/release/start.
func windowOfID(id string) int64 {
	w, err := strconv.ParseInt(id[strings.LastIndexByte(id, '/')+1:], 10, 64)
	if err != nil {
		panic(fmt.Sprintf("release id %q: %v", id, err)) // the test's own ids
	}
	return w
}
