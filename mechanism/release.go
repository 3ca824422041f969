package mechanism

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Kind is what a release computes over one window.
type Kind string

// The release kinds of SPEC section 4.1 and 4.2.
const (
	KindCount     Kind = "count"     // number of kept events
	KindSum       Kind = "sum"       // sum of a clamped field
	KindMean      Kind = "mean"      // mean of a clamped field
	KindHistogram Kind = "histogram" // equal-width histogram of a clamped field
)

// NoiseKind is the distribution a release adds.
type NoiseKind string

// The noise distributions. A Spec names one of the configuration words
// NoiseLaplace (pure ε-DP) or NoiseGaussian ((ε, δ)-DP, composes better
// over many releases). The noise actually added is always exact discrete
// noise (SPEC section 2), and Component.Noise says so with the discrete
// kinds, which are also the accountant's mechanism kinds: a Component maps
// to accountant.Mechanism{Kind: string(c.Noise), Scale: c.Scale,
// Sensitivity: c.Sensitivity}.
const (
	NoiseLaplace  NoiseKind = "laplace"  // config word: discrete Laplace noise
	NoiseGaussian NoiseKind = "gaussian" // config word: discrete Gaussian noise

	NoiseDiscreteLaplace  NoiseKind = "discrete_laplace"  // Component.Noise for NoiseLaplace
	NoiseDiscreteGaussian NoiseKind = "discrete_gaussian" // Component.Noise for NoiseGaussian
)

// discrete returns the component kind that implements the config word k.
func (k NoiseKind) discrete() NoiseKind {
	switch k {
	case NoiseLaplace:
		return NoiseDiscreteLaplace
	case NoiseGaussian:
		return NoiseDiscreteGaussian
	}
	return k
}

// The values of Component.Purpose: which statistic a noise addition covers.
const (
	PurposeCount       = "count"        // the number of kept events
	PurposeSum         = "sum"          // the uncentered sum (KindSum)
	PurposeCenteredSum = "centered_sum" // Σ(v − (Lo+Hi)/2) (KindMean)
	PurposeBins        = "bins"         // the vector of histogram counts
)

// MaxBins is the largest histogram Calibrate accepts. It keeps a typo in a
// configuration from allocating gigabytes; far finer histograms would be
// mostly noise at any realistic window size anyway.
const MaxBins = 1 << 20

// ErrInvalidSpec is wrapped by every error Calibrate returns for a Spec that
// cannot be calibrated, so configuration loading can tell a bad config from
// other failures with errors.Is.
var ErrInvalidSpec = errors.New("invalid release spec")

// Spec is a release's configuration, the only input to calibration (never
// the data: SPEC section 1). Fields a kind does not use must be zero, so a
// confused configuration is an error rather than silently ignored.
type Spec struct {
	Kind  Kind
	Noise NoiseKind
	// Epsilon is the release's ε, finite and > 0.
	Epsilon float64
	// Delta is the release's δ, in (0, 1) for Gaussian noise and 0 for
	// Laplace noise.
	Delta float64
	// Lo and Hi bound the field's values (sum, mean, histogram; zero for
	// count). The accumulate stage clamps every value into [Lo, Hi].
	Lo, Hi float64
	// Bins is the number of equal-width histogram bins on [Lo, Hi]
	// (histogram only, 1..MaxBins).
	Bins int
	// MaxContributions is L, the most events one privacy unit keeps per
	// window (enforced upstream), at least 1.
	MaxContributions int
}

// Component is one noise addition of a release: what the accountant charges.
// Its fields depend only on the Spec, so the charge is data-independent.
type Component struct {
	Purpose string
	// Noise is NoiseDiscreteLaplace or NoiseDiscreteGaussian, the
	// accountant's mechanism kind.
	Noise NoiseKind
	// Sensitivity is the L1 (discrete Laplace) or L2 (discrete Gaussian)
	// sensitivity, under add/remove one unit, of the statistic the noise is
	// added to, on the value scale: the integer L for counts and bins, and
	// for sums g·⌈Δ/g⌉ ≤ Δ + g, the sensitivity of the sum rounded to the
	// grid (see AddLaplace). Sensitivity/Granularity is always an integer.
	Sensitivity float64
	// Scale is the noise scale on the value scale: t of the discrete
	// Laplace P(k) ∝ exp(−|k|/t) or σ of the discrete Gaussian, times
	// Granularity. The sampler draws with Scale/Granularity.
	Scale float64
	// Granularity is the grid the noise lives on: 1 for integer data
	// (counts, bins), Granularity(Scale), a power of two, for sums.
	Granularity float64
	// Epsilon and Delta are the share of the release's budget this
	// component was calibrated to; the shares of a release add up to its
	// Spec's (basic composition).
	Epsilon, Delta float64
	// ExpectedAbsError is E|noise| of this component (per coordinate for
	// bins): Granularity·1/sinh(1/t) for the discrete Laplace (just below
	// Scale), about σ·sqrt(2/π) for the discrete Gaussian. The grid rounding
	// of a sum adds at most Granularity/2 more.
	ExpectedAbsError float64
}

