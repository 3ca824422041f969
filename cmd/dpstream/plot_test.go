package main

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

// barLine is one parsed histogram line: label " │" bar [" " pct ["  " count]].
type barLine struct {
	label   string
	eighths int    // bar length in eighths of a cell
	marker  string // "(NaN)" etc. in place of a bar that is not drawn
	fields  []string
	line    string
}

// blockEighths maps each horizontal block character to its eighths.
var blockEighths = map[rune]int{'▏': 1, '▎': 2, '▍': 3, '▌': 4, '▋': 5, '▊': 6, '▉': 7, '█': 8}

// parseBars parses the bar lines of a histogram chart (the lines with
// " │"). A bar must be full blocks followed by at most one partial block.
func parseBars(t *testing.T, lines []string) []barLine {
	t.Helper()
	var out []barLine
	for _, line := range lines {
		i := strings.Index(line, " │")
		if i < 0 {
			continue
		}
		b := barLine{label: line[:i], line: line}
		rest := []rune(line[i+len(" │"):])
		j := 0
		for ; j < len(rest); j++ {
			e, ok := blockEighths[rest[j]]
			if !ok {
				break
			}
			if b.eighths%8 != 0 {
				t.Fatalf("partial block before the end of the bar: %q", line)
			}
			b.eighths += e
		}
		tail := string(rest[j:])
		if j == 0 && strings.HasPrefix(tail, "(") {
			k := strings.Index(tail, ")")
			if k < 0 {
				t.Fatalf("unterminated marker: %q", line)
			}
			b.marker, tail = tail[:k+1], tail[k+1:]
		}
		b.fields = strings.Fields(tail)
		out = append(out, b)
	}
	return out
}

func cells(s string) int { return utf8.RuneCountInString(s) }

func seq(lo, step float64, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = lo + step*float64(i)
	}
	return xs
}

func histRelease(p, counts, edges []float64) schema.Release {
	return schema.Release{ReleaseID: "s/h/0", Stream: "s", Release: "h", Kind: "histogram", Status: "ok",
		Probabilities: p, NoisyCounts: counts, Edges: edges}
}

// countsFor gives integer noisy counts roughly n·p, as the mechanism's are.
func countsFor(p []float64, n float64) []float64 {
	c := make([]float64, len(p))
	for i, x := range p {
		c[i] = math.Round(x * n)
	}
	return c
}

// checkBars checks the histogram chart of r at width w against r itself:
// one line per bin, lines no wider than w (exactly w when the numbers are
// shown), bars proportional to the probabilities within one eighth of a
// cell with the largest filling the bar column exactly, the numbers equal
// to the release's, and undrawable values shown but not drawn.
func checkBars(t *testing.T, r schema.Release, w int) {
	t.Helper()
	checkBarLines(t, plotHistogram(r, plotOptions{Width: w}), r.Probabilities, r.NoisyCounts, w)
}

