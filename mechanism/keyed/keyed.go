// Package keyed releases per-key aggregates: for every key of a window (the
// values of a group_by field), the number of kept events, the sum of a
// clamped field or its mean, each with its own exact discrete noise.
//
// # Contribution bounds
//
// Per window a privacy unit keeps at most L events (the stream's
// max_events_per_window, its first L by offset), contributes to at most L0
// keys (max_keys: the first L0 distinct keys of its kept events, by
// offset) and counts at most c events in one key (per_key, ≤ L: its first
// c there, by offset). The accumulate stage and the kind's statistic
// enforce these by the order of a unit's own events alone, never by their
// values, so removing a unit changes no other unit's kept events. A unit
// thus changes the vector of per-key statistics in at most
// m = min(L0, L') keys, by e_j ≤ c events in key j with Σ_j e_j ≤ L',
// L' = min(L, L0·c) (Bounds.Events, Bounds.Keys).
//
// # Guarantee
//
// ε-DP (laplace) or (ε, δ)-DP (gaussian) for the released vector over the
// keys in a key set fixed independently of the unit (public keys, or keys
// selected privately by package selection, whose cost is charged
// separately), under add/remove of one privacy unit (all its events in the
// window). A mean composes its count and its centered sum, each with half
// of ε (and δ).
//
// # Sensitivity, with proof sketch
//
// Every statistic is an exact integer per key: a count (unit 1) or a
// fixed-point sum K_j in units q of an aggregate.Quantizer (each clamped
// value quantized to k ∈ [−K*, K*], K* = MaxUnits). A release rounds K_j to
// the output grid G = q·r, r = 2^j, as K_G = ⌊K_j/r + 1/2⌋ (aggregate's
// rounding); neighbours' K_G in key j differ by at most d_j = ⌈e_j·K*/r⌉
// grid steps (⌊x + y⌋ − ⌊x⌋ ≤ ⌈y⌉), and d_j = e_j·K* exactly when r = 1.
//
//   - L1: Σ_j d_j ≤ S1 := L'·K* for r = 1, and ⌈L'·K*/r⌉ + m − 1 for r ≥ 2
//     (Σ_{i≤m} ⌈x_i⌉ ≤ ⌈Σ x_i⌉ + m − 1). The discrete Laplace of scale
//     t = S1/ε per key then gives a likelihood ratio Π_j e^{d_j/t} ≤ e^ε.
//   - L2: d_j ≤ D_c := ⌈c·K*/r⌉ (c·K* for r = 1) and Σ_j d_j ≤ S1; Σ_j d_j²
//     is convex, so its maximum over that polytope is at a vertex:
//     ⌊S1/D_c⌋·D_c² + (S1 mod D_c)² (for counts ⌊L'/c⌋·c² + (L' mod c)²,
//     the histogram's per-cell cap bound). When m = 1 (L0 = 1 or L' = 1) a
//     unit moves a single key by at most S1 steps and the discrete
//     Gaussian's exact one-dimensional (ε, δ) curve applies (Canonne, Kamath
//     & Steinke 2020, Thm. 7); otherwise the vector is calibrated through
//     zCDP, ρ = Δ2²/(2σ²), which composes exactly over the independent keys
//     (CKS 2020, Thm. 4), converted to (ε, δ) by CKS 2020 Prop. 12.
//
// Component.Sensitivity records G·S1 (Laplace, and Gaussian with m = 1) or
// G·√(L2 bound) rounded up (Gaussian, m ≥ 2), so the accountant's
// discrete_laplace and discrete_gaussian curves charge at least the true
// loss.
//
// Sources: the Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006),
// the discrete Gaussian (Canonne, Kamath & Steinke 2020), and the L0/L∞
// contribution bounding of per-partition aggregates in Google's
// differential-privacy library and Privacy on Beam (Wilson et al. 2020,
// "Differentially private SQL with bounded user contribution").
package keyed

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// Metric is what a per-key release computes for each key.
type Metric string

// The metrics.
const (
	Count Metric = "count" // kept events of the key
	Sum   Metric = "sum"   // sum of a clamped field over the key's kept events
	Mean  Metric = "mean"  // mean of a clamped field over the key's kept events
)

// Purposes of the components (schema.NoiseComponent.Purpose).
const (
	PurposeCounts       = "key_counts"        // the per-key counts
	PurposeSums         = "key_sums"          // the per-key sums
	PurposeCenteredSums = "key_centered_sums" // the per-key centered sums of a mean
)

