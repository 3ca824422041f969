package accountant

import "math"

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
func Epsilon(c Curve, delta float64) float64 {
	if math.IsNaN(delta) || delta < 0 || !c.valid() {
		return math.Inf(1)
	}
	if delta == 0 {
		for i := range numOrders {
			if c.entry(i) != 0 {
				return math.Inf(1)
			}
		}
		return 0
	}
	best := math.Inf(1)
	for i, a := range orders {
		r := c.entry(i)
		var eps float64
		switch {
		case r < 0:
			eps = 0
		case delta*delta+math.Expm1(-r) > 0:
			eps = 0
		case a > minConversionOrder:
			eps = r + math.Log1p(-1/a) - math.Log(delta*a)/(a-1)
		default:
			eps = math.Inf(1)
		}
		if eps < best {
			best = eps
		}
	}
	return math.Max(0, best)
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
