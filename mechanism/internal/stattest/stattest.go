// Package stattest holds the statistical test helpers the mechanism
// packages' tests share: goodness-of-fit tests (χ², Kolmogorov–Smirnov,
// binomial tails) with a fixed false-failure rate, reference laws of the
// discrete Laplace and Gaussian, and fast seeded sources. It is for tests
// only.
package stattest

import (
	"encoding/binary"
	"math"
	mrand "math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// Statistical helpers shared by the tests. Every statistical assertion in
// this package runs on a fixed seed, so it is deterministic; the false-
// failure rates quoted beside thresholds are the probability that a correct
// implementation would fail on a seed drawn at random, i.e. how unlucky a
// seed would have to be.

// ZMax is the |z| threshold used for normal-approximation checks. For a
// standard normal statistic P(|Z| > 5) ≈ 5.7e-7, the false-failure rate of
// each such check.
const ZMax = 5

// DKWBound returns the ε with P(sup|F_n − F| > ε) ≤ alpha for an empirical
// CDF of n i.i.d. draws from continuous F: the Dvoretzky–Kiefer–Wolfowitz
// inequality with Massart's constant, P(√n·D > x) ≤ 2e^{−2x²}, which holds
// for every n (not only asymptotically). Its false-failure rate is alpha.
func DKWBound(n int, alpha float64) float64 {
	return math.Sqrt(math.Log(2/alpha)/2) / math.Sqrt(float64(n))
}

// KSStatistic returns sup_x |F_n(x) − cdf(x)| for the sample xs.
func KSStatistic(xs []float64, cdf func(float64) float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	d := 0.0
	for i, x := range s {
		f := cdf(x)
		d = math.Max(d, math.Max(float64(i+1)/n-f, f-float64(i)/n))
	}
	return d
}

// KSTwoSample returns sup_x |F_a(x) − F_b(x)| for two samples.
func KSTwoSample(a, b []float64) float64 {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	na, nb := float64(len(a)), float64(len(b))
	i, j, d := 0, 0, 0.0
	for i < len(a) && j < len(b) {
		x := math.Min(a[i], b[j])
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/na-float64(j)/nb))
	}
	return d
}

// MeanVar returns the sample mean and the unbiased sample variance.
func MeanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// ProportionZ returns the z-score of k successes in n trials against
// success probability p.
func ProportionZ(k, n int, p float64) float64 {
	return (float64(k) - float64(n)*p) / math.Sqrt(float64(n)*p*(1-p))
}

// ConstSource always returns the same word, to drive samplers to the ends
// of their input range.
type ConstSource uint64

// Uint64 returns c.
func (c ConstSource) Uint64() uint64 { return uint64(c) }

// Uniform53 maps the top 53 bits of w to (k+1)·2⁻⁵³, a uniform draw from
// (0, 1] used by tests to pick values.
func Uniform53(w uint64) float64 {
	return float64(w>>11+1) * 0x1p-53
}

// BinomialOK reports whether k successes in n trials are consistent with
// success probability p at two-sided level alpha, by the exact binomial
// tails: both P(X ≤ k) and P(X ≥ k) must exceed alpha/2. A correct sampler
// fails it with probability at most alpha (the false-failure rate).
func BinomialOK(k, n int, p, alpha float64) bool {
	if p == 0 {
		return k == 0
	}
	if p == 1 {
		return k == n
	}
	b := distuv.Binomial{N: float64(n), P: p}
	lower := b.CDF(float64(k))
	upper := 1.0
	if k > 0 {
		upper = b.Survival(float64(k - 1))
	}
	return lower > alpha/2 && upper > alpha/2
}

// FalseFail is the false-failure rate used for each exact statistical check
// (binomial tails, χ² critical values) in the sampler tests.
const FalseFail = 1e-6

// IntegerLaw is an integer-valued distribution given by its CDF, with a
// hint of its spread for the χ² cell search.
type IntegerLaw struct {
	CDF    func(k int64) float64 // P(Z ≤ k)
	Spread float64               // a scale: cells are searched in ±spread·200
}

