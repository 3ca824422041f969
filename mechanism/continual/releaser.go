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
// A Releaser is not safe for concurrent use.
type Releaser struct {
	plan *Plan
	step int
	sumW int64   // per_window: Σ_s w_s
	data []int64 // tree: data sums of the decomposition's blocks, largest first
	blk  []int64 // tree: their w (data + noise)
	xs   []int64 // sqrt, blt: x_0 … x_{step−1}
	ws   []int64 // sqrt, blt: w_0 … w_{step−1}
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
// vector entry w = (Ĉx)_t/γ + z (for tree, the block completed at t), and
// returns the running total, a function of w_0 … w_t alone:
//
//   - per_window: Σ_{s≤t} w_s;
//   - tree: the sum of the w of the blocks of the binary decomposition of t+1;
//   - sqrt, blt: (B̂·w)_t·γ = Σ_{s≤t} bTilde_{t−s}·w_s, B̂ = A·Ĉ⁻¹.
//
// The first two are exact integers (as float64: exact up to 2^53). The
// last is float64 post-processing: the series inverse and the dot product
// each add relative rounding of order t·2^−53 to terms of the size of w,
// so the total's absolute float error is about 1e-16·t·max|w|·γ — at
// T = 1024 with counts below 1e6, under 1e-6, far below the noise.
//
// On error (horizon exhausted, Ĉx or w outside int64) the state is
// unchanged.
func (r *Releaser) Next(x, z int64) (float64, error) {
	p := r.plan
	if r.step >= p.t {
		return 0, fmt.Errorf("continual: horizon of %d windows exhausted", p.t)
	}
	overflow := func(what string) error {
		return fmt.Errorf("continual: %s overflows int64 at window %d (x = %d, z = %d)", what, r.step, x, z)
	}
	switch p.method {
	case PerWindow:
		w, ok := addInt64(x, z)
		if !ok {
			return 0, overflow("w = x + z")
		}
		s, ok := addInt64(r.sumW, w)
		if !ok {
			return 0, overflow("Σw")
		}
		r.sumW = s
		r.step++
		return float64(s), nil
	case Tree:
		// Window t completes the block of size lowbit(t+1), which replaces
		// the trailing-ones blocks of t's decomposition.
		merged := bits.TrailingZeros(uint(r.step + 1))
		keep := len(r.data) - merged
		d := x
		for _, v := range r.data[keep:] {
			var ok bool
			if d, ok = addInt64(d, v); !ok {
				return 0, overflow("block data sum")
			}
		}
		w, ok := addInt64(d, z)
		if !ok {
			return 0, overflow("block w")
		}
		var total int64
		for _, v := range append(r.blk[:keep:keep], w) {
			if total, ok = addInt64(total, v); !ok {
				return 0, overflow("Σ block w")
			}
		}
		r.data = append(r.data[:keep], d)
		r.blk = append(r.blk[:keep], w)
		r.step++
		return float64(total), nil
	default:
		t := r.step
		c := p.cInt
		acc := int128{}.mulAdd(c[0], x)
		for s, v := range r.xs {
			acc = acc.mulAdd(c[t-s], v)
		}
		cx, ok := acc.int64()
		if !ok {
			return 0, overflow("(Ĉx)_t/γ")
		}
		w, ok := addInt64(cx, z)
		if !ok {
			return 0, overflow("w = (Ĉx)_t/γ + z")
		}
		b := p.bTilde
		total := float64(b[0] * float64(w))
		for s, v := range r.ws {
			total += float64(b[t-s] * float64(v))
		}
		r.xs = append(r.xs, x)
		r.ws = append(r.ws, w)
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
	c.data = append([]int64(nil), r.data...)
	c.blk = append([]int64(nil), r.blk...)
	c.xs = append([]int64(nil), r.xs...)
	c.ws = append([]int64(nil), r.ws...)
	return &c
}
