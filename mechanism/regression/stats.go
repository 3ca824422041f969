package regression

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file holds the exact sufficient statistics of a linear regression
// over one window (SPEC section 4.5): every row is clamped, scaled to
// [−1, 1] and quantized to a fixed-point grid, and XᵀX, Xᵀy, yᵀy and n are
// kept as exact integers, so partials merge exactly in any order, as the
// sums of package aggregate do.

// Quantum is the grid q = 2⁻¹⁶ that scaled features and targets
// are rounded to. A product of two scaled values is then an integer number
// of units of q² with magnitude at most 2³², so the int64 statistics hold
// at least MaxRows rows. Rounding moves a scaled value by at most
// q/2 ≈ 7.6e-6 of a range of 2, far below any noise that makes a
// regression private.
const Quantum = 1.0 / (1 << 16)

// regressionOne is the scaled value 1 in units of Quantum.
const regressionOne = 1 << 16

// MaxRows is how many kept rows one window's statistics can hold
// without an int64 overflow: each row adds at most 2³² units to an entry.
const MaxRows = 1<<31 - 1

// MaxFeatures bounds the number of features (before the
// intercept column): XᵀX has d(d+1)/2 entries, and every method solves a
// d×d system per window.
const MaxFeatures = 64

// Scaling maps raw rows to the scaled, quantized rows the
// statistics are built from (SPEC section 4.5): each feature clamped to its
// bounds [a, b] and mapped affinely to [−1, 1], an optional intercept
// column of 1s (last), and the target clamped to its bounds and mapped to
// [−1, 1]. After scaling ‖x‖∞ ≤ 1, ‖x‖₂ ≤ B_x = √Dim() and |y| ≤ B_y = 1,
// whatever the producers send, which is what every regression method's
// sensitivity rests on.
type Scaling struct {
	// FeatureBounds are the [lo, hi] of each feature, lo < hi, finite.
	FeatureBounds [][2]float64
	// Intercept adds a constant column (the scaled value 1) after the
	// features.
	Intercept bool
	// TargetBounds are the [lo, hi] of the target.
	TargetBounds [2]float64
}

// Dim returns d_eff, the number of columns of a scaled row: the features
// plus one for the intercept.
func (s Scaling) Dim() int {
	if s.Intercept {
		return len(s.FeatureBounds) + 1
	}
	return len(s.FeatureBounds)
}

// BX returns B_x = √Dim(), the bound on ‖x‖₂ of a scaled row.
func (s Scaling) BX() float64 { return math.Sqrt(float64(s.Dim())) }

// Validate reports bounds that cannot be scaled.
func (s Scaling) Validate() error {
	if len(s.FeatureBounds) < 1 || len(s.FeatureBounds) > MaxFeatures {
		return fmt.Errorf("%w: regression needs 1 to %d features, got %d", noise.ErrInvalidSpec, MaxFeatures, len(s.FeatureBounds))
	}
	check := func(what string, b [2]float64) error {
		if math.IsNaN(b[0]) || math.IsNaN(b[1]) || math.IsInf(b[0], 0) || math.IsInf(b[1], 0) || !(b[0] < b[1]) || math.IsInf(b[1]-b[0], 0) {
			return fmt.Errorf("%w: regression %s needs finite bounds with lo < hi, got [%v, %v]", noise.ErrInvalidSpec, what, b[0], b[1])
		}
		return nil
	}
	for i, b := range s.FeatureBounds {
		if err := check(fmt.Sprintf("feature %d", i+1), b); err != nil {
			return err
		}
	}
	return check("target", s.TargetBounds)
}

