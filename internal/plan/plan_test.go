package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
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
