package release

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// BenchmarkPDPMillionUnits measures the release process's per-instance DP
// state at DPSTREAM_PDP_BENCH_UNITS distinct units (default 10⁶). Once,
// the store is rebuilt from a pdp topic holding one account per unit
// (each record encoded and decoded as on Kafka, generated on the fly so
// that the benchmark holds none of them), and the process restarts with
// it; then the sub-benchmark "window" applies windows of 1,000 active
// units (half of them seen before, half new) as the release stage does:
// its ns/op is the time of one window's per-instance DP. "memory"
// reports, in MB after a GC and after returning freed memory to the OS:
//
//	heap-MB, rss-MB, rss-anon-MB   after the rebuild: Go heap in use,
//	                               process RSS and its anonymous part
//	                               (the rest of the RSS is page cache of
//	                               the store's file, which the kernel
//	                               reclaims before it fails an allocation)
//	restart-heap-MB, restart-rss-MB  after a restart (the store reopened
//	                               and caught up)
//	rebuild-s                      seconds the rebuild took
//	file-MB                        size of the store's file on disk
//
// Run it in a process of its own, so the RSS is the benchmark's alone:
//
//	go test ./stages/release -run '^$' -bench PDPMillionUnits -benchtime 20x
//
// The baseline of an older PDPStore runs this file with benchOpenStore,
// benchRebuild, benchReopen and benchFileMB defined for it.
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
	dir := b.TempDir()
	st := benchOpenStore(b, dir)

	start := time.Now()
	benchRebuild(b, st, n, benchRecord)
	rebuild := time.Since(start)
	if got := st.Units("s"); got != n {
		b.Fatalf("%d units after the rebuild, want %d", got, n)
	}
	heap, rss, anon := memoryNow()
	runtime.KeepAlive(st) // measured with the rebuilt store alive
	file := benchFileMB(b, st)
	st = benchReopen(b, st, dir, n, benchRecord)
	rheap, rrss, _ := memoryNow()
	b.Run("memory", func(b *testing.B) {
		for range b.N {
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(rebuild.Seconds(), "rebuild-s")
		b.ReportMetric(heap, "heap-MB")
		b.ReportMetric(rss, "rss-MB")
		b.ReportMetric(anon, "rss-anon-MB")
		b.ReportMetric(rheap, "restart-heap-MB")
		b.ReportMetric(rrss, "restart-rss-MB")
		b.ReportMetric(file, "file-MB")
	})

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
			if _, _, err := st.Window(s, w, outcomesFor(s, w), time.UnixMilli(w.End)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

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

// memoryNow returns the heap in use after a GC and, after freed memory is
// returned to the OS, the process's RSS and anonymous RSS (Linux), in MB.
func memoryNow() (heap, rss, anon float64) {
	runtime.GC()
	runtime.GC()         // and what sync.Pools kept through the first
	debug.FreeOSMemory() // a GC, then the scavenger
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap = float64(ms.HeapInuse) / 1e6
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return heap, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb * 1024 / 1e6
		case "RssAnon:":
			anon = kb * 1024 / 1e6
		}
	}
	return heap, rss, anon
}
