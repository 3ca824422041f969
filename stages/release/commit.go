package release

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// This file is the group commit: every release of a group of windows (all
// the windows that came due together, of all the shard's streams) is
// decided, appended to the ledger in one write, read back in one read and
// published in one write. Fencing is per record, as for one release
// (package internal/ledger): a record counts only if no marker of another
// epoch comes before it, and nothing of the group is published unless
// every one of its charges is read back valid.

// maxGroup bounds the releases one group commit appends: a longer backlog
// is committed in several groups.
const maxGroup = 4096

// releaseWindows releases every configured release of the complete
// windows ws that the ledger does not hold yet: the Releaser decides them,
// and they are appended to the ledger, acknowledged, read back, and only
// then published, a group at a time.
func (sh *shard) releaseWindows(ctx context.Context, ws []Window) error {
	for len(ws) > 0 {
		n, releases := 0, 0
		for n < len(ws) && (n == 0 || releases+len(sh.streams[ws[n].Stream].Releases) <= maxGroup) {
			releases += len(sh.streams[ws[n].Stream].Releases)
			n++
		}
		if err := sh.releaseGroup(ctx, ws[:n]); err != nil {
			return err
		}
		ws = ws[n:]
	}
	return nil
}

// pending is one decided release of a group, with its records.
type pending struct {
	o      Outcome
	pubs   []kafka.Message
	digest [sha256.Size]byte
}

// releaseGroup commits one group of windows.
func (sh *shard) releaseGroup(ctx context.Context, ws []Window) (err error) {
	s := sh.s
	sh.mu.Lock()
	defer sh.mu.Unlock()
	defer func() {
		if err != nil {
			sh.ahead = true
		}
	}()
	// A group that has started releasing finishes (ledger, publish, state)
	// even when the stage is asked to stop, so a clean shutdown leaves no
	// release waiting for recovery; only a crash does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second+time.Duration(len(ws))*100*time.Millisecond)
	defer cancel()
	s.setReleasing(sh.p, ws[0].Stream+"/"+strconv.FormatInt(ws[0].Start, 10))
	defer s.setReleasing(sh.p, "")
	if sh.epoch == "" {
		return fmt.Errorf("%w: this instance does not own the streams of partition %d", ErrFenced, sh.p)
	}
	// Outcomes decided before a failure are charged: write them, then
	// fail. If a write fails, the Releaser is ahead of the ledger; the
	// handler fails, and every handler starts with a takeover, which
	// rebuilds the Releaser from the ledger, so unwritten outcomes (whose
	// noise was never published) are forgotten and decided again.
	var group []pending
	var decideErr error
	periods := map[string]int64{}
	firstSeen := map[string]time.Time{}
	now := s.cfg.Now()
	for _, w := range ws {
		outcomes, err := sh.rel.ReleaseWindow(w, now)
		if len(outcomes) > 0 {
			// The window's pdp records come before any ledger record of
			// it; nothing is charged until the ledger append.
			if perr := s.writePDP(ctx, sh.streams[w.Stream], w, outcomes); perr != nil {
				if len(group) == 0 {
					return perr
				}
				decideErr = perr
				break
			}
			s.failpoint(FailpointPDPWritten, kafka.Message{Key: []byte(w.Stream)})
		}
		for _, o := range outcomes {
			id := o.Release.ReleaseID
			p := pending{o: o, pubs: []kafka.Message{publication(id, o.Charge.Payload, 0, 1)}}
			if n := len(o.Chunks); n > 0 {
				p.pubs = make([]kafka.Message, n)
				for i, c := range o.Chunks {
					p.pubs[i] = publication(id, c, i, n)
				}
			}
			group = append(group, p)
			periods[w.Stream] = max(periods[w.Stream], sh.streams[w.Stream].Period(w.Start))
			if t, ok := firstSeen[w.Stream]; !ok || w.FirstSeen.Before(t) {
				firstSeen[w.Stream] = w.FirstSeen
			}
		}
		if err != nil {
			decideErr = err
			break
		}
	}
	if len(group) > 0 {
		if err := sh.commitGroup(ctx, group); err != nil {
			return err
		}
		for _, p := range group {
			s.cfg.Metrics.Releases.WithLabelValues(p.o.Release.Stream, p.o.Release.Release, p.o.Release.Status).Inc()
			if s.cfg.OnRelease != nil {
				s.cfg.OnRelease(p.o.Release)
			}
		}
		for stream, t := range firstSeen {
			s.cfg.Metrics.ReleaseLatency.WithLabelValues(stream).Observe(s.cfg.Now().Sub(t).Seconds())
		}
		if err := sh.publishStates(ctx, periods); err != nil {
			return err
		}
	}
	return decideErr
}

