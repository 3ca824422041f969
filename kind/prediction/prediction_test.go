package prediction_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	_ "github.com/dpstream/dpstream/kind/all"
	"github.com/dpstream/dpstream/kind/prediction"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

func head(unit string) string {
	return `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: ` + unit + `
    event_time: ts
    window: {size: 1m}
    contribution: {max_events_per_window: 3}
    budget: {epsilon: 100, delta: 1e-5}
    releases:
`
}

// build parses one release and returns its plan.
func build(t *testing.T, unit, release string) *prediction.Plan {
	t.Helper()
	c, err := config.Parse([]byte(head(unit)+"      - "+release+"\n"), "p.yaml")
	if err != nil {
		t.Fatalf("%s: %v", release, err)
	}
	// plan.Build is not used: it computes a window's cost, and this
	// kind's windows have no charge (only its answers do).
	st := &c.Streams[0]
	k, _ := kind.Lookup("prediction")
	p, err := k.Plan(st, st.Releases[0])
	if err != nil {
		t.Fatalf("%s: plan: %v", release, err)
	}
	return p.(*prediction.Plan)
}

const (
	regRelease   = `{name: p, kind: prediction, features: [{field: a, bounds: [0, 10]}, {field: b, bounds: [-1, 1]}], target: {field: y, bounds: [0, 100]}, shards: 5, key: "0123456789abcdef-secret", evaluate: {batch: 4}, epsilon: 1}`
	classRelease = `{name: p, kind: prediction, features: [{field: a, bounds: [0, 10]}, {field: b, bounds: [-1, 1]}], label: {field: c, classes: [no, yes, maybe]}, shards: 5, max_queries: 7, evaluate: {batch: 3}, epsilon: 1}`
)

// TestConfigErrors checks that every mistake is reported at its line and
// field, with what to do.
func TestConfigErrors(t *testing.T) {
	const f = `features: [{field: a, bounds: [0, 1]}]`
	for _, tc := range []struct {
		name, release, field, want string
	}{
		{"no features", `{name: p, kind: prediction, target: {field: y, bounds: [0, 1]}, epsilon: 1}`, "features", "required for kind prediction"},
		{"empty features", `{name: p, kind: prediction, features: [], target: {field: y, bounds: [0, 1]}, epsilon: 1}`, "features", "1 to 64"},
		{"feature without bounds", `{name: p, kind: prediction, features: [{field: a}], target: {field: y, bounds: [0, 1]}, epsilon: 1}`, "features[0].bounds", "required"},
		{"duplicate feature", `{name: p, kind: prediction, features: [{field: a, bounds: [0, 1]}, {field: a, bounds: [0, 2]}], target: {field: y, bounds: [0, 1]}, epsilon: 1}`, "features[1].field", "distinct"},
		{"feature is the unit", `{name: p, kind: prediction, features: [{field: user, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, epsilon: 1}`, "features[0].field", ""},
		{"neither target nor label", `{name: p, kind: prediction, ` + f + `, epsilon: 1}`, "target", "or label"},
		{"both", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, label: {field: c, classes: [x, z]}, epsilon: 1}`, "label", "not both"},
		{"target is a feature", `{name: p, kind: prediction, ` + f + `, target: {field: a, bounds: [0, 1]}, epsilon: 1}`, "target.field", "from itself"},
		{"one class", `{name: p, kind: prediction, ` + f + `, label: {field: c, classes: [x]}, epsilon: 1}`, "label.classes", "2 to 256"},
		{"duplicate class", `{name: p, kind: prediction, ` + f + `, label: {field: c, classes: [x, x]}, epsilon: 1}`, "label.classes[1]", "listed twice"},
		{"label without classes", `{name: p, kind: prediction, ` + f + `, label: {field: c}, epsilon: 1}`, "label.classes", "required"},
		{"one shard", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, shards: 1, epsilon: 1}`, "shards", "2..4096"},
		{"state too large", `{name: p, kind: prediction, features: [{field: a, bounds: [0, 1]}, {field: b, bounds: [0, 1]}, {field: d, bounds: [0, 1]}, {field: e, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, shards: 4096, epsilon: 1}`, "shards", "model state"},
		{"short key", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, key: abc, epsilon: 1}`, "key", "at least 16 bytes"},
		{"negative lambda", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, lambda: -1, epsilon: 1}`, "lambda", ">= 0"},
		{"negative max_queries", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, max_queries: -1, epsilon: 1}`, "max_queries", ">= 0"},
		{"evaluate without batch", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, evaluate: {loss: squared}, epsilon: 1}`, "evaluate.batch", "required"},
		{"zero_one with target", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, evaluate: {batch: 2, loss: zero_one}, epsilon: 1}`, "evaluate.loss", "absolute or squared"},
		{"squared with label", `{name: p, kind: prediction, ` + f + `, label: {field: c, classes: [x, z]}, evaluate: {batch: 2, loss: squared}, epsilon: 1}`, "evaluate.loss", "must be zero_one"},
		{"unknown loss", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, evaluate: {batch: 2, loss: squard}, epsilon: 1}`, "evaluate.loss", `did you mean "squared"`},
		{"gaussian needs delta", `{name: p, kind: prediction, ` + f + `, target: {field: y, bounds: [0, 1]}, noise: gaussian, epsilon: 1}`, "delta", "required with noise gaussian"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(head("user")+"      - "+tc.release+"\n"), "p.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			field := "streams[0].releases[0]." + tc.field
			for _, e := range config.Errors(err) {
				if e.Field == field && e.Line == 11 && strings.Contains(e.Msg, tc.want) {
					return
				}
			}
			t.Fatalf("no error at line 11 on %s containing %q in:\n%v", field, tc.want, err)
		})
	}
}

