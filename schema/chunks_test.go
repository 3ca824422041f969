package schema

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// keyedPartial is a partial of two releases with per-key groups (n and m
// keys, the second with quantile-tree cells) and units unit contributions.
func keyedPartial(n, m, units int) Partial {
	p := Partial{Stream: "s", WindowStart: 60000, WindowEnd: 120000, Partition: 3, Partitions: 6,
		Events: 12345, Units: 678, Dropped: 9, FirstOffset: 10, LastOffset: 999, UnitsTruncated: units == 0,
		Stats: []ReleaseStats{
			{Release: "trips", Count: 12345, SumUnits: 77, Bins: []int64{1, 2}, Terms: []int64{}},
			{Release: "global", Count: 5, Clamped: 2},
			{Release: "delay", Count: 12345, XtX: []int64{4}},
		}}
	for i := range n {
		p.Stats[0].Groups = append(p.Stats[0].Groups, GroupStats{Key: fmt.Sprintf("zone-%06d", i), Units: int64(i % 97), Count: int64(i % 1013),
			Sums: []int64{int64(i) << 20, -int64(i) * 3, int64(i) * int64(i)}})
	}
	for i := range m {
		p.Stats[2].Groups = append(p.Stats[2].Groups, GroupStats{Key: fmt.Sprintf("airport-%04d", i), Units: 3, Count: 4,
			Cells: []int64{int64(i % 7), 2, int64(i%7 + 9), 1}})
	}
	for i := range units {
		p.UnitContributions = append(p.UnitContributions, UnitContribution{Unit: fmt.Sprintf("u%07d", i), Norms: [][]float64{{1, 2}, {}, {3}}})
	}
	return p
}

// keyedRelease is a per-key release of n keys; intervals95 is aligned when
// perKey, else one shared value; quantiles (one list per key) when q.
func keyedRelease(n int, perKey, q bool) Release {
	v := 4.5
	r := Release{ReleaseID: "s/trips/60000", Stream: "s", Release: "trips", Kind: "some_kind", WindowStart: 60000, WindowEnd: 120000,
		Status: "ok", Epsilon: 1, Delta: 1e-7, Noise: []NoiseComponent{{Purpose: "count", Mechanism: "discrete_laplace", Sensitivity: 3, Scale: 3, Epsilon: 1}},
		Value: &v, Fields: []string{"zone"}, EpsilonSpent: 2.5, EpsilonBudget: 10, PublishedAt: 130000}
	if !perKey {
		r.Intervals95 = []float64{7.25}
	}
	if q {
		r.Ranks = []float64{0.25, 0.5, 0.75}
	}
	for i := range n {
		r.Keys = append(r.Keys, fmt.Sprintf("zone-%06d", i))
		r.Values = append(r.Values, float64(i)*1.5-3)
		if perKey {
			r.Intervals95 = append(r.Intervals95, float64(i%5)+0.5)
		}
		if q {
			r.Quantiles = append(r.Quantiles, []float64{float64(i), float64(i) + 1, float64(i) + 2})
		}
	}
	return r
}

