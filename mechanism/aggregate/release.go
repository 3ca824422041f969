package aggregate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpstream/dpstream/mechanism/noise"
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

// Spec is a release's configuration, the only input to calibration (never
// the data: SPEC section 1). Fields a kind does not use must be zero, so a
// confused configuration is an error rather than silently ignored.
type Spec struct {
	Kind  Kind
	Noise noise.Kind
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
	// Axes are the second and third fields of a histogram over several
	// fields (Lo, Hi and Bins are the first); the zero Axis is
	// unused (any other Axis, even with Bins 0, is validated), and a used one must not follow an unused one. The cells
	// are the product of the fields' bins, at most MaxBins, in row-major
	// order with the last field varying fastest (see CellIndex).
	Axes [MaxHistogramDims - 1]Axis
	// BinCap is c, the most events one privacy unit counts in one
	// histogram cell per window (enforced upstream), in 1..L; 0 means no
	// cap (c = L). It lowers the L2 sensitivity of the bins to
	// sqrt(⌊L/c⌋·c² + (L mod c)²) ≤ sqrt(L·c) (see Calibrate); the L1
	// sensitivity stays L.
	BinCap int
}

// onOutputGrid reports whether c's statistic is a fixed-point sum,
// released on a grid G ≥ Quantum, rather than a count (G = Quantum = 1).
func onOutputGrid(c noise.Component) bool {
	return c.Purpose == PurposeSum || c.Purpose == PurposeCenteredSum
}

// spreadShift reports whether one unit can move several coordinates of the
// component's statistic at once: histogram bins with L = steps ≥ 2. The
// exact one-dimensional (ε, δ) curve of the discrete Gaussian is then not
// known to cover every neighbouring change (the multivariate discrete
// Gaussian is not rotation invariant), so such components are calibrated
// through zCDP, which does compose exactly over coordinates.
func spreadShift(c noise.Component, steps float64) bool {
	return c.Purpose == PurposeBins && steps >= 2
}

// gaussianDelta returns the δ at eps of c's discrete Gaussian noise with σ
// (in grid steps) against a sensitivity of steps grid steps: the exact
// curve (DiscreteGaussianDelta) for a single integer shift, or the zCDP
// conversion (noise.ZCDPDelta with ρ = Δ2²/(2σ²), Δ2² = c.l2sq) for a spread
// one. Release's
// check and Calibrate use the same function.
func gaussianDelta(c noise.Component, eps, sigma, steps float64) float64 {
	if spreadShift(c, steps) {
		return noise.ZCDPDelta(eps, float64(c.L2Sq)/(2*sigma*sigma))
	}
	return noise.CachedDiscreteGaussianDelta(eps, sigma, int64(steps))
}

// Calibration is a Spec together with the noise that makes it private.
// Build it with Calibrate: Release refuses one whose noise is smaller than
// its Spec requires.
type Calibration struct {
	Spec       Spec
	Components []noise.Component
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
	comps []noise.Component
}

