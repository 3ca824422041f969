package noise

import (
	"errors"
	"math"
	"math/big"
	"sync"
	"testing"

	"github.com/dpstream/dpstream/mechanism/internal/stattest"
)

// Every statistical check in this file runs on a fixed seed and is therefore
// deterministic; the false-failure rate beside each threshold is the chance
// that a correct sampler fails it on a seed drawn at random.

func TestSeededSourceIsDeterministic(t *testing.T) {
	a, b, c := SeededSource(7), SeededSource(7), SeededSource(8)
	same, differ := true, false
	for range 1000 {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		same = same && x == y
		differ = differ || x != z
	}
	if !same {
		t.Error("two sources with seed 7 produced different streams")
	}
	if !differ {
		t.Error("seeds 7 and 8 produced the same 1000 words")
	}
}

// TestSourcesBitBalance checks that both sources produce balanced bits,
// including across CryptoSource's buffer refills (10000 words = 20 refills),
// and that CryptoSource is safe to share between goroutines (run with -race).
func TestSourcesBitBalance(t *testing.T) {
	const goroutines, perG = 4, 2500
	for _, tc := range []struct {
		name string
		src  Source
	}{
		{"crypto", CryptoSource()},
		{"seeded", SeededSource(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			ones := 0
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					local := 0
					for range perG {
						w := tc.src.Uint64()
						for ; w != 0; w &= w - 1 {
							local++
						}
					}
					mu.Lock()
					ones += local
					mu.Unlock()
				})
			}
			wg.Wait()
			// 640000 fair bits: exact binomial tails, false-failure rate
			// 1e-6 (per run for the unseeded crypto source).
			bits := goroutines * perG * 64
			if !stattest.BinomialOK(ones, bits, 0.5, stattest.FalseFail) {
				t.Errorf("%d ones in %d bits", ones, bits)
			}
		})
	}
}

// TestU128 checks the 128-bit helpers against math/big on random operands
// of every size.
func TestU128(t *testing.T) {
	src := SeededSource(3)
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	rnd := func() u128 {
		a := u128{src.Uint64(), src.Uint64()}
		return a.shr(uint(src.Uint64() % 129))
	}
	for range 20000 {
		a, b := rnd(), rnd()
		w := src.Uint64() >> (src.Uint64() % 64)
		k := uint(src.Uint64() % 130)
		ab, bb := a.big(), b.big()
		if got, want := a.cmp(b), ab.Cmp(bb); got != want {
			t.Fatalf("cmp(%v, %v) = %d, want %d", ab, bb, got, want)
		}
		sum, ovf := a.add(b)
		wantSum := new(big.Int).Add(ab, bb)
		if ovf != (wantSum.Cmp(two128) >= 0) || (!ovf && sum.big().Cmp(wantSum) != 0) {
			t.Fatalf("add(%v, %v) = %v, %v", ab, bb, sum.big(), ovf)
		}
		if a.cmp(b) >= 0 {
			if got := a.sub(b).big(); got.Cmp(new(big.Int).Sub(ab, bb)) != 0 {
				t.Fatalf("sub(%v, %v) = %v", ab, bb, got)
			}
		}
		prod, ovf := a.mul64(w)
		wantProd := new(big.Int).Mul(ab, new(big.Int).SetUint64(w))
		if ovf != (wantProd.Cmp(two128) >= 0) || (!ovf && prod.big().Cmp(wantProd) != 0) {
			t.Fatalf("mul64(%v, %d) = %v, %v", ab, w, prod.big(), ovf)
		}
		sh, ovf := a.shl(k)
		wantSh := new(big.Int).Lsh(ab, k)
		if ovf != (wantSh.Cmp(two128) >= 0) || (!ovf && sh.big().Cmp(wantSh) != 0) {
			t.Fatalf("shl(%v, %d) = %v, %v", ab, k, sh.big(), ovf)
		}
		if got, want := a.shr(k).big(), new(big.Int).Rsh(ab, k); got.Cmp(want) != 0 {
			t.Fatalf("shr(%v, %d) = %v, want %v", ab, k, got, want)
		}
		if w != 0 {
			if got, want := a.div64(w).big(), new(big.Int).Quo(ab, new(big.Int).SetUint64(w)); got.Cmp(want) != 0 {
				t.Fatalf("div64(%v, %d) = %v, want %v", ab, w, got, want)
			}
		}
		if back, ok := u128FromBig(ab); !ok || back != a {
			t.Fatalf("u128FromBig(%v) = %v, %v", ab, back, ok)
		}
	}
	if _, ok := u128FromBig(two128); ok {
		t.Error("u128FromBig(2^128) succeeded")
	}
}

