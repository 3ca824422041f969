package regression

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestRegressionScalingRow checks clamping, scaling to [−1, 1] and
// quantization of rows, against values worked out by hand.
func TestRegressionScalingRow(t *testing.T) {
	s := Scaling{FeatureBounds: [][2]float64{{0, 10}, {-4, 4}}, Intercept: true, TargetBounds: [2]float64{100, 300}}
	tests := []struct {
		x       []float64
		y       float64
		wantX   []int64
		wantY   int64
		clamped bool
	}{
		{[]float64{5, 0}, 200, []int64{0, 0, 65536}, 0, false},
		{[]float64{0, 4}, 300, []int64{-65536, 65536, 65536}, 65536, false},
		{[]float64{-3, 9}, 50, []int64{-65536, 65536, 65536}, -65536, true},
		{[]float64{2.5, -1}, 150, []int64{-32768, -16384, 65536}, -32768, false},
	}
	for _, tc := range tests {
		xu, yu, clamped, err := s.Row(tc.x, tc.y)
		if err != nil {
			t.Fatal(err)
		}
		for i := range xu {
			if xu[i] != tc.wantX[i] {
				t.Errorf("Row(%v) x = %v, want %v", tc.x, xu, tc.wantX)
				break
			}
		}
		if yu != tc.wantY || clamped != tc.clamped {
			t.Errorf("Row(%v, %v) y = %d clamped %v, want %d %v", tc.x, tc.y, yu, clamped, tc.wantY, tc.clamped)
		}
	}
	for _, bad := range []struct {
		x []float64
		y float64
	}{{[]float64{1}, 1}, {[]float64{math.NaN(), 1}, 1}, {[]float64{1, 1}, math.NaN()}} {
		if _, _, _, err := s.Row(bad.x, bad.y); err == nil {
			t.Errorf("Row(%v, %v) accepted", bad.x, bad.y)
		}
	}
	if s.Dim() != 3 || s.BX() != math.Sqrt(3) {
		t.Errorf("Dim %d BX %v", s.Dim(), s.BX())
	}
	for _, b := range []Scaling{
		{TargetBounds: [2]float64{0, 1}},
		{FeatureBounds: [][2]float64{{1, 1}}, TargetBounds: [2]float64{0, 1}},
		{FeatureBounds: [][2]float64{{0, math.Inf(1)}}, TargetBounds: [2]float64{0, 1}},
		{FeatureBounds: [][2]float64{{0, 1}}, TargetBounds: [2]float64{math.NaN(), 1}},
		{FeatureBounds: [][2]float64{{-math.MaxFloat64, math.MaxFloat64}}, TargetBounds: [2]float64{0, 1}},
	} {
		if err := b.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted", b)
		}
	}
}

// TestRegressionStatsExact checks that the statistics are the exact
// integer sums of the rows' products, that merging partials in any split
// and order gives the same integers, and that OLS on the scaled statistics,
// unscaled, recovers a noiseless linear model on the original scale.
func TestRegressionStatsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := Scaling{FeatureBounds: [][2]float64{{0, 10}, {-4, 4}, {1, 2}}, Intercept: true, TargetBounds: [2]float64{-100, 100}}
	trueCoef, trueIntercept := []float64{2, -3, 10}, 5.0
	const rows = 3000
	whole := NewStats(s.Dim())
	parts := []Stats{NewStats(s.Dim()), NewStats(s.Dim()), NewStats(s.Dim())}
	d := s.Dim()
	var ref [4][4]int64
	for r := range rows {
		x := []float64{rng.Float64() * 10, rng.Float64()*8 - 4, 1 + rng.Float64()}
		y := trueIntercept
		for j := range x {
			y += trueCoef[j] * x[j]
		}
		xu, yu, _, err := s.Row(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if err := whole.AddRow(xu, yu); err != nil {
			t.Fatal(err)
		}
		if err := parts[r%3].AddRow(xu, yu); err != nil {
			t.Fatal(err)
		}
		for i := range d {
			for j := range d {
				ref[i][j] += xu[i] * xu[j]
			}
		}
	}
	for i := range d {
		for j := i; j < d; j++ {
			if whole.XtX[upperIndex(d, i, j)] != ref[i][j] {
				t.Fatalf("XtX(%d,%d) = %d, want %d", i, j, whole.XtX[upperIndex(d, i, j)], ref[i][j])
			}
		}
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}} {
		var m Stats
		for _, k := range order {
			if err := m.Merge(parts[k]); err != nil {
				t.Fatal(err)
			}
		}
		if m.N != whole.N || m.Yty != whole.Yty {
			t.Fatalf("merged N %d yty %d, want %d %d", m.N, m.Yty, whole.N, whole.Yty)
		}
		for i := range m.XtX {
			if m.XtX[i] != whole.XtX[i] {
				t.Fatalf("merged XtX[%d] differs", i)
			}
		}
		for i := range m.Xty {
			if m.Xty[i] != whole.Xty[i] {
				t.Fatalf("merged Xty[%d] differs", i)
			}
		}
	}
	if err := whole.Merge(NewStats(2)); err == nil {
		t.Error("merging statistics of another dimension was accepted")
	}
	xtx, xty, _, n := whole.Float()
	if n != rows {
		t.Fatalf("n = %v", n)
	}
	var theta mat.VecDense
	var chol mat.Cholesky
	if !chol.Factorize(xtx) {
		t.Fatal("XᵀX not positive definite")
	}
	if err := chol.SolveVecTo(&theta, xty); err != nil {
		t.Fatal(err)
	}
	coef, icpt, err := s.Unscale(theta.RawVector().Data)
	if err != nil {
		t.Fatal(err)
	}
	// Quantization moves each scaled value by at most 2^-17, so the fit is
	// exact to about 1e-4 on these scales.
	for j := range coef {
		if math.Abs(coef[j]-trueCoef[j]) > 1e-2 {
			t.Errorf("coef %d = %v, want %v", j, coef[j], trueCoef[j])
		}
	}
	if math.Abs(icpt-trueIntercept) > 5e-2 {
		t.Errorf("intercept = %v, want %v", icpt, trueIntercept)
	}
}
