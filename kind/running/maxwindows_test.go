package running_test

import (
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/mechanism/continual"
)

// planWithK calibrates one continual count of a unit-level stream with
// contribution.max_windows k (0: absent).
func planWithK(t *testing.T, k, release string) *running.Plan {
	t.Helper()
	src := strings.Replace(head, "%s", "", 1)
	if k != "" {
		src = strings.Replace(src, "max_events_per_window: 3}", "max_events_per_window: 3, max_windows: "+k+"}", 1)
	}
	cfg, err := config.Parse([]byte(src+"      - "+release+"\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0].Releases[0].Kind.(*running.Plan)
}

// TestMaxWindowsSetsK: contribution.max_windows k makes the factor's
// sensitivity that of a unit in at most min(k, T) windows (the count's L2
// is L = 3), explain says which bound applies, and a small k lets auto
// pick a factorization where a unit in every window gets per_window.
func TestMaxWindowsSetsK(t *testing.T) {
	const rel = `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 64, method: tree}}`
	for _, tc := range []struct {
		k     string
		wantK int
		note  string
	}{
		{"", 64, "a unit may be in every window"},
		{"1", 1, "a unit in at most 1 window"},
		{"5", 5, "a unit in at most 5 windows"},
		{"64", 64, "a unit may be in every window"},
		{"1000", 64, "a unit may be in every window"},
	} {
		t.Run("k="+tc.k, func(t *testing.T) {
			p := planWithK(t, tc.k, rel)
			mp, err := continual.NewPlan(continual.Tree, 64, tc.wantK, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.Charges()[0].Noise.Sensitivity, 3*mp.Sensitivity(); got != want {
				t.Errorf("sensitivity %v, want %v (L2 3 times the tree's for k = %d)", got, want, tc.wantK)
			}
			if !strings.Contains(p.Notes()[0], "("+tc.note+")") {
				t.Errorf("explain note %q does not say %q", p.Notes()[0], tc.note)
			}
		})
	}
	auto := `{name: r, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 1024}}`
	if m := planWithK(t, "1", auto).Method(); m != "sqrt" && m != "blt" {
		t.Errorf("max_windows 1, T = 1024: auto chose %s, want sqrt or blt", m)
	}
	if m := planWithK(t, "", auto).Method(); m != "per_window" {
		t.Errorf("no max_windows, T = 1024: auto chose %s, want per_window", m)
	}
}
