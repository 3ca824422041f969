package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/mechanism/pdp"
	"github.com/dpstream/dpstream/schema"
)

// fakeTopic is an in-memory pdp topic for CatchUp: records at their
// offsets per partition, partitioned by key like the writer.
type fakeTopic struct {
	name  string
	parts [][]kafka.Message
	first []int64
	next  []int64
}

func newFakeTopic(name string, partitions int) *fakeTopic {
	return &fakeTopic{name: name, parts: make([][]kafka.Message, partitions), first: make([]int64, partitions), next: make([]int64, partitions)}
}

func (f *fakeTopic) write(msgs ...kafka.Message) {
	for _, m := range msgs {
		p := kafkaio.PartitionFor(m.Key, len(f.parts))
		m.Partition, m.Offset = p, f.next[p]
		f.next[p]++
		f.parts[p] = append(f.parts[p], m)
	}
}

// compact keeps the last record of each key, at its offset.
func (f *fakeTopic) compact() {
	for p, ms := range f.parts {
		last := map[string]int64{}
		for _, m := range ms {
			last[string(m.Key)] = m.Offset
		}
		f.parts[p] = slices.DeleteFunc(ms, func(m kafka.Message) bool { return last[string(m.Key)] != m.Offset })
	}
}

func (f *fakeTopic) records() int {
	n := 0
	for _, ms := range f.parts {
		n += len(ms)
	}
	return n
}

func (f *fakeTopic) Topic() string { return f.name }

func (f *fakeTopic) Offsets(context.Context) (map[int]int64, map[int]int64, error) {
	first, end := map[int]int64{}, map[int]int64{}
	for p := range f.parts {
		first[p], end[p] = f.first[p], f.next[p]
	}
	return first, end, nil
}

