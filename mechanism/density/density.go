package density

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file implements the orthogonal-series density release of SPEC
// section 4.3: noisy cosine-series coefficients of one clamped field over
// one window, post-processed into a proper density on a grid.
//
// Sources: Wasserman & Zhou 2010 ("A statistical framework for differential
// privacy", JASA, §5: private orthogonal-series density estimation);
// the lecture notes of SPEC section 4.3 (seed 003, §5.3); Efromovich 1999
// ("Nonparametric Curve Estimation", Springer, ch. 3) for the cosine basis
// on [0, 1], its coefficient decay and the choice of the number of terms.

// PurposeBasisSums is the Component.Purpose of a density release's noisy
// basis sums S_j = Σ ψ_j(u_i), j = 1..m (one vector-valued component).
const PurposeBasisSums = "basis_sums"

// Limits and defaults of density releases.
const (
	// MaxTerms is the largest number m of cosine terms. AutoTerms
	// reaches it only for n ≈ 10^15 at smoothness 2; far more terms would
	// be noise at any realistic window size, and the cap keeps a typo in a
	// configuration from allocating and evaluating millions of terms.
	MaxTerms = 1024
	// MaxGridPoints is the largest evaluation grid.
	MaxGridPoints = 1 << 16
	// DefaultGridPoints is a grid size for configurations that do
	// not choose one: 257 points (256 intervals) give at least 8 points per
	// period of every term up to m = 64, the AutoTerms value for n up to
	// about 10^9 at smoothness 2.
	DefaultGridPoints = 257
	// DefaultSmoothness is the Sobolev smoothness γ that AutoTerms assumes
	// when none is configured (SPEC section 4.3): m ≍ n^{1/5}.
	DefaultSmoothness = 2.0
)

// densityQuantum is q, the value of one unit of a basis sum: ψ_j values are
// quantized to multiples of 2^-QuantumBits = 2^-30 (about 9.3e-10).
const densityQuantum = 1.0 / (1 << aggregate.QuantumBits)

// densityDesignCoefSq is B = Σ_j β_j² = ∫p² − 1 (u-scale), the size of the
// coefficients the count/terms budget split is optimized for (see
// Calibrate). B = 1 means ∫p² = 2 on [0, 1]: Beta(2, 5) has 1.82,
// the uniform density 1, sharply peaked densities more.
const densityDesignCoefSq = 1.0

// Quantizer is the fixed-point representation of the cosine basis of
// one density release: it maps a value x to the m integers
//
//	k_j(x) = ⌊fl(√2·c_j)·2^30 + 1/2⌋,  c_j = clamp(cos(π·j·u), −1, 1),
//	u = (clamp(x, Lo, Hi) − Lo)/(Hi − Lo),  j = 1..m,
//
// so k_j·q with q = 2^-30 is ψ_j(u) = √2·cos(π·j·u) to within q/2 (plus
// the cosine's floating-point error, below 1e-12 for every j ≤
// MaxTerms). The basis sums are accumulated as integers in int64
// (Stats), so they are exact and independent of the order of
// summation and merging: floating-point sums are neither, and the computed
// sums of neighbouring windows could differ by more than the sensitivity
// (Casacuberta, Shoemate, Vadhan & Wagaman 2022; see Quantizer, which does
// the same for sums).
//
// Sensitivity per event. The map c ↦ ⌊fl(√2·c)·2^30 + 1/2⌋ is
// non-decreasing (a correctly rounded product by a positive constant, an
// exact scaling by a power of two and ⌊· + 1/2⌋ all are), and c_j is
// clamped to [−1, 1], so k_j(x) lies in [k(−1), k(1)] = [−K*, K*] with
// K* = MaxUnits() = 1518500250 = round(√2·2^30) (rounding is symmetric, and
// fl(√2)·2^30 = 1518500249.987… is not a tie) for every x and every j,
// whatever the floating-point error of the cosine. At x = Lo (u = 0) every
// c_j is exactly 1, so k(Lo) = (K*, …, K*): the bound is attained in every
// coordinate at once. Hence per event ‖k‖∞ ≤ K*, ‖k‖₁ ≤ m·K* and
// ‖k‖₂ ≤ √m·K*, all with equality at Lo. These are the exact analogues of |ψ_j| ≤ √2, ‖ψ(u)‖₁ ≤ m√2 and
// ‖ψ(u)‖₂² = 2·Σ_j cos²(πju) ≤ 2m (equality at u ∈ {0, 1}); K*·q exceeds
// √2 by 1.1e-11.
//
// The cosines are computed by the rotation recurrence
// (c_{j+1}, s_{j+1}) = (c_j·c_1 − s_j·s_1, s_j·c_1 + c_j·s_1) from one
// math.Sincos(π·u) instead of m calls to math.Cos, and as accurate for
// these arguments: its error grows like j·2^-53, the same order as the
// rounding of the argument π·j·u itself (below 5e-13 at j = 1024 in the
// tests).
//
// The zero Quantizer is not usable; build one with
// NewQuantizer or Spec.Quantizer.
type Quantizer struct {
	lo, hi, width float64
	terms         int
	maxUnits      int64
}

// NewQuantizer returns the quantizer of a density release with m =
// terms cosine terms on [lo, hi]. It returns an error for bounds that are
// not finite with lo < hi and a finite width hi − lo, or terms outside
// [1, MaxTerms]. The accumulate stage and Calibrate both build
// theirs from the configuration with this function, so they agree on the
// units.
func NewQuantizer(lo, hi float64, terms int) (Quantizer, error) {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) || math.IsInf(hi-lo, 0) {
		return Quantizer{}, fmt.Errorf("density quantizer: bounds [%v, %v] must be finite with lo < hi and a finite width", lo, hi)
	}
	if terms < 1 || terms > MaxTerms {
		return Quantizer{}, fmt.Errorf("density quantizer: terms must be in [1, %d], got %d", MaxTerms, terms)
	}
	return Quantizer{lo: lo, hi: hi, width: hi - lo, terms: terms, maxUnits: basisUnits(1)}, nil
}

