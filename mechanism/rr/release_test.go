package rr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"testing"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// rrConstNoise draws the same integer every time, so that Release's
// post-processing can be checked against values worked out by hand.
type rrConstNoise int64

func (z rrConstNoise) DiscreteLaplace(float64) (int64, error)  { return int64(z), nil }
func (z rrConstNoise) DiscreteGaussian(float64) (int64, error) { return int64(z), nil }

// mustCalibrateRR calibrates s or stops the test.
func mustCalibrateRR(t *testing.T, s Spec) Calibration {
	t.Helper()
	c, err := Calibrate(s)
	if err != nil {
		t.Fatalf("CalibrateRR(%+v): %v", s, err)
	}
	return c
}

// rrTestNoiseVariance is the variance of one draw of comp's noise, computed
// independently of the code under test: 2q/(1 − q)², q = e^{−1/t}, for the
// discrete Laplace (the series Σ k²q^|k| normalized), and the brute-force
// table of the discrete Gaussian (stattest.DGTable) for σ up to a few
// thousand.
func rrTestNoiseVariance(t *testing.T, comp noise.Component) float64 {
	t.Helper()
	s := comp.Scale
	switch comp.Noise {
	case noise.DiscreteLaplace:
		q := math.Exp(-1 / s)
		return 2 * q / ((1 - q) * (1 - q))
	case noise.DiscreteGaussian:
		if s > 3000 {
			t.Fatalf("σ = %v is too large for the brute-force table", s)
		}
		m2, _ := stattest.NewDGTable(s).Moments()
		return m2
	}
	t.Fatalf("unknown noise %q", comp.Noise)
	return 0
}

// rrTestVariance is Var(T̂_c) for true counts tc out of n reports, derived
// in the test from first principles: O_c is a sum of Bernoulli(a) over the
// tc[c] reports whose true category is c and Bernoulli(b) over the n − tc[c]
// others (a = 1 − p + p/k, b = p/k), and (1 − p)·(noise part of T̂_c) =
// Z_c − (p/k)·Σ_j Z_j has variance v·((1 − b)² + (k − 1)·b²).
func rrTestVariance(tc []float64, n, p, v float64) []float64 {
	k := float64(len(tc))
	a, b := 1-p+p/k, p/k
	out := make([]float64, len(tc))
	for c, x := range tc {
		rr := x*a*(1-a) + (n-x)*b*(1-b)
		noiseValue := v * ((1-b)*(1-b) + (k-1)*b*b)
		out[c] = (rr + noiseValue) / ((1 - p) * (1 - p))
	}
	return out
}