// onGrid reports whether the component's statistic is real-valued, so its
// noise is added by the granularity method (AddLaplace, AddGaussian), rather
// than an integer count.
func (c Component) onGrid() bool {
	return c.Purpose == PurposeSum || c.Purpose == PurposeCenteredSum
}

// spreadShift reports whether one unit can move several coordinates of the
// component's statistic at once: histogram bins with L = steps ≥ 2. The
// exact one-dimensional (ε, δ) curve of the discrete Gaussian is then not
// known to cover every neighbouring change (the multivariate discrete
// Gaussian is not rotation invariant), so such components are calibrated
// through zCDP, which does compose exactly over coordinates.
func (c Component) spreadShift(steps float64) bool {
	return c.Purpose == PurposeBins && steps >= 2
}

// gaussianDelta returns the δ at eps of c's discrete Gaussian noise with σ
// (in grid steps) against a sensitivity of steps grid steps: the exact
// curve (DiscreteGaussianDelta) for a single integer shift, or the zCDP
// conversion (zcdpDelta with ρ = steps²/(2σ²)) for a spread one. Release's
// check and Calibrate use the same function.
func (c Component) gaussianDelta(eps, sigma, steps float64) float64 {
	if c.spreadShift(steps) {
		return zcdpDelta(eps, steps*steps/(2*sigma*sigma))
	}
	return cachedDiscreteGaussianDelta(eps, sigma, int64(steps))
}

// Calibration is a Spec together with the noise that makes it private.
// Build it with Calibrate: Release refuses one whose noise is smaller than
// its Spec requires.
type Calibration struct {
	Spec       Spec
	Components []Component
	// ExpectedAbsError is E|noise| of the headline value: the count or the
	// sum, or each bin's count for a histogram. For a mean it is 0: the
	// mean's error depends on the true count, which calibration must not
	// see; the count's and the centered sum's errors are in Components.
	ExpectedAbsError float64

	// verified is a private copy of what Calibrate derived. Release skips
	// re-deriving (which solves for δ) while Spec and Components still equal
	// it; a calibration built or edited by hand differs and is checked.
	verified *verifiedCalibration
}

type verifiedCalibration struct {
	spec  Spec
	comps []Component
}