// scaleUnits clamps v to b, maps it to [−1, 1] and returns it in units of
// Quantum, rounded to nearest: an integer in [−2¹⁶, 2¹⁶].
func scaleUnits(v float64, b [2]float64) int64 {
	v = math.Max(b[0], math.Min(v, b[1]))
	// (v − lo)/(hi − lo) ∈ [0, 1] even when hi − lo rounds; then to
	// [−1, 1] and to units. Rounding and the final clamp keep the result
	// a grid point of [−1, 1] whatever the floating-point error.
	u := (v-b[0])/(b[1]-b[0])*2 - 1
	k := math.Round(u * regressionOne)
	return int64(math.Max(-regressionOne, math.Min(k, regressionOne)))
}

// Row scales one raw row: xu has Dim() entries (the intercept column last),
// each in units of Quantum, and yu is the target in the same
// units. NaN values are an error (the accumulate stage rejects them
// earlier); values outside the bounds are clamped, and clamped reports
// whether any was.
func (s Scaling) Row(x []float64, y float64) (xu []int64, yu int64, clamped bool, err error) {
	if len(x) != len(s.FeatureBounds) {
		return nil, 0, false, fmt.Errorf("regression row has %d features, want %d", len(x), len(s.FeatureBounds))
	}
	if math.IsNaN(y) {
		return nil, 0, false, errors.New("regression target is NaN")
	}
	xu = make([]int64, s.Dim())
	for i, v := range x {
		if math.IsNaN(v) {
			return nil, 0, false, fmt.Errorf("regression feature %d is NaN", i+1)
		}
		b := s.FeatureBounds[i]
		clamped = clamped || v < b[0] || v > b[1]
		xu[i] = scaleUnits(v, b)
	}
	if s.Intercept {
		xu[len(xu)-1] = regressionOne
	}
	clamped = clamped || y < s.TargetBounds[0] || y > s.TargetBounds[1]
	return xu, scaleUnits(y, s.TargetBounds), clamped, nil
}

// Unscale maps coefficients θ of the scaled model y_s = θᵀx_s (θ has Dim()
// entries, the intercept's last when Intercept) back to the original
// scale: y = Σ_j coef_j·x_j + intercept. With x_s,j = α_j·x_j + β_j and
// y_s = α_y·y + β_y, coef_j = θ_j·α_j/α_y and intercept =
// (θ₀ + Σ_j θ_j·β_j − β_y)/α_y (θ₀ = 0 without an intercept column: the
// scaled model then still has an affine intercept on the original scale).
func (s Scaling) Unscale(theta []float64) (coef []float64, intercept float64, err error) {
	if len(theta) != s.Dim() {
		return nil, 0, fmt.Errorf("unscale: %d coefficients, want %d", len(theta), s.Dim())
	}
	ay, by := affine(s.TargetBounds)
	coef = make([]float64, len(s.FeatureBounds))
	c := -by
	if s.Intercept {
		c += theta[len(theta)-1]
	}
	for j, b := range s.FeatureBounds {
		a, bb := affine(b)
		coef[j] = theta[j] * a / ay
		c += theta[j] * bb
	}
	return coef, c / ay, nil
}

// affine returns α, β with x ↦ α·x + β mapping [lo, hi] onto [−1, 1].
func affine(b [2]float64) (alpha, beta float64) {
	alpha = 2 / (b[1] - b[0])
	return alpha, -1 - b[0]*alpha
}

// Stats are the exact sufficient statistics of a regression over
// one window, in units of Quantum² (q²): N kept rows, the upper
// triangle of XᵀX (row-major, diagonal included: entry (i, j), i ≤ j, at
// index i·d − i(i−1)/2 + (j − i)), Xᵀy and yᵀy. All integers, so merging
// partials is exact and order-independent.
type Stats struct {
	N   int64
	XtX []int64
	Xty []int64
	Yty int64
}

// NewStats returns zero statistics for d columns.
func NewStats(d int) Stats {
	return Stats{XtX: make([]int64, d*(d+1)/2), Xty: make([]int64, d)}
}

// Dim returns the number of columns d of the statistics.
func (st Stats) Dim() int { return len(st.Xty) }

// upperIndex returns the index of entry (i, j), i ≤ j, in XtX.
func upperIndex(d, i, j int) int { return i*d - i*(i-1)/2 + (j - i) }

