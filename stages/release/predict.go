package release

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/books"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// This file is the Releaser's side of the query path of releases whose
// state answers queries (kind.Answerer, prediction releases). A window's
// release keeps its model state in its ledger charge (LedgerCharge.State,
// the kind's own) and its State answers from the latest window's models;
// each query is then decided like a release: the State checks it, finds
// the models and the release's limit, and offers its charge, fixed by the
// configuration, to the stream's account of the model window's budget
// period (queryBudget), and only when the budget holds is the answer's
// noise drawn. The answer's ledger charge carries the response as its
// payload, so that a crash between the ledger append and the publish
// republishes that very response, never a fresh draw.

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

// RequestNext is the offset of the requests topic after the last request
// the ledger holds an answer to. A restarted stage reads on from it, or
// from after the last request the responses topic holds any response to
// (RequestOffsetHeader), whichever is later.
func (r *Releaser) RequestNext() int64 { return r.requestNext }

// answerer returns the state of a release that answers queries.
func (r *Releaser) answerer(stream, release string) (kind.Answerer, error) {
	st, err := r.state(stream, release)
	if err != nil || st == nil {
		return nil, err
	}
	a, _ := st.(kind.Answerer)
	return a, nil
}

// HasPredictors reports whether any release of the configuration answers
// queries (its state is a kind.Answerer).
func (r *Releaser) HasPredictors() bool {
	for _, ps := range r.streams {
		for _, pr := range ps.Releases {
			sp, ok := pr.Kind.(kind.Stateful)
			if !ok {
				continue
			}
			st, err := sp.NewState(kind.StateContext{Start: r.starts[ps.Config.Name], Size: ps.Config.Window.Size.Milliseconds()})
			if _, answers := st.(kind.Answerer); err == nil && answers {
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
	if _, done := r.answeredIDs[id]; done {
		return Answer{Duplicate: true}, nil
	}
	ps, ok := r.streams[q.Stream]
	if !ok {
		return refuse(schema.PredictUnknownRelease, fmt.Sprintf("no stream %q in the configuration", resp.Stream))
	}
	ans, err := r.answerer(q.Stream, q.Release)
	if err != nil {
		return Answer{}, err
	}
	if ans == nil {
		return refuse(schema.PredictUnknownRelease, fmt.Sprintf("stream %q has no prediction release %q", resp.Stream, resp.Release))
	}
	b := &queryBudget{r: r, ps: ps, stream: q.Stream}
	d, err := ans.Answer(kind.Query{Op: q.Op, Rows: q.Rows, Labels: q.Labels}, b, r.noise)
	if err != nil {
		if b.err != nil {
			return Answer{}, fmt.Errorf("accountant: %s: %w", id, b.err)
		}
		return Answer{}, fmt.Errorf("mechanism: %s: %w", id, err)
	}
	resp.WindowStart = d.Window
	switch d.Status {
	case StatusOK:
		if !b.charged {
			return Answer{}, fmt.Errorf("mechanism: %s: answered without a charge", id)
		}
	case kind.QueryInvalid, kind.QueryNoModel, StatusBudgetExhausted:
		if b.charged {
			return Answer{}, fmt.Errorf("mechanism: %s: status %s after the budget accepted its charge", id, d.Status)
		}
		reason := d.Reason
		if reason == "" {
			reason = b.reason
		}
		return refuse(d.Status, reason)
	default:
		return Answer{}, fmt.Errorf("mechanism: %s: status %q", id, d.Status)
	}
	for _, c := range b.noise {
		resp.Epsilon += c.Epsilon
		resp.Delta += c.Delta
	}
	resp.Status = StatusOK
	resp.Label, resp.Value, resp.Interval95 = d.Answer.Label, d.Answer.Value, d.Answer.Interval95
	payload, err := schema.EncodePredictResponse(resp)
	if err != nil {
		return Answer{}, fmt.Errorf("encode response %s: %w", id, err)
	}
	// As a release's, the charge records the mechanisms, not their curve.
	lc := schema.LedgerCharge{ReleaseID: id, Stream: q.Stream, Release: q.Release, WindowStart: d.Window, Period: b.period,
		Status: StatusOK, Charges: b.noise, Payload: payload, At: resp.AnsweredAt,
		RequestID: q.RequestID, RequestOffset: offset}
	setKL(&lc, b.rc)
	lb, err := schema.EncodeLedgerCharge(lc)
	if err != nil {
		return Answer{}, fmt.Errorf("encode ledger charge %s: %w", id, err)
	}
	r.answeredIDs[id] = struct{}{}
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

// queryBudget is kind.QueryBudget for one query: the one place a kind's
// state reaches the accounting of answers. The charge is offered to the
// books of the models' budget period (books.Books.ChargeAnswer): against
// the stream's budget and, with budget.queries, against the account of
// the period's answers alone; both or neither take it. A refused query is
// not counted among the stream's refusals (books.ChargeAnswer says why).
type queryBudget struct {
	r      *Releaser
	ps     *plan.Stream
	stream string
	// After an accepted charge: charged, its period, its noise (the
	// answer's ledger charge) and its receipt (the record's figures);
	// after a refusal, the reason.
	charged bool
	period  int64
	noise   []schema.NoiseComponent
	rc      books.Receipt
	reason  string
	err     error
}

func (b *queryBudget) Charge(period int64, cs []kind.Charge) (bool, error) {
	if b.charged {
		return false, errors.New("an answer charged twice")
	}
	ms := make([]accountant.Mechanism, len(cs))
	noise := make([]schema.NoiseComponent, len(cs))
	for i, c := range cs {
		ms[i], noise[i] = c.Mechanism, c.Noise
	}
	// The stream's query budget (budget.queries): the answers of a
	// period alone must fit in their share, so that queries never starve
	// the releases.
	ps := b.ps
	share := ps.Config.Budget.Queries
	rc, err := b.r.books.ChargeAnswer(books.Key{Stream: b.stream, Period: period}, ps.Budget, share, ms)
	if err != nil {
		b.err = err
		return false, err
	}
	if !rc.Allowed {
		if rc.QueryRefused {
			b.reason = fmt.Sprintf("stream %s's query budget (budget.queries: ε = %g per period) cannot pay this answer's ε = %g", b.stream, share, sumEpsilon(noise))
		} else {
			b.reason = fmt.Sprintf("stream %s's privacy budget (ε = %g) cannot pay this answer's ε = %g", b.stream, ps.Budget.Epsilon, sumEpsilon(noise))
		}
		return false, nil
	}
	b.charged, b.period, b.noise, b.rc = true, period, noise, rc
	return true, nil
}
