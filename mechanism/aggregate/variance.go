package aggregate

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file is the variance release, in the manner of Google's
// differential-privacy library (BoundedVariance, go/dpagg/variance.go): a
// noisy count, a noisy sum of the values centered at the midpoint of
// [Lo, Hi] and a noisy sum of their squares, combined into
//
//	variance = clamp(mean(y²) − mean(y)², 0, ((Hi − Lo)/2)²),  y = v − (Lo+Hi)/2,
//
// which is translation invariant, so centering changes nothing but the
// sensitivities. Unlike Google's float64 sums, all three statistics are
// exact fixed-point integers (as for sums: Casacuberta et al. 2022) with
// exact discrete noise, and the squares are centered a second time (around
// half their maximum), which halves their sensitivity, as the TODO in
// Google's code suggests. Per-key (group_by) releases are covered by the
// UnitBounds.

// PurposeCenteredSquares is the Component.Purpose of a variance release's
// noisy sum of centered squares Σ(s(v)) (see VarianceQuantizer).
const PurposeCenteredSquares = "centered_squares"

// SquareShift is the number of low bits dropped from k² when squares are
// quantized: the square of a value is carried in units of
// q₂ = q²·2^SquareShift (q the quantum of the values), so that one centered
// square is at most 2^30 units in magnitude, like one value.
const SquareShift = QuantumBits - 1

// MaxVarianceEvents is the number of kept events (of one key, or of all
// partials merged) up to which none of the three integer statistics of a
// variance release can overflow int64, in any order of accumulation or
// merging: each event adds 1 to the count and at most 2^30 in magnitude to
// each sum (VarianceQuantizer), and MaxVarianceEvents·2^30 < 2^63. It is
// MaxSumEvents. VarianceQuantizer.Add and VarianceStats.Merge refuse an
// addition that would overflow rather than wrap or saturate, which would
// release a statistic of another sensitivity.
const MaxVarianceEvents = MaxSumEvents

// VarianceQuantizer maps a value to the two integers a variance release
// adds per event:
//
//	k(v) = Units(v) of the mean's Quantizer: ⌊fl(clamp(v) − m)/q + 1/2⌋, m = Midpoint(Lo, Hi),
//	s(v) = ⌊k²/2^29 + 1/2⌋ − H,  H = ⌊K₂/2⌋,  K₂ = ⌊K*²/2^29 + 1/2⌋,
//
// with q the mean's quantum (a power of two, |k| ≤ K* = MaxUnits ≤ 2^30;
// see Quantizer). k·q is the centered value y to within q/2, and
// s·q₂ + H·q₂ is y² to within q₂/2 + |y|·q, with the square quantum
// q₂ = q²·2^29 (a power of two; about 2^-31 of the largest square).
//
// Bounds, with proof sketch: k² is exact in int64 (≤ 2^60) and the shift
// with rounding is exact (noise.RoundShift), so s is an exact function of
// k. It is non-decreasing in |k|, hence in [s(0), s(K*)] = [−H, K₂ − H]
// for every input, and |s| ≤ S* = K₂ − H = ⌈K₂/2⌉ ≤ 2^30 (K₂ ≤ 2^31):
// centering the squares at H halves their sensitivity from K₂ to ⌈K₂/2⌉.
// Release adds H·q₂ per (noisy) event back.
//
// Build one with NewVarianceQuantizer; the zero value is not usable.
type VarianceQuantizer struct {
	z         Quantizer
	q2        float64 // q₂ = q²·2^SquareShift
	maxSquare int64   // K₂
	half      int64   // H = ⌊K₂/2⌋
}

// NewVarianceQuantizer returns the quantizer of a variance release on
// [lo, hi]. It returns an error for bounds that are not finite with
// lo < hi and a finite width, and for bounds whose squares do not fit
// float64: the square quantum q₂ must be a normal float64 (at least
// 2^-1022, so half-widths above about 2^-480) and the largest square,
// about 2^31·q₂, finite (half-widths below about 2^495). The accumulate
// stage and CalibrateVariance both build theirs with this function, so
// they agree on the units.
func NewVarianceQuantizer(lo, hi float64) (VarianceQuantizer, error) {
	z, err := NewQuantizer(KindMean, lo, hi)
	if err != nil {
		return VarianceQuantizer{}, fmt.Errorf("variance %w", err)
	}
	e2 := 2*noise.Log2Exact(z.Quantum()) + SquareShift
	if e2 < -1022 || e2 > 1023-32 {
		return VarianceQuantizer{}, fmt.Errorf("variance quantizer: bounds [%v, %v]: their squares need a quantum of 2^%d, outside the normal float64 range (half-width too small or too large)", lo, hi, e2)
	}
	k := z.MaxUnits()
	k2 := noise.RoundShift(k*k, SquareShift)
	return VarianceQuantizer{z: z, q2: math.Ldexp(1, e2), maxSquare: k2, half: k2 / 2}, nil
}

