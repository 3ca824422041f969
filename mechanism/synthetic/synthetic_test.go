package synthetic

import (
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// synthAlpha is the false-failure rate of each statistical check in this
// file (χ² and Kolmogorov–Smirnov thresholds): the probability that a
// correct sampler fails the check on a seed drawn at random. The seeds are
// fixed, so the tests are deterministic.
const synthAlpha = 1e-4

// synthCell returns the bin of x on a field with the given edges: the i
// with edges[i] ≤ x < edges[i+1], or the last bin for x equal to the last
// edge; ok is false when x is outside [edges[0], edges[last]]. It is how
// the tests recover the cell of a sample from its coordinates, independently
// of the sampler. (A coordinate that rounding put exactly on an interior
// edge would be given to the upper bin; that has probability about 2⁻⁵³
// per coordinate.)
func synthCell(edges []float64, x float64) (int, bool) {
	last := len(edges) - 1
	if !(x >= edges[0] && x <= edges[last]) {
		return 0, false
	}
	if x == edges[last] {
		return last - 1, true
	}
	// The number of edges ≤ x, minus one.
	i := 0
	for i+1 < last && edges[i+1] <= x {
		i++
	}
	return i, true
}

// synthFlatCell returns the flat row-major index ((i1·m2)+i2)·m3+i3 of a
// sample's cell, written out from the specification.
func synthFlatCell(edges [][]float64, row []float64) (int, bool) {
	flat := 0
	for a, e := range edges {
		i, ok := synthCell(e, row[a])
		if !ok {
			return 0, false
		}
		flat = flat*(len(e)-1) + i
	}
	return flat, true
}

// TestSampleHistogramChiSquare draws k points and checks the counts per
// cell against probs with Pearson's χ² test, cells of probability 0
// exactly empty, and every coordinate inside the range of its field.
func TestSampleHistogramChiSquare(t *testing.T) {
	const k = 100000
	tests := []struct {
		name  string
		seed  uint64
		probs []float64
		edges [][]float64
	}{
		{
			name:  "1-D uneven edges with an empty cell",
			seed:  1,
			probs: []float64{0.1, 0.25, 0, 0.3, 0.05, 0.3},
			edges: [][]float64{{-2, -1, 0, 0.5, 1, 3, 10}},
		},
		{
			name: "2-D unnormalized with zero cells",
			seed: 2,
			// 3 × 4 cells, row-major: the second field varies fastest.
			probs: []float64{
				12, 0, 3, 7,
				1, 20, 0, 2,
				5, 5, 9, 0,
			},
			edges: [][]float64{{0, 1, 2, 4}, {-1, 0, 0.25, 0.5, 1.5}},
		},
		{
			name:  "3-D",
			seed:  3,
			probs: threeDProbs(),
			edges: [][]float64{{0, 1, 2}, {0, 10, 20, 30}, {5, 6, 7, 8, 9}},
		},
		{
			name:  "extreme magnitudes",
			seed:  4,
			probs: []float64{1e308, 0.5e308, 1.5e308},
			// The first cell's width overflows float64.
			edges: [][]float64{{-1.7e308, 1.5e308, 1.6e308, 1.7e308}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := len(tc.edges)
			probsBefore := slices.Clone(tc.probs)
			out, err := Histogram(noise.SeededSource(tc.seed), tc.probs, tc.edges, k)
			if err != nil {
				t.Fatalf("SampleHistogram: %v", err)
			}
			if len(out) != k*d {
				t.Fatalf("len(out) = %d, want %d", len(out), k*d)
			}
			if !slices.Equal(tc.probs, probsBefore) {
				t.Errorf("probs modified: %v, was %v", tc.probs, probsBefore)
			}
			obs := make([]float64, len(tc.probs))
			for i := range k {
				row := out[i*d : (i+1)*d]
				c, ok := synthFlatCell(tc.edges, row)
				if !ok {
					t.Fatalf("sample %d = %v is outside the edges", i, row)
				}
				obs[c]++
			}
			// Expected counts, computed with the sum scaled so it cannot
			// overflow.
			total := 0.0
			for _, p := range tc.probs {
				total += p / 1e300
			}
			stat, cells := 0.0, 0
			for c, p := range tc.probs {
				if p == 0 {
					if obs[c] != 0 {
						t.Errorf("cell %d has probability 0 but %v samples", c, obs[c])
					}
					continue
				}
				exp := k * (p / 1e300) / total
				if exp < 5 {
					t.Fatalf("cell %d expects %.1f samples; the χ² approximation needs ≥ 5", c, exp)
				}
				stat += (obs[c] - exp) * (obs[c] - exp) / exp
				cells++
			}
			// False-failure rate synthAlpha = 1e-4 per case (to the accuracy
			// of the χ² approximation, every expected count ≥ 5).
			crit := distuv.ChiSquared{K: float64(cells - 1)}.Quantile(1 - synthAlpha)
			if stat > crit {
				t.Errorf("χ² = %.1f on %d degrees of freedom > %.1f", stat, cells-1, crit)
			}
		})
	}
}

// threeDProbs is a 2 × 3 × 4 table with no symmetry, so a wrong index order
// changes the law.
func threeDProbs() []float64 {
	p := make([]float64, 24)
	for c := range p {
		p[c] = float64(1 + (c*7)%11)
	}
	p[5], p[17] = 0, 0
	return p
}

// TestSampleHistogramCellIndexing puts all the mass on one cell and checks
// that every sample lies within that cell's edges, field by field, with the
// cell's flat index ((i1·m2)+i2)·m3+i3 (last field fastest).
func TestSampleHistogramCellIndexing(t *testing.T) {
	edges := [][]float64{{0, 1, 2}, {0, 10, 20, 30}, {5, 6, 7, 8, 9}}
	m := []int{2, 3, 4}
	tests := []struct {
		name string
		bin  [3]int
	}{
		{"first", [3]int{0, 0, 0}},
		{"last", [3]int{1, 2, 3}},
		{"mixed", [3]int{1, 0, 2}},
		{"middle", [3]int{0, 1, 1}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			probs := make([]float64, 24)
			probs[(tc.bin[0]*m[1]+tc.bin[1])*m[2]+tc.bin[2]] = 1
			const k = 2000
			out, err := Histogram(noise.SeededSource(uint64(100+i)), probs, edges, k)
			if err != nil {
				t.Fatalf("SampleHistogram: %v", err)
			}
			for s := range k {
				for a := range 3 {
					x := out[s*3+a]
					lo, hi := edges[a][tc.bin[a]], edges[a][tc.bin[a]+1]
					if !(x >= lo && x <= hi) {
						t.Fatalf("sample %d field %d = %v, want in [%v, %v]", s, a+1, x, lo, hi)
					}
				}
			}
		})
	}
}

