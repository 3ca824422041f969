package regression

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file implements the private linear regressions of SPEC section 4.5
// on the exact sufficient statistics of stats.go: sufficient
// statistics perturbation (SSP), its adaptive variant AdaSSP, one posterior
// sample (OPS) and its adaptive variant AdaOPS.
//
// Sources: Wang 2018 ("Revisiting differentially private linear
// regression: optimal and adaptive prediction & estimation in unbounded
// domain", UAI; SPEC seed 000) for AdaSSP and AdaOPS, and the author's
// reference code github.com/yuxiangw/optimal_dp_linear_regression
// (code/adassp.m, code/adaops.m), read for its constants; Dimitrakakis,
// Nelson, Mitrokotsa & Rubinstein 2014 and Wang, Fienberg & Smola 2015 for
// OPS; Dwork, Talwar, Thakurta & Zhang 2014 ("Analyze Gauss") and Sheffet
// 2017 for SSP; Canonne, Kamath & Steinke 2020 (CKS) for the discrete
// Gaussian, its zCDP guarantee (Thm. 4), its tails (Cor. 9: it is
// subgaussian with variance proxy σ², so P(Z ≥ tσ) ≤ e^{−t²/2}) and the
// conversion to (ε, δ) (Prop. 12, noise.ZCDPDelta).
//
// Common ground for every method. Rows are scaled (Scaling) so
// that ‖x‖∞ ≤ 1, ‖x‖₂ ≤ B_x = √d with d = Dim() (the intercept column
// included) and |y| ≤ B_y = 1. The neighbouring relation is add/remove one
// privacy unit, that is all of its at most L = MaxContributions rows in the
// window (SPEC section 0). Sensitivities, with proof sketches:
//
//   - Upper triangle of XᵀX (k = d(d+1)/2 entries). One row changes it by
//     u = (x_i x_j)_{i≤j} with ‖u‖₂² = Σ_{i≤j} x_i²x_j² = (‖x‖₂⁴ + ‖x‖₄⁴)/2
//     ≤ (d² + d)/2 = k, attained at x ∈ {−1, 1}^d; by the triangle
//     inequality a unit changes it by at most L·√k in L2 norm. In units of
//     q² = Quantum² = 2⁻³² (the statistics' integers) that is
//     L·√k·2³², attained by L rows with every |x_i| = 1. (SPEC section 0
//     lists L·B_x² = L·d for the Frobenius norm; the upper triangle holds
//     each off-diagonal entry once, so √k ≤ d is the smaller, exact bound.)
//   - Xᵀy (d entries): one row changes it by x·y with ‖x·y‖₂ ≤ √d, so a
//     unit by at most L·√d = L·B_x·B_y (SPEC section 0).
//   - λ_min(XᵀX): adding a unit adds P = Σ_{rows} x xᵀ ⪰ 0 with
//     λ_max(P) ≤ tr P ≤ L·d, and by Weyl's inequality
//     λ_min(A) ≤ λ_min(A + P) ≤ λ_min(A) + λ_max(P), so the change is in
//     [0, L·d] = [0, L·B_x²] (SPEC section 4.5).
//
// Exactness (SPEC section 2). XᵀX and Xᵀy are exact integers, so SSP and
// AdaSSP add exact discrete Gaussian noise to them as Release does to sums
// (noise.AddToUnits). λ_min is an eigenvalue, which floating-point solvers only
// approximate, with an error that grows with ‖XᵀX‖ and therefore with n, so
// the sensitivity of a computed eigenvalue is not L·d. Instead the released
// integer is the exact grid index k = ⌈λ_min/g⌉ − 1 = max{k: XᵀX − k·g·I ≻ 0},
// found by exact positive-definiteness tests (Sylvester's criterion on the
// leading principal minors, computed by fraction-free Bareiss elimination in
// big integers) started from a floating-point estimate. k is non-decreasing
// in λ_min and ⌈x + a⌉ − ⌈x⌉ ≤ ⌈a⌉, so neighbours' indices differ by at most
// S = ⌈L·d/g⌉ (the granularity argument of AddLaplace), the sensitivity
// charged. The grid g is the smallest power of two ≥ σ·2⁻²⁰ rather than
// SPEC's σ·2⁻⁴⁰: every grid step below a floating-point eigensolver's
// accuracy costs one more exact test, and the coarser grid still adds at
// most g ≤ σ·2⁻²⁰ to the sensitivity, which S already accounts for.
//
// Everything after the noise (solving the noisy normal equations, the
// ridge, unscaling) is post-processing.

// Method names one of the private regression algorithms.
type Method string

// The regression methods of SPEC section 4.5.
const (
	MethodSSP    Method = "ssp"    // sufficient statistics perturbation, fixed ridge λ
	MethodAdaSSP Method = "adassp" // SSP with a ridge chosen from a private λ_min
	MethodOPS    Method = "ops"    // one posterior sample, configured ridge λ
	MethodAdaOPS Method = "adaops" // one posterior sample, ridge chosen adaptively
)

// The values of Component.Purpose for regression releases.
const (
	// PurposeGram is the noisy upper triangle of XᵀX (SSP, AdaSSP).
	PurposeGram = "xtx"
	// PurposeXty is the noisy Xᵀy (SSP, AdaSSP).
	PurposeXty = "xty"
	// PurposeLambdaMin is the noisy smallest eigenvalue of XᵀX (AdaSSP,
	// OPS, AdaOPS).
	PurposeLambdaMin = "lambda_min"
	// PurposeLipschitz is the noisy log of the residual bound
	// B_y + B_x‖θ̂‖ (OPS, AdaOPS).
	PurposeLipschitz = "lipschitz"
	// PurposePosteriorSample is OPS's posterior sample, charged as an
	// (ε, δ)-DP mechanism (noise.ApproxDP).
	PurposePosteriorSample = "posterior_sample"
)

// DefaultRho is the failure probability of AdaSSP's λ_min lower
// bound (and the confidence level of AdaOPS's utility objective) when
// Spec.Rho is 0: the ρ = 0.05 of Wang 2018 and adassp.m.
const DefaultRho = 0.05

// MaxContributions bounds L = MaxContributions for regressions,
// so that L²·d(d+1)/2 and the group-privacy sums of OPS stay exact.
const MaxContributions = 1 << 20

// Internal constants of the regression mechanisms.
const (
	// gramUnit is q² = 2⁻³², the value of one unit of XᵀX and Xᵀy.
	gramUnit = Quantum * Quantum
	// lambdaGridBits: λ_min is released on the grid g = the smallest power
	// of two ≥ σ·2⁻²⁰ (see the file comment).
	lambdaGridBits = 20
	// opsNormalGrid is the grid of OPS's standard normal draws,
	// Z = 2⁻²⁰·N_Z(0, 2⁴⁰) (see Release).
	opsNormalGrid = 0x1p-20
	// opsFloorShare is α of adaops.m: the ridge makes the part of the
	// posterior's privacy loss that does not depend on γ at most α times
	// the per-row budget, leaving the rest to γ.
	opsFloorShare = 0.5
	// lipEval is η, a bound on the floating-point error of the computed
	// log(B_y + B_x‖θ̂‖) (see Release); it is added twice to the
	// sensitivity and once to the upper confidence bound.
	lipEval = 0x1p-40
	// lipGridSlack is the relative margin (1 + 2⁻²⁰) that absorbs the grid
	// of the Lipschitz release (see Release).
	lipGridSlack = 0x1p-20
	// maxLipMult caps the noise multiplier c of the Lipschitz release so
	// that its grid is at most 2⁻²⁰ of its sensitivity.
	maxLipMult = 1 << 19
)

