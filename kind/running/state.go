package running

import (
	"errors"
	"fmt"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/statebytes"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// This file is a continual release's state across windows and restarts
// (kind.Stateful): its current horizon, where the horizon's charge was made
// (or refused), and the run with the steps released so far. The release
// stage keeps it as an opaque kind.State.
//
// Budget: a horizon is charged the plan's Charges at its first released
// window in each budget period it spans (a period's account must hold
// every mechanism touching its windows' data), and its other windows charge
// nothing; once the charge is refused, every window of the horizon is
// refused (and counted). Whether a window is charged depends on its place
// in its horizon, its period and the earlier charges only — never on data:
// Window asks the budget before the run reads the window's statistic.

// Tags of the state's encodings: a window's ledger charge (its step log,
// or its refusal) and a checkpoint's books.
const (
	chargeTag = "dpstream.continual.charge/1"
	booksTag  = "dpstream.continual.books/1"
)

var _ kind.Stateful = (*Plan)(nil)

// NewState returns the release's state before any window; horizons align
// to c's schedule start.
func (p *Plan) NewState(c kind.StateContext) (kind.State, error) {
	if c.Size <= 0 {
		return nil, fmt.Errorf("continual: window size %d ms", c.Size)
	}
	return &state{p: p, ctx: c}, nil
}

// state is a continual release's kind.State.
type state struct {
	p   *Plan
	ctx kind.StateContext
	cur *horizon // nil before the first window
}

// horizon is the release's current horizon: whether its charge was made
// (charged, in budget period period) or refused (refused, and then every
// window of it is refused), and the run with the steps released so far.
type horizon struct {
	index            int64
	charged, refused bool
	period           int64
	run              kind.Run
	// charges are the horizon's charge as recorded (the ledger's), which
	// a duplicate answer for one of its windows is charged again.
	charges []schema.NoiseComponent
	// logs are the step logs of the horizon's windows so far, in order:
	// what a checkpoint keeps of the run (Encode), replayed into a fresh
	// run by Decode. At most one per window of the horizon.
	logs []kind.Log
}

// place returns window start's horizon ⌊w/T⌋ and step w mod T, for window
// index w = (start − the stream's start)/size.
func (s *state) place(start int64) (int64, int) {
	start -= s.ctx.Start
	w := start / s.ctx.Size
	if start%s.ctx.Size != 0 && start < 0 {
		w--
	}
	t := int64(s.p.Horizon())
	h := w / t
	if w%t != 0 && w < 0 {
		h--
	}
	return h, int(w - h*t)
}

// horizonFor returns horizon h, starting it when the current one is
// earlier; nil (and no error) when the current one is later: a window of a
// horizon that has ended can no longer be released.
func (s *state) horizonFor(h int64) (*horizon, error) {
	if s.cur != nil && s.cur.index == h {
		return s.cur, nil
	}
	if s.cur != nil && s.cur.index > h {
		return nil, nil
	}
	run, err := s.p.NewRun()
	if err != nil {
		return nil, err
	}
	s.cur = &horizon{index: h, run: run}
	return s.cur, nil
}

// Window decides one window: skipped when its horizon has ended or a later
// step of it was released, refused with its horizon, else charged (at the
// horizon's first window in the period) and released by the run.
func (s *state) Window(w kind.StateWindow, m kind.Merged, b kind.Budget, sampler noise.Sampler, rel *schema.Release) (kind.Decision, error) {
	p := s.p
	h, step := s.place(w.Start)
	hz, err := s.horizonFor(h)
	if err != nil {
		return kind.Decision{}, err
	}
	rel.Horizon, rel.HorizonWindow = int32(p.Horizon()), int32(step+1)
	switch {
	case hz == nil || step < hz.run.Steps():
		return kind.Decision{Status: kind.StatusSkipped}, nil
	case hz.refused:
		// The horizon's charge was refused: so is each of its windows,
		// counted as a replay counts them.
		b.Refuse()
		return kind.Decision{Status: kind.StatusBudgetExhausted, State: encodeCharge(p.factor, nil)}, nil
	}
	if !hz.charged || hz.period != w.Period {
		charges := p.Charges()
		ok, err := b.Charge(charges)
		if err != nil {
			return kind.Decision{}, err
		}
		if !ok {
			hz.refused = true
			return kind.Decision{Status: kind.StatusBudgetExhausted, State: encodeCharge(p.factor, nil)}, nil
		}
		hz.charged, hz.period, hz.charges = true, w.Period, noiseOf(charges)
	}
	// Otherwise charged at the horizon's first window: nothing more (an ok
	// charge without charges).
	l, err := hz.run.Release(m, step, sampler, rel)
	if err != nil {
		return kind.Decision{}, err
	}
	hz.logs = append(hz.logs, l)
	return kind.Decision{Status: kind.StatusOK, State: encodeCharge(l.Factor, &l)}, nil
}

func noiseOf(cs []kind.Charge) []schema.NoiseComponent {
	out := make([]schema.NoiseComponent, len(cs))
	for i, c := range cs {
		out[i] = c.Noise
	}
	return out
}

// encodeCharge is a window's LedgerCharge.State: the factor it was decided
// under and its step log (none for a refusal).
func encodeCharge(factor string, l *kind.Log) []byte {
	w := statebytes.New(chargeTag)
	w.String(factor)
	w.Bool(l != nil)
	if l != nil {
		w.Int(int64(l.First))
		w.Ints(l.X)
		w.Ints(l.Z)
	}
	return w.Bytes()
}

// chargeOf reads what a ledger charge says of the run: continual false
// for a charge of no continual release (another kind's, or an ordinary
// release's of the same name); the factor it was decided under, and its
// step log (nil for none). It reads LedgerCharge.State, or the legacy
// Continual fields of charges written before it. A State of this tag that
// does not parse is err.
func chargeOf(lc schema.LedgerCharge) (continual bool, factor string, l *kind.Log, err error) {
	if len(lc.State) == 0 {
		if lc.ContinualFactor == "" {
			return false, "", nil, nil
		}
		if len(lc.ContinualX) > 0 {
			l = &kind.Log{First: int(lc.ContinualFirst), X: lc.ContinualX, Z: lc.ContinualZ, Factor: lc.ContinualFactor}
		}
		return true, lc.ContinualFactor, l, nil
	}
	r, err := statebytes.Open(lc.State, chargeTag)
	if err != nil {
		return false, "", nil, nil
	}
	factor = r.String()
	if r.Bool() {
		l = &kind.Log{First: int(r.Int()), X: r.Ints(), Z: r.Ints(), Factor: factor}
	}
	if err := r.Close(); err != nil {
		return true, "", nil, err
	}
	return true, factor, l, nil
}

// LogOf returns the step log a continual release's ledger charge holds
// (ok false when it holds none), from LedgerCharge.State or the legacy
// fields: for audits and tests that recompute the running totals.
func LogOf(lc schema.LedgerCharge) (kind.Log, bool) {
	continual, _, l, err := chargeOf(lc)
	if !continual || err != nil || l == nil {
		return kind.Log{}, false
	}
	return *l, true
}

// Replay applies a ledger charge of the release: the horizon's charge or
// refusal, and the step log. Only charges made for this plan's mechanism
// count (Factor): an ordinary release's charge of the same name never
// stands in for the horizon's charge. A continual charge made under
// another factor (the configuration changed mid-horizon) ends the run: the
// next window starts a new one, charged anew, whose earlier steps count as
// empty. A log of this factor that does not continue the run (or a state
// that does not parse) leaves the horizon refused.
func (s *state) Replay(lc schema.LedgerCharge) error {
	if lc.IsAnswer() {
		return nil
	}
	continual, factor, l, perr := chargeOf(lc)
	if !continual {
		return nil
	}
	h, _ := s.place(lc.WindowStart)
	hz, err := s.horizonFor(h)
	if err != nil || hz == nil {
		return err
	}
	if perr != nil {
		hz.refused = true
		return nil
	}
	if factor != s.p.factor {
		// Another configuration's run: this one starts afresh.
		run, err := s.p.NewRun()
		if err != nil {
			return err
		}
		*hz = horizon{index: h, run: run}
		return nil
	}
	switch lc.Status {
	case kind.StatusBudgetExhausted:
		hz.refused = true
	case kind.StatusOK:
		if len(lc.Charges) > 0 {
			hz.charged, hz.period, hz.charges = true, lc.Period, lc.Charges
		}
		if l != nil {
			if err := hz.run.Replay(*l); err != nil {
				hz.refused = true
			} else {
				hz.logs = append(hz.logs, *l)
			}
		}
	}
	return nil
}

// DuplicateCost: a continual window after its horizon's first charges
// nothing; a second, different answer for it publishes the window's row
// again with fresh noise, which no charge covers, so it costs the
// horizon's charge again (an upper bound): as the ledger recorded it, or
// the configured one when the horizon's charge is not known.
func (s *state) DuplicateCost(lc schema.LedgerCharge) []schema.NoiseComponent {
	if lc.Status != kind.StatusOK || len(lc.Charges) > 0 {
		return nil
	}
	if _, ok := LogOf(lc); !ok {
		return nil
	}
	if s.cur != nil && len(s.cur.charges) > 0 {
		return s.cur.charges
	}
	return noiseOf(s.p.Charges())
}

// Encode returns the current horizon: its charge and the step logs of its
// windows (nil before the first window).
func (s *state) Encode() ([]byte, error) {
	hz := s.cur
	if hz == nil {
		return nil, nil
	}
	w := statebytes.New(booksTag)
	w.Int(hz.index)
	w.Bool(hz.charged)
	w.Bool(hz.refused)
	w.Int(hz.period)
	w.Len(len(hz.charges))
	for _, c := range hz.charges {
		w.String(c.Purpose)
		w.String(c.Mechanism)
		w.Float(c.Sensitivity)
		w.Float(c.Scale)
		w.Float(c.Epsilon)
		w.Float(c.Delta)
	}
	w.Len(len(hz.logs))
	for _, l := range hz.logs {
		w.Int(int64(l.First))
		w.Ints(l.X)
		w.Ints(l.Z)
		w.String(l.Factor)
	}
	return w.Bytes(), nil
}

// Decode restores a checkpoint's horizon (ReleaseBooks.State, or the
// legacy ReleaseBooks.Run): its charge, and its run replayed from the step
// logs. A run whose logs do not replay under this plan for want of its
// factor (another configuration's) is dropped: the next window starts a
// horizon anew, as after a configuration change mid-horizon; one of this
// factor that does not replay leaves the horizon refused.
func (s *state) Decode(rb schema.ReleaseBooks) error {
	s.cur = nil
	var saved schema.RunState
	switch {
	case len(rb.State) > 0:
		r, err := statebytes.Open(rb.State, booksTag)
		if errors.Is(err, statebytes.ErrTag) {
			return nil // another kind's state
		}
		saved = schema.RunState{Horizon: r.Int(), Charged: r.Bool(), Refused: r.Bool(), Period: r.Int()}
		for n := r.Len(); n > 0; n-- {
			saved.Charges = append(saved.Charges, schema.NoiseComponent{Purpose: r.String(), Mechanism: r.String(),
				Sensitivity: r.Float(), Scale: r.Float(), Epsilon: r.Float(), Delta: r.Float()})
		}
		for n := r.Len(); n > 0; n-- {
			saved.Logs = append(saved.Logs, schema.RunLog{First: int32(r.Int()), X: r.Ints(), Z: r.Ints(), Factor: r.String()})
		}
		if err := r.Close(); err != nil {
			return fmt.Errorf("continual: checkpoint of release %s: %w", rb.Release, err)
		}
	case rb.Run != nil:
		saved = *rb.Run
	default:
		return nil
	}
	run, err := s.p.NewRun()
	if err != nil {
		return err
	}
	hz := &horizon{index: saved.Horizon, charged: saved.Charged, refused: saved.Refused, period: saved.Period, charges: saved.Charges, run: run}
	for _, l := range saved.Logs {
		kl := kind.Log{First: int(l.First), X: l.X, Z: l.Z, Factor: l.Factor}
		if err := run.Replay(kl); err != nil {
			if l.Factor != s.p.factor {
				return nil // another configuration's run
			}
			hz.refused = true
			break
		}
		hz.logs = append(hz.logs, kl)
	}
	s.cur = hz
	return nil
}

// LegacyCharge returns lc with the continual state it holds written in the
// legacy fields (ContinualFirst, ContinualX, ContinualZ, ContinualFactor)
// and State cleared, as versions before LedgerCharge.State wrote it: for
// tests of the upgrade path and audits that read the step logs. Any other
// charge is returned as it is.
func LegacyCharge(lc schema.LedgerCharge) schema.LedgerCharge {
	if len(lc.State) == 0 {
		return lc
	}
	continual, factor, l, err := chargeOf(lc)
	if !continual || err != nil {
		return lc
	}
	lc.State, lc.ContinualFactor = nil, factor
	if l != nil {
		lc.ContinualFirst, lc.ContinualX, lc.ContinualZ = int32(l.First), l.X, l.Z
	}
	return lc
}