// Quantum returns q, the value of one unit of the centered sum.
func (v VarianceQuantizer) Quantum() float64 { return v.z.Quantum() }

// SquareQuantum returns q₂ = q²·2^SquareShift, the value of one unit of the
// centered squares (a power of two).
func (v VarianceQuantizer) SquareQuantum() float64 { return v.q2 }

// Center returns m = Midpoint(Lo, Hi), the value subtracted before
// quantizing.
func (v VarianceQuantizer) Center() float64 { return v.z.Center() }

// SquareCenter returns H·q₂, the value subtracted from each square (exact:
// H ≤ 2^30 times a power of two).
func (v VarianceQuantizer) SquareCenter() float64 {
	return float64(v.half) * v.SquareQuantum()
}

// MaxUnits returns K*, the most one event moves the centered sum, in units
// of q.
func (v VarianceQuantizer) MaxUnits() int64 { return v.z.MaxUnits() }

// MaxSquareUnits returns S* = ⌈K₂/2⌉, the most one event moves the centered
// squares, in units of q₂.
func (v VarianceQuantizer) MaxSquareUnits() int64 { return v.maxSquare - v.half }

// Units returns k(x) and s(x) (see VarianceQuantizer). It clamps x itself,
// and returns an error for NaN and for a zero VarianceQuantizer.
func (v VarianceQuantizer) Units(x float64) (k, s int64, err error) {
	if k, err = v.z.Units(x); err != nil {
		return 0, 0, fmt.Errorf("variance: %w", err)
	}
	return k, noise.RoundShift(k*k, SquareShift) - v.half, nil
}

// Add accumulates one kept event with value x into st: Count += 1,
// SumUnits += k(x), SquareUnits += s(x). It is the check that refuses an
// event whose addition would overflow: it returns an error, leaving st
// unchanged, when any of the three would leave int64 (possible only beyond
// MaxVarianceEvents events), for NaN x, a nil st or a zero quantizer.
func (v VarianceQuantizer) Add(st *VarianceStats, x float64) error {
	if st == nil {
		return errors.New("variance add: nil stats")
	}
	k, s, err := v.Units(x)
	if err != nil {
		return fmt.Errorf("variance add: %w", err)
	}
	n, ok1 := noise.AddInt64(st.Count, 1)
	sum, ok2 := noise.AddInt64(st.SumUnits, k)
	sq, ok3 := noise.AddInt64(st.SquareUnits, s)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("variance add: statistics overflow int64 after %d events (limit %d)", st.Count, int64(MaxVarianceEvents))
	}
	st.Count, st.SumUnits, st.SquareUnits = n, sum, sq
	return nil
}

// VarianceStats are the exact sufficient statistics of a variance release
// over one window (of one key, with group_by): integers that merge by
// addition, so the result does not depend on the order of merging. The
// units are implied by the release's VarianceQuantizer, never carried with
// the data.
type VarianceStats struct {
	Count       int64 // kept events
	SumUnits    int64 // Σ k(v), in units of q
	SquareUnits int64 // Σ s(v), in units of q₂
}

// Merge adds o into s exactly. On overflow of any field it returns an
// error and leaves s unchanged (see MaxVarianceEvents).
func (s *VarianceStats) Merge(o VarianceStats) error {
	if s == nil {
		return errors.New("merge variance stats: nil receiver")
	}
	n, ok1 := noise.AddInt64(s.Count, o.Count)
	sum, ok2 := noise.AddInt64(s.SumUnits, o.SumUnits)
	sq, ok3 := noise.AddInt64(s.SquareUnits, o.SquareUnits)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("merge variance stats: overflow of int64 (%+v + %+v; more than %d events?)", *s, o, int64(MaxVarianceEvents))
	}
	s.Count, s.SumUnits, s.SquareUnits = n, sum, sq
	return nil
}

