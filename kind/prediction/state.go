package prediction

import (
	"errors"
	"fmt"
	"time"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/statebytes"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// This file is a prediction release's state across windows and restarts
// (kind.Stateful, kind.Answerer): the current models — the latest released
// window's — and the answers given from them. A window's release publishes
// nothing about the data and costs nothing; its merged statistics become
// the window's model state, which its ledger charge keeps (never
// published: it is exact data, protected like the partials topic) so that
// a restart answers from the same models. Each query is answered from the
// current models, charged to the stream's account of their window's budget
// period, at most QueryLimit times per window.

// Tags of the state's encodings: a window's ledger charge (its model
// state) and a checkpoint's books.
const (
	chargeTag = "dpstream.prediction.charge/1"
	booksTag  = "dpstream.prediction.books/1"
)

var _ kind.Stateful = (*Plan)(nil)

// NewState returns the release's state before any window.
func (p *Plan) NewState(kind.StateContext) (kind.State, error) { return NewState(p), nil }

// NewState returns the state of a release whose plan learns as pp does,
// before any window: the models and answer counts of any kind.Predictor
// (this package's Plan, or a test's).
func NewState(pp kind.Predictor) kind.State {
	return &state{p: pp, answered: map[int64]int{}}
}

// state is a prediction release's kind.State and kind.Answerer.
type state struct {
	p   kind.Predictor
	cur *current
	// answered counts the answers given from each window's models: only
	// the current window's (and, while replaying, later ones') are kept.
	answered map[int64]int
}

// current is the latest released window's models and the model state
// they were built from (kind.Predictor.ModelState), which a checkpoint
// keeps.
type current struct {
	window, period int64
	model          kind.Model
	state          []int64
}

var _ kind.Answerer = (*state)(nil)

// set makes a window's models the current ones, unless a later window's
// already are.
func (s *state) set(window, period int64, m kind.Model, ms []int64) {
	if s.cur != nil && s.cur.window > window {
		return
	}
	s.cur = &current{window: window, period: period, model: m, state: ms}
	// Answers come from the latest window's models only: the counts of
	// earlier windows are never asked again.
	for w := range s.answered {
		if w < window {
			delete(s.answered, w)
		}
	}
}

// Window releases the window (nothing about the data) and makes its
// models the current ones.
func (s *state) Window(w kind.StateWindow, m kind.Merged, b kind.Budget, sampler noise.Sampler, rel *schema.Release) (kind.Decision, error) {
	if cs := s.p.Charges(); len(cs) > 0 {
		ok, err := b.Charge(cs)
		if err != nil {
			return kind.Decision{}, err
		}
		if !ok {
			return kind.Decision{Status: kind.StatusBudgetExhausted}, nil
		}
	}
	fit, err := s.p.Release(m, sampler, rel)
	if err != nil {
		return kind.Decision{}, err
	}
	ms, err := s.p.ModelState(m)
	if err != nil {
		return kind.Decision{}, fmt.Errorf("model state: %w", err)
	}
	model, err := s.p.Model(ms)
	if err != nil {
		return kind.Decision{}, fmt.Errorf("models: %w", err)
	}
	s.set(w.Start, w.Period, model, ms)
	enc := statebytes.New(chargeTag)
	enc.Ints(ms)
	return kind.Decision{Status: kind.StatusOK, State: enc.Bytes(), Fit: fit}, nil
}

// modelStateOf returns the model state a window's ledger charge holds
// (nil for none): LedgerCharge.State, or the legacy Model of charges
// written before it.
func modelStateOf(lc schema.LedgerCharge) []int64 {
	if len(lc.State) == 0 {
		return lc.Model
	}
	r, err := statebytes.Open(lc.State, chargeTag)
	if err != nil {
		return nil // another kind's
	}
	ms := r.Ints()
	if r.Close() != nil {
		return nil
	}
	return ms
}

// Replay rebuilds a window's models from its ledger charge, and counts an
// answer's charge against its window's limit. A model state the plan
// rejects was written under another configuration (other features, shards
// or classes): its models are not this release's, and the release answers
// from its next window.
func (s *state) Replay(lc schema.LedgerCharge) error {
	if lc.Status != kind.StatusOK {
		return nil
	}
	if lc.IsAnswer() {
		if s.cur == nil || lc.WindowStart >= s.cur.window {
			s.answered[lc.WindowStart]++
		}
		return nil
	}
	ms := modelStateOf(lc)
	if len(ms) == 0 {
		return nil
	}
	m, err := s.p.Model(ms)
	if err != nil {
		return nil
	}
	s.set(lc.WindowStart, lc.Period, m, ms)
	return nil
}

// DuplicateCost is nil: a window's release costs only its own charges, and
// an answer's are in its charge.
func (s *state) DuplicateCost(schema.LedgerCharge) []schema.NoiseComponent { return nil }

// Encode returns the current models' window, period and state and the
// answers given from them (nil before the first window).
func (s *state) Encode() ([]byte, error) {
	if s.cur == nil {
		return nil, nil
	}
	w := statebytes.New(booksTag)
	w.Int(s.cur.window)
	w.Int(s.cur.period)
	w.Ints(s.cur.state)
	w.Int(int64(s.answered[s.cur.window]))
	return w.Bytes(), nil
}

// Decode restores a checkpoint's models (ReleaseBooks.State, or the legacy
// ReleaseBooks.Model); a state the plan refuses (another configuration's)
// is dropped, and the release answers from its next window.
func (s *state) Decode(rb schema.ReleaseBooks) error {
	s.cur, s.answered = nil, map[int64]int{}
	var saved schema.ModelState
	switch {
	case len(rb.State) > 0:
		r, err := statebytes.Open(rb.State, booksTag)
		if errors.Is(err, statebytes.ErrTag) {
			return nil // another kind's state
		}
		saved = schema.ModelState{Window: r.Int(), Period: r.Int(), State: r.Ints(), Answered: r.Int()}
		if err := r.Close(); err != nil {
			return fmt.Errorf("prediction: checkpoint of release %s: %w", rb.Release, err)
		}
	case rb.Model != nil:
		saved = *rb.Model
	default:
		return nil
	}
	m, err := s.p.Model(saved.State)
	if err != nil {
		return nil
	}
	s.set(saved.Window, saved.Period, m, saved.State)
	s.answered[saved.Window] = int(saved.Answered)
	return nil
}

// Answer answers q from the current models, within the release's limit
// and the budget.
func (s *state) Answer(q kind.Query, b kind.QueryBudget, sampler noise.Sampler) (kind.QueryDecision, error) {
	if err := s.p.Check(q); err != nil {
		return kind.QueryDecision{Status: kind.QueryInvalid, Reason: err.Error()}, nil
	}
	cur := s.cur
	if cur == nil {
		return kind.QueryDecision{Status: kind.QueryNoModel, Reason: "no window of the release has been released yet: its first model comes with its first window"}, nil
	}
	d := kind.QueryDecision{Window: cur.window, Period: cur.period}
	if lim := s.p.QueryLimit(); lim > 0 && s.answered[cur.window] >= lim {
		d.Status = kind.StatusBudgetExhausted
		d.Reason = fmt.Sprintf("the release's max_queries (%d) answers from window %s are given; the next window's models answer more",
			lim, time.UnixMilli(cur.window).UTC().Format(time.RFC3339))
		return d, nil
	}
	ok, err := b.Charge(cur.period, s.p.QueryCharges(q.Op))
	if err != nil {
		return kind.QueryDecision{}, err
	}
	if !ok {
		d.Status = kind.StatusBudgetExhausted
		return d, nil
	}
	if d.Answer, err = cur.model.Answer(q, sampler); err != nil {
		// The charge was made: the stage fails, and its restart rebuilds
		// the books from the ledger without it.
		return kind.QueryDecision{}, err
	}
	d.Status = kind.StatusOK
	s.answered[cur.window]++
	return d, nil
}

// LegacyCharge returns lc with the model state it holds written in the
// legacy Model field and State cleared, as versions before
// LedgerCharge.State wrote it: for tests of the upgrade path and audits.
// Any other charge is returned as it is.
func LegacyCharge(lc schema.LedgerCharge) schema.LedgerCharge {
	if len(lc.State) == 0 || !statebytes.HasTag(lc.State, chargeTag) {
		return lc
	}
	if ms := modelStateOf(lc); len(ms) > 0 {
		lc.State, lc.Model = nil, ms
	}
	return lc
}
