package accountant

import (
	"errors"
	"fmt"
	"math"
)

// Mechanism kinds, the values of [Mechanism.Kind].
const (
	KindGaussian           = "gaussian"
	KindLaplace            = "laplace"
	KindDiscreteGaussian   = "discrete_gaussian"
	KindDiscreteLaplace    = "discrete_laplace"
	KindPure               = "pure"
	KindExponential        = "exponential"
	KindRandomizedResponse = "randomized_response"
	KindZCDP               = "zcdp"
	// KindApproxDP is a mechanism proved (Epsilon, Delta)-DP as a whole
	// with no RDP curve, such as the posterior sample of OPS. It is
	// composed with the rest by basic composition (see [Account.Spent]).
	KindApproxDP = "approx_dp"
)

// ErrInvalidMechanism is wrapped by every error that reports a malformed
// [Mechanism]; test for it with errors.Is.
var ErrInvalidMechanism = errors.New("invalid mechanism")

// Mechanism describes one noise addition, with enough detail to rebuild its
// RDP curve. It is what the ledger stores for each charge, so the fields are
// plain values and the meaning of each depends on Kind:
//
//   - "gaussian": Scale = σ, Sensitivity = L2 sensitivity Δ2; curve
//     [GaussianCurve](σ/Δ2).
//   - "discrete_gaussian": Scale = σ, Sensitivity = L2 sensitivity (an
//     integer in grid units); curve [DiscreteGaussianCurve](σ, Δ).
//   - "laplace": Scale = b, Sensitivity = L1 sensitivity Δ1; curve
//     [LaplaceCurve](Δ1/b), pure ε0 = Δ1/b.
//   - "discrete_laplace": Scale = b of the two-sided geometric distribution
//     P(k) ∝ exp(−|k|/b), Sensitivity = L1 sensitivity, both in the same units
//     (grid steps, or value units with the grid step g as the unit of both);
//     pure ε0 = Δ1/b with curve [PureCurve](ε0). See below why the Laplace
//     curve must not be used.
//   - "pure": any ε0-DP mechanism, Epsilon = ε0; curve [PureCurve](ε0).
//   - "exponential": exponential mechanism (or report-noisy-max with Gumbel
//     noise) with Epsilon = ε0; curve [ExponentialCurve](ε0), pure ε0.
//   - "randomized_response": k-ary randomized response with Epsilon = p (the
//     noise parameter) and K = k; curve [RandomizedResponseCurve](p, k),
//     pure ε0 = log(k/p − k + 1). Replace-one neighbours.
//   - "zcdp": any ρ-zCDP mechanism, Epsilon = ρ; curve [ZCDPCurve](ρ).
//   - "approx_dp": any (ε, δ)-DP mechanism, Epsilon = ε, Delta = δ; no
//     curve (the zero curve): an [Account] adds such charges by basic
//     composition to what the RDP curve gives (Dwork & Roth 2014, Thm.
//     3.16, which holds for adaptive composition): a composition whose RDP
//     part is (ε_R, δ')-DP and whose approx_dp parts are (ε_i, δ_i)-DP is
//     (ε_R + Σε_i, δ' + Σδ_i)-DP.
//
// Fields that a kind does not use must be zero; [Mechanism.Validate] rejects
// anything else, so that a confused ledger record is caught rather than
// silently reinterpreted. Count is the number of independent applications
// (k-fold composition); 0 means 1.
//
// Discrete Laplace. For unit sensitivity the Rényi divergence between the
// discrete Laplace distributions centred at 0 and 1, with t = 1/b, is
// Σ_k P^α Q^{1−α} = (e^{(α−1)t} + e^{−αt}) / (1 + e^{−t}) (sum the geometric
// series over k ≤ 0 and k ≥ 1), which is exactly binary randomized response
// with ε0 = t, i.e. [PureCurve](t). At α = 2, t = 1 that is 0.735 whereas
// the continuous Laplace curve gives 0.619: the Laplace curve would
// under-charge. For any integer shift n ≤ Δ the mechanism is (n/b)-DP, hence
// (Δ/b)-DP, and every ε0-DP mechanism satisfies [PureCurve](ε0), so
// [PureCurve](Δ/b) is valid for every sensitivity and tight for Δ/b = 1/b.
//
// Neighbouring relations. Every kind but "randomized_response" is charged
// under add/remove one privacy unit. Randomized response runs at the
// producer and is charged under replace-one. Composing the two in one
// [Account] is sound only if the caller has established that the relations
// agree for that stream (for instance the stream's unit is a fixed
// population of producers, so replacing one unit's input is the only change
// possible for the locally randomized part); the accountant cannot check this.
type Mechanism struct {
	Kind        string  // one of the Kind* constants
	Scale       float64 // laplace/discrete_laplace: b ; gaussian/discrete_gaussian: sigma
	Sensitivity float64 // L1 for laplace kinds, L2 for gaussian kinds
	Epsilon     float64 // pure / exponential: eps0 ; zcdp: rho ; randomized_response: p ; approx_dp: eps
	Delta       float64 // approx_dp: delta, in (0, 1); 0 for every other kind
	K           int     // randomized_response: number of categories
	Count       int     // how many times it is applied (compositions); 0 means 1
}

