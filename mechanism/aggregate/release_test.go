package aggregate

import (
	"errors"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// scriptedNoise returns preset integer noise values in order and records the
// distribution and scale of every request, so post-processing can be
// checked by hand. It fails once it runs out.
type scriptedNoise struct {
	values []int64
	calls  []noiseCall
}

type noiseCall struct {
	kind  noise.Kind
	scale float64 // in grid steps, as the sampler sees it
}

func (s *scriptedNoise) next(kind noise.Kind, scale float64) (int64, error) {
	s.calls = append(s.calls, noiseCall{kind, scale})
	if len(s.values) == 0 {
		return 0, errors.New("scripted noise exhausted")
	}
	v := s.values[0]
	s.values = s.values[1:]
	return v, nil
}

func (s *scriptedNoise) DiscreteLaplace(t float64) (int64, error) {
	return s.next(noise.DiscreteLaplace, t)
}

func (s *scriptedNoise) DiscreteGaussian(sigma float64) (int64, error) {
	return s.next(noise.DiscreteGaussian, sigma)
}

func mustCalibrate(t *testing.T, s Spec) Calibration {
	t.Helper()
	c, err := Calibrate(s)
	if err != nil {
		t.Fatalf("Calibrate(%+v): %v", s, err)
	}
	return c
}

// dlapAbs is E|Z| = 2q/(1 − q²) of the discrete Laplace of scale t, written
// with expm1 so that it stays accurate at t ≈ 2^40.
func dlapAbs(t float64) float64 {
	return 2 * math.Exp(-1/t) / -math.Expm1(-2/t)
}

// significantBits returns the number of significant bits of x > 0.
func significantBits(x float64) int {
	frac, _ := math.Frexp(x)
	return 53 - bits.TrailingZeros64(uint64(math.Ldexp(frac, 53)))
}

// TestCalibrate checks the Laplace components against values derived by
// hand: b = Δ/ε on the integers; for sums the quantum q is 2^-30 times the
// smallest power of two ≥ the bounds' magnitude, the grid G the larger of
// q and the smallest power of two ≥ (Δ/ε)·2^-40, and the sensitivity
// G·⌈L·K*·q/G⌉ with K* the units of the bound of larger magnitude.
func TestCalibrate(t *testing.T) {
	// 0.1 is not a multiple of its quantum 2^-33: its units are
	// round(0.1·2^33) = round(858993459.2000000477) = 858993459, so the
	// exact sensitivity 3·858993459·2^-33 is just below 3·0.1.
	const k01 = 858993459
	sens01 := 3 * k01 * 0x1p-33
	tests := []struct {
		name string
		spec Spec
		want []noise.Component
	}{
		{
			name: "count: t = L/ε = 3/0.5 on the integers",
			spec: Spec{Kind: KindCount, Noise: noise.Laplace, Epsilon: 0.5, MaxContributions: 3},
			want: []noise.Component{{Purpose: PurposeCount, Noise: noise.DiscreteLaplace, Sensitivity: 3, Scale: 6, Quantum: 1, Granularity: 1, Epsilon: 0.5}},
		},
		{
			// q = 2^-26 (10 ≤ 2^4), K* = 10·2^26; b = 20 has grid 2^-35 < q,
			// so G = q and t = 40·2^26/2 steps.
			name: "sum: Δ = L·max(|lo|,|hi|) = 40 exactly, on the quantum grid 2^-26",
			spec: Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 2, Lo: -10, Hi: 5, MaxContributions: 4},
			want: []noise.Component{{Purpose: PurposeSum, Noise: noise.DiscreteLaplace, Sensitivity: 40, Scale: 20, Quantum: 0x1p-26, Granularity: 0x1p-26, Epsilon: 2}},
		},
		{
			name: "sum: the exact sensitivity of the quantized sum, just below 3·0.1",
			spec: Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 0.1, MaxContributions: 3},
			want: []noise.Component{{Purpose: PurposeSum, Noise: noise.DiscreteLaplace, Sensitivity: sens01, Scale: sens01, Quantum: 0x1p-33, Granularity: 0x1p-33, Epsilon: 1}},
		},
		{
			// q = 2^-29 (2 ≤ 2^1), K* = 2^30, D = 3·2^42 units; b = 24576 =
			// 0.75·2^15 has grid 2^-25 = 16q, so S = 3·2^42/16 = 3·2^38
			// steps of 2^-25, and t = S/ε: Scale = Sensitivity = 3·2^13.
			name: "sum: grid coarser than the quantum (L = 3·2^12)",
			spec: Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: -1, Hi: 2, MaxContributions: 3 << 12},
			want: []noise.Component{{Purpose: PurposeSum, Noise: noise.DiscreteLaplace, Sensitivity: 3 << 13, Scale: 3 << 13, Quantum: 0x1p-29, Granularity: 0x1p-25, Epsilon: 1}},
		},
		{
			// D = 4999·k01 ≡ 3·3 ≡ 1 (mod 4); b ≈ 499.9 has grid 2^-31 = 4q,
			// so S = ⌈D/4⌉ = (D + 3)/4 steps of 2^-31.
			name: "sum: regridding rounds the sensitivity up to whole grid steps",
			spec: Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 0.1, MaxContributions: 4999},
			want: []noise.Component{{Purpose: PurposeSum, Noise: noise.DiscreteLaplace, Sensitivity: (4999*k01 + 3) / 4 * 0x1p-31,
				Scale: (4999*k01 + 3) / 4 * 0x1p-31, Quantum: 0x1p-33, Granularity: 0x1p-31, Epsilon: 1}},
		},
		{
			// Centered values in [−5, 5]: q = 2^-27, K* = 5·2^27.
			name: "mean: count (L, ε/2) and centered sum (L·(hi−lo)/2, ε/2)",
			spec: Spec{Kind: KindMean, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 10, MaxContributions: 2},
			want: []noise.Component{
				{Purpose: PurposeCount, Noise: noise.DiscreteLaplace, Sensitivity: 2, Scale: 4, Quantum: 1, Granularity: 1, Epsilon: 0.5},
				{Purpose: PurposeCenteredSum, Noise: noise.DiscreteLaplace, Sensitivity: 10, Scale: 20, Quantum: 0x1p-27, Granularity: 0x1p-27, Epsilon: 0.5},
			},
		},
		{
			name: "histogram: Δ1 = L whatever the bins",
			spec: Spec{Kind: KindHistogram, Noise: noise.Laplace, Epsilon: 0.25, Lo: 0, Hi: 120, Bins: 24, MaxContributions: 4},
			want: []noise.Component{{Purpose: PurposeBins, Noise: noise.DiscreteLaplace, Sensitivity: 4, Scale: 16, Quantum: 1, Granularity: 1, Epsilon: 0.25}},
		},
	}
	if !(sens01 < 3*0.1 && 3*0.1-sens01 < 3*0x1p-34) {
		t.Fatalf("test setup: sensitivity %v is not within 3·q/2 below 0.3", sens01)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCalibrate(t, tc.spec)
			if c.Spec != tc.spec {
				t.Errorf("Spec = %+v, want %+v", c.Spec, tc.spec)
			}
			if len(c.Components) != len(tc.want) {
				t.Fatalf("%d components, want %d", len(c.Components), len(tc.want))
			}
			for i, w := range tc.want {
				w.ExpectedAbsError = w.Granularity * dlapAbs(w.Scale/w.Granularity)
				if g := c.Components[i]; !close9(g.Scale, w.Scale) || !close9(g.ExpectedAbsError, w.ExpectedAbsError) ||
					g.Purpose != w.Purpose || g.Noise != w.Noise || g.Sensitivity != w.Sensitivity || g.Quantum != w.Quantum ||
					g.Granularity != w.Granularity || g.Epsilon != w.Epsilon || g.Delta != w.Delta {
					t.Errorf("component %d = %+v, want %+v", i, g, w)
				}
			}
			if want := c.Components[0].ExpectedAbsError; tc.spec.Kind != KindMean && c.ExpectedAbsError != want {
				t.Errorf("ExpectedAbsError = %v, want %v", c.ExpectedAbsError, want)
			}
			if tc.spec.Kind == KindMean && c.ExpectedAbsError != 0 {
				t.Errorf("mean ExpectedAbsError = %v, want 0", c.ExpectedAbsError)
			}
			checkShares(t, c)
		})
	}
}

