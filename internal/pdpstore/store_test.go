package pdpstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/dpstream/dpstream/mechanism/pdp"
	"github.com/dpstream/dpstream/schema"
)

// testDelta is the δ of the test stream "s": the δ at which its
// accounts' ε are stated.
const testDelta = 1e-6

// win is the window size of the test windows, ms.
const win = 1000

// fakeTopic is an in-memory pdp topic for CatchUp: records at their
// offsets per partition, partitioned by a hash of the key.
type fakeTopic struct {
	name  string
	parts [][]Record
	first []int64
	next  []int64
}

func newFakeTopic(name string, partitions int) *fakeTopic {
	return &fakeTopic{name: name, parts: make([][]Record, partitions), first: make([]int64, partitions), next: make([]int64, partitions)}
}

func (f *fakeTopic) write(msgs ...Record) {
	for _, m := range msgs {
		h := fnv.New32a()
		h.Write(m.Key)
		p := int(h.Sum32() % uint32(len(f.parts)))
		m.Offset = f.next[p]
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
		f.parts[p] = slices.DeleteFunc(ms, func(m Record) bool { return last[string(m.Key)] != m.Offset })
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

func (f *fakeTopic) Read(_ context.Context, p int, from, end int64, fn func(Record) error) error {
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

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	st, err := Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func catchUp(t *testing.T, st *Store, src Source) int {
	t.Helper()
	n, err := st.CatchUp(context.Background(), src, quiet)
	if err != nil {
		t.Fatalf("CatchUp: %v", err)
	}
	return n
}

// storeWindow runs window wi of stream "s" through st as the release
// stage does (Prepare, records to topic, Commit) and returns the records
// written. units maps each unit to a count k; the window charges it a
// Laplace ε0 of k/4 and a Gaussian of sensitivity √k and σ 4 (a count and
// a Gaussian histogram of the release stage's plan), and none again for a
// window already applied to it.
func storeWindow(t *testing.T, st *Store, topic *fakeTopic, wi int64, units map[string]float64) []Record {
	t.Helper()
	upd, err := prepareWindow(st, wi, units)
	if err != nil {
		t.Fatal(err)
	}
	msgs := records(t, upd)
	if topic != nil {
		topic.write(msgs...)
	}
	if err := st.Commit(upd); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// prepareWindow prepares storeWindow's update.
func prepareWindow(st *Store, wi int64, units map[string]float64) (*Update, error) {
	start := wi * win
	sum := schema.PDPSummary{Stream: "s", WindowStart: start, WindowEnd: start + win, Delta: testDelta, PublishedAt: start}
	memo := map[pdp.Account]float64{} // as the release stage shares the search
	return st.Prepare(sum, func(d *Draft) error {
		for _, u := range slices.Sorted(maps.Keys(units)) {
			err := d.Change(u, func(rec schema.PDPUnit, seen bool) (schema.PDPUnit, bool, error) {
				if seen && rec.LastWindow >= start {
					return rec, false, nil
				}
				acct := AccountOf(rec)
				if err := acct.AddPure(units[u] / 4); err != nil {
					return rec, false, err
				}
				if err := acct.AddGaussian(math.Sqrt(units[u]), 4); err != nil {
					return rec, false, err
				}
				rec = RecordOf(acct, "s", u)
				rec.LastWindow, rec.Delta, rec.UpdatedAt, rec.Epsilon = start, testDelta, start, CachedEpsilon(memo, acct, testDelta)
				return rec, true, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// records returns the pdp topic records of an update, as the release
// stage writes them: the unit accounts, then the summary.
func records(t testing.TB, upd *Update) []Record {
	t.Helper()
	var out []Record
	for _, u := range upd.Units {
		b, err := schema.EncodePDPUnit(u)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Record{Key: []byte(schema.PDPUnitKey(u.Stream, u.Unit)), Type: schema.PDPTypeUnit, Value: b})
	}
	b, err := schema.EncodePDPSummary(upd.Summary)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, Record{Key: []byte(upd.Key), Type: schema.PDPTypeSummary, Value: b})
}

// windowUnits returns units u<from>..u<from+n-1>, unit i with count
// 1 + i mod 4: varied per-instance ε.
func windowUnits(from, n int) map[string]float64 {
	out := map[string]float64{}
	for i := from; i < from+n; i++ {
		out[fmt.Sprintf("u%d", i)] = float64(1 + i%4)
	}
	return out
}

// snapshot copies a stream's records.
func snapshot(t *testing.T, st *Store, stream string) map[string]schema.PDPUnit {
	t.Helper()
	out := map[string]schema.PDPUnit{}
	if err := st.EachUnit(stream, func(u schema.PDPUnit) error {
		out[u.Unit] = u
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// nearestRank returns the nearest-rank p-quantile (p in percent) of xs:
// the ⌈p·n/100⌉-th smallest.
func nearestRank(xs []float64, p int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	k := (p*len(s) + 99) / 100
	return s[k-1]
}

// sameStore fails unless two stores hold the same accounts, the same
// stream aggregate and the same summarized windows.
func sameStore(t *testing.T, what string, got, want *Store, windows []int64) {
	t.Helper()
	if g, w := snapshot(t, got, "s"), snapshot(t, want, "s"); !maps.Equal(g, w) {
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

func aggregateOf(t *testing.T, st *Store) *pdpAggregate {
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

// TestCatchUp: an on-disk store built from the pdp topic holds
// what the store that wrote the topic holds; a second catch-up reads only
// the new records; a restarted store reads nothing; a store rebuilt from
// the compacted topic, in a fresh directory, is the same; and the store
// goes on from there exactly as the writer does.
func TestCatchUp(t *testing.T) {
	ref := NewMemory()
	topic := newFakeTopic("pdp", 3)
	var windows []int64
	for wi := range int64(8) {
		storeWindow(t, ref, topic, wi, windowUnits(int(wi)*5, 12)) // overlapping units
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
		storeWindow(t, ref, topic, wi, windowUnits(int(wi)*5, 12))
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
	for _, other := range []*Store{st, fresh} {
		storeWindow(t, other, nil, 11, windowUnits(50, 12))
	}
	storeWindow(t, ref, topic, 11, windowUnits(50, 12))
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

// TestSlots: processes (here stores) sharing a directory each take
// a file of their own, without waiting; when every slot is held, opening
// fails with ErrBusy.
func TestSlots(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for range Slots {
		st := openStore(t, dir)
		if seen[st.Path()] {
			t.Fatalf("slot %s opened twice", st.Path())
		}
		seen[st.Path()] = true
	}
	if _, err := Open(dir, quiet); err == nil || !errors.Is(err, ErrBusy) {
		t.Errorf("open with every slot held: %v, want ErrBusy", err)
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

// TestTopicChanged: a store built from a topic that was deleted
// and recreated (shorter, or as long with other records), or from a topic
// of another name, is emptied and rebuilt from the topic it is given.
func TestTopicChanged(t *testing.T) {
	build := func(name string, from int) *fakeTopic {
		topic := newFakeTopic(name, 2)
		w := NewMemory()
		for wi := range int64(4) {
			storeWindow(t, w, topic, wi, windowUnits(from+int(wi)*3, 6))
		}
		return topic
	}
	cases := []struct {
		name  string
		after *fakeTopic
	}{
		{"recreated shorter", func() *fakeTopic {
			tp := newFakeTopic("pdp", 2)
			storeWindow(t, NewMemory(), tp, 0, windowUnits(100, 2))
			return tp
		}()},
		{"recreated as long, other records", build("pdp", 1000)},
		{"renamed", build("pdp2", 2000)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			catchUp(t, st, build("pdp", 0))
			want := NewMemory()
			catchUp(t, want, c.after)
			n := catchUp(t, st, c.after)
			if n != c.after.records() {
				t.Errorf("read %d records, want a rebuild from all %d", n, c.after.records())
			}
			sameStore(t, c.name, st, want, nil)
		})
	}
}

// TestCrashReplay: a crash anywhere between the pdp topic write and
// the store's commit (and after it) leaves, after the restart's catch-up
// and the window's replay as writePDP does it, the accounts of a run
// without a crash: no unit charged twice or missed, the window summarized.
func TestCrashReplay(t *testing.T) {
	cases := []struct {
		name    string
		written func(msgs []Record) []Record // what reached the topic
		commit  bool
	}{
		{"before the write", func([]Record) []Record { return nil }, false},
		{"half the unit records written", func(m []Record) []Record { return m[:len(m)/2] }, false},
		{"written, not committed", func(m []Record) []Record { return m }, false},
		{"committed", func(m []Record) []Record { return m }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := NewMemory()
			topic := newFakeTopic("pdp", 2)
			dir := t.TempDir()
			st := openStore(t, dir)
			for wi := range int64(3) {
				storeWindow(t, ref, nil, wi, windowUnits(int(wi)*4, 10))
				storeWindow(t, st, topic, wi, windowUnits(int(wi)*4, 10))
			}
			units := windowUnits(8, 10)
			storeWindow(t, ref, nil, 3, units)

			// Window 3, up to the crash.
			upd, err := prepareWindow(st, 3, units)
			if err != nil {
				t.Fatal(err)
			}
			msgs := records(t, upd)
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
				again := storeWindow(t, st, topic, 3, units)
				if got, want := len(again)-1, len(msgs)-1-len(c.written(msgs)); got != want {
					t.Errorf("replay wrote %d unit records, want the %d not written before the crash", got, want)
				}
			}
			sameStore(t, "after the crash", st, ref, []int64{0, 1, 2, 3})
			// And what a store rebuilt from the topic holds is the same.
			rebuilt := NewMemory()
			catchUp(t, rebuilt, topic)
			sameStore(t, "rebuilt after the crash", rebuilt, ref, []int64{0, 1, 2, 3})
		})
	}
}

// TestCumulativeQuantiles: the cumulative quantiles read off the
// histogram are within QuantileError of the exact nearest-rank ones,
// never below; the count and the maximum are exact; and this holds after
// units move between buckets (records replaced by newer ones) and after a
// change of δ recounts the histogram.
func TestCumulativeQuantiles(t *testing.T) {
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
				st := NewMemory()
				if backend == "bbolt" {
					st = openStore(t, t.TempDir())
				}
				exact := map[string]float64{}
				var recs []schema.PDPUnit
				put := func(u string, e float64, lastWindow int64) {
					exact[u] = e
					recs = append(recs, schema.PDPUnit{Stream: "s", Unit: u, PureEpsilon: 1, Charges: 1, LastWindow: lastWindow, Epsilon: e, Delta: testDelta})
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
				stale := schema.PDPUnit{Stream: "s", Unit: "u0", Epsilon: 1e9, Delta: testDelta, LastWindow: 1}
				if err := st.Restore(stale); err != nil {
					t.Fatal(err)
				}
				checkQuantiles(t, backend+", moved", aggregateOf(t, st), exact)
			}
		})
	}
	// A change of δ recounts every unit at the new δ, from its account.
	st := openStore(t, t.TempDir())
	for i := range 200 {
		acct := pdp.Account{PureEpsilon: float64(1+i%7) / 4, GaussianRho: float64(i%5) / 100, Charges: 2}
		rec := RecordOf(acct, "s", fmt.Sprintf("u%d", i))
		rec.LastWindow, rec.Delta, rec.Epsilon = 1, 1e-3, acct.Epsilon(1e-3)
		if err := st.Restore(rec); err != nil {
			t.Fatal(err)
		}
	}

	upd, err := prepareWindow(st, 5, nil) // δ 1e-6, no units
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(upd); err != nil {
		t.Fatal(err)
	}
	sum := upd.Summary
	exact := map[string]float64{}
	for u, rec := range snapshot(t, st, "s") {
		exact[u] = AccountOf(rec).Epsilon(testDelta)
	}
	agg := aggregateOf(t, st)
	if agg.delta != testDelta {
		t.Errorf("aggregate at δ %v after a window at δ %v", agg.delta, testDelta)
	}
	checkQuantiles(t, "after a change of δ", agg, exact)
	if sum.CumulativeUnits != 200 || !quantileNear(sum.CumulativeP50, nearestRankMap(exact, 50)) {
		t.Errorf("summary after a change of δ: %d units, p50 %v; want 200, %v", sum.CumulativeUnits, sum.CumulativeP50, nearestRankMap(exact, 50))
	}
}

// quantileNear reports whether a cumulative quantile read off the
// histogram is within its stated error of the exact one q, from above
// (QuantileError), allowing the exact ε a relative 1e-12.
func quantileNear(got, q float64) bool {
	return got >= q*(1-1e-12) && got <= q*(1+QuantileError)*(1+1e-12)
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
		ok := q.got >= want && (q.got <= want*(1+QuantileError) || (want < 0x1p-1022 && q.got <= 0x1p-1022))
		if !ok {
			t.Errorf("%s: p%d %v, exact %v (ratio %v, stated error %v)", what, q.p, q.got, want, q.got/want, QuantileError)
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

// TestWindowWorkBounded: a window reads the accounts of its own units
// only (one lookup in Prepare, one in Commit), however many units the
// stream has: its summary does not walk all units.
func TestWindowWorkBounded(t *testing.T) {
	for _, backend := range []string{"memory", "bbolt"} {
		st := NewMemory()
		if backend == "bbolt" {
			st = openStore(t, t.TempDir())
		}
		cb := &countingBackend{pdpBackend: st.db}
		st.db = cb
		const perWindow = 25
		for wi := range int64(40) {
			cb.reads, cb.walks = 0, 0
			storeWindow(t, st, nil, wi, windowUnits(int(wi)*perWindow, perWindow)) // all new
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

// TestMemoryBounded: the release stage's store keeps the accounts
// out of the Go heap: after windows that bring 60,000 new units, the heap
// in use grows by far less than a map of the accounts would take (about
// 200 bytes a unit). Memory, not time, is asserted.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("60 windows of 1,000 new units")
	}
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
		storeWindow(t, st, nil, wi, windowUnits(int(wi)*perWindow, perWindow))
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

// TestDraftChange: a Draft refuses a unit changed twice and a record of
// another unit or stream, passes fn's error through as it is, and Prepare
// changes nothing whatever fn does.
func TestDraftChange(t *testing.T) {
	errFn := errors.New("fn failed")
	rec := func(stream, unit string) schema.PDPUnit {
		return schema.PDPUnit{Stream: stream, Unit: unit, PureEpsilon: 1, Charges: 1, LastWindow: 0, Epsilon: 1, Delta: testDelta}
	}
	put := func(r schema.PDPUnit) func(schema.PDPUnit, bool) (schema.PDPUnit, bool, error) {
		return func(schema.PDPUnit, bool) (schema.PDPUnit, bool, error) { return r, true, nil }
	}
	cases := []struct {
		name    string
		fn      func(d *Draft) error
		wantErr error // nil: any error
		ok      bool
	}{
		{"one change", func(d *Draft) error { return d.Change("a", put(rec("s", "a"))) }, nil, true},
		{"changed twice", func(d *Draft) error {
			if err := d.Change("a", put(rec("s", "a"))); err != nil {
				return err
			}
			return d.Change("a", put(rec("s", "a")))
		}, nil, false},
		{"another unit's record", func(d *Draft) error { return d.Change("a", put(rec("s", "b"))) }, nil, false},
		{"another stream's record", func(d *Draft) error { return d.Change("a", put(rec("t", "a"))) }, nil, false},
		{"fn's error", func(d *Draft) error {
			return d.Change("a", func(schema.PDPUnit, bool) (schema.PDPUnit, bool, error) { return schema.PDPUnit{}, false, errFn })
		}, errFn, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, backend := range []string{"memory", "bbolt"} {
				st := NewMemory()
				if backend == "bbolt" {
					st = openStore(t, t.TempDir())
				}
				storeWindow(t, st, nil, 0, windowUnits(0, 3))
				before := snapshot(t, st, "s")
				sum := schema.PDPSummary{Stream: "s", WindowStart: win, WindowEnd: 2 * win, Delta: testDelta}
				upd, err := st.Prepare(sum, c.fn)
				switch {
				case c.ok && (err != nil || len(upd.Units) != 1 || upd.Summary.CumulativeUnits != 4):
					t.Errorf("%s: %v, %+v; want one unit changed, 4 in the stream", backend, err, upd)
				case !c.ok && (err == nil || upd != nil):
					t.Errorf("%s: update %+v, error %v; want no update and an error", backend, upd, err)
				case c.wantErr != nil && !errors.Is(err, c.wantErr):
					t.Errorf("%s: error %v, want fn's %v", backend, err, c.wantErr)
				}
				if !maps.Equal(snapshot(t, st, "s"), before) || st.Units("s") != 3 {
					t.Errorf("%s: Prepare changed the store", backend)
				}
				if done, err := st.Summarized(schema.PDPSummaryKey("s", win)); err != nil || done {
					t.Errorf("%s: window summarized by Prepare (%v)", backend, err)
				}
			}
		})
	}
}
