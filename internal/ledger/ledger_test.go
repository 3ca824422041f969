package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
)

// rec builds the ledger records of a scenario: "E:x" an epoch marker x,
// "C:id:epoch:payload" a charge (epoch "-" for a legacy charge without the
// header), "S:stream:start" a stream start.
func rec(t *testing.T, specs ...string) []kafka.Message {
	t.Helper()
	var out []kafka.Message
	for i, s := range specs {
		f := strings.Split(s, ":")
		var m kafka.Message
		var err error
		switch f[0] {
		case "E":
			m, err = EpochMessage(schema.LedgerEpoch{Epoch: f[1], Owner: "test", At: 1})
		case "C":
			id := strings.Split(f[1], "/")
			var w int64 // the id's last part, in seconds
			for _, c := range id[len(id)-1] {
				w = w*10 + int64(c-'0')
			}
			lc := schema.LedgerCharge{ReleaseID: f[1], Stream: id[0], Release: "n", WindowStart: w * 1000, Status: "ok",
				Charges: []schema.NoiseComponent{}, RDP: []float64{}, Payload: []byte(f[3]), At: 1}
			b, e := schema.EncodeLedgerCharge(lc)
			if e != nil {
				t.Fatal(e)
			}
			if f[2] == "-" {
				m = kafka.Message{Key: []byte(lc.Stream), Value: b}
			} else {
				m = ChargeMessage(lc.Stream, b, f[2])
			}
		case "S":
			var start int64
			for _, c := range f[2] {
				start = start*10 + int64(c-'0')
			}
			m, err = StartMessage(schema.StreamStart{Stream: f[1], Start: start, Source: schema.StartFromFirstRun, At: 1})
		}
		if err != nil {
			t.Fatal(err)
		}
		m.Offset = int64(i)
		out = append(out, m)
	}
	return out
}

func TestBookValidity(t *testing.T) {
	for _, tc := range []struct {
		name string
		recs []string
		// want per record: "v" valid charge, "x" void charge, "d" valid
		// duplicate with another payload, "i" identical duplicate, "e"
		// marker, "s" first start, "t" later start.
		want  string
		epoch string
	}{
		{"legacy charges count", []string{"C:s/n/1:-:a", "C:s/n/2:-:b"}, "vv", ""},
		{"charges of the current epoch count", []string{"C:s/n/1:-:a", "E:A", "C:s/n/2:A:b"}, "vev", "A"},
		{"a legacy charge after a marker is void", []string{"E:A", "C:s/n/1:-:a"}, "ex", "A"},
		{"the old owner's charge after a newer marker is void",
			[]string{"E:A", "C:s/n/1:A:a", "E:B", "C:s/n/2:A:b", "C:s/n/2:B:c"}, "evexv", "B"},
		{"an owner that takes over again starts a new epoch",
			[]string{"E:A", "E:B", "E:A", "C:s/n/1:B:a", "C:s/n/1:A:b"}, "eeexv", "A"},
		{"two valid charges for one id with different payloads", []string{"C:s/n/1:-:a", "C:s/n/1:-:b"}, "vd", ""},
		{"a retried write is an identical duplicate", []string{"E:A", "C:s/n/1:A:a", "C:s/n/1:A:a"}, "evi", "A"},
		{"the first start counts", []string{"S:s:5000", "S:s:7000", "S:u:9000"}, "sts", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Book
			var got strings.Builder
			for _, m := range rec(t, tc.recs...) {
				e, err := b.Apply(m)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case e.Type == schema.LedgerTypeEpoch:
					got.WriteByte('e')
				case e.Type == schema.LedgerTypeStart && e.FirstStart:
					got.WriteByte('s')
				case e.Type == schema.LedgerTypeStart:
					got.WriteByte('t')
				case !e.Valid:
					got.WriteByte('x')
				case e.Identical:
					got.WriteByte('i')
				case e.Duplicate:
					got.WriteByte('d')
				default:
					got.WriteByte('v')
				}
			}
			if got.String() != tc.want || b.Epoch() != tc.epoch {
				t.Fatalf("got %s with epoch %q, want %s with epoch %q", got.String(), b.Epoch(), tc.want, tc.epoch)
			}
		})
	}
}

