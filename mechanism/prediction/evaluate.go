package prediction

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// PurposeEvaluate is the Component.Purpose of a private evaluation.
const PurposeEvaluate = "prediction evaluation"

// MaxEvalQueries bounds the labelled queries of one evaluation batch (the
// sum of r·m levels then stays below 2^16·2^20·2^20 = 2^56).
const MaxEvalQueries = 1 << 20

// The losses of a labelled query (x, y) for one model's prediction, each
// with its range [0, MaxLoss] to put in EvalSpec:
//
//   - ZeroOneLoss for a class: 1 if the model's label differs from y, else
//     0; MaxLoss 1. The mean over models and queries is the models' error
//     rate.
//   - AbsoluteLoss for a real target: |clamp(p) − clamp(y)| with both
//     clamped to the regression's [lo, hi]; MaxLoss hi − lo.
//   - SquaredLoss: (clamp(p) − clamp(y))²; MaxLoss (hi − lo)². The square
//     root of the released mean is an RMSE (post-processing).

// ZeroOneLoss is the 0-1 loss of a predicted label against the true one.
func ZeroOneLoss(pred, label int) float64 {
	if pred == label {
		return 0
	}
	return 1
}

// AbsoluteLoss is |clamp(pred) − clamp(y)| on [lo, hi], in [0, hi − lo].
func AbsoluteLoss(pred, y, lo, hi float64) float64 {
	return math.Abs(Clamp(pred, lo, hi) - Clamp(y, lo, hi))
}

// SquaredLoss is (clamp(pred) − clamp(y))² on [lo, hi], in [0, (hi − lo)²].
func SquaredLoss(pred, y, lo, hi float64) float64 {
	d := Clamp(pred, lo, hi) - Clamp(y, lo, hi)
	return d * d
}

// EvalSpec configures a private evaluation of batches of Queries labelled
// queries.
type EvalSpec struct {
	// MaxLoss is the public bound B of a loss (finite, > 0); losses are
	// clamped to [0, B].
	MaxLoss float64
	// Queries is m, the number of labelled queries in a batch (public: the
	// querier's own input), 1 to MaxEvalQueries.
	Queries int
	// Noise is noise.Laplace (Delta 0) or noise.Gaussian (Delta in (0, 1)).
	Noise          noise.Kind
	Epsilon, Delta float64
}

// Evaluator answers private evaluations: the mean loss of the r models
// over a batch of m labelled queries, with noise. Build it with
// NewEvaluator; it holds only the calibration.
type Evaluator struct {
	spec EvalSpec
	comp noise.Component
}

// NewEvaluator calibrates the noise of s (data-independent). Errors wrap
// noise.ErrInvalidSpec.
func NewEvaluator(s EvalSpec) (*Evaluator, error) {
	if !(s.MaxLoss > 0) || math.IsInf(s.MaxLoss, 1) {
		return nil, fmt.Errorf("%w: evaluator: max loss %v must be finite and > 0", noise.ErrInvalidSpec, s.MaxLoss)
	}
	if s.Queries < 1 || s.Queries > MaxEvalQueries {
		return nil, fmt.Errorf("%w: evaluator: %d queries per batch, want 1 to %d", noise.ErrInvalidSpec, s.Queries, MaxEvalQueries)
	}
	c, err := calibrateSum(PurposeEvaluate, s.Noise, s.Epsilon, s.Delta, int64(s.Queries)*fixedLevels)
	if err != nil {
		return nil, fmt.Errorf("evaluator: %w", err)
	}
	return &Evaluator{spec: s, comp: c}, nil
}

// Charge is the accountant's charge of one evaluated batch (see
// Regressor.Charge): one charge for the whole batch of m queries.
func (e *Evaluator) Charge() noise.Component { return e.comp }

// NoiseStdDev returns the standard deviation of an evaluation's noise from
// the given number of shards, on the loss scale: B·sd(Z)/(K·r·m) ≈
// √2·B/(r·ε) for Laplace, independent of m.
func (e *Evaluator) NoiseStdDev(shards int) float64 {
	return e.spec.MaxLoss * noiseStdDev(e.comp) / (fixedLevels * float64(shards) * float64(e.spec.Queries))
}

// Evaluate answers one private evaluation: losses[i][j] is model i's loss
// on labelled query j (r = len(losses) models, the fixed public number of
// shards; m = Queries per model). With k_ij the fixed-point level of the
// loss clamped to [0, B] (an integer in [0, K], K = 2^FixedBits), it returns
//
//	B·(Σ_ij k_ij + Z)/(K·r·m),
//
// the mean loss of the models over the batch (to within B/2K) plus noise
// Z of Charge() added to the exact integer sum: standard deviation
// NoiseStdDev(r) ≈ √2·B/(r·ε) for Laplace, whatever m. It measures the
// quality of the shard models (the mean of their losses), which bounds the
// non-private majority's or average's quality, privately; the labels are
// the querier's and are not protected by it.
//
// Guarantee: per evaluated batch, ε-DP (Laplace) or (ε, δ)-DP (Gaussian)
// with respect to the training data under add/remove of one privacy unit.
// Sensitivity: the unit is in one shard, so only model i's losses can
// change: its m levels k_ij each move within [0, K], so the integer sum
// moves by at most m·K, which the noise is calibrated to (discrete Laplace
// of scale m·K/ε, or the discrete Gaussian's exact curve at sensitivity
// m·K); the division is post-processing. The whole batch costs what one
// query costs, because one unit moves one model only. Source: subsample
// and aggregate (Nissim, Raskhodnikova & Smith 2007; Dwork & Feldman 2018,
// section 3) applied to the batch's mean loss; this loss-query form is
// dpstream's own (issue 15, B.3), not an algorithm quoted from the paper.
//
// Errors: a batch whose shape is not r × Queries, r outside
// [1, MaxShards], a NaN loss, a nil sampler or a failed draw.
func (e *Evaluator) Evaluate(losses [][]float64, n noise.Sampler) (float64, error) {
	if n == nil {
		return 0, fmt.Errorf("evaluate: nil noise")
	}
	if len(losses) < 1 || len(losses) > MaxShards {
		return 0, fmt.Errorf("evaluate: %d models, want 1 to %d", len(losses), MaxShards)
	}
	m := e.spec.Queries
	var sum int64 // ≤ 2^16·2^20·2^20 = 2^56
	for i, row := range losses {
		if len(row) != m {
			return 0, fmt.Errorf("evaluate: model %d has %d losses, want %d", i, len(row), m)
		}
		for j, l := range row {
			k, err := level(l, 0, e.spec.MaxLoss)
			if err != nil {
				return 0, fmt.Errorf("evaluate: loss of model %d on query %d: %w", i, j, err)
			}
			sum += k
		}
	}
	v, err := noisySum(n, e.comp, sum)
	if err != nil {
		return 0, fmt.Errorf("evaluate: %w", err)
	}
	return e.spec.MaxLoss * (float64(v) / (fixedLevels * float64(len(losses)) * float64(m))), nil
}