// TestPlan checks the defaults, the fields read (the privacy unit as a
// key, none at event level), the empty window charge and the query
// charges the accountant composes.
func TestPlan(t *testing.T) {
	p := build(t, "user", regRelease)
	if len(p.Charges()) != 0 || len(p.Components()) != 0 {
		t.Errorf("the window's release is charged: %v", p.Charges())
	}
	if pdp, err := p.PDP(); err != nil || len(pdp) != 0 {
		t.Errorf("PDP = %v, %v", pdp, err)
	}
	fs := p.Fields()
	if len(fs) != 4 || fs[0].Name != "y" || fs[3].Name != "user" || !fs[3].Key {
		t.Errorf("fields %+v", fs)
	}
	for _, op := range []string{kind.OpPredict, kind.OpEvaluate} {
		cs := p.QueryCharges(op)
		if len(cs) != 1 {
			t.Fatalf("%s: charges %v", op, cs)
		}
		if eps, ok := cs[0].Mechanism.PureEpsilon(); !ok || eps > 1+1e-12 {
			t.Errorf("%s: charge %+v is ε=%v, %v; want ≤ 1", op, cs[0].Mechanism, eps, ok)
		}
	}
	c := build(t, "event", classRelease)
	if fs := c.Fields(); len(fs) != 3 || fs[0].Categories["maybe"] != 2 || fs[2].Key {
		t.Errorf("event-level classifier fields %+v", fs)
	}
	cs := c.QueryCharges(kind.OpPredict)
	if len(cs) != 1 || cs[0].Mechanism.Kind != "exponential" || cs[0].Mechanism.Validate() != nil {
		t.Fatalf("classifier charge %+v", cs)
	}
	if eps, ok := cs[0].Mechanism.PureEpsilon(); !ok || eps != 1 {
		t.Errorf("classifier charge ε=%v", eps)
	}
	if c.QueryLimit() != 7 || p.QueryLimit() != 0 {
		t.Errorf("limits %d %d", c.QueryLimit(), p.QueryLimit())
	}
	if !strings.Contains(c.Notes()[0], "public") {
		t.Errorf("no note on the derived key: %v", c.Notes())
	}
	var rel schema.Release
	if _, err := c.Release(mustMerge(t, c, nil), nil, &rel); err != nil {
		t.Fatal(err)
	}
	if rel.Value != nil || !slices.Equal(rel.Categories, []string{"no", "yes", "maybe"}) || rel.Method != "ls_classifier" {
		t.Errorf("release record %+v", rel)
	}
}