// TestSampleHistogramExtremeWords drives the sampler with the smallest and
// largest uniform draws (words 0 and 2⁶⁴−1, i.e. u = 0 and u = 1 − 2⁻⁵³):
// they must pick the first and last cells of positive probability, skipping
// empty cells at either end, and put the coordinate at or inside the cell's
// edges. Zero-width bins must put every point on their edge.
func TestSampleHistogramExtremeWords(t *testing.T) {
	tests := []struct {
		name   string
		word   uint64
		probs  []float64
		edges  []float64
		lo, hi float64 // the closed range each sample must fall in
	}{
		{"u=0 skips empty first cell", 0, []float64{0, 0.5, 0.5, 0}, []float64{0, 1, 2, 3, 4}, 1, 1},
		{"u≈1 skips empty last cell", ^uint64(0), []float64{0, 0.5, 0.5, 0}, []float64{0, 1, 2, 3, 4}, 2, 3},
		{"u≈1 wide cell clamps to edge", ^uint64(0), []float64{1}, []float64{-1.7e308, 1.7e308}, 1e308, 1.7e308},
		{"zero-width bin u=0", 0, []float64{0, 1, 0}, []float64{0, 1, 1, 2}, 1, 1},
		{"zero-width bin u≈1", ^uint64(0), []float64{0, 1, 0}, []float64{0, 1, 1, 2}, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Histogram(stattest.ConstSource(tc.word), tc.probs, [][]float64{tc.edges}, 5)
			if err != nil {
				t.Fatalf("SampleHistogram: %v", err)
			}
			for i, x := range out {
				if !(x >= tc.lo && x <= tc.hi) {
					t.Errorf("sample %d = %v, want in [%v, %v]", i, x, tc.lo, tc.hi)
				}
			}
		})
	}
}