// count returns the number of compositions, with 0 meaning 1.
func (m Mechanism) count() int {
	if m.Count == 0 {
		return 1
	}
	return m.Count
}

// Validate reports whether m is well formed: a known kind, the parameters its
// kind uses positive and finite (randomized response: 0 < p ≤ 1 and k ≥ 2),
// the fields its kind does not use zero, and Count ≥ 0. The error wraps
// [ErrInvalidMechanism] and names the kind and the offending field.
func (m Mechanism) Validate() error {
	if m.Count < 0 {
		return m.invalid("count must be >= 0, got %d", m.Count)
	}
	if m.Kind != KindApproxDP && m.Delta != 0 {
		return m.invalid("delta is used by kind approx_dp only and must be 0, got %v", m.Delta)
	}
	switch m.Kind {
	case KindApproxDP:
		if m.Scale != 0 || m.Sensitivity != 0 || m.K != 0 {
			return m.invalid("scale, sensitivity and k are not used by this kind and must be 0")
		}
		if err := m.positive("epsilon", m.Epsilon); err != nil {
			return err
		}
		if !(m.Delta > 0 && m.Delta < 1) {
			return m.invalid("delta must be in (0, 1), got %v", m.Delta)
		}
	case KindGaussian, KindDiscreteGaussian, KindLaplace, KindDiscreteLaplace:
		if err := m.positive("scale", m.Scale); err != nil {
			return err
		}
		if err := m.positive("sensitivity", m.Sensitivity); err != nil {
			return err
		}
		if m.Epsilon != 0 {
			return m.invalid("epsilon is not used by this kind and must be 0, got %v", m.Epsilon)
		}
		if m.K != 0 {
			return m.invalid("k is not used by this kind and must be 0, got %d", m.K)
		}
		if r := m.Sensitivity / m.Scale; !positiveFinite(r) {
			return m.invalid("sensitivity/scale = %v/%v is not a positive finite number", m.Sensitivity, m.Scale)
		}
	case KindPure, KindExponential, KindZCDP, KindRandomizedResponse:
		if m.Scale != 0 {
			return m.invalid("scale is not used by this kind and must be 0, got %v", m.Scale)
		}
		if m.Sensitivity != 0 {
			return m.invalid("sensitivity is not used by this kind and must be 0, got %v", m.Sensitivity)
		}
		if m.Kind == KindRandomizedResponse {
			if !(m.Epsilon > 0 && m.Epsilon <= 1) {
				return m.invalid("noise parameter p (epsilon field) must be in (0, 1], got %v", m.Epsilon)
			}
			if m.K < 2 {
				return m.invalid("k must be >= 2, got %d", m.K)
			}
			break
		}
		if err := m.positive("epsilon", m.Epsilon); err != nil {
			return err
		}
		if m.K != 0 {
			return m.invalid("k is not used by this kind and must be 0, got %d", m.K)
		}
	case "":
		return fmt.Errorf("mechanism: kind is empty: %w", ErrInvalidMechanism)
	default:
		return fmt.Errorf("mechanism: unknown kind %q: %w", m.Kind, ErrInvalidMechanism)
	}
	return nil
}