// AddRow adds one scaled row (from Scaling.Row). It returns an
// error, and changes nothing, on a dimension mismatch, a unit outside
// [−2¹⁶, 2¹⁶], or after MaxRows rows.
func (st *Stats) AddRow(xu []int64, yu int64) error {
	d := st.Dim()
	if len(xu) != d || len(st.XtX) != d*(d+1)/2 {
		return fmt.Errorf("regression row has %d columns, statistics have %d", len(xu), d)
	}
	if yu < -regressionOne || yu > regressionOne {
		return fmt.Errorf("regression target %d units is outside [−1, 1]", yu)
	}
	for i, v := range xu {
		if v < -regressionOne || v > regressionOne {
			return fmt.Errorf("regression column %d: %d units is outside [−1, 1]", i+1, v)
		}
	}
	if st.N >= MaxRows {
		return fmt.Errorf("regression statistics are exact up to %d rows per window: use shorter windows or more partitions", int64(MaxRows))
	}
	// Each product is at most 2³² in magnitude and N < 2³¹, so no entry
	// can overflow int64 (2³² · 2³¹ = 2⁶³ is reached only at N = 2³¹).
	for i := range d {
		for j := i; j < d; j++ {
			st.XtX[upperIndex(d, i, j)] += xu[i] * xu[j]
		}
		st.Xty[i] += xu[i] * yu
	}
	st.Yty += yu * yu
	st.N++
	return nil
}

// Merge adds o into st exactly; a receiver with no columns takes o's
// dimension. On error (dimension mismatch, overflow) st is unchanged.
func (st *Stats) Merge(o Stats) error {
	if st.Dim() == 0 && len(st.XtX) == 0 {
		*st = NewStats(o.Dim())
	}
	if o.Dim() != st.Dim() || len(o.XtX) != len(st.XtX) {
		return fmt.Errorf("merge regression stats: %d columns vs %d", o.Dim(), st.Dim())
	}
	n, ok := noise.AddInt64(st.N, o.N)
	if !ok || n > MaxRows {
		return fmt.Errorf("merge regression stats: more than %d rows", int64(MaxRows))
	}
	for i := range st.XtX {
		if _, ok := noise.AddInt64(st.XtX[i], o.XtX[i]); !ok {
			return fmt.Errorf("merge regression stats: XᵀX entry %d overflows", i)
		}
	}
	for i := range st.Xty {
		if _, ok := noise.AddInt64(st.Xty[i], o.Xty[i]); !ok {
			return fmt.Errorf("merge regression stats: Xᵀy entry %d overflows", i)
		}
	}
	yty, ok := noise.AddInt64(st.Yty, o.Yty)
	if !ok {
		return errors.New("merge regression stats: yᵀy overflows")
	}
	for i := range st.XtX {
		st.XtX[i] += o.XtX[i]
	}
	for i := range st.Xty {
		st.Xty[i] += o.Xty[i]
	}
	st.N, st.Yty = n, yty
	return nil
}

// Float returns the statistics on the value scale (units × q²): XᵀX as a
// symmetric matrix, Xᵀy, yᵀy and n. The conversion is exact while every
// entry is below 2⁵³ units; beyond that it rounds, which only post-
// processing (never a sensitivity argument) may rely on.
func (st Stats) Float() (xtx *mat.SymDense, xty *mat.VecDense, yty, n float64) {
	d := st.Dim()
	const q2 = Quantum * Quantum
	xtx = mat.NewSymDense(max(d, 1), nil)
	for i := range d {
		for j := i; j < d; j++ {
			xtx.SetSym(i, j, float64(st.XtX[upperIndex(d, i, j)])*q2)
		}
	}
	xty = mat.NewVecDense(max(d, 1), nil)
	for i := range d {
		xty.SetVec(i, float64(st.Xty[i])*q2)
	}
	return xtx, xty, float64(st.Yty) * q2, float64(st.N)
}
