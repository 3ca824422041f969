package continual

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/internal/racedetect"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// auditOutputs runs the production path (Run: exact discrete Gaussian on
// the plan's lattice, the releaser) trials times over the whole horizon on
// input x and returns, per trial, the one-number statistic the audit
// tests: the released totals are mapped back (forward substitution through
// B̂, pure post-processing of the output) to y = Ĉ·x + γz, and projected
// on the unit direction of Ĉ·d, d the worst neighbour's difference. The
// shift Ĉ·d is on the lattice, so the two output laws are products of
// discrete Gaussians with equal normalizers and this projection is their
// likelihood-ratio statistic: threshold tests on it see the whole privacy
// loss of the T-dimensional release, not just one coordinate's.
func auditOutputs(t *testing.T, p *Plan, x, d []float64, sigma float64, trials int, seed uint64) [][]float64 {
	t.Helper()
	c, b, drawOf := dense(t, p)
	n := p.t
	dir := make([]float64, len(c))
	for r := range c {
		for j, v := range d {
			dir[r] += c[r][j] * v
		}
	}
	norm := math.Sqrt(sumSq(dir))
	nodeAt := make([]int, n) // the row of C completed at window t
	for r, w := range drawOf {
		nodeAt[w] = r
	}
	s := noise.New(noise.SeededSource(seed))
	xi := make([]int64, n)
	for i, v := range x {
		xi[i] = int64(v)
	}
	y := make([]float64, len(c))
	out := make([][]float64, trials)
	for i := range out {
		tot, _, err := Run(p, s, sigma, xi)
		if err != nil {
			t.Fatal(err)
		}
		var u float64
		for w := 0; w < n; w++ {
			v := tot[w]
			for row, bw := range b[w] {
				if bw != 0 && drawOf[row] < w {
					v -= bw * y[row]
				}
			}
			y[nodeAt[w]] = v / b[w][nodeAt[w]]
			u += y[nodeAt[w]] * dir[nodeAt[w]]
		}
		out[i] = []float64{u / norm}
	}
	return out
}

// TestPrivacyAudit releases a horizon of T = 16 windows, calibrated to
// (ε, δ) = (2, 1e-5) by the analytic Gaussian mechanism on the plan's
// sensitivity, on D and on D plus one unit placed where it moves C·x most
// (k = 1: L in the window of C's largest column; k = T: L in every
// window), and bounds ε from below with dpaudit. The calibrated plan must
// not exceed ε; the broken variant — sensitivity underestimated by 2×,
// so σ is halved — must be caught. Discrete Gaussian noise on the plan's
// lattice (γ = 1 for tree, 2^−24 for sqrt and blt; at these lattice scales
// its (ε, δ) curve is the continuous one's to far below the audit's
// resolution); fixed seeds; the bound errs with probability ≤ alpha = 1e-6.
func TestPrivacyAudit(t *testing.T) {
	racedetect.SkipStatistical(t)
	const n, trials, alpha, eps, delta = 16, 100000, 1e-6, 2.0, 1e-5
	for ci, tc := range []struct {
		m Method
		k int
	}{{Tree, 1}, {Sqrt, 1}, {BLT, 1}, {Tree, n}, {Sqrt, n}} {
		t.Run(fmt.Sprintf("%s/k=%d", tc.m, tc.k), func(t *testing.T) {
			const l = 2
			p, err := NewPlan(tc.m, n, tc.k, l)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(3 + i%4)
			}
			d := make([]float64, n)
			if tc.k == 1 {
				worst := 0
				for j := 0; j < n; j++ {
					if p.colNormSq(j) > p.colNormSq(worst) {
						worst = j
					}
				}
				d[worst] = l
			} else {
				for j := range d {
					d[j] = l
				}
			}
			x2 := make([]float64, n)
			for i := range x2 {
				x2[i] = x[i] + d[i]
			}
			for _, broken := range []bool{false, true} {
				sens := p.Sensitivity()
				if broken {
					sens /= 2
				}
				sigma, err := noise.AnalyticGaussianSigma(eps, delta, sens)
				if err != nil {
					t.Fatal(err)
				}
				sigma = noise.RoundUpSignificand(sigma) // as SigmaForRho: fast exact sampling
				seed := uint64(200 + 10*ci)
				a := auditOutputs(t, p, x, d, sigma, trials, seed)
				b := auditOutputs(t, p, x2, d, sigma, trials, seed+1)
				r := dpaudit.LowerBound(a, b, dpaudit.Thresholds(a, b, 0, dpaudit.Quantiles), delta, alpha)
				t.Logf("broken=%v (Δ=%.4g, σ=%.4g): %v", broken, sens, sigma, r)
				switch {
				case !broken && r.Epsilon > eps:
					t.Errorf("calibrated: lower bound %v exceeds the claimed ε=%v", r.Epsilon, eps)
				case broken && r.Epsilon <= eps:
					t.Errorf("sensitivity halved: not caught, lower bound %v ≤ ε=%v", r.Epsilon, eps)
				}
			}
		})
	}
}