// Quantizer returns the quantizer of a density spec; see NewQuantizer.
func (s Spec) Quantizer() (Quantizer, error) {
	return NewQuantizer(s.Lo, s.Hi, s.Terms)
}

// Terms returns m, the number of cosine terms.
func (z Quantizer) Terms() int { return z.terms }

// Quantum returns q = 2^-30, the value of one unit of a basis sum.
func (z Quantizer) Quantum() float64 { return densityQuantum }

// MaxUnits returns K* = round(√2·2^30) = 1518500250, the largest |k_j(x)|
// over all x and j, attained for every j at x = Lo.
func (z Quantizer) MaxUnits() int64 { return z.maxUnits }

// MaxEvents is the number of events up to which no basis sum can
// overflow int64 in any order of accumulation or merging: every event adds
// at most K* = 1518500250 < 2^30.5 in magnitude to each sum, and
// MaxEvents·K* < 2^63. Add refuses to count beyond it, and Merge
// returns an error on an actual overflow, rather than wrap or saturate:
// either would change the sensitivity.
const MaxEvents = math.MaxInt64 / 1518500250

// Units writes k_j(x), j = 1..m, into dst[0..m−1] (see Quantizer).
// It clamps x to [Lo, Hi] itself, so |k_j| ≤ MaxUnits() holds for every
// input. It returns an error for NaN, a dst of the wrong length and a zero
// quantizer.
func (z Quantizer) Units(x float64, dst []int64) error {
	if err := z.usable(x); err != nil {
		return err
	}
	if len(dst) != z.terms {
		return fmt.Errorf("density units: dst has length %d, want %d terms", len(dst), z.terms)
	}
	c, s, c1, s1 := z.start(x)
	for j := range dst {
		dst[j] = basisUnits(c)
		c, s = c*c1-s*s1, s*c1+c*s1
	}
	return nil
}

// Add accumulates one kept event with value x into st: Count += 1 and
// Terms[j] += k_j(x). A zero st (no Terms) is initialized with m terms.
// x is clamped to [Lo, Hi] (the accumulate stage clamps and counts clamps
// itself; clamping again keeps the per-event bound unconditional).
//
// It returns an error, leaving st unchanged, for a nil st, NaN x, a zero
// quantizer, Terms of the wrong length, a negative Count or one that has
// reached MaxEvents, or a basis sum within K* of the int64 range,
// which cannot happen below MaxEvents events (the check is
// conservative: it refuses without computing whether this event's k_j
// would actually overflow).
func (z Quantizer) Add(st *Stats, x float64) error {
	if st == nil {
		return errors.New("density add: nil stats")
	}
	if err := z.usable(x); err != nil {
		return err
	}
	switch {
	case len(st.Terms) == 0 && st.Count == 0:
		st.Terms = make([]int64, z.terms)
	case len(st.Terms) != z.terms:
		return fmt.Errorf("density add: stats have %d terms, want %d", len(st.Terms), z.terms)
	}
	if st.Count >= MaxEvents || st.Count < 0 {
		return fmt.Errorf("density add: count %d is outside [0, %d)", st.Count, int64(MaxEvents))
	}
	for j, v := range st.Terms {
		if v > math.MaxInt64-z.maxUnits || v < math.MinInt64+z.maxUnits {
			return fmt.Errorf("density add: basis sum %d = %d is too close to the int64 range", j+1, v)
		}
	}
	c, s, c1, s1 := z.start(x)
	for j := range st.Terms {
		st.Terms[j] += basisUnits(c)
		c, s = c*c1-s*s1, s*c1+c*s1
	}
	st.Count++
	return nil
}

// NewStats returns empty statistics with m zero basis sums.
func (z Quantizer) NewStats() Stats {
	return Stats{Terms: make([]int64, z.terms)}
}

// usable reports a zero quantizer or a NaN value.
func (z Quantizer) usable(x float64) error {
	if z.terms == 0 {
		return errors.New("density quantizer: zero Quantizer (build it with NewQuantizer)")
	}
	if math.IsNaN(x) {
		return errors.New("density quantizer: value is NaN")
	}
	return nil
}

// start returns (c_1, s_1) = (cos πu, sin πu) twice: as the first term of
// the recurrence and as its rotation. u = (clamp(x) − lo)/width lies in
// [0, 1]: the subtraction and the division are monotone roundings of
// values in [0, width] and [0, 1].
func (z Quantizer) start(x float64) (c, s, c1, s1 float64) {
	u := (max(z.lo, min(x, z.hi)) - z.lo) / z.width // x is not NaN
	u = max(0, min(u, 1))
	s1, c1 = math.Sincos(math.Pi * u)
	return c1, s1, c1, s1
}

// basisUnits returns ⌊fl(√2·c)·2^30 + 1/2⌋ for c clamped to [−1, 1] (NaN,
// which the callers never pass, counts as −1). The scaled value y has
// magnitude below 2^31, so the truncation to int64, its conversion back,
// the fraction y − ⌊y⌋ and the comparison are exact; the function is
// non-decreasing in c. (Integer truncation instead of math.Floor, and
// comparisons instead of math.Max/Min, make it several times faster, and
// the compiler turns the two adjustments into branch-free flag moves; Add
// calls it m times per event.)
func basisUnits(c float64) int64 {
	if !(c >= -1) {
		c = -1
	} else if c > 1 {
		c = 1
	}
	y := math.Sqrt2 * c * (1 << aggregate.QuantumBits) // the second product is exact
	k := int64(y)                                      // towards zero
	var down, up int64
	if float64(k) > y {
		down = 1 // ⌊y⌋ = k − 1 for negative non-integral y
	}
	k -= down
	if y-float64(k) >= 0.5 {
		up = 1
	}
	return k + up
}

// Stats are the exact sufficient statistics of a density release
// over one window: the number of kept events and the m basis sums
// Terms[j−1] = Σ_i k_j(x_i) in units of q = 2^-30 (see Quantizer).
// Partials from different input partitions merge by exact integer
// addition, so the result does not depend on the order of accumulation or
// merging.
type Stats struct {
	Count int64
	Terms []int64
}