// Spec is a regression release's configuration, the only input to
// its calibration (never the data: SPEC section 1).
type Spec struct {
	// Method is MethodSSP, MethodAdaSSP, MethodOPS or MethodAdaOPS.
	Method Method
	// Epsilon and Delta are the release's (ε, δ): ε finite and > 0, δ in
	// (0, 1) for every method (all are only approximately DP).
	Epsilon, Delta float64
	// Scaling maps raw rows to scaled ones; the statistics must have been
	// built with the same scaling.
	Scaling Scaling
	// MaxContributions is L, the most rows one privacy unit keeps per
	// window (enforced upstream), in [1, MaxContributions].
	MaxContributions int
	// Lambda is the ridge λ ≥ 0 on the scaled problem for MethodSSP and
	// MethodOPS. OPS raises it when λ + λ̃_min is too small for any
	// posterior to be private (see Release). It must be 0 for the
	// adaptive methods, which choose their own.
	Lambda float64
	// Rho is, for MethodAdaSSP, the failure probability of the private
	// lower bound on λ_min that sets the ridge (only utility depends on
	// it), and for MethodAdaOPS the confidence level of the excess-risk
	// bound its ridge minimizes. 0 means DefaultRho; otherwise in
	// (0, 1). It must be 0 for MethodSSP and MethodOPS. AdaOPS's privacy
	// rests on bounds whose failure probability is part of δ, never Rho.
	Rho float64
}

// rho returns Rho, or its default.
func (s Spec) rho() float64 {
	if s.Rho == 0 {
		return DefaultRho
	}
	return s.Rho
}

// validate reports the first problem with s, wrapped in ErrInvalidSpec.
func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: regression: "+format, append([]any{noise.ErrInvalidSpec}, args...)...)
	}
	switch s.Method {
	case MethodSSP, MethodAdaSSP, MethodOPS, MethodAdaOPS:
	default:
		return bad("unknown method %q (want ssp, adassp, ops or adaops)", s.Method)
	}
	if !(s.Epsilon > 0) || math.IsInf(s.Epsilon, 1) {
		return bad("epsilon must be finite and > 0, got %v", s.Epsilon)
	}
	if !(s.Delta > 0 && s.Delta < 1) {
		return bad("delta must be in (0, 1), got %v", s.Delta)
	}
	if s.MaxContributions < 1 || s.MaxContributions > MaxContributions {
		return bad("max contributions per window must be in [1, %d], got %d", MaxContributions, s.MaxContributions)
	}
	if err := s.Scaling.Validate(); err != nil {
		return fmt.Errorf("regression: %w", err)
	}
	adaptive := s.Method == MethodAdaSSP || s.Method == MethodAdaOPS
	switch {
	case adaptive && s.Lambda != 0:
		return bad("%s chooses its own ridge: lambda must be 0, got %v", s.Method, s.Lambda)
	case !(s.Lambda >= 0) || math.IsInf(s.Lambda, 1):
		return bad("lambda must be finite and >= 0, got %v", s.Lambda)
	case !adaptive && s.Rho != 0:
		return bad("rho is used by adassp and adaops only, got %v for %s", s.Rho, s.Method)
	case adaptive && s.Rho != 0 && !(s.Rho > 0 && s.Rho < 1):
		return bad("rho must be in (0, 1) (0: default %v), got %v", DefaultRho, s.Rho)
	}
	return nil
}

// Calibration is a Spec with the noise that makes it
// private. Build it with Calibrate: Release refuses one
// whose components differ from what Calibrate derives for its
// Spec.
type Calibration struct {
	Spec Spec
	// Components are what the accountant charges, in release order:
	//
	//   - ssp:    PurposeGram, PurposeXty;
	//   - adassp: PurposeLambdaMin, PurposeGram, PurposeXty;
	//   - ops, adaops: PurposeLambdaMin, PurposeLipschitz,
	//     PurposePosteriorSample.
	//
	// Discrete Gaussian components map to accountant.Mechanism{Kind:
	// string(c.Noise), Scale: c.Scale, Sensitivity: c.Sensitivity}, whose
	// charge Sensitivity²/(2·Scale²) is the component's zCDP ρ. For the
	// Gram matrix and Xᵀy, Quantum is q² = 2⁻³², Granularity the output
	// grid G and Sensitivity the L2 bound on the released grid vector (on
	// the value scale); for λ_min, Quantum = Granularity = g. The
	// Lipschitz component is normalized: its sensitivity
	// L·log(1 + B_x²/h) depends on the released λ̃_min, so Sensitivity is
	// 1 and Scale the multiplier c of its noise σ = c·(sensitivity) (see
	// Release); Quantum and Granularity are 0.
	//
	// For the Gaussian components Epsilon is the ε their joint zCDP
	// calibration targets (the release's ε for ssp and adassp, ε/2 for ops
	// and adaops) and Delta the δ at which that component alone meets it;
	// the guarantee comes from composing their ρ. The posterior sample
	// maps to accountant.Mechanism{Kind: "approx_dp", Epsilon: c.Epsilon,
	// Delta: c.Delta} with Epsilon = ε/2 and Delta = 2δ/3, which includes
	// the failure probabilities of the released bounds (see
	// Release).
	Components []noise.Component
	// Rho is the total zCDP ρ of the discrete Gaussian components.
	Rho float64

	plan regressionPlan
	// verified is a private copy of what Calibrate derived.
	// Release skips re-deriving while Spec, Components and Rho
	// still equal it; a calibration built or edited by hand is re-derived
	// and must match.
	verified *verifiedRegression
}

// verifiedRegression is a private copy of a derived calibration (the
// spec's bounds cloned, so that editing the caller's slice is noticed).
type verifiedRegression struct {
	spec  Spec
	comps []noise.Component
	rho   float64
}

// sameRegressionSpec reports whether a and b are equal, bounds included.
func sameRegressionSpec(a, b Spec) bool {
	return a.Method == b.Method && a.Epsilon == b.Epsilon && a.Delta == b.Delta &&
		a.MaxContributions == b.MaxContributions && a.Lambda == b.Lambda && a.Rho == b.Rho &&
		a.Scaling.Intercept == b.Scaling.Intercept && a.Scaling.TargetBounds == b.Scaling.TargetBounds &&
		slices.Equal(a.Scaling.FeatureBounds, b.Scaling.FeatureBounds)
}

// regressionPlan holds what Calibrate derives besides the
// components: the budget of the posterior sample and the failure
// probabilities of OPS's released bounds.
type regressionPlan struct {
	// epsGauss, deltaGauss: the (ε, δ) the Gaussian components meet
	// together.
	epsGauss, deltaGauss float64
	// epsRow, deltaRow: the per-row (ε₁, δ₁) of the posterior sample, from
	// (ε/2, δ/3) by group privacy over L rows (OPS, AdaOPS).
	epsRow, deltaRow float64
	// w: P(|W| > w) ≤ δ₁ for W ~ N(0, 1) (OPS, AdaOPS).
	w float64
	// tFail: P(Z ≥ tFail·σ) ≤ δ/6 for N_Z(0, σ²), the multiplier of the
	// released bounds' confidence margins (OPS, AdaOPS).
	tFail float64
}

