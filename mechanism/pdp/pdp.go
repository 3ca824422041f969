package pdp

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file computes per-instance differential privacy (pDP) certificates
// (SPEC section 4.6): how much privacy one particular unit u loses in one
// particular data set D, rather than the worst case over all units and
// data sets that the DP guarantee of a release states.
//
// Definition (Wang 2019, "Per-instance differential privacy", Journal of
// Privacy and Confidentiality 9(1); arXiv 1707.07708, 2017 — the project's
// seed 000): a mechanism M is (ε, δ)-pDP for unit u at data set D when for
// every set S of outputs
//
//	P[M(D) ∈ S] ≤ e^ε·P[M(D ± u) ∈ S] + δ and P[M(D ± u) ∈ S] ≤ e^ε·P[M(D) ∈ S] + δ,
//
// where D ± u is D with all of u's events removed (u ∈ D) or added (u ∉ D):
// the add/remove-one-unit relation of SPEC section 0, fixed to one pair.
//
// A pDP certificate is NOT a differential-privacy guarantee. It holds for
// one pair (D, D ± u) only; it is a function of the data (of u's own
// contribution, and for OPS of everyone's), so publishing it would itself
// leak information about u. Certificates are therefore confidential
// (DESIGN invariant 6): they go to the restricted pDP topic and to
// operators, never into a public release, and nothing in a public release
// may depend on them.

// GaussianRho returns the per-instance zero-concentrated DP parameter
// ρ_u = l2²/(2σ²) of unit u for a release f(D) + N(0, σ²I) (or, per
// coordinate, the discrete Gaussian N_Z(0, σ²)), where l2 = ‖c_u‖₂ is the
// Euclidean norm of u's own contribution to the released vector, c_u =
// f(with u) − f(without u), on the scale the noise is added at.
//
// Guarantee: the pair (D, D ± u) satisfies every Rényi divergence bound
// D_α ≤ α·ρ_u, α > 1 (per-instance ρ_u-zCDP; per-instance RDP curve α·ρ_u).
// Relation: add/remove unit u (all of u's events in the window).
// Sensitivity: per-instance, the shift is exactly c_u (for sums, the sum
// over u's kept events; exact since sums are linear), so Δ_u = ‖c_u‖₂,
// which is at most the worst-case Δ2 of SPEC section 0. Proof sketch: the
// two outputs are N(f(D), σ²I) and N(f(D) − c_u, σ²I), whose α-Rényi
// divergence is α‖c_u‖²/(2σ²); for the discrete Gaussian with an integer
// shift the same holds per coordinate (Canonne, Kamath & Steinke 2020,
// Prop. 5), and Rényi divergences add over independent coordinates.
// A secure-noise release rounds values to a grid g before adding noise; the
// caller passes the contribution after that rounding (or ‖c_u‖ + g, as the
// calibration does). Source: Bun & Steinke 2016 (zCDP), Wang 2019 (pDP).
//
// Invalid arguments (l2 negative or not finite, sigma not finite and
// positive) give NaN; l2 = 0, a unit without events, gives 0.
func GaussianRho(l2, sigma float64) float64 {
	if !(l2 >= 0) || math.IsInf(l2, 1) || !noise.ValidScale(sigma) {
		return math.NaN()
	}
	r := l2 / sigma
	return r * r / 2
}