func (f *fakeTopic) Read(_ context.Context, p int, from, end int64, fn func(kafka.Message) error) error {
	for _, m := range f.parts[p] {
		if m.Offset >= from && m.Offset < end {
			if err := fn(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// quiet is a logger for stores whose warnings a test provokes.
var quiet = slog.New(slog.DiscardHandler)

func openStore(t *testing.T, dir string) *PDPStore {
	t.Helper()
	st, err := OpenPDPStore(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func catchUp(t *testing.T, st *PDPStore, src pdpSource) int {
	t.Helper()
	n, err := st.CatchUp(context.Background(), src, quiet)
	if err != nil {
		t.Fatalf("CatchUp: %v", err)
	}
	return n
}

// storeWindow runs window wi of testPlan's stream through st as the
// release stage does (Prepare, records to topic, Commit) and returns the
// records written. units maps each unit to its count k and histogram L1
// and L2 norms; the unit's partition is its index mod 2.
func storeWindow(t *testing.T, st *PDPStore, topic *fakeTopic, s *plan.Stream, wi int64, units map[string][3]float64) []kafka.Message {
	t.Helper()
	w := unitsWindow(s, wi, units)
	upd, err := st.Prepare(s, w, outcomesFor(s, w), time.UnixMilli(wi))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := pdpMessages(upd)
	if err != nil {
		t.Fatal(err)
	}
	if topic != nil {
		topic.write(msgs...)
	}
	if err := st.Commit(upd); err != nil {
		t.Fatal(err)
	}
	return msgs
}

func unitsWindow(s *plan.Stream, wi int64, units map[string][3]float64) Window {
	part := map[string]int{}
	for i, u := range slices.Sorted(maps.Keys(units)) {
		part[u] = i % 2
	}
	return contributions(window(wi, 0, 0), units, part)
}

// windowUnits returns units u<from>..u<from+n-1>, unit i with count
// 1 + i mod 4 and histogram norms from it: varied per-instance ε.
func windowUnits(from, n int) map[string][3]float64 {
	out := map[string][3]float64{}
	for i := from; i < from+n; i++ {
		k := float64(1 + i%4)
		out[fmt.Sprintf("u%d", i)] = [3]float64{k, k, math.Sqrt(k)}
	}
	return out
}

// sameStore fails unless two stores hold the same accounts, the same
// stream aggregate and the same summarized windows.
func sameStore(t *testing.T, what string, got, want *PDPStore, windows []int64) {
	t.Helper()
	if g, w := snapshot(got, "s"), snapshot(want, "s"); !sameRecords(g, w) {
		t.Errorf("%s: %d accounts, want %d equal to the reference's", what, len(g), len(w))
	}
	if got.Units("s") != want.Units("s") {
		t.Errorf("%s: %d units, want %d", what, got.Units("s"), want.Units("s"))
	}
	if g, w := aggregateOf(t, got), aggregateOf(t, want); g.units != w.units || g.max != w.max || g.delta != w.delta || !maps.Equal(g.hist, w.hist) {
		t.Errorf("%s: aggregate %+v, want %+v", what, g, w)
	}
	for _, wi := range windows {
		key := schema.PDPSummaryKey("s", wi*win)
		if done, err := got.Summarized(key); err != nil || !done {
			t.Errorf("%s: window %d not summarized (%v)", what, wi, err)
		}
	}
}

func aggregateOf(t *testing.T, st *PDPStore) *pdpAggregate {
	t.Helper()
	var a *pdpAggregate
	if err := st.db.view(func(tx pdpTx) error {
		var err error
		a, err = tx.aggregate("s")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if a == nil {
		return newAggregate(0)
	}
	return a
}

// TestPDPStoreCatchUp: an on-disk store built from the pdp topic holds
// what the store that wrote the topic holds; a second catch-up reads only
// the new records; a restarted store reads nothing; a store rebuilt from
// the compacted topic, in a fresh directory, is the same; and the store
// goes on from there exactly as the writer does.
func TestPDPStoreCatchUp(t *testing.T) {
	ps := testPlan(t, 1000)
	s := &ps[0]
	ref := NewPDPStore()
	topic := newFakeTopic("pdp", 3)
	var windows []int64
	for wi := range int64(8) {
		storeWindow(t, ref, topic, s, wi, windowUnits(int(wi)*5, 12)) // overlapping units
		windows = append(windows, wi)
	}

	dir := filepath.Join(t.TempDir(), "pdp")
	st := openStore(t, dir)
	if n := catchUp(t, st, topic); n != topic.records() {
		t.Errorf("rebuild read %d records, want all %d", n, topic.records())
	}
	sameStore(t, "rebuilt", st, ref, windows)

	before := topic.records()
	for wi := int64(8); wi < 11; wi++ {
		storeWindow(t, ref, topic, s, wi, windowUnits(int(wi)*5, 12))
		windows = append(windows, wi)
	}
	if n := catchUp(t, st, topic); n != topic.records()-before {
		t.Errorf("catch-up read %d records, want the %d new ones", n, topic.records()-before)
	}
	sameStore(t, "caught up", st, ref, windows)

	// Restart: the same file, nothing new to read.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir)
	if st.Path() != filepath.Join(dir, "pdp-0.db") {
		t.Errorf("reopened %s, want slot 0", st.Path())
	}
	if n := catchUp(t, st, topic); n != 0 {
		t.Errorf("restart read %d records, want 0", n)
	}
	sameStore(t, "restarted", st, ref, windows)

	// A new pod without its volume: rebuilt from the compacted topic.
	topic.compact()
	fresh := openStore(t, t.TempDir())
	if n := catchUp(t, fresh, topic); n != topic.records() {
		t.Errorf("rebuild from the compacted topic read %d records, want %d", n, topic.records())
	}
	sameStore(t, "rebuilt from compacted", fresh, ref, windows)

	// Each goes on as the writer does.
	for _, other := range []*PDPStore{st, fresh} {
		storeWindow(t, other, nil, s, 11, windowUnits(50, 12))
	}
	storeWindow(t, ref, topic, s, 11, windowUnits(50, 12))
	windows = append(windows, 11)
	sameStore(t, "restarted, next window", st, ref, windows)
	sameStore(t, "rebuilt, next window", fresh, ref, windows)

	// Files are private (DESIGN invariant 6).
	for _, p := range []string{dir, st.Path()} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", p, fi.Mode())
		}
	}
}

// TestPDPStoreSlots: processes (here stores) sharing a directory each take
// a file of their own, without waiting; when every slot is held, opening
// fails with ErrPDPStoreBusy.
func TestPDPStoreSlots(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for range PDPStoreSlots {
		st := openStore(t, dir)
		if seen[st.Path()] {
			t.Fatalf("slot %s opened twice", st.Path())
		}
		seen[st.Path()] = true
	}
	if _, err := OpenPDPStore(dir, quiet); err == nil || !errors.Is(err, ErrPDPStoreBusy) {
		t.Errorf("open with every slot held: %v, want ErrPDPStoreBusy", err)
	}
	// An unusable file (a torn write, another program's) is recreated.
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "pdp-0.db"), []byte("not a bbolt file, long enough to be read as one"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := openStore(t, bad)
	if st.Path() != filepath.Join(bad, "pdp-0.db") || st.Units("s") != 0 {
		t.Errorf("unusable file: opened %s with %d units, want slot 0 recreated empty", st.Path(), st.Units("s"))
	}
}

// TestPDPStoreTopicChanged: a store built from a topic that was deleted
// and recreated (shorter, or as long with other records), or from a topic
// of another name, is emptied and rebuilt from the topic it is given.
func TestPDPStoreTopicChanged(t *testing.T) {
	ps := testPlan(t, 1000)
	s := &ps[0]
	build := func(name string, from int) *fakeTopic {
		topic := newFakeTopic(name, 2)
		w := NewPDPStore()
		for wi := range int64(4) {
			storeWindow(t, w, topic, s, wi, windowUnits(from+int(wi)*3, 6))
		}
		return topic
	}
	cases := []struct {
		name  string
		after *fakeTopic
	}{
		{"recreated shorter", func() *fakeTopic {
			tp := newFakeTopic("pdp", 2)
			storeWindow(t, NewPDPStore(), tp, s, 0, windowUnits(100, 2))
			return tp
		}()},
		{"recreated as long, other records", build("pdp", 1000)},
		{"renamed", build("pdp2", 2000)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			catchUp(t, st, build("pdp", 0))
			want := NewPDPStore()
			catchUp(t, want, c.after)
			n := catchUp(t, st, c.after)
			if n != c.after.records() {
				t.Errorf("read %d records, want a rebuild from all %d", n, c.after.records())
			}
			sameStore(t, c.name, st, want, nil)
		})
	}
}

// TestPDPStoreCrashReplay: a crash anywhere between the pdp topic write and
// the store's commit (and after it) leaves, after the restart's catch-up
// and the window's replay as writePDP does it, the accounts of a run
// without a crash: no unit charged twice or missed, the window summarized.
func TestPDPStoreCrashReplay(t *testing.T) {
	ps := testPlan(t, 1000)
	s := &ps[0]
	cases := []struct {
		name    string
		written func(msgs []kafka.Message) []kafka.Message // what reached the topic
		commit  bool
	}{
		{"before the write", func([]kafka.Message) []kafka.Message { return nil }, false},
		{"half the unit records written", func(m []kafka.Message) []kafka.Message { return m[:len(m)/2] }, false},
		{"written, not committed", func(m []kafka.Message) []kafka.Message { return m }, false},
		{"committed", func(m []kafka.Message) []kafka.Message { return m }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := NewPDPStore()
			topic := newFakeTopic("pdp", 2)
			dir := t.TempDir()
			st := openStore(t, dir)
			for wi := range int64(3) {
				storeWindow(t, ref, nil, s, wi, windowUnits(int(wi)*4, 10))
				storeWindow(t, st, topic, s, wi, windowUnits(int(wi)*4, 10))
			}
			units := windowUnits(8, 10)
			storeWindow(t, ref, nil, s, 3, units)

			// Window 3, up to the crash.
			w := unitsWindow(s, 3, units)
			upd, err := st.Prepare(s, w, outcomesFor(s, w), time.UnixMilli(3))
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := pdpMessages(upd)
			if err != nil {
				t.Fatal(err)
			}
			topic.write(c.written(msgs)...)
			if c.commit {
				if err := st.Commit(upd); err != nil {
					t.Fatal(err)
				}
			}
			st.Close()

			// The restart: catch up, then replay the window.
			st = openStore(t, dir)
			catchUp(t, st, topic)
			key := schema.PDPSummaryKey("s", 3*win)
			done, err := st.Summarized(key)
			if err != nil {
				t.Fatal(err)
			}
			if wantDone := len(c.written(msgs)) == len(msgs); done != wantDone {
				t.Errorf("summarized after the restart: %v, want %v", done, wantDone)
			}
			if !done {
				again := storeWindow(t, st, topic, s, 3, units)
				if got, want := len(again)-1, len(msgs)-1-len(c.written(msgs)); got != want {
					t.Errorf("replay wrote %d unit records, want the %d not written before the crash", got, want)
				}
			}
			sameStore(t, "after the crash", st, ref, []int64{0, 1, 2, 3})
			// And what a store rebuilt from the topic holds is the same.
			rebuilt := NewPDPStore()
			catchUp(t, rebuilt, topic)
			sameStore(t, "rebuilt after the crash", rebuilt, ref, []int64{0, 1, 2, 3})
		})
	}
}

// TestPDPCumulativeQuantiles: the cumulative quantiles read off the
// histogram are within PDPQuantileError of the exact nearest-rank ones,
// never below; the count and the maximum are exact; and this holds after
// units move between buckets (records replaced by newer ones) and after a
// change of δ recounts the histogram.
func TestPDPCumulativeQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	dists := []struct {
		name string
		eps  func(i int) float64
	}{
		{"log-uniform 1e-6..1e3", func(int) float64 { return math.Pow(10, -6+9*rng.Float64()) }},
		{"few distinct values", func(i int) float64 { return []float64{0.25, 0.5, 0.75, 3}[i%4] }},
		{"with zeros and +Inf", func(i int) float64 {
			switch i % 10 {
			case 0:
				return 0
			case 1:
				return math.Inf(1)
			}
			return rng.ExpFloat64()
		}},
		{"one unit", func(int) float64 { return 0.123 }},
		{"subnormal and huge", func(i int) float64 {
			return []float64{5e-324, 1e-310, 1e300, math.MaxFloat64, 1}[i%5]
		}},
	}
	for _, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			n := 3000
			if d.name == "one unit" {
				n = 1
			}
			for _, backend := range []string{"memory", "bbolt"} {
				st := NewPDPStore()
				if backend == "bbolt" {
					st = openStore(t, t.TempDir())
				}
				exact := map[string]float64{}
				var recs []schema.PDPUnit
				put := func(u string, e float64, lastWindow int64) {
					exact[u] = e
					recs = append(recs, schema.PDPUnit{Stream: "s", Unit: u, PureEpsilon: 1, Charges: 1, LastWindow: lastWindow, Epsilon: e, Delta: pdpDelta})
				}
				restore := func() {
					t.Helper()
					// As CatchUp does: many records in one transaction.
					if err := st.db.update(func(tx pdpTx) error {
						ap := newApplier(tx)
						for _, rec := range recs {
							if err := ap.unit(rec); err != nil {
								return err
							}
						}
						return ap.flush()
					}); err != nil {
						t.Fatal(err)
					}
					recs = recs[:0]
				}
				for i := range n {
					put(fmt.Sprintf("u%d", i), d.eps(i), 1)
				}
				restore()
				checkQuantiles(t, backend+", restored", aggregateOf(t, st), exact)
				// Move a third of the units up (newer records; a unit's ε
				// never decreases) and try to roll one back (stale records
				// are ignored).
				for i := 0; i < n; i += 3 {
					u := fmt.Sprintf("u%d", i)
					put(u, math.Max(exact[u], d.eps(i+1)), 2)
				}
				restore()
				stale := schema.PDPUnit{Stream: "s", Unit: "u0", Epsilon: 1e9, Delta: pdpDelta, LastWindow: 1}
				if err := st.Restore(stale); err != nil {
					t.Fatal(err)
				}
				checkQuantiles(t, backend+", moved", aggregateOf(t, st), exact)
			}
		})
	}
	// A change of δ recounts every unit at the new δ, from its account.
	ps := testPlan(t, 1000)
	st := openStore(t, t.TempDir())
	for i := range 200 {
		acct := pdp.Account{PureEpsilon: float64(1+i%7) / 4, GaussianRho: float64(i%5) / 100, Charges: 2}
		rec := recordOf(acct, "s", fmt.Sprintf("u%d", i))
		rec.LastWindow, rec.Delta, rec.Epsilon = 1, 1e-3, acct.Epsilon(1e-3)
		if err := st.Restore(rec); err != nil {
			t.Fatal(err)
		}
	}
	s := &ps[0] // δ 1e-6
	sum, _, err := st.Window(s, unitsWindow(s, 5, nil), outcomesFor(s, unitsWindow(s, 5, nil)), time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	exact := map[string]float64{}
	for u, rec := range snapshot(st, "s") {
		exact[u] = accountOf(rec).Epsilon(pdpDelta)
	}
	agg := aggregateOf(t, st)
	if agg.delta != pdpDelta {
		t.Errorf("aggregate at δ %v after a window at δ %v", agg.delta, pdpDelta)
	}
	checkQuantiles(t, "after a change of δ", agg, exact)
	if sum.CumulativeUnits != 200 || !quantileNear(sum.CumulativeP50, nearestRankMap(exact, 50)) {
		t.Errorf("summary after a change of δ: %d units, p50 %v; want 200, %v", sum.CumulativeUnits, sum.CumulativeP50, nearestRankMap(exact, 50))
	}
}

func nearestRankMap(m map[string]float64, p int) float64 {
	return nearestRank(slices.Collect(maps.Values(m)), p)
}

// checkQuantiles compares an aggregate's quantiles with the exact ones.
func checkQuantiles(t *testing.T, what string, a *pdpAggregate, exact map[string]float64) {
	t.Helper()
	eps := slices.Collect(maps.Values(exact))
	p50, p90, p99, max := a.quantiles()
	if a.units != int64(len(eps)) || max != slices.Max(eps) {
		t.Errorf("%s: %d units, max %v; want %d, %v", what, a.units, max, len(eps), slices.Max(eps))
	}
	for _, q := range []struct {
		p   int
		got float64
	}{{50, p50}, {90, p90}, {99, p99}} {
		want := nearestRank(eps, q.p)
		// Above or equal, within the stated relative error; a subnormal q
		// is within one bucket's absolute width instead.
		ok := q.got >= want && (q.got <= want*(1+PDPQuantileError) || (want < 0x1p-1022 && q.got <= 0x1p-1022))
		if !ok {
			t.Errorf("%s: p%d %v, exact %v (ratio %v, stated error %v)", what, q.p, q.got, want, q.got/want, PDPQuantileError)
		}
	}
}

// countingBackend counts the unit accounts a store reads.
type countingBackend struct {
	pdpBackend
	reads, walks int
}

func (c *countingBackend) view(fn func(pdpTx) error) error {
	return c.pdpBackend.view(func(tx pdpTx) error { return fn(&countingTx{tx, c}) })
}

func (c *countingBackend) update(fn func(pdpTx) error) error {
	return c.pdpBackend.update(func(tx pdpTx) error { return fn(&countingTx{tx, c}) })
}

type countingTx struct {
	pdpTx
	c *countingBackend
}

func (t *countingTx) unit(stream, unit string) (schema.PDPUnit, bool, error) {
	t.c.reads++
	return t.pdpTx.unit(stream, unit)
}

func (t *countingTx) eachUnit(stream string, fn func(schema.PDPUnit) error) error {
	t.c.walks++
	return t.pdpTx.eachUnit(stream, fn)
}

// TestPDPWindowWorkBounded: a window reads the accounts of its own units
// only (one lookup in Prepare, one in Commit), however many units the
// stream has: its summary does not walk all units.
func TestPDPWindowWorkBounded(t *testing.T) {
	ps := testPlan(t, 1000)
	s := &ps[0]
	for _, backend := range []string{"memory", "bbolt"} {
		st := NewPDPStore()
		if backend == "bbolt" {
			st = openStore(t, t.TempDir())
		}
		cb := &countingBackend{pdpBackend: st.db}
		st.db = cb
		const perWindow = 25
		for wi := range int64(40) {
			cb.reads, cb.walks = 0, 0
			storeWindow(t, st, nil, s, wi, windowUnits(int(wi)*perWindow, perWindow)) // all new
			if cb.reads > 2*perWindow || cb.walks != 0 {
				t.Fatalf("%s window %d (%d units, %d in the stream): %d account reads and %d walks over all units, want at most %d and none",
					backend, wi, perWindow, st.Units("s"), cb.reads, cb.walks, 2*perWindow)
			}
		}
		if st.Units("s") != 40*perWindow {
			t.Errorf("%s: %d units, want %d", backend, st.Units("s"), 40*perWindow)
		}
	}
}

// TestPDPStoreMemoryBounded: the release stage's store keeps the accounts
// out of the Go heap: after windows that bring 60,000 new units, the heap
// in use grows by far less than a map of the accounts would take (about
// 200 bytes a unit). Memory, not time, is asserted.
func TestPDPStoreMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("60 windows of 1,000 new units")
	}
	ps := testPlan(t, 1e6)
	s := &ps[0]
	st := openStore(t, t.TempDir())
	const perWindow, windows, warmup = 1000, 70, 10
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var base uint64
	for wi := range int64(windows) {
		if wi == warmup {
			base = heap()
		}
		storeWindow(t, st, nil, s, wi, windowUnits(int(wi)*perWindow, perWindow))
	}
	grown := int64(heap()) - int64(base)
	units := (windows - warmup) * perWindow
	if st.Units("s") != windows*perWindow {
		t.Fatalf("%d units in the store, want %d", st.Units("s"), windows*perWindow)
	}
	const maxPerUnit = 16 // bytes
	if grown > int64(units*maxPerUnit) {
		t.Errorf("heap grew by %d bytes over %d new units (%.0f bytes a unit), want under %d a unit: the accounts are held in memory",
			grown, units, float64(grown)/float64(units), maxPerUnit)
	}
	t.Logf("heap growth over %d new units: %d bytes (%.1f a unit)", units, grown, float64(grown)/float64(units))
}
