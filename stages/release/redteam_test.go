package release

// Red-team tests of the fencing protocol and of the storage-loss witnesses
// (issue 11). Each one plays an interleaving that the failpoint tests do not
// reach and checks an invariant; each failed on the code it was written
// against (a false ErrLedgerLost when the witnesses were read after the
// marker; a stale budget state hiding a lost tail when the last state
// written won; a stall forever when a fenced owner waited only for a new
// generation).

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// hookHandler is a slog.Handler that runs fn once, synchronously, when a
// record with message msg is logged: it pauses the logging goroutine at that
// line and lets the test play what another process does meanwhile.
type hookHandler struct {
	msg  string
	fn   func()
	once *sync.Once
}

func (h hookHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h hookHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(h.fn)
	}
	return nil
}
func (h hookHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h hookHandler) WithGroup(string) slog.Handler      { return h }

// TestRedTeamTakeOverRaceFalseLedgerLost: instance C appends its marker and
// reads the ledger; before it reads the witnesses (releases topic, accountant
// topic) it is paused (GC, SIGSTOP, cut off from the coordinator) long enough
// for D to take over and release a window. C then finds on the releases topic
// (and on the accountant topic) releases its ledger read does not hold, and
// reports the ledger LOST, although the ledger is intact and C was merely
// fenced. The release process stops with ErrLedgerLost, and its message tells
// the operator to restore the ledger from a backup or tombstone the
// accountant state.
func TestRedTeamTakeOverRaceFalseLedgerLost(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := rig.stage(1), rig.stage(2)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(1, 3)); err != nil {
		t.Fatal(err)
	}
	// A void charge in the ledger (A, paused, resumes after B's takeover):
	// C's recover logs it right after its ledger read, which is where the
	// hook below pauses C.
	if err := b.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(2, 5)); !errors.Is(err, ErrFenced) {
		t.Fatalf("A after B's takeover: %v, want ErrFenced", err)
	}
	cfg := rig.cfg
	var once sync.Once
	played := false
	cfg.Log = slog.New(hookHandler{msg: "ledger holds void charges: appended by release instances after they lost ownership, never published, not counted", once: &once, fn: func() {
		// C is paused here, its ledger read done. D takes over and
		// releases window 3 (ledger, releases topic, accountant state).
		d := rig.stage(4)
		if err := d.takeOver(ctx); err != nil {
			t.Errorf("D's takeover: %v", err)
			return
		}
		if err := d.releaseWindow(ctx, window(3, 7)); err != nil {
			t.Errorf("D's release: %v", err)
			return
		}
		played = true
	}})
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.only().close()
	err = c.takeOver(ctx)
	if !played {
		t.Fatal("the interleaving was not played (the hook's log line was not reached)")
	}
	if errors.Is(err, ErrLedgerLost) {
		t.Fatalf("C, fenced by D while it read the topics, reports the intact ledger as lost: %v", err)
	}
	// C read the ledger before D's marker, so it may think it owns the
	// stage; it finds out at its first release, which it must not publish.
	if err == nil {
		err = c.releaseWindow(ctx, window(4, 1))
	}
	if !errors.Is(err, ErrFenced) {
		t.Errorf("C after D's takeover: %v, want ErrFenced (D's marker follows C's)", err)
	}
}

