// Package ledger interprets dpstream's ledger topic, the append-only log that
// is the privacy budget's source of truth. Read in offset order, its records
// say which releases were charged (and so may be published), which release
// instance owned the release stage when, and where each stream's release
// schedule starts.
//
// # Records
//
// The ledger has one partition, so its records are totally ordered. Three
// types are told apart by the schema.LedgerTypeHeader header:
//
//   - a charge (schema.LedgerCharge; also any record without the header, as
//     written before the header existed) carries a release's privacy charge
//     and its full payload, and, in the schema.LedgerEpochHeader header, the
//     epoch of the instance that wrote it;
//   - an epoch marker (schema.LedgerEpoch) is appended by a release instance
//     when it takes ownership of the release stage;
//   - a stream start (schema.StreamStart) fixes where a stream's release
//     schedule begins; the first one per stream counts.
//
// # Fencing: at most one payload per release id
//
// A release instance that lost its consumer-group membership (paused,
// partitioned from the brokers) does not know it, and Kafka without
// transactions cannot stop its writes. The ledger is the arbiter instead:
//
//  1. An instance taking ownership appends a marker with a fresh random
//     epoch E and reads the ledger up to it.
//  2. It appends each charge with header epoch E, then reads the ledger on
//     to that charge (Book.Apply on every record in between), and publishes
//     the release only if no marker of another epoch came before the charge.
//  3. Whoever rebuilds the budget (Book) counts a charge only if its epoch is
//     that of the latest marker before it ("valid"); any other charge is
//     void.
//
// Claim: a release payload reaches the releases topic only from a valid
// charge, and every valid charge is counted by every rebuild. Proof sketch:
// the writer of charge c (epoch E) publishes only after reading every
// record before c and finding no marker of another epoch after its own
// marker, so the latest marker before c is E's: c is valid, by the same
// rule a rebuild applies to the same totally ordered log. A republish after
// a crash takes payloads from valid charges only. Hence every published
// payload is counted in the budget; a void charge's noise is never
// published, so leaving it out of the budget is sound. Two valid charges
// for one release id (which this protocol never writes, but a ledger from an
// older version or a bug might hold) are both counted unless their payloads
// are byte-identical (then only one answer exists; see Book.Apply).
package ledger

import (
	"crypto/sha256"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/schema"
)

// Entry is one ledger record as interpreted by Book.Apply.
type Entry struct {
	Offset int64
	// Type is schema.LedgerTypeCharge, LedgerTypeEpoch or LedgerTypeStart.
	Type string
	// Charge is the decoded charge (Type charge).
	Charge schema.LedgerCharge
	// Epoch is the charge's epoch ("" for a charge written before epochs
	// existed), or the marker's epoch (Type epoch).
	Epoch string
	// Valid reports, for a charge, whether it counts: its epoch is that of
	// the latest marker before it. A void charge was never published and
	// is not counted.
	Valid bool
	// Duplicate reports, for a valid charge, that an earlier valid charge
	// has the same release id; Identical that its payload is also
	// byte-identical to the earlier one's (a retried write, one answer).
	Duplicate, Identical bool
	// Marker is the decoded epoch marker (Type epoch).
	Marker schema.LedgerEpoch
	// Start is the decoded stream start (Type start); FirstStart reports
	// that it is its stream's first, the one that counts.
	Start      schema.StreamStart
	FirstStart bool
}

// Book is the ledger read so far, in offset order: the current epoch, each
// stream's recorded start and the payloads of valid charges. The zero value
// is an empty ledger. A Book is not safe for concurrent use.
type Book struct {
	epoch  string
	marker schema.LedgerEpoch
	starts map[string]schema.StreamStart
	// latest is the latest window start with a valid charge, per stream
	// (what a stream's start defaults to for a ledger written before
	// starts were recorded).
	latest map[string]int64
	// payloads holds a digest of the first valid payload of each release
	// id, to tell a retried write (identical) from a second answer.
	payloads map[string][sha256.Size]byte
	next     int64 // offset after the last record applied
	void     int
}