// GaussianEpsilon returns the smallest ε ≥ 0 (to a relative 1e-12,
// rounded up) for which the Gaussian mechanism f(D) + N(0, σ²I) is
// (ε, delta)-pDP for a unit whose contribution to the released vector has
// Euclidean norm l2 = ‖c_u‖₂: the analytic Gaussian formula
// GaussianDelta(ε, σ, Δ) ≤ delta with Δ = ‖c_u‖₂.
//
// Guarantee: per-instance (ε, δ)-indistinguishability of M(D) and
// M(D ± u), both directions, for this pair only (not DP: it depends on
// c_u). Relation: add/remove unit u. Sensitivity: the shift between the two
// output distributions is exactly c_u. Proof sketch: Balle & Wang 2018
// (ICML, Thm. 8) give the exact hockey-stick divergence between
// N(0, σ²I) and N(v, σ²I) as a function of ‖v‖₂ alone (rotation
// invariance), symmetric in the two directions; at ‖v‖₂ = ‖c_u‖₂ that is
// the exact per-instance δ(ε), decreasing in ε, so a bisection finds the
// smallest ε. With l2 = Δ2 this reproduces the ε the release was calibrated
// to by AnalyticGaussianSigma. Source: Balle & Wang 2018; Wang 2019.
//
// The formula is exact for continuous Gaussian noise. For discrete
// Gaussian noise it can be optimistic by a relative O(1/σ²) (see
// DiscreteGaussianDelta); there use the zCDP route (GaussianRho,
// Account), which is exact for the discrete Gaussian too.
//
// l2 = 0 gives 0. It returns an error when l2 is negative or not finite,
// sigma is not finite and positive, or delta is not in (0, 1).
func GaussianEpsilon(l2, sigma, delta float64) (float64, error) {
	switch {
	case !(l2 >= 0) || math.IsInf(l2, 1):
		return 0, fmt.Errorf("pdp gaussian epsilon: contribution norm must be finite and >= 0, got %v", l2)
	case !noise.ValidScale(sigma):
		return 0, fmt.Errorf("pdp gaussian epsilon: sigma must be finite and > 0, got %v", sigma)
	case !(delta > 0 && delta < 1):
		return 0, fmt.Errorf("pdp gaussian epsilon: delta must be in (0, 1), got %v", delta)
	}
	if l2 == 0 {
		return 0, nil
	}
	ok := func(eps float64) bool { return noise.GaussianDelta(eps, sigma, l2) <= delta }
	// ρ + 2√(ρ log(1/δ)) is enough for every ρ-zCDP mechanism (Bun &
	// Steinke 2016, Prop. 1.3), hence for this one; the doubling in
	// smallestEpsilon covers any rounding at that start.
	rho := GaussianRho(l2, sigma)
	eps, err := smallestEpsilon(ok, rho+2*math.Sqrt(rho*math.Log(1/delta)))
	if err != nil {
		return 0, fmt.Errorf("pdp gaussian epsilon: norm %v, sigma %v, delta %v: %w", l2, sigma, delta, err)
	}
	return eps, nil
}

// LaplaceEpsilon returns the per-instance pure ε_u = l1/scale of unit u
// for a release f(D) + Laplace noise of scale b = scale per coordinate,
// where l1 = ‖c_u‖₁ is the L1 norm of u's own contribution to the released
// vector. For discrete Laplace noise P(k) ∝ exp(−|k|/t) pass the
// contribution in grid units and scale = t: the bound is the same.
//
// Guarantee: per-instance (ε_u, 0)-indistinguishability of M(D) and
// M(D ± u), both directions (not DP: it depends on c_u). Relation:
// add/remove unit u. Sensitivity: the shift is exactly c_u. Proof sketch:
// per coordinate the density ratio of the noise at shifts 0 and c_j is
// exp((|y − c_j| − |y|)/b) ≤ exp(|c_j|/b) by the triangle inequality (also
// for integer y and c_j); coordinates are independent, so the ratios
// multiply to at most exp(‖c_u‖₁/b). Source: Dwork, McSherry, Nissim &
// Smith 2006 (Laplace mechanism), applied per instance as in Wang 2019.
// For a grid-rounded release pass the rounded contribution (see
// GaussianRho).
//
// Invalid arguments (l1 negative or not finite, scale not finite and
// positive) give NaN; l1 = 0 gives 0.
func LaplaceEpsilon(l1, scale float64) float64 {
	if !(l1 >= 0) || math.IsInf(l1, 1) || !noise.ValidScale(scale) {
		return math.NaN()
	}
	return l1 / scale
}