// checkBarLines is checkBars on the lines of a bar chart drawn at width w
// from probabilities probs and noisy counts counts.
func checkBarLines(t *testing.T, lines []string, probs, counts []float64, w int) {
	t.Helper()
	bars := parseBars(t, lines)
	if len(bars) != len(probs) {
		t.Fatalf("%d bar lines for %d bins:\n%s", len(bars), len(probs), strings.Join(lines, "\n"))
	}
	top := 0.0
	for _, p := range probs {
		if !math.IsNaN(p) && !math.IsInf(p, 0) && p > 0 {
			top = math.Max(top, p)
		}
	}
	labelW, pctW, countW := 0, 0, 0
	for _, b := range bars {
		labelW = max(labelW, cells(b.label))
		if len(b.fields) > 0 {
			pctW = max(pctW, cells(b.fields[0]))
		}
		if len(b.fields) > 1 {
			countW = max(countW, cells(b.fields[1]))
		}
	}
	numbers := len(bars[0].fields)
	if w >= 80 && numbers != 2 {
		t.Fatalf("width %d: %d number columns, want probability and count:\n%s", w, numbers, strings.Join(lines, "\n"))
	}
	// The bar column is what the width leaves after the label, " │" and the
	// number columns that are shown, but at least minBarFloor cells: only
	// then may a line be wider than w.
	numsW := 0
	if numbers >= 1 {
		numsW += 1 + pctW
	}
	if numbers == 2 {
		numsW += 2 + countW
	}
	barW := max(w-labelW-2-numsW, minBarFloor)
	lineW := labelW + 2 + barW + numsW
	if lineW > w && numbers > 0 {
		t.Errorf("width %d: lines of %d cells still show numbers; they must go first", w, lineW)
	}
	maxEighths := 0
	for i, b := range bars {
		p := probs[i]
		if len(b.fields) != numbers {
			t.Fatalf("line %d has %d number columns, line 0 has %d:\n%s", i, len(b.fields), numbers, strings.Join(lines, "\n"))
		}
		if got := cells(b.line); got > lineW || (numbers > 0 && got != lineW) {
			t.Errorf("line %d is %d cells wide, want %d (width %d): %q", i, got, lineW, w, b.line)
		}
		if !(p >= 0) || math.IsInf(p, 0) {
			// NaN, ±Inf, negative: no bar, a marker saying what it is.
			if b.eighths != 0 || b.marker == "" {
				t.Errorf("bin %d (p=%v): drawn %d eighths, marker %q; want no bar and a marker", i, p, b.eighths, b.marker)
			}
			if numbers > 0 && b.fields[0] != fmt.Sprint(p) && !(p < 0 && strings.HasPrefix(b.fields[0], "-")) {
				t.Errorf("bin %d: probability column %q, want %v shown as such", i, b.fields[0], p)
			}
			continue
		}
		maxEighths = max(maxEighths, b.eighths)
		want := 0.0
		if top > 0 {
			want = p / top * float64(barW*8)
		}
		if math.Abs(float64(b.eighths)-want) > 1 {
			t.Errorf("bin %d (p=%v): bar of %d eighths, want %.2f ± 1 (bar column %d cells)", i, p, b.eighths, want, barW)
		}
		if (p > 0) != (b.eighths > 0) {
			t.Errorf("bin %d (p=%v): bar of %d eighths; a bar must be empty exactly when p is 0", i, p, b.eighths)
		}
		if numbers > 0 {
			pct, err := strconv.ParseFloat(strings.TrimSuffix(b.fields[0], "%"), 64)
			// One decimal: within 0.05 points (more digits below 0.05%).
			if err != nil || math.Abs(pct-100*p) > 0.05+1e-9 {
				t.Errorf("bin %d: probability column %q, want %.3f%%", i, b.fields[0], 100*p)
			}
		}
		if numbers == 2 && i < len(counts) {
			if got, err := strconv.ParseFloat(b.fields[1], 64); err != nil || got != counts[i] {
				t.Errorf("bin %d: count column %q, want %v", i, b.fields[1], counts[i])
			}
		}
	}
	if top > 0 && maxEighths != barW*8 {
		t.Errorf("widest bar is %d eighths, want the full bar column %d×8:\n%s", maxEighths, barW, strings.Join(lines, "\n"))
	}
}

func TestPlotHistogramBars(t *testing.T) {
	skewed := []float64{0.01, 0.05, 0.12, 0.2, 0.18, 0.14, 0.1, 0.07, 0.05, 0.03, 0.02, 0.015, 0.01, 0.003, 0.002}
	uniform := []float64{0.25, 0.25, 0.25, 0.25}
	tiny := []float64{0.9999, 0.0001} // the small bin rounds to 0 eighths but is not 0
	bad := []float64{0.4, math.NaN(), 0.3, math.Inf(1), -0.1, 0.4}
	cases := []struct {
		name   string
		p      []float64
		counts []float64
		edges  []float64
	}{
		{"15 skewed bins", skewed, countsFor(skewed, 1234), seq(0, 2, 16)},
		{"single bin", []float64{1}, []float64{57}, []float64{0, 1}},
		{"all zero", []float64{0, 0, 0}, []float64{-2, 0, -5}, seq(0, 10, 4)},
		{"uniform", uniform, []float64{10, 11, 9, 10}, seq(-1, 0.5, 5)},
		{"tiny bin", tiny, []float64{9999, 1}, []float64{0, 1, 2}},
		{"NaN, Inf and negative", bad, []float64{4, math.NaN(), 3, math.Inf(1), -1, 4}, seq(0, 1, 7)},
		{"wide counts", []float64{0.5, 0.5}, []float64{123456789, 123456788}, []float64{0, 50, 100}},
	}
	for _, c := range cases {
		for _, w := range []int{20, 80, 200} {
			t.Run(fmt.Sprintf("%s/width %d", c.name, w), func(t *testing.T) {
				checkBars(t, histRelease(c.p, c.counts, c.edges), w)
			})
		}
	}
}

