package mechanism

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// scriptedNoise returns preset noise values in order and records the
// distribution and scale of every request, so post-processing can be
// checked by hand.
type scriptedNoise struct {
	values []float64
	calls  []noiseCall
}

type noiseCall struct {
	kind  NoiseKind
	scale float64
}

func (s *scriptedNoise) next(kind NoiseKind, scale float64) float64 {
	s.calls = append(s.calls, noiseCall{kind, scale})
	if len(s.values) == 0 {
		return math.NaN()
	}
	v := s.values[0]
	s.values = s.values[1:]
	return v
}

func (s *scriptedNoise) Laplace(b float64) float64      { return s.next(NoiseLaplace, b) }
func (s *scriptedNoise) Gaussian(sigma float64) float64 { return s.next(NoiseGaussian, sigma) }

func mustCalibrate(t *testing.T, s Spec) Calibration {
	t.Helper()
	c, err := Calibrate(s)
	if err != nil {
		t.Fatalf("Calibrate(%+v): %v", s, err)
	}
	return c
}

func mustSigma(t *testing.T, eps, delta, d float64) float64 {
	t.Helper()
	s, err := AnalyticGaussianSigma(eps, delta, d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCalibrate(t *testing.T) {
	sqrt2pi := math.Sqrt(2 / math.Pi)
	tests := []struct {
		name string
		spec Spec
		want []Component // Scale < 0 means "the analytic σ for this row"
		err  float64     // Calibration.ExpectedAbsError; < 0 means σ·sqrt(2/π)
	}{
		{
			name: "count laplace: b = L/ε = 3/0.5",
			spec: Spec{Kind: KindCount, Noise: NoiseLaplace, Epsilon: 0.5, MaxContributions: 3},
			want: []Component{{PurposeCount, NoiseLaplace, 3, 6, 0.5, 0, 6}},
			err:  6,
		},
		{
			name: "sum laplace: Δ = L·max(|lo|,|hi|) = 4·10",
			spec: Spec{Kind: KindSum, Noise: NoiseLaplace, Epsilon: 2, Lo: -10, Hi: 5, MaxContributions: 4},
			want: []Component{{PurposeSum, NoiseLaplace, 40, 20, 2, 0, 20}},
			err:  20,
		},
		{
			name: "sum laplace, positive bounds: Δ = L·hi, not centered",
			spec: Spec{Kind: KindSum, Noise: NoiseLaplace, Epsilon: 1, Lo: 2, Hi: 6, MaxContributions: 1},
			want: []Component{{PurposeSum, NoiseLaplace, 6, 6, 1, 0, 6}},
			err:  6,
		},
		{
			name: "mean laplace: count (L, ε/2) and centered sum (L·(hi−lo)/2, ε/2)",
			spec: Spec{Kind: KindMean, Noise: NoiseLaplace, Epsilon: 1, Lo: 0, Hi: 10, MaxContributions: 2},
			want: []Component{
				{PurposeCount, NoiseLaplace, 2, 4, 0.5, 0, 4},
				{PurposeCenteredSum, NoiseLaplace, 10, 20, 0.5, 0, 20},
			},
			err: 0,
		},
		{
			name: "histogram laplace: Δ1 = L whatever the bins",
			spec: Spec{Kind: KindHistogram, Noise: NoiseLaplace, Epsilon: 0.25, Lo: 0, Hi: 120, Bins: 24, MaxContributions: 4},
			want: []Component{{PurposeBins, NoiseLaplace, 4, 16, 0.25, 0, 16}},
			err:  16,
		},
		{
			name: "count gaussian",
			spec: Spec{Kind: KindCount, Noise: NoiseGaussian, Epsilon: 1, Delta: 1e-5, MaxContributions: 2},
			want: []Component{{PurposeCount, NoiseGaussian, 2, -1, 1, 1e-5, -1}},
			err:  -1,
		},
		{
			name: "mean gaussian: (ε/2, δ/2) each",
			spec: Spec{Kind: KindMean, Noise: NoiseGaussian, Epsilon: 2, Delta: 1e-6, Lo: -1, Hi: 3, MaxContributions: 5},
			want: []Component{
				{PurposeCount, NoiseGaussian, 5, -1, 1, 5e-7, -1},
				{PurposeCenteredSum, NoiseGaussian, 10, -1, 1, 5e-7, -1},
			},
			err: 0,
		},
		{
			name: "histogram gaussian: Δ2 = L",
			spec: Spec{Kind: KindHistogram, Noise: NoiseGaussian, Epsilon: 0.5, Delta: 1e-8, Lo: 0, Hi: 1, Bins: 10, MaxContributions: 3},
			want: []Component{{PurposeBins, NoiseGaussian, 3, -1, 0.5, 1e-8, -1}},
			err:  -1,
		},
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
				if w.Scale < 0 {
					w.Scale = mustSigma(t, w.Epsilon, w.Delta, w.Sensitivity)
					w.ExpectedAbsError = w.Scale * sqrt2pi
					// The σ must meet this component's share of δ.
					if got := GaussianDelta(w.Epsilon, w.Scale, w.Sensitivity); got > w.Delta {
						t.Errorf("component %d: delta at sigma %v is %v > %v", i, w.Scale, got, w.Delta)
					}
				}
				if g := c.Components[i]; !close9(g.Scale, w.Scale) || !close9(g.ExpectedAbsError, w.ExpectedAbsError) ||
					g.Purpose != w.Purpose || g.Noise != w.Noise || g.Sensitivity != w.Sensitivity ||
					g.Epsilon != w.Epsilon || g.Delta != w.Delta {
					t.Errorf("component %d = %+v, want %+v", i, g, w)
				}
			}
			wantErr := tc.err
			if wantErr < 0 {
				wantErr = c.Components[0].Scale * sqrt2pi
			}
			if !close9(c.ExpectedAbsError, wantErr) {
				t.Errorf("ExpectedAbsError = %v, want %v", c.ExpectedAbsError, wantErr)
			}
			// The shares compose back to the release's budget.
			var eps, delta float64
			for _, comp := range c.Components {
				eps += comp.Epsilon
				delta += comp.Delta
			}
			if eps != tc.spec.Epsilon || delta != tc.spec.Delta {
				t.Errorf("shares add to (%v, %v), want (%v, %v)", eps, delta, tc.spec.Epsilon, tc.spec.Delta)
			}
		})
	}
}