// Account is one unit's cumulative per-instance privacy loss across
// releases and windows of a stream: the per-unit analogue of the stream's
// accountant, kept in per-instance zCDP. Its zero value is a unit that has
// paid nothing. Every field is a plain number, so it serialises to JSON or
// Avro as is. It is confidential like every pDP quantity (DESIGN
// invariant 6).
//
// Relation: the stream-level add/remove of unit u, which removes all of u's
// events in every window; in a window where u has no events the two
// streams' releases are identically distributed, so that window adds
// nothing (callers simply do not call Add for it, and a zero contribution
// is a no-op).
//
// Why composition is sound: for the fixed pair (D, D ± u) each release's
// noise scale is fixed by configuration and u's contribution by the data,
// neither by earlier outputs, so conditioned on any history of earlier
// outputs each Gaussian release has Rényi divergence at most α·ρ_k and
// each pure release a log-density ratio at most ε0_k. The chain rule for
// Rényi divergence then adds the per-release bounds (Bun & Steinke 2016,
// Lemma 2.3, applied to one pair: the proof never uses the other pairs).
// A pure ε0 charge enters as ε0²/2-zCDP (ε-DP implies ε²/2-zCDP, Bun &
// Steinke 2016, Prop. 1.4; the proof bounds one pair of distributions with
// bounded log ratio, so it holds per instance).
//
// How conservative it is: ρ itself is exact for Gaussian and discrete
// Gaussian charges, and the loss is in the conversion to (ε, δ) (Epsilon,
// Canonne–Kamath–Steinke 2020, Prop. 12). Composed continuous Gaussian
// charges are exactly one Gaussian mechanism with ‖c‖²/(2σ²) = ρ, and this
// conversion is 6–10% above its analytic ε at δ = 1e-6 (for σ/‖c‖ from
// 0.3 to 50); the account does not use that formula because the pipeline's
// noise is the discrete Gaussian, for which ρ is exact and the continuous
// formula is not. For pure charges ε0²/2 is loose when they are few (one
// ε0 = 1 charge converts to ε ≈ 5.2 at δ = 1e-6), so the account also keeps
// their plain sum and Epsilon reports the smaller of the two valid bounds.
type Account struct {
	// GaussianRho is the sum of the per-instance zCDP ρ of the Gaussian
	// (continuous or discrete) releases that charged the unit.
	GaussianRho float64 `json:"gaussian_rho"`
	// PureRho is the sum of ε0²/2 over the pure (Laplace-type) charges.
	PureRho float64 `json:"pure_rho"`
	// PureEpsilon is the plain sum of ε0 over the pure charges.
	PureEpsilon float64 `json:"pure_epsilon"`
	// ApproxEpsilon and ApproxDelta are the sums of per-instance (ε, δ)
	// charges (OPS posterior samples, OPSPrivacyLoss), composed with the
	// rest by basic composition.
	ApproxEpsilon float64 `json:"approx_epsilon"`
	ApproxDelta   float64 `json:"approx_delta"`
	// Charges counts the releases that charged the unit a positive amount.
	Charges int64 `json:"charges"`
}

// AddApprox charges one per-instance (eps, delta) loss, such as an OPS
// posterior sample's OPSPrivacyLoss at delta. eps = 0 adds nothing. On an
// invalid argument (eps negative or not finite, delta outside [0, 1)) it
// returns an error and leaves the account unchanged.
func (a *Account) AddApprox(eps, delta float64) error {
	if !(eps >= 0) || math.IsInf(eps, 1) || !(delta >= 0 && delta < 1) {
		return fmt.Errorf("pdp account: approximate charge needs eps >= 0 finite and delta in [0, 1), got %v, %v", eps, delta)
	}
	if eps == 0 {
		return nil
	}
	a.ApproxEpsilon += eps
	a.ApproxDelta += delta
	a.Charges++
	return nil
}

// Rho returns the unit's total per-instance zCDP ρ: every Gaussian charge
// plus ε0²/2 for every pure charge.
func (a Account) Rho() float64 { return a.GaussianRho + a.PureRho }

// AddGaussian charges one Gaussian release with noise σ = sigma per
// coordinate to which the unit contributed a vector of Euclidean norm l2:
// ρ_u = l2²/(2σ²) (GaussianRho, whose doc has the guarantee and proof).
// l2 = 0 (no events in the window) adds nothing. On an invalid argument it
// returns an error and leaves the account unchanged.
func (a *Account) AddGaussian(l2, sigma float64) error {
	rho := GaussianRho(l2, sigma)
	if math.IsNaN(rho) {
		return fmt.Errorf("pdp account: gaussian charge needs a finite contribution norm >= 0 and sigma > 0, got %v, %v", l2, sigma)
	}
	if rho == 0 {
		return nil
	}
	total := a.GaussianRho + rho
	if math.IsInf(total, 1) {
		return fmt.Errorf("pdp account: gaussian charge rho %v overflows the account", rho)
	}
	a.GaussianRho = total
	a.Charges++
	return nil
}

// AddPure charges one pure per-instance ε0 (for example a Laplace
// release's LaplaceEpsilon): ε0²/2 to the zCDP total and ε0 to the plain
// sum. eps0 = 0 adds nothing. On an invalid argument (negative or not
// finite) it returns an error and leaves the account unchanged.
func (a *Account) AddPure(eps0 float64) error {
	if !(eps0 >= 0) || math.IsInf(eps0, 1) {
		return fmt.Errorf("pdp account: pure charge must be finite and >= 0, got %v", eps0)
	}
	if eps0 == 0 {
		return nil
	}
	rho, sum := a.PureRho+eps0*eps0/2, a.PureEpsilon+eps0
	if math.IsInf(rho, 1) || math.IsInf(sum, 1) {
		return fmt.Errorf("pdp account: pure charge %v overflows the account", eps0)
	}
	a.PureRho, a.PureEpsilon = rho, sum
	a.Charges++
	return nil
}

