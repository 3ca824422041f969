package chart

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/chart/charttest"
)

// bandCase is a series for the band chart's tests: n points of a line
// through mid with a band of half-width half and, with truth, an exact
// line that wanders inside the band.
func bandCase(n int, mid func(i int) float64, half func(i int) float64, truth bool) BandSeries {
	s := BandSeries{First: "first", Last: "last"}
	for i := range n {
		m, h := mid(i), half(i)
		s.Lo, s.Hi, s.Mid = append(s.Lo, m-h), append(s.Hi, m+h), append(s.Mid, m)
		if truth {
			s.Truth = append(s.Truth, m+0.6*h*math.Sin(float64(i)))
		}
	}
	return s
}

// TestBandShowsTheSeries parses band charts back and checks them against
// the numbers they were drawn from, never against the drawing code: the
// labels are the extremes; in each column (which shows the points whose
// index falls in it, or the nearest one) the line's mark sits in the row
// whose y range holds the mean of the line there, the exact line's mark
// likewise (⊕ where they share a row), and the band fills every row from
// the lowest to the highest bound, and nothing else; lines fit the width.
func TestBandShowsTheSeries(t *testing.T) {
	grow := func(i int) float64 { return 1000 + 900*float64(i) }
	cases := []struct {
		name  string
		s     BandSeries
		width int
		rows  int
	}{
		{"running total, 354 points", bandCase(354, grow, func(i int) float64 { return 20 + math.Log1p(float64(i)) }, true), 80, 10},
		{"errors around 0", bandCase(200, func(int) float64 { return 0 }, func(i int) float64 { return 5 * math.Sqrt(float64(i+1)) }, true), 60, 12},
		{"no truth", bandCase(50, grow, func(int) float64 { return 3000 }, false), 40, 6},
		{"fewer points than columns", bandCase(5, grow, func(int) float64 { return 400 }, true), 80, 8},
		{"one point", bandCase(1, grow, func(int) float64 { return 1 }, true), 30, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := Band(tc.s, Options{Width: tc.width, Rows: tc.rows})
			for _, l := range lines {
				if Cells(l) > tc.width {
					t.Errorf("line of %d cells, width %d: %q", Cells(l), tc.width, l)
				}
			}
			d := charttest.ParseBand(t, lines)
			if len(d.Cells) != tc.rows {
				t.Fatalf("%d rows, want %d:\n%s", len(d.Cells), tc.rows, strings.Join(lines, "\n"))
			}
			if !strings.Contains(d.XLabels, "first") || !strings.HasSuffix(d.XLabels, "last") {
				t.Errorf("x labels %q, want first … last", d.XLabels)
			}
			lo, errLo := strconv.ParseFloat(d.Labels[0], 64)
			hi, errHi := strconv.ParseFloat(d.Labels[tc.rows-1], 64)
			if errLo != nil || errHi != nil {
				t.Fatalf("labels %q", d.Labels)
			}
			wantLo, wantHi := slicesMin(tc.s.Lo), slicesMax(tc.s.Hi)
			if math.Abs(lo-wantLo) > 1e-3*math.Abs(wantLo)+1e-9 || math.Abs(hi-wantHi) > 1e-3*math.Abs(wantHi)+1e-9 {
				t.Errorf("y axis %v … %v, want %v … %v", lo, hi, wantLo, wantHi)
			}
			step := (hi - lo) / float64(tc.rows)
			zeroRow := int(math.Floor(-lo / step))
			if inner := lo < 0 && hi > 0 && zeroRow > 0 && zeroRow < tc.rows-1; inner != containsString(d.Labels, "0") || inner && d.Labels[zeroRow] != "0" {
				t.Errorf("labels %q: want 0 on the row holding it exactly when that is an inner row", d.Labels)
			}
			holds := func(r int, v float64) bool { // row r's y range holds v (with rounding slack)
				slack := 1e-6 * (hi - lo)
				return v >= lo+float64(r)*step-slack && v <= lo+float64(r+1)*step+slack
			}
			n := len(tc.s.Mid)
			cols := len(d.Cells[0])
			for c := range cols {
				a, b := c*n/cols, (c+1)*n/cols
				if b <= a {
					a = min((2*c+1)*n/(2*cols), n-1)
					b = a + 1
				}
				mid, truth := mean(tc.s.Mid[a:b]), 0.0
				if tc.s.Truth != nil {
					truth = mean(tc.s.Truth[a:b])
				}
				bLo, bHi := slicesMin(tc.s.Lo[a:b]), slicesMax(tc.s.Hi[a:b])
				var midRows, truthRows, filled []int
				for r := range tc.rows {
					switch d.Cells[r][c] {
					case BandMid:
						midRows = append(midRows, r)
					case BandTruth:
						truthRows = append(truthRows, r)
					case BandBoth:
						midRows, truthRows = append(midRows, r), append(truthRows, r)
					}
					if d.Cells[r][c] != ' ' {
						filled = append(filled, r)
					}
				}
				if len(midRows) != 1 || !holds(midRows[0], mid) {
					t.Fatalf("column %d: line marked in rows %v, want the one row holding %v", c, midRows, mid)
				}
				if tc.s.Truth == nil && len(truthRows) != 0 || tc.s.Truth != nil && (len(truthRows) != 1 || !holds(truthRows[0], truth)) {
					t.Fatalf("column %d: exact line marked in rows %v, want the row holding %v", c, truthRows, truth)
				}
				if first, last := filled[0], filled[len(filled)-1]; !holds(first, bLo) || !holds(last, bHi) || last-first+1 != len(filled) {
					t.Fatalf("column %d: rows %v filled, want every row from %v to %v", c, filled, bLo, bHi)
				}
			}
		})
	}
}

// TestBandUndrawable: a column over a value that cannot be drawn stays
// empty and is marked "?" on the axis, and the value does not stretch
// the y axis; mismatched lengths draw nothing.
func TestBandUndrawable(t *testing.T) {
	s := bandCase(40, func(i int) float64 { return float64(i) }, func(int) float64 { return 1 }, true)
	s.Mid[20], s.Truth[30] = math.NaN(), math.Inf(1)
	d := charttest.ParseBand(t, Band(s, Options{Width: 60, Rows: 5}))
	axis := []rune(d.Axis[strings.Index(d.Axis, " └")+len(" └"):])
	marked := 0
	for c, ch := range axis {
		if ch != '?' {
			continue
		}
		marked++
		for r := range d.Cells {
			if d.Cells[r][c] != ' ' {
				t.Errorf("column %d marked ? but drawn in row %d", c, r)
			}
		}
	}
	if marked == 0 || d.Labels[len(d.Labels)-1] != "40" || d.Labels[0] != "-1" {
		t.Errorf("%d columns marked ?, labels %q; want some, and -1 … 40", marked, d.Labels)
	}
	bad := s
	bad.Truth = bad.Truth[:3]
	if lines := Band(bad, Options{Width: 60}); lines != nil {
		t.Errorf("truth of 3 values for 40 points drew %d lines", len(lines))
	}
	if lines := Band(BandSeries{}, Options{Width: 60}); lines != nil {
		t.Errorf("an empty series drew %d lines", len(lines))
	}
}

func mean(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}

func slicesMin(vs []float64) float64 {
	m := math.Inf(1)
	for _, v := range vs {
		if Finite(v) {
			m = math.Min(m, v)
		}
	}
	return m
}

func slicesMax(vs []float64) float64 {
	m := math.Inf(-1)
	for _, v := range vs {
		if Finite(v) {
			m = math.Max(m, v)
		}
	}
	return m
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
