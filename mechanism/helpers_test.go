package mechanism

import (
	"math"
	"slices"
)

// Statistical helpers shared by the tests. Every statistical assertion in
// this package runs on a fixed seed, so it is deterministic; the false-
// failure rates quoted beside thresholds are the probability that a correct
// implementation would fail on a seed drawn at random, i.e. how unlucky a
// seed would have to be.

// zMax is the |z| threshold used for normal-approximation checks. For a
// standard normal statistic P(|Z| > 5) ≈ 5.7e-7, the false-failure rate of
// each such check.
const zMax = 5

// dkwBound returns the ε with P(sup|F_n − F| > ε) ≤ alpha for an empirical
// CDF of n i.i.d. draws from continuous F: the Dvoretzky–Kiefer–Wolfowitz
// inequality with Massart's constant, P(√n·D > x) ≤ 2e^{−2x²}, which holds
// for every n (not only asymptotically). Its false-failure rate is alpha.
func dkwBound(n int, alpha float64) float64 {
	return math.Sqrt(math.Log(2/alpha)/2) / math.Sqrt(float64(n))
}

// ksStatistic returns sup_x |F_n(x) − cdf(x)| for the sample xs.
func ksStatistic(xs []float64, cdf func(float64) float64) float64 {
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

// ksTwoSample returns sup_x |F_a(x) − F_b(x)| for two samples.
func ksTwoSample(a, b []float64) float64 {
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

// meanVar returns the sample mean and the unbiased sample variance.
func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// proportionZ returns the z-score of k successes in n trials against
// success probability p.
func proportionZ(k, n int, p float64) float64 {
	return (float64(k) - float64(n)*p) / math.Sqrt(float64(n)*p*(1-p))
}

// constSource always returns the same word, to drive samplers to the ends
// of their input range.
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }
