package noise

import (
	"fmt"
	"math"
	"math/big"
)

// GridBits fixes the granularity: g is the smallest power of two at least
// scale·2^−GridBits, so the noise scale is between 2^39 and 2^40 grid steps
// and the grid is far finer than the noise (SPEC section 2).
const GridBits = 40

// MinGridExp is the exponent of the smallest positive float64, 2^−1074. A
// grid finer than that cannot be represented.
const MinGridExp = -1074

// Granularity returns the grid step g the granularity method uses for a
// noise scale (Laplace b or Gaussian σ): the smallest power of two with
// g ≥ scale·2^−40, so scale/g is in (2^39, 2^40]. It is computed from the
// exponent of scale alone and is exact. It returns an error when scale is
// not finite and positive, or so small (below about 2^−1034) that g would
// be finer than the smallest float64.
func Granularity(scale float64) (float64, error) {
	if !ValidScale(scale) {
		return 0, fmt.Errorf("granularity: scale %v is not finite and positive", scale)
	}
	frac, exp := math.Frexp(scale) // scale = frac·2^exp, frac in [0.5, 1)
	// scale·2^−40 = frac·2^(exp−40) lies in [2^(exp−41), 2^(exp−40)), and
	// equals the lower end exactly when frac = 0.5.
	k := exp - GridBits
	if frac == 0.5 {
		k--
	}
	if k < MinGridExp {
		return 0, fmt.Errorf("granularity: scale %v is too small: its grid step 2^%d is not representable", scale, k)
	}
	return math.Ldexp(1, k), nil
}

// GridIndex returns k = ⌊x/g + 1/2⌋, the index of the grid point nearest
// to x with ties rounded up, as an exactly integral float64. x/g is exact
// (g is a power of two; if it underflows, x/g is far below 1/2 and k = 0
// either way), and so are y − ⌊y⌋ and ⌊y⌋ + 1 below 2^53; above 2^52 every
// float64 is an integer and k = y.
func GridIndex(x, g float64) (float64, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("value %v is not finite", x)
	}
	y := x / g
	if math.IsInf(y, 0) {
		return 0, fmt.Errorf("value %v is too large for the grid step %v", x, g)
	}
	k := math.Floor(y)
	if y-k >= 0.5 {
		k++
	}
	return k, nil
}

// onGrid returns g·(k + z) for an integral k, with k + z computed exactly
// (int64 or math/big) and then rounded to float64 (nearest, ties to even).
// The result depends on k and z only through the exact integer k + z, so
// it is a post-processing of the discrete mechanism's output, and it is an
// integer multiple of g (every float64 of magnitude ≥ 2^53 is an integer).
// Multiplying by the power of two g is exact unless it overflows, which is
// an error.
func onGrid(k float64, z int64, g float64) (float64, error) {
	var s float64
	sum, ok := int64(0), false
	if math.Abs(k) < 1<<62 {
		sum, ok = AddInt64(int64(k), z)
	}
	if ok {
		s = float64(sum)
	} else {
		bk, _ := new(big.Float).SetFloat64(k).Int(nil) // exact: k is integral
		bk.Add(bk, big.NewInt(z))
		s, _ = new(big.Float).SetInt(bk).Float64()
	}
	out := s * g
	if math.IsInf(out, 0) || out/g != s {
		return 0, fmt.Errorf("noisy value %v × grid %v is not representable", s, g)
	}
	return out, nil
}

// AddLaplace releases value + Laplace-like noise of scale b by the
// granularity method (SPEC section 2): with g = Granularity(b), the value
// is rounded to the nearest multiple of g (ties up), and g·Z is added with
// Z from the exact discrete Laplace of scale t = b/g. The result is an
// exact multiple of g and depends on value only through its grid index,
// so none of its low-order bits depend on the input (the floating-point
// attack of Mironov 2012 does not apply).
//
// Guarantee, add/remove one privacy unit: if value = f(D) and
// |f(D) − f(D')| ≤ Δ for neighbours, the output is ε-DP with
// ε = g·⌈Δ/g⌉/b ≤ (Δ + g)/b. Sketch: the grid index ⌊x/g + 1/2⌋ is
// non-decreasing in x and ⌊u + d⌋ − ⌊u⌋ ≤ ⌈d⌉, so the indices of
// neighbours differ by an integer n ≤ ⌈Δ/g⌉; the discrete Laplace of scale t
// has P(k)/P(k − n) ≤ e^{n/t}, and everything after is post-processing.
// The rounded statistic therefore has sensitivity g·⌈Δ/g⌉ on the value
// scale: the SPEC's Δ + g is a valid, very slightly looser, bound (rounding
// moves each neighbour by at most g/2), and g·⌈Δ/g⌉ = Δ when Δ is a
// multiple of g.
//
// The guarantee needs Δ to bound the difference of the computed value,
// floating-point error included: a float64 sum of n values differs from
// the exact sum by up to about n·|S|·2^-53 (Casacuberta et al. 2022), so
// neighbouring computed sums can differ by more than L·max(|Lo|, |Hi|).
// Release therefore does not use this function for sums; it releases
// exact fixed-point integers instead (Quantizer, Calibrate).
//
// Errors: n nil, b not a valid scale (see Granularity and Noise), value
// not finite, a failed draw, or an overflowing result.
func AddLaplace(n Sampler, value, b float64) (float64, error) {
	return addOnGrid(n, value, b, false)
}