func TestCalibrateErrors(t *testing.T) {
	ok := Spec{Kind: KindHistogram, Noise: NoiseLaplace, Epsilon: 1, Lo: 0, Hi: 1, Bins: 4, MaxContributions: 1}
	mod := func(f func(*Spec)) Spec { s := ok; f(&s); return s }
	tests := []struct {
		name    string
		spec    Spec
		mention string // a word the message must contain
	}{
		{"unknown kind", mod(func(s *Spec) { s.Kind = "median" }), "kind"},
		{"unknown noise", mod(func(s *Spec) { s.Noise = "cauchy" }), "noise"},
		{"zero epsilon", mod(func(s *Spec) { s.Epsilon = 0 }), "epsilon"},
		{"negative epsilon", mod(func(s *Spec) { s.Epsilon = -1 }), "epsilon"},
		{"NaN epsilon", mod(func(s *Spec) { s.Epsilon = math.NaN() }), "epsilon"},
		{"infinite epsilon", mod(func(s *Spec) { s.Epsilon = math.Inf(1) }), "epsilon"},
		{"tiny epsilon overflows scale", mod(func(s *Spec) { s.Epsilon = 1e-320 }), "scale"},
		{"delta with laplace", mod(func(s *Spec) { s.Delta = 1e-6 }), "delta"},
		{"gaussian without delta", mod(func(s *Spec) { s.Noise = NoiseGaussian }), "delta"},
		{"gaussian delta 1", mod(func(s *Spec) { s.Noise, s.Delta = NoiseGaussian, 1 }), "delta"},
		{"gaussian delta NaN", mod(func(s *Spec) { s.Noise, s.Delta = NoiseGaussian, math.NaN() }), "delta"},
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
		{"sum sensitivity overflows", Spec{Kind: KindSum, Noise: NoiseLaplace, Epsilon: 1, Lo: 0, Hi: 1e308, MaxContributions: 10}, "sensitivity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Calibrate(tc.spec)
			if err == nil {
				t.Fatalf("Calibrate(%+v) = %+v, want an error", tc.spec, c)
			}
			if !errors.Is(err, ErrInvalidSpec) {
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

func TestReleasePostProcessing(t *testing.T) {
	lap := func(kind Kind, eps float64, lo, hi float64, bins, l int) Spec {
		return Spec{Kind: kind, Noise: NoiseLaplace, Epsilon: eps, Lo: lo, Hi: hi, Bins: bins, MaxContributions: l}
	}
	countSpec := lap(KindCount, 0.5, 0, 0, 0, 3) // b = 6
	sumSpec := lap(KindSum, 1, -1, 2, 0, 1)      // b = 2
	meanSpec := lap(KindMean, 1, 0, 10, 0, 2)    // count b = 4, centered sum b = 20; mid 5
	histSpec := lap(KindHistogram, 1, 0, 8, 4, 1)
	ln20, ln40 := math.Log(20), math.Log(40)
	ptr := func(v float64) *float64 { return &v }
	tests := []struct {
		name   string
		spec   Spec
		stats  Stats
		noise  []float64
		scales []float64 // scales the noise must be drawn at, in order
		want   Result
	}{
		{
			name: "count adds noise, unclamped", spec: countSpec,
			stats: Stats{Count: 2}, noise: []float64{-4.5}, scales: []float64{6},
			want: Result{Value: ptr(-2.5), Interval95: 6 * ln20},
		},
		{
			name: "sum adds noise to the uncentered sum", spec: sumSpec,
			stats: Stats{Count: 3, Sum: 7.25, CenteredSum: 99}, noise: []float64{-1}, scales: []float64{2},
			want: Result{Value: ptr(6.25), Interval95: 2 * ln20},
		},
		{
			// mean = 5 + 5/10; μ̂ = 0.5, t = ln40·(20 + 0.5·4)/10.
			name: "mean: mid + centered sum / count", spec: meanSpec,
			stats: Stats{Count: 10, CenteredSum: 5}, noise: []float64{0, 0}, scales: []float64{4, 20},
			want: Result{Value: ptr(5.5), Interval95: ln40 * 2.2},
		},
		{
			// ñ = 12, S̃c = −12: mean 5 − 1 = 4; μ̂ = 1, t = ln40·(20 + 4)/12.
			name: "mean: count noise then centered-sum noise", spec: meanSpec,
			stats: Stats{Count: 10, CenteredSum: -20}, noise: []float64{2, 8}, scales: []float64{4, 20},
			want: Result{Value: ptr(4), Interval95: ln40 * 2},
		},
		{
			// 5 + 1450/100 = 19.5 is clamped to 10; μ̂ = 14.5 is clamped
			// to h = 5: t = ln40·(20 + 5·4)/100.
			name: "mean clamps to hi", spec: meanSpec,
			stats: Stats{Count: 100, CenteredSum: 450}, noise: []float64{0, 1000}, scales: []float64{4, 20},
			want: Result{Value: ptr(10), Interval95: ln40 * 0.4},
		},
		{
			// ñ = −3 → 1; 5 + 2/1 = 7; t = ln40·(20 + 2·4) > 10 is capped.
			name: "mean divides by at least 1", spec: meanSpec,
			stats: Stats{Count: 0, CenteredSum: 0}, noise: []float64{-3, 2}, scales: []float64{4, 20},
			want: Result{Value: ptr(7), Interval95: 10},
		},
		{
			// D = [6, −2, 2, −1] → D̃ = [6, 0, 2, 0], q = [.75, 0, .25, 0],
			// width 2.
			name: "histogram clamps, normalizes, divides by width", spec: histSpec,
			stats: Stats{Bins: []int64{5, 0, 3, 2}}, noise: []float64{1, -2, -1, -3}, scales: []float64{1, 1, 1, 1},
			want: Result{
				Interval95:    ln20,
				NoisyCounts:   []float64{6, -2, 2, -1},
				Probabilities: []float64{0.75, 0, 0.25, 0},
				Densities:     []float64{0.375, 0, 0.125, 0},
				Edges:         []float64{0, 2, 4, 6, 8},
			},
		},
		{
			name: "histogram with no positive count is uniform", spec: histSpec,
			stats: Stats{Bins: []int64{0, 0, 1, 0}}, noise: []float64{-1, -0.5, -1, 0}, scales: []float64{1, 1, 1, 1},
			want: Result{
				Interval95:    ln20,
				NoisyCounts:   []float64{-1, -0.5, 0, 0},
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
			noise := &scriptedNoise{values: slices.Clone(tc.noise)}
			got, err := Release(mustCalibrate(t, tc.spec), tc.stats, noise)
			if err != nil {
				t.Fatal(err)
			}
			if (got.Value == nil) != (tc.want.Value == nil) || (got.Value != nil && !near(*got.Value, *tc.want.Value)) {
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
			if len(noise.calls) != len(tc.scales) {
				t.Fatalf("%d noise draws, want %d", len(noise.calls), len(tc.scales))
			}
			for i, c := range noise.calls {
				if c.kind != NoiseLaplace || !near(c.scale, tc.scales[i]) {
					t.Errorf("draw %d: %s at scale %v, want laplace at %v", i, c.kind, c.scale, tc.scales[i])
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
	spec := Spec{Kind: KindMean, Noise: NoiseGaussian, Epsilon: 1, Delta: 1e-6, Lo: 0, Hi: 10, MaxContributions: 2}
	c := mustCalibrate(t, spec)
	sn, ss := c.Components[0].Scale, c.Components[1].Scale
	// ñ = 100, S̃c = 100: mean 6, μ̂ = 1, t = z·sqrt(σ_s² + σ_n²)/100.
	got, err := Release(c, Stats{Count: 100, CenteredSum: 100}, &scriptedNoise{values: []float64{0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	z := 1.959963984540054 // standard normal 0.975 quantile (tables)
	want := z * math.Sqrt(ss*ss+sn*sn) / 100
	if *got.Value != 6 || math.Abs(got.Interval95-want) > 1e-12*want {
		t.Errorf("mean %v ± %v, want 6 ± %v", *got.Value, got.Interval95, want)
	}
}

func TestReleaseErrors(t *testing.T) {
	count := mustCalibrate(t, Spec{Kind: KindCount, Noise: NoiseLaplace, Epsilon: 1, MaxContributions: 1})
	sum := mustCalibrate(t, Spec{Kind: KindSum, Noise: NoiseLaplace, Epsilon: 1, Lo: 0, Hi: 1, MaxContributions: 1})
	mean := mustCalibrate(t, Spec{Kind: KindMean, Noise: NoiseLaplace, Epsilon: 1, Lo: 0, Hi: 1, MaxContributions: 1})
	hist := mustCalibrate(t, Spec{Kind: KindHistogram, Noise: NoiseLaplace, Epsilon: 1, Lo: 0, Hi: 1, Bins: 3, MaxContributions: 1})
	tampered := mustCalibrate(t, count.Spec)
	tampered.Components = slices.Clone(tampered.Components)
	tampered.Components[0].Scale /= 2
	relabeled := mustCalibrate(t, count.Spec)
	relabeled.Components = slices.Clone(relabeled.Components)
	relabeled.Components[0].Sensitivity = 0.5
	seeded := NewNoise(SeededSource(1))
	tests := []struct {
		name  string
		c     Calibration
		s     Stats
		noise Noise
	}{
		{"nil noise", count, Stats{Count: 1}, nil},
		{"hand-built calibration", Calibration{Spec: count.Spec}, Stats{Count: 1}, seeded},
		{"invalid spec", Calibration{}, Stats{}, seeded},
		{"halved scale", tampered, Stats{Count: 1}, seeded},
		{"changed sensitivity", relabeled, Stats{Count: 1}, seeded},
		{"negative count", count, Stats{Count: -1}, seeded},
		{"NaN sum", sum, Stats{Sum: math.NaN()}, seeded},
		{"infinite centered sum", mean, Stats{Count: 1, CenteredSum: math.Inf(1)}, seeded},
		{"wrong bin count", hist, Stats{Bins: []int64{1, 2}}, seeded},
		{"negative bin", hist, Stats{Bins: []int64{1, -2, 0}}, seeded},
		{"non-finite noise", count, Stats{Count: 1}, &scriptedNoise{values: []float64{math.Inf(1)}}},
		{"noise runs out mid-histogram", hist, Stats{Bins: []int64{1, 2, 3}}, &scriptedNoise{values: []float64{0, 0}}},
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
	for _, nk := range []NoiseKind{NoiseLaplace, NoiseGaussian} {
		spec := Spec{Kind: KindCount, Noise: nk, Epsilon: 1, MaxContributions: 2}
		if nk == NoiseGaussian {
			spec.Delta = 1e-6
		}
		c := mustCalibrate(t, spec)
		c.Components = slices.Clone(c.Components)
		c.Components[0].Scale *= 2
		noise := &scriptedNoise{values: []float64{0}}
		if _, err := Release(c, Stats{Count: 3}, noise); err != nil {
			t.Fatalf("%s: %v", nk, err)
		}
		if len(noise.calls) != 1 || noise.calls[0].scale != c.Components[0].Scale {
			t.Errorf("%s: draws %+v, want one at scale %v", nk, noise.calls, c.Components[0].Scale)
		}
	}
}

// TestReleaseShapes runs every kind and noise on seeded noise and checks
// the invariants of the output.
func TestReleaseShapes(t *testing.T) {
	stats := Stats{Count: 40, Sum: 12.5, CenteredSum: -3, Bins: []int64{3, 0, 9, 1, 0, 27, 0}}
	for _, kind := range []Kind{KindCount, KindSum, KindMean, KindHistogram} {
		for _, nk := range []NoiseKind{NoiseLaplace, NoiseGaussian} {
			t.Run(string(kind)+"/"+string(nk), func(t *testing.T) {
				spec := Spec{Kind: kind, Noise: nk, Epsilon: 0.7, Lo: -2, Hi: 5, MaxContributions: 2}
				if nk == NoiseGaussian {
					spec.Delta = 1e-7
				}
				if kind == KindCount {
					spec.Lo, spec.Hi = 0, 0
				}
				if kind == KindHistogram {
					spec.Bins = len(stats.Bins)
				}
				c := mustCalibrate(t, spec)
				noise := NewNoise(SeededSource(99))
				for rep := range 50 {
					r, err := Release(c, stats, noise)
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
			a:    Stats{Count: 3, Sum: 1.5, CenteredSum: -0.5, Bins: []int64{1, 2}},
			b:    Stats{Count: 4, Sum: 2.25, CenteredSum: 1, Bins: []int64{0, 5}},
			want: Stats{Count: 7, Sum: 3.75, CenteredSum: 0.5, Bins: []int64{1, 7}},
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
			b:    Stats{Count: 1, Sum: 3},
			want: Stats{Count: 2, Sum: 3},
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
			a:       Stats{Count: 1, Sum: 1, Bins: []int64{1, math.MaxInt64}},
			b:       Stats{Count: 1, Sum: 1, Bins: []int64{1, 1}},
			want:    Stats{Count: 1, Sum: 1, Bins: []int64{1, math.MaxInt64}},
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
			if a.Count != tc.want.Count || a.Sum != tc.want.Sum || a.CenteredSum != tc.want.CenteredSum || !slices.Equal(a.Bins, tc.want.Bins) {
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
		spec := Spec{Kind: KindHistogram, Noise: NoiseLaplace, Epsilon: 1, Lo: r.lo, Hi: r.hi, Bins: r.bins, MaxContributions: 1}
		res, err := Release(mustCalibrate(t, spec), Stats{Bins: make([]int64, r.bins)}, NewNoise(SeededSource(5)))
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
		src := SeededSource(6)
		for range 2000 {
			check(r.lo + (r.hi-r.lo)*uniform53(src.Uint64()))
		}
	}
}

// TestReleaseNoiseMatchesCalibration checks, over many seeded releases, that
// the noise actually added has mean 0 and the calibrated variance, that
// E|noise| matches ExpectedAbsError, and that Value ± Interval95 covers the
// exact statistic 95% of the time.
func TestReleaseNoiseMatchesCalibration(t *testing.T) {
	const reps = 20000
	tests := []struct {
		name  string
		spec  Spec
		stats Stats
		exact []float64 // the exact statistic per released coordinate
	}{
		{"count laplace", Spec{Kind: KindCount, Noise: NoiseLaplace, Epsilon: 0.5, MaxContributions: 3},
			Stats{Count: 1000}, []float64{1000}},
		{"count gaussian", Spec{Kind: KindCount, Noise: NoiseGaussian, Epsilon: 1, Delta: 1e-6, MaxContributions: 3},
			Stats{Count: 1000}, []float64{1000}},
		{"sum laplace", Spec{Kind: KindSum, Noise: NoiseLaplace, Epsilon: 2, Lo: -1, Hi: 4, MaxContributions: 2},
			Stats{Sum: 321.5}, []float64{321.5}},
		{"sum gaussian", Spec{Kind: KindSum, Noise: NoiseGaussian, Epsilon: 0.3, Delta: 1e-8, Lo: -1, Hi: 4, MaxContributions: 2},
			Stats{Sum: 321.5}, []float64{321.5}},
		{"histogram laplace", Spec{Kind: KindHistogram, Noise: NoiseLaplace, Epsilon: 1, Lo: 0, Hi: 1, Bins: 3, MaxContributions: 2},
			Stats{Bins: []int64{50, 0, 7}}, []float64{50, 0, 7}},
		{"histogram gaussian", Spec{Kind: KindHistogram, Noise: NoiseGaussian, Epsilon: 1, Delta: 1e-5, Lo: 0, Hi: 1, Bins: 3, MaxContributions: 2},
			Stats{Bins: []int64{50, 0, 7}}, []float64{50, 0, 7}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCalibrate(t, tc.spec)
			scale := c.Components[0].Scale
			wantVar, sdSq, sdAbs := 2*scale*scale, math.Sqrt(20)*scale*scale, scale // Laplace: Var 2b², sd of X² √20 b², |X| ~ Exp(b)
			if tc.spec.Noise == NoiseGaussian {
				wantVar, sdSq, sdAbs = scale*scale, math.Sqrt2*scale*scale, scale*math.Sqrt(1-2/math.Pi)
			}
			noise := NewNoise(SeededSource(uint64(1000 + i)))
			errs := make([][]float64, len(tc.exact))
			covered := make([]int, len(tc.exact))
			for range reps {
				r, err := Release(c, tc.stats, noise)
				if err != nil {
					t.Fatal(err)
				}
				vals := r.NoisyCounts
				if r.Value != nil {
					vals = []float64{*r.Value}
				}
				for j, v := range vals {
					e := v - tc.exact[j]
					errs[j] = append(errs[j], e)
					if math.Abs(e) <= r.Interval95 {
						covered[j]++
					}
				}
			}
			sqrtN := math.Sqrt(reps)
			for j, es := range errs {
				// Each z-test below has false-failure rate ≈ 5.7e-7.
				mean, variance := meanVar(es)
				if z := mean / (math.Sqrt(wantVar) / sqrtN); math.Abs(z) > zMax {
					t.Errorf("coordinate %d: noise mean %v: z = %.2f", j, mean, z)
				}
				if z := (variance - wantVar) / (sdSq / sqrtN); math.Abs(z) > zMax {
					t.Errorf("coordinate %d: noise variance %v, want %v: z = %.2f", j, variance, wantVar, z)
				}
				abs := 0.0
				for _, e := range es {
					abs += math.Abs(e)
				}
				abs /= reps
				if z := (abs - c.ExpectedAbsError) / (sdAbs / sqrtN); math.Abs(z) > zMax {
					t.Errorf("coordinate %d: mean |noise| %v, ExpectedAbsError %v: z = %.2f", j, abs, c.ExpectedAbsError, z)
				}
				if z := proportionZ(covered[j], reps, 0.95); math.Abs(z) > zMax {
					t.Errorf("coordinate %d: Interval95 covered %d of %d: z = %.2f", j, covered[j], reps, z)
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
	stats := Stats{Count: 2000, CenteredSum: 2000 * 0.8} // exact mean mid + 0.8 = 2.8
	for i, nk := range []NoiseKind{NoiseLaplace, NoiseGaussian} {
		spec := Spec{Kind: KindMean, Noise: nk, Epsilon: 0.5, Lo: 0, Hi: 4, MaxContributions: 3}
		if nk == NoiseGaussian {
			spec.Delta = 1e-6
		}
		c := mustCalibrate(t, spec)
		noise := NewNoise(SeededSource(uint64(77 + i)))
		covered := 0
		for range reps {
			r, err := Release(c, stats, noise)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(*r.Value-2.8) <= r.Interval95 {
				covered++
			}
		}
		if z := proportionZ(covered, reps, 0.95); z < -zMax {
			t.Errorf("%s: mean Interval95 covered %d of %d: z = %.2f", nk, covered, reps, z)
		}
	}
}