func mustMerge(t *testing.T, p *prediction.Plan, parts []kind.Part) kind.Merged {
	t.Helper()
	m, err := p.Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// event is one training row: unit, label or target, features.
type event struct {
	unit string
	y    float64
	x    []float64
}

// accumulate runs events through one window of p's statistic, as the
// accumulate stage would (values in Fields order, the unit as a key).
func accumulate(t testing.TB, p *prediction.Plan, evs []event) schema.ReleaseStats {
	t.Helper()
	n := len(p.Fields())
	at := make([]int, n)
	for i := range at {
		at[i] = i
	}
	st, err := p.Statistic(at)
	if err != nil {
		t.Fatal(err)
	}
	w := st.NewWindow()
	units := map[string]int{}
	for _, e := range evs {
		values := make([]float64, n)
		keys := make([]string, n)
		values[0] = e.y
		copy(values[1:], e.x)
		keys[n-1] = e.unit
		if err := w.Check(values, keys); err != nil {
			t.Fatal(err)
		}
		u, ok := units[e.unit]
		if !ok {
			u = len(units)
			units[e.unit] = u
		}
		if err := w.Add(values, keys, u, true); err != nil {
			t.Fatal(err)
		}
	}
	rs := schema.ReleaseStats{Release: "p", Bins: []int64{}, Terms: []int64{}}
	w.Stats(&rs)
	return rs
}

// groups maps a partial's groups by key.
func groups(rs schema.ReleaseStats) map[string]schema.GroupStats {
	out := map[string]schema.GroupStats{}
	for _, g := range rs.Groups {
		out[g.Key] = g
	}
	return out
}

func trainingEvents(units, rows int) []event {
	var evs []event
	for u := range units {
		for k := range rows {
			a := float64((u*7+k*3)%11) - 0.5
			b := float64((u+k)%5)/2 - 1
			evs = append(evs, event{unit: fmt.Sprintf("u%d", u), y: 5 + 8*a + 20*b + float64(k%3), x: []float64{a, b}})
		}
	}
	return evs
}

// TestStatisticShards checks that a unit's rows land in one shard, and
// that removing a unit changes exactly one shard's statistics, by exactly
// its rows.
func TestStatisticShards(t *testing.T) {
	p := build(t, "user", regRelease)
	evs := trainingEvents(40, 3)
	all := accumulate(t, p, evs)
	if all.Count != int64(len(evs)) {
		t.Fatalf("count %d", all.Count)
	}
	var units int64
	for _, g := range all.Groups {
		units += g.Units
	}
	if units != 40 {
		t.Errorf("units over the shards %d, want 40 (each unit in one shard)", units)
	}
	ga := groups(all)
	for u := range 40 {
		name := fmt.Sprintf("u%d", u)
		var without []event
		var own []event
		for _, e := range evs {
			if e.unit == name {
				own = append(own, e)
			} else {
				without = append(without, e)
			}
		}
		gw := groups(accumulate(t, p, without))
		alone := accumulate(t, p, own)
		if len(alone.Groups) != 1 {
			t.Fatalf("unit %s's rows in %d shards", name, len(alone.Groups))
		}
		changed := 0
		for k, g := range ga {
			h := gw[k]
			if g.Count == h.Count && slices.Equal(g.Sums, h.Sums) {
				continue
			}
			changed++
			if k != alone.Groups[0].Key || g.Count-h.Count != alone.Groups[0].Count {
				t.Errorf("unit %s: shard %s changed, its rows are in shard %s", name, k, alone.Groups[0].Key)
			}
			for i, v := range g.Sums {
				var hv int64
				if h.Sums != nil {
					hv = h.Sums[i]
				}
				if v-hv != alone.Groups[0].Sums[i] {
					t.Fatalf("unit %s: sum %d moved by %d, its own is %d", name, i, v-hv, alone.Groups[0].Sums[i])
				}
			}
		}
		if changed != 1 {
			t.Errorf("removing unit %s changed %d shards, want 1", name, changed)
		}
	}
}

// TestMergeRoundTrip checks that partials merge exactly (a unit split
// across partials gives the statistics of one), that ModelState → Model is
// deterministic, and that bad partials and states are refused.
func TestMergeRoundTrip(t *testing.T) {
	p := build(t, "user", regRelease)
	evs := trainingEvents(30, 2)
	one := mustMerge(t, p, []kind.Part{{Partition: 0, Stats: accumulate(t, p, evs)}})
	two := mustMerge(t, p, []kind.Part{{Partition: 0, Stats: accumulate(t, p, evs[:25])}, {Partition: 1, Stats: accumulate(t, p, evs[25:])}})
	s1, err := p.ModelState(one)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := p.ModelState(two)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s1, s2) {
		t.Fatal("merging two partials is not the statistics of one")
	}
	q := kind.Query{Op: kind.OpPredict, Rows: [][]float64{{3, 0.5}}}
	var answers []float64
	for range 2 {
		m, err := p.Model(slices.Clone(s1))
		if err != nil {
			t.Fatal(err)
		}
		a, err := m.Answer(q, noise.New(noise.SeededSource(7)))
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, a.Value)
		if a.Interval95 <= 0 {
			t.Errorf("interval %v", a.Interval95)
		}
	}
	if answers[0] != answers[1] {
		t.Errorf("the same state and seed answered %v", answers)
	}
	bad := accumulate(t, p, evs)
	bad.Groups[0].Key = "07"
	if _, err := p.Merge([]kind.Part{{Partition: 3, Stats: bad}}); err == nil {
		t.Error("a non-canonical shard key was merged")
	} else if pe := (*kind.PartError)(nil); !errors.As(err, &pe) || pe.Partition != 3 {
		t.Errorf("error %v does not name partition 3", err)
	}
	bad = accumulate(t, p, evs)
	bad.Groups[0].Sums = bad.Groups[0].Sums[1:]
	if _, err := p.Merge([]kind.Part{{Stats: bad}}); err == nil {
		t.Error("a shard of the wrong length was merged")
	}
	if _, err := p.Model(s1[:len(s1)-1]); err == nil {
		t.Error("a short state was accepted")
	}
	c := build(t, "user", classRelease)
	if _, err := c.Model(s1); err == nil {
		t.Error("a regression's state rebuilt a classifier")
	}
	// An empty window still has r models.
	empty, err := p.ModelState(mustMerge(t, p, nil))
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Model(empty)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Answer(q, noise.New(noise.SeededSource(1))); err != nil {
		t.Error(err)
	}
}

