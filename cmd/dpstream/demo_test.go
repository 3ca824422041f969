package main

import (
	"fmt"
	"math"
	"testing"
)

// TestDemoZones: the demo producer's pickup zones are as skewed as
// demo.go's comment says. Windows of 2,000 trips (the default 400 trips/s
// in 5 s windows), each rider's first 3 trips kept as the demo's
// contribution bound keeps them: the mean distinct riders per zone match
// the stated expectations, a handful of zones are busy and the rare ones
// see a rider or two, and every zone the producer draws is one of the 60.
func TestDemoZones(t *testing.T) {
	const (
		windows   = 400
		trips     = 2000
		perWindow = 3
	)
	d := newTripDraws(1)
	riders := make([]float64, demoZones) // distinct riders per zone, summed over windows
	var active, kept float64
	for range windows {
		n := map[string]int{}
		seen := map[string]bool{}
		for range trips {
			r, z := d.rider(), d.zone()
			if n[r] == perWindow {
				continue
			}
			n[r]++
			kept++
			var k int
			if _, err := fmt.Sscanf(z, "z%d", &k); err != nil || k < 0 || k >= demoZones || z != fmt.Sprintf("z%d", k) {
				t.Fatalf("zone %q: want z0 … z%d", z, demoZones-1)
			}
			if !seen[r+"/"+z] {
				seen[r+"/"+z] = true
				riders[k]++
			}
		}
		active += float64(len(n))
	}
	mean := func(x float64) float64 { return x / windows }

	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"distinct riders per window", mean(active), 534.6},
		{"kept trips per window", mean(kept), 822.9},
		{"z0", mean(riders[0]), 157.1},
		{"z1", mean(riders[1]), 102.9},
		{"z2", mean(riders[2]), 73.4},
		{"z3", mean(riders[3]), 55.4},
		{"z4", mean(riders[4]), 43.6},
		{"z5", mean(riders[5]), 35.4},
		{"z9", mean(riders[9]), 18.7},
		{"z14", mean(riders[14]), 10.8},
		{"z19", mean(riders[19]), 7.1},
		{"z29", mean(riders[29]), 3.9},
		{"z39", mean(riders[39]), 2.5},
		{"z49", mean(riders[49]), 1.8},
		{"z59", mean(riders[59]), 1.4},
	} {
		// A count of rare events varies about as much as its mean, so
		// 400 windows give a standard error near sqrt(want/400); allow 4
		// of them and the rounding of the stated value to 0.1.
		if tol := 4*math.Sqrt(c.want/windows) + 0.05; math.Abs(c.got-c.want) > tol {
			t.Errorf("%s: %.2f per window, demo.go says %g (±%.2f)", c.what, c.got, c.want, tol)
		}
	}
	var busy, rare int
	for _, r := range riders {
		switch m := mean(r); {
		case m > 20:
			busy++
		case m < 5:
			rare++
		}
	}
	if busy != 9 || rare != 35 {
		t.Errorf("%d zones with more than 20 riders per window and %d with fewer than 5, demo.go says 9 and 35", busy, rare)
	}
}