// Merge adds o into s exactly. Terms must have the same length in both,
// except that a receiver with no terms (a zero Stats used as an
// accumulator) takes a copy of o's. On error (length mismatch or int64
// overflow of any field, impossible below MaxEvents events in
// total) s is left unchanged.
func (s *Stats) Merge(o Stats) error {
	if s == nil {
		return errors.New("merge density stats: nil receiver")
	}
	if len(s.Terms) != 0 && len(s.Terms) != len(o.Terms) {
		return fmt.Errorf("merge density stats: term count mismatch: %d vs %d", len(s.Terms), len(o.Terms))
	}
	count, ok := noise.AddInt64(s.Count, o.Count)
	if !ok {
		return fmt.Errorf("merge density stats: count overflows int64 (%d + %d)", s.Count, o.Count)
	}
	if len(s.Terms) == 0 {
		if len(o.Terms) != 0 {
			s.Terms = slices.Clone(o.Terms)
		}
		s.Count = count
		return nil
	}
	for j := range s.Terms {
		if _, ok := noise.AddInt64(s.Terms[j], o.Terms[j]); !ok {
			return fmt.Errorf("merge density stats: basis sum %d overflows int64 (%d + %d; more than %d events?)",
				j+1, s.Terms[j], o.Terms[j], int64(MaxEvents))
		}
	}
	for j := range s.Terms {
		s.Terms[j] += o.Terms[j]
	}
	s.Count = count
	return nil
}

// Spec is a density release's configuration, the only input to its
// calibration (never the data: SPEC section 1).
type Spec struct {
	// Noise is noise.Laplace (ε-DP) or noise.Gaussian ((ε, δ)-DP).
	Noise noise.Kind
	// Epsilon is the release's ε, finite and > 0.
	Epsilon float64
	// Delta is the release's δ: in (0, 1) for Gaussian noise, 0 for Laplace.
	Delta float64
	// Lo and Hi bound the field; values are clamped into [Lo, Hi].
	Lo, Hi float64
	// Terms is m, the number of cosine terms, in [1, MaxTerms]. A
	// `terms: auto` configuration resolves it with AutoTerms before
	// calibrating (from an earlier noisy count or a declared size, never
	// from this window's data).
	Terms int
	// MaxContributions is L, the most events one privacy unit keeps per
	// window (enforced upstream), at least 1.
	MaxContributions int
	// GridPoints is G, the number of points of the evaluation grid on
	// [Lo, Hi], in [Terms + 1, MaxGridPoints] (a coarser grid could
	// not represent the highest term; see Release).
	GridPoints int
}

// validate reports the first problem with s, wrapped in ErrInvalidSpec.
func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: density: "+format, append([]any{noise.ErrInvalidSpec}, args...)...)
	}
	if msg := noise.CheckPrivacyParams(s.Noise, s.Epsilon, s.Delta); msg != "" {
		return bad("%s", msg)
	}
	if math.IsNaN(s.Lo) || math.IsNaN(s.Hi) || math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || !(s.Lo < s.Hi) {
		return bad("needs finite bounds with lo < hi, got [%v, %v]", s.Lo, s.Hi)
	}
	if math.IsInf(s.Hi-s.Lo, 0) {
		return bad("bounds [%v, %v] are too wide: hi - lo overflows", s.Lo, s.Hi)
	}
	if s.Terms < 1 || s.Terms > MaxTerms {
		return bad("terms must be in [1, %d], got %d", MaxTerms, s.Terms)
	}
	if s.MaxContributions < 1 {
		return bad("max contributions per window must be >= 1, got %d", s.MaxContributions)
	}
	if s.GridPoints < s.Terms+1 || s.GridPoints > MaxGridPoints {
		return bad("grid points must be in [terms + 1, %d] = [%d, %d], got %d",
			MaxGridPoints, s.Terms+1, MaxGridPoints, s.GridPoints)
	}
	return nil
}

// Calibration is a Spec with the noise that makes it private.
// Build it with Calibrate: Release refuses one whose noise is
// smaller than its Spec requires.
type Calibration struct {
	Spec Spec
	// Components are what the accountant charges: [0] the count (Purpose
	// PurposeCount, integer, Granularity 1) and [1] the vector of m basis
	// sums (PurposeBasisSums), one independent draw per sum at the same
	// Scale, with the vector's exact L1 (discrete Laplace) or L2 (discrete
	// Gaussian) sensitivity. Each maps to accountant.Mechanism{Kind:
	// string(c.Noise), Scale: c.Scale, Sensitivity: c.Sensitivity}; for the
	// discrete Gaussian the accountant's charge Sensitivity²/(2·Scale²) is
	// the component's zCDP ρ, valid for the vector (see Calibrate).
	//
	// Epsilon and Delta: with Laplace noise they are the two components'
	// shares of ε (basic composition; they add up to Spec.Epsilon). With
	// Gaussian noise the components are calibrated jointly through zCDP,
	// whose composition is tighter than adding (ε, δ) shares: each
	// component's Epsilon is Spec.Epsilon and its Delta is the δ at which
	// that component alone is (ε, δ)-DP (zCDP conversion of its own ρ); the
	// release's guarantee comes from Rho, not from adding the Deltas.
	Components []noise.Component
	// Rho is the release's total zCDP ρ with Gaussian noise (the sum of the
	// components' Sensitivity²/(2·Scale²)); 0 with Laplace noise.
	Rho float64

	verified *verifiedDensity
}

// verifiedDensity is a private copy of what Calibrate derived (see
// Calibration.verified).
type verifiedDensity struct {
	spec  Spec
	comps []noise.Component
	rho   float64
}