// checkShares: the components' budget shares compose back to the spec's.
func checkShares(t *testing.T, c Calibration) {
	t.Helper()
	var eps, delta float64
	for _, comp := range c.Components {
		eps += comp.Epsilon
		delta += comp.Delta
	}
	if eps != c.Spec.Epsilon || delta != c.Spec.Delta {
		t.Errorf("shares add to (%v, %v), want (%v, %v)", eps, delta, c.Spec.Epsilon, c.Spec.Delta)
	}
}

// TestCalibrateGaussian checks the discrete Gaussian components by their
// defining properties: the right sensitivity and grid, a σ (in grid steps)
// at least the discrete calibration's and at most a rounding step above it,
// rounded as documented, and meeting its share of δ by the exact curve.
func TestCalibrateGaussian(t *testing.T) {
	// 4.3 ≤ 2^3: q = 2^-27, K* = round(4.3·2^27) = round(577136230.4) for
	// the sum; the mean's centered values lie in [−2, 2]: q = 2^-29,
	// K* = 2^30.
	const k43 = 577136230
	tests := []struct {
		name    string
		spec    Spec
		units   []float64 // L·K*: the sensitivity in units, per component
		quantum []float64
	}{
		{"count", Spec{Kind: KindCount, Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-5, MaxContributions: 2}, []float64{2}, []float64{1}},
		{"count, large L", Spec{Kind: KindCount, Noise: noise.Gaussian, Epsilon: 0.3, Delta: 1e-9, MaxContributions: 500}, []float64{500}, []float64{1}},
		{"sum", Spec{Kind: KindSum, Noise: noise.Gaussian, Epsilon: 0.7, Delta: 1e-7, Lo: -1, Hi: 4.3, MaxContributions: 3}, []float64{3 * k43}, []float64{0x1p-27}},
		{"sum on a coarser grid", Spec{Kind: KindSum, Noise: noise.Gaussian, Epsilon: 0.7, Delta: 1e-7, Lo: -1, Hi: 4.3, MaxContributions: 3001}, []float64{3001 * k43}, []float64{0x1p-27}},
		{"mean: (ε/2, δ/2) each", Spec{Kind: KindMean, Noise: noise.Gaussian, Epsilon: 2, Delta: 1e-6, Lo: -1, Hi: 3, MaxContributions: 5}, []float64{5, 5 << 30}, []float64{1, 0x1p-29}},
		{"histogram, L = 1: one bin moves by 1, exact curve", Spec{Kind: KindHistogram, Noise: noise.Gaussian, Epsilon: 0.5, Delta: 1e-8, Lo: 0, Hi: 1, Bins: 10, MaxContributions: 1}, []float64{1}, []float64{1}},
		{"histogram, L = 3: Δ2 = L through zCDP", Spec{Kind: KindHistogram, Noise: noise.Gaussian, Epsilon: 0.5, Delta: 1e-8, Lo: 0, Hi: 1, Bins: 10, MaxContributions: 3}, []float64{3}, []float64{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCalibrate(t, tc.spec)
			checkShares(t, c)
			for i, comp := range c.Components {
				if comp.Noise != noise.DiscreteGaussian {
					t.Errorf("component %d noise %q", i, comp.Noise)
				}
				q := tc.quantum[i]
				if comp.Quantum != q {
					t.Errorf("component %d: quantum %v, want %v", i, comp.Quantum, q)
				}
				g := q
				if onOutputGrid(comp) {
					g = math.Max(pow2AtLeast(comp.Scale*0x1p-40), q)
				}
				if comp.Granularity != g {
					t.Errorf("component %d: granularity %v, want %v", i, comp.Granularity, g)
				}
				if strings.Contains(tc.name, "coarser") && !(g > q) {
					t.Fatalf("test setup: component %d has grid %v = its quantum", i, g)
				}
				steps := math.Ceil(tc.units[i] * q / g) // exact: units < 2^53, q/g a power of two
				if comp.Sensitivity != g*steps {
					t.Errorf("component %d: sensitivity %v, want %v", i, comp.Sensitivity, g*steps)
				}
				sigma := comp.Scale / g
				spread := comp.Purpose == PurposeBins && steps >= 2
				need, err := noise.DiscreteGaussianSigma(comp.Epsilon, comp.Delta, int64(steps))
				deltaAt := func(s float64) float64 { return noise.DiscreteGaussianDelta(comp.Epsilon, s, int64(steps)) }
				if spread {
					need, err = noise.ZCDPGaussianSigma(comp.Epsilon, comp.Delta, steps)
					deltaAt = func(s float64) float64 { return noise.ZCDPDelta(comp.Epsilon, steps*steps/(2*s*s)) }
				}
				if err != nil {
					t.Fatal(err)
				}
				if onOutputGrid(comp) {
					if sigma != math.Trunc(sigma) || sigma < need || sigma > need+1 {
						t.Errorf("component %d: σ = %v grid steps, want ⌈%v⌉", i, sigma, need)
					}
				} else if sigma < need || sigma > need*(1+0x1p-22) || significantBits(sigma) > 24 {
					t.Errorf("component %d: σ = %v, want %v rounded up to 24 bits", i, sigma, need)
				}
				if got := deltaAt(sigma); got > comp.Delta {
					t.Errorf("component %d: δ at σ = %v is %v > %v", i, sigma, got, comp.Delta)
				}
				// E|Z|: brute force on the integers, σ·sqrt(2/π) on a
				// 2^40-step grid (relative error 1e-13 there).
				want := comp.Scale * math.Sqrt(2/math.Pi)
				if !onOutputGrid(comp) {
					tb := stattest.NewDGTable(sigma)
					want = 0
					for j, p := range tb.PMF {
						want += math.Abs(float64(int64(j)-tb.Off)) * p
					}
				}
				if math.Abs(comp.ExpectedAbsError-want) > 1e-9*want {
					t.Errorf("component %d: ExpectedAbsError %v, want %v", i, comp.ExpectedAbsError, want)
				}
			}
		})
	}
}

