package accumulate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
)

// TestAdmit covers the checks Admit adds to Extract: decoding, the
// partition of the unit, and the release schedule (the stream's start and
// max_skew, against the record's clock).
func TestAdmit(t *testing.T) {
	dec, err := schema.NewDecoder(schema.FormatJSON, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	const parts = 4
	home := kafkaio.PartitionFor([]byte("r1"), parts) // where unit r1 belongs
	now := time.UnixMilli(1_750_000_000_000)
	const skew = 60_000
	start := now.UnixMilli() - 3_600_000
	rec := func(value string, partition int) Record {
		return Record{Value: []byte(value), Offset: 9, Time: now, Partition: partition, Partitions: parts}
	}
	event := func(ts int64) string { return fmt.Sprintf(`{"rider":"r1","ts":%d,"fare":3}`, ts) }
	maxBytes := len(event(now.UnixMilli())) + 1
	sent := func(r Record, at time.Time) Record { r.Time = at; return r }
	for _, tc := range []struct {
		name       string
		eventLevel bool
		r          Record
		now        time.Time // zero: the test's now
		noClock    bool      // Admit with a zero now (simulate)
		wantReason Reason    // "" when admitted
		wantDetail string
		wantClock  int64 // admitted: Event.Clock (0: now)
	}{
		{name: "admitted", r: rec(event(now.UnixMilli()), home)},
		{name: "undecodable", r: rec("\x00not json", home), wantReason: ReasonUndecodable},
		{name: "extraction rejects", r: rec(`{"ts":1,"fare":3}`, home), wantReason: ReasonMissingUnit},
		{name: "misrouted", r: rec(event(now.UnixMilli()), (home+1)%parts), wantReason: ReasonMisrouted,
			wantDetail: fmt.Sprintf("belongs on partition %d", home)},
		{name: "event-level records go anywhere", eventLevel: true, r: rec(event(now.UnixMilli()), (home+1)%parts)},
		{name: "at max_skew ahead", r: rec(event(now.UnixMilli()+skew), home)},
		{name: "past max_skew", r: rec(event(now.UnixMilli()+skew+1), home), wantReason: ReasonFuture,
			wantDetail: "more than max_skew 1m0s ahead of the clock 2025-06-15T15:06:40Z"},
		{name: "an hour ahead", r: rec(event(now.UnixMilli()+3_600_000), home), wantReason: ReasonFuture},
		// The record's clock is its Kafka timestamp when that is earlier
		// than the wall clock: a replay a minute later judges it the same.
		{name: "judged by an earlier record timestamp", r: sent(rec(event(now.UnixMilli()), home), now.Add(-2*time.Minute)),
			wantReason: ReasonFuture, wantDetail: "ahead of the clock 2025-06-15T15:04:40Z"},
		{name: "replayed later, same clock", r: sent(rec(event(now.UnixMilli()-90_000), home), now.Add(-2*time.Minute)), now: now.Add(time.Hour),
			wantClock: now.UnixMilli() - 120_000},
		// A record stamped ahead of the wall clock is judged by the wall
		// clock: a producer cannot move the clock forward.
		{name: "record timestamp ahead of the wall clock", r: sent(rec(event(now.UnixMilli()+skew+1), home), now.Add(time.Hour)),
			wantReason: ReasonFuture},
		{name: "unset record timestamp", r: sent(rec(event(now.UnixMilli()), home), time.UnixMilli(0))},
		{name: "no wall clock (simulate)", r: rec(event(now.UnixMilli()+3_600_000), home), noClock: true},
		{name: "at the start", r: rec(event(start), home)},
		{name: "before the start", r: rec(event(start-1), home), wantReason: ReasonBeforeStart,
			wantDetail: "event time 2025-06-15T14:06:39.999Z is before the stream's start 2025-06-15T14:06:40Z"},
		{name: "before the start, no wall clock", r: rec(event(start-1), home), noClock: true, wantReason: ReasonBeforeStart},
		// maxBytes is the length of event(now) plus one space.
		{name: "at max_event_bytes", r: rec(event(now.UnixMilli())+" ", home)},
		{name: "over max_event_bytes", r: rec(event(now.UnixMilli())+"  ", home), wantReason: ReasonTooLarge,
			wantDetail: fmt.Sprintf("value of %d bytes is larger than the stream's max_event_bytes (%d)", maxBytes+1, maxBytes)},
		{name: "over max_event_bytes and undecodable", r: rec(strings.Repeat("x", maxBytes+1), home), wantReason: ReasonTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &Input{Stream: &Stream{Name: "s", Size: 1000, Start: start, MaxSkew: skew}, Decoder: dec,
				Extractor:     &Extractor{Unit: "rider", EventTime: "ts", Fields: []string{"fare"}, EventLevel: tc.eventLevel},
				MaxEventBytes: maxBytes}
			at := now
			switch {
			case tc.noClock:
				at = time.Time{}
			case !tc.now.IsZero():
				at = tc.now
			}
			ev, rej := in.Admit(tc.r, at)
			if tc.wantReason == "" {
				if rej != nil {
					t.Fatalf("rejected: %v", rej)
				}
				if ev.Offset != 9 || len(ev.Values) != 1 || ev.Values[0] != 3 {
					t.Errorf("event %+v, want offset 9 and fare 3", ev)
				}
				want := tc.wantClock
				switch {
				case tc.noClock:
					want = 0
				case want == 0:
					want = now.UnixMilli()
				}
				if ev.Clock != want {
					t.Errorf("Event.Clock %d, want %d", ev.Clock, want)
				}
				return
			}
			if rej == nil || rej.Reason != tc.wantReason || !strings.Contains(rej.Detail, tc.wantDetail) {
				t.Errorf("rejection %v, want %s with %q", rej, tc.wantReason, tc.wantDetail)
			}
		})
	}
}

