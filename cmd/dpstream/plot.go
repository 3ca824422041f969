package main

// Terminal charts of releases for 'dpstream tail releases --plot'.
//
// Everything here is post-processing of published releases: it reads only
// what a release already carries and never touches data or noise, so it
// has no privacy cost. It is written to survive any record, including
// hand-made or corrupted ones: values that cannot be drawn (NaN, ±Inf,
// negative probabilities or densities) are printed as they are and left
// out of the chart, and mismatched slice lengths fall back to index
// labels instead of failing.

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dpstream/dpstream/schema"
)

const (
	// minPlotWidth is the narrowest chart drawn; below it even one label
	// and a short bar do not fit.
	minPlotWidth = 20
	// defaultPlotWidth is used when neither --width nor $COLUMNS is set.
	defaultPlotWidth = 80
	// defaultMaxBars caps the lines of a histogram: with more bins,
	// adjacent bins are summed into groups so that a chart of a
	// 10000-bin release still fits on a screen or two instead of
	// scrolling for pages. Summing probabilities (and noisy counts) of
	// adjacent bins is post-processing, so the groups are as private as
	// the bins.
	defaultMaxBars = 50
	// defaultDensityRows is the height of a density chart in text rows.
	defaultDensityRows = 10
	// minBarCells is the room a bar column keeps before the numbers give
	// way: a narrower chart drops the count and then the percentage
	// column rather than squeeze the bars below it.
	minBarCells = 10
	// minBarFloor is the least bar column at all: when the labels leave
	// less, the lines overflow the width instead of losing the bars.
	minBarFloor = 4
)

// eighths are the left-aligned block characters of 1/8 to 8/8 of a cell,
// for horizontal bars.
var eighths = []rune("▏▎▍▌▋▊▉█")

// lowerEighths are the bottom-aligned block characters of 1/8 to 8/8 of a
// cell, for vertical bars.
var lowerEighths = []rune("▁▂▃▄▅▆▇█")

