package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/testkit"
)

// TestExplainRegression checks what explain says about regressions: each
// method's kind line and charges, the (ε, δ) posterior sample's δ per
// window, the exact-pDP requirement of OPS, and the warning that model
// selection's utility depends on radius and penalty.
func TestExplainRegression(t *testing.T) {
	mpg, hp := testkit.Var("mpg", 5, 50), testkit.Var("hp", 0, 250)
	path := testkit.NewPipeline(carsStream(20).MaxEvents(2).Releases(
		testkit.Regression("fit", "adassp", mpg, hp).Epsilon(1).Delta(1e-6),
		testkit.Regression("post", "adaops", mpg, hp).Epsilon(1).Delta(1e-6),
		testkit.Regression("sel", "pcls", mpg, hp, testkit.Var("wt", 1, 6)).
			Set("radius", 1.5).Set("penalty", 3).Set("max_support", 2).Epsilon(2).Delta(1e-6),
	)).Metrics("").WriteFile(t, filepath.Join(t.TempDir(), "p.yaml"))
	code, stdout, stderr := cli(t.Context(), "explain", "-c", path)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"regression (adassp) of mpg on hp + intercept",
		"lambda_min Δ2=",
		"posterior_sample (ε=0.5, δ=6.67e-07 as a whole)",
		"model_selection (ε=1)",
		"note: post's posterior sample is (ε, δ)-DP as a whole and uses δ=6.67e-07 of the stream's δ=1e-05 per window",
		"note: post's per-instance DP certificate is exact only with max_events_per_window: 1",
		"note: sel selects a model privately (pcls, radius 1.5, penalty 3): its utility is sensitive to both",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("explain lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "note: fit") {
		t.Errorf("explain has a note for adassp, which needs none:\n%s", stdout)
	}
}
