package grouped_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	_ "github.com/dpstream/dpstream/kind/all"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/mechanism/selection"
	"github.com/dpstream/dpstream/stages/accumulate"
)

const head = `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1m}
    contribution: {max_events_per_window: 3}
    budget: {epsilon: 100, delta: 1e-5}
    releases:
`

// TestConfigErrors checks that every mistake in the group-by keys is
// reported at its line, with what to do.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, release, field, want string
	}{
		{"keys without group_by", `{name: r, kind: count, max_keys: 2, epsilon: 1}`, "max_keys", "only used with group_by"},
		{"select_keys needs group_by", `{name: r, kind: select_keys, epsilon: 1, delta: 1e-6}`, "group_by", "required for kind select_keys"},
		{"max_keys zero", `{name: r, kind: count, group_by: z, max_keys: 0, epsilon: 1, delta: 1e-6}`, "max_keys", "at least 1"},
		{"max_per_key over L", `{name: r, kind: count, group_by: z, max_per_key: 4, epsilon: 1, delta: 1e-6}`, "max_per_key", "more than contribution.max_events_per_window 3"},
		{"selection needs delta", `{name: r, kind: count, group_by: z, epsilon: 1}`, "delta", "the δ of private key selection"},
		{"selection epsilon too large", `{name: r, kind: count, group_by: z, selection: {epsilon: 1}, epsilon: 1, delta: 1e-6}`, "selection.epsilon", "not less than the release's epsilon"},
		{"laplace selection delta", `{name: r, kind: count, group_by: z, selection: {delta: 1e-7}, epsilon: 1, delta: 1e-6}`, "selection.delta", "leave it out"},
		{"gaussian selection delta", `{name: r, kind: count, group_by: z, noise: gaussian, selection: {delta: 1e-6}, epsilon: 1, delta: 1e-6}`, "selection.delta", "not less than the release's delta"},
		{"unknown method", `{name: r, kind: count, group_by: z, selection: {method: optimum}, epsilon: 1, delta: 1e-6}`, "selection.method", `did you mean "optimal"`},
		{"unknown selection key", `{name: r, kind: count, group_by: z, selection: {methd: laplace}, epsilon: 1, delta: 1e-6}`, "selection", `unknown field "methd" (did you mean "method"?)`},
		{"selection with keys", `{name: r, kind: count, group_by: z, keys: [a], selection: {method: laplace}, epsilon: 1}`, "selection", "public keys need no selection"},
		{"empty keys", `{name: r, kind: count, group_by: z, keys: [], epsilon: 1}`, "keys", "at least one key"},
		{"duplicate keys", `{name: r, kind: count, group_by: z, keys: [a, 7, a], epsilon: 1}`, "keys[2]", "listed twice"},
		{"a number is its canonical key", `{name: r, kind: count, group_by: z, keys: [7, "7"], epsilon: 1}`, "keys[1]", "listed twice"},
		{"select_keys with keys", `{name: r, kind: select_keys, group_by: z, keys: [a], epsilon: 1, delta: 1e-6}`, "keys", "only used with kind"},
		{"select_keys noise", `{name: r, kind: select_keys, group_by: z, noise: gaussian, epsilon: 1, delta: 1e-6}`, "noise", "selection.method"},
		{"count_units max_per_key", `{name: r, kind: count_units, group_by: z, max_per_key: 1, epsilon: 1, delta: 1e-6}`, "max_per_key", "a unit counts once in a key"},
		{"group_by the unit", `{name: r, kind: count, group_by: user, epsilon: 1, delta: 1e-6}`, "group_by", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(head+"      - "+tc.release+"\n"), "p.yaml")
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

// TestConfigDefaults checks the defaults and the budget split.
func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		release       string
		method        selection.Method
		selEps, selDe float64
		keys          []string
	}{
		{`{name: r, kind: count, group_by: z, epsilon: 1, delta: 1e-6}`, selection.Auto, 0.5, 1e-6, nil},
		{`{name: r, kind: count, group_by: z, noise: gaussian, epsilon: 1, delta: 1e-6}`, selection.Auto, 0.5, 5e-7, nil},
		{`{name: r, kind: sum, field: v, bounds: [0, 1], group_by: z, selection: {method: laplace, epsilon: 0.2}, epsilon: 1, delta: 1e-6}`, selection.Laplace, 0.2, 1e-6, nil},
		{`{name: r, kind: select_keys, group_by: z, selection: {method: gaussian}, epsilon: 1, delta: 1e-6}`, selection.Gaussian, 1, 1e-6, nil},
		{`{name: r, kind: count, group_by: z, keys: [b, 7.0, a], epsilon: 1}`, "", 0, 0, []string{"7", "a", "b"}},
	} {
		c, err := config.Parse([]byte(head+"      - "+tc.release+"\n"), "p.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.release, err)
		}
		g := c.Streams[0].Releases[0].Params.(*grouped.Config)
		if g.Selection.Method != tc.method || g.Selection.Epsilon != tc.selEps || g.Selection.Delta != tc.selDe || g.MaxKeys != 1 ||
			strings.Join(g.Keys, ",") != strings.Join(tc.keys, ",") {
			t.Errorf("%s: %+v", tc.release, g)
		}
		if _, err := plan.Build(c); err != nil {
			t.Errorf("%s: plan: %v", tc.release, err)
		}
	}
}

