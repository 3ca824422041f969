package release

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// checkpointNow checkpoints the stage's partition-0 shard at once.
func (s *Stage) checkpointNow(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := s.only().maybeCheckpoint(ctx, true); err != nil {
		t.Fatal(err)
	}
}

// owner returns a stage (seeded seed) that has taken over the rig's
// partition.
func (r *stageRig) owner(ctx context.Context, seed uint64) *Stage {
	r.t.Helper()
	s := r.stage(seed)
	if err := s.takeOver(ctx); err != nil {
		r.t.Fatal(err)
	}
	return s
}

// logStart is the ledger partition's log start offset.
func (r *stageRig) logStart(topic string) int64 {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	starts, err := r.conn.StartOffsets(ctx, topic)
	if err != nil {
		r.t.Fatal(err)
	}
	return starts[0]
}

// TestCheckpointTrimsAndRestores: an owner releases windows, checkpoints
// and trims its ledger partition to the checkpoint; the records before it
// are gone, and a new owner rebuilds from the checkpoint and the records
// after it alone: the same budget state, no window decided again, the
// next window released once, and the old owner fenced.
func TestCheckpointTrimsAndRestores(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.owner(ctx, 1)
	for w := int64(1); w <= 3; w++ {
		if err := a.releaseWindow(ctx, window(w, 2, 1)); err != nil {
			t.Fatal(err)
		}
	}
	before := len(rig.read("ledger"))
	a.checkpointNow(t, ctx)
	start := rig.logStart("ledger")
	if start < int64(before) {
		t.Fatalf("log start %d after the checkpoint, want at least %d (the records before it deleted)", start, before)
	}
	msgs := rig.read("ledger")
	if typ := headerOf(msgs[0], schema.LedgerTypeHeader); typ != schema.LedgerTypeCheckpoint {
		t.Fatalf("the trimmed ledger starts with a %q record, want the checkpoint", typ)
	}
	// One more window after the checkpoint.
	if err := a.releaseWindow(ctx, window(4, 1)); err != nil {
		t.Fatal(err)
	}
	want, _ := a.only().rel.State("s", 0, time.UnixMilli(0))

	b := rig.stage(2)
	if err := b.takeOver(ctx); err != nil {
		t.Fatalf("takeover from the checkpoint: %v", err)
	}
	got, _ := b.only().rel.State("s", 0, time.UnixMilli(0))
	if jsonOf(t, got) != jsonOf(t, want) {
		t.Errorf("state rebuilt from the checkpoint\n%s\nwant\n%s", jsonOf(t, got), jsonOf(t, want))
	}
	for w := int64(1); w <= 4; w++ {
		if err := b.releaseWindow(ctx, window(w, 9)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.releaseWindow(ctx, window(5, 1)); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(6, 1)); !errors.Is(err, ErrFenced) {
		t.Errorf("the old owner's release after the takeover: %v, want ErrFenced", err)
	}
	count := map[string]int{}
	for _, m := range rig.read("releases") {
		count[string(m.Key)]++
	}
	for w := int64(1); w <= 5; w++ {
		for _, rel := range []string{"n", "h"} {
			id := "s/" + rel + "/" + itoa(w*win)
			if count[id] != 1 {
				t.Errorf("%s published %d times, want once", id, count[id])
			}
		}
	}
	if n := count["s/n/"+itoa(6*win)]; n != 0 {
		t.Errorf("the fenced owner's window 6 was published %d times", n)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// headerOf returns the value of a record header ("" if absent).
func headerOf(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestCheckpointLost: a ledger whose records were deleted past its
// checkpoint (an operator's DeleteRecords, a retention that was not
// disabled) cannot be rebuilt, and the takeover says so (ErrLedgerLost,
// naming the ledger) rather than start the budget over.
func TestCheckpointLost(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.owner(ctx, 1)
	for w := int64(1); w <= 2; w++ {
		if err := a.releaseWindow(ctx, window(w, 2)); err != nil {
			t.Fatal(err)
		}
	}
	a.checkpointNow(t, ctx)
	if err := a.releaseWindow(ctx, window(3, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := rig.conn.DeleteRecords(ctx, "ledger", 0, rig.logStart("ledger")+1); err != nil {
		t.Fatal(err)
	}
	err := rig.stage(2).takeOver(ctx)
	if !errors.Is(err, ErrLedgerLost) || !errors.Is(err, ledger.ErrNoCheckpoint) {
		t.Fatalf("takeover of a ledger trimmed past its checkpoint: %v, want ErrLedgerLost (ErrNoCheckpoint)", err)
	}
	if !strings.Contains(err.Error(), "ledger") || !strings.Contains(err.Error(), "restore") {
		t.Errorf("error %q does not say what to restore", err)
	}
}

// TestCheckpointRolledBack: the ledger restored from an older copy (an
// earlier checkpoint and fewer records after it than the owner had
// written) while the other topics kept what came after: the takeover
// refuses (ErrLedgerLost) instead of spending again what the lost records
// spent — caught by the releases topic (releases after the old
// checkpoint without a charge) or, when the releases topic was rolled back
// with the ledger, by the accountant topic's newer state.
func TestCheckpointRolledBack(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.owner(ctx, 1)
	if err := a.releaseWindow(ctx, window(1, 2)); err != nil {
		t.Fatal(err)
	}
	a.checkpointNow(t, ctx)
	oldLedger, oldReleases := rig.read("ledger"), rig.read("releases") // the backup
	for w := int64(2); w <= 4; w++ {
		if err := a.releaseWindow(ctx, window(w, 2)); err != nil {
			t.Fatal(err)
		}
	}
	a.checkpointNow(t, ctx)
	copyTopic(t, rig, "ledger2", oldLedger, true)
	copyTopic(t, rig, "releases2", oldReleases, false)
	for _, tc := range []struct {
		name, releases, names string
	}{
		{"ledger rolled back", "releases", "releases"},
		{"ledger and releases rolled back", "releases2", "accountant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restored := rig.cfg
			restored.LedgerTopic, restored.ReleasesTopic = "ledger2", tc.releases
			s, err := New(restored)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.closeAll)
			err = s.takeOver(ctx)
			if !errors.Is(err, ErrLedgerLost) {
				t.Fatalf("takeover of a rolled-back ledger: %v, want ErrLedgerLost", err)
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("error %q does not name the %s topic", err, tc.names)
			}
		})
	}
}

// TestFencedPastTrim: an owner whose ledger tail is behind a newer owner's
// marker, which the newer owner then trims past (its checkpoint), must
// still find itself fenced. Kafka moves a reader whose position was
// deleted to the log start without a word, so the old owner's read-back
// would otherwise start at the newer owner's checkpoint, never meet the
// marker, and publish charges every rebuild counts void.
func TestFencedPastTrim(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.owner(ctx, 1)
	if err := a.releaseWindow(ctx, window(1, 2)); err != nil {
		t.Fatal(err)
	}
	b := rig.owner(ctx, 2)
	for w := int64(2); w <= 3; w++ {
		if err := b.releaseWindow(ctx, window(w, 1)); err != nil {
			t.Fatal(err)
		}
	}
	b.checkpointNow(t, ctx)
	sh := a.only()
	if start, tail := rig.logStart("ledger"), sh.book.Next(); start <= tail {
		t.Fatalf("test setup: the ledger starts at %d after the newer owner's trim, not past the old owner's tail at %d", start, tail)
	}
	// The old owner was paused all along: its tail has fetched nothing
	// since its own read-back (a running reader may have fetched the
	// marker ahead, which is what a pause prevents).
	_ = sh.tail.Close()
	tail, err := rig.conn.NewPartitionReader("ledger", 0, sh.book.Next())
	if err != nil {
		t.Fatal(err)
	}
	sh.tail = tail
	if err := a.releaseWindow(ctx, window(4, 5)); !errors.Is(err, ErrFenced) {
		t.Errorf("the old owner's release after a newer owner trimmed past its tail: %v, want ErrFenced", err)
	}
	for _, m := range rig.read("releases") {
		if id := string(m.Key); strings.HasSuffix(id, "/"+itoa(4*win)) {
			t.Errorf("the fenced owner published %s", id)
		}
	}
}
