package rr

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sync"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file holds k-ary randomized response (SPEC section 4.4): a local
// mechanism that a producer applies to one person's category before the
// report leaves the producer, and the debiasing that turns the observed
// report counts into estimated category frequencies.

// ErrUnknownCategory is wrapped by the error a Randomizer returns for a
// category that is not one of its configured categories. Such a value is
// never passed through: publishing it unrandomized would be a report
// without any privacy.
var ErrUnknownCategory = errors.New("unknown category")

// errRRNotConstructed is returned by the methods of a zero
// Mechanism, which has no valid parameters.
var errRRNotConstructed = errors.New("randomized response not constructed: use NewRandomizedResponse or RandomizedResponseForEpsilon")

// Mechanism is symmetric k-ary randomized response with noise
// parameter p (SPEC section 4.4): given a person's true category c in
// [0, k), it reports c with probability 1 − p, and otherwise a category
// drawn uniformly from all k (c included). So the true category is
// reported with probability 1 − p + p/k and each other category with
// probability p/k.
//
// # Guarantee
//
// Each report is ε-locally differentially private with
//
//	ε = log((1 − p + p/k)/(p/k)) = log(k/p − k + 1),
//
// in the local model: the report is private on its own, before anyone else
// sees it, so no trust in the pipeline is needed for that guarantee. The
// neighbouring relation is replace-one: any two inputs c, c' of one person
// (a person's category replaced by any other). Proof sketch (there is no
// additive noise, so the likelihood ratio plays the part of the
// sensitivity argument): for every report y,
// P(y | c)/P(y | c') ∈ {1, (1 − p + p/k)/(p/k), (p/k)/(1 − p + p/k)},
// the extreme values attained for y = c ≠ c' and y = c' ≠ c, so the ratio
// lies in [e^−ε, e^ε] and is tight. p = 1 gives a uniform report and ε = 0.
//
// The relation is replace-one, not SPEC section 0's add/remove: local DP
// hides what a person's category is, not whether the person reported. The
// number of reports, and so the counts Debias works on, changes by one when
// a report is added or removed; if participation itself is sensitive, the
// release must protect the total separately (for instance a noisy count),
// which this package does not do here.
//
// Anything computed from the reports alone, such as the debiased frequencies
// of Debias, is post-processing and costs nothing more. A person who sends
// several independently randomized reports spends ε per report (basic
// composition: fresh coins on the same value let the reports be averaged).
// The accountant charges it as accountant.Mechanism{Kind:
// "randomized_response", Epsilon: P(), K: K(), Count: reports per person},
// whose RDP curve is the exact one of this mechanism under replace-one
// (SPEC section 3).
//
// # Exactness
//
// p is a float64 and so an exact dyadic rational m/2^s. The coin that
// decides whether to randomize compares fair random bits with the binary
// expansion of p (exact, as in the samplers of package noise: noise.Coin), and the uniform
// category comes from an unbiased integer sampler (Lemire's method with
// rejection), so the report probabilities are exactly the rationals
// TransitionProbability returns: no floating-point value takes part in the
// decision.
//
// # Why not Warner's "forced yes"
//
// The variant in which a coin's tails forces the answer YES and heads asks
// for the truth (the forced-response design the lecture notes call
// Warner's) is not offered: a NO can only come from a person whose true
// answer is NO (P(NO | YES) = 0 while P(NO | NO) = 1/2), so the ratio is
// unbounded and it is not ε-DP for any finite ε. The symmetric design here
// is the private one; for k = 2 it is Warner's original (a spinner selects
// "I am in A" or "I am not in A").
//
// Sources: Warner 1965 ("Randomized response: a survey technique for
// eliminating evasive answer bias", JASA) for binary randomized response;
// Kairouz, Oh & Viswanath 2014 ("Extremal mechanisms for local differential
// privacy", NeurIPS), Kairouz, Bonawitz & Ramage 2016 ("Discrete
// distribution estimation under local privacy", ICML) and Wang, Blocki, Li
// & Jha 2017 ("Locally differentially private protocols for frequency
// estimation", USENIX Security; their "direct encoding", with
// p/k = 1/(e^ε + k − 1)) for the k-ary mechanism and its debiasing.
//
// A Mechanism is immutable once constructed and safe for
// concurrent use. Its zero value is not usable: every method that needs
// parameters returns an error for it.
type Mechanism struct {
	k int
	p float64
	// coin lands heads with probability exactly p.
	coin noise.Coin
}

