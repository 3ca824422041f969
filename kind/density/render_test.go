package density

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/chart/charttest"
	"github.com/dpstream/dpstream/schema"
)

var seq, cells = charttest.Seq, charttest.Cells

func densityRelease(xs, ys []float64) schema.Release {
	return schema.Release{ReleaseID: "s/d/0", Stream: "s", Release: "d", Kind: Name, Status: "ok", Edges: xs, Densities: ys}
}

// TestRenderDimensions checks the chart of a Beta(2,2) density against
// the density: the subheader, as many rows as asked, lines within the
// width, the maximum as the top label, the grid's ends as x labels, and
// columns that mirror each other with the middle reaching the top.
func TestRenderDimensions(t *testing.T) {
	xs := seq(0, 0.01, 101)
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 6 * x * (1 - x) // Beta(2,2): max 1.5 at 0.5
	}
	for _, w := range []int{20, 80, 200} {
		for _, rows := range []int{0, 4, 20} {
			t.Run(fmt.Sprintf("width %d rows %d", w, rows), func(t *testing.T) {
				lines := Kind{}.Render(densityRelease(xs, ys), chart.Options{Width: w, Rows: rows})
				wantRows := rows
				if rows == 0 {
					wantRows = chart.DefaultRows
				}
				// subheader, rows, axis, x labels
				if len(lines) != 1+wantRows+2 {
					t.Fatalf("%d lines, want %d:\n%s", len(lines), 1+wantRows+2, strings.Join(lines, "\n"))
				}
				if want := "density on [0, 1], 101 grid points; max 1.5"; lines[0] != want {
					t.Errorf("subheader %q, want %q", lines[0], want)
				}
				d := charttest.ParseCurve(t, lines)
				if d.Rows != wantRows {
					t.Errorf("%d chart rows, want %d", d.Rows, wantRows)
				}
				if got := cells(d.Axis); got != w {
					t.Errorf("axis line is %d cells, want the width %d: %q", got, w, d.Axis)
				}
				for _, l := range lines[1:] {
					if cells(l) > w {
						t.Errorf("line wider than %d: %q", w, l)
					}
				}
				if d.Top != "1.5" {
					t.Errorf("top y label %q, want the maximum density 1.5", d.Top)
				}
				if f := strings.Fields(d.XLabels); len(f) != 2 || f[0] != "0" || f[1] != "1" || cells(d.XLabels) != w {
					t.Errorf("x labels %q, want 0 and 1 at the ends of a %d-cell line", d.XLabels, w)
				}
				// Beta(2,2) is symmetric: the columns mirror each other
				// within one eighth, and the middle reaches the top.
				n := len(d.Heights)
				peak := 0
				for c := range n {
					peak = max(peak, d.Heights[c])
					if diff := d.Heights[c] - d.Heights[n-1-c]; diff > 1 || diff < -1 {
						t.Errorf("columns %d and %d: heights %d and %d, want mirror images", c, n-1-c, d.Heights[c], d.Heights[n-1-c])
					}
				}
				if peak != wantRows*8 {
					t.Errorf("tallest column %d eighths, want the full height %d", peak, wantRows*8)
				}
			})
		}
	}
}