// Epsilon returns the unit's cumulative per-instance ε at delta: the
// smaller of two valid bounds,
//
//   - all charges as zCDP: the smallest ε with noise.ZCDPDelta(ε, Rho()) ≤ δ
//     (Canonne, Kamath & Steinke 2020, Prop. 12);
//   - basic composition of the pure part with the Gaussian part:
//     PureEpsilon + the same ε for GaussianRho alone.
//
// Guarantee: per-instance (ε, δ)-indistinguishability, for this unit and
// this stream only, of everything released so far (not DP). Proof sketch
// of the second bound: the total privacy-loss variable is at most
// PureEpsilon plus the Gaussian releases' summed loss L_G (each pure loss is
// bounded pointwise), and the CKS conversion uses only the moment bound
// E[e^{(α−1)L_G}] ≤ e^{(α−1)α·GaussianRho} together with the pointwise
// inequality (1 − e^{ε−x})₊ ≤ e^{(α−1)(x−ε)}·(1 − 1/α)^{α−1}/α, so shifting ε
// by PureEpsilon keeps it valid. Each bound is rounded up (relative 1e-12).
//
// With approximate charges (ΣεA, ΣδA) the bound is computed at
// delta − ΣδA and ΣεA is added (basic composition, Dwork & Roth 2014,
// Thm. 3.16); if ΣδA ≥ delta it is +Inf.
//
// An empty account gives 0; delta outside (0, 1) gives NaN.
func (a Account) Epsilon(delta float64) float64 {
	if !(delta > 0 && delta < 1) {
		return math.NaN()
	}
	if a.ApproxDelta > 0 || a.ApproxEpsilon > 0 {
		if a.ApproxDelta >= delta {
			return math.Inf(1)
		}
		rest := a
		rest.ApproxEpsilon, rest.ApproxDelta = 0, 0
		return rest.Epsilon(delta-a.ApproxDelta) + a.ApproxEpsilon
	}
	zc := func(rho float64) float64 { return zcdpEpsilon(rho, delta) }
	return math.Min(zc(a.Rho()), a.PureEpsilon+zc(a.GaussianRho))
}

