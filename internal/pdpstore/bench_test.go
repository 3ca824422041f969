package pdpstore

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

	"github.com/dpstream/dpstream/schema"
)

// BenchmarkMillionUnits measures the store at DPSTREAM_PDP_BENCH_UNITS
// distinct units (default 10⁶). Once, the store is rebuilt from a pdp
// topic holding one account per unit (each record encoded and decoded as
// on Kafka, generated on the fly so that the benchmark holds none of
// them), and the process restarts with it; then the sub-benchmark
// "window" applies windows of 1,000 active units (half of them seen
// before, half new) through Prepare, Draft.Change and Commit, charging
// each unit as storeWindow does: its ns/op is the store's share of one
// window's per-instance DP (the release stage's own computation is
// BenchmarkPDPMillionUnits in stages/release). "memory" reports, in MB
// after a GC and after returning freed memory to the OS:
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
//	go test ./internal/pdpstore -run '^$' -bench MillionUnits -benchtime 20x
//
// The baseline of an older store runs this file with benchOpenStore,
// benchRebuild, benchReopen and benchFileMB (bench_store_test.go) defined
// for it.
func BenchmarkMillionUnits(b *testing.B) {
	n := benchUnits(b)
	dir := b.TempDir()
	st := benchOpenStore(b, dir)

	start := time.Now()
	benchRebuild(b, st, n, benchRecord)
	rebuild := time.Since(start).Seconds()
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
		b.ReportMetric(rebuild, "rebuild-s")
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
		windows := make([]map[string]float64, b.N)
		for i := range windows {
			units := map[string]float64{}
			for j := range active {
				u := benchUnit(next)
				if j%2 == 0 {
					u = benchUnit(int(benchMix(uint64(wi)*active+uint64(j)) % uint64(n)))
				} else {
					next++
				}
				units[u] = float64(1 + j%4)
			}
			windows[i] = units
		}
		b.ResetTimer()
		for _, units := range windows {
			upd, err := prepareWindow(st, wi, units)
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Commit(upd); err != nil {
				b.Fatal(err)
			}
			wi++
		}
	})
}

// benchUnits is DPSTREAM_PDP_BENCH_UNITS, 10⁶ when unset.
func benchUnits(b *testing.B) int {
	v := os.Getenv("DPSTREAM_PDP_BENCH_UNITS")
	if v == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("DPSTREAM_PDP_BENCH_UNITS=%q", v)
	}
	return n
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
// charges, as the release stage writes it.
func benchRecord(i int) Record {
	k := float64(1 + i%7)
	u := schema.PDPUnit{Stream: "s", Unit: benchUnit(i), PureEpsilon: k / 4, PureRho: k * k / 32, Charges: int64(1 + i%5),
		LastWindow: int64(i%900) * 1000, Epsilon: k / 4, Delta: 1e-6, UpdatedAt: 1}
	v, err := schema.EncodePDPUnit(u)
	if err != nil {
		panic(err) // a fixed, valid record
	}
	return Record{Key: []byte(schema.PDPUnitKey(u.Stream, u.Unit)), Value: v, Offset: int64(i), Type: schema.PDPTypeUnit}
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