func (m Mechanism) positive(field string, v float64) error {
	if !positiveFinite(v) {
		return m.invalid("%s must be positive and finite, got %v", field, v)
	}
	return nil
}

func (m Mechanism) invalid(format string, args ...any) error {
	return fmt.Errorf("mechanism %s: %s: %w", m.Kind, fmt.Sprintf(format, args...), ErrInvalidMechanism)
}

// baseCurve is the curve of one application; m must be valid.
func (m Mechanism) baseCurve() Curve {
	switch m.Kind {
	case KindGaussian:
		return GaussianCurve(m.Scale / m.Sensitivity)
	case KindDiscreteGaussian:
		return DiscreteGaussianCurve(m.Scale, m.Sensitivity)
	case KindLaplace:
		return LaplaceCurve(m.Sensitivity / m.Scale)
	case KindDiscreteLaplace, KindPure:
		eps0, _ := m.singlePure()
		return PureCurve(eps0)
	case KindExponential:
		return ExponentialCurve(m.Epsilon)
	case KindRandomizedResponse:
		return RandomizedResponseCurve(m.Epsilon, m.K)
	case KindZCDP:
		return ZCDPCurve(m.Epsilon)
	case KindApproxDP:
		return ZeroCurve() // composed by basic composition, see Account
	}
	return infCurve()
}

// Curve returns the RDP curve of m applied Count times: Count × the curve of
// its kind (see [Mechanism] for the mapping and each curve's guarantee and
// neighbouring relation; composition is additive, Mironov 2017, Prop. 1).
// It returns an error if m is invalid or if the parameters are so extreme
// that the curve is not finite at every order (no usable guarantee).
//
// The curve is computed once per distinct mechanism and cached (bounded,
// safe for concurrent use); the returned slice is always a fresh copy, the
// caller's to modify.
func (m Mechanism) Curve() (Curve, error) {
	e, err := lookup(m)
	if err != nil {
		return nil, err
	}
	return append(make(Curve, 0, numOrders), e.curve[:]...), nil
}

// curve computes m.Curve() without the cache.
func (m Mechanism) curve() (Curve, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	c := m.baseCurve().Scale(float64(m.count()))
	for i, v := range c {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, m.invalid("RDP at order %v is %v: parameters give no finite guarantee", orders[i], v)
		}
	}
	return c, nil
}

// singlePure returns the pure-DP epsilon of one application of a valid m.
func (m Mechanism) singlePure() (float64, bool) {
	switch m.Kind {
	case KindLaplace, KindDiscreteLaplace:
		return m.Sensitivity / m.Scale, true
	case KindPure, KindExponential:
		return m.Epsilon, true
	case KindRandomizedResponse:
		k := float64(m.K)
		return math.Log(k/m.Epsilon - k + 1), true
	}
	return 0, false
}

// PureEpsilon returns the pure-DP epsilon of m applied Count times, by basic
// composition: Count·ε0 (Dwork et al. 2006). ok is false if m is not a pure
// DP mechanism (the gaussian kinds and zcdp, which are only approximately or
// concentrated DP) or if m is invalid.
//
// Per kind: laplace and discrete_laplace ε0 = Δ1/b (Dwork et al. 2006; for
// the discrete distribution the likelihood ratio of an integer shift n ≤ Δ1
// is at most e^{n/b}); pure and exponential ε0 = Epsilon (the exponential
// mechanism is ε0-DP by construction, McSherry & Talwar 2007);
// randomized_response ε0 = log((1−p+p/k)/(p/k)) = log(k/p − k + 1) under
// replace-one neighbours (SPEC.md section 4.4).
func (m Mechanism) PureEpsilon() (eps float64, ok bool) {
	if m.Validate() != nil {
		return 0, false
	}
	e, ok := m.singlePure()
	if !ok {
		return 0, false
	}
	return float64(m.count()) * e, true
}
