package accountant

import "math"

// NumOrders is the number of RDP orders, len([Orders]): 99 fractional orders
// 1.1..10.9, 53 integer orders 11..63 and 128, 256, 512, 1024. It is the
// length of every valid [Curve] and of [Account.Curve].
const NumOrders = 99 + 53 + 4

// numOrders is NumOrders, the name the package's arithmetic uses.
const numOrders = NumOrders

// orders is the private copy of the RDP orders used by every computation, so
// that a caller modifying the exported [Orders] slice cannot corrupt the
// accounting.
var orders = buildOrders()

// Orders are dp_accounting's default RDP orders (DEFAULT_RDP_ORDERS in
// rdp_privacy_accountant.py): 1.1, 1.2, …, 10.9 (computed as 1 + x/10 so the
// float64 values are bit-identical to dp_accounting's), 11, 12, …, 63, and
// 128, 256, 512, 1024 — 156 orders in all. Curve[i] is the RDP epsilon at
// Orders[i].
//
// Orders is exported for reading (reports, metrics, tests). Modifying it has
// no effect on the accounting, which uses a private copy.
var Orders = ordersCopy()

func ordersCopy() []float64 {
	o := make([]float64, numOrders)
	copy(o, orders[:])
	return o
}

func buildOrders() [numOrders]float64 {
	var o [numOrders]float64
	i := 0
	for x := 1; x < 100; x++ {
		o[i] = 1 + float64(x)/10.0
		i++
	}
	for a := 11; a < 64; a++ {
		o[i] = float64(a)
		i++
	}
	for _, a := range []float64{128, 256, 512, 1024} {
		o[i] = a
		i++
	}
	return o
}

// Curve is an RDP curve: Curve[i] is the RDP epsilon ε(α) at α = Orders[i].
// A valid curve has exactly len(Orders) entries, each >= 0; +Inf at an order
// means "no guarantee at that order". A nil Curve is the zero curve (nothing
// spent). Curves are values: the methods below never modify their receiver
// or argument.
type Curve []float64

// ZeroCurve returns the curve of a mechanism that reveals nothing: ε(α) = 0 at
// every order. It is the identity of [Curve.Add].
func ZeroCurve() Curve { return make(Curve, numOrders) }

// infCurve is the curve of a mechanism with no RDP guarantee at any order. It
// is what the constructors return for invalid parameters, so that an invalid
// mechanism can never be admitted by a budget filter.
func infCurve() Curve {
	c := make(Curve, numOrders)
	for i := range c {
		c[i] = math.Inf(1)
	}
	return c
}

// valid reports whether c can be used in arithmetic: nil (the zero curve) or
// exactly one entry per order.
func (c Curve) valid() bool { return c == nil || len(c) == numOrders }

// wellFormed reports whether c is valid and every entry is >= 0 (not NaN).
// Curves built by this package always are; anything else is corrupt state.
func (c Curve) wellFormed() bool {
	if !c.valid() {
		return false
	}
	for _, v := range c {
		if !(v >= 0) {
			return false
		}
	}
	return true
}

// Add returns the curve of running the mechanisms of c and of o on the same
// data: ε(α) = c(α) + o(α) at every order (Mironov 2017, Prop. 1: RDP
// composes additively, also for adaptively chosen mechanisms). A nil curve
// acts as the zero curve. If either curve has the wrong length the result is
// +Inf at every order, so a malformed curve can only make the accountant
// more conservative, never less.
func (c Curve) Add(o Curve) Curve {
	if !c.valid() || !o.valid() {
		return infCurve()
	}
	out := ZeroCurve()
	for i := range out {
		if c != nil {
			out[i] += c[i]
		}
		if o != nil {
			out[i] += o[i]
		}
	}
	return out
}

// Scale returns the curve of the k-fold composition of the mechanism whose
// curve is c: ε(α) = k·c(α) (Mironov 2017, Prop. 1). k = 0 gives the zero
// curve. A negative or NaN k, or a curve of the wrong length, gives +Inf at
// every order (there is no meaningful guarantee to report).
func (c Curve) Scale(k float64) Curve {
	if !c.valid() || math.IsNaN(k) || k < 0 {
		return infCurve()
	}
	out := ZeroCurve()
	if c == nil || k == 0 {
		return out
	}
	for i := range out {
		out[i] = k * c[i]
	}
	return out
}