// TestReleaseRRUnbiased is the acceptance test of the release: for fixed
// true category counts, each repetition randomizes every event with the
// producers' Mechanism (seeded), counts the reports, and releases
// them with seeded central noise. Over R = 2000 repetitions:
//
//   - the mean of Debiased[c] is within 4 standard errors (sample sd/√R) of
//     T_c for every c. With R = 2000 the mean is normal to a good
//     approximation, so each check fails falsely with probability
//     P(|Z| > 4) ≈ 6.3e-5 per category (Bonferroni over the k categories:
//     below 3e-4 per case);
//   - the mean of StdErr² and the exact variance worked out in the test
//     (rrTestVariance) are each within 15% of the empirical variance. The
//     sample variance of R draws has relative sd sqrt((κ − 1)/R), κ the
//     kurtosis of T̂_c. T̂_c is a sum of many independent Bernoullis plus
//     Gaussian noise, or Laplace noise carrying at most 15% of its variance
//     (excess kurtosis 3·0.15² ≈ 0.07), so κ ≈ 3 and the relative sd is
//     ≈ sqrt(2/R) ≈ 3.2%. StdErr² is linear in T̂_c and N̂ except where
//     T̂_c is clipped at 0, which moves it by p(1 − p)(1 − 2/k)·|T̂_c|/(1 − p)²,
//     under 1% of it in these cases, and its mean varies far less than the
//     sample variance. 15% is thus ≥ 4.5 sd, a false-failure rate below
//     1e-5 per check.
//
// The cases cover the brief's configuration (k = 4, p = 1/2, L = 1,
// Laplace, where the randomized response dominates), a Gaussian case where
// the central noise dominates (so its variance term is checked), with L = 2
// and a per-category cap, and k = 2. The seeds are fixed, so runs are
// deterministic.
func TestReleaseRRUnbiased(t *testing.T) {
	const reps = 2000
	cases := []struct {
		name string
		spec Spec
		tc   []int
	}{
		{"k4 p0.5 laplace", Spec{Noise: noise.Laplace, Epsilon: 1, Categories: 4, P: 0.5, MaxContributions: 1},
			[]int{500, 300, 150, 50}},
		{"k3 p0.3 gaussian noise-dominated", Spec{Noise: noise.Gaussian, Epsilon: 0.2, Delta: 1e-6, Categories: 3, P: 0.3, MaxContributions: 2, BinCap: 1},
			[]int{400, 250, 100}},
		{"k2 p0.8 laplace", Spec{Noise: noise.Laplace, Epsilon: 0.25, Categories: 2, P: 0.8, MaxContributions: 1},
			[]int{300, 100}},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cal := mustCalibrateRR(t, tc.spec)
			k := tc.spec.Categories
			rr, err := New(k, tc.spec.P)
			if err != nil {
				t.Fatal(err)
			}
			// stattest.FastSource for the producers' coins (millions of draws; the
			// mutex of SeededSource is slow under -race), SeededSource for
			// the central noise.
			coins := stattest.NewFastSource(uint64(7100 + ci))
			sampler := noise.New(noise.SeededSource(uint64(7200 + ci)))
			est := make([][]float64, k)
			var meanSE2 = make([]float64, k)
			counts := make([]int64, k)
			for range reps {
				clear(counts)
				for c, n := range tc.tc {
					for range n {
						y, err := rr.Randomize(coins, c)
						if err != nil {
							t.Fatal(err)
						}
						counts[y]++
					}
				}
				res, err := Release(cal, counts, sampler)
				if err != nil {
					t.Fatal(err)
				}
				for c := range k {
					est[c] = append(est[c], res.Debiased[c])
					meanSE2[c] += res.StdErr[c] * res.StdErr[c] / reps
				}
			}
			truth := make([]float64, k)
			total := 0.0
			for c, n := range tc.tc {
				truth[c] = float64(n)
				total += truth[c]
			}
			exact := rrTestVariance(truth, total, tc.spec.P, rrTestNoiseVariance(t, cal.Components[0]))
			for c := range k {
				mean, v := stattest.MeanVar(est[c])
				se := math.Sqrt(v / reps)
				if math.Abs(mean-truth[c]) > 4*se { // false-failure ≈ 6.3e-5
					t.Errorf("category %d: mean T̂ = %.2f, truth %v: %.1f standard errors off (limit 4)", c, mean, truth[c], (mean-truth[c])/se)
				}
				if r := meanSE2[c] / v; math.Abs(r-1) > 0.15 { // false-failure < 1e-5
					t.Errorf("category %d: mean StdErr² %.1f vs empirical variance %.1f (ratio %.3f, limit ±15%%)", c, meanSE2[c], v, r)
				}
				if r := exact[c] / v; math.Abs(r-1) > 0.15 { // false-failure < 1e-5
					t.Errorf("category %d: exact variance %.1f vs empirical variance %.1f (ratio %.3f, limit ±15%%)", c, exact[c], v, r)
				}
				t.Logf("category %d: T=%v mean T̂=%.2f (se %.2f); var empirical %.1f, mean StdErr² %.1f, exact %.1f",
					c, truth[c], mean, se, v, meanSE2[c], exact[c])
			}
		})
	}
}

