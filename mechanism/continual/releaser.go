package continual

import (
	"fmt"
	"math/bits"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// Releaser releases the running totals of one plan, one window at a time.
// It draws nothing: window t's noise z_t (an integer in lattice units,
// from Plan.DrawNoise) is an argument, so Next is a pure deterministic
// function of the sequence (x_0, z_0), …, (x_t, z_t) fed so far. Feeding
// the same sequence to a fresh releaser of the same plan (same
// Plan.Fingerprint) reproduces every total bit for bit.
//
// Crash safety is replay. The release stage logs (x_t, z_t) for window t
// durably, atomically with — and before — publishing window t's total; a
// restart feeds the logged pairs to a fresh releaser and continues. No
// variate is drawn twice for a published window and no total is re-noised:
// the replayed totals are the published ones. z_t drawn for a window that
// was never published is discarded unseen (nothing released depends on
// it), so redrawing it costs no privacy. x_t is the exact per-window data:
// the log must be protected like the stage's pre-noise partials.
//
// State and per-window cost: per_window O(1) (Σw); tree O(log T) (the
// data sum and w of each block of the binary decomposition of Step); sqrt
// and blt O(t) (every x_s and w_s, and O(t) integer and float work per
// window). BLT's O(d) streaming (Dvijotham et al. 2024) does not survive
// exact arithmetic: it streams the noise side C⁻¹z through a recurrence
// with irrational λ_i, but here the data side Ĉx must be exact, and Ĉ's
// rounded coefficients satisfy no short recurrence (rounding the λ_i to
// dyadic rationals instead would grow the denominators without bound), so
// Ĉx needs the whole history; B̂ = A·Ĉ⁻¹ is likewise a full Toeplitz row.
//
// Representation. x_t and z_t are int64 (x_t, the window's exact
// statistic, always fits: the merge guarantees it); w and every sum of x
// or w are exact 128-bit integers (int128: the ranges, all below 2^104,
// are bounded there), so Next never overflows, for any int64 x and z, at
// any T the method allows — a hostile producer's huge sums cannot make a
// window unreleasable. The totals of per_window and tree are exact 128-bit
// sums of w converted to float64 once, correctly rounded (exact below
// 2^53 in magnitude); sqrt and blt keep, for their O(t) state, float64(w_s)
// correctly rounded from the exact w_s, and compute the total from those:
// a deterministic function of w alone, so post-processing like the rest.
// For values within int64 these are the same float64 as converting an
// int64 w, so totals are unchanged where the former int64 arithmetic
// succeeded.
//
// A Releaser is not safe for concurrent use.
type Releaser struct {
	plan *Plan
	step int
	last int128    // the w released at step−1 (exact; tests)
	sumW int128    // per_window: Σ_s w_s
	data []int128  // tree: data sums of the decomposition's blocks, largest first
	blk  []int128  // tree: their w (data + noise)
	xs   []int64   // sqrt, blt: x_0 … x_{step−1}
	ws   []float64 // sqrt, blt: float64(w_0) … float64(w_{step−1}), correctly rounded
}

// NewReleaser starts a releaser for plan p at window 0.
func NewReleaser(p *Plan) (*Releaser, error) {
	if p == nil {
		return nil, fmt.Errorf("continual: releaser needs a plan")
	}
	return &Releaser{plan: p}, nil
}

// Step returns the number of windows released so far (the index of the
// next window).
func (r *Releaser) Step() int { return r.step }

// Next takes window t's statistic x (t = Step()) and its noise z, drawn as
// Plan.DrawNoise (N_Z(0, (σ/γ)²), lattice units), releases the integer
// vector entry w = (Ĉx)_t/γ + z (for tree, the block completed at t),
// exact in 128 bits, and returns the running total, a function of
// w_0 … w_t alone:
//
//   - per_window: Σ_{s≤t} w_s;
//   - tree: the sum of the w of the blocks of the binary decomposition of t+1;
//   - sqrt, blt: (B̂·w)_t·γ = Σ_{s≤t} bTilde_{t−s}·float64(w_s).
//
// The first two are exact integer sums, correctly rounded to float64
// (exact up to 2^53). The last is float64 post-processing: converting
// each w_s, the series inverse and the dot product each add relative
// rounding of order t·2^−53 to terms of the size of w, so the total's
// absolute float error is about 1e-16·t·max|w|·γ — at T = 1024 with
// counts below 1e6, under 1e-6, far below the noise.
//
// Next fails only when the horizon is exhausted, and then leaves the
// state unchanged; for any int64 x and z it succeeds otherwise.
func (r *Releaser) Next(x, z int64) (float64, error) {
	p := r.plan
	if r.step >= p.t {
		return 0, fmt.Errorf("continual: horizon of %d windows exhausted", p.t)
	}
	switch p.method {
	case PerWindow:
		w := i128(x).add(i128(z))
		r.sumW = r.sumW.add(w)
		r.last = w
		r.step++
		return r.sumW.float64(), nil
	case Tree:
		// Window t completes the block of size lowbit(t+1), which replaces
		// the trailing-ones blocks of t's decomposition.
		merged := bits.TrailingZeros(uint(r.step + 1))
		keep := len(r.data) - merged
		d := i128(x)
		for _, v := range r.data[keep:] {
			d = d.add(v)
		}
		w := d.add(i128(z))
		r.data = append(r.data[:keep], d)
		r.blk = append(r.blk[:keep], w)
		var total int128
		for _, v := range r.blk {
			total = total.add(v)
		}
		r.last = w
		r.step++
		return total.float64(), nil
	default:
		t := r.step
		c := p.cInt
		acc := int128{}.mulAdd(c[0], x)
		for s, v := range r.xs {
			acc = acc.mulAdd(c[t-s], v)
		}
		w := acc.add(i128(z))
		wf := w.float64()
		b := p.bTilde
		total := float64(b[0] * wf)
		for s, v := range r.ws {
			total += float64(b[t-s] * v)
		}
		r.xs = append(r.xs, x)
		r.ws = append(r.ws, wf)
		r.last = w
		r.step++
		return total, nil
	}
}

// Run releases the whole horizon on x (len(x) = p.Horizon()) with noise of
// real scale sigma drawn from n by Plan.DrawNoise, and returns the totals
// and the z drawn: the path a release stage takes, for tests and audits.
func Run(p *Plan, n noise.Sampler, sigma float64, x []int64) (totals []float64, zs []int64, err error) {
	if len(x) != p.t {
		return nil, nil, fmt.Errorf("continual: %d windows of data for a horizon of %d", len(x), p.t)
	}
	r, err := NewReleaser(p)
	if err != nil {
		return nil, nil, err
	}
	totals, zs = make([]float64, len(x)), make([]int64, len(x))
	for t, v := range x {
		if zs[t], err = p.DrawNoise(n, sigma); err != nil {
			return nil, nil, err
		}
		if totals[t], err = r.Next(v, zs[t]); err != nil {
			return nil, nil, err
		}
	}
	return totals, zs, nil
}

// Clone returns an independent copy of r: feeding both the same (x, z)
// gives the same totals. A caller that must apply several windows all or
// nothing (a ledger log of several steps) steps a clone and keeps it only
// when every step succeeded.
func (r *Releaser) Clone() *Releaser {
	c := *r
	c.data = append([]int128(nil), r.data...)
	c.blk = append([]int128(nil), r.blk...)
	c.xs = append([]int64(nil), r.xs...)
	c.ws = append([]float64(nil), r.ws...)
	return &c
}
