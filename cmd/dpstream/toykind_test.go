package main

// This file is the worked example of ARCHITECTURE.md, "How to add a
// release kind": a whole kind in one file, registered from a test and run
// through `dpstream explain`, `simulate` and `simulate --plot` (which draws
// it by its records' shape, as it has no kind.Renderer), so that the guide
// cannot drift from the interfaces. A real kind is the same code in kind/<name>/, plus
// one line in kind/all.
//
// The toy kind "nonzero" counts the kept events of a window whose field
// is not zero (say, trips with a tip), with discrete Laplace noise.
//
// Guarantee: ε-DP under add/remove of one privacy unit. Sensitivity: the
// accumulate stage keeps at most L events of a unit per window, so adding
// or removing the unit moves the count by at most L; discrete Laplace
// noise of scale t = L/ε on an integer of L1 sensitivity L is ε-DP
// (Canonne, Kamath & Steinke 2020; noise.Sampler.DiscreteLaplace).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// 1. The kind, registered once: its name, its configuration keys (with
// the docs the reference is generated from) and how to read them.

type nonzeroKind struct{}

func init() { kind.Register(nonzeroKind{}) }

func (nonzeroKind) Name() string { return "nonzero" }

func (nonzeroKind) Doc() string {
	return "The number of kept events whose field is not zero, with discrete Laplace noise."
}

func (nonzeroKind) Fields() []config.Field {
	return []config.Field{{Key: "field", Type: "field name", Default: "required", Doc: "the numeric field to test"}}
}

// nonzeroConfig is the kind's own keys (config.Release.Params).
type nonzeroConfig struct{ Field string }

func (nonzeroKind) Decode(p *config.Params, r *config.Release) {
	c := &nonzeroConfig{}
	r.Params = c
	if v, line, ok := p.String("field"); ok {
		c.Field = v
		p.Aggregate(v, line, p.Path("field")) // never the privacy unit
	} else if !p.Has("field") {
		p.Errorf(p.Line(), p.Path("field"), "required for kind nonzero: the field to test")
	}
}

// 2. The plan: calibrated from the configuration alone.

func (nonzeroKind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	c, ok := r.Params.(*nonzeroConfig)
	if !ok {
		return nil, fmt.Errorf("release %q: configuration of type %T", r.Name, r.Params)
	}
	l := float64(st.Contribution.MaxEventsPerWindow)
	comp := noise.Component{Purpose: "count", Noise: noise.DiscreteLaplace, Sensitivity: l, Scale: l / r.Epsilon,
		Quantum: 1, Granularity: 1, Epsilon: r.Epsilon}
	return &nonzeroPlan{field: c.Field, comp: comp}, nil
}

type nonzeroPlan struct {
	field string
	comp  noise.Component
}

func (p *nonzeroPlan) Components() []noise.Component { return []noise.Component{p.comp} }
func (p *nonzeroPlan) Charges() []kind.Charge        { return kind.ComponentCharges(p.Components()) }
func (p *nonzeroPlan) Describe() string              { return "nonzero events of " + p.field }
func (p *nonzeroPlan) Accuracy() string              { return fmt.Sprintf("%.3g", p.comp.Scale) }
func (p *nonzeroPlan) Notes() []string               { return nil }
func (p *nonzeroPlan) Widest(*schema.Release)        {} // one value, as every record is sized

// 3. The statistic: what the accumulate stage keeps per window and
// partition. The count travels in the partial's count field.

func (p *nonzeroPlan) Fields() []kind.Field { return []kind.Field{{Name: p.field}} }
func (p *nonzeroPlan) Norms() kind.Norms    { return kind.Norms{Head: 1} }

func (p *nonzeroPlan) Statistic(at []int) (kind.Statistic, error) {
	if len(at) != 1 {
		return nil, fmt.Errorf("nonzero reads one field, given %d places", len(at))
	}
	return nonzeroStatistic{at: at[0]}, nil
}

type nonzeroStatistic struct{ at int }

func (s nonzeroStatistic) NewWindow() kind.Accumulator { return &nonzeroWindow{at: s.at} }
func (s nonzeroStatistic) Norms() kind.Norms           { return kind.Norms{Head: 1} }

type nonzeroWindow struct {
	at     int
	n      int64
	byUnit []float64 // each unit's counted events, for per-instance DP
}

func (w *nonzeroWindow) Check(v []float64, _ []string) error {
	if w.at >= len(v) || math.IsNaN(v[w.at]) {
		return fmt.Errorf("no value")
	}
	return nil
}

func (w *nonzeroWindow) Add(v []float64, _ []string, unit int, contrib bool) error {
	if v[w.at] == 0 {
		return nil
	}
	w.n++
	if contrib {
		for len(w.byUnit) <= unit {
			w.byUnit = append(w.byUnit, 0)
		}
		w.byUnit[unit]++
	}
	return nil
}

func (w *nonzeroWindow) Stats(rs *schema.ReleaseStats) { rs.Count = w.n }

func (w *nonzeroWindow) AppendNorms(buf []float64, unit, kept int) ([]float64, error) {
	if unit < len(w.byUnit) {
		return append(buf, w.byUnit[unit]), nil
	}
	return append(buf, 0), nil
}