// New returns k-ary randomized response with noise
// parameter p: the true category is replaced by a uniform one with
// probability p. k must be in [2, MaxBins] and p in (0, 1]; p = 1 reports
// a uniform category whatever the input (ε = 0, useless but valid). The
// guarantee is ε-local DP with ε = Epsilon() (see Mechanism).
// Errors wrap ErrInvalidSpec.
func New(k int, p float64) (Mechanism, error) {
	if err := checkRRCategories(k); err != nil {
		return Mechanism{}, err
	}
	if !(p > 0 && p <= 1) { // also rejects NaN
		return Mechanism{}, fmt.Errorf("%w: randomized response p = %v: must be in (0, 1]", noise.ErrInvalidSpec, p)
	}
	return Mechanism{k: k, p: p, coin: noise.NewCoin(p)}, nil
}

// ForEpsilon returns k-ary randomized response with local
// privacy epsLocal: p = k/(e^ε + k − 1), the solution of
// ε = log((1 − p + p/k)/(p/k)). epsLocal must be finite and > 0, and small
// enough that p does not underflow (e^ε finite: ε below about 709).
//
// p is computed in floating point and then raised by a few ulps if needed,
// so that Epsilon() ≤ epsLocal: rounding only ever adds noise. The
// mechanism's actual ε is Epsilon(), below epsLocal by a few times k·2^−52
// at most: one ulp of p (at most p·2^−52) moves ε by at most k·2^−52,
// since dε/dp = −k/(p·(k − (k − 1)p)) and k − (k − 1)p ≥ 1.
// Errors wrap ErrInvalidSpec.
func ForEpsilon(k int, epsLocal float64) (Mechanism, error) {
	if err := checkRRCategories(k); err != nil {
		return Mechanism{}, err
	}
	if !(epsLocal > 0) || math.IsInf(epsLocal, 1) {
		return Mechanism{}, fmt.Errorf("%w: randomized response ε = %v: must be finite and > 0", noise.ErrInvalidSpec, epsLocal)
	}
	kf := float64(k)
	// e^ε + k − 1 = expm1(ε) + k, accurate also for small ε.
	p := kf / (math.Expm1(epsLocal) + kf)
	if !(p > 0) {
		return Mechanism{}, fmt.Errorf("%w: randomized response ε = %v is too large for k = %d: p underflows", noise.ErrInvalidSpec, epsLocal, k)
	}
	p = min(p, 1)
	// Rounding p down would claim less privacy loss than the mechanism
	// has; step p up (more noise) until the computed ε is within the
	// request. One or two steps suffice in practice; the bound on the
	// loop keeps a logic error from spinning.
	for i := 0; i < 64 && p < 1 && rrEpsilon(k, p) > epsLocal; i++ {
		p = math.Nextafter(p, 2)
	}
	if rrEpsilon(k, p) > epsLocal {
		return Mechanism{}, fmt.Errorf("%w: randomized response ε = %v, k = %d: no float64 p reaches it", noise.ErrInvalidSpec, epsLocal, k)
	}
	return New(k, p)
}

// checkRRCategories reports why k cannot be a number of categories.
func checkRRCategories(k int) error {
	if k < 2 || k > aggregate.MaxBins {
		return fmt.Errorf("%w: randomized response k = %d: must be in [2, %d]", noise.ErrInvalidSpec, k, aggregate.MaxBins)
	}
	return nil
}

// rrEpsilon returns log((1 − p + p/k)/(p/k)) for 0 < p ≤ 1, evaluated as
// log1p(k·(1 − p)/p): the ratio is 1 + k(1 − p)/p, and 1 − p is exact for
// p ≥ 1/2 (Sterbenz), so ε is accurate near p = 1 where it is small.
func rrEpsilon(k int, p float64) float64 {
	return math.Log1p(float64(k) * (1 - p) / p)
}