// TestPublicKeysMatchEvents checks that a public key written as a number
// in YAML is the key the accumulate stage gives an event whose field holds
// that number (from JSON, as a long, as a float): otherwise the key is
// released every window as noise only, whatever the data. Integers are
// read exactly, not through float64, so a 64-bit identifier keeps every
// digit.
func TestPublicKeysMatchEvents(t *testing.T) {
	for _, tc := range []struct {
		yaml   string
		events []any
	}{
		{"7", []any{int64(7), 7.0, json.Number("7"), json.Number("7.0"), float32(7)}},
		{"7.0", []any{int64(7), json.Number("7e0")}},
		{"1e3", []any{int64(1000), json.Number("1000")}},
		{"0.1", []any{0.1, json.Number("0.1"), float32(0.1)}},
		{"-2.5", []any{-2.5, float32(-2.5)}},
		{"9007199254740993", []any{int64(9007199254740993), json.Number("9007199254740993")}},
		{"-9223372036854775808", []any{int64(math.MinInt64), json.Number("-9223372036854775808")}},
		{"9223372036854775807", []any{int64(math.MaxInt64), json.Number("9223372036854775807")}},
		{"1e21", []any{1e21, json.Number("1e21")}},
		{"12345678901234567890", []any{json.Number("12345678901234567890")}},
	} {
		c, err := config.Parse([]byte(head+"      - {name: r, kind: count, group_by: z, keys: ["+tc.yaml+"], epsilon: 1}\n"), "p.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		keys := c.Streams[0].Releases[0].Params.(*grouped.Config).Keys
		for _, ev := range tc.events {
			k, ok := accumulate.KeyString(ev)
			if !ok || len(keys) != 1 || keys[0] != k {
				t.Errorf("public key %s is %q; an event's %T %v is the key %q (%v)", tc.yaml, keys, ev, ev, k, ok)
			}
		}
	}
}

// TestHugeMaxKeys checks that a max_keys so large that max_keys ·
// max_per_key wraps around int64 still calibrates to L events: the
// statistic then bounds a unit by L and max_per_key alone.
func TestHugeMaxKeys(t *testing.T) {
	// 6148914691236517206 · 3 = 2^64 + 2.
	c, err := config.Parse([]byte(head+"      - {name: r, kind: count, group_by: z, max_keys: 6148914691236517206, max_per_key: 3, keys: [a], epsilon: 1}\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(c)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0].Releases[0].Kind.(*grouped.Plan)
	if s := p.Cal.Components[0].Sensitivity; s != 3 {
		t.Fatalf("sensitivity %v, want L = 3", s)
	}
}
