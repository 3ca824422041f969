package dpaudit

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestClopperPearson(t *testing.T) {
	// Known values: k=0 gives lo 0 and hi = 1 − (alpha/2)^(1/n); k=n the mirror.
	lo, hi := ClopperPearson(0, 100, 0.05)
	if lo != 0 || math.Abs(hi-(1-math.Pow(0.025, 1.0/100))) > 1e-12 {
		t.Errorf("k=0: [%v, %v]", lo, hi)
	}
	lo, hi = ClopperPearson(100, 100, 0.05)
	if hi != 1 || math.Abs(lo-math.Pow(0.025, 1.0/100)) > 1e-12 {
		t.Errorf("k=n: [%v, %v]", lo, hi)
	}
	// 30 of 100: the interval contains 0.3 and is narrower than ±0.1.
	lo, hi = ClopperPearson(30, 100, 0.05)
	if !(lo < 0.3 && hi > 0.3 && lo > 0.2 && hi < 0.4) {
		t.Errorf("k=30 of 100: [%v, %v]", lo, hi)
	}
}

// TestClopperPearsonTails checks the interval's ends against the binomial
// tails summed directly from the pmf (log-gamma, no incomplete beta), down
// to the levels the audits use (alpha/2 = 5e-9) and up to n = 10^5, where
// the Beta quantile used before failed (hi = 1 for k = 0): at hi the lower
// tail P(X ≤ k) and at lo the upper tail P(X ≥ k) must be alpha/2 within a
// relative 1e-6.
func TestClopperPearsonTails(t *testing.T) {
	pmf := func(i, n int, p float64) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(i + 1))
		c, _ := math.Lgamma(float64(n - i + 1))
		return math.Exp(a - b - c + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	for _, n := range []int{10, 1000, 50000, 100000} {
		for _, k := range []int{0, 1, 5, 50, n - 3, n} {
			if k < 0 || k > n {
				continue
			}
			for _, alpha := range []float64{0.05, 1e-6, 1e-8} {
				lo, hi := ClopperPearson(k, n, alpha)
				lower, upper := alpha/2, alpha/2 // P(X ≤ k | hi), P(X ≥ k | lo)
				if hi < 1 {
					lower = 0
					for i := 0; i <= k; i++ {
						lower += pmf(i, n, hi)
					}
				}
				if lo > 0 {
					upper = 0
					for i := n; i >= k; i-- {
						upper += pmf(i, n, lo)
					}
				}
				if math.Abs(lower-alpha/2) > 1e-6*alpha || math.Abs(upper-alpha/2) > 1e-6*alpha || !(lo <= float64(k)/float64(n)) || !(hi >= float64(k)/float64(n)) {
					t.Errorf("k=%d n=%d alpha=%g: [%v, %v] has tails %v, %v, want %v", k, n, alpha, lo, hi, lower, upper, alpha/2)
				}
			}
		}
	}
}

// laplaceOutputs samples count + Laplace(b) on the neighbours count 0 and 1.
func laplaceOutputs(seed uint64, n int, b float64) (a, c [][]float64) {
	src := rand.New(rand.NewPCG(seed, 2))
	lap := distuv.Laplace{Mu: 0, Scale: b, Src: src}
	for i := 0; i < n; i++ {
		a = append(a, []float64{0 + lap.Rand()})
		c = append(c, []float64{1 + lap.Rand()})
	}
	return a, c
}

// TestLowerBoundLaplace: the bound stays below the true ε = 1 for Laplace
// with b = 1/ε, and exceeds it with half the noise (true ε = 2). The bound
// is wrong with probability at most alpha = 1e-6 (union bound over events);
// the seed is fixed, so the test is deterministic.
func TestLowerBoundLaplace(t *testing.T) {
	const eps, n, alpha = 1.0, 200000, 1e-6
	for _, tc := range []struct {
		name   string
		scale  float64
		broken bool
	}{{"calibrated", 1 / eps, false}, {"half the noise", 0.5 / eps, true}} {
		a, b := laplaceOutputs(3, n, tc.scale)
		r := LowerBound(a, b, Thresholds(a, b, 0, Quantiles), 0, alpha)
		t.Logf("%s: %v", tc.name, r)
		if tc.broken && r.Epsilon <= eps {
			t.Errorf("%s: bound %v does not exceed the claimed ε=%v", tc.name, r.Epsilon, eps)
		}
		if !tc.broken && r.Epsilon > eps {
			t.Errorf("%s: bound %v exceeds the true ε=%v", tc.name, r.Epsilon, eps)
		}
	}
}

// TestAtLeastAtMostSeesAtoms: with outputs clamped at 1 on one input
// only, the non-strict event {out ≥ 1} separates the inputs, which the
// strict thresholds cannot at the atom itself.
func TestAtLeastAtMostSeesAtoms(t *testing.T) {
	var a, b [][]float64
	for i := range 1000 {
		a = append(a, []float64{1})
		b = append(b, []float64{float64(i%2) * 0.5})
	}
	r := LowerBound(a, b, AtLeastAtMost(a, b, 0, Quantiles), 0, 1e-6)
	if r.Epsilon < 3 {
		t.Fatalf("lower bound %v from %s, want a large one from out[0] >= 1", r.Epsilon, r.Event)
	}
}
