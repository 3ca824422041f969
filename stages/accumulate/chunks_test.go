package accumulate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// keyedStat is a test statistic with per-key groups, like a group_by
// release's: each distinct value of its field is a key, with its events
// counted.
type keyedStat struct{ at int }

func (s keyedStat) NewWindow() kind.Accumulator {
	return &keyedWindow{at: s.at, counts: map[string]int64{}}
}
func (s keyedStat) Norms() kind.Norms { return kind.Norms{Head: 1} }

type keyedWindow struct {
	at     int
	counts map[string]int64
}

func (w *keyedWindow) Check(v []float64, _ []string) error {
	if w.at >= len(v) || math.IsNaN(v[w.at]) {
		return fmt.Errorf("no key")
	}
	return nil
}

func (w *keyedWindow) Add(v []float64, _ []string, _ int, _ bool) error {
	w.counts[fmt.Sprintf("key-%08.0f", v[w.at])]++
	return nil
}

func (w *keyedWindow) Stats(rs *schema.ReleaseStats) {
	for k, n := range w.counts {
		rs.Groups = append(rs.Groups, schema.GroupStats{Key: k, Units: n, Count: n, Sums: []int64{n << 20}})
		rs.Count += n
	}
	sort.Slice(rs.Groups, func(i, j int) bool { return rs.Groups[i].Key < rs.Groups[j].Key })
}

func (w *keyedWindow) AppendNorms(buf []float64, _, _ int) ([]float64, error) {
	return append(buf, 1), nil
}
func (w *keyedWindow) DropUnits() {}