// AddGaussian is AddLaplace with discrete Gaussian noise: value rounded to
// the grid g = Granularity(sigma), plus g·Z with Z ~ N_Z(0, (σ/g)²). The
// result is an exact multiple of g.
//
// Guarantee, add/remove one privacy unit: with |f(D) − f(D')| ≤ Δ the grid
// indices of neighbours differ by an integer n ≤ ⌈Δ/g⌉ (see AddLaplace),
// so the output is ρ-zCDP with ρ = (g·⌈Δ/g⌉)²/(2σ²) (CKS 2020, Thm. 4) and
// (ε, δ)-DP with δ = DiscreteGaussianDelta(ε, σ/g, ⌈Δ/g⌉) (CKS 2020,
// Thm. 7).
func AddGaussian(n Sampler, value, sigma float64) (float64, error) {
	return addOnGrid(n, value, sigma, true)
}

// addOnGrid implements AddLaplace and AddGaussian.
func addOnGrid(n Sampler, value, scale float64, gaussian bool) (float64, error) {
	name := "laplace"
	if gaussian {
		name = "gaussian"
	}
	if n == nil {
		return 0, fmt.Errorf("add %s noise: nil noise", name)
	}
	g, err := Granularity(scale)
	if err != nil {
		return 0, fmt.Errorf("add %s noise: %w", name, err)
	}
	k, err := GridIndex(value, g)
	if err != nil {
		return 0, fmt.Errorf("add %s noise: %w", name, err)
	}
	var z int64
	if gaussian {
		z, err = n.DiscreteGaussian(scale / g)
	} else {
		z, err = n.DiscreteLaplace(scale / g)
	}
	if err != nil {
		return 0, fmt.Errorf("add %s noise: %w", name, err)
	}
	out, err := onGrid(k, z, g)
	if err != nil {
		return 0, fmt.Errorf("add %s noise: %w", name, err)
	}
	return out, nil
}

// MaxMatrixDim is the largest d SymmetricGaussianMatrix and
// AddSymmetricGaussian accept (d(d+1)/2 ≈ 8.4 million draws).
const MaxMatrixDim = 4096

// SymmetricGaussianMatrix returns a d×d symmetric noise matrix for
// regression statistics such as XᵀX (SPEC section 4.5): the d(d+1)/2
// entries on and above the diagonal are independent AddGaussian(n, 0, σ)
// draws, g·N_Z(0, (σ/g)²) with g = Granularity(σ), and the lower triangle
// mirrors them. Every entry is an exact multiple of g.
//
// Adding this matrix to an unrounded statistic would bring back
// input-dependent low-order bits; to release a statistic use
// AddSymmetricGaussian, which rounds it to the same grid first.
func SymmetricGaussianMatrix(n Sampler, d int, sigma float64) ([][]float64, error) {
	if d < 1 || d > MaxMatrixDim {
		return nil, fmt.Errorf("symmetric gaussian matrix: dimension %d not in [1, %d]", d, MaxMatrixDim)
	}
	return AddSymmetricGaussian(n, zeroMatrix(d), sigma)
}

// AddSymmetricGaussian releases a symmetric d×d statistic m (such as XᵀX)
// with independent discrete Gaussian noise on each entry on and above the
// diagonal, by the granularity method (AddGaussian), mirrored below it, so
// the result is symmetric and on the grid g = Granularity(σ). m must be
// square, finite and exactly symmetric; it is not modified.
//
// Guarantee, add/remove one privacy unit: let u be the vector of the
// k = d(d+1)/2 upper-triangle entries and Δ₂ a bound on ‖u(D) − u(D')‖₂
// (the Frobenius sensitivity of m bounds it, since u holds each entry at
// most once). Entry i's grid index moves by an integer n_i ≤ ⌈|Δu_i|/g⌉ <
// |Δu_i|/g + 1, so ‖n‖₂ ≤ Δ₂/g + √k by the triangle inequality, and the
// independent coordinates compose to ρ-zCDP with
// ρ = (Δ₂ + g·√k)²/(2σ²) (CKS 2020, Thm. 4, summed over coordinates).
// Calibrate such a release with Δ₂ + g·√k; the lower triangle is
// post-processing.
func AddSymmetricGaussian(n Sampler, m [][]float64, sigma float64) ([][]float64, error) {
	d := len(m)
	if d < 1 || d > MaxMatrixDim {
		return nil, fmt.Errorf("add symmetric gaussian: dimension %d not in [1, %d]", d, MaxMatrixDim)
	}
	for i, row := range m {
		if len(row) != d {
			return nil, fmt.Errorf("add symmetric gaussian: row %d has %d entries, want %d", i, len(row), d)
		}
		for j := 0; j < i; j++ {
			if row[j] != m[j][i] {
				return nil, fmt.Errorf("add symmetric gaussian: entry (%d, %d) = %v differs from (%d, %d) = %v", i, j, row[j], j, i, m[j][i])
			}
		}
	}
	out := zeroMatrix(d)
	for i := range d {
		for j := i; j < d; j++ {
			v, err := AddGaussian(n, m[i][j], sigma)
			if err != nil {
				return nil, fmt.Errorf("add symmetric gaussian: entry (%d, %d): %w", i, j, err)
			}
			out[i][j], out[j][i] = v, v
		}
	}
	return out, nil
}

// zeroMatrix returns a d×d matrix of zeros backed by one allocation.
func zeroMatrix(d int) [][]float64 {
	backing := make([]float64, d*d)
	m := make([][]float64, d)
	for i := range m {
		m[i] = backing[i*d : (i+1)*d : (i+1)*d]
	}
	return m
}