// TestSplitFloatIsExact checks the float → dyadic rational conversion
// against big.Rat.SetFloat64.
func TestSplitFloatIsExact(t *testing.T) {
	for _, x := range []float64{0.1, 0.01, 1, 3, 7.5, 1e6, 1 << 40, 1<<50 + 2, 3.7, math.SmallestNonzeroFloat64, 0x1p-1022, math.MaxFloat64, math.Nextafter(1, 2)} {
		s := splitFloat(x)
		if s.m%2 != 1 {
			t.Errorf("splitFloat(%v): mantissa %d is even", x, s.m)
		}
		got := new(big.Rat).SetInt(new(big.Int).SetUint64(s.m))
		p := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(max(s.e, -s.e))))
		if s.e >= 0 {
			got.Mul(got, p)
		} else {
			got.Quo(got, p)
		}
		if want := new(big.Rat).SetFloat64(x); got.Cmp(want) != 0 {
			t.Errorf("splitFloat(%v) = %d·2^%d = %v, want %v", x, s.m, s.e, got, want)
		}
	}
}

func TestUniform(t *testing.T) {
	for i, n := range []uint64{2, 3, 7, 10, 1000} {
		r := rng{src: stattest.NewFastSource(uint64(20 + i))}
		const draws = 60000
		xs := make([]int64, draws)
		for j := range xs {
			r.words = 0 // the budget is per draw; this test reuses the rng
			v := r.uniform(n)
			if v >= n {
				t.Fatalf("uniform(%d) = %d", n, v)
			}
			xs[j] = int64(v)
		}
		law := stattest.IntegerLaw{Spread: float64(n), CDF: func(k int64) float64 {
			return math.Min(math.Max(float64(k+1)/float64(n), 0), 1)
		}}
		stattest.ChiSquare(t, "uniform", xs, law) // false-failure rate 1e-6
	}
	// n = 3·2^62 rejects a quarter of the words: the lower two thirds of the
	// range must still get exactly two thirds of the draws (binomial,
	// false-failure rate 1e-6).
	r := rng{src: stattest.NewFastSource(29)}
	const n, draws = 3 << 62, 60000
	low := 0
	for range draws {
		r.words = 0
		v := r.uniform(n)
		if v >= n {
			t.Fatalf("uniform(3·2^62) = %d", v)
		}
		if v < 1<<63 {
			low++
		}
	}
	if !stattest.BinomialOK(low, draws, 2.0/3, stattest.FalseFail) {
		t.Errorf("uniform(3·2^62): %d of %d below 2^63, want about 2/3", low, draws)
	}
	if got := r.uniform(1); got != 0 {
		t.Errorf("uniform(1) = %d", got)
	}
}

// TestBernoulliRatio checks P(true) = n/d for 64-bit, 128-bit and big
// operands, and that the three implementations read the same bits.
func TestBernoulliRatio(t *testing.T) {
	big2 := func(hi, lo uint64) u128 { return u128{hi, lo} }
	tests := []struct {
		name string
		n, d u128
	}{
		{"1/3", big2(0, 1), big2(0, 3)},
		{"2/7", big2(0, 2), big2(0, 7)},
		{"5/8", big2(0, 5), big2(0, 8)},
		{"0/9", big2(0, 0), big2(0, 9)},
		{"(2^62+1)/(2^62+3)", big2(0, 1<<62+1), big2(0, 1<<62+3)},
		{"128-bit: (2^100+7)/(3·2^100+1)", big2(1<<36, 7), big2(3<<36, 1)},
		{"128-bit near the top: (2^126)/(2^126·1.5+5)", big2(1<<62, 0), big2(3<<61, 5)},
	}
	const draws = 100000
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(40 + i)
			r, rb := rng{src: stattest.NewFastSource(seed)}, rng{src: stattest.NewFastSource(seed)}
			nb, db := tc.n.big(), tc.d.big()
			k, words, wordsBig := 0, 0, 0
			for range draws {
				words, wordsBig = words+r.words, wordsBig+rb.words
				r.words, rb.words = 0, 0
				got := r.bernoulliRatio(tc.n, tc.d)
				if want := rb.bernoulliRatioBig(nb, db); got != want {
					t.Fatal("128-bit and big implementations disagree on the same bits")
				}
				if got {
					k++
				}
			}
			if words+r.words != wordsBig+rb.words || r.nbits != rb.nbits {
				t.Errorf("the implementations read different amounts of randomness")
			}
			p, _ := new(big.Rat).SetFrac(nb, db).Float64()
			// Exact binomial tails, false-failure rate 1e-6.
			if !stattest.BinomialOK(k, draws, p, stattest.FalseFail) {
				t.Errorf("%d of %d true, want about %.0f", k, draws, p*draws)
			}
		})
	}
}