// ANSI SGR sequences used only when plotOptions.Color is set.
const (
	ansiBold   = "\x1b[1m"
	ansiCyan   = "\x1b[36m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// plotOptions says how plotRelease draws.
type plotOptions struct {
	// Width is the line width in terminal cells (at least minPlotWidth;
	// smaller values are raised to it).
	Width int
	// MaxBars is the most histogram lines; more bins are summed in groups
	// of adjacent bins (0: defaultMaxBars).
	MaxBars int
	// Rows is the height of a density chart (0: defaultDensityRows).
	Rows int
	// Color adds ANSI colors. The caller sets it only for a terminal.
	Color bool
}

func (o plotOptions) width() int   { return max(o.Width, minPlotWidth) }
func (o plotOptions) maxBars() int { return orDefault(o.MaxBars, defaultMaxBars) }
func (o plotOptions) rows() int    { return orDefault(o.Rows, defaultDensityRows) }

// paint wraps s in an ANSI color when colors are on. Layout is computed on
// the plain text first, so escape codes never count toward a width.
func (o plotOptions) paint(code, s string) string {
	if !o.Color || s == "" {
		return s
	}
	return code + s + ansiReset
}

// orDefault returns v, or def when v is not positive.
func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// plotWidth picks the chart width: the --width flag when given (> 0), else
// $COLUMNS when it is a positive integer, else 80. getenv is os.Getenv
// outside tests.
func plotWidth(flagWidth int, getenv func(string) string) int {
	if flagWidth > 0 {
		return max(flagWidth, minPlotWidth)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(getenv("COLUMNS"))); err == nil && n > 0 {
		return max(n, minPlotWidth)
	}
	return defaultPlotWidth
}

// isTerminal reports whether w is a character device (a terminal), the
// only place ANSI colors belong. NO_COLOR (https://no-color.org) turns
// colors off whatever the flag says.
func isTerminal(w io.Writer, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// plotRelease writes r as a header line, its chart or value, and a blank
// line. It never fails on the release's contents; the error is w's.
func plotRelease(w io.Writer, r schema.Release, o plotOptions) error {
	lines := append([]string{o.paint(ansiBold, plotHeader(r))}, plotBody(r, o)...)
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n\n")
	if err != nil {
		return fmt.Errorf("write plot of %s: %w", r.ReleaseID, err)
	}
	return nil
}

// plotHeader is the first line of every plotted release: which release,
// its window in UTC, its status and the stream's budget after it.
func plotHeader(r schema.Release) string {
	start, end := time.UnixMilli(r.WindowStart).UTC(), time.UnixMilli(r.WindowEnd).UTC()
	endLayout := "2006-01-02 15:04:05"
	if start.Format(time.DateOnly) == end.Format(time.DateOnly) {
		endLayout = "15:04:05"
	}
	kind := r.Kind
	if kind == "" {
		kind = "?"
	}
	status := r.Status
	if status == "" {
		status = "?"
	}
	return fmt.Sprintf("%s/%s (%s)  %s–%s UTC  %s  ε spent %s of %s",
		r.Stream, r.Release, kind, start.Format("2006-01-02 15:04:05"), end.Format(endLayout),
		status, formatEpsilon(r.EpsilonSpent), formatEpsilon(r.EpsilonBudget))
}

// formatEpsilon shows a privacy parameter with three significant digits,
// enough to read a budget by (the ledger has the exact values), without
// an exponent for values of 1000 and more.
func formatEpsilon(x float64) string {
	s := strconv.FormatFloat(x, 'g', 3, 64)
	if isFinite(x) && math.Abs(x) >= 1000 {
		s = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return s
}

// plotBody is everything after the header, chosen by status, kind and
// which fields the release carries.
func plotBody(r schema.Release, o plotOptions) []string {
	switch r.Status {
	case "ok":
	case "budget_exhausted":
		return []string{o.paint(ansiYellow, "refused: the stream's budget is exhausted; nothing was released for this window")}
	default:
		return []string{o.paint(ansiYellow, fmt.Sprintf("status %q: not plotted", r.Status))}
	}
	switch {
	case r.Kind == "density":
		return plotDensity(r, o)
	case r.Kind == "histogram" || len(r.Probabilities) > 0:
		return plotHistogram(r, o)
	case r.Value != nil:
		return []string{plotValue(r)}
	case len(r.Densities) > 0:
		return plotDensity(r, o)
	case r.Kind == "count" || r.Kind == "sum" || r.Kind == "mean":
		return []string{o.paint(ansiYellow, "no value in the release")}
	}
	return []string{o.paint(ansiYellow, fmt.Sprintf("kind %q: nothing to plot in the release", r.Kind))}
}

// plotValue is the line of a count, sum or mean: the value and its
// noise-only 95% half-width.
func plotValue(r schema.Release) string {
	s := "value " + formatNum(*r.Value)
	if r.Interval95 != nil {
		s += " ± " + formatNum(*r.Interval95) + " (95% noise interval)"
	}
	return s
}

// histGroup is one line of a histogram chart: one bin, or adjacent bins
// summed.
type histGroup struct {
	first, last int // bin indices, inclusive
	p           float64
	count       float64
	hasCount    bool // every bin of the group has a noisy count
}

// plotHistogram draws one horizontal bar per bin (or per group of adjacent
// bins when there are more than MaxBars): the edge range right-aligned,
// the bar proportional to the probability with the largest one filling
// the bar column, then the probability in % and the noisy count.
func plotHistogram(r schema.Release, o plotOptions) []string {
	n := len(r.Probabilities)
	if n == 0 {
		return []string{o.paint(ansiYellow, "histogram with no bins in the release")}
	}
	edgesOK := len(r.Edges) == n+1
	k := 1
	if n > o.maxBars() {
		k = (n + o.maxBars() - 1) / o.maxBars()
	}
	groups := make([]histGroup, 0, (n+k-1)/k)
	for first := 0; first < n; first += k {
		g := histGroup{first: first, last: min(first+k, n) - 1, hasCount: true}
		for i := g.first; i <= g.last; i++ {
			g.p += r.Probabilities[i]
			if i < len(r.NoisyCounts) {
				g.count += r.NoisyCounts[i]
			} else {
				g.hasCount = false
			}
		}
		groups = append(groups, g)
	}

	// Subheader: what the lines are.
	var sub strings.Builder
	fmt.Fprintf(&sub, "%d bins", n)
	if edgesOK {
		fmt.Fprintf(&sub, " on [%s, %s]", formatNum(r.Edges[0]), formatNum(r.Edges[n]))
	}
	if k > 1 {
		fmt.Fprintf(&sub, ", shown as %d groups of %d adjacent bins", len(groups), k)
		if last := groups[len(groups)-1]; last.last-last.first+1 != k {
			fmt.Fprintf(&sub, " (the last of %d)", last.last-last.first+1)
		}
		sub.WriteString(", probabilities and counts summed")
	}
	sub.WriteString("; bar ∝ probability, then probability and noisy count")
	if r.Interval95 != nil {
		fmt.Fprintf(&sub, " (± %s per bin, 95%%)", formatNum(*r.Interval95))
	}
	lines := []string{sub.String()}
	if !edgesOK {
		lines = append(lines, o.paint(ansiYellow, fmt.Sprintf("%d edges do not bound %d bins: bins are labelled by index", len(r.Edges), n)))
	}
	if len(r.NoisyCounts) != n {
		lines = append(lines, o.paint(ansiYellow, fmt.Sprintf("%d noisy counts for %d bins: missing ones shown as –", len(r.NoisyCounts), n)))
	}

	labels := histLabels(groups, r.Edges, edgesOK)
	pcts := make([]string, len(groups))
	counts := make([]string, len(groups))
	labelW, pctW, countW := 0, 0, 0
	top := 0.0 // largest drawable probability
	for i, g := range groups {
		pcts[i] = formatPercent(g.p)
		counts[i] = "–"
		if g.hasCount {
			counts[i] = formatNum(g.count)
		}
		labelW = max(labelW, runeLen(labels[i]))
		pctW = max(pctW, runeLen(pcts[i]))
		countW = max(countW, runeLen(counts[i]))
		if drawable(g.p) {
			top = math.Max(top, g.p)
		}
	}

	// Layout: label " │" bar " " pct "  " count, exactly Width cells;
	// drop the count, then the percentage, rather than squeeze the bar
	// below minBarCells; never make it narrower than minBarFloor.
	width := o.width()
	showPct, showCount := true, true
	barW := width - labelW - 2 - 1 - pctW - 2 - countW
	if barW < minBarCells {
		showCount = false
		barW = width - labelW - 2 - 1 - pctW
	}
	if barW < minBarCells {
		showPct = false
		barW = width - labelW - 2
	}
	barW = max(barW, minBarFloor)
	switch {
	case !showPct:
		lines[0] += fmt.Sprintf(" (%d columns are too few to show the numbers)", width)
	case !showCount:
		lines[0] += fmt.Sprintf(" (%d columns are too few to show the counts)", width)
	}

	for i, g := range groups {
		var bar string
		if drawable(g.p) {
			bar = o.paint(ansiCyan, hbar(g.p, top, barW))
		} else {
			bar = truncRunes("("+notDrawnReason(g.p)+")", barW)
		}
		line := pad(labels[i], labelW, true) + " │" + bar
		if showPct || showCount {
			line += strings.Repeat(" ", barW-runeLen(stripANSI(bar)))
		}
		if showPct {
			line += " " + pad(pcts[i], pctW, true)
		}
		if showCount {
			line += "  " + pad(counts[i], countW, true)
		}
		lines = append(lines, line)
	}
	return lines
}

// histLabels labels each group by its edge range, "[lo, hi)" with lo and
// hi right-aligned in their columns ("]" for the last, which includes the
// upper bound), or by bin index when the edges do not fit the bins.
func histLabels(groups []histGroup, edges []float64, edgesOK bool) []string {
	los := make([]string, len(groups))
	his := make([]string, len(groups))
	loW, hiW := 0, 0
	var shown []float64 // the edges that appear in labels, which set the decimals
	if edgesOK {
		for _, g := range groups {
			shown = append(shown, edges[g.first])
		}
		shown = append(shown, edges[groups[len(groups)-1].last+1])
	}
	format := edgeFormat(shown)
	for i, g := range groups {
		if edgesOK {
			los[i], his[i] = format(edges[g.first]), format(edges[g.last+1])
		} else {
			los[i], his[i] = "#"+strconv.Itoa(g.first), "#"+strconv.Itoa(g.last)
		}
		loW, hiW = max(loW, runeLen(los[i])), max(hiW, runeLen(his[i]))
	}
	labels := make([]string, len(groups))
	for i, g := range groups {
		switch {
		case !edgesOK && g.first == g.last:
			labels[i] = los[i]
		case !edgesOK:
			labels[i] = pad(los[i], loW, true) + "–" + pad(his[i], hiW, true)
		case i == len(groups)-1:
			labels[i] = "[" + pad(los[i], loW, true) + ", " + pad(his[i], hiW, true) + "]"
		default:
			labels[i] = "[" + pad(los[i], loW, true) + ", " + pad(his[i], hiW, true) + ")"
		}
	}
	return labels
}

// edgeFormat returns a formatter for edge labels with the fewest decimals
// that show every finite edge within 1% of the smallest gap between
// adjacent edges, so labels are short ("2", not "2.0000000000000004")
// yet adjacent bins never look alike. Very large or very small magnitudes
// use %g.
func edgeFormat(edges []float64) func(float64) string {
	maxAbs, gap := 0.0, math.Inf(1)
	for i, e := range edges {
		if !isFinite(e) {
			continue
		}
		maxAbs = math.Max(maxAbs, math.Abs(e))
		if i > 0 && isFinite(edges[i-1]) {
			if d := math.Abs(e - edges[i-1]); d > 0 {
				gap = math.Min(gap, d)
			}
		}
	}
	if maxAbs >= 1e9 || (maxAbs > 0 && maxAbs < 1e-4) {
		return func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	}
	tol := gap / 100
	if math.IsInf(gap, 1) {
		tol = 1e-9 * math.Max(1, maxAbs)
	}
	decimals := 12
	for d := 0; d < 12; d++ {
		ok := true
		for _, e := range edges {
			if !isFinite(e) {
				continue
			}
			back, _ := strconv.ParseFloat(strconv.FormatFloat(e, 'f', d, 64), 64)
			if math.Abs(back-e) > tol {
				ok = false
				break
			}
		}
		if ok {
			decimals = d
			break
		}
	}
	return func(x float64) string {
		if !isFinite(x) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		s := strconv.FormatFloat(x, 'f', decimals, 64)
		if s == "-0" || strings.TrimLeft(s, "-0.") == "" {
			s = strings.TrimPrefix(s, "-") // no "-0.0" label
		}
		return s
	}
}

// hbar is a horizontal bar of p/top × cells cells with 1/8-cell
// resolution (rounded to the nearest eighth), so the largest value fills
// all cells. A positive value too small to round to an eighth still gets
// one, so that a non-zero bin never looks empty; that is within one
// sub-block of its exact length.
func hbar(p, top float64, cells int) string {
	e := barEighths(p, top, cells)
	return strings.Repeat(string(eighths[7]), e/8) + partial(eighths, e%8)
}

// barEighths is the length in eighths of a cell of a bar of p where top
// fills cells cells.
func barEighths(p, top float64, cells int) int {
	if !(top > 0) || !(p > 0) {
		return 0
	}
	e := int(math.Round(math.Min(p/top, 1) * float64(cells*8)))
	return max(e, 1)
}

// partial is the block character of e eighths (1 ≤ e ≤ 7), or "" for 0.
func partial(blocks []rune, e int) string {
	if e <= 0 {
		return ""
	}
	return string(blocks[e-1])
}

// plotDensity draws a density given on a grid (Edges are the grid points,
// Densities the values) as Rows rows of vertical bars filling Width, with
// the maximum density at the top of the y axis and the grid's ends under
// the x axis. Each column is the mean of the curve through the grid
// points over the column's x range (see densityColumns), so a column can
// fall short of the top label, which is the largest grid value. A column
// that touches a value that cannot be drawn stays empty and is marked "?"
// on the x axis.
func plotDensity(r schema.Release, o plotOptions) []string {
	ys := r.Densities
	g := len(ys)
	if g == 0 {
		return []string{o.paint(ansiYellow, "density with no values in the release")}
	}
	var lines []string
	xs := make([]float64, g)
	switch {
	case len(r.Edges) == g && increasing(r.Edges):
		copy(xs, r.Edges)
	case len(r.Edges) == g+1 && increasing(r.Edges):
		// Bin edges around the values: draw each at its bin's midpoint.
		for i := range xs {
			xs[i] = r.Edges[i] + (r.Edges[i+1]-r.Edges[i])/2
		}
	default:
		for i := range xs {
			xs[i] = float64(i)
		}
		lines = append(lines, o.paint(ansiYellow, fmt.Sprintf("%d grid points for %d values (or not increasing): x is the value's index", len(r.Edges), g)))
	}

	top := 0.0
	var bad []int
	for i, y := range ys {
		if drawable(y) {
			top = math.Max(top, y)
		} else {
			bad = append(bad, i)
		}
	}
	topLabel := formatNum(top)
	yW := max(runeLen(topLabel), 1)
	width := o.width()
	cols := max(width-yW-2, minBarCells)
	rows := o.rows()

	vals, ok := densityColumns(xs, ys, cols)
	heights := make([]int, cols)
	for c := range cols {
		if ok[c] {
			heights[c] = barEighths(vals[c], top, rows)
		}
	}

	x0, x1 := xs[0], xs[g-1]
	lines = append([]string{fmt.Sprintf("density on [%s, %s], %d grid points; max %s", formatNum(x0), formatNum(x1), g, topLabel)}, lines...)
	for row := rows - 1; row >= 0; row-- {
		label, axis := strings.Repeat(" ", yW), " │"
		if row == rows-1 {
			label, axis = pad(topLabel, yW, true), " ┤"
		}
		var b strings.Builder
		for c := range cols {
			switch h := heights[c] - row*8; {
			case h >= 8:
				b.WriteRune(lowerEighths[7])
			case h > 0:
				b.WriteString(partial(lowerEighths, h))
			default:
				b.WriteByte(' ')
			}
		}
		lines = append(lines, label+axis+o.paint(ansiCyan, strings.TrimRight(b.String(), " ")))
	}
	var axisLine strings.Builder
	axisLine.WriteString(pad("0", yW, true) + " └")
	for c := range cols {
		if ok[c] {
			axisLine.WriteRune('─')
		} else {
			axisLine.WriteByte('?')
		}
	}
	lines = append(lines, axisLine.String())
	lo, hi := formatNum(x0), formatNum(x1)
	gapW := cols - runeLen(lo) - runeLen(hi)
	if gapW < 1 {
		gapW = 1
	}
	lines = append(lines, strings.Repeat(" ", yW+2)+lo+strings.Repeat(" ", gapW)+hi)
	if len(bad) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "not drawn: %d value(s) NaN, infinite or negative:", len(bad))
		for j, i := range bad {
			if j == 3 {
				b.WriteString(" …")
				break
			}
			fmt.Fprintf(&b, " x=%s: %s", formatNum(xs[i]), formatNum(ys[i]))
		}
		lines = append(lines, o.paint(ansiYellow, b.String()))
	}
	return lines
}

// densityColumns resamples the grid (xs increasing, ys values) to cols
// equal columns over [xs[0], xs[len-1]]: each column's value is the mean
// of the piecewise-linear curve through the grid points over the column's
// x range. That is the same rule for grids finer and coarser than the
// chart, it is symmetric (a symmetric density gives a symmetric chart),
// and it keeps the area: the columns integrate to what the curve does, so
// a narrow peak is drawn lower but not lost. ok[c] is false when a segment
// under column c has an end that cannot be drawn.
func densityColumns(xs, ys []float64, cols int) (vals []float64, ok []bool) {
	vals, ok = make([]float64, cols), make([]bool, cols)
	g := len(xs)
	x0, span := xs[0], xs[g-1]-xs[0]
	if g == 1 || !(span > 0) || math.IsInf(span, 0) {
		for c := range cols {
			vals[c], ok[c] = ys[0], drawable(ys[0])
		}
		return vals, ok
	}
	j := 0 // first segment [xs[j], xs[j+1]] that can overlap the column
	for c := range cols {
		a := x0 + span*float64(c)/float64(cols)
		b := x0 + span*float64(c+1)/float64(cols)
		if c == cols-1 {
			b = xs[g-1]
		}
		for j < g-2 && xs[j+1] <= a {
			j++
		}
		area, good := 0.0, true
		for k := j; k < g-1 && xs[k] < b; k++ {
			lo, hi := math.Max(a, xs[k]), math.Min(b, xs[k+1])
			if !(hi > lo) {
				continue
			}
			ya, yb := ys[k], ys[k+1]
			if !drawable(ya) || !drawable(yb) {
				good = false
				continue
			}
			// The curve is linear on the segment: its mean over [lo, hi]
			// is its value at the midpoint.
			t := ((lo+hi)/2 - xs[k]) / (xs[k+1] - xs[k])
			area += (hi - lo) * (ya + t*(yb-ya))
		}
		if good && b > a {
			vals[c], ok[c] = area/(b-a), true
		}
	}
	return vals, ok
}

// increasing reports whether xs is finite and strictly increasing.
func increasing(xs []float64) bool {
	for i, x := range xs {
		if !isFinite(x) || (i > 0 && !(x > xs[i-1])) {
			return false
		}
	}
	return true
}

// drawable reports whether v can be drawn as a bar: finite and not
// negative.
func drawable(v float64) bool { return isFinite(v) && v >= 0 }

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// notDrawnReason says why v is not drawn.
func notDrawnReason(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return "negative"
	}
}

