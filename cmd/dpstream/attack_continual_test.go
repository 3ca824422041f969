package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
	"github.com/segmentio/kafka-go"
)

// TestAttackTailLedgerPrintsExactData: a continual release's ledger
// charge logs each window's exact statistic x (PRE-NOISE DATA) and its
// noise z, so that a restart can replay the run. The README's topic table
// still grants operators and auditors Read on dpstream.ledger ("every
// charge with its release"; ACL example: operators Read the ledger for
// `dpstream budget` and `dpstream tail`), unlike dpstream.partials
// ("dpstream only: exact per-window statistics before noise"), and `tail
// ledger` prints continual_x and continual_z verbatim: an auditor who may
// read the ledger learns every window's exact count — and the exact noise
// of each published total.
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackTailLedgerPrintsExactData(t *testing.T) {
	rel, err := schema.EncodeRelease(schema.Release{ReleaseID: "s/n/0", Stream: "s", Release: "n", Kind: "count", Status: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := schema.EncodeLedgerCharge(schema.LedgerCharge{ReleaseID: "s/n/0", Stream: "s", Release: "n", Status: "ok", Payload: rel, At: 2,
		ContinualFirst: 0, ContinualX: []int64{1234567}, ContinualZ: []int64{-42}, ContinualFactor: "f",
		State: []byte("exact 1234567")})
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: "E", Owner: "test", At: 1})
	if err != nil {
		t.Fatal(err)
	}
	decode := ledgerDecoder(nil)
	var last string
	for i, m := range []kafka.Message{epoch, ledger.ChargeMessage("s", lc, "E")} {
		m.Offset = int64(i)
		v, err := decode(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		last = string(b)
	}
	// (The state is also checked as Avro bytes, which JSON prints in
	// base64.)
	if strings.Contains(last, "1234567") || strings.Contains(last, `"continual_z"`) || strings.Contains(last, `"state":`) ||
		!strings.Contains(last, `"state_bytes":13`) {
		t.Errorf("`tail ledger` prints a continual window's exact statistic and noise: %s", last)
	}
}
