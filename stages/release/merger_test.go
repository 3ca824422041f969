package release

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

const win = 1000 // window size of the test partials, ms

// part is a partial of stream st for window w (start w·win) from partition
// p of n, carrying count c for release "n" and a 3-bin histogram "h" with c
// in its first bin.
func part(st string, w int64, p, n int32, c int64) schema.Partial {
	return schema.Partial{
		Stream: st, WindowStart: w * win, WindowEnd: (w + 1) * win, Partition: p, Partitions: n,
		Events: c, FirstOffset: -1, LastOffset: -1,
		Stats: []schema.ReleaseStats{
			{Release: "n", Count: c, Bins: []int64{}},
			{Release: "h", Count: c, Bins: []int64{c, 0, 0}},
		},
	}
}

// at is the deterministic clock of the tests: offset o is read at o s.
func at(o int64) time.Time { return time.Unix(o, 0) }

type done struct {
	start int64
	parts []int32 // partitions holding a partial, in order
	count int64   // merged count of release "n"
}

func summarize(t *testing.T, ws []Window) []done {
	t.Helper()
	var out []done
	for _, w := range ws {
		d := done{start: w.Start}
		for _, p := range w.Parts {
			d.parts = append(d.parts, p.Partition)
		}
		st, err := mergeStats(w, "n", 0)
		if err != nil {
			t.Fatalf("window %d: merge: %v", w.Start, err)
		}
		d.count = st.Count
		out = append(out, d)
	}
	return out
}

func (d done) String() string {
	return fmt.Sprintf("{%d parts %v count %d}", d.start, d.parts, d.count)
}

func equalDone(a, b []done) bool {
	return slices.EqualFunc(a, b, func(x, y done) bool {
		return x.start == y.start && slices.Equal(x.parts, y.parts) && x.count == y.count
	})
}