// TestComponentsMapToAccountant: every component maps to a valid
// accountant.Mechanism the way callers build it, and the accountant's pure
// ε for a discrete Laplace component is that component's share.
func TestComponentsMapToAccountant(t *testing.T) {
	for _, spec := range []Spec{
		{Kind: KindCount, Noise: noise.Laplace, Epsilon: 0.5, MaxContributions: 3},
		{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 0.1, MaxContributions: 3},
		{Kind: KindMean, Noise: noise.Laplace, Epsilon: 1, Lo: -3, Hi: 7.7, MaxContributions: 2},
		{Kind: KindHistogram, Noise: noise.Laplace, Epsilon: 0.2, Lo: 0, Hi: 1, Bins: 5, MaxContributions: 1},
		{Kind: KindCount, Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-6, MaxContributions: 3},
		{Kind: KindMean, Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-6, Lo: -3, Hi: 7.7, MaxContributions: 2},
		{Kind: KindHistogram, Noise: noise.Gaussian, Epsilon: 0.2, Delta: 1e-7, Lo: 0, Hi: 1, Bins: 5, MaxContributions: 1},
	} {
		c := mustCalibrate(t, spec)
		for _, comp := range c.Components {
			m := accountant.Mechanism{Kind: string(comp.Noise), Scale: comp.Scale, Sensitivity: comp.Sensitivity}
			if err := m.Validate(); err != nil {
				t.Errorf("%s/%s %s: %v", spec.Kind, spec.Noise, comp.Purpose, err)
				continue
			}
			if _, err := m.Curve(); err != nil {
				t.Errorf("%s/%s %s: curve: %v", spec.Kind, spec.Noise, comp.Purpose, err)
			}
			eps, pure := m.PureEpsilon()
			if pure != (comp.Noise == noise.DiscreteLaplace) {
				t.Errorf("%s/%s %s: accountant pure = %v", spec.Kind, spec.Noise, comp.Purpose, pure)
			}
			if pure && !(eps <= comp.Epsilon*(1+1e-12) && eps >= comp.Epsilon*(1-1e-12)) {
				t.Errorf("%s/%s %s: accountant charges ε0 = %v for a share of %v", spec.Kind, spec.Noise, comp.Purpose, eps, comp.Epsilon)
			}
		}
	}
}

