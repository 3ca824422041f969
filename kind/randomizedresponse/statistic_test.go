package randomizedresponse

import (
	"slices"
	"testing"

	"github.com/dpstream/dpstream/schema"
)

// TestCategories: an event carries its category's index; anything else
// (which the Extractor never produces) is refused by Check; a cap counts
// a unit's first c reports per category.
func TestCategories(t *testing.T) {
	if _, err := NewStatistic(0, 0, 0, 3); err == nil {
		t.Error("a statistic of no categories")
	}
	s, err := NewStatistic(3, 1, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	w := s.NewWindow()
	for _, tc := range []struct {
		name   string
		values []float64
		want   string
	}{
		{"below range", []float64{0, -1}, "category index -1 is not an integer in [0, 3)"},
		{"above range", []float64{0, 3}, "category index 3 is not an integer in [0, 3)"},
		{"not an integer", []float64{0, 0.5}, "category index 0.5 is not an integer in [0, 3)"},
		{"missing", []float64{0}, "no value"},
	} {
		if err := w.Check(tc.values, nil); err == nil || err.Error() != tc.want {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, e := range []struct{ unit, cat int }{{0, 2}, {0, 2}, {1, 2}, {0, 0}, {1, 1}} {
		vals := []float64{0, float64(e.cat)}
		if err := w.Check(vals, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(vals, nil, e.unit, true); err != nil {
			t.Fatal(err)
		}
	}
	var rs schema.ReleaseStats
	w.Stats(&rs)
	if want := []int64{1, 1, 2}; !slices.Equal(rs.Bins, want) || rs.Count != 5 || rs.Clamped != 0 {
		t.Errorf("bins %v count %d clamped %d, want %v, 5, 0 (unit 0's second report of category 2 capped)", rs.Bins, rs.Count, rs.Clamped, want)
	}
	if n, err := w.AppendNorms(nil, 0, 3); err != nil || !slices.Equal(n, []float64{2, 1.4142135623730951}) {
		t.Errorf("unit 0: norms %v (%v), want [2 √2]", n, err)
	}
}
