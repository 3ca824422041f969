package synthetic

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// Synthetic samples.
//
// A release may publish, beside its histogram or density, k synthetic
// values drawn from it. The samplers below read only the released (already
// private) numbers and the public bin edges or grid, and draw their
// randomness from a Source that is independent of the data. Whatever they
// output is therefore a randomized function of the release alone, and
// post-processing cannot weaken differential privacy (Dwork & Roth 2014,
// "The Algorithmic Foundations of Differential Privacy", Prop. 2.1): the
// samples carry exactly the guarantee of the release they are drawn from,
// under the same add/remove-one-unit relation, and cost no extra budget.
//
// For the same reason floating-point sampling is acceptable here, unlike
// for the noise itself (SPEC section 2): Mironov's attack reads the true
// value out of the low-order bits of noise added to it, but these
// functions never see a true value. Their inputs are public, so nothing
// about the data can leak through rounding, and even a predictable Source
// reveals no more than the release already does.

// MaxSamples bounds k, the number of synthetic values one call draws, so
// that a configuration typo cannot allocate gigabytes.
const MaxSamples = 100000

// errNilSource is returned when a sampler is given no randomness.
var errNilSource = errors.New("nil randomness source")

// Histogram draws k points from the piecewise-uniform density of a
// released histogram. Each point picks a cell with probability
// probs[c] / Σ probs (probs need not sum exactly to 1, which released
// probabilities rarely do after rounding), then draws each coordinate
// uniformly between that cell's edges on that field.
//
// probs is flat and row-major over the fields, the LAST field varying
// fastest: with m_a = len(edges[a]) − 1 bins on field a, the cell with bin
// indices (i1, i2, i3) is probs[((i1·m2)+i2)·m3+i3], so len(probs) must be
// the product of the m_a. edges[a] holds the m_a+1 finite, non-decreasing
// edges of field a; a bin whose two edges are equal has zero width and its
// points sit on that edge. There are 1..MaxHistogramDims fields. Every
// probability must be finite and ≥ 0, and at least one positive.
//
// The result holds k·d values, d = len(edges), row-major: sample i is
// out[i*d:(i+1)*d]. Every coordinate lies in the closed interval of its
// cell's edges (rounding is clamped away), and a cell of probability 0 is
// never chosen. k == 0 gives an empty, non-nil slice. Bad input gives an
// error, never a panic.
//
// Guarantee: the samples are post-processing of the released probabilities
// and the public edges with randomness independent of the data, so they
// satisfy exactly the differential-privacy guarantee of the histogram
// release, for its add/remove-one-unit relation (SPEC section 0), and cost
// no budget. There is no sensitivity to bound: the function never reads
// the data, so changing one unit's events changes its input only through
// the release itself (Dwork & Roth 2014, Prop. 2.1).
//
// The cell is found by binary search in the cumulative probabilities, so a
// draw costs O(d + log cells): k = 1e5 from 1e4 cells takes milliseconds.
// The search uses one uniform double per point and each coordinate one
// more, each made from the top 53 bits of src.Uint64().
func Histogram(src noise.Source, probs []float64, edges [][]float64, k int) ([]float64, error) {
	if err := checkSampleArgs(src, k); err != nil {
		return nil, fmt.Errorf("sample histogram: %w", err)
	}
	d := len(edges)
	if d < 1 || d > aggregate.MaxHistogramDims {
		return nil, fmt.Errorf("sample histogram: need 1 to %d fields, got %d", aggregate.MaxHistogramDims, d)
	}
	// bins[a] is the number of bins on field a; stride[a] the distance in
	// probs between cells one bin apart on field a.
	bins := make([]int, d)
	cells := 1
	for a, e := range edges {
		if len(e) < 2 {
			return nil, fmt.Errorf("sample histogram: field %d has %d edges, want at least 2", a+1, len(e))
		}
		for i, x := range e {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("sample histogram: field %d edge %d is %v, want finite", a+1, i, x)
			}
			if i > 0 && x < e[i-1] {
				return nil, fmt.Errorf("sample histogram: field %d edges decrease at %d (%v < %v)", a+1, i, x, e[i-1])
			}
		}
		bins[a] = len(e) - 1
		// Compare before multiplying, so a huge shape cannot overflow int.
		if bins[a] > len(probs)/cells {
			return nil, fmt.Errorf("sample histogram: edges give more cells than the %d probabilities", len(probs))
		}
		cells *= bins[a]
	}
	if cells != len(probs) {
		return nil, fmt.Errorf("sample histogram: edges give %d cells, got %d probabilities", cells, len(probs))
	}
	cum, err := cumulativeWeights(probs)
	if err != nil {
		return nil, fmt.Errorf("sample histogram: probabilities: %w", err)
	}
	out := make([]float64, k*d)
	idx := make([]int, d)
	for s := range k {
		c := pickIndex(cum, uniformFloat(src))
		// Split the flat index into per-field bin indices, last field
		// fastest.
		for a := d - 1; a >= 0; a-- {
			idx[a] = c % bins[a]
			c /= bins[a]
		}
		row := out[s*d : (s+1)*d]
		for a := range d {
			row[a] = lerpClamped(edges[a][idx[a]], edges[a][idx[a]+1], uniformFloat(src))
		}
	}
	return out, nil
}

