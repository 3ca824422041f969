package release

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/books"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/prediction"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// fakePredictor makes release n of testPlan answer queries, to test the
// Releaser's query path apart from any learner: its windows release as the
// count does, its model state is the window's exact count, and an answer
// is that count plus discrete Laplace noise of scale 1 (ε = 1 per answer),
// so the tests can tell the models of two windows apart and see the noise.
// It answers rows of two features; limit is its QueryLimit.
type fakePredictor struct {
	kind.Plan
	limit int
}

func (fakePredictor) ModelState(m kind.Merged) ([]int64, error) {
	// The count's merged statistic is a struct whose first field is the
	// count.
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Struct || v.NumField() == 0 || !v.Field(0).CanInt() {
		return nil, fmt.Errorf("fake model of %v: not a count's statistic", m)
	}
	return []int64{7, v.Field(0).Int()}, nil // 7: the version this fake writes
}

func (fakePredictor) Model(state []int64) (kind.Model, error) {
	if len(state) != 2 || state[0] != 7 {
		return nil, errors.New("not a state of this fake")
	}
	return fakeModel(state[1]), nil
}

func (fakePredictor) Check(q kind.Query) error {
	if q.Op != kind.OpPredict || len(q.Rows) != 1 || len(q.Rows[0]) != 2 {
		return fmt.Errorf("%w: want one row of 2 features", kind.ErrQuery)
	}
	return nil
}

func (fakePredictor) QueryCharges(string) []kind.Charge {
	return []kind.Charge{{
		Mechanism: accountant.Mechanism{Kind: string(noise.DiscreteLaplace), Scale: 1, Sensitivity: 1},
		Noise:     schema.NoiseComponent{Purpose: "answer", Mechanism: string(noise.DiscreteLaplace), Sensitivity: 1, Scale: 1, Epsilon: 1},
	}}
}

func (p fakePredictor) QueryLimit() int { return p.limit }

// NewState is kind/prediction's state of the fake's models: the stage's
// query path runs the real model logic (current models, answer counts,
// limit) on the fake's learner.
func (p fakePredictor) NewState(kind.StateContext) (kind.State, error) {
	return prediction.NewState(p), nil
}

type fakeModel int64

func (m fakeModel) Answer(_ kind.Query, s noise.Sampler) (kind.Answer, error) {
	z, err := s.DiscreteLaplace(1)
	if err != nil {
		return kind.Answer{}, err
	}
	return kind.Answer{Value: float64(int64(m) + z), Interval95: 3}, nil
}

// predictPlan is testPlan(budget) with release n a fakePredictor.
func predictPlan(t testing.TB, budget float64, limit int) []plan.Stream {
	t.Helper()
	ps := testPlan(t, budget)
	for i := range ps[0].Releases {
		if ps[0].Releases[i].Config.Name == "n" {
			ps[0].Releases[i].Kind = fakePredictor{Plan: ps[0].Releases[i].Kind, limit: limit}
		}
	}
	return ps
}

func query(id string, row ...float64) schema.PredictRequest {
	return schema.PredictRequest{RequestID: id, Stream: "s", Release: "n", Op: kind.OpPredict, Rows: [][]float64{row}}
}

