package noise

import (
	"math"
	"math/big"
	"testing"

	"github.com/dpstream/dpstream/mechanism/internal/stattest"
)

// pow2AtLeast returns the smallest power of two ≥ x > 0 by repeated
// doubling and halving: an implementation independent of Granularity's
// exponent arithmetic.
func pow2AtLeast(x float64) float64 {
	g := 1.0
	for g < x {
		g *= 2
	}
	for g/2 >= x {
		g /= 2
	}
	return g
}

func TestGranularity(t *testing.T) {
	for _, scale := range []float64{1, 1.5, 2, 3, 0.1, 7.3e-9, 20, 1e6, 1 << 40, 1e300, math.MaxFloat64, 0x1p-1000, 0x1p-1034} {
		g, err := Granularity(scale)
		if err != nil {
			t.Errorf("Granularity(%v): %v", scale, err)
			continue
		}
		want := pow2AtLeast(scale * 0x1p-40)
		if scale < 0x1p-900 {
			// scale·2^-40 would be subnormal and inexact; compare
			// exponents with big.Float instead.
			bs := new(big.Float).SetFloat64(scale)
			bs.SetMantExp(bs, -40)
			bg := new(big.Float).SetFloat64(g)
			half := new(big.Float).SetMantExp(bg, -1)
			if bg.Cmp(bs) < 0 || half.Cmp(bs) >= 0 {
				t.Errorf("Granularity(%v) = %v is not the smallest power of two ≥ scale·2^-40", scale, g)
			}
			continue
		}
		if g != want {
			t.Errorf("Granularity(%v) = %v, want %v", scale, g, want)
		}
		if r := scale / g; !(r > 1<<39 && r <= 1<<40) {
			t.Errorf("Granularity(%v): scale/g = %v not in (2^39, 2^40]", scale, r)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1), 0x1p-1040, math.SmallestNonzeroFloat64} {
		if g, err := Granularity(bad); err == nil {
			t.Errorf("Granularity(%v) = %v, want an error", bad, g)
		}
	}
}