// TestReleaseRRKnownValues checks the post-processing on noise fixed by a
// stub, against values worked out by hand (comments) and the StdErr formula
// re-derived in the test (rrTestVariance with the estimates in place of
// the truth). Deterministic.
func TestReleaseRRKnownValues(t *testing.T) {
	cases := []struct {
		name     string
		p        float64
		counts   []int64
		z        rrConstNoise
		debiased []float64
		freqs    []float64
	}{
		// N̂ = 40, p/k = 1/4: T̂ = ((30 − 10)/½, (10 − 10)/½) = (40, 0).
		{"k2", 0.5, []int64{30, 10}, 0, []float64{40, 0}, []float64{1, 0}},
		// N̂ = 100, p/k = 1/8: T̂ = (D − 12.5)/½ = (−5, 15, 35, 55). T̂/N̂ =
		// (−.05, .15, .35, .55) projects with θ = (.55 + .35 + .15 − 1)/3 =
		// 1/60 to (0, 2/15, 1/3, 8/15).
		{"k4 projected", 0.5, []int64{10, 20, 30, 40}, 0, []float64{-5, 15, 35, 55}, []float64{0, 2.0 / 15, 1.0 / 3, 8.0 / 15}},
		// Noise +1 per count: D = (6, 6, 11), N̂ = 23, p/k = 0.25/3:
		// T̂ = (D − 23/12)/0.75 = (49/9, 49/9, 109/9), already a frequency
		// vector after dividing by 23, so the projection leaves it.
		{"k3 noise+1", 0.25, []int64{5, 5, 10}, 1, []float64{49.0 / 9, 49.0 / 9, 109.0 / 9}, []float64{49.0 / 207, 49.0 / 207, 109.0 / 207}},
		// Noise −10: D = (−9, −8, −7), N̂ = −24 ≤ 0: uniform frequencies;
		// p/k = 0.1: T̂ = (D + 2.4)/0.7 = (−6.6, −5.6, −4.6)/0.7.
		{"k3 all negative", 0.3, []int64{1, 2, 3}, -10, []float64{-6.6 / 0.7, -5.6 / 0.7, -4.6 / 0.7}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		// Noise −3: D = (−3, −3, 7), N̂ = 1 > 0, p/k = 1/6: T̂ = (D − 1/6)·2 =
		// (−19/3, −19/3, 41/3), T̂/N̂ projects with θ = 41/3 − 1 to (0, 0, 1).
		{"k3 small positive total", 0.5, []int64{0, 0, 10}, -3, []float64{-19.0 / 3, -19.0 / 3, 41.0 / 3}, []float64{0, 0, 1}},
	}
	for _, noiseKind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		for _, tc := range cases {
			t.Run(string(noiseKind)+"/"+tc.name, func(t *testing.T) {
				k := len(tc.counts)
				delta := 0.0
				if noiseKind == noise.Gaussian {
					delta = 1e-6
				}
				cal := mustCalibrateRR(t, Spec{Noise: noiseKind, Epsilon: 1, Delta: delta, Categories: k, P: tc.p, MaxContributions: 2})
				res, err := Release(cal, tc.counts, tc.z)
				if err != nil {
					t.Fatal(err)
				}
				nHat := 0.0
				for j, x := range tc.counts {
					want := float64(x + int64(tc.z))
					if res.NoisyCounts[j] != want {
						t.Errorf("NoisyCounts[%d] = %v, want %v", j, res.NoisyCounts[j], want)
					}
					nHat += want
				}
				for j := range k {
					if math.Abs(res.Debiased[j]-tc.debiased[j]) > 1e-12*math.Max(1, math.Abs(tc.debiased[j])) {
						t.Errorf("Debiased[%d] = %v, want %v", j, res.Debiased[j], tc.debiased[j])
					}
					if math.Abs(res.Frequencies[j]-tc.freqs[j]) > 1e-12 {
						t.Errorf("Frequencies[%d] = %v, want %v", j, res.Frequencies[j], tc.freqs[j])
					}
				}
				// StdErr: the exact variance with T̂ clipped to [0, N̂⁺]
				// standing in for T, and N̂⁺ = max(N̂, 0) for n (so with
				// N̂ ≤ 0 only the noise part is left).
				nPos := math.Max(nHat, 0)
				est := make([]float64, k)
				for j, d := range tc.debiased {
					est[j] = math.Min(math.Max(d, 0), nPos)
				}
				want := rrTestVariance(est, nPos, tc.p, rrTestNoiseVariance(t, cal.Components[0]))
				for j := range k {
					if w := math.Sqrt(want[j]); math.Abs(res.StdErr[j]-w) > 1e-9*w {
						t.Errorf("StdErr[%d] = %v, want %v", j, res.StdErr[j], w)
					}
				}
				if w := math.Log((1 - tc.p + tc.p/float64(k)) / (tc.p / float64(k))); math.Abs(res.LocalEpsilon-w) > 1e-12*w {
					t.Errorf("LocalEpsilon = %v, want %v", res.LocalEpsilon, w)
				}
				hc, err := aggregate.Calibrate(aggregate.Spec{Kind: aggregate.KindHistogram, Noise: noiseKind, Epsilon: 1, Delta: delta, Lo: 0, Hi: float64(k), Bins: k, MaxContributions: 2})
				if err != nil {
					t.Fatal(err)
				}
				hr, err := aggregate.Release(hc, aggregate.Stats{Bins: tc.counts}, tc.z)
				if err != nil {
					t.Fatal(err)
				}
				if res.Interval95 != hr.Interval95 || !(res.Interval95 > 0) {
					t.Errorf("Interval95 = %v, want the histogram's %v (> 0)", res.Interval95, hr.Interval95)
				}
			})
		}
	}
}

