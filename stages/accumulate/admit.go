package accumulate

import (
	"errors"
	"time"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
)

// DefaultMaxFuture is how far ahead of the wall clock an event time may be
// before the record is rejected (Config.MaxFuture's default): one absurd
// time would otherwise close every open window.
const DefaultMaxFuture = time.Hour

// Record is one input record as the accumulate stage sees it, without
// Kafka: the stage builds it from a fetched message, and `dpstream
// simulate` from a line of a file.
type Record struct {
	Value  []byte // the record value, in the stream's format
	Offset int64  // offset within its partition
	// Time is the record timestamp, the event time of a stream configured
	// without an event-time field.
	Time       time.Time
	Partition  int // the partition the record was read from
	Partitions int // the input topic's partition count
}

// Admit is the stage's first step for one record: check its size against
// MaxEventBytes, decode it with the
// stream's decoder, extract the privacy unit, event time and fields (see
// Extractor.Extract), check that the unit belongs on the partition the
// record was read from, and that the event time is at most maxFuture
// ahead of now. It returns the Event, or the reason the record cannot be
// used (its dead-letter reason).
//
// The partition check is what makes per-partition contribution bounding a
// per-unit bound: Partition.Add keeps at most MaxEvents events of a unit
// per window on one partition, so a unit whose events were spread over
// several partitions would contribute several times that. Records are
// therefore accepted only on the partition the unit's key hashes to under
// the murmur2 partitioner (kafkaio.PartitionFor). Event-level streams
// (every event its own unit) need no such check.
func (in *Input) Admit(r Record, now time.Time, maxFuture time.Duration) (Event, *Rejection) {
	if in.MaxEventBytes > 0 && len(r.Value) > in.MaxEventBytes {
		return Event{}, reject(ReasonTooLarge, "value of %d bytes is larger than the stream's max_event_bytes (%d); the dead letter omits it: send smaller events, or raise max_event_bytes (and the topics' max.message.bytes)",
			len(r.Value), in.MaxEventBytes)
	}
	dm, err := in.Decoder.Decode(r.Value)
	switch {
	case errors.Is(err, schema.ErrSchemaID):
		return Event{}, reject(ReasonWrongSchemaID, "%v", err)
	case errors.Is(err, schema.ErrFraming):
		return Event{}, reject(ReasonBadFraming, "%v", err)
	case err != nil:
		return Event{}, reject(ReasonUndecodable, "%v", err)
	}
	ev, rej := in.Extractor.Extract(dm, r.Offset, r.Time)
	if rej != nil {
		return ev, rej
	}
	if !in.Extractor.EventLevel {
		if p := kafkaio.PartitionFor([]byte(ev.Unit), r.Partitions); p != r.Partition {
			return ev, reject(ReasonMisrouted, "unit %q belongs on partition %d (murmur2 of the unit), read from %d: key records by the privacy unit", ev.Unit, p, r.Partition)
		}
	}
	if limit := now.Add(maxFuture).UnixMilli(); ev.Time > limit {
		return ev, reject(ReasonBadEventTime, "event time %s is more than %s in the future", time.UnixMilli(ev.Time).UTC().Format(time.RFC3339), maxFuture)
	}
	return ev, nil
}

// LateRejection is the dead-letter reason and detail of an event that
// Add found Late: its window had already closed at the partition's
// watermark.
func (p *Partition) LateRejection(ev Event) *Rejection {
	return reject(ReasonLate, "window starting %s closed at watermark %s",
		time.UnixMilli(p.s.WindowStart(ev.Time)).UTC().Format(time.RFC3339), time.UnixMilli(p.wm).UTC().Format(time.RFC3339))
}
