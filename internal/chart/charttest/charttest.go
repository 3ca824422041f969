// Package charttest parses the charts of package chart back into numbers,
// for the tests of chart, of the kinds' renderings and of the CLI's
// --plot: a test draws a chart, parses it and checks what it shows
// against the numbers it was drawn from, never against the drawing code.
package charttest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Cells is the width of s in terminal cells (every character the charts
// use is one cell wide).
func Cells(s string) int { return utf8.RuneCountInString(s) }

// Seq returns n values lo, lo+step, ….
func Seq(lo, step float64, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = lo + step*float64(i)
	}
	return xs
}

// CountsFor gives integer noisy counts roughly n·p, as the mechanism's
// are.
func CountsFor(p []float64, n float64) []float64 {
	c := make([]float64, len(p))
	for i, x := range p {
		c[i] = math.Round(x * n)
	}
	return c
}

// BarLine is one parsed line of a horizontal bar chart:
// label " │" bar [" " pct ["  " num]].
type BarLine struct {
	Label   string
	Eighths int      // bar length in eighths of a cell
	Marker  string   // "(NaN)" etc. in place of a bar that is not drawn
	Fields  []string // the numbers after the bar, split at spaces
	Line    string
}

// blockEighths maps each horizontal block character to its eighths.
var blockEighths = map[rune]int{'▏': 1, '▎': 2, '▍': 3, '▌': 4, '▋': 5, '▊': 6, '▉': 7, '█': 8}

// ParseBars parses the bar lines of a chart (the lines with " │"). A bar
// must be full blocks followed by at most one partial block.
func ParseBars(t testing.TB, lines []string) []BarLine {
	t.Helper()
	var out []BarLine
	for _, line := range lines {
		i := strings.Index(line, " │")
		if i < 0 {
			continue
		}
		b := BarLine{Label: line[:i], Line: line}
		rest := []rune(line[i+len(" │"):])
		j := 0
		for ; j < len(rest); j++ {
			e, ok := blockEighths[rest[j]]
			if !ok {
				break
			}
			if b.Eighths%8 != 0 {
				t.Fatalf("partial block before the end of the bar: %q", line)
			}
			b.Eighths += e
		}
		tail := string(rest[j:])
		if j == 0 && strings.HasPrefix(tail, "(") {
			k := strings.Index(tail, ")")
			if k < 0 {
				t.Fatalf("unterminated marker: %q", line)
			}
			b.Marker, tail = tail[:k+1], tail[k+1:]
		}
		b.Fields = strings.Fields(tail)
		out = append(out, b)
	}
	return out
}

// minBarFloor is chart's least bar column: only a chart whose labels leave
// less may be wider than its width.
const minBarFloor = 4

// CheckBars checks the lines of a bar chart of bins drawn at width w from
// probabilities probs and noisy counts counts: one line per bin, lines no
// wider than w (exactly w when the numbers are shown), bars proportional
// to the probabilities within one eighth of a cell with the largest
// filling the bar column exactly, the numbers equal to the given ones,
// and values that cannot be drawn shown but not drawn.
func CheckBars(t testing.TB, lines []string, probs, counts []float64, w int) {
	t.Helper()
	bars := ParseBars(t, lines)
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
		labelW = max(labelW, Cells(b.Label))
		if len(b.Fields) > 0 {
			pctW = max(pctW, Cells(b.Fields[0]))
		}
		if len(b.Fields) > 1 {
			countW = max(countW, Cells(b.Fields[1]))
		}
	}
	numbers := len(bars[0].Fields)
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
		if len(b.Fields) != numbers {
			t.Fatalf("line %d has %d number columns, line 0 has %d:\n%s", i, len(b.Fields), numbers, strings.Join(lines, "\n"))
		}
		if got := Cells(b.Line); got > lineW || (numbers > 0 && got != lineW) {
			t.Errorf("line %d is %d cells wide, want %d (width %d): %q", i, got, lineW, w, b.Line)
		}
		if !(p >= 0) || math.IsInf(p, 0) {
			// NaN, ±Inf, negative: no bar, a marker saying what it is.
			if b.Eighths != 0 || b.Marker == "" {
				t.Errorf("bin %d (p=%v): drawn %d eighths, marker %q; want no bar and a marker", i, p, b.Eighths, b.Marker)
			}
			if numbers > 0 && b.Fields[0] != fmt.Sprint(p) && !(p < 0 && strings.HasPrefix(b.Fields[0], "-")) {
				t.Errorf("bin %d: probability column %q, want %v shown as such", i, b.Fields[0], p)
			}
			continue
		}
		maxEighths = max(maxEighths, b.Eighths)
		want := 0.0
		if top > 0 {
			want = p / top * float64(barW*8)
		}
		if math.Abs(float64(b.Eighths)-want) > 1 {
			t.Errorf("bin %d (p=%v): bar of %d eighths, want %.2f ± 1 (bar column %d cells)", i, p, b.Eighths, want, barW)
		}
		if (p > 0) != (b.Eighths > 0) {
			t.Errorf("bin %d (p=%v): bar of %d eighths; a bar must be empty exactly when p is 0", i, p, b.Eighths)
		}
		if numbers > 0 {
			pct, err := strconv.ParseFloat(strings.TrimSuffix(b.Fields[0], "%"), 64)
			// One decimal: within 0.05 points (more digits below 0.05%).
			if err != nil || math.Abs(pct-100*p) > 0.05+1e-9 {
				t.Errorf("bin %d: probability column %q, want %.3f%%", i, b.Fields[0], 100*p)
			}
		}
		if numbers == 2 && i < len(counts) {
			if got, err := strconv.ParseFloat(b.Fields[1], 64); err != nil || got != counts[i] {
				t.Errorf("bin %d: count column %q, want %v", i, b.Fields[1], counts[i])
			}
		}
	}
	if top > 0 && maxEighths != barW*8 {
		t.Errorf("widest bar is %d eighths, want the full bar column %d×8:\n%s", maxEighths, barW, strings.Join(lines, "\n"))
	}
}

