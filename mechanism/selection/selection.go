package selection

import (
	"errors"
	"fmt"
	"sort"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// Method is a partition selection mechanism: the configuration word of a
// release's selection.
type Method string

// The selection methods. Each decides, independently for every key of a
// window, whether the key is released, from n, the exact number of distinct
// privacy units with at least one kept event under that key (n ≥ 1 for
// every key the window has; a key absent from the window has n = 0 and is
// never released).
//
// Neighbouring relation (all three): add/remove one privacy unit, that is
// all of its events in the window. The accumulate stage keeps each unit in
// at most L0 = MaxKeys keys per window (chosen without looking at values),
// so a neighbour changes the distinct-unit count of at most L0 keys, each by
// exactly 1, and may create (n: 0 → 1) or delete (1 → 0) some of them.
// Every guarantee is (ε, δ)-DP for the released key set (and, for Laplace
// and Gaussian, the noisy counts of the released keys; see Selector.Noisy).
// The δ is unavoidable: a key held by one unit alone appears or not with
// that unit, so no pure ε-DP selection releases it with probability > 0.
const (
	// Laplace keeps a key iff n + Z ≥ τ, with Z drawn from the discrete
	// Laplace P(Z = k) ∝ e^{−|k|/t} of scale t = L0/ε and τ the smallest
	// integer ≥ 2 with L0·P[Z ≥ τ − 1] ≤ δ, where, with q = e^{−1/t},
	// P[Z ≥ m] = q^m/(1 + q) for m ≥ 1 exactly (the two-sided geometric
	// tail): τ ≈ 1 + t·ln(L0/((1 + q)·δ)), against 1 + t·ln(L0/(2δ)) for
	// the continuous Laplace (SPEC section 6).
	//
	// Guarantee: (ε, δ)-DP. Sensitivity: the vector of the counts of the
	// keys present in both neighbours moves by at most L0 in L1 norm (at
	// most L0 keys, by 1 each), so their noisy counts are ε-DP at
	// t = L0/ε (discrete Laplace mechanism); keys created by the added unit
	// (n = 1, at most L0 of them) are released with probability at most
	// L0·P[1 + Z ≥ τ] ≤ δ in total. Proof sketch: condition on E, "no
	// created key is released"; given E the output is a post-processing of
	// the noisy counts of the smaller window's keys, which are ε-DP, and
	// P[not E] ≤ δ, which gives (ε, δ) in both directions (see the package
	// documentation for the two inequalities).
	//
	// Source: Korolova, Kenthapadi, Mishra & Ntoulas 2009 ("Releasing search
	// queries and clicks privately", WWW) for thresholded noisy counts;
	// Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo & Gipson 2020
	// ("Differentially private SQL with bounded user contribution", PoPETs)
	// for the contribution bound L0 and the δ; Google's differential-privacy
	// library (LaplacePartitionSelection, continuous Laplace) for the
	// threshold formula, here with the exact discrete tail.
	Laplace Method = "laplace"

	// Gaussian keeps a key iff n + Z ≥ τ with Z ~ N_Z(0, σ²), the discrete
	// Gaussian. σ is calibrated to the L2 sensitivity √L0 of the counts of
	// the keys present in both neighbours (at most L0 keys move by 1 each):
	// for L0 = 1 with the exact (ε, δ) curve of the discrete Gaussian
	// (noise.DiscreteGaussianSigma, Canonne, Kamath & Steinke 2020, Thm. 7),
	// for L0 > 1 with its zCDP bound ρ = L0/(2σ²) (CKS 2020, Thm. 4, the
	// coordinates being independent) converted by noise.ZCDPDelta, because
	// the exact curve of a vector of discrete Gaussians is not available
	// here. τ is the smallest integer ≥ 2 that keeps the total δ below the
	// budget, with the exact tail of N_Z(0, σ²) (summed term by term for
	// σ ≤ 1024, bounded by the Gaussian integral above).
	//
	// Guarantee: (ε, δ)-DP with
	//
	//	δ = max over k = 0..L0 of δ_noise(k) + (L0 − k)·P[Z ≥ τ − 1],
	//
	// where k is the number of affected keys present in both neighbours,
	// L0 − k the most keys the unit can create, and δ_noise(k) the δ at ε of
	// the discrete Gaussian on k coordinates shifted by 1 (nondecreasing in
	// k). Proof sketch: as for Laplace, condition on no created key being
	// released; the rest is a post-processing of the noisy counts, which is
	// (ε, δ_noise(k))-DP, and δ's add (package documentation). The usual
	// bound δ_noise + δ_threshold (Google's GaussianPartitionSelection, which
	// splits δ in halves) takes both worst cases at once although a unit
	// cannot both shift L0 existing keys and create L0 new ones: for L0 = 1
	// the maximum is max(δ_noise(1), P[Z ≥ τ − 1]), and each term may use
	// the whole δ. Wilkins, Kifer, Zhang & Karrer 2024 ("Exact privacy
	// analysis of the Gaussian sparse histogram mechanism", Journal of
	// Privacy and Confidentiality) compute the exact δ of this mechanism
	// with continuous Gaussian noise and show that the sum overestimates
	// it; the bound used here is derived for this package (package
	// documentation) and lies between the two. For L0 > 1, σ is calibrated
	// to δ_noise(L0) ≤ f·δ for the split f in {1/2, 3/4, …, 1 − 2^−10, 1}
	// that minimises τ, ties going to the smaller σ (the terms with fewer
	// shifted keys leave room for the threshold, so f ends up near 1); it
	// depends on the configuration only. Describe states δ_noise(L0),
	// L0·P[Z ≥ τ − 1] and the total.
	Gaussian Method = "gaussian"

	// Optimal keeps a key with probability π(n), drawn with an exact coin
	// (noise.Coin), where for L0 = 1
	//
	//	π(0) = 0, π(n) = min(1, e^ε·π(n−1) + δ, 1 + e^{−ε}·(π(n−1) + δ − 1)),
	//
	// the largest release probabilities any (ε, δ)-DP selection of one key
	// can have (Desfontaines, Voss, Gipson & Mandayam 2022, "Differentially
	// private partition selection", PoPETs, Thm. 1: optimal for every n at
	// once). π reaches 1 after finitely many steps.
	//
	// Guarantee: (ε, δ)-DP. Sensitivity: one key's n moves by 1 (0 → 1
	// included), and the recursion is exactly the four (ε, δ) inequalities
	// between Bernoulli(π(n)) and Bernoulli(π(n+1)) (keep and drop, both
	// directions; two hold by monotonicity) at equality for the binding one.
	//
	// For L0 > 1 each key runs the recursion at ε/L0 and δ/L0: the unit
	// changes at most L0 keys' n by 1, the keys' coins are independent, and
	// by basic composition L0 mechanisms that are (ε/L0, δ/L0)-DP give
	// (ε, δ). This is the treatment the paper discusses for several
	// partitions per user, and what Google's library and Privacy on Beam
	// do (they use the slightly larger 1 − (1 − δ)^{1/L0}); it is not
	// optimal for L0 > 1, and Auto compares it with thresholding there.
	//
	// π is computed in floating point with e^ε and δ lowered by a relative
	// 2^−44, and New then checks each float64 π(n) against the exact
	// inequalities with rigorous rounding margins (a lower bound on e^{ε/L0}
	// and on δ/L0), so the coin's probabilities, which are exactly the
	// float64 values, satisfy them (π loses a relative n·2^−44 at most).
	// When δ/L0 is below float64's resolution near 1 (1.1e-16), π stops a
	// few ulps below 1 and stays there. Noisy is not available: there is
	// no noisy count.
	Optimal Method = "optimal"

	// Auto picks, from the configuration only, the method with the best
	// release probability for small n: Optimal when L0 = 1 (it releases
	// every n with the largest probability possible; unless ε is too small
	// for its table), otherwise the method
	// with the smallest n at which P[keep] ≥ 1/2 (UnitsFor(0.5)), ties
	// broken by UnitsFor(0.99), then in the order Laplace, Gaussian,
	// Optimal (the thresholding methods also give a noisy count).
	Auto Method = "auto"
)

// PurposeSelection is the Purpose of the noise.Component a Selector
// charges.
const PurposeSelection = "key_selection"

// MaxMaxKeys is the largest MaxKeys New accepts.
const MaxMaxKeys = 1 << 16

// maxEpsilon is the largest ε New accepts; far beyond any meaningful
// privacy, and small enough that e^{ε/L0} is a finite float64.
const maxEpsilon = 100

// ErrNoNoisyCount is returned by Noisy for a method without a noisy count
// (Optimal).
var ErrNoNoisyCount = errors.New("selection method has no noisy count")

// Params is the configuration of a selection. It is the only input to
// calibration (never the data): the threshold, the noise scale and the
// charge are fixed before any key is seen.
type Params struct {
	// Method is Laplace, Gaussian, Optimal or Auto.
	Method Method
	// Epsilon is the ε of the selection, finite, > 0 and at most 100.
	Epsilon float64
	// Delta is the δ of the selection, in (0, 1): for the thresholding
	// methods the probability budget for releasing keys that exist only
	// because of one unit.
	Delta float64
	// MaxKeys is L0, the most keys one privacy unit contributes to per
	// window (enforced upstream), in [1, MaxMaxKeys].
	MaxKeys int
}

// Selector decides which keys of a window are released. It is built by
// New from Params alone, is immutable, and is safe for concurrent use (the
// randomness comes from the Sampler each call is given). The zero Selector
// is not usable.
type Selector struct {
	auto    bool   // Params.Method was Auto
	method  Method // the method run: never Auto
	eps     float64
	delta   float64
	maxKeys int

	// Thresholding (Laplace, Gaussian): keep iff n + Z ≥ tau.
	scale float64 // t of the discrete Laplace, σ of the discrete Gaussian
	tau   int64
	// deltaNoise is δ_noise(L0) (Gaussian; 0 for Laplace) and deltaThresh
	// L0·P[Z ≥ τ − 1]; deltaUsed is the δ the calibrated mechanism has
	// (≤ delta).
	deltaNoise, deltaThresh, deltaUsed float64
	// dgNorm is the normalizer Σ_y e^{−y²/(2σ²)} (a lower bound exact to
	// double precision) for σ ≤ 1024, 0 above.
	dgNorm float64

	// Optimal: pi[n] = π(n) for n < len(pi), pi[len−1] beyond; the last
	// entry is 1 unless δ/L0 is below float64's resolution near 1.
	pi []float64
}

// New calibrates a selection from p alone. Errors wrap noise.ErrInvalidSpec
// and say what to change.
func New(p Params) (*Selector, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	switch p.Method {
	case Laplace:
		return newLaplace(p)
	case Gaussian:
		return newGaussian(p)
	case Optimal:
		return newOptimal(p)
	}
	return newAuto(p)
}

// invalid wraps a configuration problem in noise.ErrInvalidSpec.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: selection: "+format, append([]any{noise.ErrInvalidSpec}, args...)...)
}

