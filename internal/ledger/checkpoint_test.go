package ledger

import (
	"errors"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/schema"
)

// ckpt returns the records of a checkpoint of epoch at basis, in parts of
// partBytes, with a state naming one start and a releaser blob.
func ckpt(t *testing.T, epoch string, basis int64, partBytes int) []kafka.Message {
	t.Helper()
	st := schema.CheckpointState{Marker: schema.LedgerEpoch{Epoch: epoch, Owner: "test", At: 1},
		Starts:   []schema.StreamStart{{Stream: "s", Start: 5000, Source: schema.StartFromFirstRun, At: 1}},
		Latest:   []schema.StreamLatest{{Stream: "s", WindowStart: 9000}},
		Witness:  []schema.TopicOffset{{Topic: "releases", Partition: 0, Offset: 12}},
		Releaser: []byte(strings.Repeat("state ", 40))}
	ms, err := CheckpointMessages(st, "test", epoch, 0, 1, basis, 1, partBytes)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// at numbers records from offset from.
func at(from int64, ms ...[]kafka.Message) []kafka.Message {
	var out []kafka.Message
	for _, g := range ms {
		for _, m := range g {
			m.Offset = from + int64(len(out))
			out = append(out, m)
		}
	}
	return out
}

// apply applies ms to a Book starting at logStart and returns it, the
// entries, and the first error.
func apply(logStart int64, ms []kafka.Message) (*Book, []Entry, error) {
	b := &Book{}
	b.StartAt(logStart)
	var es []Entry
	for _, m := range ms {
		e, err := b.Apply(m)
		if err != nil {
			return b, es, err
		}
		es = append(es, e)
	}
	return b, es, nil
}

func TestCheckpointInTheMiddle(t *testing.T) {
	// A marker, a charge, then a checkpoint at offset 2 (its basis) in
	// several parts, then a charge: the checkpoint is usable, its state
	// decodes, and the Book goes on as if it were not there.
	head := at(0, rec(t, "E:a", "C:s/n/9:a:x"))
	cp := ckpt(t, "a", 2, 64)
	if len(cp) < 3 {
		t.Fatalf("checkpoint in %d records, want several parts", len(cp))
	}
	ms := at(0, head, cp, rec(t, "C:s/n/10:a:y"))
	b, es, err := apply(0, ms)
	if err != nil {
		t.Fatal(err)
	}
	var done *Checkpoint
	for _, e := range es {
		if e.Checkpoint != nil {
			done = e.Checkpoint
		}
	}
	if done == nil || !done.Valid || !done.Usable || done.Restored || done.Offset != 2 || done.Err != nil {
		t.Fatalf("checkpoint %+v, want a valid usable one at offset 2, not restored", done)
	}
	if string(done.State.Releaser) != strings.Repeat("state ", 40) || done.State.Witness[0].Offset != 12 {
		t.Errorf("checkpoint state %+v", done.State)
	}
	if off, ok := b.LastCheckpoint(); !ok || off != 2 {
		t.Errorf("LastCheckpoint %d %v, want 2", off, ok)
	}
	if last := es[len(es)-1]; !last.Valid {
		t.Error("the charge after the checkpoint is not valid")
	}
}

func TestCheckpointRestoresAtTheHead(t *testing.T) {
	// A partition trimmed to its checkpoint (log start 40): the Book
	// restores from it, takes its epoch, and counts the charges after it
	// of that epoch.
	ms := at(40, ckpt(t, "a", 40, 64), rec(t, "C:s/n/10:a:y", "C:s/n/11:b:z"))
	b, es, err := apply(40, ms)
	if err != nil {
		t.Fatal(err)
	}
	var restored bool
	for _, e := range es {
		if e.Checkpoint != nil && e.Checkpoint.Restored && e.Checkpoint.Usable {
			restored = true
		}
	}
	if !restored || b.Epoch() != "a" {
		t.Fatalf("restored %v, epoch %q; want the checkpoint restored with epoch a", restored, b.Epoch())
	}
	if st, ok := b.Start("s"); !ok || st.Start != 5000 {
		t.Errorf("start of s after the restore: %+v %v", st, ok)
	}
	if w, ok := b.LatestCharged("s"); !ok || w != 10000 {
		t.Errorf("latest charged %d %v, want the charge after the checkpoint's 10000", w, ok)
	}
	if !es[len(es)-2].Valid || es[len(es)-1].Valid {
		t.Error("after the restore, the charge of epoch a must be valid and the one of epoch b void")
	}
}

func TestCheckpointLost(t *testing.T) {
	cp := ckpt(t, "a", 40, 64)
	for _, tc := range []struct {
		name     string
		logStart int64
		ms       []kafka.Message
	}{
		{"trimmed past the checkpoint", 41, at(41, cp[1:], rec(t, "C:s/n/10:a:y"))},
		{"a charge first", 7, at(7, rec(t, "C:s/n/10:a:y"))},
		{"a part missing", 40, at(40, cp[:1], cp[2:])},
		{"a record between the parts", 40, at(40, cp[:2], rec(t, "S:t:1000"), cp[2:])},
		{"a corrupt part", 40, at(40, cp[:1], corrupt(cp[1:2]), cp[2:])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := apply(tc.logStart, tc.ms)
			if !errors.Is(err, ErrNoCheckpoint) {
				t.Errorf("error %v, want ErrNoCheckpoint", err)
			}
		})
	}
}

func corrupt(ms []kafka.Message) []kafka.Message {
	c, _ := schema.DecodeLedgerChunk(ms[0].Value)
	c.Payload = append([]byte("x"), c.Payload[1:]...)
	v, _ := schema.EncodeLedgerChunk(c)
	m := ms[0]
	m.Value = v
	return []kafka.Message{m}
}

func TestCheckpointNotUsable(t *testing.T) {
	// Checkpoints in the middle of a partition that must never be trimmed
	// to: written after another owner's marker (void), with a basis that
	// is not their offset (a record came between), with a record between
	// their parts, or whose parts do not match their digest.
	for _, tc := range []struct {
		name      string
		ms        []kafka.Message
		valid     bool
		wantError bool
	}{
		{"void", at(0, rec(t, "E:a", "E:b"), ckpt(t, "a", 2, 64)), false, false},
		{"basis behind", at(0, rec(t, "E:a", "S:t:1000"), ckpt(t, "a", 1, 64)), true, false},
		{"interleaved", at(0, rec(t, "E:a"), ckpt(t, "a", 1, 64)[:2], rec(t, "S:t:1000"), ckpt(t, "a", 1, 64)[2:]), true, false},
		{"digest", at(0, rec(t, "E:a"), ckpt(t, "a", 1, 64)[:1], corrupt(ckpt(t, "a", 1, 64)[1:2]), ckpt(t, "a", 1, 64)[2:]), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, es, err := apply(0, tc.ms)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				if c := e.Checkpoint; c != nil && (c.Usable || c.Valid != tc.valid || (c.Err != nil) != tc.wantError) {
					t.Errorf("checkpoint %+v: want valid %v, not usable, error %v", c, tc.valid, tc.wantError)
				}
			}
			if _, ok := b.LastCheckpoint(); ok {
				t.Error("a checkpoint that is not usable became the trim point")
			}
		})
	}
}