// Calibrate validates s and derives the noise of a density release.
// It reads the spec only, never data, so the charge is data-independent.
//
// Guarantee: Release with the result is ε-DP (noise.Laplace) or
// (ε, δ)-DP (noise.Gaussian) under add/remove of one privacy unit (all of
// its events in the window; SPEC section 0), given that each unit keeps at
// most L = s.MaxContributions events, chosen without looking at their
// values, and that values are clamped to [Lo, Hi].
//
// Statistics: the count n and the basis sums K_j = Σ_i k_j(x_i), j = 1..m,
// exact integers in units of q = 2^-30 (Quantizer).
//
// Sensitivity (exact for the released integers), with proof sketch. A
// unit's at most L kept events each add 1 to n and k(x) to K, and adding or
// removing the unit changes nothing else (the per-unit cap looks only at
// that unit's events). So |Δn| ≤ L, and since every event has
// ‖k(x)‖∞ ≤ K*, ‖k(x)‖₁ ≤ m·K*, ‖k(x)‖₂ ≤ √m·K* (Quantizer), the
// triangle inequality gives |ΔK_j| ≤ L·K*, ‖ΔK‖₁ ≤ L·m·K* and
// ‖ΔK‖₂ ≤ L·√m·K*, all attained by L events at x = Lo. On the value scale
// (×q) these are L·m·√2 and L·√(2m) up to K*·q − √2 = 1.1e-11: the
// sensitivities of SPEC section 0. As for sums (Calibrate), the noise
// lives on a grid G = max(Granularity(Scale), q), a power of two, and
// Release regrids each K_j to ⌊K_j/r + 1/2⌋ with r = G/q = 2^e by an
// exact shift. Rounding is monotone and ⌊x + d⌋ − ⌊x⌋ ≤ ⌈d⌉, so each
// regridded coordinate moves by at most S = ⌈L·K*/r⌉ grid steps, whence
// L1 ≤ m·S and L2 ≤ √m·S steps (tight over integer statistics; r = 1 in
// most configurations, and then S = L·K*). Component.Sensitivity records
// G·m·S (Laplace) or G·√m·S (Gaussian), and L for the count.
//
// Discrete Laplace (pure ε-DP). The budget is split ε = ε₀ + ε_S by basic
// composition: the count gets t₀ = L/ε₀ and each basis sum independent
// discrete Laplace noise of t = m·S/ε_S grid steps. For neighbours the
// likelihood ratio of the whole output is a product over coordinates, at
// most exp(|Δn|/t₀ + Σ_j|Δ_j|/t) ≤ exp(ε₀ + ε_S) (Dwork, McSherry, Nissim
// & Smith 2006; exact discrete noise: Canonne, Kamath & Steinke 2020).
//
// Discrete Gaussian ((ε, δ)-DP through zCDP). The multivariate discrete
// Gaussian is not rotation invariant, so the one-dimensional exact curve
// does not cover a vector shift; as for multi-bin histograms (Calibrate) the
// release is calibrated through zCDP, which composes exactly over
// independent coordinates: N_Z(0, σ²) against a shift n is
// (n²/(2σ²))-zCDP (CKS 2020, Thm. 4) and Rényi divergences add over
// independent coordinates and over the count and the sums, so the release
// is ρ-zCDP with ρ = L²/(2σ₀²) + m·S²/(2σ²) and (ε, δ)-DP with
// δ = noise.ZCDPDelta(ε, ρ) (CKS 2020, Prop. 12). Calibrate takes the
// largest ρ* meeting δ, splits it ρ* = ρ₀ + ρ_S, sets σ₀ = L/√(2ρ₀) (rounded
// up to 24 significant bits) and σ = ⌈S·√m/√(2ρ_S)⌉ grid steps (an integer,
// for the sampler's exact arithmetic), and re-checks δ at the rounded σ.
// Joint zCDP calibration is what the accountant charges anyway (it adds the
// components' ρ), and it beats splitting (ε, δ) by basic composition: at
// ε = 1, δ = 1e-5 and m = 8 the noise part of the MISE is about 28% lower
// than with the best (ε, δ) split.
//
// Budget split (derived for this project). With p̃ = 1 + Σ β̃_j ψ_j and
// β̃_j = S̃_j/ñ, to first order β̃_j − β̂_j ≈ (Z_j − β_j·Z₀)/n, so by
// Parseval the noise adds (m·v_S + B·v₀)/n² to the MISE, with v_S the
// variance of each sum's noise, v₀ the count's and B = Σ_j β_j² = ∫p² − 1
// (u-scale). Laplace: v_S = 2(L·m·√2/ε_S)², v₀ = 2(L/ε₀)², and minimizing
// 4m³/ε_S² + 2B/ε₀² under ε₀ + ε_S = ε gives ε₀/ε_S = (B/2)^{1/3}/m.
// Gaussian: v_S = m·L²/ρ_S, v₀ = L²/(2ρ₀), and minimizing m²/ρ_S + B/(2ρ₀)
// under ρ₀ + ρ_S = ρ gives ρ₀/ρ_S = √(B/2)/m. The data's B is unknown and
// must not be looked at, so the split is fixed at the design value B = 1
// (∫p² = 2): ε₀ = ε/(1 + 2^{1/3}·m), ρ₀ = ρ/(1 + √2·m). The objective is
// flat near its optimum (at m = 8, a true B of 1/4 or 4 makes the noise
// MISE 2–9% above its optimum), whereas an even split would multiply it by
// 3.0 (Laplace) or 1.7 (Gaussian).
//
// The count's noise also matters for `terms: auto` in later windows, where
// ñ sets m; its relative error is O(L·m/(nε)) with Laplace noise, and m
// depends on it only through ñ^{1/(2γ+1)}.
//
// Errors wrap ErrInvalidSpec and name the offending field.
func Calibrate(s Spec) (Calibration, error) {
	if err := s.validate(); err != nil {
		return Calibration{}, err
	}
	z, err := s.Quantizer()
	if err != nil {
		return Calibration{}, fmt.Errorf("%w: %w", noise.ErrInvalidSpec, err)
	}
	c := Calibration{Spec: s}
	switch s.Noise {
	case noise.Laplace:
		c.Components, err = calibrateDensityLaplace(s, z)
	default: // noise.Gaussian; validate has rejected every other noise
		c.Components, c.Rho, err = calibrateDensityGaussian(s, z)
	}
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate density release: %w", err)
	}
	c.verified = &verifiedDensity{spec: s, comps: slices.Clone(c.Components), rho: c.Rho}
	return c, nil
}

