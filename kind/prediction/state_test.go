package prediction_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/prediction"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// queryBudget accepts every answer's charge.
type queryBudget struct{ charged int }

func (b *queryBudget) Charge(int64, []kind.Charge) (bool, error) { b.charged++; return true, nil }

// TestStateLiveEqualsRebuilt: a prediction release's State rebuilt from
// its ledger charges (as Window made them, or with the legacy Model field)
// or from its checkpoint (Encode's, or the legacy ReleaseBooks.Model)
// encodes as the live one and answers alike: the same models, the same
// count of answers against max_queries.
func TestStateLiveEqualsRebuilt(t *testing.T) {
	p := build(t, "user", strings.Replace(classRelease, "max_queries: 7", "max_queries: 3", 1))
	newState := func() kind.State {
		st, err := p.NewState(kind.StateContext{Size: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	var ledger []schema.LedgerCharge
	live := newState()
	for w := int64(0); w < 2; w++ {
		var evs []event
		for u := range 60 {
			evs = append(evs, event{unit: fmt.Sprintf("u%d", u), y: float64(u % 3), x: []float64{float64(u%10) + float64(w), 0}})
		}
		var rel schema.Release
		d, err := live.Window(kind.StateWindow{Start: w * 1000, End: w*1000 + 1000}, mustMerge(t, p, []kind.Part{{Stats: accumulate(t, p, evs)}}), nil,
			noise.New(noise.SeededSource(1)), &rel)
		if err != nil || d.Status != kind.StatusOK || len(d.State) == 0 {
			t.Fatalf("window %d: %+v, %v", w, d, err)
		}
		ledger = append(ledger, schema.LedgerCharge{ReleaseID: fmt.Sprintf("s/p/%d", w*1000), Release: "p", WindowStart: w * 1000, Status: d.Status, State: d.State})
	}
	q := kind.Query{Op: kind.OpPredict, Rows: [][]float64{{2, 0}}}
	for i := range 2 {
		d, err := live.(kind.Answerer).Answer(q, &queryBudget{}, noise.New(noise.SeededSource(2)))
		if err != nil || d.Status != kind.StatusOK || d.Window != 1000 {
			t.Fatalf("answer %d: %+v, %v", i, d, err)
		}
		ledger = append(ledger, schema.LedgerCharge{ReleaseID: fmt.Sprintf("s/p/query/%d", i), Release: "p", WindowStart: d.Window, Status: kind.StatusOK, RequestID: fmt.Sprint(i)})
	}
	enc, err := live.Encode()
	if err != nil || len(enc) == 0 {
		t.Fatalf("Encode: %x, %v", enc, err)
	}
	rebuilt := map[string]kind.State{}
	for name, legacy := range map[string]bool{"ledger": false, "legacy ledger": true} {
		st := newState()
		for _, lc := range ledger {
			if legacy {
				if lc = prediction.LegacyCharge(lc); lc.State != nil {
					t.Fatal("LegacyCharge kept the state")
				}
			}
			if err := st.Replay(lc); err != nil {
				t.Fatal(err)
			}
		}
		rebuilt[name] = st
	}
	for name, rb := range map[string]schema.ReleaseBooks{"checkpoint": {Release: "p", State: enc}, "legacy checkpoint": {Release: "p", Model: prediction.LegacyModel(live)}} {
		st := newState()
		if err := st.Decode(rb); err != nil {
			t.Fatal(err)
		}
		rebuilt[name] = st
	}
	rebuilt["live"] = live
	answers := map[string]kind.Answer{}
	for name, st := range rebuilt {
		if got, err := st.Encode(); err != nil || !bytes.Equal(got, enc) {
			t.Errorf("%s: encodes as %x (%v), live %x", name, got, err, enc)
		}
		// One more answer within max_queries = 3, then the limit.
		a1, err1 := st.(kind.Answerer).Answer(q, &queryBudget{}, noise.New(noise.SeededSource(3)))
		a2, err2 := st.(kind.Answerer).Answer(q, &queryBudget{}, noise.New(noise.SeededSource(4)))
		if err1 != nil || err2 != nil || a1.Status != kind.StatusOK || a2.Status != kind.StatusBudgetExhausted || !strings.Contains(a2.Reason, "max_queries") {
			t.Errorf("%s: the third and fourth answers %+v (%v), %+v (%v); want one answered, then the limit", name, a1, err1, a2, err2)
		}
		answers[name] = a1.Answer
	}
	for name, a := range answers {
		if a != answers["live"] {
			t.Errorf("%s: answers %+v from the same noise, live %+v: other models", name, a, answers["live"])
		}
	}
}