// Bounds are a unit's contribution bounds per window (see the package
// documentation).
type Bounds struct {
	MaxEvents int // L: events a unit keeps per window
	MaxKeys   int // L0: keys a unit contributes to per window
	PerKey    int // c: events of a unit counted in one key, 1..L
}

// Events returns L' = min(L, L0·c), the most events one unit adds over all
// keys. It compares L0 with ⌈L/c⌉ rather than forming L0·c, which could
// wrap around (max_keys has no upper bound) and understate L'.
func (b Bounds) Events() int {
	if b.PerKey >= 1 && b.MaxKeys < (b.MaxEvents+b.PerKey-1)/b.PerKey {
		return b.MaxKeys * b.PerKey // < L: no overflow
	}
	return b.MaxEvents
}

// Keys returns m = min(L0, L'), the most keys one unit changes.
func (b Bounds) Keys() int { return min(b.MaxKeys, b.Events()) }

func (b Bounds) validate() error {
	switch {
	case b.MaxEvents < 1:
		return fmt.Errorf("max events per window must be >= 1, got %d", b.MaxEvents)
	case b.MaxKeys < 1:
		return fmt.Errorf("max_keys must be >= 1, got %d", b.MaxKeys)
	case b.PerKey < 1 || b.PerKey > b.MaxEvents:
		return fmt.Errorf("the per-key cap must be in [1, %d] (at most max_events_per_window), got %d", b.MaxEvents, b.PerKey)
	}
	return nil
}

// Spec is a per-key release's configuration, the only input to
// calibration.
type Spec struct {
	Metric  Metric
	Noise   noise.Kind // noise.Laplace or noise.Gaussian
	Epsilon float64
	Delta   float64
	// Lo and Hi bound the field's values (sum and mean; zero for count).
	Lo, Hi float64
	Bounds Bounds
}

// Calibration is a Spec with the noise that makes it private; build it
// with Calibrate.
type Calibration struct {
	Spec Spec
	// Components are the noise additions, per key: the counts, the sums,
	// or a mean's counts then centered sums.
	Components []noise.Component
	// Quantizer is the fixed-point quantizer of a sum's or a mean's values
	// (the zero Quantizer for a count): the statistic adds
	// Quantizer.Units of each clamped value.
	Quantizer aggregate.Quantizer
}

// Calibrate validates s and derives its noise (see the package
// documentation for the guarantee and the sensitivities). It reads the
// Spec only, never data. Errors wrap noise.ErrInvalidSpec.
func Calibrate(s Spec) (Calibration, error) {
	bad := func(format string, args ...any) (Calibration, error) {
		return Calibration{}, fmt.Errorf("%w: "+format, append([]any{noise.ErrInvalidSpec}, args...)...)
	}
	if msg := noise.CheckPrivacyParams(s.Noise, s.Epsilon, s.Delta); msg != "" {
		return bad("%s", msg)
	}
	if err := s.Bounds.validate(); err != nil {
		return bad("%v", err)
	}
	c := Calibration{Spec: s}
	part := func(purpose string, q float64, eps, delta float64) noise.Component {
		return noise.Component{Purpose: purpose, Noise: s.Noise.Discrete(), Quantum: q, Epsilon: eps, Delta: delta}
	}
	type planned struct {
		comp  noise.Component
		kstar int64
	}
	var plan []planned
	switch s.Metric {
	case Count:
		if s.Lo != 0 || s.Hi != 0 {
			return bad("a count takes no bounds, got [%v, %v]", s.Lo, s.Hi)
		}
		plan = []planned{{part(PurposeCounts, 1, s.Epsilon, s.Delta), 1}}
	case Sum, Mean:
		ak := aggregate.KindSum
		if s.Metric == Mean {
			ak = aggregate.KindMean
		}
		z, err := aggregate.NewQuantizer(ak, s.Lo, s.Hi)
		if err != nil {
			return bad("%v", err)
		}
		c.Quantizer = z
		if s.Metric == Sum {
			plan = []planned{{part(PurposeSums, z.Quantum(), s.Epsilon, s.Delta), z.MaxUnits()}}
		} else {
			plan = []planned{
				{part(PurposeCounts, 1, s.Epsilon/2, s.Delta/2), 1},
				{part(PurposeCenteredSums, z.Quantum(), s.Epsilon/2, s.Delta/2), z.MaxUnits()},
			}
		}
	default:
		return bad("unknown metric %q (want count, sum or mean)", s.Metric)
	}
	for _, p := range plan {
		comp, err := calibrate(p.comp, p.kstar, s.Bounds)
		if err != nil {
			return Calibration{}, fmt.Errorf("calibrate per-key %s: %w", s.Metric, err)
		}
		c.Components = append(c.Components, comp)
	}
	return c, nil
}