// positiveFinite reports whether x is a usable noise or privacy parameter.
func positiveFinite(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// GaussianCurve returns the RDP curve of the Gaussian mechanism with noise
// multiplier z = σ/Δ2, where σ is the standard deviation of the noise and Δ2
// the L2 sensitivity of the query: ε(α) = α/(2z²).
//
// Guarantee: (α, α/(2z²))-RDP at every order α > 1, under add/remove-one-unit
// neighbours when Δ2 bounds the change of the query from adding or removing
// all of one unit's events (SPEC.md section 0).
//
// Proof sketch (Mironov 2017, Prop. 7): D_α(N(μ, σ²) ‖ N(μ', σ²)) =
// α‖μ−μ'‖²/(2σ²), and ‖μ−μ'‖ ≤ Δ2 for neighbours, so ε(α) ≤ αΔ2²/(2σ²) =
// α/(2z²). This is dp_accounting's GaussianDpEvent
// (_compute_rdp_poisson_subsampled_gaussian with q = 1).
//
// z must be positive and finite; otherwise the curve is +Inf everywhere.
func GaussianCurve(z float64) Curve {
	if !positiveFinite(z) {
		return infCurve()
	}
	c := make(Curve, numOrders)
	for i, a := range orders {
		c[i] = a / (2 * z * z)
	}
	return c
}

// DiscreteGaussianCurve returns the RDP curve of the discrete Gaussian
// mechanism N_Z(0, σ²) added to an integer-valued query with L2 sensitivity
// Δ: ε(α) = ρ·α with ρ = Δ²/(2σ²).
//
// Guarantee: ρ-zCDP, hence (α, ρα)-RDP at every order, under add/remove-one-unit
// neighbours, provided every neighbouring change of the query is an integer
// vector of L2 norm at most Δ (for a one-dimensional query: an integer shift
// |n| ≤ Δ).
//
// Proof sketch (Canonne, Kamath & Steinke 2020, Prop. 5 and Thm. 4): for an
// integer shift n, α k² + (1−α)(k−n)² = (k−(1−α)n)² + α(1−α)n², so
// Σ_k P(k)^α Q(k)^{1−α} = e^{α(α−1)n²/(2σ²)} · θ((1−α)n)/θ(0), where
// θ(c) = Σ_k e^{−(k−c)²/(2σ²)} is maximised at c = 0; hence
// D_α ≤ αn²/(2σ²) ≤ αΔ²/(2σ²). dp_accounting's DiscreteGaussianDpEvent uses
// the same ρα (rdp_privacy_accountant.py). For the multivariate discrete
// Gaussian CKS 2020 Thm. 15 adds a small correction that this curve does
// not include: use one mechanism per coordinate (composition) or the
// continuous bound with care.
//
// The secure-noise path (SPEC.md section 2) adds discrete noise on a grid
// g: pass σ and Δ in the same units (value units, or grid steps) — only the
// ratio matters.
//
// sigma and sensitivity must be positive and finite; otherwise the curve is
// +Inf everywhere.
func DiscreteGaussianCurve(sigma, sensitivity float64) Curve {
	if !positiveFinite(sigma) || !positiveFinite(sensitivity) {
		return infCurve()
	}
	rho := sensitivity * sensitivity / (2.0 * sigma * sigma)
	return ZCDPCurve(rho)
}

// LaplaceCurve returns the RDP curve of the (continuous) Laplace mechanism
// with scale b added to a query with L1 sensitivity Δ1, where eps0 = Δ1/b.
// For α > 1 (Mironov 2017, Prop. 6):
//
//	ε(α) = (1/(α−1))·log( α/(2α−1)·e^{(α−1)ε0} + (α−1)/(2α−1)·e^{−αε0} )
//	     = ε0 + log1p( (α−1)·expm1((1−2α)ε0)/(2α−1) ) / (α−1),
//
// the second form being the numerically stable one dp_accounting uses
// (_laplace_rdp). It tends to ε0 as α → ∞ and is below ε0 at every finite
// order, which is why composing Laplace charges through RDP can beat plain
// ε-addition.
//
// Guarantee: (α, ε(α))-RDP, and ε0-DP, under add/remove-one-unit neighbours
// when Δ1 bounds the L1 change from adding or removing one unit's events.
//
// Proof sketch: by the triangle inequality the worst pair of output
// densities for a sensitivity-Δ1 query is Lap(0, b) against Lap(Δ1, b)
// per coordinate; integrating p^α q^{1−α} over (−∞, 0], [0, Δ1], [Δ1, ∞)
// gives the closed form above (Mironov 2017, Prop. 6, tight).
//
// The curve is NOT valid for the discrete Laplace (two-sided geometric)
// distribution: see [Mechanism] kind "discrete_laplace".
//
// eps0 must be positive and finite; otherwise the curve is +Inf everywhere.
func LaplaceCurve(eps0 float64) Curve {
	if !positiveFinite(eps0) {
		return infCurve()
	}
	c := make(Curve, numOrders)
	for i, a := range orders {
		c[i] = laplaceRDP(eps0, a)
	}
	return c
}

// laplaceRDP is Mironov 2017, Prop. 6 at one order a > 1, evaluated as
// dp_accounting's _laplace_rdp does: the log1p form for a >= 1.1 and, for
// 1 < a < 1.1 (never reached with the default [Orders], kept so the function
// is correct for any order), the Taylor series
// log1p(c·x)/x = c·Σ_{k≥1} (−c·x)^{k−1}/k with x = a−1, which converges fast
// because 0 ≤ −c·x ≤ 0.1.
func laplaceRDP(eps, a float64) float64 {
	c := math.Expm1(eps*(1-2*a)) / (2*a - 1)
	if a < 1.1 {
		v := -c * (a - 1)
		sum, pow := 0.0, 1.0
		for k := 1; k < 100; k++ {
			sum += pow / float64(k)
			pow *= v
		}
		return eps + c*sum
	}
	return eps + math.Log1p((a-1)*c)/(a-1)
}

// PureCurve returns the RDP curve valid for every mechanism that is pure
// eps0-DP, whatever its output distribution:
//
//	ε(α) = ( ε0·α + log(1 + e^{ε0(1−2α)}) − log(1 + e^{ε0}) ) / (α−1).
//
// This is the Rényi divergence between the two output distributions of
// binary randomized response with parameter ε0, (e^{ε0}, 1)/(1+e^{ε0}) and
// (1, e^{ε0})/(1+e^{ε0}). It is evaluated in the equivalent form
// ε0 + log1p( e^{−ε0}·expm1(−2ε0(α−1)) / (1+e^{−ε0}) ) / (α−1), which avoids
// the overflow of e^{ε0α} and keeps relative accuracy for small ε0.
//
// Guarantee: (α, ε(α))-RDP for any ε0-DP mechanism, under whatever
// neighbouring relation its ε0-DP guarantee is stated for (in dpstream:
// add/remove one unit).
//
// Proof sketch: every ε0-DP pair of output distributions is a
// post-processing of the binary randomized-response pair above (Kairouz, Oh
// & Viswanath 2015, operational characterisation of ε-DP), and Rényi
// divergence cannot increase under post-processing (data-processing
// inequality, van Erven & Harremoës 2014, Thm. 9), so the
// randomized-response divergence (Mironov 2017, randomized response
// proposition) bounds every ε0-DP mechanism; it is never above the trivial
// bound ε(α) ≤ ε0. It is dp_accounting's curve for EpsilonDeltaDpEvent with
// δ = 0. The curve is tight: binary randomized response, and the discrete
// Laplace mechanism with unit sensitivity, attain it.
//
// eps0 must be positive and finite; otherwise the curve is +Inf everywhere.
func PureCurve(eps0 float64) Curve {
	if !positiveFinite(eps0) {
		return infCurve()
	}
	c := make(Curve, numOrders)
	e := math.Exp(-eps0)
	for i, a := range orders {
		x := e * math.Expm1(-2*eps0*(a-1)) / (1 + e)
		c[i] = nonNegative(eps0 + math.Log1p(x)/(a-1))
	}
	return c
}

// ExponentialCurve returns the RDP curve of the exponential mechanism (and of
// report-noisy-max/min with Gumbel noise, which samples from the same
// distribution) run with privacy parameter eps0, i.e. a mechanism that is
// eps0-bounded-range:
//
//	ε(α) = min( ξ + α·eps0²/8, eps0 ),
//	ξ = eps0/expm1(eps0) − 1 − log(eps0/expm1(eps0)) − eps0²/8.
//
// Guarantee: (α, ε(α))-RDP under add/remove-one-unit neighbours when the
// utility's sensitivity is the one the mechanism was calibrated with, so that
// the mechanism is eps0-bounded-range: for neighbours the log-ratio of the
// output probabilities ranges in an interval of width at most eps0.
//
// Proof sketch (Cesar & Rogers 2021, arXiv:2004.07223, Section 3; also
// Durfee & Rogers 2019 for bounded range): an eps0-bounded-range mechanism
// has KL divergence at most y − 1 − log y with y = eps0/expm1(eps0) and is
// (eps0²/8)-zCDP, which together give the (ξ, ρ)-approximate-zCDP line
// ξ + ρα; being also eps0-DP, every order is at most eps0. This is
// dp_accounting's ExponentialMechanismDpEvent.
//
// Report-noisy-max with Laplace or exponential noise is eps0-DP but not
// covered by this derivation: charge it as "pure" (or "laplace" for
// permute-and-flip, whose privacy loss equals Laplace's).
//
// eps0 must be positive and finite; otherwise the curve is +Inf everywhere.
func ExponentialCurve(eps0 float64) Curve {
	if !positiveFinite(eps0) {
		return infCurve()
	}
	rho := eps0 * eps0 / 8
	// kl = y − 1 − log(y), y = eps0/expm1(eps0) ∈ (0, 1). For y close to 1
	// (small eps0) the direct form cancels; u − log1p(u) with u = y − 1 is
	// summed as a series instead (|u| < 0.1 ⇒ 60 terms are far past
	// float64 precision).
	u := eps0/math.Expm1(eps0) - 1
	var kl float64
	if math.Abs(u) < 0.1 {
		pow := u * u
		for k := 2; k < 60; k++ {
			kl += pow / float64(k)
			pow *= -u
		}
	} else {
		kl = u - math.Log1p(u)
	}
	xi := kl - rho
	c := make(Curve, numOrders)
	for i, a := range orders {
		c[i] = nonNegative(math.Min(xi+rho*a, eps0))
	}
	return c
}

// RandomizedResponseCurve returns the RDP curve of symmetric k-ary
// randomized response with noise parameter p (SPEC.md section 4.4): report
// the true category with probability 1 − p + p/k and each other category
// with probability p/k. With L = log(k/p − k + 1) = log((1−p+p/k)/(p/k)):
//
//	ε(α) = (1/(α−1))·log( (p/k)·e^{αL} + (1−p+p/k)·e^{−αL} + (1 − 2/k)·p ).
//
// Guarantee: (α, ε(α))-RDP and L-DP under REPLACE-ONE neighbours (one unit's
// category changed to another), which is the natural relation for local
// randomization at the producer. It is not an add/remove guarantee; see the
// note on mixing relations in [Mechanism].
//
// Proof sketch: replacing one input changes the output distribution from
// P = (1−p+p/k, p/k, …, p/k) to Q = (p/k, 1−p+p/k, p/k, …, p/k); the k−2
// unaffected categories contribute (k−2)p/k to Σ P^α Q^{1−α}, and the two
// swapped ones contribute (1−p+p/k)^α(p/k)^{1−α} + (p/k)^α(1−p+p/k)^{1−α},
// which is the expression above (dp_accounting,
// _randomized_response_rdp_replace_one). The log-sum-exp is evaluated
// stably.
//
// p must be in (0, 1] and k >= 2; otherwise the curve is +Inf everywhere.
// p = 1 (output independent of the input) gives the zero curve.
func RandomizedResponseCurve(p float64, k int) Curve {
	if !(p > 0 && p <= 1) || k < 2 {
		return infCurve()
	}
	if p == 1 {
		return ZeroCurve()
	}
	kf := float64(k)
	l := math.Log(kf/p - kf + 1)
	w1, w2, w3 := p/kf, 1-p+p/kf, (1-2/kf)*p
	c := make(Curve, numOrders)
	for i, a := range orders {
		// log(w1·e^{aL} + w2·e^{−aL} + w3), factoring out e^{aL} (aL > 0).
		m := a * l
		s := w1 + w2*math.Exp(-2*m) + w3*math.Exp(-m)
		c[i] = nonNegative((m + math.Log(s)) / (a - 1))
	}
	return c
}

// ZCDPCurve returns the RDP curve of a ρ-zero-concentrated-DP mechanism:
// ε(α) = ρ·α.
//
// Guarantee: ρ-zCDP is by definition (α, ρα)-RDP for every α > 1 (Bun &
// Steinke 2016, Def. 1.1), under whatever neighbouring relation the ρ-zCDP
// statement uses (in dpstream: add/remove one unit). For example the
// Gaussian mechanism with noise multiplier z is 1/(2z²)-zCDP (Bun & Steinke
// 2016, Prop. 1.6). This is dp_accounting's ZCDpEvent with ξ = 0.
//
// rho must be positive and finite; otherwise the curve is +Inf everywhere.
func ZCDPCurve(rho float64) Curve {
	if !positiveFinite(rho) {
		return infCurve()
	}
	c := make(Curve, numOrders)
	for i, a := range orders {
		c[i] = rho * a
	}
	return c
}

// nonNegative clamps rounding noise below zero to zero. RDP is a divergence
// and never negative; tiny negative values can only come from cancellation
// in the closed forms.
func nonNegative(x float64) float64 {
	if x < 0 {
		return 0
	}
	return x
}