// TestSampleHistogramWithinCellUniform checks that points are uniform
// inside a cell: for the 70% cell of a 2-D histogram, the position of each
// coordinate rescaled to [0, 1] passes a one-sample Kolmogorov–Smirnov
// test against U(0, 1), and the joint position passes a χ² test on an 8 × 8
// grid (which also catches dependence between the coordinates).
func TestSampleHistogramWithinCellUniform(t *testing.T) {
	const k = 100000
	edges := [][]float64{{0, 0.1, 1}, {2, 2.5, 5}}
	probs := []float64{0.7, 0.1, 0.1, 0.1}
	out, err := Histogram(noise.SeededSource(7), probs, edges, k)
	if err != nil {
		t.Fatalf("SampleHistogram: %v", err)
	}
	var us, vs []float64
	const g = 8
	grid := make([]float64, g*g)
	for i := range k {
		x, y := out[2*i], out[2*i+1]
		if x >= 0.1 || y >= 2.5 {
			continue
		}
		u, v := x/0.1, (y-2)/0.5
		us = append(us, u)
		vs = append(vs, v)
		grid[min(int(u*g), g-1)*g+min(int(v*g), g-1)]++
	}
	n := len(us)
	if n < 60000 {
		t.Fatalf("only %d samples in the 70%% cell", n)
	}
	uniformCDF := func(x float64) float64 { return math.Max(0, math.Min(1, x)) }
	// DKW with Massart's constant: false-failure rate synthAlpha for each of
	// the two marginals.
	crit := stattest.DKWBound(n, synthAlpha)
	for name, xs := range map[string][]float64{"first field": us, "second field": vs} {
		if ks := stattest.KSStatistic(xs, uniformCDF); ks > crit {
			t.Errorf("%s: KS distance to U(0,1) = %.4f > %.4f", name, ks, crit)
		}
	}
	exp := float64(n) / (g * g)
	stat := 0.0
	for _, o := range grid {
		stat += (o - exp) * (o - exp) / exp
	}
	// False-failure rate synthAlpha (expected counts ≈ 1100 per sub-cell).
	chiCrit := distuv.ChiSquared{K: g*g - 1}.Quantile(1 - synthAlpha)
	if stat > chiCrit {
		t.Errorf("joint position: χ² = %.1f on %d degrees of freedom > %.1f", stat, g*g-1, chiCrit)
	}
}

// linearCDF returns the CDF of the density linear between the grid points,
// normalized by its trapezoid integral: on [x_i, x_{i+1}] with t the
// fraction of the way, the mass below is the areas of earlier intervals
// plus h_i·(f_i·t + (f_{i+1} − f_i)·t²/2), the integral of the line.
func linearCDF(grid, f []float64) func(float64) float64 {
	before := make([]float64, len(grid))
	for i := 1; i < len(grid); i++ {
		h := grid[i] - grid[i-1]
		before[i] = before[i-1] + h*(f[i-1]+f[i])/2
	}
	total := before[len(grid)-1]
	return func(x float64) float64 {
		if x <= grid[0] {
			return 0
		}
		if x >= grid[len(grid)-1] {
			return 1
		}
		i := 0
		for grid[i+1] <= x {
			i++
		}
		h := grid[i+1] - grid[i]
		s := (x - grid[i]) / h
		return (before[i] + h*(f[i]*s+(f[i+1]-f[i])*s*s/2)) / total
	}
}

// TestSampleDensityKS checks Density with a one-sample
// Kolmogorov–Smirnov test against the exact piecewise-quadratic CDF of the
// linear interpolant, and that no sample falls outside the grid or strictly
// inside an interval where the density is 0.
func TestSampleDensityKS(t *testing.T) {
	const k = 100000
	tests := []struct {
		name    string
		seed    uint64
		grid    []float64
		density []float64
		zero    [][2]float64 // open intervals that must stay empty
	}{
		{
			name:    "triangle",
			seed:    11,
			grid:    []float64{0, 1, 2},
			density: []float64{0, 1, 0},
		},
		{
			name:    "zero segments",
			seed:    12,
			grid:    []float64{-1, 0, 0.5, 2, 3, 3.5, 4, 6},
			density: []float64{0, 0, 2, 1, 0, 0, 0.7, 0.2},
			zero:    [][2]float64{{-1, 0}, {3, 3.5}},
		},
		{
			name: "unnormalized with equal endpoints",
			seed: 13,
			grid: []float64{0, 0.3, 1, 1.1, 2, 2.25},
			// Integrates to 2095, far from 1.
			density: []float64{500, 2000, 2000, 0, 1000, 1000},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Density(noise.SeededSource(tc.seed), tc.grid, tc.density, k)
			if err != nil {
				t.Fatalf("SampleDensity: %v", err)
			}
			if len(out) != k {
				t.Fatalf("len(out) = %d, want %d", len(out), k)
			}
			lo, hi := tc.grid[0], tc.grid[len(tc.grid)-1]
			for i, x := range out {
				if !(x >= lo && x <= hi) {
					t.Fatalf("sample %d = %v outside [%v, %v]", i, x, lo, hi)
				}
				for _, z := range tc.zero {
					if x > z[0] && x < z[1] {
						t.Fatalf("sample %d = %v inside (%v, %v), where the density is 0", i, x, z[0], z[1])
					}
				}
			}
			// DKW with Massart's constant: false-failure rate synthAlpha
			// (threshold ≈ 2.15/√k).
			crit := stattest.DKWBound(k, synthAlpha)
			if ks := stattest.KSStatistic(out, linearCDF(tc.grid, tc.density)); ks > crit {
				t.Errorf("KS distance = %.5f > %.5f", ks, crit)
			}
		})
	}
}