// Calibrate validates s and derives the noise of each of its components.
// The guarantee is ε-DP (noise.Laplace) or (ε, δ)-DP (noise.Gaussian) for the
// release as a whole, under add/remove of one privacy unit (all of its
// events in the window), given that each unit keeps at most
// L = s.MaxContributions events and every value is clamped to [Lo, Hi]
// upstream. Calibrate reads the Spec only, never data, so the charge is
// data-independent.
//
// Every statistic is an exact integer K, and the noise is exact discrete
// noise (SPEC section 2; Canonne, Kamath & Steinke 2020). Counts and bins
// are integers with unit 1. Sums and a mean's centered sum are fixed-point
// integers: each clamped value is quantized to k = Units(v) by the
// release's Quantizer (unit q = Quantum, a power of two fixed by the
// bounds) and the accumulate and release stages add the k in int64, so the
// statistic is exact and independent of summation order (floating-point
// sums are neither; Casacuberta et al. 2022). Release rounds K to the
// output grid G = max(g, q), g = Granularity(Scale), and adds G × integer
// noise. The grid depends on the final scale, which depends on the grid
// through the sensitivity, so it is found by a short fixed-point
// iteration.
//
// Exact sensitivity of the released integer, with proof sketch. Let
// K* = MaxUnits() (1 for counts and bins). (1) Each kept event adds one
// k ∈ [k(Lo), k(Hi)] to K because Units is non-decreasing (see Quantizer),
// so |k| ≤ K*, with equality at a bound. Adding or removing a unit changes
// only its own at most L kept events (the per-unit cap looks at that
// unit's events only), so |K(D) − K(D')| ≤ D := L·K* units, attained by L
// events at the bound of larger |k|. (2) With r = G/q = 2^j, Release
// releases K_G = ⌊K/r + 1/2⌋ (exact integer shift, ties up). It is
// non-decreasing in K and ⌊x + d⌋ − ⌊x⌋ ≤ ⌈d⌉, so neighbours' K_G differ
// by at most S = ⌈D/r⌉ grid steps. S is attained (for r = 1 trivially;
// for r ≥ 2 take K with (K + r/2) mod r = r − 1 and K' = K + D), so it is
// the exact sensitivity of K_G over all integer K, not only a bound. On
// the value scale it is G·S = G·⌈L·K*·q/G⌉, which is what
// Component.Sensitivity records and the accountant charges; it is at most
// L·K*·q + G − q, and K*·q is within q/2 of max(|Lo|, |Hi|) for a sum (of
// max |fl(bound − Midpoint)| ≈ (Hi−Lo)/2 for a mean). For counts r = 1 and
// S = L.
//
// Discrete Laplace: t = S/ε grid steps, so the likelihood ratio of any
// integer shift n ≤ S is at most e^{n/t} ≤ e^ε (Dwork, McSherry, Nissim &
// Smith 2006 for the continuous analogue). G ≥ g keeps t ≤ 2^40.
//
// Discrete Gaussian: σ (in grid steps) from DiscreteGaussianSigma, the exact
// (ε, δ) curve of CKS 2020 Theorem 7 for integer sensitivity S, then
// rounded up: to an integer for sums (so the sampler's exact arithmetic
// stays in 128 bits; the increase is less than one grid step, below 2^-39
// relative when G = g) and to 24 significant bits for counts and bins
// (below 2^-23). More noise is always still private, and the δ of the
// rounded σ is re-checked. The continuous analytic σ (Balle & Wang 2018)
// does not carry over unchecked: the discrete Gaussian's δ at the same σ
// differs slightly (above or below). Histograms with L ≥ 2 are the
// exception: a unit may change several bins, the exact curve is
// one-dimensional, and the multivariate discrete Gaussian is not rotation
// invariant, so their σ is calibrated through zCDP instead
// (ρ = Δ2²/(2σ²) composes exactly over independent bins; CKS 2020 Thm. 4),
// converted to (ε, δ) by CKS 2020 Prop. 12. That is rigorous but costs
// more noise (about 8% more σ at ε = 1, δ = 1e-5).
//
// Per kind:
//
// Count: S = L. Adding or removing a unit changes the number of kept
// events by its own kept events, at most L.
//
// Sum: K* = MaxUnits of the sum's Quantizer (center 0), about
// max(|Lo|, |Hi|)/q ≤ 2^30. The sum is released uncentered, although SPEC
// section 0 suggests centering, because for a standalone sum centering is
// never better. With m = (Lo+Hi)/2 and h = (Hi−Lo)/2 (so M = |m| + h), the
// centered estimator S̃c + m·ñ needs a noisy centered sum (Δ = L·h, budget
// ε₁) and a noisy count (Δ = L, budget ε₂), ε₁ + ε₂ = ε. With Laplace
// noise its variance 2L²(h²/ε₁² + m²/ε₂²) is smallest at ε₁ ∝ h^{2/3},
// ε₂ ∝ |m|^{2/3}, where it equals 2L²(h^{2/3} + |m|^{2/3})³/ε². The
// uncentered variance is 2L²(h + |m|)²/ε², and
// (h^{2/3} + |m|^{2/3})^{3/2} ≥ h + |m| because the ℓ_p quasi-norm for
// p = 2/3 < 1 dominates the ℓ₁ norm, with equality only when m = 0 or h = 0.
// With Gaussian noise under zCDP accounting the optimal split gives exactly
// the uncentered variance L²(h + |m|)²/(2ρ), and splitting (ε, δ) is worse.
//
// Mean: a noisy count (S = L) and a noisy centered sum, each with half the
// budget (ε/2, and δ/2 for Gaussian), so the pair is (ε, δ)-DP by basic
// composition. The centered sum adds k = Units(v) of the mean's Quantizer,
// whose center is Midpoint(Lo, Hi), so K* ≈ (Hi−Lo)/(2q). The mean
// clamp(m + S̃c/max(ñ, 1), Lo, Hi) is post-processing.
//
// Histogram (Wasserman & Zhou 2010, section 5; SPEC section 4.2):
// equal-width bins on [Lo, Hi] and, for a histogram over several fields,
// on each of Axes; the cells are the product of the fields' bins, and one
// noise draw is added per cell. The unit's kept events change the cell
// counts by k_j ≥ 0 with Σk_j ≤ L (each event is in exactly one cell,
// whatever the number of fields), so Δ1 = L. With a per-cell cap c
// (BinCap, enforced upstream: at most c of a unit's kept events count in
// one cell) also k_j ≤ c, and Δ2² = max Σk_j² = ⌊L/c⌋·c² + (L mod c)²
// ≤ L·c (a convex function is largest at a vertex of that polytope);
// without a cap c = L and Δ2 = L (all events in one cell). The discrete
// Laplace guarantee holds for the vector because the likelihood ratio is
// a product over cells, at most e^{Σk_j/t}; the discrete Gaussian one
// through zCDP for L ≥ 2 (see above; ρ = Δ2²/(2σ²)), and exactly for
// L = 1, where a unit changes a single cell by 1 and the other cells'
// identical noise cancels. Component.Sensitivity is L for Laplace and Δ2
// (rounded up) for Gaussian bins, so the accountant's discrete_gaussian
// curve ρ = Sensitivity²/(2σ²) charges at least the true ρ. Wasserman &
// Zhou (2010) use replace-one neighbours, which doubles Δ1 (their scale
// 2/ε for L = 1).
//
// Errors wrap ErrInvalidSpec and name the offending field.
func Calibrate(s Spec) (Calibration, error) {
	if err := s.validate(); err != nil {
		return Calibration{}, err
	}
	plan, err := s.plan()
	if err != nil {
		return Calibration{}, err
	}
	c := Calibration{Spec: s, Components: make([]noise.Component, 0, len(plan))}
	for _, p := range plan {
		p.Component.L2Sq = p.l2sq
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

// planned is one noise addition of a valid spec before its scale is set:
// the Component with Purpose, Noise, Quantum and budget share filled in,
// and what its sensitivity is made of.
type planned struct {
	noise.Component
	l        int   // L, the most events a unit keeps per window
	maxUnits int64 // K*, the most one kept event moves the statistic, in units
	l2sq     int64 // histogram bins: squared L2 sensitivity (binsL2Squared)
}

// plan returns the noise additions of a valid spec without their scales:
// which statistic each covers, its unit and per-event sensitivity, and its
// budget share (the derivations are in Calibrate's comment).
func (s Spec) plan() ([]planned, error) {
	part := func(purpose string, quantum float64, maxUnits int64, eps, delta float64) planned {
		return planned{
			Component: noise.Component{Purpose: purpose, Noise: s.Noise.Discrete(), Quantum: quantum, Epsilon: eps, Delta: delta},
			l:         s.MaxContributions, maxUnits: maxUnits,
		}
	}
	switch s.Kind {
	case KindCount:
		return []planned{part(PurposeCount, 1, 1, s.Epsilon, s.Delta)}, nil
	case KindSum, KindMean:
		z, err := s.Quantizer()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", noise.ErrInvalidSpec, err)
		}
		if s.Kind == KindSum {
			return []planned{part(PurposeSum, z.Quantum(), z.MaxUnits(), s.Epsilon, s.Delta)}, nil
		}
		return []planned{
			part(PurposeCount, 1, 1, s.Epsilon/2, s.Delta/2),
			part(PurposeCenteredSum, z.Quantum(), z.MaxUnits(), s.Epsilon/2, s.Delta/2),
		}, nil
	default: // KindHistogram; validate has rejected every other kind
		p := part(PurposeBins, 1, 1, s.Epsilon, s.Delta)
		p.l2sq = binsL2Squared(s.MaxContributions, s.BinCap)
		return []planned{p}, nil
	}
}

// binsL2Squared returns the squared L2 sensitivity of a histogram's cell
// counts when a unit keeps at most l events per window and at most c in
// one cell (c = 0: no cap). The unit changes the counts by a vector k ≥ 0
// with Σk_j ≤ l and k_j ≤ c; Σk_j² is convex, so its maximum over that
// polytope is at a vertex: ⌊l/c⌋ cells at c and one at l mod c, giving
// ⌊l/c⌋·c² + (l mod c)² ≤ l·c (SPEC section 0).
func binsL2Squared(l, c int) int64 {
	if c <= 0 || c > l {
		c = l
	}
	q, r := int64(l/c), int64(l%c)
	return q*int64(c)*int64(c) + r*r
}

// sqrtUp returns the smallest float64 s with s·s ≥ v (computed exactly
// enough for v < 2^53): the L2 sensitivity recorded for a charge must not
// round below the true one.
func sqrtUp(v int64) float64 {
	// s·s is compared exactly (FMA rounds once, after the subtraction):
	// a rounded product can equal v while the true square is below it.
	s := math.Sqrt(float64(v))
	for math.FMA(s, s, -float64(v)) < 0 {
		s = math.Nextafter(s, math.Inf(1))
	}
	return s
}

// componentSensitivity is the Sensitivity a component with steps grid
// steps of L1 sensitivity records: G·steps, except for the bins of a
// histogram with discrete Gaussian noise, whose charge is by the L2
// sensitivity sqrt(l2sq).
func componentSensitivity(c noise.Component, g, steps float64) float64 {
	if c.Noise == noise.DiscreteGaussian && c.Purpose == PurposeBins {
		return sqrtUp(c.L2Sq)
	}
	return g * steps
}

// calibrateComponent sets the scale, grid, exact sensitivity and expected
// error of one planned noise addition from its per-event sensitivity and
// budget share.
func calibrateComponent(p planned) (noise.Component, error) {
	c := p.Component
	q := c.Quantum
	// delta = L·K*·q, the sensitivity before regridding on the value scale
	// (rounded here; the exact integer is used below), only picks the grid
	// to start from: the scale the noise would have on the finest grid.
	delta := float64(p.l) * float64(p.maxUnits) * q
	if !noise.ValidScale(delta) {
		return noise.Component{}, fmt.Errorf("%w: %s sensitivity %v is not finite and positive (bounds too large?)",
			noise.ErrInvalidSpec, c.Purpose, delta)
	}
	first := delta / c.Epsilon
	if c.Noise == noise.DiscreteGaussian {
		sc, err := noise.AnalyticGaussianSigma(c.Epsilon, c.Delta, delta)
		if err != nil {
			return noise.Component{}, fmt.Errorf("%w: %s: %w", noise.ErrInvalidSpec, c.Purpose, err)
		}
		first = sc
	}
	if !noise.ValidScale(first) {
		return noise.Component{}, fmt.Errorf("%w: %s noise scale %v is not finite and positive (epsilon too small?)",
			noise.ErrInvalidSpec, c.Purpose, first)
	}
	g := q
	if onOutputGrid(c) {
		g = noise.OutputGrid(first, q)
	}
	// The grid of the final scale can be twice the starting one when the
	// scale sits just below a power of two; two rounds settle it, four
	// leave room.
	for range 4 {
		steps, ok := noise.UnitSteps(p.l, p.maxUnits, noise.GridShift(g, q))
		if !ok {
			return noise.Component{}, fmt.Errorf("%w: %s sensitivity %d×%d units of %v is more than 2^53 grid steps of %v (epsilon or max contributions too large?)",
				noise.ErrInvalidSpec, c.Purpose, p.l, p.maxUnits, q, g)
		}
		scale, err := discreteScale(c, float64(steps), g)
		if err != nil {
			return noise.Component{}, err
		}
		if onOutputGrid(c) {
			if g2 := noise.OutputGrid(scale, q); g2 != g {
				g = g2
				continue
			}
		}
		c.Sensitivity, c.Scale, c.Granularity = componentSensitivity(c, g, float64(steps)), scale, g
		if c.Noise == noise.DiscreteGaussian {
			c.ExpectedAbsError = g * noise.DiscreteGaussianAbsMean(scale/g)
		} else {
			c.ExpectedAbsError = g * noise.DiscreteLaplaceAbsMean(scale/g)
		}
		return c, nil
	}
	return noise.Component{}, fmt.Errorf("%w: %s: the noise grid did not settle (scale near a power of two?)", noise.ErrInvalidSpec, c.Purpose)
}

// discreteScale returns the value-scale noise scale for sensitivity steps
// (an integer number of grid steps g) and c's budget share: g·t with
// t = steps/ε for the discrete Laplace, g·σ for the discrete Gaussian with
// σ from DiscreteGaussianSigma, rounded up (see Calibrate) and re-checked.
func discreteScale(c noise.Component, steps, g float64) (float64, error) {
	tooLarge := func(v float64) error {
		return fmt.Errorf("%w: %s noise scale %v grid steps is not finite, positive and at most 2^50 (epsilon too small?)",
			noise.ErrInvalidSpec, c.Purpose, v)
	}
	if c.Noise == noise.DiscreteLaplace {
		t := steps / c.Epsilon
		if !noise.ValidScale(t) || t > noise.MaxDiscreteScale {
			return 0, tooLarge(t)
		}
		return g * t, nil
	}
	var sigma float64
	var err error
	if spreadShift(c, steps) {
		sigma, err = noise.ZCDPGaussianSigma(c.Epsilon, c.Delta, sqrtUp(c.L2Sq))
	} else {
		sigma, err = noise.DiscreteGaussianSigma(c.Epsilon, c.Delta, int64(steps))
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", noise.ErrInvalidSpec, c.Purpose, err)
	}
	round, next := noise.RoundUpSignificand, noise.NextSignificand
	if onOutputGrid(c) {
		round, next = math.Ceil, func(x float64) float64 { return x + 1 }
	}
	sigma = round(sigma)
	for i := 0; gaussianDelta(c, c.Epsilon, sigma, steps) > c.Delta; i++ {
		if i == 16 {
			return 0, fmt.Errorf("%w: %s: rounded sigma %v misses delta %v", noise.ErrInvalidSpec, c.Purpose, sigma, c.Delta)
		}
		sigma = next(sigma)
	}
	if !noise.ValidScale(sigma) || sigma > noise.MaxDiscreteScale {
		return 0, tooLarge(sigma)
	}
	return g * sigma, nil
}

// validate reports the first problem with s, wrapped in ErrInvalidSpec.
func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{noise.ErrInvalidSpec}, args...)...)
	}
	switch s.Kind {
	case KindCount, KindSum, KindMean, KindHistogram:
	default:
		return bad("unknown kind %q (want count, sum, mean or histogram)", s.Kind)
	}
	if msg := noise.CheckPrivacyParams(s.Noise, s.Epsilon, s.Delta); msg != "" {
		return bad("%s", msg)
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
		used := true
		for i, a := range s.Axes {
			if a == (Axis{}) {
				used = false
				continue
			}
			if !used {
				return bad("histogram field %d is set but field %d is not", i+2, i+1)
			}
			if math.IsNaN(a.Lo) || math.IsNaN(a.Hi) || math.IsInf(a.Lo, 0) || math.IsInf(a.Hi, 0) || !(a.Lo < a.Hi) || math.IsInf(a.Hi-a.Lo, 0) {
				return bad("histogram field %d needs finite bounds with lo < hi and a finite width, got [%v, %v]", i+2, a.Lo, a.Hi)
			}
		}
		if _, err := CellCount(s.binsPerAxis()); err != nil {
			return bad("histogram: %v", err)
		}
		if s.BinCap < 0 || s.BinCap > s.MaxContributions {
			return bad("per-cell cap must be in [0, %d] (0: none; at most max contributions), got %d", s.MaxContributions, s.BinCap)
		}
	} else {
		if s.Bins != 0 {
			return bad("%s takes no bins, got %d", s.Kind, s.Bins)
		}
		if s.Axes != ([MaxHistogramDims - 1]Axis{}) {
			return bad("%s takes no histogram fields, got %v", s.Kind, s.Axes)
		}
		if s.BinCap != 0 {
			return bad("%s takes no per-cell cap, got %d", s.Kind, s.BinCap)
		}
	}
	return nil
}