// K returns the number of categories k (0 for the zero value).
func (rr Mechanism) K() int { return rr.k }

// P returns the noise parameter p, the probability that the report is
// drawn uniformly instead of being the true category (0 for the zero
// value).
func (rr Mechanism) P() float64 { return rr.p }

// Epsilon returns the local privacy loss of one report,
// ε = log((1 − p + p/k)/(p/k)) (see Mechanism for the proof), or
// +Inf for the zero value, which offers no guarantee.
func (rr Mechanism) Epsilon() float64 {
	if rr.k < 2 {
		return math.Inf(1)
	}
	return rrEpsilon(rr.k, rr.p)
}

// TransitionProbability returns, as an exact rational, the probability that
// Randomize reports category reported when the true category is
// trueCategory: 1 − p + p/k when they are equal and p/k otherwise, with p
// the exact value of the float64 parameter. These are the probabilities the
// sampler realizes exactly (see Mechanism), so consumers can use
// them as the mechanism's likelihood.
func (rr Mechanism) TransitionProbability(trueCategory, reported int) (*big.Rat, error) {
	if rr.k < 2 {
		return nil, fmt.Errorf("randomized response transition: %w", errRRNotConstructed)
	}
	if trueCategory < 0 || trueCategory >= rr.k || reported < 0 || reported >= rr.k {
		return nil, fmt.Errorf("randomized response transition (%d → %d): categories must be in [0, %d)", trueCategory, reported, rr.k)
	}
	p := new(big.Rat).SetFloat64(rr.p) // exact: p is finite
	other := new(big.Rat).Quo(p, new(big.Rat).SetInt64(int64(rr.k)))
	if trueCategory != reported {
		return other, nil
	}
	keep := new(big.Rat).Sub(big.NewRat(1, 1), p)
	return keep.Add(keep, other), nil
}

// defaultRRSource is the shared crypto/rand Source used when a caller
// passes a nil Source, so a forgotten argument never yields weak
// randomness and repeated calls share one buffer.
var defaultRRSource = sync.OnceValue(noise.CryptoSource)

// Randomize returns the randomized report of one person's true category
// (in [0, k)): the category itself with probability 1 − p, otherwise a
// uniform category in [0, k). The report is ε-locally DP with ε = Epsilon()
// under replace-one (see Mechanism); the decision is exact. A nil
// src means the shared CryptoSource; production code must use crypto
// randomness, since anyone who can predict the coins can undo the
// randomization.
//
// On error the report is −1, never a category, so an ignored error cannot
// masquerade as a randomized report. Errors: the zero Mechanism, a
// category outside [0, k) (the message withholds the value: it is the
// unrandomized input), or a Source that looks stuck (more than 2^14 words
// for one report; see noise.New).
func (rr Mechanism) Randomize(src noise.Source, category int) (report int, err error) {
	if rr.k < 2 {
		return -1, fmt.Errorf("randomize: %w", errRRNotConstructed)
	}
	if category < 0 || category >= rr.k {
		return -1, fmt.Errorf("randomize: category outside [0, %d)", rr.k)
	}
	if src == nil {
		src = defaultRRSource()
	}
	defer func() {
		if err != nil {
			report = -1
			err = fmt.Errorf("randomize (k=%d, p=%v): %w", rr.k, rr.p, err)
		}
	}()
	err = noise.Draw(src, func(r *noise.Rand) {
		report = category
		if r.Flip(rr.coin) {
			report = int(r.Uniform(uint64(rr.k)))
		}
	})
	return report, err
}

// Randomizer applies k-ary randomized response to string categories, for
// producers that want local DP before publishing: each call of Randomize
// is an independent ε-locally DP report of one person's category (replace-
// one; see Mechanism for the guarantee, its proof and sources).
// The categories' order fixes their indices, which the debiasing side must
// use too (Categories).
//
// A Randomizer is safe for concurrent use when its Source is (both of this
// package's are).
type Randomizer struct {
	rr         Mechanism
	categories []string
	index      map[string]int
	src        noise.Source
}