func TestBookStartsAndPayloads(t *testing.T) {
	var b Book
	for _, m := range rec(t, "S:s:5000", "E:A", "C:s/n/1:A:first", "C:s/n/1:A:second", "S:s:1", "C:u/n/1:old:x") {
		if _, err := b.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	if st, ok := b.Start("s"); !ok || st.Start != 5000 {
		t.Errorf("start of s = %+v, %v; want 5000", st, ok)
	}
	if !b.Charged("s/n/1") {
		t.Error("a valid charge is not charged")
	}
	if b.Charged("u/n/1") {
		t.Error("a void charge is charged")
	}
	if w, ok := b.LatestCharged("s"); !ok || w != 1000 {
		t.Errorf("latest charged window = %d, %v", w, ok)
	}
	if _, ok := b.LatestCharged("u"); ok {
		t.Error("a void charge counts as charged")
	}
	if b.Void() != 1 || b.Next() != 6 {
		t.Errorf("void %d next %d, want 1 and 6", b.Void(), b.Next())
	}
}

func TestBookRejectsWhatItCannotRead(t *testing.T) {
	for name, m := range map[string]kafka.Message{
		"garbage charge": {Value: []byte{1, 2, 3}},
		"unknown type":   {Value: []byte{}, Headers: []kafka.Header{{Key: schema.LedgerTypeHeader, Value: []byte("quota")}}},
		"garbage epoch":  {Value: []byte{9}, Headers: []kafka.Header{{Key: schema.LedgerTypeHeader, Value: []byte(schema.LedgerTypeEpoch)}}},
	} {
		var b Book
		if _, err := b.Apply(m); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	empty, err := EpochMessage(schema.LedgerEpoch{})
	if err != nil {
		t.Fatal(err)
	}
	var b Book
	if _, err := b.Apply(empty); err == nil || !strings.Contains(err.Error(), "without an epoch") {
		t.Errorf("empty epoch: %v", err)
	}
}

func TestAlign(t *testing.T) {
	for _, tc := range []struct {
		t    int64
		size time.Duration
		want int64
	}{{12_345, 10 * time.Second, 10_000}, {20_000, 10 * time.Second, 20_000}, {-1, time.Second, -1000}, {7, 0, 7}} {
		if got := Align(tc.t, tc.size); got != tc.want {
			t.Errorf("Align(%d, %s) = %d, want %d", tc.t, tc.size, got, tc.want)
		}
	}
}

// TestStreamStarts records starts on the embedded broker: the first run
// records the window holding now, a later run (with a later clock) keeps
// it, a configured start overrides it, a stream whose ledger predates
// starts begins at its latest charge, and a racing second start record
// does not change the answer.
func TestStreamStarts(t *testing.T) {
	e, err := kafkaio.StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	conn := e.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const topic = "ledger"
	if err := conn.EnsureTopics(ctx, []kafkaio.TopicSpec{{Name: topic, Partitions: 1, Forever: true}}); err != nil {
		t.Fatal(err)
	}
	// Charges written before starts were recorded, for stream "old":
	// windows at 1s and 25s (a window far in the past, as an older
	// version's ledger may hold, and the latest one).
	w := conn.NewWriter(topic)
	defer w.Close()
	for _, legacy := range rec(t, "C:old/n/1:-:a", "C:old/n/25:-:b") {
		if err := w.WriteMessages(ctx, kafka.Message{Key: legacy.Key, Value: legacy.Value}); err != nil {
			t.Fatal(err)
		}
	}
	size := 10 * time.Second
	t0 := time.UnixMilli(1_750_000_123_456)
	streams := []StreamSchedule{{Name: "trips", Size: size}, {Name: "old", Size: size}}
	got, err := StreamStarts(ctx, conn, topic, streams, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got["trips"] != 1_750_000_120_000 || got["old"] != 20_000 {
		t.Fatalf("first run: %v, want trips at 1750000120000 and old at its latest charge's window (20000)", got)
	}
	// A start appended later by a racing process does not count.
	late, err := StartMessage(schema.StreamStart{Stream: "trips", Start: 42, Source: schema.StartFromFirstRun})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMessages(ctx, late); err != nil {
		t.Fatal(err)
	}
	got, err = StreamStarts(ctx, conn, topic, streams, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got["trips"] != 1_750_000_120_000 {
		t.Fatalf("second run: trips starts at %d, want the first recorded 1750000120000", got["trips"])
	}
	streams[0].Configured = time.UnixMilli(1_700_000_005_000)
	got, err = StreamStarts(ctx, conn, topic, streams, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got["trips"] != 1_700_000_000_000 {
		t.Fatalf("configured start: %d, want it aligned down to 1700000000000", got["trips"])
	}
	book, err := ReadBook(ctx, conn, topic)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := book.Start("trips"); st.Source != schema.StartFromFirstRun {
		t.Errorf("recorded start source %q, want first_run", st.Source)
	}
	if st, _ := book.Start("old"); st.Source != schema.StartFromLedger {
		t.Errorf("old stream's start source %q, want ledger", st.Source)
	}
}

// TestBookRefusesGaps: a record that does not follow the last one applied,
// or a first record after the log start the Book was given, means records
// were deleted under the reader (a trim), which may have held a marker:
// ErrGap, and the Book is unchanged.
func TestBookRefusesGaps(t *testing.T) {
	msgs := rec(t, "E:a", "C:s/n/1:a:x", "E:b", "C:s/n/2:a:y")
	for name, tc := range map[string]struct {
		start int64 // the log start given (-1: none)
		apply []int // indexes of msgs, in order
	}{
		"a record skipped":                 {-1, []int{0, 1, 3}},
		"the first record after the start": {0, []int{1}},
		"a trimmed start, read late":       {1, []int{2}},
	} {
		t.Run(name, func(t *testing.T) {
			var b Book
			if tc.start >= 0 {
				b.StartAt(tc.start)
			}
			var err error
			for _, i := range tc.apply {
				if _, err = b.Apply(msgs[i]); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrGap) {
				t.Fatalf("got %v, want ErrGap", err)
			}
		})
	}
	var b Book
	for _, m := range msgs {
		if _, err := b.Apply(m); err != nil {
			t.Fatalf("contiguous records: %v", err)
		}
	}
}
