package accountant

import (
	"math"
	"sync/atomic"
)

// minConversionOrder is the smallest order at which the CKS conversion is
// used; below it the bound is numerically unstable (division by α−1) and
// useless anyway. The value is dp_accounting's (compute_epsilon,
// compute_delta).
const minConversionOrder = 1.01

// entry returns c's value at order index i for conversion, treating a nil
// curve as zero and NaN as +Inf: a NaN could only come from a bug, and
// reading it as "no guarantee" keeps the result conservative (dp_accounting
// would silently report 0 for NaN input).
func (c Curve) entry(i int) float64 {
	if c == nil {
		return 0
	}
	r := c[i]
	if math.IsNaN(r) {
		return math.Inf(1)
	}
	return r
}

// Epsilon converts an RDP curve to (ε, δ)-DP: it returns the smallest ε such
// that a mechanism with curve c is (ε, delta)-DP according to the bound of
// Canonne, Kamath & Steinke 2020 (Prop. 12; also Asoodeh et al. 2020, eq. 20),
// minimised over the orders:
//
//	ε = min over α of  r(α) + log1p(−1/α) − log(δ·α)/(α−1),
//
// exactly as dp_accounting's compute_epsilon evaluates it, including its edge
// cases, for each order α with RDP r = c(α):
//   - r < 0 (only possible through rounding) gives 0 at that order;
//   - δ² + expm1(−r) > 0 gives 0 at that order: by the Bretagnolle–Huber
//     inequality the total variation, which is the δ of (0, δ)-DP, is at
//     most sqrt(1 − e^{−KL}) ≤ sqrt(1 − e^{−r}) < δ, since r(α) ≥ KL for
//     α ≥ 1 (Rényi divergence is non-decreasing in α);
//   - α ≤ 1.01 gives +Inf (the bound is unstable there);
//   - otherwise the formula above.
//
// The result is the minimum over orders clamped below at 0. With delta = 0
// the result is 0 if the curve is identically 0 and +Inf otherwise (RDP
// never certifies pure DP). Conservative choices where dp_accounting would
// raise or misbehave: a negative or NaN delta, a curve of the wrong length,
// give +Inf; NaN entries count as +Inf. A nil curve is the zero curve.
//
// Guarantee and neighbouring relation: those of the curve (add/remove one
// unit for every curve in this package except randomized response).
// Proof sketch of the conversion (CKS 2020, Prop. 12): for α > 1, (α, r)-RDP
// implies (ε, δ)-DP with δ = e^{(α−1)(r−ε)}·(1 − 1/α)^{α−1}/α; solving for ε
// gives the formula above. Every order gives a valid (ε, δ) pair, so the
// minimum over orders is valid.
//
// Evaluation: the terms that depend only on α, and on α and δ, are
// precomputed (the latter cached for a few recent deltas), so a conversion
// costs two additions and a comparison per order and no logarithm; the
// floating-point operations are the same as evaluating the formula directly,
// so the result is too (see epsilonOf and the package documentation).
func Epsilon(c Curve, delta float64) float64 {
	if !c.valid() {
		return math.Inf(1)
	}
	if c == nil {
		return epsilonOf(&zeroOrders, delta)
	}
	return epsilonOf((*[numOrders]float64)(c), delta)
}

// zeroOrders is the zero curve as an array, what a nil [Curve] stands for. It
// is never written.
var zeroOrders [numOrders]float64

