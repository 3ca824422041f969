package prediction

import (
	"fmt"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// PurposeRegress is the Component.Purpose of a regression answer.
const PurposeRegress = "prediction regression"

// RegressSpec configures the answers to regression queries.
type RegressSpec struct {
	// Lo and Hi are the public clamping bounds of a prediction (finite,
	// Lo < Hi): the answer is an average of predictions clamped to them.
	Lo, Hi float64
	// Noise is noise.Laplace (pure ε-DP, Delta 0) or noise.Gaussian
	// ((ε, δ)-DP, Delta in (0, 1)).
	Noise          noise.Kind
	Epsilon, Delta float64
}

// Regressor answers regression queries by the noisy average of the r
// models' clamped predictions. Build it with NewRegressor; it holds only
// the calibration and is safe for concurrent use.
type Regressor struct {
	spec RegressSpec
	comp noise.Component
}

// NewRegressor calibrates the noise of s (data-independent: it depends on
// the configuration only). Errors wrap noise.ErrInvalidSpec.
func NewRegressor(s RegressSpec) (*Regressor, error) {
	if err := checkBounds(s.Lo, s.Hi); err != nil {
		return nil, fmt.Errorf("%w: regressor: %w", noise.ErrInvalidSpec, err)
	}
	c, err := calibrateSum(PurposeRegress, s.Noise, s.Epsilon, s.Delta, fixedLevels)
	if err != nil {
		return nil, fmt.Errorf("regressor: %w", err)
	}
	return &Regressor{spec: s, comp: c}, nil
}

// Charge is the accountant's charge of one answer: the noise component on
// the level scale, accountant.Mechanism{Kind: string(c.Noise), Scale:
// c.Scale, Sensitivity: c.Sensitivity} (discrete Laplace: pure ε; discrete
// Gaussian: its exact curve), whatever r is.
func (r *Regressor) Charge() noise.Component { return r.comp }

// NoiseStdDev returns the standard deviation of the noise of an answer
// from the given number of shards, on the prediction's scale:
// (Hi − Lo)·sd(Z)/(2^FixedBits·r) ≈ √2·(Hi − Lo)/(r·ε) for Laplace.
func (r *Regressor) NoiseStdDev(shards int) float64 {
	return (r.spec.Hi - r.spec.Lo) * noiseStdDev(r.comp) / (fixedLevels * float64(shards))
}

// Regress answers one regression query from the r models' predictions
// (preds[i] is model i's; r = len(preds) must be the fixed, public number
// of shards): with k_i the fixed-point level of preds[i] clamped to
// [Lo, Hi] (an integer in [0, K], K = 2^FixedBits, see FixedBits), it
// returns
//
//	Lo + (Hi − Lo)·(Σ_i k_i + Z)/(K·r),
//
// Z the exact discrete Laplace (scale t = K/ε) or discrete Gaussian noise
// of Charge(), added to the exact integer sum. That is the average of the
// clamped predictions (to within (Hi − Lo)/2K) plus noise of standard
// deviation NoiseStdDev(r) ≈ √2·(Hi − Lo)/(r·ε) for Laplace: noise
// calibrated to the range over r. The answer is not clamped: clamping it
// (post-processing) is the caller's choice.
//
// Guarantee: per answered query, ε-DP (Laplace) or (ε, δ)-DP (Gaussian)
// with respect to the training data under add/remove of one privacy unit.
// Sensitivity: the unit is in one shard, so one model and one prediction
// can change; its level moves within [0, K], so the integer sum Σk_i moves
// by at most K (the average by (Hi − Lo)/r), exactly, whatever the
// floating-point rounding of the levels. The discrete Laplace of scale
// K/ε on an integer of sensitivity K is ε-DP; the discrete Gaussian's σ is
// calibrated to sensitivity K by its exact (ε, δ) curve (Canonne, Kamath &
// Steinke 2020, Thm. 7); the rest is post-processing. Source: Dwork &
// Feldman 2018, section 3 (averaging r bounded predictions, then the
// Laplace mechanism), on the grid of SPEC section 2.
//
// Errors: no predictions or more than MaxShards, a NaN prediction, a nil
// sampler or a failed draw.
func (r *Regressor) Regress(preds []float64, n noise.Sampler) (float64, error) {
	if n == nil {
		return 0, fmt.Errorf("regress: nil noise")
	}
	if len(preds) < 1 || len(preds) > MaxShards {
		return 0, fmt.Errorf("regress: %d predictions, want 1 to %d", len(preds), MaxShards)
	}
	var sum int64 // ≤ 2^16·2^20
	for i, p := range preds {
		k, err := level(p, r.spec.Lo, r.spec.Hi)
		if err != nil {
			return 0, fmt.Errorf("regress: prediction %d: %w", i, err)
		}
		sum += k
	}
	v, err := noisySum(n, r.comp, sum)
	if err != nil {
		return 0, fmt.Errorf("regress: %w", err)
	}
	return r.spec.Lo + (r.spec.Hi-r.spec.Lo)*(float64(v)/(fixedLevels*float64(len(preds)))), nil
}

// Aggregate returns the non-private answer Regress estimates: the average
// of the predictions clamped to [Lo, Hi]. It is for tests and the accuracy
// baselines only and must never be published.
func (r *Regressor) Aggregate(preds []float64) float64 {
	var s float64
	for _, p := range preds {
		s += Clamp(p, r.spec.Lo, r.spec.Hi)
	}
	return s / float64(len(preds))
}