// NewCategoryRandomizer returns a Randomizer over the given categories with
// local privacy epsLocal per report (p = k/(e^ε + k − 1) with k the number
// of categories; see ForEpsilon). The categories must be
// distinct and at least two: a duplicate would make one category twice as
// likely in the uniform draw and bias the debiasing. A nil src means the
// shared CryptoSource. Errors wrap ErrInvalidSpec.
func NewCategoryRandomizer(categories []string, epsLocal float64, src noise.Source) (*Randomizer, error) {
	rr, err := ForEpsilon(len(categories), epsLocal)
	if err != nil {
		return nil, fmt.Errorf("category randomizer: %w", err)
	}
	return NewRandomizer(rr, categories, src)
}

// NewRandomizer returns a Randomizer that applies rr (for instance built
// from a configured p with New) to the given categories;
// rr.K() must equal their number. Otherwise as NewCategoryRandomizer.
func NewRandomizer(rr Mechanism, categories []string, src noise.Source) (*Randomizer, error) {
	if rr.k < 2 {
		return nil, fmt.Errorf("category randomizer: %w", errRRNotConstructed)
	}
	if len(categories) != rr.k {
		return nil, fmt.Errorf("%w: category randomizer: %d categories for k = %d", noise.ErrInvalidSpec, len(categories), rr.k)
	}
	index := make(map[string]int, len(categories))
	for i, c := range categories {
		if j, dup := index[c]; dup {
			return nil, fmt.Errorf("%w: category randomizer: category %q at positions %d and %d", noise.ErrInvalidSpec, c, j, i)
		}
		index[c] = i
	}
	if src == nil {
		src = defaultRRSource()
	}
	return &Randomizer{rr: rr, categories: slices.Clone(categories), index: index, src: src}, nil
}

// Randomize returns the randomized report of one person's category (see
// Mechanism.Randomize). A category that is not configured is an
// error wrapping ErrUnknownCategory, never passed through; the message
// withholds the value, because it is the unrandomized input and error
// messages end up in logs.
func (z *Randomizer) Randomize(category string) (string, error) {
	i, ok := z.index[category]
	if !ok {
		return "", fmt.Errorf("randomize: %w (value withheld; %d categories configured)", ErrUnknownCategory, len(z.categories))
	}
	j, err := z.rr.Randomize(z.src, i)
	if err != nil {
		return "", err
	}
	return z.categories[j], nil
}

// Categories returns a copy of the categories in index order, the order
// Debias expects its counts in.
func (z *Randomizer) Categories() []string { return slices.Clone(z.categories) }

// Mechanism returns the randomized response the Randomizer applies, for
// its ε, p and k (and the accountant's record).
func (z *Randomizer) Mechanism() Mechanism { return z.rr }

// Debias estimates the true category frequencies from the counts of
// randomized reports: with n = Σ counts and π̂_c = counts[c]/n,
//
//	f̂_c = (π̂_c − p/k)/(1 − p).
//
// It is unbiased: E[π̂_c] = (1 − p)·f_c + p/k when each of the n reports
// comes from a person whose category is c with probability f_c, so
// E[f̂_c] = f_c (Wang et al. 2017, Kairouz et al. 2016). The estimates sum
// to 1 but can be negative or above 1; DebiasProjected returns a proper
// probability vector. Debias is post-processing of the reports, so it costs
// no privacy.
//
// stderr[c] is the estimated standard error of f̂_c from the multinomial
// variance Var(π̂_c) = π_c(1 − π_c)/n, divided by (1 − p):
// sqrt(π̂_c(1 − π̂_c)/(n − 1))/(1 − p). The n − 1 makes the variance
// estimate unbiased (E[π̂(1 − π̂)] = π(1 − π)(1 − 1/n)); for n = 1 the
// bound π(1 − π) ≤ 1/4 is used instead. It is the error of estimating the
// distribution the n reporters are drawn from; for a fixed population (f
// its exact frequencies) the true error is smaller, so the stderr is
// conservative.
//
// counts must have length k (k in [2, MaxBins]), be non-negative with a
// positive total, and p must be in (0, 1): with p = 1 the reports carry no
// information to debias. Parameter errors wrap ErrInvalidSpec.
func Debias(counts []int64, k int, p float64) (freqs, stderr []float64, err error) {
	n, err := checkDebias(counts, k, p)
	if err != nil {
		return nil, nil, err
	}
	nf := float64(n)
	pk := p / float64(k)
	q := 1 - p
	varDen := nf - 1
	freqs = make([]float64, k)
	stderr = make([]float64, k)
	for c, x := range counts {
		pi := float64(x) / nf
		freqs[c] = (pi - pk) / q
		v := 0.25
		if n > 1 {
			v = pi * (1 - pi) / varDen
		}
		stderr[c] = math.Sqrt(v) / q
	}
	return freqs, stderr, nil
}