// smallestEpsilon returns, to a relative 1e-12 and from above, the
// smallest ε ≥ 0 at which ok holds, for an ok that is monotone (false
// below a threshold, true above). start is a guess at an ε where ok holds;
// it is doubled until it does.
func smallestEpsilon(ok func(float64) bool, start float64) (float64, error) {
	if ok(0) {
		return 0, nil
	}
	hi := math.Max(start, math.SmallestNonzeroFloat64)
	for i := 0; !ok(hi); i++ {
		if i == 2200 || math.IsInf(hi, 1) {
			return 0, errors.New("no finite epsilon is enough")
		}
		hi *= 2
	}
	lo := 0.0 // ok(lo) is false
	for i := 0; i < 2200 && hi-lo > 1e-12*hi; i++ {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// OPSPrivacyLoss returns the exact per-instance ε_z(δ) of the one-posterior-
// sample (OPS) mechanism for one row z = (x, y) (SPEC section 4.6, derived
// for this project): the smallest ε ≥ 0 (to a relative 1e-12, rounded up)
// with P(L > ε) ≤ δ and P(L′ > ε) ≤ δ, where, with W ~ N(0, 1),
//
//	L  = −½·log(1+μ) + (μ/2)·W² − r·√(γμ)·W + (γ/2)·r²·μ/(1+μ),
//	L′ = ½·log(1+μ) − (μ′/2)·W² + r(1−μ′)·√(γμ′)·W + (γ/2)·r²·μ′(1−μ′),  μ′ = μ/(1+μ),
//
// are the privacy-loss variables of the output on D against D ∪ {z} and of
// D ∪ {z} against D. Here D is the data without z, A = XᵀX + λI is built
// from D, θ̂ = A⁻¹Xᵀy, mu = μ = xᵀA⁻¹x (out-of-sample leverage), r = y − xᵀθ̂
// (leave-one-out prediction error; OPSLeverage computes both) and gamma = γ
// the inverse temperature: OPS outputs θ̃ ~ N(θ̂, (γA)⁻¹).
//
// Guarantee: (ε_z, δ)-pDP of row z at data set D ∪ {z}, both directions.
// It is NOT a DP guarantee: it depends on the data through μ and r and is
// itself sensitive (DESIGN invariant 6). Relation: add/remove the one row
// z (a privacy unit with one row; for several rows per unit this bound
// does not apply). Sensitivity: none is assumed; the loss is computed
// exactly from the two posteriors.
//
// Proof sketch. The OPS density on D is ∝ exp(−(γ/2)(‖y_D − X_Dθ‖² +
// λ‖θ‖²)); on D ∪ {z} the exponent gains −(γ/2)(y − xᵀθ)², its Hessian
// becomes A′ = A + xxᵀ, and the minimum of the quadratic rises by
// r²/(1+μ) (Sherman–Morrison). With log det A′ − log det A = log(1+μ),
//
//	log p_D(θ)/p_{D∪z}(θ) = −½·log(1+μ) + (γ/2)·[(y − xᵀθ)² − r²/(1+μ)].
//
// Under θ ~ N(θ̂, (γA)⁻¹), xᵀθ = xᵀθ̂ + √(μ/γ)·W, so y − xᵀθ = r − √(μ/γ)·W,
// which gives L. Under θ ~ N(θ̂′, (γA′)⁻¹), xᵀθ = xᵀθ̂′ + √(μ′/γ)·W with
// μ′ = xᵀA′⁻¹x = μ/(1+μ) and in-sample residual y − xᵀθ̂′ = r(1−μ′), which
// gives L′. For any set S, P(S) ≤ P(S ∩ {L ≤ ε}) + P(L > ε) ≤ e^ε·Q(S) + δ, so
// the tail condition in each direction is sufficient (the exact hockey-
// stick δ is smaller still; this is the pDP notion of Wang 2019, §4).
//
// Each loss is a quadratic aW² + bW + c in one standard normal, so its
// tail is a sum or difference of normal tails at the quadratic's roots
// (opsQuadTail: roots in the cancellation-free form, erfc for tails, both
// signs of a), and ε is found by bisection on that closed form. Wang
// (2019) bounds the same two variables with Gaussian tail inequalities;
// computing the tails exactly is never looser. Small leverage and small
// prediction error give a small ε_z: the paper's point that typical rows
// are far better protected than the worst case. Sources: Wang 2019 (pDP
// and the OPS analysis), Dimitrakakis et al. 2014 and Wang, Fienberg &
// Smola 2015 (OPS), Sherman & Morrison 1950.
//
// It returns an error when mu is negative or not finite, r is not finite,
// gamma is not finite and positive, or delta is not in (0, 1).
func OPSPrivacyLoss(mu, r, gamma, delta float64) (float64, error) {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(mu >= 0) || !finite(mu):
		return 0, fmt.Errorf("ops privacy loss: leverage mu must be finite and >= 0, got %v", mu)
	case !finite(r):
		return 0, fmt.Errorf("ops privacy loss: prediction error r must be finite, got %v", r)
	case !noise.ValidScale(gamma):
		return 0, fmt.Errorf("ops privacy loss: gamma must be finite and > 0, got %v", gamma)
	case !(delta > 0 && delta < 1):
		return 0, fmt.Errorf("ops privacy loss: delta must be in (0, 1), got %v", delta)
	}
	var worst float64
	for _, q := range opsLossQuadratics(mu, r, gamma) {
		eps, err := opsQuadQuantile(q, delta)
		if err != nil {
			return 0, fmt.Errorf("ops privacy loss: mu %v, r %v, gamma %v, delta %v: %w", mu, r, gamma, delta, err)
		}
		worst = math.Max(worst, eps)
	}
	return worst, nil
}

// opsQuad is the privacy-loss variable a·W² + b·W + c, W ~ N(0, 1).
type opsQuad struct{ a, b, c float64 }

// eval returns the loss at W = w.
func (q opsQuad) eval(w float64) float64 { return (q.a*w+q.b)*w + q.c }

// opsLossQuadratics returns L and L′ of OPSPrivacyLoss as quadratics in W.
// log1p keeps log(1+μ) accurate for the small leverages of large data
// sets, and μ′ = μ/(1+μ), 1 − μ′ = 1/(1+μ) are formed without cancellation.
func opsLossQuadratics(mu, r, gamma float64) [2]opsQuad {
	l1p := math.Log1p(mu)
	mup, onem := mu/(1+mu), 1/(1+mu)
	return [2]opsQuad{
		{a: mu / 2, b: -r * math.Sqrt(gamma*mu), c: -l1p/2 + gamma/2*r*r*mup},
		{a: -mup / 2, b: r * onem * math.Sqrt(gamma*mup), c: l1p/2 + gamma/2*r*r*mup*onem},
	}
}

// normTail returns P(W > x) = Φ(−x) for W ~ N(0, 1), accurate in the upper
// tail (erfc keeps relative accuracy where 1 − Φ(x) would cancel).
func normTail(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// opsQuadTail returns P(q.a·W² + q.b·W + q.c > eps) for W ~ N(0, 1) in
// closed form. Writing k = c − ε, the event is aW² + bW + k > 0; with
// discriminant D = b² − 4ak and roots w₁ < w₂:
//
//   - a > 0: probability 1 when D ≤ 0, else Φ(w₁) + Φ(−w₂) (two tails);
//   - a < 0: probability 0 when D ≤ 0, else Φ(w₂) − Φ(w₁) (an interval);
//   - a = 0: Φ(−(ε − c)/|b|), or 0 or 1 when b = 0 too.
//
// The roots are q/a and k/q with q = −(b + sign(b)·√D)/2, which avoids
// the cancellation of the textbook formula when b² ≫ |4ak|.
func opsQuadTail(q opsQuad, eps float64) float64 {
	k := q.c - eps
	if q.a == 0 {
		if q.b == 0 {
			if k > 0 {
				return 1
			}
			return 0
		}
		return normTail(-k / math.Abs(q.b))
	}
	disc := q.b*q.b - 4*q.a*k
	if !(disc > 0) {
		if q.a > 0 {
			return 1
		}
		return 0
	}
	s := -(q.b + math.Copysign(math.Sqrt(disc), q.b)) / 2
	w1, w2 := s/q.a, k/s
	if w1 > w2 {
		w1, w2 = w2, w1
	}
	if q.a > 0 {
		return normTail(-w1) + normTail(w2)
	}
	switch {
	case w1 >= 0:
		return normTail(w1) - normTail(w2)
	case w2 <= 0:
		return normTail(-w2) - normTail(-w1)
	default:
		return 0.5 * (math.Erf(w2/math.Sqrt2) - math.Erf(w1/math.Sqrt2))
	}
}

// opsQuadQuantile returns the smallest ε ≥ 0 (relative 1e-12, from above)
// with opsQuadTail(q, ε) ≤ delta. The tail is non-increasing in ε. The
// start of the search is an ε where the tail is at most delta: with t the
// two-sided normal quantile, P(|W| > t) = δ, the loss is at most
// c + max(a, 0)·t² + |b|·t whenever |W| ≤ t, and for a < 0 it never exceeds
// its maximum c + b²/(4|a|).
func opsQuadQuantile(q opsQuad, delta float64) (float64, error) {
	t := math.Sqrt2 * math.Erfcinv(delta)
	hi := q.c + math.Max(q.a, 0)*t*t + math.Abs(q.b)*t
	if q.a < 0 {
		hi = math.Min(hi, q.c+q.b*q.b/(4*-q.a))
	}
	return smallestEpsilon(func(eps float64) bool { return opsQuadTail(q, eps) <= delta }, math.Max(hi, 0))
}

// OPSLeaveOneOut computes, for rows of a regression data set, the
// leave-one-out quantities OPSPrivacyLoss needs, from the full data's
// sufficient statistics: A = XᵀX + λI is factored once, so each row costs
// O(d²). It holds no per-row state and is safe for concurrent use.
type OPSLeaveOneOut struct {
	d     int
	chol  mat.Cholesky
	theta *mat.VecDense // A⁻¹Xᵀy on the full data
	xtx   *mat.SymDense
	xty   *mat.VecDense
	lam   float64
}

// NewOPSLeaveOneOut factors A = xtx + lambda·I, where xtx = XᵀX and
// xty = Xᵀy are the sufficient statistics of the full data set (every row,
// including those whose certificates will be computed), on the scale of
// regression.Stats.Float (scaled rows). It returns an error on mismatched or
// non-finite inputs, a negative or non-finite lambda, or when A is not
// positive definite (lambda = 0 with a rank-deficient design).
func NewOPSLeaveOneOut(xtx *mat.SymDense, xty *mat.VecDense, lambda float64) (*OPSLeaveOneOut, error) {
	if xtx == nil || xty == nil {
		return nil, errors.New("ops leave-one-out: nil statistics")
	}
	d := xtx.SymmetricDim()
	if xty.Len() != d || d == 0 {
		return nil, fmt.Errorf("ops leave-one-out: XᵀX is %d×%d but Xᵀy has %d entries", d, d, xty.Len())
	}
	if !(lambda >= 0) || math.IsInf(lambda, 1) {
		return nil, fmt.Errorf("ops leave-one-out: lambda must be finite and >= 0, got %v", lambda)
	}
	a := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			v := xtx.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("ops leave-one-out: XᵀX entry (%d, %d) is %v", i+1, j+1, v)
			}
			if i == j {
				v += lambda
			}
			a.SetSym(i, j, v)
		}
		if v := xty.AtVec(i); math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("ops leave-one-out: Xᵀy entry %d is %v", i+1, v)
		}
	}
	l := &OPSLeaveOneOut{d: d, xtx: mat.NewSymDense(d, nil), xty: mat.NewVecDense(d, nil), lam: lambda, theta: mat.NewVecDense(d, nil)}
	l.xtx.CopySym(xtx)
	l.xty.CopyVec(xty)
	if !l.chol.Factorize(a) {
		return nil, fmt.Errorf("ops leave-one-out: XᵀX + %v·I is not positive definite", lambda)
	}
	if err := l.chol.SolveVecTo(l.theta, xty); err != nil {
		return nil, fmt.Errorf("ops leave-one-out: solve for the estimate: %w", err)
	}
	return l, nil
}