// Apply interprets the next ledger record. Records must be applied in offset
// order, each once. An undecodable record, or one of a type this version
// does not know, is an error: the ledger is the budget's source of truth,
// and skipping a record could forget a charge.
func (b *Book) Apply(m kafka.Message) (Entry, error) {
	if b.starts == nil {
		b.starts, b.latest, b.payloads = map[string]schema.StreamStart{}, map[string]int64{}, map[string][sha256.Size]byte{}
	}
	e := Entry{Offset: m.Offset, Type: header(m, schema.LedgerTypeHeader)}
	if e.Type == "" {
		e.Type = schema.LedgerTypeCharge
	}
	var err error
	switch e.Type {
	case schema.LedgerTypeCharge:
		if e.Charge, err = schema.DecodeLedgerCharge(m.Value); err != nil {
			return e, fmt.Errorf("ledger offset %d: %w", m.Offset, err)
		}
		e.Epoch = header(m, schema.LedgerEpochHeader)
		e.Valid = e.Epoch == b.epoch
		if !e.Valid {
			b.void++
			break
		}
		id, sum := e.Charge.ReleaseID, sha256.Sum256(e.Charge.Payload)
		if prev, dup := b.payloads[id]; dup {
			e.Duplicate = true
			e.Identical = prev == sum
		} else {
			b.payloads[id] = sum
		}
		if w, ok := b.latest[e.Charge.Stream]; !ok || e.Charge.WindowStart > w {
			b.latest[e.Charge.Stream] = e.Charge.WindowStart
		}
	case schema.LedgerTypeEpoch:
		if e.Marker, err = schema.DecodeLedgerEpoch(m.Value); err != nil {
			return e, fmt.Errorf("ledger offset %d: %w", m.Offset, err)
		}
		if e.Marker.Epoch == "" {
			return e, fmt.Errorf("ledger offset %d: epoch marker without an epoch", m.Offset)
		}
		e.Epoch = e.Marker.Epoch
		b.epoch, b.marker = e.Marker.Epoch, e.Marker
	case schema.LedgerTypeStart:
		if e.Start, err = schema.DecodeStreamStart(m.Value); err != nil {
			return e, fmt.Errorf("ledger offset %d: %w", m.Offset, err)
		}
		if _, seen := b.starts[e.Start.Stream]; !seen {
			b.starts[e.Start.Stream] = e.Start
			e.FirstStart = true
		}
	default:
		return e, fmt.Errorf("ledger offset %d: unknown record type %q (written by a newer dpstream?)", m.Offset, e.Type)
	}
	b.next = m.Offset + 1
	return e, nil
}

// Epoch returns the epoch of the latest marker applied ("" if none).
func (b *Book) Epoch() string { return b.epoch }

// Marker returns the latest epoch marker applied (zero if none).
func (b *Book) Marker() schema.LedgerEpoch { return b.marker }

// Next returns the offset after the last record applied (0 if none).
func (b *Book) Next() int64 { return b.next }

// Void returns the number of void charges applied.
func (b *Book) Void() int { return b.void }

// Start returns the first recorded start of a stream.
func (b *Book) Start(stream string) (schema.StreamStart, bool) {
	s, ok := b.starts[stream]
	return s, ok
}

// LatestCharged returns the latest window start of a valid charge of the
// stream.
func (b *Book) LatestCharged(stream string) (int64, bool) {
	w, ok := b.latest[stream]
	return w, ok
}

// Charged reports whether a release id has a valid charge.
func (b *Book) Charged(id string) bool {
	_, ok := b.payloads[id]
	return ok
}

// ChargeMessage returns the ledger record of a charge written under epoch.
func ChargeMessage(stream string, charge []byte, epoch string) kafka.Message {
	return kafka.Message{Key: []byte(stream), Value: charge, Headers: []kafka.Header{
		{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeCharge)},
		{Key: schema.LedgerEpochHeader, Value: []byte(epoch)},
	}}
}

// EpochMessage returns the ledger record of an epoch marker.
func EpochMessage(e schema.LedgerEpoch) (kafka.Message, error) {
	b, err := schema.EncodeLedgerEpoch(e)
	if err != nil {
		return kafka.Message{}, err
	}
	return kafka.Message{Key: []byte("epoch"), Value: b, Headers: []kafka.Header{
		{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeEpoch)},
	}}, nil
}

// StartMessage returns the ledger record of a stream start.
func StartMessage(s schema.StreamStart) (kafka.Message, error) {
	b, err := schema.EncodeStreamStart(s)
	if err != nil {
		return kafka.Message{}, err
	}
	return kafka.Message{Key: []byte(s.Stream), Value: b, Headers: []kafka.Header{
		{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeStart)},
	}}, nil
}

// header returns the value of a record header ("" if absent).
func header(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
