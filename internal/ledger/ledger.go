// Package ledger interprets dpstream's ledger topic, the append-only log that
// is the privacy budget's source of truth. Read in offset order, its records
// say which releases were charged (and so may be published), which release
// instance owned the release stage when, and where each stream's release
// schedule starts.
//
// # Records
//
// The ledger has as many partitions as the partials topic, and partition p
// holds the records of the streams of partials partition p (PartitionOf:
// the murmur2 hash of the stream's name, the partitioner of the records'
// keys). Each partition is a log of its own, totally ordered, owned by one
// release instance at a time; everything below is about one partition.
// Six types are told apart by the schema.LedgerTypeHeader header:
//
//   - a charge (schema.LedgerCharge; also any record without the header, as
//     written before the header existed) carries a release's privacy charge
//     and its full payload (chunk 0 of a release in chunks), and, in the
//     schema.LedgerEpochHeader header, the epoch of the instance that wrote
//     it;
//   - an epoch marker (schema.LedgerEpoch) is appended by a release instance
//     when it takes ownership of the release stage;
//   - a stream start (schema.StreamStart) fixes where a stream's release
//     schedule begins; the first one per stream counts;
//   - a chunk (schema.LedgerChunk) is one of chunks 1..n-1 of a release too
//     large for one Kafka record (schema.SplitRelease), appended before the
//     charge whose payload is chunk 0 (see "Releases in chunks" below). It
//     charges nothing;
//   - a checkpoint (schema.LedgerCheckpoint) and its parts (LedgerChunk
//     records of type checkpoint_part) summarize every record before the
//     checkpoint (see "Checkpoints" below). They charge nothing.
//
// A dpstream older than chunks stops at a chunk record with "unknown record
// type" rather than skip it: this package has always refused what it cannot
// interpret, since skipping a record could forget a charge. Run no older
// version (release instance or `dpstream tail ledger`) on a ledger that
// holds a release in chunks.
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
// An owner commits many charges at once (group commit: all the releases
// of the windows that came due together, a burst of answers): it appends
// them in one write, reads the partition on until it has read them all,
// and publishes them only if each is valid; if a marker of another epoch
// comes first, it publishes none of them (the new owner's takeover
// republishes those that are valid). Step 2 holds for each charge of the
// group, so the argument below is unchanged.
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
//
// # Releases in chunks
//
// A release larger than a Kafka record is published as n >= 2 chunks
// (schema.SplitRelease), all with its release id as the record key. The
// ledger still holds one charge per release, with chunk 0 as its payload
// (LedgerCharge is unchanged), and the chunks 1..n-1 as chunk records. An
// attempt at a release is the instance's decision: its noise, so its
// chunks. Its digest D = ChunksDigest(chunk 0, ..., chunk n-1) is SHA-256
// over n and every chunk's own SHA-256, chunk 0's included.
//
//  4. The writer (epoch E) appends the chunk records 1..n-1, each carrying
//     the release id, E, n, its index, D and its payload, and once they are
//     all acknowledged appends the charge (epoch E, payload chunk 0). It
//     reads the ledger on to the charge as in step 2, and publishes the n
//     chunks, byte for byte, only if the charge is valid and Book matched
//     it with its chunks (Entry.Chunks, Entry.ChunksDigest = D).
//  5. Book matches a valid charge c (id, epoch E) with the chunk records
//     before it that carry id, E and a digest D such that D =
//     ChunksDigest(c.Payload, their payloads in index order), one record
//     per index 1..n-1 (a repeated index is a retried write: the first
//     counts). A chunk record is kept only while its epoch is the latest
//     marker's; a marker of another epoch drops every kept chunk, and a
//     valid charge drops those of its id. A recovery republishes, for each
//     valid charge, chunk 0 and the matched chunks missing from the
//     releases topic, and nothing for a charge in chunks that Book could
//     not match.
//
// Claim: every chunk on the releases topic is byte-identical to the ledger
// record of that chunk of the one counted attempt at its release (the
// attempt of the valid charge), so a consumer that joins a release id's
// chunks gets the counted answer, never a mixture of attempts. Proof
// sketch: chunks are published only from a valid charge c and the chunk
// records Book matched with it (step 4 by the writer, step 5 by a
// recovery), and the writer and every rebuild apply Book to the same
// totally ordered log, so they match the same records. The matched records
// carry c's epoch, so no other instance wrote them (epochs are random per
// take-over); and their digest, computed by c's writer over the hashes of
// its own chunks, chunk 0 included, is reproduced from c's payload and
// their payloads, so by SHA-256's collision resistance they are the chunks
// of c's attempt, not of an earlier attempt of the same writer (a crash
// before its charge leaves orphan chunks, and an instance decides a release
// at most once per epoch) nor of another instance's. They precede c: they
// were acknowledged before c was sent, on the same partition. A fenced
// attempt's chunks are never published: its charge, if written at all, is
// void (step 3), the writer stops at the read-back (step 2), a recovery
// republishes only valid charges, and its chunk records carry its epoch,
// which no valid charge after the newer marker carries. A crash between
// the chunk records and the charge leaves chunks with no charge: nothing is
// published or counted, and the next owner decides the release anew. The
// budget is unchanged by chunks: a chunk record charges nothing, and the
// charge counts as before. Two valid charges of one id (an older ledger, a
// bug) are one answer only if their whole attempts are identical (equal
// digests; equal payloads for releases in one record).
//
// # Checkpoints
//
// A charge carries its release's payload, and an owner's state (accounts,
// continual runs, models) would otherwise be rebuilt from every charge
// ever made: a start's time and the ledger's size would grow with
// history (DESIGN invariant 11). The owner of a partition therefore
// checkpoints it and deletes the records before the checkpoint:
//
//  6. The owner (epoch E), holding no release in flight (every charge it
//     appended is read back and published), reads the partition to its end
//     (offset B), composes the checkpoint — the latest marker, every
//     stream's first start and latest charged window, the release stage's
//     books (schema.ReleaserState: accounts, high-water marks, continual
//     runs, models), and the end offsets of the topics that witness the
//     ledger (releases, responses, accountant) — and appends, in one write,
//     the checkpoint record (epoch E, basis B, n parts, digest D over the
//     parts) followed by its parts 1..n-1. It reads them back. The
//     checkpoint is valid if its epoch is the latest marker's (as for a
//     charge), and usable if moreover it landed at offset B (no record
//     came between the owner's read and it), its parts follow it with no
//     other record between, and they match D and decode.
//  7. Only then, and only to a usable checkpoint at offset C, the owner
//     deletes the partition's records before C (Kafka's DeleteRecords).
//  8. A reader of a partition whose log starts after offset 0 requires its
//     first records to be a complete checkpoint and its parts, and
//     restores from it (Book: epoch E, starts, latest windows; the caller:
//     its books); anything else is ErrNoCheckpoint. A reader of a partition
//     starting at 0 applies every record, and a checkpoint it meets there
//     changes nothing it has not applied already (it only becomes the trim
//     point).
//
// Claim: a reader of a trimmed partition reaches the state of a reader of
// the whole partition. Proof sketch: the partition is only ever trimmed to
// a usable checkpoint C (step 7: by its writer after reading it back; a
// paused writer that trims late trims to a checkpoint that stays usable,
// since usability is fixed by the records before C and C's parts, which
// nothing later changes, and trimming is monotone). A usable C at basis B
// = C is its writer's state after applying exactly the records before C
// (step 6: it read to B, and nothing lies between B and C), and that
// state is a function of those records alone (the Book, and the release
// stage's books, are deterministic folds of the partition, and the stage
// restores from them the same decisions: stages/release
// TestReleaserCheckpoint). C's epoch E was the latest marker's before C,
// so validity of every record after C is decided as it would be with the
// whole log. Hence restoring C and applying the records after it is
// applying the whole partition. Fencing is unchanged: a checkpoint is
// fenced like a charge (a marker of another epoch before it makes it
// void, never trimmed to), and a trim removes only records a usable
// checkpoint stands for, never a marker or a charge after it.
//
// A reader never skips a record. Kafka moves a reader whose position was
// deleted under it (OffsetOutOfRange) to the new log start without saying
// so, and the records it skipped may hold a marker: an owner paused with
// its tail at offset t, while a newer owner appends its marker after t and
// trims past it, would otherwise read on from the newer owner's checkpoint,
// never meet its marker, and confirm (and publish) charges that every
// rebuild counts void. So Book.Apply refuses a record that does not follow
// the last one applied (or, first, the log start it was given), with
// ErrGap, and the owner treats that as being fenced: only a newer owner
// trims past an owner's tail, because a stale owner trims only to its own
// checkpoint, which precedes the marker of whoever took over from it. A
// reader that is not an owner (a takeover's rebuild, a start's read of
// every partition) reads the partition again from its new start.
//
// Every charge before C was published before C was written (step 6), so
// deleting its payload loses no release: the releases topic is the
// archive of releases. What a charge leaves in the ledger after the trim
// is nothing but its part of the checkpoint's state, which does not grow
// with the number of charges: per release a high-water mark (a window
// start), per stream the accounts of its last budget periods, per
// continual release its current horizon's step logs, per prediction
// release its current models.
//
// Storage loss is still detected, now against the checkpoint too. A
// partition that lost records at its head (deleted past its checkpoint,
// or without one) fails step 8 (ErrNoCheckpoint). A partition that lost
// its tail, or was restored from an older copy (an earlier checkpoint and
// fewer records after it), holds fewer charges, or ends before the ledger
// offset, than the accountant topic's latest state of a stream records:
// the release stage refuses to start (stages/release ErrLedgerLost). The
// witnesses are read from the offsets the checkpoint recorded, which
// precede every record about a charge after it, so a takeover's reading,
// like its memory, is bounded by the records since the last checkpoint.
package ledger