func TestPlotHistogramLabels(t *testing.T) {
	cases := []struct {
		name  string
		edges []float64
		bins  int
		want  []string // every label, in order
		note  string   // a line the chart must have, if any
	}{
		{"integers right-aligned", seq(0, 2, 6), 5, []string{"[0,  2)", "[2,  4)", "[4,  6)", "[6,  8)", "[8, 10]"}, ""},
		{"two-digit edges", []float64{0, 5, 10, 15}, 3, []string{"[ 0,  5)", "[ 5, 10)", "[10, 15]"}, ""},
		{"float noise in edges", []float64{0, 0.1, 0.2, 0.30000000000000004}, 3, []string{"[0.0, 0.1)", "[0.1, 0.2)", "[0.2, 0.3]"}, ""},
		{"negative edges", []float64{-1, -0.5, 0, 0.5, 1}, 4, []string{"[-1.0, -0.5)", "[-0.5,  0.0)", "[ 0.0,  0.5)", "[ 0.5,  1.0]"}, ""},
		{"thirds", []float64{0, 1.0 / 3, 2.0 / 3, 1}, 3, []string{"[0.000, 0.333)", "[0.333, 0.667)", "[0.667, 1.000]"}, ""},
		{"tiny magnitudes", []float64{1e-6, 2e-6, 3e-6}, 2, []string{"[1e-06, 2e-06)", "[2e-06, 3e-06]"}, ""},
		{"no edges", nil, 3, []string{"#0", "#1", "#2"}, "0 edges do not bound 3 bins: bins are labelled by index"},
		{"wrong number of edges", []float64{0, 1, 2}, 12, []string{" #0", " #1", " #2", " #3", " #4", " #5", " #6", " #7", " #8", " #9", "#10", "#11"}, "3 edges do not bound 12 bins: bins are labelled by index"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := make([]float64, c.bins)
			for i := range p {
				p[i] = 1 / float64(c.bins)
			}
			lines := plotHistogram(histRelease(p, countsFor(p, 100), c.edges), plotOptions{Width: 80})
			bars := parseBars(t, lines)
			var got []string
			for _, b := range bars {
				got = append(got, b.label)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("labels\n got %q\nwant %q", got, c.want)
			}
			if c.note != "" && !strings.Contains(strings.Join(lines, "\n"), c.note) {
				t.Errorf("no line %q:\n%s", c.note, strings.Join(lines, "\n"))
			}
		})
	}
}