// TestSampleDensityKSHasPower checks that the KS test above can tell the
// linear interpolant from the histogram with the same interval masses
// (uniform inside each interval): triangle samples must be far from the
// latter's CDF. Without this, a sampler that skipped the within-interval
// inversion could pass.
func TestSampleDensityKSHasPower(t *testing.T) {
	const k = 100000
	out, err := Density(noise.SeededSource(14), []float64{0, 1, 2}, []float64{0, 1, 0}, k)
	if err != nil {
		t.Fatalf("SampleDensity: %v", err)
	}
	// Both intervals have mass 1/2, so the histogram version is U(0, 2).
	stepCDF := func(x float64) float64 { return math.Max(0, math.Min(1, x/2)) }
	// The true distance is sup|F − x/2| = 1/8 (at x = 1/2 and 3/2), 18 times
	// the threshold, so a correct sampler fails this check essentially never.
	crit := stattest.DKWBound(k, synthAlpha)
	if ks := stattest.KSStatistic(out, stepCDF); ks < crit {
		t.Errorf("KS distance to the step-density CDF = %.5f, want > %.5f", ks, crit)
	}
}

// TestSampleDensityInversion drives one interval with fixed words, so that
// the uniform draw v = ⌊w/2¹¹⌋·2⁻⁵³ is known, and compares the sample with
// the closed-form inverse CDF, or checks F(x) = v where there is none
// handy. The cases cover equal endpoints, a zero at either end, and
// endpoints far apart in magnitude or tiny (where squaring would underflow
// without rescaling).
func TestSampleDensityInversion(t *testing.T) {
	words := []uint64{0, 1 << 11, 0x5555555555555555, 1 << 63, 0xdeadbeefcafef00d, ^uint64(0)}
	const lo, hi = 2.0, 5.0
	tests := []struct {
		name string
		a, b float64
		// want is the fraction t of the way from lo to hi solving F(t) = v,
		// or nil to check the forward CDF instead.
		want func(v float64) float64
	}{
		{"equal endpoints", 3, 3, func(v float64) float64 { return v }},
		{"tiny equal endpoints", 1e-200, 1e-200, func(v float64) float64 { return v }},
		{"zero left end", 0, 4, math.Sqrt},
		{"zero right end", 4, 0, func(v float64) float64 { return 1 - math.Sqrt(1-v) }},
		{"increasing", 1, 3, nil},
		{"decreasing", 7, 0.5, nil},
		{"near-zero left end", 1e-300, 1, nil},
		{"huge", 1e308, 1.7e308, nil},
	}
	for _, tc := range tests {
		for _, w := range words {
			v := float64(w>>11) * 0x1p-53
			out, err := Density(stattest.ConstSource(w), []float64{lo, hi}, []float64{tc.a, tc.b}, 1)
			if err != nil {
				t.Fatalf("%s: SampleDensity: %v", tc.name, err)
			}
			x := out[0]
			if !(x >= lo && x <= hi) {
				t.Errorf("%s, v=%v: x = %v outside [%v, %v]", tc.name, v, x, lo, hi)
				continue
			}
			if tc.want != nil {
				want := lo + tc.want(v)*(hi-lo)
				if math.Abs(x-want) > 1e-12*hi {
					t.Errorf("%s, v=%v: x = %.17g, want %.17g", tc.name, v, x, want)
				}
				continue
			}
			// Forward CDF, scaled so the huge case does not overflow.
			m := math.Max(tc.a, tc.b)
			if got := linearCDF([]float64{lo, hi}, []float64{tc.a / m, tc.b / m})(x); math.Abs(got-v) > 1e-12 {
				t.Errorf("%s, v=%v: F(x) = %.17g, want v", tc.name, v, got)
			}
		}
	}
}

