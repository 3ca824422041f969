// Package dpaudit estimates, from samples, a statistical lower bound on the
// privacy loss ε of a mechanism, in the spirit of Google's DP stochastic
// tester and of Ding et al. 2018 ("Detecting Violations of Differential
// Privacy"): run the mechanism many times on two neighbouring inputs D and
// D', and for each event S of a family (threshold tests on the output)
// bound P[M(D) ∈ S] from below and P[M(D') ∈ S] from above with
// Clopper–Pearson intervals. An (ε, δ)-DP mechanism satisfies
// P[M(D) ∈ S] ≤ e^ε P[M(D') ∈ S] + δ for every S, so
//
//	ε ≥ log((p_lo − δ) / q_hi)
//
// holds with the intervals' confidence for every event at once (a union
// bound over events and both directions is applied). A lower bound above the
// claimed ε is evidence, at that confidence, that the claim is false.
//
// It is test tooling: it imports only gonum and is used by the release
// mechanisms' privacy audits (mechanism/aggregate/audit_test.go).
package dpaudit

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mathext"
)

// Event is a named set of outputs: a test on one output vector.
type Event struct {
	Name string
	In   func(out []float64) bool
}

// Result is the best (largest) lower bound found and the event that gave it.
type Result struct {
	Epsilon float64 // lower bound on ε (0 when no event gives evidence)
	Event   string  // the event and direction behind it
	P, Q    float64 // the empirical frequencies of that event on D and D'
}

func (r Result) String() string {
	return fmt.Sprintf("ε ≥ %.4f from %s (freq %.5f vs %.5f)", r.Epsilon, r.Event, r.P, r.Q)
}

// ClopperPearson returns the two-sided (1 − alpha) Clopper–Pearson interval
// for a binomial proportion with k successes in n trials: lo solves
// P(Bin(n, lo) ≥ k) = alpha/2 and hi solves P(Bin(n, hi) ≤ k) = alpha/2.
// The ends are the closed forms (alpha/2)^{1/n} when k is 0 or n, and
// otherwise found by bisection on the binomial tails written as regularized
// incomplete beta functions, P(X ≥ k) = I_p(k, n − k + 1), each rounded
// outwards (the interval only widens). The Beta quantile used before
// (distuv.Beta.Quantile) loses the tails for small alpha and large n: at
// n = 50000 and alpha = 1e-6 it returned hi = 1 for k = 0, and bounds too
// wide by an order of magnitude for small k, so a rare event under D could
// never show a privacy loss.
func ClopperPearson(k, n int, alpha float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	a, nf, kf := alpha/2, float64(n), float64(k)
	// 1 − (alpha/2)^{1/n}, accurate when it is small.
	edge := -math.Expm1(math.Log(a) / nf)
	switch {
	case k <= 0:
		lo = 0
	case k >= n:
		lo = 1 - edge
	default:
		lo, _ = bisect(func(p float64) bool { return mathext.RegIncBeta(kf, nf-kf+1, p) >= a })
	}
	switch {
	case k >= n:
		hi = 1
	case k <= 0:
		hi = edge
	default:
		// P(X ≤ k) = I_{1−p}(n − k, k + 1), decreasing in p.
		_, hi = bisect(func(p float64) bool { return mathext.RegIncBeta(nf-kf, kf+1, 1-p) <= a })
	}
	return lo, hi
}

// bisect brackets the point in [0, 1] where the monotone predicate ok turns
// from false to true: ok(hi), and !ok(lo) unless lo = 0.
func bisect(ok func(p float64) bool) (lo, hi float64) {
	lo, hi = 0, 1
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo, hi
}

// LowerBound computes the ε lower bound over the events, in both directions
// (D vs D' and D' vs D), from outputs a (on D) and b (on D'). alpha is the
// total probability that the bound is wrong (split over all events and
// directions by a union bound); delta is the mechanism's claimed δ.
func LowerBound(a, b [][]float64, events []Event, delta, alpha float64) Result {
	per := alpha / float64(2*len(events))
	best := Result{}
	for _, ev := range events {
		ka, kb := count(a, ev), count(b, ev)
		for dir := 0; dir < 2; dir++ {
			k1, n1, k2, n2, name := ka, len(a), kb, len(b), ev.Name+" (D vs D')"
			if dir == 1 {
				k1, n1, k2, n2, name = kb, len(b), ka, len(a), ev.Name+" (D' vs D)"
			}
			// A two-sided interval at level per errs by per/2 on each side; two
			// one-sided bounds per event and direction make the total error
			// at most 2·len(events)·2·per/2 = alpha.
			p, _ := ClopperPearson(k1, n1, per)
			_, q := ClopperPearson(k2, n2, per)
			if p-delta <= 0 || q <= 0 {
				continue
			}
			if e := math.Log((p - delta) / q); e > best.Epsilon {
				best = Result{Epsilon: e, Event: name, P: float64(k1) / float64(n1), Q: float64(k2) / float64(n2)}
			}
		}
	}
	return best
}

func count(xs [][]float64, ev Event) int {
	n := 0
	for _, x := range xs {
		if ev.In(x) {
			n++
		}
	}
	return n
}

// Thresholds returns events {out[i] > t} and {out[i] < t} for coordinate i at
// the given quantiles of the pooled samples of both inputs: where the two
// output distributions differ most is found by trying many thresholds.
func Thresholds(a, b [][]float64, i int, quantiles []float64) []Event {
	pool := make([]float64, 0, len(a)+len(b))
	for _, x := range a {
		pool = append(pool, x[i])
	}
	for _, x := range b {
		pool = append(pool, x[i])
	}
	sort.Float64s(pool)
	var evs []Event
	seen := map[float64]bool{}
	for _, q := range quantiles {
		t := pool[min(int(q*float64(len(pool))), len(pool)-1)]
		if seen[t] {
			continue
		}
		seen[t] = true
		evs = append(evs,
			Event{Name: fmt.Sprintf("out[%d] > %g", i, t), In: func(o []float64) bool { return o[i] > t }},
			Event{Name: fmt.Sprintf("out[%d] < %g", i, t), In: func(o []float64) bool { return o[i] < t }},
		)
	}
	return evs
}

// Quantiles is a default grid of threshold quantiles, dense in the tails
// where the privacy loss of additive noise is largest.
var Quantiles = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999}

// AtLeastAtMost returns events {out[i] ≥ t} and {out[i] ≤ t} for t at the
// given quantiles of the pooled samples of both inputs. Unlike Thresholds
// the comparisons are not strict, so an atom at the largest or smallest
// output (a clamped value, a count at zero) is an event of its own.
func AtLeastAtMost(a, b [][]float64, i int, quantiles []float64) []Event {
	pool := make([]float64, 0, len(a)+len(b))
	for _, x := range a {
		pool = append(pool, x[i])
	}
	for _, x := range b {
		pool = append(pool, x[i])
	}
	sort.Float64s(pool)
	var evs []Event
	seen := map[float64]bool{}
	for _, q := range quantiles {
		t := pool[min(int(q*float64(len(pool))), len(pool)-1)]
		if seen[t] {
			continue
		}
		seen[t] = true
		evs = append(evs,
			Event{Name: fmt.Sprintf("out[%d] >= %g", i, t), In: func(o []float64) bool { return o[i] >= t }},
			Event{Name: fmt.Sprintf("out[%d] <= %g", i, t), In: func(o []float64) bool { return o[i] <= t }},
		)
	}
	return evs
}
