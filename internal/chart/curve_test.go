package chart

import (
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/chart/charttest"
)

// TestCurveHeights checks column heights against the curve itself: for
// y = x on [0, 1], the mean of y over column c is its center (c+½)/cols,
// so its height is (c+½)/cols of the chart's, within one eighth for
// rounding (and 0.05 for floating-point error).
func TestCurveHeights(t *testing.T) {
	xs := seq(0, 0.0001, 10001)
	ys := make([]float64, len(xs))
	copy(ys, xs)
	for _, w := range []int{20, 80, 200} {
		d := charttest.ParseCurve(t, Curve(xs, ys, Options{Width: w, Rows: 6}))
		if d.Rows != 6 || cells(d.Axis) != w || d.Top != "1" {
			t.Errorf("width %d: %d rows, axis of %d cells, top label %q; want 6, %d, 1", w, d.Rows, cells(d.Axis), d.Top, w)
		}
		cols := len(d.Heights)
		for c, h := range d.Heights {
			want := (float64(c) + 0.5) / float64(cols) * 6 * 8
			if math.Abs(float64(h)-want) > 1.05 {
				t.Errorf("width %d column %d: %d eighths, want %.2f ± 1", w, c, h, want)
			}
		}
	}
	// A coarse grid (fewer points than columns): the curve through
	// (0,0) (1,0) (2,2) (3,2) leaves the columns left of 1 empty and fills
	// those right of 2.
	d := charttest.ParseCurve(t, Curve([]float64{0, 1, 2, 3}, []float64{0, 0, 2, 2}, Options{Width: 80, Rows: 5}))
	n := len(d.Heights)
	for c, h := range d.Heights {
		a, b := 3*float64(c)/float64(n), 3*float64(c+1)/float64(n) // the column's x range
		switch {
		case b <= 1 && h != 0:
			t.Errorf("column %d (x in [%.2f, %.2f]): %d eighths, want 0", c, a, b, h)
		case a >= 2 && h != 40:
			t.Errorf("column %d (x in [%.2f, %.2f]): %d eighths, want 40", c, a, b, h)
		}
	}
}

// TestCurveUndrawable: the columns through a value that cannot be drawn
// are empty and marked "?" on the axis, and the value does not set the
// top; a single point fills the chart.
func TestCurveUndrawable(t *testing.T) {
	ys := []float64{0.1, 0.1, math.NaN(), 0.1, 0.1}
	d := charttest.ParseCurve(t, Curve(seq(0, 1, 5), ys, Options{Width: 40}))
	axis := []rune(d.Axis[strings.Index(d.Axis, " └")+len(" └"):])
	marked := 0
	for c, h := range d.Heights {
		switch axis[c] {
		case '?':
			marked++
			if h != 0 {
				t.Errorf("column %d marked ? but drawn %d eighths", c, h)
			}
		case '─':
			if h != DefaultRows*8 {
				t.Errorf("column %d: %d eighths, want full", c, h)
			}
		}
	}
	if marked == 0 || d.Top != "0.1" {
		t.Errorf("%d columns marked ?, top label %q; want some and 0.1:\n%s", marked, d.Top, d.Axis)
	}
	d = charttest.ParseCurve(t, Curve([]float64{3}, []float64{2}, Options{Width: 30, Rows: 2}))
	for c, h := range d.Heights {
		if h != 16 {
			t.Errorf("one point: column %d is %d eighths, want full", c, h)
		}
	}
}