func (w *nonzeroWindow) DropUnits() { w.byUnit = nil }

// 4. Merge and release: the release stage adds the partials, then (if the
// budget allows) draws the noise.

func (p *nonzeroPlan) Merge(parts []kind.Part) (kind.Merged, error) {
	var n int64
	for _, pt := range parts {
		n += pt.Stats.Count
	}
	return n, nil
}

func (p *nonzeroPlan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	z, err := sampler.DiscreteLaplace(p.comp.Scale)
	if err != nil {
		return nil, err
	}
	v := float64(m.(int64) + z)
	rel.Value, rel.Fields = &v, []string{p.field}
	return nil, nil
}

// 5. Per-instance DP: a unit's own count bounds its loss (norm 0).

func (p *nonzeroPlan) PDP() ([]kind.PDPComponent, error) {
	c := kind.PDPComponentOf(p.comp)
	c.Norm = 0
	return []kind.PDPComponent{c}, nil
}

// TestToyKind runs the toy kind through the product's own code: the
// configuration (its key read by its spec, an error in the file:line form),
// explain, simulate, whose releases must count the non-zero events, and
// simulate --plot, which must draw them by their shape.
func TestToyKind(t *testing.T) {
	dir := t.TempDir()
	cfg := `streams:
  - name: trips
    topic: trips.events
    format: json
    privacy_unit: rider
    event_time: ts
    start: 2026-01-01T00:00:00Z
    window: {size: 1m}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 10, delta: 1e-6}
    releases:
      - {name: tipped, kind: nonzero, field: tip, epsilon: 1}
`
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var events bytes.Buffer
	truth := map[int64]int{}
	const t0 = 1767225600000 // 2026-01-01T00:00:00Z
	for i := range 60 {
		ts := int64(t0 + i*5000) // 5 minutes of events
		tip := float64(i % 3)
		fmt.Fprintf(&events, `{"rider": "r%d", "ts": %d, "tip": %g}`+"\n", i, ts, tip)
		if tip != 0 {
			truth[ts/60000*60000]++
		}
	}
	in := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(in, events.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var out, errs bytes.Buffer
	if code := cmdExplain(context.Background(), []string{"-c", path}, &out, &errs); code != 0 {
		t.Fatalf("explain exit %d: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), "nonzero events of tip") {
		t.Errorf("explain does not describe the toy release:\n%s", out.String())
	}

	out.Reset()
	errs.Reset()
	code := cmdSimulate(context.Background(), []string{"-c", path, "--input", in, "--seed", "3", "--pdp"}, &out, &errs)
	if code != 0 {
		t.Fatalf("simulate exit %d: %s", code, errs.String())
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r schema.Release
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("release %q: %v", line, err)
		}
		if r.Kind != "nonzero" || r.Status != "ok" || r.Value == nil {
			t.Fatalf("release %+v, want an ok nonzero release with a value", r)
		}
		// Discrete Laplace of scale 2: |noise| > 40 has probability
		// below 2e-9 per window.
		if got, want := *r.Value, float64(truth[r.WindowStart]); math.Abs(got-want) > 40 {
			t.Errorf("window %d: %v, want %v ± 40", r.WindowStart, got, want)
		}
		if len(r.Noise) != 1 || r.Noise[0].Mechanism != accountant.KindDiscreteLaplace || r.Noise[0].Scale != 2 {
			t.Errorf("window %d: noise %+v, want discrete Laplace of scale L/ε = 2", r.WindowStart, r.Noise)
		}
		seen++
	}
	if seen != len(truth) {
		t.Errorf("%d releases, want one per window with events (%d)", seen, len(truth))
	}
	if !strings.Contains(errs.String(), `"pdp"`) {
		t.Errorf("no per-instance DP summary on stderr:\n%s", errs.String())
	}

	// The toy kind has no kind.Renderer: `simulate --plot` draws each of
	// its releases by the shape of its record (a value, drawn as a
	// count's), with its own header.
	out.Reset()
	errs.Reset()
	code = cmdSimulate(context.Background(), []string{"-c", path, "--input", in, "--seed", "3", "--plot", "--width", "80", "--color=false"}, &out, &errs)
	if code != 0 {
		t.Fatalf("simulate --plot exit %d: %s", code, errs.String())
	}
	if got := strings.Count(out.String(), "tipped (nonzero)"); got != len(truth) {
		t.Errorf("simulate --plot drew %d headers of the toy release, want %d:\n%s", got, len(truth), out.String())
	}
	if got := strings.Count(out.String(), "\nvalue "); got != len(truth) {
		t.Errorf("simulate --plot drew %d values, want one per release (%d):\n%s", got, len(truth), out.String())
	}

	// A missing key is reported by the kind's spec, in the usual form.
	bad := strings.Replace(cfg, ", field: tip", "", 1)
	_, err := config.Parse([]byte(bad), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), "p.yaml:12: streams[0].releases[0].field: required for kind nonzero") {
		t.Errorf("missing field: %v", err)
	}
}