// Calibrate validates s and derives the noise of each of its components.
// The guarantee is ε-DP (NoiseLaplace) or (ε, δ)-DP (NoiseGaussian) for the
// release as a whole, under add/remove of one privacy unit (all of its
// events in the window), given that each unit keeps at most
// L = s.MaxContributions events and every value is clamped to [Lo, Hi]
// upstream.
//
// The noise is exact discrete noise (SPEC section 2; Canonne, Kamath &
// Steinke 2020). Counts and bins are integers and get integer noise with
// integer sensitivity Δ. Sums are real: they are rounded to a power-of-two
// grid g and get g × integer noise (AddLaplace, AddGaussian); rounding
// makes the sensitivity g·⌈Δ/g⌉ (≤ Δ + g), an integer number ⌈Δ/g⌉ of grid
// steps, and that is the Sensitivity recorded and charged. The grid is a
// function of the final scale, g = Granularity(Scale), found by a short
// fixed-point iteration because the scale depends on g through ⌈Δ/g⌉.
//
// Discrete Laplace: t = Δ_g/ε grid steps (Δ_g the sensitivity in grid
// steps), so the likelihood ratio of any integer shift n ≤ Δ_g is at most
// e^{n/t} ≤ e^ε (Dwork, McSherry, Nissim & Smith 2006 for the continuous
// analogue).
//
// Discrete Gaussian: σ (in grid steps) from DiscreteGaussianSigma, the exact
// (ε, δ) curve of CKS 2020 Theorem 7 for integer sensitivity Δ_g, then
// rounded up: to an integer for sums (so the sampler's exact arithmetic
// stays in 128 bits; the increase is below 2^-39 relative) and to 24
// significant bits for counts and bins (below 2^-23). More noise is always
// still private, and the δ of the rounded σ is re-checked. The
// continuous analytic σ (Balle & Wang 2018) does not carry over unchecked:
// the discrete Gaussian's δ at the same σ differs slightly (above or below).
// Histograms with L ≥ 2 are the exception: a unit may change several bins,
// the exact curve is one-dimensional, and the multivariate discrete
// Gaussian is not rotation invariant, so their σ is calibrated through
// zCDP instead (ρ = L²/(2σ²) composes exactly over independent bins; CKS
// 2020 Thm. 4), converted to (ε, δ) by CKS 2020 Prop. 12. That is rigorous
// but costs more noise (about 8% more σ at ε = 1, δ = 1e-5).
//
// Sensitivities of the unrounded statistics, with proof sketches:
//
// Count: Δ1 = Δ2 = L. Adding or removing a unit changes the number of kept
// events by its own kept events, at most L.
//
// Sum: Δ1 = Δ2 = L·M with M = max(|Lo|, |Hi|). The unit's at most L kept
// values each satisfy |v| ≤ M, so the sum moves by at most L·M; L events at
// the bound of larger magnitude attain it. The sum is released uncentered,
// although SPEC section 0 suggests centering, because for a standalone sum
// centering is never better. With m = (Lo+Hi)/2 and h = (Hi−Lo)/2 (so
// M = |m| + h), the centered estimator S̃c + m·ñ needs a noisy centered sum
// (Δ = L·h, budget ε₁) and a noisy count (Δ = L, budget ε₂), ε₁ + ε₂ = ε.
// With Laplace noise its variance 2L²(h²/ε₁² + m²/ε₂²) is smallest at
// ε₁ ∝ h^{2/3}, ε₂ ∝ |m|^{2/3}, where it equals 2L²(h^{2/3} + |m|^{2/3})³/ε².
// The uncentered variance is 2L²(h + |m|)²/ε², and
// (h^{2/3} + |m|^{2/3})^{3/2} ≥ h + |m| because the ℓ_p quasi-norm for
// p = 2/3 < 1 dominates the ℓ₁ norm, with equality only when m = 0 or h = 0.
// With Gaussian noise under zCDP accounting the optimal split gives exactly
// the uncentered variance L²(h + |m|)²/(2ρ), and splitting (ε, δ) is worse.
//
// Mean: a noisy count (Δ = L) and a noisy centered sum Σ(v − m), each with
// half the budget (ε/2, and δ/2 for Gaussian), so the pair is (ε, δ)-DP by
// basic composition. Each centered value lies in [−h, h], so the centered
// sum moves by at most L·h = L·(Hi−Lo)/2. The mean
// clamp(m + S̃c/max(ñ, 1), Lo, Hi) is post-processing.
//
// Histogram: equal-width bins on [Lo, Hi], one noise draw per bin with
// Δ1 = L and Δ2 = L. The unit's kept events change bin counts by k_j ≥ 0
// with Σk_j ≤ L, so the L1 change is at most L and the L2 change
// sqrt(Σk_j²) is at most Σk_j ≤ L (attained with all events in one bin;
// with a per-bin cap c it would be sqrt(c·L), SPEC section 0). The
// discrete Laplace guarantee holds for the vector because the likelihood
// ratio is a product over bins, at most e^{Σk_j/t}; the discrete Gaussian
// one through zCDP for L ≥ 2 (see above), and exactly for L = 1, where a
// unit changes a single bin by 1 and the other bins' identical noise
// cancels. Wasserman & Zhou (2010) use replace-one neighbours, which
// doubles Δ1 (their scale 2/ε for L = 1).
//
// Errors wrap ErrInvalidSpec and name the offending field.
func Calibrate(s Spec) (Calibration, error) {
	if err := s.validate(); err != nil {
		return Calibration{}, err
	}
	plan := s.plan()
	c := Calibration{Spec: s, Components: make([]Component, 0, len(plan))}
	for _, p := range plan {
		comp, err := calibrateComponent(p)
		if err != nil {
			return Calibration{}, fmt.Errorf("calibrate %s release: %w", s.Kind, err)
		}
		c.Components = append(c.Components, comp)
	}
	if s.Kind != KindMean {
		c.ExpectedAbsError = c.Components[0].ExpectedAbsError
	}
	c.verified = &verifiedCalibration{spec: s, comps: slices.Clone(c.Components)}
	return c, nil
}

// plan returns the noise additions of a valid spec without their scales:
// which statistic each covers, the sensitivity Δ of the unrounded statistic
// and its budget share (the derivations are in Calibrate's comment).
func (s Spec) plan() []Component {
	L := float64(s.MaxContributions)
	part := func(purpose string, sensitivity, eps, delta float64) Component {
		return Component{Purpose: purpose, Noise: s.Noise.discrete(), Sensitivity: sensitivity, Epsilon: eps, Delta: delta}
	}
	switch s.Kind {
	case KindCount:
		return []Component{part(PurposeCount, L, s.Epsilon, s.Delta)}
	case KindSum:
		return []Component{part(PurposeSum, L*math.Max(math.Abs(s.Lo), math.Abs(s.Hi)), s.Epsilon, s.Delta)}
	case KindMean:
		return []Component{
			part(PurposeCount, L, s.Epsilon/2, s.Delta/2),
			part(PurposeCenteredSum, L*(s.Hi-s.Lo)/2, s.Epsilon/2, s.Delta/2),
		}
	default: // KindHistogram; validate has rejected every other kind
		return []Component{part(PurposeBins, L, s.Epsilon, s.Delta)}
	}
}

// maxGridSteps bounds the sensitivity in grid steps so that it converts to
// an int64 exactly (a float64 this large is always an integer).
const maxGridSteps = 1 << 62