// Curve is a parsed curve chart (chart.Curve).
type Curve struct {
	Top     string // y label of the top row
	Heights []int  // per column, in eighths of a row
	Axis    string // the x-axis line
	XLabels string
	Rows    int
}

// lowerBlockEighths maps each vertical block character to its eighths.
var lowerBlockEighths = map[rune]int{'▁': 1, '▂': 2, '▃': 3, '▄': 4, '▅': 5, '▆': 6, '▇': 7, '█': 8}

// ParseCurve parses the lines of a curve chart: rows starting with a y
// label and " ┤" or " │", then the axis " └", then the x labels. Each
// column must be full blocks from the bottom with at most one partial
// block on top.
func ParseCurve(t testing.TB, lines []string) Curve {
	t.Helper()
	var d Curve
	var grid [][]rune
	axisAt := -1
	for i, line := range lines {
		switch {
		case strings.Contains(line, " ┤") || strings.Contains(line, " │"):
			sep := " │"
			if strings.Contains(line, " ┤") {
				sep = " ┤"
				d.Top = strings.TrimSpace(line[:strings.Index(line, sep)])
			}
			grid = append(grid, []rune(line[strings.Index(line, sep)+len(sep):]))
		case strings.Contains(line, " └"):
			d.Axis, axisAt = line, i
		}
	}
	if axisAt < 0 || axisAt+1 >= len(lines) {
		t.Fatalf("no x axis and labels:\n%s", strings.Join(lines, "\n"))
	}
	d.XLabels = lines[axisAt+1]
	d.Rows = len(grid)
	cols := Cells(d.Axis) - Cells(d.Axis[:strings.Index(d.Axis, " └")]) - 2
	d.Heights = make([]int, cols)
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
		d.Heights[c] = h
	}
	return d
}

// Band is a parsed band chart (chart.Band).
type Band struct {
	// Labels are the y labels by row, row 0 at the bottom ("" for an
	// unlabelled row).
	Labels []string
	// Cells are the rows' marks by row (0 at the bottom) and column, ' '
	// for an empty cell.
	Cells   [][]rune
	Axis    string // the x-axis line
	XLabels string
}

// ParseBand parses the lines of a band chart: rows with a y label and
// " ┤" or " │", then the axis " └", then the x labels. Every cell must be
// blank or one of the band's marks (░ • × ⊕).
func ParseBand(t testing.TB, lines []string) Band {
	t.Helper()
	var d Band
	axisAt := -1
	var labels []string
	var rows [][]rune
	for i, line := range lines {
		sep := ""
		switch {
		case strings.Contains(line, " └"):
			d.Axis, axisAt = line, i
		case strings.Contains(line, " ┤"):
			sep = " ┤"
		case strings.Contains(line, " │"):
			sep = " │"
		}
		if sep == "" || axisAt >= 0 {
			continue
		}
		j := strings.Index(line, sep)
		labels = append(labels, strings.TrimSpace(line[:j]))
		rows = append(rows, []rune(line[j+len(sep):]))
	}
	if axisAt < 0 || axisAt+1 >= len(lines) {
		t.Fatalf("no x axis and labels:\n%s", strings.Join(lines, "\n"))
	}
	d.XLabels = lines[axisAt+1]
	cols := Cells(d.Axis) - Cells(d.Axis[:strings.Index(d.Axis, " └")]) - 2
	for r := len(rows) - 1; r >= 0; r-- { // bottom up
		row := []rune(strings.Repeat(" ", cols))
		for c, ch := range rows[r] {
			if c >= cols || !strings.ContainsRune(" ░•×⊕", ch) {
				t.Fatalf("unexpected %q in column %d of row %q", ch, c, string(rows[r]))
			}
			row[c] = ch
		}
		d.Labels = append(d.Labels, labels[r])
		d.Cells = append(d.Cells, row)
	}
	return d
}