// Calibrate validates s and derives the noise of a regression
// release. It reads the spec only, never data, so the charge is
// data-independent (SPEC section 1).
//
// Guarantee: Release with the result is (ε, δ)-DP under
// add/remove of one privacy unit (all of its at most L rows in the window),
// given the upstream row cap and the clamping of Scaling (the
// sensitivities are in the file comment).
//
// SSP and AdaSSP: every noise addition is discrete Gaussian, so the release
// is ρ-zCDP with ρ the sum of the components' Δ²/(2σ²) (CKS 2020, Thm. 4;
// Rényi divergences add over independent coordinates and adaptive
// releases), and (ε, δ)-DP with δ = noise.ZCDPDelta(ε, ρ) (CKS 2020, Prop. 12).
// Calibrate takes the largest ρ* meeting (ε, δ) and splits it
// equally: SSP ρ*/2 to XᵀX and Xᵀy; AdaSSP ρ*/3 to λ_min, XᵀX and Xᵀy, the
// equal thirds of Wang 2018 (Alg. 2) and adassp.m, there as ε/3 each. (With
// ‖θ‖ ≈ 1 the split minimizing the first-order error of θ̃ would give XᵀX
// √((d+1)/2) times Xᵀy's ρ; at d = 6 that lowers the error variance by
// only 9%, and it depends on the unknown θ.)
//
// OPS and AdaOPS: ε/4 to λ_min, ε/4 to the Lipschitz bound and ε/2 to the
// posterior sample (adaops.m), and δ in thirds as there (its
// log(6/δ) = log(2/(δ/3))): the two Gaussian releases are calibrated
// jointly through zCDP to (ε/2, δ/3), ρ split equally; the posterior sample
// gets (ε/2, δ/3); and the remaining δ/3 is the failure probability of the
// released bounds, δ/6 for each (see Release for why that is
// charged to δ). The posterior sample's per-row budget comes from group
// privacy: a mechanism (ε₁, δ₁)-DP for one row is, over the chain of L
// single-row steps, (L·ε₁, δ₁·Σ_{j<L} e^{j·ε₁})-DP, so ε₁ = ε/(2L) and
// δ₁ = (δ/3)·(e^{ε₁} − 1)/(e^{L·ε₁} − 1) (δ/3 for L = 1).
//
// Each σ is rounded up (to a whole number of grid steps, or 24 significant
// bits for the Lipschitz multiplier), which only lowers ρ, and δ is
// re-checked at the rounded values. Errors wrap ErrInvalidSpec.
func Calibrate(s Spec) (Calibration, error) {
	if err := s.validate(); err != nil {
		return Calibration{}, err
	}
	c, err := calibrateRegression(s)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate %s regression: %w", s.Method, err)
	}
	return c, nil
}

// calibrateRegression is Calibrate for a valid spec.
func calibrateRegression(s Spec) (Calibration, error) {
	d := s.Scaling.Dim()
	l := s.MaxContributions
	k := int64(d * (d + 1) / 2)
	c := Calibration{Spec: s}
	p := &c.plan
	p.epsGauss, p.deltaGauss = s.Epsilon, s.Delta
	ops := s.Method == MethodOPS || s.Method == MethodAdaOPS
	if ops {
		p.epsGauss, p.deltaGauss = s.Epsilon/2, s.Delta/3
	}
	rhoStar, err := largestRho(p.epsGauss, p.deltaGauss)
	if err != nil {
		return c, err
	}
	var comps []noise.Component
	switch s.Method {
	case MethodSSP:
		g, err := gramComponent(PurposeGram, l, k, rhoStar/2)
		if err != nil {
			return c, err
		}
		y, err := gramComponent(PurposeXty, l, int64(d), rhoStar/2)
		if err != nil {
			return c, err
		}
		comps = []noise.Component{g, y}
	case MethodAdaSSP:
		lm, err := lambdaMinComponent(l, d, rhoStar/3)
		if err != nil {
			return c, err
		}
		g, err := gramComponent(PurposeGram, l, k, rhoStar/3)
		if err != nil {
			return c, err
		}
		y, err := gramComponent(PurposeXty, l, int64(d), rhoStar/3)
		if err != nil {
			return c, err
		}
		comps = []noise.Component{lm, g, y}
	default: // OPS, AdaOPS
		lm, err := lambdaMinComponent(l, d, rhoStar/2)
		if err != nil {
			return c, err
		}
		lip, err := lipschitzComponent(rhoStar / 2)
		if err != nil {
			return c, err
		}
		post := noise.Component{Purpose: PurposePosteriorSample, Noise: noise.ApproxDP,
			Epsilon: s.Epsilon / 2, Delta: 2 * s.Delta / 3}
		comps = []noise.Component{lm, lip, post}
		p.epsRow = s.Epsilon / 2 / float64(l)
		p.deltaRow = s.Delta / 3
		if l > 1 {
			p.deltaRow *= math.Expm1(p.epsRow) / math.Expm1(float64(l)*p.epsRow)
		}
		if !(p.deltaRow > 0) {
			return c, fmt.Errorf("%w: the posterior sample's per-row delta underflows (epsilon × max contributions too large?)", noise.ErrInvalidSpec)
		}
		// The exact two-sided quantile, inflated by a relative 1e-9 against
		// the error of Erfcinv; at least √(log 6) so that OPSGamma's
		// argument 6·e^{−w²} is below 1 (a larger w is still a valid bound).
		p.w = math.Max(math.Sqrt2*math.Erfcinv(p.deltaRow), math.Sqrt(math.Log(6))) * (1 + 1e-9)
		p.tFail = math.Sqrt(2*math.Log(6/s.Delta)) * (1 + 1e-12)
	}
	for i := range comps {
		if comps[i].Noise == noise.DiscreteGaussian {
			r := componentRho(comps[i])
			c.Rho += r
			comps[i].Epsilon, comps[i].Delta = p.epsGauss, noise.ZCDPDelta(p.epsGauss, r)
		}
	}
	if dl := noise.ZCDPDelta(p.epsGauss, c.Rho); !(dl <= p.deltaGauss) {
		return c, fmt.Errorf("%w: rounded sigmas give rho %v, delta %v > %v", noise.ErrInvalidSpec, c.Rho, dl, p.deltaGauss)
	}
	c.Components = comps
	vs := s
	vs.Scaling.FeatureBounds = slices.Clone(s.Scaling.FeatureBounds)
	c.verified = &verifiedRegression{spec: vs, comps: slices.Clone(comps), rho: c.Rho}
	return c, nil
}

// largestRho returns a ρ (the largest up to a relative 1e-12, from below)
// with noise.ZCDPDelta(eps, ρ) ≤ delta.
func largestRho(eps, delta float64) (float64, error) {
	sigma1, err := noise.ZCDPGaussianSigma(eps, delta, 1)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", noise.ErrInvalidSpec, err)
	}
	// 1/(2σ²) rounded down by one ulp against the rounding of the products.
	return math.Nextafter(1/(2*sigma1*sigma1), 0), nil
}

// componentRho returns the zCDP ρ = Sensitivity²/(2·Scale²) the accountant
// charges for a discrete Gaussian component.
func componentRho(c noise.Component) float64 {
	r := c.Sensitivity / c.Scale
	return r * r / 2
}

// gramSensitivity returns the L2 sensitivity, on the value scale, of a
// vector of coords exact statistics each moved by at most one unit of
// value per row (the upper triangle of XᵀX with coords = d(d+1)/2, or Xᵀy
// with coords = d; see the file comment), released on the grid G:
// L·√coords, plus √coords·G when G > q² (regridding rounds each coordinate,
// which can add one grid step to each: the argument of
// AddSymmetricGaussian). It is rounded up.
func gramSensitivity(l int, coords int64, g float64) float64 {
	s := exactSqrtUp(float64(int64(l) * int64(l) * coords)) // L²·coords < 2⁵² for the allowed L and d
	if g > gramUnit {
		s = math.Nextafter(s+exactSqrtUp(float64(coords))*g, math.Inf(1))
	}
	return s
}

// exactSqrtUp returns the smallest float64 s with s² ≥ v exactly, for an
// exactly representable v ≥ 0: math.Sqrt is correctly rounded, and the
// fused s·s − v is the exact residual rounded once, so its sign is exact.
func exactSqrtUp(v float64) float64 {
	s := math.Sqrt(v)
	if math.FMA(s, s, -v) < 0 {
		s = math.Nextafter(s, math.Inf(1))
	}
	return s
}