// calibrateComponent sets the scale, grid, effective sensitivity and
// expected error of one planned noise addition from its (unrounded)
// sensitivity and budget share.
func calibrateComponent(c Component) (Component, error) {
	if !validScale(c.Sensitivity) {
		return Component{}, fmt.Errorf("%w: %s sensitivity %v is not finite and positive (bounds too large?)",
			ErrInvalidSpec, c.Purpose, c.Sensitivity)
	}
	delta := c.Sensitivity
	// first is a scale whose grid starts the fixed-point iteration: the
	// scale the noise would have without rounding.
	first := delta / c.Epsilon
	if c.Noise == NoiseDiscreteGaussian {
		sc, err := AnalyticGaussianSigma(c.Epsilon, c.Delta, delta)
		if err != nil {
			return Component{}, fmt.Errorf("%w: %s: %w", ErrInvalidSpec, c.Purpose, err)
		}
		first = sc
	}
	if !validScale(first) {
		return Component{}, fmt.Errorf("%w: %s noise scale %v is not finite and positive (epsilon too small?)",
			ErrInvalidSpec, c.Purpose, first)
	}
	g := 1.0
	if c.onGrid() {
		var err error
		if g, err = Granularity(first); err != nil {
			return Component{}, fmt.Errorf("%w: %s: %w", ErrInvalidSpec, c.Purpose, err)
		}
	}
	// The grid of the final scale can be twice the starting one when the
	// scale sits just below a power of two; two rounds settle it, four
	// leave room.
	for range 4 {
		steps := math.Ceil(delta / g) // sensitivity in grid steps
		if steps > maxGridSteps {
			return Component{}, fmt.Errorf("%w: %s sensitivity %v is %v grid steps of %v, above 2^62 (epsilon too large?)",
				ErrInvalidSpec, c.Purpose, delta, steps, g)
		}
		scale, err := discreteScale(c, steps, g)
		if err != nil {
			return Component{}, err
		}
		if c.onGrid() {
			if g2, _ := Granularity(scale); g2 != g {
				g = g2
				continue
			}
		}
		c.Sensitivity, c.Scale, c.Granularity = g*steps, scale, g
		if c.Noise == NoiseDiscreteGaussian {
			c.ExpectedAbsError = g * dgAbsMean(scale/g)
		} else {
			c.ExpectedAbsError = g * dlapAbsMean(scale/g)
		}
		return c, nil
	}
	return Component{}, fmt.Errorf("%w: %s: the noise grid did not settle (scale near a power of two?)", ErrInvalidSpec, c.Purpose)
}

// discreteScale returns the value-scale noise scale for sensitivity steps
// (an integer number of grid steps g) and c's budget share: g·t with
// t = steps/ε for the discrete Laplace, g·σ for the discrete Gaussian with
// σ from DiscreteGaussianSigma, rounded up (see Calibrate) and re-checked.
func discreteScale(c Component, steps, g float64) (float64, error) {
	tooLarge := func(v float64) error {
		return fmt.Errorf("%w: %s noise scale %v grid steps is not finite, positive and at most 2^50 (epsilon too small?)",
			ErrInvalidSpec, c.Purpose, v)
	}
	if c.Noise == NoiseDiscreteLaplace {
		t := steps / c.Epsilon
		if !validScale(t) || t > maxDiscreteScale {
			return 0, tooLarge(t)
		}
		return g * t, nil
	}
	var sigma float64
	var err error
	if c.spreadShift(steps) {
		sigma, err = zcdpGaussianSigma(c.Epsilon, c.Delta, steps)
	} else {
		sigma, err = DiscreteGaussianSigma(c.Epsilon, c.Delta, int64(steps))
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrInvalidSpec, c.Purpose, err)
	}
	round, next := roundUpSignificand, nextSignificand
	if c.onGrid() {
		round, next = math.Ceil, func(x float64) float64 { return x + 1 }
	}
	sigma = round(sigma)
	for i := 0; c.gaussianDelta(c.Epsilon, sigma, steps) > c.Delta; i++ {
		if i == 16 {
			return 0, fmt.Errorf("%w: %s: rounded sigma %v misses delta %v", ErrInvalidSpec, c.Purpose, sigma, c.Delta)
		}
		sigma = next(sigma)
	}
	if !validScale(sigma) || sigma > maxDiscreteScale {
		return 0, tooLarge(sigma)
	}
	return g * sigma, nil
}

