package chart

import (
	"math"
	"strings"
)

// Series is one line of a Lines chart: its values at the chart's xs and
// the rune that marks it.
type Series struct {
	Name string
	Ys   []float64
	Mark rune
}

// Lines draws several curves over the same xs (finite, strictly
// increasing, at least two) as o.Height() rows of marks: each column shows,
// for every series, a mark at the row of the series' piecewise-linear
// value at the column's middle x, on a y axis from 0 to the largest
// drawable value (a later series' mark covers an earlier one's in a shared
// cell). Then the axis, the x labels (xs' ends) and a legend line. A value
// that cannot be drawn (NaN, ±Inf, negative) leaves its column without
// that series' mark.
func Lines(xs []float64, series []Series, o Options) []string {
	var all []float64
	for _, s := range series {
		all = append(all, s.Ys...)
	}
	top := Top(all)
	topLabel := Num(top)
	yW := max(Cells(topLabel), 1)
	cols := max(o.LineWidth()-yW-2, minBarCells)
	rows := o.Height()
	grid := make([][]rune, rows)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", cols))
	}
	lo, hi := xs[0], xs[len(xs)-1]
	for _, s := range series {
		for c := range cols {
			x := lo + (hi-lo)*(float64(c)+0.5)/float64(cols)
			y, ok := interpolate(xs, s.Ys, x)
			if !ok || !Drawable(y) || !(top > 0) {
				continue
			}
			r := int(math.Round(y / top * float64(rows-1)))
			grid[rows-1-r][c] = s.Mark
		}
	}
	var lines []string
	for r := range rows {
		label, axis := strings.Repeat(" ", yW), " │"
		if r == 0 {
			label, axis = Pad(topLabel, yW, true), " ┤"
		}
		lines = append(lines, label+axis+strings.TrimRight(string(grid[r]), " "))
	}
	lines = append(lines, Pad("0", yW, true)+" └"+strings.Repeat("─", cols))
	l, h := Num(lo), Num(hi)
	lines = append(lines, strings.Repeat(" ", yW+2)+l+strings.Repeat(" ", max(cols-Cells(l)-Cells(h), 1))+h)
	var legend []string
	for _, s := range series {
		legend = append(legend, string(s.Mark)+" "+s.Name)
	}
	return append(lines, strings.Repeat(" ", yW+2)+strings.Join(legend, "   "))
}

// interpolate returns the piecewise-linear value of (xs, ys) at x, within
// [xs[0], xs[len-1]]; ok is false when either end of its segment cannot
// be drawn.
func interpolate(xs, ys []float64, x float64) (float64, bool) {
	i := 1
	for i < len(xs)-1 && xs[i] < x {
		i++
	}
	a, b := ys[i-1], ys[i]
	if !Drawable(a) || !Drawable(b) {
		return 0, false
	}
	f := (x - xs[i-1]) / (xs[i] - xs[i-1])
	return a + f*(b-a), true
}