// slmThreshold is the smallest 1 − h (h the in-sample leverage) for which
// Row trusts the Sherman–Morrison update: dividing by 1 − h amplifies its
// rounding error by 1/(1 − h), so below 1e-6 (six digits at risk) Row
// refactors A − xxᵀ directly instead.
const slmThreshold = 1e-6

// Row returns the out-of-sample leverage mu = xᵀA₋₍z₎⁻¹x and the
// leave-one-out prediction error r = y − xᵀθ̂₋₍z₎ of the row z = (x, y),
// where A₋₍z₎ = A − xxᵀ and θ̂₋₍z₎ = A₋₍z₎⁻¹(Xᵀy − x·y) are the ridge
// quantities of the data without z. The row must be one of those the
// statistics were built from, on the same (scaled) scale.
//
// With u = A⁻¹x and the in-sample leverage h = xᵀu, Sherman–Morrison gives
// A₋₍z₎⁻¹ = A⁻¹ + uuᵀ/(1 − h), hence
//
//	mu = h/(1 − h),   r = (y − xᵀθ̂)/(1 − h),
//
// the classic leave-one-out identities (xᵀA₋₍z₎⁻¹ = uᵀ/(1 − h)). When
// 1 − h < 1e-6 it solves with a fresh factorization of A₋₍z₎ instead. It
// returns an error on a dimension mismatch, non-finite values, or when
// A₋₍z₎ is not positive definite (the row is not in the statistics, or
// lambda = 0 and z alone spans a direction).
func (l *OPSLeaveOneOut) Row(x []float64, y float64) (mu, r float64, err error) {
	if len(x) != l.d {
		return 0, 0, fmt.Errorf("ops leave-one-out: row has %d columns, statistics have %d", len(x), l.d)
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return 0, 0, fmt.Errorf("ops leave-one-out: target is %v", y)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0, fmt.Errorf("ops leave-one-out: column %d is %v", i+1, v)
		}
	}
	xv := mat.NewVecDense(l.d, slices.Clone(x))
	u := mat.NewVecDense(l.d, nil)
	if err := l.chol.SolveVecTo(u, xv); err != nil {
		return 0, 0, fmt.Errorf("ops leave-one-out: solve for the leverage: %w", err)
	}
	h := mat.Dot(xv, u)
	if oneMinus := 1 - h; oneMinus >= slmThreshold {
		return h / oneMinus, (y - mat.Dot(xv, l.theta)) / oneMinus, nil
	}
	return l.direct(xv, y)
}

