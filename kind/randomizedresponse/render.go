package randomizedresponse

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// Draws is true: every record of a randomized_response release is drawn
// as one, with notes on what does not fit.
func (Kind) Draws(schema.Release) bool { return true }

// Adopts nothing: a release of an unknown kind that carries probabilities
// is drawn as a histogram.
func (Kind) Adopts() kind.Shape { return kind.ShapeNone }

// SampleWidth is 1.
func (Kind) SampleWidth(schema.Release) int { return 1 }

// Render draws a randomized_response release: one bar per category,
// proportional to its debiased frequency (Probabilities, on the simplex),
// labelled by the category's name, then the frequency and the debiased
// count ± 1.96 standard errors; and a footer with the producers' local ε.
// Lengths that do not fit the categories get a note and index labels or
// "–".
func (Kind) Render(r schema.Release, o chart.Options) []string {
	n := len(r.Probabilities)
	if n == 0 {
		return []string{o.Note("randomized_response with no frequencies in the release")}
	}
	var sub strings.Builder
	fmt.Fprintf(&sub, "%d categories", n)
	if len(r.Fields) == 1 {
		fmt.Fprintf(&sub, " of %s", chart.Clean(r.Fields[0], chart.MaxName))
	}
	sub.WriteString("; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors")
	lines := []string{""}
	note := func(format string, args ...any) {
		lines = append(lines, o.Note(fmt.Sprintf(format, args...)))
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
		if !chart.Drawable(p) {
			bad++
		}
		sum += p
	}
	switch {
	case bad > 0:
		note("%d of %d frequencies NaN, infinite or negative: not drawn", bad, n)
	case math.Abs(sum-1) > 1e-6:
		note("frequencies sum to %s, not 1", chart.Num(sum))
	}

	maxLabel := max(o.LineWidth()/3, 8)
	labels := make([]string, n)
	labelW := 0
	for i := range labels {
		labels[i] = "#" + strconv.Itoa(i)
		if namesOK {
			labels[i] = chart.Clean(r.Categories[i], maxLabel)
			if labels[i] == "" {
				labels[i] = `""`
			}
		}
		labelW = max(labelW, chart.Cells(labels[i]))
	}
	rows := make([]chart.Row, n)
	for i, p := range r.Probabilities {
		// Names read left-aligned; chart.Bars right-aligns what is left.
		rows[i] = chart.Row{Label: chart.Pad(labels[i], labelW, false), Value: p, Pct: chart.Percent(p), Num: "–"}
		if countsOK {
			rows[i].Num = chart.Num(r.DebiasedCounts[i])
			if errsOK {
				rows[i].Num += " ± " + chart.Num(chart.Z95*r.StdErrors[i])
			}
		}
	}
	bars, suffix := chart.Bars(rows, "debiased counts", o)
	lines[0] = sub.String() + suffix
	lines = append(lines, bars...)
	if r.LocalEpsilon == nil {
		lines = append(lines, o.Note("no local ε in the release (randomized by producers); central noise as configured"))
	} else {
		lines = append(lines, fmt.Sprintf("local ε = %s per report (randomized by producers); central noise as configured", chart.Epsilon(*r.LocalEpsilon)))
	}
	return lines
}

// Line is a sparkline of the debiased frequencies, in the order of the
// categories, and their number.
func (Kind) Line(r schema.Release) string {
	if len(r.Probabilities) == 0 {
		return ""
	}
	return fmt.Sprintf("%s  %d categories", chart.Sparkline(r.Probabilities), len(r.Probabilities))
}
