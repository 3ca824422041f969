package aggregate

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// QuantumBits fixes the resolution of sums: a sum or mean release quantizes
// every value to an integer number of quanta of magnitude at most
// 2^QuantumBits (see Quantizer), so that the statistic can be accumulated
// and merged exactly in int64.
const QuantumBits = 30

// MaxSumEvents is the number of kept events per window (over all partitions
// together) up to which an int64 sum of quantized values provably cannot
// overflow: every quantized value has magnitude at most 2^QuantumBits, and
// MaxSumEvents·2^30 = 2^63 − 2^30 < 2^63. The same bound holds for every
// partial sum in any order, so checked additions never fail below it. Above
// it the accumulate and release stages stop with an error instead of
// releasing (see Stats.Merge): wrapping or saturating would release a
// statistic whose sensitivity is not the calibrated one.
const MaxSumEvents = 1<<(63-QuantumBits) - 1

// Quantizer is the fixed-point representation of the values of one sum or
// mean release. Floating-point sums are not exact: the computed sum of
// neighbouring windows can differ by more than L·max(|Lo|, |Hi|), by up to
// about n·|S|·2^-53, and depends on the order of summation (Casacuberta,
// Shoemate, Vadhan & Wagaman 2022, "Widespread Underestimation of
// Sensitivity in Differentially Private Libraries and How to Fix It", CCS).
// dpstream therefore maps each clamped value to an integer k with Units and
// sums the integers, which is exact and independent of order, and releases
// that integer (Release).
//
// The map is
//
//	k(v) = ⌊fl(clamp(v, Lo, Hi) − c)/q + 1/2⌋
//
// with c = 0 for a sum and c = Midpoint(Lo, Hi) for a mean (its centered
// sum), fl the float64 subtraction (exact for c = 0) and q = Quantum(), a
// power of two. Ties round up (towards +∞). The quantum depends on the
// bounds only: with X = max(|fl(Lo − c)|, |fl(Hi − c)|) and e the smallest
// integer with 2^e ≥ X, q = 2^(e − 30) (or 2^-1074, the smallest float64,
// if that is larger), so |k| ≤ 2^30 and each value moves by at most
// q/2 < 2^-30·X. The division by q is exact (a power of
// two) unless the quotient is below 2^-1022, where k = 0 either way, and
// the rounding is computed exactly, so k is an exact function of
// fl(v − c).
//
// Sensitivity: k is non-decreasing in v (clamping, a correctly rounded
// subtraction of a constant, division by a positive constant and
// ⌊· + 1/2⌋ all are), so on [Lo, Hi] it lies in [k(Lo), k(Hi)] and
// |k| ≤ MaxUnits() = max(|k(Lo)|, |k(Hi)|), attained at a bound. Adding or
// removing a privacy unit with at most L kept events therefore moves the
// integer sum Σk by at most L·MaxUnits(), exactly; Calibrate uses that.
// The map is the same function on both sides of the comparison, so the
// floating-point subtraction cannot make the bound wrong, only the values
// it is applied to slightly inexact: it is exact when 0 < Lo and Hi ≤ 3·Lo
// (or Lo ≥ 3·Hi with Hi < 0; Sterbenz's lemma), and otherwise the bounds
// are wide relative to their magnitude and its error is below 2^-20 of a
// quantum.
//
// Centering with a midpoint computed in floating point, rather than
// quantizing v and c with the sum's quantum and subtracting integers, keeps
// the mean's resolution relative to the width of [Lo, Hi] instead of
// max(|Lo|, |Hi|): for bounds far from 0 and close together (timestamps,
// say) the latter would be coarser by a factor of up to 2^52.
//
// The zero Quantizer is not usable; build one with NewQuantizer or
// Spec.Quantizer.
type Quantizer struct {
	lo, hi   float64
	center   float64
	quantum  float64
	maxUnits int64
}

// NewQuantizer returns the quantizer of a sum (kind KindSum) or of a mean's
// centered sum (KindMean) on bounds [lo, hi]. It returns an error for any
// other kind, or bounds that are not finite with lo < hi and a finite width.
// The accumulate stage and Calibrate both build theirs with this function,
// so the units they agree on depend on the configuration only.
func NewQuantizer(kind Kind, lo, hi float64) (Quantizer, error) {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) || math.IsInf(hi-lo, 0) {
		return Quantizer{}, fmt.Errorf("quantizer: bounds [%v, %v] must be finite with lo < hi and a finite width", lo, hi)
	}
	z := Quantizer{lo: lo, hi: hi}
	switch kind {
	case KindSum:
	case KindMean:
		// Midpoint lies in [lo, hi] (a monotone rounding of a point of the
		// interval), so both differences below are at most the finite width
		// and they are not both zero.
		z.center = Midpoint(lo, hi)
	default:
		return Quantizer{}, fmt.Errorf("quantizer: kind %q has no sum to quantize (want sum or mean)", kind)
	}
	x := math.Max(math.Abs(lo-z.center), math.Abs(hi-z.center)) // > 0
	e := ceilLog2(x)
	z.quantum = math.Ldexp(1, max(e-QuantumBits, noise.MinGridExp))
	z.maxUnits = max(noise.AbsInt64(z.index(lo)), noise.AbsInt64(z.index(hi)))
	return z, nil
}

// Quantizer returns the quantizer of a sum or mean spec; see NewQuantizer.
func (s Spec) Quantizer() (Quantizer, error) {
	return NewQuantizer(s.Kind, s.Lo, s.Hi)
}

// Quantum returns q, the value of one unit: a power of two that depends on
// the bounds only.
func (z Quantizer) Quantum() float64 { return z.quantum }

// Center returns the value subtracted before quantizing: 0 for a sum,
// Midpoint(Lo, Hi) for a mean, which adds it back.
func (z Quantizer) Center() float64 { return z.center }

// MaxUnits returns max |Units(v)| over all v, attained at Lo or Hi: the
// per-event sensitivity of the integer sum, at most 2^QuantumBits.
func (z Quantizer) MaxUnits() int64 { return z.maxUnits }

// Units returns k(v) = ⌊fl(clamp(v, Lo, Hi) − Center())/Quantum() + 1/2⌋
// (see Quantizer). The accumulate stage clamps and counts the clamps
// itself; Units clamps again so that |Units(v)| ≤ MaxUnits() holds for every
// input. It returns an error for NaN and for a zero Quantizer.
func (z Quantizer) Units(v float64) (int64, error) {
	if z.quantum == 0 {
		return 0, fmt.Errorf("quantize %v: zero Quantizer (build it with NewQuantizer)", v)
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("quantize: value is NaN")
	}
	return z.index(math.Max(z.lo, math.Min(v, z.hi))), nil
}

// index quantizes v ∈ [lo, hi]. y = fl(v − c)/q has |y| ≤ 2^30, so y − ⌊y⌋
// and ⌊y⌋ + 1 are exact and the conversion to int64 is exact.
func (z Quantizer) index(v float64) int64 {
	y := (v - z.center) / z.quantum
	k := math.Floor(y)
	if y-k >= 0.5 {
		k++
	}
	return int64(k)
}

// ceilLog2 returns the smallest integer e with 2^e ≥ x, for finite x > 0,
// from the exponent of x (exact).
func ceilLog2(x float64) int {
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac in [0.5, 1)
	if frac == 0.5 {
		return exp - 1
	}
	return exp
}