// gramComponent calibrates the discrete Gaussian noise of a vector of exact
// statistics in units of q² (XᵀX's upper triangle or Xᵀy) to zCDP ρ: grid
// G = max(Granularity(σ), q²), σ = G·⌈Δ/(G·√(2ρ))⌉ with Δ =
// gramSensitivity(G). The grid depends on σ and σ on the grid, so it is
// found by the fixed-point iteration of Calibrate.
func gramComponent(purpose string, l int, coords int64, rho float64) (noise.Component, error) {
	g := noise.OutputGrid(gramSensitivity(l, coords, gramUnit)/math.Sqrt(2*rho), gramUnit)
	for range 4 {
		delta := gramSensitivity(l, coords, g)
		steps := math.Ceil(delta / g / math.Sqrt(2*rho))
		if !noise.ValidScale(steps) || steps > noise.MaxDiscreteScale {
			return noise.Component{}, fmt.Errorf("%w: %s noise scale %v grid steps is not finite, positive and at most 2^50 (epsilon too small?)", noise.ErrInvalidSpec, purpose, steps)
		}
		sigma := g * steps
		if g2 := noise.OutputGrid(sigma, gramUnit); g2 != g {
			g = g2
			continue
		}
		return noise.Component{Purpose: purpose, Noise: noise.DiscreteGaussian, Sensitivity: delta, Scale: sigma,
			Quantum: gramUnit, Granularity: g, ExpectedAbsError: g * noise.DiscreteGaussianAbsMean(steps)}, nil
	}
	return noise.Component{}, fmt.Errorf("%w: %s: the noise grid did not settle: the noise is so large that its grid outgrows the sensitivity (epsilon too small?)", noise.ErrInvalidSpec, purpose)
}

// lambdaGrid returns the grid of a λ_min release with noise σ: the smallest
// power of two ≥ σ·2⁻²⁰ (Granularity gives the one ≥ σ·2⁻⁴⁰).
func lambdaGrid(sigma float64) (float64, error) {
	g, err := noise.Granularity(sigma)
	if err != nil {
		return 0, err
	}
	return g * (1 << (noise.GridBits - lambdaGridBits)), nil
}

// lambdaMinComponent calibrates the discrete Gaussian noise of the λ_min
// grid index to zCDP ρ: sensitivity S = ⌈L·d/g⌉ steps of the grid g =
// lambdaGrid(σ), σ = g·⌈S/√(2ρ)⌉ (fixed-point iteration as for
// gramComponent).
func lambdaMinComponent(l, d int, rho float64) (noise.Component, error) {
	ld := float64(l) * float64(d) // exact: below 2²⁷
	g, err := lambdaGrid(ld / math.Sqrt(2*rho))
	if err != nil {
		return noise.Component{}, fmt.Errorf("%w: %s: %w", noise.ErrInvalidSpec, PurposeLambdaMin, err)
	}
	for range 4 {
		s := math.Ceil(ld / g) // ld/g is exact (g a power of two) and below 2⁵³ here
		steps := math.Ceil(s / math.Sqrt(2*rho))
		if !noise.ValidScale(steps) || steps > noise.MaxDiscreteScale || s > noise.MaxGridSteps {
			return noise.Component{}, fmt.Errorf("%w: %s noise scale %v grid steps is not finite, positive and at most 2^50 (epsilon too small?)", noise.ErrInvalidSpec, PurposeLambdaMin, steps)
		}
		sigma := g * steps
		g2, err := lambdaGrid(sigma)
		if err != nil {
			return noise.Component{}, fmt.Errorf("%w: %s: %w", noise.ErrInvalidSpec, PurposeLambdaMin, err)
		}
		if g2 != g {
			g = g2
			continue
		}
		return noise.Component{Purpose: PurposeLambdaMin, Noise: noise.DiscreteGaussian, Sensitivity: g * s, Scale: sigma,
			Quantum: g, Granularity: g, ExpectedAbsError: g * noise.DiscreteGaussianAbsMean(steps)}, nil
	}
	return noise.Component{}, fmt.Errorf("%w: %s: the noise grid did not settle: the noise is so large that its grid outgrows the sensitivity (epsilon too small?)", noise.ErrInvalidSpec, PurposeLambdaMin)
}

// lipschitzComponent returns the normalized Lipschitz component: noise
// multiplier c = 1/√(2ρ) rounded up to 24 significant bits, so that its
// charge 1/(2c²) ≤ ρ.
func lipschitzComponent(rho float64) (noise.Component, error) {
	c := noise.RoundUpSignificand(1 / math.Sqrt(2*rho))
	if !noise.ValidScale(c) || c*(1+lipGridSlack) > maxLipMult {
		return noise.Component{}, fmt.Errorf("%w: %s noise multiplier %v exceeds %d (epsilon too small?)", noise.ErrInvalidSpec, PurposeLipschitz, c, maxLipMult)
	}
	return noise.Component{Purpose: PurposeLipschitz, Noise: noise.DiscreteGaussian, Sensitivity: 1, Scale: c}, nil
}

// Result is a released regression: noisy, post-processed
// coefficients of one window.
type Result struct {
	// Coefficients are the fitted coefficients on the original scale, one
	// per feature (Scaling.Unscale).
	Coefficients []float64
	// Intercept is the fitted intercept on the original scale (present
	// even without an intercept column: the scaling is affine).
	Intercept float64
	// Scaled is θ̃ on the scaled problem, Dim() entries (the intercept
	// column's last).
	Scaled []float64
	// Lambda is the ridge λ actually used (scaled problem).
	Lambda float64
	// Gamma is the posterior's inverse temperature γ (OPS, AdaOPS; 0
	// otherwise).
	Gamma float64
	// StdErr is a noise-aware standard error of each original-scale
	// coefficient (one per feature): for SSP and AdaSSP the first-order
	// propagation of the known noise covariance through the solve (see
	// Release), for OPS and AdaOPS the posterior's (γA)⁻¹. It
	// covers the privacy noise only, not sampling variability, and is nil
	// when the noisy system is singular.
	StdErr []float64
	// LipschitzSigma is σ_ℓ of the Gaussian noise on the released log
	// Lipschitz bound ℓ = log(B_y + B_x‖θ̂‖) (OPS, AdaOPS; 0 otherwise).
	// It depends on the released λ_min bound, so it is not a constant of
	// the configuration; per-instance DP needs it.
	LipschitzSigma float64
}

// LipschitzEvalError is η, the bound on the floating-point error
// of the computed log Lipschitz bound ℓ that OPS and AdaOPS release: two
// evaluations of ℓ (a data set and its neighbour) differ from the exact
// values by at most 2η together.
const LipschitzEvalError = lipEval

