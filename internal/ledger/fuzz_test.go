package ledger

import (
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/schema"
)

// FuzzBookApply feeds arbitrary ledger records to a Book: it must return an
// error or an entry, never panic, and never count a record it could not
// decode as a valid charge.
func FuzzBookApply(f *testing.F) {
	for _, m := range []kafka.Message{
		ChargeMessage("s", []byte{2, 'x'}, "e"),
		{Value: []byte{0, 0, 0}},
	} {
		f.Add(m.Value, schema.LedgerTypeCharge, "e")
	}
	if m, err := EpochMessage(schema.LedgerEpoch{Epoch: "e", Owner: "o", At: 1}); err == nil {
		f.Add(m.Value, schema.LedgerTypeEpoch, "")
	}
	if m, err := StartMessage(schema.StreamStart{Stream: "s", Start: 1000, Source: schema.StartFromConfig, At: 1}); err == nil {
		f.Add(m.Value, schema.LedgerTypeStart, "")
	}
	if ms, _, err := ChunkMessages("s", "s/r/1", "e", [][]byte{{1}, {2}}, 1); err == nil {
		f.Add(ms[0].Value, schema.LedgerTypeChunk, "")
	}
	if ms, err := CheckpointMessages(schema.CheckpointState{Releaser: []byte("0123456789")}, "o", "e", 0, 1, 0, 1, 4); err == nil {
		f.Add(ms[0].Value, schema.LedgerTypeCheckpoint, "e")
		f.Add(ms[1].Value, schema.LedgerTypeCheckpointPart, "")
	}
	f.Fuzz(func(t *testing.T, value []byte, typ, epoch string) {
		var b Book
		m := kafka.Message{Value: value, Headers: []kafka.Header{{Key: schema.LedgerTypeHeader, Value: []byte(typ)}, {Key: schema.LedgerEpochHeader, Value: []byte(epoch)}}}
		e, err := b.Apply(m)
		if err != nil {
			if b.Charged(e.Charge.ReleaseID) && e.Charge.ReleaseID != "" {
				t.Fatalf("a record that failed (%v) was counted as charged", err)
			}
			return
		}
		if e.Type == schema.LedgerTypeCharge && e.Valid != (epoch == b.Epoch()) {
			t.Fatalf("charge with epoch %q valid=%v while the book's epoch is %q", epoch, e.Valid, b.Epoch())
		}
	})
}
