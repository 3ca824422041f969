package density

import (
	"math"
	"strings"
	"testing"

	mdensity "github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/schema"
)

// TestDensityRefuses: Check refuses what mdensity.Quantizer.Add would (a
// NaN value, an event after which a basis sum could overflow; the test
// presets the count), and a missing value, changing nothing.
func TestDensityRefuses(t *testing.T) {
	if _, err := NewStatistic(0, 10, 0, 0); err == nil {
		t.Error("a density of 0 terms")
	}
	s, err := NewStatistic(0, 10, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := s.NewWindow().(*window)
	for _, tc := range []struct {
		name   string
		count  int64
		values []float64
		want   string
	}{
		{"NaN", 0, []float64{0, math.NaN()}, "value is NaN"},
		{"missing", 0, []float64{0}, "value missing"},
		{"overflow", mdensity.MaxEvents, []float64{0, 5}, "would overflow int64"},
	} {
		w.stats.Count = tc.count
		if err := w.Check(tc.values, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
		var rs schema.ReleaseStats
		w.Stats(&rs)
		if rs.Count != 0 || len(rs.Terms) != 4 || rs.Terms[0] != 0 {
			t.Errorf("%s: a refused event changed the window: %+v", tc.name, rs)
		}
	}
}

// TestDensityWindow: the basis sums are those of the clamped values
// (clamps counted), and a unit's norms [k, ‖s‖₁, ‖s‖₂] come from its own
// values' units only.
func TestDensityWindow(t *testing.T) {
	s, err := NewStatistic(0, 10, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	z, err := mdensity.NewQuantizer(0, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	w := s.NewWindow()
	want := z.NewStats()
	unit0 := make([]int64, 3)
	for i, v := range []float64{1.5, -2, 12, 7} {
		if err := w.Check([]float64{v}, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.Add([]float64{v}, nil, i%2, true); err != nil {
			t.Fatal(err)
		}
		c := math.Max(0, math.Min(v, 10))
		if err := z.Add(&want, c); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			dst := make([]int64, 3)
			if err := z.Units(c, dst); err != nil {
				t.Fatal(err)
			}
			for j := range dst {
				unit0[j] += dst[j]
			}
		}
	}
	var rs schema.ReleaseStats
	w.Stats(&rs)
	if rs.Count != 4 || rs.Clamped != 2 || !equal(rs.Terms, want.Terms) {
		t.Errorf("stats %+v, want count 4, 2 clamped, terms %v", rs, want.Terms)
	}
	var l1, l2 float64
	for _, k := range unit0 {
		v := float64(k) * z.Quantum()
		l1 += math.Abs(v)
		l2 += v * v
	}
	if n, err := w.AppendNorms(nil, 0, 2); err != nil || n[0] != 2 || n[1] != l1 || n[2] != math.Sqrt(l2) {
		t.Errorf("unit 0: norms %v (%v), want [2 %v %v]", n, err, l1, math.Sqrt(l2))
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
