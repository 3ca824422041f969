package regression

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// OPSGamma returns the inverse temperature γ of the one-posterior-sample
// (OPS) mechanism that makes it (eps, delta)-DP, from the AdaOPS analysis
// (SPEC section 4.5; seed 000 §4.2, Wang 2018 and the author's adaops.m):
// with h = λ + λ_min, a lower bound on the smallest eigenvalue of
// A = XᵀX + λI that holds with the stated probability (λ_min a private
// lower confidence bound on λ_min(XᵀX), or 0), lip a bound on the
// Lipschitz constant B_x(B_x‖θ̂‖ + B_y) of the per-row loss at the
// estimate, and bx = B_x, √γ is the positive root s of
//
//	[lip²/(2(h + bx²))]·s² + √(lip²·w²/h)·s + bx²(1 + w²)/(2h) − ε = 0,
//
// w the two-sided standard normal quantile with P(|W| > w) = δ (computed
// as √2·erfcinv(δ), inflated by a relative 1e-9 against the error of
// Erfcinv; a larger w is still a valid bound). Per row: on the event
// |W| ≤ w the exact privacy loss of SPEC section 4.6 in either direction
// is at most bx²(1 + w²)/(2h) + lip·w·√(γ/h) + γ·lip²/(2(h + bx²)) (each
// term grows with the leverage μ ≤ bx²/h and the residual), so γ from this
// root gives (ε, δ)-DP per row. SPEC section 4.5 writes log(6/δ) where w²
// stands here; read as the square of a Gaussian tail bound that gives only
// P(|W| > √log(6/δ)) ≈ √(δ/6), far above δ, so this function uses the
// exact quantile (found by the regression work; TestOPSCalibrationExactTail
// checks the result against the exact loss). AdaOPS calls it with its
// per-row share of (ε, δ) for the posterior sample. The constant term is
// negative exactly when ε exceeds bx²(1 + w²)/(2h),
// the loss the posterior's curvature alone costs; below that no γ > 0 is
// private and OPSGamma returns an error saying to raise λ (h) or ε.
// Inputs must be finite with eps > 0, delta in (0, 1), h > 0, lip ≥ 0 and
// bx > 0.
func OPSGamma(eps, delta, h, lip, bx float64) (float64, error) {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !(eps > 0) || !finite(eps) || !(delta > 0 && delta < 1) || !(h > 0) || !finite(h) || !(lip >= 0) || !finite(lip) || !(bx > 0) || !finite(bx) {
		return 0, fmt.Errorf("%w: OPS gamma needs eps > 0, delta in (0, 1), h > 0, lip >= 0 and bx > 0, all finite; got %v, %v, %v, %v, %v",
			noise.ErrInvalidSpec, eps, delta, h, lip, bx)
	}
	w := math.Sqrt2 * math.Erfcinv(delta) * (1 + 1e-9)
	lg := w * w
	a := lip * lip / (2 * (h + bx*bx))
	b := math.Sqrt(lip * lip * lg / h)
	c := bx*bx*(1+lg)/(2*h) - eps
	if c >= 0 {
		return 0, fmt.Errorf("%w: OPS cannot meet epsilon %v at delta %v with lambda + lambda_min = %v: the posterior's curvature alone costs %v; raise lambda or epsilon",
			noise.ErrInvalidSpec, eps, delta, h, bx*bx*(1+lg)/(2*h))
	}
	var s float64
	if a == 0 {
		if b == 0 {
			return math.Inf(1), nil // no Lipschitz term: any γ; the caller caps it
		}
		s = -c / b
	} else {
		// Positive root of a s² + b s + c with c < 0, in the form that
		// does not cancel: s = 2(−c)/(b + √(b² − 4ac)).
		s = 2 * (-c) / (b + math.Sqrt(b*b-4*a*c))
	}
	return s * s, nil
}