// check reports statistics that no window can produce with quantizer v:
// a negative count, |SumUnits| > Count·K*, or SquareUnits outside
// [−Count·H, Count·S*]. These are bugs upstream, not properties of data.
func (s VarianceStats) check(v VarianceQuantizer) error {
	if s.Count < 0 {
		return fmt.Errorf("negative count %d", s.Count)
	}
	n := big.NewInt(s.Count)
	within := func(x, lo, hi int64) bool {
		bx := big.NewInt(x)
		return bx.Cmp(new(big.Int).Mul(n, big.NewInt(lo))) >= 0 && bx.Cmp(new(big.Int).Mul(n, big.NewInt(hi))) <= 0
	}
	if !within(s.SumUnits, -v.MaxUnits(), v.MaxUnits()) {
		return fmt.Errorf("centered sum %d units is impossible for %d events of at most %d units", s.SumUnits, s.Count, v.MaxUnits())
	}
	if !within(s.SquareUnits, -v.half, v.MaxSquareUnits()) {
		return fmt.Errorf("centered squares %d units are impossible for %d events in [%d, %d] units", s.SquareUnits, s.Count, -v.half, v.MaxSquareUnits())
	}
	return nil
}

// VarianceSpec is a variance release's configuration, the only input to
// its calibration (never the data: SPEC section 1).
type VarianceSpec struct {
	// Noise is noise.Laplace (ε-DP) or noise.Gaussian ((ε, δ)-DP).
	Noise noise.Kind
	// Epsilon is the release's ε, finite and > 0; Delta its δ, in (0, 1)
	// for Gaussian noise and 0 for Laplace.
	Epsilon, Delta float64
	// Lo and Hi bound the field; values are clamped into [Lo, Hi].
	Lo, Hi float64
	// Bounds are the unit's contribution bounds: L, and with group_by L0
	// and the per-key cap c (MaxKeys 1 for a global release).
	Bounds UnitBounds
}

func (s VarianceSpec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: variance: "+format, append([]any{noise.ErrInvalidSpec}, args...)...)
	}
	if msg := noise.CheckPrivacyParams(s.Noise, s.Epsilon, s.Delta); msg != "" {
		return bad("%s", msg)
	}
	if math.IsNaN(s.Lo) || math.IsNaN(s.Hi) || math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) || !(s.Lo < s.Hi) || math.IsInf(s.Hi-s.Lo, 0) {
		return bad("needs finite bounds with lo < hi and a finite width, got [%v, %v]", s.Lo, s.Hi)
	}
	if err := s.Bounds.Validate(); err != nil {
		return fmt.Errorf("variance: %w", err)
	}
	return nil
}

// VarianceCalibration is a VarianceSpec with the noise that makes it
// private. Build it with CalibrateVariance: ReleaseVariance refuses one
// whose noise differs from what its Spec requires.
type VarianceCalibration struct {
	Spec VarianceSpec
	// Components are what the accountant charges, in order: [0] the count
	// (PurposeCount, unit 1), [1] the centered sum (PurposeCenteredSum,
	// unit q), [2] the centered squares (PurposeCenteredSquares, unit q₂).
	// The sums live on grids G ≥ their unit, as for sums (Calibrate).
	// With Laplace noise each component's Epsilon is its share ε/3 (they
	// add up to Spec.Epsilon, basic composition) and Delta is 0. With
	// Gaussian noise the components are calibrated jointly through zCDP,
	// as for the density release: each has Epsilon = Spec.Epsilon and the
	// Delta at which it alone is (ε, δ)-DP, and the release's guarantee
	// comes from Rho.
	Components []noise.Component
	// Rho is the release's zCDP ρ with Gaussian noise (the sum of the
	// components' Sensitivity²/(2·Scale²)); 0 with Laplace noise.
	Rho float64

	verified *verifiedVariance
}

type verifiedVariance struct {
	spec  VarianceSpec
	comps []noise.Component
	rho   float64
}

// varianceShare is each component's fraction of the budget (of ε with
// Laplace noise, of ρ with Gaussian noise); see CalibrateVariance.
const varianceShare = 1.0 / 3