// TestReleaseRRFrequencies checks invariants of the post-processing on
// many seeded releases, with noise large enough that counts often go
// negative: Frequencies are non-negative and sum to 1 within 1e-12, are
// uniform when N̂ ≤ 0 (in particular when every noisy count is ≤ 0), and
// equal T̂/N̂ when that is already a probability vector; Debiased sums to
// N̂ (Σ_c (D_c − (p/k)N̂)/(1 − p) = N̂); NoisyCounts are integers and are
// exactly what Release draws for the equivalent histogram from the same
// seed (one noise path). Deterministic.
func TestReleaseRRFrequencies(t *testing.T) {
	cases := []struct {
		k    int
		p    float64
		eps  float64
		n    int64 // counts are drawn in [0, n]
		reps int
	}{
		{2, 0.5, 0.05, 3, 200},
		{3, 0.9, 0.1, 10, 200},
		{10, 0.3, 0.01, 20, 200},
		{10, 0.3, 5, 1000, 200},
		{1000, 0.5, 0.5, 5, 10},
	}
	var sawNegTotal, sawAllNonPos, sawInside, sawProjected bool
	for ci, tc := range cases {
		for _, noiseKind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
			delta := 0.0
			if noiseKind == noise.Gaussian {
				delta = 1e-5
			}
			spec := Spec{Noise: noiseKind, Epsilon: tc.eps, Delta: delta, Categories: tc.k, P: tc.p, MaxContributions: 1}
			cal := mustCalibrateRR(t, spec)
			hc, err := aggregate.Calibrate(aggregate.Spec{Kind: aggregate.KindHistogram, Noise: noiseKind, Epsilon: tc.eps, Delta: delta, Lo: 0, Hi: float64(tc.k), Bins: tc.k, MaxContributions: 1})
			if err != nil {
				t.Fatal(err)
			}
			pick := stattest.NewFastSource(uint64(7300 + ci))
			for rep := range tc.reps {
				counts := make([]int64, tc.k)
				for j := range counts {
					counts[j] = int64(pick.Uint64() % uint64(tc.n+1))
				}
				seed := uint64(ci*100000 + rep)
				res, err := Release(cal, counts, noise.New(noise.SeededSource(seed)))
				if err != nil {
					t.Fatal(err)
				}
				hr, err := aggregate.Release(hc, aggregate.Stats{Bins: counts}, noise.New(noise.SeededSource(seed)))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.NoisyCounts, hr.NoisyCounts) {
					t.Fatalf("k=%d %s rep %d: NoisyCounts differ from the histogram's with the same seed", tc.k, noiseKind, rep)
				}
				nHat, allNonPos := 0.0, true
				for _, d := range res.NoisyCounts {
					if d != math.Trunc(d) {
						t.Fatalf("noisy count %v is not an integer", d)
					}
					nHat += d
					allNonPos = allNonPos && d <= 0
				}
				sumF, sumT, inside := 0.0, 0.0, true
				for j, f := range res.Frequencies {
					if !(f >= 0) {
						t.Fatalf("k=%d %s rep %d: Frequencies[%d] = %v < 0", tc.k, noiseKind, rep, j, f)
					}
					sumF += f
					sumT += res.Debiased[j]
					inside = inside && res.Debiased[j] >= 0
				}
				if math.Abs(sumF-1) > 1e-12 {
					t.Fatalf("k=%d %s rep %d: Frequencies sum to 1%+g", tc.k, noiseKind, rep, sumF-1)
				}
				if math.Abs(sumT-nHat) > 1e-9*math.Max(1, math.Abs(nHat)) {
					t.Fatalf("k=%d %s rep %d: Debiased sums to %v, N̂ = %v", tc.k, noiseKind, rep, sumT, nHat)
				}
				switch {
				case nHat <= 0:
					sawNegTotal = true
					sawAllNonPos = sawAllNonPos || allNonPos
					for j, f := range res.Frequencies {
						if f != 1/float64(tc.k) {
							t.Fatalf("k=%d %s rep %d: N̂ = %v ≤ 0 but Frequencies[%d] = %v, want uniform", tc.k, noiseKind, rep, nHat, j, f)
						}
					}
				case inside:
					sawInside = true
					for j, f := range res.Frequencies {
						if w := res.Debiased[j] / nHat; math.Abs(f-w) > 1e-12 {
							t.Fatalf("k=%d %s rep %d: T̂/N̂ is a probability vector but Frequencies[%d] = %v, want %v", tc.k, noiseKind, rep, j, f, w)
						}
					}
				default:
					sawProjected = true
				}
			}
		}
	}
	// The cases must have reached every branch, or the test proves less
	// than it says.
	if !sawNegTotal || !sawAllNonPos || !sawInside || !sawProjected {
		t.Errorf("coverage: N̂ ≤ 0 %v, all counts ≤ 0 %v, already a distribution %v, projected %v; want all true",
			sawNegTotal, sawAllNonPos, sawInside, sawProjected)
	}
}