// formatPercent shows a probability in percent with one decimal, or two
// significant digits below 0.1% so that a small non-zero probability, which
// has a visible bar, does not read "0.0%"; non-finite values as NaN, +Inf
// or -Inf.
func formatPercent(p float64) string {
	if !isFinite(p) {
		return strconv.FormatFloat(p, 'g', -1, 64)
	}
	if pc := 100 * p; pc != 0 && math.Abs(pc) < 0.05 {
		return strconv.FormatFloat(pc, 'g', 2, 64) + "%"
	}
	return strconv.FormatFloat(100*p, 'f', 1, 64) + "%"
}

// formatNum shows a released number compactly: integers in full (noisy
// counts are integers), other values with about six significant digits,
// non-finite ones as NaN, +Inf or -Inf.
func formatNum(x float64) string {
	switch {
	case !isFinite(x):
		return strconv.FormatFloat(x, 'g', -1, 64)
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) < 1e-4 || math.Abs(x) >= 1e15:
		return strconv.FormatFloat(x, 'g', 6, 64)
	}
	d := min(max(5-int(math.Floor(math.Log10(math.Abs(x)))), 0), 9)
	s := strconv.FormatFloat(x, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// pad pads s with spaces to w cells, on the left when right is set.
func pad(s string, w int, right bool) string {
	n := w - runeLen(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

// truncRunes cuts s to at most n runes.
func truncRunes(s string, n int) string {
	if runeLen(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// runeLen is the width of s in cells: every character the plots use
// (digits, box drawing, blocks) is one cell wide.
func runeLen(s string) int { return utf8.RuneCountInString(s) }

// stripANSI removes the SGR sequences paint adds.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := strings.IndexByte(s[i:], 'm')
			if j > 0 {
				i += j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
