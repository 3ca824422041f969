package e2e

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

// badConfig has a JSON stream and an Avro one (schema.TripSchema, which
// newHarness writes to trip.avsc), each on one partition.
func badConfig() *testkit.Pipeline {
	stream := func(name string) *testkit.Stream {
		return testkit.NewStream(name, name).Partitions(1).Window(time.Second, 500*time.Millisecond, time.Second).
			MaxEvents(100).Budget(100, 1e-6)
	}
	return testkit.NewPipeline(
		stream("js").Releases(
			testkit.Count("n").Epsilon(1),
			testkit.Histogram("h", "v", 0, 10, 5).Epsilon(1)),
		stream("av").Avro("trip.avsc").PrivacyUnit("rider_id").Releases(
			testkit.Sum("fare_sum", "fare", 0, 120).Epsilon(1),
			testkit.Mean("km_mean", "km", 0, 40).Epsilon(1)))
}

// TestBadInput sends every kind of bad record beside valid ones: each is
// counted under the right metric, lands in the dead-letter topic with its
// reason and its original bytes, and every valid event is accumulated.
func TestBadInput(t *testing.T) {
	h := newHarness(t, badConfig())
	type rec struct {
		value  []byte
		reason string // "" for valid events
	}
	js := func(v any) []byte { b, _ := json.Marshal(v); return b }
	var jsRecs []rec
	// Valid events in windows 0..2, two of them out of bounds (clamped).
	for w := int64(0); w < 3; w++ {
		for i := int64(0); i < 20; i++ {
			jsRecs = append(jsRecs, rec{value: js(map[string]any{"user": "u1", "ts": base + w*1000 + i*40, "v": float64(i % 10)})})
		}
	}
	jsRecs = append(jsRecs,
		rec{value: js(map[string]any{"user": "u1", "ts": base + 2500, "v": 50}), reason: ""},
		rec{value: js(map[string]any{"user": "u1", "ts": base + 2600, "v": -5}), reason: ""},
		rec{value: []byte(`not json`), reason: "undecodable"},
		rec{value: []byte(`{"user":"u1","ts":1750000002700,"v":NaN}`), reason: "undecodable"},
		rec{value: js(map[string]any{"ts": base + 2700, "v": 1}), reason: "missing_unit"},
		rec{value: js(map[string]any{"user": "u1", "ts": base + 2700, "v": "NaN"}), reason: "invalid_value"},
		rec{value: js(map[string]any{"user": "u1", "ts": base + 2700}), reason: "missing_field"},
		rec{value: js(map[string]any{"user": "u1", "v": 3}), reason: "missing_event_time"},
		// Window 0 ended at base+1000; the watermark is now past base+2100.
		rec{value: js(map[string]any{"user": "u1", "ts": base + 500, "v": 3}), reason: "late"},
		// A valid event in window 3; windows 2 and 3 then close at idle.
		rec{value: js(map[string]any{"user": "u1", "ts": base + 3200, "v": 4}), reason: ""},
	)
	enc, err := schema.NewEncoder("avro", schema.TripSchema(), 0)
	if err != nil {
		t.Fatal(err)
	}
	trip := func(rider string, ts int64, fare, km float64) []byte {
		b, err := enc.Encode(map[string]any{"rider_id": rider, "trip_id": "t", "ts": ts, "fare": fare, "km": km, "minutes": 10.0, "zone": "z"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var avRecs []rec
	for i := int64(0); i < 30; i++ {
		avRecs = append(avRecs, rec{value: trip("r1", base+i*50, float64(i), 3)})
	}
	avRecs = append(avRecs,
		rec{value: trip("r1", base+1600, 500, 3)}, // fare clamped to 120
		rec{value: []byte{0x02, 0xff, 0xff, 0xff}, reason: "undecodable"},
		rec{value: trip("r1", base+1600, math.NaN(), 3), reason: "non_finite"},
		rec{value: trip("r1", base+1600, 10, math.Inf(1)), reason: "non_finite"},
	)

	send := func(topic, key string, recs []rec) {
		w := h.Conn.NewWriter(topic)
		defer w.Close()
		var msgs []kafka.Message
		for _, r := range recs {
			msgs = append(msgs, kafka.Message{Key: []byte(key), Value: r.value})
		}
		h.Write(w, msgs...)
	}
	acc := h.start("acc", pipeline.Stages{Accumulate: true, Release: true}, nil)
	send(h.cfg.Streams[0].Topic, "u1", jsRecs)
	send(h.cfg.Streams[1].Topic, "r1", avRecs)

	wantDLQ := map[string]int{}
	valid := map[string]int64{}
	for _, r := range jsRecs {
		if r.reason != "" {
			wantDLQ[r.reason]++
		} else {
			valid["js"]++
		}
	}
	avDLQ := map[string]int{}
	for _, r := range avRecs {
		if r.reason != "" {
			wantDLQ[r.reason]++
			avDLQ[r.reason]++
		} else {
			valid["av"]++
		}
	}
	total := 0
	for _, n := range wantDLQ {
		total += n
	}
	waitFor(t, 60*time.Second, "dead letters and all windows", func() bool {
		return len(h.ReadAll(h.cfg.Topics.DeadLetter)) >= total && accumulated(h, "js") >= valid["js"] && accumulated(h, "av") >= valid["av"]
	}, acc)

	// Dead letters: reason headers and original bytes.
	gotDLQ := map[string]int{}
	originals := map[string]bool{}
	for _, r := range append(append([]rec{}, jsRecs...), avRecs...) {
		if r.reason != "" {
			originals[string(r.value)] = true
		}
	}
	for _, m := range h.ReadAll(h.cfg.Topics.DeadLetter) {
		reason := ""
		for _, hd := range m.Headers {
			if hd.Key == "dpstream.reason" {
				reason = string(hd.Value)
			}
		}
		gotDLQ[reason]++
		if !originals[string(m.Value)] {
			t.Errorf("dead letter %q (%s) is not one of the bad records sent", m.Value, reason)
		}
	}
	for reason, n := range wantDLQ {
		if gotDLQ[reason] != n {
			t.Errorf("dead letters with reason %s: %d, want %d", reason, gotDLQ[reason], n)
		}
	}
	for reason, n := range gotDLQ {
		if wantDLQ[reason] == 0 {
			t.Errorf("unexpected dead letters with reason %s: %d", reason, n)
		}
	}

	// Metrics: rejected by reason (late separately), clamped per release.
	m := acc.metrics
	for reason, n := range wantDLQ {
		if reason == "late" {
			continue
		}
		got := testutil.ToFloat64(m.Rejected.WithLabelValues("js", reason)) + testutil.ToFloat64(m.Rejected.WithLabelValues("av", reason))
		if int(got) != n {
			t.Errorf("dpstream_events_rejected_total{reason=%q} = %v, want %d", reason, got, n)
		}
	}
	if got := testutil.ToFloat64(m.Late.WithLabelValues("js")); got != 1 {
		t.Errorf("dpstream_events_late_total{stream=js} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.Clamped.WithLabelValues("js", "h")); got != 2 {
		t.Errorf("clamped js/h = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.Clamped.WithLabelValues("av", "fare_sum")); got != 1 {
		t.Errorf("clamped av/fare_sum = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.Consumed.WithLabelValues("av")); int(got) != len(avRecs) {
		t.Errorf("consumed av = %v, want %d", got, len(avRecs))
	}

	// No valid event lost: the partials hold exactly the valid events.
	for _, s := range []string{"js", "av"} {
		if got := accumulated(h, s); got != valid[s] {
			t.Errorf("stream %s: partials hold %d events, %d valid were sent", s, got, valid[s])
		}
	}
	// The clamped fare counts at the bound: fare_sum over the windows is
	// sum(0..29) + 120, exactly, in fixed-point units of the bounds'
	// quantum: [0, 120] has 120 ≤ 2^7, so q = 2^-23 and every integer fare
	// is an exact number of units.
	var fareUnits int64
	for _, w := range h.partials()["av"] {
		for _, p := range w {
			for _, st := range p.Stats {
				if st.Release == "fare_sum" {
					fareUnits += st.SumUnits
				}
			}
		}
	}
	if want := int64(435+120) << 23; fareUnits != want {
		t.Errorf("exact fare sum %d units of 2^-23 (%v), want %d (%v)", fareUnits, float64(fareUnits)*0x1p-23, want, 435+120)
	}
}

// accumulated counts the events in the first partial of every window.
func accumulated(h *harness, stream string) int64 {
	var n int64
	for _, w := range h.partials()[stream] {
		for _, p := range w {
			n += p.Events
		}
	}
	return n
}