// TestLateRejection: the detail names the event's window and the
// partition's watermark.
func TestLateRejection(t *testing.T) {
	s := &Stream{Name: "s", Size: 1000, MaxEvents: 1}
	p := NewPartition(s, 0, 1, NoWatermark)
	if _, _, err := p.Add(Event{Offset: 0, Unit: "a", Time: 5500}); err != nil {
		t.Fatal(err)
	}
	late := Event{Offset: 1, Unit: "b", Time: 1200}
	out, _, err := p.Add(late)
	if err != nil || out != Late {
		t.Fatalf("outcome %v, %v; want Late", out, err)
	}
	rej := p.LateRejection(late)
	want := "window starting 1970-01-01T00:00:01Z closed at watermark 1970-01-01T00:00:05Z"
	if rej.Reason != ReasonLate || rej.Detail != want {
		t.Errorf("rejection %v, want late: %s", rej, want)
	}
	if p.MaxEventTime() != 5500 {
		t.Errorf("MaxEventTime %d, want 5500 (the late event does not count)", p.MaxEventTime())
	}
}

// TestAdmitConfluentFraming: a confluent-avro record with a wrong schema
// id, a bad magic byte or a truncated header is rejected under its own
// reason, with a detail that says what was expected and what to change.
func TestAdmitConfluentFraming(t *testing.T) {
	dec, err := schema.NewDecoder(schema.FormatConfluentAvro, schema.TripSchema(), 3)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := schema.NewEncoder(schema.FormatConfluentAvro, schema.TripSchema(), 3)
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_750_000_000_000)
	good, err := enc.Encode(map[string]any{"rider_id": "r1", "trip_id": "t", "ts": now.UnixMilli(), "fare": 3.0, "km": 1.0, "minutes": 2.0, "zone": "z"})
	if err != nil {
		t.Fatal(err)
	}
	withID := func(id byte) []byte { return append([]byte{0, 0, 0, 0, id}, good[5:]...) }
	for _, tc := range []struct {
		name        string
		value       []byte
		wantReason  Reason // "" when admitted
		wantDetails []string
	}{
		{name: "configured id", value: good},
		{name: "other id", value: withID(7), wantReason: ReasonWrongSchemaID,
			wantDetails: []string{"schema id 7, expected 3", "schema_id"}},
		{name: "bad magic byte", value: append([]byte{1}, good[1:]...), wantReason: ReasonBadFraming,
			wantDetails: []string{"magic byte 0x01, want 0x00", "format"}},
		{name: "JSON on a confluent stream", value: []byte(`{"rider_id":"r1"}`), wantReason: ReasonBadFraming,
			wantDetails: []string{"magic byte 0x7b"}},
		{name: "truncated header", value: []byte{0, 0, 0}, wantReason: ReasonBadFraming,
			wantDetails: []string{"shorter than 5 bytes (3)"}},
		{name: "id right, body not Avro", value: append(withID(3)[:5], 0xff, 0xff), wantReason: ReasonUndecodable,
			wantDetails: []string{"confluent-avro: decode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &Input{Decoder: dec, Extractor: &Extractor{Unit: "rider_id", EventTime: "ts", Fields: []string{"fare"}, EventLevel: true}}
			_, rej := in.Admit(Record{Value: tc.value, Time: now, Partitions: 1}, now)
			if tc.wantReason == "" {
				if rej != nil {
					t.Fatalf("rejected: %v", rej)
				}
				return
			}
			if rej == nil || rej.Reason != tc.wantReason {
				t.Fatalf("rejection %v, want reason %s", rej, tc.wantReason)
			}
			for _, d := range tc.wantDetails {
				if !strings.Contains(rej.Detail, d) {
					t.Errorf("detail %q does not contain %q", rej.Detail, d)
				}
			}
		})
	}
}

// TestOmitValue: a dead letter leaves the value out when the record was
// too large for the stream, or when key and value would not fit in the
// dead-letter topic; otherwise it keeps it.
func TestOmitValue(t *testing.T) {
	const limit = 100
	for _, tc := range []struct {
		reason Reason
		size   int
		want   bool
	}{
		{ReasonTooLarge, 10, true},
		{ReasonUndecodable, limit, false},
		{ReasonUndecodable, limit + 1, true},
		{ReasonMissingUnit, 0, false},
	} {
		if got := omitValue(&Rejection{Reason: tc.reason}, tc.size, limit); got != tc.want {
			t.Errorf("omitValue(%s, %d bytes, limit %d) = %v, want %v", tc.reason, tc.size, limit, got, tc.want)
		}
	}
}

// TestNewChecksMaxEventBytes: New refuses a limit that one fetch could not
// return.
func TestNewChecksMaxEventBytes(t *testing.T) {
	for _, tc := range []struct {
		max int
		ok  bool
	}{{0, true}, {1 << 20, true}, {kafkaio.FetchMaxBytes - fetchOverhead, true}, {kafkaio.FetchMaxBytes, false}, {-1, false}} {
		_, err := New(Config{Conn: kafkaio.Plaintext([]string{"127.0.0.1:1"}), GroupID: "g", PartialsTopic: "p", DeadLetterTopic: "d",
			Inputs: []Input{{Stream: &Stream{Name: "s"}, Topic: "in", MaxEventBytes: tc.max}}})
		if (err == nil) != tc.ok {
			t.Errorf("New with MaxEventBytes %d: error %v, want ok=%v", tc.max, err, tc.ok)
		}
	}
}
