package chart

import (
	"math"
	"strings"
	"testing"
)

// TestLines checks each series' marks against the values they were drawn
// from: in every column, the mark's row is the nearest row to the series'
// interpolated value at the column's middle; the top label is the largest
// value, and the legend names every series.
func TestLines(t *testing.T) {
	xs := []float64{1, 2, 4}
	series := []Series{
		{Name: "low", Ys: []float64{0, 1, 2}, Mark: 'l'},
		{Name: "high", Ys: []float64{2, 4, 8}, Mark: 'h'},
	}
	o := Options{Width: 40, Rows: 9}
	lines := Lines(xs, series, o)
	rows := o.Height()
	if len(lines) != rows+3 {
		t.Fatalf("%d lines, want %d rows + axis + labels + legend:\n%s", len(lines), rows, strings.Join(lines, "\n"))
	}
	if !strings.HasPrefix(lines[0], "8 ┤") || !strings.Contains(lines[rows+2], "l low") || !strings.Contains(lines[rows+2], "h high") {
		t.Errorf("top label or legend wrong:\n%s", strings.Join(lines, "\n"))
	}
	cols := 40 - 1 - 2
	for _, s := range series {
		for c := range cols {
			x := 1 + 3*(float64(c)+0.5)/float64(cols)
			y, _ := interpolate(xs, s.Ys, x)
			want := rows - 1 - int(math.Round(y/8*float64(rows-1)))
			row := []rune(strings.TrimPrefix(strings.TrimPrefix(lines[want], "8 ┤"), "  │"))
			if c >= len(row) || (row[c] != s.Mark && !(s.Mark == 'l' && row[c] == 'h')) {
				t.Errorf("%s column %d: no mark at row %d (value %.3g):\n%s", s.Name, c, want, y, strings.Join(lines, "\n"))
				break
			}
		}
	}
	// A value that cannot be drawn leaves its columns without a mark.
	bad := Lines(xs, []Series{{Name: "nan", Ys: []float64{1, math.NaN(), 1}, Mark: 'n'}}, o)
	for _, l := range bad[:rows] {
		if strings.ContainsRune(l, 'n') {
			t.Errorf("a NaN segment was drawn: %q", l)
		}
	}
}