// CalibrateVariance validates s and derives the noise of a variance
// release. It reads the spec only, never data, so the charge is
// data-independent.
//
// Guarantee: ReleaseVariance with the result is ε-DP (noise.Laplace) or
// (ε, δ)-DP (noise.Gaussian) under add/remove of one privacy unit (all of
// its events in the window; SPEC section 0), for the release of every key
// of the window together, given the UnitBounds (enforced upstream without
// looking at values) and values clamped to [Lo, Hi].
//
// Statistics, per key: the count n, the centered sum K = Σ k(v) (units of
// q) and the centered squares Q = Σ s(v) (units of q₂), exact integers
// (VarianceQuantizer).
//
// Sensitivity, with proof sketch. Adding or removing the unit changes only
// its own kept events (the bounds look at that unit's events only): n_k of
// them in key k, with n ≥ 0, n_k ≤ c', Σ n_k ≤ M = Bounds.Events() and at
// most L0 keys. Each event moves its key's count by 1, K by |k| ≤ K* and Q
// by |s| ≤ S* (VarianceQuantizer), so key k's statistics move by at most
// n_k, n_k·K* and n_k·S*. On a grid G = 2^j·u above the unit u, the sum is
// regridded to ⌊K/2^j + 1/2⌋ (exact shift; monotone, and
// ⌊x + d⌋ − ⌊x⌋ ≤ ⌈d⌉), which moves by at most ⌈n_k·K*/2^j⌉ ≤ n_k·a steps
// with a = ⌈K*/2^j⌉ (a = K* on the finest grid); likewise a₂ = ⌈S*/2^j⌉
// for the squares and a = 1 for the count. Over all keys the change of one
// statistic therefore has L1 norm at most M·a steps and squared L2 norm at
// most a²·Σ n_k² ≤ a²·Bounds.SquaredL2() (= a²·L² for a global release,
// attained by L events at a bound for the sum and at Lo or Hi, or the
// midpoint, for the squares).
//
// Discrete Laplace (pure ε-DP): each component gets ε/3 and independent
// noise of t = M·a/(ε/3) steps per key; the likelihood ratio of all the
// outputs is a product over keys and components, at most
// exp(Σ_components ‖Δ‖₁/t) ≤ e^ε (basic composition).
//
// Discrete Gaussian ((ε, δ)-DP through zCDP): a key's shift of n steps
// under N_Z(0, σ²) is (n²/(2σ²))-zCDP (CKS 2020, Thm. 4); Rényi
// divergences add over independent keys and components, so the release is
// ρ-zCDP with ρ = Σ_components a²·SquaredL2/(2σ²), and (ε, δ)-DP with
// δ = noise.ZCDPDelta(ε, ρ) (CKS 2020, Prop. 12). The exact
// one-dimensional curve of aggregate's mean does not cover a unit that
// moves several keys, so zCDP is used in every case. CalibrateVariance
// takes the largest ρ* meeting δ, gives each component ρ*/3, rounds σ up
// (to an integer number of grid steps for the sums, to 24 significant bits
// for the count) and re-checks δ at the rounded scales.
//
// Budget split: equal thirds, as Google's BoundedVariance. To first order
// the variance's error is (e_Q − 2μ·e_K − (m₂ − C − 2μ²)·e_n)/n, with μ
// and m₂ the mean and mean square of the centered values, C = H·q₂ ≈ X²/2
// and X = (Hi − Lo)/2; the noise scales are proportional to M·X²/2,
// M·X and M over the component's share. The optimal shares are ∝ the
// coefficients^{2/3} (Laplace) or ∝ the coefficients (Gaussian) and depend
// on μ and m₂, which calibration must not look at; at the design point
// |μ| = X/4, m₂ = X²/4 they are (0.35, 0.35, 0.29) and (0.36, 0.36, 0.27),
// and the equal split's error variance is within 3% of either optimum.
//
// Errors wrap noise.ErrInvalidSpec and name the offending field.
func CalibrateVariance(s VarianceSpec) (VarianceCalibration, error) {
	if err := s.validate(); err != nil {
		return VarianceCalibration{}, err
	}
	v, err := NewVarianceQuantizer(s.Lo, s.Hi)
	if err != nil {
		return VarianceCalibration{}, fmt.Errorf("%w: %w", noise.ErrInvalidSpec, err)
	}
	parts := []varPart{
		{PurposeCount, 1, 1},
		{PurposeCenteredSum, v.Quantum(), v.MaxUnits()},
		{PurposeCenteredSquares, v.SquareQuantum(), v.MaxSquareUnits()},
	}
	c := VarianceCalibration{Spec: s}
	if s.Noise == noise.Laplace {
		share := s.Epsilon * varianceShare
		for _, p := range parts {
			comp, err := p.calibrate(noise.DiscreteLaplace, s.Bounds, func(steps float64) float64 { return steps / share })
			if err != nil {
				return VarianceCalibration{}, fmt.Errorf("calibrate variance release: %w", err)
			}
			comp.Epsilon = share
			c.Components = append(c.Components, comp)
		}
	} else {
		if c.Components, c.Rho, err = calibrateVarianceGaussian(s, parts); err != nil {
			return VarianceCalibration{}, fmt.Errorf("calibrate variance release: %w", err)
		}
	}
	c.verified = &verifiedVariance{spec: s, comps: slices.Clone(c.Components), rho: c.Rho}
	return c, nil
}