func TestGridIndex(t *testing.T) {
	const g = 0.25
	tests := []struct {
		x, want float64
	}{
		{0, 0},
		{0.125, 1},       // a tie rounds up
		{-0.125, 0},      // ties round up on the negative side too
		{0.1249999, 0},   // below the tie
		{0.375, 2},       // tie
		{-0.375, -1},     // tie rounds up, towards +∞
		{-0.3750001, -2}, // just below a tie
		{1e300, 4e300},   // huge: already an integer after division
		{-(1 << 60), -(1 << 62)},
		{math.SmallestNonzeroFloat64, 0},
		{math.Nextafter(0.125, 0), 0},
	}
	for _, tc := range tests {
		got, err := GridIndex(tc.x, g)
		if err != nil || got != tc.want {
			t.Errorf("gridIndex(%v, %v) = %v, %v; want %v", tc.x, g, got, err, tc.want)
		}
	}
	// Against exact rational rounding on random values of every magnitude.
	src := SeededSource(500)
	for range 5000 {
		x := math.Float64frombits(src.Uint64())
		gr := math.Ldexp(1, int(src.Uint64()%200)-100)
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsInf(x/gr, 0) {
			continue
		}
		got, err := GridIndex(x, gr)
		if err != nil {
			t.Fatalf("gridIndex(%v, %v): %v", x, gr, err)
		}
		// want = ⌊x/g + 1/2⌋ in exact arithmetic.
		q := new(big.Rat).Quo(new(big.Rat).SetFloat64(x), new(big.Rat).SetFloat64(gr))
		q.Add(q, big.NewRat(1, 2))
		fl := new(big.Int).Div(q.Num(), q.Denom()) // Euclidean: floor for positive denominators
		want, _ := new(big.Float).SetInt(fl).Float64()
		if got != want {
			t.Fatalf("gridIndex(%v, %v) = %v, want %v", x, gr, got, want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.MaxFloat64} {
		if _, err := GridIndex(bad, 0.25); err == nil {
			t.Errorf("gridIndex(%v, 0.25) succeeded", bad)
		}
	}
}

// TestOnGridExact checks g·(k + z) against exact big arithmetic, in both
// the int64 and the math/big range of k.
func TestOnGridExact(t *testing.T) {
	const g = 0x1p-30
	for _, tc := range []struct {
		k float64
		z int64
	}{
		{0, 5}, {-7, 3}, {1 << 53, 1}, {1<<62 - 1024, 1023}, {1 << 62, -3}, {1 << 70, 3}, {-(1 << 80), 1 << 40},
		{1 << 62, math.MinInt64}, {1 << 61, math.MaxInt64}, {-(1 << 61), math.MinInt64},
	} {
		got, err := onGrid(tc.k, tc.z, g)
		if err != nil {
			t.Errorf("onGrid(%v, %d): %v", tc.k, tc.z, err)
			continue
		}
		bk, _ := new(big.Float).SetFloat64(tc.k).Int(nil)
		bk.Add(bk, big.NewInt(tc.z))
		s, _ := new(big.Float).SetInt(bk).Float64()
		if want := s * g; got != want {
			t.Errorf("onGrid(%v, %d) = %v, want %v", tc.k, tc.z, got, want)
		}
		if q := got / g; q != math.Trunc(q) {
			t.Errorf("onGrid(%v, %d) = %v is not a multiple of %v", tc.k, tc.z, got, g)
		}
	}
	if v, err := onGrid(1e308, 0, 4); err == nil {
		t.Errorf("onGrid overflowing float64 returned %v", v)
	}
}

// TestAddNoiseOnGrid: every released value is an exact multiple of
// g = Granularity(scale), for values and scales of every magnitude.
func TestAddNoiseOnGrid(t *testing.T) {
	values := []float64{0, 0.3, -0.3, 1.0 / 3, 123456.789, -98765.4321, 1e-300, -5e-324, 1e15 + 0.5, 1 << 70, -1e200}
	scales := []float64{1e-6, 0.1, 1, 3.75, 1e6, 1e20}
	n := New(SeededSource(510))
	for _, add := range []struct {
		name string
		f    func(Sampler, float64, float64) (float64, error)
	}{{"laplace", AddLaplace}, {"gaussian", AddGaussian}} {
		for _, b := range scales {
			g, err := Granularity(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range values {
				for range 20 {
					out, err := add.f(n, v, b)
					if err != nil {
						t.Fatalf("%s(%v, %v): %v", add.name, v, b, err)
					}
					if q := out / g; q != math.Trunc(q) || math.IsInf(q, 0) {
						t.Fatalf("%s(%v, %v) = %v: out/g = %v is not an integer (g = %v)", add.name, v, b, out, q, g)
					}
				}
			}
		}
	}
}

// TestAddNoiseLowBitsIndependentOfInput is the Mironov (2012) test: inputs
// that round to the same grid point give bit-identical outputs from the
// same random words (so their output distributions are identical), and an
// input one grid step up gives exactly the same output shifted by g. No
// low-order bit of the output carries anything about the input beyond its
// grid index.
func TestAddNoiseLowBitsIndependentOfInput(t *testing.T) {
	for _, b := range []float64{0.37, 1, 2.5e4} {
		g, _ := Granularity(b)
		k := 123457.0
		base := k * g
		same := []float64{base, base + 0.49*g, base - 0.5*g, math.Nextafter(base+0.5*g, 0), base - 0.25*g}
		next := base + g
		for _, add := range []struct {
			name string
			f    func(Sampler, float64, float64) (float64, error)
		}{{"laplace", AddLaplace}, {"gaussian", AddGaussian}} {
			for seed := uint64(0); seed < 200; seed++ {
				want, err := add.f(New(SeededSource(seed)), base, b)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range same {
					got, err := add.f(New(SeededSource(seed)), x, b)
					if err != nil {
						t.Fatal(err)
					}
					if math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("%s b=%v seed %d: input %v gave %v, input %v gave %v (same grid point)", add.name, b, seed, x, got, base, want)
					}
				}
				up, err := add.f(New(SeededSource(seed)), next, b)
				if err != nil {
					t.Fatal(err)
				}
				if up-want != g {
					t.Fatalf("%s b=%v seed %d: one grid step up moved the output by %v, want exactly %v", add.name, b, seed, up-want, g)
				}
			}
		}
	}
}

// TestAddNoiseDistribution: (output − grid point)/g follows the discrete
// law of scale b/g: mean and variance z-tests (false-failure rate ≈ 5.7e-7
// each). The samplers' full goodness of fit is tested in noise_test.go.
func TestAddNoiseDistribution(t *testing.T) {
	const draws, b, x = 20000, 3.0, 10.1
	g, _ := Granularity(b)
	k, _ := GridIndex(x, g)
	for i, gaussian := range []bool{false, true} {
		n := New(SeededSource(uint64(520 + i)))
		zs := make([]float64, draws)
		for j := range zs {
			var out float64
			var err error
			if gaussian {
				out, err = AddGaussian(n, x, b)
			} else {
				out, err = AddLaplace(n, x, b)
			}
			if err != nil {
				t.Fatal(err)
			}
			zs[j] = out/g - k
		}
		m2, m4 := stattest.DLapMoments(b / g)
		if gaussian {
			s := b / g
			m2, m4 = s*s, 3*s*s*s*s
		}
		mean, variance := stattest.MeanVar(zs)
		if z := mean / math.Sqrt(m2/draws); math.Abs(z) > stattest.ZMax {
			t.Errorf("gaussian=%v: mean %v grid steps: z = %.2f", gaussian, mean, z)
		}
		if z := (variance - m2) / math.Sqrt((m4-m2*m2)/draws); math.Abs(z) > stattest.ZMax {
			t.Errorf("gaussian=%v: variance %v, want %v: z = %.2f", gaussian, variance, m2, z)
		}
	}
}

func TestAddNoiseErrors(t *testing.T) {
	n := New(SeededSource(1))
	for _, tc := range []struct {
		name     string
		n        Sampler
		value, b float64
	}{
		{"nil noise", nil, 1, 1},
		{"zero scale", n, 1, 0},
		{"NaN scale", n, 1, math.NaN()},
		{"NaN value", n, math.NaN(), 1},
		{"infinite value", n, math.Inf(-1), 1},
		{"value beyond the grid", n, math.MaxFloat64, 1e-10},
		{"scale too small for a grid", n, 0, 1e-315},
	} {
		if v, err := AddLaplace(tc.n, tc.value, tc.b); err == nil {
			t.Errorf("%s: AddLaplace = %v, want an error", tc.name, v)
		}
		if v, err := AddGaussian(tc.n, tc.value, tc.b); err == nil {
			t.Errorf("%s: AddGaussian = %v, want an error", tc.name, v)
		}
	}
}

// TestSymmetricGaussianMatrix: exactly symmetric, on the grid, and each
// entry (diagonal and off-diagonal alike) has variance σ² and is
// uncorrelated with its neighbours.
func TestSymmetricGaussianMatrix(t *testing.T) {
	const d, sigma, reps = 5, 2.5, 2000
	g, _ := Granularity(sigma)
	n := New(SeededSource(530))
	var diag, off, cross []float64 // m[1][1], m[1][3], m[1][3]·m[2][3]
	for range reps {
		m, err := SymmetricGaussianMatrix(n, d, sigma)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != d {
			t.Fatalf("%d rows", len(m))
		}
		for i := range d {
			if len(m[i]) != d {
				t.Fatalf("row %d has %d entries", i, len(m[i]))
			}
			for j := range d {
				if math.Float64bits(m[i][j]) != math.Float64bits(m[j][i]) {
					t.Fatalf("m[%d][%d] = %v but m[%d][%d] = %v", i, j, m[i][j], j, i, m[j][i])
				}
				if q := m[i][j] / g; q != math.Trunc(q) {
					t.Fatalf("m[%d][%d] = %v is off the grid %v", i, j, m[i][j], g)
				}
			}
		}
		diag = append(diag, m[1][1])
		off = append(off, m[1][3])
		cross = append(cross, m[1][3]*m[2][3])
	}
	// Variance σ² with sd of X² = √2σ² (Gaussian to 1e-20 here); the
	// product of two independent entries has mean 0 and sd σ². z-tests,
	// false-failure rate ≈ 5.7e-7 each.
	for name, xs := range map[string][]float64{"diagonal": diag, "off-diagonal": off} {
		sq := 0.0
		for _, x := range xs {
			sq += x * x
		}
		sq /= reps
		if z := (sq - sigma*sigma) / (math.Sqrt2 * sigma * sigma / math.Sqrt(reps)); math.Abs(z) > stattest.ZMax {
			t.Errorf("%s entry: E[X²] = %v, want %v: z = %.2f", name, sq, sigma*sigma, z)
		}
	}
	c, _ := stattest.MeanVar(cross)
	if z := c / (sigma * sigma / math.Sqrt(reps)); math.Abs(z) > stattest.ZMax {
		t.Errorf("neighbouring entries correlated: E[XY] = %v: z = %.2f", c, z)
	}
	for _, bad := range []struct {
		d     int
		sigma float64
	}{{0, 1}, {-1, 1}, {MaxMatrixDim + 1, 1}, {3, 0}, {3, math.NaN()}} {
		if m, err := SymmetricGaussianMatrix(n, bad.d, bad.sigma); err == nil {
			t.Errorf("SymmetricGaussianMatrix(d=%d, σ=%v) = %v, want an error", bad.d, bad.sigma, m)
		}
	}
}

// TestAddSymmetricGaussian: the release rounds the statistic to the grid and
// adds symmetric noise; the input is left alone; malformed input is refused.
func TestAddSymmetricGaussian(t *testing.T) {
	const sigma = 0.5
	g, _ := Granularity(sigma)
	in := [][]float64{{4.1, 0.3, -1}, {0.3, 2, 0.7}, {-1, 0.7, 9.99}}
	orig := [][]float64{{4.1, 0.3, -1}, {0.3, 2, 0.7}, {-1, 0.7, 9.99}}
	// Same seed: the noise equals SymmetricGaussianMatrix's, so the release
	// is exactly grid(in) + noise.
	out, err := AddSymmetricGaussian(New(SeededSource(540)), in, sigma)
	if err != nil {
		t.Fatal(err)
	}
	noiseMatrix, err := SymmetricGaussianMatrix(New(SeededSource(540)), 3, sigma)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for j := range 3 {
			k, _ := GridIndex(in[i][j], g)
			if want := k*g + noiseMatrix[i][j]; out[i][j] != want || out[i][j] != out[j][i] {
				t.Errorf("out[%d][%d] = %v, want %v (symmetric)", i, j, out[i][j], want)
			}
			if in[i][j] != orig[i][j] {
				t.Errorf("input modified at (%d, %d)", i, j)
			}
		}
	}
	for name, m := range map[string][][]float64{
		"empty":         {},
		"ragged":        {{1, 2}, {2}},
		"not symmetric": {{1, 2}, {2.5, 1}},
		"NaN":           {{math.NaN()}},
	} {
		if r, err := AddSymmetricGaussian(New(SeededSource(1)), m, sigma); err == nil {
			t.Errorf("%s: AddSymmetricGaussian = %v, want an error", name, r)
		}
	}
}
