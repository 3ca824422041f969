package basic

import (
	"math"
	"testing"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/schema"
)

func TestRenderValue(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	cases := []struct {
		name      string
		value     *float64
		interval  *float64
		want      string // the chart's one line
		wantLine  string // the demo's
		wantColor string // the chart's line with colours
	}{
		{"count", f(1234), f(15), "value 1234 ± 15 (95% noise interval)", "   1234.00 ± 15.00   ", ""},
		{"negative count", f(-3), f(15), "value -3 ± 15 (95% noise interval)", "     -3.00 ± 15.00   ", ""},
		{"mean", f(23.456789), f(0.81234), "value 23.4568 ± 0.81234 (95% noise interval)", "     23.46 ± 0.81    ", ""},
		{"sum on a grid", f(1500.25), f(12.5), "value 1500.25 ± 12.5 (95% noise interval)", "   1500.25 ± 12.50   ", ""},
		{"no interval", f(5), nil, "value 5", "      5.00 ± 0.00    ", ""},
		{"NaN value", f(math.NaN()), f(math.Inf(1)), "value NaN ± +Inf (95% noise interval)", "       NaN ± +Inf    ", ""},
		{"no value", nil, nil, "no value in the release", "", chart.Yellow + "no value in the release" + chart.Reset},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := schema.Release{Status: "ok", Value: c.value, Interval95: c.interval}
			got := RenderValue(r, chart.Options{Width: 80})
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("got %q, want [%q]", got, c.want)
			}
			wantColor := c.wantColor
			if wantColor == "" {
				wantColor = c.want
			}
			if got := RenderValue(r, chart.Options{Width: 80, Color: true}); len(got) != 1 || got[0] != wantColor {
				t.Errorf("with colours: got %q, want [%q]", got, wantColor)
			}
			if got := ValueLine(r); got != c.wantLine {
				t.Errorf("line %q, want %q", got, c.wantLine)
			}
		})
	}
}

// TestDrawsValue: a count, sum or mean draws its value, or says it has
// none; a record of its kind that carries probabilities or (without a
// value) densities is drawn by that shape instead.
func TestDrawsValue(t *testing.T) {
	v := 1.0
	cases := []struct {
		name string
		r    schema.Release
		want bool
	}{
		{"value", schema.Release{Value: &v}, true},
		{"nothing", schema.Release{}, true},
		{"value and densities", schema.Release{Value: &v, Densities: []float64{1}}, true},
		{"probabilities", schema.Release{Value: &v, Probabilities: []float64{1}}, false},
		{"densities", schema.Release{Densities: []float64{1}}, false},
	}
	for _, c := range cases {
		if got := DrawsValue(c.r); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRenderRunning: a continual count is drawn as its running total with
// its interval and place in the horizon, then the window's increment.
func TestRenderRunning(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	r := schema.Release{Status: "ok", Value: f(12), Interval95: f(3.5), RunningTotal: f(1500), RunningInterval95: f(9.25),
		Horizon: 24, HorizonWindow: 5}
	got := RenderValue(r, chart.Options{Width: 80})
	want := []string{"running total 1500 ± 9.25 (95%; window 5 of 24 of the horizon)", "value 12 ± 3.5 (95% noise interval), this window's increment"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := ValueLine(r), "   1500.00 ± 9.25     so far (5/24)"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}