// HistogramAxes returns the fields of a histogram spec in order: the first
// from Lo, Hi and Bins, then the used entries of Axes. It is nil for other
// kinds.
func (s Spec) HistogramAxes() []Axis {
	if s.Kind != KindHistogram {
		return nil
	}
	out := []Axis{{Lo: s.Lo, Hi: s.Hi, Bins: s.Bins}}
	for _, a := range s.Axes {
		if a == (Axis{}) {
			break
		}
		out = append(out, a)
	}
	return out
}

// Cells returns the number of cells of a histogram spec (the product of
// its fields' bins), 0 for other kinds or an invalid shape.
func (s Spec) Cells() int {
	n, err := CellCount(s.binsPerAxis())
	if err != nil || s.Kind != KindHistogram {
		return 0
	}
	return n
}

func (s Spec) binsPerAxis() []int {
	axes := s.HistogramAxes()
	bins := make([]int, len(axes))
	for i, a := range axes {
		bins[i] = a.Bins
	}
	return bins
}

// Stats are the exact sufficient statistics of one release over one window,
// all integers. Partials from different input partitions merge by exact
// integer addition, so the result does not depend on the order of merging.
// Which fields a release reads depends on its kind; the others are ignored.
//
// The sums are in units of the release's Quantizer (Spec.Quantizer): the
// value of SumUnits is SumUnits·Quantum(), and the quantum is implied by
// the Spec, never carried with the data.
type Stats struct {
	Count int64 // kept events (count, mean)
	// SumUnits is Σ Units(v) over the kept events, with the Quantizer of
	// the sum release (center 0) (sum).
	SumUnits int64
	// CenteredSumUnits is Σ Units(v) over the kept events, with the
	// Quantizer of the mean release (center Midpoint(Lo, Hi)) (mean).
	CenteredSumUnits int64
	Bins             []int64 // histogram counts, len = Spec.Bins (histogram)
}

