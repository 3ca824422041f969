package noise

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
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
		n             = 100000
	)
	sigma, err := AnalyticGaussianSigma(eps, delta, d)
	if err != nil {
		t.Fatal(err)
	}
	// Round σ up to a whole number of grid steps (a relative change below
	// 2^-39, invisible here) so the sampler stays on its 128-bit path.
	g, err := Granularity(sigma)
	if err != nil {
		t.Fatal(err)
	}
	sigma = g * math.Ceil(sigma/g)
	sampler := New(stattest.NewFastSource(2024))
	// estimate returns P̂₀(S_t) − e^ε·P̂₁(S_t) and its standard error for
	// thresholds ts, from n draws under each neighbour at noise sd s. The
	// noise is the secure one releases use: discrete Gaussian on a grid
	// of 2^-40·s, indistinguishable from N(0, s²) at this sample size.
	estimate := func(s float64, ts []float64) (est, se []float64) {
		x0 := make([]float64, n)
		x1 := make([]float64, n)
		for i := range n {
			var err0, err1 error
			x0[i], err0 = AddGaussian(sampler, 0, s)
			x1[i], err1 = AddGaussian(sampler, d, s)
			if err0 != nil || err1 != nil {
				t.Fatal(err0, err1)
			}
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
		if est[i] > delta+stattest.ZMax*se[i] {
			t.Errorf("set y < %.3f: P0 − e^ε P1 = %.5f > delta %.5f + 5·%.5f", th, est[i], delta, se[i])
		}
	}
	// Tightness at the optimal set (index 30); false-failure ≈ 5.7e-7.
	if z := (est[30] - delta) / se[30]; math.Abs(z) > stattest.ZMax {
		t.Errorf("optimal set: P0 − e^ε P1 = %.5f, want ≈ delta %.5f (z = %.2f)", est[30], delta, z)
	}
	// With 0.8σ the optimal set must show a violation: the true value is
	// GaussianDelta(ε, 0.8σ) ≈ 0.031, about 11 standard errors (0.0018)
	// above δ, so a miss at 5 standard errors has probability about 1e-9.
	small := 0.8 * sigma
	if gs, err := Granularity(small); err == nil {
		small = gs * math.Ceil(small/gs) // whole grid steps, as above
	}
	estS, seS := estimate(small, []float64{d/2 - eps*small*small/d})
	if !(estS[0]-stattest.ZMax*seS[0] > delta) {
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

// bruteDiscreteDelta computes the hockey-stick divergence
// Σ_y max(0, P(y) − e^ε·Q(y)) between N_Z(0, σ²) and N_Z(n, σ²) directly
// from the two normalized pmfs, independently of DiscreteGaussianDelta.
func bruteDiscreteDelta(eps, sigma float64, n int64) float64 {
	return bruteDeltaFromTable(eps, stattest.NewDGTable(sigma), n)
}

// bruteDeltaFromTable is bruteDiscreteDelta on a tabulated N_Z(0, σ²).
func bruteDeltaFromTable(eps float64, tb stattest.DGTable, n int64) float64 {
	total := 0.0
	for y := -tb.Off - n; y <= tb.Off+n; y++ {
		if d := tb.P(y) - math.Exp(eps)*tb.P(y-n); d > 0 {
			total += d
		}
	}
	return total
}

// TestDiscreteGaussianDeltaExact compares the summed δ(ε) of CKS 2020
// Theorem 7 with the brute-force hockey-stick divergence, for the worst
// shift n = Δ, and checks that every smaller shift is no worse (the
// monotonicity argument in DiscreteGaussianDelta's documentation).
func TestDiscreteGaussianDeltaExact(t *testing.T) {
	for _, sigma := range []float64{0.3, 0.8, 1, 2.5, 7, 40, 300} {
		for _, d := range []int64{1, 2, 5} {
			for _, eps := range []float64{0, 0.1, 1, 3} {
				got := DiscreteGaussianDelta(eps, sigma, d)
				want := bruteDiscreteDelta(eps, sigma, d)
				if want < 1e-280 {
					if got > 1e-270 {
						t.Errorf("σ=%v Δ=%d ε=%v: δ = %v, brute force %v", sigma, d, eps, got, want)
					}
					continue
				}
				// An upper bound, tight to 1e-9 relative (the sums carry a
				// 1e-10 rounding margin).
				if got < want*(1-1e-12) || got > want*(1+1e-9) {
					t.Errorf("σ=%v Δ=%d ε=%v: δ = %v, brute force %v", sigma, d, eps, got, want)
				}
				for n := int64(1); n < d; n++ {
					if dn := bruteDiscreteDelta(eps, sigma, n); dn > got*(1+1e-12) {
						t.Errorf("σ=%v ε=%v: shift %d has δ %v above shift %d's %v", sigma, eps, n, dn, d, got)
					}
				}
			}
		}
	}
	for _, bad := range []struct {
		eps, sigma float64
		d          int64
	}{{-1, 1, 1}, {math.NaN(), 1, 1}, {math.Inf(1), 1, 1}, {1, 0, 1}, {1, math.Inf(1), 1}, {1, 1, 0}} {
		if got := DiscreteGaussianDelta(bad.eps, bad.sigma, bad.d); !math.IsNaN(got) {
			t.Errorf("DiscreteGaussianDelta(%v, %v, %d) = %v, want NaN", bad.eps, bad.sigma, bad.d, got)
		}
	}
}

// TestDiscreteGaussianDeltaBound checks the σ > 1024 branch, the continuous
// δ plus the midpoint-rule expansion and its remainder, against brute-force
// summation: it must be an upper bound, and tight to a relative 1e-5
// wherever δ ≥ 1e-30. (The remainder bound is of relative order
// u⁴/(70·Δ·σ²) with u = εσ/Δ the threshold in units of σ: about 2e-6 at
// σ = 2600, Δ = 1, u = 5.2, the loosest case here; these are deterministic
// numerical comparisons, not statistical ones.)
func TestDiscreteGaussianDeltaBound(t *testing.T) {
	for _, sigma := range []float64{1100, 2600.5} {
		tb := stattest.NewDGTable(sigma)
		for _, d := range []int64{1, 7, 1000} {
			for _, eps := range []float64{0, 0.0005, 0.002, 0.01, 0.1, 1} {
				got := DiscreteGaussianDelta(eps, sigma, d)
				want := bruteDeltaFromTable(eps, tb, d)
				if want < 1e-250 {
					continue
				}
				if got < want || (want > 1e-30 && got > want*(1+1e-5)) || got > want*1.01 {
					t.Errorf("σ=%v Δ=%d ε=%v: bound %v, brute force %v (relative %v)", sigma, d, eps, got, want, got/want-1)
				}
			}
		}
	}
}

// TestDiscreteGaussianSigma: the σ returned meets δ, 1e-8 less misses it,
// and it approaches the continuous analytic σ as σ grows.
func TestDiscreteGaussianSigma(t *testing.T) {
	for _, eps := range []float64{0.1, 0.5, 1, 3} {
		for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
			for _, d := range []int64{1, 3, 40} {
				sigma, err := DiscreteGaussianSigma(eps, delta, d)
				if err != nil {
					t.Errorf("DiscreteGaussianSigma(%v, %v, %d): %v", eps, delta, d, err)
					continue
				}
				if got := DiscreteGaussianDelta(eps, sigma, d); got > delta {
					t.Errorf("ε=%v δ=%v Δ=%d: σ=%v gives δ %v", eps, delta, d, sigma, got)
				}
				if smaller := DiscreteGaussianDelta(eps, sigma*(1-1e-8), d); !(smaller > delta) {
					t.Errorf("ε=%v δ=%v Δ=%d: σ·(1−1e-8) still meets δ (%v): not the smallest", eps, delta, d, smaller)
				}
				sc := mustSigma(t, eps, delta, float64(d))
				if r := sigma/sc - 1; sc > 2000 && math.Abs(r) > 1e-5 {
					t.Errorf("ε=%v δ=%v Δ=%d: discrete σ %v differs from continuous %v by %v", eps, delta, d, sigma, sc, r)
				}
				if r := sigma/sc - 1; math.Abs(r) > 0.05 {
					t.Errorf("ε=%v δ=%v Δ=%d: discrete σ %v is %v away from continuous %v", eps, delta, d, sigma, r, sc)
				}
			}
		}
	}
	for _, bad := range []struct {
		eps, delta float64
		d          int64
	}{{0, 1e-5, 1}, {1, 0, 1}, {1, 1, 1}, {1, 1e-5, 0}, {1e-300, 1e-20, 1}} { // the last needs σ ≈ 4e19 > 2^50
		if s, err := DiscreteGaussianSigma(bad.eps, bad.delta, bad.d); err == nil {
			t.Errorf("DiscreteGaussianSigma(%v, %v, %d) = %v, want an error", bad.eps, bad.delta, bad.d, s)
		}
	}
}

// TestDiscreteGaussianMechanismMonteCarlo checks the discrete calibration
// against the definition by simulation, like TestGaussianMechanismMonteCarlo:
// with Y ~ N_Z(0, σ²) under D and 1 + Y under D', every half-line
// S_s = {y ≤ s} has P₀(S) − e^ε·P₁(S) ≤ δ, with equality at the optimal s,
// and 0.8σ violates it.
func TestDiscreteGaussianMechanismMonteCarlo(t *testing.T) {
	const (
		eps, delta = 1.0, 1e-2
		n          = 100000
	)
	sigma, err := DiscreteGaussianSigma(eps, delta, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Round to 24 significant bits, as Calibrate does, so the sampler takes
	// its 128-bit path; δ only decreases (checked below via exact).
	sigma = RoundUpSignificand(sigma)
	sampler := New(stattest.NewFastSource(2025))
	// estimate returns P̂₀(Y ≤ s) − e^ε·P̂₁(1 + Y ≤ s) and its standard
	// error for each threshold s, from n draws at σ = s0.
	estimate := func(s0 float64, ss []int64) (est, se []float64) {
		t.Helper()
		x0 := make([]int64, n)
		x1 := make([]int64, n)
		for i := range n {
			y0, err0 := sampler.DiscreteGaussian(s0)
			y1, err1 := sampler.DiscreteGaussian(s0)
			if err0 != nil || err1 != nil {
				t.Fatal(err0, err1)
			}
			x0[i], x1[i] = y0, 1+y1
		}
		slices.Sort(x0)
		slices.Sort(x1)
		for _, s := range ss {
			// Number of draws ≤ s, by binary search for s + 1.
			k0, _ := slices.BinarySearch(x0, s+1)
			k1, _ := slices.BinarySearch(x1, s+1)
			p0, p1 := float64(k0)/n, float64(k1)/n
			est = append(est, p0-math.Exp(eps)*p1)
			se = append(se, math.Sqrt(p0*(1-p0)/n+math.Exp(2*eps)*p1*(1-p1)/n))
		}
		return est, se
	}
	// The privacy loss log(P₀(y)/P₁(y)) = (1 − 2y)/(2σ²) exceeds ε for
	// y < 1/2 − εσ², so the optimal half-line ends at ⌈1/2 − εσ²⌉ − 1.
	opt := int64(math.Ceil(0.5-eps*sigma*sigma)) - 1
	var ss []int64
	for s := opt - 6; s <= opt+6; s++ {
		ss = append(ss, s)
	}
	est, se := estimate(sigma, ss)
	for i, s := range ss {
		// One-sided z-test per set; 13 sets at 2.9e-7 each give a
		// false-failure rate ≤ 3.8e-6 by the union bound.
		if est[i] > delta+stattest.ZMax*se[i] {
			t.Errorf("set y ≤ %d: P0 − e^ε P1 = %.5f > δ %.5f + 5·%.5f", s, est[i], delta, se[i])
		}
	}
	// Tightness at the optimal set (index 6): its exact value is
	// DiscreteGaussianDelta up to the 1e-10 margin; false-failure ≈ 5.7e-7.
	exact := DiscreteGaussianDelta(eps, sigma, 1)
	if exact > delta {
		t.Fatalf("rounded σ %v misses δ: %v", sigma, exact)
	}
	if z := (est[6] - exact) / se[6]; math.Abs(z) > stattest.ZMax {
		t.Errorf("optimal set: P0 − e^ε P1 = %.5f, want %.5f (z = %.2f)", est[6], exact, z)
	}
	// With 0.8σ the optimal set must show a violation: its exact value
	// DiscreteGaussianDelta(ε, 0.8σ, 1) is about 0.03, over 10 standard
	// errors above δ, so a miss at 5 has probability below 1e-8.
	small := RoundUpSignificand(0.8 * sigma)
	optS := int64(math.Ceil(0.5-eps*small*small)) - 1
	estS, seS := estimate(small, []int64{optS})
	if !(estS[0]-stattest.ZMax*seS[0] > delta) {
		t.Errorf("σ·0.8: P0 − e^ε P1 = %.5f ± %.5f does not exceed δ %v", estS[0], seS[0], delta)
	}
	t.Logf("σ=%v, optimal-set estimate %.5f ± %.5f (exact %.5f), at 0.8σ %.5f ± %.5f (exact %.5f)",
		sigma, est[6], se[6], exact, estS[0], seS[0], DiscreteGaussianDelta(eps, small, 1))
}

// TestDiscreteMoments checks the moment and quantile helpers Calibrate and
// Release report against brute-force sums over the pmf.
func TestDiscreteMoments(t *testing.T) {
	for _, tt := range []float64{0.05, 0.5, 1, 6, 37.5, 1000} {
		q := math.Exp(-1 / tt)
		off := int64(math.Ceil(50*tt)) + 2 // the mass beyond is below e^{-50}
		tb := stattest.NewTableFromWeights(off, func(y float64) float64 { return math.Pow(q, math.Abs(y)) })
		var abs, sq float64
		for i, p := range tb.PMF {
			y := float64(int64(i) - tb.Off)
			abs += math.Abs(y) * p
			sq += y * y * p
		}
		if got := DiscreteLaplaceAbsMean(tt); math.Abs(got-abs) > 1e-9*math.Max(abs, 1e-300) {
			t.Errorf("dlapAbsMean(%v) = %v, brute force %v", tt, got, abs)
		}
		if got := DiscreteLaplaceVariance(tt); math.Abs(got-sq) > 1e-9*math.Max(sq, 1e-300) {
			t.Errorf("dlapVariance(%v) = %v, brute force %v", tt, got, sq)
		}
		checkHalfWidth(t, "discrete laplace", tt, DiscreteLaplaceHalfWidth95(tt), tb)
	}
	for _, sigma := range []float64{0.2, 1, 3.7, 25, 1023, 1500, 2500} {
		tb := stattest.NewDGTable(sigma)
		abs := 0.0
		for i, p := range tb.PMF {
			abs += math.Abs(float64(int64(i)-tb.Off)) * p
		}
		if got := DiscreteGaussianAbsMean(sigma); math.Abs(got-abs) > 1e-9*abs {
			t.Errorf("dgAbsMean(%v) = %v, brute force %v", sigma, got, abs)
		}
		checkHalfWidth(t, "discrete gaussian", sigma, DiscreteGaussianHalfWidth95(sigma), tb)
	}
}

// checkHalfWidth: m is the smallest integer with P(|Z| > m) ≤ 0.05.
func checkHalfWidth(t *testing.T, name string, scale, m float64, tb stattest.DGTable) {
	t.Helper()
	outside := func(m float64) float64 { // P(|Z| > m)
		k := int64(m)
		in := 0.0
		for y := -k; y <= k; y++ {
			in += tb.P(y)
		}
		return 1 - in
	}
	if outside(m) > 0.05+1e-12 {
		t.Errorf("%s scale %v: P(|Z| > %v) = %v > 0.05", name, scale, m, outside(m))
	}
	if m > 0 && outside(m-1) <= 0.05-1e-12 {
		t.Errorf("%s scale %v: half-width %v is not the smallest (P(|Z| > %v) = %v)", name, scale, m, m-1, outside(m-1))
	}
}

// TestZCDPDelta checks the zCDP conversion used for spread histogram
// shifts: it matches a brute-force minimization over a fine grid of α,
// it is never below the exact discrete Gaussian δ it stands in for (both
// are valid bounds and the exact one is tight), and the accountant, which
// minimizes the same conversion over its coarser grid of orders, finds an
// ε at least as large at that δ.
func TestZCDPDelta(t *testing.T) {
	for _, eps := range []float64{0.1, 0.5, 1, 3} {
		for _, rho := range []float64{1e-3, 0.02, 0.3, 2} {
			got := ZCDPDelta(eps, rho)
			brute := 1.0
			for a := 1.0001; a < 2e4; a *= 1.0005 {
				v := math.Exp((a-1)*(a*rho-eps)+(a-1)*math.Log1p(-1/a)) / a
				brute = math.Min(brute, v)
			}
			if math.Abs(got-brute) > 1e-3*brute+1e-300 || got < brute*(1-1e-3) {
				t.Errorf("zcdpDelta(%v, %v) = %v, brute force %v", eps, rho, got, brute)
			}
			if got >= 1 || got < 1e-200 {
				continue
			}
			if acc := accountant.Epsilon(accountant.ZCDPCurve(rho), got); acc < eps*(1-1e-9) {
				t.Errorf("ρ=%v: accountant gives ε %v at δ %v, below %v", rho, acc, got, eps)
			}
			// Against the exact one-dimensional curve, for Δ = 1.
			sigma := 1 / math.Sqrt(2*rho)
			if exact := DiscreteGaussianDelta(eps, sigma, 1); exact > got*(1+1e-9) {
				t.Errorf("ε=%v σ=%v: exact δ %v above the zCDP bound %v", eps, sigma, exact, got)
			}
		}
	}
	// ZCDPGaussianSigma meets δ, and barely.
	for _, tc := range []struct{ eps, delta, d float64 }{{1, 1e-5, 1}, {0.5, 1e-8, 3}, {2, 1e-6, 10}} {
		sigma, err := ZCDPGaussianSigma(tc.eps, tc.delta, tc.d)
		if err != nil {
			t.Fatal(err)
		}
		rho := func(s float64) float64 { return tc.d * tc.d / (2 * s * s) }
		if got := ZCDPDelta(tc.eps, rho(sigma)); got > tc.delta {
			t.Errorf("%+v: σ=%v gives δ %v", tc, sigma, got)
		}
		if got := ZCDPDelta(tc.eps, rho(sigma*(1-1e-8))); !(got > tc.delta) {
			t.Errorf("%+v: σ·(1−1e-8) still meets δ (%v)", tc, got)
		}
		exact, _ := DiscreteGaussianSigma(tc.eps, tc.delta, int64(tc.d))
		t.Logf("ε=%v δ=%v Δ=%v: σ by zCDP %.4f, by the exact curve %.4f (ratio %.3f)", tc.eps, tc.delta, tc.d, sigma, exact, sigma/exact)
	}
	if _, err := ZCDPGaussianSigma(0, 1e-5, 1); err == nil {
		t.Error("zcdpGaussianSigma accepted eps = 0")
	}
}

func mustSigma(t *testing.T, eps, delta, d float64) float64 {
	t.Helper()
	s, err := AnalyticGaussianSigma(eps, delta, d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDiscreteGaussianSigmaHugeScale is a calibration whose σ lies beyond
// 2^53 grid steps of the δ bound's candidates (ε = 1e-10, δ = 1e-300): the
// bound's loop over its candidates once stepped a float64 that no longer
// changed, and never returned (`dpstream explain` hung on such a release).
// It must return, with the samplers' limit as the error.
func TestDiscreteGaussianSigmaHugeScale(t *testing.T) {
	if d := dgDeltaBound(1e-10, 6.5e15, 18349); !(d >= 0) || math.IsInf(d, 0) {
		t.Fatalf("dgDeltaBound = %v, want a finite δ", d)
	}
	_, err := DiscreteGaussianSigma(1e-10, 1e-300, 18349)
	if err == nil || !strings.Contains(err.Error(), "2^50") {
		t.Fatalf("error %v, want the samplers' limit", err)
	}
}
