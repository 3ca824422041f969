package continual

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"sync"
)

// fixedBits is F, the fractional bits of the fixed-point factor Ĉ of sqrt
// and blt: ĉ_j = round(c_j·2^F), so Ĉ = γ·(ĉ_{t−s}) with γ = 2^−F.
//
// Why 24. Quality: rounding moves each coefficient by at most 2^−25
// against c_j ≥ 1/√(π·T) ≥ 0.003 (sqrt at T = 2^15), and the worst
// window's variance at equal ρ differs from the unrounded factor's by a
// relative 2e-13 (sqrt) and 2e-9 (blt) at T = 1024 (TestFixedPointQuality).
// Range: |ĉ_j| ≤ 2^25 (build checks it), so the exact Ĉx/γ of any int64
// data over T ≤ 2^15 windows stays below 2^103 and fits the releaser's
// 128-bit arithmetic (int128): F costs no data range. Noise: the
// discrete Gaussian sampler takes lattice scales σ/γ up to 2^50, so σ ≤
// 2^26 in real units. A smaller F buys σ range (2^(24−F) more) for
// quality: measured at T = 1024, F = 20 moves the max variance by 5e-11
// (sqrt) and 4e-8 (blt), F = 16 by 1e-8 and 1e-7 — still negligible, so a
// kind that needs σ > 2^26 can lower F here without touching anything
// else; 24 keeps the factor indistinguishable from the analysed one.
const fixedBits = 24

// grid is γ = 2^−fixedBits.
const grid = 1.0 / (1 << fixedBits)

// factor is the fixed-point factorization of sqrt or blt for a horizon:
// data-independent and deterministic, so it is cached.
type factor struct {
	blt    bltParams
	cInt   []int64   // ĉ_j
	coef   []float64 // ĉ_j·γ, exact
	bTilde []float64 // prefix sums of the series inverse of ĉ: B̂'s coefficients times γ
	cumC2  []float64 // Σ_{m≤t} (ĉ_m·γ)²
	cumB2  []float64 // Σ_{m≤t} (bTilde_m/γ)²
	cumI2  []float64 // Σ_{m≤t} (inv_m/γ)²: the increments' B̂_t − B̂_{t−1}
}

var factorCache sync.Map // factorKey → *factor

type factorKey struct {
	m Method
	t int
}

// cachedFactor returns the factor of method m (Sqrt or BLT) for horizon n.
func cachedFactor(m Method, n int) (*factor, error) {
	if v, ok := factorCache.Load(factorKey{m, n}); ok {
		return v.(*factor), nil
	}
	var c []float64
	f := &factor{}
	switch m {
	case Sqrt:
		c = sqrtCoefficients(n)
	case BLT:
		b, err := cachedFitBLT(n, bltBuffers)
		if err != nil {
			return nil, err
		}
		f.blt = b
		_, c = bltCoefficients(b, n)
	default:
		return nil, fmt.Errorf("continual: %s has no fixed-point factor", m)
	}
	if err := f.build(m, c); err != nil {
		return nil, err
	}
	v, _ := factorCache.LoadOrStore(factorKey{m, n}, f)
	return v.(*factor), nil
}