// TestBernoulliExp checks the frequency of Bernoulli(exp(−γ)) for the
// brief's γ and a few rationals, with exact binomial tails (false-failure
// rate 1e-6 each); γ = 10 has p = 4.5e-5, hence the larger sample.
func TestBernoulliExp(t *testing.T) {
	tests := []struct {
		name  string
		n, d  uint64
		draws int
	}{
		{"0", 0, 1, 20000},
		{"0.5", 1, 2, 100000},
		{"1", 1, 1, 100000},
		{"3", 3, 1, 100000},
		{"10", 10, 1, 1000000},
		{"7/3", 7, 3, 100000},
		{"1/1000", 1, 1000, 100000},
		{"2^40+1 over 2^40 (just above 1)", 1<<40 + 1, 1 << 40, 100000},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rng{src: stattest.NewFastSource(uint64(60 + i))}
			k := 0
			for range tc.draws {
				r.words = 0
				if r.bernoulliExp(u128{0, tc.n}, u128{0, tc.d}) {
					k++
				}
			}
			p := math.Exp(-float64(tc.n) / float64(tc.d))
			if !stattest.BinomialOK(k, tc.draws, p, stattest.FalseFail) {
				t.Errorf("γ = %d/%d: %d of %d true, want about %.1f", tc.n, tc.d, k, tc.draws, p*float64(tc.draws))
			}
		})
	}
	// The big-integer version on a γ = 3 + 1/7 whose numerator and
	// denominator need more than 128 bits.
	r := rng{src: stattest.NewFastSource(70)}
	d := new(big.Int).Lsh(big.NewInt(7), 200)
	n := new(big.Int).Lsh(big.NewInt(22), 200)
	const draws = 200000
	k := 0
	for range draws {
		r.words = 0
		if r.bernoulliExpBig(n, d) {
			k++
		}
	}
	if p := math.Exp(-22.0 / 7); !stattest.BinomialOK(k, draws, p, stattest.FalseFail) {
		t.Errorf("big γ = 22/7: %d of %d true, want about %.0f", k, draws, p*draws)
	}
	if n.Cmp(new(big.Int).Lsh(big.NewInt(22), 200)) != 0 {
		t.Error("bernoulliExpBig modified its argument")
	}
}

func TestGeometric(t *testing.T) {
	r := rng{src: stattest.NewFastSource(80)}
	xs := make([]int64, 100000)
	for i := range xs {
		r.words = 0
		xs[i] = int64(r.geometricExpMinusOne())
	}
	// P(V ≤ k) = 1 − e^{−(k+1)}.
	law := stattest.IntegerLaw{Spread: 2, CDF: func(k int64) float64 {
		if k < 0 {
			return 0
		}
		return -math.Expm1(-float64(k + 1))
	}}
	stattest.ChiSquare(t, "geometric", xs, law) // false-failure rate 1e-6
}

// laplaceCase is one discrete Laplace scale to test.
type laplaceCase struct {
	name  string
	p     laplaceParams // the exact rational scale sampled
	t     float64       // the same scale as a float, for the law
	draws int
}

func laplaceFloatCase(name string, t float64, draws int) laplaceCase {
	return laplaceCase{name, laplaceFromFloat(t), t, draws}
}

func TestDiscreteLaplaceDistribution(t *testing.T) {
	cases := []laplaceCase{
		laplaceFloatCase("t=0.3", 0.3, 60000),
		laplaceFloatCase("t=1", 1, 60000),
		laplaceFloatCase("t=7.5", 7.5, 60000),
		laplaceFloatCase("t=1e6", 1e6, 60000),
		laplaceFloatCase("t=2^40 (a grid scale)", 1<<40, 60000),
		laplaceFloatCase("t=0.75·2^40+0.5 (fractional, shift 13)", 0.75*(1<<40)+0.5, 60000),
		{"rational t=10/3", laplaceParams{n: 10, d: 3}, 10.0 / 3, 60000},
		{"rational t=1000/7 with shift: 1000/(7·2^3)", laplaceParams{n: 1000, d: 7, shift: 3}, 1000.0 / 56, 60000},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rng{src: stattest.NewFastSource(uint64(100 + i))}
			xs := make([]int64, tc.draws)
			for j := range xs {
				r.words = 0
				xs[j] = r.discreteLaplace(tc.p)
			}
			m2, m4 := stattest.DLapMoments(tc.t)
			q := math.Exp(-1 / tc.t)
			checkIntegerLaw(t, xs, stattest.DLapLaw(tc.t), m2, m4, tc.t, func(m float64) float64 {
				return 2 * math.Exp(-(m+1)/tc.t) / (1 + q) // P(|Z| > m)
			})
		})
	}
}