// Release computes the regression release described by c from
// the window's exact statistics st, adding noise from n. It satisfies the
// guarantee stated by Calibrate for c.Spec ((ε, δ)-DP under
// add/remove of one privacy unit, given the upstream row cap and
// clamping). It returns an error, and releases nothing, for a nil n, a
// calibration that differs from Calibrate(c.Spec), statistics
// that cannot come from the accumulate stage, a failed noise draw, or (OPS)
// a posterior that cannot be formed.
//
// SSP: the upper triangle of XᵀX and Xᵀy, exact integers in units of q²,
// are regridded to their grids G and get independent exact discrete
// Gaussian noise (noise.AddToUnits); the noisy triangle is mirrored into a
// symmetric matrix (post-processing), and θ̃ = (XᵀX^ + λI)⁻¹ Xᵀy^ with the
// configured λ, by LU (a singular system falls back to the pseudo-inverse).
// StdErr: with M̃ = XᵀX^ + λI and E, e the noise, θ̃ − θ̂ ≈ M̃⁻¹(e − Eθ̃) to
// first order, whose covariance is M̃⁻¹[σ₂²I + σ₁²(‖θ̃‖²I + θ̃θ̃ᵀ −
// diag(θ̃²))]M̃⁻¹ (E's upper-triangle entries are iid with variance σ₁²,
// mirrored, so Cov((Eθ)_i, (Eθ)_k) is σ₁²‖θ‖² for i = k and σ₁²θ_iθ_k
// otherwise). Discrete Gaussian variance is σ² up to a relative
// 8π²σ²e^{−2π²σ²}, negligible at these σ.
//
// AdaSSP (Wang 2018, Alg. 2; adassp.m; SPEC section 4.5): first the λ_min
// grid index (file comment) with noise σ₃ and the (1 − ρ) lower confidence
// bound λ̃_min = max(g(k + Z) − σ₃·√(2 log(1/ρ)), 0) (g·k < λ_min and the
// discrete Gaussian's subgaussian tail, CKS Cor. 9); then the ridge
// λ = max(0, σ₁·√(d·log(2d²/ρ)) − λ̃_min), σ₁ the noise of each XᵀX entry
// (the paper's high-probability bound on the noise matrix's norm); then SSP
// with that λ. adassp.m also adds I to XᵀX and draws the symmetric noise
// as (Z + Zᵀ)/2; here XᵀX is unmodified and the noise iid per entry.
//
// OPS (Dimitrakakis et al. 2014; Wang et al. 2015) and AdaOPS (Wang 2018,
// §4.2; adaops.m). With A = XᵀX + λI and θ̂ = A⁻¹Xᵀy the output is one
// sample θ̃ ~ N(θ̂, (γA)⁻¹). Steps:
//
//  1. λ̃_min = max(g(k + Z) − σ₃·t − L·B_x², 0), t = √(2 log(6/δ)), a lower
//     bound on λ_min(XᵀX) that fails with probability at most δ/6 (see
//     below for the L·B_x²).
//  2. The ridge. The part of the posterior's per-row privacy loss that does
//     not depend on γ is at most B_x²(1 + w²)/(2h), h = λ + λ̃_min (see
//     3); λ ≥ h_min − λ̃_min with h_min = B_x²(1 + w²)/(2α·ε₁), α = 1/2,
//     keeps it at half the per-row budget ε₁ (adaops.m's lamb_target).
//     OPS uses max(λ_config, h_min − λ̃_min); AdaOPS minimizes, over
//     λ ≥ max(0, h_min − λ̃_min), adaops.m's objective
//     J(λ) = K·(1 + B_x²/h)^{2C}/h + λ: a high-probability bound on the
//     excess empirical risk of the sample, χ²_d·Lip²·w²/(ε̄²h) with
//     χ = d + 2√(d log(1/ρ)) + 2 log(1/ρ) (Laurent–Massart), ε̄ = ε₁/2 and
//     Lip ≈ B_x²·(1 + B_x²/h)^C, the inflation C = L(c·t + 1) of the
//     released Lipschitz bound (step 3), plus the ridge's bias λ (‖θ‖ ≈
//     1). K = χ·B_x⁴·w²/ε̄². J is convex; its minimum is found by bisection
//     on J′. λ is rounded up to a multiple of q² so that A is exact.
//  3. ℓ = log(B_y + B_x‖θ̂‖) released with noise σ_ℓ = c·Δ_ℓ·(1 + 2⁻²⁰),
//     Δ_ℓ = L·log(1 + B_x²/h) + 2η. Sensitivity (derived for this
//     package, the argument behind adaops.m's log-scale release): for
//     D' = D plus one row (x, y), A' = A + xxᵀ, θ̂' − θ̂ = A'⁻¹x(y − xᵀθ̂)
//     and θ̂ − θ̂' = −A⁻¹x(y − xᵀθ̂'), so with λ_min(A) ≥ h (both
//     directions use the smaller data set's A or a larger one)
//     B_y + B_x‖θ̂'‖ ≤ (1 + B_x²/h)(B_y + B_x‖θ̂‖) and the same with the
//     roles swapped; over a unit's L rows |Δℓ| ≤ L·log(1 + B_x²/h). θ̂ is
//     solved exactly (fraction-free elimination in big integers), so the
//     computed ℓ differs from the exact one by at most η = 2⁻⁴⁰ (roundings
//     of ‖θ̂‖², √, ×B_x, +B_y and log: a few 2⁻⁵³ relative), whence 2η. The
//     value is released by AddGaussian (grid g_ℓ ≤ σ_ℓ·2⁻³⁹ ≤ Δ_ℓ·2⁻²⁰
//     because c ≤ 2¹⁹, so the grid index moves by at most
//     ⌈Δ_ℓ/g_ℓ⌉·g_ℓ ≤ Δ_ℓ(1 + 2⁻²⁰)), giving zCDP ρ ≤ 1/(2c²), the
//     component's charge, whenever λ_min(A) ≥ h. The upper bound used is
//     R = exp(ℓ̃ + σ_ℓ·t + g_ℓ/2 + η + L·log(1 + B_x²/h)): ℓ ≤ ℓ̃ + σ_ℓ·t +
//     g_ℓ/2 + η except with probability δ/6, and the last term extends it
//     to every data set between D and its neighbour (the chain below).
//     Lip = B_x·R.
//  4. γ = OPSGamma(ε₁, δ₁, h, Lip, B_x), which uses w, the two-sided
//     normal quantile with P(|W| > w) = δ₁. Per-row guarantee (derived; SPEC
//     section 4.6 gives the exact loss): adding a row z = (x, y) to D,
//     with μ = xᵀA⁻¹x ≤ B_x²/h and r = y − xᵀθ̂, |r| ≤ R (A, θ̂ of D), the
//     privacy loss is −½log(1+μ) + (μ/2)W² − r√(γμ)W + (γ/2)r²μ/(1+μ)
//     and in the other direction ½log(1+μ) − (μ'/2)W² + r(1−μ')√(γμ')W +
//     (γ/2)r²μ'(1−μ'), μ' = μ/(1+μ), with W ~ N(0, 1). On |W| ≤ w both
//     are at most B_x²w²/(2h) + Lip·w·√(γ/h) + γ·Lip²/(2(h + B_x²)) (each
//     term grows with μ and |r|; ½log(1+μ) ≤ μ/2 bounds the second's
//     first term), which is below ε₁ when √γ is at most the positive root
//     of OPSGamma's quadratic in w² (its constant
//     term B_x²(1 + w²)/(2h) covers both first terms), so each direction
//     is (ε₁, δ₁)-DP. (SPEC's log(6/δ) in place of w² would not give δ:
//     P(|W| > √log(6/δ)) is of order √δ; TestOPSCalibrationExactTail
//     checks the result against the exact loss.) Group privacy over the unit's L
//     rows D = D₀ ⊂ D₁ ⊂ … ⊂ D_L = D' gives (ε/2, δ/3) (see
//     Calibrate); each step needs λ_min(A_{D_j}) ≥ h, true since
//     λ_min only grows along the chain, and R ≥ B_y + B_x‖θ̂_{D_j}‖, true by
//     the chain factor in R whether the release ran on D₀ or D_L.
//  5. θ̃ = θ̂ + U⁻¹Z/√γ with A = UᵀU (Cholesky), whose covariance is
//     (γA)⁻¹.
//
// Why the bounds' failures are charged to δ. For a pair D₀ ⊂ D_L, call
// the released (λ̃_min, ℓ̃) good when h ≤ λ_min(A_{D₀}) and R covers the
// chain. Under D₀ the λ_min bound fails with probability ≤ δ/6; under D_L,
// λ̃_min ≤ λ_min(XᵀX_{D_L}) − L·B_x² + noise ≤ λ_min(XᵀX_{D₀}) + noise
// (Weyl), so it fails with the same probability: that is what the L·B_x²
// in step 1 buys. On the λ good event the ℓ bound fails with probability
// ≤ δ/6 under either. Let M' be the mechanism that outputs ⊥ whenever the
// outputs are not good (a device of the proof only). Given good outputs
// the steps have the guarantees above, so M' is, for this pair, the
// adaptive composition of a (ρ_λ + ρ_ℓ)-zCDP part and an (ε/2, δ/3)-DP
// part, which the accountant charges. For any S of real outputs,
// P(M(D) ∈ S) ≤ P(M'(D) ∈ S) + δ/3 and P(M'(D') ∈ S) ≤ P(M(D') ∈ S), so
// M pays δ/3 more than M': the approx_dp component's Delta = 2δ/3 includes
// it, and the accountant converts the RDP part at δ_B − Σδ_approx.
//
// Documented deviations of OPS from its proof: the guarantee is proved for
// a continuous standard normal Z, whereas Z here is 2⁻²⁰·N_Z(0, 2⁴⁰), a
// 2⁻²⁰-grid approximation drawn exactly; and θ̂ (rounded from the exact
// solution), the Cholesky factor and the sample are computed in float64,
// which SPEC section 2's floating-point argument does not cover. The
// released λ̃_min and ℓ̃ are exact.
func Release(c Calibration, st Stats, n noise.Sampler) (Result, error) {
	if n == nil {
		return Result{}, errors.New("release regression: nil noise")
	}
	fresh := c
	if v := c.verified; v == nil || !sameRegressionSpec(v.spec, c.Spec) || v.rho != c.Rho || !slices.Equal(v.comps, c.Components) {
		var err error
		if fresh, err = Calibrate(c.Spec); err != nil {
			return Result{}, fmt.Errorf("release regression: %w", err)
		}
		if !slices.Equal(c.Components, fresh.Components) || c.Rho != fresh.Rho {
			return Result{}, errors.New("release regression: calibration does not fit its spec (build it with CalibrateRegression)")
		}
	}
	sp := c.Spec
	if err := st.regressionCheck(sp.Scaling.Dim()); err != nil {
		return Result{}, fmt.Errorf("release %s regression: %w", sp.Method, err)
	}
	var r Result
	var err error
	switch sp.Method {
	case MethodSSP, MethodAdaSSP:
		r, err = releaseSSP(fresh, st, n)
	default:
		r, err = releaseOPS(fresh, st, n)
	}
	if err != nil {
		return Result{}, fmt.Errorf("release %s regression: %w", sp.Method, err)
	}
	if r.Coefficients, r.Intercept, err = sp.Scaling.Unscale(r.Scaled); err != nil {
		return Result{}, fmt.Errorf("release %s regression: %w", sp.Method, err)
	}
	if r.StdErr != nil {
		ay, _ := affine(sp.Scaling.TargetBounds)
		se := make([]float64, len(sp.Scaling.FeatureBounds))
		for j, b := range sp.Scaling.FeatureBounds {
			a, _ := affine(b)
			se[j] = r.StdErr[j] * math.Abs(a/ay)
		}
		r.StdErr = se
	}
	return r, nil
}