func mustEncodePartial(t *testing.T, p Partial) []byte {
	t.Helper()
	b, err := EncodePartial(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustEncodeRelease(t *testing.T, r Release) []byte {
	t.Helper()
	b, err := EncodeRelease(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChunkSizeModel checks the size arithmetic that fills the chunks
// against goavro's encoding, including arrays of more than one block
// (goavro.MaxBlockCount items): a record the model measures at n bytes
// encodes to exactly n bytes.
func TestChunkSizeModel(t *testing.T) {
	for _, p := range []Partial{keyedPartial(0, 0, 0), keyedPartial(3, 1, 2), keyedPartial(70000, 5, 3), keyedPartial(10, 0, 70000)} {
		head := p
		head.Stats = slices.Clone(p.Stats)
		for i := range head.Stats {
			head.Stats[i].Groups = nil
		}
		head.UnitContributions = nil
		var items []chunkItem
		for i, rs := range p.Stats {
			for _, g := range rs.Groups {
				items = append(items, chunkItem{first: i, arrays: 1, size: groupLen(g)})
			}
		}
		for _, u := range p.UnitContributions {
			items = append(items, chunkItem{first: len(p.Stats), arrays: 1, size: unitLen(u)})
		}
		if got, want := total(len(mustEncodePartial(t, head)), items, len(p.Stats)+1), len(mustEncodePartial(t, p)); got != want {
			t.Errorf("partial with %d groups and %d units: model %d bytes, encoded %d", len(p.Stats[0].Groups), len(p.UnitContributions), got, want)
		}
	}
	for _, r := range []Release{keyedRelease(1, true, true), keyedRelease(70000, true, false), keyedRelease(300, false, true)} {
		al := alignedWith(r)
		head := r
		head.Keys, head.Values, head.Quantiles = nil, nil, nil
		if al.intervals {
			head.Intervals95 = nil
		}
		var items []chunkItem
		for j, k := range r.Keys {
			n := stringLen(k) + 8
			if al.intervals {
				n += 8
			}
			if al.quantiles {
				n += doublesLen(len(r.Quantiles[j]))
			}
			items = append(items, chunkItem{arrays: al.arrays(), size: n})
		}
		if got, want := total(len(mustEncodeRelease(t, head)), items, al.arrays()), len(mustEncodeRelease(t, r)); got != want {
			t.Errorf("release with %d keys: model %d bytes, encoded %d", len(r.Keys), got, want)
		}
	}
}

// TestSplitPartial splits partials at several limits and checks every
// promise of SplitPartial: a partial that fits is returned alone and
// unchanged; otherwise every chunk fits, numbers itself, repeats the window,
// carries nothing but its slice after chunk 0, and the chunks join (in any
// order) to the partial's exact bytes; splitting again gives the same bytes.
func TestSplitPartial(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Partial
		max     int
		chunked bool
	}{
		{"fits", keyedPartial(100, 10, 10), MaxRecordBytes, false},
		{"fits exactly", keyedPartial(100, 10, 10), len(mustEncodePartial(t, keyedPartial(100, 10, 10))), false},
		{"one byte over", keyedPartial(100, 10, 10), len(mustEncodePartial(t, keyedPartial(100, 10, 10))) - 1, true},
		{"groups of two releases", keyedPartial(2000, 500, 0), 8000, true},
		{"units only", keyedPartial(0, 0, 3000), 9000, true},
		{"everything", keyedPartial(3000, 700, 2000), 20000, true},
		{"production size", keyedPartial(60000, 0, 0), MaxRecordBytes, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := mustEncodePartial(t, tc.p)
			chunks, err := SplitPartial(tc.p, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.chunked {
				if len(chunks) != 1 || !bytes.Equal(mustEncodePartial(t, chunks[0]), whole) {
					t.Fatalf("a partial that fits became %d chunks, or changed", len(chunks))
				}
				return
			}
			if len(chunks) < 2 {
				t.Fatalf("a partial of %d bytes over a limit of %d gave %d chunk", len(whole), tc.max, len(chunks))
			}
			encoded := make([][]byte, len(chunks))
			for k, c := range chunks {
				b := mustEncodePartial(t, c)
				encoded[k] = b
				if len(b) > tc.max {
					t.Errorf("chunk %d: %d bytes, over the limit of %d", k, len(b), tc.max)
				}
				if c.Chunk != int32(k) || c.Chunks != int32(len(chunks)) {
					t.Errorf("chunk %d numbered %d of %d", k, c.Chunk, c.Chunks)
				}
				if c.Stream != tc.p.Stream || c.WindowStart != tc.p.WindowStart || c.WindowEnd != tc.p.WindowEnd || c.Partition != tc.p.Partition || c.Partitions != tc.p.Partitions {
					t.Errorf("chunk %d does not repeat the window fields", k)
				}
				if len(c.Stats) != len(tc.p.Stats) {
					t.Fatalf("chunk %d: %d releases, want %d", k, len(c.Stats), len(tc.p.Stats))
				}
				for i, rs := range c.Stats {
					if rs.Release != tc.p.Stats[i].Release {
						t.Errorf("chunk %d names release %d %q", k, i, rs.Release)
					}
					if k > 0 && (rs.Count != 0 || rs.SumUnits != 0 || len(rs.Bins) != 0 || len(rs.XtX) != 0 || rs.Clamped != 0) {
						t.Errorf("chunk %d repeats release %s's statistics", k, rs.Release)
					}
				}
				if k > 0 && (c.Events != 0 || c.Units != 0 || c.Dropped != 0 || c.FirstOffset != -1 || c.LastOffset != -1 || c.UnitsTruncated) {
					t.Errorf("chunk %d repeats the partial's counts: %+v", k, c)
				}
			}
			if c0 := chunks[0]; c0.Events != tc.p.Events || c0.FirstOffset != tc.p.FirstOffset || c0.Stats[0].Count != tc.p.Stats[0].Count || !slices.Equal(c0.Stats[0].Bins, tc.p.Stats[0].Bins) {
				t.Error("chunk 0 lost the partial's other fields")
			}
			again, err := SplitPartial(tc.p, tc.max)
			if err != nil || len(again) != len(chunks) {
				t.Fatalf("split again: %d chunks, %v", len(again), err)
			}
			for k := range again {
				if !bytes.Equal(mustEncodePartial(t, again[k]), encoded[k]) {
					t.Errorf("chunk %d differs when split again", k)
				}
			}
			// Join from the decoded chunks, shuffled, as the merger gets them.
			decoded := make([]Partial, len(encoded))
			for k, b := range encoded {
				if decoded[k], err = DecodePartial(b); err != nil {
					t.Fatal(err)
				}
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(decoded), func(i, j int) { decoded[i], decoded[j] = decoded[j], decoded[i] })
			joined, err := JoinPartial(decoded)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mustEncodePartial(t, joined), whole) {
				t.Error("the joined chunks differ from the partial")
			}
		})
	}
}

func TestSplitPartialErrors(t *testing.T) {
	big := keyedPartial(3, 0, 0)
	big.Stats[0].Groups[1].Sums = make([]int64, 2000)
	for i := range big.Stats[0].Groups[1].Sums {
		big.Stats[0].Groups[1].Sums[i] = 1 << 40
	}
	unsorted := keyedPartial(3, 0, 0)
	unsorted.Stats[0].Groups[0], unsorted.Stats[0].Groups[1] = unsorted.Stats[0].Groups[1], unsorted.Stats[0].Groups[0]
	twice := keyedPartial(3, 0, 0)
	twice.Stats[0].Groups[1].Key = twice.Stats[0].Groups[0].Key
	wide := keyedPartial(300, 0, 0)
	wide.Stats[1].Bins = make([]int64, 2000)
	chunk := keyedPartial(3, 0, 0)
	chunk.Chunks = 2
	for _, tc := range []struct {
		name string
		p    Partial
		max  int
		want string
	}{
		{"a group larger than a chunk", big, 4000, `group "zone-000001" of release trips takes`},
		{"fields not divided larger than a chunk", wide, 2000, "fields other than the divided arrays take"},
		{"unsorted groups", unsorted, MaxRecordBytes, "not sorted by key"},
		{"a key twice", twice, MaxRecordBytes, "not sorted by key with each key once"},
		{"already a chunk", chunk, MaxRecordBytes, "already chunk 0 of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SplitPartial(tc.p, tc.max)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestJoinPartialHostile: chunks that are not exactly one partial's are
// refused with an error saying what is wrong, never joined.
func TestJoinPartialHostile(t *testing.T) {
	p := keyedPartial(600, 0, 0)
	chunks, err := SplitPartial(p, 6000)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 3 {
		t.Fatalf("%d chunks, want at least 3 for the test", len(chunks))
	}
	// Another partial of the window and partition (another copy, as a bug
	// could emit), with as many chunks and other keys.
	o := keyedPartial(600, 0, 0)
	for j := range o.Stats[0].Groups {
		o.Stats[0].Groups[j].Key = fmt.Sprintf("zone-9%05d", j)
	}
	other, err := SplitPartial(o, 6000)
	if err != nil || len(other) != len(chunks) {
		t.Fatalf("%d chunks of the other partial, %v", len(other), err)
	}
	mod := func(f func(cs []Partial) []Partial) []Partial {
		cs := make([]Partial, len(chunks))
		for i, c := range chunks {
			c.Stats = slices.Clone(c.Stats)
			cs[i] = c
		}
		return f(cs)
	}
	for _, tc := range []struct {
		name   string
		chunks []Partial
		want   string
	}{
		{"none", nil, "no chunks"},
		{"missing chunk", mod(func(cs []Partial) []Partial { return append(cs[:1], cs[2:]...) }), "chunk 1 of"},
		{"duplicate chunk", mod(func(cs []Partial) []Partial { return append(cs, cs[1]) }), "appears twice"},
		{"chunk count mismatch", mod(func(cs []Partial) []Partial { cs[2].Chunks++; return cs }), "chunk count mismatch"},
		{"index out of range", mod(func(cs []Partial) []Partial { cs[1].Chunk = -1; return cs }), "out of range"},
		{"one chunk of many", mod(func(cs []Partial) []Partial { return cs[1:2] }), "missing"},
		{"count of one", []Partial{{Stream: "s", Chunks: 1}}, "chunk count 1"},
		{"another partition", mod(func(cs []Partial) []Partial { cs[1].Partition++; return cs }), "not a later chunk"},
		{"another window", mod(func(cs []Partial) []Partial { cs[2].WindowStart++; return cs }), "not a later chunk"},
		{"a later chunk with counts", mod(func(cs []Partial) []Partial { cs[1].Events = 5; return cs }), "not a later chunk"},
		{"a later chunk with statistics", mod(func(cs []Partial) []Partial { cs[1].Stats[0].Count = 5; return cs }), "not a later chunk"},
		{"mixed with another partial's chunks", mod(func(cs []Partial) []Partial { cs[1] = other[1]; return cs }), "not sorted"},
		{"chunks swapped", mod(func(cs []Partial) []Partial { cs[1].Chunk, cs[2].Chunk = 2, 1; return cs }), "not sorted"},
		{"a key in two chunks", mod(func(cs []Partial) []Partial {
			cs[1].Stats[0].Groups = append(slices.Clone(cs[1].Stats[0].Groups), cs[2].Stats[0].Groups[0])
			return cs
		}), "each key once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := JoinPartial(tc.chunks)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("join: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A whole partial joins to itself.
	if got, err := JoinPartial([]Partial{p}); err != nil || !bytes.Equal(mustEncodePartial(t, got), mustEncodePartial(t, p)) {
		t.Errorf("join of a partial in one record: %v", err)
	}
}

// TestSplitRelease is TestSplitPartial for releases, with aligned and
// shared intervals and lists of quantiles.
func TestSplitRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       Release
		max     int
		chunked bool
	}{
		{"fits", keyedRelease(1000, true, true), MaxRecordBytes, false},
		{"no keys", keyedRelease(0, true, true), MaxRecordBytes, false},
		{"per-key intervals", keyedRelease(3000, true, false), 10000, true},
		{"one shared interval", keyedRelease(3000, false, false), 10000, true},
		{"quantiles", keyedRelease(2000, true, true), 10000, true},
		{"one key a chunk", keyedRelease(5, true, true), 460, true},
		{"production size", keyedRelease(100000, true, false), MaxRecordBytes, true},
		{"running totals", continualRelease(3000), 10000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := mustEncodeRelease(t, tc.r)
			chunks, err := SplitRelease(tc.r, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.chunked {
				if len(chunks) != 1 || !bytes.Equal(mustEncodeRelease(t, chunks[0]), whole) {
					t.Fatalf("a release that fits became %d chunks, or changed", len(chunks))
				}
				return
			}
			if len(chunks) < 2 {
				t.Fatalf("%d chunks", len(chunks))
			}
			al := alignedWith(tc.r)
			var decoded []Release
			for k, c := range chunks {
				b := mustEncodeRelease(t, c)
				if len(b) > tc.max {
					t.Errorf("chunk %d: %d bytes, over %d", k, len(b), tc.max)
				}
				d, err := DecodeRelease(b)
				if err != nil {
					t.Fatal(err)
				}
				decoded = append(decoded, d)
				if d.Chunk != int32(k) || d.Chunks != int32(len(chunks)) || d.ReleaseID != tc.r.ReleaseID || d.Status != tc.r.Status ||
					d.EpsilonSpent != tc.r.EpsilonSpent || d.PublishedAt != tc.r.PublishedAt || len(d.Noise) != 1 || d.WindowStart != tc.r.WindowStart {
					t.Errorf("chunk %d lacks the release's identity, status or budget fields: %+v", k, d)
				}
				if len(d.Values) != len(d.Keys) || (al.intervals && len(d.Intervals95) != len(d.Keys)) || (al.quantiles && len(d.Quantiles) != len(d.Keys)) ||
					(al.totals && len(d.RunningTotals) != len(d.Keys)) || (al.totals95 && len(d.RunningIntervals95) != len(d.Keys)) {
					t.Errorf("chunk %d: %d keys, %d values, %d intervals, %d quantile lists", k, len(d.Keys), len(d.Values), len(d.Intervals95), len(d.Quantiles))
				}
				if k > 0 && (d.Value != nil || len(d.Fields) != 0 || len(d.Ranks) != 0 || (!al.intervals && len(d.Intervals95) != 0)) {
					t.Errorf("chunk %d repeats fields that only chunk 0 carries", k)
				}
			}
			if c0 := decoded[0]; c0.Value == nil || len(c0.Ranks) != len(tc.r.Ranks) || (!al.intervals && !slices.Equal(c0.Intervals95, tc.r.Intervals95)) {
				t.Error("chunk 0 lost the release's other fields")
			}
			slices.Reverse(decoded)
			joined, err := JoinRelease(decoded)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mustEncodeRelease(t, joined), whole) {
				t.Error("the joined chunks differ from the release")
			}
			again, _ := SplitRelease(tc.r, tc.max)
			for k := range again {
				if !bytes.Equal(mustEncodeRelease(t, again[k]), mustEncodeRelease(t, chunks[k])) {
					t.Errorf("chunk %d differs when split again", k)
				}
			}
		})
	}
}

func TestSplitReleaseErrors(t *testing.T) {
	long := keyedRelease(3, true, false)
	long.Keys[2] = "zone-9" + strings.Repeat("x", 5000)
	unsorted := keyedRelease(3, true, false)
	unsorted.Keys[0], unsorted.Keys[1] = unsorted.Keys[1], unsorted.Keys[0]
	samples := keyedRelease(300, true, false)
	samples.Samples = make([]float64, 3000)
	for _, tc := range []struct {
		name string
		r    Release
		max  int
		want string
	}{
		{"a key larger than a chunk", long, 3000, `key "zone-9xxx`},
		{"fields not divided larger than a chunk", samples, 3000, "fields other than the divided arrays take"},
		{"unsorted keys", unsorted, MaxRecordBytes, "not sorted"},
		{"too large without keys", Release{ReleaseID: "x", Samples: make([]float64, 1000)}, 3000, "fields other than the divided arrays"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SplitRelease(tc.r, tc.max)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestJoinReleaseHostile: chunks that are not exactly one release's are
// refused.
func TestJoinReleaseHostile(t *testing.T) {
	r := keyedRelease(1500, true, true)
	chunks, err := SplitRelease(r, 12000)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 3 {
		t.Fatalf("%d chunks, want at least 3", len(chunks))
	}
	other := r
	other.PublishedAt++ // another attempt at the same release
	otherChunks, err := SplitRelease(other, 12000)
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func(cs []Release) []Release) []Release { return f(slices.Clone(chunks)) }
	for _, tc := range []struct {
		name   string
		chunks []Release
		want   string
	}{
		{"none", nil, "no chunks"},
		{"missing chunk", mod(func(cs []Release) []Release { return cs[:len(cs)-1] }), "is missing"},
		{"duplicate chunk", mod(func(cs []Release) []Release { return append(cs, cs[0]) }), "appears twice"},
		{"chunk count mismatch", mod(func(cs []Release) []Release { cs[1].Chunks = 9; return cs }), "chunk count mismatch"},
		{"another release id", mod(func(cs []Release) []Release { cs[1].ReleaseID = "s/trips/0"; return cs }), "not a later chunk"},
		{"another attempt's chunk", mod(func(cs []Release) []Release { cs[1] = otherChunks[1]; return cs }), "not a later chunk"},
		{"a later chunk with chunk 0's fields", mod(func(cs []Release) []Release { cs[2].Ranks = r.Ranks; return cs }), "not a later chunk"},
		{"values not aligned", mod(func(cs []Release) []Release { cs[1].Values = cs[1].Values[1:]; return cs }), "values of chunks"},
		{"a later chunk without keys", mod(func(cs []Release) []Release {
			cs[1].Keys, cs[1].Values, cs[1].Intervals95, cs[1].Quantiles = nil, nil, nil, nil
			return cs
		}), "chunk 1 has no keys"},
		{"a key in two chunks", mod(func(cs []Release) []Release {
			c := cs[1]
			c.Keys = append(slices.Clone(c.Keys), cs[2].Keys[0])
			c.Values = append(slices.Clone(c.Values), 0)
			c.Intervals95 = append(slices.Clone(c.Intervals95), 0)
			c.Quantiles = append(slices.Clone(c.Quantiles), nil)
			cs[1] = c
			return cs
		}), "each key once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := JoinRelease(tc.chunks)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("join: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestChunkSizes reports what a key costs in a partial and a release, and
// how many keys one chunk holds, for keys of 10 characters (`zone-000123`
// has 11), three sums per key in a partial, and a value and a 95% interval
// per key in a release.
func TestChunkSizes(t *testing.T) {
	const n = 100000
	p := keyedPartial(n, 0, 0)
	pb := mustEncodePartial(t, p)
	base := mustEncodePartial(t, keyedPartial(0, 0, 0))
	perKeyPartial := float64(len(pb)-len(base)) / n
	pc, err := SplitPartial(p, MaxRecordBytes)
	if err != nil {
		t.Fatal(err)
	}
	r := keyedRelease(n, true, false)
	rb := mustEncodeRelease(t, r)
	perKeyRelease := float64(len(rb)-len(mustEncodeRelease(t, keyedRelease(0, true, false)))) / n
	rc, err := SplitRelease(r, MaxRecordBytes)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("partial: %d keys, %d bytes (%.1f per key), %d chunks of at most %d bytes (%d keys in chunk 0)",
		n, len(pb), perKeyPartial, len(pc), MaxRecordBytes, len(pc[0].Stats[0].Groups))
	t.Logf("release: %d keys, %d bytes (%.1f per key), %d chunks (%d keys in chunk 0)", n, len(rb), perKeyRelease, len(rc), len(rc[0].Keys))
	if want := (len(pb) + MaxRecordBytes - 1) / MaxRecordBytes; len(pc) != want {
		t.Errorf("partial in %d chunks, want the fewest that hold it (%d)", len(pc), want)
	}
	if want := (len(rb) + MaxRecordBytes - 1) / MaxRecordBytes; len(rc) != want {
		t.Errorf("release in %d chunks, want the fewest that hold it (%d)", len(rc), want)
	}
}

// continualRelease is a per-key continual release of n keys: values
// (increments) and running totals with their intervals, aligned with the
// keys.
func continualRelease(n int) Release {
	r := keyedRelease(n, true, false)
	r.Horizon, r.HorizonWindow = 24, 3
	r.RunningTotals, r.RunningIntervals95 = make([]float64, n), make([]float64, n)
	for i := range n {
		r.RunningTotals[i], r.RunningIntervals95[i] = float64(3*i)+0.5, 2.25
	}
	return r
}