// calibrateVarianceGaussian is CalibrateVariance for discrete Gaussian
// noise: ρ* split in thirds, scales rounded up, δ re-checked.
func calibrateVarianceGaussian(s VarianceSpec, parts []varPart) ([]noise.Component, float64, error) {
	// ρ* = 1/(2σ₁²) with σ₁ the zCDP σ of a unit-sensitivity query: the
	// largest ρ (to a relative 1e-12) with noise.ZCDPDelta(ε, ρ) ≤ δ.
	sigma1, err := noise.ZCDPGaussianSigma(s.Epsilon, s.Delta, 1)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", noise.ErrInvalidSpec, err)
	}
	share := varianceShare / (2 * sigma1 * sigma1)
	comps := make([]noise.Component, len(parts))
	for i, p := range parts {
		round := noise.RoundUpSignificand
		if !p.isCount() {
			round = math.Ceil
		}
		comps[i], err = p.calibrate(noise.DiscreteGaussian, s.Bounds, func(steps float64) float64 {
			return round(steps / math.Sqrt(2*share))
		})
		if err != nil {
			return nil, 0, err
		}
	}
	// Rounding up only lowers ρ, so this re-check fails only by the last
	// bits of the ρ* search or of the recorded sensitivities (rounded up);
	// one more step of each σ fixes that.
	for i := 0; ; i++ {
		if noise.ZCDPDelta(s.Epsilon, componentsRho(comps)) <= s.Delta {
			break
		}
		if i == 16 {
			return nil, 0, fmt.Errorf("%w: variance: rounded sigmas miss delta %v", noise.ErrInvalidSpec, s.Delta)
		}
		for j := range comps {
			g := comps[j].Granularity
			if parts[j].isCount() {
				comps[j].Scale = noise.NextSignificand(comps[j].Scale)
			} else {
				comps[j].Scale += g
				if noise.OutputGrid(comps[j].Scale, parts[j].quantum) != g {
					return nil, 0, fmt.Errorf("%w: variance: rounded %s sigma left its grid", noise.ErrInvalidSpec, comps[j].Purpose)
				}
			}
		}
	}
	for j := range comps {
		r := comps[j].Sensitivity / comps[j].Scale
		comps[j].Epsilon, comps[j].Delta = s.Epsilon, noise.ZCDPDelta(s.Epsilon, r*r/2)
		comps[j].ExpectedAbsError = comps[j].Granularity * noise.DiscreteGaussianAbsMean(comps[j].Scale/comps[j].Granularity)
	}
	return comps, componentsRho(comps), nil
}

// componentsRho returns Σ Sensitivity²/(2·Scale²), the zCDP ρ the
// accountant charges for discrete Gaussian components.
func componentsRho(comps []noise.Component) float64 {
	rho := 0.0
	for _, c := range comps {
		r := c.Sensitivity / c.Scale
		rho += r * r / 2
	}
	return rho
}

// varPart is one statistic of a variance release before calibration: its
// unit and the most one event moves it, in units.
type varPart struct {
	purpose  string
	quantum  float64
	perEvent int64
}

// isCount reports whether p is the count, which stays on the grid 1 (a
// sum whose quantum happens to be 1 is still regridded).
func (p varPart) isCount() bool { return p.purpose == PurposeCount }

