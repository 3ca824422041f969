package kind_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/density"
	"github.com/dpstream/dpstream/kind/histogram"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/kind/prediction"
	"github.com/dpstream/dpstream/kind/quantiles"
	"github.com/dpstream/dpstream/kind/randomizedresponse"
	"github.com/dpstream/dpstream/kind/regression"
	"github.com/dpstream/dpstream/kind/sum"
	"github.com/dpstream/dpstream/schema"
)

// everyKind has a release of every kind, and every variant that changes a
// statistic's shape or its pDP rules: histograms over one, two and three
// fields, capped and auto-binned; density with auto terms; both noises;
// every regression method. L = 3.
const everyKind = `
streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1m}
    contribution: {max_events_per_window: 3}
    budget: {epsilon: 1000, delta: 1e-5}
    releases:
      - {name: n, kind: count, epsilon: 0.5}
      - {name: ng, kind: count, noise: gaussian, delta: 1e-8, epsilon: 0.5}
      - {name: total, kind: sum, field: v, bounds: [-3, 12], epsilon: 0.5}
      - {name: totalg, kind: sum, field: v, bounds: [-3, 12], noise: gaussian, delta: 1e-8, epsilon: 1e-3}
      - {name: avg, kind: mean, field: v, bounds: [0, 10], epsilon: 0.5}
      - {name: h1, kind: histogram, field: v, bounds: [0, 10], bins: 5, max_per_bin: 2, epsilon: 0.5}
      - {name: h2, kind: histogram, fields: [v, w], bounds: [[0, 10], [0, 4]], bins: [2, 4], noise: gaussian, delta: 1e-8, epsilon: 0.5}
      - {name: h3, kind: histogram, fields: [v, w, x], bounds: [[0, 10], [0, 4], [0, 1]], bins: auto, expected_events: 200, epsilon: 0.5}
      - {name: d, kind: density, field: v, bounds: [0, 10], terms: 5, epsilon: 0.5}
      - {name: dg, kind: density, field: w, bounds: [0, 4], terms: auto, expected_events: 300, noise: gaussian, delta: 1e-8, epsilon: 0.5}
      - {name: nk, kind: count, group_by: c, keys: [a, b], epsilon: 0.5}
      - {name: nsel, kind: count, group_by: c, max_keys: 2, max_per_key: 2, epsilon: 0.5, delta: 1e-6}
      - {name: sk, kind: sum, field: v, bounds: [-3, 12], group_by: c, keys: [a], noise: gaussian, delta: 1e-8, epsilon: 0.5}
      - {name: mk, kind: mean, field: v, bounds: [0, 10], group_by: c, epsilon: 1, delta: 1e-6}
      - {name: u, kind: count_units, epsilon: 0.5}
      - {name: uk, kind: count_units, group_by: c, max_keys: 2, epsilon: 0.5, delta: 1e-6}
      - {name: sel, kind: select_keys, group_by: c, epsilon: 0.5, delta: 1e-6}
      - {name: var, kind: variance, field: v, bounds: [0, 10], epsilon: 0.5}
      - {name: vark, kind: variance, field: v, bounds: [0, 10], group_by: c, noise: gaussian, epsilon: 0.5, delta: 1e-6}
      - {name: q, kind: quantiles, field: v, bounds: [0, 10], epsilon: 0.5}
      - {name: qk, kind: quantiles, field: v, bounds: [0, 10], ranks: [0.5], branching: 4, height: 3, group_by: c, max_keys: 2, epsilon: 0.5, delta: 1e-6}
      - {name: rr, kind: randomized_response, field: c, categories: [a, b, c], epsilon_local: 2, max_per_bin: 1, epsilon: 0.5}
      - name: ssp
        kind: regression
        method: ssp
        lambda: 0.5
        features: [{field: v, bounds: [0, 10]}, {field: w, bounds: [0, 4]}]
        target: {field: y, bounds: [-2, 8]}
        epsilon: 1
        delta: 1e-7
      - name: adassp
        kind: regression
        method: adassp
        features: [{field: v, bounds: [0, 10]}]
        target: {field: y, bounds: [-2, 8]}
        epsilon: 1
        delta: 1e-7
      - name: ops
        kind: regression
        method: ops
        lambda: 1
        features: [{field: w, bounds: [0, 4]}]
        target: {field: y, bounds: [-2, 8]}
        epsilon: 1
        delta: 1e-7
      - name: adaops
        kind: regression
        method: adaops
        rho: 0.1
        features: [{field: v, bounds: [0, 10]}, {field: x, bounds: [0, 1]}]
        target: {field: y, bounds: [-2, 8]}
        epsilon: 1
        delta: 1e-7
      - name: pcls
        kind: regression
        method: pcls
        radius: 1
        penalty: 2
        max_support: 1
        features: [{field: v, bounds: [0, 10]}, {field: w, bounds: [0, 4]}]
        target: {field: y, bounds: [-2, 8]}
        epsilon: 2
        delta: 1e-7
      - name: predict_value
        kind: prediction
        features: [{field: v, bounds: [0, 10]}, {field: w, bounds: [0, 4]}]
        target: {field: y, bounds: [-2, 8]}
        shards: 3
        evaluate: {batch: 2}
        epsilon: 1
      - name: predict_label
        kind: prediction
        features: [{field: v, bounds: [0, 10]}]
        label: {field: c, classes: [a, b, c]}
        shards: 4
        epsilon: 1
`

