package noise

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// Kind is the distribution a release adds.
type Kind string

// The noise distributions. A Spec names one of the configuration words
// Laplace (pure ε-DP) or Gaussian ((ε, δ)-DP, composes better
// over many releases). The noise actually added is always exact discrete
// noise (SPEC section 2), and Component.Noise says so with the discrete
// kinds, which are also the accountant's mechanism kinds: a Component maps
// to accountant.Mechanism{Kind: string(c.Noise), Scale: c.Scale,
// Sensitivity: c.Sensitivity}.
const (
	Laplace  Kind = "laplace"  // config word: discrete Laplace noise
	Gaussian Kind = "gaussian" // config word: discrete Gaussian noise

	DiscreteLaplace  Kind = "discrete_laplace"  // Component.Noise for Laplace
	DiscreteGaussian Kind = "discrete_gaussian" // Component.Noise for Gaussian

	// ApproxDP marks a component that is not a noise addition with a
	// sensitivity but a mechanism proved (Epsilon, Delta)-DP as a whole,
	// such as the posterior sample of OPS. The accountant composes it by
	// basic composition with the RDP-accounted rest (accountant.KindApproxDP).
	ApproxDP Kind = "approx_dp"
)

// Discrete returns the component kind that implements the config word k:
// DiscreteLaplace for Laplace, DiscreteGaussian for Gaussian, k otherwise.
func (k Kind) Discrete() Kind {
	switch k {
	case Laplace:
		return DiscreteLaplace
	case Gaussian:
		return DiscreteGaussian
	}
	return k
}

// ErrInvalidSpec is wrapped by every error Calibrate returns for a Spec that
// cannot be calibrated, so configuration loading can tell a bad config from
// other failures with errors.Is.
var ErrInvalidSpec = errors.New("invalid release spec")

// Component is one noise addition of a release: what the accountant charges.
// Its fields depend only on the Spec, so the charge is data-independent.
type Component struct {
	Purpose string
	// Noise is DiscreteLaplace or DiscreteGaussian, the
	// accountant's mechanism kind.
	Noise Kind
	// Sensitivity is the exact L1 (discrete Laplace) or L2 (discrete
	// Gaussian) sensitivity, under add/remove one unit, of the integer
	// statistic the noise is added to, on the value scale: the integer L for
	// counts and bins, and G·⌈L·MaxUnits·q/G⌉ for sums (G = Granularity,
	// q = Quantum, MaxUnits of the release's Quantizer; see Calibrate).
	// Sensitivity/Granularity is an integer, except for the bins of a
	// histogram with discrete Gaussian noise and a per-cell cap, whose
	// L2 sensitivity sqrt(⌊L/c⌋·c² + (L mod c)²) is recorded rounded up.
	Sensitivity float64
	// Scale is the noise scale on the value scale: t of the discrete
	// Laplace P(k) ∝ exp(−|k|/t) or σ of the discrete Gaussian, times
	// Granularity. The sampler draws with Scale/Granularity.
	Scale float64
	// Quantum is the value of one unit of the integer statistic: 1 for
	// counts and bins, the Quantizer's Quantum (a power of two fixed by the
	// bounds) for sums and centered sums.
	Quantum float64
	// Granularity is the grid G the noise and the output live on: 1 for
	// counts and bins; for sums max(Granularity(Scale), Quantum), a power
	// of two and a multiple of Quantum.
	Granularity float64
	// Epsilon and Delta are the share of the release's budget this
	// component was calibrated to; the shares of a release add up to its
	// Spec's (basic composition).
	Epsilon, Delta float64
	// L2Sq is the squared L2 sensitivity, in grid steps, of a histogram's
	// bins (L² without a per-cell cap, ⌊L/c⌋·c² + (L mod c)² with cap c);
	// 0 for every other component. Only the discrete Gaussian uses it, and
	// only package aggregate sets it (it is exported for that package).
	L2Sq int64
	// ExpectedAbsError is E|noise| of this component (per coordinate for
	// bins): Granularity·1/sinh(1/t) for the discrete Laplace (just below
	// Scale), about σ·sqrt(2/π) for the discrete Gaussian. Rounding a sum
	// to its grid adds at most Granularity/2 more when Granularity >
	// Quantum, and quantizing each value at most Quantum/2 per event.
	ExpectedAbsError float64
}

// MaxGridSteps bounds the sensitivity in grid steps so that it, and the
// grid times it, are exact float64 values.
const MaxGridSteps = 1 << 53

// OutputGrid returns the grid G = max(Granularity(scale), q) of a sum in
// units of q. A scale so small that its own grid would be finer than the
// smallest float64 has g < q, so it gets q as well.
func OutputGrid(scale, q float64) float64 {
	g, err := Granularity(scale)
	if err != nil || g < q {
		return q
	}
	return g
}

// GridShift returns j with G = q·2^j for the powers of two G ≥ q.
func GridShift(g, q float64) int {
	return Log2Exact(g) - Log2Exact(q)
}

// AddInt64 returns a+b and whether it did not overflow.
func AddInt64(a, b int64) (int64, bool) {
	r := a + b
	if (b > 0 && r < a) || (b < 0 && r > a) {
		return 0, false
	}
	return r, true
}

