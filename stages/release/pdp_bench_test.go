package release

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/pdpstore"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// BenchmarkPDPMillionUnits measures the release stage's per-instance DP
// of one window (PDPWindow: PreparePDP and the store's Commit) with
// DPSTREAM_PDP_BENCH_UNITS distinct units (default 10⁶) in the on-disk
// store: once, the store is rebuilt from a pdp topic holding one account
// per unit (generated on the fly, each record encoded as on Kafka); then
// each iteration applies a window of 1,000 active units (half of them
// seen before, half new) as the release stage does: ns/op is the time of
// one window. The store's memory and rebuild figures at that size are
// pdpstore's BenchmarkMillionUnits.
//
//	go test ./stages/release -run '^$' -bench PDPMillionUnits -benchtime 20x
func BenchmarkPDPMillionUnits(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("DPSTREAM_PDP_BENCH_UNITS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("DPSTREAM_PDP_BENCH_UNITS=%q", v)
		}
	}
	ps := benchPlan(b)
	s := &ps[0]
	st, err := pdpstore.Open(b.TempDir(), quiet)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := st.CatchUp(context.Background(), genSource{n, benchRecord}, quiet); err != nil {
		b.Fatal(err)
	}
	if got := st.Units("s"); got != n {
		b.Fatalf("%d units after the rebuild, want %d", got, n)
	}

	const active = 1000
	next, wi := n, int64(1000)
	b.Run("window", func(b *testing.B) {
		windows := make([]Window, b.N)
		for i := range windows {
			units := map[string][3]float64{}
			part := map[string]int{}
			for j := range active {
				u := benchUnit(next)
				if j%2 == 0 {
					u = benchUnit(int(benchMix(uint64(wi)*active+uint64(j)) % uint64(n)))
				} else {
					next++
				}
				k := float64(1 + j%4)
				units[u], part[u] = [3]float64{k, k, k}, j%2
			}
			windows[i] = contributions(window(wi, 0, 0), units, part)
			wi++
		}
		b.ResetTimer()
		for _, w := range windows {
			if _, _, err := PDPWindow(st, s, w, outcomesFor(s, w), time.UnixMilli(w.End)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// quiet is a logger for stores whose warnings a test provokes.
var quiet = slog.New(slog.DiscardHandler)

// benchPlan is a stream with a count and a histogram at δ 1e-6.
func benchPlan(b *testing.B) []plan.Stream {
	cfg, err := config.Parse([]byte(`streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    window: {size: 1s}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 1e9, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 1}
      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, epsilon: 1}
`), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return ps
}

// benchMix is splitmix64's finalizer: unit names in no particular order,
// as a topic holds them.
func benchMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func benchUnit(i int) string { return fmt.Sprintf("user-%016x", benchMix(uint64(i))) }

// benchRecord is the pdp topic's record of unit i: an account of a few
// charges, as Window writes it.
func benchRecord(i int) kafka.Message {
	k := float64(1 + i%7)
	u := schema.PDPUnit{Stream: "s", Unit: benchUnit(i), PureEpsilon: k / 4, PureRho: k * k / 32, Charges: int64(1 + i%5),
		LastWindow: int64(i%900) * 1000, Epsilon: k / 4, Delta: 1e-6, UpdatedAt: 1}
	v, err := schema.EncodePDPUnit(u)
	if err != nil {
		panic(err) // a fixed, valid record
	}
	return kafka.Message{Key: []byte(schema.PDPUnitKey(u.Stream, u.Unit)), Value: v, Offset: int64(i),
		Headers: []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeUnit)}}}
}

// genSource is a one-partition pdp topic whose record i is rec(i).
type genSource struct {
	n   int
	rec func(int) kafka.Message
}

func (g genSource) Topic() string { return "pdp" }

func (g genSource) Offsets(context.Context) (map[int]int64, map[int]int64, error) {
	return map[int]int64{0: 0}, map[int]int64{0: int64(g.n)}, nil
}

// Read hands the store each record as kafkaPDPSource does.
func (g genSource) Read(_ context.Context, _ int, from, end int64, fn func(pdpstore.Record) error) error {
	for i := max(from, 0); i < end; i++ {
		if err := fn(pdpRecord(g.rec(int(i)))); err != nil {
			return err
		}
	}
	return nil
}