// TestMergerCompletion feeds partials one by one and checks which windows
// each one completes.
func TestMergerCompletion(t *testing.T) {
	type step struct {
		p    schema.Partial
		want []done
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"complete when every partition reported", []step{
			{part("s", 0, 0, 3, 1), nil},
			{part("s", 0, 2, 3, 4), nil},
			{part("s", 0, 1, 3, 2), []done{{0, []int32{0, 1, 2}, 7}}},
		}},
		{"a later window means done; partitions that skipped count as empty", []step{
			{part("s", 0, 0, 2, 5), nil},
			{part("s", 1, 0, 2, 6), nil},
			{part("s", 3, 1, 2, 1), []done{{0, []int32{0}, 5}, {win, []int32{0}, 6}}}, // partition 1 skipped 0 and 1
			{part("s", 3, 0, 2, 2), []done{{3 * win, []int32{0, 1}, 3}}},              // nobody reported window 2
		}},
		{"a partition that never reports holds everything", []step{
			{part("s", 0, 0, 3, 1), nil},
			{part("s", 0, 1, 3, 1), nil},
			{part("s", 5, 0, 3, 1), nil},
			{part("s", 9, 1, 3, 1), nil},
		}},
		{"duplicates are ignored, first wins", []step{
			{part("s", 0, 0, 2, 5), nil},
			{part("s", 0, 0, 2, 7), nil},
			{part("s", 0, 1, 2, 1), []done{{0, []int32{0, 1}, 6}}},
		}},
		{"a repeat after completion does not complete the window again", []step{
			{part("s", 0, 0, 2, 5), nil},
			{part("s", 0, 1, 2, 1), []done{{0, []int32{0, 1}, 6}}},
			{part("s", 0, 0, 2, 9), nil}, // a replaying accumulator's repeat
			{part("s", 1, 0, 2, 2), nil},
			{part("s", 0, 1, 2, 9), nil},
			{part("s", 1, 1, 2, 3), []done{{win, []int32{0, 1}, 5}}},
		}},
		{"windows complete in start order", []step{
			// Partition 0 runs ahead over eight windows; when partition 1
			// catches up they all complete at once, oldest first.
			{part("s", 0, 0, 2, 1), nil}, {part("s", 1, 0, 2, 1), nil}, {part("s", 2, 0, 2, 1), nil},
			{part("s", 3, 0, 2, 1), nil}, {part("s", 4, 0, 2, 1), nil}, {part("s", 5, 0, 2, 1), nil},
			{part("s", 6, 0, 2, 1), nil}, {part("s", 7, 0, 2, 1), nil},
			{part("s", 7, 1, 2, 1), []done{
				{0, []int32{0}, 1}, {win, []int32{0}, 1}, {2 * win, []int32{0}, 1}, {3 * win, []int32{0}, 1},
				{4 * win, []int32{0}, 1}, {5 * win, []int32{0}, 1}, {6 * win, []int32{0}, 1}, {7 * win, []int32{0, 1}, 2},
			}},
		}},
		{"streams are independent", []step{
			{part("a", 0, 0, 1, 1), []done{{0, []int32{0}, 1}}},
			{part("b", 0, 0, 2, 2), nil},
			{part("a", 1, 0, 1, 3), []done{{win, []int32{0}, 3}}},
			{part("b", 0, 1, 2, 4), []done{{0, []int32{0, 1}, 6}}},
		}},
		{"negative window starts", []step{
			{part("s", -2, 0, 2, 1), nil},
			{part("s", -1, 1, 2, 1), []done{{-2 * win, []int32{0}, 1}}},
			{part("s", -1, 0, 2, 1), []done{{-win, []int32{0, 1}, 2}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMerger()
			for i, st := range tc.steps {
				ws := m.Add(st.p, int64(i), at(int64(i)))
				if got := summarize(t, ws); !equalDone(got, st.want) {
					t.Errorf("step %d (%s window %d partition %d): completed %v, want %v",
						i, st.p.Stream, st.p.WindowStart, st.p.Partition, got, st.want)
				}
				for _, w := range ws {
					if w.Stream != st.p.Stream || w.End != w.Start+win {
						t.Errorf("step %d: window %q [%d, %d), want stream %q and end start+%d", i, w.Stream, w.Start, w.End, st.p.Stream, win)
					}
				}
			}
		})
	}
}

// TestMergerWindowFields: the window carries the first partials unchanged
// and the time its first partial was seen.
func TestMergerWindowFields(t *testing.T) {
	m := NewMerger()
	p1, p0 := part("s", 4, 1, 2, 3), part("s", 4, 0, 2, 8)
	p1.FirstOffset, p1.LastOffset = 100, 140
	m.Add(p1, 10, at(10))
	m.Add(part("s", 4, 1, 2, 99), 11, at(11)) // repeat: ignored
	ws := m.Add(p0, 12, at(12))
	if len(ws) != 1 {
		t.Fatalf("completed %d windows, want 1", len(ws))
	}
	w := ws[0]
	if !w.FirstSeen.Equal(at(10)) {
		t.Errorf("FirstSeen %v, want %v (the first partial's)", w.FirstSeen, at(10))
	}
	if len(w.Parts) != 2 || w.Parts[0].Events != 8 || w.Parts[1].Events != 3 || w.Parts[1].FirstOffset != 100 || w.Parts[1].LastOffset != 140 {
		t.Errorf("Parts %+v, want partition 0 (8 events) then the first partial of partition 1", w.Parts)
	}
	if m.Pending() != 0 {
		t.Errorf("Pending = %d after completion, want 0", m.Pending())
	}
}

func TestMergerPending(t *testing.T) {
	m := NewMerger()
	for i, p := range []schema.Partial{part("s", 0, 0, 2, 1), part("s", 1, 0, 2, 1), part("t", 0, 0, 2, 1), part("s", 1, 0, 2, 1)} {
		m.Add(p, int64(i), at(0))
	}
	if got := m.Pending(); got != 3 {
		t.Errorf("Pending = %d, want 3 (s/0, s/1, t/0)", got)
	}
	m.Add(part("s", 0, 1, 2, 1), 4, at(0))
	if got := m.Pending(); got != 2 {
		t.Errorf("Pending = %d after s/0 completed, want 2", got)
	}
}

// TestMergerCommitOffset: the commit offset is the smallest of the first
// offsets of the pending windows and of each partition's latest report.
func TestMergerCommitOffset(t *testing.T) {
	m := NewMerger()
	if _, ok := m.CommitOffset(); ok {
		t.Fatal("CommitOffset of an empty merger: ok, want !ok")
	}
	for i, st := range []struct {
		p    schema.Partial
		off  int64
		want int64
	}{
		{part("s", 0, 0, 2, 1), 10, 10}, // pending 0@10, p0@10
		{part("s", 1, 0, 2, 1), 11, 10}, // pending 0@10 1@11, p0@11
		{part("s", 0, 1, 2, 1), 12, 11}, // 0 completes; pending 1@11, p0@11 p1@12
		{part("s", 1, 1, 2, 1), 13, 11}, // 1 completes; p0@11 is p0's latest report
		{part("s", 2, 1, 2, 1), 14, 11}, // pending 2@14, p0@11 p1@14
		{part("s", 3, 0, 2, 1), 15, 14}, // 2 completes; pending 3@15, p0@15 p1@14
		{part("s", 1, 0, 2, 1), 16, 14}, // a stale repeat moves nothing back
		{part("t", 0, 0, 1, 1), 17, 14}, // another stream completes at once; its partition's report counts
		{part("s", 3, 1, 2, 1), 18, 15}, // 3 completes: s's p0@15 (window 3) is the oldest latest report
		{part("s", 4, 0, 2, 1), 19, 17}, // pending 4@19, s p0@19 p1@18; t p0@17
	} {
		m.Add(st.p, st.off, at(st.off))
		got, ok := m.CommitOffset()
		if !ok || got != st.want {
			t.Errorf("step %d (offset %d): CommitOffset = %d, %v; want %d", i, st.off, got, ok, st.want)
		}
	}
}

// partialStream generates a partials topic: every partition reports its
// windows in order with a random event count, sometimes skips windows
// (as an accumulator's gap cap does), and sometimes restarts and repeats
// its last few windows with different contents (as a replaying
// accumulator does; the first partial must win). Partitions are
// interleaved at random, keeping each one's order.
func partialStream(r *rand.Rand, partitions int32, windows int64) []schema.Partial {
	per := make([][]schema.Partial, partitions)
	for p := range partitions {
		var sent []schema.Partial
		for w := int64(0); w < windows; w++ {
			if r.IntN(8) == 0 {
				continue
			}
			sent = append(sent, part("s", w, p, partitions, 1+r.Int64N(50)))
			per[p] = append(per[p], sent[len(sent)-1])
			if r.IntN(10) == 0 {
				back := min(len(sent), 1+r.IntN(4))
				for _, old := range sent[len(sent)-back:] {
					again := part("s", old.WindowStart/win, p, partitions, 1000+r.Int64N(50))
					per[p] = append(per[p], again)
				}
			}
		}
	}
	var out []schema.Partial
	idx := make([]int, partitions)
	for {
		var live []int32
		for p := range partitions {
			if idx[p] < len(per[p]) {
				live = append(live, p)
			}
		}
		if len(live) == 0 {
			return out
		}
		p := live[r.IntN(len(live))]
		out = append(out, per[p][idx[p]])
		idx[p]++
	}
}

// expectedCompletions is the specification as a naive model: after each
// partial, every window that someone reported and that every partition has
// reached (reported it or a later one) is complete, exactly once, oldest
// first, with the first partial of each partition that reported it.
func expectedCompletions(ps []schema.Partial, partitions int32) [][]done {
	progress := map[int32]int64{}
	first := map[int64]map[int32]schema.Partial{}
	completed := map[int64]bool{}
	out := make([][]done, len(ps))
	for i, p := range ps {
		if first[p.WindowStart] == nil {
			first[p.WindowStart] = map[int32]schema.Partial{}
		}
		if _, dup := first[p.WindowStart][p.Partition]; !dup && !completed[p.WindowStart] {
			first[p.WindowStart][p.Partition] = p
		}
		if v, ok := progress[p.Partition]; !ok || p.WindowStart > v {
			progress[p.Partition] = p.WindowStart
		}
		if int32(len(progress)) < partitions {
			continue
		}
		low := progress[0]
		for _, v := range progress {
			low = min(low, v)
		}
		var starts []int64
		for s := range first {
			if s <= low && !completed[s] {
				starts = append(starts, s)
			}
		}
		slices.Sort(starts)
		for _, s := range starts {
			completed[s] = true
			d := done{start: s}
			for q := range partitions {
				if fp, ok := first[s][q]; ok {
					d.parts = append(d.parts, q)
					d.count += fp.Stats[0].Count
				}
			}
			out[i] = append(out[i], d)
		}
	}
	return out
}

// TestMergerRandomStreams checks the merger against the naive model on
// random partials topics with skips, repeats and interleaving.
func TestMergerRandomStreams(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		const partitions = 3
		ps := partialStream(r, partitions, 60)
		want := expectedCompletions(ps, partitions)
		m := NewMerger()
		var last int64
		var any bool
		for i, p := range ps {
			got := summarize(t, m.Add(p, int64(i), at(int64(i))))
			if !equalDone(got, want[i]) {
				t.Fatalf("seed %d partial %d (window %d partition %d): completed %v, want %v",
					seed, i, p.WindowStart, p.Partition, got, want[i])
			}
			for _, d := range got {
				if any && d.start <= last {
					t.Fatalf("seed %d: window %d completed after window %d", seed, d.start, last)
				}
				last, any = d.start, true
			}
		}
	}
}