// Midpoint returns the centre (lo+hi)/2 of [lo, hi], computed as
// lo + (hi−lo)/2 so that it cannot overflow. It is the center of a mean's
// Quantizer, which Release adds back.
func Midpoint(lo, hi float64) float64 {
	return lo + (hi-lo)/2
}

// Merge adds o into s exactly. Bins must have the same length in both,
// except that a receiver with no bins (such as a zero Stats used as an
// accumulator) takes a copy of o's. On error (bin length mismatch or int64
// overflow of any field) s is left unchanged. Every field is an integer, so
// the result is the same in any order of merging.
//
// The sums cannot overflow while the merged partials hold at most
// MaxSumEvents kept events together (each event adds at most 2^30 units in
// magnitude). Beyond that Merge returns an error and the release stage
// stops without releasing the window: a saturated or wrapped sum would
// have a different sensitivity from the calibrated one.
func (s *Stats) Merge(o Stats) error {
	if s == nil {
		return errors.New("merge stats: nil receiver")
	}
	if len(s.Bins) != 0 && len(s.Bins) != len(o.Bins) {
		return fmt.Errorf("merge stats: bin count mismatch: %d vs %d", len(s.Bins), len(o.Bins))
	}
	count, ok := noise.AddInt64(s.Count, o.Count)
	if !ok {
		return fmt.Errorf("merge stats: count overflows int64 (%d + %d)", s.Count, o.Count)
	}
	sum, ok := noise.AddInt64(s.SumUnits, o.SumUnits)
	if !ok {
		return fmt.Errorf("merge stats: sum overflows int64 (%d + %d units; more than %d events?)", s.SumUnits, o.SumUnits, int64(MaxSumEvents))
	}
	centered, ok := noise.AddInt64(s.CenteredSumUnits, o.CenteredSumUnits)
	if !ok {
		return fmt.Errorf("merge stats: centered sum overflows int64 (%d + %d units; more than %d events?)", s.CenteredSumUnits, o.CenteredSumUnits, int64(MaxSumEvents))
	}
	if len(s.Bins) != 0 {
		for j := range s.Bins {
			if _, ok := noise.AddInt64(s.Bins[j], o.Bins[j]); !ok {
				return fmt.Errorf("merge stats: bin %d overflows int64 (%d + %d)", j, s.Bins[j], o.Bins[j])
			}
		}
		for j := range s.Bins {
			s.Bins[j] += o.Bins[j]
		}
	} else if len(o.Bins) != 0 {
		s.Bins = append([]int64(nil), o.Bins...)
	}
	s.Count, s.SumUnits, s.CenteredSumUnits = count, sum, centered
	return nil
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
	for i > 0 && v < BinEdge(lo, hi, bins, i) {
		i--
	}
	for i < bins-1 && v >= BinEdge(lo, hi, bins, i+1) {
		i++
	}
	return i
}

