package prediction

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// NoiseExponential is the Component.Noise of a soft-majority answer: not a
// noise addition but the exponential mechanism, charged to the accountant
// as accountant.Mechanism{Kind: "exponential", Epsilon: ε}
// (accountant.KindExponential has the same value).
const NoiseExponential noise.Kind = "exponential"

// PurposeVote is the Component.Purpose of a soft-majority answer.
const PurposeVote = "prediction vote"

// Votes returns the number of models predicting each label: votes[b] =
// #{i : labels[i] = b}, for labels in [0, classes).
func Votes(labels []int, classes int) ([]int, error) {
	if classes < 1 || classes > MaxClasses {
		return nil, fmt.Errorf("votes: %d classes, want 1 to %d", classes, MaxClasses)
	}
	v := make([]int, classes)
	for i, l := range labels {
		if l < 0 || l >= classes {
			return nil, fmt.Errorf("votes: label %d of model %d not in [0, %d)", l, i, classes)
		}
		v[l]++
	}
	return v, nil
}

// ClassifyCharge is the accountant's charge of one Classify answer at ε:
// the exponential mechanism with ε (see Classify).
func ClassifyCharge(eps float64) noise.Component {
	return noise.Component{Purpose: PurposeVote, Noise: NoiseExponential, Epsilon: eps}
}

// Classify answers one classification query by the soft majority of the r
// models' votes (votes[b] = the number of models predicting label b; the
// labels are the public set [0, len(votes))): it returns label b with
// probability exactly
//
//	P(b) = exp(ε'·votes_b/2) / Σ_c exp(ε'·votes_c/2),  ε' = 2/t ≤ ε,
//
// where t = 2/ε rounded up to a float64 (ε' = ε whenever 2/ε is a float64,
// and ε' < ε by a relative 2^-53 at most otherwise).
//
// Guarantee: ε-DP, and ε-bounded range (so the accountant's exponential
// curve applies: charge ClassifyCharge(ε)), per answered query, with
// respect to the training data under add/remove of one privacy unit.
// Sensitivity: the unit's rows are in one shard (Sharder), so one model
// can change and its vote moves from one label to another: every votes_b
// changes by at most 1 (utility sensitivity 1). Then each exp(ε'·votes_b/2)
// changes by a factor in [e^{−ε'/2}, e^{ε'/2}], and the log-probability of
// every label by ε'(votes'_b − votes_b)/2 − log(Z'/Z), whose range over b is
// at most ε' (McSherry & Talwar 2007; Dwork & Feldman 2018, section 3, the
// soft majority; bounded range: Durfee & Rogers 2019). The loss can come
// close to ε even with two labels (one vote moving away from a minority
// label: the review's TestAttackClassifyTwoLabelClaim), so ε is the charge
// for every number of labels; a changed model whose vote does not change
// gives none.
//
// Exact sampling: a label b is proposed uniformly and accepted with
// probability exp(−(m − votes_b)/t), m = max votes, repeating until one is
// accepted: accepted labels have P(b) ∝ exp(votes_b/t) exactly, and each
// round accepts with probability at least 1/len(votes). The coin
// exp(−n/t) for an integer n ≥ 1 is exact from the discrete Laplace
// sampler: for Z with P(Z = k) ∝ exp(−|k|/t), conditioned on Z ≥ 0, Z is
// geometric and P(Z ≥ n | Z ≥ 0) = exp(−n/t). So no probability is ever
// computed in floating point (Mironov 2012; Ilvento 2020 on exact
// exponential mechanisms). The uniform proposal comes from
// noise.SourceOf(n).
//
// Errors: no labels or more than MaxClasses, a negative vote, ε not finite
// and positive or below 2^-49 (the sampler's scale limit), or a failed
// draw (a Source that looks stuck).
func Classify(votes []int, eps float64, n noise.Sampler) (int, error) {
	if n == nil {
		return 0, fmt.Errorf("classify: nil noise")
	}
	if len(votes) < 1 || len(votes) > MaxClasses {
		return 0, fmt.Errorf("classify: %d labels, want 1 to %d", len(votes), MaxClasses)
	}
	t, err := voteScale(eps)
	if err != nil {
		return 0, fmt.Errorf("classify: %w", err)
	}
	top := votes[0]
	for i, v := range votes {
		if v < 0 {
			return 0, fmt.Errorf("classify: label %d has %d votes", i, v)
		}
		top = max(top, v)
	}
	src := noise.SourceOf(n)
	k := uint64(len(votes))
	// Each round accepts with probability ≥ 1/k ≥ 2^-16; 2^24 rounds all
	// fail with probability below e^{-256}: only a broken Source gets there.
	for range 1 << 24 {
		var b int
		if err := noise.Draw(src, func(r *noise.Rand) { b = int(r.Uniform(k)) }); err != nil {
			return 0, fmt.Errorf("classify: %w", err)
		}
		gap := int64(top - votes[b])
		if gap == 0 {
			return b, nil
		}
		ok, err := expCoin(n, t, gap)
		if err != nil {
			return 0, fmt.Errorf("classify: %w", err)
		}
		if ok {
			return b, nil
		}
	}
	return 0, fmt.Errorf("classify: no label accepted in 2^24 rounds (is the noise source stuck?)")
}

// voteScale returns t = 2/ε rounded up to a float64, so that 2/t ≤ ε
// exactly, and checks that it is a valid discrete Laplace scale.
func voteScale(eps float64) (float64, error) {
	if !(eps > 0) || math.IsInf(eps, 1) {
		return 0, fmt.Errorf("epsilon %v must be finite and > 0", eps)
	}
	t := 2 / eps
	// t·ε ≥ 2 exactly, or t is one float64 too small.
	if exactProductBelow(t, eps, 2) {
		t = math.Nextafter(t, math.Inf(1))
	}
	if err := noise.CheckDiscreteScale("vote scale 2/epsilon", t); err != nil {
		return 0, err
	}
	return t, nil
}

// expCoin returns true with probability exactly exp(−n/t), n ≥ 1: draws Z
// from the discrete Laplace of scale t until Z ≥ 0 (each draw is ≥ 0 with
// probability > 1/2), then returns Z ≥ n (see Classify).
func expCoin(s noise.Sampler, t float64, n int64) (bool, error) {
	for range 256 {
		z, err := s.DiscreteLaplace(t)
		if err != nil {
			return false, err
		}
		if z >= 0 {
			return z >= n, nil
		}
	}
	return false, fmt.Errorf("exp coin: 256 negative draws in a row (is the noise source stuck?)")
}
