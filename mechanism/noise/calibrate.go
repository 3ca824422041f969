package noise

import (
	"errors"
	"fmt"
	"math"
)

// GaussianDelta returns the exact δ at which the Gaussian mechanism
// f(x) + N(0, sigma²) is (eps, δ)-DP when f has L2 sensitivity
// sensitivity = Δ under the add/remove-one-unit relation:
//
//	δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ).
//
// Source: Balle & Wang 2018 ("Improving the Gaussian mechanism for
// differential privacy", ICML), Theorem 8. Sketch: for outputs
// N(0, σ²) versus N(Δ, σ²) the privacy loss L = log(p₀(y)/p₁(y)) is
// distributed N(η, 2η) with η = Δ²/(2σ²), and the smallest δ is the
// hockey-stick divergence E_{p₀}[(1 − e^{ε−L})₊] = P₀(L > ε) − e^ε·P₁(L > ε),
// which evaluates to the formula above; the pair is the worst case over
// neighbours (by rotation invariance only ‖f(x) − f(x')‖₂ ≤ Δ matters),
// and the expression is symmetric in the two directions.
//
// It is computed in log space, δ = Φ(A)·(−expm1(ε + log Φ(B) − log Φ(A))),
// so e^ε never overflows and the subtraction keeps relative accuracy.
// eps = 0 is allowed (δ is then the total-variation distance). Invalid
// arguments (eps < 0, sigma or sensitivity not finite and positive) give NaN.
func GaussianDelta(eps, sigma, sensitivity float64) float64 {
	if !(eps >= 0) || math.IsInf(eps, 1) || !ValidScale(sigma) || !ValidScale(sensitivity) {
		return math.NaN()
	}
	a := sensitivity / (2 * sigma)
	c := eps * sigma / sensitivity
	la := logPhi(a - c)
	if math.IsInf(la, -1) {
		return 0 // δ ≤ Φ(A) = 0
	}
	lb := logPhi(-a - c)
	r := eps + lb - la
	if r >= 0 {
		// The hockey-stick divergence is never negative; r ≥ 0 can only come
		// from rounding when δ is far below anything representable here.
		return 0
	}
	return math.Exp(la) * -math.Expm1(r)
}

// AnalyticGaussianSigma returns the smallest σ (up to a relative 1e-13,
// rounded up) for which the Gaussian mechanism with L2 sensitivity
// sensitivity is (eps, delta)-DP, that is
//
//	Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ) ≤ δ,
//
// under the add/remove-one-unit relation. This is the analytic Gaussian
// mechanism of Balle & Wang 2018 (Algorithm 1): instead of their change of
// variables it finds the root of the exact condition (GaussianDelta) by
// bisection, which works because δ(σ) is continuous and strictly decreasing
// in σ (more noise is a post-processing of less). The returned σ always
// satisfies GaussianDelta(eps, σ, sensitivity) ≤ delta as computed, never
// just above it. Unlike the classical σ = Δ·sqrt(2 log(1.25/δ))/ε it holds
// for every ε > 0 and is never larger.
//
// It returns an error when eps is not finite and positive, delta is not in
// (0, 1), or sensitivity is not finite and positive.
func AnalyticGaussianSigma(eps, delta, sensitivity float64) (float64, error) {
	switch {
	case !(eps > 0) || math.IsInf(eps, 1):
		return 0, fmt.Errorf("analytic gaussian sigma: epsilon must be finite and > 0, got %v", eps)
	case !(delta > 0 && delta < 1):
		return 0, fmt.Errorf("analytic gaussian sigma: delta must be in (0, 1), got %v", delta)
	case !ValidScale(sensitivity):
		return 0, fmt.Errorf("analytic gaussian sigma: sensitivity must be finite and > 0, got %v", sensitivity)
	}
	// satisfied is false for a NaN δ, so every sigma this function returns
	// has been checked to meet the target; NaN can only appear at the
	// extremes of the bracketing loops (sigma overflowing or reaching 0).
	satisfied := func(sigma float64) bool {
		return GaussianDelta(eps, sigma, sensitivity) <= delta
	}
	// δ(σ) → 1 as σ → 0 and → 0 as σ → ∞, so the search ends well inside
	// the float64 range.
	sigma, err := smallestSatisfying(satisfied, sensitivity, math.MaxFloat64, 1e-13)
	if err != nil {
		return 0, fmt.Errorf("analytic gaussian sigma: delta=%v at eps=%v, sensitivity=%v: %w", delta, eps, sensitivity, err)
	}
	return sigma, nil
}

// smallestSatisfying returns, to relative tolerance tol and from above (ok
// holds for the result), the smallest scale at which ok holds, for an ok
// that is false below some threshold and true above it. It brackets the
// threshold by doubling and halving from start, then bisects. The step
// bounds only stop a runaway on a predicate that never changes.
func smallestSatisfying(ok func(float64) bool, start, maxScale, tol float64) (float64, error) {
	const maxSteps = 2200
	hi := start
	for i := 0; !ok(hi); i++ {
		if i == maxSteps || hi > maxScale || math.IsInf(hi, 1) {
			return 0, fmt.Errorf("no scale up to %v is enough", hi)
		}
		hi *= 2
	}
	lo := hi
	for i := 0; ok(lo); i++ {
		if i == maxSteps || lo == 0 {
			return 0, errors.New("cannot bracket the threshold from below")
		}
		lo /= 2
	}
	// Invariant: lo misses the target, hi meets it, hi ≤ 2·lo.
	for i := 0; i < 200 && hi-lo > tol*hi; i++ {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// logPhi returns log Φ(x) for the standard normal CDF Φ, accurate in both
// tails: log1p(−Φ(−x)) for x > 0 (log of a value near 1 would lose the
// relative accuracy of the small result), erfc down to −35, and the
// asymptotic series
// Φ(x) = φ(x)/|x|·(1 − x⁻² + 3x⁻⁴ − 15x⁻⁶ + 105x⁻⁸ − 945x⁻¹⁰ + …) below
// x = −35, where erfc would underflow (truncation error < 1e-14 there).
func logPhi(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return math.NaN()
	case x > 0:
		return math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
	case x > -35:
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	case math.IsInf(x, -1):
		return math.Inf(-1)
	}
	t := 1 / (x * x)
	series := 1 + t*(-1+t*(3+t*(-15+t*(105-945*t))))
	return -x*x/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(series)
}