func TestCalibrateErrors(t *testing.T) {
	ok := Spec{Kind: KindHistogram, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 1, Bins: 4, MaxContributions: 1}
	mod := func(f func(*Spec)) Spec { s := ok; f(&s); return s }
	tests := []struct {
		name    string
		spec    Spec
		mention string // a word the message must contain
	}{
		{"unknown kind", mod(func(s *Spec) { s.Kind = "median" }), "kind"},
		{"unknown noise", mod(func(s *Spec) { s.Noise = "cauchy" }), "noise"},
		{"component kind as config word", mod(func(s *Spec) { s.Noise = noise.DiscreteLaplace }), "noise"},
		{"zero epsilon", mod(func(s *Spec) { s.Epsilon = 0 }), "epsilon"},
		{"negative epsilon", mod(func(s *Spec) { s.Epsilon = -1 }), "epsilon"},
		{"NaN epsilon", mod(func(s *Spec) { s.Epsilon = math.NaN() }), "epsilon"},
		{"infinite epsilon", mod(func(s *Spec) { s.Epsilon = math.Inf(1) }), "epsilon"},
		{"tiny epsilon overflows scale", mod(func(s *Spec) { s.Epsilon = 1e-320 }), "scale"},
		{"scale beyond the samplers' 2^50", mod(func(s *Spec) { s.Epsilon = 1e-16 }), "scale"},
		{"gaussian scale beyond the samplers' 2^50", mod(func(s *Spec) { s.Noise, s.Delta, s.Epsilon = noise.Gaussian, 1e-20, 1e-16 }), "sigma"},
		{"delta with laplace", mod(func(s *Spec) { s.Delta = 1e-6 }), "delta"},
		{"gaussian without delta", mod(func(s *Spec) { s.Noise = noise.Gaussian }), "delta"},
		{"gaussian delta 1", mod(func(s *Spec) { s.Noise, s.Delta = noise.Gaussian, 1 }), "delta"},
		{"gaussian delta NaN", mod(func(s *Spec) { s.Noise, s.Delta = noise.Gaussian, math.NaN() }), "delta"},
		{"zero contributions", mod(func(s *Spec) { s.MaxContributions = 0 }), "contributions"},
		{"reversed bounds", mod(func(s *Spec) { s.Lo, s.Hi = 1, 0 }), "bounds"},
		{"empty bounds", mod(func(s *Spec) { s.Lo, s.Hi = 1, 1 }), "bounds"},
		{"NaN bound", mod(func(s *Spec) { s.Hi = math.NaN() }), "bounds"},
		{"infinite bound", mod(func(s *Spec) { s.Hi = math.Inf(1) }), "bounds"},
		{"overflowing width", mod(func(s *Spec) { s.Lo, s.Hi = -1e308, 1e308 }), "overflows"},
		{"zero bins", mod(func(s *Spec) { s.Bins = 0 }), "bins"},
		{"too many bins", mod(func(s *Spec) { s.Bins = MaxBins + 1 }), "bins"},
		{"bins on a sum", mod(func(s *Spec) { s.Kind = KindSum }), "bins"},
		{"bounds on a count", mod(func(s *Spec) { s.Kind, s.Bins = KindCount, 0 }), "bounds"},
		{"sum sensitivity overflows", Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 1e308, MaxContributions: 10}, "sensitivity"},
		// The grid is never finer than the quantum, so a huge ε alone no
		// longer makes too many steps; a huge L with it does: S = L·2^30 =
		// 2^54 steps of q.
		{"sum: too many grid steps", Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1e8, Lo: 0, Hi: 1, MaxContributions: 1 << 24}, "grid steps"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Calibrate(tc.spec)
			if err == nil {
				t.Fatalf("Calibrate(%+v) = %+v, want an error", tc.spec, c)
			}
			if !errors.Is(err, noise.ErrInvalidSpec) {
				t.Errorf("error %q does not wrap ErrInvalidSpec", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

// TestCenteringNeverBetterForSum checks numerically the inequality behind
// releasing sums uncentered (see Calibrate): the best split of ε between a
// centered sum and a count never has smaller Laplace variance than the
// uncentered sum, and the closed form (h^{2/3} + |m|^{2/3})³ is that best.
func TestCenteringNeverBetterForSum(t *testing.T) {
	for _, b := range [][2]float64{{0, 1}, {2, 6}, {-10, 5}, {-3, 3}, {100, 101}, {-7, -1}} {
		lo, hi := b[0], b[1]
		m, h := (lo+hi)/2, (hi-lo)/2
		uncentered := math.Pow(math.Max(math.Abs(lo), math.Abs(hi)), 2) // ×2L²/ε²
		best := math.Inf(1)
		for k := 1; k < 10000; k++ {
			e1 := float64(k) / 10000 // ε₁/ε
			best = math.Min(best, h*h/(e1*e1)+m*m/((1-e1)*(1-e1)))
		}
		closed := math.Pow(math.Cbrt(h*h)+math.Cbrt(m*m), 3)
		if best < uncentered*(1-1e-12) {
			t.Errorf("[%v, %v]: centered variance %v below uncentered %v", lo, hi, best, uncentered)
		}
		if math.Abs(best-closed) > 1e-3*closed {
			t.Errorf("[%v, %v]: best split %v, closed form %v", lo, hi, best, closed)
		}
	}
}

// laplaceHalfWidth is the smallest integer m with P(|Z| > m) =
// 2q^{m+1}/(1+q) ≤ 0.05 for the discrete Laplace of scale t, solved in
// closed form and confirmed on both sides.
func laplaceHalfWidth(t *testing.T, scale float64) float64 {
	t.Helper()
	q := math.Exp(-1 / scale)
	tail := func(m float64) float64 { return 2 * math.Exp(-(m+1)/scale) / (1 + q) }
	m := math.Max(math.Ceil(scale*math.Log(40/(1+q)))-1, 0)
	if tail(m) > 0.05 || (m > 0 && tail(m-1) <= 0.05) {
		t.Fatalf("test setup: half-width %v for t = %v is not the smallest", m, scale)
	}
	return m
}

func TestReleasePostProcessing(t *testing.T) {
	lap := func(kind Kind, eps float64, lo, hi float64, bins, l int) Spec {
		return Spec{Kind: kind, Noise: noise.Laplace, Epsilon: eps, Lo: lo, Hi: hi, Bins: bins, MaxContributions: l}
	}
	countSpec := lap(KindCount, 0.5, 0, 0, 0, 3) // t = 6
	// q = 2^-29, K* = 2^30; b = 2 has grid 2^-39 < q: G = q, t = 2^30.
	sumSpec := lap(KindSum, 1, -1, 2, 0, 1)
	// Same q; b = 2^13 has grid 2^-27 = 4q: t = 2^42/4 = 2^40 steps of G.
	sumSpec4 := lap(KindSum, 1, -1, 2, 0, 4096)
	meanSpec := lap(KindMean, 1, 0, 10, 0, 2) // count t = 4; centered sum q = G = 2^-27, b = 20; mid 5
	histSpec := lap(KindHistogram, 1, 0, 8, 4, 1)
	const qSum, gSum4, gMean = 0x1p-29, 0x1p-27, 0x1p-27
	ln40 := math.Log(40)
	ptr := func(v float64) *float64 { return &v }
	tests := []struct {
		name   string
		spec   Spec
		stats  Stats
		noise  []int64   // in grid steps
		scales []float64 // scales (in grid steps) the noise must be drawn at, in order
		want   Result
	}{
		{
			name: "count adds integer noise, unclamped", spec: countSpec,
			stats: Stats{Count: 2}, noise: []int64{-4}, scales: []float64{6},
			want: Result{Value: ptr(-2), Interval95: laplaceHalfWidth(t, 6)},
		},
		{
			// 7.25·2^29 units; G = q, so no rounding and no half step in
			// the interval.
			name: "sum adds G·Z to the uncentered sum", spec: sumSpec,
			stats: Stats{Count: 3, SumUnits: 7.25 / qSum, CenteredSumUnits: 99}, noise: []int64{-1 << 29}, scales: []float64{1 << 30},
			want: Result{Value: ptr(6.25), Interval95: qSum * laplaceHalfWidth(t, 1<<30)},
		},
		{
			name: "sum of any integer is exact on the quantum grid", spec: sumSpec,
			stats: Stats{SumUnits: 7.25/qSum + 1}, noise: []int64{-2}, scales: []float64{1 << 30},
			want: Result{Value: ptr(7.25 - qSum), Interval95: qSum * laplaceHalfWidth(t, 1<<30)},
		},
		{
			// K/4 = 7.25·2^27 + 1/2 exactly: ties go up.
			name: "sum regridded: exactly half a grid step up rounds up", spec: sumSpec4,
			stats: Stats{SumUnits: 7.25/qSum + 2}, noise: []int64{0}, scales: []float64{1 << 40},
			want: Result{Value: ptr(7.25 + gSum4), Interval95: gSum4*laplaceHalfWidth(t, 1<<40) + gSum4/2},
		},
		{
			name: "sum regridded: just below half a grid step rounds down", spec: sumSpec4,
			stats: Stats{SumUnits: 7.25/qSum + 1}, noise: []int64{3}, scales: []float64{1 << 40},
			want: Result{Value: ptr(7.25 + 3*gSum4), Interval95: gSum4*laplaceHalfWidth(t, 1<<40) + gSum4/2},
		},
		{
			// K/4 = −7.25·2^27 − 1/2: up is towards +∞, to −7.25.
			name: "sum regridded: a negative tie rounds up too", spec: sumSpec4,
			stats: Stats{SumUnits: -7.25/qSum - 2}, noise: []int64{0}, scales: []float64{1 << 40},
			want: Result{Value: ptr(-7.25), Interval95: gSum4*laplaceHalfWidth(t, 1<<40) + gSum4/2},
		},
		{
			name: "sum regridded: just beyond a negative tie rounds down", spec: sumSpec4,
			stats: Stats{SumUnits: -7.25/qSum - 3}, noise: []int64{-1}, scales: []float64{1 << 40},
			want: Result{Value: ptr(-7.25 - 2*gSum4), Interval95: gSum4*laplaceHalfWidth(t, 1<<40) + gSum4/2},
		},
		{
			// mean = 5 + 5/10; μ̂ = 0.5, t = ln40·(20 + 0.5·4)/10.
			name: "mean: mid + centered sum / count", spec: meanSpec,
			stats: Stats{Count: 10, CenteredSumUnits: 5 / gMean}, noise: []int64{0, 0}, scales: []float64{4, 20 / gMean},
			want: Result{Value: ptr(5.5), Interval95: ln40 * 2.2},
		},
		{
			// ñ = 12, S̃c = −12: mean 5 − 1 = 4; μ̂ = 1, t = ln40·(20 + 4)/12.
			name: "mean: count noise then centered-sum noise", spec: meanSpec,
			stats: Stats{Count: 10, CenteredSumUnits: -20 / gMean}, noise: []int64{2, 8 / gMean}, scales: []float64{4, 20 / gMean},
			want: Result{Value: ptr(4), Interval95: ln40 * 2},
		},
		{
			// 5 + 1450/100 = 19.5 is clamped to 10; μ̂ = 14.5 is clamped
			// to h = 5: t = ln40·(20 + 5·4)/100.
			name: "mean clamps to hi", spec: meanSpec,
			stats: Stats{Count: 100, CenteredSumUnits: 450 / gMean}, noise: []int64{0, 1000 / gMean}, scales: []float64{4, 20 / gMean},
			want: Result{Value: ptr(10), Interval95: ln40 * 0.4},
		},
		{
			// ñ = −3 → 1; 5 + 2/1 = 7; t = ln40·(20 + 2·4) > 10 is capped.
			name: "mean divides by at least 1", spec: meanSpec,
			stats: Stats{Count: 0, CenteredSumUnits: 0}, noise: []int64{-3, 2 / gMean}, scales: []float64{4, 20 / gMean},
			want: Result{Value: ptr(7), Interval95: 10},
		},
		{
			// D = [6, −2, 2, −1] → D̃ = [6, 0, 2, 0], q = [.75, 0, .25, 0],
			// width 2.
			name: "histogram clamps, normalizes, divides by width", spec: histSpec,
			stats: Stats{Bins: []int64{5, 0, 3, 2}}, noise: []int64{1, -2, -1, -3}, scales: []float64{1, 1, 1, 1},
			want: Result{
				Interval95:    laplaceHalfWidth(t, 1),
				NoisyCounts:   []float64{6, -2, 2, -1},
				Probabilities: []float64{0.75, 0, 0.25, 0},
				Densities:     []float64{0.375, 0, 0.125, 0},
				Edges:         []float64{0, 2, 4, 6, 8},
			},
		},
		{
			name: "histogram with no positive count is uniform", spec: histSpec,
			stats: Stats{Bins: []int64{0, 0, 1, 0}}, noise: []int64{-1, -1, -1, 0}, scales: []float64{1, 1, 1, 1},
			want: Result{
				Interval95:    laplaceHalfWidth(t, 1),
				NoisyCounts:   []float64{-1, -1, 0, 0},
				Probabilities: []float64{0.25, 0.25, 0.25, 0.25},
				Densities:     []float64{0.125, 0.125, 0.125, 0.125},
				Edges:         []float64{0, 2, 4, 6, 8},
			},
		},
	}
	const tol = 1e-12
	near := func(a, b float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }
	nearAll := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !near(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := &scriptedNoise{values: slices.Clone(tc.noise)}
			got, err := Release(mustCalibrate(t, tc.spec), tc.stats, script)
			if err != nil {
				t.Fatal(err)
			}
			// Values on a grid are exact: compare them bit for bit.
			if (got.Value == nil) != (tc.want.Value == nil) || (got.Value != nil && tc.spec.Kind != KindMean && *got.Value != *tc.want.Value) ||
				(got.Value != nil && !near(*got.Value, *tc.want.Value)) {
				t.Errorf("Value = %v, want %v", deref(got.Value), deref(tc.want.Value))
			}
			if !near(got.Interval95, tc.want.Interval95) {
				t.Errorf("Interval95 = %v, want %v", got.Interval95, tc.want.Interval95)
			}
			for _, f := range []struct {
				name      string
				got, want []float64
			}{
				{"NoisyCounts", got.NoisyCounts, tc.want.NoisyCounts},
				{"Probabilities", got.Probabilities, tc.want.Probabilities},
				{"Densities", got.Densities, tc.want.Densities},
				{"Edges", got.Edges, tc.want.Edges},
			} {
				if !nearAll(f.got, f.want) {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
			if len(script.calls) != len(tc.scales) {
				t.Fatalf("%d noise draws, want %d", len(script.calls), len(tc.scales))
			}
			for i, c := range script.calls {
				if c.kind != noise.DiscreteLaplace || c.scale != tc.scales[i] {
					t.Errorf("draw %d: %s at scale %v, want discrete_laplace at %v", i, c.kind, c.scale, tc.scales[i])
				}
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestReleaseGaussianMeanInterval(t *testing.T) {
	spec := Spec{Kind: KindMean, Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-6, Lo: 0, Hi: 10, MaxContributions: 2}
	c := mustCalibrate(t, spec)
	sn, ss := c.Components[0].Scale, c.Components[1].Scale
	// ñ = 100, S̃c = 100: mean 6, μ̂ = 1, t = z·sqrt(σ_s² + σ_n²)/100.
	script := &scriptedNoise{values: []int64{0, 0}}
	got, err := Release(c, Stats{Count: 100, CenteredSumUnits: int64(100 / c.Components[1].Quantum)}, script)
	if err != nil {
		t.Fatal(err)
	}
	z := 1.959963984540054 // standard normal 0.975 quantile (tables)
	want := z * math.Sqrt(ss*ss+sn*sn) / 100
	if *got.Value != 6 || math.Abs(got.Interval95-want) > 1e-12*want {
		t.Errorf("mean %v ± %v, want 6 ± %v", *got.Value, got.Interval95, want)
	}
	wantCalls := []noiseCall{{noise.DiscreteGaussian, sn}, {noise.DiscreteGaussian, ss / c.Components[1].Granularity}}
	if !slices.Equal(script.calls, wantCalls) {
		t.Errorf("draws %+v, want %+v", script.calls, wantCalls)
	}
}

func TestReleaseErrors(t *testing.T) {
	count := mustCalibrate(t, Spec{Kind: KindCount, Noise: noise.Laplace, Epsilon: 1, MaxContributions: 1})
	sum := mustCalibrate(t, Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 1, MaxContributions: 1})
	gsum := mustCalibrate(t, Spec{Kind: KindSum, Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-6, Lo: 0, Hi: 1, MaxContributions: 1})
	mean := mustCalibrate(t, Spec{Kind: KindMean, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 1, MaxContributions: 1})
	hist := mustCalibrate(t, Spec{Kind: KindHistogram, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 1, Bins: 3, MaxContributions: 1})
	// Bounds this large put q at 2^967: the largest sums overflow float64.
	huge := mustCalibrate(t, Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 1e300, MaxContributions: 1})
	tamper := func(c Calibration, f func(*noise.Component)) Calibration {
		c.Components = slices.Clone(c.Components)
		f(&c.Components[0])
		return c
	}
	tamperLast := func(c Calibration, f func(*noise.Component)) Calibration {
		c.Components = slices.Clone(c.Components)
		f(&c.Components[len(c.Components)-1])
		return c
	}
	seeded := noise.New(noise.SeededSource(1))
	tests := []struct {
		name  string
		c     Calibration
		s     Stats
		noise noise.Sampler
	}{
		{"nil noise", count, Stats{Count: 1}, nil},
		{"hand-built calibration", Calibration{Spec: count.Spec}, Stats{Count: 1}, seeded},
		{"invalid spec", Calibration{}, Stats{}, seeded},
		{"halved scale", tamper(count, func(c *noise.Component) { c.Scale /= 2 }), Stats{Count: 1}, seeded},
		{"halved gaussian scale", tamper(gsum, func(c *noise.Component) { c.Scale /= 2 }), Stats{SumUnits: 1}, seeded},
		{"changed sensitivity", tamper(count, func(c *noise.Component) { c.Sensitivity = 0.5 }), Stats{Count: 1}, seeded},
		{"sum sensitivity halved", tamper(gsum, func(c *noise.Component) { c.Sensitivity /= 2 }), Stats{SumUnits: 1}, seeded},
		{"sum sensitivity one step short", tamper(sum, func(c *noise.Component) { c.Sensitivity -= c.Granularity }), Stats{SumUnits: 1}, seeded},
		{"continuous kind", tamper(count, func(c *noise.Component) { c.Noise = noise.Laplace }), Stats{Count: 1}, seeded},
		{"grid not the scale's", tamper(sum, func(c *noise.Component) { c.Granularity *= 2 }), Stats{SumUnits: 1}, seeded},
		{"grid finer than the quantum", tamper(sum, func(c *noise.Component) { c.Granularity /= 2 }), Stats{SumUnits: 1}, seeded},
		{"quantum not the bounds'", tamper(sum, func(c *noise.Component) { c.Quantum *= 2 }), Stats{SumUnits: 1}, seeded},
		{"centered sum's quantum not the bounds'", tamperLast(mean, func(c *noise.Component) { c.Quantum /= 2 }), Stats{Count: 1}, seeded},
		{"count with a quantum", tamper(count, func(c *noise.Component) { c.Quantum = 0.5 }), Stats{Count: 1}, seeded},
		{"count on a grid", tamper(count, func(c *noise.Component) { c.Granularity = 0.5 }), Stats{Count: 1}, seeded},
		{"scale beyond the samplers", tamper(count, func(c *noise.Component) { c.Scale = 1 << 51 }), Stats{Count: 1}, seeded},
		{"negative count", count, Stats{Count: -1}, seeded},
		{"sum beyond float64", huge, Stats{SumUnits: math.MaxInt64}, seeded},
		{"negative mean count", mean, Stats{Count: -1}, seeded},
		{"wrong bin count", hist, Stats{Bins: []int64{1, 2}}, seeded},
		{"negative bin", hist, Stats{Bins: []int64{1, -2, 0}}, seeded},
		{"noise draw fails", count, Stats{Count: 1}, &scriptedNoise{}},
		{"noisy count overflows", count, Stats{Count: math.MaxInt64}, &scriptedNoise{values: []int64{1}}},
		{"noise runs out mid-histogram", hist, Stats{Bins: []int64{1, 2, 3}}, &scriptedNoise{values: []int64{0, 0}}},
		{"stuck source", count, Stats{Count: 1}, noise.New(stattest.ConstSource(0))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Release(tc.c, tc.s, tc.noise)
			if err == nil {
				t.Fatalf("Release succeeded with %+v, want an error", r)
			}
			if r.Value != nil || r.NoisyCounts != nil {
				t.Errorf("Release returned data with its error: %+v", r)
			}
		})
	}
}

// TestReleaseAcceptsMoreNoise: a calibration with more noise than its spec
// needs is still private, so Release uses it, at its own (charged) scale.
func TestReleaseAcceptsMoreNoise(t *testing.T) {
	for _, nk := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		spec := Spec{Kind: KindCount, Noise: nk, Epsilon: 1, MaxContributions: 2}
		if nk == noise.Gaussian {
			spec.Delta = 1e-6
		}
		c := mustCalibrate(t, spec)
		c.Components = slices.Clone(c.Components)
		c.Components[0].Scale *= 2
		script := &scriptedNoise{values: []int64{0}}
		if _, err := Release(c, Stats{Count: 3}, script); err != nil {
			t.Fatalf("%s: %v", nk, err)
		}
		if len(script.calls) != 1 || script.calls[0].scale != c.Components[0].Scale {
			t.Errorf("%s: draws %+v, want one at scale %v", nk, script.calls, c.Components[0].Scale)
		}
	}
}

// TestReleaseShapes runs every kind and noise on seeded noise and checks
// the invariants of the output, including that counts are integers and sums
// lie on their grid.
func TestReleaseShapes(t *testing.T) {
	stats := Stats{Count: 40, SumUnits: 12345678901, CenteredSumUnits: -3 << 28, Bins: []int64{3, 0, 9, 1, 0, 27, 0}}
	for _, kind := range []Kind{KindCount, KindSum, KindMean, KindHistogram} {
		for _, nk := range []noise.Kind{noise.Laplace, noise.Gaussian} {
			t.Run(string(kind)+"/"+string(nk), func(t *testing.T) {
				spec := Spec{Kind: kind, Noise: nk, Epsilon: 0.7, Lo: -2, Hi: 5, MaxContributions: 2}
				if nk == noise.Gaussian {
					spec.Delta = 1e-7
				}
				if kind == KindCount {
					spec.Lo, spec.Hi = 0, 0
				}
				if kind == KindHistogram {
					spec.Bins = len(stats.Bins)
				}
				c := mustCalibrate(t, spec)
				sampler := noise.New(noise.SeededSource(99))
				isInt := func(v float64) bool { return v == math.Trunc(v) }
				for rep := range 50 {
					r, err := Release(c, stats, sampler)
					if err != nil {
						t.Fatal(err)
					}
					if kind != KindHistogram {
						if r.Value == nil || math.IsNaN(*r.Value) || r.NoisyCounts != nil || r.Probabilities != nil || r.Edges != nil {
							t.Fatalf("rep %d: %+v: want only Value", rep, r)
						}
						if kind == KindMean && (*r.Value < spec.Lo || *r.Value > spec.Hi) {
							t.Errorf("rep %d: mean %v outside [%v, %v]", rep, *r.Value, spec.Lo, spec.Hi)
						}
						if kind == KindCount && !isInt(*r.Value) {
							t.Errorf("rep %d: count %v is not an integer", rep, *r.Value)
						}
						if g := c.Components[0].Granularity; kind == KindSum && !isInt(*r.Value/g) {
							t.Errorf("rep %d: sum %v is not a multiple of its grid %v", rep, *r.Value, g)
						}
						if !(r.Interval95 > 0) {
							t.Errorf("rep %d: Interval95 = %v", rep, r.Interval95)
						}
						continue
					}
					m := spec.Bins
					if r.Value != nil || len(r.NoisyCounts) != m || len(r.Probabilities) != m || len(r.Densities) != m || len(r.Edges) != m+1 {
						t.Fatalf("rep %d: wrong shapes: %+v", rep, r)
					}
					sum, width := 0.0, (spec.Hi-spec.Lo)/float64(m)
					for j, p := range r.Probabilities {
						if !isInt(r.NoisyCounts[j]) {
							t.Errorf("rep %d: noisy count %d = %v is not an integer", rep, j, r.NoisyCounts[j])
						}
						if p < 0 || p > 1 {
							t.Errorf("rep %d: probability %d = %v", rep, j, p)
						}
						sum += p
						if math.Abs(r.Densities[j]*width-p) > 1e-12 {
							t.Errorf("rep %d: density %d = %v, probability %v, width %v", rep, j, r.Densities[j], p, width)
						}
						if (r.NoisyCounts[j] <= 0) != (p == 0) {
							t.Errorf("rep %d: bin %d has noisy count %v but probability %v", rep, j, r.NoisyCounts[j], p)
						}
					}
					if math.Abs(sum-1) > 1e-12 {
						t.Errorf("rep %d: probabilities sum to %v", rep, sum)
					}
					if r.Edges[0] != spec.Lo || r.Edges[m] != spec.Hi || !slices.IsSorted(r.Edges) {
						t.Errorf("rep %d: edges %v", rep, r.Edges)
					}
				}
			})
		}
	}
}

func TestStatsMerge(t *testing.T) {
	tests := []struct {
		name    string
		a, b    Stats
		want    Stats
		wantErr bool
	}{
		{
			name: "adds every field",
			a:    Stats{Count: 3, SumUnits: 15, CenteredSumUnits: -5, Bins: []int64{1, 2}},
			b:    Stats{Count: 4, SumUnits: 22, CenteredSumUnits: 10, Bins: []int64{0, 5}},
			want: Stats{Count: 7, SumUnits: 37, CenteredSumUnits: 5, Bins: []int64{1, 7}},
		},
		{
			// As float64, 2^62 + 3 would round; the integers add exactly.
			name: "sums exact at large magnitudes",
			a:    Stats{Count: 1, SumUnits: 1 << 62, CenteredSumUnits: -1 << 62},
			b:    Stats{Count: 1, SumUnits: 3, CenteredSumUnits: -3},
			want: Stats{Count: 2, SumUnits: 1<<62 + 3, CenteredSumUnits: -1<<62 - 3},
		},
		{
			name: "empty accumulator takes the bins",
			a:    Stats{},
			b:    Stats{Count: 2, Bins: []int64{2, 0, 0}},
			want: Stats{Count: 2, Bins: []int64{2, 0, 0}},
		},
		{
			name: "no bins on either side",
			a:    Stats{Count: 1},
			b:    Stats{Count: 1, SumUnits: 3},
			want: Stats{Count: 2, SumUnits: 3},
		},
		{
			name:    "bin count mismatch",
			a:       Stats{Count: 1, Bins: []int64{1, 0}},
			b:       Stats{Count: 1, Bins: []int64{1, 0, 0}},
			want:    Stats{Count: 1, Bins: []int64{1, 0}},
			wantErr: true,
		},
		{
			name:    "bins missing from the other side",
			a:       Stats{Count: 1, Bins: []int64{1, 0}},
			b:       Stats{Count: 1},
			want:    Stats{Count: 1, Bins: []int64{1, 0}},
			wantErr: true,
		},
		{
			name:    "count overflow",
			a:       Stats{Count: math.MaxInt64, Bins: []int64{1}},
			b:       Stats{Count: 1, Bins: []int64{1}},
			want:    Stats{Count: math.MaxInt64, Bins: []int64{1}},
			wantErr: true,
		},
		{
			name:    "bin overflow leaves everything unchanged",
			a:       Stats{Count: 1, SumUnits: 1, CenteredSumUnits: 1, Bins: []int64{1, math.MaxInt64}},
			b:       Stats{Count: 1, SumUnits: 1, CenteredSumUnits: 1, Bins: []int64{1, 1}},
			want:    Stats{Count: 1, SumUnits: 1, CenteredSumUnits: 1, Bins: []int64{1, math.MaxInt64}},
			wantErr: true,
		},
		{
			name:    "sum overflow leaves everything unchanged",
			a:       Stats{Count: 1, SumUnits: math.MaxInt64, CenteredSumUnits: 1, Bins: []int64{1}},
			b:       Stats{Count: 1, SumUnits: 1, CenteredSumUnits: 1, Bins: []int64{1}},
			want:    Stats{Count: 1, SumUnits: math.MaxInt64, CenteredSumUnits: 1, Bins: []int64{1}},
			wantErr: true,
		},
		{
			name:    "centered sum underflow leaves everything unchanged",
			a:       Stats{Count: 1, SumUnits: 1, CenteredSumUnits: math.MinInt64 + 1, Bins: []int64{1}},
			b:       Stats{Count: 1, SumUnits: 1, CenteredSumUnits: -2, Bins: []int64{1}},
			want:    Stats{Count: 1, SumUnits: 1, CenteredSumUnits: math.MinInt64 + 1, Bins: []int64{1}},
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.a
			a.Bins = slices.Clone(tc.a.Bins)
			b := tc.b
			b.Bins = slices.Clone(tc.b.Bins)
			err := a.Merge(b)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Merge error = %v, want error %v", err, tc.wantErr)
			}
			if a.Count != tc.want.Count || a.SumUnits != tc.want.SumUnits || a.CenteredSumUnits != tc.want.CenteredSumUnits || !slices.Equal(a.Bins, tc.want.Bins) {
				t.Errorf("after Merge: %+v, want %+v", a, tc.want)
			}
			if len(b.Bins) > 0 && len(a.Bins) > 0 {
				b.Bins[0] += 100 // the merged bins must not alias the argument's
				if a.Bins[0] != tc.want.Bins[0] {
					t.Errorf("merged bins alias the argument: %v", a.Bins)
				}
			}
		})
	}
	var nilStats *Stats
	if err := nilStats.Merge(Stats{}); err == nil {
		t.Error("Merge on a nil *Stats succeeded")
	}
}

func TestBinIndex(t *testing.T) {
	below := func(x float64) float64 { return math.Nextafter(x, math.Inf(-1)) }
	tests := []struct {
		name   string
		v      float64
		lo, hi float64
		bins   int
		want   int
	}{
		{"lo is bin 0", 0, 0, 1, 10, 0},
		{"hi is in the last bin", 1, 0, 1, 10, 9},
		{"just below hi", below(1), 0, 1, 10, 9},
		{"below lo clamps to 0", -5, 0, 1, 10, 0},
		{"above hi clamps to last", 7, 0, 1, 10, 9},
		{"-Inf clamps to 0", math.Inf(-1), 0, 1, 10, 0},
		{"+Inf clamps to last", math.Inf(1), 0, 1, 10, 9},
		{"interior edge opens its bin", 0.5, 0, 1, 10, 5},
		{"just below an interior edge", below(0.5), 0, 1, 10, 4},
		{"single bin", 0.3, 0, 1, 1, 0},
		{"negative range", -2.5, -4, -1, 3, 1},
		{"0.3 is edge 3 (fl(1·3/10) is the literal 0.3)", 0.3, 0, 1, 10, 3},
		{"0.7 just below edge 7 = fl(7/10)", below(0.7), 0, 1, 10, 6},
		{"NaN value", math.NaN(), 0, 1, 10, -1},
		{"zero bins", 0.5, 0, 1, 0, -1},
		{"empty range", 0.5, 1, 1, 10, -1},
		{"reversed range", 0.5, 1, 0, 10, -1},
		{"infinite range", 0.5, math.Inf(-1), 1, 10, -1},
		{"overflowing width", 0.5, -1e308, 1e308, 10, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := BinIndex(tc.v, tc.lo, tc.hi, tc.bins); got != tc.want {
				t.Errorf("BinIndex(%v, %v, %v, %d) = %d, want %d", tc.v, tc.lo, tc.hi, tc.bins, got, tc.want)
			}
		})
	}
}

// TestBinIndexAgreesWithEdges checks that every value lands in the bin whose
// published edges contain it, including values exactly on an edge and one
// ulp either side, for ranges whose edges are not representable exactly.
func TestBinIndexAgreesWithEdges(t *testing.T) {
	for _, r := range []struct {
		lo, hi float64
		bins   int
	}{{0, 1, 10}, {0.1, 0.7, 3}, {-3.3, 17.9, 7}, {1e-9, 3e-9, 13}, {-1e6, 1e6, 1000}} {
		spec := Spec{Kind: KindHistogram, Noise: noise.Laplace, Epsilon: 1, Lo: r.lo, Hi: r.hi, Bins: r.bins, MaxContributions: 1}
		res, err := Release(mustCalibrate(t, spec), Stats{Bins: make([]int64, r.bins)}, noise.New(noise.SeededSource(5)))
		if err != nil {
			t.Fatal(err)
		}
		edges := res.Edges
		check := func(v float64) {
			i := BinIndex(v, r.lo, r.hi, r.bins)
			if i < 0 || i >= r.bins {
				t.Fatalf("BinIndex(%v, %v, %v, %d) = %d out of range", v, r.lo, r.hi, r.bins, i)
			}
			inside := edges[i] <= v && (v < edges[i+1] || (i == r.bins-1 && v <= edges[i+1]))
			if v >= r.lo && v <= r.hi && !inside {
				t.Errorf("range [%v, %v]/%d: %v put in bin %d = [%v, %v)", r.lo, r.hi, r.bins, v, i, edges[i], edges[i+1])
			}
		}
		for _, e := range edges {
			check(e)
			check(math.Nextafter(e, math.Inf(-1)))
			check(math.Nextafter(e, math.Inf(1)))
		}
		src := noise.SeededSource(6)
		for range 2000 {
			check(r.lo + (r.hi-r.lo)*stattest.Uniform53(src.Uint64()))
		}
	}
}

// noiseLaw is the exact law of one component's noise in grid steps, from
// the test's own formulas: its second and fourth moments, E|Z|, and
// P(|Z| ≤ m).
type noiseLaw struct {
	m2, m4, abs float64
	within      func(m float64) float64
}

func componentLaw(comp noise.Component) noiseLaw {
	s := comp.Scale / comp.Granularity
	if comp.Noise == noise.DiscreteLaplace {
		m2, m4 := stattest.DLapMoments(s)
		q := math.Exp(-1 / s)
		return noiseLaw{m2, m4, dlapAbs(s), func(m float64) float64 { return 1 - 2*math.Exp(-(m+1)/s)/(1+q) }}
	}
	if s > 3000 { // Poisson summation and the midpoint rule, see stattest.DGLargeLaw
		return noiseLaw{s * s, 3 * s * s * s * s, s * math.Sqrt(2/math.Pi), func(m float64) float64 {
			return 1 - math.Erfc((m+0.5)/(s*math.Sqrt2))
		}}
	}
	tb := stattest.NewDGTable(s)
	m2, m4 := tb.Moments()
	abs := 0.0
	for i, p := range tb.PMF {
		abs += math.Abs(float64(int64(i)-tb.Off)) * p
	}
	return noiseLaw{m2, m4, abs, func(m float64) float64 {
		in := 0.0
		for y := -int64(m); y <= int64(m); y++ {
			in += tb.P(y)
		}
		return in
	}}
}

// TestReleaseNoiseMatchesCalibration checks, over many seeded releases, that
// the noise actually added has mean 0 and the exact variance of its discrete
// law, that E|noise| matches ExpectedAbsError, and that Value ± Interval95
// covers the exact statistic as often as the discrete law says (at least
// 95%). The sums' exact values lie on their output grid, so the noise is
// all of the error.
func TestReleaseNoiseMatchesCalibration(t *testing.T) {
	const reps = 20000
	tests := []struct {
		name  string
		spec  Spec
		stats Stats
		exact []float64 // the exact statistic per released coordinate
	}{
		{"count laplace", Spec{Kind: KindCount, Noise: noise.Laplace, Epsilon: 0.5, MaxContributions: 3},
			Stats{Count: 1000}, []float64{1000}},
		{"count gaussian", Spec{Kind: KindCount, Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-6, MaxContributions: 3},
			Stats{Count: 1000}, []float64{1000}},
		{"count laplace, small scale", Spec{Kind: KindCount, Noise: noise.Laplace, Epsilon: 3, MaxContributions: 1},
			Stats{Count: 7}, []float64{7}},
		// [−1, 4]: q = 2^-28.
		{"sum laplace", Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 2, Lo: -1, Hi: 4, MaxContributions: 2},
			Stats{SumUnits: 321.5 * (1 << 28)}, []float64{321.5}},
		{"sum gaussian", Spec{Kind: KindSum, Noise: noise.Gaussian, Epsilon: 0.3, Delta: 1e-8, Lo: -1, Hi: 4, MaxContributions: 2},
			Stats{SumUnits: 321.5 * (1 << 28)}, []float64{321.5}},
		{"sum laplace, regridded", Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: -1, Hi: 4, MaxContributions: 4096},
			Stats{SumUnits: 321.5 * (1 << 28)}, []float64{321.5}},
		{"sum gaussian, regridded", Spec{Kind: KindSum, Noise: noise.Gaussian, Epsilon: 0.3, Delta: 1e-8, Lo: -1, Hi: 4, MaxContributions: 4096},
			Stats{SumUnits: 321.5 * (1 << 28)}, []float64{321.5}},
		{"histogram laplace", Spec{Kind: KindHistogram, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 1, Bins: 3, MaxContributions: 2},
			Stats{Bins: []int64{50, 0, 7}}, []float64{50, 0, 7}},
		{"histogram gaussian", Spec{Kind: KindHistogram, Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-5, Lo: 0, Hi: 1, Bins: 3, MaxContributions: 2},
			Stats{Bins: []int64{50, 0, 7}}, []float64{50, 0, 7}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCalibrate(t, tc.spec)
			comp := c.Components[0]
			g := comp.Granularity
			law := componentLaw(comp)
			sampler := noise.New(stattest.NewFastSource(uint64(1000 + i)))
			errs := make([][]float64, len(tc.exact))
			covered := make([]int, len(tc.exact))
			var halfWidth float64
			for range reps {
				r, err := Release(c, tc.stats, sampler)
				if err != nil {
					t.Fatal(err)
				}
				vals := r.NoisyCounts
				if r.Value != nil {
					vals = []float64{*r.Value}
				}
				halfWidth = r.Interval95
				for j, v := range vals {
					e := (v - tc.exact[j]) / g // in grid steps, exact
					errs[j] = append(errs[j], e)
					if math.Abs(v-tc.exact[j]) <= r.Interval95 {
						covered[j]++
					}
				}
			}
			if regridded := strings.HasSuffix(tc.name, "regridded"); regridded != (g > comp.Quantum) {
				t.Fatalf("test setup: grid %v, quantum %v", g, comp.Quantum)
			}
			// Interval95 is G·m (+ G/2 for a sum's rounding to a grid
			// coarser than its unit): recover m.
			m := halfWidth / g
			if onOutputGrid(comp) && g > comp.Quantum {
				m = (halfWidth - g/2) / g
			}
			// m must cover 95%, and be the smallest such integer; for a
			// discrete Gaussian on a 2^40-step grid Release rounds z·σ up
			// (see noise.DiscreteGaussianHalfWidth95), which may be one step more.
			pCover := law.within(m)
			slack := 0.0
			if comp.Noise == noise.DiscreteGaussian && comp.Scale/g > noise.DiscreteGaussianExactMaxSigma {
				slack = 1
			}
			if pCover < 0.95 || law.within(m-1-slack) >= 0.95 {
				t.Errorf("Interval95 = %v grid steps is not the smallest 95%% half-width (coverage %v, one less %v)", m, pCover, law.within(m-1))
			}
			sqrtN := math.Sqrt(reps)
			for j, es := range errs {
				// Each z-test below has false-failure rate ≈ 5.7e-7;
				// the coverage check uses exact binomial tails (1e-6).
				mean, variance := stattest.MeanVar(es)
				if z := mean / (math.Sqrt(law.m2) / sqrtN); math.Abs(z) > stattest.ZMax {
					t.Errorf("coordinate %d: noise mean %v: z = %.2f", j, mean, z)
				}
				if z := (variance - law.m2) / (math.Sqrt(law.m4-law.m2*law.m2) / sqrtN); math.Abs(z) > stattest.ZMax {
					t.Errorf("coordinate %d: noise variance %v, want %v: z = %.2f", j, variance, law.m2, z)
				}
				abs := 0.0
				for _, e := range es {
					abs += math.Abs(e)
				}
				abs /= reps
				sdAbs := math.Sqrt(law.m2 - law.abs*law.abs)
				if z := (abs - c.ExpectedAbsError/g) / (sdAbs / sqrtN); math.Abs(z) > stattest.ZMax {
					t.Errorf("coordinate %d: mean |noise| %v, ExpectedAbsError %v: z = %.2f", j, abs*g, c.ExpectedAbsError, z)
				}
				if !stattest.BinomialOK(covered[j], reps, pCover, stattest.FalseFail) {
					t.Errorf("coordinate %d: Interval95 covered %d of %d, want about %.0f", j, covered[j], reps, pCover*reps)
				}
			}
		})
	}
}

