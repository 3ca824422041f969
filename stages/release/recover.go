package release

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// This file is a shard's takeover: what the other topics witness about
// its ledger partition, the rebuild from the partition's checkpoint and
// the records after it, and the checks that the ledger lost nothing.

// witnesses is what the topics other than the ledger say about the charges
// of a shard's streams, from where the partition's latest checkpoint says
// they stood (every record they hold about a charge before the checkpoint
// is before that point): the release ids on the releases topic, the ok
// answers on the responses topic, and each stream's latest budget state on
// the accountant topic with the ledger offset it reflects.
type witnesses struct {
	published map[string]bool
	// chunks holds, for each release id with chunks on the releases topic
	// (ChunkHeader), the indexes seen. (A record without the header, which
	// only a release in one record has, counts for no chunk: at worst a
	// chunk is republished, byte-identical.)
	chunks map[string]map[int32]bool
	states map[string]witnessedState
	// answered are the ok answers on the responses topic, by answer id,
	// with the offset of the request they answer (-1 when the record does
	// not say).
	answered map[string]int64
	// respondedNext is the offset after the highest request offset
	// (RequestOffsetHeader) of the responses to the shard's streams, of
	// any status; 0 when none has one.
	respondedNext int64
}

// missing returns the indexes of the chunks of release id, published as n
// records (1 for a release in one record), that the releases topic lacks.
func (w witnesses) missing(id string, n int) []int32 {
	if n <= 1 {
		if w.published[id] {
			return nil
		}
		return []int32{0}
	}
	var out []int32
	for i := range int32(n) {
		if !w.chunks[id][i] {
			out = append(out, i)
		}
	}
	return out
}

// witnessedState is a budget state and the ledger offset it reflects (the
// LedgerOffsetHeader; -1 for a state written before the header existed).
type witnessedState struct {
	schema.BudgetState
	ledgerOffset int64
}

// readWitnesses reads the releases, responses and accountant topics from
// the offsets the partition's checkpoint head recorded (from the start of
// each without one), keeping what concerns the shard's streams.
func (sh *shard) readWitnesses(ctx context.Context, head *ledger.Checkpoint) (witnesses, error) {
	s := sh.s
	w := witnesses{published: map[string]bool{}, chunks: map[string]map[int32]bool{}, answered: map[string]int64{}}
	from := map[string]map[int]int64{}
	if head != nil {
		for _, o := range head.State.Witness {
			if from[o.Topic] == nil {
				from[o.Topic] = map[int]int64{}
			}
			from[o.Topic][int(o.Partition)] = o.Offset
		}
	}
	err := s.cfg.Conn.ReadFrom(ctx, s.cfg.ReleasesTopic, from[s.cfg.ReleasesTopic], func(m kafka.Message) error {
		id := string(m.Key)
		stream, _, _, ok := plan.ParseReleaseID(id)
		if !ok || !sh.owns(stream) {
			return nil
		}
		w.published[id] = true
		if c, _, ok := chunkOf(m); ok {
			if w.chunks[id] == nil {
				w.chunks[id] = map[int32]bool{}
			}
			w.chunks[id][c] = true
		}
		return nil
	})
	if err != nil {
		return w, fmt.Errorf("read releases %s: %w", s.cfg.ReleasesTopic, err)
	}
	if s.responses != nil {
		err = s.cfg.Conn.ReadFrom(ctx, s.cfg.ResponsesTopic, from[s.cfg.ResponsesTopic], func(m kafka.Message) error {
			// The key is the request id alone: the stream is in the value.
			a, err := schema.DecodePredictResponse(m.Value)
			if err != nil || !sh.owns(a.Stream) {
				return nil
			}
			off, hasOff := requestOffset(m)
			if a.Status == StatusOK {
				// Only an ok answer has a ledger charge to witness.
				w.answered[AnswerID(a.Stream, a.Release, a.RequestID)] = -1
				if hasOff {
					w.answered[AnswerID(a.Stream, a.Release, a.RequestID)] = off
				}
			}
			if hasOff {
				w.respondedNext = max(w.respondedNext, off+1)
			}
			return nil
		})
		if err != nil {
			return w, fmt.Errorf("read responses %s: %w", s.cfg.ResponsesTopic, err)
		}
	}
	w.states, err = sh.readStates(ctx, from[s.cfg.AccountantTopic])
	return w, err
}