// calibrate sets the grid, scale and exact sensitivity of one component:
// scaleSteps returns the noise scale in grid steps for the component's
// sensitivity in grid steps (L1 = M·a for Laplace, L2 = a·sqrt(SquaredL2)
// for Gaussian). The grid depends on the final scale and the scale on the
// grid through a, so, as in Calibrate, it is found by a short fixed-point
// iteration; counts stay on the grid 1.
func (p varPart) calibrate(kind noise.Kind, b UnitBounds, scaleSteps func(steps float64) float64) (noise.Component, error) {
	m, l2sq := b.Events(), b.SquaredL2()
	steps := func(a int64) (float64, error) {
		if kind == noise.DiscreteLaplace {
			if a > noise.MaxGridSteps/m {
				return 0, fmt.Errorf("%w: %s sensitivity %d×%d grid steps exceeds 2^53 (max contributions too large?)", noise.ErrInvalidSpec, p.purpose, m, a)
			}
			return float64(m * a), nil
		}
		s := mulUp(float64(a), sqrtUp(l2sq))
		if s > noise.MaxGridSteps {
			return 0, fmt.Errorf("%w: %s sensitivity %v grid steps exceeds 2^53 (max contributions too large?)", noise.ErrInvalidSpec, p.purpose, s)
		}
		return s, nil
	}
	g := p.quantum
	if !p.isCount() {
		s0, err := steps(p.perEvent)
		if err != nil {
			return noise.Component{}, err
		}
		first := scaleSteps(s0) * p.quantum
		if !noise.ValidScale(first) {
			return noise.Component{}, fmt.Errorf("%w: %s noise scale %v is not finite and positive (epsilon too small?)", noise.ErrInvalidSpec, p.purpose, first)
		}
		g = noise.OutputGrid(first, p.quantum)
	}
	for range 4 {
		a := ceilShift(p.perEvent, noise.GridShift(g, p.quantum))
		st, err := steps(a)
		if err != nil {
			return noise.Component{}, err
		}
		t := scaleSteps(st)
		if !noise.ValidScale(t) || t > noise.MaxDiscreteScale {
			return noise.Component{}, fmt.Errorf("%w: %s noise scale %v grid steps is not finite, positive and at most 2^50 (epsilon too small?)", noise.ErrInvalidSpec, p.purpose, t)
		}
		if !p.isCount() {
			if g2 := noise.OutputGrid(g*t, p.quantum); g2 != g {
				g = g2
				continue
			}
		}
		c := noise.Component{Purpose: p.purpose, Noise: kind, Sensitivity: g * st, Scale: g * t, Quantum: p.quantum, Granularity: g}
		if kind == noise.DiscreteLaplace {
			c.ExpectedAbsError = g * noise.DiscreteLaplaceAbsMean(t)
		}
		return c, nil
	}
	return noise.Component{}, fmt.Errorf("%w: %s: the noise grid did not settle", noise.ErrInvalidSpec, p.purpose)
}

// ceilShift returns ⌈k/2^j⌉ for 0 < k ≤ 2^62 and j ≥ 0: 1 once 2^j ≥ k.
func ceilShift(k int64, j int) int64 {
	if j >= 62 {
		return 1
	}
	return (k + (int64(1)<<j - 1)) >> j
}

// mulUp returns the smallest float64 at least x·y (x, y ≥ 0): the
// product rounded to nearest, moved up one step when that rounding went
// down (detected exactly with FMA). A recorded sensitivity must not round
// below the true one.
func mulUp(x, y float64) float64 {
	p := x * y
	if math.FMA(x, y, -p) > 0 {
		p = math.Nextafter(p, math.Inf(1))
	}
	return p
}

// checkVariance reports why c must not be released: its Spec must be
// valid and its components exactly those CalibrateVariance derives for it,
// except that a larger Scale (more noise) is accepted.
func checkVariance(c VarianceCalibration) error {
	if v := c.verified; v != nil && v.spec == c.Spec && v.rho == c.Rho && slices.Equal(v.comps, c.Components) {
		return nil
	}
	want, err := CalibrateVariance(c.Spec)
	if err != nil {
		return err
	}
	if len(c.Components) != len(want.Components) {
		return fmt.Errorf("%d components, want %d", len(c.Components), len(want.Components))
	}
	for i, g := range c.Components {
		w := want.Components[i]
		if g.Purpose != w.Purpose || g.Noise != w.Noise || g.Quantum != w.Quantum || g.Granularity != w.Granularity || g.Sensitivity != w.Sensitivity {
			return fmt.Errorf("component %d is %s/%s (quantum %v, grid %v, sensitivity %v), want %s/%s (%v, %v, %v)",
				i, g.Purpose, g.Noise, g.Quantum, g.Granularity, g.Sensitivity, w.Purpose, w.Noise, w.Quantum, w.Granularity, w.Sensitivity)
		}
		if !(g.Scale >= w.Scale) || g.Scale > noise.MaxDiscreteScale*g.Granularity {
			return fmt.Errorf("component %d (%s) scale %v is below the calibrated %v (or above 2^50 grid steps)", i, g.Purpose, g.Scale, w.Scale)
		}
	}
	return nil
}