// Quantiles for the mean's approximate interval.
var (
	// LaplaceQ975 is t/b with P(|Laplace(b)| > t) = 0.025.
	LaplaceQ975 = math.Log(40)
	// NormalQ975 is the standard normal 0.975 quantile (≈ 1.96).
	NormalQ975 = math.Sqrt2 * math.Erfinv(0.95)
)

// AddToCount returns count + Z for an integer-data component, Z its
// discrete noise at scale comp.Scale (Granularity 1), computed exactly in
// int64 and then converted to float64 (exact below 2^53; above, a
// rounding of the exact noisy integer, so still post-processing).
func AddToCount(n Sampler, comp Component, count int64) (float64, error) {
	var z int64
	var err error
	switch comp.Noise {
	case DiscreteLaplace:
		z, err = n.DiscreteLaplace(comp.Scale)
	case DiscreteGaussian:
		z, err = n.DiscreteGaussian(comp.Scale)
	default:
		return 0, fmt.Errorf("%s: unknown noise %q", comp.Purpose, comp.Noise)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", comp.Purpose, err)
	}
	v, ok := AddInt64(count, z)
	if !ok {
		return 0, fmt.Errorf("%s: count %d + noise %d overflows int64", comp.Purpose, count, z)
	}
	return float64(v), nil
}

// AddToUnits releases the fixed-point statistic k (in units of
// comp.Quantum) on comp's grid G = comp.Granularity (checkCalibration has
// verified that it is max(Granularity(comp.Scale), comp.Quantum)): k is
// rounded to K_G = ⌊k·q/G + 1/2⌋ by an exact shift, Z is drawn at scale
// comp.Scale/G, and the result is G·(K_G + Z) with K_G + Z computed exactly
// (int64, or math/big if it overflows) before it is rounded to float64
// (nearest, ties to even). The output is thus a post-processing of the
// exact noisy integer and an integer multiple of G (every float64 of
// magnitude ≥ 2^53 is an integer); multiplying by the power of two G is
// exact unless it overflows, which is an error.
func AddToUnits(n Sampler, comp Component, k int64) (float64, error) {
	g, q := comp.Granularity, comp.Quantum
	kg := RoundShift(k, uint(GridShift(g, q)))
	var z int64
	var err error
	switch comp.Noise {
	case DiscreteLaplace:
		z, err = n.DiscreteLaplace(comp.Scale / g)
	case DiscreteGaussian:
		z, err = n.DiscreteGaussian(comp.Scale / g)
	default:
		return 0, fmt.Errorf("%s: unknown noise %q", comp.Purpose, comp.Noise)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", comp.Purpose, err)
	}
	var s float64
	if sum, ok := AddInt64(kg, z); ok {
		s = float64(sum)
	} else {
		b := new(big.Int).Add(big.NewInt(kg), big.NewInt(z))
		s, _ = new(big.Float).SetInt(b).Float64()
	}
	out := s * g
	if math.IsInf(out, 0) || out/g != s {
		return 0, fmt.Errorf("%s: noisy value %v × grid %v is not representable", comp.Purpose, s, g)
	}
	return out, nil
}

// CheckPrivacyParams returns what is wrong with a release's noise and
// privacy parameters, or "": ε finite and positive, δ = 0 for Laplace (pure
// ε-DP) and in (0, 1) for Gaussian.
func CheckPrivacyParams(noiseKind Kind, eps, delta float64) string {
	if !(eps > 0) || math.IsInf(eps, 1) {
		return fmt.Sprintf("epsilon must be finite and > 0, got %v", eps)
	}
	switch noiseKind {
	case Laplace:
		if delta != 0 {
			return fmt.Sprintf("delta must be 0 for laplace noise (it is pure ε-DP), got %v", delta)
		}
	case Gaussian:
		if !(delta > 0 && delta < 1) {
			return fmt.Sprintf("delta must be in (0, 1) for gaussian noise, got %v", delta)
		}
	default:
		return fmt.Sprintf("unknown noise %q (want laplace or gaussian)", noiseKind)
	}
	return ""
}

// Variance returns the exact variance of one draw of comp's integer
// noise (Granularity 1, as for histogram bins): 1/(2·sinh²(1/(2t))) for the
// discrete Laplace of scale t, and for N_Z(0, σ²) the sum Σ y²·e^{−y²/(2σ²)}
// over the normalizer for σ ≤ 1024, σ² above (the two differ by a relative
// 8π²σ²·e^{−2π²σ²} to first order, far below 1e-300 there).
func Variance(comp Component) float64 {
	s := comp.Scale / comp.Granularity
	if comp.Noise != DiscreteGaussian {
		return DiscreteLaplaceVariance(s)
	}
	if s > DiscreteGaussianExactMaxSigma {
		return s * s
	}
	s2 := 2 * s * s
	m2 := 0.0
	for y := 1.0; ; y++ {
		fy := math.Exp(-y * y / s2)
		m2 += 2 * y * y * fy
		if fy < 1e-20*math.Max(m2, 1) {
			break
		}
	}
	return m2 / dgNormalizer(s)
}