// TestMergerRestartFromCommitOffset: a merger rebuilt by replaying the
// partials topic from CommitOffset completes exactly the same windows, with
// the same partials, as the merger that never stopped; and whatever the
// replay completes again was completed before the cut (the ledger holds
// it).
func TestMergerRestartFromCommitOffset(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		const partitions = 3
		ps := partialStream(r, partitions, 40)
		for k := 0; k <= len(ps); k++ {
			orig := NewMerger()
			before := map[int64]bool{}
			for i, p := range ps[:k] {
				for _, w := range orig.Add(p, int64(i), at(int64(i))) {
					before[w.Start] = true
				}
			}
			off, ok := orig.CommitOffset()
			if !ok {
				if k > 0 {
					t.Fatalf("seed %d cut %d: no commit offset", seed, k)
				}
				off = 0
			}
			if off < 0 || off > int64(k) {
				t.Fatalf("seed %d cut %d: commit offset %d outside [0, %d]", seed, k, off, k)
			}
			fresh := NewMerger()
			for i := int(off); i < k; i++ {
				for _, w := range fresh.Add(ps[i], int64(i), at(int64(i))) {
					if !before[w.Start] {
						t.Fatalf("seed %d cut %d (commit %d): replay completed window %d, which was not complete before the cut", seed, k, off, w.Start)
					}
				}
			}
			if fresh.Pending() != orig.Pending() {
				t.Fatalf("seed %d cut %d (commit %d): %d pending windows after replay, want %d", seed, k, off, fresh.Pending(), orig.Pending())
			}
			for i := k; i < len(ps); i++ {
				a, b := orig.Add(ps[i], int64(i), at(int64(i))), fresh.Add(ps[i], int64(i), at(int64(i)))
				ga, gb := summarize(t, a), summarize(t, b)
				if !equalDone(gb, ga) {
					t.Fatalf("seed %d cut %d (commit %d) partial %d: restarted merger completed %v, uninterrupted %v", seed, k, off, i, gb, ga)
				}
				for j := range a {
					if !a[j].FirstSeen.Equal(b[j].FirstSeen) {
						t.Fatalf("seed %d cut %d: window %d first seen %v after restart, %v uninterrupted", seed, k, a[j].Start, b[j].FirstSeen, a[j].FirstSeen)
					}
				}
			}
		}
	}
}

