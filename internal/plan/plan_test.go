package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/density"
)

const twoReleases = `
streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1m}
    contribution: {max_events_per_window: 3}
    budget: {epsilon: %s, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 0.5}
      - {name: h, kind: histogram, field: v, bounds: [0, 1], bins: 4, noise: gaussian, epsilon: 0.5, delta: 1e-8}
`

func parse(t *testing.T, eps string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(strings.Replace(twoReleases, "%s", eps, 1)), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBuild checks the mechanisms charged per release and that the number
// of windows the budget lasts is exactly where the accountant's filter
// starts refusing.
func TestBuild(t *testing.T) {
	ps, err := Build(parse(t, "5"))
	if err != nil {
		t.Fatal(err)
	}
	s := ps[0]
	if len(s.Releases) != 2 {
		t.Fatalf("%d releases", len(s.Releases))
	}
	n := s.Releases[0]
	if len(n.Mechanisms) != 1 || n.Mechanisms[0].Kind != "discrete_laplace" || n.Mechanisms[0].Sensitivity != 3 || n.Mechanisms[0].Scale != 3/0.5 {
		t.Errorf("count charges %+v, want discrete Laplace Δ=L=3, t=Δ/ε=6", n.Mechanisms)
	}
	if e, ok := n.Mechanisms[0].PureEpsilon(); !ok || e != 0.5 {
		t.Errorf("count pure ε %v %v, want 0.5", e, ok)
	}
	if len(n.Noise) != 1 || n.Noise[0].Mechanism != n.Mechanisms[0].Kind || n.Noise[0].Scale != n.Mechanisms[0].Scale {
		t.Errorf("recorded noise %+v differs from the charge %+v", n.Noise, n.Mechanisms)
	}
	// Windows: apply whole windows to an account until the filter refuses.
	var all []accountant.Mechanism
	for _, r := range s.Releases {
		all = append(all, r.Mechanisms...)
	}
	var a accountant.Account
	accepted := 0
	for ; accepted < 10000; accepted++ {
		ok, err := a.Try(s.Budget, all)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}
	if s.Windows != accepted {
		t.Errorf("Windows = %d, but the filter accepts %d windows", s.Windows, accepted)
	}
	if want, _ := accountant.Cost(all, s.Budget.Delta); s.PerWindow != want {
		t.Errorf("PerWindow = %v, want %v", s.PerWindow, want)
	}
}

// TestNeverFits: a release whose single charge exceeds the budget is a
// config error naming its line and field.
func TestNeverFits(t *testing.T) {
	_, err := Build(parse(t, "0.4"))
	if err == nil {
		t.Fatal("want an error")
	}
	errs := config.Errors(err)
	if len(errs) != 2 {
		t.Fatalf("errors %v, want one per release", err)
	}
	if errs[0].Line != 12 || errs[0].Field != "streams[0].releases[0].epsilon" || !strings.Contains(errs[0].Msg, "can never fit") {
		t.Errorf("first error %+v", errs[0])
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Error("not a *config.Error")
	}
}

func TestPeriodAndID(t *testing.T) {
	s := Stream{Per: 0}
	if s.Period(123456) != 0 {
		t.Error("lifetime budget: period must be 0")
	}
	s.Per = 60_000_000_000 // 1m in ns (time.Duration)
	for _, tc := range []struct{ start, want int64 }{{0, 0}, {59_999, 0}, {60_000, 1}, {-1, -1}, {-60_000, -1}, {-60_001, -2}} {
		if got := s.Period(tc.start); got != tc.want {
			t.Errorf("Period(%d) = %d, want %d", tc.start, got, tc.want)
		}
	}
	if id := ReleaseID("trips", "n", 1750000000000); id != "trips/n/1750000000000" {
		t.Errorf("ReleaseID %q", id)
	}
}

// TestBuildDensity checks how density releases are planned: terms (fixed,
// or auto from the declared expected_events: ⌈n^{1/(2γ+1)}⌉, worked out by
// hand below), the default grid, and the charges: with Laplace noise two
// discrete Laplace charges whose pure ε add up to at most the release's ε
// (basic composition); with Gaussian noise two discrete Gaussian charges
// whose ρ = Δ²/(2σ²) add up to the calibration's zCDP ρ, so the charge the
// ledger rebuilds from (scale, sensitivity) is the one calibrated.
func TestBuildDensity(t *testing.T) {
	tests := []struct {
		name, release string
		terms, grid   int
		gaussian      bool
	}{
		{"fixed", "{name: d, kind: density, field: v, bounds: [0, 1], terms: 8, epsilon: 0.5}", 8, 257, false},
		// 100000^(1/5) = 10 exactly.
		{"auto", "{name: d, kind: density, field: v, bounds: [0, 1], terms: auto, expected_events: 100000, epsilon: 0.5}", 10, 257, false},
		// 10^6^(1/2) = 1000 terms, so the default grid grows to 1001 points.
		{"auto rough", "{name: d, kind: density, field: v, bounds: [0, 1], terms: auto, expected_events: 1000000, smoothness: 0.5, epsilon: 0.5}", 1000, 1001, false},
		{"gaussian", "{name: d, kind: density, field: v, bounds: [-5, 5], terms: 4, grid_points: 9, noise: gaussian, epsilon: 0.5, delta: 1e-8}", 4, 9, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(strings.Replace(twoReleases, "%s", "5", 1),
				"{name: h, kind: histogram, field: v, bounds: [0, 1], bins: 4, noise: gaussian, epsilon: 0.5, delta: 1e-8}", tc.release, 1)
			c, err := config.Parse([]byte(src), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ps, err := Build(c)
			if err != nil {
				t.Fatal(err)
			}
			d := ps[0].Releases[1]
			dp, ok := d.Kind.(*density.Plan)
			if !ok || dp.Cal.Spec.Terms != tc.terms || dp.Cal.Spec.GridPoints != tc.grid || dp.Cal.Spec.MaxContributions != 3 {
				t.Fatalf("density plan %+v, want %d terms, %d grid points, L = 3", d.Kind, tc.terms, tc.grid)
			}
			if len(d.Mechanisms) != 2 || len(d.Noise) != 2 {
				t.Fatalf("charges %+v, want count and basis sums", d.Mechanisms)
			}
			var pure, rho float64
			for i, m := range d.Mechanisms {
				if d.Noise[i].Scale != m.Scale || d.Noise[i].Sensitivity != m.Sensitivity || d.Noise[i].Mechanism != m.Kind {
					t.Errorf("recorded noise %+v differs from the charge %+v", d.Noise[i], m)
				}
				pure += m.Sensitivity / m.Scale
				rho += m.Sensitivity * m.Sensitivity / (2 * m.Scale * m.Scale)
			}
			if tc.gaussian {
				if d.Mechanisms[0].Kind != "discrete_gaussian" || d.Mechanisms[1].Kind != "discrete_gaussian" {
					t.Errorf("kinds %+v, want discrete_gaussian", d.Mechanisms)
				}
				if dp.Cal.Rho <= 0 || !(rho <= dp.Cal.Rho*(1+1e-12) && rho >= dp.Cal.Rho*(1-1e-12)) {
					t.Errorf("charged ρ %v, calibrated ρ %v", rho, dp.Cal.Rho)
				}
			} else {
				if d.Mechanisms[0].Kind != "discrete_laplace" || d.Mechanisms[1].Kind != "discrete_laplace" {
					t.Errorf("kinds %+v, want discrete_laplace", d.Mechanisms)
				}
				if pure > 0.5*(1+1e-12) {
					t.Errorf("pure ε of the charges %v > release ε 0.5", pure)
				}
			}
			if d.Cost <= 0 || d.Cost > 0.5*(1+1e-9) {
				t.Errorf("cost %v, want in (0, 0.5]", d.Cost)
			}
		})
	}
}

// TestRecordSize checks that a release whose records could not be written
// to Kafka with default broker limits is a config error naming its line,
// and that releases well inside it pass. (The e2e tests write real
// records of the passing shapes' kind through the embedded broker.)
func TestRecordSize(t *testing.T) {
	tests := []struct {
		name, release string
		ok            bool
	}{
		{"2-D histogram with 100000 samples", "{name: d, kind: histogram, fields: [v, w], bounds: [[0, 1], [0, 1]], bins: [100, 100], samples: 100000, epsilon: 0.5}", false},
		{"2-D histogram with 10000 samples", "{name: d, kind: histogram, fields: [v, w], bounds: [[0, 1], [0, 1]], bins: [100, 100], samples: 10000, epsilon: 0.5}", true},
		{"density on the largest grid", "{name: d, kind: density, field: v, bounds: [0, 1], terms: 8, grid_points: 65536, epsilon: 0.5}", false},
		{"density with 40000 grid points", "{name: d, kind: density, field: v, bounds: [0, 1], terms: 8, grid_points: 40000, epsilon: 0.5}", true},
		{"1-D histogram with 100000 samples", "{name: d, kind: histogram, field: v, bounds: [0, 1], bins: 10, samples: 100000, epsilon: 0.5}", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(strings.Replace(twoReleases, "%s", "5", 1),
				"{name: h, kind: histogram, field: v, bounds: [0, 1], bins: 4, noise: gaussian, epsilon: 0.5, delta: 1e-8}", tc.release, 1)
			c, err := config.Parse([]byte(src), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ps, err := Build(c)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "p.yaml:") || !strings.Contains(err.Error(), "releases[1]") ||
				!strings.Contains(err.Error(), "lower samples, grid_points or the number of bins") {
				t.Fatalf("err = %v, want a config error at releases[1] saying what to lower", err)
			}
			if ps != nil {
				t.Errorf("Build returned streams with its error")
			}
		})
	}
}
