package density

import (
	"fmt"
	"strings"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// Draws is true: every record of a density release is drawn as one, with
// notes on what does not fit.
func (Kind) Draws(schema.Release) bool { return true }

// Adopts curves: a release of another kind that carries densities (and
// neither probabilities nor a value) is drawn as a density.
func (Kind) Adopts() kind.Shape { return kind.ShapeCurve }

// SampleWidth is 1: a density's synthetic sample is one value.
func (Kind) SampleWidth(schema.Release) int { return 1 }

// Render draws the density given on a grid (Edges are the grid points,
// Densities the values) as a curve (chart.Curve) under a subheader with
// the grid's range and the maximum density. Edges that are not an
// increasing grid of the values are replaced by the values' indices (or,
// one longer, taken as bin edges around the values, which are drawn at the
// bins' midpoints), with a note; values that cannot be drawn are listed
// under the chart.
func (Kind) Render(r schema.Release, o chart.Options) []string {
	ys := r.Densities
	g := len(ys)
	if g == 0 {
		return []string{o.Note("density with no values in the release")}
	}
	var notes []string
	xs := make([]float64, g)
	switch {
	case len(r.Edges) == g && increasing(r.Edges):
		copy(xs, r.Edges)
	case len(r.Edges) == g+1 && increasing(r.Edges):
		// Bin edges around the values: draw each at its bin's midpoint.
		for i := range xs {
			xs[i] = r.Edges[i] + (r.Edges[i+1]-r.Edges[i])/2
		}
	default:
		for i := range xs {
			xs[i] = float64(i)
		}
		notes = append(notes, o.Note(fmt.Sprintf("%d grid points for %d values (or not increasing): x is the value's index", len(r.Edges), g)))
	}
	var bad []int
	for i, y := range ys {
		if !chart.Drawable(y) {
			bad = append(bad, i)
		}
	}
	lines := []string{fmt.Sprintf("density on [%s, %s], %d grid points; max %s", chart.Num(xs[0]), chart.Num(xs[g-1]), g, chart.Num(chart.Top(ys)))}
	lines = append(lines, notes...)
	lines = append(lines, chart.Curve(xs, ys, o)...)
	if len(bad) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "not drawn: %d value(s) NaN, infinite or negative:", len(bad))
		for j, i := range bad {
			if j == 3 {
				b.WriteString(" …")
				break
			}
			fmt.Fprintf(&b, " x=%s: %s", chart.Num(xs[i]), chart.Num(ys[i]))
		}
		lines = append(lines, o.Note(b.String()))
	}
	return lines
}

// increasing reports whether xs is finite and strictly increasing.
func increasing(xs []float64) bool {
	for i, x := range xs {
		if !chart.Finite(x) || (i > 0 && !(x > xs[i-1])) {
			return false
		}
	}
	return true
}

// sparkPoints is how many of a density's grid values the demo's sparkline
// shows: a density has hundreds of grid points, a line has room for a
// histogram's worth.
const sparkPoints = 24

// Line is a sparkline of the density on its grid, with the grid's range
// and the number of terms; "" when the grid does not fit the values.
func (Kind) Line(r schema.Release) string {
	if len(r.Densities) == 0 || len(r.Edges) != len(r.Densities) {
		return ""
	}
	return fmt.Sprintf("%s  [%g, %g] %d terms", chart.Sparkline(chart.Downsample(r.Densities, sparkPoints)),
		r.Edges[0], r.Edges[len(r.Edges)-1], len(r.Coefficients))
}
