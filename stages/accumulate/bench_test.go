package accumulate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dpstream/dpstream/schema"
)

// benchStream is a trips-like stream: 1 min windows, 5 s grace, L = 4, and a
// count, a mean and a 20-bin histogram.
func benchStream() *Stream {
	return build(&Stream{Name: "trips", Size: time.Minute.Milliseconds(), Grace: 5000, IdleTimeout: 30 * time.Second, MaxEvents: 4},
		relSpec{Name: "trips", Kind: "count"},
		relSpec{Name: "avg_fare", Kind: "mean", Field: "fare", Lo: 0, Hi: 120},
		relSpec{Name: "km_hist", Kind: "histogram", Field: "km", Lo: 0, Hi: 40, Bins: 20},
	)
}

const (
	benchRecords = 4096
	benchStepMs  = 20 // event-time spacing: 3000 events per 1 min window
)

// benchEvents returns benchRecords trip events in the decoders' input form,
// event times increasing with a little disorder inside the grace period.
func benchEvents() []map[string]any {
	r := rand.New(rand.NewPCG(7, 11))
	base := int64(1_714_550_400_000)
	out := make([]map[string]any, benchRecords)
	for i := range out {
		out[i] = map[string]any{
			"rider_id": fmt.Sprintf("rider-%d", r.IntN(2000)),
			"trip_id":  fmt.Sprintf("trip-%d", i),
			"ts":       base + int64(i)*benchStepMs - r.Int64N(1000),
			"fare":     r.Float64() * 130, // some above the bound: clamped
			"km":       r.Float64() * 45,
			"minutes":  r.Float64() * 90,
			"zone":     "z1",
		}
	}
	return out
}

// runAccumulate measures decode → Extract → Partition.Add per event. The
// pre-built records cover benchRecords·benchStepMs of event time; each pass
// over them shifts event times by that span, so the stream keeps moving
// forward and windows keep closing as in production. units turns
// Stream.UnitContributions on.
func runAccumulate(b *testing.B, dec schema.Decoder, recs [][]byte, units bool) {
	b.Helper()
	runAccumulateOn(b, benchStream(), dec, recs, units)
}

// runAccumulateOn is runAccumulate on stream s.
func runAccumulateOn(b *testing.B, s *Stream, dec schema.Decoder, recs [][]byte, units bool) {
	b.Helper()
	s.UnitContributions = units
	x := &Extractor{Unit: "rider_id", EventTime: "ts", Fields: []string{"", "fare", "km"}}
	p := NewPartition(s, 0, 1, NoWatermark)
	span := int64(len(recs)) * benchStepMs
	recordTime := time.UnixMilli(0)
	var n, partials int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		i, pass := n%len(recs), n/len(recs)
		m, err := dec.Decode(recs[i])
		if err != nil {
			b.Fatalf("decode record %d: %v", i, err)
		}
		ev, rej := x.Extract(m, int64(n), recordTime)
		if rej != nil {
			b.Fatalf("extract record %d: %v", i, rej)
		}
		ev.Time += int64(pass) * span
		_, closed, err := p.Add(ev)
		if err != nil {
			b.Fatalf("add record %d: %v", i, err)
		}
		partials += len(closed)
		for _, c := range closed {
			if units && c.Events > 0 && len(c.UnitContributions) == 0 {
				b.Fatalf("window %d: no unit contributions", c.WindowStart)
			}
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	if n > 2*len(recs) && partials == 0 {
		b.Fatalf("%d events closed no window: the benchmark does not exercise window closing", n)
	}
}

// BenchmarkAccumulate: JSON input (dpstream's convenience format).
func BenchmarkAccumulate(b *testing.B) { benchJSON(b, false) }

// BenchmarkAccumulateUnitContributions is BenchmarkAccumulate with
// Stream.UnitContributions on (per-unit accumulators and summaries).
func BenchmarkAccumulateUnitContributions(b *testing.B) { benchJSON(b, true) }

// BenchmarkAccumulateMaxWindows is BenchmarkAccumulate with
// contribution.max_windows 3 over horizons of 60 windows (an hour): each
// rider (2,000 of them, about 1.5 events per window) is in 3 windows of an
// hour, so most events after the first few windows are dropped by the
// bound, and every event looks its unit up in the horizon's state.
func BenchmarkAccumulateMaxWindows(b *testing.B) {
	s := benchStream()
	s.MaxWindows, s.Horizon = 3, 60
	dec, recs := jsonRecords(b)
	runAccumulateOn(b, s, dec, recs, false)
}

// jsonRecords returns the JSON decoder and benchEvents encoded.
func jsonRecords(b *testing.B) (schema.Decoder, [][]byte) {
	enc, err := schema.NewEncoder("json", "", 0)
	if err != nil {
		b.Fatal(err)
	}
	dec, err := schema.NewDecoder("json", "", 0)
	if err != nil {
		b.Fatal(err)
	}
	var recs [][]byte
	for _, e := range benchEvents() {
		v, err := enc.Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, v)
	}
	return dec, recs
}

func benchJSON(b *testing.B, units bool) {
	dec, recs := jsonRecords(b)
	runAccumulate(b, dec, recs, units)
}

// BenchmarkAccumulateAvro: Avro input with the demo trip schema (event time
// is a timestamp-millis long, decoded to time.Time).
func BenchmarkAccumulateAvro(b *testing.B) {
	enc, err := schema.NewEncoder("avro", schema.TripSchema(), 0)
	if err != nil {
		b.Fatal(err)
	}
	dec, err := schema.NewDecoder("avro", schema.TripSchema(), 0)
	if err != nil {
		b.Fatal(err)
	}
	var recs [][]byte
	for _, e := range benchEvents() {
		v, err := enc.Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, v)
	}
	runAccumulate(b, dec, recs, false)
}

// BenchmarkBaselineJSONUnmarshal is the floor BenchmarkAccumulate is
// compared with in the same run: encoding/json.Unmarshal of the same
// records into a map, with no validation, bounding or accumulation.
func BenchmarkBaselineJSONUnmarshal(b *testing.B) {
	enc, err := schema.NewEncoder("json", "", 0)
	if err != nil {
		b.Fatal(err)
	}
	var recs [][]byte
	for _, e := range benchEvents() {
		v, err := enc.Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, v)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var m map[string]any
		if err := json.Unmarshal(recs[i%len(recs)], &m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