// validate reports the first problem with p.
func (p Params) validate() error {
	switch p.Method {
	case Laplace, Gaussian, Optimal, Auto:
	default:
		return invalid("unknown method %q (want laplace, gaussian, optimal or auto)", p.Method)
	}
	if !(p.Epsilon > 0) || p.Epsilon > maxEpsilon {
		return invalid("epsilon must be > 0 and at most %d, got %v", maxEpsilon, p.Epsilon)
	}
	if !(p.Delta > 0) {
		return invalid("delta must be > 0, got %v: a key held by a single unit appears only with that unit, "+
			"so selecting keys privately needs a delta (e.g. 1e-6, well below 1/number of units)", p.Delta)
	}
	if !(p.Delta < 1) {
		return invalid("delta must be < 1, got %v", p.Delta)
	}
	if p.MaxKeys < 1 || p.MaxKeys > MaxMaxKeys {
		return invalid("max_keys must be in [1, %d], got %d", MaxMaxKeys, p.MaxKeys)
	}
	return nil
}

// newAuto resolves Auto (see Auto).
func newAuto(p Params) (*Selector, error) {
	pick := func(s *Selector) *Selector { s.auto = true; return s }
	if p.MaxKeys == 1 {
		// Optimal dominates for every n; only a budget too small for its
		// table falls through to the comparison.
		p.Method = Optimal
		if s, err := New(p); err == nil {
			return pick(s), nil
		}
	}
	var best *Selector
	var errs []error
	for _, m := range []Method{Laplace, Gaussian, Optimal} {
		p.Method = m
		s, err := New(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if best == nil || better(s, best) {
			best = s
		}
	}
	if best == nil {
		return nil, fmt.Errorf("selection: auto: no method can be calibrated: %w", errors.Join(errs...))
	}
	return pick(best), nil
}

// better reports whether a releases small counts more readily than b: a
// smaller UnitsFor(0.5), then a smaller UnitsFor(0.99). Candidates are
// tried in Auto's order, so equality keeps the earlier one.
func better(a, b *Selector) bool {
	a5, b5 := a.UnitsFor(0.5), b.UnitsFor(0.5)
	if a5 != b5 {
		return a5 < b5
	}
	return a.UnitsFor(0.99) < b.UnitsFor(0.99)
}

// Method returns the method the Selector runs (never Auto: what Auto chose).
func (s *Selector) Method() Method { return s.method }

// Epsilon returns the configured ε, the whole ε of the selection.
func (s *Selector) Epsilon() float64 { return s.eps }

// Delta returns the configured δ, the δ the accountant charges. The
// calibrated mechanism's own δ (DeltaUsed) is at most this.
func (s *Selector) Delta() float64 { return s.delta }

// DeltaUsed returns the δ of the calibrated mechanism, at most Delta: the
// integer threshold (or the rounded σ) usually leaves some of the budget
// unused. For Optimal it is Delta (the recursion uses all of it).
func (s *Selector) DeltaUsed() float64 { return s.deltaUsed }

// MaxKeys returns L0.
func (s *Selector) MaxKeys() int { return s.maxKeys }

// NoiseKind returns noise.DiscreteLaplace or noise.DiscreteGaussian for
// the thresholding methods, the noise of the counts Noisy returns, and ""
// for Optimal.
func (s *Selector) NoiseKind() noise.Kind {
	switch s.method {
	case Laplace:
		return noise.DiscreteLaplace
	case Gaussian:
		return noise.DiscreteGaussian
	}
	return ""
}

// Scale returns the noise scale of the thresholding methods (t of the
// discrete Laplace, σ of the discrete Gaussian), 0 for Optimal.
func (s *Selector) Scale() float64 { return s.scale }

// HasNoisyCount reports whether Noisy is available (Laplace, Gaussian).
func (s *Selector) HasNoisyCount() bool { return s.method != Optimal }

// Component returns what the accountant charges for the selection: one
// mechanism proved (Epsilon, Delta)-DP as a whole (noise.ApproxDP, purpose
// PurposeSelection), composed by basic composition with the rest of the
// release. The noisy counts Noisy returns are covered by the same charge.
func (s *Selector) Component() noise.Component {
	return noise.Component{Purpose: PurposeSelection, Noise: noise.ApproxDP, Epsilon: s.eps, Delta: s.delta}
}

// Keep decides whether a key with units distinct privacy units is
// released, drawing its randomness from ns (the noise for the thresholding
// methods; for Optimal the coin reads noise.SourceOf(ns), so a seeded
// Sampler gives seeded decisions). A key with 0 units is never released and
// draws nothing; a negative count is an error.
func (s *Selector) Keep(ns noise.Sampler, units int64) (bool, error) {
	if s.method != Optimal {
		_, keep, err := s.Noisy(ns, units)
		return keep, err
	}
	if units < 0 {
		return false, fmt.Errorf("selection: negative unit count %d", units)
	}
	p := s.Probability(units)
	if p == 0 {
		return false, nil
	}
	coin := noise.NewCoin(p)
	var keep bool
	if err := noise.Draw(noise.SourceOf(ns), func(r *noise.Rand) { keep = r.Flip(coin) }); err != nil {
		return false, fmt.Errorf("selection: coin for %d units: %w", units, err)
	}
	return keep, nil
}

// Noisy returns, for a thresholding method, the noisy count n + Z that Keep
// compares with the threshold, and the decision keep = (n + Z ≥ τ). A
// count_units release may publish the noisy count of a released key as its
// value: it is the very output the selection's (ε, δ) guarantee covers
// (package documentation), so it is post-processing and is not charged
// again. It is biased upwards near τ, since only keys whose noise carried
// them over τ are released. A key with 0 units returns (0, false) and
// draws nothing. For Optimal it returns ErrNoNoisyCount.
func (s *Selector) Noisy(ns noise.Sampler, units int64) (noisy int64, keep bool, err error) {
	if s.method == Optimal {
		return 0, false, ErrNoNoisyCount
	}
	if units < 0 {
		return 0, false, fmt.Errorf("selection: negative unit count %d", units)
	}
	if units == 0 {
		return 0, false, nil
	}
	var z int64
	if s.method == Laplace {
		z, err = ns.DiscreteLaplace(s.scale)
	} else {
		z, err = ns.DiscreteGaussian(s.scale)
	}
	if err != nil {
		return 0, false, fmt.Errorf("selection: %w", err)
	}
	v, ok := noise.AddInt64(units, z)
	if !ok {
		return 0, false, fmt.Errorf("selection: count %d + noise %d overflows int64", units, z)
	}
	return v, v >= s.tau, nil
}

// Probability returns P[keep | n = units], the probability that a key with
// that many distinct units is released: P[Z ≥ τ − n] for thresholding
// (exact closed form for the discrete Laplace; for the discrete Gaussian
// summed term by term when σ ≤ 1024, by the midpoint rule within 0.05/σ²
// above), π(n) for Optimal. It is 0 for n ≤ 0.
func (s *Selector) Probability(units int64) float64 {
	if units <= 0 {
		return 0
	}
	if s.method == Optimal {
		return s.pi[min(units, int64(len(s.pi)-1))]
	}
	m := s.tau - units // P[Z ≥ m]; τ ≥ 2 and units ≥ 1, so no overflow
	if s.method == Laplace {
		return dlapGE(s.scale, m)
	}
	return s.dgGE(m)
}

// UnitsFor returns the smallest n with Probability(n) ≥ p (to float64
// accuracy), 0 for p ≤ 0, and −1 when no n reaches p: p > 1 or NaN, and
// p = 1 for the thresholding methods, which never release with certainty
// (nor does Optimal when δ/L0 is below about 1e-16).
func (s *Selector) UnitsFor(p float64) int64 {
	switch {
	case !(p <= 1):
		return -1
	case p <= 0:
		return 0
	case s.method == Optimal:
		if i := sort.SearchFloat64s(s.pi, p); i < len(s.pi) {
			return int64(i)
		}
		return -1
	case p == 1:
		return -1
	}
	n := smallestInt(1, func(n int64) bool { return s.Probability(n) >= p })
	return n
}

// Threshold returns τ for the thresholding methods (a key is kept iff its
// noisy count is at least τ, so a key with τ units is released with
// probability just above 1/2), and for Optimal the smallest n with
// π(n) ≥ 1/2, its counterpart.
func (s *Selector) Threshold() float64 {
	if s.method == Optimal {
		return float64(s.UnitsFor(0.5))
	}
	return float64(s.tau)
}

// Describe returns one line for dpstream explain: the method, its
// threshold and noise, the budget, and the unit counts at which a key is
// released with probability 1/2 and 0.99.
func (s *Selector) Describe() string {
	prefix := ""
	if s.auto {
		prefix = "auto: "
	}
	budget := fmt.Sprintf("ε=%g, δ=%g, max_keys %d", s.eps, s.delta, s.maxKeys)
	reach := fmt.Sprintf("P[release] ≥ 0.5 from %d units, ≥ 0.99 from %d", s.UnitsFor(0.5), s.UnitsFor(0.99))
	switch s.method {
	case Laplace:
		return fmt.Sprintf("%slaplace threshold %d units (discrete Laplace t=%.4g; %s): %s",
			prefix, s.tau, s.scale, budget, reach)
	case Gaussian:
		return fmt.Sprintf("%sgaussian threshold %d units (discrete Gaussian σ=%.4g; δ_noise %.3g, δ_threshold %.3g, total %.3g; %s): %s",
			prefix, s.tau, s.scale, s.deltaNoise, s.deltaThresh, s.deltaUsed, budget, reach)
	}
	if n := s.UnitsFor(1); n > 0 {
		reach += fmt.Sprintf(", certain from %d", n)
	}
	return fmt.Sprintf("%soptimal (Desfontaines et al. 2022, per key ε=%.4g, δ=%.3g; %s): %s",
		prefix, s.eps/float64(s.maxKeys), s.delta/float64(s.maxKeys), budget, reach)
}

// smallestInt returns the smallest n ≥ lo at which the nondecreasing
// predicate ok holds, by doubling then bisection; ok must hold somewhere
// below 2^62 (it returns the largest probe otherwise).
func smallestInt(lo int64, ok func(int64) bool) int64 {
	if ok(lo) {
		return lo
	}
	bad, step := lo, int64(1)
	hi := lo + step
	for !ok(hi) {
		if hi >= 1<<62 {
			return hi
		}
		bad, step = hi, step*2
		hi = lo + step
	}
	// ok(hi), !ok(bad)
	for hi-bad > 1 {
		mid := bad + (hi-bad)/2
		if ok(mid) {
			hi = mid
		} else {
			bad = mid
		}
	}
	return hi
}

// checkScale reports a noise scale the samplers cannot take.
func checkScale(name string, v float64) error {
	if err := noise.CheckDiscreteScale(name, v); err != nil {
		return invalid("%v (epsilon too small for max_keys?)", err)
	}
	return nil
}