// direct computes Row's quantities from a fresh factorization of
// A − xxᵀ = (XᵀX − xxᵀ) + λI, for rows with in-sample leverage near 1.
func (l *OPSLeaveOneOut) direct(xv *mat.VecDense, y float64) (mu, r float64, err error) {
	a := mat.NewSymDense(l.d, nil)
	b := mat.NewVecDense(l.d, nil)
	for i := range l.d {
		for j := i; j < l.d; j++ {
			v := l.xtx.At(i, j) - xv.AtVec(i)*xv.AtVec(j)
			if i == j {
				v += l.lam
			}
			a.SetSym(i, j, v)
		}
		b.SetVec(i, l.xty.AtVec(i)-xv.AtVec(i)*y)
	}
	var c mat.Cholesky
	if !c.Factorize(a) {
		return 0, 0, fmt.Errorf("ops leave-one-out: XᵀX − xxᵀ + %v·I is not positive definite (is the row in the statistics?)", l.lam)
	}
	u := mat.NewVecDense(l.d, nil)
	if err := c.SolveVecTo(u, xv); err != nil {
		return 0, 0, fmt.Errorf("ops leave-one-out: solve for the leverage: %w", err)
	}
	theta := mat.NewVecDense(l.d, nil)
	if err := c.SolveVecTo(theta, b); err != nil {
		return 0, 0, fmt.Errorf("ops leave-one-out: solve for the estimate: %w", err)
	}
	return mat.Dot(xv, u), y - mat.Dot(xv, theta), nil
}

