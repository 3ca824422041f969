package release

// Releases too large for one Kafka record, through the release stage: a
// test-only kind releases one value per key of its partials' groups, so that
// a window with enough keys is published in chunks, ledger first (package
// internal/ledger, "Releases in chunks").

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// keysKind is a test-only release kind: for each key of its partials'
// groups (schema.GroupStats) the count of events with discrete Laplace
// noise of scale L/ε, one key per value of Keys, with a per-key 95%
// interval and one quantile list per key (the noisy count, at one shared
// rank), so that every array SplitRelease divides is present. Only the
// record layout matters here; its privacy is not the subject (a real
// per-key kind needs partition selection or public keys).
type keysKind struct{}

func init() { kind.Register(keysKind{}) }

func (keysKind) Name() string { return "chunktest_keys" }
func (keysKind) Doc() string  { return "Test only: a noisy count per key of the partials' groups." }
func (keysKind) Fields() []config.Field {
	return []config.Field{{Key: "field", Type: "field name", Default: "required", Doc: "the key field"}}
}

type keysConfig struct{ field string }

func (keysKind) Decode(p *config.Params, r *config.Release) {
	c := &keysConfig{}
	r.Params = c
	if v, line, ok := p.String("field"); ok {
		c.field = v
		p.Aggregate(v, line, p.Path("field"))
	}
}

func (keysKind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	l := float64(st.Contribution.MaxEventsPerWindow)
	return &keysPlan{comp: noise.Component{Purpose: "count", Noise: noise.DiscreteLaplace, Sensitivity: l, Scale: l / r.Epsilon,
		Quantum: 1, Granularity: 1, Epsilon: r.Epsilon}}, nil
}

type keysPlan struct{ comp noise.Component }

func (p *keysPlan) Components() []noise.Component { return []noise.Component{p.comp} }
func (p *keysPlan) Charges() []kind.Charge        { return kind.ComponentCharges(p.Components()) }
func (p *keysPlan) Describe() string              { return "test keys" }
func (p *keysPlan) Accuracy() string              { return "" }
func (p *keysPlan) Notes() []string               { return nil }
func (p *keysPlan) Widest(*schema.Release)        {}
func (p *keysPlan) Fields() []kind.Field          { return nil }
func (p *keysPlan) Norms() kind.Norms             { return kind.Norms{Head: 1} }
func (p *keysPlan) Statistic([]int) (kind.Statistic, error) {
	return nil, errors.New("chunktest_keys has no statistic: its partials are built by the tests")
}
func (p *keysPlan) PDP() ([]kind.PDPComponent, error) {
	return []kind.PDPComponent{kind.PDPComponentOf(p.comp)}, nil
}

func (p *keysPlan) Merge(parts []kind.Part) (kind.Merged, error) {
	counts := map[string]int64{}
	for _, pt := range parts {
		for _, g := range pt.Stats.Groups {
			counts[g.Key] += g.Count
		}
	}
	return counts, nil
}

func (p *keysPlan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	counts := m.(map[string]int64)
	for k := range counts {
		rel.Keys = append(rel.Keys, k)
	}
	sort.Strings(rel.Keys)
	rel.Ranks = []float64{0.5}
	for _, k := range rel.Keys {
		v, err := noise.AddToCount(sampler, p.comp, counts[k])
		if err != nil {
			return nil, err
		}
		rel.Values = append(rel.Values, v)
		rel.Intervals95 = append(rel.Intervals95, 3*p.comp.Scale)
		rel.Quantiles = append(rel.Quantiles, []float64{v})
	}
	return nil, nil
}