// densityCountShare returns the fraction of the budget (ε for Laplace, ρ
// for Gaussian) that goes to the count: 1/(1 + 2^{1/3}·m) and
// 1/(1 + √2·m) at B = 1 (see Calibrate).
func densityCountShare(noiseKind noise.Kind, m int) float64 {
	if noiseKind == noise.Laplace {
		return 1 / (1 + math.Cbrt(2/densityDesignCoefSq)*float64(m))
	}
	return 1 / (1 + math.Sqrt(2/densityDesignCoefSq)*float64(m))
}

// densitySteps returns S = ⌈L·K*/r⌉ (r = G/q), the most one regridded basis
// sum moves, and the vector's L1 (m·S) or L2 (√m·S) sensitivity in grid
// steps for noise kind noise. It fails when m·S exceeds 2^53.
func densitySteps(noiseKind noise.Kind, l int, maxUnits int64, m int, g float64) (perCoord int64, steps float64, err error) {
	sc, ok := noise.UnitSteps(l, maxUnits, noise.GridShift(g, densityQuantum))
	if !ok || sc > noise.MaxGridSteps/int64(m) {
		return 0, 0, fmt.Errorf("%w: basis sums sensitivity %d×%d×%d units is more than 2^53 grid steps of %v (max contributions too large?)",
			noise.ErrInvalidSpec, m, l, maxUnits, g)
	}
	if noiseKind == noise.DiscreteLaplace {
		return sc, float64(int64(m) * sc), nil
	}
	return sc, float64(sc) * math.Sqrt(float64(m)), nil
}

// countComponent returns the count component with discrete noise of scale
// (t or σ) on the integer count.
func countComponent(noiseKind noise.Kind, l int, scale, eps, delta float64) (noise.Component, error) {
	if err := noise.CheckDiscreteScale("count noise scale", scale); err != nil {
		return noise.Component{}, fmt.Errorf("%w: %w (epsilon too small?)", noise.ErrInvalidSpec, err)
	}
	c := noise.Component{Purpose: aggregate.PurposeCount, Noise: noiseKind, Sensitivity: float64(l), Scale: scale,
		Quantum: 1, Granularity: 1, Epsilon: eps, Delta: delta}
	if noiseKind == noise.DiscreteLaplace {
		c.ExpectedAbsError = noise.DiscreteLaplaceAbsMean(scale)
	} else {
		c.ExpectedAbsError = noise.DiscreteGaussianAbsMean(scale)
	}
	return c, nil
}

// termsComponent finds the grid G and the scale of the basis sums' noise:
// scaleSteps(steps) returns the noise scale in grid steps for the vector
// sensitivity steps (in grid steps), and first is the scale on the finest
// grid q, where the search starts. The grid depends on the final scale,
// and the scale on the grid through S, so G is found by the fixed-point
// iteration of Calibrate (two rounds settle it; four leave room).
func termsComponent(noiseKind noise.Kind, l int, maxUnits int64, m int, first float64,
	scaleSteps func(steps float64) float64) (noise.Component, error) {
	if !noise.ValidScale(first) {
		return noise.Component{}, fmt.Errorf("%w: basis sums noise scale %v is not finite and positive (epsilon too small?)", noise.ErrInvalidSpec, first)
	}
	g := noise.OutputGrid(first, densityQuantum)
	for range 4 {
		_, steps, err := densitySteps(noiseKind, l, maxUnits, m, g)
		if err != nil {
			return noise.Component{}, err
		}
		t := scaleSteps(steps)
		if !noise.ValidScale(t) || t > noise.MaxDiscreteScale {
			return noise.Component{}, fmt.Errorf("%w: basis sums noise scale %v grid steps is not finite, positive and at most 2^50 (epsilon too small?)", noise.ErrInvalidSpec, t)
		}
		if g2 := noise.OutputGrid(g*t, densityQuantum); g2 != g {
			g = g2
			continue
		}
		c := noise.Component{Purpose: PurposeBasisSums, Noise: noiseKind, Sensitivity: g * steps, Scale: g * t,
			Quantum: densityQuantum, Granularity: g}
		if noiseKind == noise.DiscreteLaplace {
			c.ExpectedAbsError = g * noise.DiscreteLaplaceAbsMean(t)
		} else {
			c.ExpectedAbsError = g * noise.DiscreteGaussianAbsMean(t)
		}
		return c, nil
	}
	return noise.Component{}, fmt.Errorf("%w: basis sums: the noise grid did not settle", noise.ErrInvalidSpec)
}

// calibrateDensityLaplace is Calibrate for discrete Laplace noise.
func calibrateDensityLaplace(s Spec, z Quantizer) ([]noise.Component, error) {
	l, m := s.MaxContributions, s.Terms
	eps0 := s.Epsilon * densityCountShare(noise.Laplace, m)
	epsS := s.Epsilon - eps0
	cc, err := countComponent(noise.DiscreteLaplace, l, float64(l)/eps0, eps0, 0)
	if err != nil {
		return nil, err
	}
	first := float64(l) * float64(m) * float64(z.MaxUnits()) * densityQuantum / epsS
	cs, err := termsComponent(noise.DiscreteLaplace, l, z.MaxUnits(), m, first,
		func(steps float64) float64 { return steps / epsS })
	if err != nil {
		return nil, err
	}
	cs.Epsilon = epsS
	return []noise.Component{cc, cs}, nil
}

