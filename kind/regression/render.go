package regression

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// Draws is true: every record of a regression release is drawn as one,
// with notes on what does not fit.
func (Kind) Draws(schema.Release) bool { return true }

// Adopts nothing: coefficients are not drawn for a release of another
// kind.
func (Kind) Adopts() kind.Shape { return kind.ShapeNone }

// SampleWidth is 1 (a regression release has no synthetic samples).
func (Kind) SampleWidth(schema.Release) int { return 1 }

// Line is empty: a regression's coefficients do not fit the demo's line.
func (Kind) Line(schema.Release) string { return "" }

// Render draws a regression release as a table: one row per feature with
// its name, its coefficient on the original scale and, when the release
// has standard errors, ± 1.96 of them (an approximate 95% interval of the
// privacy noise alone, not of sampling error); then the intercept, and
// footer lines with the method and the ridge λ the mechanism used (on the
// scaled problem, where features and target lie in [−1, 1]). The window is
// in the header. Lengths that do not fit the coefficients, and values that
// are NaN, infinite or (for standard errors and the ridge) negative, get a
// yellow note and are printed as they are. A pcls release marks the
// features its selection left out (not in Selected) as "not selected"
// instead of giving their 0 an interval.
func (Kind) Render(r schema.Release, o chart.Options) []string {
	n := len(r.Coefficients)
	if n == 0 {
		return []string{o.Note("regression with no coefficients in the release")}
	}
	lines := []string{""}
	note := func(format string, args ...any) {
		lines = append(lines, o.Note(fmt.Sprintf(format, args...)))
	}
	namesOK := len(r.Fields) == n
	if !namesOK {
		note("%d feature names for %d coefficients: features are labelled by index", len(r.Fields), n)
	}
	errsOK := len(r.StdErrors) == n
	if len(r.StdErrors) > 0 && !errsOK {
		note("%d standard errors for %d coefficients: coefficients shown without them", len(r.StdErrors), n)
	}
	bad := 0
	for _, c := range r.Coefficients {
		if !chart.Finite(c) {
			bad++
		}
	}
	if bad > 0 {
		note("%d of %d coefficients NaN or infinite", bad, n)
	}
	if errsOK {
		badSE := 0
		for _, se := range r.StdErrors {
			if !chart.Drawable(se) {
				badSE++
			}
		}
		if badSE > 0 {
			note("%d of %d standard errors NaN, infinite or negative", badSE, n)
		}
	}
	if r.Intercept == nil {
		note("no intercept in the release")
	} else if !chart.Finite(*r.Intercept) {
		note("intercept %s", chart.Num(*r.Intercept))
	}

	// "(intercept)" cannot be confused with a feature of that name.
	const icptLabel = "(intercept)"
	maxLabel := max(o.LineWidth()/3, 8)
	labels := make([]string, n)
	labelW := chart.Cells("feature")
	if r.Intercept != nil {
		labelW = max(labelW, chart.Cells(icptLabel))
	}
	for i := range labels {
		labels[i] = "#" + strconv.Itoa(i)
		if namesOK {
			labels[i] = chart.Clean(r.Fields[i], maxLabel)
			if labels[i] == "" {
				labels[i] = `""`
			}
		}
		labelW = max(labelW, chart.Cells(labels[i]))
	}
	coefs := make([]string, n)
	coefW := chart.Cells("coefficient")
	for i, c := range r.Coefficients {
		coefs[i] = chart.Num(c)
		coefW = max(coefW, chart.Cells(coefs[i]))
	}
	var icpt string
	if r.Intercept != nil {
		icpt = chart.Num(*r.Intercept)
		coefW = max(coefW, chart.Cells(icpt))
	}
	row := func(label, coef, pm string) string {
		s := chart.Pad(label, labelW, false) + "  " + chart.Pad(coef, coefW, true)
		if pm != "" {
			s += "  " + pm
		}
		return s
	}

	sub := fmt.Sprintf("%d feature", n)
	if n != 1 {
		sub += "s"
	}
	head := "± 1.96·SE"
	if errsOK {
		sub += "; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)"
	} else {
		sub += "; coefficients (no standard errors in the release)"
		head = ""
	}
	lines[0] = sub
	lines = append(lines, row("feature", "coefficient", head))
	for i := range coefs {
		pm := ""
		switch {
		case len(r.Selected) > 0 && namesOK && !slices.Contains(r.Selected, r.Fields[i]):
			// pcls: the selection left this feature out; its 0 is not
			// an estimate.
			pm = "not selected"
		case errsOK:
			pm = "± " + chart.Num(chart.Z95*r.StdErrors[i])
		}
		lines = append(lines, row(labels[i], coefs[i], pm))
	}
	if r.Intercept != nil {
		lines = append(lines, row(icptLabel, icpt, ""))
	}

	method := "?"
	if r.Method != "" {
		method = chart.Clean(r.Method, chart.MaxName)
	}
	lines = append(lines, "method "+method)
	if r.Ridge != nil {
		lines = append(lines, "ridge λ = "+chart.Num(*r.Ridge)+" (on the scaled problem)")
	}
	if r.Method == "" {
		note("no method in the release")
	}
	if r.Ridge == nil {
		note("no ridge in the release")
	} else if !chart.Drawable(*r.Ridge) {
		note("ridge %s: want a finite λ ≥ 0", chart.Num(*r.Ridge))
	}
	return lines
}
