package ledger

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/schema"
)

// ErrNoCheckpoint is wrapped by the error of a read of a ledger partition
// whose records before some offset were deleted without a checkpoint to
// stand for them (the partition starts after offset 0 and its first record
// is not a complete checkpoint): the charges those records held are lost,
// and a budget rebuilt without them would spend them again.
var ErrNoCheckpoint = errors.New("the ledger lost records that no checkpoint summarizes")

// ErrGap is wrapped by Book.Apply's error for a record that does not follow
// the one applied before it (or the log start the Book was given): the
// records between were deleted while the partition was read (a trim), and
// nothing can tell whether a marker of another epoch was among them. See
// the package documentation ("A reader never skips a record").
var ErrGap = errors.New("the ledger partition was trimmed under its reader: records between were skipped")

// Checkpoint is a checkpoint as Book.Apply read it, on the entry of the
// record that completed it.
type Checkpoint struct {
	// Offset is the offset of the checkpoint record (its parts follow it).
	Offset int64
	Record schema.LedgerCheckpoint
	// State is the decoded state (zero when Err is set).
	State schema.CheckpointState
	// Valid: its epoch was that of the latest marker before it (or it is
	// the first record of the partition, which stands for everything
	// before it). Usable: valid, its basis is its own offset (nothing
	// came between the writer's last read and it), its parts followed it
	// with no other record between, and they decode: the partition may be
	// trimmed to Offset. Restored: it was the partition's first record,
	// and the Book took its state (the caller restores its own from
	// State).
	Valid, Usable, Restored bool
	// Err says why a complete checkpoint is not usable beyond its
	// position (a digest or decoding failure).
	Err error
}

// pendingCheckpoint is a checkpoint whose record was applied, collecting
// its parts.
type pendingCheckpoint struct {
	offset     int64
	rec        schema.LedgerCheckpoint
	payloads   [][]byte
	valid      bool
	contiguous bool
	// head: it is the first record the Book applied, to be restored.
	head bool
}

func (b *Book) applyCheckpoint(m kafka.Message, e *Entry) error {
	c, err := schema.DecodeLedgerCheckpoint(m.Value)
	if err != nil {
		return fmt.Errorf("ledger offset %d: %w", m.Offset, err)
	}
	if c.Parts < 1 || len(c.Digest) != sha256.Size || c.Epoch == "" {
		return fmt.Errorf("ledger offset %d: malformed checkpoint (%d parts, %d-byte digest, epoch %q)", m.Offset, c.Parts, len(c.Digest), c.Epoch)
	}
	e.Epoch = c.Epoch
	head := b.applied == 0
	if b.cp != nil && b.cp.head {
		return fmt.Errorf("%w: a second checkpoint at offset %d interrupts the parts of the checkpoint the ledger partition starts with", ErrNoCheckpoint, m.Offset)
	}
	b.cp = &pendingCheckpoint{offset: m.Offset, rec: c, payloads: [][]byte{c.Payload}, valid: head || c.Epoch == b.epoch, contiguous: true, head: head}
	if c.Parts == 1 {
		return b.finishCheckpoint(e)
	}
	return nil
}

func (b *Book) applyCheckpointPart(m kafka.Message, e *Entry) error {
	c, err := schema.DecodeLedgerChunk(m.Value)
	if err != nil {
		return fmt.Errorf("ledger offset %d: %w", m.Offset, err)
	}
	e.Epoch = c.Epoch
	p := b.cp
	if p == nil || c.Epoch != p.rec.Epoch || !bytes.Equal(c.Digest, p.rec.Digest) || c.Chunks != p.rec.Parts ||
		int(c.Chunk) != len(p.payloads) || m.Offset != p.offset+int64(c.Chunk) {
		// A part of another checkpoint (a writer that was fenced or
		// failed between its writes), or out of place: it summarizes
		// nothing.
		if p != nil {
			p.contiguous = false
			if p.head {
				return fmt.Errorf("%w: the checkpoint the ledger partition starts with (offset %d) is not followed by its part %d", ErrNoCheckpoint, p.offset, len(p.payloads))
			}
		}
		return nil
	}
	p.payloads = append(p.payloads, c.Payload)
	if int32(len(p.payloads)) == p.rec.Parts {
		return b.finishCheckpoint(e)
	}
	return nil
}