// TestReleaseMeanCoverage checks the mean's first-order Interval95 at a
// count large enough for the approximation: coverage at least 95% (a
// one-sided test, false-failure rate ≈ 2.9e-7) for both noises.
func TestReleaseMeanCoverage(t *testing.T) {
	const reps = 10000
	// [0, 4]: centered values in [−2, 2], q = 2^-29.
	stats := Stats{Count: 2000, CenteredSumUnits: 2000 * 0.8 * (1 << 29)} // exact mean mid + 0.8 = 2.8
	for i, nk := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		spec := Spec{Kind: KindMean, Noise: nk, Epsilon: 0.5, Lo: 0, Hi: 4, MaxContributions: 3}
		if nk == noise.Gaussian {
			spec.Delta = 1e-6
		}
		c := mustCalibrate(t, spec)
		sampler := noise.New(stattest.NewFastSource(uint64(77 + i)))
		covered := 0
		for range reps {
			r, err := Release(c, stats, sampler)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(*r.Value-2.8) <= r.Interval95 {
				covered++
			}
		}
		if z := stattest.ProportionZ(covered, reps, 0.95); z < -stattest.ZMax {
			t.Errorf("%s: mean Interval95 covered %d of %d: z = %.2f", nk, covered, reps, z)
		}
	}
}