// TestAnswer walks one release through the statuses of a query: no model
// yet, invalid, answered and charged, answered once per request id,
// refused past the budget without counting as a refusal, unknown release.
func TestAnswer(t *testing.T) {
	ps := predictPlan(t, 4, 0)
	r := NewReleaser(ps, noise.New(noise.SeededSource(5)))
	now := time.UnixMilli(99000)
	var ledger []schema.LedgerCharge

	a, err := r.Answer(query("q0", 1, 2), nil, 0, now)
	if err != nil || a.Response.Status != schema.PredictNoModel || a.Charge != nil {
		t.Fatalf("before any window: %+v, %v; want no_model without a charge", a.Response, err)
	}
	outs, err := r.ReleaseWindow(window(3, 2, 3), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Charge.Release == "n" && (len(o.Charge.State) == 0 || o.Charge.Model != nil) {
			t.Errorf("the prediction window's charge has no model state, or a legacy one")
		}
		if o.Charge.Release == "h" && (len(o.Charge.State) != 0 || o.Charge.Model != nil) {
			t.Errorf("a histogram's charge has a model state")
		}
		ledger = append(ledger, o.Charge)
	}
	a, err = r.Answer(query("q1", 1), nil, 1, now)
	if err != nil || a.Response.Status != schema.PredictInvalid || !strings.Contains(a.Response.Reason, "2 features") || a.Charge != nil {
		t.Fatalf("invalid query: %+v, %v", a.Response, err)
	}
	spent := r.books.Spent(books.Key{Stream: "s"}, 1e-6)
	a, err = r.Answer(query("q2", 1, 2), nil, 2, now)
	if err != nil || a.Response.Status != StatusOK || a.Charge == nil {
		t.Fatalf("answer: %+v, %v", a.Response, err)
	}
	if a.Response.WindowStart != 3*win || a.Response.Epsilon != 1 || a.Charge.RequestOffset != 2 || a.Charge.RequestID != "q2" ||
		a.Charge.ReleaseID != AnswerID("s", "n", "q2") || a.Charge.WindowStart != 3*win {
		t.Errorf("answer %+v with charge %+v", a.Response, *a.Charge)
	}
	if got, err := schema.DecodePredictResponse(a.Charge.Payload); err != nil || got != a.Response {
		t.Errorf("the charge's payload decodes to %+v, %v; want the response %+v", got, err, a.Response)
	}
	if after := r.books.Spent(books.Key{Stream: "s"}, 1e-6); !(after > spent) {
		t.Errorf("an answer charged nothing: spent %v then %v", spent, after)
	}
	ledger = append(ledger, *a.Charge)
	if d, err := r.Answer(query("q2", 1, 2), nil, 3, now); err != nil || !d.Duplicate {
		t.Errorf("a request id answered twice: %+v, %v", d, err)
	}
	if r.RequestNext() != 3 {
		t.Errorf("RequestNext = %d, want 3", r.RequestNext())
	}
	// ε = 4 and two windows' releases... answer until refused.
	refused := false
	refusalsBefore := r.books.Summary(books.Key{Stream: "s"}, 1e-6).Refused
	for i := 0; i < 10 && !refused; i++ {
		a, err := r.Answer(query(fmt.Sprintf("r%d", i), 0, 0), nil, int64(10+i), now)
		if err != nil {
			t.Fatal(err)
		}
		switch a.Response.Status {
		case StatusOK:
			ledger = append(ledger, *a.Charge)
		case StatusBudgetExhausted:
			refused = true
			if a.Charge != nil || a.Response.Epsilon != 0 || !strings.Contains(a.Response.Reason, "budget") {
				t.Errorf("refusal %+v", a.Response)
			}
		default:
			t.Fatalf("status %s: %s", a.Response.Status, a.Response.Reason)
		}
	}
	if !refused {
		t.Fatal("ten answers of ε = 1 within a budget of ε = 4")
	}
	if got := r.books.Summary(books.Key{Stream: "s"}, 1e-6).Refused; got != refusalsBefore {
		t.Errorf("a refused query counted as a refusal (%d → %d): the ledger does not hold it, so a rebuilt account would differ", refusalsBefore, got)
	}
	for _, q := range []schema.PredictRequest{{RequestID: "u", Stream: "s", Release: "h", Rows: [][]float64{{1, 2}}}, {RequestID: "u", Stream: "x", Release: "n", Rows: [][]float64{{1, 2}}}} {
		if a, err := r.Answer(q, nil, 30, now); err != nil || a.Response.Status != schema.PredictUnknownRelease {
			t.Errorf("%s/%s: %+v, %v", q.Stream, q.Release, a.Response, err)
		}
	}
	if a, err := r.Answer(schema.PredictRequest{RequestID: "bad"}, errors.New("garbled"), 31, now); err != nil || a.Response.Status != schema.PredictInvalid || a.Response.Reason != "garbled" {
		t.Errorf("undecodable: %+v, %v", a.Response, err)
	}

	// A restart rebuilds the same state from the ledger: the model (an
	// answer is not no_model), the answered ids, where to read on, and
	// the account.
	r2 := NewReleaser(ps, noise.New(noise.SeededSource(6)))
	for _, lc := range ledger {
		if dup, err := r2.Restore(lc); err != nil || dup {
			t.Fatalf("restore %s: %v %v", lc.ReleaseID, dup, err)
		}
	}
	if r2.RequestNext() != r.RequestNext() {
		t.Errorf("RequestNext after restore %d, live %d", r2.RequestNext(), r.RequestNext())
	}
	st1, _ := r.State("s", 0, now)
	st2, _ := r2.State("s", 0, now)
	if !reflect.DeepEqual(st1, st2) {
		t.Errorf("rebuilt state %+v, live %+v", st2, st1)
	}
	if d, err := r2.Answer(query("q2", 1, 2), nil, 3, now); err != nil || !d.Duplicate {
		t.Errorf("after a restart, an answered request id was decided again: %+v, %v", d, err)
	}
	if a, err := r2.Answer(query("late", 1, 2), nil, 40, now); err != nil || a.Response.Status != StatusBudgetExhausted {
		t.Errorf("after a restart with the budget spent: %+v, %v", a.Response, err)
	}
}

