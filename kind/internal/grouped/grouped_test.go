package grouped

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

type event struct {
	unit int
	key  string
	v    float64
}

// stats runs events through a fresh window of s and returns its partial.
func stats(t *testing.T, s *Statistic, evs []event) schema.ReleaseStats {
	t.Helper()
	w := s.NewWindow()
	for i, e := range evs {
		vals, keys := []float64{0, e.v}, []string{e.key, ""}
		if err := w.Check(vals, keys); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if err := w.Add(vals, keys, e.unit, true); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	var rs schema.ReleaseStats
	w.Stats(&rs)
	return rs
}

// TestStatisticBounds checks the contribution bounds by offset order: a
// unit counts in its first MaxKeys keys only, and with at most PerKey
// events in each, and the other units are untouched by it.
func TestStatisticBounds(t *testing.T) {
	s := &Statistic{KeyAt: 0, ValueAt: -1, MaxKeys: 2, PerKey: 2, Counted: true}
	evs := []event{
		{0, "a", 0}, {0, "b", 0}, {0, "c", 0}, // c is u0's third key: not counted
		{0, "a", 0}, {0, "a", 0}, // the third a of u0: over max_per_key
		{1, "c", 0}, {1, "c", 0},
		{0, "b", 0},
	}
	rs := stats(t, s, evs)
	want := []schema.GroupStats{
		{Key: "a", Units: 1, Count: 2},
		{Key: "b", Units: 1, Count: 2},
		{Key: "c", Units: 1, Count: 2},
	}
	if !slices.EqualFunc(rs.Groups, want, groupEqual) || rs.Count != 6 {
		t.Fatalf("groups %+v count %d, want %+v and 6", rs.Groups, rs.Count, want)
	}
	// Removing unit 0 leaves unit 1's statistic exactly as it was.
	var without []event
	for _, e := range evs {
		if e.unit == 1 {
			without = append(without, event{0, e.key, e.v})
		}
	}
	rs2 := stats(t, s, without)
	if len(rs2.Groups) != 1 || !groupEqual(rs2.Groups[0], want[2]) {
		t.Fatalf("without unit 0: %+v", rs2.Groups)
	}
}

// TestStatisticNorms checks a unit's norms: its counted events per key
// and its sums, as L1 and L2 over the keys.
func TestStatisticNorms(t *testing.T) {
	z, err := aggregate.NewQuantizer(aggregate.KindSum, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	s := &Statistic{KeyAt: 0, ValueAt: 1, MaxKeys: 3, PerKey: 3, Counted: true, Quantizer: z, Hi: 10}
	w := s.NewWindow()
	for _, e := range []event{{0, "a", 3}, {0, "a", 1}, {0, "b", 2}, {1, "a", 5}} {
		vals, keys := []float64{0, e.v}, []string{e.key}
		if err := w.Check(vals, keys); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(vals, keys, e.unit, true); err != nil {
			t.Fatal(err)
		}
	}
	got, err := w.AppendNorms(nil, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Counts (2, 1): L1 3, L2 √5; sums (4, 2): L1 6, L2 √20.
	want := []float64{3, 2.23606797749979, 6, 4.47213595499958}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("norms %v, want %v", got, want)
		}
	}
	if s.Norms().Head != 4 {
		t.Fatalf("layout %+v", s.Norms())
	}
	if _, err := w.AppendNorms(nil, 7, 1); err == nil {
		t.Fatal("norms of a unit never added")
	}
}

// TestCheckRefusesOverflow checks that a key's exact sum cannot wrap.
func TestCheckRefusesOverflow(t *testing.T) {
	z, err := aggregate.NewQuantizer(aggregate.KindSum, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s := &Statistic{KeyAt: 0, ValueAt: 1, MaxKeys: 1, PerKey: 1 << 30, Quantizer: z, Hi: 1 << 20}
	w := s.NewWindow().(*window)
	w.groups["k"] = &group{units: 1, count: 1, sums: [2]int64{1<<63 - 10}}
	if err := w.Check([]float64{0, 1 << 20}, []string{"k"}); err == nil || !strings.Contains(err.Error(), "overflow int64") {
		t.Fatalf("error %v, want an overflow", err)
	}
	if err := w.Check([]float64{0, 1 << 20}, []string{"other"}); err != nil {
		t.Fatalf("another key: %v", err)
	}
}

func groupEqual(a, b schema.GroupStats) bool {
	return a.Key == b.Key && a.Units == b.Units && a.Count == b.Count && slices.Equal(a.Sums, b.Sums) && slices.Equal(a.Cells, b.Cells)
}

// TestMerge checks the exact merge of partitions' groups and the refusal
// of partials that no statistic writes.
func TestMerge(t *testing.T) {
	part := func(p int32, gs ...schema.GroupStats) kind.Part {
		return kind.Part{Partition: p, Stats: schema.ReleaseStats{Groups: gs}}
	}
	g := func(k string, u, c, s int64) schema.GroupStats {
		return schema.GroupStats{Key: k, Units: u, Count: c, Sums: []int64{s}}
	}
	m, err := Merge([]kind.Part{part(0, g("a", 1, 2, 5), g("c", 2, 2, -1)), part(1), part(2, g("b", 1, 1, 3), g("c", 1, 3, 4))}, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	want := Merged{g("a", 1, 2, 5), g("b", 1, 1, 3), g("c", 3, 5, 3)}
	if !slices.EqualFunc(m, want, groupEqual) {
		t.Fatalf("merged %+v, want %+v", m, want)
	}
	if got, ok := m.Find("b"); !ok || got.Count != 1 {
		t.Fatalf("Find(b) = %+v, %v", got, ok)
	}
	if got, ok := m.Find("zz"); ok || got.Key != "zz" || got.Count != 0 {
		t.Fatalf("Find(zz) = %+v, %v", got, ok)
	}
	for _, tc := range []struct {
		name  string
		parts []kind.Part
		want  string
	}{
		{"unsorted", []kind.Part{part(3, g("b", 1, 1, 0), g("a", 1, 1, 0))}, "not sorted"},
		{"duplicate", []kind.Part{part(3, g("a", 1, 1, 0), g("a", 1, 1, 0))}, "not sorted"},
		{"no units", []kind.Part{part(3, g("a", 0, 1, 0))}, "0 units"},
		{"fewer events than units", []kind.Part{part(3, g("a", 2, 1, 0))}, "2 units and 1 events"},
		{"wrong sums", []kind.Part{part(3, schema.GroupStats{Key: "a", Units: 1, Count: 1})}, "0 sums"},
		{"overflow", []kind.Part{part(0, g("a", 1, 1, 1<<62)), part(1, g("a", 1, 1, 1<<62))}, "overflows"},
	} {
		_, err := Merge(tc.parts, 1, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		var pe *kind.PartError
		if tc.name != "overflow" && !errors.As(err, &pe) {
			t.Errorf("%s: %v is not a PartError", tc.name, err)
		}
	}
}