// regressionCheck reports statistics that cannot have come from the
// accumulate stage for d columns: bugs upstream, not properties of the
// data. Every entry of XᵀX and Xᵀy is a sum of N products of at most 2³²
// units in magnitude, and XᵀX's diagonal is a sum of squares.
func (st Stats) regressionCheck(d int) error {
	if st.Dim() != d || len(st.XtX) != d*(d+1)/2 {
		return fmt.Errorf("statistics have %d columns (%d Gram entries), spec has %d", st.Dim(), len(st.XtX), d)
	}
	if st.N < 0 || st.N > MaxRows {
		return fmt.Errorf("row count %d is outside [0, %d]", st.N, int64(MaxRows))
	}
	limit := st.N << 32 // below 2⁶³
	for i := range d {
		for j := i; j < d; j++ {
			v := st.XtX[upperIndex(d, i, j)]
			if v < -limit || v > limit || (i == j && v < 0) {
				return fmt.Errorf("XᵀX entry (%d, %d) = %d is impossible for %d rows", i+1, j+1, v, st.N)
			}
		}
		if v := st.Xty[i]; v < -limit || v > limit {
			return fmt.Errorf("Xᵀy entry %d = %d is impossible for %d rows", i+1, v, st.N)
		}
	}
	return nil
}

// releaseSSP is Release for SSP and AdaSSP.
func releaseSSP(c Calibration, st Stats, n noise.Sampler) (Result, error) {
	sp := c.Spec
	d := sp.Scaling.Dim()
	comps := c.Components
	lambda := sp.Lambda
	if sp.Method == MethodAdaSSP {
		cl := comps[0]
		comps = comps[1:]
		noisy, err := releaseLambdaMin(cl, st, n)
		if err != nil {
			return Result{}, err
		}
		rho := sp.rho()
		lamTilde := math.Max(noisy-cl.Scale*math.Sqrt(2*math.Log(1/rho)), 0)
		sigma1 := comps[0].Scale
		lambda = math.Max(0, sigma1*math.Sqrt(float64(d)*math.Log(2*float64(d*d)/rho))-lamTilde)
	}
	m, xty, err := noisyGram(comps[0], comps[1], st, n)
	if err != nil {
		return Result{}, err
	}
	for i := range d {
		m.SetSym(i, i, m.At(i, i)+lambda)
	}
	theta, inv, err := solveNoisy(m, xty)
	if err != nil {
		return Result{}, err
	}
	r := Result{Scaled: theta, Lambda: lambda}
	if inv != nil {
		r.StdErr = sspStdErr(inv, theta, comps[0].Scale, comps[1].Scale)
	}
	return r, nil
}

// noisyGram releases the upper triangle of XᵀX and Xᵀy with the noise of
// cg and cy (noise.AddToUnits: exact regridding, exact discrete Gaussian noise,
// on the value scale) and mirrors the triangle into a symmetric matrix.
func noisyGram(cg, cy noise.Component, st Stats, n noise.Sampler) (*mat.SymDense, *mat.VecDense, error) {
	d := st.Dim()
	xtx := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			v, err := noise.AddToUnits(n, cg, st.XtX[upperIndex(d, i, j)])
			if err != nil {
				return nil, nil, fmt.Errorf("XᵀX entry (%d, %d): %w", i+1, j+1, err)
			}
			xtx.SetSym(i, j, v)
		}
	}
	xty := mat.NewVecDense(d, nil)
	for i := range d {
		v, err := noise.AddToUnits(n, cy, st.Xty[i])
		if err != nil {
			return nil, nil, fmt.Errorf("Xᵀy entry %d: %w", i+1, err)
		}
		xty.SetVec(i, v)
	}
	return xtx, xty, nil
}

// solveNoisy solves m·θ = b for the noisy (possibly indefinite) symmetric
// m and returns θ and m⁻¹ (nil when m is singular, in which case θ is the
// minimum-norm least-squares solution through the SVD). It is
// post-processing.
func solveNoisy(m *mat.SymDense, b *mat.VecDense) ([]float64, *mat.Dense, error) {
	d := b.Len()
	var inv mat.Dense
	err := inv.Inverse(m)
	var cond mat.Condition
	if err == nil || (errors.As(err, &cond) && !math.IsInf(float64(cond), 1)) {
		var x mat.VecDense
		x.MulVec(&inv, b)
		if theta := x.RawVector().Data; allFinite(theta) {
			return slices.Clone(theta), &inv, nil
		}
	}
	var svd mat.SVD
	if !svd.Factorize(m, mat.SVDThin) {
		return nil, nil, errors.New("the noisy normal equations could not be solved (SVD failed)")
	}
	rank := svd.Rank(1e-12)
	if rank == 0 {
		return make([]float64, d), nil, nil
	}
	var x mat.Dense
	svd.SolveTo(&x, b, rank)
	theta := make([]float64, d)
	for i := range d {
		theta[i] = x.At(i, 0)
	}
	if !allFinite(theta) {
		return nil, nil, errors.New("the noisy normal equations have no finite solution")
	}
	return theta, nil, nil
}

