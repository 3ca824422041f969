package basic

import (
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

// TestSumRefusesWhatAddCannotTake: a value that would overflow the
// window's int64 sum (which needs more than aggregate.MaxSumEvents kept
// events; the test presets the sum instead), a NaN value and a missing one
// are refused by Check, which changes nothing the window reports, so the
// stage can refuse the event for every release.
func TestSumRefusesWhatAddCannotTake(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   aggregate.Kind
		preset int64
		values []float64
		want   string
	}{
		{"sum overflows", aggregate.KindSum, math.MaxInt64 - 5, []float64{0, 10}, "exact sum overflows int64"},
		{"centered sum underflows", aggregate.KindMean, math.MinInt64 + 5, []float64{0, 0}, "exact centered sum overflows int64"},
		{"NaN value", aggregate.KindSum, 0, []float64{0, math.NaN()}, "NaN"},
		{"value missing", aggregate.KindMean, 0, []float64{0}, "value missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSum(tc.kind, 0, 10, 1)
			if err != nil {
				t.Fatal(err)
			}
			w := s.NewWindow().(*sumWindow)
			if err := w.Check([]float64{0, 5}, nil); err != nil {
				t.Fatal(err)
			}
			if err := w.Add([]float64{0, 5}, nil, 0, true); err != nil {
				t.Fatal(err)
			}
			if tc.preset != 0 {
				w.sum = tc.preset
			}
			var before schema.ReleaseStats
			w.Stats(&before)
			err = w.Check(tc.values, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check(%v) = %v, want an error with %q", tc.values, err, tc.want)
			}
			var after schema.ReleaseStats
			w.Stats(&after)
			if after.Count != before.Count || after.SumUnits != before.SumUnits || after.CenteredSumUnits != before.CenteredSumUnits || after.Clamped != before.Clamped {
				t.Errorf("a refused event changed the window: %+v, then %+v", before, after)
			}
		})
	}
	if _, err := NewSum(aggregate.KindSum, 1, 1, 0); err == nil {
		t.Error("bounds [1, 1] have a quantizer")
	}
	if _, err := NewSum(aggregate.KindCount, 0, 1, 0); err == nil {
		t.Error("a count has a sum")
	}
}

// TestSumWindow checks a window's statistics and its units' norms against
// sums worked by hand: on [0, 10] a sum's quantum is 2^-26 and a mean's
// 2^-27 (centred values in [−5, 5]), and every value here is a multiple of
// both; clamps are counted once per clamped value.
func TestSumWindow(t *testing.T) {
	type event struct {
		v    float64
		unit int
	}
	events := []event{{3, 0}, {-4, 1}, {12, 0}, {2.5, 2}, {7, 1}}
	for _, tc := range []struct {
		kind                 aggregate.Kind
		sum, centered        int64
		norms0, norms1, norm []float64
	}{
		{aggregate.KindSum, (3 + 0 + 10 + 2.5 + 7) * (1 << 26), 0, []float64{13}, []float64{7}, []float64{2.5}},
		{aggregate.KindMean, 0, int64((-2 - 5 + 5 - 2.5 + 2) * (1 << 27)), []float64{2, 3}, []float64{2, 3}, []float64{1, 2.5}},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			s, err := NewSum(tc.kind, 0, 10, 0)
			if err != nil {
				t.Fatal(err)
			}
			w := s.NewWindow()
			kept := map[int]int{}
			for _, e := range events {
				vals := []float64{e.v}
				if err := w.Check(vals, nil); err != nil {
					t.Fatal(err)
				}
				if err := w.Add(vals, nil, e.unit, true); err != nil {
					t.Fatal(err)
				}
				kept[e.unit]++
			}
			var rs schema.ReleaseStats
			w.Stats(&rs)
			if rs.Count != 5 || rs.Clamped != 2 || rs.SumUnits != tc.sum || rs.CenteredSumUnits != tc.centered {
				t.Errorf("stats %+v, want count 5, 2 clamped, sum %d, centered %d", rs, tc.sum, tc.centered)
			}
			for u, want := range [][]float64{tc.norms0, tc.norms1, tc.norm} {
				got, err := w.AppendNorms(nil, u, kept[u])
				if err != nil || !equal(got, want) {
					t.Errorf("unit %d: norms %v (%v), want %v", u, got, err, want)
				}
			}
			w.DropUnits()
			if _, err := w.AppendNorms(nil, 0, kept[0]); err == nil {
				t.Error("norms after DropUnits")
			}
		})
	}
}

func equal(a, b []float64) bool {
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
