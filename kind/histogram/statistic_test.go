package histogram

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

// TestNewStatisticRefusesShapes: a shape no histogram has is an error, not
// a statistic that fails (or panics) on its first event.
func TestNewStatisticRefusesShapes(t *testing.T) {
	ok := aggregate.Axis{Lo: 0, Hi: 4, Bins: 2}
	for _, tc := range []struct {
		name string
		axes []aggregate.Axis
		at   []int
	}{
		{"no axis", nil, nil},
		{"a field with 0 bins", []aggregate.Axis{ok, {Lo: 0, Hi: 2, Bins: 0}}, []int{0, 3}},
		{"empty bounds", []aggregate.Axis{{Lo: 1, Hi: 1, Bins: 2}}, []int{0}},
		{"NaN bounds", []aggregate.Axis{{Lo: math.NaN(), Hi: 1, Bins: 2}}, []int{0}},
		{"four fields", []aggregate.Axis{ok, ok, ok, ok}, []int{0, 1, 2, 3}},
		{"places for another number of fields", []aggregate.Axis{ok, ok}, []int{0}},
		{"negative place", []aggregate.Axis{ok}, []int{-1}},
	} {
		if _, err := NewStatistic(tc.axes, tc.at, 0, 3); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// TestCellsOfEvents: an event's cell is row-major over its fields, the
// last fastest, each value clamped to its axis, with one clamp counted per
// event whatever the number of its fields clamped; events without a value
// for a field, or with NaN, are refused by Check and change nothing.
func TestCellsOfEvents(t *testing.T) {
	s, err := NewStatistic([]aggregate.Axis{{Lo: 0, Hi: 4, Bins: 2}, {Lo: 0, Hi: 2, Bins: 3}}, []int{1, 3}, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	w := s.NewWindow()
	for _, tc := range []struct {
		name   string
		values []float64
		want   string
	}{
		{"first field NaN", []float64{0, math.NaN(), 0, 1}, "value missing or NaN"},
		{"second field missing", []float64{0, 1, 0}, "value 3 missing or NaN"},
		{"second field NaN", []float64{0, 1, 0, math.NaN()}, "value 3 missing or NaN"},
	} {
		if err := w.Check(tc.values, nil); err == nil || err.Error() != tc.want {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
	for u, v := range [][2]float64{{1, 0.1}, {3, 1.9}, {-5, 9}, {9, -1}, {2, 1}} {
		vals := []float64{0, v[0], 0, v[1]}
		if err := w.Check(vals, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(vals, nil, u, false); err != nil {
			t.Fatal(err)
		}
	}
	var rs schema.ReleaseStats
	w.Stats(&rs)
	// (1, 0.1) → (0, 0); (3, 1.9) → (1, 2); (−5, 9) → (0, 2), clamped;
	// (9, −1) → (1, 0), clamped; (2, 1) → (1, 1).
	if want := []int64{1, 0, 1, 1, 1, 1}; !slices.Equal(rs.Bins, want) || rs.Count != 5 || rs.Clamped != 2 {
		t.Errorf("bins %v count %d clamped %d, want %v, 5, 2", rs.Bins, rs.Count, rs.Clamped, want)
	}
	empty := s.NewWindow()
	var es schema.ReleaseStats
	empty.Stats(&es)
	if !slices.Equal(es.Bins, make([]int64, 6)) || es.Count != 0 {
		t.Errorf("empty window: %+v, want 6 zero cells", es)
	}
	if _, err := empty.AppendNorms(nil, 0, 1); err == nil || !strings.Contains(err.Error(), "no contribution") {
		t.Errorf("norms of a unit never added: %v", err)
	}
}