import (
	"crypto/sha256"
	"encoding/binary"
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
	// Chunks are, for a valid charge of a release in chunks, the payloads
	// of its chunks 1..n-1 in order (chunk 0 is Charge.Payload): the chunk
	// records of the charge's attempt (see "Releases in chunks" in the
	// package documentation), and ChunksDigest their digest. Chunks is nil
	// for a release in one record, for a void charge, and for a charge whose
	// chunks the ledger lacks.
	Chunks       [][]byte
	ChunksDigest [sha256.Size]byte
	// Chunk is the decoded chunk record (Type chunk).
	Chunk schema.LedgerChunk
	// Marker is the decoded epoch marker (Type epoch).
	Marker schema.LedgerEpoch
	// Start is the decoded stream start (Type start); FirstStart reports
	// that it is its stream's first, the one that counts.
	Start      schema.StreamStart
	FirstStart bool
	// Checkpoint is set on the record that completes a checkpoint (its
	// last part, or the checkpoint record itself when it has one part):
	// see "Checkpoints" in the package documentation.
	Checkpoint *Checkpoint
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
	// answers holds the digests of the first valid answer of each release
	// id, to tell a retried write (identical) from a second answer.
	answers map[string]answer
	// chunks holds, by release id, the chunk records of the current epoch
	// not yet matched with a charge, one group per attempt (epoch and
	// digest) in order of arrival.
	chunks map[string][]*chunkGroup
	next   int64 // offset after the last record applied
	void   int
	// applied counts the records applied; logStart is the partition's
	// log start offset when the reader knows it (StartAt), -1 otherwise.
	applied  int64
	logStart int64
	// cp is the checkpoint whose record was applied and whose parts are
	// still arriving; last is the offset of the latest usable checkpoint
	// (-1 when none).
	cp   *pendingCheckpoint
	last int64
}

