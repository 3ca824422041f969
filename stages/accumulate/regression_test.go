package accumulate

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	mregression "github.com/dpstream/dpstream/mechanism/regression"
)

// TestRegressionPartial checks that a regression release's partial holds
// exactly the sufficient statistics of the kept rows (first L per unit by
// offset), scaled by the release's mregression.Scaling, with one clamp count
// per row that had any value outside its bounds.
func TestRegressionPartial(t *testing.T) {
	sc := mregression.Scaling{FeatureBounds: [][2]float64{{0, 10}, {-1, 1}}, Intercept: true, TargetBounds: [2]float64{0, 100}}
	s := build(&Stream{Name: "r", Size: 1000, IdleTimeout: time.Minute, MaxEvents: 2},
		relSpec{Name: "n", Kind: "count"},
		relSpec{Name: "fit", Kind: "regression", Field: "y", Regression: &regFields{Scaling: sc, Features: []int{2, 3}}},
	)
	p := NewPartition(s, 0, 1, NoWatermark)
	rng := rand.New(rand.NewPCG(1, 2))
	want := mregression.NewStats(sc.Dim())
	kept := map[string]int{}
	var clamped int64
	for off := int64(0); off < 300; off++ {
		unit := string(rune('a' + rng.IntN(20)))
		x1, x2, y := rng.Float64()*12-1, rng.Float64()*2.2-1.1, rng.Float64()*110-5
		mustAdd(t, p, Event{Offset: off, Unit: unit, Time: 100, Values: []float64{0, y, x1, x2}})
		if kept[unit] == 2 {
			continue
		}
		kept[unit]++
		xu, yu, c, err := sc.Row([]float64{x1, x2}, y)
		if err != nil {
			t.Fatal(err)
		}
		if c {
			clamped++
		}
		if err := want.AddRow(xu, yu); err != nil {
			t.Fatal(err)
		}
	}
	_, closed := mustAdd(t, p, Event{Offset: 300, Unit: "z", Time: 5000, Values: []float64{0, 1, 1, 0}})
	if len(closed) == 0 || closed[0].WindowStart != 0 {
		t.Fatalf("window 0 did not close: %d partials", len(closed))
	}
	rs := closed[0].Stats[1]
	if rs.Count != want.N || !slices.Equal(rs.XtX, want.XtX) || !slices.Equal(rs.Xty, want.Xty) || rs.Yty != want.Yty {
		t.Errorf("partial N=%d XtX=%v Xty=%v yty=%d, want N=%d XtX=%v Xty=%v yty=%d", rs.Count, rs.XtX, rs.Xty, rs.Yty, want.N, want.XtX, want.Xty, want.Yty)
	}
	if rs.Clamped != clamped || clamped == 0 {
		t.Errorf("clamped = %d, want %d (> 0)", rs.Clamped, clamped)
	}
	empty := p.close(-1000)
	if len(empty.Stats[1].XtX) != sc.Dim()*(sc.Dim()+1)/2 || len(empty.Stats[1].Xty) != sc.Dim() {
		t.Errorf("empty partial has %d XtX and %d Xty entries", len(empty.Stats[1].XtX), len(empty.Stats[1].Xty))
	}
	// Malformed events are errors, not panics, and change nothing.
	for _, vals := range [][]float64{{0, 1, 1}, {0, math.NaN(), 1, 0}, {0, 1, math.NaN(), 0}} {
		q := NewPartition(s, 0, 1, NoWatermark)
		if _, _, err := q.Add(Event{Offset: 0, Unit: "u", Time: 10, Values: vals}); err == nil || q.OpenWindows() != 0 {
			t.Errorf("values %v: err %v, open windows %d", vals, err, q.OpenWindows())
		}
	}
}