// calibrateDensityGaussian is Calibrate for discrete Gaussian noise.
func calibrateDensityGaussian(s Spec, z Quantizer) ([]noise.Component, float64, error) {
	l, m := s.MaxContributions, s.Terms
	// ρ* = 1/(2σ₁²) with σ₁ the zCDP σ of a unit-sensitivity query: the
	// largest ρ (to a relative 1e-12) with noise.ZCDPDelta(ε, ρ) ≤ δ.
	sigma1, err := noise.ZCDPGaussianSigma(s.Epsilon, s.Delta, 1)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", noise.ErrInvalidSpec, err)
	}
	rho := 1 / (2 * sigma1 * sigma1)
	rho0 := rho * densityCountShare(noise.Gaussian, m)
	rhoS := rho - rho0
	sigma0 := noise.RoundUpSignificand(float64(l) / math.Sqrt(2*rho0))
	first := float64(l) * math.Sqrt(float64(m)) * float64(z.MaxUnits()) * densityQuantum / math.Sqrt(2*rhoS)
	cs, err := termsComponent(noise.DiscreteGaussian, l, z.MaxUnits(), m, first,
		func(steps float64) float64 { return math.Ceil(steps / math.Sqrt(2*rhoS)) })
	if err != nil {
		return nil, 0, err
	}
	// Re-check δ at the rounded scales; rounding up only lowers ρ, so this
	// fails only by the last-bit error of the ρ* search, and one more
	// step of each σ fixes that.
	for i := 0; ; i++ {
		total := densityRho(l, sigma0, cs)
		if noise.ZCDPDelta(s.Epsilon, total) <= s.Delta {
			break
		}
		if i == 16 {
			return nil, 0, fmt.Errorf("%w: density: rounded sigmas miss delta %v", noise.ErrInvalidSpec, s.Delta)
		}
		sigma0 = noise.NextSignificand(sigma0)
		cs.Scale += cs.Granularity
		if noise.OutputGrid(cs.Scale, densityQuantum) != cs.Granularity {
			return nil, 0, fmt.Errorf("%w: density: rounded basis sums sigma left its grid", noise.ErrInvalidSpec)
		}
	}
	cc, err := countComponent(noise.DiscreteGaussian, l, sigma0, 0, 0)
	if err != nil {
		return nil, 0, err
	}
	cc.Epsilon, cc.Delta = s.Epsilon, noise.ZCDPDelta(s.Epsilon, countRho(l, sigma0))
	cs.Epsilon, cs.Delta = s.Epsilon, noise.ZCDPDelta(s.Epsilon, termsRho(cs))
	cs.ExpectedAbsError = cs.Granularity * noise.DiscreteGaussianAbsMean(cs.Scale/cs.Granularity)
	return []noise.Component{cc, cs}, densityRho(l, sigma0, cs), nil
}

// densityRho returns the zCDP ρ of a Gaussian density release: the count's
// plus the basis sums'. Both are Sensitivity²/(2·Scale²), the charge the
// accountant computes (the grid G cancels in the sums' ratio).
func densityRho(l int, sigma0 float64, cs noise.Component) float64 {
	return countRho(l, sigma0) + termsRho(cs)
}

// countRho returns L²/(2σ₀²), the zCDP ρ of the count's discrete Gaussian.
func countRho(l int, sigma0 float64) float64 {
	return float64(l) * float64(l) / (2 * sigma0 * sigma0)
}

// termsRho returns (Sensitivity/Scale)²/2 = m·S²/(2σ²), the zCDP ρ of the
// basis sums' discrete Gaussian noise.
func termsRho(cs noise.Component) float64 {
	r := cs.Sensitivity / cs.Scale
	return r * r / 2
}

// Result is a released density: noisy, post-processed statistics of
// one window. Everything but NoisyCount and NoisySums is post-processing of
// those two.
type Result struct {
	// NoisyCount is ñ = n + Z₀, an integer, unclamped so it stays unbiased.
	NoisyCount float64
	// NoisySums are S̃_j = G·(⌊K_j/r + 1/2⌋ + Z_j), j = 1..m: the basis sums
	// Σ ψ_j(u_i) with noise, multiples of the grid G (unbiased up to the
	// quantization, at most q/2 per event, and the regridding, at most G/2).
	NoisySums []float64
	// Coefficients are β̃_j = clamp(S̃_j/max(ñ, 1), −√2, √2), j = 1..m, the
	// estimated coefficients of the density of u = (x − Lo)/(Hi − Lo) on
	// [0, 1] in the basis ψ_j(u) = √2·cos(πju). Every true coefficient
	// β_j = E ψ_j(u) lies in [−√2, √2], so the clamp never moves an
	// estimate away from it.
	Coefficients []float64
	// Interval95 is a noise-only 95% half-width for each coefficient, to
	// first order in the noise (as for a mean: Release): with n̂ = max(ñ, 1),
	// 1.96·sqrt(σ_S² + β̃_j²·σ₀²)/n̂ for Gaussian noise and, by a union bound
	// over the two 97.5% quantiles, ln(40)·(t_S + |β̃_j|·t₀)/n̂ for Laplace
	// noise (conservative), capped at 2√2. Sampling error is not included.
	Interval95 []float64
	// Grid are the GridPoints points x_k = Lo + (Hi − Lo)·k/(G−1), rounded,
	// with x_0 = Lo and x_{G−1} = Hi exactly: non-decreasing, and strictly
	// increasing unless [Lo, Hi] holds fewer than G float64 values.
	Grid []float64
	// Density are the density values at Grid on the original scale: non-
	// negative, and the piecewise-linear function through them integrates
	// to 1 over [Lo, Hi] (the trapezoid rule on Grid, up to rounding).
	Density []float64
}