// ChiSquare checks xs against law with Pearson's χ² test: the integers are
// cut into up to 40 cells of roughly equal probability (from the CDF), cells
// with an expected count below 5 are merged into a neighbour, and the
// statistic is compared with the χ² quantile of level 1 − FalseFail on
// cells − 1 degrees of freedom. Its false-failure rate is FalseFail (to the
// accuracy of the χ² approximation with expected counts ≥ 5). It returns the
// number of cells used, so callers can check the test had power.
func ChiSquare(t *testing.T, name string, xs []int64, law IntegerLaw) int {
	t.Helper()
	n := float64(len(xs))
	span := int64(math.Min(law.Spread*200+10, 1<<62))
	// quantile returns the smallest k in [−span, span] with cdf(k) ≥ p.
	quantile := func(p float64) int64 {
		lo, hi := -span, span
		for lo < hi {
			mid := lo + (hi-lo)/2
			if law.CDF(mid) >= p {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return lo
	}
	const target = 40
	var cuts []int64 // cell i is (cuts[i-1], cuts[i]]; the last cell is open
	for i := 1; i < target; i++ {
		c := quantile(float64(i) / target)
		if len(cuts) == 0 || c > cuts[len(cuts)-1] {
			cuts = append(cuts, c)
		}
	}
	// Expected counts per cell, then merge small cells forward.
	type cell struct {
		hi  int64 // inclusive upper edge; math.MaxInt64 for the last
		exp float64
	}
	var cells []cell
	prev := 0.0
	for _, c := range cuts {
		p := law.CDF(c)
		cells = append(cells, cell{c, n * (p - prev)})
		prev = p
	}
	cells = append(cells, cell{math.MaxInt64, n * (1 - prev)})
	var merged []cell
	for _, c := range cells {
		if len(merged) > 0 && merged[len(merged)-1].exp < 5 {
			merged[len(merged)-1].hi = c.hi
			merged[len(merged)-1].exp += c.exp
			continue
		}
		merged = append(merged, c)
	}
	if k := len(merged); k > 1 && merged[k-1].exp < 5 {
		merged[k-2].hi = merged[k-1].hi
		merged[k-2].exp += merged[k-1].exp
		merged = merged[:k-1]
	}
	if len(merged) < 2 {
		t.Fatalf("%s: the law puts all its mass in one cell; use an exact check", name)
	}
	obs := make([]float64, len(merged))
	for _, x := range xs {
		i, _ := slices.BinarySearchFunc(merged, x, func(c cell, x int64) int {
			if c.hi < x {
				return -1
			}
			return 1
		})
		obs[i]++
	}
	stat := 0.0
	for i, c := range merged {
		stat += (obs[i] - c.exp) * (obs[i] - c.exp) / c.exp
	}
	df := float64(len(merged) - 1)
	crit := distuv.ChiSquared{K: df}.Quantile(1 - FalseFail)
	if stat > crit {
		t.Errorf("%s: χ² = %.1f on %v degrees of freedom > %.1f (level 1−%g)", name, stat, df, crit, FalseFail)
	}
	return len(merged)
}

// DLapLaw is the discrete Laplace of scale t: P(Z = k) = (1−q)/(1+q)·q^{|k|},
// q = e^{−1/t}, so P(Z > k) = q^{k+1}/(1+q) for k ≥ 0.
func DLapLaw(t float64) IntegerLaw {
	q := math.Exp(-1 / t)
	return IntegerLaw{Spread: t + 1, CDF: func(k int64) float64 {
		if k >= 0 {
			return 1 - math.Exp(-float64(k+1)/t)/(1+q)
		}
		return math.Exp(float64(k)/t) / (1 + q)
	}}
}

// DLapMoments returns E[Z²] and E[Z⁴] of the discrete Laplace of scale t
// from the series Σk²q^k = q(1+q)/(1−q)³ and Σk⁴q^k =
// q(1+11q+11q²+q³)/(1−q)⁵, with 1 − q computed by expm1 for large t.
func DLapMoments(t float64) (m2, m4 float64) {
	q := math.Exp(-1 / t)
	omq := -math.Expm1(-1 / t)
	c := 2 * omq / (1 + q) // 2·P(0)
	m2 = c * q * (1 + q) / (omq * omq * omq)
	m4 = c * q * (1 + 11*q + 11*q*q + q*q*q) / math.Pow(omq, 5)
	return m2, m4
}

// DGTable is N_Z(0, σ²) tabulated by brute-force summation over
// |y| ≤ 40σ + 2 (beyond that e^{−y²/(2σ²)} < 1e-347 underflows), for σ up to
// a few thousand.
type DGTable struct {
	Off int64     // PMF[i] is P(Z = i − Off)
	PMF []float64 // normalized
	Cum []float64 // Cum[i] = P(Z ≤ i − Off)
}

// NewDGTable tabulates the discrete Gaussian N_Z(0, σ²) (see DGTable).
func NewDGTable(sigma float64) DGTable {
	return NewTableFromWeights(int64(math.Ceil(40*sigma))+2, func(y float64) float64 {
		return math.Exp(-y * y / (2 * sigma * sigma))
	})
}

// NewTableFromWeights normalizes w(y) over |y| ≤ off into a table.
func NewTableFromWeights(off int64, w func(y float64) float64) DGTable {
	tb := DGTable{Off: off, PMF: make([]float64, 2*off+1), Cum: make([]float64, 2*off+1)}
	z := 0.0
	for i := range tb.PMF {
		tb.PMF[i] = w(float64(int64(i) - off))
		z += tb.PMF[i]
	}
	acc := 0.0
	for i := range tb.PMF {
		tb.PMF[i] /= z
		acc += tb.PMF[i]
		tb.Cum[i] = acc
	}
	return tb
}

// P returns P(Z = k), 0 outside the table.
func (tb DGTable) P(k int64) float64 {
	if i := k + tb.Off; i >= 0 && i < int64(len(tb.PMF)) {
		return tb.PMF[i]
	}
	return 0
}

// Law returns the table as an IntegerLaw for ChiSquare, with the given
// spread hint.
func (tb DGTable) Law(spread float64) IntegerLaw {
	return IntegerLaw{Spread: spread + 1, CDF: func(k int64) float64 {
		i := k + tb.Off
		switch {
		case i < 0:
			return 0
		case i >= int64(len(tb.Cum)):
			return 1
		}
		return tb.Cum[i]
	}}
}

// Moments returns E[Z²] and E[Z⁴].
func (tb DGTable) Moments() (m2, m4 float64) {
	for i, p := range tb.PMF {
		y := float64(int64(i) - tb.Off)
		m2 += y * y * p
		m4 += y * y * y * y * p
	}
	return m2, m4
}

// DGLargeLaw is N_Z(0, σ²) for large σ through the midpoint rule,
// P(Z ≤ k) ≈ Φ((k + 1/2)/σ). By the cell-error bound in
// DiscreteGaussianDelta's documentation the error is at most
// (2.43/σ + 3.79/σ²)/(24·σ·√(2π)) < 0.05/σ² (2e-14 at σ = 1e6), far below
// what a χ² test on 1e5 draws can resolve. Its moments are σ² and 3σ⁴ up to
// a relative O(σ⁴e^{−2π²σ²}) by Poisson summation.
func DGLargeLaw(sigma float64) IntegerLaw {
	return IntegerLaw{Spread: sigma, CDF: func(k int64) float64 {
		return 0.5 * math.Erfc(-(float64(k)+0.5)/(sigma*math.Sqrt2))
	}}
}

// FastSource is an unsynchronized seeded ChaCha8 Source for single-goroutine
// statistical tests: SeededSource's mutex is costly under the race detector.
type FastSource struct{ c *mrand.ChaCha8 }

// NewFastSource returns a FastSource seeded with seed.
func NewFastSource(seed uint64) FastSource {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:8], seed)
	return FastSource{mrand.NewChaCha8(key)}
}

// Uint64 returns the next word of the stream.
func (f FastSource) Uint64() uint64 { return f.c.Uint64() }
