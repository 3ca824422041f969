package config_test

import (
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
)

// continualRelease is a valid continual count over horizons of h windows.
func continualRelease(name, h string) string {
	return "      - {name: " + name + ", kind: count, noise: gaussian, epsilon: 0.5, delta: 1e-8, continual: {horizon: " + h + "}}\n"
}

// TestMaxWindows checks contribution.max_windows: read when valid, and
// every misuse reported at its line and field.
func TestMaxWindows(t *testing.T) {
	withK := func(k string) string {
		return strings.Replace(minimal, "max_events_per_window: 4}", "max_events_per_window: 4, max_windows: "+k+"}", 1)
	}
	t.Run("valid", func(t *testing.T) {
		src := strings.Replace(withK("3"), minimalRelease, continualRelease("a", "24")+continualRelease("b", "24")+minimalRelease, 1)
		cfg, err := config.Parse([]byte(src), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s := cfg.Streams[0]
		if s.Contribution.MaxWindows != 3 || s.Horizon() != 24 {
			t.Errorf("max_windows %d, horizon %d; want 3 and 24", s.Contribution.MaxWindows, s.Horizon())
		}
	})
	t.Run("absent", func(t *testing.T) {
		cfg, err := config.Parse([]byte(strings.Replace(minimal, minimalRelease, continualRelease("a", "24"), 1)), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if k := cfg.Streams[0].Contribution.MaxWindows; k != 0 {
			t.Errorf("max_windows %d without the key, want 0", k)
		}
	})
	for _, tc := range []struct {
		name string
		src  string
		want []want
	}{
		{"zero", strings.Replace(withK("0"), minimalRelease, continualRelease("a", "24"), 1),
			[]want{{7, "streams[0].contribution.max_windows", "must be in [1, 1048576] windows, got 0"}}},
		{"not an integer", strings.Replace(withK("1.5"), minimalRelease, continualRelease("a", "24"), 1),
			[]want{{7, "streams[0].contribution.max_windows", "must be an integer, got 1.5"}}},
		{"no continual release", withK("2"),
			[]want{{7, "streams[0].contribution.max_windows", "only used with continual releases"}}},
		{"horizons differ", strings.Replace(withK("2"), minimalRelease, continualRelease("a", "24")+minimalRelease+continualRelease("b", "12"), 1),
			[]want{{12, "streams[0].releases[2].continual.horizon", "is 12 windows, release a's (line 10) is 24: contribution.max_windows (line 7)"}}},
		{"event level", strings.Replace(strings.Replace(withK("2"), "privacy_unit: rider_id", "privacy_unit: event", 1), minimalRelease, continualRelease("a", "24"), 1),
			[]want{{7, "streams[0].contribution.max_windows", "is not used with privacy_unit: event"}}},
		{"misplaced", strings.Replace(strings.Replace(minimal, minimalRelease, continualRelease("a", "24"), 1), "    window:", "    max_windows: 2\n    window:", 1),
			[]want{{6, "streams[0]", `unknown field "max_windows" (it belongs under "contribution")`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.src), "p.yaml")
			checkErrors(t, err, "p.yaml", tc.want)
		})
	}
}