// answer identifies a valid charge's answer: the digest of its payload, and
// of the whole attempt (ChunksDigest for a release in chunks, else the
// payload's).
type answer struct{ payload, whole [sha256.Size]byte }

// chunkGroup is the chunk records of one attempt at a release seen so far.
type chunkGroup struct {
	epoch    string
	digest   [sha256.Size]byte
	n        int32
	hashes   [][sha256.Size]byte // by chunk index; [0] unused
	payloads [][]byte            // by chunk index; [0] unused
	have     int32
}

// Apply interprets the next ledger record. Records must be applied in offset
// order, each once, none skipped: a record that does not follow the last
// one applied is an ErrGap error (see "A reader never skips a record"). An undecodable record (or a chunk record whose numbers
// are impossible), or one of a type this version does not know, is an
// error: the ledger is the budget's source of truth, and skipping a record
// could forget a charge.
func (b *Book) Apply(m kafka.Message) (Entry, error) {
	b.init()
	e := Entry{Offset: m.Offset, Type: header(m, schema.LedgerTypeHeader)}
	if b.applied > 0 && m.Offset != b.next {
		return e, fmt.Errorf("%w: offset %d follows offset %d", ErrGap, m.Offset, b.next-1)
	}
	if b.applied == 0 && b.logStart >= 0 && m.Offset != b.logStart {
		return e, fmt.Errorf("%w: the first record read is at offset %d, the partition started at %d", ErrGap, m.Offset, b.logStart)
	}
	if e.Type == "" {
		e.Type = schema.LedgerTypeCharge
	}
	if b.applied == 0 && e.Type != schema.LedgerTypeCheckpoint && b.logStart > 0 {
		return e, fmt.Errorf("%w: the ledger partition starts at offset %d with a %s record, not a checkpoint", ErrNoCheckpoint, m.Offset, e.Type)
	}
	if b.cp != nil && e.Type != schema.LedgerTypeCheckpointPart {
		// A record between a checkpoint and its parts: the checkpoint
		// cannot be trimmed to (a reader starting at it would meet this
		// record in the middle of restoring).
		b.cp.contiguous = false
		if b.cp.head {
			return e, fmt.Errorf("%w: a %s record at offset %d interrupts the parts of the checkpoint the ledger partition starts with", ErrNoCheckpoint, e.Type, m.Offset)
		}
	}
	var err error
	switch e.Type {
	case schema.LedgerTypeCheckpoint:
		if err := b.applyCheckpoint(m, &e); err != nil {
			return e, err
		}
	case schema.LedgerTypeCheckpointPart:
		if err := b.applyCheckpointPart(m, &e); err != nil {
			return e, err
		}
	case schema.LedgerTypeCharge:
		if e.Charge, err = schema.DecodeLedgerCharge(m.Value); err != nil {
			return e, fmt.Errorf("ledger offset %d: %w", m.Offset, err)
		}
		e.Epoch = header(m, schema.LedgerEpochHeader)
		e.Valid = e.Epoch == b.epoch
		if !e.Valid {
			// Its chunks, if any, were dropped at the marker that voids it;
			// kept chunks of its id are the current epoch's.
			b.void++
			break
		}
		id := e.Charge.ReleaseID
		a := answer{payload: sha256.Sum256(e.Charge.Payload)}
		a.whole = a.payload
		if g := b.match(id, e.Epoch, a.payload); g != nil {
			e.Chunks, e.ChunksDigest = g.payloads[1:], g.digest
			a.whole = g.digest // the answer is the whole attempt
		}
		delete(b.chunks, id)
		if prev, dup := b.answers[id]; dup {
			e.Duplicate = true
			// A retried write of a charge in chunks repeats the charge
			// alone (its chunks were matched with the first copy).
			e.Identical = prev.whole == a.whole || (e.Chunks == nil && prev.payload == a.payload)
		} else {
			b.answers[id] = a
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
		if e.Epoch != b.epoch {
			// Chunks of an earlier epoch can never belong to a valid
			// charge any more (a late copy of the current epoch's own
			// marker keeps them).
			clear(b.chunks)
		}
		b.epoch, b.marker = e.Marker.Epoch, e.Marker
	case schema.LedgerTypeStart:
		if e.Start, err = schema.DecodeStreamStart(m.Value); err != nil {
			return e, fmt.Errorf("ledger offset %d: %w", m.Offset, err)
		}
		if _, seen := b.starts[e.Start.Stream]; !seen {
			b.starts[e.Start.Stream] = e.Start
			e.FirstStart = true
		}
	case schema.LedgerTypeChunk:
		if e.Chunk, err = schema.DecodeLedgerChunk(m.Value); err != nil {
			return e, fmt.Errorf("ledger offset %d: %w", m.Offset, err)
		}
		c := e.Chunk
		if c.ReleaseID == "" || c.Chunks < 2 || c.Chunk < 1 || c.Chunk >= c.Chunks || len(c.Digest) != sha256.Size {
			return e, fmt.Errorf("ledger offset %d: malformed chunk record (release %q, chunk %d of %d, %d-byte digest)", m.Offset, c.ReleaseID, c.Chunk, c.Chunks, len(c.Digest))
		}
		e.Epoch = c.Epoch
		if c.Epoch == b.epoch {
			b.keepChunk(c)
		}
	default:
		return e, fmt.Errorf("ledger offset %d: unknown record type %q (written by a newer dpstream?)", m.Offset, e.Type)
	}
	b.next = m.Offset + 1
	b.applied++
	return e, nil
}

// init makes the zero Book usable.
func (b *Book) init() {
	if b.starts == nil {
		b.starts, b.latest, b.answers = map[string]schema.StreamStart{}, map[string]int64{}, map[string]answer{}
		b.chunks = map[string][]*chunkGroup{}
		if b.applied == 0 && b.logStart == 0 && b.last == 0 {
			b.logStart, b.last = -1, -1
		}
	}
}

// keepChunk keeps a chunk record of the current epoch until its charge
// comes. A repeated index (a retried write) keeps the first; a record
// whose count disagrees with its attempt's is ignored (the digest covers
// the count, so that attempt cannot match any charge anyway).
func (b *Book) keepChunk(c schema.LedgerChunk) {
	var d [sha256.Size]byte
	copy(d[:], c.Digest)
	var g *chunkGroup
	for _, x := range b.chunks[c.ReleaseID] {
		if x.epoch == c.Epoch && x.digest == d {
			g = x
			break
		}
	}
	if g == nil {
		g = &chunkGroup{epoch: c.Epoch, digest: d, n: c.Chunks, hashes: make([][sha256.Size]byte, c.Chunks), payloads: make([][]byte, c.Chunks)}
		b.chunks[c.ReleaseID] = append(b.chunks[c.ReleaseID], g)
	}
	if c.Chunks != g.n || g.payloads[c.Chunk] != nil {
		return
	}
	g.hashes[c.Chunk] = sha256.Sum256(c.Payload)
	g.payloads[c.Chunk] = c.Payload
	g.have++
}

// match returns the kept attempt at release id under epoch whose chunks,
// after a chunk 0 of digest sum, give the attempt's digest (the latest
// such attempt), or nil.
func (b *Book) match(id, epoch string, sum [sha256.Size]byte) *chunkGroup {
	gs := b.chunks[id]
	for i := len(gs) - 1; i >= 0; i-- {
		g := gs[i]
		if g.epoch != epoch || g.have != g.n-1 {
			continue
		}
		g.hashes[0] = sum
		if digest(g.hashes) == g.digest {
			return g
		}
	}
	return nil
}

// ChunksDigest is the digest of one attempt at a release in chunks: SHA-256
// over a domain tag, the number of chunks and each chunk's own SHA-256, in
// order (package documentation, "Releases in chunks").
func ChunksDigest(payloads [][]byte) [sha256.Size]byte {
	hs := make([][sha256.Size]byte, len(payloads))
	for i, p := range payloads {
		hs[i] = sha256.Sum256(p)
	}
	return digest(hs)
}

func digest(hashes [][sha256.Size]byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte("dpstream.LedgerChunk/v1\x00"))
	_ = binary.Write(h, binary.BigEndian, uint32(len(hashes)))
	for _, x := range hashes {
		h.Write(x[:])
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// StartAt tells the Book that the ledger partition it will read starts at
// offset logStart (its log start offset), before the first Apply. A
// partition that starts after offset 0 had its records deleted up to a
// checkpoint, which must then be its first record: anything else is an
// ErrNoCheckpoint error from Apply.
func (b *Book) StartAt(logStart int64) {
	b.init()
	b.logStart = logStart
}

// LastCheckpoint returns the offset of the latest usable checkpoint
// applied (ok false when none): the offset the partition may be trimmed
// to.
func (b *Book) LastCheckpoint() (int64, bool) { return b.last, b.last >= 0 }

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
	_, ok := b.answers[id]
	return ok
}

// ChargeMessage returns the ledger record of a charge written under epoch.
func ChargeMessage(stream string, charge []byte, epoch string) kafka.Message {
	return kafka.Message{Key: []byte(stream), Value: charge, Headers: []kafka.Header{
		{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeCharge)},
		{Key: schema.LedgerEpochHeader, Value: []byte(epoch)},
	}}
}

