package main

import (
	"math"
	"testing"

	"github.com/dpstream/dpstream/schema"
)

// demoLineCase is one release record and the demo line it must print.
type demoLineCase struct {
	name string
	r    schema.Release
	want string
}

// demoLineCases are release records of every kind's shape as the release
// stage publishes them (and a few it never does), for the demo's one-line
// rendering.
func demoLineCases() []demoLineCase {
	f := func(x float64) *float64 { return &x }
	rel := func(name, kind string) schema.Release {
		return schema.Release{ReleaseID: "trips/" + name + "/0", Stream: "trips", Release: name, Kind: kind, Status: "ok",
			WindowEnd: 5000, EpsilonSpent: 1.75, EpsilonBudget: 12}
	}
	count := rel("trips", "count")
	count.Value, count.Interval95 = f(1234), f(15.3)
	sum := rel("fare_sum", "sum")
	sum.Value = f(-3.5) // no interval: shown as ± 0
	mean := rel("fare_mean", "mean")
	mean.Value, mean.Interval95 = f(23.456789), f(0.81234)
	noValue := rel("trips", "count")

	kmP := []float64{0.01, 0.05, 0.12, 0.2, 0.18, 0.14, 0.1, 0.07, 0.05, 0.03, 0.02, 0.015, 0.01, 0.003, 0.002}
	kmC := make([]float64, len(kmP))
	for i, p := range kmP {
		kmC[i] = math.Round(p*1234) - 3 // some negative noisy counts: not added to n
	}
	edges := make([]float64, len(kmP)+1)
	for i := range edges {
		edges[i] = 2 * float64(i)
	}
	hist := rel("km_hist", "histogram")
	hist.Probabilities, hist.NoisyCounts, hist.Edges, hist.Shape, hist.Fields = kmP, kmC, edges, []int64{15}, []string{"km"}
	legacy := rel("fare_hist", "histogram") // before Shape and Fields existed
	legacy.Probabilities, legacy.NoisyCounts, legacy.Edges = []float64{0.25, 0.5, 0.25}, []float64{25, 50, 24}, []float64{0, 40, 80, 120}

	grid := rel("km_by_min", "histogram")
	grid.Shape, grid.Fields = []int64{2, 3}, []string{"km", "minutes"}
	grid.Probabilities = []float64{0.1, 0.2, 0.05, 0.3, 0.25, 0.1}
	grid.NoisyCounts = []float64{10, 20, 5, 30, 25, 10}
	grid.Edges = []float64{0, 15, 30, 0, 30, 60, 90}
	grid.Samples = []float64{1, 10, 20, 50, 3, 80}
	cube := rel("cube", "histogram")
	cube.Shape, cube.Fields = []int64{2, 2, 2}, []string{"a", "b", "c"}
	cube.Probabilities = []float64{0.05, 0.1, 0.15, 0.2, 0.1, 0.1, 0.2, 0.1}
	cube.NoisyCounts = []float64{5, 10, 15, 20, 10, 10, 20, 10}
	cube.Edges = []float64{0, 1, 2, 0, 1, 2, 0, 1, 2}
	badShape := grid
	badShape.Shape = []int64{4, 3}
	badShape.Samples = nil

	dens := rel("km_density", "density")
	dens.Edges = make([]float64, 201)
	dens.Densities = make([]float64, 201)
	for i := range dens.Edges {
		x := 30 * float64(i) / 200
		dens.Edges[i], dens.Densities[i] = x, math.Exp(-(x-8)*(x-8)/18)/7.52
	}
	dens.Coefficients = make([]float64, 8)
	small := rel("d", "density")
	small.Edges, small.Densities, small.Coefficients = []float64{0, 1, 2, 3}, []float64{0.1, 0.4, 0.3, 0.2}, []float64{1, 2, 3}
	offGrid := small
	offGrid.Edges = []float64{0, 1, 2}

	reg := rel("fit", "regression")
	reg.Fields, reg.Coefficients, reg.StdErrors, reg.Intercept, reg.Ridge, reg.Method = []string{"hp", "weight"}, []float64{-0.04, -0.006}, []float64{0.01, 0.001}, f(45.6), f(0.25), "adassp"

	rr := rel("colour", "randomized_response")
	rr.Fields, rr.Categories, rr.Probabilities = []string{"colour"}, []string{"red", "green", "blue"}, []float64{0.25, 0.5, 0.25}
	rr.DebiasedCounts, rr.StdErrors, rr.LocalEpsilon = []float64{25, 50, 25}, []float64{3, 4, 3}, f(1.1)

	refused := rel("km_hist", "histogram")
	refused.Status, refused.EpsilonSpent = "budget_exhausted", 12
	refusedCount := rel("a_long_release_name", "count")
	refusedCount.Status = "budget_exhausted"
	unknownValue := rel("q", "sketch")
	unknownValue.Value = f(7)
	zones := rel("zone_trips", "count")
	zones.Fields, zones.Keys, zones.Values = []string{"zone"}, []string{"z0", "z1", "z2", "z3"}, []float64{40, 120, -3, 60}
	noZones := rel("zone_trips", "count")
	noZones.Fields = []string{"zone"}

	return []demoLineCase{
		{"count", count, "trips      count        1234.00 ± 15.30     ε spent 1.75 of 12"},
		{"sum without interval", sum, "fare_sum   sum            -3.50 ± 0.00      ε spent 1.75 of 12"},
		{"mean", mean, "fare_mean  mean           23.46 ± 0.81      ε spent 1.75 of 12"},
		{"count without value", noValue, "trips      count       ε spent 1.75 of 12"},
		{"histogram, one field", hist, "km_hist    histogram ▁▃▅█▇▆▅▃▃▂▂▂▁▁▁  [0, 30] n≈1190  ε spent 1.75 of 12"},
		{"histogram without shape and fields", legacy, "fare_hist  histogram ▅█▅  [0, 120] n≈99  ε spent 1.75 of 12"},
		{"histogram, two fields, samples", grid, "km_by_min  histogram km ▅█  minutes ▇█▃  3 synthetic rows  ε spent 1.75 of 12"},
		{"histogram, three fields", cube, "cube       histogram a ██  b ▅█  c ██  ε spent 1.75 of 12"},
		{"histogram, malformed shape", badShape, "km_by_min  histogram (malformed shape)  ε spent 1.75 of 12"},
		{"density", dens, "km_density density   ▁▂▂▄▅▇██▆▄▃▂▁▁▁▁▁▁▁▁▁▁▁▁  [0, 30] 8 terms  ε spent 1.75 of 12"},
		{"density, fewer points than the line", small, "d          density   ▃█▆▅  [0, 3] 3 terms  ε spent 1.75 of 12"},
		{"density off its grid", offGrid, "d          density     ε spent 1.75 of 12"},
		// Before the move, this line read the Edges such a release does
		// not have, and panicked (the demo never releases one).
		{"randomized_response", rr, "colour     randomized_response ▅█▅  3 categories  ε spent 1.75 of 12"},
		{"regression", reg, "fit        regression   ε spent 1.75 of 12"},
		{"refused histogram", refused, "km_hist    histogram refused: budget exhausted (ε spent 12.00 of 12)"},
		{"refused, long name", refusedCount, "a_long_release_name count     refused: budget exhausted (ε spent 1.75 of 12)"},
		{"per-key count", zones, "zone_trips count     █▅▃▁  4 keys: z1 120 z3 60 z0 40  ε spent 1.75 of 12"},
		{"per-key count, no key selected", noZones, "zone_trips count     0 keys  ε spent 1.75 of 12"},
		{"unknown kind with a value", unknownValue, "q          sketch          7.00 ± 0.00      ε spent 1.75 of 12"},
	}
}

// TestDemoLine pins the demo's one-line rendering of a release of every
// kind's shape (formatRelease), byte for byte, so that moving the
// rendering into the kinds' packages (issue 12) is checked: the demo's
// output is not covered by the golden files.
func TestDemoLine(t *testing.T) {
	for _, c := range demoLineCases() {
		t.Run(c.name, func(t *testing.T) {
			if got := formatRelease(c.r); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
