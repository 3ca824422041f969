package aggregate

import (
	"errors"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// TestUnitBounds checks Events and SquaredL2 against an enumeration of
// every per-key allocation (n_1, …, n_L0) a unit may make: n_k ≤ c',
// Σ n_k ≤ L; their largest Σ n_k and Σ n_k² must be exactly what is
// charged.
func TestUnitBounds(t *testing.T) {
	for l := 1; l <= 7; l++ {
		for l0 := 1; l0 <= 4; l0++ {
			for c := 0; c <= l; c++ {
				b := UnitBounds{MaxContributions: l, MaxKeys: l0, MaxPerKey: c}
				if err := b.Validate(); err != nil {
					t.Fatal(err)
				}
				cp := c
				if cp == 0 {
					cp = l
				}
				var maxL1, maxL2 int64
				n := make([]int, l0)
				var rec func(k, left int)
				rec = func(k, left int) {
					if k == l0 {
						var s1, s2 int64
						for _, x := range n {
							s1 += int64(x)
							s2 += int64(x * x)
						}
						maxL1, maxL2 = max(maxL1, s1), max(maxL2, s2)
						return
					}
					for x := 0; x <= min(cp, left); x++ {
						n[k] = x
						rec(k+1, left-x)
					}
				}
				rec(0, l)
				if b.Events() != maxL1 || b.SquaredL2() != maxL2 {
					t.Errorf("%+v: Events %d, SquaredL2 %d; enumeration %d, %d", b, b.Events(), b.SquaredL2(), maxL1, maxL2)
				}
			}
		}
	}
	big := UnitBounds{MaxContributions: MaxUnitEvents, MaxKeys: math.MaxInt, MaxPerKey: 3}
	if big.Events() != MaxUnitEvents || big.SquaredL2() != int64(MaxUnitEvents/3)*9+int64(MaxUnitEvents%3)*int64(MaxUnitEvents%3) {
		t.Errorf("large bounds: %d, %d", big.Events(), big.SquaredL2())
	}
	for _, b := range []UnitBounds{{0, 1, 0}, {MaxUnitEvents + 1, 1, 0}, {3, 0, 0}, {3, 1, 4}, {3, 1, -1}} {
		if err := b.Validate(); !errors.Is(err, noise.ErrInvalidSpec) {
			t.Errorf("%+v: Validate = %v", b, err)
		}
	}
}

// TestVarianceQuantizer checks the units of values and squares: the
// stated bounds, the monotonicity in |k| they rest on, the square quantum,
// and how well the units represent y and y².
func TestVarianceQuantizer(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(2, 3))
	for _, b := range [][2]float64{{0, 10}, {-3, 5}, {1e9, 1e9 + 1}, {-1e-100, 0}, {0, 1e100}} {
		v, err := NewVarianceQuantizer(b[0], b[1])
		if err != nil {
			t.Fatal(err)
		}
		q, q2 := v.Quantum(), v.SquareQuantum()
		if q2 != math.Ldexp(q*q, SquareShift) || math.Ldexp(1, noise.Log2Exact(q2)) != q2 {
			t.Errorf("%v: square quantum %v is not q²·2^29 = %v", b, q2, math.Ldexp(q*q, SquareShift))
		}
		sMax, kMax := v.MaxSquareUnits(), v.MaxUnits()
		if kMax > 1<<30 || sMax > 1<<30 || v.half > 1<<30 {
			t.Errorf("%v: units above 2^30: K* %d, S* %d, H %d", b, kMax, sMax, v.half)
		}
		if sMax != v.maxSquare-v.maxSquare/2 || v.SquareCenter() != float64(v.half)*q2 {
			t.Errorf("%v: S* %d, K₂ %d, H %d", b, sMax, v.maxSquare, v.half)
		}
		seen := int64(math.MinInt64)
		for _, x := range []float64{b[0], b[1], Midpoint(b[0], b[1])} {
			k, s, err := v.Units(x)
			if err != nil {
				t.Fatal(err)
			}
			seen = max(seen, noise.AbsInt64(s))
			if x == Midpoint(b[0], b[1]) && (k != 0 || s != -v.half) {
				t.Errorf("%v: midpoint gives k=%d, s=%d, want 0, %d", b, k, s, -v.half)
			}
		}
		if seen != sMax {
			t.Errorf("%v: |s| at the bounds and midpoint peaks at %d, S* = %d", b, seen, sMax)
		}
		type ks struct{ k, s int64 }
		var pts []ks
		for range 2000 {
			x := b[0] + (b[1]-b[0])*(1.2*rng.Float64()-0.1)
			k, s, err := v.Units(x)
			if err != nil {
				t.Fatal(err)
			}
			if noise.AbsInt64(k) > kMax || s < -v.half || s > sMax {
				t.Fatalf("%v: x=%v gives k=%d, s=%d outside the bounds", b, x, k, s)
			}
			pts = append(pts, ks{noise.AbsInt64(k), s})
			// y² is represented to within q₂/2 + |y|·q + q²/4.
			y := math.Max(b[0], math.Min(x, b[1])) - v.Center()
			if err := math.Abs(float64(s)*q2 + v.SquareCenter() - y*y); err > q2/2+math.Abs(y)*q+q*q/4+1e-12*y*y {
				t.Fatalf("%v: x=%v: square %v represented as %v", b, x, y*y, float64(s)*q2+v.SquareCenter())
			}
		}
		slices.SortFunc(pts, func(a, b ks) int { return int(a.k - b.k) })
		for i := 1; i < len(pts); i++ {
			if pts[i].s < pts[i-1].s {
				t.Fatalf("%v: s decreases in |k| at %v → %v", b, pts[i-1], pts[i])
			}
		}
	}
	v, _ := NewVarianceQuantizer(0, 10)
	var st VarianceStats
	if err := v.Add(&st, math.NaN()); err == nil || st != (VarianceStats{}) {
		t.Errorf("NaN: %v, %+v", err, st)
	}
	if err := v.Add(nil, 1); err == nil {
		t.Error("nil stats accepted")
	}
	full := VarianceStats{Count: 5, SumUnits: math.MaxInt64 - 10, SquareUnits: 0}
	before := full
	if err := v.Add(&full, 10); err == nil || full != before {
		t.Errorf("overflowing add: %v, stats %+v", err, full)
	}
	if err := full.Merge(VarianceStats{Count: 1, SquareUnits: math.MaxInt64}); err != nil {
		t.Errorf("merge that fits: %v", err)
	}
	before = full
	if err := full.Merge(VarianceStats{SquareUnits: 1}); err == nil || full != before {
		t.Errorf("overflowing merge: %v, stats %+v", err, full)
	}
	if _, _, err := (VarianceQuantizer{}).Units(1); err == nil {
		t.Error("zero quantizer accepted")
	}
	for _, b := range [][2]float64{{1, 1}, {-1e-300, 0}, {0, 1e300}, {0, math.Inf(1)}} {
		if _, err := NewVarianceQuantizer(b[0], b[1]); err == nil {
			t.Errorf("bounds %v accepted", b)
		}
	}
}