// VarianceResult is a released variance: noisy, post-processed statistics
// of one window (of one key). Everything but the three noisy statistics is
// post-processing of them.
type VarianceResult struct {
	// NoisyCount is ñ = n + Z₀, an integer, unclamped so it stays unbiased.
	NoisyCount float64
	// NoisySum is Σ(v − m) with noise on the component's grid (value units).
	NoisySum float64
	// NoisySquares is Σ((v − m)² − C) with noise, C = SquareCenter() (value
	// units, on the component's grid).
	NoisySquares float64
	// Mean is clamp(m + NoisySum/n̂, Lo, Hi), n̂ = max(ñ, 1).
	Mean float64
	// Variance is clamp(NoisySquares/n̂ + C − (NoisySum/n̂)², 0, ((Hi−Lo)/2)²)
	// (Google's BoundedVariance post-processing): the population variance
	// of the window's (quantized) values, with noise.
	Variance float64
	// MeanInterval95 and VarianceInterval95 are first-order (delta-method)
	// noise-only 95% half-widths, evaluated at the noisy estimates (see
	// ReleaseVariance), capped at Hi − Lo and ((Hi−Lo)/2)².
	MeanInterval95, VarianceInterval95 float64
}

// ReleaseVariance computes the release described by c from one key's
// exact statistics s, adding noise from n: the count, the centered sum and
// the centered squares each get independent exact discrete noise of their
// component's scale (noise.AddToCount, noise.AddToUnits: regridded by an
// exact shift, on the grid G), in that order. It satisfies the guarantee
// stated by CalibrateVariance when called once per key and window.
//
// Post-processing, with n̂ = max(ñ, 1), μ̂ = NoisySum/n̂ and
// â = NoisySquares/n̂ (both clamped to what centered values allow,
// [−X, X] and [−C, X² − C], for the intervals): the mean and variance as
// in VarianceResult. The variance's error is to first order
// (e_Q − 2μ·e_K − (a − 2μ²)·e_n)/n. VarianceInterval95 is
// 1.96·sqrt(σ_Q² + 4μ̂²σ_K² + (â − 2μ̂²)²σ_n²)/n̂ for Gaussian noise and,
// for Laplace noise, by a union bound over the three components,
// (w_Q + 2|μ̂|·w_K + |â − 2μ̂²|·w_n)/n̂ with w the exact half-width at which
// each component's discrete Laplace noise (plus G/2 of regridding) exceeds
// with probability at most 1/60. MeanInterval95 is the same for
// (e_K − μ·e_n)/n, with tails 1/40 for Laplace. Both are approximations
// (first order in 1/n, evaluated at noisy values), as for the mean.
//
// It returns an error, and releases nothing, for a nil n, a calibration
// that does not fit its spec, statistics no window can produce (see
// VarianceStats.check), a failed draw or an overflow.
func ReleaseVariance(c VarianceCalibration, s VarianceStats, n noise.Sampler) (VarianceResult, error) {
	if n == nil {
		return VarianceResult{}, errors.New("release variance: nil noise")
	}
	if err := checkVariance(c); err != nil {
		return VarianceResult{}, fmt.Errorf("release variance: calibration does not fit its spec (build it with CalibrateVariance): %w", err)
	}
	v, err := NewVarianceQuantizer(c.Spec.Lo, c.Spec.Hi)
	if err != nil {
		return VarianceResult{}, fmt.Errorf("release variance: %w", err)
	}
	if err := s.check(v); err != nil {
		return VarianceResult{}, fmt.Errorf("release variance: %w", err)
	}
	cn, ck, cq := c.Components[0], c.Components[1], c.Components[2]
	var r VarianceResult
	if r.NoisyCount, err = noise.AddToCount(n, cn, s.Count); err != nil {
		return VarianceResult{}, fmt.Errorf("release variance: %w", err)
	}
	if r.NoisySum, err = noise.AddToUnits(n, ck, s.SumUnits); err != nil {
		return VarianceResult{}, fmt.Errorf("release variance: %w", err)
	}
	if r.NoisySquares, err = noise.AddToUnits(n, cq, s.SquareUnits); err != nil {
		return VarianceResult{}, fmt.Errorf("release variance: %w", err)
	}
	sp := c.Spec
	x := (sp.Hi - sp.Lo) / 2
	maxVar := x * x
	center2 := v.SquareCenter()
	nHat := math.Max(r.NoisyCount, 1)
	r.Mean = clamp(v.Center()+r.NoisySum/nHat, sp.Lo, sp.Hi)
	r.Variance = clamp(r.NoisySquares/nHat+center2-(r.NoisySum/nHat)*(r.NoisySum/nHat), 0, maxVar)

	mu := clamp(r.NoisySum/nHat, -x, x)
	a := clamp(r.NoisySquares/nHat, -center2, maxVar-center2)
	coefN := a - 2*mu*mu
	if cn.Noise == noise.DiscreteGaussian {
		r.MeanInterval95 = noise.NormalQ975 * math.Hypot(ck.Scale, mu*cn.Scale) / nHat
		sd := math.Sqrt(cq.Scale*cq.Scale + 4*mu*mu*ck.Scale*ck.Scale + coefN*coefN*cn.Scale*cn.Scale)
		r.VarianceInterval95 = noise.NormalQ975 * sd / nHat
	} else {
		r.MeanInterval95 = (varianceLaplaceHalfWidth(ck, 1.0/40) + math.Abs(mu)*varianceLaplaceHalfWidth(cn, 1.0/40)) / nHat
		r.VarianceInterval95 = (varianceLaplaceHalfWidth(cq, 1.0/60) + 2*math.Abs(mu)*varianceLaplaceHalfWidth(ck, 1.0/60) +
			math.Abs(coefN)*varianceLaplaceHalfWidth(cn, 1.0/60)) / nHat
	}
	r.MeanInterval95 = math.Min(r.MeanInterval95, sp.Hi-sp.Lo)
	r.VarianceInterval95 = math.Min(r.VarianceInterval95, maxVar)
	return r, nil
}