// BinEdge returns edge j of bins equal-width bins on [lo, hi]: lo for j = 0,
// hi exactly for j = bins. Each step of lo + (hi−lo)·j/bins is a monotone
// rounding, so the edges never decrease in j.
func BinEdge(lo, hi float64, bins, j int) float64 {
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
	// the exact statistic (for a sum, SumUnits·Quantum, the sum of the
	// quantized values) with probability at least 0.95 over the noise: the
	// smallest such integer number of grid steps, plus half a step for the
	// rounding of a sum to its grid when Granularity > Quantum. Quantizing
	// moves each value by at most Quantum/2 in addition, which the interval
	// leaves out because it would depend on the number of events. For a
	// histogram it applies to each of
	// NoisyCounts. For a mean it is a first-order (delta-method)
	// approximation evaluated at the noisy count and noisy centered mean
	// (see Release), capped at Hi − Lo.
	Interval95 float64
	// NoisyCounts are the histogram's D_j = C_j + noise_j: integers,
	// unclamped and unbiased.
	NoisyCounts []float64
	// Probabilities are max(D_j, 0)/Σ_s max(D_s, 0), uniform if every D_j ≤ 0.
	Probabilities []float64
	// Densities are Probabilities divided by the cell volume (the product
	// of the fields' bin widths (Hi−Lo)/Bins): a density on the fields'
	// original scale.
	Densities []float64
	// Edges are the bin edges of every field, concatenated: Bins+1 edges on
	// [Lo, Hi] for one field, then the next field's, and so on.
	Edges []float64
	// Shape is the number of bins of each field of a histogram; the cells
	// of NoisyCounts, Probabilities and Densities are row-major in it,
	// the last field varying fastest (CellIndex).
	Shape []int
	// AxisEdges are Edges split by field.
	AxisEdges [][]float64
}

