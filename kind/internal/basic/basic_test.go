package basic

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

func TestMergeStatsEdgeCases(t *testing.T) {
	stats := func(bins []int64) schema.ReleaseStats {
		return schema.ReleaseStats{Release: "r", Count: 2, SumUnits: 3 << 20, Bins: bins}
	}
	units := func(sum, centered int64) schema.ReleaseStats {
		return schema.ReleaseStats{Release: "r", Count: 1, SumUnits: sum, CenteredSumUnits: centered, Bins: []int64{}}
	}
	parts := func(sts ...schema.ReleaseStats) []kind.Part {
		var out []kind.Part
		for i, st := range sts {
			out = append(out, kind.Part{Partition: int32(i), Stats: st})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		parts     []kind.Part
		cells     int
		wantErr   bool
		wantCount int64
		wantBins  []int64
	}{
		{"no partials: zero stats with zero bins", parts(), 4, false, 0, []int64{0, 0, 0, 0}},
		{"no partials, no bins", parts(), 0, false, 0, nil},
		{"one partial", parts(stats([]int64{})), 0, false, 2, nil},
		{"bin count mismatch", parts(stats([]int64{1, 2, 3}), stats([]int64{1, 2})), 3, true, 0, nil},
		{"bins wider than configured", parts(stats([]int64{1, 2, 3, 4})), 3, true, 0, nil},
		{"histogram partial without bins", parts(stats([]int64{})), 3, true, 0, nil},
		{"matching bins", parts(stats([]int64{1, 2}), stats([]int64{3, 4})), 2, false, 4, []int64{4, 6}},
		// More than 2^33 events: the exact sum does not fit, and the window
		// must not be released with a wrapped or saturated one.
		{"sum overflows int64", parts(units(math.MaxInt64-5, 0), units(6, 0)), 0, true, 0, nil},
		{"centered sum underflows int64", parts(units(0, math.MinInt64+2), units(0, -3)), 0, true, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := MergeStats(tc.parts, tc.cells)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("MergeStats = %+v, nil; want an error", st)
				}
				var pe *kind.PartError
				if !errors.As(err, &pe) {
					t.Errorf("error %q does not name the partition", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("MergeStats: %v", err)
			}
			if st.Count != tc.wantCount || !slices.Equal(st.Bins, tc.wantBins) || (tc.wantBins != nil && len(st.Bins) != tc.cells) {
				t.Errorf("MergeStats = %+v, want Count %d Bins %v", st, tc.wantCount, tc.wantBins)
			}
		})
	}
}

// TestMergeStatsAtLimits: sums that reach the int64 limits exactly merge
// exactly; one unit more is an error (TestMergeStatsEdgeCases).
func TestMergeStatsAtLimits(t *testing.T) {
	ps := []kind.Part{
		{Partition: 0, Stats: schema.ReleaseStats{Release: "s", Count: 1, SumUnits: math.MaxInt64 - 6, CenteredSumUnits: math.MinInt64 + 3, Bins: []int64{}}},
		{Partition: 1, Stats: schema.ReleaseStats{Release: "s", Count: 1, SumUnits: 6, CenteredSumUnits: -3, Bins: []int64{}}},
	}
	st, err := MergeStats(ps, 0)
	if err != nil {
		t.Fatalf("MergeStats: %v", err)
	}
	if st.Count != 2 || st.SumUnits != math.MaxInt64 || st.CenteredSumUnits != math.MinInt64 {
		t.Errorf("MergeStats = %+v, want Count 2, SumUnits MaxInt64, CenteredSumUnits MinInt64", st)
	}
}