// TestRedTeamStaleStateHidesLoss: A, the owner, publishes window 1's last
// release and is paused at release/published, before its publishState (a
// step TestPausedOwner pauses at). B takes over and releases windows 2 and 3
// (state: 6 charges). A resumes and writes its stale state (2 charges),
// which lands last on the compacted accountant topic; A is fenced only at its
// next charge. Then the ledger and the releases topic lose their tails
// (window 3's charges): the accountant topic, the only witness left, now
// holds A's stale state and no longer witnesses the loss; the release stage
// starts normally and would spend window 3's budget again. Without A's
// stale write the same truncation is caught (ErrLedgerLost).
func TestRedTeamStaleStateHidesLoss(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := rig.stage(2)
	cfg := rig.cfg
	played := false
	cfg.Failpoint = func(step string, rec kafka.Message) {
		if step != FailpointPublished || string(rec.Key) != "s/h/1000" || played {
			return
		}
		played = true
		// A is paused here; B takes over and releases windows 2 and 3.
		if err := b.takeOver(ctx); err != nil {
			t.Errorf("B's takeover: %v", err)
			return
		}
		for w := int64(2); w <= 3; w++ {
			if err := b.releaseWindow(ctx, window(w, 2)); err != nil {
				t.Errorf("B's release of window %d: %v", w, err)
			}
		}
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.only().close()
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	// A resumes and finishes window 1: its publishState writes 2 charges
	// after B's 6.
	if err := a.releaseWindow(ctx, window(1, 2)); err != nil {
		t.Fatal(err)
	}
	if !played {
		t.Fatal("the interleaving was not played")
	}
	states := rig.read("accountant")
	last, err := schema.DecodeBudgetState(states[len(states)-1].Value)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the accountant topic's latest state counts %d charges; the ledger holds 6 valid ones", last.ReleasesCharged)
	s := rig.lostTail("s/n/3000")
	if err := s.takeOver(ctx); !errors.Is(err, ErrLedgerLost) {
		st, _ := s.only().rel.State("s", 0, time.Now())
		t.Fatalf("takeover on a ledger that lost window 3's charges: %v, want ErrLedgerLost (the rebuilt budget counts %d charges; 6 were made)", err, st.ReleasesCharged)
	}
}

// TestRedTeamGhostMarkerStallsOwner: B is the consumer group's only release
// member and owns the stage. A marker of another epoch lands in the ledger
// after B's: written by an instance that was paused in takeOver before its
// marker write (its membership expired meanwhile) and then exited, or a
// marker write of B's own earlier takeover attempt that timed out and landed
// late. No one else is in the group, so no rebalance ever comes: B is fenced
// at its next release and waits in fenced() for a generation end that never
// happens. No window is released again, ever.
func TestRedTeamGhostMarkerStallsOwner(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cfg := rig.cfg
	cfg.SessionTimeout = 3 * time.Second
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- s.Run(rctx) }()
	defer func() {
		rcancel()
		select {
		case <-runDone:
		case <-time.After(60 * time.Second):
			t.Error("the stage did not stop")
		}
	}()
	pw := rig.conn.NewWriter("partials")
	defer pw.Close()
	lw := rig.conn.NewWriter("ledger")
	defer lw.Close()
	produce := func(w int64) {
		t.Helper()
		v, err := schema.EncodePartial(part("s", w, 0, 1, 3))
		if err != nil {
			t.Fatal(err)
		}
		if err := pw.WriteMessages(ctx, kafka.Message{Key: []byte("s"), Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	released := func(id string) bool {
		for _, m := range rig.read("releases") {
			if string(m.Key) == id {
				return true
			}
		}
		return false
	}
	waitReleased := func(id string, d time.Duration) bool {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if released(id) {
				return true
			}
			time.Sleep(500 * time.Millisecond)
		}
		return false
	}
	produce(1)
	produce(2) // window 1 is complete once partition 0 reports window 2
	if !waitReleased("s/n/1000", 60*time.Second) {
		t.Fatal("window 1 was not released")
	}
	// The ghost: another epoch's marker after B's.
	m, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: "ghost", Owner: "a paused instance that then exited", At: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.WriteMessages(ctx, m); err != nil {
		t.Fatal(err)
	}
	produce(3)
	produce(4)
	// B is still the group's only member and holds the partials: it must
	// release windows 2 and 3 eventually (e.g. take over again after a
	// session timeout without a rebalance).
	if !waitReleased("s/n/3000", 45*time.Second) {
		t.Fatalf("45s after a stale marker, the group's only release member has released nothing more (fenced metric %v): the release stage is stalled until some rebalance",
			testutil.ToFloat64(s.cfg.Metrics.Fenced))
	}
}
