package continual

import (
	"fmt"
	"math"
	"math/bits"
)

// Draw returns one fresh noise variate of the plan's σ: N(0, σ²) for every
// method, or the discrete Gaussian N_Z(0, σ²) (noise.Sampler.DiscreteGaussian
// converted to float64) when Plan.IntegerFactor is true. It is called
// exactly once per window.
type Draw func() (float64, error)

// State is a Releaser's whole state as plain numbers, for the ledger.
//
// Noise holds the noise already drawn that later releases still need:
//   - per_window: the running sum of the noise (one number, none before
//     the first window);
//   - tree: the noise of the blocks of the binary decomposition of Step,
//     largest block first (popcount(Step) numbers);
//   - sqrt: every noise variate z_0 … z_{Step−1} (Step numbers);
//   - blt: the running sum of the correlated noise, then the d buffers
//     b_i = Σ_{s<Step} λ_i^{Step−1−s}·z_s (d+1 numbers, zeros at Step 0).
//
// Params is, for blt, the plan's fitted ω_1…ω_d, λ_1…λ_d: a restore
// checks them against the plan, so state is never resumed under a factor
// fitted differently (another version or platform); empty otherwise.
//
// Sum is the exact running total of the inputs: it is data, not noise, and
// must be stored with the protection the ledger gives pre-noise state.
//
// Invariant (no double draws, no re-noised total): the State returned
// after window t must be made durable atomically with — and before
// publishing — the release of window t. A restart then resumes from the
// State of the last published window: each noise variate any published
// total used is in that State and is never drawn again, and the variates
// drawn for an unpublished window are discarded unseen (nothing released
// depends on them), so redrawing them costs no privacy.
type State struct {
	Method Method
	Step   int // windows released so far
	Sum    int64
	Noise  []float64
	Params []float64
}

// Releaser releases the running totals of one plan, one window at a time,
// drawing exactly one noise variate per window. Its state and per-window
// cost are O(1) for per_window and blt, O(log T) for tree and O(t) for sqrt
// (every past variate is needed: the reason BLT exists). It is not safe
// for concurrent use.
type Releaser struct {
	plan *Plan
	draw Draw
	st   State
}

// NewReleaser starts a releaser for plan p at window 0, drawing noise from
// draw (already scaled to the plan's σ).
func NewReleaser(p *Plan, draw Draw) (*Releaser, error) {
	st := State{Method: p.method}
	if p != nil && p.method == BLT {
		st.Noise = make([]float64, len(p.blt.lambda)+1)
		st.Params = p.bltParams()
	}
	return RestoreReleaser(p, draw, st)
}

// bltParams returns ω_1…ω_d, λ_1…λ_d.
func (p *Plan) bltParams() []float64 {
	return append(append([]float64(nil), p.blt.omega...), p.blt.lambda...)
}

// RestoreReleaser resumes a releaser from a State exported by State(),
// after checking that it fits the plan.
func RestoreReleaser(p *Plan, draw Draw, st State) (*Releaser, error) {
	if p == nil || draw == nil {
		return nil, fmt.Errorf("continual: releaser needs a plan and a noise draw")
	}
	if st.Method != p.method {
		return nil, fmt.Errorf("continual: state of method %q for a %q plan", st.Method, p.method)
	}
	if st.Step < 0 || st.Step > p.t {
		return nil, fmt.Errorf("continual: state at window %d outside the horizon [0, %d]", st.Step, p.t)
	}
	want := 0
	switch p.method {
	case PerWindow:
		want = min(st.Step, 1)
	case Tree:
		want = bits.OnesCount(uint(st.Step))
	case Sqrt:
		want = st.Step
	case BLT:
		want = len(p.blt.lambda) + 1
		ps := p.bltParams()
		if len(st.Params) != len(ps) {
			return nil, fmt.Errorf("continual: blt state has %d parameters, plan %d", len(st.Params), len(ps))
		}
		for i := range ps {
			if st.Params[i] != ps[i] {
				return nil, fmt.Errorf("continual: blt state was made with another factor (parameter %d: %v, plan %v)", i, st.Params[i], ps[i])
			}
		}
	}
	if p.method != BLT && len(st.Params) != 0 {
		return nil, fmt.Errorf("continual: %s state has %d parameters, want none", p.method, len(st.Params))
	}
	if len(st.Noise) != want {
		return nil, fmt.Errorf("continual: %s state at window %d has %d noise values, want %d", p.method, st.Step, len(st.Noise), want)
	}
	for i, z := range st.Noise {
		if math.IsNaN(z) || math.IsInf(z, 0) {
			return nil, fmt.Errorf("continual: state noise value %d is %v", i, z)
		}
	}
	st.Noise = append([]float64(nil), st.Noise...)
	st.Params = append([]float64(nil), st.Params...)
	return &Releaser{plan: p, draw: draw, st: st}, nil
}

// State returns a copy of the releaser's state (see State for what to do
// with it).
func (r *Releaser) State() State {
	st := r.st
	st.Noise = append([]float64(nil), st.Noise...)
	st.Params = append([]float64(nil), st.Params...)
	return st
}

// Next takes window t's statistic x (t = the number of calls so far) and
// returns the released running total S_t + (B·z)_t. On error (horizon
// exhausted, overflow, failed draw) the state is unchanged.
func (r *Releaser) Next(x int64) (float64, error) {
	st := &r.st
	if st.Step >= r.plan.t {
		return 0, fmt.Errorf("continual: horizon of %d windows exhausted", r.plan.t)
	}
	sum := st.Sum + x
	if (x > 0 && sum < st.Sum) || (x < 0 && sum > st.Sum) {
		return 0, fmt.Errorf("continual: running total overflows at window %d", st.Step)
	}
	z, err := r.draw()
	if err != nil {
		return 0, fmt.Errorf("continual: noise for window %d: %w", st.Step, err)
	}
	if math.IsNaN(z) || math.IsInf(z, 0) {
		return 0, fmt.Errorf("continual: noise for window %d is %v", st.Step, z)
	}
	var noise float64
	switch r.plan.method {
	case PerWindow:
		if len(st.Noise) == 0 {
			st.Noise = append(st.Noise, 0)
		}
		st.Noise[0] += z
		noise = st.Noise[0]
	case Tree:
		// Window t completes the block of size lowbit(t+1), which replaces
		// the trailing-ones blocks of t's decomposition; z is its noise.
		merged := bits.TrailingZeros(uint(st.Step + 1))
		st.Noise = append(st.Noise[:len(st.Noise)-merged], z)
		for _, v := range st.Noise {
			noise += v
		}
	case Sqrt:
		st.Noise = append(st.Noise, z)
		t := st.Step
		c := r.plan.coef
		for i, v := range st.Noise {
			noise += c[t-i] * v
		}
	case BLT:
		// w_t = z_t + Σ_i ω_i·b_i is the correlated noise (C⁻¹z)_t; the
		// released total carries its running sum (A·C⁻¹·z)_t = (B·z)_t.
		b := r.plan.blt
		w := z
		for i := range b.lambda {
			w += b.omega[i] * st.Noise[i+1]
		}
		st.Noise[0] += w
		for i, l := range b.lambda {
			st.Noise[i+1] = l*st.Noise[i+1] + z
		}
		noise = st.Noise[0]
	}
	st.Sum = sum
	st.Step++
	return float64(sum) + noise, nil
}