// varianceLaplaceHalfWidth returns G·m (+ G/2 when the statistic was regridded,
// G > Quantum) with m the smallest integer such that the discrete Laplace
// noise Z of comp (t = Scale/G grid steps) has
// P(|Z| > m) = 2·e^{−(m+1)/t}/(1 + e^{−1/t}) ≤ p.
func varianceLaplaceHalfWidth(comp noise.Component, p float64) float64 {
	g := comp.Granularity
	t := comp.Scale / g
	tail := func(m float64) float64 { return 2 * math.Exp(-(m+1)/t) / (1 + math.Exp(-1/t)) }
	m := math.Max(math.Ceil(t*math.Log(2/(p*(1+math.Exp(-1/t)))))-1, 0)
	for m > 0 && tail(m-1) <= p {
		m--
	}
	for tail(m) > p {
		m++
	}
	w := g * m
	if g > comp.Quantum {
		w += g / 2
	}
	return w
}

// Describe says what a variance release computes, for `dpstream explain`.
func (c VarianceCalibration) Describe() string {
	return fmt.Sprintf("variance on [%g, %g]: noisy count, centered sum and centered squares, a third of the budget each", c.Spec.Lo, c.Spec.Hi)
}

// Accuracy is the expected error of the variance for n events of a key,
// to first order and for values near the midpoint (μ ≈ 0, small spread),
// where the error is about (e_Q + C·e_n)/n: the squares' noise and the
// count's noise times C = SquareCenter() ≈ ((Hi−Lo)/2)²/2.
func (c VarianceCalibration) Accuracy() string {
	if len(c.Components) != 3 {
		return "—"
	}
	v, err := NewVarianceQuantizer(c.Spec.Lo, c.Spec.Hi)
	if err != nil {
		return "—"
	}
	e := c.Components[2].ExpectedAbsError + v.SquareCenter()*c.Components[0].ExpectedAbsError
	return fmt.Sprintf("≈ %.3g/n for the variance of n events (first order)", e)
}