// TestSampleDensityExtremeGrid checks a grid whose span overflows float64
// and a density near MaxFloat64: the samples stay finite and in range, and
// the uniform density puts half its mass on each side of 0.
func TestSampleDensityExtremeGrid(t *testing.T) {
	const k = 10000
	grid := []float64{-1.5e308, 0, 1.5e308}
	out, err := Density(noise.SeededSource(15), grid, []float64{1.7e308, 1.7e308, 1.7e308}, k)
	if err != nil {
		t.Fatalf("SampleDensity: %v", err)
	}
	below := 0
	for i, x := range out {
		if !(x >= grid[0] && x <= grid[2]) {
			t.Fatalf("sample %d = %v outside the grid", i, x)
		}
		if x < 0 {
			below++
		}
	}
	// Exact binomial tails: false-failure rate synthAlpha.
	if !stattest.BinomialOK(below, k, 0.5, synthAlpha) {
		t.Errorf("%d of %d samples below 0, want about half", below, k)
	}
}

// TestPickIndexFallback covers the guard for a target that rounding puts
// at the total (u = 1 is not a possible draw, but stands in for u·total
// rounding up): it must return the last index of positive weight, never a
// trailing zero-weight one.
func TestPickIndexFallback(t *testing.T) {
	tests := []struct {
		cum  []float64
		u    float64
		want int
	}{
		{[]float64{0.5, 1, 1, 1}, 1, 1},
		{[]float64{1}, 1, 0},
		{[]float64{0, 0, 2}, 1, 2},
		{[]float64{0, 0, 2}, 0, 2},
		{[]float64{1, 1, 3}, 0.4, 2}, // target 1.2: skips the empty index 1
	}
	for _, tc := range tests {
		if got := pickIndex(tc.cum, tc.u); got != tc.want {
			t.Errorf("pickIndex(%v, %v) = %d, want %d", tc.cum, tc.u, got, tc.want)
		}
	}
}

// TestSampleZero checks that k = 0 gives an empty, non-nil slice.
func TestSampleZero(t *testing.T) {
	h, err := Histogram(noise.SeededSource(1), []float64{1, 2}, [][]float64{{0, 1, 2}}, 0)
	if err != nil || h == nil || len(h) != 0 {
		t.Errorf("SampleHistogram(k=0) = %v (nil: %v), %v; want empty non-nil", h, h == nil, err)
	}
	d, err := Density(noise.SeededSource(1), []float64{0, 1}, []float64{1, 1}, 0)
	if err != nil || d == nil || len(d) != 0 {
		t.Errorf("SampleDensity(k=0) = %v (nil: %v), %v; want empty non-nil", d, d == nil, err)
	}
}

