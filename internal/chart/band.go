package chart

import (
	"math"
	"strings"
)

// The marks of a band chart, each one cell wide.
const (
	// BandFill shades the rows a column's band covers.
	BandFill = '░'
	// BandMid marks the row of a column's line (a released value).
	BandMid = '•'
	// BandTruth marks the row of a column's second line (an exact value).
	BandTruth = '×'
	// BandBoth marks a row where the two lines meet.
	BandBoth = '⊕'
)

// BandSeries is a series drawn by Band: at every point, a band [Lo, Hi]
// (an interval) around a line Mid (the estimate) and, optionally, a
// second line Truth (what the estimate estimates). Lo, Hi and Mid have
// one value per point, Truth one per point or none; First and Last label
// the x axis's ends (the first and last point).
type BandSeries struct {
	Lo, Hi, Mid []float64
	Truth       []float64
	First, Last string
}

// Band draws s as o.Height() rows over the width: each column summarizes
// the points that fall in it (at least the nearest one): the band from
// their lowest Lo to their highest Hi in BandFill, and the rows of the
// mean of their Mid (BandMid) and of their Truth (BandTruth; BandBoth
// where the two share a cell) over it. The y axis spans every drawable
// value, with the extremes labelled at the top and bottom rows and 0, when
// it is inside, on its own row; a column with a value that cannot be
// drawn (NaN, ±Inf) stays empty and is marked "?" on the x axis. It
// returns the rows, the axis line and the line of x labels, for the
// caller to put a subheader above. Lo, Hi and Mid must have the same,
// non-zero, length, and Truth that length or none; otherwise Band returns
// nil.
func Band(s BandSeries, o Options) []string {
	n := len(s.Mid)
	if n == 0 || len(s.Lo) != n || len(s.Hi) != n || (len(s.Truth) != 0 && len(s.Truth) != n) {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, vs := range [][]float64{s.Lo, s.Hi, s.Mid, s.Truth} {
		for _, v := range vs {
			if Finite(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo > hi { // nothing drawable
		lo, hi = 0, 0
	}
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	rows := o.Height()
	topLabel, botLabel := Num(hi), Num(lo)
	zero := -1 // the row holding 0, if it is inside and not an end row
	if lo < 0 && hi > 0 {
		if z := bandRow(0, lo, hi, rows); z > 0 && z < rows-1 {
			zero = z
		}
	}
	yW := max(Cells(topLabel), Cells(botLabel), 1)
	cols := max(o.LineWidth()-yW-2, minBarCells)

	grid := make([][]rune, rows) // grid[row][col], row 0 at the bottom
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", cols))
	}
	bad := make([]bool, cols)
	for c := range cols {
		a, b := c*n/cols, (c+1)*n/cols
		if b <= a { // fewer points than columns: the nearest point
			a = min((2*c+1)*n/(2*cols), n-1)
			b = a + 1
		}
		bLo, bHi, mid, truth := math.Inf(1), math.Inf(-1), 0.0, 0.0
		for i := a; i < b; i++ {
			vs := []float64{s.Lo[i], s.Hi[i], s.Mid[i]}
			if len(s.Truth) > 0 {
				vs = append(vs, s.Truth[i])
				truth += s.Truth[i]
			}
			for _, v := range vs {
				if !Finite(v) {
					bad[c] = true
				}
			}
			bLo, bHi, mid = math.Min(bLo, s.Lo[i]), math.Max(bHi, s.Hi[i]), mid+s.Mid[i]
		}
		if bad[c] {
			continue
		}
		k := float64(b - a)
		for r := bandRow(bLo, lo, hi, rows); r <= bandRow(bHi, lo, hi, rows); r++ {
			grid[r][c] = BandFill
		}
		m := bandRow(mid/k, lo, hi, rows)
		grid[m][c] = BandMid
		if len(s.Truth) > 0 {
			if t := bandRow(truth/k, lo, hi, rows); t == m {
				grid[t][c] = BandBoth
			} else {
				grid[t][c] = BandTruth
			}
		}
	}

	var lines []string
	for r := rows - 1; r >= 0; r-- {
		label, axis := strings.Repeat(" ", yW), " │"
		switch r {
		case rows - 1:
			label, axis = Pad(topLabel, yW, true), " ┤"
		case 0:
			label, axis = Pad(botLabel, yW, true), " ┤"
		case zero:
			label, axis = Pad("0", yW, true), " ┤"
		}
		lines = append(lines, label+axis+o.Paint(Cyan, strings.TrimRight(string(grid[r]), " ")))
	}
	var axisLine strings.Builder
	axisLine.WriteString(strings.Repeat(" ", yW) + " └")
	for c := range cols {
		if bad[c] {
			axisLine.WriteByte('?')
		} else {
			axisLine.WriteRune('─')
		}
	}
	lines = append(lines, axisLine.String())
	first, last := Clean(s.First, MaxName), Clean(s.Last, MaxName)
	gapW := max(cols-Cells(first)-Cells(last), 1)
	return append(lines, strings.Repeat(" ", yW+2)+first+strings.Repeat(" ", gapW)+last)
}

// bandRow is the row (0 at the bottom) of v on rows equal rows spanning
// [lo, hi], hi in the top row.
func bandRow(v, lo, hi float64, rows int) int {
	r := int(math.Floor((v - lo) / (hi - lo) * float64(rows)))
	return min(max(r, 0), rows-1)
}
