package chart

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxName is the longest name from a record drawn, in cells; longer ones
// are cut with "…" (Clean) so that a stray long name cannot push a chart
// off the screen.
const MaxName = 40

// Z95 is the normal quantile of the ±1.96 standard errors shown beside an
// estimate: an approximate 95% interval, as the standard errors a release
// carries themselves rest on a normal approximation.
const Z95 = 1.96

// Finite reports whether v is neither NaN nor infinite.
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Drawable reports whether v can be drawn as a bar: finite and not
// negative.
func Drawable(v float64) bool { return Finite(v) && v >= 0 }

// Top is the largest drawable value of vs, or 0: the value that fills a
// chart.
func Top(vs []float64) float64 {
	top := 0.0
	for _, v := range vs {
		if Drawable(v) {
			top = math.Max(top, v)
		}
	}
	return top
}

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

// Percent shows a probability in percent with one decimal, or two
// significant digits below 0.1% so that a small non-zero probability,
// which has a visible bar, does not read "0.0%"; non-finite values as
// NaN, +Inf or -Inf.
func Percent(p float64) string {
	if !Finite(p) {
		return strconv.FormatFloat(p, 'g', -1, 64)
	}
	if pc := 100 * p; pc != 0 && math.Abs(pc) < 0.05 {
		return strconv.FormatFloat(pc, 'g', 2, 64) + "%"
	}
	return strconv.FormatFloat(100*p, 'f', 1, 64) + "%"
}

// Num shows a released number compactly: integers in full (noisy counts
// are integers), other values with about six significant digits,
// non-finite ones as NaN, +Inf or -Inf.
func Num(x float64) string {
	switch {
	case !Finite(x):
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

// Epsilon shows a privacy parameter with three significant digits, enough
// to read a budget by (the ledger has the exact values), without an
// exponent for values of 1000 and more.
func Epsilon(x float64) string {
	s := strconv.FormatFloat(x, 'g', 3, 64)
	if Finite(x) && math.Abs(x) >= 1000 {
		s = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return s
}

// Clean makes a name from a release safe and short to print: every
// character that is not printable (control characters, escape sequences
// that could drive the terminal) becomes '?', and a name longer than
// maxCells cells is cut to end in "…".
func Clean(s string, maxCells int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
	if Cells(s) > maxCells {
		s = truncRunes(s, max(maxCells-1, 0)) + "…"
	}
	return s
}

// Pad pads s with spaces to w cells, on the left when right is set (to
// right-align it).
func Pad(s string, w int, right bool) string {
	n := w - Cells(s)
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
	if Cells(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// Cells is the width of s in terminal cells: every character the charts
// use (digits, box drawing, blocks) is one cell wide.
func Cells(s string) int { return utf8.RuneCountInString(s) }

// StripANSI removes the colour sequences Paint adds: the text a terminal
// shows.
func StripANSI(s string) string {
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
