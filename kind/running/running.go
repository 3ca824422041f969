// Package running makes a count, sum or histogram release, or a per-key
// count or sum with public keys, continual: each
// window publishes the running total since the first window of its horizon
// (and the increment over the previous window's total), under one charge
// for the whole horizon, with error that grows polylogarithmically in the
// horizon rather than linearly (mechanism/continual). A kind opts in by
// listing config.ContinualField, decoding it (config.Params.Continual), and
// returning New(st, r, plan) from its Plan when r.Continual is set, with a
// plan that implements kind.Totals.
//
// # Guarantee
//
// (ε, δ)-DP for the whole horizon of T windows — the release's epsilon and
// delta, whatever T and the method — under add/remove of one privacy unit:
// the horizon's release is ρ-zCDP with ρ the largest whose zCDP-to-(ε, δ)
// conversion meets (ε, δ) (noise.ZCDPGaussianSigma), and the accountant
// charges exactly that ρ (a zcdp charge) once, at the horizon's first
// released window; the horizon's later windows charge nothing. (With
// budget periods, the horizon is charged again at its first window in each
// later period it spans, so each period's account holds every mechanism
// touching its data.) The charge depends on the configuration alone.
//
// Proof sketch: the horizon's output is a post-processing of w = Ĉ·x + γ·z
// (mechanism/continual), the discrete Gaussian mechanism on the lattice
// γℤ^{T·N} with the L2 sensitivity below; it is ρ = Δ²/(2σ²)-zCDP
// (Canonne, Kamath & Steinke 2020, Thm. 4) with σ chosen so that ρ is at
// most the charge, whatever windows are released or skipped, and zCDP
// implies (ε, δ)-DP at the charge's conversion (Bun & Steinke 2016,
// Prop. 1.3). Each window's noise is drawn once: the window's ledger
// charge logs it before the window is published (LedgerCharge.State, see
// state.go), and a restart replays the log (Run.Replay) under the same
// mechanism only (Factor).
//
// # Sensitivity
//
// The window statistic is an integer vector x_t of N coordinates (a count,
// a sum in its fixed-point units, one count per bin) whose change by one
// unit in one window has L2 norm at most L2 (the kind's TotalsShape). Each
// coordinate runs the method's factorization A = B·C of the prefix sums,
// releasing (C ⊗ I_N)·x + z with z discrete Gaussian on C's lattice; a unit
// that changes windows P (|P| ≤ k) by vectors d_j moves it by
// Σ_b Σ_{i,j∈P} G_ij·d_ib·d_jb ≤ Σ_{i,j∈P} G_ij·‖d_i‖·‖d_j‖ ≤ L2²·Σ_{i,j∈P} G_ij
// in squared L2 (G = CᵀC ≥ 0 entrywise; Cauchy–Schwarz per pair), so the
// sensitivity is L2 times the scalar plan's for L = 1 (mechanism/continual
// computes the latter exactly for the participation bound k). Here k is 1
// for event-level streams (privacy_unit: event: each unit is one event, in
// one window); min(contribution.max_windows, T) when the stream sets
// max_windows, which the accumulate stage enforces per horizon, whatever
// the producers send (stages/accumulate, "Windows per horizon"); and T
// otherwise (nothing bounds the windows a unit joins, so none is assumed).
//
// # Sources
//
// Dwork, Naor, Pitassi & Rothblum 2010 and Chan, Shi & Song 2011 (tree);
// Henzinger, Upadhyay & Upadhyay 2023 (square-root factorization);
// Dvijotham, McMahan et al. 2024 (BLT); Bun & Steinke 2016 (zCDP);
// Canonne, Kamath & Steinke 2020 (discrete Gaussian). See mechanism/continual.
package running

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/continual"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Purpose is the purpose of a continual release's charge.
const Purpose = kind.PurposeContinual