// TestChunkedPartialsBeforeCommit runs a partition worker on an embedded
// broker with partials too large for one record (a per-key statistic with
// hundreds of keys, per-unit contributions, and a 3000-byte limit): every
// closed window's partial is on the partials topic as chunks that join to
// exactly the window's partial, and it is all there when the offsets that
// produced it are committed; a window replayed from the committed point
// gives byte-identical chunks.
func TestChunkedPartialsBeforeCommit(t *testing.T) {
	e, err := kafkaio.StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	conn := e.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := conn.EnsureTopics(ctx, []kafkaio.TopicSpec{{Name: "partials", Partitions: 1}, {Name: "dlq", Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	dec, err := schema.NewDecoder(schema.FormatJSON, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	stream := &Stream{Name: "s", Size: 1000, Grace: 200, IdleTimeout: time.Second, MaxEvents: 1000, UnitContributions: true,
		Releases: []Release{{Name: "k", Stat: keyedStat{at: 0}}}}
	now := time.UnixMilli(1_750_000_100_000)
	st := &Stage{cfg: Config{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }, CommitInterval: time.Millisecond},
		partials: conn.NewWriter("partials"), dlq: conn.NewWriter("dlq"), dlqMaxValue: 1 << 20, partialBytes: 3000}
	t.Cleanup(func() { _ = st.partials.Close(); _ = st.dlq.Close() })
	in := &Input{Stream: stream, Topic: "events", Decoder: dec, Extractor: &Extractor{Unit: "user", EventTime: "ts", Fields: []string{"key"}}}

	// A reference partition fed the same events gives the partials the
	// topic must hold, joined.
	ref := NewPartition(stream, 0, 1, NoWatermark)
	want := map[int64][]byte{}
	var commits, checked int
	var events []kafka.Message
	const t0 = 1_750_000_000_000
	for w := int64(0); w < 4; w++ {
		for i := range 150 + 100*int(w) {
			v := fmt.Sprintf(`{"user": "u%d", "ts": %d, "key": %d}`, i%120, t0+w*1000+int64(i%900), i)
			events = append(events, kafka.Message{Topic: "events", Offset: int64(len(events)), Value: []byte(v), HighWaterMark: 1 << 40})
		}
	}
	for _, m := range events {
		ev, rej := in.Admit(Record{Value: m.Value, Offset: m.Offset, Partition: 0, Partitions: 1}, time.Time{})
		if rej != nil {
			t.Fatal(rej)
		}
		_, closed, err := ref.Add(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range closed {
			b, err := schema.EncodePartial(p)
			if err != nil {
				t.Fatal(err)
			}
			want[p.WindowStart] = b
		}
	}
	big := 0
	for _, b := range want {
		if len(b) > st.partialBytes {
			big++
		}
	}
	if big != 3 {
		t.Fatalf("%d windows closed by the events need chunks, want 3 (windows %v)", big, keysOf(want))
	}

	// topic reads the partials topic and joins each window's chunks.
	topic := func() (map[int64][]byte, int) {
		var recs []schema.Partial
		if err := conn.ReadAll(ctx, "partials", func(m kafka.Message) error {
			p, err := schema.DecodePartial(m.Value)
			if err != nil {
				return err
			}
			if len(m.Value) > st.partialBytes {
				t.Errorf("a partial record of %d bytes, over the limit of %d", len(m.Value), st.partialBytes)
			}
			recs = append(recs, p)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		by := map[int64][]schema.Partial{}
		for _, p := range recs {
			if p.Chunks == 0 && len(want[p.WindowStart]) > st.partialBytes {
				t.Errorf("window %d: a partial of %d bytes in one record; want chunks", p.WindowStart, len(want[p.WindowStart]))
			}
			by[p.WindowStart] = append(by[p.WindowStart], p)
		}
		out := map[int64][]byte{}
		for w, cs := range by {
			j, err := schema.JoinPartial(cs)
			if err != nil {
				t.Fatalf("window %d: %v", w, err)
			}
			if out[w], err = schema.EncodePartial(j); err != nil {
				t.Fatal(err)
			}
		}
		return out, len(recs)
	}

	worker := func(commit func(off int64, md string)) *partitionWorker {
		a := kafkaio.Assignment{Topic: "events", Commit: func(_ context.Context, off int64, md string) error { commit(off, md); return nil }}
		return &partitionWorker{s: st, in: in, a: a, log: st.cfg.Log, part: NewPartition(stream, 0, 1, NoWatermark), lastMsg: now, backlogEnd: -1}
	}
	type commitPoint struct {
		off int64
		md  string
	}
	var commitPoints []commitPoint
	w := worker(func(off int64, md string) {
		// The commit point: every window the committed offset no longer
		// replays must be whole on the topic.
		commits++
		got, _ := topic()
		for start, b := range want {
			if start+stream.Size+stream.Grace > w0(md) {
				continue // still replayed from the commit point
			}
			checked++
			if string(got[start]) != string(b) {
				t.Errorf("commit at offset %d: window %d is not whole on the partials topic", off, start)
			}
		}
		commitPoints = append(commitPoints, commitPoint{off, md})
	})
	for _, m := range events {
		if err := w.record(ctx, m); err != nil {
			t.Fatal(err)
		}
		if len(w.pendingPartials) > 0 {
			now = now.Add(time.Second)
			if err := w.flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := w.commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if commits == 0 || checked == 0 {
		t.Fatalf("%d commits checked %d windows", commits, checked)
	}
	got, records := topic()
	for start, b := range want {
		if string(got[start]) != string(b) {
			t.Errorf("window %d: the joined chunks differ from the window's partial", start)
		}
	}
	if records < len(want)+2*big {
		t.Errorf("%d records for %d windows: not split", records, len(want))
	}

	// A crash just before the last commit: the next owner replays from the
	// commit before it, with its metadata, and emits the windows closed
	// since again. Their chunks must be byte-identical to the first ones.
	if len(commitPoints) < 2 {
		t.Fatalf("%d commits, want at least 2", len(commitPoints))
	}
	from := commitPoints[len(commitPoints)-2]
	res, err := DecodeResume(from.md)
	if err != nil {
		t.Fatal(err)
	}
	replay := worker(func(int64, string) {})
	replay.part = NewPartitionResumed(stream, 0, 1, res)
	for _, m := range events[from.off:] {
		if err := replay.record(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if len(replay.pendingPartials) == 0 {
		t.Fatal("the replay emitted nothing")
	}
	if err := replay.flush(ctx); err != nil {
		t.Fatal(err)
	}
	byWindow := map[int64]map[int32][]byte{}
	repeated := 0
	if err := conn.ReadAll(ctx, "partials", func(m kafka.Message) error {
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			return err
		}
		if byWindow[p.WindowStart] == nil {
			byWindow[p.WindowStart] = map[int32][]byte{}
		}
		if prev, ok := byWindow[p.WindowStart][p.Chunk]; ok && string(prev) != string(m.Value) {
			t.Errorf("window %d chunk %d: a replayed copy differs", p.WindowStart, p.Chunk)
		} else if ok {
			repeated++
		}
		byWindow[p.WindowStart][p.Chunk] = m.Value
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if repeated < 2 {
		t.Errorf("the replay repeated %d chunks, want a window's", repeated)
	}
}

// w0 is the watermark a commit's metadata carries.
func w0(md string) int64 {
	r, err := DecodeResume(md)
	if err != nil {
		return 0
	}
	return r.Closed
}

func keysOf(m map[int64][]byte) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestFlushStopsAtFailedChunks: flush writes a partial's chunks in a write
// of their own, between what precedes and what follows them, and stops at
// the first failed write: when a chunk cannot be written, no later window's
// partial reaches the partials topic (the release stage would take it as
// the partition moving past the incomplete window), and nothing is
// committed.
func TestFlushStopsAtFailedChunks(t *testing.T) {
	stream := &Stream{Name: "s", Size: 1000, Grace: 200, IdleTimeout: time.Second, MaxEvents: 1000,
		Releases: []Release{{Name: "k", Stat: keyedStat{at: 0}}}}
	small := func(w int64) schema.Partial {
		return schema.Partial{Stream: "s", WindowStart: w * 1000, WindowEnd: (w + 1) * 1000, Partitions: 1, FirstOffset: -1, LastOffset: -1,
			Stats: []schema.ReleaseStats{{Release: "k"}}}
	}
	big := small(1)
	for i := range 200 {
		big.Stats[0].Groups = append(big.Stats[0].Groups, schema.GroupStats{Key: fmt.Sprintf("key-%04d", i), Units: 1, Count: 1})
	}
	var writes [][]schema.Partial
	fail := true
	st := &Stage{cfg: Config{Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler)}, partialBytes: 1000,
		writePartialsHook: func(_ context.Context, msgs ...kafka.Message) error {
			var ps []schema.Partial
			for _, m := range msgs {
				p, err := schema.DecodePartial(m.Value)
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
			writes = append(writes, ps)
			for _, p := range ps {
				if p.Chunks > 0 && fail {
					return errors.New("chunk refused")
				}
			}
			return nil
		}}
	committed := false
	w := &partitionWorker{s: st, in: &Input{Stream: stream}, log: st.cfg.Log, part: NewPartition(stream, 0, 1, NoWatermark),
		a: kafkaio.Assignment{Commit: func(context.Context, int64, string) error { committed = true; return nil }}}
	if err := w.emit([]schema.Partial{small(0), big, small(2)}); err != nil {
		t.Fatal(err)
	}
	if err := w.flush(context.Background()); err == nil {
		t.Fatal("flush of a refused chunk succeeded")
	}
	if len(writes) != 2 {
		t.Fatalf("%d writes, want 2: window 0's partial, then window 1's chunks (and nothing after the failure)", len(writes))
	}
	if len(writes[0]) != 1 || writes[0][0].WindowStart != 0 {
		t.Errorf("first write: %d partials", len(writes[0]))
	}
	for _, p := range writes[1] {
		if p.WindowStart != 1000 || p.Chunks < 2 {
			t.Errorf("the chunks' write also holds window %d (chunks %d)", p.WindowStart, p.Chunks)
		}
	}
	if committed {
		t.Error("committed after a failed flush")
	}
	// Tried again, the flush writes the three in three writes.
	fail, writes = false, nil
	if err := w.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(writes) != 3 || len(writes[2]) != 1 || writes[2][0].WindowStart != 2000 {
		t.Errorf("%d writes after the failure", len(writes))
	}
}