func varianceSpec(kind noise.Kind, eps float64, lo, hi float64, b UnitBounds) VarianceSpec {
	delta := 0.0
	if kind == noise.Gaussian {
		delta = 1e-5
	}
	return VarianceSpec{Noise: kind, Epsilon: eps, Delta: delta, Lo: lo, Hi: hi, Bounds: b}
}

// TestCalibrateVariance checks each component's unit, grid and exact
// sensitivity (M·a grid steps for Laplace, a·√SquaredL2 for Gaussian), the
// Laplace shares (ε/3 each, charge Sensitivity/Scale = share) and the
// Gaussian ρ (meets δ, and is what the accountant would charge).
func TestCalibrateVariance(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		b      UnitBounds
		eps    float64
	}{
		{0, 10, UnitBounds{1, 1, 0}, 1},
		{-3, 5, UnitBounds{4, 1, 0}, 0.3},
		{0, 1e6, UnitBounds{5000, 1, 0}, 0.5},    // coarse grid: regridded sums
		{0, 10, UnitBounds{10, 3, 2}, 1},         // per-key bounds: M = 6, SquaredL2 = 12
		{0, 10, UnitBounds{1 << 20, 1, 0}, 1e-3}, // large scales
		{0, 1 << 31, UnitBounds{3, 1, 0}, 1},     // the sums' quantum is 1
	} {
		v, err := NewVarianceQuantizer(tc.lo, tc.hi)
		if err != nil {
			t.Fatal(err)
		}
		perEvent := []int64{1, v.MaxUnits(), v.MaxSquareUnits()}
		quanta := []float64{1, v.Quantum(), v.SquareQuantum()}
		purposes := []string{PurposeCount, PurposeCenteredSum, PurposeCenteredSquares}
		for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
			s := varianceSpec(kind, tc.eps, tc.lo, tc.hi, tc.b)
			c, err := CalibrateVariance(s)
			if err != nil {
				t.Fatalf("%+v %s: %v", tc, kind, err)
			}
			if len(c.Components) != 3 {
				t.Fatalf("%d components", len(c.Components))
			}
			sumEps := 0.0
			for i, comp := range c.Components {
				g := comp.Granularity
				if comp.Purpose != purposes[i] || comp.Quantum != quanta[i] || g < quanta[i] || comp.Noise != kind.Discrete() {
					t.Errorf("%+v %s: component %d is %+v", tc, kind, i, comp)
				}
				if i > 0 && g != noise.OutputGrid(comp.Scale, quanta[i]) {
					t.Errorf("%+v %s: %s grid %v, want %v", tc, kind, comp.Purpose, g, noise.OutputGrid(comp.Scale, quanta[i]))
				}
				a := ceilShift(perEvent[i], noise.GridShift(g, quanta[i]))
				var want float64
				if kind == noise.Laplace {
					want = g * float64(tc.b.Events()*a)
					sumEps += comp.Epsilon
					if math.Abs(comp.Sensitivity/comp.Scale-tc.eps/3) > 1e-12*tc.eps {
						t.Errorf("%+v %s: charge %v, want ε/3", tc, comp.Purpose, comp.Sensitivity/comp.Scale)
					}
				} else {
					want = g * float64(a) * math.Sqrt(float64(tc.b.SquaredL2()))
					if comp.Sensitivity < want || comp.Sensitivity > want*(1+1e-15) {
						t.Errorf("%+v %s: sensitivity %v, want %v rounded up", tc, comp.Purpose, comp.Sensitivity, want)
					}
					want = comp.Sensitivity
				}
				if comp.Sensitivity != want {
					t.Errorf("%+v %s %s: sensitivity %v, want %v", tc, kind, comp.Purpose, comp.Sensitivity, want)
				}
			}
			if kind == noise.Laplace && math.Abs(sumEps-tc.eps) > 1e-12 {
				t.Errorf("%+v: ε shares add to %v", tc, sumEps)
			}
			if kind == noise.Gaussian {
				if c.Rho != componentsRho(c.Components) || noise.ZCDPDelta(tc.eps, c.Rho) > s.Delta {
					t.Errorf("%+v: ρ %v (components %v) gives δ %v > %v", tc, c.Rho, componentsRho(c.Components), noise.ZCDPDelta(tc.eps, c.Rho), s.Delta)
				}
				// Not wasteful: 1% less noise everywhere would miss δ.
				if noise.ZCDPDelta(tc.eps, c.Rho*1.02) <= s.Delta {
					t.Errorf("%+v: ρ %v is well below the budget", tc, c.Rho)
				}
			}
		}
	}
	ok := varianceSpec(noise.Laplace, 1, 0, 10, UnitBounds{2, 1, 0})
	for _, tc := range []struct {
		name string
		edit func(*VarianceSpec)
	}{
		{"epsilon 0", func(s *VarianceSpec) { s.Epsilon = 0 }},
		{"laplace with delta", func(s *VarianceSpec) { s.Delta = 0.1 }},
		{"bounds reversed", func(s *VarianceSpec) { s.Lo, s.Hi = 10, 0 }},
		{"bounds too wide", func(s *VarianceSpec) { s.Lo, s.Hi = -math.MaxFloat64, math.MaxFloat64 }},
		{"L 0", func(s *VarianceSpec) { s.Bounds.MaxContributions = 0 }},
		{"L0 0", func(s *VarianceSpec) { s.Bounds.MaxKeys = 0 }},
		{"epsilon tiny", func(s *VarianceSpec) { s.Epsilon = 1e-300 }},
	} {
		s := ok
		tc.edit(&s)
		if _, err := CalibrateVariance(s); !errors.Is(err, noise.ErrInvalidSpec) {
			t.Errorf("%s: CalibrateVariance = %v, want ErrInvalidSpec", tc.name, err)
		}
	}
}