// MaxCoordinates bounds the running totals of one release (its bins or
// public keys): each window's ledger charge logs a statistic and a noise
// value for every one, up to about 20 bytes each, and must fit in a Kafka
// record with the release.
const MaxCoordinates = 20_000

// z95 is the two-sided 95% normal quantile: the running totals' noise is
// a sum of many discrete Gaussians on a fine lattice (or a discrete
// Gaussian of scale well above 1), close to normal.
const z95 = 1.959963984540054

// Plan is a continual release: the kind's plan for the statistic, merge
// and shape, and the continual mechanism for the noise.
type Plan struct {
	kind.Totals
	cfg   config.Continual
	shape kind.TotalsShape
	m     *continual.Plan
	rho   float64
	delta float64
	// sigma is the noise standard deviation per coordinate of C·x, in the
	// vector's integer units.
	sigma float64
	k     int
	// notes are explain's side-by-side comparison of the methods.
	notes []string
	// factor is Factor().
	factor string
}

// maxStateValues bounds N·T for sqrt and blt, whose state holds a value of
// x and of w per coordinate and window (16 bytes each: 256 MiB).
const maxStateValues = 1 << 24

// fingerprint is Factor: the factorization's own fingerprint, the
// participation bound, the noise and the sensitivity (exact bits), and the
// coordinates' layout.
func fingerprint(mp *continual.Plan, shape kind.TotalsShape, k int, sigma float64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00k=%d\x00sigma=%x\x00l2=%x\x00n=%d\x00unit=%x\x00%s", mp.Fingerprint(), k,
		math.Float64bits(sigma), math.Float64bits(shape.L2), shape.N, math.Float64bits(shape.Unit), shape.Layout)
	return hex.EncodeToString(h.Sum(nil))
}

// Factor identifies the run's mechanism (kind.Running.Factor).
func (p *Plan) Factor() string { return p.factor }

var (
	_ kind.Running = (*Plan)(nil)
)

// New returns the continual plan of release r of stream st, on base (the
// kind's plan of the same release, which must implement kind.Totals).
func New(st *config.Stream, r config.Release, base kind.Plan) (kind.Plan, error) {
	c := r.Continual
	tp, ok := base.(kind.Totals)
	if !ok {
		return nil, fmt.Errorf("continual: kind %s has no running totals", r.Kind)
	}
	if r.Noise != config.NoiseGaussian || !(r.Delta > 0) {
		return nil, errors.New("continual: the running totals get Gaussian noise: set noise: gaussian and a delta in (0, 1)")
	}
	shape := tp.TotalsShape()
	if shape.N > MaxCoordinates {
		return nil, fmt.Errorf("continual: %d running totals (keys or bins) per window, more than %d: each window's ledger charge logs every one's statistic and noise", shape.N, MaxCoordinates)
	}
	if shape.N < 1 || !(shape.L2 > 0) || math.IsInf(shape.L2, 0) || !(shape.Unit > 0) {
		return nil, fmt.Errorf("continual: kind %s gave %d coordinates with L2 sensitivity %v", r.Kind, shape.N, shape.L2)
	}
	k := c.Horizon
	switch {
	case st.PrivacyUnit == config.PrivacyUnitEvent:
		k = 1
	case st.Contribution.MaxWindows > 0:
		// Enforced by the accumulate stage over this horizon (config
		// requires every continual release of the stream to share it).
		k = min(st.Contribution.MaxWindows, c.Horizon)
	}
	sigma1, err := noise.ZCDPGaussianSigma(r.Epsilon, r.Delta, 1)
	if err != nil {
		return nil, fmt.Errorf("continual: epsilon %v, delta %v: %w", r.Epsilon, r.Delta, err)
	}
	// ρ rounded down a little against the rounding of σ below: the charge
	// is never below what the noise gives.
	rho := math.Nextafter(1/(2*sigma1*sigma1), 0)
	var mp *continual.Plan
	if c.Method == config.ContinualAuto {
		mp, err = continual.Auto(c.Horizon, k, 1)
	} else {
		mp, err = continual.NewPlan(continual.Method(c.Method), c.Horizon, k, 1)
	}
	if err != nil {
		return nil, err // mechanism/continual's errors begin with "continual:"
	}
	// σ for sensitivity L2·Δ₁ (package comment), rounded up.
	sigma := math.Nextafter(shape.L2*mp.Sensitivity()/math.Sqrt(2*rho), math.Inf(1))
	if mp.Method() == continual.Sqrt || mp.Method() == continual.BLT {
		// Their state is every window's x and w per coordinate, and a
		// restart replays the horizon's logs in O(N·T²).
		if int64(shape.N)*int64(c.Horizon) > maxStateValues {
			return nil, fmt.Errorf("continual: %s keeps every window's statistic for each of %d running totals over %d windows (%d values, more than %d): use method tree, or fewer bins or keys, or a shorter horizon", mp.Method(), shape.N, c.Horizon, int64(shape.N)*int64(c.Horizon), maxStateValues)
		}
	}
	if s := mp.LatticeScale(sigma); !(s <= noise.MaxDiscreteScale) {
		return nil, fmt.Errorf("continual: the noise (σ = %.4g, %.4g steps of the %s factor's grid) is beyond what the exact sampler draws (%.4g steps): raise epsilon, or use method tree or per_window (whose grid is 1)", sigma, s, mp.Method(), float64(noise.MaxDiscreteScale))
	}
	p := &Plan{Totals: tp, cfg: *c, shape: shape, m: mp, rho: rho, delta: r.Delta, sigma: sigma, k: k}
	p.factor = fingerprint(mp, shape, k, sigma)
	p.notes = compare(c.Horizon, k, st.PrivacyUnit == config.PrivacyUnitEvent, shape.L2*shape.Unit, rho, mp.Method())
	return p, nil
}

// compare returns explain's line comparing every method's worst-window
// 95% half-width at ρ, in the values' units (l2 is the sensitivity in
// them), saying which participation bound k it assumes.
func compare(horizon, k int, eventLevel bool, l2, rho float64, chosen continual.Method) []string {
	var parts []string
	for _, m := range continual.Methods {
		mp, err := continual.NewPlan(m, horizon, k, 1)
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s n/a", m))
			continue
		}
		v, err := mp.MaxVarianceAtRho(rho)
		if err != nil {
			continue
		}
		mark := ""
		if m == chosen {
			mark = " (chosen)"
		}
		parts = append(parts, fmt.Sprintf("%s ±%.3g%s", m, z95*l2*math.Sqrt(v), mark))
	}
	who := "a unit may be in every window"
	switch {
	case k == 1 && eventLevel:
		who = "event-level: a unit is in one window"
	case k == 1:
		who = "a unit in at most 1 window"
	case k < horizon:
		who = fmt.Sprintf("a unit in at most %d windows", k)
	}
	return []string{fmt.Sprintf("continual over %d windows (%s), the worst window's running total ±95%%: %s", horizon, who, strings.Join(parts, ", "))}
}

// Horizon is the configured horizon T.
func (p *Plan) Horizon() int { return p.cfg.Horizon }

// Method is the factorization in use (auto resolved).
func (p *Plan) Method() string { return string(p.m.Method()) }

// Charges is the horizon's one zCDP charge.
func (p *Plan) Charges() []kind.Charge {
	return []kind.Charge{{
		Mechanism: accountant.Mechanism{Kind: accountant.KindZCDP, Epsilon: p.rho},
		Noise:     schema.NoiseComponent{Purpose: Purpose, Mechanism: accountant.KindZCDP, Sensitivity: p.shape.L2 * p.m.Sensitivity(), Scale: p.sigma, Epsilon: p.rho, Delta: p.delta},
	}}
}

// Components is empty: the charge is one zCDP charge for the horizon,
// not a list of per-window noise additions.
func (p *Plan) Components() []noise.Component { return nil }