// Release computes the release described by c from the window's exact
// statistics s, adding noise from n. It satisfies the guarantee stated by
// Calibrate for c.Spec (ε-DP or (ε, δ)-DP under add/remove of one privacy
// unit, given the upstream contribution and value bounds): each component
// adds independent exact discrete noise of its calibrated scale to an
// exact integer statistic whose exact sensitivity it was calibrated to
// (counts directly, sums after the integer regridding below), and
// everything else is post-processing. No released number has low-order
// bits that depend on the data other than through the noisy integers, and
// no floating-point arithmetic touches the data before the noise is added.
// Per kind:
//
// Count: Count + Z, an integer, unclamped so that it stays unbiased.
//
// Sum: with K = SumUnits in units of q = Quantum, grid G = Granularity and
// r = G/q = 2^j, K_G = ⌊K/r + 1/2⌋ is computed by an exact integer shift
// (ties up), and the output is G·(K_G + Z), K_G + Z computed exactly and
// then rounded to float64: a multiple of G.
//
// For both, Interval95 is G·m (+ G/2 for a sum when G > q), m the smallest
// integer with P(|Z| > m) ≤ 0.05.
//
// Mean: ñ = Count + Z₁ and S̃c, the centered sum CenteredSumUnits released
// like a sum, and
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
// counts, wrong number of bins), a failed noise draw, or a noisy value that
// overflows; it never releases in those cases.
func Release(c Calibration, s Stats, n noise.Sampler) (Result, error) {
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
			v, err = noise.AddToUnits(n, comp, s.SumUnits)
		} else {
			v, err = noise.AddToCount(n, comp, s.Count)
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
func releaseMean(c Calibration, s Stats, n noise.Sampler) (Result, error) {
	sp := c.Spec
	cc, cs := c.Components[0], c.Components[1] // count, centered sum
	nNoisy, err := noise.AddToCount(n, cc, s.Count)
	if err != nil {
		return Result{}, fmt.Errorf("release mean: %w", err)
	}
	sHat, err := noise.AddToUnits(n, cs, s.CenteredSumUnits)
	if err != nil {
		return Result{}, fmt.Errorf("release mean: %w", err)
	}
	mid, h := Midpoint(sp.Lo, sp.Hi), (sp.Hi-sp.Lo)/2
	nHat := math.Max(nNoisy, 1)
	v := clamp(mid+sHat/nHat, sp.Lo, sp.Hi)
	mu := math.Abs(clamp(sHat/nHat, -h, h))
	var t float64
	if cc.Noise == noise.DiscreteGaussian {
		t = noise.NormalQ975 * math.Hypot(cs.Scale, mu*cc.Scale) / nHat
	} else {
		t = noise.LaplaceQ975 * (cs.Scale + mu*cc.Scale) / nHat
	}
	return Result{Value: &v, Interval95: math.Min(t, sp.Hi-sp.Lo)}, nil
}

// releaseHistogram is Release for KindHistogram; see Release.
func releaseHistogram(c Calibration, s Stats, n noise.Sampler) (Result, error) {
	sp := c.Spec
	comp := c.Components[0]
	axes := sp.HistogramAxes()
	m := len(s.Bins)
	r := Result{
		Interval95:    halfWidth95(comp),
		NoisyCounts:   make([]float64, m),
		Probabilities: make([]float64, m),
		Densities:     make([]float64, m),
		Shape:         make([]int, len(axes)),
		AxisEdges:     make([][]float64, len(axes)),
	}
	total := 0.0
	for j, cnt := range s.Bins {
		v, err := noise.AddToCount(n, comp, cnt)
		if err != nil {
			return Result{}, fmt.Errorf("release histogram: bin %d: %w", j, err)
		}
		r.NoisyCounts[j] = v
		total += math.Max(v, 0)
	}
	volume := 1.0
	for i, a := range axes {
		r.Shape[i] = a.Bins
		volume *= (a.Hi - a.Lo) / float64(a.Bins)
		e := make([]float64, a.Bins+1)
		for j := range e {
			e[j] = BinEdge(a.Lo, a.Hi, a.Bins, j)
		}
		r.AxisEdges[i] = e
		r.Edges = append(r.Edges, e...)
	}
	for j, d := range r.NoisyCounts {
		if total > 0 {
			r.Probabilities[j] = math.Max(d, 0) / total
		} else {
			r.Probabilities[j] = 1 / float64(m)
		}
		r.Densities[j] = r.Probabilities[j] / volume
	}
	return r, nil
}

// CellIndex maps one event's values of a histogram's fields to its cell:
// BinIndex on each field, combined row-major with the last field varying
// fastest (cell = ((i₁·m₂) + i₂)·m₃ + i₃), the order of Release's
// NoisyCounts. It returns -1 when len(values) differs from the number of
// fields or some field has no bin (see BinIndex).
func CellIndex(axes []Axis, values []float64) int {
	if len(values) != len(axes) || len(axes) == 0 {
		return -1
	}
	cell := 0
	for i, a := range axes {
		j := BinIndex(values[i], a.Lo, a.Hi, a.Bins)
		if j < 0 {
			return -1
		}
		cell = cell*a.Bins + j
	}
	return cell
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
	case KindHistogram:
		if len(s.Bins) != sp.Cells() {
			return fmt.Errorf("got %d bins, spec has %d cells", len(s.Bins), sp.Cells())
		}
		for j, b := range s.Bins {
			if b < 0 {
				return fmt.Errorf("negative count %d in bin %d", b, j)
			}
		}
	}
	return nil
}

