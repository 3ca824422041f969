package noise

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// This file calibrates the discrete noise: the (ε, δ) curve of the discrete
// Gaussian, σ from (ε, δ), and the moments and quantiles of both discrete
// distributions that releases report.

// DiscreteGaussianExactMaxSigma is the largest σ for which DiscreteGaussianDelta and the
// moment helpers sum the pmf term by term (about 20σ terms); above it they
// use the continuous formulas with a rigorous correction of relative size
// O(1/σ²).
const DiscreteGaussianExactMaxSigma = 1024

// dgRoundingMargin is the relative margin added to computed δ values to
// cover floating-point rounding in the sums (at most about 1e5 terms, each
// rounded to 2^-53 relative).
const dgRoundingMargin = 1e-10

// DiscreteGaussianDelta returns δ(ε) for the discrete Gaussian mechanism
// q(D) + N_Z(0, σ²) when q is integer-valued and neighbouring inputs
// (add/remove one privacy unit) change q by an integer of absolute value
// at most sensitivity = Δ ≥ 1: the mechanism is (ε, δ)-DP for the returned
// δ, which is an upper bound and tight (to about 1e-9 relative for σ ≤ 1024,
// and to O(1/σ²) relative above).
//
// Source: Canonne, Kamath & Steinke 2020, Theorem 7: for a shift of
// exactly Δ, with Y ~ N_Z(0, σ²),
//
//	δ = P[Y > εσ²/Δ − Δ/2] − e^ε·P[Y > εσ²/Δ + Δ/2]
//	  = Σ_{y > εσ²/Δ − Δ/2} (p(y) − e^ε·p(y + Δ)),
//
// the hockey-stick divergence, whose optimal set {y: p(y)/p(y + Δ) > e^ε}
// is that half-line. Smaller shifts n < Δ are no worse: the optimal set
// for any shift is a half-line {y ≤ s} (or its mirror), and
// F(s) − e^ε·F(s − n), with F the CDF of N_Z(0, σ²), grows with n for every
// s, so δ_n ≤ δ_Δ. Both directions give the same value by symmetry.
//
// For σ ≤ 1024 the sum is evaluated term by term, with an explicit bound
// on the truncated tail added, and the normalizer truncated (a lower bound),
// so the result is an upper bound up to floating-point rounding, which a
// relative 1e-10 margin covers.
//
// For larger σ (derived for this package) it compares the half-line sums
// with integrals by the midpoint rule. With f(x) = e^{−x²/(2σ²)}, y* the
// first integer of the optimal half-line and x₀ = y* − 1/2,
//
//	Σ_{y ≥ y*} f(y) = ∫_{x₀}^∞ f + f′(x₀)/24 + r,  |r| ≤ ∫_{x₀}^∞ |f‴| / (72√3):
//
// on each unit cell f(y) − ∫_cell f = −∫ K·f″ with the Peano kernel
// K(x) = (1/2 − |x − y|)²/2 of mean 1/24; the mean part sums to f′(x₀)/24,
// and integrating the rest by parts against f‴ leaves a periodic
// primitive bounded by 1/(72√3). ∫_{x₀}^∞ |f‴| is f″(x₀) for x₀ ≥ √3σ
// (f‴ < 0 there) and at most (2 + 8e^{−3/2})/σ² ≈ 3.785/σ² in any case.
// Subtracting e^ε times the same expansion at x₀ + Δ, the integral part
// is the continuous hockey-stick value of the half-line {x > x₀} for
// N(0, σ²) against N(−Δ, σ²), at most σ√(2π)·GaussianDelta(ε, σ, Δ)
// (Balle & Wang 2018), and σ√(2π) is at most the discrete normalizer
// (Poisson summation: all its Fourier terms are positive). So
//
//	δ ≤ GaussianDelta(ε, σ, Δ) + [(f′(x₀) − e^ε·f′(x₀ + Δ))/24 + |r₁| + e^ε·|r₂|] / (σ√(2π)),
//
// with the f′ term maximised over the few integers y* can be once
// εσ²/Δ − Δ/2 is rounded.
//
// Invalid arguments (eps negative or not finite, sigma not finite and
// positive, sensitivity < 1) give NaN.
func DiscreteGaussianDelta(eps, sigma float64, sensitivity int64) float64 {
	if !(eps >= 0) || math.IsInf(eps, 1) || !ValidScale(sigma) || sensitivity < 1 {
		return math.NaN()
	}
	if sigma > DiscreteGaussianExactMaxSigma {
		return dgDeltaBound(eps, sigma, float64(sensitivity))
	}
	return dgDeltaSum(eps, sigma, float64(sensitivity))
}