// PDP charges every unit of a window the horizon's whole ρ, its worst
// case: an upper bound (a unit in several windows of the horizon is
// charged each time).
func (p *Plan) PDP() ([]kind.PDPComponent, error) {
	return []kind.PDPComponent{{Purpose: Purpose, Noise: accountant.KindZCDP, Epsilon: p.rho, Delta: p.delta, Norm: -1}}, nil
}

// Describe adds the continual method and horizon to the kind's.
func (p *Plan) Describe() string {
	return fmt.Sprintf("%s, running totals over %d windows (%s)", p.Totals.Describe(), p.cfg.Horizon, p.m.Method())
}

// Accuracy is the worst window's running-total 95% half-width.
func (p *Plan) Accuracy() string {
	return fmt.Sprintf("running total ±%.3g at worst (95%%)", z95*math.Sqrt(p.m.MaxVariance(p.sigma))*p.shape.Unit)
}

// Notes compare the methods and add the kind's.
func (p *Plan) Notes() []string {
	return append(append([]string(nil), p.notes...), p.Totals.Notes()...)
}

// Widest is the kind's widest release plus the running totals.
func (p *Plan) Widest(rel *schema.Release) {
	p.Totals.Widest(rel)
	rel.Horizon, rel.HorizonWindow = math.MaxInt32, math.MaxInt32
	wide := 0.0
	rel.RunningTotal, rel.RunningInterval95 = &wide, &wide
	if p.shape.N > 1 {
		rel.RunningTotals, rel.RunningIntervals95 = kind.Wide(p.shape.N), kind.Wide(p.shape.N)
	}
}

// Release is an error: a continual release needs its horizon's run, which
// its State keeps (kind.Stateful, state.go).
func (p *Plan) Release(kind.Merged, noise.Sampler, *schema.Release) (kind.Fit, error) {
	return nil, errors.New("continual: a continual release is released through its state (kind.Stateful)")
}