// ChunkMessages returns the ledger records of chunks 1..n-1 of one
// attempt at a release in chunks (payloads are the n chunks' encoded
// releases, chunk 0 the charge's payload), written under epoch at unix ms
// at, and the attempt's digest (ChunksDigest). They must all be
// acknowledged before the charge is appended.
func ChunkMessages(stream, id, epoch string, payloads [][]byte, at int64) ([]kafka.Message, [sha256.Size]byte, error) {
	d := ChunksDigest(payloads)
	if len(payloads) < 2 {
		return nil, d, fmt.Errorf("release %s: %d chunks; a release in chunks has at least 2", id, len(payloads))
	}
	out := make([]kafka.Message, 0, len(payloads)-1)
	for i := 1; i < len(payloads); i++ {
		b, err := schema.EncodeLedgerChunk(schema.LedgerChunk{ReleaseID: id, Stream: stream, Epoch: epoch,
			Chunk: int32(i), Chunks: int32(len(payloads)), Digest: d[:], Payload: payloads[i], At: at})
		if err != nil {
			return nil, d, fmt.Errorf("release %s chunk %d: %w", id, i, err)
		}
		out = append(out, kafka.Message{Key: []byte(stream), Value: b, Headers: []kafka.Header{
			{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeChunk)},
		}})
	}
	return out, d, nil
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
