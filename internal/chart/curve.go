package chart

import (
	"math"
	"strings"
)

// Curve draws the curve through the points (xs[i], ys[i]) as o.Height()
// rows of vertical bars filling the width, with the largest drawable y
// (Top) at the top of the y axis and xs' ends under the x axis: the rows,
// the axis line and the line of x labels, for the caller to put a
// subheader above. xs must be as long as ys (at least one point), finite
// and strictly increasing. Each column is the mean of the curve over the
// column's x range (see columns), so a column can fall short of the top
// label. A column that touches a y that cannot be drawn (NaN, ±Inf,
// negative) stays empty and is marked "?" on the x axis.
func Curve(xs, ys []float64, o Options) []string {
	g := len(ys)
	top := Top(ys)
	topLabel := Num(top)
	yW := max(Cells(topLabel), 1)
	width := o.LineWidth()
	cols := max(width-yW-2, minBarCells)
	rows := o.Height()

	vals, ok := columns(xs, ys, cols)
	heights := make([]int, cols)
	for c := range cols {
		if ok[c] {
			heights[c] = barEighths(vals[c], top, rows)
		}
	}

	var lines []string
	for row := rows - 1; row >= 0; row-- {
		label, axis := strings.Repeat(" ", yW), " │"
		if row == rows-1 {
			label, axis = Pad(topLabel, yW, true), " ┤"
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
		lines = append(lines, label+axis+o.Paint(Cyan, strings.TrimRight(b.String(), " ")))
	}
	var axisLine strings.Builder
	axisLine.WriteString(Pad("0", yW, true) + " └")
	for c := range cols {
		if ok[c] {
			axisLine.WriteRune('─')
		} else {
			axisLine.WriteByte('?')
		}
	}
	lines = append(lines, axisLine.String())
	lo, hi := Num(xs[0]), Num(xs[g-1])
	gapW := cols - Cells(lo) - Cells(hi)
	if gapW < 1 {
		gapW = 1
	}
	return append(lines, strings.Repeat(" ", yW+2)+lo+strings.Repeat(" ", gapW)+hi)
}

// columns resamples the curve (xs increasing, ys values) to cols equal
// columns over [xs[0], xs[len-1]]: each column's value is the mean of the
// piecewise-linear curve through the points over the column's x range.
// That is the same rule for grids finer and coarser than the chart, it is
// symmetric (a symmetric curve gives a symmetric chart), and it keeps the
// area: the columns integrate to what the curve does, so a narrow peak is
// drawn lower but not lost. ok[c] is false when a segment under column c
// has an end that cannot be drawn.
func columns(xs, ys []float64, cols int) (vals []float64, ok []bool) {
	vals, ok = make([]float64, cols), make([]bool, cols)
	g := len(xs)
	x0, span := xs[0], xs[g-1]-xs[0]
	if g == 1 || !(span > 0) || math.IsInf(span, 0) {
		for c := range cols {
			vals[c], ok[c] = ys[0], Drawable(ys[0])
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
			if !Drawable(ya) || !Drawable(yb) {
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
