package capacity

import (
	"math"
	"sort"
)

// logIntegral returns log ∫ exp(ℓ(x)) dx (continuous) or log Σ_k exp(ℓ(k))
// over the integers (discrete), for a log-integrand ℓ that is −Inf where the
// integrand vanishes and tends to −Inf in both tails.
//
// Method. The support is found on a grid: the half-width R starts at 32 and
// doubles (up to 2^20) until ℓ at ±R is more than cutoff = 60 below the
// largest grid value, so the truncated tails are below e^{−60} of the peak
// times their decay length (negligible at double precision for the
// exponential and Gaussian tails used here). Inside, the integral of
// exp(ℓ − max) is computed by adaptive Gauss–Kronrod (7/15) with relative
// tolerance 1e−13, after splitting at the grid's argmax, at 0 (the kink of
// the Laplace density) and at every sign change of the integrand's support
// (the roots of the adversary's polynomial, where (h)₊^β has an algebraic
// endpoint singularity that GK handles by bisection). Discrete sums run over
// every integer in the same range.
func logIntegral(l func(float64) float64, discrete bool, breaks []float64) float64 {
	const cutoff = 60.0
	const n = 1000
	var lo, hi, xmax, lmax float64
	for R := 32.0; ; R *= 2 {
		step := 2 * R / n
		lmax = math.Inf(-1)
		first, last := math.NaN(), math.NaN()
		for i := 0; i <= n; i++ {
			x := -R + float64(i)*step
			if v := l(x); v > lmax {
				lmax, xmax = v, x
			}
		}
		if math.IsInf(lmax, -1) {
			if R > 1<<20 {
				return math.Inf(-1)
			}
			continue
		}
		for i := 0; i <= n; i++ {
			x := -R + float64(i)*step
			if l(x) > lmax-cutoff {
				if math.IsNaN(first) {
					first = x
				}
				last = x
			}
		}
		lo, hi = first-step, last+step
		if (lo > -R && hi < R) || R > 1<<20 {
			break
		}
	}
	if discrete {
		// Sum from the peak outward is not needed: exp(ℓ − lmax) ≤ 1 and the
		// range is finite; the sum is exact up to rounding and truncation.
		s := 0.0
		for k := math.Floor(lo); k <= math.Ceil(hi); k++ {
			if v := l(k); !math.IsInf(v, -1) {
				s += math.Exp(v - lmax)
			}
		}
		// The grid may miss the integer maximum by a little; lmax is only a
		// normaliser, so any finite value is exact here.
		return lmax + math.Log(s)
	}
	pts := []float64{lo, hi, xmax, 0}
	pts = append(pts, breaks...)
	// Edges of the support inside [lo, hi], located by bisection to
	// machine precision between grid points of opposite finiteness.
	const m = 4 * n
	prevX := lo
	prevIn := !math.IsInf(l(lo), -1)
	for i := 1; i <= m; i++ {
		x := lo + (hi-lo)*float64(i)/m
		in := !math.IsInf(l(x), -1)
		if in != prevIn {
			a, b := prevX, x
			for j := 0; j < 80 && b-a > 1e-15*math.Max(1, math.Abs(a)); j++ {
				c := (a + b) / 2
				if !math.IsInf(l(c), -1) == prevIn {
					a = c
				} else {
					b = c
				}
			}
			pts = append(pts, (a+b)/2)
		}
		prevX, prevIn = x, in
	}
	sort.Float64s(pts)
	f := func(x float64) float64 {
		v := l(x)
		if math.IsInf(v, -1) {
			return 0
		}
		return math.Exp(v - lmax)
	}
	s := 0.0
	for i := 0; i+1 < len(pts); i++ {
		a, b := pts[i], pts[i+1]
		if a < lo {
			a = lo
		}
		if b > hi {
			b = hi
		}
		if b <= a {
			continue
		}
		s += adaptGK(f, a, b, 1e-13, 40)
	}
	return lmax + math.Log(s)
}

// Gauss–Kronrod 7/15 nodes and weights (the standard QUADPACK values).
var (
	gkX = [8]float64{
		0.991455371120812639206854697526329,
		0.949107912342758524526189684047851,
		0.864864423359769072789712788640926,
		0.741531185599394439863864773280788,
		0.586087235467691130294144845693013,
		0.405845151377397166906606412076961,
		0.207784955007898467600689403773245,
		0,
	}
	gkWK = [8]float64{
		0.022935322010529224963732008058970,
		0.063092092629978553290700663189204,
		0.104790010322250183839876322541518,
		0.140653259715525918745189590510238,
		0.169004726639267902826583426598550,
		0.190350578064785409913256402421014,
		0.204432940075298892414161999234649,
		0.209482141084727828012999174891714,
	}
	gkWG = [4]float64{
		0.129484966168869693270611432679082,
		0.279705391489276667901467771423780,
		0.381830050505118944950369775488975,
		0.417959183673469387755102040816327,
	}
)

// gk15 returns the Kronrod estimate of ∫_a^b f and its difference from the
// embedded Gauss estimate.
func gk15(f func(float64) float64, a, b float64) (float64, float64) {
	c, h := (a+b)/2, (b-a)/2
	fc := f(c)
	k := fc * gkWK[7]
	g := fc * gkWG[3]
	for i := 0; i < 7; i++ {
		x := h * gkX[i]
		s := f(c-x) + f(c+x)
		k += gkWK[i] * s
		if i%2 == 1 {
			g += gkWG[i/2] * s
		}
	}
	return k * h, math.Abs((k - g) * h)
}

// adaptGK integrates f on [a, b] by recursive bisection until the
// Gauss–Kronrod difference on a piece is below tol times its estimate (or
// below 1e−17 in absolute terms: the integrands here are normalised to a
// peak of 1 on supports of width ≥ 1e−2, so that is far below the relative
// tolerance of the total), at most depth levels deep.
func adaptGK(f func(float64) float64, a, b, tol float64, depth int) float64 {
	v, e := gk15(f, a, b)
	if e <= tol*math.Abs(v) || e < 1e-17 || depth == 0 {
		return v
	}
	m := (a + b) / 2
	return adaptGK(f, a, m, tol, depth-1) + adaptGK(f, m, b, tol, depth-1)
}
