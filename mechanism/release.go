package mechanism

import (
	"errors"
	"fmt"
	"math"
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

// The noise distributions. Laplace gives pure ε-DP; Gaussian gives
// (ε, δ)-DP and composes better over many releases.
const (
	NoiseLaplace  NoiseKind = "laplace"
	NoiseGaussian NoiseKind = "gaussian"
)

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
	Noise   NoiseKind
	// Sensitivity is the L1 sensitivity for Laplace noise and the L2
	// sensitivity for Gaussian noise, under add/remove one unit.
	Sensitivity float64
	// Scale is b for Laplace noise and σ for Gaussian noise.
	Scale float64
	// Epsilon and Delta are the share of the release's budget this
	// component was calibrated to; the shares of a release add up to its
	// Spec's (basic composition).
	Epsilon, Delta float64
	// ExpectedAbsError is E|noise| of this component (per coordinate for
	// bins): b for Laplace, σ·sqrt(2/π) for Gaussian.
	ExpectedAbsError float64
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
}

// Calibrate validates s and derives the noise of each of its components.
// The guarantee is ε-DP (Laplace) or (ε, δ)-DP (Gaussian) for the release
// as a whole, under add/remove of one privacy unit (all of its events in
// the window), given that each unit keeps at most L = s.MaxContributions
// events and every value is clamped to [Lo, Hi] upstream. Laplace noise
// uses b = Δ1/ε (Dwork, McSherry, Nissim & Smith 2006); Gaussian noise uses
// the analytic Gaussian σ for (ε, δ) and Δ2 (Balle & Wang 2018, see
// AnalyticGaussianSigma). Sensitivities, with proof sketches:
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
// with a per-bin cap c it would be sqrt(c·L), SPEC section 0). The Gaussian
// guarantee holds for the whole vector because, by rotation invariance of
// N(0, σ²I), it depends only on the L2 norm of the change. Wasserman & Zhou
// (2010) use replace-one neighbours, which doubles Δ1 (their scale 2/ε for
// L = 1).
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
	return c, nil
}