// allFinite reports whether every v is finite.
func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// sspStdErr returns the first-order noise standard errors of the scaled
// coefficients (see Release): the square roots of the diagonal
// of inv·S·inv with S = σ_y²I + σ_g²(‖θ‖²I + θθᵀ − diag(θ²)).
func sspStdErr(inv *mat.Dense, theta []float64, sigmaGram, sigmaXty float64) []float64 {
	d := len(theta)
	norm2 := 0.0
	for _, t := range theta {
		norm2 += t * t
	}
	s := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			v := sigmaGram * sigmaGram * theta[i] * theta[j]
			if i == j {
				v = sigmaXty*sigmaXty + sigmaGram*sigmaGram*norm2
			}
			s.SetSym(i, j, v)
		}
	}
	var tmp, cov mat.Dense
	tmp.Mul(inv, s)
	cov.Mul(&tmp, inv.T())
	se := make([]float64, d)
	for i := range d {
		se[i] = math.Sqrt(math.Max(cov.At(i, i), 0))
	}
	return se
}

// releaseLambdaMin releases λ_min(XᵀX) with comp's noise: the exact grid
// index k = ⌈λ_min/g⌉ − 1 (lambdaMinIndex) plus Z ~ N_Z(0, (σ/g)²), returned
// as g·(k + Z), computed exactly and rounded to float64 (post-processing).
func releaseLambdaMin(comp noise.Component, st Stats, n noise.Sampler) (float64, error) {
	g := comp.Granularity
	xtx, _, _, _ := st.Float()
	guess := 0.0
	var eig mat.EigenSym
	if eig.Factorize(xtx, false) {
		guess = eig.Values(nil)[0]
	}
	k, err := lambdaMinIndex(st.XtX, st.Dim(), g, guess)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", comp.Purpose, err)
	}
	z, err := n.DiscreteGaussian(comp.Scale / g)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", comp.Purpose, err)
	}
	k.Add(k, big.NewInt(z))
	v, _ := new(big.Float).SetInt(k).Float64()
	out := v * g
	if math.IsInf(out, 0) {
		return 0, fmt.Errorf("%s: noisy value is not representable", comp.Purpose)
	}
	return out, nil
}

// maxExactTests bounds the exact positive-definiteness tests of one λ_min
// search: galloping and bisection over at most 2¹⁵⁰ grid steps.
const maxExactTests = 400

// lambdaMinIndex returns k = ⌈λ_min/g⌉ − 1, the largest integer with
// XᵀX − k·g·I ≻ 0, for the exact statistics xtx (upper triangle, units of
// q²) of d columns and a power-of-two grid g. guess is a floating-point
// estimate of λ_min; the search gallops outward from it and then bisects,
// so its accuracy affects only the number of exact tests. k = −1 is always
// valid because XᵀX ⪰ 0; an XᵀX that fails it is not a Gram matrix, an
// error.
func lambdaMinIndex(xtx []int64, d int, g, guess float64) (*big.Int, error) {
	e := noise.Log2Exact(g)
	base := min(-32, e) // both XᵀX·2⁻³² and k·2^e are integers in units of 2^base
	aShift, tShift := uint(-32-base), uint(e-base)
	tests := 0
	pd := func(k *big.Int) bool {
		tests++
		t := new(big.Int).Lsh(k, tShift)
		return bareissPD(gramBig(xtx, d, aShift, t))
	}
	one := big.NewInt(1)
	minusOne := big.NewInt(-1)
	if !pd(minusOne) {
		return nil, errors.New("XᵀX is not positive semidefinite: the statistics are corrupt")
	}
	start := 0.0
	if q := guess / g; q > 0 && !math.IsInf(q, 1) && !math.IsNaN(q) {
		start = math.Floor(q)
	}
	k0, _ := new(big.Float).SetFloat64(start).Int(nil)
	var lo, hi *big.Int // pd(lo), !pd(hi)
	step := big.NewInt(1)
	if pd(k0) {
		lo = k0
		for {
			if tests > maxExactTests {
				return nil, errors.New("lambda_min search did not converge")
			}
			c := new(big.Int).Add(k0, step)
			if !pd(c) {
				hi = c
				break
			}
			lo = c
			step.Lsh(step, 1)
		}
	} else {
		hi = k0
		for {
			if tests > maxExactTests {
				return nil, errors.New("lambda_min search did not converge")
			}
			c := new(big.Int).Sub(k0, step)
			if c.Cmp(minusOne) <= 0 {
				lo = minusOne
				break
			}
			if pd(c) {
				lo = c
				break
			}
			hi = c
			step.Lsh(step, 1)
		}
	}
	for diff := new(big.Int); diff.Sub(hi, lo).Cmp(one) > 0; {
		if tests > maxExactTests {
			return nil, errors.New("lambda_min search did not converge")
		}
		mid := new(big.Int).Add(lo, hi)
		mid.Rsh(mid, 1) // floor, also for negative sums
		if pd(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// gramBig returns the d×d symmetric big-integer matrix xtx·2^shift − t·I
// (only the upper triangle is meaningful), from the upper triangle xtx.
func gramBig(xtx []int64, d int, shift uint, t *big.Int) [][]*big.Int {
	m := make([][]*big.Int, d)
	for i := range d {
		m[i] = make([]*big.Int, d)
		for j := i; j < d; j++ {
			v := new(big.Int).Lsh(big.NewInt(xtx[upperIndex(d, i, j)]), shift)
			if i == j {
				v.Sub(v, t)
			}
			m[i][j] = v
		}
	}
	return m
}

// bareissPD reports whether the symmetric integer matrix m (upper triangle;
// modified) is positive definite, by Sylvester's criterion: all leading
// principal minors positive. Fraction-free Bareiss elimination without
// pivoting computes them exactly as its pivots: after step k, entry
// (i, j), i, j > k, is the minor of rows 0..k, i and columns 0..k, j, and
// the division by the previous pivot is exact (Bareiss 1968). Symmetry is
// preserved by each step, so only the upper triangle is updated.
func bareissPD(m [][]*big.Int) bool {
	d := len(m)
	prev := big.NewInt(1)
	t := new(big.Int)
	for k := range d {
		p := m[k][k]
		if p.Sign() <= 0 {
			return false
		}
		for i := k + 1; i < d; i++ {
			for j := i; j < d; j++ {
				v := m[i][j]
				v.Mul(v, p)
				v.Sub(v, t.Mul(m[k][i], m[k][j]))
				v.Quo(v, prev)
			}
		}
		prev = p
	}
	return true
}

// exactRidgeSolve solves (XᵀX + λI)θ = Xᵀy exactly for the statistics st
// and λ = lambdaUnits·q², by fraction-free Bareiss elimination on the
// integer system (q² cancels) and fraction-free back substitution: it
// returns det·θ (integers, by Cramer's rule) and det = det(XᵀX + λI) > 0.
// It returns an error when a leading minor is not positive (the system is
// not positive definite).
func exactRidgeSolve(st Stats, lambdaUnits *big.Int) (num []*big.Int, det *big.Int, err error) {
	d := st.Dim()
	a := make([][]*big.Int, d)
	for i := range d {
		a[i] = make([]*big.Int, d+1)
		for j := range d {
			lo, hi := min(i, j), max(i, j)
			a[i][j] = big.NewInt(st.XtX[upperIndex(d, lo, hi)])
		}
		a[i][i].Add(a[i][i], lambdaUnits)
		a[i][d] = big.NewInt(st.Xty[i])
	}
	prev := big.NewInt(1)
	t := new(big.Int)
	for k := range d {
		p := a[k][k]
		if p.Sign() <= 0 {
			return nil, nil, errors.New("XᵀX + λI is not positive definite")
		}
		for i := k + 1; i < d; i++ {
			for j := k + 1; j <= d; j++ {
				v := a[i][j]
				v.Mul(v, p)
				v.Sub(v, t.Mul(a[i][k], a[k][j]))
				v.Quo(v, prev)
			}
		}
		prev = p
	}
	det = a[d-1][d-1]
	num = make([]*big.Int, d)
	for i := d - 1; i >= 0; i-- {
		v := new(big.Int).Mul(det, a[i][d])
		for j := i + 1; j < d; j++ {
			v.Sub(v, t.Mul(a[i][j], num[j]))
		}
		num[i] = v.Quo(v, a[i][i])
	}
	return num, det, nil
}

// releaseOPS is Release for OPS and AdaOPS (see its steps).
func releaseOPS(c Calibration, st Stats, n noise.Sampler) (Result, error) {
	sp, p := c.Spec, c.plan
	d := sp.Scaling.Dim()
	l := float64(sp.MaxContributions)
	bx := sp.Scaling.BX()
	bx2 := float64(d) // B_x² exactly
	cl, clip := c.Components[0], c.Components[1]

	// 1. The lower bound on λ_min(XᵀX). The float64 noisy value and the
	// two subtractions each round by at most 2⁻⁵³ of the magnitudes
	// involved; four times that is subtracted as well.
	noisy, err := releaseLambdaMin(cl, st, n)
	if err != nil {
		return Result{}, err
	}
	shift := cl.Scale*p.tFail + l*bx2
	lamTilde := math.Max(noisy-shift-4*0x1p-52*(math.Abs(noisy)+shift), 0)

	// 2. The ridge, rounded up to a multiple of q².
	hMin := bx2 * (1 + p.w*p.w) / (2 * opsFloorShare * p.epsRow)
	lo := math.Max(0, hMin-lamTilde)
	var lambda float64
	if sp.Method == MethodOPS {
		lambda = math.Max(sp.Lambda, lo)
	} else {
		lambda = adaopsLambda(lamTilde, lo, p, d, sp.MaxContributions, clip.Scale, sp.rho())
	}
	lambdaUnits, lambda := ridgeUnits(lambda)
	h := roundDown(lambda + lamTilde)
	if !(h > 0) || math.IsInf(h, 1) {
		return Result{}, fmt.Errorf("lambda + lambda_min = %v is not positive", h)
	}

	// 3. θ̂ exactly, and the log residual bound released.
	num, det, err := exactRidgeSolve(st, lambdaUnits)
	if err != nil {
		return Result{}, err
	}
	thetaHat, ell := ridgeEll(num, det, bx)
	chain := l * math.Log1p(bx2/h)
	deltaEll := (chain + 2*lipEval) * (1 + 1e-12)
	sigmaEll := clip.Scale * deltaEll * (1 + lipGridSlack) * (1 + 1e-12)
	ellTilde, err := noise.AddGaussian(n, ell, sigmaEll)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", PurposeLipschitz, err)
	}
	gEll, err := noise.Granularity(sigmaEll)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", PurposeLipschitz, err)
	}
	lip := bx * math.Exp(ellTilde+sigmaEll*p.tFail+gEll/2+lipEval+chain) * (1 + 1e-12)
	if math.IsInf(lip, 1) {
		return Result{}, fmt.Errorf("%s: the released bound overflows", PurposeLipschitz)
	}

	// 4. γ for the per-row budget.
	gamma, err := OPSGamma(p.epsRow, p.deltaRow, h, lip, bx)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", PurposePosteriorSample, err)
	}

	// 5. The sample θ̂ + U⁻¹Z/√γ.
	a, _, _, _ := st.Float()
	for i := range d {
		a.SetSym(i, i, a.At(i, i)+lambda)
	}
	var chol mat.Cholesky
	if !chol.Factorize(a) {
		return Result{}, fmt.Errorf("%s: XᵀX + λI is not numerically positive definite", PurposePosteriorSample)
	}
	z := mat.NewVecDense(d, nil)
	for i := range d {
		k, err := n.DiscreteGaussian(1 / opsNormalGrid)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", PurposePosteriorSample, err)
		}
		z.SetVec(i, float64(k)*opsNormalGrid/math.Sqrt(gamma))
	}
	var u mat.TriDense
	chol.UTo(&u)
	var e mat.VecDense
	if err := e.SolveVec(&u, z); err != nil {
		return Result{}, fmt.Errorf("%s: %w", PurposePosteriorSample, err)
	}
	theta := make([]float64, d)
	for i := range d {
		theta[i] = thetaHat[i] + e.AtVec(i)
	}
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		return Result{}, fmt.Errorf("%s: %w", PurposePosteriorSample, err)
	}
	se := make([]float64, d)
	for i := range d {
		se[i] = math.Sqrt(math.Max(inv.At(i, i), 0) / gamma)
	}
	if !allFinite(theta) {
		return Result{}, fmt.Errorf("%s: the sample is not finite", PurposePosteriorSample)
	}
	return Result{Scaled: theta, Lambda: lambda, Gamma: gamma, StdErr: se, LipschitzSigma: sigmaEll}, nil
}

