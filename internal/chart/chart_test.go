package chart

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

func TestWidth(t *testing.T) {
	cases := []struct {
		flag    int
		columns string
		want    int
	}{
		{0, "", 80},
		{0, "132", 132},
		{0, " 100 ", 100},
		{0, "abc", 80},
		{0, "-5", 80},
		{0, "10", MinWidth},
		{60, "132", 60},
		{5, "", MinWidth},
	}
	for _, c := range cases {
		env := func(k string) string {
			if k == "COLUMNS" {
				return c.columns
			}
			return ""
		}
		if got := Width(c.flag, env); got != c.want {
			t.Errorf("Width(%d, COLUMNS=%q) = %d, want %d", c.flag, c.columns, got, c.want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	var buf bytes.Buffer
	none := func(string) string { return "" }
	if IsTerminal(&buf, none) {
		t.Error("a bytes.Buffer counted as a terminal")
	}
	noColor := func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}
	if IsTerminal(&buf, noColor) {
		t.Error("NO_COLOR ignored")
	}
}

func TestPaint(t *testing.T) {
	on, off := Options{Color: true}, Options{}
	if got := on.Note("x"); got != Yellow+"x"+Reset {
		t.Errorf("Note with colours: %q", got)
	}
	if got := off.Paint(Bold, "x"); got != "x" {
		t.Errorf("Paint without colours: %q", got)
	}
	if got := on.Paint(Bold, ""); got != "" {
		t.Errorf("Paint of nothing: %q, want no escape codes", got)
	}
	if got := StripANSI(on.Paint(Cyan, "a") + "b" + on.Note("c")); got != "abc" {
		t.Errorf("StripANSI: %q", got)
	}
}

func TestFormats(t *testing.T) {
	nums := []struct {
		x    float64
		want string
	}{
		{1234, "1234"}, {-3, "-3"}, {23.456789, "23.4568"}, {0.81234, "0.81234"}, {1500.25, "1500.25"},
		{1e-5, "1e-05"}, {1e15, "1e+15"}, {123456.5, "123456"} /* six significant digits */, {math.NaN(), "NaN"}, {math.Inf(-1), "-Inf"},
	}
	for _, c := range nums {
		if got := Num(c.x); got != c.want {
			t.Errorf("Num(%v) = %q, want %q", c.x, got, c.want)
		}
	}
	pcts := []struct {
		p    float64
		want string
	}{
		{0.25, "25.0%"}, {1, "100.0%"}, {0, "0.0%"}, {0.0001, "0.01%"}, {0.00012345, "0.012%"}, {math.Inf(1), "+Inf"},
	}
	for _, c := range pcts {
		if got := Percent(c.p); got != c.want {
			t.Errorf("Percent(%v) = %q, want %q", c.p, got, c.want)
		}
	}
	eps := []struct {
		x    float64
		want string
	}{
		{0.5437981, "0.544"}, {12, "12"}, {1234.4, "1234"}, {math.NaN(), "NaN"},
	}
	for _, c := range eps {
		if got := Epsilon(c.x); got != c.want {
			t.Errorf("Epsilon(%v) = %q, want %q", c.x, got, c.want)
		}
	}
	names := []struct {
		s    string
		max  int
		want string
	}{
		{"km", 40, "km"}, {"\x1b[2Jx", 40, "?[2Jx"}, {"tab\there", 40, "tab?here"}, {"abcdef", 4, "abc…"}, {"ünï", 3, "ünï"},
	}
	for _, c := range names {
		if got := Clean(c.s, c.max); got != c.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", c.s, c.max, got, c.want)
		}
	}
	if got := Pad("ab", 4, true) + "|" + Pad("ab", 4, false) + "|" + Pad("abcde", 4, true); got != "  ab|ab  |abcde" {
		t.Errorf("Pad: %q", got)
	}
}

func TestSparkline(t *testing.T) {
	cases := []struct {
		ps   []float64
		want string
	}{
		{[]float64{0.25, 0.5, 0.25}, "▅█▅"},
		{[]float64{0, 1}, "▁█"},
		{[]float64{0, 0}, "▁▁"},
		{nil, ""},
		// Values that cannot be drawn are ▁ and do not set the top.
		{[]float64{math.NaN(), 0.5, -1, math.Inf(1), 0.25}, "▁█▁▁▅"},
	}
	for _, c := range cases {
		if got := Sparkline(c.ps); got != c.want {
			t.Errorf("Sparkline(%v) = %q, want %q", c.ps, got, c.want)
		}
	}
}

func TestDownsample(t *testing.T) {
	xs := seq(0, 1, 201)
	got := Downsample(xs, 5)
	if want := []float64{0, 50, 100, 150, 200}; !slices.Equal(got, want) {
		t.Errorf("Downsample(0..200, 5) = %v, want %v", got, want)
	}
	if got := Downsample(xs[:3], 5); len(got) != 3 {
		t.Errorf("a short series is kept: %v", got)
	}
}
