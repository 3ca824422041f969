package mechanism

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

var (
	gridEps   = []float64{0.01, 0.1, 0.5, 1, 2, 5, 10, 50}
	gridDelta = []float64{1e-2, 1e-5, 1e-8, 1e-12}
	gridSens  = []float64{1, 3.5}
)

// TestAnalyticGaussianSigmaSolvesCondition checks over a grid that the σ
// returned meets the condition with equality up to a relative 1e-6, never
// exceeds δ, and is the smallest such σ (1e-8 less misses the target).
func TestAnalyticGaussianSigmaSolvesCondition(t *testing.T) {
	for _, eps := range gridEps {
		for _, delta := range gridDelta {
			for _, d := range gridSens {
				sigma, err := AnalyticGaussianSigma(eps, delta, d)
				if err != nil {
					t.Errorf("AnalyticGaussianSigma(%v, %v, %v): %v", eps, delta, d, err)
					continue
				}
				got := GaussianDelta(eps, sigma, d)
				if got > delta || math.Abs(got-delta) > 1e-6*delta {
					t.Errorf("eps=%v delta=%v D=%v: sigma=%v gives delta %v", eps, delta, d, sigma, got)
				}
				if smaller := GaussianDelta(eps, sigma*(1-1e-8), d); !(smaller > delta) {
					t.Errorf("eps=%v delta=%v D=%v: sigma·(1−1e-8) still meets delta (%v): not the smallest", eps, delta, d, smaller)
				}
			}
		}
	}
}

// privacyLossDelta computes δ(ε) for the Gaussian mechanism independently of
// GaussianDelta: from the privacy-loss distribution L ~ N(η, 2η),
// η = Δ²/(2σ²), δ = E[(1 − e^{ε−L})₊], by composite Gauss–Legendre
// quadrature over z = (L − η)/sqrt(2η).
func privacyLossDelta(eps, sigma, d float64) float64 {
	eta := d * d / (2 * sigma * sigma)
	s := math.Sqrt(2 * eta)
	z0 := (eps - eta) / s
	f := func(z float64) float64 {
		return -math.Expm1(eps-eta-s*z) * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	}
	const width = 0.25
	end := math.Max(z0, 0) + 40
	total := 0.0
	for a := z0; a < end; a += width {
		total += quad.Fixed(f, a, a+width, 16, quad.Legendre{}, 0)
	}
	return total
}

func TestGaussianDeltaMatchesPrivacyLossDistribution(t *testing.T) {
	for _, eps := range []float64{0, 0.05, 0.5, 1, 3, 10} {
		for _, sigmaOverD := range []float64{0.3, 1, 2.5, 10, 100} {
			for _, d := range gridSens {
				sigma := sigmaOverD * d
				want := privacyLossDelta(eps, sigma, d)
				if want < 1e-250 {
					continue // both underflow-level; nothing to compare
				}
				got := GaussianDelta(eps, sigma, d)
				if math.Abs(got-want) > 1e-8*want {
					t.Errorf("GaussianDelta(%v, %v, %v) = %v, quadrature gives %v", eps, sigma, d, got, want)
				}
			}
		}
	}
}

func TestGaussianDeltaTotalVariationAtZero(t *testing.T) {
	// At ε = 0, δ is the total-variation distance between N(0, σ²) and
	// N(Δ, σ²): 2Φ(Δ/(2σ)) − 1 = erf(Δ/(2σ√2)).
	for _, sigma := range []float64{0.1, 1, 7} {
		got, want := GaussianDelta(0, sigma, 1), math.Erf(1/(2*sigma*math.Sqrt2))
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("GaussianDelta(0, %v, 1) = %v, want %v", sigma, got, want)
		}
	}
}

func TestGaussianDeltaInvalid(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range [][3]float64{
		{-0.1, 1, 1}, {nan, 1, 1}, {inf, 1, 1},
		{1, 0, 1}, {1, -1, 1}, {1, nan, 1}, {1, inf, 1},
		{1, 1, 0}, {1, 1, -1}, {1, 1, nan}, {1, 1, inf},
	} {
		if got := GaussianDelta(c[0], c[1], c[2]); !math.IsNaN(got) {
			t.Errorf("GaussianDelta(%v, %v, %v) = %v, want NaN", c[0], c[1], c[2], got)
		}
	}
}