// witnessOffsets returns the end offsets of the topics that witness the
// ledger, for a checkpoint: every record this shard wrote about the
// charges before it is before them.
func (sh *shard) witnessOffsets(ctx context.Context) ([]schema.TopicOffset, error) {
	s := sh.s
	topics := []string{s.cfg.ReleasesTopic, s.cfg.AccountantTopic}
	if s.responses != nil {
		topics = append(topics, s.cfg.ResponsesTopic)
	}
	var out []schema.TopicOffset
	for _, t := range topics {
		ends, err := s.cfg.Conn.EndOffsets(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		parts := make([]int, 0, len(ends))
		for p := range ends {
			parts = append(parts, p)
		}
		sort.Ints(parts)
		for _, p := range parts {
			out = append(out, schema.TopicOffset{Topic: t, Partition: int32(p), Offset: ends[p]})
		}
	}
	return out, nil
}

// recover rebuilds the shard's Releaser from its ledger partition: from
// the checkpoint the partition starts with (once it was trimmed) and the
// valid charges after it (package internal/ledger: void charges, written
// by instances that had lost ownership, were never published and are not
// counted; two different valid answers for one release id are both
// counted). It checks the partition against what else witnesses charges
// (the releases and responses topics and the accountant topic's latest
// states; ErrLedgerLost if it lacks some), republishes every valid charge
// missing from the releases or responses topic, verbatim (invariant 1: a
// crash between the ledger append and the publish never loses or
// recomputes a release), and publishes each stream's budget state. The
// partition must end with epoch's marker: a later marker of another epoch
// is an ErrFenced error. The caller holds mu.
func (sh *shard) recover(ctx context.Context, epoch string, wit witnesses) error {
	s := sh.s
	sh.rel.Reset()
	sh.respondedNext = wit.respondedNext
	// missing are the records of valid charges that the releases topic
	// lacks, collected as the ledger is read so that only they are kept:
	// every chunk of a release in chunks comes from the chunk records the
	// ledger ties to its charge (Entry.Chunks), byte for byte.
	var missing, unanswered []kafka.Message
	seen, void, dups, unpublishable, charges := false, 0, 0, 0, 0
	restored := false
	markerOffset := int64(-1) // this instance's first marker of epoch
	book, err := ledger.ReadPartition(ctx, s.cfg.Conn, s.cfg.LedgerTopic, sh.p, func(e ledger.Entry) error {
		switch {
		case e.Checkpoint != nil && e.Checkpoint.Restored:
			if n := int(e.Checkpoint.Record.Partitions); n != sh.n {
				return fmt.Errorf("%w: the checkpoint at offset %d of the ledger %s[%d] was written with %d partitions and the topics now have %d: "+
					"streams would move to partitions whose ledgers never charged them, and their budgets start over; restore the partition counts (dpstream cannot reshard)",
					ErrPartitionsChanged, e.Checkpoint.Offset, s.cfg.LedgerTopic, sh.p, n, sh.n)
			}
			st, err := schema.DecodeReleaserState(e.Checkpoint.State.Releaser)
			if err != nil {
				return fmt.Errorf("%w: the checkpoint at offset %d: %w", ledger.ErrNoCheckpoint, e.Checkpoint.Offset, err)
			}
			if err := sh.rel.RestoreState(st); err != nil {
				return fmt.Errorf("%w: the checkpoint at offset %d: %w", ledger.ErrNoCheckpoint, e.Checkpoint.Offset, err)
			}
			restored = true
		case e.Type == schema.LedgerTypeEpoch && e.Epoch == epoch:
			if !seen {
				markerOffset = e.Offset
			}
			seen = true
		case e.Type != schema.LedgerTypeCharge:
		case !e.Valid:
			void++
		case e.Identical:
			// The same answer written twice (a retried append): one
			// publication, one charge.
		default:
			if !sh.owns(e.Charge.Stream) {
				return fmt.Errorf("%w: the ledger %s[%d] holds a charge of stream %s (offset %d), which belongs to partition %d of %d: "+
					"its budget would be rebuilt by no owner and start over; restore the partition counts (dpstream cannot reshard)",
					ErrPartitionsChanged, s.cfg.LedgerTopic, sh.p, e.Charge.Stream, e.Offset, ledger.PartitionOf(e.Charge.Stream, sh.n), sh.n)
			}
			charges++
			dup, err := sh.rel.Restore(e.Charge)
			if err != nil {
				return err
			}
			if dup {
				dups++
				s.cfg.Metrics.LedgerDuplicates.WithLabelValues(e.Charge.Stream).Inc()
				s.cfg.Log.Error("the ledger holds two different answers for one release; both are counted against the budget",
					"release_id", e.Charge.ReleaseID, "ledger_offset", e.Offset)
				return nil
			}
			if e.Charge.IsAnswer() {
				if _, ok := wit.answered[e.Charge.ReleaseID]; !ok && e.Charge.Status == StatusOK {
					unanswered = append(unanswered, response(e.Charge.RequestID, e.Charge.Payload, e.Charge.RequestOffset))
				}
				return nil
			}
			msgs, ok := republish(e, wit)
			if !ok {
				unpublishable++
				s.cfg.Log.Error("a release in chunks is charged in the ledger but the ledger lacks its chunks (a ledger not written by this protocol, or damaged): it is counted against the budget and cannot be republished",
					"release_id", e.Charge.ReleaseID, "ledger_offset", e.Offset)
			}
			missing = append(missing, msgs...)
		}
		return nil
	})
	if err != nil {
		return sh.lost(fmt.Errorf("rebuild the accountant from ledger %s[%d]: %w", s.cfg.LedgerTopic, sh.p, err))
	}
	sh.book = book
	if !seen {
		return fmt.Errorf("ledger %s[%d]: this instance's epoch marker %s is not in the partition it just appended it to", s.cfg.LedgerTopic, sh.p, epoch)
	}
	if book.Epoch() != epoch {
		mk := book.Marker()
		return fmt.Errorf("%w: epoch %s (%s, at %s) follows this instance's epoch %s in the ledger %s[%d]",
			ErrFenced, mk.Epoch, mk.Owner, time.UnixMilli(mk.At).UTC().Format(time.RFC3339), epoch, s.cfg.LedgerTopic, sh.p)
	}
	if void > 0 {
		s.cfg.Log.Info("ledger holds void charges: appended by release instances after they lost ownership, never published, not counted", "partition", sh.p, "count", void)
	}
	if err := sh.checkLedgerComplete(wit.published); err != nil {
		return err
	}
	for id, off := range wit.answered {
		// An answer on the responses topic was charged before it was
		// published, as a release was: in the ledger after the
		// checkpoint, or before it (its request is then below the
		// checkpoint's RequestNext).
		if !sh.rel.Decided(id) && !(off >= 0 && sh.rel.AnsweredBefore(off)) {
			return fmt.Errorf("%w: the responses topic %s holds an answer (%s) that the ledger %s has no charge for: "+
				"the ledger was deleted or truncated; restore it from a backup or mirror before restarting (do not recreate it empty)",
				ErrLedgerLost, s.cfg.ResponsesTopic, id, s.cfg.LedgerTopic)
		}
	}
	if err := sh.checkAccountant(wit.states, markerOffset); err != nil {
		return err
	}
	if len(missing) > 0 {
		s.cfg.Log.Info("republishing releases charged in the ledger but not yet published", "partition", sh.p, "count", len(missing))
		if err := s.releases.WriteMessages(ctx, missing...); err != nil {
			return fmt.Errorf("republish releases: %w", err)
		}
	}
	if len(unanswered) > 0 {
		if s.responses == nil {
			s.cfg.Log.Warn("the ledger holds answers to queries that the responses topic lacks, but no release answers queries now: not republished", "count", len(unanswered))
		} else {
			s.cfg.Log.Info("republishing answers charged in the ledger but not yet published", "partition", sh.p, "count", len(unanswered))
			if err := s.responses.WriteMessages(ctx, unanswered...); err != nil {
				return fmt.Errorf("republish answers: %w", err)
			}
		}
	}
	periods := map[string]int64{}
	for name := range sh.streams {
		periods[name] = sh.rel.LatestPeriod(name)
	}
	if err := sh.publishStates(ctx, periods); err != nil {
		return err
	}
	if err := s.recoverPDP(ctx); err != nil {
		return err
	}
	// A partition read without a checkpoint to start from (a ledger
	// written before checkpoints, or a new one), or with many charges
	// after it, is checkpointed at once: the next takeover reads little.
	sh.sinceCheckpoint = charges
	sh.checkpointDue = !restored || charges >= sh.s.cfg.CheckpointCharges
	s.cfg.Log.Info("accountant rebuilt from ledger", "partition", sh.p, "from_checkpoint", restored, "charges_after_it", charges,
		"void", void, "duplicates", dups, "unpublishable", unpublishable)
	return nil
}

// republish returns the releases-topic records of a valid charge's release
// that the releases topic lacks (wit): for a release in one record its
// payload, for a release in chunks the missing ones of its chunk 0 (the
// charge's payload) and the chunks the ledger ties to the charge. ok is
// false for a charge whose payload is chunk 0 of a release in chunks that
// the ledger holds no chunks of: nothing of it can be republished.
func republish(e ledger.Entry, wit witnesses) (msgs []kafka.Message, ok bool) {
	id := e.Charge.ReleaseID
	if e.Chunks == nil {
		if len(wit.missing(id, 1)) == 0 {
			return nil, true
		}
		// Decoded only when it is to be republished: a chunk 0 alone is
		// not the release.
		if rel, err := schema.DecodeRelease(e.Charge.Payload); err == nil && rel.Chunks > 1 {
			return nil, false
		}
		return []kafka.Message{publication(id, e.Charge.Payload, 0, 1)}, true
	}
	n := len(e.Chunks) + 1
	for _, i := range wit.missing(id, n) {
		payload := e.Charge.Payload
		if i > 0 {
			payload = e.Chunks[i-1]
		}
		msgs = append(msgs, publication(id, payload, int(i), n))
	}
	return msgs, true
}

// readStates returns the latest budget state of each of the shard's
// streams on the accountant topic, read from the offsets from (see
// readFrom): per stream (the key), the one reflecting the highest ledger
// offset (LedgerOffsetHeader), and of states reflecting the same (or
// written before the header existed), the last one. An undecodable record
// is skipped with a warning: the topic is a witness of the ledger, not the
// budget's source of truth.
func (sh *shard) readStates(ctx context.Context, from map[int]int64) (map[string]witnessedState, error) {
	s := sh.s
	states := map[string]witnessedState{}
	err := s.cfg.Conn.ReadFrom(ctx, s.cfg.AccountantTopic, from, func(m kafka.Message) error {
		key := string(m.Key)
		if !sh.owns(key) {
			return nil
		}
		if m.Value == nil {
			delete(states, key) // a tombstone
			return nil
		}
		st, err := schema.DecodeBudgetState(m.Value)
		if err != nil {
			s.cfg.Log.Warn("skipping an undecodable budget state", "topic", s.cfg.AccountantTopic, "offset", m.Offset, "err", err)
			return nil
		}
		off := StateOffset(m)
		if prev, ok := states[key]; !ok || off >= prev.ledgerOffset {
			states[key] = witnessedState{BudgetState: st, ledgerOffset: off}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read accountant %s: %w", s.cfg.AccountantTopic, err)
	}
	return states, nil
}

// ErrLedgerLost is wrapped by a takeover's error when the ledger lacks
// charges that the other topics witness: the releases or responses topic
// holds releases or answers the ledger has no charge for, the accountant
// topic counts more charges than it holds, or a partition lost records
// that no checkpoint summarizes. A release is published only after its
// ledger record is acknowledged, and the ledger is only ever trimmed up to
// a checkpoint, so the ledger was deleted (and recreated empty),
// truncated, or restored from an old copy: rebuilding the accountant from
// it would forget budget already spent. The stage refuses to run rather
// than overspend the budget.
var ErrLedgerLost = errors.New("the ledger lacks charges of published releases")

// ErrPartitionsChanged is returned (wrapped) by a takeover whose ledger
// partition was written under another partition count: a checkpoint that
// records another count, or a charge of a stream that now hashes to another
// partition (ledger.PartitionOf). A stream's budget lives in the ledger
// partition of its stream; after a change of count its charges sit where
// no owner rebuilds them, and its budget would start over. The stage
// refuses to run rather than overspend it.
var ErrPartitionsChanged = errors.New("the partials and ledger topics' partition count changed")

// checkLedgerComplete returns an ErrLedgerLost error when a published
// release id of the shard's streams was not decided by the rebuilt
// Releaser (Decided: a window at or before its release's high-water
// mark).
func (sh *shard) checkLedgerComplete(published map[string]bool) error {
	var lost []string
	for id := range published {
		if !sh.rel.Decided(id) {
			lost = append(lost, id)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	sort.Strings(lost)
	s := sh.s
	return fmt.Errorf("%w: the releases topic %s holds %d releases (e.g. %s) that the ledger %s has no charge for: "+
		"the ledger was deleted or truncated, and rebuilding the budget from it would start the budget over; "+
		"restore the ledger topic from a backup or mirror before restarting (do not recreate it empty)",
		ErrLedgerLost, s.cfg.ReleasesTopic, len(lost), lost[0], s.cfg.LedgerTopic)
}

// checkAccountant returns an ErrLedgerLost error when the accountant
// topic's latest state of a configured stream of the shard (read before
// this instance's epoch marker, at ledger offset marker, was appended)
// records more charges or refusals in its budget period than the rebuilt
// ledger holds, or reflects a ledger offset past the marker. Every state is
// published after the charges it counts were appended to the ledger and
// read back, and reflects an offset the partition had reached before the
// marker, so a ledger holding fewer charges, or ending before that offset,
// has lost records (a broker that lost unsynced data, a topic restored
// from an old backup, a checkpoint rolled back): rebuilding the budget
// from it would spend again what was spent.
func (sh *shard) checkAccountant(states map[string]witnessedState, marker int64) error {
	s := sh.s
	names := make([]string, 0, len(states))
	for name := range states {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		st := states[name]
		if _, ok := sh.streams[name]; !ok {
			continue
		}
		got, _ := sh.rel.State(name, st.Period, s.cfg.Now())
		lost := got.ReleasesCharged < st.ReleasesCharged || got.ReleasesRefused < st.ReleasesRefused
		if !lost && (marker < 0 || st.ledgerOffset <= marker) {
			continue
		}
		return fmt.Errorf("%w: the accountant topic %s records %d charges and %d refusals of stream %s in budget period %d (updated %s, reflecting ledger offset %d), "+
			"but the ledger %s[%d] holds only %d and %d (and this instance's marker is at offset %d): the ledger lost records (a lost log tail, an old backup or a rolled-back checkpoint), and rebuilding the budget from it "+
			"would spend again what was spent; restore the ledger topic (and the releases topic) from a replica or backup that holds them. "+
			"Only if you know the accountant state is wrong, delete its record (a tombstone for key %q on %s) and restart",
			ErrLedgerLost, s.cfg.AccountantTopic, st.ReleasesCharged, st.ReleasesRefused, name, st.Period,
			time.UnixMilli(st.UpdatedAt).UTC().Format(time.RFC3339), st.ledgerOffset, s.cfg.LedgerTopic, sh.p, got.ReleasesCharged, got.ReleasesRefused, marker, name, s.cfg.AccountantTopic)
	}
	return nil
}

// requestOffset reads a response record's RequestOffsetHeader: ok false
// for a record without it (or with a malformed one).
func requestOffset(m kafka.Message) (int64, bool) {
	for _, h := range m.Headers {
		if h.Key == RequestOffsetHeader {
			v, err := strconv.ParseInt(string(h.Value), 10, 64)
			return v, err == nil && v >= 0
		}
	}
	return 0, false
}