// DebiasProjected returns the debiased frequencies of Debias projected onto
// the probability simplex: the Euclidean projection, the probability vector
// nearest to f̂ in L2 (Held, Wolfe & Crowder 1974; Duchi, Shalev-Shwartz,
// Singer & Chandra 2008), x_c = max(f̂_c − θ, 0) with θ chosen so that the
// x_c sum to 1. Because Σ f̂_c = 1 already, this clips the negative
// estimates to 0 and lowers every positive one by the same θ ≥ 0. Unlike
// clip-and-renormalize, it is a projection (it never moves an estimate that
// is already a probability vector, and it moves the others as little as
// possible in L2, so its L2 error is never larger than f̂'s).
//
// The projection is post-processing, so it costs no privacy, but it is
// nonlinear and therefore biased: small frequencies are pushed up by the
// clipping at 0 and large ones down. Use Debias for unbiased estimates
// and for standard errors. Errors as Debias.
func DebiasProjected(counts []int64, k int, p float64) ([]float64, error) {
	f, _, err := Debias(counts, k, p)
	if err != nil {
		return nil, err
	}
	return rrProjectSimplex(f), nil
}

// checkDebias validates Debias's arguments and returns the total count.
func checkDebias(counts []int64, k int, p float64) (int64, error) {
	if err := checkRRCategories(k); err != nil {
		return 0, fmt.Errorf("debias: %w", err)
	}
	if !(p > 0 && p < 1) {
		return 0, fmt.Errorf("%w: debias: randomized response p = %v: must be in (0, 1) (p = 1 reports carry no information)", noise.ErrInvalidSpec, p)
	}
	if len(counts) != k {
		return 0, fmt.Errorf("debias: %d counts for k = %d categories", len(counts), k)
	}
	var n int64
	for c, x := range counts {
		if x < 0 {
			return 0, fmt.Errorf("debias: count[%d] = %d is negative", c, x)
		}
		if n > math.MaxInt64-x {
			return 0, fmt.Errorf("debias: total count overflows int64")
		}
		n += x
	}
	if n == 0 {
		return 0, fmt.Errorf("debias: no reports (all counts are 0)")
	}
	return n, nil
}

// rrProjectSimplex returns the Euclidean projection of v onto the
// probability simplex {x : x ≥ 0, Σx = 1} by the sort-based algorithm
// (Held, Wolfe & Crowder 1974; Duchi et al. 2008, Fig. 1): with u = v
// sorted in decreasing order, ρ is the largest j with
// u_j − (Σ_{i≤j} u_i − 1)/j > 0, θ = (Σ_{i≤ρ} u_i − 1)/ρ and
// x = max(v − θ, 0). These are the KKT conditions of
// min ½‖x − v‖² on the simplex: x_c = v_c − θ where x_c > 0 and v_c ≤ θ
// where x_c = 0. v must be non-empty and finite.
func rrProjectSimplex(v []float64) []float64 {
	u := slices.Clone(v)
	slices.SortFunc(u, func(a, b float64) int { return cmp.Compare(b, a) })
	var sum, theta float64
	for j, x := range u {
		sum += x
		t := (sum - 1) / float64(j+1)
		if x-t > 0 {
			theta = t
		}
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = max(x-theta, 0)
	}
	return out
}