// validate reports the first problem with s, wrapped in ErrInvalidSpec.
func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidSpec}, args...)...)
	}
	switch s.Kind {
	case KindCount, KindSum, KindMean, KindHistogram:
	default:
		return bad("unknown kind %q (want count, sum, mean or histogram)", s.Kind)
	}
	if !(s.Epsilon > 0) || math.IsInf(s.Epsilon, 1) {
		return bad("epsilon must be finite and > 0, got %v", s.Epsilon)
	}
	switch s.Noise {
	case NoiseLaplace:
		if s.Delta != 0 {
			return bad("delta must be 0 for laplace noise (it is pure ε-DP), got %v", s.Delta)
		}
	case NoiseGaussian:
		if !(s.Delta > 0 && s.Delta < 1) {
			return bad("delta must be in (0, 1) for gaussian noise, got %v", s.Delta)
		}
	default:
		return bad("unknown noise %q (want laplace or gaussian)", s.Noise)
	}
	if s.MaxContributions < 1 {
		return bad("max contributions per window must be >= 1, got %d", s.MaxContributions)
	}
	if s.Kind == KindCount {
		if s.Lo != 0 || s.Hi != 0 {
			return bad("count takes no bounds, got [%v, %v]", s.Lo, s.Hi)
		}
	} else {
		if math.IsNaN(s.Lo) || math.IsNaN(s.Hi) || math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || !(s.Lo < s.Hi) {
			return bad("%s needs finite bounds with lo < hi, got [%v, %v]", s.Kind, s.Lo, s.Hi)
		}
		if math.IsInf(s.Hi-s.Lo, 0) {
			return bad("bounds [%v, %v] are too wide: hi - lo overflows", s.Lo, s.Hi)
		}
	}
	if s.Kind == KindHistogram {
		if s.Bins < 1 || s.Bins > MaxBins {
			return bad("histogram bins must be in [1, %d], got %d", MaxBins, s.Bins)
		}
	} else if s.Bins != 0 {
		return bad("%s takes no bins, got %d", s.Kind, s.Bins)
	}
	return nil
}

// Stats are the exact sufficient statistics of one release over one window.
// Partials from different input partitions merge by addition. Which fields
// a release reads depends on its kind; the others are ignored.
type Stats struct {
	Count       int64   // kept events (count, mean)
	Sum         float64 // sum of clamped values (sum)
	CenteredSum float64 // sum of (clamped value − Midpoint(Lo, Hi)) (mean)
	Bins        []int64 // histogram counts, len = Spec.Bins (histogram)
}

// Midpoint returns the centre (lo+hi)/2 of [lo, hi], computed as
// lo + (hi−lo)/2 so that it cannot overflow. The accumulate stage must
// center values with this function: Release adds the same value back.
func Midpoint(lo, hi float64) float64 {
	return lo + (hi-lo)/2
}

// Merge adds o into s. Bins must have the same length in both, except that a
// receiver with no bins (such as a zero Stats used as an accumulator) takes
// a copy of o's. On error (bin length mismatch or int64 overflow) s is left
// unchanged. The float sums depend on the order of merging in their last
// bits; the integer counts do not.
func (s *Stats) Merge(o Stats) error {
	if s == nil {
		return errors.New("merge stats: nil receiver")
	}
	if len(s.Bins) != 0 && len(s.Bins) != len(o.Bins) {
		return fmt.Errorf("merge stats: bin count mismatch: %d vs %d", len(s.Bins), len(o.Bins))
	}
	count, ok := addInt64(s.Count, o.Count)
	if !ok {
		return fmt.Errorf("merge stats: count overflows int64 (%d + %d)", s.Count, o.Count)
	}
	if len(s.Bins) != 0 {
		for j := range s.Bins {
			if _, ok := addInt64(s.Bins[j], o.Bins[j]); !ok {
				return fmt.Errorf("merge stats: bin %d overflows int64 (%d + %d)", j, s.Bins[j], o.Bins[j])
			}
		}
		for j := range s.Bins {
			s.Bins[j] += o.Bins[j]
		}
	} else if len(o.Bins) != 0 {
		s.Bins = append([]int64(nil), o.Bins...)
	}
	s.Count = count
	s.Sum += o.Sum
	s.CenteredSum += o.CenteredSum
	return nil
}

// addInt64 returns a+b and whether it did not overflow.
func addInt64(a, b int64) (int64, bool) {
	r := a + b
	if (b > 0 && r < a) || (b < 0 && r > a) {
		return 0, false
	}
	return r, true
}

// BinIndex maps a value to its bin in [0, bins): equal-width bins on
// [lo, hi], bin j = [e_j, e_{j+1}) with the edges Release publishes, and hi
// in the last bin. Values below lo or above hi go to the first or last bin
// (they are clamped upstream; this only makes the function total). It
// returns -1 when no bin exists: bins < 1, v NaN, or [lo, hi] not an
// interval with lo < hi and a finite width hi − lo.
func BinIndex(v, lo, hi float64, bins int) int {
	if bins < 1 || math.IsNaN(v) || math.IsNaN(lo) || math.IsNaN(hi) || !(lo < hi) || math.IsInf(hi-lo, 0) {
		return -1
	}
	if v <= lo {
		return 0
	}
	if v >= hi {
		return bins - 1
	}
	i := int((v - lo) / (hi - lo) * float64(bins)) // in [0, bins]
	if i >= bins {
		i = bins - 1
	}
	// Rounding can put v one bin off near an edge; step until
	// e_i ≤ v < e_{i+1} so binning agrees exactly with the published edges.
	for i > 0 && v < binEdge(lo, hi, bins, i) {
		i--
	}
	for i < bins-1 && v >= binEdge(lo, hi, bins, i+1) {
		i++
	}
	return i
}