// TestAnalyticSigmaBeatsClassical: for ε < 1 the classical σ is valid, and
// the analytic σ is strictly smaller.
func TestAnalyticSigmaBeatsClassical(t *testing.T) {
	for _, eps := range []float64{0.01, 0.1, 0.5, 0.9, 0.99} {
		for _, delta := range gridDelta {
			classical := math.Sqrt(2*math.Log(1.25/delta)) / eps
			if got := GaussianDelta(eps, classical, 1); got > delta {
				t.Errorf("eps=%v delta=%v: classical sigma %v has delta %v", eps, delta, classical, got)
			}
			sigma, err := AnalyticGaussianSigma(eps, delta, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !(sigma < classical) {
				t.Errorf("eps=%v delta=%v: analytic sigma %v not below classical %v", eps, delta, sigma, classical)
			}
		}
	}
}

func TestAnalyticSigmaMonotone(t *testing.T) {
	sigma := func(eps, delta, d float64) float64 {
		t.Helper()
		s, err := AnalyticGaussianSigma(eps, delta, d)
		if err != nil {
			t.Fatalf("AnalyticGaussianSigma(%v, %v, %v): %v", eps, delta, d, err)
		}
		return s
	}
	// Strictly decreasing in ε and in δ.
	for _, delta := range gridDelta {
		for i := 1; i < len(gridEps); i++ {
			if a, b := sigma(gridEps[i-1], delta, 1), sigma(gridEps[i], delta, 1); !(b < a) {
				t.Errorf("delta=%v: sigma(eps=%v)=%v not below sigma(eps=%v)=%v", delta, gridEps[i], b, gridEps[i-1], a)
			}
		}
	}
	for _, eps := range gridEps {
		for i := 1; i < len(gridDelta); i++ {
			// gridDelta decreases, so sigma must increase.
			if a, b := sigma(eps, gridDelta[i-1], 1), sigma(eps, gridDelta[i], 1); !(b > a) {
				t.Errorf("eps=%v: sigma(delta=%v)=%v not above sigma(delta=%v)=%v", eps, gridDelta[i], b, gridDelta[i-1], a)
			}
		}
	}
	// Linear in Δ: the condition depends on σ/Δ only.
	for _, d := range []float64{1e-3, 0.5, 7, 1e6} {
		base := sigma(1, 1e-6, 1)
		if got := sigma(1, 1e-6, d) / d; math.Abs(got-base) > 1e-10*base {
			t.Errorf("sigma(1, 1e-6, %v)/%v = %v, want %v", d, d, got, base)
		}
	}
}

func TestAnalyticSigmaErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct{ eps, delta, d float64 }{
		{0, 1e-5, 1}, {-1, 1e-5, 1}, {nan, 1e-5, 1}, {inf, 1e-5, 1},
		{1, 0, 1}, {1, 1, 1}, {1, -1e-5, 1}, {1, 2, 1}, {1, nan, 1},
		{1, 1e-5, 0}, {1, 1e-5, -1}, {1, 1e-5, nan}, {1, 1e-5, inf},
	}
	for _, tc := range tests {
		if s, err := AnalyticGaussianSigma(tc.eps, tc.delta, tc.d); err == nil {
			t.Errorf("AnalyticGaussianSigma(%v, %v, %v) = %v, want an error", tc.eps, tc.delta, tc.d, s)
		}
	}
}

func TestLogPhi(t *testing.T) {
	// Against erfc where erfc is still a normal float: the asymptotic
	// branch (x ≤ −35) must join it smoothly, and the upper tail must keep
	// relative accuracy where Φ rounds to 1.
	for _, x := range []float64{-37, -36, -35.5, -35.01, -34.99, -10, -1, 0, 1, 4.99, 5.01, 10, 30} {
		var want float64
		if x > 0 {
			want = math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
		} else {
			want = math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
		}
		if got := logPhi(x); math.Abs(got-want) > 1e-13*math.Abs(want) {
			t.Errorf("logPhi(%v) = %v, want %v", x, got, want)
		}
	}
	if got := logPhi(10); got == 0 {
		t.Error("logPhi(10) rounded to 0; want about −7.6e-24")
	}
	if got := logPhi(-1e3); math.IsInf(got, 0) || got > -5e5 {
		t.Errorf("logPhi(-1000) = %v, want about −500000", got)
	}
}