// TestDiscreteLaplaceTinyScale: at t = 0.01, P(Z ≠ 0) = 2q/(1+q) with
// q = e^{−100}, about 7.4e-44, so every draw must be 0 (false-failure rate
// below 1e-39 for 30000 draws; smaller still for the smaller scales). The
// sampler still runs its exact arithmetic with a denominator of 2^59 (and
// of 2^1126 for the smallest float64).
func TestDiscreteLaplaceTinyScale(t *testing.T) {
	for _, tt := range []float64{0.01, 1e-5, math.SmallestNonzeroFloat64} {
		n := New(stattest.NewFastSource(120))
		for range 30000 {
			z, err := n.DiscreteLaplace(tt)
			if err != nil {
				t.Fatal(err)
			}
			if z != 0 {
				t.Fatalf("DiscreteLaplace(%v) = %d, want 0", tt, z)
			}
		}
	}
}

// gaussCase is one discrete Gaussian to test.
type gaussCase struct {
	name   string
	params gaussParams
	sigma  float64 // σ = sqrt(σ²), for the law
	draws  int
}

func gaussFloatCase(name string, sigma float64, draws int) gaussCase {
	return gaussCase{name, gaussFromFloat(sigma), sigma, draws}
}

func TestDiscreteGaussianDistribution(t *testing.T) {
	ratParams, ok := gaussFromRat(big.NewRat(5, 3))
	if !ok {
		t.Fatal("gaussFromRat(5/3) failed")
	}
	cases := []gaussCase{
		gaussFloatCase("σ=0.6 rounded to 24 bits (t=1, 128-bit path)", RoundUpSignificand(0.6), 40000),
		gaussFloatCase("σ=1 (integer)", 1, 40000),
		gaussFloatCase("σ=3.7 rounded to 24 bits (128-bit path)", RoundUpSignificand(3.7), 40000),
		gaussFloatCase("σ=3.7 full precision (big path)", 3.7, 20000),
		gaussFloatCase("σ=1000.5", 1000.5, 40000),
		gaussFloatCase("σ=1e6", 1e6, 40000),
		gaussFloatCase("σ=2^40-3 (a grid scale)", 1<<40-3, 40000),
		{"rational σ²=5/3", ratParams, math.Sqrt(5.0 / 3), 40000},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rng{src: stattest.NewFastSource(uint64(200 + i))}
			xs := make([]int64, tc.draws)
			for j := range xs {
				r.words = 0
				xs[j] = r.discreteGaussian(&tc.params, false)
			}
			s := tc.sigma
			var law stattest.IntegerLaw
			var m2, m4 float64
			var tail func(m float64) float64
			if s < 3000 {
				tb := stattest.NewDGTable(s)
				law = tb.Law(s)
				m2, m4 = tb.Moments()
				tail = func(m float64) float64 { return 1 - law.CDF(int64(m)) + law.CDF(-int64(m)-1) }
			} else {
				law = stattest.DGLargeLaw(s)
				m2, m4 = s*s, 3*s*s*s*s
				tail = func(m float64) float64 { return math.Erfc((m + 0.5) / (s * math.Sqrt2)) }
			}
			checkIntegerLaw(t, xs, law, m2, m4, s, tail)
		})
	}
}

// TestDiscreteGaussianTinyScale: at σ = 0.1, P(Z ≠ 0) ≈ 2e^{−50} ≈ 3.9e-22,
// so every draw must be 0 (false-failure rate below 1e-17 for 30000
// draws). σ = 0.1 has a 53-bit significand, so this runs the math/big path.
func TestDiscreteGaussianTinyScale(t *testing.T) {
	n := New(stattest.NewFastSource(130))
	for range 30000 {
		z, err := n.DiscreteGaussian(0.1)
		if err != nil {
			t.Fatal(err)
		}
		if z != 0 {
			t.Fatalf("DiscreteGaussian(0.1) = %d, want 0", z)
		}
	}
}