// TestPlotHistogramManyBins checks the decision for many bins: up to
// MaxBars (default 50) bins get one line each; more are summed into groups
// of k = ⌈bins/MaxBars⌉ adjacent bins, the last group possibly smaller, so
// that the chart stays within MaxBars lines at any bin count.
func TestPlotHistogramManyBins(t *testing.T) {
	cases := []struct {
		bins, maxBars int
		wantGroups    int
		wantK         int
		lastSize      int
		firstLabel    string
		lastLabel     string
	}{
		{10000, 0, 50, 200, 200, "[0.00, 0.02)", "[0.98, 1.00]"},
		{50, 0, 50, 1, 1, "[0.00, 0.02)", "[0.98, 1.00]"},
		{51, 0, 26, 2, 1, "", ""},
		{101, 50, 34, 3, 2, "", ""},
		{1000, 7, 7, 143, 142, "", ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d bins, at most %d lines", c.bins, c.maxBars), func(t *testing.T) {
			p := make([]float64, c.bins)
			total := 0.0
			for i := range p {
				p[i] = 1 + math.Sin(float64(i)*7/float64(c.bins))
				total += p[i]
			}
			for i := range p {
				p[i] /= total
			}
			counts := countsFor(p, 1e6)
			edges := make([]float64, c.bins+1)
			for i := range edges {
				edges[i] = float64(i) / float64(c.bins)
			}
			for _, w := range []int{20, 80, 200} {
				lines := plotHistogram(histRelease(p, counts, edges), plotOptions{Width: w, MaxBars: c.maxBars})
				bars := parseBars(t, lines)
				if len(bars) != c.wantGroups {
					t.Fatalf("width %d: %d lines, want %d groups", w, len(bars), c.wantGroups)
				}
				if c.wantK > 1 {
					want := fmt.Sprintf("shown as %d groups of %d adjacent bins", c.wantGroups, c.wantK)
					if c.lastSize != c.wantK {
						want += fmt.Sprintf(" (the last of %d)", c.lastSize)
					}
					if !strings.Contains(lines[0], want) {
						t.Errorf("subheader %q does not say %q", lines[0], want)
					}
				}
				if c.firstLabel != "" && (bars[0].label != c.firstLabel || bars[len(bars)-1].label != c.lastLabel) {
					t.Errorf("labels %q … %q, want %q … %q", bars[0].label, bars[len(bars)-1].label, c.firstLabel, c.lastLabel)
				}
				// The chart of the groups is the chart of a histogram whose
				// bins are the groups' sums.
				var gp, gc, ge []float64
				for first := 0; first < c.bins; first += c.wantK {
					last := min(first+c.wantK, c.bins)
					sp, sc := 0.0, 0.0
					for i := first; i < last; i++ {
						sp += p[i]
						sc += counts[i]
					}
					gp, gc, ge = append(gp, sp), append(gc, sc), append(ge, edges[first])
				}
				ge = append(ge, edges[c.bins])
				if len(gp) != c.wantGroups || c.bins-(c.wantGroups-1)*c.wantK != c.lastSize {
					t.Fatalf("test case inconsistent: %d groups, last of %d", len(gp), c.bins-(c.wantGroups-1)*c.wantK)
				}
				grouped := histRelease(gp, gc, ge)
				for i, b := range bars {
					want := parseBars(t, plotHistogram(grouped, plotOptions{Width: w}))[i]
					if b.line != want.line {
						t.Errorf("width %d group %d:\n got %q\nwant %q (the summed histogram's line)", w, i, b.line, want.line)
					}
				}
				checkBars(t, grouped, w)
			}
		})
	}
}

func TestPlotValue(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	cases := []struct {
		name     string
		kind     string
		value    *float64
		interval *float64
		want     string
	}{
		{"count", "count", f(1234), f(15), "value 1234 ± 15 (95% noise interval)"},
		{"negative count", "count", f(-3), f(15), "value -3 ± 15 (95% noise interval)"},
		{"mean", "mean", f(23.456789), f(0.81234), "value 23.4568 ± 0.81234 (95% noise interval)"},
		{"sum on a grid", "sum", f(1500.25), f(12.5), "value 1500.25 ± 12.5 (95% noise interval)"},
		{"no interval", "sum", f(5), nil, "value 5"},
		{"NaN value", "mean", f(math.NaN()), f(math.Inf(1)), "value NaN ± +Inf (95% noise interval)"},
		{"no value", "count", nil, nil, "no value in the release"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := schema.Release{Kind: c.kind, Status: "ok", Value: c.value, Interval95: c.interval}
			got := plotBody(r, plotOptions{Width: 80})
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("got %q, want [%q]", got, c.want)
			}
		})
	}
}

