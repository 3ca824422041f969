package aggregate

import (
	"fmt"
	"math"
)

// MaxHistogramDims is the most fields a histogram can be taken over. Cells
// are the product of the fields' bins, so the count of cells (and the
// noise added to reach a given total) grows exponentially with the
// dimension; beyond three fields the minimax rate n^{−2/(2+d)} is too slow
// to be useful at stream window sizes.
const MaxHistogramDims = 3

// Axis is one field of a histogram: Bins equal-width bins on [Lo, Hi].
type Axis struct {
	Lo, Hi float64
	Bins   int
}

// AutoBins returns the number of bins per field of a histogram over dims
// fields (1..MaxHistogramDims) of about n events: m = ⌈n^{1/(2+d)}⌉ per
// field, so the histogram has about n^{d/(2+d)} cells and bin width
// h ≍ n^{−1/(2+d)}, which balances squared bias (h² for a Lipschitz
// density) against variance (1/(n·h^d)) and attains the minimax rate
// n^{−2/(2+d)} of the mean integrated squared error (Wasserman & Zhou 2010,
// section 5; SPEC section 4.2). The privacy noise adds m^{2d}·Var(Z)/n² =
// O(n^{−4/(2+d)}), of lower order at this m. The per-field count is reduced, equally on every field,
// until the product is at most maxBins (≥ 1). n ≤ 1 or NaN gives one bin
// per field; dims outside 1..MaxHistogramDims gives nil.
//
// AutoBins must be given a declared size, never the window's own count:
// the bins decide the released vector's shape, so deriving them from the
// data would leak it.
func AutoBins(n float64, dims, maxBins int) []int {
	if dims < 1 || dims > MaxHistogramDims {
		return nil
	}
	if maxBins < 1 {
		maxBins = 1
	}
	m := 1
	if n > 1 && !math.IsInf(n, 1) {
		p := float64(2 + dims)
		f := math.Ceil(math.Pow(n, 1/p))
		if f > 1<<20 {
			f = 1 << 20
		}
		m = int(f)
		// Fix the last-bit error of Pow: m is the smallest integer with
		// m^(2+d) ≥ n.
		for m > 1 && math.Pow(float64(m-1), p) >= n {
			m--
		}
		for math.Pow(float64(m), p) < n && m < 1<<20 {
			m++
		}
	} else if math.IsInf(n, 1) {
		m = 1 << 20
	}
	for m > 1 && cellCount(m, dims) > maxBins {
		m--
	}
	out := make([]int, dims)
	for i := range out {
		out[i] = m
	}
	return out
}

// cellCount returns m^dims, saturating at MaxInt.
func cellCount(m, dims int) int {
	c := 1
	for range dims {
		if c > math.MaxInt/m {
			return math.MaxInt
		}
		c *= m
	}
	return c
}

// CellCount returns the number of cells of a histogram with the given bins
// per field, or an error when a count is below 1 or the product exceeds
// MaxBins.
func CellCount(bins []int) (int, error) {
	if len(bins) < 1 || len(bins) > MaxHistogramDims {
		return 0, fmt.Errorf("histogram needs 1 to %d fields, got %d", MaxHistogramDims, len(bins))
	}
	c := 1
	for i, b := range bins {
		if b < 1 {
			return 0, fmt.Errorf("field %d has %d bins, want at least 1", i+1, b)
		}
		if c > MaxBins/b {
			return 0, fmt.Errorf("%v bins make more than %d cells", bins, MaxBins)
		}
		c *= b
	}
	return c, nil
}
