package continual

import (
	"fmt"
	"math"
	"sort"
	"sync"
)

// bltCache memoizes fitBLT by (horizon, buffers): the fit is
// deterministic and data-independent, and costs about a second at
// T = 1024.
var bltCache sync.Map // [2]int → bltParams

// cachedFitBLT is fitBLT through bltCache (failures are not cached).
func cachedFitBLT(n, d int) (bltParams, error) {
	if v, ok := bltCache.Load([2]int{n, d}); ok {
		return v.(bltParams), nil
	}
	b, err := fitBLT(n, d)
	if err != nil {
		return b, err
	}
	v, _ := bltCache.LoadOrStore([2]int{n, d}, b)
	return v.(bltParams), nil
}

// bltParams is a buffered linear Toeplitz factor (Dvijotham, McMahan,
// Pillutla, Steinke & Thakurta 2024, "Efficient and Near-Optimal Noise
// Generation for Streaming Differential Privacy", FOCS): C⁻¹ is the
// lower-triangular Toeplitz matrix with coefficients r_0 = 1 and
// r_j = Σ_i ω_i·λ_i^{j−1} (j ≥ 1), one buffer per (ω_i, λ_i).
type bltParams struct {
	omega, lambda []float64
}

// bltCoefficients returns r_0 … r_{n−1} (C⁻¹) and c_0 … c_{n−1} (C) of a
// BLT, in O(n·d). The generating function of r is R(x) = P(x)/Q(x) with
// Q = Π_i (1 − λ_i x) and P = Q + Σ_i ω_i x Π_{j≠i} (1 − λ_j x), so that of
// c is Q/P and c follows the recurrence Σ_m p_m c_{n−m} = q_n (p_0 = 1).
func bltCoefficients(b bltParams, n int) (r, c []float64) {
	d := len(b.lambda)
	r = make([]float64, n)
	r[0] = 1
	pow := make([]float64, d)
	for i := range pow {
		pow[i] = 1
	}
	for j := 1; j < n; j++ {
		for i := 0; i < d; i++ {
			r[j] += b.omega[i] * pow[i]
			// Flush to zero before subnormals, which are slow (and
			// below 1e-250 contribute nothing at float64 precision).
			if pow[i] *= b.lambda[i]; pow[i] < 1e-250 {
				pow[i] = 0
			}
		}
	}
	q := []float64{1}
	for _, l := range b.lambda {
		q = polyMul(q, []float64{1, -l})
	}
	p := append(make([]float64, 0, d+1), q...)
	for i := 0; i < d; i++ {
		t := []float64{0, b.omega[i]}
		for j, l := range b.lambda {
			if j != i {
				t = polyMul(t, []float64{1, -l})
			}
		}
		for m, v := range t {
			p[m] += v
		}
	}
	c = make([]float64, n)
	for k := 0; k < n; k++ {
		v := 0.0
		if k < len(q) {
			v = q[k]
		}
		for m := 1; m < len(p) && m <= k; m++ {
			v -= p[m] * c[k-m]
		}
		c[k] = v
	}
	return r, c
}

func polyMul(a, b []float64) []float64 {
	out := make([]float64, len(a)+len(b)-1)
	for i, x := range a {
		for j, y := range b {
			out[i+j] += x * y
		}
	}
	return out
}

// bltLoss returns Δ²·max_t ‖B_t‖² at k = 1, L = 1 for the BLT over n
// windows: (Σ_{m<n} c_m²)·(Σ_{m<n} R_m²), R_m = r_0 + … + r_m (B = A·C⁻¹
// is Toeplitz with coefficients R, so its last row is the largest).
func bltLoss(b bltParams, n int) float64 {
	r, c := bltCoefficients(b, n)
	var sc, sb, pre float64
	for m := 0; m < n; m++ {
		sc += c[m] * c[m]
		pre += r[m]
		sb += pre * pre
	}
	return sc * sb
}

// bltFromTheta maps unconstrained parameters to a BLT: λ_i = logistic(θ),
// ω_i = −exp(θ') (the inverse square root's coefficients are negative).
func bltFromTheta(th []float64) bltParams {
	d := len(th) / 2
	b := bltParams{omega: make([]float64, d), lambda: make([]float64, d)}
	for i := 0; i < d; i++ {
		b.lambda[i] = 1 / (1 + math.Exp(-th[2*i]))
		b.omega[i] = -math.Exp(th[2*i+1])
	}
	return b
}

// fitBLT minimizes bltLoss over d buffers by Nelder–Mead from a fixed
// start (deterministic).
func fitBLT(n, d int) (bltParams, error) {
	th := make([]float64, 2*d)
	for i := 0; i < d; i++ {
		lam := 1 - math.Pow(0.5, float64(1+3*i)) // 0.5, 0.94, 0.99, …
		th[2*i] = math.Log(lam / (1 - lam))
		// R(1) = 1 + Σ ω_i/(1−λ_i) starts at 0.1 (the target (1−x)^{1/2} has 0).
		th[2*i+1] = math.Log(0.9 * (1 - lam) / float64(d))
	}
	f := func(x []float64) float64 {
		v := bltLoss(bltFromTheta(x), n)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return math.Inf(1)
		}
		return v
	}
	best := nelderMead(f, th, 0.5, 400*len(th))
	for restart := 0; restart < 3; restart++ {
		best = nelderMead(f, best, 0.2, 400*len(th))
	}
	b := bltFromTheta(best)
	if math.IsInf(f(best), 0) {
		return b, fmt.Errorf("continual: BLT fit for horizon %d failed", n)
	}
	return b, nil
}

// nelderMead minimizes f from x0 with initial simplex step s, for at most
// iters iterations (standard coefficients 1, 2, 0.5, 0.5).
func nelderMead(f func([]float64) float64, x0 []float64, s float64, iters int) []float64 {
	n := len(x0)
	type pt struct {
		x []float64
		v float64
	}
	simplex := make([]pt, n+1)
	for i := range simplex {
		x := append([]float64(nil), x0...)
		if i > 0 {
			x[i-1] += s
		}
		simplex[i] = pt{x, f(x)}
	}
	comb := func(a []float64, wa float64, b []float64, wb float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = wa*a[i] + wb*b[i]
		}
		return out
	}
	for it := 0; it < iters; it++ {
		sort.Slice(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
		cen := make([]float64, n)
		for _, p := range simplex[:n] {
			for i := range cen {
				cen[i] += p.x[i] / float64(n)
			}
		}
		worst := simplex[n]
		xr := comb(cen, 2, worst.x, -1)
		vr := f(xr)
		switch {
		case vr < simplex[0].v:
			xe := comb(cen, 3, worst.x, -2)
			if ve := f(xe); ve < vr {
				simplex[n] = pt{xe, ve}
			} else {
				simplex[n] = pt{xr, vr}
			}
		case vr < simplex[n-1].v:
			simplex[n] = pt{xr, vr}
		default:
			xc := comb(cen, 0.5, worst.x, 0.5)
			if vc := f(xc); vc < worst.v {
				simplex[n] = pt{xc, vc}
			} else {
				for i := 1; i <= n; i++ {
					x := comb(simplex[0].x, 0.5, simplex[i].x, 0.5)
					simplex[i] = pt{x, f(x)}
				}
			}
		}
	}
	sort.Slice(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
	return simplex[0].x
}
