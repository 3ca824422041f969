package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExplainRegression checks what explain says about regressions: each
// method's kind line and charges, the (ε, δ) posterior sample's δ per
// window, the exact-pDP requirement of OPS, and the warning that model
// selection's utility depends on radius and penalty.
func TestExplainRegression(t *testing.T) {
	const cfg = `
streams:
  - name: cars
    topic: cars.events
    format: json
    privacy_unit: car
    event_time: ts
    window: {size: 1h}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 20, delta: 1e-5}
    releases:
      - {name: fit, kind: regression, method: adassp, features: [{field: hp, bounds: [0, 250]}], target: {field: mpg, bounds: [5, 50]}, epsilon: 1, delta: 1e-6}
      - {name: post, kind: regression, method: adaops, features: [{field: hp, bounds: [0, 250]}], target: {field: mpg, bounds: [5, 50]}, epsilon: 1, delta: 1e-6}
      - {name: sel, kind: regression, method: pcls, features: [{field: hp, bounds: [0, 250]}, {field: wt, bounds: [1, 6]}], target: {field: mpg, bounds: [5, 50]}, radius: 1.5, penalty: 3, max_support: 2, epsilon: 2, delta: 1e-6}
`
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
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