// keysPlanStreams is stream "s" with the one release "k" of kind
// chunktest_keys.
func keysPlanStreams(t *testing.T) []plan.Stream {
	t.Helper()
	cfg, err := config.Parse([]byte(`streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 100, delta: 1e-6}
    releases:
      - {name: k, kind: chunktest_keys, field: zone, epsilon: 1}
`), "chunks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// keysWindow is window w of stream s with one partition's partial holding
// n keys.
func keysWindow(w int64, n int) Window {
	p := schema.Partial{Stream: "s", WindowStart: w * win, WindowEnd: (w + 1) * win, Partitions: 1, FirstOffset: -1, LastOffset: -1,
		Stats: []schema.ReleaseStats{{Release: "k", Count: int64(n)}}}
	for i := range n {
		p.Stats[0].Groups = append(p.Stats[0].Groups, schema.GroupStats{Key: fmt.Sprintf("zone-%05d", i), Units: 1, Count: int64(1 + i%7)})
	}
	return Window{Stream: "s", Start: w * win, End: (w + 1) * win, Parts: []schema.Partial{p}}
}

const (
	// chunkRecordBytes is the ledger record limit of the chunk tests, in
	// place of plan.MaxRecordBytes: a window of chunkKeys keys then needs
	// several chunks.
	chunkRecordBytes = 6000
	chunkKeys        = 400
)

// newChunkRig is newStageRig with the chunktest_keys plan.
func newChunkRig(t *testing.T) *stageRig {
	t.Helper()
	rig := newStageRig(t)
	rig.cfg.Streams = keysPlanStreams(t)
	return rig
}

// chunkStage is a release instance of the rig whose ledger records are at
// most chunkRecordBytes, with noise from seed and the given failpoint.
func (r *stageRig) chunkStage(seed uint64, fp func(string, kafka.Message)) *Stage {
	r.t.Helper()
	cfg := r.cfg
	cfg.Failpoint = fp
	cfg.Noise = noise.New(noise.SeededSource(seed))
	s, err := New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	s.only().rel.recordBytes = chunkRecordBytes
	r.t.Cleanup(func() {
		s.closeAll()
	})
	return s
}

// crashAt returns a failpoint that ends the calling goroutine (a crash of
// the instance, as far as the topics go) at step, for release id.
func crashAt(step, id string) func(string, kafka.Message) {
	return func(s string, rec kafka.Message) {
		if s == step && string(rec.Key) == id {
			runtime.Goexit()
		}
	}
}

// releaseCrashing runs s.releaseWindow(w) in its own goroutine, which a
// crashAt failpoint may end, and returns its error (nil after a crash) and
// whether it crashed.
func releaseCrashing(ctx context.Context, s *Stage, w Window) (err error, crashed bool) {
	done := make(chan struct{})
	crashed = true
	go func() {
		defer close(done)
		err = s.releaseWindow(ctx, w)
		crashed = false
	}()
	<-done
	return err, crashed
}

// chunkTopics is what the chunk tests check on the topics.
type chunkTopics struct {
	// published holds each release id's records on the releases topic:
	// chunk index to every copy's bytes.
	published map[string]map[int32][][]byte
	// valid holds each valid charge's attempt (chunk 0 first), and
	// unmatched the payloads of chunk records of no valid charge.
	valid     map[string][][]byte
	unmatched [][]byte
	charges   int
	maxRecord int
}

func (r *stageRig) chunkTopics() chunkTopics {
	r.t.Helper()
	ct := chunkTopics{published: map[string]map[int32][][]byte{}, valid: map[string][][]byte{}}
	for _, m := range r.read("releases") {
		rel, err := schema.DecodeRelease(m.Value)
		if err != nil {
			r.t.Fatal(err)
		}
		c, n, ok := chunkOf(m)
		if rel.Chunk != c || (ok && rel.Chunks != n) || (!ok && rel.Chunks != 0) {
			r.t.Errorf("release %s: header chunk %d/%d (%v), value chunk %d/%d", m.Key, c, n, ok, rel.Chunk, rel.Chunks)
		}
		id := string(m.Key)
		if ct.published[id] == nil {
			ct.published[id] = map[int32][][]byte{}
		}
		ct.published[id][c] = append(ct.published[id][c], m.Value)
	}
	var book ledger.Book
	var chunkRecs [][]byte
	for _, m := range r.read("ledger") {
		ct.maxRecord = max(ct.maxRecord, len(m.Value))
		e, err := book.Apply(m)
		if err != nil {
			r.t.Fatal(err)
		}
		switch {
		case e.Type == schema.LedgerTypeChunk:
			chunkRecs = append(chunkRecs, e.Chunk.Payload)
		case e.Type == schema.LedgerTypeCharge && e.Valid && !e.Identical:
			ct.charges++
			ct.valid[e.Charge.ReleaseID] = append([][]byte{e.Charge.Payload}, e.Chunks...)
		}
	}
	for _, c := range chunkRecs {
		found := false
		for _, att := range ct.valid {
			for _, v := range att {
				found = found || bytes.Equal(v, c)
			}
		}
		if !found {
			ct.unmatched = append(ct.unmatched, c)
		}
	}
	return ct
}

// check verifies the invariants of releases in chunks on the topics: every
// valid charge's release is published whole (every chunk, each copy
// byte-identical to its ledger record, so one answer per release id, which
// joins to a release of keys keys); nothing else is published; no chunk
// record of another attempt reaches the releases topic; every ledger record
// fits the limit.
func (ct chunkTopics) check(t *testing.T, keys int) {
	t.Helper()
	if ct.maxRecord > chunkRecordBytes {
		t.Errorf("a ledger record of %d bytes, over the limit of %d", ct.maxRecord, chunkRecordBytes)
	}
	for id := range ct.published {
		if _, ok := ct.valid[id]; !ok {
			t.Errorf("release %s is published without a valid charge", id)
		}
	}
	for id, att := range ct.valid {
		if len(att) < 2 {
			t.Errorf("release %s: charged in %d record, want chunks", id, len(att))
		}
		pub := ct.published[id]
		if len(pub) != len(att) {
			t.Errorf("release %s: %d chunks published, the ledger holds %d", id, len(pub), len(att))
		}
		var chunks []schema.Release
		for i, want := range att {
			copies := pub[int32(i)]
			if len(copies) == 0 {
				t.Errorf("release %s: chunk %d is not published", id, i)
				continue
			}
			for _, c := range copies {
				if !bytes.Equal(c, want) {
					t.Errorf("release %s: a published copy of chunk %d differs from its ledger record", id, i)
				}
			}
			rel, err := schema.DecodeRelease(copies[0])
			if err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, rel)
		}
		if len(chunks) == len(att) {
			joined, err := schema.JoinRelease(chunks)
			if err != nil {
				t.Errorf("release %s: the published chunks do not join: %v", id, err)
			} else if len(joined.Keys) != keys || len(joined.Values) != keys || len(joined.Quantiles) != keys {
				t.Errorf("release %s: joined %d keys, want %d", id, len(joined.Keys), keys)
			}
		}
	}
	for _, u := range ct.unmatched {
		for id, pub := range ct.published {
			for _, copies := range pub {
				for _, c := range copies {
					if bytes.Equal(c, u) {
						t.Errorf("release %s: a chunk of an attempt that was not charged is published", id)
					}
				}
			}
		}
	}
}

// TestChunkedRelease: a release too large for one ledger record is charged
// once, with its chunks in the ledger before the charge, and published as
// its chunks byte for byte; every ledger record fits; the budget counts one
// charge; a new owner's recovery republishes nothing; a window that fits
// stays one record.
func TestChunkedRelease(t *testing.T) {
	rig := newChunkRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.chunkStage(1, nil)
	var onRelease []schema.Release
	a.cfg.OnRelease = func(r schema.Release) { onRelease = append(onRelease, r) }
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, keysWindow(1, chunkKeys)); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, keysWindow(2, 3)); err != nil {
		t.Fatal(err)
	}
	ct := rig.chunkTopics()
	small := ct.valid["s/k/2000"]
	delete(ct.valid, "s/k/2000")
	if len(small) != 1 || len(ct.published["s/k/2000"]) != 1 || !bytes.Equal(ct.published["s/k/2000"][0][0], small[0]) {
		t.Errorf("a release that fits: %d ledger records, %d published", len(small), len(ct.published["s/k/2000"]))
	}
	delete(ct.published, "s/k/2000")
	ct.check(t, chunkKeys)
	if n := len(ct.valid["s/k/1000"]); n < 3 {
		t.Errorf("%d chunks, want at least 3 for the test to mean something", n)
	}
	if len(onRelease) != 2 || len(onRelease[0].Keys) != chunkKeys || onRelease[0].Chunks != 0 {
		t.Errorf("OnRelease got %d releases (want the whole release, not its chunks)", len(onRelease))
	}
	before := len(rig.read("releases"))
	b := rig.chunkStage(2, nil)
	if err := b.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if after := len(rig.read("releases")); after != before {
		t.Errorf("a recovery with nothing missing published %d records", after-before)
	}
	if st, _ := b.only().rel.State("s", 0, time.Now()); st.ReleasesCharged != 2 {
		t.Errorf("rebuilt budget counts %d charges, want 2", st.ReleasesCharged)
	}
}