// Density draws k points from a released density given by its values
// on a grid, taken as linear between consecutive grid points and normalized
// by its trapezoid integral. density.Release already publishes values whose
// trapezoid integral is 1, but only up to rounding, and any positive
// multiple of a density describes the same law, so unnormalized input is
// accepted rather than checked.
//
// grid must be finite and strictly increasing with at least 2 points;
// density has the same length and finite values ≥ 0, not all 0. Every
// output lies in [grid[0], grid[len(grid)−1]], and none falls strictly
// inside an interval on which the density is 0. k == 0 gives an empty,
// non-nil slice. Bad input gives an error, never a panic.
//
// Each point picks interval i = [x_i, x_{i+1}] with probability
// proportional to its trapezoid area h_i·(f_i + f_{i+1})/2, found by binary
// search in the cumulative areas, then inverts the CDF inside it exactly.
// With t = (x − x_i)/h_i ∈ [0, 1] and a = f_i, b = f_{i+1}, the density in
// t is proportional to a(1−t) + b·t and the conditional CDF is
// F(t) = (a·t + (b−a)·t²/2) / ((a+b)/2). For a uniform v ∈ [0, 1), F(t) = v
// is the quadratic (b−a)/2·t² + a·t − v(a+b)/2 = 0, whose discriminant is
// a² + v(b² − a²) = (1−v)a² + v·b². Its root in [0, 1] in the
// cancellation-free form (rationalizing the textbook formula) is
//
//	t = v(a+b) / (a + √((1−v)a² + v·b²)),
//
// which needs no special case for a = b (it gives t = v) or b = 0
// (t = 1 − √(1−v)), and gives t = √v for a = 0. a and b are first divided by
// max(a, b), so the squares neither overflow nor underflow into a wrong
// answer; the one 0/0 (a = 0, v = 0) is t = 0.
//
// Guarantee: the samples are post-processing of the released density and
// the public grid with randomness independent of the data, so they satisfy
// exactly the differential-privacy guarantee of the density release, for
// its add/remove-one-unit relation (SPEC section 0), and cost no budget.
// There is no sensitivity to bound: the function never reads the data
// (Dwork & Roth 2014, Prop. 2.1).
//
// Each point uses two uniform doubles, each from the top 53 bits of
// src.Uint64().
func Density(src noise.Source, grid, density []float64, k int) ([]float64, error) {
	if err := checkSampleArgs(src, k); err != nil {
		return nil, fmt.Errorf("sample density: %w", err)
	}
	n := len(grid)
	if n < 2 {
		return nil, fmt.Errorf("sample density: grid has %d points, want at least 2", n)
	}
	if len(density) != n {
		return nil, fmt.Errorf("sample density: %d density values for %d grid points", len(density), n)
	}
	for i, x := range grid {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("sample density: grid point %d is %v, want finite", i, x)
		}
		if i > 0 && !(x > grid[i-1]) {
			return nil, fmt.Errorf("sample density: grid not strictly increasing at %d (%v after %v)", i, x, grid[i-1])
		}
	}
	fmax := 0.0
	for i, f := range density {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return nil, fmt.Errorf("sample density: density %d is %v, want finite and >= 0", i, f)
		}
		fmax = math.Max(fmax, f)
	}
	if fmax == 0 {
		return nil, errors.New("sample density: density is 0 everywhere")
	}
	// Interval weights proportional to the trapezoid areas. Halving the
	// grid points and dividing by fmax keeps every weight finite (their sum
	// is at most (x_last − x_0)/2 ≤ MaxFloat64) whatever the scale of the
	// input; a common factor does not change the proportions.
	areas := make([]float64, n-1)
	for i := range areas {
		h := grid[i+1]/2 - grid[i]/2
		areas[i] = h * ((density[i]/fmax + density[i+1]/fmax) / 2)
	}
	cum, err := cumulativeWeights(areas)
	if err != nil {
		// Every area is 0 only when the scaled values underflow.
		return nil, fmt.Errorf("sample density: interval areas: %w", err)
	}
	out := make([]float64, k)
	for s := range out {
		i := pickIndex(cum, uniformFloat(src))
		t := invertLinearCDF(density[i], density[i+1], uniformFloat(src))
		out[s] = lerpClamped(grid[i], grid[i+1], t)
	}
	return out, nil
}

