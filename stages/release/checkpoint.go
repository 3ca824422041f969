package release

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// This file is a shard's checkpoints: the Releaser's books and the ledger
// partition's summary, appended to the partition under the owner's epoch
// and read back like a charge; once one is read back usable, the records
// before it are deleted (package internal/ledger, "Checkpoints"), so that
// neither a takeover's time nor the ledger's size grows with history.

// maybeCheckpoint checkpoints the shard's ledger partition when one is
// due: force, a takeover that found no checkpoint to start from, as many
// charges as Config.CheckpointCharges since the last one, or
// Config.CheckpointInterval with records since it. Nothing is written while
// the Releaser may be ahead of the ledger (a failed commit) or while the
// partition holds records a checkpoint would not summarize (chunks not yet
// matched, another checkpoint's parts).
func (sh *shard) maybeCheckpoint(ctx context.Context, force bool) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.s
	if sh.epoch == "" || sh.ahead || (s.cfg.CheckpointInterval < 0 && !force) {
		return nil
	}
	now := s.cfg.Now()
	due := force || sh.checkpointDue || sh.sinceCheckpoint >= s.cfg.CheckpointCharges ||
		(sh.sinceCheckpoint > 0 && now.Sub(sh.lastCheckpoint) >= s.cfg.CheckpointInterval)
	if !due {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	err := sh.checkpoint(ctx)
	if err == nil || errors.Is(err, ErrFenced) {
		return err
	}
	// A checkpoint that failed changes nothing the stage relies on (it is
	// one more record, or none, and nothing was trimmed): the next one is
	// tried after another interval.
	sh.lastCheckpoint = now
	s.cfg.Log.Warn("could not checkpoint a ledger partition; trying again later", "partition", sh.p, "err", err)
	return nil
}

// checkpoint writes one checkpoint and trims the partition to it. The
// caller holds mu and owns the partition.
func (sh *shard) checkpoint(ctx context.Context) error {
	s := sh.s
	// Read the partition to its end first, so that the checkpoint's basis
	// is where it lands (a record another process appended meanwhile, a
	// stream start, would otherwise make it unusable).
	ends, err := s.cfg.Conn.EndOffsets(ctx, s.cfg.LedgerTopic)
	if err != nil {
		return fmt.Errorf("checkpoint: ledger %s: %w", s.cfg.LedgerTopic, err)
	}
	for sh.book.Next() < ends[sh.p] {
		if _, err := sh.readTail(ctx); err != nil {
			return fmt.Errorf("checkpoint: read the ledger %s[%d] to its end: %w", s.cfg.LedgerTopic, sh.p, err)
		}
	}
	if sh.book.Pending() {
		return nil // chunks of an attempt that never charged; try later
	}
	wit, err := sh.witnessOffsets(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	books, err := sh.rel.EncodeState()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	rb, err := schema.EncodeReleaserState(books)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	st := sh.book.Summary()
	st.Witness, st.Releaser = wit, rb
	basis := sh.book.Next()
	msgs, err := ledger.CheckpointMessages(st, s.owner, sh.epoch, sh.p, sh.n, basis, s.cfg.Now().UnixMilli(), sh.partBytes())
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	rec := kafka.Message{Topic: s.cfg.LedgerTopic, Partition: sh.p, Offset: basis, Key: msgs[0].Key, Value: msgs[0].Value}
	s.failpoint(FailpointCheckpointBefore, rec)
	if err := sh.ledger.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("checkpoint: append to the ledger %s[%d]: %w", s.cfg.LedgerTopic, sh.p, err)
	}
	s.failpoint(FailpointCheckpointAppended, rec)
	// Read it back as a charge is, up to the partition's end after the
	// write (so the read never waits): a marker of another epoch before
	// it fences this instance (readTail); otherwise it counts, and it may
	// be trimmed to if nothing came between (Checkpoint.Usable).
	after, err := s.cfg.Conn.EndOffsets(ctx, s.cfg.LedgerTopic)
	if err != nil {
		return fmt.Errorf("checkpoint: ledger %s: %w", s.cfg.LedgerTopic, err)
	}
	var cp *ledger.Checkpoint
	for sh.book.Next() < after[sh.p] {
		e, err := sh.readTail(ctx)
		if err != nil {
			return fmt.Errorf("checkpoint: read it back from the ledger %s[%d]: %w", s.cfg.LedgerTopic, sh.p, err)
		}
		if c := e.Checkpoint; c != nil && c.Record.Epoch == sh.epoch && c.Record.Basis == basis {
			cp = c
		}
	}
	sh.checkpointDue, sh.lastCheckpoint = false, s.cfg.Now()
	if cp == nil || !cp.Usable {
		s.cfg.Log.Info("checkpoint written but not trimmed to: a record came between it and the ledger's end, or between its parts; the next one will be", "partition", sh.p, "basis", basis)
		return nil
	}
	sh.sinceCheckpoint = 0
	sh.rel.MarkCheckpoint()
	s.failpoint(FailpointCheckpointConfirmed, rec)
	rec.Offset = cp.Offset
	if _, err := s.cfg.Conn.DeleteRecords(ctx, s.cfg.LedgerTopic, sh.p, cp.Offset); err != nil {
		// The checkpoint stands for the records before it all the same:
		// only the ledger's size and the next takeover's reading grow.
		if now := s.cfg.Now(); now.Sub(sh.trimWarned) > 10*time.Minute {
			sh.trimWarned = now
			s.cfg.Log.Warn("could not delete the ledger's records before a checkpoint (the principal needs the DELETE permission on the ledger topic); the ledger keeps growing and a takeover reads it all",
				"topic", s.cfg.LedgerTopic, "partition", sh.p, "offset", cp.Offset, "err", err)
		}
		return nil
	}
	s.failpoint(FailpointTrimmed, rec)
	s.cfg.Metrics.Checkpoints.WithLabelValues(strconv.Itoa(sh.p)).Inc()
	return nil
}

// partBytes is the most state bytes one checkpoint record holds: the
// largest record the stage writes, less room for the record's other
// fields.
func (sh *shard) partBytes() int {
	n := sh.rel.recordBytes
	return max(n-schema.MaxEpochBytes-1024, 1024)
}
