package rr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// rrEpsFormula is SPEC 4.4's ε written literally, as the tests' reference:
// log((1 − p + p/k)/(p/k)).
func rrEpsFormula(k int, p float64) float64 {
	kf := float64(k)
	return math.Log((1 - p + p/kf) / (p / kf))
}

// mustRR builds a Mechanism or stops the test.
func mustRR(t *testing.T, k int, p float64) Mechanism {
	t.Helper()
	rr, err := New(k, p)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// mustRREps builds a Mechanism from ε or stops the test.
func mustRREps(t *testing.T, k int, eps float64) Mechanism {
	t.Helper()
	rr, err := ForEpsilon(k, eps)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// TestRandomizedResponseTransitions samples reports of a fixed true
// category and checks each reported category's frequency against 1 − p + p/k
// (the true one) or p/k (the others) with an exact two-sided binomial test
// at stattest.FalseFail = 1e-6 per cell. There are 2·Σk = 2·(2+3+5+10+4) = 48 cells
// over the cases, so a correct mechanism fails with probability at most
// 4.8e-5 on a random seed (the seeds are fixed, so the test is
// deterministic).
func TestRandomizedResponseTransitions(t *testing.T) {
	const draws = 20000
	eps1 := func(k int) float64 { return float64(k) / (math.E + float64(k) - 1) }
	tests := []struct {
		name string
		k    int
		p    float64
	}{
		{"k=2 p=1/2", 2, 0.5},
		{"k=3 p=3/4", 3, 0.75},
		{"k=5 p from ε=1 (long binary expansion)", 5, eps1(5)},
		{"k=10 p=1 (uniform)", 10, 1},
		{"k=4 p=0.1", 4, 0.1},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rr := mustRR(t, tc.k, tc.p)
			kf := float64(tc.k)
			for _, truth := range []int{0, tc.k - 1} {
				src := stattest.NewFastSource(uint64(500 + 10*i + truth))
				counts := make([]int, tc.k)
				for range draws {
					y, err := rr.Randomize(src, truth)
					if err != nil {
						t.Fatal(err)
					}
					if y < 0 || y >= tc.k {
						t.Fatalf("report %d outside [0, %d)", y, tc.k)
					}
					counts[y]++
				}
				for y, c := range counts {
					want := tc.p / kf
					if y == truth {
						want = 1 - tc.p + tc.p/kf
					}
					if !stattest.BinomialOK(c, draws, want, stattest.FalseFail) {
						t.Errorf("truth %d: report %d seen %d/%d times, want probability %v", truth, y, c, draws, want)
					}
				}
			}
		})
	}
}

// TestRandomizeExactLaw enumerates every relevant random input for k = 4,
// p = 3/4 and counts the reports, so the law is checked exactly, with no
// sampling error. The coin reads bits from the lowest of the first word
// (p = 0.11 in binary needs at most two) and the uniform category is the
// low two bits of the next word (k is a power of two), so 4 × 4 equally
// likely inputs determine the report: the truth must come out in
// 16·(1 − p + p/k) = 7 of them and each other category in 16·p/k = 3.
func TestRandomizeExactLaw(t *testing.T) {
	rr := mustRR(t, 4, 0.75)
	for truth := range 4 {
		counts := make([]int, 4)
		for w1 := range uint64(4) {
			for w2 := range uint64(4) {
				src := &scriptSource{words: []uint64{w1, w2}}
				y, err := rr.Randomize(src, truth)
				if err != nil {
					t.Fatal(err)
				}
				counts[y]++
			}
		}
		for y, c := range counts {
			want := 3
			if y == truth {
				want = 7
			}
			if c != want {
				t.Errorf("truth %d: report %d in %d of 16 inputs, want %d", truth, y, c, want)
			}
		}
	}
}

// scriptSource returns its words in order, then zeros.
type scriptSource struct {
	words []uint64
	next  int
}

func (s *scriptSource) Uint64() uint64 {
	if s.next >= len(s.words) {
		return 0
	}
	s.next++
	return s.words[s.next-1]
}