// epsilonOf is [Epsilon] of the curve c (its documentation holds, a NaN or
// negative delta giving +Inf). It evaluates the same expressions as the
// textbook loop (epsilonExact), in the same order, so its result is
// bit-identical to it (TestEpsilonFastMatchesReference), but without a
// logarithm per order:
//
//   - log1p(−1/α) depends on the order only and is precomputed once
//     (convLog1p);
//   - log(δ·α)/(α−1) depends on the order and δ and is precomputed once per
//     δ (convTable, cached for a few δ); the bound at an order is then
//     (r + convLog1p[i]) − t.logTerm[i], the same two roundings as
//     r + log1p(−1/α) − log(δ·α)/(α−1);
//   - the Bretagnolle–Huber test δ² + expm1(−r) > 0 is certainly false when
//     r > t.zeroAbove (see newConvTable). When every entry is above it — an
//     ordinary curve, every entry far above δ², and no NaN or negative entry
//     — the fast loop below needs neither expm1 nor the per-order case
//     analysis; otherwise epsilonExact runs the full case analysis (with the
//     same precomputed terms), evaluating the test as written.
func epsilonOf(c *[numOrders]float64, delta float64) float64 {
	if math.IsNaN(delta) || delta < 0 {
		return math.Inf(1)
	}
	if delta == 0 {
		for _, r := range c {
			if r != 0 { // NaN too: it reads as +Inf
				return math.Inf(1)
			}
		}
		return 0
	}
	t := convTableFor(delta)
	zeroAbove, logTerm := t.zeroAbove, &t.logTerm
	best := math.Inf(1)
	for i, r := range c {
		if !(r > zeroAbove) { // small, negative or NaN: the full case analysis
			return epsilonExact(c, delta, t)
		}
		// convLog1p is +Inf at an order where the bound is not used, which
		// gives +Inf there as the case analysis does (r is not −Inf and
		// logTerm is finite, delta being finite if zeroAbove is).
		if eps := r + convLog1p[i] - logTerm[i]; eps < best {
			best = eps
		}
	}
	if best <= 0 { // max(0, best), and −0 reads as 0
		return 0
	}
	return best
}

// epsilonExact is the loop of [Epsilon] as documented, case by case, with
// the order-only and δ-only terms read from the tables and the
// Bretagnolle–Huber test skipped where t.zeroAbove shows it false; delta > 0
// and t is its table. An order giving ε <= 0 ends the loop early: the result is
// clamped at 0, so no later order can change it.
func epsilonExact(c *[numOrders]float64, delta float64, t *convTable) float64 {
	best := math.Inf(1)
	for i, r := range c {
		if math.IsNaN(r) {
			r = math.Inf(1) // as Curve.entry
		}
		var eps float64
		switch {
		case r < 0:
			return 0
		case r <= t.zeroAbove && delta*delta+math.Expm1(-r) > 0:
			return 0
		case convertible[i]:
			eps = r + convLog1p[i] - t.logTerm[i]
		default:
			eps = math.Inf(1)
		}
		if eps <= 0 {
			return 0
		}
		if eps < best {
			best = eps
		}
	}
	return best
}

// convertible[i] reports whether the CKS bound is used at orders[i]
// (α > minConversionOrder), and convLog1p[i] is its δ-independent term
// log1p(−1/α) there (+Inf elsewhere, see epsilonOf). Both are computed once
// from the private orders.
var convertible, convLog1p = convOrderTerms()

func convOrderTerms() (conv [numOrders]bool, l [numOrders]float64) {
	for i, a := range orders {
		conv[i] = a > minConversionOrder
		if conv[i] {
			l[i] = math.Log1p(-1 / a)
		} else {
			l[i] = math.Inf(1)
		}
	}
	return conv, l
}

// convTable holds the δ-dependent constants of [Epsilon] for one δ > 0. It
// is immutable once built and shared between goroutines.
type convTable struct {
	delta float64
	// logTerm[i] is log(δ·α)/(α−1) at orders[i], exactly the expression of
	// the CKS bound (0 where the order is not convertible).
	logTerm [numOrders]float64
	// zeroAbove bounds the entries r for which the Bretagnolle–Huber test
	// δ² + expm1(−r) > 0 can hold: above it the test is false.
	zeroAbove float64
}

