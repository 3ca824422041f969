package prediction

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// FixedBits is the resolution of the fixed-point sums of Regressor and
// Evaluator: a value clamped to [lo, hi] becomes an integer level in
// [0, 2^FixedBits], a step of (hi − lo)·2^-20, far below any noise the
// mechanisms add (their noise has a standard deviation of at least
// 2^FixedBits/ε steps of the sum, divided by the number of terms).
const FixedBits = 20

// fixedLevels is K = 2^FixedBits, the largest level.
const fixedLevels = 1 << FixedBits

// level returns the fixed-point level of v on [lo, hi]:
// k = ⌊(clamp(v) − lo)/(hi − lo)·K + 1/2⌋, clamped to [0, K]. Whatever the
// rounding of the floating-point steps, the result is an integer in
// [0, K]: that range, not the accuracy of the map, is what the sensitivity
// arguments use. NaN — a model's prediction or loss on a query where its
// arithmetic breaks down (Inf − Inf), which depends on the model and so on
// the training data — maps to level 0, a public choice: an error instead
// would be an output that one unit can switch on or off, outside the
// noise. The level of any value, NaN included, is in [0, K], which is all
// the sensitivity arguments use.
func level(v, lo, hi float64) (int64, error) {
	if math.IsNaN(v) {
		return 0, nil
	}
	y := (Clamp(v, lo, hi) - lo) / (hi - lo) * fixedLevels
	k := math.Floor(y + 0.5)
	return int64(math.Max(0, math.Min(k, fixedLevels))), nil
}

// Clamp returns v limited to [lo, hi] (lo ≤ hi); NaN stays NaN.
func Clamp(v, lo, hi float64) float64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// exactProductBelow reports whether a·b < c exactly, for finite float64s
// (a product of two float64s has at most 106 significant bits).
func exactProductBelow(a, b, c float64) bool {
	p := new(big.Float).SetPrec(128).Mul(new(big.Float).SetFloat64(a), new(big.Float).SetFloat64(b))
	return p.Cmp(new(big.Float).SetFloat64(c)) < 0
}

// checkBounds validates a clamping interval.
func checkBounds(lo, hi float64) error {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) || math.IsInf(hi-lo, 0) {
		return fmt.Errorf("bounds [%v, %v] must be finite with lo < hi and a finite width", lo, hi)
	}
	return nil
}

// calibrateSum returns the noise component for an integer sum whose
// sensitivity under add/remove of one unit is steps levels, with the
// discrete Laplace (noise.Laplace, pure ε-DP: t = steps/ε rounded up so
// that steps/t ≤ ε exactly) or the discrete Gaussian (noise.Gaussian,
// (ε, δ)-DP: σ = noise.DiscreteGaussianSigma(ε, δ, steps), rounded up to 24
// significant bits and re-checked against δ). The component is on the
// level scale (Quantum = Granularity = 1): the accountant's charge is
// Mechanism{Kind: string(Noise), Scale: Scale, Sensitivity: Sensitivity}.
func calibrateSum(purpose string, kind noise.Kind, eps, delta float64, steps int64) (noise.Component, error) {
	if msg := noise.CheckPrivacyParams(kind, eps, delta); msg != "" {
		return noise.Component{}, fmt.Errorf("%w: %s: %s", noise.ErrInvalidSpec, purpose, msg)
	}
	c := noise.Component{Purpose: purpose, Noise: kind.Discrete(), Sensitivity: float64(steps),
		Quantum: 1, Granularity: 1, Epsilon: eps, Delta: delta}
	switch kind {
	case noise.Laplace:
		t := float64(steps) / eps
		if exactProductBelow(t, eps, float64(steps)) {
			t = math.Nextafter(t, math.Inf(1))
		}
		if err := noise.CheckDiscreteScale(purpose+" noise scale", t); err != nil {
			return noise.Component{}, fmt.Errorf("%w: %w (epsilon too small?)", noise.ErrInvalidSpec, err)
		}
		c.Scale, c.ExpectedAbsError = t, noise.DiscreteLaplaceAbsMean(t)
	default: // noise.Gaussian (CheckPrivacyParams admits no other)
		sigma, err := noise.DiscreteGaussianSigma(eps, delta, steps)
		if err != nil {
			return noise.Component{}, fmt.Errorf("%w: %s: %w", noise.ErrInvalidSpec, purpose, err)
		}
		sigma = noise.RoundUpSignificand(sigma)
		for i := 0; noise.DiscreteGaussianDelta(eps, sigma, steps) > delta; i++ {
			if i == 16 {
				return noise.Component{}, fmt.Errorf("%w: %s: rounded sigma %v misses delta %v", noise.ErrInvalidSpec, purpose, sigma, delta)
			}
			sigma = noise.NextSignificand(sigma)
		}
		if err := noise.CheckDiscreteScale(purpose+" noise sigma", sigma); err != nil {
			return noise.Component{}, fmt.Errorf("%w: %w (epsilon too small?)", noise.ErrInvalidSpec, err)
		}
		c.Scale, c.ExpectedAbsError = sigma, noise.DiscreteGaussianAbsMean(sigma)
	}
	return c, nil
}

// noisySum returns sum + Z, Z the component's discrete noise, exactly in
// int64 (the callers keep |sum| ≤ 2^62 and |Z| is far below 2^62 with
// overwhelming probability; an overflow is an error, not a wrap).
func noisySum(n noise.Sampler, c noise.Component, sum int64) (int64, error) {
	var z int64
	var err error
	if c.Noise == noise.DiscreteGaussian {
		z, err = n.DiscreteGaussian(c.Scale)
	} else {
		z, err = n.DiscreteLaplace(c.Scale)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.Purpose, err)
	}
	v, ok := noise.AddInt64(sum, z)
	if !ok {
		return 0, fmt.Errorf("%s: sum %d + noise %d overflows int64", c.Purpose, sum, z)
	}
	return v, nil
}

// noiseStdDev returns the standard deviation of the component's noise in
// levels.
func noiseStdDev(c noise.Component) float64 {
	if c.Noise == noise.DiscreteGaussian {
		return c.Scale
	}
	return math.Sqrt(noise.DiscreteLaplaceVariance(c.Scale))
}