// Release computes the density release described by c from the
// window's exact statistics st, adding noise from n. It satisfies the
// guarantee stated by Calibrate for c.Spec (ε-DP or (ε, δ)-DP under
// add/remove of one privacy unit, given the upstream contribution and value
// bounds): the count gets independent exact discrete noise at the count
// component's scale (as Release does for a count), each basis sum K_j is
// regridded by an exact integer shift and gets independent exact discrete
// noise at the basis-sums component's scale (as Release does for a sum),
// and everything after that is post-processing. No floating-point
// arithmetic touches the data before the noise is added.
//
// Post-processing (Wasserman & Zhou 2010, §5; SPEC section 4.3): with
// n̂ = max(ñ, 1), β̃_j = clamp(S̃_j/n̂, −√2, √2) and on the grid
// u_k = k/(G−1), p̃(u_k) = 1 + Σ_j β̃_j·√2·cos(π·j·u_k), clipped at 0,
// divided by its trapezoid integral over the published grid (the exact
// integral of the piecewise-linear interpolant) so that the density
// integrates to 1 over [Lo, Hi]; dividing by Hi − Lo there puts it on the
// original scale. Before clipping the trapezoid integral is exactly 1 up to
// rounding: on G points the trapezoid rule integrates cos(πju) exactly (to
// 0) for 1 ≤ j < 2(G−1), and the spec requires G > m. So when p̃ ≥ 0
// everywhere the renormalization changes nothing. If every value clips (only
// possible through rounding) the density is uniform.
//
// It returns an error, and releases nothing, for a nil n, a calibration
// that does not fit its spec (see checkDensityCalibration), statistics that
// cannot come from the accumulate stage (negative count, wrong number of
// terms, a basis sum above Count·K* in magnitude), a failed noise draw or
// an overflowing noisy value.
func Release(c Calibration, st Stats, n noise.Sampler) (Result, error) {
	if n == nil {
		return Result{}, errors.New("release density: nil noise")
	}
	if err := checkDensityCalibration(c); err != nil {
		return Result{}, fmt.Errorf("release density: calibration does not fit its spec (build it with CalibrateDensity): %w", err)
	}
	sp := c.Spec
	if err := st.check(sp); err != nil {
		return Result{}, fmt.Errorf("release density: %w", err)
	}
	cc, cs := c.Components[0], c.Components[1]
	m := sp.Terms
	g := sp.GridPoints
	// One allocation for all five slices; the full slice expressions keep
	// an append to one from overwriting the next.
	buf := make([]float64, 3*m+2*g)
	r := Result{
		NoisySums:    buf[0:m:m],
		Coefficients: buf[m : 2*m : 2*m],
		Interval95:   buf[2*m : 3*m : 3*m],
		Grid:         buf[3*m : 3*m+g : 3*m+g],
		Density:      buf[3*m+g:],
	}
	var err error
	if r.NoisyCount, err = noise.AddToCount(n, cc, st.Count); err != nil {
		return Result{}, fmt.Errorf("release density: %w", err)
	}
	for j, k := range st.Terms {
		if r.NoisySums[j], err = noise.AddToUnits(n, cs, k); err != nil {
			return Result{}, fmt.Errorf("release density: term %d: %w", j+1, err)
		}
	}
	nHat := math.Max(r.NoisyCount, 1)
	for j, s := range r.NoisySums {
		b := clamp(s/nHat, -math.Sqrt2, math.Sqrt2)
		r.Coefficients[j] = b
		var h float64
		if cs.Noise == noise.DiscreteGaussian {
			h = noise.NormalQ975 * math.Hypot(cs.Scale, b*cc.Scale) / nHat
		} else {
			h = noise.LaplaceQ975 * (cs.Scale + math.Abs(b)*cc.Scale) / nHat
		}
		r.Interval95[j] = math.Min(h, 2*math.Sqrt2)
	}
	densityOnGrid(sp.Lo, sp.Hi, r.Coefficients, r.Grid, r.Density)
	return r, nil
}

// densityOnGrid evaluates 1 + Σ_j β_j ψ_j(u) at the g = len(grid) ≥ 2
// points u_k = k/(g−1), clips at 0, and normalizes to a density on
// [lo, hi] whose trapezoid integral over grid is 1 (see Release). It
// fills grid and dens, of equal length.
func densityOnGrid(lo, hi float64, beta, grid, dens []float64) {
	g := len(grid)
	width := hi - lo
	for k := range g {
		grid[k] = aggregate.BinEdge(lo, hi, g-1, k) // lo, …, hi exactly, non-decreasing
		u := float64(k) / float64(g-1)
		s1, c1 := math.Sincos(math.Pi * u)
		c, s := c1, s1
		p := 1.0
		for _, b := range beta {
			p += b * math.Sqrt2 * c
			c, s = c*c1-s*s1, s*c1+c*s1
		}
		dens[k] = math.Max(p, 0)
	}
	integral := 0.0
	for k := 1; k < g; k++ {
		integral += (grid[k] - grid[k-1]) * (dens[k] + dens[k-1]) / 2
	}
	if !(integral > 0) || math.IsInf(integral, 1) {
		for k := range dens {
			dens[k] = 1 / width
		}
		return
	}
	for k := range dens {
		dens[k] /= integral
	}
}

// check reports statistics that cannot have come from the accumulate stage
// for sp: bugs upstream, not properties of the data.
func (st Stats) check(sp Spec) error {
	if st.Count < 0 {
		return fmt.Errorf("negative count %d", st.Count)
	}
	if len(st.Terms) != sp.Terms {
		return fmt.Errorf("got %d basis sums, spec has %d terms", len(st.Terms), sp.Terms)
	}
	ks := basisUnits(1)
	for j, k := range st.Terms {
		// |K_j| ≤ Count·K*, compared without overflow.
		if a := noise.AbsInt64(k); k == math.MinInt64 || (st.Count < MaxEvents && a > st.Count*ks) {
			return fmt.Errorf("basis sum %d = %d exceeds %d events × %d units", j+1, k, st.Count, ks)
		}
	}
	return nil
}