// newConvTable builds the table for delta > 0.
//
// zeroAbove: let u = fl(δ·δ) and T = −log(1 − u), the real threshold
// (δ² + expm1(−r) > 0 ⇔ r < T in exact arithmetic). zeroAbove = 4T, which
// leaves a wide margin: for r > 4T, e^{−r} < (1−u)⁴, so
// expm1(−r) < −u − (1−u)(1 − (1−u)³), a gap of about 3u for small u and at
// least 0.875(1−u) for u ≥ 1/2. math.Expm1 is accurate to within an ulp and
// T (from math.Log1p) to a few, relative errors near 1e-16, so while
// 1 − u > 1e-9 the gap is more than a million times the rounding and the
// computed test is false as well. For u within 1e-9 of 1, or above (δ ≥ 1,
// which Epsilon accepts), zeroAbove is +Inf and the test is always evaluated.
// u = 0 (δ² underflows) gives zeroAbove = 0: then the test can hold only at
// r = 0, and r = 0 ≤ 0 is evaluated.
func newConvTable(delta float64) *convTable {
	t := &convTable{delta: delta}
	for i, a := range orders {
		if convertible[i] {
			t.logTerm[i] = math.Log(delta*a) / (a - 1)
		}
	}
	u := delta * delta
	if u < 1-1e-9 {
		t.zeroAbove = 4 * -math.Log1p(-u)
	} else {
		t.zeroAbove = math.Inf(1)
	}
	return t
}

// convCacheSize is how many deltas keep a conversion table. A deployment
// converts at its budgets' deltas (and, with approx_dp charges, at those
// minus the charges' δ), a handful of values.
const convCacheSize = 16

// convCache holds recently used conversion tables. Slots are replaced
// round-robin; a lookup scans them. Tables are immutable and published with
// atomic stores, so any number of goroutines may convert at once; two that
// miss on the same delta build the same table twice, which is harmless.
var convCache struct {
	next  atomic.Uint32
	slots [convCacheSize]atomic.Pointer[convTable]
}

// convTableFor returns the table for delta > 0, building and caching it on
// a miss.
func convTableFor(delta float64) *convTable {
	for i := range convCache.slots {
		if t := convCache.slots[i].Load(); t != nil && t.delta == delta {
			return t
		}
	}
	t := newConvTable(delta)
	convCache.slots[convCache.next.Add(1)%convCacheSize].Store(t)
	return t
}

// Delta is the inverse of [Epsilon]: it returns the smallest δ such that a
// mechanism with curve c is (epsilon, δ)-DP according to the same bounds,
// exactly as dp_accounting's compute_delta evaluates them. For each order α
// with RDP r = c(α), in log space:
//
//	log δ_α = min( ½·log1p(−e^{−r}),                           (KL bound)
//	               (α−1)·(r − ε + log1p(−1/α)) − log α )         (CKS 2020, Prop. 12; α > 1.01 only)
//
// with log δ_α = −Inf when r ≤ 0; the result is min(1, e^{min over α}).
// A negative or NaN epsilon, or a curve of the wrong length, gives 1 (the
// vacuous guarantee) where dp_accounting would raise; NaN entries count as
// +Inf. A nil curve is the zero curve (δ = 0).
//
// Guarantee and neighbouring relation: those of the curve. Proof sketch:
// each term is a valid bound on δ at the given ε (the KL term because
// δ(ε) ≤ δ(0) = TV ≤ sqrt(1−e^{−KL}) ≤ sqrt(1−e^{−r}) by Bretagnolle–Huber,
// the other by CKS 2020, Prop. 12), so their minimum is.
func Delta(c Curve, epsilon float64) float64 {
	if math.IsNaN(epsilon) || epsilon < 0 || !c.valid() {
		return 1
	}
	best := math.Inf(1)
	for i, a := range orders {
		r := c.entry(i)
		var logDelta float64
		if r <= 0 {
			logDelta = math.Inf(-1)
		} else {
			logDelta = 0.5 * math.Log1p(-math.Exp(-r))
		}
		if a > minConversionOrder {
			bound := (a-1)*(r-epsilon+math.Log1p(-1/a)) - math.Log(a)
			logDelta = math.Min(logDelta, bound)
		}
		if logDelta < best {
			best = logDelta
		}
	}
	return math.Min(math.Exp(best), 1)
}