// halfWidth95 is the smallest half-width G·m with P(|noise| > G·m) ≤ 0.05
// for comp's noise, plus G/2 for the rounding of a sum to a grid coarser
// than its unit.
func halfWidth95(comp noise.Component) float64 {
	g := comp.Granularity
	var m float64
	if comp.Noise == noise.DiscreteGaussian {
		m = noise.DiscreteGaussianHalfWidth95(comp.Scale / g)
	} else {
		m = noise.DiscreteLaplaceHalfWidth95(comp.Scale / g)
	}
	if onOutputGrid(comp) && g > comp.Quantum {
		return g*m + g/2
	}
	return g * m
}

// checkCalibration reports why c must not be released: its Spec must be
// valid, its components must be the ones Calibrate plans for that Spec (same
// statistics, units, noise kinds and budget shares; exactly the sensitivity
// of the statistic after rounding to the component's grid, which must be
// the grid max(Granularity(Scale), Quantum) of its scale), and each must add
// at least the noise its share requires.
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
	plan, err := c.Spec.plan()
	if err != nil {
		return err
	}
	if len(c.Components) != len(plan) {
		return fmt.Errorf("%d components, want %d", len(c.Components), len(plan))
	}
	for i, g := range c.Components {
		w := plan[i]
		if g.Purpose != w.Purpose || g.Noise != w.Noise {
			return fmt.Errorf("component %d is %s/%s, want %s/%s", i, g.Purpose, g.Noise, w.Purpose, w.Noise)
		}
		if g.Quantum != w.Quantum {
			return fmt.Errorf("component %d (%s) has quantum %v, want %v", i, g.Purpose, g.Quantum, w.Quantum)
		}
		if !noise.ValidScale(g.Scale) || g.Scale > noise.MaxDiscreteScale*g.Granularity {
			return fmt.Errorf("component %d (%s) scale %v is not finite, positive and at most 2^50 grid steps", i, g.Purpose, g.Scale)
		}
		grid := w.Quantum
		if onOutputGrid(w.Component) {
			grid = noise.OutputGrid(g.Scale, w.Quantum)
		}
		if g.Granularity != grid {
			return fmt.Errorf("component %d (%s) has granularity %v, want %v for scale %v", i, g.Purpose, g.Granularity, grid, g.Scale)
		}
		isteps, ok := noise.UnitSteps(w.l, w.maxUnits, noise.GridShift(grid, w.Quantum))
		if !ok {
			return fmt.Errorf("component %d (%s) sensitivity is more than 2^53 grid steps", i, g.Purpose)
		}
		steps := float64(isteps)
		// The plan's own l2sq decides the sensitivity and δ checked
		// below, whatever g carries.
		w.Component.L2Sq = w.l2sq
		if need := componentSensitivity(w.Component, grid, steps); g.Sensitivity != need || !close9(g.Epsilon, w.Epsilon) || !close9(g.Delta, w.Delta) {
			return fmt.Errorf("component %d (%s) has sensitivity %v and share (%v, %v), want %v and (%v, %v)",
				i, g.Purpose, g.Sensitivity, g.Epsilon, g.Delta, need, w.Epsilon, w.Delta)
		}
		switch g.Noise {
		case noise.DiscreteLaplace:
			if got := steps / (g.Scale / grid); got > w.Epsilon*(1+1e-9) {
				return fmt.Errorf("component %d (%s) discrete laplace scale %v gives epsilon %v > %v", i, g.Purpose, g.Scale, got, w.Epsilon)
			}
		case noise.DiscreteGaussian:
			if d := gaussianDelta(w.Component, w.Epsilon, g.Scale/grid, steps); !(d <= w.Delta*(1+1e-9)) {
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