// TestRandomizedResponseEpsilon checks Epsilon() against SPEC 4.4's formula
// written literally, against values worked out by hand, and against the
// accountant's pure ε for the same (p, k). Deterministic.
func TestRandomizedResponseEpsilon(t *testing.T) {
	tests := []struct {
		k    int
		p    float64
		hand float64 // NaN when there is no closed form
	}{
		{2, 0.5, math.Log(3)},   // (1/2 + 1/4)/(1/4) = 3
		{3, 0.75, math.Log(2)},  // (1/4 + 1/4)/(1/4) = 2
		{4, 1, 0},               // uniform report
		{10, 0.5, math.Log(11)}, // (1/2 + 1/20)/(1/20) = 11
		{2, 1e-9, math.NaN()},
		{7, 0.3, math.NaN()},
		{1000, 0.999, math.NaN()},
		{aggregate.MaxBins, 0.01, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("k=%d p=%v", tc.k, tc.p), func(t *testing.T) {
			rr := mustRR(t, tc.k, tc.p)
			got := rr.Epsilon()
			if want := rrEpsFormula(tc.k, tc.p); !closeRel(got, want, 1e-12) {
				t.Errorf("Epsilon() = %v, formula gives %v", got, want)
			}
			if !math.IsNaN(tc.hand) && !closeRel(got, tc.hand, 1e-14) {
				t.Errorf("Epsilon() = %v, by hand %v", got, tc.hand)
			}
			m := accountant.Mechanism{Kind: accountant.KindRandomizedResponse, Epsilon: rr.P(), K: rr.K()}
			acc, ok := m.PureEpsilon()
			if !ok || !closeRel(got, acc, 1e-12) {
				t.Errorf("accountant pure ε = %v (ok %v), Epsilon() = %v", acc, ok, got)
			}
		})
	}
}