// checkDensityCalibration reports why c must not be released: its Spec must
// be valid, its components must be the ones Calibrate builds for it
// (purposes, noise kinds, units, the grid of each scale and exactly the
// sensitivity of the regridded statistic on that grid), and together they
// must add at least the noise the Spec's (ε, δ) requires, with the claimed
// shares those Calibrate assigns (Laplace) and true. Scales are checked for sufficiency rather than recomputed, so
// a calibration with more noise than needed still releases. The relative
// slack of 1e-9 is the one checkCalibration uses.
func checkDensityCalibration(c Calibration) error {
	if v := c.verified; v != nil && v.spec == c.Spec && v.rho == c.Rho && slices.Equal(v.comps, c.Components) {
		return nil // exactly what Calibrate derived and checked
	}
	sp := c.Spec
	if err := sp.validate(); err != nil {
		return err
	}
	z, err := sp.Quantizer()
	if err != nil {
		return err
	}
	if len(c.Components) != 2 {
		return fmt.Errorf("%d components, want 2", len(c.Components))
	}
	cc, cs := c.Components[0], c.Components[1]
	noiseKind := sp.Noise.Discrete()
	if cc.Purpose != aggregate.PurposeCount || cs.Purpose != PurposeBasisSums || cc.Noise != noiseKind || cs.Noise != noiseKind {
		return fmt.Errorf("components are %s/%s and %s/%s, want %s/%s and %s/%s",
			cc.Purpose, cc.Noise, cs.Purpose, cs.Noise, aggregate.PurposeCount, noiseKind, PurposeBasisSums, noiseKind)
	}
	l, m := sp.MaxContributions, sp.Terms
	if cc.Quantum != 1 || cc.Granularity != 1 || cc.Sensitivity != float64(l) {
		return fmt.Errorf("count component has quantum %v, granularity %v, sensitivity %v; want 1, 1, %d",
			cc.Quantum, cc.Granularity, cc.Sensitivity, l)
	}
	if err := noise.CheckDiscreteScale("count scale", cc.Scale); err != nil {
		return err
	}
	if cs.Quantum != densityQuantum || !noise.ValidScale(cs.Scale) {
		return fmt.Errorf("basis sums component has quantum %v and scale %v, want quantum %v and a finite positive scale",
			cs.Quantum, cs.Scale, densityQuantum)
	}
	g := noise.OutputGrid(cs.Scale, densityQuantum)
	if cs.Granularity != g || cs.Scale/g > noise.MaxDiscreteScale {
		return fmt.Errorf("basis sums component has granularity %v, want %v for scale %v (at most 2^50 steps)", cs.Granularity, g, cs.Scale)
	}
	_, steps, err := densitySteps(noiseKind, l, z.MaxUnits(), m, g)
	if err != nil {
		return err
	}
	if cs.Sensitivity != g*steps {
		return fmt.Errorf("basis sums component has sensitivity %v, want %v", cs.Sensitivity, g*steps)
	}
	const slack = 1 + 1e-9
	if noiseKind == noise.DiscreteLaplace {
		e0, eS := float64(l)/cc.Scale, steps/(cs.Scale/g)
		switch {
		case cc.Delta != 0 || cs.Delta != 0 || c.Rho != 0:
			return fmt.Errorf("laplace components claim delta %v, %v and rho %v, want 0", cc.Delta, cs.Delta, c.Rho)
		case !close9(cc.Epsilon, sp.Epsilon*densityCountShare(noise.Laplace, m)) || !close9(cc.Epsilon+cs.Epsilon, sp.Epsilon):
			return fmt.Errorf("shares %v and %v are not the split of epsilon %v", cc.Epsilon, cs.Epsilon, sp.Epsilon)
		case e0 > cc.Epsilon*slack || eS > cs.Epsilon*slack:
			return fmt.Errorf("components give epsilon %v and %v, above their shares %v and %v", e0, eS, cc.Epsilon, cs.Epsilon)
		}
		return nil
	}
	total := densityRho(l, cc.Scale, cs)
	switch {
	case !close9(c.Rho, total):
		return fmt.Errorf("rho %v, want %v for these scales", c.Rho, total)
	case noise.ZCDPDelta(sp.Epsilon, total) > sp.Delta*slack:
		return fmt.Errorf("discrete gaussian scales give rho %v, delta %v > %v at epsilon %v", total, noise.ZCDPDelta(sp.Epsilon, total), sp.Delta, sp.Epsilon)
	case cc.Epsilon != sp.Epsilon || cs.Epsilon != sp.Epsilon:
		return fmt.Errorf("gaussian components claim epsilon %v and %v, want the release's %v", cc.Epsilon, cs.Epsilon, sp.Epsilon)
	case noise.ZCDPDelta(sp.Epsilon, countRho(l, cc.Scale)) > cc.Delta*slack || noise.ZCDPDelta(sp.Epsilon, termsRho(cs)) > cs.Delta*slack:
		return fmt.Errorf("gaussian components claim delta %v and %v, below their own", cc.Delta, cs.Delta)
	}
	return nil
}

// AutoTerms returns the number of cosine terms for `terms: auto` (SPEC
// section 4.3): m = ⌈n^{1/(2γ+1)}⌉, the smallest integer m ≥ 1 with
// m^{2γ+1} ≥ n (computed so that exact powers are not pushed up by
// rounding), capped at maxTerms. It is the order that balances the squared
// bias of a density of Sobolev smoothness γ, Σ_{j>m} β_j² = O(m^{−2γ}),
// against the sampling variance O(m/n), giving the minimax MISE rate
// n^{−2γ/(2γ+1)} (Efromovich 1999, ch. 3; Wasserman & Zhou 2010, §5). The
// privacy noise adds O(m³/(nε)²) (Laplace) or O(m²/(n²ρ)) (Gaussian), of
// lower order than m/n at this m once nε ≫ n^{2/(2γ+1)}.
//
// n must be a noisy count of an earlier window or a declared expected size,
// never this window's data (the noise must not depend on it). n ≤ 1 or NaN
// gives 1 and n = +Inf gives maxTerms; gamma that is not finite and
// positive means DefaultSmoothness, and maxTerms outside
// [1, MaxTerms] means MaxTerms. It is a pure function.
func AutoTerms(n float64, gamma float64, maxTerms int) int {
	if maxTerms < 1 || maxTerms > MaxTerms {
		maxTerms = MaxTerms
	}
	if !(gamma > 0) || math.IsInf(gamma, 1) {
		gamma = DefaultSmoothness
	}
	if !(n > 1) {
		return 1
	}
	p := 2*gamma + 1
	m := math.Ceil(math.Pow(n, 1/p))
	if m > float64(maxTerms)+1 {
		// Pow is accurate to a few ulps, so the exact ⌈n^{1/p}⌉ is at
		// least m − 1 > maxTerms.
		return maxTerms
	}
	// Fix the last-bit error of Pow: m must be the smallest integer with
	// m^p ≥ n.
	for m > 1 && math.Pow(m-1, p) >= n {
		m--
	}
	for math.Pow(m, p) < n {
		m++
	}
	return min(int(m), maxTerms)
}

// close9 reports whether a and b agree to a relative 1e-9.
func close9(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// clamp limits x to [lo, hi].
func clamp(x, lo, hi float64) float64 {
	return math.Max(lo, math.Min(x, hi))
}
