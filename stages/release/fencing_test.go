package release

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// stageRig is a release Stage's topics on an embedded broker, for tests that
// drive Stage methods directly, without a consumer group.
type stageRig struct {
	t    testing.TB
	conn *kafkaio.Connection
	cfg  Config
}

func newStageRig(t testing.TB) *stageRig {
	t.Helper()
	return newStageRigIn(t, "")
}

// newStageRigIn is newStageRig on an embedded broker keeping its data in
// dataDir, fsyncing every write before acknowledging it ("" keeps it in
// memory).
func newStageRigIn(t testing.TB, dataDir string) *stageRig {
	t.Helper()
	e, err := kafkaio.StartEmbedded("127.0.0.1:0", dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	conn := e.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{Conn: conn, GroupID: "g", PartialsTopic: "partials", ReleasesTopic: "releases", LedgerTopic: "ledger",
		AccountantTopic: "accountant", Streams: testPlan(t, 100), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	specs := []kafkaio.TopicSpec{{Name: "partials", Partitions: 1}, {Name: "releases", Partitions: 1},
		{Name: "ledger", Partitions: 1, Forever: true}, {Name: "accountant", Partitions: 1, Compact: true}}
	if err := conn.EnsureTopics(ctx, specs); err != nil {
		t.Fatal(err)
	}
	return &stageRig{t: t, conn: conn, cfg: cfg}
}

// stage returns a new release instance on the rig's topics, with noise
// from seed so that two instances answer differently.
func (r *stageRig) stage(seed uint64) *Stage {
	r.t.Helper()
	cfg := r.cfg
	cfg.Noise = noise.New(noise.SeededSource(seed))
	s, err := New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		s.closeAll()
	})
	return s
}

func (r *stageRig) read(topic string) []kafka.Message {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []kafka.Message
	if err := r.conn.ReadAll(ctx, topic, func(m kafka.Message) error { out = append(out, m); return nil }); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// TestFencing plays a paused owner: instance A owns the release stage and
// releases window 1; B takes over (as after A's session expired); A, still
// believing it owns the stage, decides window 2 with its own noise. A's
// charge is void: A must not publish it, B's rebuild must not count it, and
// B's own answer for window 2 is the only one published. Without the read
// back (confirm) A publishes its answer too, and the releases topic holds
// two different answers for one id.
func TestFencing(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := rig.stage(1), rig.stage(2)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(1, 3, 4)); err != nil {
		t.Fatal(err)
	}
	if err := b.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	err := a.releaseWindow(ctx, window(2, 5, 6))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("the old owner's release returned %v, want ErrFenced", err)
	}
	if err := b.releaseWindow(ctx, window(2, 5, 6)); err != nil {
		t.Fatal(err)
	}
	published := map[string][][]byte{}
	for _, m := range rig.read("releases") {
		published[string(m.Key)] = append(published[string(m.Key)], m.Value)
	}
	var book ledger.Book
	valid, void := map[string][]byte{}, 0
	for _, m := range rig.read("ledger") {
		e, err := book.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type != schema.LedgerTypeCharge {
			continue
		}
		if !e.Valid {
			void++
			continue
		}
		if _, dup := valid[e.Charge.ReleaseID]; dup {
			t.Errorf("release %s has two valid charges", e.Charge.ReleaseID)
		}
		valid[e.Charge.ReleaseID] = e.Charge.Payload
	}
	if void == 0 {
		t.Error("the old owner's charge is not in the ledger as a void charge")
	}
	if len(valid) != 4 {
		t.Errorf("%d valid charges, want 4 (2 releases × 2 windows)", len(valid))
	}
	for id, copies := range published {
		for _, c := range copies {
			if string(c) != string(valid[id]) {
				t.Errorf("release %s: a published copy differs from its valid charge", id)
			}
		}
	}
	for id := range valid {
		if len(published[id]) == 0 {
			t.Errorf("release %s is charged but not published", id)
		}
	}
	// A rebuild counts exactly the valid charges.
	c := rig.stage(3)
	if err := c.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := c.only().rel.State("s", 0, time.Now())
	if st.ReleasesCharged != 4 {
		t.Errorf("rebuilt budget counts %d charges, want the 4 valid ones", st.ReleasesCharged)
	}
}

