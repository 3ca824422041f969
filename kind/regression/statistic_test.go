package regression

import (
	"math"
	"strings"
	"testing"

	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// TestStatisticRefuses: a scaling that does not validate, or features
// that do not match it, have no statistic; an event without a feature or
// target value, with NaN, or beyond mregression.MaxRows rows (the
// test presets the count) is refused by Check, changing nothing.
func TestStatisticRefuses(t *testing.T) {
	sc := mregression.Scaling{FeatureBounds: [][2]float64{{0, 10}, {-1, 1}}, Intercept: true, TargetBounds: [2]float64{0, 100}}
	if _, err := NewStatistic(sc, 0, []int{1}); err == nil {
		t.Error("one feature value for two features")
	}
	if _, err := NewStatistic(mregression.Scaling{FeatureBounds: [][2]float64{{1, 1}}, TargetBounds: [2]float64{0, 1}}, 0, []int{1}); err == nil {
		t.Error("a feature with empty bounds")
	}
	s, err := NewStatistic(sc, 1, []int{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	w := s.NewWindow().(*window)
	for _, tc := range []struct {
		name   string
		rows   int64
		values []float64
		want   string
	}{
		{"second feature missing", 0, []float64{0, 1, 1}, "feature 2 has no value"},
		{"too few values", 0, []float64{0}, "feature 1 has no value"},
		{"target NaN", 0, []float64{0, math.NaN(), 1, 0}, "NaN"},
		{"feature NaN", 0, []float64{0, 1, math.NaN(), 0}, "NaN"},
		{"row limit", mregression.MaxRows, []float64{0, 1, 1, 0}, "exact up to"},
	} {
		w.stats.N = tc.rows
		if err := w.Check(tc.values, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
		var rs schema.ReleaseStats
		w.Stats(&rs)
		if rs.Count != tc.rows || rs.Clamped != 0 || rs.Yty != 0 || len(rs.XtX) != 6 || len(rs.Xty) != 3 {
			t.Errorf("%s: a refused event changed the window: %+v", tc.name, rs)
		}
	}
	target := &Statistic{sc: sc, target: 5, features: []int{1, 2}}
	if err := target.NewWindow().Check([]float64{0, 1, 0}, nil); err == nil || err.Error() != "no target value" {
		t.Errorf("target missing: Check = %v", err)
	}
}
