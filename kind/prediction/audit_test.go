package prediction_test

import (
	"fmt"
	"testing"

	"github.com/dpstream/dpstream/internal/dpaudit"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/prediction"
	"github.com/dpstream/dpstream/mechanism/noise"
	mprediction "github.com/dpstream/dpstream/mechanism/prediction"
)

// TestAuditThroughKind audits the classifier's answers through the whole
// kind (statistic → merge → ModelState → Model → Answer) on neighbouring
// training windows: D has one unit in each of r = 3 shards, each with one
// row labelled "a" (every model votes a: votes (3, 0, 0)); D' adds one unit
// of 3 rows (L = 3) labelled "b" in shard 2, whose least-squares scores
// become a 1/4, b 3/4 (votes (2, 1, 0)). At ε = 1 label b's true privacy
// loss is 0.689, so the lower bound (internal/dpaudit, Clopper–Pearson,
// alpha = 1e-6 over all events and both directions) must not exceed ε; the
// broken variant, votes scaled ×2 (SetClassify), has loss 1.687 there and
// must be caught (bound above ε). Seeds are fixed; a false failure of the
// calibrated case has probability ≤ 1e-6.
func TestAuditThroughKind(t *testing.T) {
	const eps, trials, alpha = 1.0, 150000, 1e-6
	p := build(t, "user", `{name: p, kind: prediction, features: [{field: a, bounds: [0, 1]}], label: {field: c, classes: [a, b, c]}, shards: 3, key: "audit key of sixteen bytes", epsilon: 1}`)
	// One unit per shard, found by its name.
	byShard := map[int]string{}
	for i := 0; len(byShard) < 3; i++ {
		u := fmt.Sprintf("unit%d", i)
		rs := accumulate(t, p, []event{{unit: u, y: 0, x: []float64{0.5}}})
		var k int
		fmt.Sscan(rs.Groups[0].Key, &k)
		if _, ok := byShard[k]; !ok {
			byShard[k] = u
		}
	}
	var d []event
	for k := range 3 {
		d = append(d, event{unit: byShard[k], y: 0, x: []float64{0.5}})
	}
	var extra string
	for i := 0; extra == ""; i++ {
		u := fmt.Sprintf("extra%d", i)
		if rs := accumulate(t, p, []event{{unit: u, x: []float64{0.5}}}); rs.Groups[0].Key == "2" {
			extra = u
		}
	}
	d2 := append(append([]event(nil), d...), event{extra, 1, []float64{0.5}}, event{extra, 1, []float64{0.5}}, event{extra, 1, []float64{0.5}})
	model := func(evs []event) kind.Model {
		st, err := p.ModelState(mustMerge(t, p, []kind.Part{{Stats: accumulate(t, p, evs)}}))
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.Model(st)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m, m2 := model(d), model(d2)
	q := kind.Query{Op: kind.OpPredict, Rows: [][]float64{{0.5}}}
	classes := map[string]float64{"a": 0, "b": 1, "c": 2}
	events := make([]dpaudit.Event, 0, 6)
	for b := range 3 {
		fb := float64(b)
		events = append(events,
			dpaudit.Event{Name: fmt.Sprintf("label = %d", b), In: func(o []float64) bool { return o[0] == fb }},
			dpaudit.Event{Name: fmt.Sprintf("label ≠ %d", b), In: func(o []float64) bool { return o[0] != fb }})
	}
	for i, scale := range []int{1, 2} {
		restore := prediction.SetClassify(func(votes []int, e float64, n noise.Sampler) (int, error) {
			v := make([]int, len(votes))
			for j := range votes {
				v[j] = scale * votes[j]
			}
			return mprediction.Classify(v, e, n)
		})
		nz := noise.New(noise.SeededSource(uint64(500 + i)))
		run := func(m kind.Model) [][]float64 {
			out := make([][]float64, trials)
			for k := range out {
				a, err := m.Answer(q, nz)
				if err != nil {
					t.Fatal(err)
				}
				out[k] = []float64{classes[a.Label]}
			}
			return out
		}
		a, b := run(m), run(m2)
		restore()
		r := dpaudit.LowerBound(a, b, events, 0, alpha)
		t.Logf("votes ×%d: %v", scale, r)
		switch {
		case scale == 1 && r.Epsilon > eps:
			t.Errorf("calibrated: lower bound %v exceeds the claimed ε=%v", r.Epsilon, eps)
		case scale == 2 && r.Epsilon <= eps:
			t.Errorf("votes ×2: the audit did not catch it: lower bound %v ≤ ε=%v", r.Epsilon, eps)
		}
	}
}