// TestPlotOddReleases feeds releases a plotter could meet (refused, empty,
// unknown, inconsistent) and checks each gives a readable line and no
// chart, without panicking.
func TestPlotOddReleases(t *testing.T) {
	cases := []struct {
		name string
		r    schema.Release
		want string
	}{
		{"refused", schema.Release{Kind: "histogram", Status: "budget_exhausted"}, "refused: the stream's budget is exhausted"},
		{"refused with stray data", schema.Release{Kind: "histogram", Status: "budget_exhausted", Probabilities: []float64{1}}, "refused: the stream's budget is exhausted"},
		{"unknown status", schema.Release{Kind: "count", Status: "suppressed"}, `status "suppressed": not plotted`},
		{"no status", schema.Release{}, `status "": not plotted`},
		{"empty histogram", schema.Release{Kind: "histogram", Status: "ok"}, "histogram with no bins in the release"},
		{"empty density", schema.Release{Kind: "density", Status: "ok"}, "density with no values in the release"},
		{"unknown kind", schema.Release{Kind: "quantiles", Status: "ok"}, `kind "quantiles": nothing to plot`},
		{"counts without probabilities", schema.Release{Kind: "histogram", Status: "ok", NoisyCounts: []float64{1, 2}}, "histogram with no bins in the release"},
		{"probabilities without counts", histRelease([]float64{0.5, 0.5}, nil, []float64{0, 1, 2}), "0 noisy counts for 2 bins: missing ones shown as –"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := plotRelease(&buf, c.r, plotOptions{Width: 80}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if !strings.Contains(out, c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
			if c.r.Status != "ok" && strings.ContainsAny(out, "█▏▎▍▌▋▊▉▁▂▃▄▅▆▇") {
				t.Errorf("a release that is not ok was drawn:\n%s", out)
			}
		})
	}
}

func TestPlotHeader(t *testing.T) {
	ms := func(tm time.Time) int64 { return tm.UnixMilli() }
	start := time.Date(2024, 5, 1, 12, 40, 0, 0, time.UTC)
	late := time.Date(2024, 5, 1, 23, 59, 58, 0, time.UTC)
	cases := []struct {
		name string
		r    schema.Release
		want string
	}{
		{"same day", schema.Release{Stream: "trips", Release: "km_hist", Kind: "histogram", Status: "ok",
			WindowStart: ms(start), WindowEnd: ms(start.Add(5 * time.Second)), EpsilonSpent: 1.75, EpsilonBudget: 12},
			"trips/km_hist (histogram)  2024-05-01 12:40:00–12:40:05 UTC  ok  ε spent 1.75 of 12"},
		{"across midnight", schema.Release{Stream: "trips", Release: "n", Kind: "count", Status: "budget_exhausted",
			WindowStart: ms(late), WindowEnd: ms(late.Add(5 * time.Second)), EpsilonSpent: 12, EpsilonBudget: 12},
			"trips/n (count)  2024-05-01 23:59:58–2024-05-02 00:00:03 UTC  budget_exhausted  ε spent 12 of 12"},
		{"three significant digits", schema.Release{Stream: "s", Release: "r", Kind: "mean", Status: "ok", EpsilonSpent: 0.5437981, EpsilonBudget: 1234.4},
			"s/r (mean)  1970-01-01 00:00:00–00:00:00 UTC  ok  ε spent 0.544 of 1234"},
		{"NaN budget", schema.Release{Stream: "s", Release: "r", Kind: "sum", Status: "ok", EpsilonSpent: math.NaN(), EpsilonBudget: 1},
			"s/r (sum)  1970-01-01 00:00:00–00:00:00 UTC  ok  ε spent NaN of 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := plotHeader(c.r); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// densityChart is a parsed density chart.
type densityChart struct {
	top     string // y label of the top row
	heights []int  // per column, in eighths of a row
	axis    string // the x-axis line
	xlabels string
	rows    int
}

var lowerBlockEighths = map[rune]int{'▁': 1, '▂': 2, '▃': 3, '▄': 4, '▅': 5, '▆': 6, '▇': 7, '█': 8}

// parseDensity parses the chart lines of plotDensity: rows starting with a
// y label and " ┤" or " │", then the axis " └", then the x labels. Each
// column must be full blocks from the bottom with at most one partial
// block on top.
func parseDensity(t *testing.T, lines []string) densityChart {
	t.Helper()
	var d densityChart
	var grid [][]rune
	axisAt := -1
	for i, line := range lines {
		switch {
		case strings.Contains(line, " ┤") || strings.Contains(line, " │"):
			sep := " │"
			if strings.Contains(line, " ┤") {
				sep = " ┤"
				d.top = strings.TrimSpace(line[:strings.Index(line, sep)])
			}
			grid = append(grid, []rune(line[strings.Index(line, sep)+len(sep):]))
		case strings.Contains(line, " └"):
			d.axis, axisAt = line, i
		}
	}
	if axisAt < 0 || axisAt+1 >= len(lines) {
		t.Fatalf("no x axis and labels:\n%s", strings.Join(lines, "\n"))
	}
	d.xlabels = lines[axisAt+1]
	d.rows = len(grid)
	cols := cells(d.axis) - cells(d.axis[:strings.Index(d.axis, " └")]) - 2
	d.heights = make([]int, cols)
	for c := range cols {
		h := 0
		for r := len(grid) - 1; r >= 0; r-- { // bottom up
			ch := ' '
			if c < len(grid[r]) {
				ch = grid[r][c]
			}
			e := lowerBlockEighths[ch]
			if ch != ' ' && e == 0 {
				t.Fatalf("unexpected %q in column %d", ch, c)
			}
			if e > 0 && h%8 != 0 {
				t.Fatalf("column %d has a block above a partial block", c)
			}
			h += e
		}
		d.heights[c] = h
	}
	return d
}

func densityRelease(xs, ys []float64) schema.Release {
	return schema.Release{ReleaseID: "s/d/0", Stream: "s", Release: "d", Kind: "density", Status: "ok", Edges: xs, Densities: ys}
}

func TestPlotDensityDimensions(t *testing.T) {
	xs := seq(0, 0.01, 101)
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 6 * x * (1 - x) // Beta(2,2): max 1.5 at 0.5
	}
	for _, w := range []int{20, 80, 200} {
		for _, rows := range []int{0, 4, 20} {
			t.Run(fmt.Sprintf("width %d rows %d", w, rows), func(t *testing.T) {
				lines := plotDensity(densityRelease(xs, ys), plotOptions{Width: w, Rows: rows})
				wantRows := rows
				if rows == 0 {
					wantRows = defaultDensityRows
				}
				// subheader, rows, axis, x labels
				if len(lines) != 1+wantRows+2 {
					t.Fatalf("%d lines, want %d:\n%s", len(lines), 1+wantRows+2, strings.Join(lines, "\n"))
				}
				d := parseDensity(t, lines)
				if d.rows != wantRows {
					t.Errorf("%d chart rows, want %d", d.rows, wantRows)
				}
				if got := cells(d.axis); got != w {
					t.Errorf("axis line is %d cells, want the width %d: %q", got, w, d.axis)
				}
				for _, l := range lines[1:] {
					if cells(l) > w {
						t.Errorf("line wider than %d: %q", w, l)
					}
				}
				if d.top != "1.5" {
					t.Errorf("top y label %q, want the maximum density 1.5", d.top)
				}
				if f := strings.Fields(d.xlabels); len(f) != 2 || f[0] != "0" || f[1] != "1" || cells(d.xlabels) != w {
					t.Errorf("x labels %q, want 0 and 1 at the ends of a %d-cell line", d.xlabels, w)
				}
				// Beta(2,2) is symmetric: the columns mirror each other
				// within one eighth, and the middle reaches the top.
				n := len(d.heights)
				peak := 0
				for c := range n {
					peak = max(peak, d.heights[c])
					if diff := d.heights[c] - d.heights[n-1-c]; diff > 1 || diff < -1 {
						t.Errorf("columns %d and %d: heights %d and %d, want mirror images", c, n-1-c, d.heights[c], d.heights[n-1-c])
					}
				}
				if peak != wantRows*8 {
					t.Errorf("tallest column %d eighths, want the full height %d", peak, wantRows*8)
				}
			})
		}
	}
}

// TestPlotDensityHeights checks column heights against the density itself:
// for y = x on [0, 1], the mean of y over column c is its center
// (c+½)/cols, so its height is (c+½)/cols of the chart's, within one
// eighth for rounding (and 0.05 for floating-point error).
func TestPlotDensityHeights(t *testing.T) {
	xs := seq(0, 0.0001, 10001)
	ys := make([]float64, len(xs))
	copy(ys, xs)
	for _, w := range []int{20, 80, 200} {
		lines := plotDensity(densityRelease(xs, ys), plotOptions{Width: w, Rows: 6})
		d := parseDensity(t, lines)
		cols := len(d.heights)
		for c, h := range d.heights {
			want := (float64(c) + 0.5) / float64(cols) * 6 * 8
			if math.Abs(float64(h)-want) > 1.05 {
				t.Errorf("width %d column %d: %d eighths, want %.2f ± 1", w, c, h, want)
			}
		}
	}
	// A coarse grid (fewer points than columns): the curve through
	// (0,0) (1,0) (2,2) (3,2) leaves the columns left of 1 empty and fills
	// those right of 2.
	lines := plotDensity(densityRelease([]float64{0, 1, 2, 3}, []float64{0, 0, 2, 2}), plotOptions{Width: 80, Rows: 5})
	d := parseDensity(t, lines)
	n := len(d.heights)
	for c, h := range d.heights {
		a, b := 3*float64(c)/float64(n), 3*float64(c+1)/float64(n) // the column's x range
		switch {
		case b <= 1 && h != 0:
			t.Errorf("column %d (x in [%.2f, %.2f]): %d eighths, want 0", c, a, b, h)
		case a >= 2 && h != 40:
			t.Errorf("column %d (x in [%.2f, %.2f]): %d eighths, want 40", c, a, b, h)
		}
	}
}

func TestPlotDensityUndrawable(t *testing.T) {
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
			lines := plotDensity(densityRelease(xs, ys), plotOptions{Width: 80})
			out := strings.Join(lines, "\n")
			d := parseDensity(t, lines)
			if !strings.Contains(out, "not drawn: 1 value(s) NaN, infinite or negative: "+c.report) {
				t.Errorf("no report of %s:\n%s", c.report, out)
			}
			if d.top != "0.1" {
				t.Errorf("top label %q: the maximum must ignore the undrawable value", d.top)
			}
			// The columns that use the bad point are empty and marked "?";
			// the rest are full (the density is 0.1 = the maximum).
			axis := []rune(d.axis[strings.Index(d.axis, " └")+len(" └"):])
			marked := 0
			for col, h := range d.heights {
				switch axis[col] {
				case '?':
					marked++
					if h != 0 {
						t.Errorf("column %d marked ? but drawn %d eighths", col, h)
					}
				case '─':
					if h != defaultDensityRows*8 {
						t.Errorf("column %d: %d eighths, want full", col, h)
					}
				}
			}
			if marked == 0 {
				t.Errorf("no column marked ? on the axis: %q", d.axis)
			}
		})
	}
	// Edges that are not a grid for the values: drawn against the index.
	lines := plotDensity(densityRelease([]float64{3, 2, 1}, []float64{1, 2, 3}), plotOptions{Width: 40})
	if !strings.Contains(strings.Join(lines, "\n"), "x is the value's index") {
		t.Errorf("decreasing grid not reported:\n%s", strings.Join(lines, "\n"))
	}
	// Bin edges around the values (histogram-style) are drawn at the bins'
	// midpoints.
	lines = plotDensity(densityRelease([]float64{0, 1, 2}, []float64{0.5, 0.5}), plotOptions{Width: 40})
	if !strings.Contains(lines[0], "density on [0.5, 1.5], 2 grid points") {
		t.Errorf("subheader %q, want the bins' midpoints as the grid", lines[0])
	}
}