// finishCheckpoint checks and decodes a checkpoint whose parts have all
// arrived. The first record of a partition restores the Book from it;
// another usable one only becomes the latest trim point, since the Book
// applied every record it summarizes already.
func (b *Book) finishCheckpoint(e *Entry) error {
	p := b.cp
	b.cp = nil
	cp := &Checkpoint{Offset: p.offset, Record: p.rec, Valid: p.valid}
	e.Checkpoint = cp
	if d := ChunksDigest(p.payloads); !bytes.Equal(d[:], p.rec.Digest) {
		cp.Err = fmt.Errorf("checkpoint at ledger offset %d: its parts do not match its digest", p.offset)
	} else if st, err := schema.DecodeCheckpointState(bytes.Join(p.payloads, nil)); err != nil {
		cp.Err = fmt.Errorf("checkpoint at ledger offset %d: %w", p.offset, err)
	} else {
		cp.State = st
	}
	if p.head {
		if cp.Err != nil {
			return fmt.Errorf("%w: %w", ErrNoCheckpoint, cp.Err)
		}
		if cp.State.Marker.Epoch != p.rec.Epoch {
			return fmt.Errorf("%w: the checkpoint at offset %d was written under epoch %s but records epoch %s as the owner's", ErrNoCheckpoint, p.offset, p.rec.Epoch, cp.State.Marker.Epoch)
		}
		b.restore(cp.State)
		cp.Usable, cp.Restored = true, true
		b.last = p.offset
		return nil
	}
	cp.Usable = cp.Valid && p.contiguous && cp.Err == nil && p.rec.Basis == p.offset
	if cp.Usable {
		b.last = p.offset
		// Identical retried writes never straddle a checkpoint (a writer
		// checkpoints only once its appends are acknowledged, and a
		// retried append lands before the call that made it returns), so
		// the answers before it are never needed again: dropping them
		// keeps the Book bounded by the checkpoint interval.
		clear(b.answers)
	}
	return nil
}

// restore makes the Book what its checkpoint summarizes.
func (b *Book) restore(st schema.CheckpointState) {
	b.epoch, b.marker = st.Marker.Epoch, st.Marker
	clear(b.starts)
	for _, s := range st.Starts {
		if _, ok := b.starts[s.Stream]; !ok {
			b.starts[s.Stream] = s
		}
	}
	clear(b.latest)
	for _, l := range st.Latest {
		b.latest[l.Stream] = l.WindowStart
	}
	clear(b.answers)
	clear(b.chunks)
}

// Summary returns what a checkpoint of the Book keeps of it: the latest
// marker, every stream's first start and latest charged window. The
// caller adds the witnesses' offsets and its own state.
func (b *Book) Summary() schema.CheckpointState {
	b.init()
	st := schema.CheckpointState{Marker: b.marker}
	for _, s := range sortedKeys(b.starts) {
		st.Starts = append(st.Starts, b.starts[s])
	}
	for _, s := range sortedKeys(b.latest) {
		st.Latest = append(st.Latest, schema.StreamLatest{Stream: s, WindowStart: b.latest[s]})
	}
	return st
}

// Pending reports whether the Book holds chunk records not yet matched
// with a charge, or a checkpoint missing parts: a checkpoint written now
// would not summarize them.
func (b *Book) Pending() bool { return len(b.chunks) > 0 || b.cp != nil }

// CheckpointKey is the record key of checkpoint records.
const CheckpointKey = "checkpoint"

// CheckpointMessages returns the ledger records of a checkpoint of state
// st for ledger partition partition (of partitions), written under epoch
// at unix ms at and reflecting every record before basis: the checkpoint
// record, with part 0 of the encoded state, then parts 1..n-1, each at
// most partBytes of state. They must be appended to that partition in
// order, in one write; basis must be the partition's end offset when the
// write is sent (it is usable only if the checkpoint lands there).
func CheckpointMessages(st schema.CheckpointState, owner, epoch string, partition, partitions int, basis, at int64, partBytes int) ([]kafka.Message, error) {
	if partBytes < 1 {
		return nil, fmt.Errorf("checkpoint parts of %d bytes", partBytes)
	}
	b, err := schema.EncodeCheckpointState(st)
	if err != nil {
		return nil, err
	}
	var parts [][]byte
	for len(b) > partBytes {
		parts, b = append(parts, b[:partBytes]), b[partBytes:]
	}
	parts = append(parts, b)
	d := ChunksDigest(parts)
	rec, err := schema.EncodeLedgerCheckpoint(schema.LedgerCheckpoint{Epoch: epoch, Owner: owner, At: at, Partition: int32(partition),
		Partitions: int32(partitions), Basis: basis, Parts: int32(len(parts)), Digest: d[:], Payload: parts[0]})
	if err != nil {
		return nil, err
	}
	out := []kafka.Message{{Key: []byte(CheckpointKey), Value: rec, Headers: []kafka.Header{
		{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeCheckpoint)},
		{Key: schema.LedgerEpochHeader, Value: []byte(epoch)},
	}}}
	for i := 1; i < len(parts); i++ {
		v, err := schema.EncodeLedgerChunk(schema.LedgerChunk{ReleaseID: schema.CheckpointPartID, Stream: strconv.Itoa(partition), Epoch: epoch,
			Chunk: int32(i), Chunks: int32(len(parts)), Digest: d[:], Payload: parts[i], At: at})
		if err != nil {
			return nil, err
		}
		out = append(out, kafka.Message{Key: []byte(CheckpointKey), Value: v, Headers: []kafka.Header{
			{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeCheckpointPart)},
		}})
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
