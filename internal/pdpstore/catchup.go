package pdpstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
)

// pdpPosition is how far the store has read the pdp topic: per partition,
// the offset after the last record applied and a hash of that record's
// key, which tells a topic that was deleted and recreated (its record at
// that offset is another one) from the one the store was built from.
type pdpPosition struct {
	Topic string             `json:"topic"`
	Parts map[int]pdpPartPos `json:"partitions"`
}

type pdpPartPos struct {
	Next    int64  `json:"next"`
	LastKey uint64 `json:"last_key"`
}

func keyHash(k []byte) uint64 {
	h := fnv.New64a()
	h.Write(k)
	return h.Sum64()
}

// pdpCatchUpBatch is how many topic records CatchUp applies per
// transaction: what it holds in memory at once.
const pdpCatchUpBatch = 4096

// Source is the pdp topic as CatchUp reads it.
type Source interface {
	// Topic names it; a store built from another topic is rebuilt.
	Topic() string
	// Offsets returns each partition's first and end (next) offset.
	Offsets(ctx context.Context) (first, end map[int]int64, err error)
	// Read calls fn for each record of a partition from offset from
	// (or the first after it) until the record before end.
	Read(ctx context.Context, partition int, from, end int64, fn func(Record) error) error
}

// Record is one record of the pdp topic as a Source gives it to CatchUp:
// what the store reads of a Kafka message, without Kafka (the release
// stage's adapter makes them).
type Record struct {
	// Offset is the record's offset in its partition.
	Offset int64
	// Key is the record's key (schema.PDPUnitKey, schema.PDPSummaryKey).
	// A summary's key is what Summarized is asked, and the hash of the
	// last key applied tells a recreated topic from the store's own.
	Key []byte
	// Type is the record's schema.PDPTypeHeader: schema.PDPTypeUnit
	// (Value is a schema.EncodePDPUnit account), schema.PDPTypeSummary
	// (the window of Key is summarized; Value is not read), or another,
	// which is skipped.
	Type string
	// Value is the encoded record.
	Value []byte
}

// errPDPTopicChanged: the topic is not the one the store was built from.
var errPDPTopicChanged = errors.New("the pdp topic is not the one the store was built from")

// CatchUp applies every record of the pdp topic that the store has not
// read yet, in offset order per partition, pdpCatchUpBatch records per
// transaction, each committed with the position it reached; it returns
// how many records it read. A crash between batches loses nothing: the
// next CatchUp goes on from the last committed batch. When the topic is
// not the one the store was built from (another name; a partition that
// shrank below the store's position, as a deleted and recreated topic
// does; or another record at the last offset applied), the store is
// emptied and rebuilt from the topic's first offset.
func (s *Store) CatchUp(ctx context.Context, src Source, log *slog.Logger) (int, error) {
	if log == nil {
		log = slog.Default()
	}
	n, err := s.catchUp(ctx, src, log)
	if !errors.Is(err, errPDPTopicChanged) {
		return n, err
	}
	log.Warn("pdp store was built from another pdp topic (deleted, recreated or renamed); rebuilding it from the topic", "topic", src.Topic(), "store", s.path, "reason", err)
	if err := s.db.update(func(tx pdpTx) error { return tx.reset() }); err != nil {
		return n, fmt.Errorf("pdp store: reset: %w", err)
	}
	m, err := s.catchUp(ctx, src, log)
	return n + m, err
}

func (s *Store) catchUp(ctx context.Context, src Source, log *slog.Logger) (int, error) {
	first, end, err := src.Offsets(ctx)
	if err != nil {
		return 0, fmt.Errorf("offsets of %s: %w", src.Topic(), err)
	}
	var pos pdpPosition
	if err := s.db.view(func(tx pdpTx) error { pos, err = tx.position(); return err }); err != nil {
		return 0, err
	}
	switch {
	case pos.Topic != "" && pos.Topic != src.Topic():
		return 0, fmt.Errorf("%w: store of topic %q", errPDPTopicChanged, pos.Topic)
	case pos.Parts == nil:
		pos.Parts = map[int]pdpPartPos{}
	}
	pos.Topic = src.Topic()
	for p, pp := range pos.Parts {
		if e, ok := end[p]; !ok || pp.Next > e {
			return 0, fmt.Errorf("%w: partition %d ends at %d, below the store's position %d", errPDPTopicChanged, p, e, pp.Next)
		}
	}
	read := 0
	for _, p := range slices.Sorted(maps.Keys(end)) {
		pp, known := pos.Parts[p]
		from := pp.Next
		if from >= end[p] {
			continue
		}
		// Read the last applied record again, to check it is the same.
		start, verify := from, known && from > 0
		if verify {
			start = from - 1
		}
		if start < first[p] {
			if from < first[p] {
				log.Warn("records of the pdp topic were deleted before this store read them; accounts they held are missing",
					"topic", src.Topic(), "partition", p, "store_position", from, "first_offset", first[p])
			}
			start, verify = first[p], false
		}
		batch := make([]Record, 0, pdpCatchUpBatch)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			last := batch[len(batch)-1]
			err := s.db.update(func(tx pdpTx) error {
				ap := newApplier(tx)
				for _, m := range batch {
					if err := ap.record(p, m, log); err != nil {
						return err
					}
				}
				if err := ap.flush(); err != nil {
					return err
				}
				pos.Parts[p] = pdpPartPos{Next: last.Offset + 1, LastKey: keyHash(last.Key)}
				return tx.putPosition(pos)
			})
			if err != nil {
				delete(pos.Parts, p)
				if known {
					pos.Parts[p] = pp
				}
				return fmt.Errorf("pdp store: apply %s[%d] up to offset %d: %w", src.Topic(), p, last.Offset, err)
			}
			read += len(batch)
			pp, known = pos.Parts[p], true
			batch = batch[:0]
			return nil
		}
		err := src.Read(ctx, p, start, end[p], func(m Record) error {
			if m.Offset < from {
				if verify && m.Offset == from-1 && keyHash(m.Key) != pp.LastKey {
					return fmt.Errorf("%w: %s[%d] holds another record at offset %d", errPDPTopicChanged, src.Topic(), p, m.Offset)
				}
				return nil
			}
			batch = append(batch, m)
			if len(batch) == pdpCatchUpBatch {
				return flush()
			}
			return nil
		})
		if err != nil {
			return read, err
		}
		if err := flush(); err != nil {
			return read, err
		}
	}
	return read, nil
}
