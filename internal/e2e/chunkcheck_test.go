package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// TestChunkChecksCatch feeds the crash test's checks of releases in chunks
// (readAnswers, checkPublished, joinAnswers) ledgers and releases topics
// written by hand, without a broker: a run that follows the chunk protocol
// passes, and each way of breaking it is reported. These are the failures
// the crash and end-to-end tests would see if the release stage published
// chunks other than the ones the ledger ties to the counted charge.
func TestChunkChecksCatch(t *testing.T) {
	const id = "s/z/1"
	public := map[string][]string{"z": chunkTestKeys(0, 60)}
	a := chunkAttempt(t, id, 1, public["z"], nil)
	b := chunkAttempt(t, id, 2, public["z"], nil) // another attempt: other noise
	if len(a) < 3 {
		t.Fatalf("the attempt is in %d chunks, want at least 3", len(a))
	}
	// A consistent attempt whose chunks lose a key, or repeat one.
	lost := chunkAttempt(t, id, 1, chunkTestKeys(1, 60), nil)
	repeated := chunkAttempt(t, id, 1, public["z"], func(parts []schema.Release) {
		parts[1].Keys = append([]string{parts[0].Keys[len(parts[0].Keys)-1]}, parts[1].Keys[1:]...)
	})

	for _, tc := range []struct {
		name   string
		ledger []kafka.Message
		pubs   []kafka.Message
		want   []string // a substring of the violations, each; none: no violation
	}{
		{"the protocol: chunks, charge, every chunk published once",
			chunkLedger(t, "E", id, a), chunkPubs(id, a, true), nil},
		{"every chunk republished after a crash, byte-identical",
			chunkLedger(t, "E", id, a), append(chunkPubs(id, a, true), chunkPubs(id, a, true)...), nil},
		{"an orphan attempt's chunks before the counted one's",
			append(chunkLedger(t, "D", id, b)[:len(b)], chunkLedger(t, "E", id, a)...), chunkPubs(id, a, true), nil},
		{"chunk 0 published before the ledger append, decided again",
			chunkLedger(t, "E", id, a), append(chunkPubs(id, b, false)[:1], chunkPubs(id, a, true)...),
			[]string{"chunk 0 of 3 at releases offset 0 has bytes that differ from the ledger's payload"}},
		{"a chunk of another attempt (a mixture)",
			chunkLedger(t, "E", id, a), []kafka.Message{chunkPubs(id, a, true)[0], chunkPubs(id, b, true)[1], chunkPubs(id, a, true)[2]},
			[]string{"chunk 1 of 3 at releases offset 1 has bytes that differ from the ledger's payload of that chunk (its matched chunk record)", "chunk 1 of 3 is charged but never published"}},
		{"a chunk lost",
			chunkLedger(t, "E", id, a), chunkPubs(id, a, true)[:2], []string{"chunk 2 of 3 is charged but never published"}},
		{"chunks published without a charge",
			chunkLedger(t, "E", id, a)[:len(a)], chunkPubs(id, a, true), []string{"without a ledger charge"}},
		{"a charge whose chunk records the ledger lacks",
			append(chunkLedger(t, "E", id, a)[:1], chunkLedger(t, "E", id, a)[len(a):]...), chunkPubs(id, a, true)[:1],
			[]string{"the ledger holds no chunk records matched with it", "the record at releases offset 0 is chunk 0 of 3, but the ledger's answer is in 1"}},
		{"chunks that lose a public key", chunkLedger(t, "E", id, lost), chunkPubs(id, lost, true), []string{`not its 60 public keys each once ("k00000" missing)`}},
		{"chunks that repeat a key", chunkLedger(t, "E", id, repeated), chunkPubs(id, repeated, true), []string{"do not join"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.ledger {
				tc.ledger[i].Offset = int64(i)
			}
			for i := range tc.pubs {
				tc.pubs[i].Offset = int64(i)
			}
			answers, got := readAnswers(tc.ledger)
			got = append(got, checkPublished(answers, tc.pubs)...)
			_, bad := joinAnswers(answers, public)
			got = append(got, bad...)
			if len(tc.want) == 0 && len(got) > 0 {
				t.Fatalf("violations in a run that follows the protocol: %q", got)
			}
			for _, w := range tc.want {
				found := false
				for _, v := range got {
					found = found || strings.Contains(v, w)
				}
				if !found {
					t.Errorf("no violation says %q; got %q", w, got)
				}
			}
		})
	}
}

// chunkTestKeys are keys k<lo> to k<hi-1>, 6 bytes each.
func chunkTestKeys(lo, hi int) []string {
	var out []string
	for i := lo; i < hi; i++ {
		out = append(out, fmt.Sprintf("k%05d", i))
	}
	return out
}

// chunkAttempt is one decision of release id over keys (its values made
// from seed), split into chunks of at most 600 bytes, changed by edit if
// set, and encoded.
func chunkAttempt(t *testing.T, id string, seed int, keys []string, edit func([]schema.Release)) [][]byte {
	t.Helper()
	r := schema.Release{ReleaseID: id, Stream: "s", Release: "z", Kind: "count", WindowStart: 1000, WindowEnd: 2000,
		Status: release.StatusOK, Epsilon: 1, Noise: []schema.NoiseComponent{}, Fields: []string{"zone"}, Keys: keys}
	for i := range keys {
		r.Values = append(r.Values, float64(seed*1000+i))
		r.Intervals95 = append(r.Intervals95, 3)
	}
	parts, err := schema.SplitRelease(r, 600)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(parts)
	}
	out := make([][]byte, len(parts))
	for i, p := range parts {
		if out[i], err = schema.EncodeRelease(p); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// chunkLedger is a ledger in which the owner of epoch appends an attempt
// as the release stage does: its marker, the chunk records 1..n-1, then
// the charge with chunk 0 as its payload.
func chunkLedger(t *testing.T, epoch, id string, chunks [][]byte) []kafka.Message {
	t.Helper()
	marker, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: epoch, Owner: "test", At: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := []kafka.Message{marker}
	if len(chunks) > 1 {
		ms, _, err := ledger.ChunkMessages("s", id, epoch, chunks, 1)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ms...)
	}
	b, err := schema.EncodeLedgerCharge(schema.LedgerCharge{ReleaseID: id, Stream: "s", Release: "z", WindowStart: 1000, Status: release.StatusOK,
		Charges: []schema.NoiseComponent{}, RDP: []float64{}, Payload: chunks[0], At: 1})
	if err != nil {
		t.Fatal(err)
	}
	return append(out, ledger.ChargeMessage("s", b, epoch))
}

// chunkPubs are the releases-topic records of an attempt's chunks, keyed by
// release id, with the chunk header as the release stage writes them, or
// without it (as the broken crash child publishes a record).
func chunkPubs(id string, chunks [][]byte, header bool) []kafka.Message {
	out := make([]kafka.Message, len(chunks))
	for i, c := range chunks {
		out[i] = kafka.Message{Key: []byte(id), Value: c}
		if header {
			out[i].Headers = []kafka.Header{{Key: release.ChunkHeader, Value: []byte(fmt.Sprintf("%d/%d", i, len(chunks)))}}
		}
	}
	return out
}