// TestTakeOverFencedByLaterMarker: an instance whose marker is followed by
// another's before it has read the ledger does not take ownership.
func TestTakeOverFencedByLaterMarker(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := rig.stage(1)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	sa := a.only()
	sa.mu.Lock()
	epoch := sa.epoch
	sa.mu.Unlock()
	// Another instance appends its marker; A re-reads as if its own marker
	// had just been written.
	m, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: "other", Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	w := rig.conn.NewWriter("ledger")
	defer w.Close()
	if err := w.WriteMessages(ctx, m); err != nil {
		t.Fatal(err)
	}
	sa.mu.Lock()
	wit, err := sa.readWitnesses(ctx, nil)
	if err == nil {
		err = sa.recover(ctx, epoch, wit)
	}
	sa.mu.Unlock()
	if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "other") {
		t.Fatalf("recover after a newer marker: %v, want ErrFenced naming the newer epoch", err)
	}
}

// TestAccountantWitness: a ledger that lost its tail (the accountant topic's
// latest state records more charges than the ledger holds) stops the
// release stage with ErrLedgerLost naming both topics; a ledger that holds
// at least what the state records starts normally.
func TestAccountantWitness(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.stage(1)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	for w := int64(1); w <= 3; w++ {
		if err := a.releaseWindow(ctx, window(w, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rig.stage(2).takeOver(ctx); err != nil {
		t.Fatalf("an intact ledger: %v", err)
	}
	s := rig.lostTail("s/n/2000")
	err := s.takeOver(ctx)
	if !errors.Is(err, ErrLedgerLost) {
		t.Fatalf("takeover on a truncated ledger: %v, want ErrLedgerLost", err)
	}
	for _, want := range []string{"accountant", "ledger2", "restore the ledger"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// lostTail plays a broker that lost the ledger's and the releases topic's
// tails, from the charge and the release of id on: it copies what such a
// broker might have kept into fresh topics ("ledger2", "releases2") and
// returns a release stage on them.
func (r *stageRig) lostTail(id string) *Stage {
	r.t.Helper()
	ledgerMsgs, releases := r.read("ledger"), r.read("releases")
	keepLedger, keepReleases := -1, -1
	for i, m := range ledgerMsgs {
		if string(m.Key) == "s" && strings.Contains(string(m.Value), id) {
			keepLedger = i // up to and without id's charge
			break
		}
	}
	for i, m := range releases {
		if string(m.Key) == id {
			keepReleases = i
			break
		}
	}
	if keepLedger < 0 || keepReleases < 0 {
		r.t.Fatalf("%s's charge is not in the topics", id)
	}
	copyTopic(r.t, r, "ledger2", ledgerMsgs[:keepLedger], true)
	copyTopic(r.t, r, "releases2", releases[:keepReleases], false)
	lost := r.cfg
	lost.LedgerTopic, lost.ReleasesTopic = "ledger2", "releases2"
	s, err := New(lost)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(s.closeAll)
	return s
}

// copyTopic creates topic holding msgs (keys, values and headers) in order.
func copyTopic(t testing.TB, rig *stageRig, topic string, msgs []kafka.Message, forever bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rig.conn.EnsureTopics(ctx, []kafkaio.TopicSpec{{Name: topic, Partitions: 1, Forever: forever}}); err != nil {
		t.Fatal(err)
	}
	w := rig.conn.NewWriter(topic)
	defer w.Close()
	for _, m := range msgs {
		if err := w.WriteMessages(ctx, kafka.Message{Key: m.Key, Value: m.Value, Headers: m.Headers}); err != nil {
			t.Fatal(err)
		}
	}
}