// planned returns the calibrated releases of everyKind.
func planned(t *testing.T) []plan.Release {
	t.Helper()
	c, err := config.Parse([]byte(everyKind), "every.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(c)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0].Releases
}

// groupFields are the fields a per-key release reads: its key field (none
// without group_by) and its value field.
func groupFields(c *grouped.Config) []string {
	var out []string
	if c.GroupBy != "" {
		out = append(out, c.GroupBy)
	}
	if c.Value.Field != "" {
		out = append(out, c.Value.Field)
	}
	return out
}

// keysOf returns an event's keys for fields placed at at: one of five
// keys for key fields, "" elsewhere.
func keysOf(r *rand.Rand, fields []kind.Field, at []int, n int) []string {
	keys := make([]string, n)
	for j, f := range fields {
		if f.Key {
			keys[at[j]] = string(rune('a' + r.IntN(5)))
		}
	}
	return keys
}

// valuesOf returns an event's values for fields placed at at: category
// indices for categorical fields, numbers in and around [−3, 13] else.
func valuesOf(r *rand.Rand, fields []kind.Field, at []int, n int) []float64 {
	vals := make([]float64, n)
	for j, f := range fields {
		if f.Categories != nil {
			vals[at[j]] = float64(r.IntN(len(f.Categories)))
			continue
		}
		vals[at[j]] = -3 + 16*r.Float64()
	}
	return vals
}

// TestStatisticsFitTheirPlans checks, for every kind and variant, what the
// stages rely on across the seam: a plan's statistic has the plan's norms
// layout; its pDP rules cover every charge and read norms the layout has;
// the fields it reads are the configured ones, categorical exactly where
// the kind maps categories; partials of an empty window and of a window
// with events have the shapes the plan merges (two partitions'); and each
// unit's contribution has the layout's length, with the row exactly when
// the unit has one event and the kind has rows.
func TestStatisticsFitTheirPlans(t *testing.T) {
	kinds := map[string]bool{}
	for _, pr := range planned(t) {
		kinds[pr.Config.Kind] = true
		t.Run(pr.Config.Name, func(t *testing.T) {
			p := pr.Kind
			fields := p.Fields()
			var names []string
			for _, f := range fields {
				names = append(names, f.Name)
				if (f.Categories != nil) != (pr.Config.Kind == "randomized_response" || (pr.Config.Kind == "prediction" && f.Name == "c")) {
					t.Errorf("field %s categorical: %v", f.Name, f.Categories != nil)
				}
			}
			var want []string
			switch c := pr.Config.Params.(type) {
			case *grouped.Config:
				want = groupFields(c)
			case *quantiles.Config:
				want = groupFields(&c.Config)
			case *histogram.Config:
				want = c.Fields
			case *regression.Config:
				want = append([]string{c.Target}, c.Features...)
			case *sum.Config: // also mean.Config
				want = []string{c.Field}
			case *density.Config:
				want = []string{c.Field}
			case *randomizedresponse.Config:
				want = []string{c.Field}
			case *prediction.Config:
				want = append(append([]string{c.Target + c.Label}, c.Features...), "user")
			}
			if !slices.Equal(names, want) {
				t.Errorf("fields %v, want %v", names, want)
			}
			// Place the fields as the accumulate stage does, after some
			// other release's.
			at := make([]int, len(fields))
			for j := range at {
				at[j] = 2 + 3*j
			}
			st, err := p.Statistic(at)
			if err != nil {
				t.Fatal(err)
			}
			layout := p.Norms()
			worstCase := true // every pDP component is charged at its worst case
			if comps, err := p.PDP(); err == nil {
				for _, c := range comps {
					worstCase = worstCase && c.Norm == -1
				}
			}
			if st.Norms() != layout || (layout.Head < 1 && !worstCase) {
				t.Fatalf("statistic norms %+v, plan norms %+v", st.Norms(), layout)
			}
			comps, err := p.PDP()
			if err != nil {
				t.Fatal(err)
			}
			if len(comps) != len(p.Charges()) {
				t.Errorf("%d pDP components for %d charges", len(comps), len(p.Charges()))
			}
			for i, c := range comps {
				if c.Norm >= layout.Head || c.Norm < -1 || c.Purpose != p.Charges()[i].Noise.Purpose {
					t.Errorf("component %d %+v: norm outside [-1, %d) or not the charge's purpose %s", i, c, layout.Head, p.Charges()[i].Noise.Purpose)
				}
				if c.Exact != kind.ExactNone && layout.Row == 0 {
					t.Errorf("component %s is exact for single rows, which the layout does not carry", c.Purpose)
				}
			}

			r := rand.New(rand.NewPCG(1, 2))
			n := 2 + 3*len(fields)
			empty := st.NewWindow()
			full := st.NewWindow()
			units := map[int]int{} // kept events per unit index
			for e := range 40 {
				vals, keys := valuesOf(r, fields, at, n), keysOf(r, fields, at, n)
				if err := full.Check(vals, keys); err != nil {
					t.Fatalf("event %d %v: %v", e, vals, err)
				}
				u := r.IntN(8)
				if e < 8 {
					u = e // every unit index appears in order first
				}
				if err := full.Add(vals, keys, u, true); err != nil {
					t.Fatalf("event %d: %v", e, err)
				}
				units[u]++
			}
			var parts []kind.Part
			for i, w := range []kind.Accumulator{empty, full} {
				rs := schema.ReleaseStats{Release: pr.Config.Name, Bins: []int64{}, Terms: []int64{}}
				w.Stats(&rs)
				parts = append(parts, kind.Part{Partition: int32(i), Stats: rs})
			}
			// A per-key statistic counts a unit's events in its first keys
			// only, and count_units counts units.
			_, perKey := pr.Config.Params.(*grouped.Config)
			if _, q := pr.Config.Params.(*quantiles.Config); q {
				perKey = true
			}
			if parts[1].Stats.Count != 40 && !perKey && pr.Config.Kind != "count_units" {
				t.Errorf("count %d, want 40", parts[1].Stats.Count)
			}
			if _, err := p.Merge(parts); err != nil {
				t.Errorf("merge of an empty and a full window: %v", err)
			}
			for u, kept := range units {
				norms, err := full.AppendNorms(nil, u, kept)
				if err != nil {
					t.Fatalf("unit %d: %v", u, err)
				}
				wantLen := layout.Head
				if kept == 1 {
					wantLen += layout.Row
				}
				if len(norms) != wantLen {
					t.Errorf("unit %d with %d events: %d norms, want %d", u, kept, len(norms), wantLen)
				}
				if _, ok := kind.UnitNorms(norms).Row(layout); ok != (kept == 1 && layout.Row > 0) {
					t.Errorf("unit %d with %d events: row present %v", u, kept, ok)
				}
			}
			// A unit the accumulator never saw is a bug, not a zero (a
			// count keeps nothing per unit: k comes from the stage).
			if _, err := full.AppendNorms(nil, 99, 1); err == nil && pr.Config.Kind != "count" {
				t.Error("norms of a unit never added")
			}
		})
	}
	for _, k := range kind.Names() {
		if !kinds[k] {
			t.Errorf("kind %s is not in the test's configuration", k)
		}
	}
}

// TestUnitNormsRow: a contribution carries a row exactly when it has the
// layout's head and row, for a layout with rows.
func TestUnitNormsRow(t *testing.T) {
	l := kind.Norms{Head: 3, Row: 3}
	for _, tc := range []struct {
		name string
		n    kind.UnitNorms
		l    kind.Norms
		row  []float64
		ok   bool
	}{
		{"one row", kind.UnitNorms{1, 2, 3, 0.5, -0.25, 1}, l, []float64{0.5, -0.25, 1}, true},
		{"several rows", kind.UnitNorms{1, 2, 3}, l, nil, false},
		{"wrong length", kind.UnitNorms{1, 2, 3, 0.5, -0.25}, l, nil, false},
		{"a kind without rows", kind.UnitNorms{1, 2}, kind.Norms{Head: 2}, nil, false},
	} {
		row, ok := tc.n.Row(tc.l)
		if ok != tc.ok || !slices.Equal(row, tc.row) {
			t.Errorf("%s: Row = %v, %v; want %v, %v", tc.name, row, ok, tc.row, tc.ok)
		}
	}
}
