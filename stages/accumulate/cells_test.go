package accumulate

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/mechanism/aggregate"
)

// cellStream has a histogram over two fields, a 1-D histogram with a
// per-bin cap of 1 and a randomized_response release with a per-category
// cap of 2, all with L = 3. Event.Values is [x, x, category, y].
func cellStream() *Stream {
	return build(&Stream{Name: "cells", Size: 1000, Grace: 0, IdleTimeout: time.Minute, MaxEvents: 3},
		relSpec{Name: "xy", Kind: "histogram", Field: "x", Lo: 0, Hi: 4, Bins: 2,
			More: []moreField{{Axis: aggregate.Axis{Lo: 0, Hi: 2, Bins: 3}, Value: 3}}},
		relSpec{Name: "xcap", Kind: "histogram", Field: "x", Lo: 0, Hi: 4, Bins: 4, BinCap: 1},
		relSpec{Name: "mode", Kind: "randomized_response", Field: "mode", Categories: 3, BinCap: 2},
	)
}

// refBin is an independent bin rule for the test's round bounds: clamp,
// then floor((v − lo)/width), with hi in the last bin.
func refBin(v, lo, hi float64, bins int) int {
	v = math.Max(lo, math.Min(v, hi))
	j := int(math.Floor((v - lo) / ((hi - lo) / float64(bins))))
	return min(j, bins-1)
}

// TestCellsAndCaps checks a window's cell counts against a reference model
// of the contribution bounds: the first L events of a unit by offset are
// kept, a 2-D event lands in cell (row-major, last field fastest), and a
// capped release counts at most c of a unit's kept events per cell.
func TestCellsAndCaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	s := cellStream()
	p := NewPartition(s, 0, 1, NoWatermark)
	type key struct {
		unit string
		cell int
	}
	kept := map[string]int{}
	capX, capMode := map[key]int{}, map[key]int{}
	wantXY, wantX, wantMode := make([]int64, 6), make([]int64, 4), make([]int64, 3)
	var clampedXY, clampedX int64
	for off := int64(0); off < 600; off++ {
		unit := string(rune('a' + rng.IntN(12)))
		x := rng.Float64()*5 - 0.5 // sometimes outside [0, 4]
		y := rng.Float64()*2.4 - 0.2
		cat := rng.IntN(3)
		mustAdd(t, p, Event{Offset: off, Unit: unit, Time: 500, Values: []float64{x, x, float64(cat), y}})
		if kept[unit] == 3 {
			continue
		}
		kept[unit]++
		if x < 0 || x > 4 || y < 0 || y > 2 {
			clampedXY++
		}
		if x < 0 || x > 4 {
			clampedX++
		}
		wantXY[refBin(x, 0, 4, 2)*3+refBin(y, 0, 2, 3)]++
		if k := (key{unit, refBin(x, 0, 4, 4)}); capX[k] < 1 {
			capX[k]++
			wantX[k.cell]++
		}
		if k := (key{unit, cat}); capMode[k] < 2 {
			capMode[k]++
			wantMode[cat]++
		}
	}
	_, closed := mustAdd(t, p, Event{Offset: 600, Unit: "z", Time: 5000, Values: []float64{1, 1, 0, 1}})
	if len(closed) == 0 {
		t.Fatal("window did not close")
	}
	st := closed[0].Stats
	for i, want := range [][]int64{wantXY, wantX, wantMode} {
		if !slices.Equal(st[i].Bins, want) {
			t.Errorf("release %s bins = %v, want %v", st[i].Release, st[i].Bins, want)
		}
	}
	if st[0].Clamped != clampedXY || st[1].Clamped != clampedX {
		t.Errorf("clamped = %d, %d, want %d, %d (one per event, whatever the number of fields)", st[0].Clamped, st[1].Clamped, clampedXY, clampedX)
	}
	var total int64
	for _, n := range kept {
		total += int64(n)
	}
	if sum(st[0].Bins) != total || st[0].Count != total {
		t.Errorf("2-D histogram holds %d events (count %d), want every kept event once: %d", sum(st[0].Bins), st[0].Count, total)
	}
	if sum(wantX) >= total || sum(wantMode) >= total {
		t.Errorf("the caps removed nothing (%d, %d of %d): the test does not exercise them", sum(wantX), sum(wantMode), total)
	}
	// An empty window's partial has vectors of the right length.
	empty := p.close(-1000)
	if len(empty.Stats[0].Bins) != 6 || len(empty.Stats[2].Bins) != 3 {
		t.Errorf("empty partial bins = %d, %d, want 6, 3", len(empty.Stats[0].Bins), len(empty.Stats[2].Bins))
	}
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// TestCellsRejectBadEvents checks that events the Extractor would never
// produce are errors that change nothing, not panics.
func TestCellsRejectBadEvents(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
	}{
		{"category below range", []float64{1, 1, -1, 1}},
		{"category above range", []float64{1, 1, 3, 1}},
		{"category not an integer", []float64{1, 1, 0.5, 1}},
		{"second field missing", []float64{1, 1, 0}},
		{"second field NaN", []float64{1, 1, 0, math.NaN()}},
		{"first field NaN", []float64{math.NaN(), 1, 0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(cellStream(), 0, 1, NoWatermark)
			if _, _, err := p.Add(Event{Offset: 0, Unit: "u", Time: 10, Values: tc.values}); err == nil {
				t.Fatal("Add accepted a malformed event")
			}
			if p.OpenWindows() != 0 {
				t.Error("a failed Add opened a window")
			}
		})
	}
	// A histogram field with 0 bins has no statistic at all
	// (kind/histogram's tests); a release without one fails every Add.
	bad := cellStream()
	bad.Releases[0].Stat = nil
	if _, _, err := NewPartition(bad, 0, 1, NoWatermark).Add(Event{Offset: 0, Unit: "u", Time: 10, Values: []float64{1, 1, 0, 1}}); err == nil {
		t.Error("a release without a statistic accepted an event")
	}
}

// TestExtractCategories checks the mapping of category names to indices.
func TestExtractCategories(t *testing.T) {
	x := &Extractor{Unit: "u", EventTime: "", Fields: []string{"", "mode"},
		Categories: []map[string]int{nil, {"walk": 0, "bike": 1}}}
	tests := []struct {
		name   string
		value  any
		want   float64
		reason Reason
	}{
		{"known", "bike", 1, ""},
		{"avro union", map[string]any{"string": "walk"}, 0, ""},
		{"unknown", "car", 0, ReasonUnknownCategory},
		{"number", 3.0, 0, ReasonInvalidValue},
		{"missing", nil, 0, ReasonMissingField},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]any{"u": "p1"}
			if tc.value != nil {
				m["mode"] = tc.value
			}
			ev, rej := x.Extract(m, 4, time.UnixMilli(1000))
			if tc.reason != "" {
				if rej == nil || rej.Reason != tc.reason {
					t.Fatalf("rejection = %v, want %s", rej, tc.reason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %v", rej)
			}
			if ev.Values[1] != tc.want {
				t.Errorf("value = %v, want %v", ev.Values[1], tc.want)
			}
		})
	}
}
