package accumulate_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/accumulate"
)

// groupByConfig is the benchmark's stream with two releases: a count and a
// mean, per pickup zone when byZone, over the whole window otherwise; the
// events are the same.
func groupByConfig(byZone bool) string {
	group := ""
	if byZone {
		group = ", group_by: zone, max_keys: 2, delta: 1e-8"
	}
	return fmt.Sprintf(`
streams:
  - name: trips
    topic: trips.events
    format: json
    privacy_unit: rider_id
    event_time: ts
    window: {size: 1m, grace: 5s}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 1000, delta: 1e-5}
    releases:
      - {name: n, kind: count, epsilon: 0.5%[1]s}
      - {name: fare, kind: mean, field: fare, bounds: [0, 120], epsilon: 0.5%[1]s}
`, group)
}

// groupByInput wires the stream as `dpstream run` does (pipeline.Inputs).
func groupByInput(tb testing.TB, byZone bool) accumulate.Input {
	tb.Helper()
	c, err := config.Parse([]byte(groupByConfig(byZone)), "bench.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	ps, err := plan.Build(c)
	if err != nil {
		tb.Fatal(err)
	}
	ins, err := pipeline.Inputs(c, ps)
	if err != nil {
		tb.Fatal(err)
	}
	return ins[0]
}

// zoneEvents returns n trip records as JSON, riders and zones skewed like
// the demo's (zones Zipf-like over 200, a few busy and many rare),
// event times increasing at 50 events per second of event time.
func zoneEvents(tb testing.TB, n int) [][]byte {
	tb.Helper()
	r := rand.New(rand.NewPCG(3, 5))
	zipf := rand.NewZipf(r, 1.3, 3, 199)
	enc, err := schema.NewEncoder("json", "", 0)
	if err != nil {
		tb.Fatal(err)
	}
	base := int64(1_714_550_400_000)
	out := make([][]byte, n)
	for i := range out {
		b, err := enc.Encode(map[string]any{
			"rider_id": fmt.Sprintf("rider-%d", r.IntN(2000)),
			"ts":       base + int64(i)*20 - r.Int64N(1000),
			"fare":     r.Float64() * 130,
			"zone":     fmt.Sprintf("z%d", zipf.Uint64()),
		})
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// BenchmarkAccumulateGroupBy measures decode → Extract → Partition.Add per
// event for the same events with and without group_by (sub-benchmarks
// "without" and "with"); compare their events/s in the same run.
func BenchmarkAccumulateGroupBy(b *testing.B) {
	recs := zoneEvents(b, 4096)
	for _, byZone := range []bool{false, true} {
		name := "without"
		if byZone {
			name = "with"
		}
		b.Run(name, func(b *testing.B) {
			in := groupByInput(b, byZone)
			p := accumulate.NewPartition(in.Stream, 0, 1, accumulate.NoWatermark)
			span := int64(len(recs)) * 20
			var n, partials int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				i, pass := n%len(recs), n/len(recs)
				m, err := in.Decoder.Decode(recs[i])
				if err != nil {
					b.Fatal(err)
				}
				ev, rej := in.Extractor.Extract(m, int64(n), time.UnixMilli(0))
				if rej != nil {
					b.Fatal(rej)
				}
				ev.Time += int64(pass) * span
				_, closed, err := p.Add(ev)
				if err != nil {
					b.Fatal(err)
				}
				partials += len(closed)
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
			if n > 2*len(recs) && partials == 0 {
				b.Fatalf("%d events closed no window", n)
			}
		})
	}
}

// TestMemoryPerOpenKey measures the heap a window holds per open key of a
// per-key count and mean (2 releases): 10⁵ events of distinct units, each
// with its own key, in one window. It asserts a bound (1 KiB per key, for
// the two releases together) so that a change that makes keys much
// dearer fails here, and logs the measured figure.
func TestMemoryPerOpenKey(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 10⁵ keys")
	}
	const keys = 100_000
	in := groupByInput(t, true)
	p := accumulate.NewPartition(in.Stream, 0, 1, accumulate.NoWatermark)
	base := int64(1_714_550_400_000)
	measure := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// The events are built first so that only the window's state is
	// measured.
	evs := make([]accumulate.Event, keys)
	for i := range evs {
		m := map[string]any{"rider_id": fmt.Sprintf("u%06d", i), "ts": base, "fare": 10.0, "zone": fmt.Sprintf("zone-%06d", i)}
		ev, rej := in.Extractor.Extract(m, int64(i), time.UnixMilli(0))
		if rej != nil {
			t.Fatal(rej)
		}
		evs[i] = ev
	}
	before := measure()
	for _, ev := range evs {
		if _, _, err := p.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	after := measure()
	runtime.KeepAlive(p)
	runtime.KeepAlive(evs)
	perKey := float64(after-before) / keys
	t.Logf("%.0f bytes per open key (window state of a per-key count and mean, each key with one unit, whose state is included; the keys' own bytes, shared with the events, are not)", perKey)
	if perKey > 1024 || math.IsNaN(perKey) {
		t.Errorf("%.0f bytes per open key, more than 1 KiB", perKey)
	}
}
