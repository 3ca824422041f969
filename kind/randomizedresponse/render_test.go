package randomizedresponse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/chart/charttest"
	"github.com/dpstream/dpstream/schema"
)

func rrRelease(cats []string, p, debiased, se []float64, le *float64) schema.Release {
	return schema.Release{ReleaseID: "s/rr/0", Stream: "s", Release: "rr", Kind: Name, Status: "ok",
		Fields: []string{"colour"}, Categories: cats, Probabilities: p, DebiasedCounts: debiased, StdErrors: se, LocalEpsilon: le}
}

// TestRender checks the chart against the release: one bar per category
// in order, labelled by its name left-aligned, in proportion to the
// frequencies, with the frequency and the debiased count ± 1.96 standard
// errors (worked out by hand) as far as the width allows, a word when it
// does not, and the footer with the local ε.
func TestRender(t *testing.T) {
	le := math.Log(4) // 1.386…: three significant digits in the footer
	cats := []string{"red", "green", "blue", "other"}
	p := []float64{0.5, 0.3, 0.2, 0}
	debiased := []float64{120, 70.5, -3.5, 0}
	se := []float64{10, 5, 2.5, 1}
	// 1.96 × se by hand.
	wantNums := []string{"120 ± 19.6", "70.5 ± 9.8", "-3.5 ± 4.9", "0 ± 1.96"}
	const footer = "local ε = 1.39 per report (randomized by producers); central noise as configured"
	for _, w := range []int{20, 30, 80, 200} {
		t.Run(fmt.Sprintf("width %d", w), func(t *testing.T) {
			lines := Kind{}.Render(rrRelease(cats, p, debiased, se, &le), chart.Options{Width: w})
			if !strings.HasPrefix(lines[0], "4 categories of colour; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors") {
				t.Errorf("subheader %q", lines[0])
			}
			if lines[len(lines)-1] != footer {
				t.Errorf("footer %q, want %q", lines[len(lines)-1], footer)
			}
			bars := charttest.ParseBars(t, lines)
			if len(bars) != len(cats) {
				t.Fatalf("%d bars for %d categories:\n%s", len(bars), len(cats), strings.Join(lines, "\n"))
			}
			lineW := charttest.Cells(bars[0].Line)
			barW := 0
			for i, b := range bars {
				if got := strings.TrimSpace(b.Label); got != cats[i] {
					t.Errorf("bar %d label %q, want %q (categories in order)", i, got, cats[i])
				}
				if !strings.HasPrefix(b.Label, cats[i]) {
					t.Errorf("label %q is not left-aligned", b.Label)
				}
				if len(b.Fields) > 0 && charttest.Cells(b.Line) != lineW {
					t.Errorf("line %d is %d cells, line 0 %d", i, charttest.Cells(b.Line), lineW)
				}
				barW = max(barW, b.Eighths/8)
			}
			if lineW > w {
				t.Errorf("lines of %d cells at width %d", lineW, w)
			}
			for i, b := range bars {
				// The largest frequency fills the bar column; the others are
				// in proportion within one eighth.
				want := p[i] / p[0] * float64(barW*8)
				if math.Abs(float64(b.Eighths)-want) > 1 {
					t.Errorf("bar %d: %d eighths, want %.2f ± 1", i, b.Eighths, want)
				}
				switch len(b.Fields) {
				case 4: // pct, count, ±, half-width
					if got := strings.Join(b.Fields[1:], " "); got != wantNums[i] {
						t.Errorf("bar %d: %q, want %q", i, got, wantNums[i])
					}
					fallthrough
				case 1:
					if want := strconv.FormatFloat(100*p[i], 'f', 1, 64) + "%"; b.Fields[0] != want {
						t.Errorf("bar %d: frequency %q, want %q", i, b.Fields[0], want)
					}
				case 0:
				default:
					t.Errorf("bar %d: numbers %q", i, b.Fields)
				}
			}
			if w >= 80 && len(bars[0].Fields) != 4 {
				t.Errorf("width %d: numbers %q, want frequency and count ± error", w, bars[0].Fields)
			}
			if len(bars[0].Fields) < 4 && !strings.Contains(lines[0], "columns are too few to show the") {
				t.Errorf("numbers dropped without a word: %q", lines[0])
			}
			if strings.Contains(strings.Join(lines, "\n"), "bins") {
				t.Errorf("drawn as a histogram:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

// TestRenderMalformed feeds broken randomized_response releases and
// checks that each is explained by the note it calls for, in yellow, with
// what can still be drawn.
func TestRenderMalformed(t *testing.T) {
	nan := math.NaN()
	le := 1.0
	cases := []struct {
		name string
		r    schema.Release
		note string   // the yellow note, or its start
		also []string // more text the output must have
	}{
		{"categories missing", rrRelease([]string{"x", "y"}, []float64{0.2, 0.3, 0.5}, []float64{2, 3, 5}, []float64{1, 1, 1}, &le),
			"2 category names for 3 frequencies: categories are labelled by index", []string{"#2 │"}},
		{"debiased counts missing", rrRelease([]string{"x", "y"}, []float64{0.4, 0.6}, nil, []float64{1, 1}, &le),
			"0 debiased counts for 2 categories: counts shown as –", []string{"40.0%  –"}},
		{"standard errors missing", rrRelease([]string{"x", "y"}, []float64{0.4, 0.6}, []float64{4, 6}, []float64{1}, &le),
			"1 standard errors for 2 categories: counts shown without them", []string{"60.0%  6"}},
		{"NaN frequency", rrRelease([]string{"x", "y"}, []float64{nan, 0.6}, []float64{4, 6}, []float64{1, 1}, &le),
			"1 of 2 frequencies NaN, infinite or negative: not drawn", []string{"(NaN)"}},
		{"frequencies off the simplex", rrRelease([]string{"x", "y"}, []float64{0.4, 0.4}, []float64{4, 6}, []float64{1, 1}, &le),
			"frequencies sum to 0.8, not 1", nil},
		{"no local ε", rrRelease([]string{"x", "y"}, []float64{0.4, 0.6}, []float64{4, 6}, []float64{1, 1}, nil),
			"no local ε in the release (randomized by producers); central noise as configured", nil},
		{"no frequencies", rrRelease([]string{"x"}, nil, []float64{1}, []float64{1}, &le),
			"randomized_response with no frequencies in the release", nil},
		{"names that drive the terminal", rrRelease([]string{"\x1b[2Jx", ""}, []float64{0.4, 0.6}, []float64{4, 6}, []float64{1, 1}, nil),
			"no local ε", []string{"?[2Jx │", `""    │`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			colored := strings.Join(Kind{}.Render(c.r, chart.Options{Width: 60, Color: true}), "\n")
			plain := strings.Join(Kind{}.Render(c.r, chart.Options{Width: 60}), "\n")
			if !strings.Contains(colored, chart.Yellow+c.note) {
				t.Errorf("no yellow note %q:\n%s", c.note, plain)
			}
			for _, want := range c.also {
				if !strings.Contains(plain, want) {
					t.Errorf("output lacks %q:\n%s", want, plain)
				}
			}
			if strings.ContainsRune(plain, '\x1b') {
				t.Errorf("escape code without colours:\n%q", plain)
			}
		})
	}
}

func TestLine(t *testing.T) {
	r := rrRelease([]string{"a", "b", "c"}, []float64{0.25, 0.5, 0.25}, nil, nil, nil)
	if got, want := (Kind{}).Line(r), "▅█▅  3 categories"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (Kind{}).Line(rrRelease(nil, nil, nil, nil, nil)); got != "" {
		t.Errorf("no frequencies: %q, want nothing", got)
	}
}
