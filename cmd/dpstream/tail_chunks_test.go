package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// chunkedRelease returns a per-key release of n keys and its chunks of at
// most maxBytes, encoded.
func chunkedRelease(t *testing.T, id string, n, maxBytes int) (schema.Release, [][]byte) {
	t.Helper()
	return chunkedReleaseAt(t, id, n, maxBytes, 120001)
}

// chunkedReleaseAt is chunkedRelease published at unix ms at.
func chunkedReleaseAt(t *testing.T, id string, n, maxBytes int, at int64) (schema.Release, [][]byte) {
	t.Helper()
	r := schema.Release{ReleaseID: id, Stream: "s", Release: "zones", Kind: "some_kind", Status: "ok", WindowStart: 60000, WindowEnd: 120000,
		Epsilon: 1, EpsilonBudget: 10, PublishedAt: at}
	for i := range n {
		r.Keys = append(r.Keys, fmt.Sprintf("zone-%04d", i))
		r.Values = append(r.Values, float64(i))
		r.Intervals95 = append(r.Intervals95, 2.5)
	}
	parts, err := schema.SplitRelease(r, maxBytes)
	if err != nil || len(parts) < 3 {
		t.Fatalf("%d chunks, %v", len(parts), err)
	}
	var out [][]byte
	for _, p := range parts {
		b, err := schema.EncodeRelease(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return r, out
}

// TestTailJoinsChunks: `tail releases` prints a release published in
// chunks once, joined, when its last chunk arrives, whatever the order of
// the chunks, releases interleaved with them, and repeated copies (a
// recovery's republish, a paused owner's late publish); --chunks prints
// the records as they are.
func TestTailJoinsChunks(t *testing.T) {
	a, ac := chunkedRelease(t, "s/zones/60000", 300, 1500)
	b, bc := chunkedRelease(t, "s/zones/120000", 200, 1500)
	whole := schema.Release{ReleaseID: "s/n/60000", Stream: "s", Release: "n", Kind: "count", Status: "ok"}
	wb, err := schema.EncodeRelease(whole)
	if err != nil {
		t.Fatal(err)
	}
	// a's chunks in reverse, b's interleaved, a whole release between, a
	// chunk repeated before and after its release completes.
	var recs [][]byte
	recs = append(recs, ac[len(ac)-1], bc[0], ac[1], wb, ac[1], bc[1])
	for i := len(ac) - 2; i >= 0; i-- {
		if i != 1 {
			recs = append(recs, ac[i])
		}
	}
	recs = append(recs, ac[0])
	recs = append(recs, bc[2:]...)
	recs = append(recs, bc[0])
	join := releaseJoiner()
	var got []schema.Release
	for i, v := range recs {
		out, err := join(kafka.Message{Value: v, Offset: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if out != nil {
			got = append(got, out.(schema.Release))
		}
	}
	if len(got) != 3 || got[0].ReleaseID != whole.ReleaseID || got[1].ReleaseID != a.ReleaseID || got[2].ReleaseID != b.ReleaseID {
		t.Fatalf("printed %d releases, want the whole one, then %s, then %s, once each", len(got), a.ReleaseID, b.ReleaseID)
	}
	for i, want := range []schema.Release{a, b} {
		wantB, _ := schema.EncodeRelease(want)
		gotB, _ := schema.EncodeRelease(got[i+1])
		if !bytes.Equal(gotB, wantB) {
			t.Errorf("%s: the printed release is not the joined one", want.ReleaseID)
		}
		line, err := json.Marshal(got[i+1])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(line), `"chunk`) || !strings.Contains(string(line), `"keys":["zone-0000"`) {
			t.Errorf("JSON line of a joined release: %.200s", line)
		}
	}
	// Chunks that do not join are an error, printed and skipped.
	bad := releaseJoiner()
	_, oc := chunkedReleaseAt(t, "s/zones/60000", 300, 1500, 120002) // another attempt, as no release stage publishes
	if _, err := bad(kafka.Message{Value: ac[0]}); err != nil {
		t.Fatal(err)
	}
	var joinErr error
	for _, c := range oc[1:len(ac)] {
		if _, err := bad(kafka.Message{Value: c}); err != nil {
			joinErr = err
		}
	}
	if joinErr == nil || !strings.Contains(joinErr.Error(), "join release") {
		t.Errorf("chunks of two attempts: %v, want a join error", joinErr)
	}
}

// TestTailLedgerShowsChunks: `tail ledger` prints chunk records with their
// decoded payload, and a charge of a release in chunks with its number of
// chunks.
func TestTailLedgerShowsChunks(t *testing.T) {
	_, chunks := chunkedRelease(t, "s/zones/60000", 300, 1500)
	epoch, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: "E", Owner: "test", At: 1})
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := ledger.ChunkMessages("s", "s/zones/60000", "E", chunks, 2)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := schema.EncodeLedgerCharge(schema.LedgerCharge{ReleaseID: "s/zones/60000", Stream: "s", Release: "zones", WindowStart: 60000,
		Status: "ok", Payload: chunks[0], At: 2})
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]kafka.Message{epoch}, msgs...), ledger.ChargeMessage("s", lc, "E"))
	decode := ledgerDecoder(nil)
	var lines []string
	for i, m := range all {
		m.Offset = int64(i)
		v, err := decode(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	for i := 1; i < len(all)-1; i++ {
		if !strings.Contains(lines[i], `"type":"chunk"`) || !strings.Contains(lines[i], fmt.Sprintf(`"chunk":%d`, i)) || !strings.Contains(lines[i], `"payload":{"release_id":"s/zones/60000"`) {
			t.Errorf("chunk record %d: %.300s", i, lines[i])
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `"type":"charge"`) || !strings.Contains(last, fmt.Sprintf(`"chunks":%d`, len(chunks))) || !strings.Contains(last, `"valid":true`) {
		t.Errorf("charge: %.300s", last)
	}
}

// TestTailLedgerReadsOnAfterATrim: a ledger partition trimmed while tail
// reads it (the reader jumps past the deleted records) is read on, with a
// warning naming the jump, rather than every later record refused as out
// of order.
func TestTailLedgerReadsOnAfterATrim(t *testing.T) {
	epoch, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: "E", Owner: "test", At: 1})
	if err != nil {
		t.Fatal(err)
	}
	charge := func(window int64) kafka.Message {
		id := fmt.Sprintf("s/n/%d", window)
		payload, err := schema.EncodeRelease(schema.Release{ReleaseID: id, Stream: "s", Release: "n", Kind: "count", Status: "ok",
			WindowStart: window, WindowEnd: window + 1000, Epsilon: 1, EpsilonBudget: 10, PublishedAt: 2})
		if err != nil {
			t.Fatal(err)
		}
		lc, err := schema.EncodeLedgerCharge(schema.LedgerCharge{ReleaseID: id, Stream: "s", Release: "n", WindowStart: window,
			Status: "ok", Payload: payload, At: 2})
		if err != nil {
			t.Fatal(err)
		}
		return ledger.ChargeMessage("s", lc, "E")
	}
	var warnings []string
	decode := ledgerDecoder(func(s string) { warnings = append(warnings, s) })
	// Offsets 0-2, then 7-8: 3-6 were trimmed under the reader.
	for i, m := range []kafka.Message{epoch, charge(0), charge(1000), epoch, charge(5000)} {
		m.Offset = []int64{0, 1, 2, 7, 8}[i]
		if _, err := decode(m); err != nil {
			t.Fatalf("record at %d: %v", m.Offset, err)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "reading on from offset 7") {
		t.Errorf("warnings %q, want one naming the jump to offset 7", warnings)
	}
}