// pow2AtLeast returns the smallest power of two ≥ x > 0 by repeated
// doubling and halving: an implementation independent of Granularity's
// exponent arithmetic.
func pow2AtLeast(x float64) float64 {
	g := 1.0
	for g < x {
		g *= 2
	}
	for g/2 >= x {
		g /= 2
	}
	return g
}

// TestSqrtUp checks that the L2 sensitivity recorded for a charge is never
// below the true root: s² ≥ v exactly (big-float) and the next float down
// has a square below v, for every v up to 2·10⁵ and some large ones.
func TestSqrtUp(t *testing.T) {
	check := func(v int64) {
		s := sqrtUp(v)
		exact := new(big.Float).SetPrec(200).Mul(big.NewFloat(s), big.NewFloat(s))
		if exact.Cmp(new(big.Float).SetInt64(v)) < 0 {
			t.Fatalf("sqrtUp(%d) = %v: its square is below %d", v, s, v)
		}
		p := math.Nextafter(s, 0)
		below := new(big.Float).SetPrec(200).Mul(big.NewFloat(p), big.NewFloat(p))
		if below.Cmp(new(big.Float).SetInt64(v)) >= 0 {
			t.Fatalf("sqrtUp(%d) = %v is not the smallest float with s² ≥ v", v, s)
		}
	}
	for v := int64(1); v <= 200000; v++ {
		check(v)
	}
	for _, v := range []int64{1 << 40, 1<<52 - 1, 1<<53 - 1, 999999999989} {
		check(v)
	}
}
