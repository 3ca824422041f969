package schema

import (
	"crypto/sha256"
	"fmt"
	"math"
	"strings"
)

// The ledger topic holds four record types, told apart by the
// LedgerTypeHeader header (the same header key as the pdp topic's): charges
// (dpstream.LedgerCharge; also every record without the header, as written
// before the header existed), epoch markers (dpstream.LedgerEpoch), stream
// starts (dpstream.StreamStart) and the chunks of releases too large for one
// record (dpstream.LedgerChunk). Package internal/ledger interprets them.
const (
	LedgerTypeHeader = PDPTypeHeader
	LedgerTypeCharge = "charge"
	LedgerTypeEpoch  = "epoch"
	LedgerTypeStart  = "stream_start"
	LedgerTypeChunk  = "chunk"
	// LedgerEpochHeader, on a charge, names the epoch of the release
	// instance that wrote it (LedgerEpoch.Epoch).
	LedgerEpochHeader = "dpstream-epoch"
)

// LedgerEpoch is a ledger record saying that a release instance took
// ownership of the release stage (schema dpstream.LedgerEpoch).
type LedgerEpoch struct {
	Epoch string `json:"epoch"` // random, unique per take-over
	Owner string `json:"owner"` // host, pid and group member, for operators
	At    int64  `json:"at"`    // unix ms
}

// StreamStart is a ledger record fixing the start of a stream's release
// schedule (schema dpstream.StreamStart): windows starting before it are
// never released or charged.
type StreamStart struct {
	Stream string `json:"stream"`
	Start  int64  `json:"start"`  // window-aligned, unix ms
	Source string `json:"source"` // config | first_run | ledger
	At     int64  `json:"at"`     // unix ms
}

// Sources of a StreamStart.
const (
	StartFromConfig   = "config"
	StartFromFirstRun = "first_run"
	StartFromLedger   = "ledger"
)

// EncodeLedgerEpoch encodes e as binary Avro with schema dpstream.LedgerEpoch.
func EncodeLedgerEpoch(e LedgerEpoch) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(c.ledgerEpoch, "LedgerEpoch", map[string]any{"epoch": e.Epoch, "owner": e.Owner, "at": e.At})
}

// DecodeLedgerEpoch decodes binary Avro written by EncodeLedgerEpoch.
func DecodeLedgerEpoch(b []byte) (LedgerEpoch, error) {
	c, err := codecs()
	if err != nil {
		return LedgerEpoch{}, err
	}
	r, err := decode(c.ledgerEpoch, "LedgerEpoch", b)
	if err != nil {
		return LedgerEpoch{}, err
	}
	e := LedgerEpoch{Epoch: r.str("epoch"), Owner: r.str("owner"), At: r.millis("at")}
	if err := r.error(); err != nil {
		return LedgerEpoch{}, fmt.Errorf("schema: decode LedgerEpoch: %w", err)
	}
	return e, nil
}

// EncodeStreamStart encodes s as binary Avro with schema dpstream.StreamStart.
func EncodeStreamStart(s StreamStart) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(c.streamStart, "StreamStart", map[string]any{"stream": s.Stream, "start": s.Start, "source": s.Source, "at": s.At})
}

// DecodeStreamStart decodes binary Avro written by EncodeStreamStart.
func DecodeStreamStart(b []byte) (StreamStart, error) {
	c, err := codecs()
	if err != nil {
		return StreamStart{}, err
	}
	r, err := decode(c.streamStart, "StreamStart", b)
	if err != nil {
		return StreamStart{}, err
	}
	s := StreamStart{Stream: r.str("stream"), Start: r.millis("start"), Source: r.str("source"), At: r.millis("at")}
	if err := r.error(); err != nil {
		return StreamStart{}, fmt.Errorf("schema: decode StreamStart: %w", err)
	}
	return s, nil
}

// LedgerChunk is a ledger record holding chunk Chunk (1 to Chunks-1) of a
// release too large for one Kafka record (schema dpstream.LedgerChunk). The
// release stage appends an attempt's chunks before its charge, whose
// payload is chunk 0; Digest ties them to that one attempt (package
// internal/ledger: ChunksDigest and the protocol's proof sketch).
type LedgerChunk struct {
	ReleaseID string `json:"release_id"`
	Stream    string `json:"stream"`
	Epoch     string `json:"epoch"`
	Chunk     int32  `json:"chunk"`
	Chunks    int32  `json:"chunks"`
	Digest    []byte `json:"digest"`
	// Payload is the chunk's Avro-encoded Release, published verbatim.
	Payload []byte `json:"payload"`
	At      int64  `json:"at"` // unix ms
}

// EncodeLedgerChunk encodes c as binary Avro with schema
// dpstream.LedgerChunk. The payload is copied into the record byte for byte.
func EncodeLedgerChunk(c LedgerChunk) ([]byte, error) {
	cs, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(cs.ledgerChunk, "LedgerChunk", map[string]any{
		"release_id": c.ReleaseID, "stream": c.Stream, "epoch": c.Epoch,
		"chunk": c.Chunk, "chunks": c.Chunks, "digest": c.Digest,
		"payload": c.Payload, "at": c.At,
	})
}

// DecodeLedgerChunk decodes binary Avro written by EncodeLedgerChunk.
func DecodeLedgerChunk(b []byte) (LedgerChunk, error) {
	cs, err := codecs()
	if err != nil {
		return LedgerChunk{}, err
	}
	r, err := decode(cs.ledgerChunk, "LedgerChunk", b)
	if err != nil {
		return LedgerChunk{}, err
	}
	c := LedgerChunk{
		ReleaseID: r.str("release_id"), Stream: r.str("stream"), Epoch: r.str("epoch"),
		Chunk: r.int("chunk"), Chunks: r.int("chunks"), Digest: r.bytes("digest"),
		Payload: r.bytes("payload"), At: r.millis("at"),
	}
	if err := r.error(); err != nil {
		return LedgerChunk{}, fmt.Errorf("schema: decode LedgerChunk: %w", err)
	}
	return c, nil
}

// MaxEpochBytes bounds the epoch a ledger record may carry (the release
// stage's are 32 hex digits), for LedgerPayloadLimit.
const MaxEpochBytes = 64

// LedgerPayloadLimit is the largest release payload, a whole release or
// one chunk of it, whose ledger records fit in recordBytes: the charge lc
// with that payload (lc's own payload is ignored) and a chunk record of
// lc's release. A release whose payload exceeds it is split into chunks of
// at most that many bytes (SplitRelease).
func LedgerPayloadLimit(lc LedgerCharge, recordBytes int) (int, error) {
	lc.Payload = nil
	charge, err := EncodeLedgerCharge(lc)
	if err != nil {
		return 0, err
	}
	chunk, err := EncodeLedgerChunk(LedgerChunk{ReleaseID: lc.ReleaseID, Stream: lc.Stream,
		Epoch: strings.Repeat("e", MaxEpochBytes), Chunk: math.MaxInt32, Chunks: math.MaxInt32,
		Digest: make([]byte, sha256.Size), At: math.MinInt64})
	if err != nil {
		return 0, err
	}
	// Each record holds the payload after a length of at most 5 bytes
	// instead of the 1 of an empty payload.
	return recordBytes - max(len(charge), len(chunk)) - 4, nil
}