// checkSampleArgs checks the arguments the two samplers share.
func checkSampleArgs(src noise.Source, k int) error {
	if src == nil {
		return errNilSource
	}
	if k < 0 || k > MaxSamples {
		return fmt.Errorf("k = %d samples, want 0 to %d", k, MaxSamples)
	}
	return nil
}

// uniformFloat returns a uniform double in [0, 1): the top 53 bits of one
// word times 2⁻⁵³, so every value is a multiple of 2⁻⁵³ and each has
// probability exactly 2⁻⁵³.
func uniformFloat(src noise.Source) float64 {
	return float64(src.Uint64()>>11) * 0x1p-53
}

// cumulativeWeights returns the running sums of w, each weight first
// divided by the largest so the sums cannot overflow. It fails when a
// weight is NaN, infinite or negative, or when all are 0.
func cumulativeWeights(w []float64) ([]float64, error) {
	wmax := 0.0
	for i, x := range w {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return nil, fmt.Errorf("entry %d is %v, want finite and >= 0", i, x)
		}
		wmax = math.Max(wmax, x)
	}
	if wmax == 0 {
		return nil, errors.New("all are 0")
	}
	cum := make([]float64, len(w))
	acc := 0.0
	for i, x := range w {
		acc += x / wmax
		cum[i] = acc
	}
	return cum, nil
}

// pickIndex returns the first i with cum[i] > u·cum[last], the inverse-CDF
// choice of an index with probability proportional to cum[i] − cum[i−1].
// An index whose weight is 0 has cum[i] = cum[i−1] and is never returned.
// If rounding leaves no cum[i] above the target (u·total rounding up to
// total), the last index of positive weight is returned.
func pickIndex(cum []float64, u float64) int {
	total := cum[len(cum)-1]
	target := u * total
	i := sort.Search(len(cum), func(i int) bool { return cum[i] > target })
	if i < len(cum) {
		return i
	}
	// The last index whose running sum rose, i.e. of positive weight;
	// cumulativeWeights guarantees there is one.
	i = len(cum) - 1
	for i > 0 && cum[i-1] == total {
		i--
	}
	return i
}

// invertLinearCDF returns the t ∈ [0, 1] with F(t) = v for the density
// proportional to a(1−t) + b·t on [0, 1], a, b ≥ 0 not both 0, in the
// cancellation-free form derived in Density's documentation.
func invertLinearCDF(a, b, v float64) float64 {
	m := math.Max(a, b)
	a, b = a/m, b/m
	den := a + math.Sqrt((1-v)*a*a+v*b*b)
	if den == 0 {
		// a = 0 and v = 0: the CDF t² is 0 only at t = 0.
		return 0
	}
	return math.Max(0, math.Min(1, v*(a+b)/den))
}

// lerpClamped returns lo + t·(hi − lo) for t ∈ [0, 1], clamped to
// [lo, hi] against rounding. When hi − lo overflows (edges of opposite sign
// near ±MaxFloat64) it uses lo·(1−t) + hi·t, whose terms cannot overflow.
func lerpClamped(lo, hi, t float64) float64 {
	w := hi - lo
	var x float64
	if math.IsInf(w, 0) {
		x = lo*(1-t) + hi*t
	} else {
		x = lo + t*w
	}
	return math.Max(lo, math.Min(x, hi))
}