// TestCheck checks that malformed queries are refused with ErrQuery.
func TestCheck(t *testing.T) {
	p := build(t, "user", regRelease)
	c := build(t, "user", classRelease)
	row := []float64{1, 0}
	for _, tc := range []struct {
		name string
		p    *prediction.Plan
		q    kind.Query
	}{
		{"unknown op", p, kind.Query{Op: "train", Rows: [][]float64{row}}},
		{"two rows", p, kind.Query{Op: kind.OpPredict, Rows: [][]float64{row, row}}},
		{"short row", p, kind.Query{Op: kind.OpPredict, Rows: [][]float64{{1}}}},
		{"NaN", p, kind.Query{Op: kind.OpPredict, Rows: [][]float64{{1, nan()}}}},
		{"labels on predict", p, kind.Query{Op: kind.OpPredict, Rows: [][]float64{row}, Labels: []string{"1"}}},
		{"batch size", p, kind.Query{Op: kind.OpEvaluate, Rows: [][]float64{row}, Labels: []string{"1"}}},
		{"label not a number", p, kind.Query{Op: kind.OpEvaluate, Rows: [][]float64{row, row, row, row}, Labels: []string{"1", "2", "x", "4"}}},
		{"unknown class", c, kind.Query{Op: kind.OpEvaluate, Rows: [][]float64{row, row, row}, Labels: []string{"no", "yes", "perhaps"}}},
	} {
		if err := tc.p.Check(tc.q); !errors.Is(err, kind.ErrQuery) {
			t.Errorf("%s: %v, want ErrQuery", tc.name, err)
		}
	}
	if err := c.Check(kind.Query{Op: kind.OpEvaluate, Rows: [][]float64{row, row, row}, Labels: []string{"no", "yes", "maybe"}}); err != nil {
		t.Error(err)
	}
}

func nan() float64 { var z float64; return z / z }