// commitGroup makes a group of decided releases durable and public: the
// chunk records of the releases in chunks in one write, then every charge
// in one write (the commit point), one read back of them all, and one
// write of every release to the releases topic. The caller holds mu and
// owns the partition.
func (sh *shard) commitGroup(ctx context.Context, group []pending) error {
	s := sh.s
	for _, p := range group {
		s.failpoint(FailpointBeforeLedger, p.pubs[0])
	}
	// Ledger first (invariant 1): the acknowledged ledger record is the
	// commit point; the releases topic is published from it, and only
	// once it is read back with no newer owner's marker before it
	// (invariant 8). A release in chunks has its chunks 1..n-1 in the
	// ledger before its charge, tied to it by their digest (package
	// internal/ledger, "Releases in chunks"): they are acknowledged, in a
	// write of their own, before any charge is sent.
	var chunkMsgs []kafka.Message
	for i := range group {
		p := &group[i]
		if len(p.o.Chunks) == 0 {
			continue
		}
		msgs, d, err := ledger.ChunkMessages(p.o.Release.Stream, p.o.Release.ReleaseID, sh.epoch, p.o.Chunks, p.o.Charge.At)
		if err != nil {
			return err
		}
		chunkMsgs, p.digest = append(chunkMsgs, msgs...), d
	}
	if len(chunkMsgs) > 0 {
		if err := sh.ledger.WriteMessages(ctx, chunkMsgs...); err != nil {
			return fmt.Errorf("append the chunks of %d releases to the ledger: %w (nothing was charged or published; the windows are retried after a restart)", len(chunkMsgs), err)
		}
		for _, p := range group {
			if len(p.o.Chunks) > 0 {
				s.failpoint(FailpointChunksAppended, p.pubs[0])
			}
		}
	}
	charges := make([]kafka.Message, len(group))
	for i, p := range group {
		charges[i] = ledger.ChargeMessage(p.o.Release.Stream, p.o.Ledger, sh.epoch)
	}
	if err := sh.ledger.WriteMessages(ctx, charges...); err != nil {
		return fmt.Errorf("append %d charges to the ledger: %w (nothing was published; the windows are retried after a restart)", len(charges), err)
	}
	sh.sinceCheckpoint += len(charges)
	for _, p := range group {
		s.failpoint(FailpointLedgerAppended, p.pubs[0])
	}
	want := make(map[string]confirmWant, len(group))
	for _, p := range group {
		want[p.o.Release.ReleaseID] = confirmWant{chunks: len(p.o.Chunks), digest: p.digest}
	}
	if err := sh.confirm(ctx, want); err != nil {
		return err
	}
	var pubs []kafka.Message
	for _, p := range group {
		s.failpoint(FailpointConfirmed, p.pubs[0])
		pubs = append(pubs, p.pubs...)
	}
	if err := s.releases.WriteMessages(ctx, pubs...); err != nil {
		return fmt.Errorf("publish %d releases: %w (they are in the ledger and will be republished at start)", len(group), err)
	}
	for _, p := range group {
		s.failpoint(FailpointPublished, p.pubs[0])
	}
	return nil
}

// confirmWant is what confirm expects of one charge: a release in chunks
// (chunks > 0) must come with the chunk records of digest.
type confirmWant struct {
	chunks int
	digest [sha256.Size]byte
}

// confirm reads the ledger partition on from where this instance last read
// it until every charge of want (by release id), which it has just
// appended under its epoch, is read back. It returns nil if no marker of
// another epoch came before any of them (each is valid: every rebuild
// counts it, so it may be published), and an ErrFenced error otherwise (a
// charge after the marker is void and must never be published; those
// before it are republished by the new owner, so nothing is published
// here). A release in chunks must also come with the chunk records it was
// appended with, as every rebuild will match them (ledger.Entry.Chunks):
// only then are the chunks it publishes those a recovery would republish.
// The caller holds mu and owns the partition.
func (sh *shard) confirm(ctx context.Context, want map[string]confirmWant) error {
	if sh.tail == nil || sh.epoch == "" {
		return fmt.Errorf("%w: this instance does not own the streams of partition %d", ErrFenced, sh.p)
	}
	for len(want) > 0 {
		e, err := sh.readTail(ctx)
		if err != nil {
			return fmt.Errorf("read back %d charges from the ledger %s[%d]: %w (they are in the ledger; whether they are published is decided at the next start)", len(want), sh.s.cfg.LedgerTopic, sh.p, err)
		}
		if e.Type != schema.LedgerTypeCharge || !e.Valid || e.Epoch != sh.epoch {
			continue
		}
		w, ok := want[e.Charge.ReleaseID]
		if !ok {
			continue
		}
		if w.chunks > 0 && (len(e.Chunks) != w.chunks-1 || e.ChunksDigest != w.digest) {
			return fmt.Errorf("read back %s from the ledger %s[%d]: its charge (offset %d) does not come with the %d chunk records appended before it; "+
				"it is charged but not published, and cannot be republished", e.Charge.ReleaseID, sh.s.cfg.LedgerTopic, sh.p, e.Offset, w.chunks-1)
		}
		delete(want, e.Charge.ReleaseID)
	}
	return nil
}

// readTail reads and applies the next record of the ledger partition. A
// marker of another epoch, or a gap (records deleted under the tail: a
// newer owner's trim), ends this instance's ownership at once, not when
// the handler gets to it: the tail has read past it, so no later confirm
// under this epoch could find a valid record (the query path may append
// one before the handler stops); the error wraps ErrFenced.
func (sh *shard) readTail(ctx context.Context) (ledger.Entry, error) {
	m, err := sh.tail.ReadMessage(ctx)
	if err != nil {
		return ledger.Entry{}, err
	}
	e, err := sh.book.Apply(m)
	if errors.Is(err, ledger.ErrGap) {
		// Records after this instance's position were deleted: only a
		// newer owner trims past it (package internal/ledger, "A reader
		// never skips a record"), and the marker it appended may be
		// among them.
		err := fmt.Errorf("%w: the ledger %s[%d] was trimmed past this instance's position (%v): a newer owner checkpointed it",
			ErrFenced, sh.s.cfg.LedgerTopic, sh.p, err)
		sh.dropOwnership()
		return e, err
	}
	if err != nil {
		return e, err
	}
	if e.Type == schema.LedgerTypeEpoch && e.Epoch != sh.epoch {
		err := fmt.Errorf("%w: epoch %s (%s) appended its marker at offset %d of the ledger %s[%d], after this instance's",
			ErrFenced, e.Marker.Epoch, e.Marker.Owner, e.Offset, sh.s.cfg.LedgerTopic, sh.p)
		sh.dropOwnership()
		return e, err
	}
	return e, nil
}

func sortedStreams(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