// NewRun starts a horizon: one releaser per coordinate.
func (p *Plan) NewRun() (kind.Run, error) {
	r := &run{p: p, rel: make([]*continual.Releaser, p.shape.N), last: make([]float64, p.shape.N)}
	for i := range r.rel {
		var err error
		if r.rel[i], err = continual.NewReleaser(p.m); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// run is one horizon of a continual release.
type run struct {
	p     *Plan
	rel   []*continual.Releaser
	steps int
	// start is the run's first window's step: the steps before it were
	// skipped as public zeros (skip), without noise.
	start int
	// last are the running totals of the last step (0 before the first),
	// from which a window's increments are derived.
	last []float64
}

func (r *run) Steps() int { return r.steps }

// Release steps through the gap windows with zeros, then the window.
func (r *run) Release(m kind.Merged, step int, sampler noise.Sampler, rel *schema.Release) (kind.Log, error) {
	n, p := r.p.shape.N, r.p
	if step < r.steps || step >= p.cfg.Horizon {
		return kind.Log{}, fmt.Errorf("continual: step %d of a horizon of %d at step %d", step, p.cfg.Horizon, r.steps)
	}
	x, err := p.TotalsOf(m)
	if err != nil {
		return kind.Log{}, err
	}
	if len(x) != n {
		return kind.Log{}, fmt.Errorf("continual: kind gave %d coordinates, want %d", len(x), n)
	}
	first := r.steps
	if first == 0 {
		// The run's first window: the steps before it are public zeros
		// (see skip), neither drawn nor logged.
		first = step
	}
	steps := step - first + 1
	xs := make([]int64, steps*n)
	copy(xs[(steps-1)*n:], x)
	zs := make([]int64, steps*n)
	for i := range zs {
		if zs[i], err = p.m.DrawNoise(sampler, p.sigma); err != nil {
			return kind.Log{}, err
		}
	}
	if err := r.apply(first, xs, zs, rel); err != nil {
		return kind.Log{}, err
	}
	return kind.Log{First: first, X: xs, Z: zs, Factor: p.factor}, nil
}

// Replay applies a logged release made under the same factorization.
func (r *run) Replay(l kind.Log) error {
	if f := r.p.factor; l.Factor != f {
		return fmt.Errorf("continual: log made under factorization %.12s…, this plan's is %.12s…", l.Factor, f)
	}
	return r.apply(l.First, l.X, l.Z, nil)
}

// skip returns clones of the releasers advanced from step 0 to step
// first with x = 0 and z = 0: the steps of a horizon before its run's
// first window. Their statistic is 0 whatever the data — they are windows
// before the stream's start, whose events the schedule drops, or before
// the release existed, whose data it does not count — so the rows of C·x
// they release are 0 in every pair of neighbouring datasets, need no
// noise to be private, and the rest of the horizon is the Gaussian
// mechanism on the remaining rows, whose sensitivity is at most that of
// all of them (package comment). Skipping them keeps a horizon joined
// late from logging (and drawing) up to T·N values at its first window.
func (r *run) skip(first int) ([]*continual.Releaser, error) {
	next := make([]*continual.Releaser, len(r.rel))
	for i := range next {
		next[i] = r.rel[i].Clone()
		for s := 0; s < first; s++ {
			if _, err := next[i].Next(0, 0); err != nil {
				return nil, fmt.Errorf("continual: skip to step %d: %w", first, err)
			}
		}
	}
	return next, nil
}

// apply feeds the steps first… to fresh copies of the releasers and, when
// every step succeeds, keeps them; rel, if set, gets the last step's
// release.
func (r *run) apply(first int, x, z []int64, rel *schema.Release) error {
	n, p := r.p.shape.N, r.p
	if first != r.steps && (r.steps != 0 || first < 0) {
		return fmt.Errorf("continual: log starts at step %d, the run is at step %d", first, r.steps)
	}
	if len(x) == 0 || len(x)%n != 0 || len(z) != len(x) {
		return fmt.Errorf("continual: log of %d values and %d noise values for %d coordinates", len(x), len(z), n)
	}
	steps := len(x) / n
	if first+steps > p.cfg.Horizon {
		return fmt.Errorf("continual: log to step %d beyond the horizon of %d", first+steps-1, p.cfg.Horizon)
	}
	// Replay on clones so that an error leaves the run unchanged: the
	// releasers are deterministic, so cloning is replaying their inputs.
	next, err := r.skip(first - r.steps)
	if err != nil {
		return err
	}
	totals := make([]float64, n)
	for s := 0; s < steps; s++ {
		for i := 0; i < n; i++ {
			t, err := next[i].Next(x[s*n+i], z[s*n+i])
			if err != nil {
				return fmt.Errorf("continual: step %d coordinate %d: %w", first+s, i, err)
			}
			totals[i] = t
		}
	}
	step := first + steps - 1
	start := r.start
	if r.steps == 0 {
		start = first
	}
	if rel != nil {
		inc := make([]float64, n)
		for i := range inc {
			inc[i] = totals[i] - r.last[i]
		}
		tot95 := fill(n, z95*math.Sqrt(p.m.VarianceFrom(start, step, p.sigma)))
		sd := math.Sqrt(p.m.IncrementVarianceFrom(start, step, p.sigma))
		if first > start && steps > 1 {
			// Windows without data since the last release: the increment
			// spans them; its deviation is at most the sum of the two
			// totals' (Cauchy–Schwarz), a conservative interval.
			sd = math.Sqrt(p.m.VarianceFrom(start, step, p.sigma)) + math.Sqrt(p.m.VarianceFrom(start, first-1, p.sigma))
		}
		inc95 := fill(n, z95*sd)
		p.FillTotals(rel, inc, inc95, totals, tot95)
		rel.Horizon, rel.HorizonWindow = int32(p.cfg.Horizon), int32(step+1)
	}
	r.rel, r.last, r.steps, r.start = next, totals, step+1, start
	return nil
}

// fill returns n copies of v.
func fill(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