func TestPlotWidth(t *testing.T) {
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
		{0, "10", minPlotWidth},
		{60, "132", 60},
		{5, "", minPlotWidth},
	}
	for _, c := range cases {
		env := func(k string) string {
			if k == "COLUMNS" {
				return c.columns
			}
			return ""
		}
		if got := plotWidth(c.flag, env); got != c.want {
			t.Errorf("plotWidth(%d, COLUMNS=%q) = %d, want %d", c.flag, c.columns, got, c.want)
		}
	}
}

func TestPlotColor(t *testing.T) {
	r := histRelease([]float64{0.2, 0.8}, []float64{20, 80}, []float64{0, 1, 2})
	r.WindowEnd = 1000
	var plain, colored bytes.Buffer
	if err := plotRelease(&plain, r, plotOptions{Width: 60}); err != nil {
		t.Fatal(err)
	}
	if err := plotRelease(&colored, r, plotOptions{Width: 60, Color: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b") {
		t.Errorf("escape codes without Color:\n%q", plain.String())
	}
	if !strings.Contains(colored.String(), "\x1b[") {
		t.Errorf("no escape codes with Color:\n%q", colored.String())
	}
	if stripANSI(colored.String()) != plain.String() {
		t.Errorf("colors changed the layout:\n%s\nvs\n%s", stripANSI(colored.String()), plain.String())
	}
	none := func(string) string { return "" }
	if isTerminal(&plain, none) {
		t.Error("a bytes.Buffer counted as a terminal")
	}
	noColor := func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}
	if isTerminal(&plain, noColor) {
		t.Error("NO_COLOR ignored")
	}
}

func TestPlotTailFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tail", "accountant", "--plot"}, "--plot draws releases only, not accountant"},
		{[]string{"tail", "releases", "--plot", "--width", "5"}, "--width 5: want 0 (automatic) or at least 20"},
		{[]string{"tail", "releases", "--plot", "--width", "-1"}, "--width -1"},
	}
	for _, c := range cases {
		code, _, stderr := cli(t.Context(), c.args...)
		if code != exitConfig || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, exitConfig, c.want)
		}
	}
}

// TestPlotTail runs 'tail releases --plot' against an embedded broker
// holding a histogram, a count and a refused release.
func TestPlotTail(t *testing.T) {
	broker := testkit.StartBroker(t)
	const topic = "plot.releases"
	broker.CreateTopics(kafkaio.TopicSpec{Name: topic, Partitions: 1})
	v := 42.0
	iv := 9.0
	rels := []schema.Release{
		{ReleaseID: "trips/h/0", Stream: "trips", Release: "h", Kind: "histogram", Status: "ok", WindowEnd: 5000,
			Probabilities: []float64{0.25, 0.75}, NoisyCounts: []float64{25, 75}, Edges: []float64{0, 5, 10}},
		{ReleaseID: "trips/n/0", Stream: "trips", Release: "n", Kind: "count", Status: "ok", WindowEnd: 5000, Value: &v, Interval95: &iv},
		{ReleaseID: "trips/n/5000", Stream: "trips", Release: "n", Kind: "count", Status: "budget_exhausted", WindowStart: 5000, WindowEnd: 10000},
	}
	broker.ProduceReleases(topic, rels...)
	// No -c and no pipeline.yaml here: tail uses the default topics, and
	// --topic and --brokers point it at this broker.
	code, stdout, stderr := cliTimeout(t, 20*time.Second, "tail", "releases", "--plot", "--width", "40",
		"--brokers", broker.Addr, "--topic", topic)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{
		"trips/h (histogram)  1970-01-01 00:00:00–00:00:05 UTC  ok",
		"value 42 ± 9 (95% noise interval)",
		"trips/n (count)  1970-01-01 00:00:05–00:00:10 UTC  budget_exhausted",
		"refused: the stream's budget is exhausted",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "{") {
		t.Errorf("JSON printed with --plot:\n%s", stdout)
	}
	bars := parseBars(t, strings.Split(stdout, "\n"))
	if len(bars) != 2 || bars[0].label != "[0,  5)" || bars[1].label != "[5, 10]" || cells(bars[1].line) != 40 {
		t.Errorf("histogram lines %+v:\n%s", bars, stdout)
	}
}
