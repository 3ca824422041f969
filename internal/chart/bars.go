package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// eighths are the left-aligned block characters of 1/8 to 8/8 of a cell,
// for horizontal bars.
var eighths = []rune("▏▎▍▌▋▊▉█")

// lowerEighths are the bottom-aligned block characters of 1/8 to 8/8 of a
// cell, for vertical bars.
var lowerEighths = []rune("▁▂▃▄▅▆▇█")

// Row is one line of a horizontal bar chart (Bars).
type Row struct {
	Label string  // right-aligned in the label column (pad it to align it left)
	Value float64 // the bar's value; NaN, ±Inf and negative ones are not drawn
	Pct   string  // the first number column
	Num   string  // the second number column
}

// Bars lays out a horizontal bar chart: label " │" bar " " pct "  " num,
// exactly Width cells, each bar proportional to its value with the
// largest drawable value filling the bar column. Rather than squeeze the
// bars below minBarCells it drops the num column, then the pct column,
// and returns a suffix for the chart's subheader that says so (numName
// names the num column in it); it never makes the bars narrower than
// minBarFloor, which lets lines with very long labels overflow Width.
func Bars(rows []Row, numName string, o Options) (lines []string, suffix string) {
	labelW, pctW, numW := 0, 0, 0
	top := 0.0 // largest drawable value
	for _, r := range rows {
		labelW = max(labelW, Cells(r.Label))
		pctW = max(pctW, Cells(r.Pct))
		numW = max(numW, Cells(r.Num))
		if Drawable(r.Value) {
			top = math.Max(top, r.Value)
		}
	}
	width := o.LineWidth()
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
		if Drawable(r.Value) {
			bar = o.Paint(Cyan, hbar(r.Value, top, barW))
		} else {
			bar = truncRunes("("+notDrawnReason(r.Value)+")", barW)
		}
		line := Pad(r.Label, labelW, true) + " │" + bar
		if showPct || showNum {
			line += strings.Repeat(" ", barW-Cells(StripANSI(bar)))
		}
		if showPct {
			line += " " + Pad(r.Pct, pctW, true)
		}
		if showNum {
			line += "  " + Pad(r.Num, numW, true)
		}
		lines = append(lines, line)
	}
	return lines, suffix
}

// Bins is what a bar chart of one field's bins is drawn from: the
// probabilities of a histogram's bins, or of one marginal of a histogram
// over more fields.
type Bins struct {
	P        []float64 // probabilities, one per bin
	Counts   []float64 // noisy counts, one per bin (missing ones shown as –)
	Edges    []float64 // len(P)+1 edges, else the bins are labelled by index
	Interval *float64  // the per-bin 95% half-width, if it applies
	// Quiet leaves out the notes on edges and counts that do not fit the
	// bins: the caller has said already why they are missing.
	Quiet bool
}

// binGroup is one line of a chart of bins: one bin, or adjacent bins
// summed.
type binGroup struct {
	first, last int // bin indices, inclusive
	p           float64
	count       float64
	hasCount    bool // every bin of the group has a noisy count
}

// Draw draws one horizontal bar per bin (or per group of adjacent bins
// when there are more than o.BarLimit()): a subheader, then per line the
// edge range right-aligned, the bar proportional to the probability with
// the largest one filling the bar column, then the probability in % and
// the noisy count.
func (h Bins) Draw(o Options) []string {
	n := len(h.P)
	if n == 0 {
		return []string{o.Note("no bins in the release")}
	}
	edgesOK := len(h.Edges) == n+1
	k := 1
	if n > o.BarLimit() {
		k = (n + o.BarLimit() - 1) / o.BarLimit()
	}
	groups := make([]binGroup, 0, (n+k-1)/k)
	for first := 0; first < n; first += k {
		g := binGroup{first: first, last: min(first+k, n) - 1, hasCount: true}
		for i := g.first; i <= g.last; i++ {
			g.p += h.P[i]
			if i < len(h.Counts) {
				g.count += h.Counts[i]
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
		fmt.Fprintf(&sub, " on [%s, %s]", Num(h.Edges[0]), Num(h.Edges[n]))
	}
	if k > 1 {
		fmt.Fprintf(&sub, ", shown as %d groups of %d adjacent bins", len(groups), k)
		if last := groups[len(groups)-1]; last.last-last.first+1 != k {
			fmt.Fprintf(&sub, " (the last of %d)", last.last-last.first+1)
		}
		sub.WriteString(", probabilities and counts summed")
	}
	sub.WriteString("; bar ∝ probability, then probability and noisy count")
	if h.Interval != nil {
		fmt.Fprintf(&sub, " (± %s per bin, 95%%)", Num(*h.Interval))
	}
	lines := []string{sub.String()}
	if !edgesOK && !h.Quiet {
		lines = append(lines, o.Note(fmt.Sprintf("%d edges do not bound %d bins: bins are labelled by index", len(h.Edges), n)))
	}
	if len(h.Counts) != n && !h.Quiet {
		lines = append(lines, o.Note(fmt.Sprintf("%d noisy counts for %d bins: missing ones shown as –", len(h.Counts), n)))
	}

	labels := binLabels(groups, h.Edges, edgesOK)
	rows := make([]Row, len(groups))
	for i, g := range groups {
		rows[i] = Row{Label: labels[i], Value: g.p, Pct: Percent(g.p), Num: "–"}
		if g.hasCount {
			rows[i].Num = Num(g.count)
		}
	}
	bars, suffix := Bars(rows, "counts", o)
	lines[0] += suffix
	return append(lines, bars...)
}

// binLabels labels each group by its edge range, "[lo, hi)" with lo and
// hi right-aligned in their columns ("]" for the last, which includes the
// upper bound), or by bin index when the edges do not fit the bins.
func binLabels(groups []binGroup, edges []float64, edgesOK bool) []string {
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
		loW, hiW = max(loW, Cells(los[i])), max(hiW, Cells(his[i]))
	}
	labels := make([]string, len(groups))
	for i, g := range groups {
		switch {
		case !edgesOK && g.first == g.last:
			labels[i] = los[i]
		case !edgesOK:
			labels[i] = Pad(los[i], loW, true) + "–" + Pad(his[i], hiW, true)
		case i == len(groups)-1:
			labels[i] = "[" + Pad(los[i], loW, true) + ", " + Pad(his[i], hiW, true) + "]"
		default:
			labels[i] = "[" + Pad(los[i], loW, true) + ", " + Pad(his[i], hiW, true) + ")"
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
		if !Finite(e) {
			continue
		}
		maxAbs = math.Max(maxAbs, math.Abs(e))
		if i > 0 && Finite(edges[i-1]) {
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
			if !Finite(e) {
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
		if !Finite(x) {
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