// TestRRLocalEpsilon checks LocalEpsilon against the definition
// log((1 − p + p/k)/(p/k)) and against the producers' Mechanism of
// the same (k, p), and that Release reports it. Deterministic.
func TestRRLocalEpsilon(t *testing.T) {
	cases := []struct {
		k int
		p float64
	}{
		{2, 0.5}, {2, 0.01}, {2, 0.999}, {3, 0.25}, {4, 0.5}, {10, 0.75}, {1000, 0.1}, {aggregate.MaxBins, 0.9},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("k=%d p=%v", tc.k, tc.p), func(t *testing.T) {
			s := Spec{Noise: noise.Laplace, Epsilon: 1, Categories: tc.k, P: tc.p, MaxContributions: 1}
			got := s.LocalEpsilon()
			kf := float64(tc.k)
			want := math.Log((1 - tc.p + tc.p/kf) / (tc.p / kf))
			if math.Abs(got-want) > 1e-12*want {
				t.Errorf("LocalEpsilon = %v, want log((1 − p + p/k)/(p/k)) = %v", got, want)
			}
			rr, err := New(tc.k, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if e := rr.Epsilon(); got != e {
				t.Errorf("LocalEpsilon = %v, RandomizedResponse.Epsilon = %v", got, e)
			}
			if tc.k > 1000 {
				return // the release below would allocate MaxBins counts for nothing
			}
			res, err := Release(mustCalibrateRR(t, s), make([]int64, tc.k), rrConstNoise(0))
			if err != nil {
				t.Fatal(err)
			}
			if res.LocalEpsilon != got {
				t.Errorf("RRResult.LocalEpsilon = %v, want %v", res.LocalEpsilon, got)
			}
		})
	}
}

