package selection

import (
	"math"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file calibrates the thresholding methods (Laplace, Gaussian; see
// their documentation for the guarantees) and holds the exact tails of
// their noise.

// tailMargin is the relative margin by which a computed tail probability
// is raised before it is compared with a δ budget: it covers the
// floating-point rounding of the sums and logarithms (at most about 1e5
// terms, each rounded to 2^−53 relative).
const tailMargin = 1e-10

// maxThreshold bounds τ so that it, and every n near it, is exact in
// float64 and far from int64 overflow.
const maxThreshold = 1 << 53

// newLaplace calibrates Laplace: t = L0/ε (raised by an ulp if rounding put
// it below), and τ = m + 1 with m ≥ 1 the smallest integer such that
// L0·P[Z ≥ m] ≤ δ, P[Z ≥ m] = q^m/(1 + q), computed in log space.
func newLaplace(p Params) (*Selector, error) {
	l0 := float64(p.MaxKeys)
	t := l0 / p.Epsilon
	for l0/t > p.Epsilon {
		t = math.Nextafter(t, math.Inf(1))
	}
	if err := checkScale("discrete laplace scale t = max_keys/epsilon", t); err != nil {
		return nil, err
	}
	// L0·q^m/(1+q) ≤ δ ⇔ log L0 − m/t − log1p(q) ≤ log δ; the margin covers
	// the rounding of the logarithms.
	logBudget := math.Log(p.Delta) - math.Log(l0) + math.Log1p(-tailMargin)
	ok := func(m int64) bool { return dlapLogGE(t, m) <= logBudget }
	m := smallestInt(1, ok)
	if m+1 > maxThreshold {
		return nil, invalid("laplace threshold %d units exceeds 2^53 (epsilon or delta too small)", m+1)
	}
	s := &Selector{method: Laplace, eps: p.Epsilon, delta: p.Delta, maxKeys: p.MaxKeys, scale: t, tau: m + 1}
	s.deltaThresh = l0 * math.Exp(dlapLogGE(t, m))
	s.deltaUsed = s.deltaThresh
	return s, nil
}

// dlapLogGE returns log P[Z ≥ m] = −m/t − log(1 + e^{−1/t}) for the
// discrete Laplace of scale t and m ≥ 1.
func dlapLogGE(t float64, m int64) float64 {
	return -float64(m)/t - math.Log1p(math.Exp(-1/t))
}

// dlapGE returns P[Z ≥ m] for the discrete Laplace of scale t:
// q^m/(1 + q) for m ≥ 1 and, by symmetry, 1 − q^{1−m}/(1 + q) for m ≤ 0,
// q = e^{−1/t}.
func dlapGE(t float64, m int64) float64 {
	if m >= 1 {
		return math.Exp(dlapLogGE(t, m))
	}
	return -math.Expm1(dlapLogGE(t, 1-m))
}

// newGaussian calibrates Gaussian (see Gaussian): for each split f it takes
// the σ with δ_noise(L0) ≤ f·δ, then the smallest τ with
// max_k δ_noise(k) + (L0 − k)·P[Z ≥ τ − 1] ≤ δ, and keeps the smallest τ.
func newGaussian(p Params) (*Selector, error) {
	// L0 = 1: max(δ_noise, p₁) ≤ δ, and both get all of δ. L0 > 1: the
	// terms with k < L0 shifted keys have δ_noise(k) well below
	// δ_noise(L0), so the best split is close to 1; try 1 − 2^−i.
	fracs := []float64{1}
	if p.MaxKeys > 1 {
		for i := 1; i <= 10; i++ {
			fracs = append(fracs, 1-math.Ldexp(1, -i))
		}
	}
	var best *Selector
	var firstErr error
	for _, f := range fracs {
		s, err := gaussianAt(p, f)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if best == nil || s.tau < best.tau || (s.tau == best.tau && s.scale < best.scale) {
			best = s
		}
	}
	if best == nil {
		return nil, firstErr
	}
	return best, nil
}

// gaussianAt calibrates Gaussian with δ_noise(L0) ≤ f·δ.
func gaussianAt(p Params, f float64) (*Selector, error) {
	l0 := int64(p.MaxKeys)
	target := f * p.Delta
	var sigma float64
	var err error
	if l0 == 1 {
		sigma, err = noise.DiscreteGaussianSigma(p.Epsilon, target, 1)
	} else {
		sigma, err = noise.ZCDPGaussianSigma(p.Epsilon, target, math.Sqrt(float64(l0)))
	}
	if err != nil {
		return nil, invalid("gaussian noise for epsilon %v, delta %v: %v", p.Epsilon, target, err)
	}
	// A σ with at most 24 significant bits keeps the sampler's exact test
	// in 128-bit integers; rounding up only adds noise, and the loop
	// re-checks the δ at the σ actually used.
	sigma = noise.RoundUpSignificand(sigma)
	dn := func(k int64) float64 { return dgNoiseDelta(p.Epsilon, sigma, k) }
	for i := 0; !(dn(l0) <= target); i++ {
		if i == 16 {
			return nil, invalid("gaussian noise: rounded sigma %v misses delta %v", sigma, target)
		}
		sigma = noise.NextSignificand(sigma)
	}
	if err := checkScale("discrete gaussian sigma", sigma); err != nil {
		return nil, err
	}
	s := &Selector{method: Gaussian, eps: p.Epsilon, delta: p.Delta, maxKeys: p.MaxKeys, scale: sigma}
	if sigma <= noise.DiscreteGaussianExactMaxSigma {
		s.dgNorm = dgNormalizer(sigma)
	}
	// Blocks of k = 0..L0−1 (single k when L0 ≤ 1024): on [k1, k2] the true
	// δ_noise(k) is at most δ_noise(k2) (it is nondecreasing in k: fewer
	// shifted coordinates are a post-processing of more), and L0 − k at
	// most L0 − k1, so the constraint holds on the block if
	// dn(k2) + (L0 − k1)·p1 ≤ δ.
	type block struct {
		k1   int64
		dnK2 float64
	}
	width := (l0 + 1023) / 1024
	var blocks []block
	p1max := math.Inf(1)
	for k1 := int64(0); k1 < l0; k1 += width {
		k2 := min(k1+width-1, l0-1)
		d := 0.0
		if k2 > 0 {
			d = dn(k2)
		}
		blocks = append(blocks, block{k1, d})
		p1max = math.Min(p1max, (p.Delta-d)/float64(l0-k1))
	}
	if !(p1max > 0) {
		return nil, invalid("gaussian threshold: no delta left for the threshold at split %v", f)
	}
	m := smallestInt(1, func(m int64) bool { return s.dgGEUpper(m) <= p1max })
	if m+1 > maxThreshold {
		return nil, invalid("gaussian threshold %d units exceeds 2^53 (epsilon or delta too small)", m+1)
	}
	s.tau = m + 1
	p1 := s.dgGEUpper(m)
	s.deltaNoise = dn(l0)
	s.deltaThresh = float64(l0) * p1
	s.deltaUsed = s.deltaNoise
	for _, b := range blocks {
		s.deltaUsed = math.Max(s.deltaUsed, b.dnK2+float64(l0-b.k1)*p1)
	}
	if !(s.deltaUsed <= p.Delta) {
		return nil, invalid("gaussian calibration: delta %v exceeds the budget %v", s.deltaUsed, p.Delta)
	}
	return s, nil
}

// dgNoiseDelta returns an upper bound on δ at ε of the discrete Gaussian
// N_Z(0, σ²) added independently to k ≥ 1 integer counts that a neighbour
// moves by 1 each: the exact curve (noise.DiscreteGaussianDelta) for k = 1,
// the zCDP bound with ρ = k/(2σ²) for k ≥ 2.
func dgNoiseDelta(eps, sigma float64, k int64) float64 {
	if k == 1 {
		return noise.DiscreteGaussianDelta(eps, sigma, 1)
	}
	return noise.ZCDPDelta(eps, float64(k)/(2*sigma*sigma))
}

// dgNormalizer returns Σ_y e^{−y²/(2σ²)} truncated once the terms fall below
// 1e-20 of the sum: a lower bound, exact to double precision.
func dgNormalizer(sigma float64) float64 {
	s2 := 2 * sigma * sigma
	z := 1.0
	for y := 1.0; ; y++ {
		fy := math.Exp(-y * y / s2)
		z += 2 * fy
		if fy < 1e-20*z {
			return z
		}
	}
}

// dgTailSum returns an upper bound on Σ_{y ≥ m} e^{−y²/(2σ²)} for m ≥ 1,
// exact to a relative 1e-20 plus rounding: the terms are summed until the
// rest, bounded by a geometric series (the ratio of consecutive terms past
// y is at most e^{−(2y+3)/(2σ²)}), is negligible, and that bound is added.
func dgTailSum(sigma float64, m int64) float64 {
	s2 := 2 * sigma * sigma
	sum := 0.0
	for y := float64(m); ; y++ {
		sum += math.Exp(-y * y / s2)
		next := math.Exp(-(y + 1) * (y + 1) / s2)
		rest := next / -math.Expm1(-(2*y+3)/s2)
		if rest == 0 || rest < 1e-20*sum {
			return sum + rest
		}
	}
}

// dgGEUpper returns an upper bound on P[Z ≥ m], m ≥ 1, for the Selector's
// discrete Gaussian, used to calibrate τ. For σ ≤ 1024 it is the summed
// tail over the normalizer's lower bound, raised by tailMargin. Above, it
// is Q((m − 1)/σ) raised by tailMargin: Σ_{y ≥ m} f(y) ≤ ∫_{m−1}^∞ f, f
// being decreasing on [m − 1, ∞), and the normalizer is at least σ√(2π)
// (Poisson summation: all its Fourier terms are positive).
func (s *Selector) dgGEUpper(m int64) float64 {
	if s.dgNorm > 0 {
		return dgTailSum(s.scale, m) / s.dgNorm * (1 + tailMargin)
	}
	return 0.5 * math.Erfc(float64(m-1)/(s.scale*math.Sqrt2)) * (1 + tailMargin)
}

// dgGE returns P[Z ≥ m] for the Selector's discrete Gaussian, for any
// integer m: the summed tail (by symmetry, 1 − P[Z ≥ 1 − m] for m ≤ 0) for
// σ ≤ 1024, the midpoint rule Q((m − 1/2)/σ) above (absolute error below
// 0.05/σ² < 5e-8, by the cell-error bound in noise.DiscreteGaussianDelta's
// documentation).
func (s *Selector) dgGE(m int64) float64 {
	if s.dgNorm == 0 {
		return 0.5 * math.Erfc((float64(m)-0.5)/(s.scale*math.Sqrt2))
	}
	if m >= 1 {
		return math.Min(dgTailSum(s.scale, m)/s.dgNorm, 1)
	}
	return math.Max(1-dgTailSum(s.scale, 1-m)/s.dgNorm, 0)
}