// TestSampleErrors checks every rejected input, each with a fragment of the
// message that shows which check fired. Validation does not depend on k, so
// several cases use k = 0.
func TestSampleErrors(t *testing.T) {
	src := noise.SeededSource(1)
	nan, inf := math.NaN(), math.Inf(1)
	e1 := [][]float64{{0, 1, 2}}
	hist := func(s noise.Source, probs []float64, edges [][]float64, k int) func() error {
		return func() error { _, err := Histogram(s, probs, edges, k); return err }
	}
	dens := func(s noise.Source, grid, density []float64, k int) func() error {
		return func() error { _, err := Density(s, grid, density, k); return err }
	}
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"hist nil source", hist(nil, []float64{1, 1}, e1, 1), "nil randomness source"},
		{"hist negative k", hist(src, []float64{1, 1}, e1, -1), "k = -1"},
		{"hist k too large", hist(src, []float64{1, 1}, e1, MaxSamples+1), "k = 100001"},
		{"hist no fields", hist(src, []float64{1}, nil, 1), "need 1 to 3 fields, got 0"},
		{"hist four fields", hist(src, []float64{1}, [][]float64{{0, 1}, {0, 1}, {0, 1}, {0, 1}}, 1), "got 4"},
		{"hist field with one edge", hist(src, []float64{1}, [][]float64{{0, 1}, {3}}, 1), "field 2 has 1 edges"},
		{"hist too few probs", hist(src, []float64{1}, e1, 1), "more cells than the 1 probabilities"},
		{"hist too many probs", hist(src, []float64{1, 1, 1}, e1, 1), "edges give 2 cells, got 3"},
		{"hist no probs", hist(src, nil, e1, 0), "more cells than the 0"},
		{"hist shape mismatch 2-D", hist(src, make([]float64, 5), [][]float64{{0, 1, 2}, {0, 1, 2}}, 1), "edges give 4 cells, got 5"},
		{"hist NaN prob", hist(src, []float64{1, nan}, e1, 1), "entry 1 is NaN"},
		{"hist Inf prob", hist(src, []float64{inf, 1}, e1, 1), "entry 0 is +Inf"},
		{"hist negative prob", hist(src, []float64{1, -0.5}, e1, 0), "entry 1 is -0.5"},
		{"hist all zero", hist(src, []float64{0, 0}, e1, 1), "all are 0"},
		{"hist decreasing edges", hist(src, []float64{1, 1}, [][]float64{{0, 2, 1}}, 1), "field 1 edges decrease at 2"},
		{"hist NaN edge", hist(src, []float64{1, 1}, [][]float64{{0, nan, 2}}, 1), "field 1 edge 1 is NaN"},
		{"hist Inf edge", hist(src, []float64{1, 1}, [][]float64{{0, 1, inf}}, 0), "field 1 edge 2 is +Inf"},

		{"dens nil source", dens(nil, []float64{0, 1}, []float64{1, 1}, 1), "nil randomness source"},
		{"dens negative k", dens(src, []float64{0, 1}, []float64{1, 1}, -3), "k = -3"},
		{"dens k too large", dens(src, []float64{0, 1}, []float64{1, 1}, MaxSamples+1), "k = 100001"},
		{"dens one grid point", dens(src, []float64{0}, []float64{1}, 1), "grid has 1 points"},
		{"dens empty grid", dens(src, nil, nil, 0), "grid has 0 points"},
		{"dens length mismatch", dens(src, []float64{0, 1, 2}, []float64{1, 1}, 1), "2 density values for 3 grid points"},
		{"dens equal grid points", dens(src, []float64{0, 1, 1}, []float64{1, 1, 1}, 1), "not strictly increasing at 2"},
		{"dens decreasing grid", dens(src, []float64{0, 2, 1}, []float64{1, 1, 1}, 0), "not strictly increasing at 2"},
		{"dens NaN grid", dens(src, []float64{0, nan}, []float64{1, 1}, 1), "grid point 1 is NaN"},
		{"dens Inf grid", dens(src, []float64{math.Inf(-1), 0}, []float64{1, 1}, 1), "grid point 0 is -Inf"},
		{"dens NaN density", dens(src, []float64{0, 1}, []float64{nan, 1}, 1), "density 0 is NaN"},
		{"dens Inf density", dens(src, []float64{0, 1}, []float64{1, inf}, 1), "density 1 is +Inf"},
		{"dens negative density", dens(src, []float64{0, 1, 2}, []float64{1, -1e-300, 1}, 1), "density 1 is -1e-300"},
		{"dens all zero", dens(src, []float64{0, 1, 2}, []float64{0, 0, 0}, 0), "density is 0 everywhere"},
	}
	for _, tc := range tests {
		err := tc.call()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkSampleHistogram draws 1000 points from a 20 × 20 histogram.
func BenchmarkSampleHistogram(b *testing.B) {
	probs, edges := benchHistogram(20)
	src := noise.SeededSource(1)
	for b.Loop() {
		if _, err := Histogram(src, probs, edges, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSampleHistogramLarge draws MaxSamples points from a 100 × 100
// histogram, the size the binary search is there for.
func BenchmarkSampleHistogramLarge(b *testing.B) {
	probs, edges := benchHistogram(100)
	src := noise.SeededSource(1)
	for b.Loop() {
		if _, err := Histogram(src, probs, edges, MaxSamples); err != nil {
			b.Fatal(err)
		}
	}
}

// benchHistogram returns an m × m histogram on [0, 1]² with uneven
// probabilities.
func benchHistogram(m int) ([]float64, [][]float64) {
	probs := make([]float64, m*m)
	for c := range probs {
		probs[c] = float64(1 + c%7)
	}
	e := make([]float64, m+1)
	for i := range e {
		e[i] = float64(i) / float64(m)
	}
	return probs, [][]float64{e, e}
}