func TestRenderUndrawable(t *testing.T) {
	xs := seq(0, 1, 11)
	cases := []struct {
		name   string
		bad    float64
		at     int
		report string
	}{
		{"NaN", math.NaN(), 4, "x=4: NaN"},
		{"+Inf", math.Inf(1), 0, "x=0: +Inf"},
		{"negative", -0.25, 10, "x=10: -0.25"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ys := make([]float64, len(xs))
			for i := range ys {
				ys[i] = 0.1
			}
			ys[c.at] = c.bad
			r := densityRelease(xs, ys)
			out := strings.Join(Kind{}.Render(r, chart.Options{Width: 80, Color: true}), "\n")
			d := charttest.ParseCurve(t, Kind{}.Render(r, chart.Options{Width: 80}))
			if !strings.Contains(out, chart.Yellow+"not drawn: 1 value(s) NaN, infinite or negative: "+c.report) {
				t.Errorf("no yellow report of %s:\n%s", c.report, out)
			}
			if d.Top != "0.1" {
				t.Errorf("top label %q: the maximum must ignore the undrawable value", d.Top)
			}
			// The columns that use the bad point are empty and marked "?";
			// the rest are full (the density is 0.1 = the maximum).
			axis := []rune(d.Axis[strings.Index(d.Axis, " └")+len(" └"):])
			marked := 0
			for col, h := range d.Heights {
				switch axis[col] {
				case '?':
					marked++
					if h != 0 {
						t.Errorf("column %d marked ? but drawn %d eighths", col, h)
					}
				case '─':
					if h != chart.DefaultRows*8 {
						t.Errorf("column %d: %d eighths, want full", col, h)
					}
				}
			}
			if marked == 0 {
				t.Errorf("no column marked ? on the axis: %q", d.Axis)
			}
		})
	}
	// More than three: the first three and "…".
	ys := []float64{-1, -2, -3, -4, 1}
	out := strings.Join(Kind{}.Render(densityRelease(seq(0, 1, 5), ys), chart.Options{Width: 40}), "\n")
	if !strings.Contains(out, "not drawn: 4 value(s) NaN, infinite or negative: x=0: -1 x=1: -2 x=2: -3 …") {
		t.Errorf("report of four values:\n%s", out)
	}
}

// TestRenderGrid checks how Edges are read: as the grid of the values, as
// bin edges around them (drawn at the bins' midpoints), or, when they are
// neither, replaced by the values' indices with a note.
func TestRenderGrid(t *testing.T) {
	cases := []struct {
		name  string
		edges []float64
		ys    []float64
		sub   string
		note  string
	}{
		{"grid", []float64{0, 1, 2}, []float64{1, 2, 1}, "density on [0, 2], 3 grid points; max 2", ""},
		{"bin edges", []float64{0, 1, 2}, []float64{0.5, 0.5}, "density on [0.5, 1.5], 2 grid points; max 0.5", ""},
		{"decreasing", []float64{3, 2, 1}, []float64{1, 2, 3}, "density on [0, 2], 3 grid points; max 3",
			"3 grid points for 3 values (or not increasing): x is the value's index"},
		{"no grid", nil, []float64{1, 2}, "density on [0, 1], 2 grid points; max 2",
			"0 grid points for 2 values (or not increasing): x is the value's index"},
		{"no values", []float64{0, 1}, nil, "", "density with no values in the release"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines := Kind{}.Render(densityRelease(c.edges, c.ys), chart.Options{Width: 40, Color: true})
			if c.sub != "" && lines[0] != c.sub {
				t.Errorf("subheader %q, want %q", lines[0], c.sub)
			}
			if c.note != "" && !strings.Contains(strings.Join(lines, "\n"), chart.Yellow+c.note) {
				t.Errorf("no yellow note %q:\n%s", c.note, strings.Join(lines, "\n"))
			}
			if c.note == "" && strings.Contains(strings.Join(lines, "\n"), chart.Yellow) {
				t.Errorf("a note on a well-formed density:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

// TestLine checks the demo's line: a sparkline of at most sparkPoints
// values of the grid, or nothing when the grid does not fit the values.
func TestLine(t *testing.T) {
	r := densityRelease([]float64{0, 1, 2, 3}, []float64{0.1, 0.4, 0.3, 0.2})
	r.Coefficients = []float64{1, 2, 3}
	if got, want := (Kind{}).Line(r), "▃█▆▅  [0, 3] 3 terms"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	long := densityRelease(seq(0, 1, 500), make([]float64, 500))
	if got := []rune((Kind{}).Line(long)); len(got) < sparkPoints || got[sparkPoints] != ' ' {
		t.Errorf("a 500-point grid is not a %d-point sparkline: %q", sparkPoints, string(got))
	}
	r.Edges = r.Edges[:3]
	if got := (Kind{}).Line(r); got != "" {
		t.Errorf("off its grid: %q, want nothing", got)
	}
}