// plan returns the noise additions of a valid spec without their scales:
// which statistic each covers, its sensitivity and its budget share (the
// derivations are in Calibrate's comment).
func (s Spec) plan() []Component {
	L := float64(s.MaxContributions)
	part := func(purpose string, sensitivity, eps, delta float64) Component {
		return Component{Purpose: purpose, Noise: s.Noise, Sensitivity: sensitivity, Epsilon: eps, Delta: delta}
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

// calibrateComponent sets the scale and expected error of one planned
// noise addition from its sensitivity and budget share.
func calibrateComponent(c Component) (Component, error) {
	if !validScale(c.Sensitivity) {
		return Component{}, fmt.Errorf("%w: %s sensitivity %v is not finite and positive (bounds too large?)",
			ErrInvalidSpec, c.Purpose, c.Sensitivity)
	}
	switch c.Noise {
	case NoiseLaplace:
		c.Scale = c.Sensitivity / c.Epsilon
		c.ExpectedAbsError = c.Scale
	case NoiseGaussian:
		sigma, err := AnalyticGaussianSigma(c.Epsilon, c.Delta, c.Sensitivity)
		if err != nil {
			return Component{}, fmt.Errorf("%w: %s: %w", ErrInvalidSpec, c.Purpose, err)
		}
		c.Scale = sigma
		c.ExpectedAbsError = sigma * math.Sqrt(2/math.Pi)
	}
	if !validScale(c.Scale) {
		return Component{}, fmt.Errorf("%w: %s noise scale %v is not finite and positive (epsilon too small?)",
			ErrInvalidSpec, c.Purpose, c.Scale)
	}
	return c, nil
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
	// Value is the noisy count, sum or mean.
	Value *float64
	// Interval95 is a noise-only 95% half-width: Value ± Interval95 covers
	// the exact statistic with probability 0.95 over the noise. For a
	// histogram it applies to each of NoisyCounts. For a mean it is a
	// first-order (delta-method) approximation evaluated at the noisy count
	// and noisy centered mean (see Release), capped at Hi − Lo.
	Interval95 float64
	// NoisyCounts are the histogram's D_j = C_j + noise_j, unclamped and
	// unbiased.
	NoisyCounts []float64
	// Probabilities are max(D_j, 0)/Σ_s max(D_s, 0), uniform if every D_j ≤ 0.
	Probabilities []float64
	// Densities are Probabilities divided by the bin width (Hi−Lo)/Bins: a
	// density on the field's original scale.
	Densities []float64
	// Edges are the Bins+1 bin edges on [Lo, Hi].
	Edges []float64
}

// Quantiles for the noise-only intervals.
var (
	// laplaceQ95 is t/b with P(|Laplace(b)| > t) = e^{−t/b} = 0.05.
	laplaceQ95 = math.Log(20)
	// laplaceQ975 is t/b with P(|Laplace(b)| > t) = 0.025.
	laplaceQ975 = math.Log(40)
	// normalQ975 is the standard normal 0.975 quantile (≈ 1.96).
	normalQ975 = math.Sqrt2 * math.Erfinv(0.95)
)

// Release computes the release described by c from the window's exact
// statistics s, adding noise from n. It satisfies the guarantee stated by
// Calibrate for c.Spec (ε-DP or (ε, δ)-DP under add/remove of one privacy
// unit, given the upstream contribution and value bounds): each component
// adds independent noise of its calibrated scale to a statistic whose
// sensitivity it was calibrated to, and everything else is
// post-processing. Post-processing, per kind:
//
// Count and sum: the noisy value itself, unclamped so that it stays
// unbiased; Interval95 is ln(20)·b (Laplace) or 1.96·σ (Gaussian).
//
// Mean: ñ = Count + noise, S̃c = CenteredSum + noise, and the mean is
// clamp(m + S̃c/max(ñ, 1), Lo, Hi) with m = (Lo+Hi)/2. To first order the
// error is (e_s − μ·e_n)/n with μ the centered mean. Interval95 evaluates
// that at n̂ = max(ñ, 1) and μ̂ = clamp(S̃c/n̂, −h, h): for Gaussian noise
// 1.96·sqrt(σ_s² + μ̂²σ_n²)/n̂; for Laplace noise, by a union bound over the
// two 97.5% quantiles, ln(40)·(b_s + |μ̂|·b_n)/n̂ (conservative). It is
// capped at Hi − Lo, beyond which it says nothing.
//
// Histogram (Wasserman & Zhou 2010): D_j = C_j + noise_j are published,
// then clamped at 0 and normalized to probabilities q̂_j (uniform if all
// are ≤ 0), and divided by the bin width to give densities.
//
// Release accepts only a Calibration whose components are those Calibrate
// builds for c.Spec and whose scales are at least as large as that spec
// requires (see checkCalibration), so a hand-built or corrupted Calibration
// cannot release with too little noise; the scales drawn are c's own, the
// ones the accountant charges. It returns an error for a nil n, a
// Calibration that does not fit, Stats
// that do not fit the kind (negative counts, non-finite sums, wrong number
// of bins), or a non-finite noise draw; it never releases in those cases.
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
		exact := float64(s.Count)
		if sp.Kind == KindSum {
			exact = s.Sum
		}
		e, err := draw(n, comp)
		if err != nil {
			return Result{}, fmt.Errorf("release %s: %w", sp.Kind, err)
		}
		v := exact + e
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
	en, err := draw(n, cc)
	if err != nil {
		return Result{}, fmt.Errorf("release mean: %w", err)
	}
	es, err := draw(n, cs)
	if err != nil {
		return Result{}, fmt.Errorf("release mean: %w", err)
	}
	mid, h := Midpoint(sp.Lo, sp.Hi), (sp.Hi-sp.Lo)/2
	nHat := math.Max(float64(s.Count)+en, 1)
	sHat := s.CenteredSum + es
	v := clamp(mid+sHat/nHat, sp.Lo, sp.Hi)
	mu := math.Abs(clamp(sHat/nHat, -h, h))
	var t float64
	if cc.Noise == NoiseGaussian {
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
		e, err := draw(n, comp)
		if err != nil {
			return Result{}, fmt.Errorf("release histogram: bin %d: %w", j, err)
		}
		r.NoisyCounts[j] = float64(cnt) + e
		total += math.Max(r.NoisyCounts[j], 0)
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

// draw adds one noise draw for comp, refusing a non-finite one.
func draw(n Noise, comp Component) (float64, error) {
	var e float64
	switch comp.Noise {
	case NoiseLaplace:
		e = n.Laplace(comp.Scale)
	case NoiseGaussian:
		e = n.Gaussian(comp.Scale)
	default:
		return 0, fmt.Errorf("%s: unknown noise %q", comp.Purpose, comp.Noise)
	}
	if math.IsNaN(e) || math.IsInf(e, 0) {
		return 0, fmt.Errorf("%s: %s noise draw at scale %v is not finite", comp.Purpose, comp.Noise, comp.Scale)
	}
	return e, nil
}

// halfWidth95 is the t with P(|noise| > t) = 0.05 for comp's noise.
func halfWidth95(comp Component) float64 {
	if comp.Noise == NoiseGaussian {
		return normalQ975 * comp.Scale
	}
	return laplaceQ95 * comp.Scale
}

// checkCalibration reports why c must not be released: its Spec must be
// valid, its components must be the ones Calibrate plans for that Spec (same
// statistics, sensitivities and budget shares), and each must add at least
// the noise its share requires. Scales are checked for sufficiency rather
// than recomputed, so the check is cheap and a calibration with more noise
// than needed still releases. The slack of a relative 1e-9 absorbs
// last-bit differences between platforms (FMA, math library); it changes ε
// or δ by the same relative amount at most.
func checkCalibration(c Calibration) error {
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
		if !close9(g.Sensitivity, w.Sensitivity) || !close9(g.Epsilon, w.Epsilon) || !close9(g.Delta, w.Delta) {
			return fmt.Errorf("component %d (%s) has sensitivity %v and share (%v, %v), want %v and (%v, %v)",
				i, g.Purpose, g.Sensitivity, g.Epsilon, g.Delta, w.Sensitivity, w.Epsilon, w.Delta)
		}
		if !validScale(g.Scale) {
			return fmt.Errorf("component %d (%s) scale %v is not finite and positive", i, g.Purpose, g.Scale)
		}
		switch g.Noise {
		case NoiseLaplace:
			if need := w.Sensitivity / w.Epsilon; g.Scale < need*(1-1e-9) {
				return fmt.Errorf("component %d (%s) laplace scale %v is below Δ1/ε = %v", i, g.Purpose, g.Scale, need)
			}
		case NoiseGaussian:
			if d := GaussianDelta(w.Epsilon, g.Scale, w.Sensitivity); !(d <= w.Delta*(1+1e-9)) {
				return fmt.Errorf("component %d (%s) gaussian sigma %v gives delta %v > %v at epsilon %v",
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
