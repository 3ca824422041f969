package main

// Terminal charts of releases for 'dpstream tail releases --plot'.
//
// Everything here is post-processing of published releases: it reads only
// what a release already carries and never touches data or noise, so it
// has no privacy cost. It is written to survive any record, including
// hand-made or corrupted ones: values that cannot be drawn (NaN, ±Inf,
// negative probabilities or densities) are printed as they are and left
// out of the chart, mismatched slice lengths and shapes fall back to index
// labels (with a note) instead of failing, and names a release carries
// (fields, categories) are printed with control characters replaced, so
// a release cannot drive the terminal.

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
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
// which fields the release carries, and then a line on the synthetic
// samples, if the release has any.
func plotBody(r schema.Release, o plotOptions) []string {
	switch r.Status {
	case "ok":
	case "budget_exhausted":
		return []string{o.paint(ansiYellow, "refused: the stream's budget is exhausted; nothing was released for this window")}
	default:
		return []string{o.paint(ansiYellow, fmt.Sprintf("status %q: not plotted", r.Status))}
	}
	var lines []string
	switch {
	case r.Kind == "randomized_response":
		lines = plotRR(r, o)
	case r.Kind == "regression":
		lines = plotRegression(r, o)
	case r.Kind == "density":
		lines = plotDensity(r, o)
	case r.Kind == "histogram" || len(r.Probabilities) > 0:
		lines = plotHistogram(r, o)
	case r.Value != nil:
		lines = []string{plotValue(r)}
	case len(r.Densities) > 0:
		lines = plotDensity(r, o)
	case r.Kind == "count" || r.Kind == "sum" || r.Kind == "mean":
		lines = []string{o.paint(ansiYellow, "no value in the release")}
	default:
		lines = []string{o.paint(ansiYellow, fmt.Sprintf("kind %q: nothing to plot in the release", r.Kind))}
	}
	return append(lines, plotSamples(r, o)...)
}

