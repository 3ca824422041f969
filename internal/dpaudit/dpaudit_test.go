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