// checkIntegerLaw runs the checks shared by the integer samplers on xs,
// drawn from a symmetric law with CDF law.cdf, E[Z²] = m2, E[Z⁴] = m4, scale
// s, and tail(m) = P(|Z| > m).
func checkIntegerLaw(t *testing.T, xs []int64, law stattest.IntegerLaw, m2, m4, s float64, tail func(m float64) float64) {
	t.Helper()
	n := len(xs)
	if cells := stattest.ChiSquare(t, "goodness of fit", xs, law); cells < 3 {
		t.Errorf("χ² used only %d cells", cells)
	}
	fs := make([]float64, n)
	for i, x := range xs {
		fs[i] = float64(x)
	}
	// Mean 0 and variance m2: z-tests (the sample mean and variance are
	// asymptotically normal with standard errors sqrt(m2/n) and
	// sqrt((m4 − m2²)/n)); false-failure rate ≈ 5.7e-7 each.
	mean, variance := stattest.MeanVar(fs)
	if z := mean / math.Sqrt(m2/float64(n)); math.Abs(z) > stattest.ZMax {
		t.Errorf("mean %v: z = %.2f (scale %v)", mean, z, s)
	}
	if z := (variance - m2) / math.Sqrt((m4-m2*m2)/float64(n)); math.Abs(z) > stattest.ZMax {
		t.Errorf("variance %v, want %v: z = %.2f", variance, m2, z)
	}
	// Tail mass beyond about 2.5 scales, exact binomial tails:
	// false-failure rate 1e-6.
	m := math.Floor(2.5 * s)
	k := 0
	for _, x := range fs {
		if math.Abs(x) > m {
			k++
		}
	}
	if p := tail(m); !stattest.BinomialOK(k, n, p, stattest.FalseFail) {
		t.Errorf("%d of %d draws beyond %v, want about %.1f", k, n, m, p*float64(n))
	}
	// Symmetry: the sign of nonzero draws is a fair coin (binomial,
	// false-failure rate 1e-6), and |Z| has the same law on both sides:
	// two-sample KS bounded by the sum of two DKW bounds at 5e-7 each,
	// valid for discrete laws too (false-failure rate ≤ 1e-6).
	var pos, neg []float64
	for _, x := range fs {
		if x > 0 {
			pos = append(pos, x)
		} else if x < 0 {
			neg = append(neg, -x)
		}
	}
	if !stattest.BinomialOK(len(pos), len(pos)+len(neg), 0.5, stattest.FalseFail) {
		t.Errorf("%d positive vs %d negative draws", len(pos), len(neg))
	}
	if len(pos) > 0 && len(neg) > 0 {
		if d, bound := stattest.KSTwoSample(pos, neg), stattest.DKWBound(len(pos), 5e-7)+stattest.DKWBound(len(neg), 5e-7); d > bound {
			t.Errorf("|Z| differs between signs: KS %.4f > %.4f", d, bound)
		}
	}
}

// TestDiscreteGaussianRejectionRate checks the number of discrete Laplace
// proposals per accepted sample against its exact expectation 1/p, where
// p = e^{−σ²/(2t²)}·Σ_y e^{−y²/(2σ²)} / Σ_y e^{−|y|/t} and
// Σ_y e^{−|y|/t} = coth(1/(2t)). The count of proposals for N samples is a
// sum of N geometric variables with variance (1 − p)/p² each: z-test,
// false-failure rate ≈ 5.7e-7.
func TestDiscreteGaussianRejectionRate(t *testing.T) {
	for i, sigma := range []float64{0.1, 0.6, 1, RoundUpSignificand(3.7), 1000.5, 1e6} {
		g := gaussFromFloat(sigma)
		tt := float64(g.t)
		var zSigma float64
		if sigma < 3000 {
			for y := -math.Ceil(40 * sigma); y <= math.Ceil(40*sigma); y++ {
				zSigma += math.Exp(-y * y / (2 * sigma * sigma))
			}
		} else {
			zSigma = sigma * math.Sqrt(2*math.Pi) // Poisson summation, exact to e^{−2π²σ²}
		}
		p := math.Exp(-sigma*sigma/(2*tt*tt)) * zSigma * math.Tanh(1/(2*tt))
		r := rng{src: stattest.NewFastSource(uint64(300 + i))}
		const samples = 20000
		for range samples {
			r.words = 0
			r.discreteGaussian(&g, false)
		}
		want := samples / p
		sd := math.Sqrt(samples * (1 - p) / (p * p))
		if z := (float64(r.proposals) - want) / sd; math.Abs(z) > stattest.ZMax {
			t.Errorf("σ=%v (t=%d): %d proposals for %d samples, want %.0f (acceptance %.4f): z = %.2f",
				sigma, g.t, r.proposals, samples, want, p, z)
		}
		t.Logf("σ=%v t=%d: acceptance rate %.4f (expected %.4f)", sigma, g.t, samples/float64(r.proposals), p)
	}
}