// TestCalibrateRRComponents checks that a randomized_response release is
// charged exactly as the equivalent histogram (k unit bins on [0, k], same
// noise, budget, L and cap), spelled out here independently of the code's
// mapping. Deterministic.
func TestCalibrateRRComponents(t *testing.T) {
	var cases []Spec
	for _, noiseKind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		delta := 0.0
		if noiseKind == noise.Gaussian {
			delta = 1e-6
		}
		for _, lc := range [][2]int{{1, 0}, {1, 1}, {3, 0}, {5, 2}, {8, 8}} {
			for _, k := range []int{2, 7} {
				cases = append(cases, Spec{Noise: noiseKind, Epsilon: 0.7, Delta: delta, Categories: k, P: 0.4,
					MaxContributions: lc[0], BinCap: lc[1]})
			}
		}
	}
	for _, s := range cases {
		t.Run(fmt.Sprintf("%s k=%d L=%d c=%d", s.Noise, s.Categories, s.MaxContributions, s.BinCap), func(t *testing.T) {
			c := mustCalibrateRR(t, s)
			h, err := aggregate.Calibrate(aggregate.Spec{Kind: aggregate.KindHistogram, Noise: s.Noise, Epsilon: s.Epsilon, Delta: s.Delta,
				Lo: 0, Hi: float64(s.Categories), Bins: s.Categories, MaxContributions: s.MaxContributions, BinCap: s.BinCap})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Components, h.Components) {
				t.Errorf("components\n%+v\nwant the histogram's\n%+v", c.Components, h.Components)
			}
			if c.Spec != s {
				t.Errorf("Spec = %+v, want %+v", c.Spec, s)
			}
		})
	}
}

// TestCalibrateRRBinCapSensitivity checks the charged sensitivity with a
// per-category cap c: L for the discrete Laplace whatever c (a unit's
// reports still add up to L), and for the discrete Gaussian the L2
// sensitivity sqrt(⌊L/c⌋·c² + (L mod c)²) (L without a cap), never below
// it (checked in exact arithmetic) and above it by at most a rounding.
// Deterministic.
func TestCalibrateRRBinCapSensitivity(t *testing.T) {
	cases := []struct{ l, c int }{
		{1, 0}, {1, 1}, {2, 1}, {4, 0}, {4, 1}, {4, 2}, {4, 3}, {4, 4}, {7, 3}, {10, 4}, {100, 7},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("L=%d c=%d", tc.l, tc.c), func(t *testing.T) {
			lap := mustCalibrateRR(t, Spec{Noise: noise.Laplace, Epsilon: 1, Categories: 5, P: 0.5, MaxContributions: tc.l, BinCap: tc.c})
			if got := lap.Components[0].Sensitivity; got != float64(tc.l) {
				t.Errorf("laplace sensitivity %v, want L = %d", got, tc.l)
			}
			gau := mustCalibrateRR(t, Spec{Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-6, Categories: 5, P: 0.5, MaxContributions: tc.l, BinCap: tc.c})
			c := tc.c
			if c == 0 {
				c = tc.l
			}
			sq := int64(tc.l/c)*int64(c*c) + int64(tc.l%c)*int64(tc.l%c)
			got := gau.Components[0].Sensitivity
			if want := math.Sqrt(float64(sq)); math.Abs(got-want) > 1e-12*want {
				t.Errorf("gaussian sensitivity %v, want sqrt(%d) = %v", got, sq, want)
			}
			g := new(big.Float).SetPrec(200).SetFloat64(got)
			if g.Mul(g, g).Cmp(new(big.Float).SetInt64(sq)) < 0 {
				t.Errorf("gaussian sensitivity %v is below sqrt(%d): the charge would be too small", got, sq)
			}
		})
	}
}

