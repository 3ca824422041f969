package selection

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

func mustNew(t *testing.T, p Params) *Selector {
	t.Helper()
	s, err := New(p)
	if err != nil {
		t.Fatalf("New(%+v): %v", p, err)
	}
	return s
}

// TestNewErrors checks that every configuration New cannot calibrate is
// rejected with noise.ErrInvalidSpec and a message naming what to change.
func TestNewErrors(t *testing.T) {
	ok := Params{Method: Laplace, Epsilon: 1, Delta: 1e-6, MaxKeys: 1}
	with := func(f func(*Params)) Params { p := ok; f(&p); return p }
	cases := []struct {
		name string
		p    Params
		want string
	}{
		{"unknown method", with(func(p *Params) { p.Method = "exponential" }), "unknown method"},
		{"empty method", with(func(p *Params) { p.Method = "" }), "unknown method"},
		{"zero epsilon", with(func(p *Params) { p.Epsilon = 0 }), "epsilon must be > 0"},
		{"negative epsilon", with(func(p *Params) { p.Epsilon = -1 }), "epsilon must be > 0"},
		{"NaN epsilon", with(func(p *Params) { p.Epsilon = math.NaN() }), "epsilon must be > 0"},
		{"huge epsilon", with(func(p *Params) { p.Epsilon = 1000 }), "at most 100"},
		{"zero delta", with(func(p *Params) { p.Delta = 0 }), "needs a delta"},
		{"NaN delta", with(func(p *Params) { p.Delta = math.NaN() }), "delta must be > 0"},
		{"delta one", with(func(p *Params) { p.Delta = 1 }), "delta must be < 1"},
		{"zero max_keys", with(func(p *Params) { p.MaxKeys = 0 }), "max_keys must be in"},
		{"huge max_keys", with(func(p *Params) { p.MaxKeys = MaxMaxKeys + 1 }), "max_keys must be in"},
		{"laplace scale beyond 2^50", with(func(p *Params) { p.Epsilon = 1e-16 }), "epsilon too small"},
		{"gaussian sigma beyond 2^50", with(func(p *Params) { p.Method = Gaussian; p.Epsilon = 1e-16; p.Delta = 1e-16 }), "gaussian"},
		{"optimal table too long", with(func(p *Params) { p.Method = Optimal; p.Epsilon = 0.01; p.MaxKeys = 1000 }), "raise epsilon, lower max_keys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.p)
			if err == nil {
				t.Fatalf("New(%+v) = %s, want an error", tc.p, s.Describe())
			}
			if !errors.Is(err, noise.ErrInvalidSpec) {
				t.Errorf("error %q does not wrap ErrInvalidSpec", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestReferenceNumbers pins the calibration at ε = 1, δ = 1e-5 (the
// report's table) and checks the Laplace threshold against the closed form
// τ = 1 + ⌈t·ln(L0/((1 + q)·δ))⌉, q = e^{−1/t}.
func TestReferenceNumbers(t *testing.T) {
	cases := []struct {
		m          Method
		l0         int
		tau        float64
		u50, u99   int64
		resolvedTo Method
	}{
		{Laplace, 1, 13, 13, 17, Laplace},
		{Gaussian, 1, 18, 18, 27, Gaussian},
		{Optimal, 1, 12, 12, 16, Optimal},
		{Auto, 1, 12, 12, 16, Optimal},
		{Laplace, 2, 25, 25, 33, Laplace},
		{Gaussian, 2, 27, 27, 40, Gaussian},
		{Optimal, 2, 23, 23, 30, Optimal},
		{Auto, 2, 23, 23, 30, Optimal},
		{Laplace, 5, 64, 64, 84, Laplace},
		{Gaussian, 5, 44, 44, 65, Gaussian},
		{Optimal, 5, 55, 55, 75, Optimal},
		{Auto, 5, 44, 44, 65, Gaussian},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/L0=%d", tc.m, tc.l0), func(t *testing.T) {
			s := mustNew(t, Params{Method: tc.m, Epsilon: 1, Delta: 1e-5, MaxKeys: tc.l0})
			t.Log(s.Describe())
			if s.Method() != tc.resolvedTo {
				t.Errorf("method %s, want %s", s.Method(), tc.resolvedTo)
			}
			if got := s.Threshold(); got != tc.tau {
				t.Errorf("Threshold() = %v, want %v", got, tc.tau)
			}
			if got := s.UnitsFor(0.5); got != tc.u50 {
				t.Errorf("UnitsFor(0.5) = %d, want %d", got, tc.u50)
			}
			if got := s.UnitsFor(0.99); got != tc.u99 {
				t.Errorf("UnitsFor(0.99) = %d, want %d", got, tc.u99)
			}
			if tc.m == Laplace {
				tt := float64(tc.l0)
				q := math.Exp(-1 / tt)
				want := 1 + math.Ceil(tt*math.Log(float64(tc.l0)/((1+q)*1e-5)))
				if s.Threshold() != want {
					t.Errorf("laplace τ = %v, closed form %v", s.Threshold(), want)
				}
			}
		})
	}
}

// thresholdGrid is the configurations the δ checks run on.
func thresholdGrid() []Params {
	var ps []Params
	for _, m := range []Method{Laplace, Gaussian} {
		for _, eps := range []float64{0.1, 1, 3} {
			for _, delta := range []float64{1e-9, 1e-5, 1e-2} {
				for _, l0 := range []int{1, 2, 7, 1500} {
					ps = append(ps, Params{Method: m, Epsilon: eps, Delta: delta, MaxKeys: l0})
				}
			}
		}
	}
	return ps
}

// TestThresholdDelta checks the δ of the thresholding methods from the
// exact tails, independently of the calibration's own bookkeeping: a key
// created by the unit is released with probability at most δ/L0
// (Laplace), the δ recomputed over every k (no blocks) is within budget
// (Gaussian), and τ is the smallest threshold that is (one less fails).
func TestThresholdDelta(t *testing.T) {
	for _, p := range thresholdGrid() {
		t.Run(fmt.Sprintf("%s/eps=%g/delta=%g/L0=%d", p.Method, p.Epsilon, p.Delta, p.MaxKeys), func(t *testing.T) {
			s := mustNew(t, p)
			l0 := float64(p.MaxKeys)
			p1 := s.Probability(1) // P[Z ≥ τ − 1]
			if !(s.DeltaUsed() <= p.Delta) {
				t.Errorf("DeltaUsed %v > δ %v", s.DeltaUsed(), p.Delta)
			}
			switch p.Method {
			case Laplace:
				if !(p1 <= p.Delta/l0) {
					t.Errorf("P[keep | n=1] = %v > δ/L0 = %v", p1, p.Delta/l0)
				}
				// With τ − 1 the created keys would exceed δ (unless τ is at its floor 2).
				if s.tau > 2 && !(l0*dlapGE(s.scale, s.tau-2) > p.Delta) {
					t.Errorf("τ = %d is not minimal: τ − 1 also meets δ", s.tau)
				}
				if want := l0 / p.Epsilon; s.scale < want*(1-1e-15) || l0/s.scale > p.Epsilon {
					t.Errorf("t = %v, want L0/ε = %v (not below)", s.scale, want)
				}
			case Gaussian:
				worst := gaussianWorstDelta(p, s.scale, s.dgGEUpper(s.tau-1))
				if !(worst <= p.Delta) {
					t.Errorf("max_k δ_noise(k) + (L0−k)·p₁ = %v > δ = %v", worst, p.Delta)
				}
				if p.MaxKeys == 1 && !(p1 <= p.Delta) {
					t.Errorf("L0 = 1: P[keep | n=1] = %v > δ", p1)
				}
				if s.tau > 2 && !(gaussianWorstDelta(p, s.scale, s.dgGEUpper(s.tau-2)) > p.Delta) {
					t.Errorf("τ = %d is not minimal for σ = %v", s.tau, s.scale)
				}
			}
		})
	}
}

// gaussianWorstDelta returns max over k = 0..L0 of δ_noise(k) + (L0 − k)·p1
// at σ, every k evaluated.
func gaussianWorstDelta(p Params, sigma, p1 float64) float64 {
	l0 := int64(p.MaxKeys)
	worst := 0.0
	for k := int64(0); k <= l0; k++ {
		d := 0.0
		if k > 0 {
			d = dgNoiseDelta(p.Epsilon, sigma, k)
		}
		worst = math.Max(worst, d+float64(l0-k)*p1)
	}
	return worst
}

// TestGaussianSplitBeatsHalves checks that the Gaussian calibration is
// never worse than Google's even split (δ/2 for the noise, δ/2 for the
// threshold, summed), the baseline it improves on.
func TestGaussianSplitBeatsHalves(t *testing.T) {
	for _, l0 := range []int{1, 2, 10} {
		p := Params{Method: Gaussian, Epsilon: 1, Delta: 1e-6, MaxKeys: l0}
		s := mustNew(t, p)
		var sigma float64
		var err error
		if l0 == 1 {
			sigma, err = noise.DiscreteGaussianSigma(1, p.Delta/2, 1)
		} else {
			sigma, err = noise.ZCDPGaussianSigma(1, p.Delta/2, math.Sqrt(float64(l0)))
		}
		if err != nil {
			t.Fatal(err)
		}
		half := &Selector{method: Gaussian, scale: sigma, dgNorm: dgNormalizer(sigma)}
		m := smallestInt(1, func(m int64) bool { return float64(l0)*half.dgGEUpper(m) <= p.Delta/2 })
		t.Logf("L0=%d: τ = %d (σ %.4g) vs halves τ = %d (σ %.4g)", l0, s.tau, s.scale, m+1, sigma)
		if s.tau > m+1 {
			t.Errorf("L0=%d: τ = %d is worse than the even split's %d", l0, s.tau, m+1)
		}
	}
}

// TestTails checks the exact tails against independent computations: the
// discrete Laplace closed form against the summed pmf, the discrete
// Gaussian sums against stattest's brute-force table, the calibration's
// upper bound against both, and the large-σ midpoint rule against the exact
// sum at σ = 1000 (absolute error < 0.05/σ²).
func TestTails(t *testing.T) {
	for _, tt := range []float64{0.3, 1, 7.5} {
		law := stattest.DLapLaw(tt)
		for m := int64(-40); m <= 40; m++ {
			want := 1 - law.CDF(m-1)
			if got := dlapGE(tt, m); math.Abs(got-want) > 1e-12*math.Max(want, 1e-300) && math.Abs(got-want) > 1e-15 {
				t.Errorf("t=%v: P[Z ≥ %d] = %v, summed %v", tt, m, got, want)
			}
		}
	}
	for _, sigma := range []float64{0.7, 3.74, 40.45, 700} {
		s := &Selector{method: Gaussian, scale: sigma, dgNorm: dgNormalizer(sigma)}
		tb := stattest.NewDGTable(sigma)
		for _, m := range []int64{-int64(5 * sigma), -3, -1, 0, 1, 2, 5, int64(sigma), int64(3 * sigma), int64(6 * sigma)} {
			// P[Z ≥ m] from the table, summed from the small end for accuracy.
			want := 0.0
			for i := len(tb.PMF) - 1; i >= 0 && int64(i)-tb.Off >= m; i-- {
				want += tb.PMF[i]
			}
			got := s.dgGE(m)
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("σ=%v: P[Z ≥ %d] = %v, table %v", sigma, m, got, want)
			}
			if m >= 1 && !(s.dgGEUpper(m) >= want) {
				t.Errorf("σ=%v: upper bound %v < P[Z ≥ %d] = %v", sigma, s.dgGEUpper(m), m, want)
			}
		}
	}
	const sigma = 1000
	exact := &Selector{method: Gaussian, scale: sigma, dgNorm: dgNormalizer(sigma)}
	mid := &Selector{method: Gaussian, scale: sigma}
	for _, m := range []int64{-2000, 0, 1, 500, 3000} {
		e, g := exact.dgGE(m), mid.dgGE(m)
		if math.Abs(g-e) > 0.05/(sigma*sigma) {
			t.Errorf("σ=%v: midpoint P[Z ≥ %d] = %v, exact %v", float64(sigma), m, g, e)
		}
		if m >= 1 && !(mid.dgGEUpper(m) >= e) {
			t.Errorf("σ=%v: large-σ upper bound %v < exact %v at m=%d", float64(sigma), mid.dgGEUpper(m), e, m)
		}
	}
}

// TestProbabilityMatchesFrequency runs Keep (and Noisy) 20000 times per
// unit count and checks the release frequency against Probability with an
// exact binomial test (false-failure rate stattest.FalseFail = 1e-6 per
// check, 78 checks: below 1e-4 in all; fixed seeds, so deterministic). It
// includes a discrete Gaussian with σ > 1024, whose Probability uses the
// midpoint rule.
func TestProbabilityMatchesFrequency(t *testing.T) {
	const trials = 20000
	cfgs := []Params{
		{Method: Laplace, Epsilon: 1, Delta: 1e-3, MaxKeys: 1},
		{Method: Laplace, Epsilon: 1, Delta: 1e-3, MaxKeys: 3},
		{Method: Gaussian, Epsilon: 1, Delta: 1e-3, MaxKeys: 1},
		{Method: Gaussian, Epsilon: 1, Delta: 1e-3, MaxKeys: 3},
		{Method: Gaussian, Epsilon: 0.001, Delta: 1e-5, MaxKeys: 1},
		{Method: Optimal, Epsilon: 1, Delta: 1e-3, MaxKeys: 1},
		{Method: Optimal, Epsilon: 1, Delta: 1e-3, MaxKeys: 3},
	}
	for ci, p := range cfgs {
		s := mustNew(t, p)
		if p.Method == Gaussian && p.Epsilon < 0.01 && !(s.scale > noise.DiscreteGaussianExactMaxSigma) {
			t.Fatalf("σ = %v: the large-σ case does not exercise the midpoint rule", s.scale)
		}
		spread := int64(math.Max(3*s.scale, 3))
		tau := int64(s.Threshold())
		units := []int64{1, 2, s.UnitsFor(0.01), s.UnitsFor(0.1), s.UnitsFor(0.3), tau - 1, tau, tau + 1, s.UnitsFor(0.7), s.UnitsFor(0.9), tau + spread}
		if p.Method == Optimal {
			units = append(units, s.UnitsFor(1)-1)
		}
		t.Run(fmt.Sprintf("%s/eps=%g/L0=%d", p.Method, p.Epsilon, p.MaxKeys), func(t *testing.T) {
			ns := noise.New(stattest.NewFastSource(uint64(1000 + ci)))
			for _, n := range units {
				if n < 1 {
					continue
				}
				kept := 0
				for range trials {
					keep, err := s.Keep(ns, n)
					if err != nil {
						t.Fatal(err)
					}
					if keep {
						kept++
					}
					if s.HasNoisyCount() {
						v, k2, err := s.Noisy(ns, n)
						if err != nil {
							t.Fatal(err)
						}
						if k2 != (float64(v) >= s.Threshold()) {
							t.Fatalf("Noisy(%d) = %d, keep %v, threshold %v", n, v, k2, s.Threshold())
						}
					}
				}
				want := s.Probability(n)
				if !stattest.BinomialOK(kept, trials, want, stattest.FalseFail) {
					t.Errorf("n=%d: kept %d of %d, Probability %v", n, kept, trials, want)
				}
			}
		})
	}
}

// TestUnitsFor checks UnitsFor's edges and that it inverts Probability:
// P(UnitsFor(p)) ≥ p > P(UnitsFor(p) − 1).
func TestUnitsFor(t *testing.T) {
	for _, m := range []Method{Laplace, Gaussian, Optimal} {
		s := mustNew(t, Params{Method: m, Epsilon: 0.5, Delta: 1e-7, MaxKeys: 2})
		for _, c := range []struct {
			p    float64
			want int64
		}{{-1, 0}, {0, 0}, {1.5, -1}, {math.NaN(), -1}} {
			if got := s.UnitsFor(c.p); got != c.want {
				t.Errorf("%s: UnitsFor(%v) = %d, want %d", m, c.p, got, c.want)
			}
		}
		if got := s.UnitsFor(1); (m == Optimal) != (got > 0) {
			t.Errorf("%s: UnitsFor(1) = %d", m, got)
		}
		for _, p := range []float64{1e-12, 1e-7, 0.01, 0.5, 0.99, 1 - 1e-9} {
			n := s.UnitsFor(p)
			if n < 1 || !(s.Probability(n) >= p) || !(s.Probability(n-1) < p) {
				t.Errorf("%s: UnitsFor(%v) = %d with P(n) = %v, P(n−1) = %v", m, p, n, s.Probability(n), s.Probability(n-1))
			}
		}
		for n := int64(-3); n <= 0; n++ {
			if s.Probability(n) != 0 {
				t.Errorf("%s: Probability(%d) = %v, want 0", m, n, s.Probability(n))
			}
		}
	}
}

// failSampler fails the test if any noise is drawn.
type failSampler struct{ t *testing.T }

func (f failSampler) DiscreteLaplace(float64) (int64, error) {
	f.t.Error("noise drawn")
	return 0, nil
}

func (f failSampler) DiscreteGaussian(float64) (int64, error) {
	f.t.Error("noise drawn")
	return 0, nil
}

// constSampler always draws the same noise.
type constSampler int64

func (c constSampler) DiscreteLaplace(float64) (int64, error)  { return int64(c), nil }
func (c constSampler) DiscreteGaussian(float64) (int64, error) { return int64(c), nil }

// TestKeepEdges: a key with 0 units is never kept and draws nothing (Optimal
// with a failing Sampler would read CryptoSource, which is not observable,
// so π(0) = 0 is what is checked there); a negative count is an error; the
// optimal method has no noisy count; the thresholding methods keep exactly
// the noisy counts ≥ τ and report an int64 overflow; Component is the
// ApproxDP charge.
func TestKeepEdges(t *testing.T) {
	for _, m := range []Method{Laplace, Gaussian, Optimal} {
		s := mustNew(t, Params{Method: m, Epsilon: 1, Delta: 1e-6, MaxKeys: 1})
		keep, err := s.Keep(failSampler{t}, 0)
		if keep || err != nil {
			t.Errorf("%s: Keep(0) = %v, %v", m, keep, err)
		}
		if _, err := s.Keep(failSampler{t}, -1); err == nil {
			t.Errorf("%s: Keep(-1) gave no error", m)
		}
		if m == Optimal {
			_, _, err = s.Noisy(failSampler{t}, 5)
			if !errors.Is(err, ErrNoNoisyCount) || s.HasNoisyCount() || s.NoiseKind() != "" || s.Scale() != 0 {
				t.Errorf("optimal: Noisy error %v, HasNoisyCount %v, NoiseKind %q, Scale %v", err, s.HasNoisyCount(), s.NoiseKind(), s.Scale())
			}
		} else {
			if s.NoiseKind() == "" || s.Scale() <= 0 || !s.HasNoisyCount() {
				t.Errorf("%s: NoiseKind %q, Scale %v", m, s.NoiseKind(), s.Scale())
			}
			if v, keep, err := s.Noisy(failSampler{t}, 0); v != 0 || keep || err != nil {
				t.Errorf("%s: Noisy(0) = %d, %v, %v", m, v, keep, err)
			}
			if _, _, err := s.Noisy(constSampler(1), math.MaxInt64); err == nil {
				t.Errorf("%s: Noisy overflowing int64 gave no error", m)
			}
			if v, keep, err := s.Noisy(constSampler(-3), int64(s.Threshold())+3); v != int64(s.Threshold()) || !keep || err != nil {
				t.Errorf("%s: Noisy(τ+3) with noise −3 = %d, %v, %v; want τ, kept", m, v, keep, err)
			}
			if _, keep, _ := s.Noisy(constSampler(-4), int64(s.Threshold())+3); keep {
				t.Errorf("%s: a noisy count of τ − 1 was kept", m)
			}
		}
		c := s.Component()
		if c.Purpose != PurposeSelection || c.Noise != noise.ApproxDP || c.Epsilon != 1 || c.Delta != 1e-6 {
			t.Errorf("%s: Component %+v", m, c)
		}
		if s.Epsilon() != 1 || s.Delta() != 1e-6 || s.MaxKeys() != 1 {
			t.Errorf("%s: Epsilon %v, Delta %v, MaxKeys %d", m, s.Epsilon(), s.Delta(), s.MaxKeys())
		}
	}
}

// TestAutoPicksBest checks Auto against the three methods built directly:
// Optimal for L0 = 1, otherwise one with the smallest UnitsFor(0.5).
func TestAutoPicksBest(t *testing.T) {
	for _, l0 := range []int{1, 2, 3, 5, 20} {
		for _, eps := range []float64{0.3, 1, 4} {
			p := Params{Method: Auto, Epsilon: eps, Delta: 1e-6, MaxKeys: l0}
			a := mustNew(t, p)
			if !strings.HasPrefix(a.Describe(), "auto: "+string(a.Method())) {
				t.Errorf("Describe %q does not say auto and the method", a.Describe())
			}
			if l0 == 1 {
				if a.Method() != Optimal {
					t.Errorf("L0 = 1, ε = %v: auto chose %s", eps, a.Method())
				}
				continue
			}
			for _, m := range []Method{Laplace, Gaussian, Optimal} {
				p.Method = m
				s := mustNew(t, p)
				if s.UnitsFor(0.5) < a.UnitsFor(0.5) {
					t.Errorf("L0 = %d, ε = %v: auto chose %s (n½ = %d) over %s (n½ = %d)",
						l0, eps, a.Method(), a.UnitsFor(0.5), m, s.UnitsFor(0.5))
				}
			}
		}
	}
}

// TestDescribe checks the explain line names the method, threshold, budget
// and the reach numbers.
func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		m    Method
		want []string
	}{
		{Laplace, []string{"laplace threshold 13 units", "t=1", "ε=1", "δ=1e-05", "max_keys 1", "≥ 0.5 from 13 units", "≥ 0.99 from 17"}},
		{Gaussian, []string{"gaussian threshold 18 units", "σ=3.74", "δ_noise", "δ_threshold", "≥ 0.99 from 27"}},
		{Optimal, []string{"optimal", "Desfontaines", "≥ 0.5 from 12 units", "≥ 0.99 from 16", "certain from 23"}},
	} {
		d := mustNew(t, Params{Method: c.m, Epsilon: 1, Delta: 1e-5, MaxKeys: 1}).Describe()
		for _, w := range c.want {
			if !strings.Contains(d, w) {
				t.Errorf("%s: Describe() = %q lacks %q", c.m, d, w)
			}
		}
	}
}
