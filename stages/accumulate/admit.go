package accumulate

import (
	"errors"
	"time"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
)

// DefaultMaxSkew is how far an event time may lead the wall clock when
// the stream sets no Stream.MaxSkew (the configuration's default,
// window.max_skew, is the same).
const DefaultMaxSkew = time.Minute

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
// MaxEventBytes, decode it with the stream's decoder, extract the privacy
// unit, event time and fields (see Extractor.Extract), check that the unit
// belongs on the partition the record was read from, and apply the
// stream's release schedule (below). It returns the Event, or the reason
// the record cannot be used (its dead-letter reason).
//
// The partition check is what makes per-partition contribution bounding a
// per-unit bound: Partition.Add keeps at most MaxEvents events of a unit
// per window on one partition, so a unit whose events were spread over
// several partitions would contribute several times that. Records are
// therefore accepted only on the partition the unit's key hashes to under
// the murmur2 partitioner (kafkaio.PartitionFor). Event-level streams
// (every event its own unit) need no such check.
//
// The schedule: event times come from producers, so none may decide which
// windows exist or when they close (DESIGN section 5). An event before
// Stream.Start is rejected as ReasonBeforeStart: its window is never
// released. An event more than Stream.MaxSkew ahead of the record's clock
// (RecordClock: the wall clock now, or the record's Kafka timestamp when
// that is earlier) is rejected as ReasonFuture; it moves nothing. The
// accepted event carries that clock in Event.Clock, and Partition.Add never
// lets the watermark pass it minus the grace period. A zero now means there
// is no wall clock (`dpstream simulate`, which replays a file as history):
// no event is future and Event.Clock is 0.
func (in *Input) Admit(r Record, now time.Time) (Event, *Rejection) {
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
	if s := in.Stream; s != nil && s.Start != 0 && ev.Time < s.Start {
		return ev, reject(ReasonBeforeStart, "event time %s is before the stream's start %s: its window is never released (a backfill needs streams[].start, set before the pipeline first runs)",
			fmtTime(ev.Time), fmtTime(s.Start))
	}
	if now.IsZero() {
		return ev, nil
	}
	ev.Clock = RecordClock(now, r.Time)
	skew := DefaultMaxSkew.Milliseconds()
	if in.Stream != nil && in.Stream.MaxSkew > 0 {
		skew = in.Stream.MaxSkew
	}
	if ev.Time > ev.Clock+skew {
		return ev, reject(ReasonFuture, "event time %s is more than max_skew %s ahead of the clock %s: fix the producer's clock or its event times",
			fmtTime(ev.Time), time.Duration(skew)*time.Millisecond, fmtTime(ev.Clock))
	}
	return ev, nil
}

// RecordClock is the clock a record is judged by (unix ms): the wall clock
// now, or the record's Kafka timestamp when that is earlier (and set).
//
// Using the record's timestamp makes the judgement repeatable: a replay
// after a restart or rebalance processes the record later, and with the
// wall clock alone an event that led the clock the first time (or the
// watermark it was capped by) could be decided differently. A record
// timestamp (the producer's send time, or the broker's append time on a
// LogAppendTime topic) is stored with the record, so whenever it was not
// ahead of this process's clock at the first processing, every replay
// gets the same clock. Taking the minimum keeps the bound sound: the clock
// is never ahead of the wall clock, whatever a producer stamps on its
// records. Timestamps at or before the epoch (unset) are ignored.
func RecordClock(now, recordTime time.Time) int64 {
	c := now.UnixMilli()
	if !recordTime.IsZero() {
		if rt := recordTime.UnixMilli(); rt > 0 && rt < c {
			c = rt
		}
	}
	return c
}

func fmtTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// LateRejection is the dead-letter reason and detail of an event that
// Add found Late: its window had already closed at the partition's
// watermark.
func (p *Partition) LateRejection(ev Event) *Rejection {
	return reject(ReasonLate, "window starting %s closed at watermark %s",
		time.UnixMilli(p.s.WindowStart(ev.Time)).UTC().Format(time.RFC3339), time.UnixMilli(p.wm).UTC().Format(time.RFC3339))
}