// TestRRErrors checks that invalid specs are rejected with ErrInvalidSpec
// and that Release refuses, and returns no result for, inputs that cannot
// come from the accumulate stage or a calibration with too little noise.
func TestRRErrors(t *testing.T) {
	good := Spec{Noise: noise.Laplace, Epsilon: 1, Categories: 3, P: 0.5, MaxContributions: 2}
	gauss := Spec{Noise: noise.Gaussian, Epsilon: 1, Delta: 1e-6, Categories: 3, P: 0.5, MaxContributions: 2}
	edit := func(s Spec, f func(*Spec)) Spec { f(&s); return s }
	specs := []struct {
		name string
		spec Spec
	}{
		{"k=0", edit(good, func(s *Spec) { s.Categories = 0 })},
		{"k=1", edit(good, func(s *Spec) { s.Categories = 1 })},
		{"k=-3", edit(good, func(s *Spec) { s.Categories = -3 })},
		{"k too large", edit(good, func(s *Spec) { s.Categories = aggregate.MaxBins + 1 })},
		{"p=0", edit(good, func(s *Spec) { s.P = 0 })},
		{"p=1", edit(good, func(s *Spec) { s.P = 1 })},
		{"p<0", edit(good, func(s *Spec) { s.P = -0.2 })},
		{"p>1", edit(good, func(s *Spec) { s.P = 1.5 })},
		{"p NaN", edit(good, func(s *Spec) { s.P = math.NaN() })},
		{"p so small that p/k underflows", edit(good, func(s *Spec) { s.P = 5e-324 })},
		{"p Inf", edit(good, func(s *Spec) { s.P = math.Inf(1) })},
		{"unknown noise", edit(good, func(s *Spec) { s.Noise = "uniform" })},
		{"discrete noise word", edit(good, func(s *Spec) { s.Noise = noise.DiscreteLaplace })},
		{"no noise", edit(good, func(s *Spec) { s.Noise = "" })},
		{"eps=0", edit(good, func(s *Spec) { s.Epsilon = 0 })},
		{"eps<0", edit(good, func(s *Spec) { s.Epsilon = -1 })},
		{"eps NaN", edit(good, func(s *Spec) { s.Epsilon = math.NaN() })},
		{"eps Inf", edit(good, func(s *Spec) { s.Epsilon = math.Inf(1) })},
		{"laplace with delta", edit(good, func(s *Spec) { s.Delta = 1e-6 })},
		{"gaussian delta=0", edit(gauss, func(s *Spec) { s.Delta = 0 })},
		{"gaussian delta=1", edit(gauss, func(s *Spec) { s.Delta = 1 })},
		{"gaussian delta NaN", edit(gauss, func(s *Spec) { s.Delta = math.NaN() })},
		{"L=0", edit(good, func(s *Spec) { s.MaxContributions = 0 })},
		{"cap<0", edit(good, func(s *Spec) { s.BinCap = -1 })},
		{"cap>L", edit(good, func(s *Spec) { s.BinCap = 3 })},
	}
	for _, tc := range specs {
		t.Run("calibrate/"+tc.name, func(t *testing.T) {
			c, err := Calibrate(tc.spec)
			if !errors.Is(err, noise.ErrInvalidSpec) {
				t.Fatalf("CalibrateRR(%+v) error %v, want one wrapping ErrInvalidSpec", tc.spec, err)
			}
			if c.Components != nil {
				t.Errorf("components %+v returned with an error", c.Components)
			}
		})
	}

	cal := mustCalibrateRR(t, good)
	// Edited in place: neither the histogram's internal copy nor its
	// record of what Calibrate derived may share this slice.
	halved := mustCalibrateRR(t, good)
	halved.Components[0].Scale /= 2
	moreEps := mustCalibrateRR(t, good)
	moreEps.Spec.Epsilon *= 2
	badP := mustCalibrateRR(t, good)
	badP.Spec.P = 1
	noComps := mustCalibrateRR(t, good)
	noComps.Components = nil
	ok := []int64{3, 4, 5}
	nz := noise.New(noise.SeededSource(7400))
	releases := []struct {
		name   string
		c      Calibration
		counts []int64
		n      noise.Sampler
	}{
		{"nil noise", cal, ok, nil},
		{"nil counts", cal, nil, nz},
		{"too few counts", cal, []int64{3, 4}, nz},
		{"too many counts", cal, []int64{3, 4, 5, 6}, nz},
		{"negative count", cal, []int64{3, -1, 5}, nz},
		{"zero calibration", Calibration{}, ok, nz},
		{"halved noise", halved, ok, nz},
		{"epsilon raised after calibration", moreEps, ok, nz},
		{"p edited to 1", badP, ok, nz},
		{"components removed", noComps, ok, nz},
	}
	for _, tc := range releases {
		t.Run("release/"+tc.name, func(t *testing.T) {
			r, err := Release(tc.c, tc.counts, tc.n)
			if err == nil {
				t.Fatalf("ReleaseRR succeeded: %+v", r)
			}
			if r.NoisyCounts != nil || r.Debiased != nil || r.Frequencies != nil || r.StdErr != nil {
				t.Errorf("partial result %+v returned with error %v", r, err)
			}
		})
	}
	// Positive control: the same inputs with the untouched calibration
	// release, so the failures above come from the edits.
	if _, err := Release(cal, ok, nz); err != nil {
		t.Errorf("untouched calibration: %v", err)
	}
}