// build rounds c to the grid and derives B̂ = A·Ĉ⁻¹ and the norms.
func (f *factor) build(m Method, c []float64) error {
	n := len(c)
	f.cInt, f.coef = make([]int64, n), make([]float64, n)
	var sq uint64 // Σ ĉ_j², checked below 2^53 so every Gram sum is exact
	for j, v := range c {
		r := math.Round(v * (1 << fixedBits))
		if math.IsNaN(r) || math.Abs(r) > 1<<(fixedBits+1) {
			return fmt.Errorf("continual: %s coefficient c_%d = %v outside the fixed-point range", m, j, v)
		}
		f.cInt[j] = int64(r)
		f.coef[j] = r * grid
		hi, lo := bits.Mul64(uint64(abs64(f.cInt[j])), uint64(abs64(f.cInt[j])))
		var carry uint64
		sq, carry = bits.Add64(sq, lo, 0)
		if hi != 0 || carry != 0 || sq >= 1<<53 {
			return fmt.Errorf("continual: %s factor's Σĉ² reaches 2^53 at coefficient %d", m, j)
		}
	}
	if f.cInt[0] <= 0 {
		return fmt.Errorf("continual: %s factor has ĉ_0 = %d, not invertible", m, f.cInt[0])
	}
	// Series inverse of ĉ: r_0 = 1/ĉ_0, r_t = −(Σ_{m=1..t} ĉ_m·r_{t−m})/ĉ_0.
	// Float64 here is post-processing (it shapes only the totals'
	// accuracy); float64(·) around each product forbids FMA fusion, so
	// the result is the same on every platform.
	inv := make([]float64, n)
	c0 := float64(f.cInt[0])
	inv[0] = 1 / c0
	for t := 1; t < n; t++ {
		var s float64
		for mm := 1; mm <= t; mm++ {
			s += float64(float64(f.cInt[mm]) * inv[t-mm])
		}
		inv[t] = -s / c0
	}
	f.bTilde = make([]float64, n)
	f.cumC2, f.cumB2, f.cumI2 = make([]float64, n), make([]float64, n), make([]float64, n)
	var pre, sc, sb, si float64
	for t := 0; t < n; t++ {
		pre += inv[t]
		f.bTilde[t] = pre
		b := pre / grid
		sc += float64(f.coef[t] * f.coef[t])
		sb += float64(b * b)
		f.cumC2[t], f.cumB2[t] = sc, sb
		d := inv[t] / grid
		si += float64(d * d)
		f.cumI2[t] = si
	}
	return nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Fingerprint identifies the plan's factor: a hash of the method, the
// horizon, F and every integer coefficient ĉ_j. A ledger that logs (x, z)
// for replay stores it with the log and refuses to replay under another
// fingerprint: blt's fit uses math.Exp, whose last bit may differ between
// platforms and Go versions, and a different ĉ would replay to different
// totals. (B̂ is a deterministic function of ĉ.)
func (p *Plan) Fingerprint() string {
	h := sha256.New()
	var b [8]byte
	fmt.Fprintf(h, "%s/%d/%d/", p.method, p.t, fixedBits)
	for _, v := range p.cInt {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// int128 is a two's-complement 128-bit integer: the representation of
// the released w and of every exact sum of x or w in Releaser.
//
// Range. No sum here comes near 2^127, so the operations below wrap
// never: per_window's Σw has at most 2^20 terms |x + z| ≤ 2^64 (< 2^84);
// a tree block's data sum at most 2^20 terms |x| ≤ 2^63 (< 2^83), its w
// below 2^84, and a total at most 21 blocks (< 2^89); sqrt and blt's
// (Ĉx)_t/γ at most 2^15 terms |ĉ_j·x_s| ≤ 2^25·2^63 (build bounds |ĉ_j|
// by 2^(F+1)), below 2^103, and w below 2^104.
type int128 struct{ hi, lo uint64 }

// i128 returns v as an int128.
func i128(v int64) int128 { return int128{hi: uint64(v >> 63), lo: uint64(v)} }

// add returns a + b (no overflow in the ranges above).
func (a int128) add(b int128) int128 {
	var carry uint64
	a.lo, carry = bits.Add64(a.lo, b.lo, 0)
	a.hi, _ = bits.Add64(a.hi, b.hi, carry)
	return a
}

// mulAdd returns a + u·v, u and v int64 (no overflow in the ranges above).
func (a int128) mulAdd(u, v int64) int128 {
	hi, lo := bits.Mul64(uint64(abs64(u)), uint64(abs64(v))) // abs of MinInt64 is 2^63 as uint64
	if (u < 0) != (v < 0) && (hi|lo) != 0 {
		var borrow uint64
		lo, borrow = bits.Sub64(0, lo, 0)
		hi, _ = bits.Sub64(0, hi, borrow)
	}
	var carry uint64
	a.lo, carry = bits.Add64(a.lo, lo, 0)
	a.hi, _ = bits.Add64(a.hi, hi, carry)
	return a
}

// neg returns −a.
func (a int128) neg() int128 {
	var borrow uint64
	a.lo, borrow = bits.Sub64(0, a.lo, 0)
	a.hi, _ = bits.Sub64(0, a.hi, borrow)
	return a
}

// float64 returns a correctly rounded to float64 (to nearest, ties to
// even, as Go's own integer conversions): exact below 2^53 in magnitude,
// and a deterministic function of a, the same on every platform.
func (a int128) float64() float64 {
	if a.hi == uint64(int64(a.lo)>>63) { // a fits int64
		return float64(int64(a.lo))
	}
	neg := int64(a.hi) < 0
	if neg {
		a = a.neg()
	}
	if a.hi == 0 {
		if neg {
			return -float64(a.lo)
		}
		return float64(a.lo)
	}
	// |a| ≥ 2^64: keep its top 64 bits, folding the bits shifted out into
	// the lowest one (a sticky bit). The 64 kept bits are 11 more than
	// float64's 53, so the sticky bit decides ties and nothing else, and
	// the conversion of the 64 bits rounds exactly as the 128 would.
	shift := uint(bits.Len64(a.hi)) // 1…64 bits move out of the top word
	m := a.hi<<(64-shift) | a.lo>>shift
	if a.lo&(1<<shift-1) != 0 {
		m |= 1
	}
	f := math.Ldexp(float64(m), int(shift)) // exact: a power of two
	if neg {
		return -f
	}
	return f
}