// binEdge returns edge j of bins equal-width bins on [lo, hi]: lo for j = 0,
// hi exactly for j = bins. Each step of lo + (hi−lo)·j/bins is a monotone
// rounding, so the edges never decrease in j.
func binEdge(lo, hi float64, bins, j int) float64 {
	if j <= 0 {
		return lo
	}
	if j >= bins {
		return hi
	}
	return math.Min(lo+(hi-lo)*float64(j)/float64(bins), hi)
}

// Result is the released (noisy, post-processed) data. Fields not used by a
// kind are nil or zero.
type Result struct {
	// Value is the noisy count (an integer), sum (a multiple of the
	// component's Granularity) or mean (post-processed from those).
	Value *float64
	// Interval95 is a noise-only 95% half-width: Value ± Interval95 covers
	// the exact statistic with probability at least 0.95 over the noise
	// (the smallest such integer number of grid steps, plus half a step
	// for the rounding of a sum). For a histogram it applies to each of
	// NoisyCounts. For a mean it is a first-order (delta-method)
	// approximation evaluated at the noisy count and noisy centered mean
	// (see Release), capped at Hi − Lo.
	Interval95 float64
	// NoisyCounts are the histogram's D_j = C_j + noise_j: integers,
	// unclamped and unbiased.
	NoisyCounts []float64
	// Probabilities are max(D_j, 0)/Σ_s max(D_s, 0), uniform if every D_j ≤ 0.
	Probabilities []float64
	// Densities are Probabilities divided by the bin width (Hi−Lo)/Bins: a
	// density on the field's original scale.
	Densities []float64
	// Edges are the Bins+1 bin edges on [Lo, Hi].
	Edges []float64
}

// Quantiles for the mean's approximate interval.
var (
	// laplaceQ975 is t/b with P(|Laplace(b)| > t) = 0.025.
	laplaceQ975 = math.Log(40)
	// normalQ975 is the standard normal 0.975 quantile (≈ 1.96).
	normalQ975 = math.Sqrt2 * math.Erfinv(0.95)
)

// Release computes the release described by c from the window's exact
// statistics s, adding noise from n. It satisfies the guarantee stated by
// Calibrate for c.Spec (ε-DP or (ε, δ)-DP under add/remove of one privacy
// unit, given the upstream contribution and value bounds): each component
// adds independent exact discrete noise of its calibrated scale to a
// statistic whose sensitivity it was calibrated to (counts directly, sums
// after rounding to the component's grid, see AddLaplace), and everything
// else is post-processing. No released number has low-order bits that
// depend on the data other than through the noisy integers. Per kind:
//
// Count: Count + Z, an integer, unclamped so that it stays unbiased.
//
// Sum: g·(⌊Sum/g + 1/2⌋ + Z), a multiple of the grid g = Granularity.
//
// For both, Interval95 is g·m + g/2 for sums (g·m for counts), m the
// smallest integer with P(|Z| > m) ≤ 0.05.
//
// Mean: ñ = Count + Z₁ and S̃c, the centered sum released like a sum, and
// the mean is clamp(m + S̃c/max(ñ, 1), Lo, Hi) with m = (Lo+Hi)/2. To first
// order the error is (e_s − μ·e_n)/n with μ the centered mean. Interval95
// evaluates that at n̂ = max(ñ, 1) and μ̂ = clamp(S̃c/n̂, −h, h): for
// Gaussian noise 1.96·sqrt(σ_s² + μ̂²σ_n²)/n̂; for Laplace noise, by a union
// bound over the two 97.5% quantiles, ln(40)·(t_s + |μ̂|·t_n)/n̂
// (conservative). It is capped at Hi − Lo, beyond which it says nothing.
//
// Histogram (Wasserman & Zhou 2010): D_j = C_j + Z_j are published, then
// clamped at 0 and normalized to probabilities q̂_j (uniform if all are
// ≤ 0), and divided by the bin width to give densities.
//
// Release accepts only a Calibration whose components are those Calibrate
// builds for c.Spec and whose scales are at least as large as that spec
// requires (see checkCalibration), so a hand-built or corrupted Calibration
// cannot release with too little noise; the scales drawn are c's own, the
// ones the accountant charges. It returns an error for a nil n, a
// Calibration that does not fit, Stats that do not fit the kind (negative
// counts, non-finite sums, wrong number of bins), a failed noise draw, or
// a noisy value that overflows; it never releases in those cases.
func Release(c Calibration, s Stats, n Noise) (Result, error) {
	if n == nil {
		return Result{}, errors.New("release: nil noise")
	}
	if err := checkCalibration(c); err != nil {
		return Result{}, fmt.Errorf("release %s: calibration does not fit its spec (build it with Calibrate): %w", c.Spec.Kind, err)
	}
	if err := s.check(c.Spec); err != nil {
		return Result{}, fmt.Errorf("release %s: %w", c.Spec.Kind, err)
	}
	sp := c.Spec
	switch sp.Kind {
	case KindCount, KindSum:
		comp := c.Components[0]
		var v float64
		var err error
		if sp.Kind == KindSum {
			v, err = addToReal(n, comp, s.Sum)
		} else {
			v, err = addToCount(n, comp, s.Count)
		}
		if err != nil {
			return Result{}, fmt.Errorf("release %s: %w", sp.Kind, err)
		}
		return Result{Value: &v, Interval95: halfWidth95(comp)}, nil
	case KindMean:
		return releaseMean(c, s, n)
	default: // KindHistogram; Calibrate has rejected every other kind
		return releaseHistogram(c, s, n)
	}
}