// OPSLeverage returns the out-of-sample leverage mu and the leave-one-out
// prediction error r of the row (x, y) for OPSPrivacyLoss, given the full
// data's sufficient statistics xtx = XᵀX and xty = Xᵀy (the row included)
// and the ridge parameter lambda; see OPSLeaveOneOut.Row for the formulas
// (Sherman–Morrison on A − xxᵀ). It factors A on every call: for many rows
// of one data set use NewOPSLeaveOneOut once and call Row.
func OPSLeverage(xtx *mat.SymDense, xty *mat.VecDense, lambda float64, x []float64, y float64) (mu, r float64, err error) {
	l, err := NewOPSLeaveOneOut(xtx, xty, lambda)
	if err != nil {
		return 0, 0, fmt.Errorf("ops leverage: %w", err)
	}
	mu, r, err = l.Row(x, y)
	if err != nil {
		return 0, 0, fmt.Errorf("ops leverage: %w", err)
	}
	return mu, r, nil
}

// Summary returns the quantiles a release reports of its units'
// per-instance ε_u (SPEC section 4.6): the 50th, 90th and 99th percentiles
// and the maximum, by the nearest-rank definition (the p-quantile of n
// sorted values is the ⌈p·n⌉-th smallest). Nearest rank always returns a
// loss some unit actually has, never an interpolated one, and never
// understates the upper quantiles. The values are confidential like the
// certificates they summarise (DESIGN invariant 6). An empty slice, or
// one containing NaN, gives NaN for all four (a NaN loss is a bug upstream
// that a summary must not hide). eps is not modified.
func Summary(eps []float64) (p50, p90, p99, max float64) {
	nan := math.NaN()
	if len(eps) == 0 || slices.ContainsFunc(eps, math.IsNaN) {
		return nan, nan, nan, nan
	}
	s := slices.Clone(eps)
	slices.Sort(s)
	rank := func(p float64) float64 {
		// ⌈p·n⌉ computed in integers: p is 50, 90 or 99 percent.
		n := len(s)
		k := (int(p)*n + 99) / 100
		return s[k-1]
	}
	return rank(50), rank(90), rank(99), s[len(s)-1]
}

// zcdpEpsilon returns the smallest ε with noise.ZCDPDelta(ε, rho) ≤ delta,
// computed directly: noise.ZCDPDelta is the minimum over orders α > 1 of the
// conversion δ_α(ε) of Canonne, Kamath & Steinke 2020, Prop. 12, so its
// inverse is the minimum over α of
//
//	ε_α(δ) = α·ρ + log1p(−1/α) − log(δ·α)/(α − 1),
//
// each of which is a valid ε on its own. A golden-section search over
// log(α − 1) finds the minimum; the smallest value evaluated is returned,
// rounded up by a relative 1e-12, so the result is a valid bound even
// where the search falls short of the exact minimum. This is about a
// hundred times faster than inverting noise.ZCDPDelta by bisection, which
// matters when every unit of a window needs its own ε.
func zcdpEpsilon(rho, delta float64) float64 {
	if rho == 0 {
		return 0
	}
	if !(rho > 0) || math.IsInf(rho, 1) {
		return math.Inf(1)
	}
	lg := math.Log(delta)
	epsAt := func(t float64) float64 {
		a := 1 + math.Exp(t)
		return a*rho + math.Log1p(-1/a) - (lg+math.Log(a))/(a-1)
	}
	// The minimum is near α = 1 + √(log(1/δ)/ρ); bracket it generously.
	center := math.Sqrt(-lg / rho)
	lo, hi := math.Log(1e-9), math.Log(math.Max(16*(1+center), 16))
	phi := (math.Sqrt(5) - 1) / 2
	x1, x2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
	f1, f2 := epsAt(x1), epsAt(x2)
	best := math.Min(f1, f2)
	// 80 steps shrink the bracket (width < 40) by 0.618⁸⁰ ≈ 2e-17:
	// far below float64 resolution of α.
	for range 80 {
		if f1 < f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - phi*(hi-lo)
			f1 = epsAt(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + phi*(hi-lo)
			f2 = epsAt(x2)
		}
		best = math.Min(best, math.Min(f1, f2))
	}
	if math.IsNaN(best) {
		return math.Inf(1)
	}
	return math.Max(best, 0) * (1 + 1e-12)
}