// CachedDiscreteGaussianDelta is DiscreteGaussianDelta memoized: Release
// re-checks every discrete Gaussian component's δ on each call
// (checkCalibration), and a summation costs up to a millisecond. Keys are
// calibrated configuration values, so the cache stays small; it stops
// growing after dgDeltaCacheMax entries.
func CachedDiscreteGaussianDelta(eps, sigma float64, sensitivity int64) float64 {
	if sigma > DiscreteGaussianExactMaxSigma {
		return DiscreteGaussianDelta(eps, sigma, sensitivity)
	}
	key := dgKey{eps, sigma, sensitivity}
	if v, ok := dgDeltaCache.Load(key); ok {
		return v.(float64)
	}
	v := DiscreteGaussianDelta(eps, sigma, sensitivity)
	if dgDeltaCacheSize.Add(1) <= dgDeltaCacheMax {
		dgDeltaCache.Store(key, v)
	}
	return v
}

// The memo of CachedDiscreteGaussianDelta.
var (
	dgDeltaCache     sync.Map
	dgDeltaCacheSize atomic.Int64
)

const dgDeltaCacheMax = 4096

type dgKey struct {
	eps, sigma float64
	d          int64
}

// dgDeltaSum sums the hockey-stick divergence term by term (σ ≤ 1024).
func dgDeltaSum(eps, sigma, d float64) float64 {
	s2 := 2 * sigma * sigma
	f := func(y float64) float64 { return math.Exp(-y * y / s2) }
	// Terms are positive exactly when y > c; start a little below c and
	// keep only positive terms, so rounding in c cannot drop one. Below
	// −40σ every f(y) underflows to 0.
	c := eps*sigma*sigma/d - d/2
	lim := math.Ceil(40*sigma) + 2
	y := math.Max(math.Floor(c)-2, -lim)
	sum := 0.0
	for ; ; y++ {
		fy := f(y)
		if arg := eps - (2*y*d+d*d)/s2; arg < 0 {
			sum += fy * -math.Expm1(arg)
		}
		if y > 0 {
			// Every later term is at most f(y'), and for y' > y those
			// decrease at least geometrically with ratio e^{−(2y+1)/(2σ²)},
			// so their total is at most f(y+1)·(1 + 2σ²/(2y+3)).
			tail := f(y+1) * (1 + s2/(2*y+3))
			if tail == 0 || tail < 1e-20*sum {
				sum += tail
				break
			}
		}
	}
	if sum == 0 {
		return 0
	}
	return sum / dgNormalizer(sigma) * (1 + dgRoundingMargin)
}

// dgNormalizer returns a lower bound on Σ_y e^{−y²/(2σ²)}, the sum
// truncated once the terms fall below 1e-20 of it (exact to double
// precision).
func dgNormalizer(sigma float64) float64 {
	s2 := 2 * sigma * sigma
	z := 1.0
	for y := 1.0; ; y++ {
		fy := math.Exp(-y * y / s2)
		z += 2 * fy
		if fy < 1e-20*z {
			return z
		}
	}
}