// releaseMean is Release for KindMean; see Release for the formulas.
func releaseMean(c Calibration, s Stats, n Noise) (Result, error) {
	sp := c.Spec
	cc, cs := c.Components[0], c.Components[1] // count, centered sum
	nNoisy, err := addToCount(n, cc, s.Count)
	if err != nil {
		return Result{}, fmt.Errorf("release mean: %w", err)
	}
	sHat, err := addToReal(n, cs, s.CenteredSum)
	if err != nil {
		return Result{}, fmt.Errorf("release mean: %w", err)
	}
	mid, h := Midpoint(sp.Lo, sp.Hi), (sp.Hi-sp.Lo)/2
	nHat := math.Max(nNoisy, 1)
	v := clamp(mid+sHat/nHat, sp.Lo, sp.Hi)
	mu := math.Abs(clamp(sHat/nHat, -h, h))
	var t float64
	if cc.Noise == NoiseDiscreteGaussian {
		t = normalQ975 * math.Hypot(cs.Scale, mu*cc.Scale) / nHat
	} else {
		t = laplaceQ975 * (cs.Scale + mu*cc.Scale) / nHat
	}
	return Result{Value: &v, Interval95: math.Min(t, sp.Hi-sp.Lo)}, nil
}

// releaseHistogram is Release for KindHistogram; see Release.
func releaseHistogram(c Calibration, s Stats, n Noise) (Result, error) {
	sp := c.Spec
	comp := c.Components[0]
	m := sp.Bins
	r := Result{
		Interval95:    halfWidth95(comp),
		NoisyCounts:   make([]float64, m),
		Probabilities: make([]float64, m),
		Densities:     make([]float64, m),
		Edges:         make([]float64, m+1),
	}
	total := 0.0
	for j, cnt := range s.Bins {
		v, err := addToCount(n, comp, cnt)
		if err != nil {
			return Result{}, fmt.Errorf("release histogram: bin %d: %w", j, err)
		}
		r.NoisyCounts[j] = v
		total += math.Max(v, 0)
	}
	width := (sp.Hi - sp.Lo) / float64(m)
	for j, d := range r.NoisyCounts {
		if total > 0 {
			r.Probabilities[j] = math.Max(d, 0) / total
		} else {
			r.Probabilities[j] = 1 / float64(m)
		}
		r.Densities[j] = r.Probabilities[j] / width
	}
	for j := range r.Edges {
		r.Edges[j] = binEdge(sp.Lo, sp.Hi, m, j)
	}
	return r, nil
}

// check reports Stats that cannot have come from the accumulate stage for
// this spec. These are bugs upstream, not properties of the data.
func (s Stats) check(sp Spec) error {
	switch sp.Kind {
	case KindCount, KindMean:
		if s.Count < 0 {
			return fmt.Errorf("negative count %d", s.Count)
		}
	}
	switch sp.Kind {
	case KindSum:
		if math.IsNaN(s.Sum) || math.IsInf(s.Sum, 0) {
			return fmt.Errorf("sum %v is not finite", s.Sum)
		}
	case KindMean:
		if math.IsNaN(s.CenteredSum) || math.IsInf(s.CenteredSum, 0) {
			return fmt.Errorf("centered sum %v is not finite", s.CenteredSum)
		}
	case KindHistogram:
		if len(s.Bins) != sp.Bins {
			return fmt.Errorf("got %d bins, spec has %d", len(s.Bins), sp.Bins)
		}
		for j, b := range s.Bins {
			if b < 0 {
				return fmt.Errorf("negative count %d in bin %d", b, j)
			}
		}
	}
	return nil
}

// addToCount returns count + Z for an integer-data component, Z its
// discrete noise at scale comp.Scale (Granularity 1), computed exactly in
// int64 and then converted to float64 (exact below 2^53; above, a
// rounding of the exact noisy integer, so still post-processing).
func addToCount(n Noise, comp Component, count int64) (float64, error) {
	var z int64
	var err error
	switch comp.Noise {
	case NoiseDiscreteLaplace:
		z, err = n.DiscreteLaplace(comp.Scale)
	case NoiseDiscreteGaussian:
		z, err = n.DiscreteGaussian(comp.Scale)
	default:
		return 0, fmt.Errorf("%s: unknown noise %q", comp.Purpose, comp.Noise)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", comp.Purpose, err)
	}
	v, ok := addInt64(count, z)
	if !ok {
		return 0, fmt.Errorf("%s: count %d + noise %d overflows int64", comp.Purpose, count, z)
	}
	return float64(v), nil
}

