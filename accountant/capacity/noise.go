package capacity

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/accountant"
)

// law is the noise distribution Q of an additive mechanism, centred at 0;
// the two output laws of neighbouring inputs are Q and P = Q shifted by μ.
// Continuous laws are in units of their scale (b or σ equal to 1): every
// class here is closed under x ↦ x/scale, so the restricted divergences
// depend on μ/scale only. Discrete laws live on the integers and keep their
// scale.
type law struct {
	kind     string
	discrete bool
	scale    float64 // 1 for the continuous kinds
	logq     func(x float64) float64
	m2       float64 // E_Q[Z²]; E_Q[Z] = E_Q[Z³] = 0 by symmetry
	// maxA2 bounds the quadratic coefficient for which E_Q[e^{a2 x²}] is
	// finite (a2 < maxA2); maxA1 bounds |a1| when a2 = 0 (Laplace kinds).
	maxA2, maxA1 float64
}

func newLaw(kind string, scale float64) (law, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return law{}, fmt.Errorf("capacity: noise %s: scale must be positive and finite, got %v: %w", kind, scale, accountant.ErrInvalidMechanism)
	}
	switch kind {
	case accountant.KindLaplace:
		return law{kind: kind, scale: 1, m2: 2, maxA2: 0, maxA1: 1,
			logq: func(x float64) float64 { return -math.Abs(x) - math.Ln2 }}, nil
	case accountant.KindGaussian:
		c := 0.5 * math.Log(2*math.Pi)
		return law{kind: kind, scale: 1, m2: 1, maxA2: 0.5, maxA1: math.Inf(1),
			logq: func(x float64) float64 { return -x*x/2 - c }}, nil
	case accountant.KindDiscreteLaplace:
		t := 1 / scale
		r := math.Exp(-t)
		logZ := math.Log1p(r) - math.Log1p(-r) // Σ_k r^{|k|} = (1+r)/(1−r)
		return law{kind: kind, discrete: true, scale: scale, m2: 2 * r / ((1 - r) * (1 - r)),
			maxA2: 0, maxA1: t,
			logq: func(x float64) float64 { return -math.Abs(x)*t - logZ }}, nil
	case accountant.KindDiscreteGaussian:
		s2 := scale * scale
		// Normaliser and variance by summation over |k| ≤ K with the tail
		// below e^{−K²/(2σ²)} ≤ e^{−800}.
		K := math.Ceil(40*scale) + 1
		z, v := 1.0, 0.0
		for k := 1.0; k <= K; k++ {
			w := math.Exp(-k * k / (2 * s2))
			z += 2 * w
			v += 2 * k * k * w
		}
		logZ := math.Log(z)
		return law{kind: kind, discrete: true, scale: scale, m2: v / z,
			maxA2: 1 / (2 * s2), maxA1: math.Inf(1),
			logq: func(x float64) float64 { return -x*x/(2*s2) - logZ }}, nil
	}
	return law{}, fmt.Errorf("capacity: noise kind %q has no restricted divergence here (laplace, gaussian, discrete_laplace, discrete_gaussian only): %w", kind, ErrUnsupported)
}

// momentsP returns E_P[X^j], j = 0..3, for P = μ + Q.
func (q law) momentsP(mu float64) [4]float64 {
	return [4]float64{1, mu, mu*mu + q.m2, mu*mu*mu + 3*mu*q.m2}
}

// unrestricted returns the unrestricted divergence between P = μ + Q and Q:
// closed forms for the continuous kinds, summation for the discrete ones.
//
//   - Laplace, ε = μ: KL = ε + e^{−ε} − 1; Rényi of order α > 1:
//     (1/(α−1)) log( α/(2α−1) e^{(α−1)ε} + (α−1)/(2α−1) e^{−αε} )
//     (Mironov 2017, Table II).
//   - Gaussian: KL = μ²/2, Rényi αμ²/2 (Mironov 2017, Prop. 7).
//   - Discrete kinds: Σ_k p^α q^{1−α} and Σ_k p log(p/q) summed directly over
//     the integers (P = Q shifted by the integer μ).
//
// The discrete sums spend bud (see [logIntegral]); when it is exhausted the
// result is NaN and the caller reports [ErrNotComputable].
func (q law) unrestricted(mu float64, d Divergence, bud *budget) float64 {
	a := d.Alpha
	switch q.kind {
	case accountant.KindLaplace:
		e := math.Abs(mu)
		if d.IsKL() {
			return e + math.Expm1(-e)
		}
		// log-sum-exp of the two terms for stability at large (α−1)ε.
		t1 := math.Log(a/(2*a-1)) + (a-1)*e
		t2 := math.Log((a-1)/(2*a-1)) - a*e
		m := math.Max(t1, t2)
		return (m + math.Log(math.Exp(t1-m)+math.Exp(t2-m))) / (a - 1)
	case accountant.KindGaussian:
		if d.IsKL() {
			return mu * mu / 2
		}
		return a * mu * mu / 2
	}
	lp := func(x float64) float64 { return q.logq(x - mu) }
	if d.IsKL() {
		// Σ p (log p − log q): a signed sum, done directly over the range
		// where p is not negligible.
		s := 0.0
		K := math.Ceil(math.Abs(mu) + 60*q.scale + 60)
		if n := 2*K + math.Abs(mu); bud != nil && n > float64(bud.left) {
			// More terms than the budget allows: fail now, not after
			// spending it.
			bud.over = true
			return math.NaN()
		}
		for k := -K; k <= K+math.Abs(mu); k++ {
			if bud.spend(1); bud.exhausted() {
				return math.NaN()
			}
			p := math.Exp(lp(k))
			if p > 0 {
				s += p * (lp(k) - q.logq(k))
			}
		}
		return s
	}
	li := logIntegral(func(x float64) float64 { return a*lp(x) + (1-a)*q.logq(x) }, true, q.scale, math.Abs(mu)+q.scale, bud)
	return li / (a - 1)
}
