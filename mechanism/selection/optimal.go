package selection

import (
	"fmt"
	"math"
)

// This file computes the release probabilities π(n) of Optimal
// (Desfontaines, Voss, Gipson & Mandayam 2022; see Optimal) and checks them
// against the exact (ε, δ) inequalities.

// maxPiLen bounds the table of π: 2^20 float64 values (8 MiB). π reaches
// 1 after about (2/ε′)·ln(1 + ε′/(2δ′)) steps, ε′ = ε/L0 and δ′ = δ/L0 (it
// grows like e^{nε′} from δ′ to 1/2, then symmetrically; at most about
// 1/δ′), so only a per-key ε′ below about 2e-5 together with a δ′ below
// about 1e-8 exceeds it.
const maxPiLen = 1 << 20

// piSlack is the relative amount by which the recursion lowers e^{ε′} and
// δ′, so that the float64 sequence satisfies the exact inequalities with a
// margin (about 50 times) above its rounding errors, which checkPi
// verifies. It lowers π(n) by a relative n·2^−44 at most (6e-8 at the
// table's longest), a negligible loss of utility.
const piSlack = 0x1p-44

// newOptimal calibrates Optimal: the table of π at ε′ = ε/L0, δ′ = δ/L0.
func newOptimal(p Params) (*Selector, error) {
	l0 := float64(p.MaxKeys)
	pi, err := optimalPi(p.Epsilon/l0, p.Delta/l0)
	if err != nil {
		return nil, err
	}
	if err := checkPi(pi, p.Epsilon, p.Delta, p.MaxKeys); err != nil {
		return nil, err
	}
	return &Selector{method: Optimal, eps: p.Epsilon, delta: p.Delta, maxKeys: p.MaxKeys, pi: pi, deltaUsed: p.Delta}, nil
}

// optimalPi returns π(0), …, π(N), normally with π(N) = 1, for the per-key (eps,
// delta), by the recursion of Optimal with e^eps and delta lowered by a
// relative piSlack. The third term is computed through r = 1 − π(n−1)
// (exact once π ≥ 1/2): π(n) = 1 − (r − δ)/e^ε, and 1 exactly only when
// r ≤ δ, so that the rounding of values near 1 can never round a
// probability of dropping a key away. Each π(n) < 1 is then lowered by two
// ulps, which covers the rounding of its own evaluation: a smaller π(n)
// only tightens both inequalities at step n, and step n+1 is computed from
// the stored value.
//
// When δ is below the spacing of float64 near 1 (about 1.1e-16), π(n) can
// come within a few ulps of 1 but not reach it (that needs 1 − π(n−1) ≤ δ);
// the table then ends at its last value below 1, which every larger n
// keeps: holding π constant satisfies the inequalities trivially. A stall
// below 1/2 cannot happen for the budgets New accepts and is reported.
func optimalPi(eps, delta float64) ([]float64, error) {
	e := math.Exp(eps) * (1 - piSlack)
	d := delta * (1 - piSlack)
	pi := []float64{0}
	for prev := 0.0; prev < 1; {
		if len(pi) == maxPiLen {
			return nil, invalid("optimal: the release probability does not reach 1 within %d units at per-key epsilon %v, delta %v "+
				"(raise epsilon, lower max_keys, or use laplace)", maxPiLen, eps, delta)
		}
		t2 := e*prev + d
		r := 1 - prev
		next := 1.0
		if r > d || t2 < 1 {
			t3 := 1.0
			if r > d {
				t3 = 1 - (r-d)/e
			}
			next = down(math.Min(math.Min(t2, t3), 1), 2)
		}
		if !(next > prev) {
			if prev >= 0.5 {
				break
			}
			return nil, invalid("optimal: π stalls at %v after %d units at per-key epsilon %v, delta %v (raise epsilon)", prev, len(pi)-1, eps, delta)
		}
		pi = append(pi, next)
		prev = next
	}
	return pi, nil
}

// down returns x lowered by k ulps (toward 0 for x > 0).
func down(x float64, k int) float64 {
	for range k {
		x = math.Nextafter(x, math.Inf(-1))
	}
	return x
}

// checkPi verifies, with rigorous rounding margins, that the float64 table
// pi is the table of an (eps/l0, delta/l0)-DP selection of one key (its
// last entry repeated for every larger n): π(0) = 0, π is nondecreasing in
// [0, 1], and for every n ≥ 1
//
//	π(n) ≤ e^{ε′}·π(n−1) + δ′  and  1 − π(n−1) ≤ e^{ε′}·(1 − π(n)) + δ′,
//
// which with monotonicity are the four (ε′, δ′) inequalities between the
// Bernoulli(π(n−1)) and Bernoulli(π(n)) decisions. e^{ε′} is replaced by a
// float64 below it (math.Exp has error below 1 ulp, and ε/l0 rounds by
// half an ulp; three ulps down cover both) and δ′ by one below δ/l0. Each
// right-hand side is evaluated in float64 with at most three roundings of
// relative 2^−53 and then lowered by four ulps, each at least 2^−53 of it,
// so it is below the exact value; the left side of the second inequality,
// 1 − π(n−1), is raised by an ulp (its one rounding is at most that).
func checkPi(pi []float64, eps, delta float64, l0 int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("selection: optimal: π fails the privacy check: "+format, args...)
	}
	if len(pi) < 2 || pi[0] != 0 {
		return bad("table must start at π(0) = 0")
	}
	e := down(math.Exp(eps/float64(l0)), 3)
	d := down(delta/float64(l0), 1)
	for n := 1; n < len(pi); n++ {
		prev, cur := pi[n-1], pi[n]
		if !(cur >= prev && cur <= 1) {
			return bad("π(%d) = %v after π(%d) = %v is not nondecreasing in [0, 1]", n, cur, n-1, prev)
		}
		if !(cur <= down(e*prev+d, 4)) {
			return bad("π(%d) = %v > e^ε·π(%d) + δ", n, cur, n-1)
		}
		lhs := math.Nextafter(1-prev, math.Inf(1))
		if !(lhs <= down(e*(1-cur)+d, 4)) {
			return bad("1 − π(%d) = %v > e^ε·(1 − π(%d)) + δ", n-1, 1-prev, n)
		}
	}
	return nil
}