// TestChunkedReleaseCrash kills the owner at each step of the protocol for
// a release in chunks, and lets a new owner (other noise) recover and
// release the window: the releases topic then holds exactly one attempt's
// chunks, the charged one's, byte-identical to the ledger, whatever was
// published before the crash; an attempt that crashed before its charge is
// never published; the budget counts one charge. "a part published" plays a
// crash in the middle of the publish (some chunks reached the topic).
func TestChunkedReleaseCrash(t *testing.T) {
	const id = "s/k/1000"
	for _, tc := range []struct {
		step string
		// part publishes, after the crash, these chunks of the charged
		// attempt (read from the ledger), as a crash mid-publish leaves.
		part []int
		// charged: the crashed owner's attempt is the one charged.
		charged bool
	}{
		{step: FailpointBeforeLedger},
		{step: FailpointChunksAppended},
		{step: FailpointLedgerAppended, charged: true},
		{step: FailpointConfirmed, charged: true},
		{step: FailpointConfirmed, part: []int{0, 2}, charged: true},
		{step: FailpointConfirmed, part: []int{1}, charged: true},
		{step: FailpointPublished, charged: true},
	} {
		name := tc.step
		if tc.part != nil {
			name += fmt.Sprintf(" with chunks %v published", tc.part)
		}
		t.Run(name, func(t *testing.T) {
			rig := newChunkRig(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := rig.chunkStage(1, crashAt(tc.step, id))
			if err := a.takeOver(ctx); err != nil {
				t.Fatal(err)
			}
			if err, crashed := releaseCrashing(ctx, a, keysWindow(1, chunkKeys)); !crashed {
				t.Fatalf("the owner did not reach %s: %v", tc.step, err)
			}
			crashedAttempt := rig.chunkTopics()
			if tc.part != nil {
				att := crashedAttempt.valid[id]
				var msgs []kafka.Message
				for _, i := range tc.part {
					msgs = append(msgs, publication(id, att[i], i, len(att)))
				}
				copyTopicAppend(t, rig, "releases", msgs)
			}
			b := rig.chunkStage(2, nil)
			if err := b.takeOver(ctx); err != nil {
				t.Fatal(err)
			}
			if err := b.releaseWindow(ctx, keysWindow(1, chunkKeys)); err != nil {
				t.Fatal(err)
			}
			ct := rig.chunkTopics()
			ct.check(t, chunkKeys)
			if ct.charges != 1 {
				t.Errorf("%d valid charges, want 1", ct.charges)
			}
			if tc.charged && !bytes.Equal(ct.valid[id][0], crashedAttempt.valid[id][0]) {
				t.Error("the new owner's answer replaced the charged one")
			}
			if tc.step == FailpointChunksAppended && len(ct.unmatched) == 0 {
				t.Error("the crashed attempt's chunk records are not in the ledger (the test does not test what it says)")
			}
			if st, _ := rig.chunkStage(3, nil).recoverState(ctx, t); st.ReleasesCharged != 1 {
				t.Errorf("rebuilt budget counts %d charges, want 1", st.ReleasesCharged)
			}
		})
	}
}

// recoverState takes over and returns stream s's budget state.
func (s *Stage) recoverState(ctx context.Context, t *testing.T) (schema.BudgetState, bool) {
	t.Helper()
	if err := s.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	return s.only().rel.State("s", 0, time.Now())
}

// copyTopicAppend appends msgs to an existing topic.
func copyTopicAppend(t *testing.T, rig *stageRig, topic string, msgs []kafka.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := rig.conn.NewWriter(topic)
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestChunkedFencing plays a paused owner on a release in chunks, at three
// places: A is fenced before its release (all of A's records follow B's
// marker), between its chunk records and its charge (B's marker between
// them), and after its read-back, just before its publish (its charge is
// valid: B republishes it, and A's late publish is a byte-identical copy).
// In every case the releases topic holds one answer per release id, the
// charged attempt's chunks, and none of a void attempt's chunks.
func TestChunkedFencing(t *testing.T) {
	const id = "s/k/2000"
	for _, tc := range []struct {
		name string
		// pauseAt is the step of A's release at which B takes over ("":
		// before A's release).
		pauseAt string
		// fenced: A's release must fail with ErrFenced.
		fenced bool
	}{
		{name: "before the release", fenced: true},
		{name: "between the chunks and the charge", pauseAt: FailpointChunksAppended, fenced: true},
		{name: "between the read-back and the publish", pauseAt: FailpointConfirmed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newChunkRig(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			b := rig.chunkStage(2, nil)
			played := false
			a := rig.chunkStage(1, func(step string, rec kafka.Message) {
				if step != tc.pauseAt || string(rec.Key) != id || played {
					return
				}
				played = true
				if err := b.takeOver(ctx); err != nil {
					t.Errorf("B's takeover: %v", err)
				}
			})
			if err := a.takeOver(ctx); err != nil {
				t.Fatal(err)
			}
			if err := a.releaseWindow(ctx, keysWindow(1, chunkKeys)); err != nil {
				t.Fatal(err)
			}
			if tc.pauseAt == "" {
				if err := b.takeOver(ctx); err != nil {
					t.Fatal(err)
				}
				played = true
			}
			err := a.releaseWindow(ctx, keysWindow(2, chunkKeys))
			if !played {
				t.Fatalf("B did not take over at %s", tc.pauseAt)
			}
			if tc.fenced != errors.Is(err, ErrFenced) {
				t.Fatalf("A's release after B's takeover: %v (want ErrFenced: %v)", err, tc.fenced)
			}
			if !tc.fenced && err != nil {
				t.Fatal(err)
			}
			if err := b.releaseWindow(ctx, keysWindow(2, chunkKeys)); err != nil {
				t.Fatal(err)
			}
			ct := rig.chunkTopics()
			ct.check(t, chunkKeys)
			if ct.charges != 2 {
				t.Errorf("%d valid charges, want 2 (one per window)", ct.charges)
			}
			if tc.fenced && len(ct.unmatched) == 0 {
				t.Error("A's void attempt left no chunk records in the ledger (the test does not test what it says)")
			}
			if st, _ := rig.chunkStage(3, nil).recoverState(ctx, t); st.ReleasesCharged != 2 {
				t.Errorf("rebuilt budget counts %d charges, want 2", st.ReleasesCharged)
			}
		})
	}
}

// TestChunkedReleaseUnpublishable: a valid charge whose payload is chunk 0
// of a release in chunks, with no chunk records in the ledger (a ledger not
// written by this protocol), is counted against the budget but never
// published, chunk 0 alone least of all.
func TestChunkedReleaseUnpublishable(t *testing.T) {
	rig := newChunkRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.chunkStage(1, crashAt(FailpointLedgerAppended, "s/k/1000"))
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if _, crashed := releaseCrashing(ctx, a, keysWindow(1, chunkKeys)); !crashed {
		t.Fatal("no crash")
	}
	var kept []kafka.Message
	for _, m := range rig.read("ledger") {
		if ledgerType(m) != schema.LedgerTypeChunk {
			kept = append(kept, m)
		}
	}
	copyTopic(t, rig, "ledger2", kept, true)
	cfg := rig.cfg
	cfg.LedgerTopic = "ledger2"
	var logs bytes.Buffer
	cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.only().close()
	st, _ := s.recoverState(ctx, t)
	if st.ReleasesCharged != 1 {
		t.Errorf("%d charges counted, want 1", st.ReleasesCharged)
	}
	if n := len(rig.read("releases")); n != 0 {
		t.Errorf("%d records published from a charge whose chunks are missing", n)
	}
	if !strings.Contains(logs.String(), "lacks its chunks") {
		t.Errorf("no error logged:\n%s", logs.String())
	}
}

func ledgerType(m kafka.Message) string {
	for _, h := range m.Headers {
		if h.Key == schema.LedgerTypeHeader {
			return string(h.Value)
		}
	}
	return ""
}
