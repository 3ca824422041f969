package release

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestReady: an instance is ready (/readyz 200) only once it is a member of
// the consumer group and every partials partition the group assigned it is
// rebuilt and releasing. Not before it joined, not while its assigned
// partitions wait for their takeover, not after a takeover that found the
// ledger lost, and not once a newer owner fenced it; a standby assigned
// nothing is ready.
func TestReady(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	notReady := func(s *Stage, what, want string) {
		t.Helper()
		err := s.Ready()
		if err == nil {
			t.Fatalf("%s: ready, want not ready", what)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %q does not say %q", what, err, want)
		}
	}
	ready := func(s *Stage, what string) {
		t.Helper()
		if err := s.Ready(); err != nil {
			t.Fatalf("%s: not ready: %v", what, err)
		}
	}
	partials := map[string][]int{rig.cfg.PartialsTopic: {0}}

	a := rig.stage(1)
	notReady(a, "before joining the group", "not yet a member of the consumer group g")
	a.generation(partials)
	notReady(a, "assigned partition 0, not yet taken over", "rebuilding the streams of partitions [0] of partials")
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	ready(a, "after the takeover")
	for w := int64(1); w <= 3; w++ {
		if err := a.releaseWindow(ctx, window(w, 2)); err != nil {
			t.Fatal(err)
		}
	}

	standby := rig.stage(3)
	standby.generation(map[string][]int{})
	ready(standby, "a standby assigned nothing")

	// B takes the partition over; A learns it at its next release.
	b := rig.stage(2)
	b.generation(partials)
	notReady(b, "B assigned partition 0 before its takeover", "rebuilding")
	if err := b.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	ready(b, "B after its takeover")
	if err := a.releaseWindow(ctx, window(4, 1)); !errors.Is(err, ErrFenced) {
		t.Fatalf("A's release after B took over: %v, want ErrFenced", err)
	}
	notReady(a, "A once fenced", "rebuilding the streams of partitions [0]")

	// A takeover that finds the ledger lost leaves the instance not ready.
	lost := rig.lostTail("s/n/2000")
	lost.generation(partials)
	if err := lost.takeOver(ctx); !errors.Is(err, ErrLedgerLost) {
		t.Fatalf("takeover on a truncated ledger: %v, want ErrLedgerLost", err)
	}
	notReady(lost, "after a takeover that found the ledger lost", "rebuilding")

	// A new generation that assigns A nothing makes it a ready standby;
	// one that assigns B nothing more, too.
	a.generation(map[string][]int{})
	ready(a, "A once the group assigned it nothing")
}