// steps returns S1 and D_c, in grid steps of G = q·2^j, for kstar units per
// event (see the package documentation), and false when they exceed
// noise.MaxGridSteps.
func steps(b Bounds, kstar int64, j int) (s1, dc int64, ok bool) {
	s1, ok1 := noise.UnitSteps(b.Events(), kstar, j)
	dc, ok2 := noise.UnitSteps(min(b.PerKey, b.Events()), kstar, j)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	if j > 0 {
		s1 += int64(b.Keys() - 1)
	}
	return s1, min(dc, s1), s1 <= noise.MaxGridSteps
}

// l2Up returns the smallest float64 at least √(⌊s1/dc⌋·dc² + (s1 mod dc)²),
// the L2 bound of the package documentation, computed exactly.
func l2Up(s1, dc int64) float64 {
	n, r := big.NewInt(s1/dc), big.NewInt(s1%dc)
	d := big.NewInt(dc)
	sq := new(big.Int).Mul(n, new(big.Int).Mul(d, d))
	sq.Add(sq, new(big.Int).Mul(r, r))
	root := new(big.Int).Sqrt(sq) // ⌊√sq⌋
	if new(big.Int).Mul(root, root).Cmp(sq) != 0 {
		root.Add(root, big.NewInt(1))
	}
	f, acc := new(big.Float).SetInt(root).Float64()
	if acc == big.Below {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// calibrate sets c's grid, scale and sensitivity for a statistic whose
// events each move it by at most kstar units of c.Quantum.
func calibrate(c noise.Component, kstar int64, b Bounds) (noise.Component, error) {
	q := c.Quantum
	onGrid := c.Purpose != PurposeCounts
	rough := float64(b.Events()) * float64(kstar) * q
	if !noise.ValidScale(rough) {
		return noise.Component{}, fmt.Errorf("%w: %s sensitivity %v is not finite and positive (bounds too large?)", noise.ErrInvalidSpec, c.Purpose, rough)
	}
	first := rough / c.Epsilon
	if c.Noise == noise.DiscreteGaussian {
		sc, err := noise.AnalyticGaussianSigma(c.Epsilon, c.Delta, rough)
		if err != nil {
			return noise.Component{}, fmt.Errorf("%w: %s: %w", noise.ErrInvalidSpec, c.Purpose, err)
		}
		first = sc
	}
	if !noise.ValidScale(first) {
		return noise.Component{}, fmt.Errorf("%w: %s noise scale %v is not finite and positive (epsilon too small?)", noise.ErrInvalidSpec, c.Purpose, first)
	}
	g := q
	if onGrid {
		g = noise.OutputGrid(first, q)
	}
	for range 4 {
		s1, dc, ok := steps(b, kstar, noise.GridShift(g, q))
		if !ok {
			return noise.Component{}, fmt.Errorf("%w: %s sensitivity of %d events × %d units of %v is more than 2^53 grid steps of %v", noise.ErrInvalidSpec, c.Purpose, b.Events(), kstar, q, g)
		}
		sigma, sens, err := gridScale(c, s1, dc, b.Keys())
		if err != nil {
			return noise.Component{}, err
		}
		if onGrid {
			if g2 := noise.OutputGrid(g*sigma, q); g2 != g {
				g = g2
				continue
			}
		}
		c.Scale, c.Sensitivity, c.Granularity = g*sigma, g*sens, g
		if c.Noise == noise.DiscreteGaussian {
			c.ExpectedAbsError = g * noise.DiscreteGaussianAbsMean(sigma)
		} else {
			c.ExpectedAbsError = g * noise.DiscreteLaplaceAbsMean(sigma)
		}
		return c, nil
	}
	return noise.Component{}, fmt.Errorf("%w: %s: the noise grid did not settle (scale near a power of two?)", noise.ErrInvalidSpec, c.Purpose)
}

// gridScale returns the noise scale in grid steps and the sensitivity the
// charge records (in grid steps) for L1 bound s1, per-key bound dc and at
// most keys changed keys.
func gridScale(c noise.Component, s1, dc int64, keys int) (scale, sens float64, err error) {
	tooLarge := func(v float64) error {
		return fmt.Errorf("%w: %s noise scale %v grid steps is not finite, positive and at most 2^50 (epsilon too small?)", noise.ErrInvalidSpec, c.Purpose, v)
	}
	if c.Noise == noise.DiscreteLaplace {
		t := float64(s1) / c.Epsilon
		if !noise.ValidScale(t) || t > noise.MaxDiscreteScale {
			return 0, 0, tooLarge(t)
		}
		return t, float64(s1), nil
	}
	round, next := noise.RoundUpSignificand, noise.NextSignificand
	if c.Purpose != PurposeCounts {
		round, next = math.Ceil, func(x float64) float64 { return x + 1 }
	}
	var sigma float64
	var deltaAt func(sigma float64) float64
	if keys == 1 {
		sens = float64(s1)
		sigma, err = noise.DiscreteGaussianSigma(c.Epsilon, c.Delta, s1)
		deltaAt = func(s float64) float64 { return noise.CachedDiscreteGaussianDelta(c.Epsilon, s, s1) }
	} else {
		sens = l2Up(s1, dc)
		sigma, err = noise.ZCDPGaussianSigma(c.Epsilon, c.Delta, sens)
		deltaAt = func(s float64) float64 { return noise.ZCDPDelta(c.Epsilon, sens*sens/(2*s*s)) }
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s: %w", noise.ErrInvalidSpec, c.Purpose, err)
	}
	sigma = round(sigma)
	for i := 0; deltaAt(sigma) > c.Delta; i++ {
		if i == 16 {
			return 0, 0, fmt.Errorf("%w: %s: rounded sigma %v misses delta %v", noise.ErrInvalidSpec, c.Purpose, sigma, c.Delta)
		}
		sigma = next(sigma)
	}
	if !noise.ValidScale(sigma) || sigma > noise.MaxDiscreteScale {
		return 0, 0, tooLarge(sigma)
	}
	return sigma, sens, nil
}

// Stats are one key's exact statistics: its kept events and, for a sum or
// a mean, the fixed-point sum of its clamped values (centered on the
// Quantizer's center for a mean) in Quantizer units.
type Stats struct {
	Count int64
	Sum   int64
}

// Result is one key's released value and the half-width of a 95% noise
// interval around it, computed from public parameters (and, for a mean,
// from the noisy count).
type Result struct {
	Value      float64
	Interval95 float64
}

// Release adds fresh noise to one key's statistics and returns its value.
// A key absent from the data (a public key no unit reported) is released
// from zero Stats: noise only. Each call draws its own noise, so the keys
// of a window are released independently.
func (c Calibration) Release(n noise.Sampler, s Stats) (Result, error) {
	if n == nil {
		return Result{}, errors.New("keyed: nil noise")
	}
	if s.Count < 0 {
		return Result{}, fmt.Errorf("keyed: negative count %d", s.Count)
	}
	if len(c.Components) == 0 {
		return Result{}, errors.New("keyed: release of an uncalibrated spec (build it with Calibrate)")
	}
	comp := c.Components[0]
	switch c.Spec.Metric {
	case Count:
		v, err := noise.AddToCount(n, comp, s.Count)
		return Result{Value: v, Interval95: aggregate.HalfWidth95(comp)}, err
	case Sum:
		v, err := noise.AddToUnits(n, comp, s.Sum)
		return Result{Value: v, Interval95: aggregate.HalfWidth95(comp)}, err
	}
	cs := c.Components[1]
	nNoisy, err := noise.AddToCount(n, comp, s.Count)
	if err != nil {
		return Result{}, err
	}
	sHat, err := noise.AddToUnits(n, cs, s.Sum)
	if err != nil {
		return Result{}, err
	}
	lo, hi := c.Spec.Lo, c.Spec.Hi
	mid, h := aggregate.Midpoint(lo, hi), (hi-lo)/2
	nHat := math.Max(nNoisy, 1)
	v := math.Min(math.Max(mid+sHat/nHat, lo), hi)
	mu := math.Abs(math.Min(math.Max(sHat/nHat, -h), h))
	var t float64
	if comp.Noise == noise.DiscreteGaussian {
		t = noise.NormalQ975 * math.Hypot(cs.Scale, mu*comp.Scale) / nHat
	} else {
		t = noise.LaplaceQ975 * (cs.Scale + mu*comp.Scale) / nHat
	}
	return Result{Value: v, Interval95: math.Min(t, hi-lo)}, nil
}

// ExpectedAbsError is E|noise| of one key's count or sum; for a mean, of
// its count (the mean's error depends on the key's true count, which
// calibration must not see; Components has the centered sums' too).
func (c Calibration) ExpectedAbsError() float64 {
	if len(c.Components) == 0 {
		return 0
	}
	return c.Components[0].ExpectedAbsError
}
