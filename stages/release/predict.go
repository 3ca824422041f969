package release

import (
	"fmt"
	"strings"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// This file is the Releaser's side of the query path of prediction
// releases (kind.Predictor). A window's release keeps its model state in
// its ledger charge (LedgerCharge.Model) and becomes the release's current
// model; each query is then decided like a release: its charge, fixed by
// the configuration, is offered to the stream's account of the model
// window's budget period (the window whose data the answer is about), and
// only when the budget holds is the model asked for a noisy answer. The
// answer's ledger charge carries the response as its payload, so that a
// crash between the ledger append and the publish republishes that very
// response, never a fresh draw.

// modelKey names one prediction release.
type modelKey struct{ stream, release string }

// currentModel is a prediction release's latest released window's models.
type currentModel struct {
	window, period int64
	model          kind.Model
}

// answeredKey counts the answers given from one window's models.
type answeredKey struct {
	stream, release string
	window          int64
}

// AnswerID is the ledger id of the answer to request id of a release:
// never a window's release id, which ends in a number.
func AnswerID(stream, release, requestID string) string {
	return stream + "/" + release + "/query/" + requestID
}

// Answer is a decided query: the response to publish and, for an answer
// with noise, the ledger charge that must be durable first.
type Answer struct {
	// Response is the response as published; Payload its encoding, the
	// exact bytes to publish on the responses topic.
	Response schema.PredictResponse
	Payload  []byte
	// Charge is the answer's ledger record (Ledger, its encoding), nil
	// for a response without noise (invalid, no model, refused), which is
	// a function of the request and the configuration only and is simply
	// published: a replayed request gets the same one.
	Charge *schema.LedgerCharge
	Ledger []byte
	// Duplicate is true when the request id was answered before (the
	// ledger holds its answer): nothing is decided or published again.
	// The earlier answer is on the responses topic (republished from the
	// ledger at start if it was not).
	Duplicate bool
}

// setModel makes a window's models the release's current ones, unless a
// later window's already are.
func (r *Releaser) setModel(stream, release string, window, period int64, m kind.Model) {
	k := modelKey{stream, release}
	if cur, ok := r.models[k]; ok && cur.window > window {
		return
	}
	r.models[k] = &currentModel{window: window, period: period, model: m}
}

// restoreModel rebuilds a prediction window's models from its ledger
// charge, and counts an answer's charge against its window's limit.
func (r *Releaser) restoreModel(lc schema.LedgerCharge) error {
	if lc.Status != StatusOK {
		return nil
	}
	if lc.IsAnswer() {
		r.answered[answeredKey{lc.Stream, lc.Release, lc.WindowStart}]++
		// Every answer counts against the query budget, as live (an
		// answer the ledger holds was within it when it was decided).
		return r.queryAccount(lc.Stream, lc.Period).Apply(mechanismsOf(lc.Charges))
	}
	if len(lc.Model) == 0 {
		return nil
	}
	pp, ok := r.predictor(lc.Stream, lc.Release)
	if !ok {
		return nil
	}
	// A state the configuration's plan rejects was written under another
	// configuration (other features, shards or classes): its models are
	// not this release's, and the release answers from its next window.
	m, err := pp.Model(lc.Model)
	if err != nil {
		return nil
	}
	r.setModel(lc.Stream, lc.Release, lc.WindowStart, lc.Period, m)
	return nil
}

// queryAccount is the account of the answers alone of a stream's budget
// period, against the stream's budget.queries.
func (r *Releaser) queryAccount(stream string, period int64) *accountant.Account {
	k := acctKey{stream, period}
	a := r.queryAccounts[k]
	if a == nil {
		a = &accountant.Account{AllPure: true}
		r.queryAccounts[k] = a
	}
	return a
}

// RequestNext is the offset of the requests topic after the last request
// the ledger holds an answer to. A restarted stage reads on from it, or
// from after the last request the responses topic holds any response to
// (RequestOffsetHeader), whichever is later.
func (r *Releaser) RequestNext() int64 { return r.requestNext }

// predictor returns the plan of a prediction release.
func (r *Releaser) predictor(stream, release string) (kind.Predictor, bool) {
	ps, ok := r.streams[stream]
	if !ok {
		return nil, false
	}
	for _, pr := range ps.Releases {
		if pr.Config.Name == release {
			pp, ok := pr.Kind.(kind.Predictor)
			return pp, ok
		}
	}
	return nil, false
}

// HasPredictors reports whether any release of the configuration answers
// queries.
func (r *Releaser) HasPredictors() bool {
	for _, ps := range r.streams {
		for _, pr := range ps.Releases {
			if _, ok := pr.Kind.(kind.Predictor); ok {
				return true
			}
		}
	}
	return false
}

// Answer decides one query, read at offset of the requests topic (q and
// its decoding error derr, as schema.DecodePredictRequest returned them).
// The response's status says what became of it; only an ok answer is
// charged, and it is the only one with a ledger charge.
//
// Whether a query is answered depends on the configuration, the request
// and the earlier charges only (the budget filter, DESIGN invariant 3), and
// the answer's noise is drawn only after its charge is decided.
func (r *Releaser) Answer(q schema.PredictRequest, derr error, offset int64, now time.Time) (Answer, error) {
	// What the response echoes of the request is clipped: a response must
	// fit in a record whatever the querier sent, or publishing it fails and
	// stops the stage at the same request after every restart. The names
	// of a release that answers are configured ones, shorter than this.
	resp := schema.PredictResponse{RequestID: q.RequestID, Stream: clip(q.Stream, maxEcho), Release: clip(q.Release, maxEcho),
		Op: clip(q.Op, maxEcho), AnsweredAt: now.UnixMilli()}
	refuse := func(status, reason string) (Answer, error) {
		resp.Status, resp.Reason = status, clip(reason, maxReason)
		b, err := schema.EncodePredictResponse(resp)
		if err != nil {
			return Answer{}, fmt.Errorf("encode response to %s: %w", q.RequestID, err)
		}
		return Answer{Response: resp, Payload: b}, nil
	}
	if derr != nil {
		return refuse(schema.PredictInvalid, derr.Error())
	}
	id := AnswerID(q.Stream, q.Release, q.RequestID)
	if _, done := r.charged[id]; done {
		return Answer{Duplicate: true}, nil
	}
	ps, ok := r.streams[q.Stream]
	if !ok {
		return refuse(schema.PredictUnknownRelease, fmt.Sprintf("no stream %q in the configuration", resp.Stream))
	}
	pp, ok := r.predictor(q.Stream, q.Release)
	if !ok {
		return refuse(schema.PredictUnknownRelease, fmt.Sprintf("stream %q has no prediction release %q", resp.Stream, resp.Release))
	}
	query := kind.Query{Op: q.Op, Rows: q.Rows, Labels: q.Labels}
	if err := pp.Check(query); err != nil {
		return refuse(schema.PredictInvalid, err.Error())
	}
	cur, ok := r.models[modelKey{q.Stream, q.Release}]
	if !ok {
		return refuse(schema.PredictNoModel, "no window of the release has been released yet: its first model comes with its first window")
	}
	resp.WindowStart = cur.window
	ak := answeredKey{q.Stream, q.Release, cur.window}
	if lim := pp.QueryLimit(); lim > 0 && r.answered[ak] >= lim {
		return refuse(StatusBudgetExhausted, fmt.Sprintf("the release's max_queries (%d) answers from window %s are given; the next window's models answer more",
			lim, time.UnixMilli(cur.window).UTC().Format(time.RFC3339)))
	}
	charges := pp.QueryCharges(q.Op)
	ms := make([]accountant.Mechanism, len(charges))
	noise := make([]schema.NoiseComponent, len(charges))
	for i, c := range charges {
		ms[i], noise[i] = c.Mechanism, c.Noise
		resp.Epsilon += c.Noise.Epsilon
		resp.Delta += c.Noise.Delta
	}
	acct := r.account(q.Stream, cur.period)
	saved := *acct
	ok, err := acct.Try(ps.Budget, ms)
	if err != nil {
		return Answer{}, fmt.Errorf("accountant: %s: %w", id, err)
	}
	if !ok {
		// A refused query is not counted among the stream's refusals: it
		// is not in the ledger (a refusal draws nothing, and a flood of
		// queries past the budget must not grow the ledger), so a rebuilt
		// account would not count it, and the lost-ledger check compares
		// the published state's counts with the rebuilt ones.
		*acct = saved
		resp.Epsilon, resp.Delta = 0, 0
		return refuse(StatusBudgetExhausted, fmt.Sprintf("stream %s's privacy budget (ε = %g) cannot pay this answer's ε = %g",
			q.Stream, ps.Budget.Epsilon, sumEpsilon(noise)))
	}
	if share := ps.Config.Budget.Queries; share > 0 {
		// The stream's query budget: the answers of a period alone must
		// fit in their share, so that queries never starve the releases.
		qa := r.queryAccount(q.Stream, cur.period)
		qsaved := *qa
		ok, err := qa.Try(accountant.Budget{Epsilon: share, Delta: ps.Budget.Delta}, ms)
		if err != nil {
			return Answer{}, fmt.Errorf("accountant: %s: %w", id, err)
		}
		if !ok {
			*acct, *qa = saved, qsaved
			resp.Epsilon, resp.Delta = 0, 0
			return refuse(StatusBudgetExhausted, fmt.Sprintf("stream %s's query budget (budget.queries: ε = %g per period) cannot pay this answer's ε = %g",
				q.Stream, share, sumEpsilon(noise)))
		}
	}
	ans, err := cur.model.Answer(query, r.noise)
	if err != nil {
		// The charge was made: an answer that fails after it is
		// charged all the same (nothing is published of it).
		// The account holds the charge already: the stage fails, and its
		// restart rebuilds the account from the ledger without it.
		return Answer{}, fmt.Errorf("mechanism: %s: %w", id, err)
	}
	resp.Status = StatusOK
	resp.Label, resp.Value, resp.Interval95 = ans.Label, ans.Value, ans.Interval95
	payload, err := schema.EncodePredictResponse(resp)
	if err != nil {
		return Answer{}, fmt.Errorf("encode response %s: %w", id, err)
	}
	curve := accountant.ZeroCurve()
	for _, m := range ms {
		c, err := m.Curve()
		if err != nil {
			return Answer{}, fmt.Errorf("accountant: %s: %w", id, err)
		}
		curve = curve.Add(c)
	}
	lc := schema.LedgerCharge{ReleaseID: id, Stream: q.Stream, Release: q.Release, WindowStart: cur.window, Period: cur.period,
		Status: StatusOK, Charges: noise, RDP: curve, Payload: payload, At: resp.AnsweredAt,
		RequestID: q.RequestID, RequestOffset: offset}
	r.addKL(acctKey{lc.Stream, lc.Period}, ms)
	r.setKL(&lc)
	lb, err := schema.EncodeLedgerCharge(lc)
	if err != nil {
		return Answer{}, fmt.Errorf("encode ledger charge %s: %w", id, err)
	}
	r.charged[id] = withoutPayload(lc)
	r.answered[ak]++
	r.requestNext = max(r.requestNext, offset+1)
	return Answer{Response: resp, Payload: payload, Charge: &lc, Ledger: lb}, nil
}

// Bounds of what a response echoes of its request (bytes): each name, and
// the reason (which may quote the request).
const (
	maxEcho   = 256
	maxReason = 1024
)

// clip returns s cut to at most n bytes, at a rune boundary, marked with
// "…" when it was cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-len("…")], "") + "…"
}

func sumEpsilon(cs []schema.NoiseComponent) float64 {
	var e float64
	for _, c := range cs {
		e += c.Epsilon
	}
	return e
}
