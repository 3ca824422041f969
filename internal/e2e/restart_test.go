package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

func restartConfig(partitions int) *testkit.Pipeline {
	// A long idle timeout: windows close only by event time, so the run
	// with a restart and the uninterrupted one see the same watermarks.
	return testkit.NewPipeline(testkit.NewStream("trips", "events").Partitions(partitions).
		Window(time.Second, 200*time.Millisecond, 10*time.Minute).Budget(1000, 1e-6).Releases(
		testkit.Count("n").Epsilon(0.5),
		testkit.Histogram("h", "v", 0, 10, 5).Epsilon(0.5)))
}

// closers returns one event per input partition in window w, so every
// partition's watermark passes the windows before it.
func closers(w int64, partitions int) []map[string]any {
	var out []map[string]any
	seen := map[int]bool{}
	for i := 0; len(seen) < partitions; i++ {
		u := fmt.Sprintf("closer%d", i)
		p := kafkaio.PartitionFor([]byte(u), partitions)
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, map[string]any{"user": u, "ts": base + w*1000 + 500, "v": 1.0})
	}
	return out
}

// TestRestart stops the pipeline (and, on the embedded broker, the broker
// too; an external broker keeps running) in the middle of a window and
// starts it again: the exact statistics behind every release equal those of
// an uninterrupted run (the truth), and no release is charged twice.
func TestRestart(t *testing.T) {
	h := newHarness(t, restartConfig(4))
	evs := genEvents(5, 4, 200, 80) // windows 0..3
	// Disorder: every 7th event is 700ms older, so it falls in the previous
	// window, and is late or in time depending on its partition's watermark.
	// A restart must make the same decisions as the uninterrupted run.
	for i := range evs {
		if i%7 == 3 && evs[i]["ts"].(int64)-700 >= base {
			evs[i]["ts"] = evs[i]["ts"].(int64) - 700
		}
	}
	evs = append(evs, closers(5, 4)...)
	want, late := truthWithLateness(evs, 2, 4, 200)
	if late == 0 {
		t.Fatal("the disorder produced no late events; the test would not exercise the watermark")
	}
	// Stop after windows 0 and 1 and half of window 2.
	cut := 2*200 + 100
	topic := h.cfg.Streams[0].Topic

	in := h.start("first", pipeline.Stages{Accumulate: true, Release: true}, nil)
	h.ProduceJSON(topic, evs[:cut], "user")
	waitFor(t, 60*time.Second, "windows 0 and 1 released", func() bool {
		return len(releasedWindows(h.releases(), "h")) >= 2
	}, in)
	in.stop()
	h.Restart()

	h.ProduceJSON(topic, evs[cut:], "user")
	in2 := h.start("second", pipeline.Stages{Accumulate: true, Release: true}, nil)
	waitFor(t, 60*time.Second, "windows 0..3 released", func() bool {
		rs := h.releases()
		return len(releasedWindows(rs, "n")) >= 4 && len(releasedWindows(rs, "h")) >= 4
	}, in2)
	in2.stop()

	// Exact statistics: the first partial per (window, partition) — the one
	// the release stage used — summed over partitions equals the truth.
	parts := h.partials()["trips"]
	for w := int64(0); w < 4; w++ {
		start := base + w*1000
		var n int64
		bins := make([]int64, 5)
		for _, p := range parts[start] {
			for _, s := range p.Stats {
				if s.Release == "n" {
					n += s.Count
				}
				if s.Release == "h" {
					for j, c := range s.Bins {
						bins[j] += c
					}
				}
			}
		}
		if n != want[start].count || fmt.Sprint(bins) != fmt.Sprint(want[start].bins) {
			t.Errorf("window %d: statistics after restart: count %d bins %v; uninterrupted: %d %v", w, n, bins, want[start].count, want[start].bins)
		}
	}
	// Charged once; every published copy is the ledger's payload.
	ledger := h.ledger()
	payload := map[string][]byte{}
	for _, lc := range ledger {
		if _, dup := payload[lc.ReleaseID]; dup {
			t.Errorf("release %s charged twice", lc.ReleaseID)
		}
		payload[lc.ReleaseID] = lc.Payload
	}
	for _, m := range h.ReadAll(h.cfg.Topics.Releases) {
		p, ok := payload[string(m.Key)]
		if !ok {
			t.Errorf("release %s published without a ledger charge", m.Key)
		} else if !bytes.Equal(p, m.Value) {
			t.Errorf("release %s published with bytes that differ from the ledger", m.Key)
		}
	}
	if len(ledger) < 8 {
		t.Errorf("ledger has %d charges, want at least 8 (4 windows × 2 releases)", len(ledger))
	}
}

// truthWithLateness computes the exact statistics of an uninterrupted run:
// per partition (murmur2 of the unit), an event is late when its window
// ended at or before the partition's watermark (highest earlier event time
// minus grace); then the first L events per unit and window are kept.
func truthWithLateness(evs []map[string]any, L, partitions int, grace int64) (map[int64]truth, int) {
	maxTS := map[int]int64{}
	var kept []map[string]any
	late := 0
	for _, ev := range evs {
		p := kafkaio.PartitionFor([]byte(ev["user"].(string)), partitions)
		ts := ev["ts"].(int64)
		if m, ok := maxTS[p]; ok && ts/1000*1000+1000 <= m-grace {
			late++
			continue
		}
		if m, ok := maxTS[p]; !ok || ts > m {
			maxTS[p] = ts
		}
		kept = append(kept, ev)
	}
	return truthOf(kept, L, 0, 10, 5), late
}

// TestReleaseCommitsWhileQuiet: once the partials topic goes quiet, the
// release stage commits the offset its merger needs (the latest partial
// of the input partition that reported least recently) within a couple of
// seconds, while it keeps running, so that a crash then replays only that.
// Committing only when the next partial arrives would leave a burst's
// offset uncommitted for as long as the stream is quiet.
func TestReleaseCommitsWhileQuiet(t *testing.T) {
	h := newHarness(t, restartConfig(4))
	evs := append(genEvents(3, 3, 120, 40), closers(4, 4)...)
	in := h.start("quiet", pipeline.Stages{Accumulate: true, Release: true}, nil)
	h.ProduceJSON(h.cfg.Streams[0].Topic, evs, "user")
	waitFor(t, 60*time.Second, "windows 0..2 released", func() bool {
		return len(releasedWindows(h.releases(), "h")) >= 3
	}, in)
	// What Merger.CommitOffset gives with no window pending: the smallest,
	// over input partitions, of the offset of each one's latest report.
	latest := map[int32]struct{ start, offset int64 }{}
	for _, m := range h.ReadAll(h.cfg.Topics.Partials) {
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := latest[p.Partition]; !ok || p.WindowStart >= l.start {
			latest[p.Partition] = struct{ start, offset int64 }{p.WindowStart, m.Offset}
		}
	}
	want := int64(-1)
	for _, l := range latest {
		if want < 0 || l.offset < want {
			want = l.offset
		}
	}
	_, group := pipeline.Groups(h.cfg)
	var got int64 = -1
	part := h.partialsPartition(h.cfg.Streams[0].Name)
	waitFor(t, 10*time.Second, fmt.Sprintf("the release group to commit partials offset %d while running", want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := h.Conn.Client().OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{h.cfg.Topics.Partials: {part}}})
		if err != nil {
			return false
		}
		for _, p := range resp.Topics[h.cfg.Topics.Partials] {
			got = p.CommittedOffset
		}
		return got == want
	}, in)
}