// addToReal releases the real statistic x by the granularity method at
// comp's scale; its grid is Granularity(comp.Scale) = comp.Granularity
// (checkCalibration has verified that).
func addToReal(n Noise, comp Component, x float64) (float64, error) {
	var v float64
	var err error
	switch comp.Noise {
	case NoiseDiscreteLaplace:
		v, err = AddLaplace(n, x, comp.Scale)
	case NoiseDiscreteGaussian:
		v, err = AddGaussian(n, x, comp.Scale)
	default:
		return 0, fmt.Errorf("%s: unknown noise %q", comp.Purpose, comp.Noise)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", comp.Purpose, err)
	}
	return v, nil
}

// halfWidth95 is the smallest half-width g·m (+ g/2 for the rounding of a
// real statistic) with P(|noise| > g·m) ≤ 0.05 for comp's noise.
func halfWidth95(comp Component) float64 {
	g := comp.Granularity
	var m float64
	if comp.Noise == NoiseDiscreteGaussian {
		m = dgHalfWidth95(comp.Scale / g)
	} else {
		m = dlapHalfWidth95(comp.Scale / g)
	}
	if comp.onGrid() {
		return g*m + g/2
	}
	return g * m
}

// checkCalibration reports why c must not be released: its Spec must be
// valid, its components must be the ones Calibrate plans for that Spec (same
// statistics, noise kinds and budget shares; the sensitivity of the
// statistic after rounding to the component's grid, which must be the grid
// of its scale), and each must add at least the noise its share requires.
// Scales are checked for sufficiency rather than recomputed, so the check
// is cheap and a calibration with more noise than needed still releases.
// The slack of a relative 1e-9 absorbs last-bit differences between
// platforms (FMA, math library); it changes ε or δ by the same relative
// amount at most.
func checkCalibration(c Calibration) error {
	if v := c.verified; v != nil && v.spec == c.Spec && slices.Equal(v.comps, c.Components) {
		return nil // exactly what Calibrate derived and checked
	}
	if err := c.Spec.validate(); err != nil {
		return err
	}
	plan := c.Spec.plan()
	if len(c.Components) != len(plan) {
		return fmt.Errorf("%d components, want %d", len(c.Components), len(plan))
	}
	for i, g := range c.Components {
		w := plan[i]
		if g.Purpose != w.Purpose || g.Noise != w.Noise {
			return fmt.Errorf("component %d is %s/%s, want %s/%s", i, g.Purpose, g.Noise, w.Purpose, w.Noise)
		}
		if !validScale(g.Scale) || g.Scale > maxDiscreteScale*g.Granularity {
			return fmt.Errorf("component %d (%s) scale %v is not finite, positive and at most 2^50 grid steps", i, g.Purpose, g.Scale)
		}
		grid := 1.0
		if w.onGrid() {
			var err error
			if grid, err = Granularity(g.Scale); err != nil {
				return fmt.Errorf("component %d (%s): %w", i, g.Purpose, err)
			}
		}
		if g.Granularity != grid {
			return fmt.Errorf("component %d (%s) has granularity %v, want %v for scale %v", i, g.Purpose, g.Granularity, grid, g.Scale)
		}
		steps := math.Ceil(w.Sensitivity / grid)
		if steps > maxGridSteps {
			return fmt.Errorf("component %d (%s) sensitivity is %v grid steps, above 2^62", i, g.Purpose, steps)
		}
		if need := grid * steps; !close9(g.Sensitivity, need) || !close9(g.Epsilon, w.Epsilon) || !close9(g.Delta, w.Delta) {
			return fmt.Errorf("component %d (%s) has sensitivity %v and share (%v, %v), want %v and (%v, %v)",
				i, g.Purpose, g.Sensitivity, g.Epsilon, g.Delta, need, w.Epsilon, w.Delta)
		}
		switch g.Noise {
		case NoiseDiscreteLaplace:
			if got := steps / (g.Scale / grid); got > w.Epsilon*(1+1e-9) {
				return fmt.Errorf("component %d (%s) discrete laplace scale %v gives epsilon %v > %v", i, g.Purpose, g.Scale, got, w.Epsilon)
			}
		case NoiseDiscreteGaussian:
			if d := w.gaussianDelta(w.Epsilon, g.Scale/grid, steps); !(d <= w.Delta*(1+1e-9)) {
				return fmt.Errorf("component %d (%s) discrete gaussian sigma %v gives delta %v > %v at epsilon %v",
					i, g.Purpose, g.Scale, d, w.Delta, w.Epsilon)
			}
		}
	}
	return nil
}

// close9 reports whether a and b agree to a relative 1e-9.
func close9(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// clamp limits x to [lo, hi].
func clamp(x, lo, hi float64) float64 {
	return math.Max(lo, math.Min(x, hi))
}