// TestGaussianPathsAgree runs the 128-bit and the math/big acceptance
// tests on the same seed: being exact, they must make identical decisions
// from identical bits.
func TestGaussianPathsAgree(t *testing.T) {
	for i, sigma := range []float64{0.75, 1, RoundUpSignificand(3.7), RoundUpSignificand(1234.567), 1e6, 1<<40 - 3} {
		g := gaussFromFloat(sigma)
		if !g.fast {
			t.Fatalf("σ=%v: expected the 128-bit path", sigma)
		}
		seed := uint64(400 + i)
		a, b := rng{src: stattest.NewFastSource(seed)}, rng{src: stattest.NewFastSource(seed)}
		for j := range 5000 {
			a.words, b.words = 0, 0
			x, y := a.discreteGaussian(&g, false), b.discreteGaussian(&g, true)
			if x != y || a.words != b.words || a.nbits != b.nbits {
				t.Fatalf("σ=%v draw %d: 128-bit path %d (%d words), big path %d (%d words)", sigma, j, x, a.words, y, b.words)
			}
		}
	}
	// Parameters that need big integers are built as such.
	if g := gaussFromFloat(3.7); g.fast {
		t.Error("σ=3.7 with a 53-bit significand claims to fit in 128 bits")
	}
}

func TestNoiseRejectsInvalidScale(t *testing.T) {
	n := New(SeededSource(1))
	for _, s := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1<<50 + 1<<10, 1e300} {
		if z, err := n.DiscreteLaplace(s); err == nil {
			t.Errorf("DiscreteLaplace(%v) = %d, want an error", s, z)
		}
		if z, err := n.DiscreteGaussian(s); err == nil {
			t.Errorf("DiscreteGaussian(%v) = %d, want an error", s, z)
		}
	}
	for _, s := range []float64{1 << 50, math.SmallestNonzeroFloat64} {
		if _, err := n.DiscreteLaplace(s); err != nil {
			t.Errorf("DiscreteLaplace(%v): %v", s, err)
		}
		if _, err := n.DiscreteGaussian(s); err != nil {
			t.Errorf("DiscreteGaussian(%v): %v", s, err)
		}
	}
}

// TestStuckSourceFails: a constant Source can make a rejection loop spin
// forever; the samplers must give up with ErrSourceStuck instead (or
// return a value), never hang.
func TestStuckSourceFails(t *testing.T) {
	stuck := 0
	for _, w := range []uint64{0, math.MaxUint64, 0x5555555555555555} {
		n := New(stattest.ConstSource(w))
		for _, s := range []float64{0.01, 1e6} {
			for _, draw := range []func(float64) (int64, error){n.DiscreteLaplace, n.DiscreteGaussian} {
				if _, err := draw(s); err != nil {
					if !errors.Is(err, ErrSourceStuck) {
						t.Errorf("word %#x scale %v: unexpected error %v", w, s, err)
					}
					stuck++
				}
			}
		}
	}
	// An all-zero source reads as U = 0 < every probability, so the
	// exp(−1) coin never fails: at least those draws must report it.
	if stuck == 0 {
		t.Error("no constant source was detected as stuck")
	}
}

func TestNewNoiseNilSourceUsesCrypto(t *testing.T) {
	n := New(nil)
	// Three equal draws at t = 1e6 have probability below 1e-12.
	var zs [3]int64
	for i := range zs {
		z, err := n.DiscreteLaplace(1e6)
		if err != nil {
			t.Fatal(err)
		}
		zs[i] = z
	}
	if zs[0] == zs[1] && zs[1] == zs[2] {
		t.Errorf("NewNoise(nil) drew %v three times", zs[0])
	}
}

// TestNoiseConcurrent shares one Noise between goroutines (run with -race).
func TestNoiseConcurrent(t *testing.T) {
	n := New(CryptoSource())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				if _, err := n.DiscreteGaussian(3.5); err != nil {
					t.Error(err)
					return
				}
				if _, err := AddLaplace(n, 1.25, 2); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
