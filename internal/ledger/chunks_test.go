package ledger

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/schema"
)

// attempt is one decision of release "s/r/1" in n chunks; tag makes two
// attempts' chunks differ (their noise).
func attempt(tag string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("%s chunk %d of %d", tag, i, n))
	}
	return out
}

// chunkRecs returns the chunk records of an attempt written under epoch.
func chunkRecs(t *testing.T, epoch string, payloads [][]byte) []kafka.Message {
	t.Helper()
	ms, _, err := ChunkMessages("s", "s/r/1", epoch, payloads, 1)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// chargeRec returns the charge of an attempt (payload chunk 0) under epoch.
func chargeRec(t *testing.T, epoch string, payloads [][]byte) kafka.Message {
	t.Helper()
	b, err := schema.EncodeLedgerCharge(schema.LedgerCharge{ReleaseID: "s/r/1", Stream: "s", Release: "r", WindowStart: 1000, Status: "ok",
		Charges: []schema.NoiseComponent{}, RDP: []float64{}, Payload: payloads[0], At: 1})
	if err != nil {
		t.Fatal(err)
	}
	return ChargeMessage("s", b, epoch)
}

func marker(t *testing.T, epoch string) kafka.Message {
	t.Helper()
	m, err := EpochMessage(schema.LedgerEpoch{Epoch: epoch, Owner: "test", At: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBookMatchesChunks plays ledgers holding releases in chunks and checks
// which chunks Book gives each charge: exactly those of the charge's own
// attempt (its epoch, and the digest its payload completes), or none.
func TestBookMatchesChunks(t *testing.T) {
	a, b := attempt("a", 3), attempt("b", 3)
	mixed := chunkRecs(t, "A", a)
	mixed[1] = chunkRecs(t, "A", b)[1] // chunk 2 of attempt b in a's place
	forged := chunkRecs(t, "A", a)
	{
		c, err := schema.DecodeLedgerChunk(forged[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		c.Payload = []byte("forged")
		v, err := schema.EncodeLedgerChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		forged[0].Value = v
	}
	cat := func(parts ...any) []kafka.Message {
		var out []kafka.Message
		for _, p := range parts {
			switch x := p.(type) {
			case kafka.Message:
				out = append(out, x)
			case []kafka.Message:
				out = append(out, x...)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		recs []kafka.Message
		// want, per charge in order: "a" or "b" (matched with that
		// attempt's chunks), "-" (valid, no chunks), "x" (void), "i"
		// (identical duplicate).
		want string
	}{
		{"an attempt's chunks then its charge", cat(marker(t, "A"), chunkRecs(t, "A", a), chargeRec(t, "A", a)), "a"},
		{"a chunk missing", cat(marker(t, "A"), chunkRecs(t, "A", a)[1:], chargeRec(t, "A", a)), "-"},
		{"a retried chunk write", cat(marker(t, "A"), chunkRecs(t, "A", a), chunkRecs(t, "A", a)[0], chargeRec(t, "A", a)), "a"},
		{"a retried charge write", cat(marker(t, "A"), chunkRecs(t, "A", a), chargeRec(t, "A", a), chargeRec(t, "A", a)), "ai"},
		{"orphan chunks of a crashed attempt, then the next owner's",
			cat(marker(t, "A"), chunkRecs(t, "A", a), marker(t, "B"), chunkRecs(t, "B", b), chargeRec(t, "B", b)), "b"},
		{"the crashed attempt's chunks cannot complete the next owner's charge",
			cat(marker(t, "A"), chunkRecs(t, "A", b), marker(t, "B"), chunkRecs(t, "B", b)[1:], chargeRec(t, "B", b)), "-"},
		{"two attempts of one epoch: the charge's own chunks",
			cat(marker(t, "A"), chunkRecs(t, "A", a), chunkRecs(t, "A", b), chargeRec(t, "A", a)), "a"},
		{"another attempt's chunk mixed in", cat(marker(t, "A"), mixed, chargeRec(t, "A", a)), "-"},
		{"a forged chunk payload", cat(marker(t, "A"), forged, chargeRec(t, "A", a)), "-"},
		{"a fenced writer's chunks and charge",
			cat(marker(t, "A"), chunkRecs(t, "A", a), marker(t, "B"), chargeRec(t, "A", a), chunkRecs(t, "B", b), chargeRec(t, "B", b)), "xb"},
		{"a fenced writer's chunks after the newer marker",
			cat(marker(t, "A"), marker(t, "B"), chunkRecs(t, "A", a), chargeRec(t, "A", a)), "x"},
		{"a fenced writer's void charge amid the owner's chunks",
			cat(marker(t, "A"), marker(t, "B"), chunkRecs(t, "B", b)[:1], chargeRec(t, "A", a), chunkRecs(t, "B", b)[1:], chargeRec(t, "B", b)), "xb"},
		{"a late copy of the owner's own marker",
			cat(marker(t, "A"), chunkRecs(t, "A", a), marker(t, "A"), chargeRec(t, "A", a)), "a"},
		{"a release in one record", cat(marker(t, "A"), chargeRec(t, "A", [][]byte{[]byte("whole")})), "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var book Book
			var got strings.Builder
			for i, m := range tc.recs {
				m.Offset = int64(i)
				e, err := book.Apply(m)
				if err != nil {
					t.Fatal(err)
				}
				if e.Type != schema.LedgerTypeCharge {
					continue
				}
				switch {
				case !e.Valid:
					got.WriteByte('x')
				case e.Identical:
					got.WriteByte('i')
				case e.Chunks == nil:
					got.WriteByte('-')
				default:
					var which [][]byte
					for _, x := range [][][]byte{a, b} {
						if bytes.Equal(e.Charge.Payload, x[0]) {
							which = x
						}
					}
					if which == nil || len(e.Chunks) != len(which)-1 || e.ChunksDigest != ChunksDigest(which) {
						t.Fatalf("charge matched with %d chunks of the wrong attempt", len(e.Chunks))
					}
					for k, c := range e.Chunks {
						if !bytes.Equal(c, which[k+1]) {
							t.Fatalf("chunk %d: %q, want %q", k+1, c, which[k+1])
						}
					}
					got.WriteString(string(which[0][:1]))
				}
			}
			if got.String() != tc.want {
				t.Fatalf("charges %q, want %q", got.String(), tc.want)
			}
			if len(book.chunks) != 0 && tc.want != "-" {
				t.Errorf("chunks kept after their charge: %d releases", len(book.chunks))
			}
		})
	}
}

// TestBookRejectsMalformedChunks: chunk records whose numbers are impossible
// are errors, like undecodable records.
func TestBookRejectsMalformedChunks(t *testing.T) {
	for name, c := range map[string]schema.LedgerChunk{
		"chunk 0":        {ReleaseID: "s/r/1", Epoch: "A", Chunk: 0, Chunks: 2, Digest: make([]byte, 32)},
		"one chunk":      {ReleaseID: "s/r/1", Epoch: "A", Chunk: 1, Chunks: 1, Digest: make([]byte, 32)},
		"index too high": {ReleaseID: "s/r/1", Epoch: "A", Chunk: 3, Chunks: 3, Digest: make([]byte, 32)},
		"short digest":   {ReleaseID: "s/r/1", Epoch: "A", Chunk: 1, Chunks: 2, Digest: make([]byte, 8)},
		"no release id":  {Epoch: "A", Chunk: 1, Chunks: 2, Digest: make([]byte, 32)},
	} {
		v, err := schema.EncodeLedgerChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		var b Book
		m := kafka.Message{Value: v, Headers: []kafka.Header{{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeChunk)}}}
		if _, err := b.Apply(m); err == nil || !strings.Contains(err.Error(), "malformed chunk record") {
			t.Errorf("%s: %v, want a malformed chunk record error", name, err)
		}
	}
	var b Book
	m := kafka.Message{Value: []byte{7}, Headers: []kafka.Header{{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeChunk)}}}
	if _, err := b.Apply(m); err == nil {
		t.Error("an undecodable chunk record: no error")
	}
}

// TestChunkMessages: one record per chunk after the first, typed, keyed by
// stream, carrying the attempt's digest.
func TestChunkMessages(t *testing.T) {
	p := attempt("a", 4)
	ms, d, err := ChunkMessages("s", "s/r/1", "E", p, 5)
	if err != nil {
		t.Fatal(err)
	}
	if d != ChunksDigest(p) || len(ms) != 3 {
		t.Fatalf("%d records, digest %x", len(ms), d)
	}
	for i, m := range ms {
		c, err := schema.DecodeLedgerChunk(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != "s" || header(m, schema.LedgerTypeHeader) != schema.LedgerTypeChunk || c.Chunk != int32(i+1) || c.Chunks != 4 ||
			!bytes.Equal(c.Digest, d[:]) || !bytes.Equal(c.Payload, p[i+1]) || c.Epoch != "E" || c.ReleaseID != "s/r/1" {
			t.Errorf("record %d: %+v", i, c)
		}
	}
	if _, _, err := ChunkMessages("s", "s/r/1", "E", p[:1], 5); err == nil {
		t.Error("one chunk: no error")
	}
	if ChunksDigest(attempt("a", 2)) == ChunksDigest(attempt("b", 2)) || ChunksDigest(p[:2]) == ChunksDigest(p[:3]) {
		t.Error("different attempts share a digest")
	}
}
