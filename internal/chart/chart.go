// Package chart draws terminal charts of release records, for
// 'dpstream tail releases --plot', 'dpstream simulate --plot' and the
// demo's one-line summaries: horizontal bar charts, bar charts of bins,
// heatmaps, curves drawn as columns, sparklines, and the number formats
// and colours they share.
//
// Everything here is post-processing of published releases: a chart reads
// only numbers a release already carries and never touches data or
// noise, so drawing has no privacy cost. The charts are written to survive
// any input: values that cannot be drawn (NaN, ±Inf, negative bars) are
// printed as they are and left out of the drawing, and Clean makes names
// from a record safe to print, so that a record cannot drive the
// terminal. Which chart a release gets, and the notes about a record that
// does not have its kind's shape, are its kind's (kind.Renderer); this
// package knows no kind, and nothing here imports Kafka.
package chart

import (
	"io"
	"os"
	"strconv"
	"strings"
)

const (
	// MinWidth is the narrowest chart drawn; below it even one label and
	// a short bar do not fit.
	MinWidth = 20
	// DefaultWidth is used when neither --width nor $COLUMNS is set.
	DefaultWidth = 80
	// DefaultMaxBars caps the lines of a bar chart of bins: with more
	// bins, adjacent bins are summed into groups so that a chart of a
	// 10000-bin release still fits on a screen or two instead of
	// scrolling for pages. Summing probabilities (and noisy counts) of
	// adjacent bins is post-processing, so the groups are as private as
	// the bins.
	DefaultMaxBars = 50
	// DefaultRows is the height of a curve in text rows.
	DefaultRows = 10
	// minBarCells is the room a bar column keeps before the numbers give
	// way: a narrower chart drops the second and then the first number
	// column rather than squeeze the bars below it.
	minBarCells = 10
	// minBarFloor is the least bar column at all: when the labels leave
	// less, the lines overflow the width instead of losing the bars.
	minBarFloor = 4
)

// ANSI SGR sequences, written only when Options.Color is set.
const (
	Bold   = "\x1b[1m"
	Cyan   = "\x1b[36m"
	Yellow = "\x1b[33m"
	Reset  = "\x1b[0m"
)

// Options says how a chart is drawn.
type Options struct {
	// Width is the line width in terminal cells (at least MinWidth;
	// smaller values are raised to it).
	Width int
	// MaxBars is the most lines of a bar chart of bins; more bins are
	// summed in groups of adjacent bins (0: DefaultMaxBars).
	MaxBars int
	// Rows is the height of a curve (0: DefaultRows).
	Rows int
	// Color adds ANSI colours. The caller sets it only for a terminal
	// (IsTerminal).
	Color bool
}

// LineWidth is the width the chart fills: Width, but at least MinWidth.
func (o Options) LineWidth() int { return max(o.Width, MinWidth) }

// BarLimit is the most lines of a bar chart of bins.
func (o Options) BarLimit() int { return orDefault(o.MaxBars, DefaultMaxBars) }

// Height is the height of a curve in text rows.
func (o Options) Height() int { return orDefault(o.Rows, DefaultRows) }

// Paint wraps s in an ANSI colour (one of the constants above, or a
// 256-colour sequence) when colours are on. Layout is computed on the
// plain text first, so escape codes never count toward a width.
func (o Options) Paint(code, s string) string {
	if !o.Color || s == "" {
		return s
	}
	return code + s + Reset
}

// Note paints s in yellow, the colour of every note on a record that is
// not drawn as it should be and of every refusal.
func (o Options) Note(s string) string { return o.Paint(Yellow, s) }

// orDefault returns v, or def when v is not positive.
func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Width picks the chart width: the --width flag when given (> 0), else
// $COLUMNS when it is a positive integer, else DefaultWidth; never less
// than MinWidth. getenv is os.Getenv outside tests.
func Width(flagWidth int, getenv func(string) string) int {
	if flagWidth > 0 {
		return max(flagWidth, MinWidth)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(getenv("COLUMNS"))); err == nil && n > 0 {
		return max(n, MinWidth)
	}
	return DefaultWidth
}

// IsTerminal reports whether w is a character device (a terminal), the
// only place ANSI colours belong. NO_COLOR (https://no-color.org) turns
// colours off whatever the flag says. getenv is os.Getenv outside tests.
func IsTerminal(w io.Writer, getenv func(string) string) bool {
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