// dgDeltaBound is the σ > 1024 upper bound of DiscreteGaussianDelta.
func dgDeltaBound(eps, sigma, d float64) float64 {
	base := GaussianDelta(eps, sigma, d)
	s2 := sigma * sigma
	// fp returns e^w·f′(x). Where it is called with w = ε, x is at least
	// about εσ²/Δ + Δ/2, so ε − x²/(2σ²) ≤ 0 by the AM–GM inequality and
	// the exponential cannot overflow.
	fp := func(x, w float64) float64 { return -(x / s2) * math.Exp(w-x*x/(2*s2)) }
	// tail3 returns e^w·(a bound on ∫_x^∞ |f‴|).
	tail3 := func(x, w float64) float64 {
		if x >= math.Sqrt(3)*sigma {
			return (x*x/s2 - 1) / s2 * math.Exp(w-x*x/(2*s2))
		}
		return math.Exp(w) * (2 + 8*math.Exp(-1.5)) / s2
	}
	// y* is the smallest integer above c; allow one unit of rounding in c
	// either way.
	c := eps*s2/d - d/2
	k0 := math.Floor(c)
	corr := math.Inf(-1)
	// Four candidates, counted by an integer: beyond 2^53 k0+1 == k0, and a
	// loop stepping k itself would never end (the candidates then coincide,
	// which only repeats the same term).
	for i := -1; i <= 2; i++ {
		x0 := k0 + float64(i) - 0.5
		corr = math.Max(corr, (fp(x0, 0)-fp(x0+d, eps))/24)
	}
	xmin := k0 - 1.5 // the leftmost candidate: the tail bound only grows to the left
	rem := (tail3(xmin, 0) + tail3(xmin+d, eps)) / (72 * math.Sqrt(3))
	v := base + (corr+rem)/(sigma*math.Sqrt(2*math.Pi))
	return math.Max(v, 0) * (1 + dgRoundingMargin)
}