// TestMerged: the fixed-point sums, counts and bins are added exactly,
// whatever order the partials arrived in, histograms add bin by bin, other
// releases are ignored, and the partials are not modified.
func TestMerged(t *testing.T) {
	mk := func(p int32, sum, centered int64, bins []int64) schema.Partial {
		return schema.Partial{Stream: "s", WindowStart: 0, WindowEnd: win, Partition: p, Partitions: 3,
			Stats: []schema.ReleaseStats{
				{Release: "other", Count: 1000, SumUnits: 1000, Bins: []int64{}},
				{Release: "x", Count: int64(p) + 1, SumUnits: sum, CenteredSumUnits: centered, Bins: bins},
			}}
	}
	// As float64, 2^62 + 1 rounds back to 2^62, so float sums of these
	// would depend on the order (1 in one order, 0 in another); the
	// integers add to exactly 1 and −1 in every order.
	p0 := mk(0, 1<<62, -1<<62, []int64{1, 0, 2})
	p1 := mk(1, 1, -1, []int64{0, 5, 0})
	p2 := mk(2, -1<<62, 1<<62, []int64{3, 0, 0})
	if f := float64(int64(1<<62)) + 1 - float64(int64(1<<62)); f != 0 {
		t.Fatalf("test setup: float64 2^62 + 1 − 2^62 = %v, want 0 (absorbed)", f)
	}
	const wantSum, wantCentered = 1, -1
	for _, order := range [][]schema.Partial{{p2, p0, p1}, {p1, p2, p0}, {p0, p1, p2}, {p0, p2, p1}} {
		m := NewMerger()
		var ws []Window
		for i, p := range order {
			ws = append(ws, m.Add(p, int64(i), at(0))...)
		}
		if len(ws) != 1 {
			t.Fatalf("completed %d windows, want 1", len(ws))
		}
		for range 2 { // twice: merging must not modify the partials
			st, err := mergeStats(ws[0], "x", 3)
			if err != nil {
				t.Fatalf("Merged: %v", err)
			}
			if st.Count != 6 || st.SumUnits != wantSum || st.CenteredSumUnits != wantCentered || !slices.Equal(st.Bins, []int64{4, 5, 2}) {
				t.Errorf("arrival order %d,%d,%d: Merged = %+v, want Count 6 SumUnits %v CenteredSumUnits %v Bins [4 5 2]",
					order[0].Partition, order[1].Partition, order[2].Partition, st, wantSum, wantCentered)
			}
		}
		if !slices.Equal(p0.Stats[1].Bins, []int64{1, 0, 2}) {
			t.Errorf("partition 0's bins changed to %v", p0.Stats[1].Bins)
		}
	}
}

// mergeStats adds the window's partial statistics of one release exactly
// with aggregate.Stats.Merge, as the count, sum, mean and histogram kinds
// do (their own tests check the edge cases).
func mergeStats(w Window, release string, cells int) (aggregate.Stats, error) {
	out := aggregate.Stats{}
	if cells > 0 {
		out.Bins = make([]int64, cells)
	}
	for _, pt := range w.ReleaseParts(release) {
		st := aggregate.Stats{Count: pt.Stats.Count, SumUnits: pt.Stats.SumUnits, CenteredSumUnits: pt.Stats.CenteredSumUnits}
		if cells > 0 {
			st.Bins = pt.Stats.Bins
		}
		if err := out.Merge(st); err != nil {
			return out, err
		}
	}
	return out, nil
}
