package running_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	_ "github.com/dpstream/dpstream/kind/all"
	"github.com/dpstream/dpstream/kind/running"
)

const head = `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1h}
    contribution: {max_events_per_window: 3}
    budget: {epsilon: 100, delta: 1e-5%s}
    releases:
`

// TestConfigErrors checks that every mistake in a continual release is
// reported at its line and field, with what to do: the parse errors by
// config, the calibration ones by plan.Build.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, budget, release, field, want string
	}{
		{"not a continual kind", "", `{name: r, kind: mean, field: v, bounds: [0, 1], noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 4}}`,
			"continual", "only used with kind count, histogram or sum, not mean"},
		{"horizon missing", "", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {method: tree}}`,
			"continual.horizon", "required"},
		{"horizon zero", "", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 0}}`,
			"continual.horizon", "must be in [1, 1048576] windows, got 0"},
		{"unknown method", "", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 4, method: sqr}}`,
			"continual.method", `did you mean "sqrt"`},
		{"unknown key", "", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizn: 4}}`,
			"continual", `unknown field "horizn"`},
		{"laplace", "", `{name: r, kind: count, epsilon: 1, continual: {horizon: 4}}`,
			"", "set noise: gaussian and a delta"},
		{"private keys", "", `{name: r, kind: count, group_by: z, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 4}}`,
			"", "need public keys (keys: [...])"},
		{"count_units", "", `{name: r, kind: count_units, group_by: z, keys: [a], noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 4}}`,
			"continual", "only used with kind count, histogram or sum"},
		{"blt horizon", "", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 10000, method: blt}}`,
			"", "10000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := build(head, tc.budget, tc.release)
			if err == nil {
				t.Fatal("accepted")
			}
			field := "streams[0].releases[0]"
			if tc.field != "" {
				field += "." + tc.field
			}
			for _, e := range config.Errors(err) {
				if e.Field == field && e.Line == 11 && strings.Contains(e.Msg, tc.want) {
					return
				}
			}
			t.Fatalf("no error at line 11 on %s containing %q in:\n%v", field, tc.want, err)
		})
	}
}

// build parses and calibrates a one-release config.
func build(head, budget, release string) error {
	cfg, err := config.Parse([]byte(strings.Replace(head, "%s", budget, 1)+"      - "+release+"\n"), "p.yaml")
	if err != nil {
		return err
	}
	_, err = plan.Build(cfg)
	return err
}

// planOf calibrates a one-release config and returns its plan.
func planOf(t *testing.T, unit, release string) kind.Plan {
	t.Helper()
	src := strings.Replace(strings.Replace(head, "%s", "", 1), "privacy_unit: user", "privacy_unit: "+unit, 1)
	if unit == "event" {
		src = strings.Replace(src, "max_events_per_window: 3", "max_events_per_window: 1", 1)
	}
	cfg, err := config.Parse([]byte(src+"      - "+release+"\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0].Releases[0].Kind
}

// TestShapes checks each kind's continual statistic and its sensitivity:
// a count's L, a histogram's L2 over bins under its cap, a regridded
// sum's ⌈L·K*/r⌉ + 1; and that the charge is one zCDP charge whose
// sensitivity is that L2 times the factor's.
func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		name, release string
		n             int
		l2            float64
	}{
		{"count", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: tree}}`, 1, 3},
		{"histogram", `{name: r, kind: histogram, field: v, bounds: [0, 1], bins: 5, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: tree}}`, 5, 3},
		{"histogram capped", `{name: r, kind: histogram, field: v, bounds: [0, 1], bins: 5, max_per_bin: 2, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: tree}}`, 5, math.Sqrt(5)},
		{"sum", `{name: r, kind: sum, field: v, bounds: [-2, 10], noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: tree}}`, 1, 0},
		// L = 3, L0 = 2, c = 2: a unit adds 2 to one key and 1 to another.
		{"count per key", `{name: r, kind: count, group_by: z, keys: [a, b, c], max_keys: 2, max_per_key: 2, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: tree}}`, 3, math.Sqrt(5)},
		{"count per key, one key", `{name: r, kind: count, group_by: z, keys: [a, b, c], noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: tree}}`, 3, 3},
		{"sum per key", `{name: r, kind: sum, field: v, bounds: [0, 5], group_by: z, keys: [a, b], noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: tree}}`, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planOf(t, "user", tc.release)
			rp, ok := p.(*running.Plan)
			if !ok {
				t.Fatalf("plan of type %T", p)
			}
			shape := rp.Totals.TotalsShape()
			if shape.N != tc.n || tc.l2 > 0 && shape.L2 != tc.l2 {
				t.Errorf("shape %+v, want %d coordinates with L2 %v", shape, tc.n, tc.l2)
			}
			if tc.l2 == 0 && (shape.L2 < 2 || shape.L2 > (1<<12)+1) {
				t.Errorf("sum L2 %v outside [2, 4097]", shape.L2)
			}
			cs := p.Charges()
			if len(cs) != 1 || cs[0].Mechanism.Kind != "zcdp" || !(cs[0].Mechanism.Epsilon > 0) {
				t.Fatalf("charges %+v, want one zcdp charge", cs)
			}
			// tree over 8 windows, a unit in every window: Δ₁² = ‖C·1‖² =
			// Σ over the 15 used blocks of their size²… checked against
			// the charge: sensitivity = L2·Δ₁, ρ = sensitivity²/(2σ²).
			nc := cs[0].Noise
			if rho := nc.Sensitivity * nc.Sensitivity / (2 * nc.Scale * nc.Scale); rho > nc.Epsilon*(1+1e-12) {
				t.Errorf("noise gives ρ = %v, more than the charged %v", rho, nc.Epsilon)
			}
		})
	}
}

// TestEventLevelBeatsUnitLevel: with privacy_unit: event a unit is in one
// window of the horizon (k = 1), so auto picks a factorization and its
// worst running total is far more accurate than summing per-window noise;
// with units in every window auto never does worse than per_window.
func TestEventLevelBeatsUnitLevel(t *testing.T) {
	ev := planOf(t, "event", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 1024}}`).(*running.Plan)
	if m := ev.Method(); m != "sqrt" && m != "blt" {
		t.Errorf("event level, T = 1024: auto chose %s, want sqrt or blt", m)
	}
	pw := planOf(t, "event", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 1024, method: per_window}}`).(*running.Plan)
	if a, b := ev.Charges()[0].Noise, pw.Charges()[0].Noise; a.Epsilon != b.Epsilon {
		t.Errorf("methods charge different ρ: %v and %v", a.Epsilon, b.Epsilon)
	}
	if !strings.Contains(ev.Notes()[0], "(chosen)") || !strings.Contains(ev.Notes()[0], "per_window ±") {
		t.Errorf("explain note %q does not compare the methods", ev.Notes()[0])
	}
	unit := planOf(t, "user", `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 64}}`).(*running.Plan)
	if m := unit.Method(); m != "per_window" {
		t.Errorf("units in every window: auto chose %s, want per_window (the best there)", m)
	}
}