// roundDown returns x lowered by a relative 2⁻⁵⁰ (and at least one ulp),
// so that a lower bound computed as a sum of non-negative terms with a few
// roundings stays one.
func roundDown(x float64) float64 {
	return math.Nextafter(x-math.Abs(x)*0x1p-50, math.Inf(-1))
}

// ridgeUnits rounds λ ≥ 0 up to a multiple of q² and returns it in units
// of q² and as a float64 no larger than the exact multiple.
func ridgeUnits(lambda float64) (*big.Int, float64) {
	f := new(big.Float).SetFloat64(lambda)
	f.SetMantExp(f, 32) // λ·2³², exact
	u, acc := f.Int(nil)
	if acc == big.Below {
		u.Add(u, big.NewInt(1))
	}
	v := new(big.Float).SetInt(u)
	v.SetMantExp(v, -32)
	out, acc := v.Float64() // nearest; step down if that rounded up
	if acc == big.Above {
		out = math.Nextafter(out, 0)
	}
	return u, out
}

// ridgeEll returns θ̂ = num/det rounded to float64 and
// ℓ = log(B_y + B_x‖θ̂‖) with B_y = 1, computed from the exact ‖θ̂‖² =
// Σnum_i²/det², correctly rounded, so its error is a few 2⁻⁵³ relative in
// B_y + B_x‖θ̂‖ plus the logarithm's, below lipEval for every
// representable value.
func ridgeEll(num []*big.Int, det *big.Int, bx float64) (theta []float64, ell float64) {
	theta = make([]float64, len(num))
	sum := new(big.Int)
	t := new(big.Int)
	fd := new(big.Float).SetPrec(128).SetInt(det)
	for i, v := range num {
		sum.Add(sum, t.Mul(v, v))
		q := new(big.Float).SetPrec(128).SetInt(v)
		theta[i], _ = q.Quo(q, fd).Float64()
	}
	n2 := new(big.Float).SetPrec(256).SetInt(sum)
	d2 := new(big.Float).SetPrec(256).SetInt(t.Mul(det, det))
	norm2, _ := n2.Quo(n2, d2).Float64()
	return theta, math.Log(1 + bx*math.Sqrt(norm2))
}

// adaopsLambda returns AdaOPS's ridge: the minimizer over λ ≥ lo of
// J(λ) = K·(1 + B_x²/h)^{2C}/h + λ, h = λ + lamTilde (see
// Release, step 2). J is convex, so J′ is increasing and the
// minimum is where it crosses 0 (or lo when J′(lo) ≥ 0).
func adaopsLambda(lamTilde, lo float64, p regressionPlan, d, l int, lipMult, rho float64) float64 {
	fd := float64(d)
	lr := math.Log(1 / rho)
	chi := fd + 2*math.Sqrt(fd*lr) + 2*lr
	epsBar := (1 - opsFloorShare) * p.epsRow
	k := chi * fd * fd * p.w * p.w / (epsBar * epsBar) // B_x⁴ = d²
	c := float64(l) * (lipMult*p.tFail + 1)
	b := fd
	deriv := func(t float64) float64 {
		h := t + lamTilde
		f := math.Exp(2*c*math.Log1p(b/h) - math.Log(h))
		return 1 - k*f*(2*c*b/(h*(h+b))+1/h)
	}
	if deriv(lo) >= 0 {
		return lo
	}
	hi := math.Max(2*lo, 1)
	for i := 0; deriv(hi) < 0 && i < 2000; i++ {
		hi *= 2
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if deriv(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