// TestClassifierAnswers trains a classifier whose label is a's side of 5
// and checks that a clear query gets its label with a large ε and that
// evaluation measures the models' error.
func TestClassifierAnswers(t *testing.T) {
	p := build(t, "user", strings.Replace(classRelease, "epsilon: 1", "epsilon: 20", 1))
	var evs []event
	for u := range 200 {
		a := float64(u%100) / 10
		y := 0.0
		if a > 5 {
			y = 1
		}
		evs = append(evs, event{unit: fmt.Sprintf("u%d", u), y: y, x: []float64{a, 0}})
	}
	st, err := p.ModelState(mustMerge(t, p, []kind.Part{{Stats: accumulate(t, p, evs)}}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Model(st)
	if err != nil {
		t.Fatal(err)
	}
	nz := noise.New(noise.SeededSource(3))
	for _, tc := range []struct {
		a    float64
		want string
	}{{1, "no"}, {9, "yes"}} {
		a, err := m.Answer(kind.Query{Op: kind.OpPredict, Rows: [][]float64{{tc.a, 0}}}, nz)
		if err != nil {
			t.Fatal(err)
		}
		// ε = 20 and a 5-vote lead: the majority's label with probability
		// ≥ 1 − 2e^{−50}.
		if a.Label != tc.want {
			t.Errorf("a=%v: %q, want %q", tc.a, a.Label, tc.want)
		}
	}
	a, err := m.Answer(kind.Query{Op: kind.OpEvaluate, Rows: [][]float64{{1, 0}, {9, 0}, {9, 0}}, Labels: []string{"no", "yes", "maybe"}}, nz)
	if err != nil {
		t.Fatal(err)
	}
	// True mean 0-1 loss 1/3 (every model misses "maybe"); noise sd
	// √2·1/(5·20) ≈ 0.014, so ±0.2 fails with probability < e^{−14}.
	if a.Value < 1.0/3-0.2 || a.Value > 1.0/3+0.2 {
		t.Errorf("evaluation %v, want about 1/3 (±%v)", a.Value, a.Interval95)
	}
}

// TestModelStateOfAnotherConfiguration: a ledger's model state written
// under another configuration with the same dimensions (features swapped,
// other bounds, classes renamed or reordered, another sharding key) is
// refused, as the release stage expects (restoreModel): its integers mean
// other columns, so its models would answer silently wrong (a swapped
// feature read as the other, a class's votes given to another name).
func TestModelStateOfAnotherConfiguration(t *testing.T) {
	state := func(p *prediction.Plan, evs []event) []int64 {
		t.Helper()
		s, err := p.ModelState(mustMerge(t, p, []kind.Part{{Stats: accumulate(t, p, evs)}}))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	reg := build(t, "user", regRelease)
	regState := state(reg, trainingEvents(20, 2))
	var labelled []event
	for _, e := range trainingEvents(20, 2) {
		e.y = float64((int(e.y)%3 + 3) % 3)
		labelled = append(labelled, e)
	}
	cls := build(t, "user", classRelease)
	clsState := state(cls, labelled)
	if _, err := reg.Model(regState); err != nil {
		t.Fatalf("its own state: %v", err)
	}
	if _, err := cls.Model(clsState); err != nil {
		t.Fatalf("its own state: %v", err)
	}
	for _, tc := range []struct {
		name, from, to string
	}{
		{"features swapped", regRelease, strings.Replace(regRelease, `features: [{field: a, bounds: [0, 10]}, {field: b, bounds: [-1, 1]}]`, `features: [{field: b, bounds: [-1, 1]}, {field: a, bounds: [0, 10]}]`, 1)},
		{"feature bounds", regRelease, strings.Replace(regRelease, `bounds: [0, 10]`, `bounds: [0, 1000]`, 1)},
		{"target bounds", regRelease, strings.Replace(regRelease, `bounds: [0, 100]`, `bounds: [-100, 100]`, 1)},
		{"target renamed", regRelease, strings.Replace(regRelease, `target: {field: y`, `target: {field: z`, 1)},
		{"sharding key", regRelease, strings.Replace(regRelease, `0123456789abcdef-secret`, `0123456789abcdef-rotated`, 1)},
		{"classes reordered", classRelease, strings.Replace(classRelease, `[no, yes, maybe]`, `[yes, no, maybe]`, 1)},
		{"classes renamed", classRelease, strings.Replace(classRelease, `[no, yes, maybe]`, `[no, yes, perhaps]`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.to == tc.from {
				t.Fatal("the test's replacement did not apply")
			}
			s := regState
			if tc.from == classRelease {
				s = clsState
			}
			if _, err := build(t, "user", tc.to).Model(slices.Clone(s)); err == nil {
				t.Error("a state of another configuration was accepted")
			}
		})
	}
	// Answers' limits and noise do not change what the statistics mean:
	// such a state is still the release's.
	for _, to := range []string{
		strings.Replace(regRelease, `epsilon: 1`, `epsilon: 2`, 1),
		strings.Replace(regRelease, `evaluate: {batch: 4}`, `evaluate: {batch: 8}`, 1),
	} {
		if _, err := build(t, "user", to).Model(slices.Clone(regState)); err != nil {
			t.Errorf("%s: %v", to, err)
		}
	}
}