// varianceOf returns the exact statistics of xs and their population mean
// and variance.
func varianceOf(t *testing.T, v VarianceQuantizer, xs []float64) (VarianceStats, float64, float64) {
	t.Helper()
	var st VarianceStats
	m, m2 := 0.0, 0.0
	for _, x := range xs {
		if err := v.Add(&st, x); err != nil {
			t.Fatal(err)
		}
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		m2 += (x - m) * (x - m)
	}
	return st, m, m2 / float64(len(xs))
}

// TestReleaseVariance checks the post-processing without noise to speak of
// (ε = 10^9), the accuracy and interval coverage at ε = 1 on 10^4 values
// over 300 fixed seeds, and what ReleaseVariance refuses.
func TestReleaseVariance(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(4, 5))
	xs := make([]float64, 10000)
	for i := range xs {
		xs[i] = math.Max(0, math.Min(100, 30+12*rng.NormFloat64()))
	}
	v, _ := NewVarianceQuantizer(0, 100)
	st, mean, variance := varianceOf(t, v, xs)
	b := UnitBounds{MaxContributions: 1, MaxKeys: 1}

	exact, err := CalibrateVariance(varianceSpec(noise.Laplace, 1e9, 0, 100, b))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReleaseVariance(exact, st, noise.New(noise.SeededSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.Mean-mean) > 1e-6 || math.Abs(r.Variance-variance) > 1e-6*variance || r.NoisyCount != float64(len(xs)) {
		t.Errorf("nearly exact: mean %v (want %v), variance %v (want %v), count %v", r.Mean, mean, r.Variance, variance, r.NoisyCount)
	}

	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		c, err := CalibrateVariance(varianceSpec(kind, 1, 0, 100, b))
		if err != nil {
			t.Fatal(err)
		}
		const seeds = 300
		var rel []float64
		covered, meanCovered := 0, 0
		for seed := range uint64(seeds) {
			r, err := ReleaseVariance(c, st, noise.New(noise.SeededSource(seed)))
			if err != nil {
				t.Fatal(err)
			}
			if r.Variance < 0 || r.Variance > 2500 || r.Mean < 0 || r.Mean > 100 {
				t.Fatalf("%s: variance %v or mean %v outside its range", kind, r.Variance, r.Mean)
			}
			rel = append(rel, math.Abs(r.Variance-variance)/variance)
			if math.Abs(r.Variance-variance) <= r.VarianceInterval95 {
				covered++
			}
			if math.Abs(r.Mean-mean) <= r.MeanInterval95 {
				meanCovered++
			}
		}
		slices.Sort(rel)
		t.Logf("%s ε=1, n=10^4 on [0, 100] (σ²=%.1f): relative error of the variance median %.4f, p95 %.4f; interval coverage %d/%d (variance), %d/%d (mean); %s",
			kind, variance, rel[seeds/2], rel[seeds*95/100], covered, seeds, meanCovered, seeds, c.Accuracy())
		// First-order intervals at noisy estimates: allow a little below 95%
		// (at these sizes the first-order terms dominate by far).
		if covered < seeds*90/100 || meanCovered < seeds*90/100 {
			t.Errorf("%s: coverage %d and %d of %d", kind, covered, meanCovered, seeds)
		}
		// The first-order error e/n of Accuracy bounds the median error.
		if rel[seeds/2] > 0.01 {
			t.Errorf("%s: median relative error %v", kind, rel[seeds/2])
		}
	}

	c, _ := CalibrateVariance(varianceSpec(noise.Laplace, 1, 0, 100, b))
	nz := noise.New(noise.SeededSource(1))
	if _, err := ReleaseVariance(c, st, nil); err == nil {
		t.Error("nil sampler accepted")
	}
	less := c
	less.Components = slices.Clone(c.Components)
	less.Components[2].Scale /= 2
	if _, err := ReleaseVariance(less, st, nz); err == nil {
		t.Error("half the squares' noise accepted")
	}
	edited := c
	edited.Spec.Bounds.MaxContributions = 2
	if _, err := ReleaseVariance(edited, st, nz); err == nil {
		t.Error("a spec edited after calibration accepted")
	}
	more := c
	more.Components = slices.Clone(c.Components)
	more.Components[0].Scale *= 2
	if _, err := ReleaseVariance(more, st, nz); err != nil {
		t.Errorf("more noise refused: %v", err)
	}
	for _, bad := range []VarianceStats{
		{Count: -1},
		{Count: 2, SumUnits: 3 * v.MaxUnits()},
		{Count: 2, SquareUnits: -3 * v.half},
		{Count: 0, SquareUnits: 1},
	} {
		if _, err := ReleaseVariance(c, bad, nz); err == nil {
			t.Errorf("impossible stats %+v accepted", bad)
		}
	}
	if d := c.Describe(); !strings.Contains(d, "variance on [0, 100]") {
		t.Errorf("Describe = %q", d)
	}
}