// closeRel reports |a − b| ≤ tol·max(|a|, |b|), or a = b.
func closeRel(a, b, tol float64) bool {
	return a == b || math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// TestRandomizedResponseForEpsilon checks the ε → p → ε round trip: p is
// k/(e^ε + k − 1), the mechanism's Epsilon() never exceeds the requested ε
// (p is rounded towards more noise) and is below it by at most a few
// k·2^−52, and p → ε → p returns p. Deterministic.
func TestRandomizedResponseForEpsilon(t *testing.T) {
	for _, k := range []int{2, 3, 10, 1000, aggregate.MaxBins} {
		for _, eps := range []float64{1e-9, 1e-3, 0.1, 0.5, 1, 2, 5, 10, 30, 300} {
			rr := mustRREps(t, k, eps)
			kf := float64(k)
			if want := kf / (math.Exp(eps) + kf - 1); !closeRel(rr.P(), want, 1e-12) {
				t.Errorf("k=%d ε=%v: p = %v, want k/(e^ε+k−1) = %v", k, eps, rr.P(), want)
			}
			got := rr.Epsilon()
			// Below eps by at most 8 ulps' worth (k·2^−52 each) plus the
			// relative rounding of the log.
			if got > eps || eps-got > 8*kf*0x1p-52+1e-14*eps {
				t.Errorf("k=%d ε=%v: Epsilon() = %v (off by %v)", k, eps, got, eps-got)
			}
			back := mustRREps(t, k, got)
			if !closeRel(back.P(), rr.P(), 1e-12) {
				t.Errorf("k=%d ε=%v: p → ε → p gives %v, want %v", k, eps, back.P(), rr.P())
			}
		}
	}
	// Tiny ε rounds p to exactly 1: a uniform report, ε = 0 ≤ the request.
	if rr := mustRREps(t, 5, 1e-300); rr.P() != 1 || rr.Epsilon() != 0 {
		t.Errorf("ε=1e-300: p = %v, Epsilon() = %v; want 1 and 0", rr.P(), rr.Epsilon())
	}
}

// TestRandomizedResponseExactRatio computes the mechanism's exact report
// probabilities (rationals, not samples) and checks that they form a
// distribution, that their ratio is exactly k/p − k + 1, and that this
// ratio equals e^Epsilon() up to floating-point rounding. Deterministic.
func TestRandomizedResponseExactRatio(t *testing.T) {
	for _, tc := range []struct {
		k int
		p float64
	}{{2, 0.5}, {3, 0.75}, {5, 5 / (math.E + 4)}, {10, 1}, {64, 0.01}, {4, 0x1p-100}} {
		t.Run(fmt.Sprintf("k=%d p=%v", tc.k, tc.p), func(t *testing.T) {
			rr := mustRR(t, tc.k, tc.p)
			keep, err := rr.TransitionProbability(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			other, err := rr.TransitionProbability(1, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Every row is the same up to relabelling.
			for x := range tc.k {
				for y := range tc.k {
					q, err := rr.TransitionProbability(x, y)
					if err != nil {
						t.Fatal(err)
					}
					if want := map[bool]*big.Rat{true: keep, false: other}[x == y]; q.Cmp(want) != 0 {
						t.Fatalf("P(%d → %d) = %v, want %v", x, y, q, want)
					}
				}
			}
			total := new(big.Rat).Mul(other, big.NewRat(int64(tc.k-1), 1))
			if total.Add(total, keep); total.Cmp(big.NewRat(1, 1)) != 0 {
				t.Errorf("probabilities sum to %v, want exactly 1", total)
			}
			ratio := new(big.Rat).Quo(keep, other)
			// k/p − k + 1 in exact rationals.
			kr := big.NewRat(int64(tc.k), 1)
			want := new(big.Rat).Quo(kr, new(big.Rat).SetFloat64(tc.p))
			want.Sub(want, kr).Add(want, big.NewRat(1, 1))
			if ratio.Cmp(want) != 0 {
				t.Errorf("exact ratio %v, want k/p − k + 1 = %v", ratio, want)
			}
			rf, _ := ratio.Float64()
			if e := math.Exp(rr.Epsilon()); !closeRel(rf, e, 1e-13) {
				t.Errorf("exact ratio %v, e^Epsilon() = %v", rf, e)
			}
		})
	}
}

// TestRandomizeTinyP checks that p whose binary expansion reaches past
// 2^−126 (the math/big coin; see TestCoinBigPath) works. Deterministic (a
// tiny-p report differs from the truth with probability below 2^−79 per
// draw).
func TestRandomizeTinyP(t *testing.T) {
	for _, p := range []float64{0x1.0000000000001p-80, 0x1p-127, 0x1p-1074} {
		tiny := mustRR(t, 4, p)
		src := stattest.NewFastSource(78)
		for i := range 100 {
			if y, err := tiny.Randomize(src, i%4); err != nil || y != i%4 {
				t.Fatalf("p = %v: report %d, err %v; want %d", p, y, err, i%4)
			}
		}
	}
}

// rrPopulation draws one true category from f with the test's own
// generator (the population is not part of the mechanism).
func rrPopulation(g *mrand.Rand, f []float64) int {
	u := g.Float64()
	for c, x := range f {
		if u < x {
			return c
		}
		u -= x
	}
	return len(f) - 1
}

// TestDebiasUnbiasedAndStderr runs R = 300 independent surveys of n = 1000
// people whose categories are drawn from a known f, each reporting through
// Randomize, and debiases each survey's counts. With π_c = (1 − p)f_c + p/k
// the counts are multinomial(n, π), so f̂_c has mean f_c and standard
// deviation σ_c = sqrt(π_c(1 − π_c)/n)/(1 − p). Checks per category:
//
//   - unbiasedness: |mean f̂_c − f_c| ≤ 4σ_c/√R. The mean of 300 i.i.d.
//     terms is normal to good accuracy (CLT), so each check fails with
//     probability 2Φ(−4) ≈ 6.3e-5, and the 4 categories with ≤ 2.6e-4;
//   - the stderr formula against the empirical spread: (R − 1)s²/σ_c² must
//     lie within the χ²(R − 1) quantiles at 5e-7 and 1 − 5e-7 (false-failure
//     rate 1e-6 per category under normality of f̂_c, itself a scaled
//     binomial with nπ(1 − π) > 150, whose excess kurtosis < 0.01 changes
//     that rate negligibly);
//   - the reported stderr: the mean over surveys of stderr_c² (an unbiased
//     estimate of σ_c²) must be within stattest.ZMax = 5 of its own standard errors
//     of σ_c² (false-failure rate 5.7e-7 per category, by the CLT).
//
// Each survey also checks deterministic facts: Σ f̂ = 1, and the simplex
// projection is a probability vector no farther from f than f̂ (projection
// onto a convex set containing f). Total false-failure rate ≤ 2.7e-4.
func TestDebiasUnbiasedAndStderr(t *testing.T) {
	const n, reps = 1000, 300
	f := []float64{0.5, 0.3, 0.15, 0.05}
	k := len(f)
	rr := mustRREps(t, k, 1)
	p := rr.P()
	src := stattest.NewFastSource(901)
	pop := mrand.New(mrand.NewPCG(902, 903))

	sigma := make([]float64, k)
	for c := range k {
		pi := (1-p)*f[c] + p/float64(k)
		sigma[c] = math.Sqrt(pi*(1-pi)/n) / (1 - p)
	}
	est := make([][]float64, k)  // f̂_c per survey
	vhat := make([][]float64, k) // stderr_c² per survey
	projBias := make([]float64, k)
	for range reps {
		counts := make([]int64, k)
		for range n {
			y, err := rr.Randomize(src, rrPopulation(pop, f))
			if err != nil {
				t.Fatal(err)
			}
			counts[y]++
		}
		freqs, se, err := Debias(counts, k, p)
		if err != nil {
			t.Fatal(err)
		}
		proj, err := DebiasProjected(counts, k, p)
		if err != nil {
			t.Fatal(err)
		}
		var sum, psum, d2, pd2 float64
		for c := range k {
			est[c] = append(est[c], freqs[c])
			vhat[c] = append(vhat[c], se[c]*se[c])
			projBias[c] += (proj[c] - f[c]) / reps
			sum += freqs[c]
			psum += proj[c]
			if proj[c] < 0 {
				t.Fatalf("projected frequency %v < 0", proj[c])
			}
			d2 += (freqs[c] - f[c]) * (freqs[c] - f[c])
			pd2 += (proj[c] - f[c]) * (proj[c] - f[c])
		}
		if math.Abs(sum-1) > 1e-12 || math.Abs(psum-1) > 1e-12 {
			t.Fatalf("frequencies sum to %v, projected to %v; want 1", sum, psum)
		}
		if pd2 > d2+1e-15 {
			t.Fatalf("projection moved away from the truth: %v > %v", pd2, d2)
		}
	}
	chi := distuv.ChiSquared{K: reps - 1}
	lo, hi := chi.Quantile(stattest.FalseFail/2), chi.Quantile(1-stattest.FalseFail/2)
	for c := range k {
		mean, v := stattest.MeanVar(est[c])
		if se := sigma[c] / math.Sqrt(reps); math.Abs(mean-f[c]) > 4*se {
			t.Errorf("category %d: mean f̂ = %v, truth %v: %.1f standard errors off (limit 4)", c, mean, f[c], (mean-f[c])/se)
		}
		if stat := (reps - 1) * v / (sigma[c] * sigma[c]); stat < lo || stat > hi {
			t.Errorf("category %d: empirical sd %v vs formula %v (χ² = %v outside [%v, %v])", c, math.Sqrt(v), sigma[c], stat, lo, hi)
		}
		mv, vv := stattest.MeanVar(vhat[c])
		if z := (mv - sigma[c]*sigma[c]) / math.Sqrt(vv/reps); math.Abs(z) > stattest.ZMax {
			t.Errorf("category %d: mean reported variance %v vs σ² = %v (z = %v)", c, mv, sigma[c]*sigma[c], z)
		}
		t.Logf("category %d: f=%v mean f̂=%.5f (se %.5f) sd %.5f vs σ %.5f; projected bias %+.5f",
			c, f[c], mean, sigma[c]/math.Sqrt(reps), math.Sqrt(v), sigma[c], projBias[c])
	}
}

// TestDebiasKnownValues checks Debias and DebiasProjected on counts whose
// answers were worked out by hand. Deterministic.
func TestDebiasKnownValues(t *testing.T) {
	tests := []struct {
		name   string
		counts []int64
		k      int
		p      float64
		freqs  []float64
		stderr []float64
		proj   []float64
	}{
		{
			// π̂ = (3/4, 1/4), p/k = 1/4, 1 − p = 1/2.
			name: "k=2 p=1/2 inside", counts: []int64{75, 25}, k: 2, p: 0.5,
			freqs:  []float64{1, 0},
			stderr: []float64{math.Sqrt(0.75*0.25/99) / 0.5, math.Sqrt(0.75*0.25/99) / 0.5},
			proj:   []float64{1, 0},
		},
		{
			// π̂ = (0.9, 0.1): f̂ = (1.3, −0.3); the projection clips to (1, 0).
			name: "k=2 p=1/2 outside", counts: []int64{90, 10}, k: 2, p: 0.5,
			freqs:  []float64{1.3, -0.3},
			stderr: []float64{math.Sqrt(0.09/99) / 0.5, math.Sqrt(0.09/99) / 0.5},
			proj:   []float64{1, 0},
		},
		{
			// π̂ = (0.4, 0.375, 0.225), p/k = 1/4, 1 − p = 1/4:
			// f̂ = (0.6, 0.5, −0.1). Projection: θ = (0.6 + 0.5 − 1)/2 = 0.05,
			// x = (0.55, 0.45, 0). (Clip-and-renormalize would give
			// (6/11, 5/11, 0), which is not the projection.)
			name: "k=3 p=3/4 projection", counts: []int64{400, 375, 225}, k: 3, p: 0.75,
			freqs: []float64{0.6, 0.5, -0.1},
			stderr: []float64{
				math.Sqrt(0.4*0.6/999) / 0.25, math.Sqrt(0.375*0.625/999) / 0.25, math.Sqrt(0.225*0.775/999) / 0.25,
			},
			proj: []float64{0.55, 0.45, 0},
		},
		{
			// One report: π̂ = (0, 1), f̂ = (−1/2, 3/2); the variance uses the
			// bound 1/4: stderr = (1/2)/(1/2) = 1.
			name: "single report", counts: []int64{0, 1}, k: 2, p: 0.5,
			freqs: []float64{-0.5, 1.5}, stderr: []float64{1, 1}, proj: []float64{0, 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			freqs, se, err := Debias(tc.counts, tc.k, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			proj, err := DebiasProjected(tc.counts, tc.k, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			for c := range tc.k {
				if math.Abs(freqs[c]-tc.freqs[c]) > 1e-12 {
					t.Errorf("freqs[%d] = %v, want %v", c, freqs[c], tc.freqs[c])
				}
				if !closeRel(se[c], tc.stderr[c], 1e-12) {
					t.Errorf("stderr[%d] = %v, want %v", c, se[c], tc.stderr[c])
				}
				if math.Abs(proj[c]-tc.proj[c]) > 1e-12 {
					t.Errorf("projected[%d] = %v, want %v", c, proj[c], tc.proj[c])
				}
			}
		})
	}
}

// TestProjectSimplexKKT checks rrProjectSimplex on random vectors against
// the optimality conditions of the Euclidean projection onto the simplex:
// x ≥ 0, Σx = 1, and a single θ with x_c = v_c − θ where x_c > 0 and
// v_c ≤ θ where x_c = 0. A point of the simplex must be left unchanged.
// Deterministic (fixed seed, no statistical threshold).
func TestProjectSimplexKKT(t *testing.T) {
	g := mrand.New(mrand.NewPCG(11, 12))
	for trial := range 2000 {
		v := make([]float64, 1+g.IntN(20))
		for i := range v {
			v[i] = 4*g.Float64() - 2
		}
		x := rrProjectSimplex(v)
		var sum float64
		theta := math.NaN()
		for i := range x {
			sum += x[i]
			if x[i] < 0 {
				t.Fatalf("trial %d: x[%d] = %v < 0", trial, i, x[i])
			}
			if x[i] > 0 {
				if th := v[i] - x[i]; math.IsNaN(theta) {
					theta = th
				} else if math.Abs(th-theta) > 1e-12 {
					t.Fatalf("trial %d: shifts %v and %v differ", trial, th, theta)
				}
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("trial %d: Σx = %v", trial, sum)
		}
		for i := range x {
			if x[i] == 0 && v[i] > theta+1e-12 {
				t.Fatalf("trial %d: x[%d] = 0 but v = %v > θ = %v", trial, i, v[i], theta)
			}
		}
	}
	in := []float64{0.2, 0, 0.5, 0.3}
	for i, x := range rrProjectSimplex(in) {
		if math.Abs(x-in[i]) > 1e-15 {
			t.Errorf("simplex point moved: %v → %v", in[i], x)
		}
	}
}

// TestRandomizedResponseErrors checks that invalid parameters, categories
// and counts are errors (never panics, never silent pass-through), with the
// documented sentinels. Deterministic.
func TestRandomizedResponseErrors(t *testing.T) {
	good := mustRR(t, 3, 0.5)
	var zero Mechanism
	tests := []struct {
		name     string
		run      func() error
		sentinel error // nil: any error
	}{
		{"k=1", func() error { _, err := New(1, 0.5); return err }, noise.ErrInvalidSpec},
		{"k=0", func() error { _, err := New(0, 0.5); return err }, noise.ErrInvalidSpec},
		{"k=-3", func() error { _, err := New(-3, 0.5); return err }, noise.ErrInvalidSpec},
		{"k too large", func() error { _, err := New(aggregate.MaxBins+1, 0.5); return err }, noise.ErrInvalidSpec},
		{"p=0", func() error { _, err := New(3, 0); return err }, noise.ErrInvalidSpec},
		{"p<0", func() error { _, err := New(3, -0.1); return err }, noise.ErrInvalidSpec},
		{"p>1", func() error { _, err := New(3, 1.0000001); return err }, noise.ErrInvalidSpec},
		{"p=NaN", func() error { _, err := New(3, math.NaN()); return err }, noise.ErrInvalidSpec},
		{"p=Inf", func() error { _, err := New(3, math.Inf(1)); return err }, noise.ErrInvalidSpec},
		{"ε k=1", func() error { _, err := ForEpsilon(1, 1); return err }, noise.ErrInvalidSpec},
		{"ε=0", func() error { _, err := ForEpsilon(3, 0); return err }, noise.ErrInvalidSpec},
		{"ε<0", func() error { _, err := ForEpsilon(3, -1); return err }, noise.ErrInvalidSpec},
		{"ε=NaN", func() error { _, err := ForEpsilon(3, math.NaN()); return err }, noise.ErrInvalidSpec},
		{"ε=Inf", func() error { _, err := ForEpsilon(3, math.Inf(1)); return err }, noise.ErrInvalidSpec},
		{"ε so large p underflows", func() error { _, err := ForEpsilon(3, 1000); return err }, noise.ErrInvalidSpec},
		{"randomize category -1", func() error { _, err := good.Randomize(stattest.NewFastSource(1), -1); return err }, nil},
		{"randomize category k", func() error { _, err := good.Randomize(stattest.NewFastSource(1), 3); return err }, nil},
		{"randomize zero value", func() error { _, err := zero.Randomize(stattest.NewFastSource(1), 0); return err }, nil},
		{"transition zero value", func() error { _, err := zero.TransitionProbability(0, 0); return err }, nil},
		{"transition out of range", func() error { _, err := good.TransitionProbability(0, 3); return err }, nil},
		{"transition negative", func() error { _, err := good.TransitionProbability(-1, 0); return err }, nil},
		{"debias k=1", func() error { _, _, err := Debias([]int64{5}, 1, 0.5); return err }, noise.ErrInvalidSpec},
		{"debias p=1", func() error { _, _, err := Debias([]int64{5, 5}, 2, 1); return err }, noise.ErrInvalidSpec},
		{"debias p=0", func() error { _, _, err := Debias([]int64{5, 5}, 2, 0); return err }, noise.ErrInvalidSpec},
		{"debias p=NaN", func() error { _, _, err := Debias([]int64{5, 5}, 2, math.NaN()); return err }, noise.ErrInvalidSpec},
		{"debias wrong length", func() error { _, _, err := Debias([]int64{5, 5}, 3, 0.5); return err }, nil},
		{"debias negative count", func() error { _, _, err := Debias([]int64{5, -1}, 2, 0.5); return err }, nil},
		{"debias no reports", func() error { _, _, err := Debias([]int64{0, 0}, 2, 0.5); return err }, nil},
		{"debias overflow", func() error { _, _, err := Debias([]int64{math.MaxInt64, 1}, 2, 0.5); return err }, nil},
		{"projected p=1", func() error { _, err := DebiasProjected([]int64{5, 5}, 2, 1); return err }, noise.ErrInvalidSpec},
		{"randomizer one category", func() error { _, err := NewCategoryRandomizer([]string{"a"}, 1, nil); return err }, noise.ErrInvalidSpec},
		{"randomizer no categories", func() error { _, err := NewCategoryRandomizer(nil, 1, nil); return err }, noise.ErrInvalidSpec},
		{"randomizer duplicate", func() error { _, err := NewCategoryRandomizer([]string{"a", "b", "a"}, 1, nil); return err }, noise.ErrInvalidSpec},
		{"randomizer bad ε", func() error { _, err := NewCategoryRandomizer([]string{"a", "b"}, 0, nil); return err }, noise.ErrInvalidSpec},
		{"randomizer k mismatch", func() error { _, err := NewRandomizer(good, []string{"a", "b"}, nil); return err }, noise.ErrInvalidSpec},
		{"randomizer zero mechanism", func() error { _, err := NewRandomizer(zero, []string{"a", "b"}, nil); return err }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("no error")
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("error %q does not wrap %q", err, tc.sentinel)
			}
		})
	}
	// A failed Randomize reports −1, never a category.
	if y, _ := good.Randomize(stattest.NewFastSource(1), 7); y != -1 {
		t.Errorf("failed Randomize reported %d, want -1", y)
	}
	if eps := zero.Epsilon(); !math.IsInf(eps, 1) {
		t.Errorf("zero value Epsilon() = %v, want +Inf", eps)
	}
}

// TestRandomizerUnknownCategory checks that an unknown string category is
// an error wrapping ErrUnknownCategory, with no output and without the raw
// value in the message (it is the unrandomized input). Deterministic.
func TestRandomizerUnknownCategory(t *testing.T) {
	z, err := NewCategoryRandomizer([]string{"red", "green", "blue"}, 1, stattest.NewFastSource(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"purple-secret", "", "Red"} {
		out, err := z.Randomize(in)
		if !errors.Is(err, ErrUnknownCategory) {
			t.Fatalf("%q: error %v, want ErrUnknownCategory", in, err)
		}
		if out != "" {
			t.Errorf("%q: output %q alongside the error", in, out)
		}
		if in != "" && strings.Contains(err.Error(), in) {
			t.Errorf("error message %q reveals the input", err)
		}
	}
}

// TestRandomizerStrings checks the string Randomizer's report frequencies
// for the true category "green" (1 − p + p/k) and each other category
// (p/k) with exact binomial tests at stattest.FalseFail = 1e-6 each (3 cells per
// case, 2 cases: false-failure rate ≤ 6e-6), that reports are always
// configured categories, that Categories is a copy, and that the mechanism
// is the requested one.
func TestRandomizerStrings(t *testing.T) {
	cats := []string{"red", "green", "blue"}
	byP, err := NewRandomizer(mustRR(t, 3, 0.5), cats, stattest.NewFastSource(21))
	if err != nil {
		t.Fatal(err)
	}
	byEps, err := NewCategoryRandomizer(cats, 2, stattest.NewFastSource(22))
	if err != nil {
		t.Fatal(err)
	}
	if eps := byEps.Mechanism().Epsilon(); eps > 2 || eps < 2-1e-12 {
		t.Errorf("ε = %v, want 2", eps)
	}
	for name, z := range map[string]*Randomizer{"p=1/2": byP, "ε=2": byEps} {
		const draws = 20000
		p, kf := z.Mechanism().P(), 3.0
		counts := map[string]int{}
		for range draws {
			out, err := z.Randomize("green")
			if err != nil {
				t.Fatal(err)
			}
			counts[out]++
		}
		for _, c := range cats {
			want := p / kf
			if c == "green" {
				want = 1 - p + p/kf
			}
			if !stattest.BinomialOK(counts[c], draws, want, stattest.FalseFail) {
				t.Errorf("%s: %q reported %d/%d times, want probability %v", name, c, counts[c], draws, want)
			}
		}
		if len(counts) != len(cats) {
			t.Errorf("%s: reports outside the categories: %v", name, counts)
		}
	}
	got := byP.Categories()
	got[0] = "changed"
	if byP.Categories()[0] != "red" {
		t.Error("Categories() exposes the Randomizer's slice")
	}
	cats[0] = "mutated"
	if out, err := byP.Randomize("red"); err != nil || out == "mutated" {
		t.Errorf("Randomizer depends on the caller's slice: %q, %v", out, err)
	}
}

// TestRandomizerConcurrent shares one Randomizer (nil Source: the shared
// CryptoSource) between goroutines; run with -race. It asserts only that
// every report is a configured category.
func TestRandomizerConcurrent(t *testing.T) {
	cats := []string{"a", "b", "c", "d"}
	z, err := NewCategoryRandomizer(cats, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				out, err := z.Randomize(cats[(g+i)%4])
				if err != nil {
					errs <- err
					return
				}
				if out != "a" && out != "b" && out != "c" && out != "d" {
					errs <- fmt.Errorf("report %q", out)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRandomizeStuckSource checks that a Source stuck at 0 ends in an error
// (the uniform draw for k = 3 rejects word 0 forever), not a hang, and that
// the failed report is −1.
func TestRandomizeStuckSource(t *testing.T) {
	for _, p := range []float64{1, 0.75} {
		rr := mustRR(t, 3, p)
		y, err := rr.Randomize(stattest.ConstSource(0), 1)
		if !errors.Is(err, noise.ErrSourceStuck) || y != -1 {
			t.Errorf("p=%v: report %d, error %v; want -1 and errSourceStuck", p, y, err)
		}
	}
}

// TestRandomizedResponseAudit runs Randomize 100000 times on each of the
// neighbouring inputs 0 and 1 (replace-one) and bounds ε from below with
// Clopper–Pearson intervals over the events "report == c"
// (internal/dpaudit). For the calibrated mechanism (k = 4, ε = 1) the bound
// must not exceed ε; it is wrong with probability at most alpha = 1e-6
// (union bound over the 4 events × 2 directions), the false-failure rate.
// A broken mechanism with half the randomization probability (p/2, true
// ε ≈ 2.13) must show a bound above the claimed ε = 1; its true ratio is
// large enough that 100000 draws make a miss astronomically unlikely.
func TestRandomizedResponseAudit(t *testing.T) {
	const k, eps, trials, alpha = 4, 1.0, 100000, 1e-6
	calibrated := mustRREps(t, k, eps)
	broken := mustRR(t, k, calibrated.P()/2)
	var events []dpaudit.Event
	for c := range k {
		events = append(events, dpaudit.Event{
			Name: fmt.Sprintf("report == %d", c),
			In:   func(o []float64) bool { return o[0] == float64(c) },
		})
	}
	for i, tc := range []struct {
		name   string
		rr     Mechanism
		broken bool
	}{{"calibrated", calibrated, false}, {"half the randomization probability", broken, true}} {
		t.Run(tc.name, func(t *testing.T) {
			src := stattest.NewFastSource(uint64(300 + i))
			run := func(truth int) [][]float64 {
				out := make([][]float64, trials)
				for j := range out {
					y, err := tc.rr.Randomize(src, truth)
					if err != nil {
						t.Fatal(err)
					}
					out[j] = []float64{float64(y)}
				}
				return out
			}
			a, b := run(0), run(1)
			r := dpaudit.LowerBound(a, b, events, 0, alpha)
			t.Logf("claimed ε=%v, mechanism ε=%.4f: %v", eps, tc.rr.Epsilon(), r)
			switch {
			case !tc.broken && r.Epsilon > eps:
				t.Errorf("lower bound %v exceeds the claimed ε=%v", r.Epsilon, eps)
			case tc.broken && r.Epsilon <= eps:
				t.Errorf("the audit did not catch it: lower bound %v ≤ ε=%v", r.Epsilon, eps)
			}
		})
	}
}