// TestGaussianMechanismMonteCarlo checks the calibration against the
// definition of (ε, δ)-DP by simulation: with M(x) = N(0, σ²) and
// M(x') = N(Δ, σ²), P[M(x) ∈ S] − e^ε·P[M(x') ∈ S] ≤ δ for every S. The
// sets tried are the half-lines S_t = {y < t}, which include the optimal
// set {y: p₀(y)/p₁(y) > e^ε}; the test also checks that the bound is tight
// there and that 0.8σ would violate it.
func TestGaussianMechanismMonteCarlo(t *testing.T) {
	const (
		eps, delta, d = 1.0, 1e-2, 1.0
		n             = 200000
	)
	sigma, err := AnalyticGaussianSigma(eps, delta, d)
	if err != nil {
		t.Fatal(err)
	}
	noise := NewNoise(SeededSource(2024))
	// estimate returns P̂₀(S_t) − e^ε·P̂₁(S_t) and its standard error for
	// thresholds ts, from n draws under each neighbour at noise sd s.
	estimate := func(s float64, ts []float64) (est, se []float64) {
		x0 := make([]float64, n)
		x1 := make([]float64, n)
		for i := range n {
			x0[i] = noise.Gaussian(s)
			x1[i] = d + noise.Gaussian(s)
		}
		slices.Sort(x0)
		slices.Sort(x1)
		for _, th := range ts {
			// Number of draws below th, by binary search in the sorted draws.
			k0, _ := slices.BinarySearch(x0, th)
			k1, _ := slices.BinarySearch(x1, th)
			p0, p1 := float64(k0)/n, float64(k1)/n
			est = append(est, p0-math.Exp(eps)*p1)
			se = append(se, math.Sqrt(p0*(1-p0)/n+math.Exp(2*eps)*p1*(1-p1)/n))
		}
		return est, se
	}
	// Optimal threshold: L(y) > ε ⇔ y < Δ/2 − εσ²/Δ.
	tStar := d/2 - eps*sigma*sigma/d
	var ts []float64
	for k := -30; k <= 30; k++ {
		ts = append(ts, tStar+float64(k)*sigma/10)
	}
	est, se := estimate(sigma, ts)
	for i, th := range ts {
		// One-sided z-test per set; 61 sets at 2.9e-7 each give a
		// false-failure rate ≤ 1.8e-5 by the union bound.
		if est[i] > delta+zMax*se[i] {
			t.Errorf("set y < %.3f: P0 − e^ε P1 = %.5f > delta %.5f + 5·%.5f", th, est[i], delta, se[i])
		}
	}
	// Tightness at the optimal set (index 30); false-failure ≈ 5.7e-7.
	if z := (est[30] - delta) / se[30]; math.Abs(z) > zMax {
		t.Errorf("optimal set: P0 − e^ε P1 = %.5f, want ≈ delta %.5f (z = %.2f)", est[30], delta, z)
	}
	// With 0.8σ the optimal set must show a violation: the true value is
	// GaussianDelta(ε, 0.8σ) ≈ 0.03, over 20 standard errors above δ, so a
	// miss at 5 standard errors has probability far below 1e-9.
	small := 0.8 * sigma
	estS, seS := estimate(small, []float64{d/2 - eps*small*small/d})
	if !(estS[0]-zMax*seS[0] > delta) {
		t.Errorf("sigma·0.8: P0 − e^ε P1 = %.5f ± %.5f does not exceed delta %v", estS[0], seS[0], delta)
	}
	t.Logf("sigma=%v, optimal-set estimate %.5f ± %.5f, at 0.8σ %.5f ± %.5f (exact %.5f)",
		sigma, est[30], se[30], estS[0], seS[0], GaussianDelta(eps, small, d))
}

func ExampleAnalyticGaussianSigma() {
	sigma, err := AnalyticGaussianSigma(1, 1e-5, 1)
	if err != nil {
		panic(err)
	}
	classical := math.Sqrt(2*math.Log(1.25/1e-5)) / 1
	fmt.Printf("analytic %.2f < classical %.2f\n", sigma, classical)
	// Output: analytic 3.73 < classical 4.84
}