// DiscreteGaussianSigma returns the smallest σ (to a relative 1e-12,
// rounded up) found by bisection for which N_Z(0, σ²) added to an integer
// query with integer sensitivity Δ = sensitivity is (eps, delta)-DP
// according to DiscreteGaussianDelta, under add/remove one privacy unit.
// The returned σ always satisfies DiscreteGaussianDelta(eps, σ, Δ) ≤ delta
// as computed. It starts from the continuous analytic σ
// (AnalyticGaussianSigma), which it matches within a relative 1e-6 once σ is
// large, and is typically within a few percent of it for small σ (either
// side: the lattice can help or hurt).
//
// Errors: eps not finite and > 0, delta not in (0, 1), sensitivity < 1, or
// a σ beyond the samplers' limit of 2^50.
func DiscreteGaussianSigma(eps, delta float64, sensitivity int64) (float64, error) {
	if sensitivity < 1 {
		return 0, fmt.Errorf("discrete gaussian sigma: sensitivity must be an integer >= 1, got %d", sensitivity)
	}
	sc, err := AnalyticGaussianSigma(eps, delta, float64(sensitivity))
	if err != nil {
		return 0, fmt.Errorf("discrete gaussian sigma: %w", err)
	}
	satisfied := func(sigma float64) bool {
		return DiscreteGaussianDelta(eps, sigma, sensitivity) <= delta
	}
	const step, maxSteps = 1.05, 2000
	hi := sc
	for i := 0; !satisfied(hi); i++ {
		if i == maxSteps || hi > MaxDiscreteScale {
			return 0, fmt.Errorf("discrete gaussian sigma: no sigma up to %v reaches delta=%v at eps=%v, sensitivity=%d", hi, delta, eps, sensitivity)
		}
		hi *= step
	}
	lo := hi
	for i := 0; satisfied(lo); i++ {
		if i == maxSteps || lo == 0 {
			return 0, fmt.Errorf("discrete gaussian sigma: cannot bracket delta=%v at eps=%v, sensitivity=%d", delta, eps, sensitivity)
		}
		lo /= step
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := lo + (hi-lo)/2
		if satisfied(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if hi > MaxDiscreteScale {
		return 0, fmt.Errorf("discrete gaussian sigma %v exceeds the samplers' limit 2^50 (epsilon too small?)", hi)
	}
	return hi, nil
}

// RoundUpSignificand rounds σ > 0 up to the nearest float64 with at most
// 24 significant bits. The discrete Gaussian sampler's exact acceptance
// test then fits in 128-bit integers (see gaussFromFloat) instead of
// math/big; the added noise is below a relative 2^-23.
func RoundUpSignificand(sigma float64) float64 {
	frac, exp := math.Frexp(sigma)
	return math.Ldexp(math.Ceil(math.Ldexp(frac, 24)), exp-24)
}

// NextSignificand returns the next float64 above σ with at most 24
// significant bits (σ must already have at most 24).
func NextSignificand(sigma float64) float64 {
	frac, exp := math.Frexp(sigma)
	return math.Ldexp(math.Ldexp(frac, 24)+1, exp-24)
}

// DiscreteLaplaceAbsMean returns E|Z| = 2q/(1 − q²) = 1/sinh(1/t) for the discrete
// Laplace of scale t, q = e^{−1/t}.
func DiscreteLaplaceAbsMean(t float64) float64 { return 1 / math.Sinh(1/t) }

// DiscreteLaplaceVariance returns E[Z²] = 2q/(1 − q)² = 1/(2·sinh²(1/(2t))).
func DiscreteLaplaceVariance(t float64) float64 {
	s := math.Sinh(1 / (2 * t))
	return 1 / (2 * s * s)
}

// dlapTail returns P(|Z| > m) = 2q^{m+1}/(1 + q) for the discrete Laplace
// of scale t and an integer m ≥ 0.
func dlapTail(t float64, m float64) float64 {
	return 2 * math.Exp(-(m+1)/t) / (1 + math.Exp(-1/t))
}

// DiscreteLaplaceHalfWidth95 returns the smallest integer m ≥ 0 with P(|Z| > m) ≤ 0.05.
func DiscreteLaplaceHalfWidth95(t float64) float64 {
	m := math.Max(math.Ceil(t*math.Log(40/(1+math.Exp(-1/t))))-1, 0)
	for m > 0 && dlapTail(t, m-1) <= 0.05 {
		m--
	}
	for dlapTail(t, m) > 0.05 {
		m++
	}
	return m
}

// DiscreteGaussianAbsMean returns E|Z| for N_Z(0, σ²): summed for σ ≤ 1024, else
// σ·√(2/π)·(1 − 1/(12σ²)) from the Euler–Maclaurin expansion
// Σ_{y≥0} y·e^{−y²/(2σ²)} = σ² − 1/12 + O(σ^{−2}) (relative error < 1e-12
// there).
func DiscreteGaussianAbsMean(sigma float64) float64 {
	if sigma > DiscreteGaussianExactMaxSigma {
		return sigma * math.Sqrt(2/math.Pi) * (1 - 1/(12*sigma*sigma))
	}
	s2 := 2 * sigma * sigma
	m := 0.0
	for y := 1.0; ; y++ {
		fy := math.Exp(-y * y / s2)
		m += 2 * y * fy
		if fy < 1e-20*math.Max(m, 1) {
			break
		}
	}
	return m / dgNormalizer(sigma)
}

// DiscreteGaussianHalfWidth95 returns an integer m ≥ 0 with P(|Z| > m) ≤ 0.05 for
// N_Z(0, σ²): the smallest one, by summing the pmf, for σ ≤ 1024. Above,
// m = ⌈z·σ⌉ with z the standard normal 0.975 quantile, at most one more than
// the smallest: by the midpoint expansion in DiscreteGaussianDelta's
// documentation, P(|Z| > m) = 2Q((m + 1/2)/σ) − (z/σ)φ(z)/12·(1 + O(z/σ))
// < 2Q(z) = 0.05, since (m + 1/2)/σ > z.
func DiscreteGaussianHalfWidth95(sigma float64) float64 {
	if sigma > DiscreteGaussianExactMaxSigma {
		return math.Ceil(NormalQ975 * sigma)
	}
	s2 := 2 * sigma * sigma
	z := dgNormalizer(sigma)
	inside := 1.0 // Σ_{|y| ≤ m} f(y)
	m := 0.0
	for inside < 0.95*z {
		m++
		inside += 2 * math.Exp(-m*m/s2)
	}
	return m
}

// ZCDPDelta returns a δ at which every ρ-zCDP mechanism is (ε, δ)-DP:
//
//	δ = inf_{α>1} exp((α−1)(αρ − ε)) · (1 − 1/α)^{α−1} / α,
//
// the RDP-to-DP conversion of Canonne, Kamath & Steinke 2020 (Prop. 12;
// also Asoodeh et al. 2020), the one SPEC section 3 uses, applied to the
// curve ε(α) = ρα. The log of the expression is convex in α (a convex
// quadratic, plus (α−1)·log(1 − 1/α), whose second derivative is
// 1/(α²(α−1)) > 0, minus log α), so a golden-section search finds the
// infimum; the value returned is the expression at the α found, hence a
// valid δ whatever the search's accuracy. eps ≥ 0 and rho > 0.
func ZCDPDelta(eps, rho float64) float64 {
	logDelta := func(a float64) float64 {
		return (a-1)*(a*rho-eps) + (a-1)*math.Log1p(-1/a) - math.Log(a)
	}
	// The unconstrained minimum of the quadratic part is near
	// α = (ε + ρ)/(2ρ); search log(α − 1) over a generous bracket.
	lo, hi := math.Log(1e-9), math.Log(math.Max(4*(eps+rho)/rho, 4))
	phi := (math.Sqrt(5) - 1) / 2
	x1, x2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
	f1, f2 := logDelta(1+math.Exp(x1)), logDelta(1+math.Exp(x2))
	for range 200 {
		if f1 < f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - phi*(hi-lo)
			f1 = logDelta(1 + math.Exp(x1))
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + phi*(hi-lo)
			f2 = logDelta(1 + math.Exp(x2))
		}
	}
	return math.Min(math.Exp(math.Min(f1, f2)), 1)
}

// ZCDPGaussianSigma returns the smallest σ (bisection, relative 1e-12,
// rounded up) with ZCDPDelta(eps, Δ²/(2σ²)) ≤ delta: a discrete Gaussian
// calibration valid for vector-valued integer queries whose neighbouring
// change k has ‖k‖₂ ≤ Δ, since independent N_Z(0, σ²) coordinates are
// (‖k‖₂²/(2σ²))-zCDP (CKS 2020, Thm. 4, with Rényi divergences adding over
// independent coordinates).
func ZCDPGaussianSigma(eps, delta, sensitivity float64) (float64, error) {
	if !(eps > 0) || math.IsInf(eps, 1) || !(delta > 0 && delta < 1) || !ValidScale(sensitivity) {
		return 0, fmt.Errorf("zcdp gaussian sigma: need eps > 0, delta in (0, 1) and sensitivity > 0, got %v, %v, %v", eps, delta, sensitivity)
	}
	satisfied := func(sigma float64) bool {
		return ZCDPDelta(eps, sensitivity*sensitivity/(2*sigma*sigma)) <= delta
	}
	sigma, err := smallestSatisfying(satisfied, sensitivity, MaxDiscreteScale, 1e-12)
	if err != nil {
		return 0, fmt.Errorf("zcdp gaussian sigma: delta=%v at eps=%v (epsilon too small?): %w", delta, eps, err)
	}
	return sigma, nil
}