// TestAnswerLatestWindowAndLimit: answers come from the latest released
// window's models, whatever order the windows were restored in, and at
// most max_queries answers come from one window's models; a model state
// the configuration's plan rejects (written under another configuration)
// is not used.
func TestAnswerLatestWindowAndLimit(t *testing.T) {
	ps := predictPlan(t, 100, 2)
	r := NewReleaser(ps, zeroNoise{})
	now := time.UnixMilli(99000)
	var ledger []schema.LedgerCharge
	for _, w := range []Window{window(4, 10), window(2, 20)} {
		outs, err := r.ReleaseWindow(w, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			ledger = append(ledger, o.Charge)
		}
	}
	for i, want := range []string{StatusOK, StatusOK, StatusBudgetExhausted} {
		a, err := r.Answer(query(fmt.Sprint(i), 1, 2), nil, int64(i), now)
		if err != nil || a.Response.Status != want {
			t.Fatalf("answer %d: %+v, %v; want %s", i, a.Response, err, want)
		}
		if want == StatusOK {
			if a.Response.WindowStart != 4*win || a.Response.Value != 10 {
				t.Errorf("answer %d from window %d with value %v; want the latest window's (%d) count 10", i, a.Response.WindowStart, a.Response.Value, 4*win)
			}
			ledger = append(ledger, *a.Charge)
		} else if !strings.Contains(a.Response.Reason, "max_queries") {
			t.Errorf("refusal reason %q", a.Response.Reason)
		}
	}
	// Restored in ledger order, after a foreign model state (written
	// under another configuration) of an earlier window.
	r2 := NewReleaser(ps, zeroNoise{})
	foreign := ledger[0]
	// (A legacy charge, its state in the Model field.)
	foreign.ReleaseID, foreign.WindowStart, foreign.State, foreign.Model = plan.ReleaseID("s", "n", -win), -win, nil, []int64{1, 2, 3}
	if _, err := r2.Restore(foreign); err != nil {
		t.Fatal(err)
	}
	for _, lc := range ledger {
		if dup, err := r2.Restore(lc); err != nil || dup {
			t.Fatalf("restore %s: dup %v, %v", lc.ReleaseID, dup, err)
		}
	}
	a, err := r2.Answer(query("x", 1, 2), nil, 9, now)
	if err != nil || a.Response.Status != StatusBudgetExhausted {
		t.Errorf("after restore, the window's limit: %+v, %v", a.Response, err)
	}
	if a.Response.WindowStart != 4*win {
		t.Errorf("restored current model of window %d, want window %d's", a.Response.WindowStart, 4*win)
	}
}

// TestAnswerQueryBudget: with budget.queries the answers of a period stop
// at their share of the budget, and the releases keep the rest; refusals
// by either budget change neither account, and a restart rebuilds both.
func TestAnswerQueryBudget(t *testing.T) {
	ps := mustPlan(t, `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 6, delta: 1e-6, queries: 2}
    releases:
      - {name: n, kind: count, epsilon: 1}
      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, epsilon: 1}
`)
	ps[0].Releases[0].Kind = fakePredictor{Plan: ps[0].Releases[0].Kind}
	r := NewReleaser(ps, noise.New(noise.SeededSource(9)))
	now := time.UnixMilli(99000)
	var ledger []schema.LedgerCharge
	outs, err := r.ReleaseWindow(window(3, 2, 3), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		ledger = append(ledger, o.Charge)
	}
	var answered int
	for i := 0; i < 5; i++ {
		a, err := r.Answer(query(fmt.Sprint(i), 1, 2), nil, int64(i), now)
		if err != nil {
			t.Fatal(err)
		}
		if a.Response.Status != StatusOK {
			if !strings.Contains(a.Response.Reason, "query budget") {
				t.Errorf("answer %d refused for %q, want the query budget", i, a.Response.Reason)
			}
			continue
		}
		answered++
		ledger = append(ledger, *a.Charge)
	}
	// Two answers of ε = 1 fill the share of 2 (pure ε: basic composition).
	if answered != 2 {
		t.Errorf("%d answers within budget.queries = 2 at ε = 1 each, want 2", answered)
	}
	st, _ := r.State("s", 0, now)
	// Releases n (the fake's window costs the count's ε = 1) and h, then
	// two answers: 4 of the 6, the rest kept for the releases.
	if st.ReleasesCharged != 4 || st.ReleasesRefused != 0 || st.EpsilonRemaining < 1.999 {
		t.Errorf("state %+v: want 4 charges, no refusal, ε 2 left for releases", st)
	}
	r2 := NewReleaser(ps, noise.New(noise.SeededSource(10)))
	for _, lc := range ledger {
		if _, err := r2.Restore(lc); err != nil {
			t.Fatal(err)
		}
	}
	if a, err := r2.Answer(query("after", 1, 2), nil, 9, now); err != nil || !strings.Contains(a.Response.Reason, "query budget") {
		t.Errorf("after a restart the query budget is not rebuilt: %+v, %v", a.Response, err)
	}
	st2, _ := r2.State("s", 0, now)
	if !reflect.DeepEqual(st, st2) {
		t.Errorf("rebuilt state %+v, live %+v", st2, st)
	}
}