// plotSamples is the line on a release's synthetic samples: how many,
// not the values, which are draws from the chart above it and would only
// repeat it noisily. A histogram's sample has one value per field; any
// other kind's has one value.
func plotSamples(r schema.Release, o plotOptions) []string {
	if len(r.Samples) == 0 {
		return nil
	}
	d := 1
	if r.Kind == "histogram" {
		switch {
		case len(r.Fields) > 0:
			d = len(r.Fields)
		case len(r.Shape) > 0:
			d = len(r.Shape)
		}
	}
	if len(r.Samples)%d != 0 {
		return []string{o.paint(ansiYellow, fmt.Sprintf("%d synthetic values do not make whole samples of %d fields: not counted", len(r.Samples), d))}
	}
	k := len(r.Samples) / d
	noun := "samples"
	if k == 1 {
		noun = "sample"
	}
	return []string{fmt.Sprintf("%d synthetic %s (drawn from this release; not plotted)", k, noun)}
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

// binsChart is what a bar chart of one field's bins is drawn from: a
// one-field histogram release, or one marginal of a histogram over more
// fields.
type binsChart struct {
	p        []float64 // probabilities, one per bin
	counts   []float64 // noisy counts, one per bin (missing ones shown as –)
	edges    []float64 // len(p)+1 edges, else the bins are labelled by index
	interval *float64  // the release's per-bin 95% half-width, if it applies
	// quiet leaves out the notes on edges and counts that do not fit the
	// bins: the caller has said already why they are missing.
	quiet bool
}

// plotHistogram draws a histogram release by its number of fields (the
// length of Shape): a bar chart for one field (plotBins, also for releases
// from before Shape existed, which have neither Shape nor Fields), a
// heatmap for two (plotHeatmap) and one bar chart per field of the
// field's marginal for three (plotMarginals). A Shape that does not fit
// the probabilities gets a note and the cells drawn as a flat list.
func plotHistogram(r schema.Release, o plotOptions) []string {
	n := len(r.Probabilities)
	if n == 0 {
		return []string{o.paint(ansiYellow, "histogram with no bins in the release")}
	}
	chart := binsChart{p: r.Probabilities, counts: r.NoisyCounts, edges: r.Edges, interval: r.Interval95}
	if len(r.Shape) == 0 && len(r.Fields) <= 1 {
		return plotBins(chart, o)
	}
	note := func(s string) string { return o.paint(ansiYellow, s) }
	// flat draws the cells in order, labelled by index: all that is
	// certain about them when the shape is wrong.
	flat := func(problem string) []string {
		lines := []string{note(problem + ": cells drawn as a flat list, labelled by index")}
		if len(r.NoisyCounts) != n {
			lines = append(lines, note(fmt.Sprintf("%d noisy counts for %d cells: missing ones shown as –", len(r.NoisyCounts), n)))
		}
		return append(lines, plotBins(binsChart{p: r.Probabilities, counts: r.NoisyCounts, quiet: true}, o)...)
	}
	if len(r.Shape) == 0 {
		return flat(fmt.Sprintf("%d field names and no shape", len(r.Fields)))
	}
	shape, problem := histShape(r.Shape, n)
	switch {
	case problem != "" && len(r.Shape) == 1:
		// One field: the bins are drawn as ever; only the shape is wrong.
		return append([]string{note(problem)}, plotBins(chart, o)...)
	case problem != "":
		return flat(problem)
	case len(shape) == 1 && len(r.Fields) > 1:
		return append([]string{note(fmt.Sprintf("%d field names for a histogram over 1 field", len(r.Fields)))}, plotBins(chart, o)...)
	case len(shape) == 1:
		return plotBins(chart, o)
	}
	return plotGrid(r, shape, o)
}

// histShape checks a histogram's Shape against its n cells: every field
// has at least one bin and the bins multiply to n. It returns the shape
// as ints, or what is wrong with it. The product is checked by division
// before each multiplication, so no shape, however large its entries,
// overflows.
func histShape(shape []int64, n int) ([]int, string) {
	for _, s := range shape {
		if s < 1 {
			return nil, fmt.Sprintf("shape %v has a field with %d bins", shape, s)
		}
	}
	out := make([]int, len(shape))
	prod := int64(1)
	for i, s := range shape {
		if s > math.MaxInt64/prod {
			return nil, fmt.Sprintf("shape %v has more cells than the %d probabilities", shape, n)
		}
		prod *= s
		out[i] = int(s) // s ≤ prod = n when the shape fits, else out is not returned
	}
	if prod != int64(n) {
		return nil, fmt.Sprintf("shape %v has %d cells, not the %d probabilities", shape, prod, n)
	}
	return out, ""
}

// plotBins draws one horizontal bar per bin (or per group of adjacent
// bins when there are more than MaxBars): the edge range right-aligned,
// the bar proportional to the probability with the largest one filling
// the bar column, then the probability in % and the noisy count.
func plotBins(h binsChart, o plotOptions) []string {
	n := len(h.p)
	if n == 0 {
		return []string{o.paint(ansiYellow, "histogram with no bins in the release")}
	}
	edgesOK := len(h.edges) == n+1
	k := 1
	if n > o.maxBars() {
		k = (n + o.maxBars() - 1) / o.maxBars()
	}
	groups := make([]histGroup, 0, (n+k-1)/k)
	for first := 0; first < n; first += k {
		g := histGroup{first: first, last: min(first+k, n) - 1, hasCount: true}
		for i := g.first; i <= g.last; i++ {
			g.p += h.p[i]
			if i < len(h.counts) {
				g.count += h.counts[i]
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
		fmt.Fprintf(&sub, " on [%s, %s]", formatNum(h.edges[0]), formatNum(h.edges[n]))
	}
	if k > 1 {
		fmt.Fprintf(&sub, ", shown as %d groups of %d adjacent bins", len(groups), k)
		if last := groups[len(groups)-1]; last.last-last.first+1 != k {
			fmt.Fprintf(&sub, " (the last of %d)", last.last-last.first+1)
		}
		sub.WriteString(", probabilities and counts summed")
	}
	sub.WriteString("; bar ∝ probability, then probability and noisy count")
	if h.interval != nil {
		fmt.Fprintf(&sub, " (± %s per bin, 95%%)", formatNum(*h.interval))
	}
	lines := []string{sub.String()}
	if !edgesOK && !h.quiet {
		lines = append(lines, o.paint(ansiYellow, fmt.Sprintf("%d edges do not bound %d bins: bins are labelled by index", len(h.edges), n)))
	}
	if len(h.counts) != n && !h.quiet {
		lines = append(lines, o.paint(ansiYellow, fmt.Sprintf("%d noisy counts for %d bins: missing ones shown as –", len(h.counts), n)))
	}

	labels := histLabels(groups, h.edges, edgesOK)
	rows := make([]barRow, len(groups))
	for i, g := range groups {
		rows[i] = barRow{label: labels[i], p: g.p, pct: formatPercent(g.p), num: "–"}
		if g.hasCount {
			rows[i].num = formatNum(g.count)
		}
	}
	bars, suffix := barLines(rows, "counts", o)
	lines[0] += suffix
	return append(lines, bars...)
}

// barRow is one line of a horizontal bar chart.
type barRow struct {
	label string  // right-aligned in the label column
	p     float64 // the bar's value; NaN, ±Inf and negative ones are not drawn
	pct   string  // the first number column
	num   string  // the second number column
}

// barLines lays out a horizontal bar chart: label " │" bar " " pct "  "
// num, exactly Width cells, each bar proportional to its p with the
// largest drawable p filling the bar column. Rather than squeeze the bars
// below minBarCells it drops the num column, then the pct column, and
// returns a suffix for the chart's subheader that says so (numName names
// the num column in it); it never makes the bars narrower than
// minBarFloor, which lets lines with very long labels overflow Width.
func barLines(rows []barRow, numName string, o plotOptions) (lines []string, suffix string) {
	labelW, pctW, numW := 0, 0, 0
	top := 0.0 // largest drawable value
	for _, r := range rows {
		labelW = max(labelW, runeLen(r.label))
		pctW = max(pctW, runeLen(r.pct))
		numW = max(numW, runeLen(r.num))
		if drawable(r.p) {
			top = math.Max(top, r.p)
		}
	}
	width := o.width()
	showPct, showNum := true, true
	barW := width - labelW - 2 - 1 - pctW - 2 - numW
	if barW < minBarCells {
		showNum = false
		barW = width - labelW - 2 - 1 - pctW
	}
	if barW < minBarCells {
		showPct = false
		barW = width - labelW - 2
	}
	barW = max(barW, minBarFloor)
	switch {
	case !showPct:
		suffix = fmt.Sprintf(" (%d columns are too few to show the numbers)", width)
	case !showNum:
		suffix = fmt.Sprintf(" (%d columns are too few to show the %s)", width, numName)
	}
	for _, r := range rows {
		var bar string
		if drawable(r.p) {
			bar = o.paint(ansiCyan, hbar(r.p, top, barW))
		} else {
			bar = truncRunes("("+notDrawnReason(r.p)+")", barW)
		}
		line := pad(r.label, labelW, true) + " │" + bar
		if showPct || showNum {
			line += strings.Repeat(" ", barW-runeLen(stripANSI(bar)))
		}
		if showPct {
			line += " " + pad(r.pct, pctW, true)
		}
		if showNum {
			line += "  " + pad(r.num, numW, true)
		}
		lines = append(lines, line)
	}
	return lines, suffix
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

const (
	// maxHeatRows caps the rows of a heatmap: with more bins in the first
	// field, adjacent rows are summed in groups (post-processing, like
	// the groups of a bar chart) so the map fits a screen.
	maxHeatRows = 24
	// maxHeatCellW is the widest a heatmap cell is drawn. Two cells of
	// width make a roughly square character cell; a few more keep a map of
	// few columns readable without turning it into bars.
	maxHeatCellW = 4
)

// heatRamp shades a heatmap cell by its share of the largest cell: blank
// for 0, then ░ ▒ ▓ █ for up to ¼, ½, ¾ and all of it.
var heatRamp = []rune(" ░▒▓█")

// heatColors are eight 256-colour foregrounds, from dim blue to yellow,
// that refine the four shades to eighths when colours are on: level l
// (1..8) is drawn as heatRamp[⌈l/2⌉] in heatColors[l-1], so the colours
// add resolution without changing a character.
var heatColors = []string{
	"\x1b[38;5;61m", "\x1b[38;5;67m", "\x1b[38;5;73m", "\x1b[38;5;79m",
	"\x1b[38;5;114m", "\x1b[38;5;150m", "\x1b[38;5;186m", "\x1b[38;5;226m",
}

// Longest names drawn, in cells; longer ones are cut with "…" so that a
// stray long name cannot push a chart off the screen.
const maxFieldName = 40

// plotGrid draws a histogram over two or more fields whose shape fits its
// cells: a heatmap for two fields, one-field marginals for more. Edges
// and field names that do not fit the shape get a note and index labels
// or generic names instead.
func plotGrid(r schema.Release, shape []int, o plotOptions) []string {
	n := len(r.Probabilities)
	dims := len(shape)
	var notes []string
	note := func(format string, args ...any) {
		notes = append(notes, o.paint(ansiYellow, fmt.Sprintf(format, args...)))
	}
	names := make([]string, dims)
	for i := range names {
		names[i] = fmt.Sprintf("field %d", i+1)
		if len(r.Fields) == dims && r.Fields[i] != "" {
			names[i] = cleanText(r.Fields[i], maxFieldName)
		}
	}
	if len(r.Fields) != dims {
		note("%d field names for a histogram over %d fields: fields are numbered", len(r.Fields), dims)
	}
	if dims > 3 {
		note("histogram over %d fields (at most 3 are expected): drawn as one-field marginals", dims)
	}
	want := 0
	for _, m := range shape {
		want += m + 1
	}
	var axes [][]float64 // each field's edges; nil when Edges do not fit the shape
	if len(r.Edges) == want {
		axes = make([][]float64, dims)
		off := 0
		for i, m := range shape {
			axes[i] = r.Edges[off : off+m+1]
			off += m + 1
		}
	} else {
		note("%d edges for shape %v, not %d: bins are labelled by index", len(r.Edges), r.Shape, want)
	}
	countsOK := len(r.NoisyCounts) == n
	bad := 0
	for _, p := range r.Probabilities {
		if !drawable(p) {
			bad++
		}
	}

	var sub strings.Builder
	for i, m := range shape {
		if i > 0 {
			sub.WriteString(" × ")
		}
		sub.WriteString(strconv.Itoa(m))
	}
	fmt.Fprintf(&sub, " bins over %s", strings.Join(names, " × "))
	if axes != nil {
		sub.WriteString(" on ")
		for i, e := range axes {
			if i > 0 {
				sub.WriteString(" × ")
			}
			fmt.Fprintf(&sub, "[%s, %s]", formatNum(e[0]), formatNum(e[len(e)-1]))
		}
	}

	if dims == 2 {
		if !countsOK {
			note("%d noisy counts for %d cells (the heatmap does not use them)", len(r.NoisyCounts), n)
		}
		if bad > 0 {
			note("%d of %d cells NaN, infinite or negative: shown as ?", bad, n)
		}
		return plotHeatmap(r.Probabilities, shape, axes, names, sub.String(), notes, o)
	}
	if !countsOK {
		note("%d noisy counts for %d cells: marginal counts shown as –", len(r.NoisyCounts), n)
	}
	if bad > 0 {
		note("%d of %d cells NaN, infinite or negative: the marginals through them are not drawn or are off", bad, n)
	}
	sub.WriteString(": one-field marginals, probabilities and noisy counts summed over the other fields")
	lines := append([]string{sub.String()}, notes...)
	margP := marginals(r.Probabilities, shape)
	var margC [][]float64
	if countsOK {
		margC = marginals(r.NoisyCounts, shape)
	}
	for i := range shape {
		others := make([]string, 0, dims-1)
		others = append(others, names[:i]...)
		others = append(others, names[i+1:]...)
		title := fmt.Sprintf("marginal of %s (summed over %s)", names[i], strings.Join(others, ", "))
		chart := binsChart{p: margP[i], quiet: true}
		if countsOK {
			chart.counts = margC[i]
		}
		if axes != nil {
			chart.edges = axes[i]
		}
		lines = append(lines, "", o.paint(ansiBold, title))
		lines = append(lines, plotBins(chart, o)...)
	}
	return lines
}

// marginals sums the cells of a histogram of the given shape (row-major,
// last field fastest) over all fields but one, for each field in turn:
// marginals(v, shape)[i][j] is the sum of the cells whose i-th field is in
// bin j. Summing released cells is post-processing. len(v) must be the
// product of shape.
func marginals(v []float64, shape []int) [][]float64 {
	out := make([][]float64, len(shape))
	for i, m := range shape {
		out[i] = make([]float64, m)
	}
	idx := make([]int, len(shape)) // the multi-index of cell c
	for _, x := range v {
		for i, j := range idx {
			out[i][j] += x
		}
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out
}

// plotHeatmap draws a histogram over two fields as a heatmap: one text
// row per bin of the first field (labelled by its lower edge), one cell
// per bin of the second, shaded by probability (heatRamp, refined by
// heatColors when colours are on) relative to the largest cell; then an
// x axis with the second field's first and last edges and a legend. More
// than maxHeatRows rows, or more columns than the width leaves, are summed
// in groups of adjacent bins (heatCells). sub is the subheader so far and
// notes the caller's notes, which follow it.
func plotHeatmap(p []float64, shape []int, axes [][]float64, names []string, sub string, notes []string, o plotOptions) []string {
	rowsN, colsN := shape[0], shape[1]
	kr := ceilDiv(rowsN, maxHeatRows)
	nr := ceilDiv(rowsN, kr)

	labels := make([]string, nr)
	if axes != nil {
		shown := make([]float64, 0, nr+1) // the edges that set the decimals
		for g := range nr {
			shown = append(shown, axes[0][g*kr])
		}
		format := edgeFormat(append(shown, axes[0][rowsN]))
		for g := range nr {
			labels[g] = format(axes[0][g*kr])
		}
	} else {
		for g := range nr {
			labels[g] = "#" + strconv.Itoa(g*kr)
		}
	}
	labelW := 0
	for _, l := range labels {
		labelW = max(labelW, runeLen(l))
	}
	width := o.width()
	avail := max(width-labelW-2, minBarFloor)
	kc := ceilDiv(colsN, avail)
	nc := ceilDiv(colsN, kc)
	cellW := min(max(avail/nc, 1), maxHeatCellW)
	gridW := nc * cellW

	cells := heatCells(p, rowsN, colsN, kr, kc)
	top := 0.0
	for _, row := range cells {
		for _, v := range row {
			if drawable(v) {
				top = math.Max(top, v)
			}
		}
	}

	if kr > 1 || kc > 1 {
		sub += fmt.Sprintf(", shown as %d × %d cells of up to %d × %d adjacent bins, probabilities summed", nr, nc, kr, kc)
	}
	sub += "; shade ∝ probability"
	lines := append([]string{sub}, notes...)
	for g, row := range cells {
		// Runs of cells of one level are painted as one, so colours cost
		// one escape sequence per run, not per cell.
		var b strings.Builder
		for c := 0; c < len(row); {
			l := heatLevel(row[c], top) // -1: not drawable
			end := c + 1
			for end < len(row) && heatLevel(row[end], top) == l {
				end++
			}
			n := (end - c) * cellW
			switch {
			case l < 0:
				b.WriteString(o.paint(ansiYellow, strings.Repeat("?", n)))
			case l == 0:
				b.WriteString(strings.Repeat(" ", n))
			default:
				b.WriteString(o.paint(heatColors[l-1], strings.Repeat(string(heatRamp[(l+1)/2]), n)))
			}
			c = end
		}
		lines = append(lines, pad(labels[g], labelW, true)+" │"+b.String())
	}
	lines = append(lines, strings.Repeat(" ", labelW)+" └"+strings.Repeat("─", gridW))

	lo, hi := "#0", "#"+strconv.Itoa(colsN-1)
	if axes != nil {
		shown := make([]float64, 0, nc+1)
		for g := range nc {
			shown = append(shown, axes[1][g*kc])
		}
		format := edgeFormat(append(shown, axes[1][colsN]))
		lo, hi = format(axes[1][0]), format(axes[1][colsN])
	}
	// lo under the first column and hi ending under the last; when they
	// are wider than the grid, moved left to stay within the width.
	x := lo + strings.Repeat(" ", max(gridW-runeLen(lo)-runeLen(hi), 1)) + hi
	indent := min(labelW+2, max(width-runeLen(x), 0))
	lines = append(lines, truncRunes(strings.Repeat(" ", indent)+x, width))

	var ramp strings.Builder
	for l := 2; l <= 8; l += 2 {
		ramp.WriteString(o.paint(heatColors[l-1], string(heatRamp[l/2])))
	}
	lines = append(lines, fmt.Sprintf("█ = largest cell, %s; %s up to ¼ ½ ¾ 1 of it; rows: %s, columns: %s",
		formatPercent(top), ramp.String(), names[0], names[1]))
	return lines
}

// heatCells sums a rows × cols grid p (row-major) over blocks of kr
// adjacent rows and kc adjacent columns, the last blocks possibly smaller:
// ⌈rows/kr⌉ rows of ⌈cols/kc⌉ sums, which add up to the sum of p.
func heatCells(p []float64, rows, cols, kr, kc int) [][]float64 {
	out := make([][]float64, ceilDiv(rows, kr))
	for g := range out {
		out[g] = make([]float64, ceilDiv(cols, kc))
	}
	for i := range rows {
		for j := range cols {
			out[i/kr][j/kc] += p[i*cols+j]
		}
	}
	return out
}

// heatLevel is the shade of v where top is the darkest: -1 when v cannot
// be drawn (NaN, ±Inf, negative), 0 when v or top is 0, else ⌈8·v/top⌉ in
// 1..8, so that any positive cell is visible and exactly the cells above
// ⅞ of the largest get the top level (above ¾ the darkest character).
func heatLevel(v, top float64) int {
	if !drawable(v) {
		return -1
	}
	if !(top > 0) || !(v > 0) {
		return 0
	}
	return min(max(int(math.Ceil(8*v/top)), 1), 8)
}

// ceilDiv is ⌈a/b⌉ for a ≥ 0 and b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// rrZ is the normal quantile of the ±1.96 standard errors shown beside a
// debiased count: an approximate 95% interval, as the standard errors
// themselves rest on a normal approximation.
const rrZ = 1.96

// plotRR draws a randomized_response release: one bar per category,
// proportional to its debiased frequency (Probabilities, on the simplex),
// labelled by the category's name, then the frequency and the debiased
// count ± 1.96 standard errors; and a footer with the producers' local ε.
// Lengths that do not fit the categories get a note and index labels or
// "–".
func plotRR(r schema.Release, o plotOptions) []string {
	n := len(r.Probabilities)
	if n == 0 {
		return []string{o.paint(ansiYellow, "randomized_response with no frequencies in the release")}
	}
	var sub strings.Builder
	fmt.Fprintf(&sub, "%d categories", n)
	if len(r.Fields) == 1 {
		fmt.Fprintf(&sub, " of %s", cleanText(r.Fields[0], maxFieldName))
	}
	sub.WriteString("; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors")
	lines := []string{""}
	note := func(format string, args ...any) {
		lines = append(lines, o.paint(ansiYellow, fmt.Sprintf(format, args...)))
	}
	namesOK := len(r.Categories) == n
	if !namesOK {
		note("%d category names for %d frequencies: categories are labelled by index", len(r.Categories), n)
	}
	countsOK, errsOK := len(r.DebiasedCounts) == n, len(r.StdErrors) == n
	switch {
	case !countsOK:
		note("%d debiased counts for %d categories: counts shown as –", len(r.DebiasedCounts), n)
	case !errsOK:
		note("%d standard errors for %d categories: counts shown without them", len(r.StdErrors), n)
	}
	bad, sum := 0, 0.0
	for _, p := range r.Probabilities {
		if !drawable(p) {
			bad++
		}
		sum += p
	}
	switch {
	case bad > 0:
		note("%d of %d frequencies NaN, infinite or negative: not drawn", bad, n)
	case math.Abs(sum-1) > 1e-6:
		note("frequencies sum to %s, not 1", formatNum(sum))
	}

	maxLabel := max(o.width()/3, 8)
	labels := make([]string, n)
	labelW := 0
	for i := range labels {
		labels[i] = "#" + strconv.Itoa(i)
		if namesOK {
			labels[i] = cleanText(r.Categories[i], maxLabel)
			if labels[i] == "" {
				labels[i] = `""`
			}
		}
		labelW = max(labelW, runeLen(labels[i]))
	}
	rows := make([]barRow, n)
	for i, p := range r.Probabilities {
		// Names read left-aligned; barLines right-aligns what is left.
		rows[i] = barRow{label: pad(labels[i], labelW, false), p: p, pct: formatPercent(p), num: "–"}
		if countsOK {
			rows[i].num = formatNum(r.DebiasedCounts[i])
			if errsOK {
				rows[i].num += " ± " + formatNum(rrZ*r.StdErrors[i])
			}
		}
	}
	bars, suffix := barLines(rows, "debiased counts", o)
	lines[0] = sub.String() + suffix
	lines = append(lines, bars...)
	if r.LocalEpsilon == nil {
		lines = append(lines, o.paint(ansiYellow, "no local ε in the release (randomized by producers); central noise as configured"))
	} else {
		lines = append(lines, fmt.Sprintf("local ε = %s per report (randomized by producers); central noise as configured", formatEpsilon(*r.LocalEpsilon)))
	}
	return lines
}

// plotRegression draws a regression release as a table: one row per
// feature with its name, its coefficient on the original scale and, when
// the release has standard errors, ± 1.96 of them (an approximate 95%
// interval of the privacy noise alone, not of sampling error); then the
// intercept, and footer lines with the method and the ridge λ the
// mechanism used (on the scaled problem, where features and target lie in
// [−1, 1]). The window is in the header. Lengths that do not fit the
// coefficients, and values that are NaN, infinite or (for standard errors
// and the ridge) negative, get a yellow note and are printed as they are.
// A pcls release marks the features its selection left out (not in
// Selected) as "not selected" instead of giving their 0 an interval.
func plotRegression(r schema.Release, o plotOptions) []string {
	n := len(r.Coefficients)
	if n == 0 {
		return []string{o.paint(ansiYellow, "regression with no coefficients in the release")}
	}
	lines := []string{""}
	note := func(format string, args ...any) {
		lines = append(lines, o.paint(ansiYellow, fmt.Sprintf(format, args...)))
	}
	namesOK := len(r.Fields) == n
	if !namesOK {
		note("%d feature names for %d coefficients: features are labelled by index", len(r.Fields), n)
	}
	errsOK := len(r.StdErrors) == n
	if len(r.StdErrors) > 0 && !errsOK {
		note("%d standard errors for %d coefficients: coefficients shown without them", len(r.StdErrors), n)
	}
	bad := 0
	for _, c := range r.Coefficients {
		if !isFinite(c) {
			bad++
		}
	}
	if bad > 0 {
		note("%d of %d coefficients NaN or infinite", bad, n)
	}
	if errsOK {
		badSE := 0
		for _, se := range r.StdErrors {
			if !drawable(se) {
				badSE++
			}
		}
		if badSE > 0 {
			note("%d of %d standard errors NaN, infinite or negative", badSE, n)
		}
	}
	if r.Intercept == nil {
		note("no intercept in the release")
	} else if !isFinite(*r.Intercept) {
		note("intercept %s", formatNum(*r.Intercept))
	}

	// "(intercept)" cannot be confused with a feature of that name.
	const icptLabel = "(intercept)"
	maxLabel := max(o.width()/3, 8)
	labels := make([]string, n)
	labelW := runeLen("feature")
	if r.Intercept != nil {
		labelW = max(labelW, runeLen(icptLabel))
	}
	for i := range labels {
		labels[i] = "#" + strconv.Itoa(i)
		if namesOK {
			labels[i] = cleanText(r.Fields[i], maxLabel)
			if labels[i] == "" {
				labels[i] = `""`
			}
		}
		labelW = max(labelW, runeLen(labels[i]))
	}
	coefs := make([]string, n)
	coefW := runeLen("coefficient")
	for i, c := range r.Coefficients {
		coefs[i] = formatNum(c)
		coefW = max(coefW, runeLen(coefs[i]))
	}
	var icpt string
	if r.Intercept != nil {
		icpt = formatNum(*r.Intercept)
		coefW = max(coefW, runeLen(icpt))
	}
	row := func(label, coef, pm string) string {
		s := pad(label, labelW, false) + "  " + pad(coef, coefW, true)
		if pm != "" {
			s += "  " + pm
		}
		return s
	}

	sub := fmt.Sprintf("%d feature", n)
	if n != 1 {
		sub += "s"
	}
	head := "± 1.96·SE"
	if errsOK {
		sub += "; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)"
	} else {
		sub += "; coefficients (no standard errors in the release)"
		head = ""
	}
	lines[0] = sub
	lines = append(lines, row("feature", "coefficient", head))
	for i := range coefs {
		pm := ""
		switch {
		case len(r.Selected) > 0 && namesOK && !slices.Contains(r.Selected, r.Fields[i]):
			// pcls: the selection left this feature out; its 0 is not
			// an estimate.
			pm = "not selected"
		case errsOK:
			pm = "± " + formatNum(rrZ*r.StdErrors[i])
		}
		lines = append(lines, row(labels[i], coefs[i], pm))
	}
	if r.Intercept != nil {
		lines = append(lines, row(icptLabel, icpt, ""))
	}

	method := "?"
	if r.Method != "" {
		method = cleanText(r.Method, maxFieldName)
	}
	lines = append(lines, "method "+method)
	if r.Ridge != nil {
		lines = append(lines, "ridge λ = "+formatNum(*r.Ridge)+" (on the scaled problem)")
	}
	if r.Method == "" {
		note("no method in the release")
	}
	if r.Ridge == nil {
		note("no ridge in the release")
	} else if !drawable(*r.Ridge) {
		note("ridge %s: want a finite λ ≥ 0", formatNum(*r.Ridge))
	}
	return lines
}

// cleanText makes a name from a release safe and short to print: every
// character that is not printable (control characters, escape sequences
// that could drive the terminal) becomes '?', and a name longer than
// maxCells cells is cut to end in "…".
func cleanText(s string, maxCells int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
	if runeLen(s) > maxCells {
		s = truncRunes(s, max(maxCells-1, 0)) + "…"
	}
	return s
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
