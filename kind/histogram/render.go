package histogram

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// Draws is true: every record of a histogram release is drawn as one,
// with notes on what does not fit.
func (Kind) Draws(schema.Release) bool { return true }

// Adopts cells: a release of another kind that carries probabilities is
// drawn as a histogram.
func (Kind) Adopts() kind.Shape { return kind.ShapeCells }

// SampleWidth is the number of fields: a histogram's synthetic sample has
// one value per field.
func (Kind) SampleWidth(r schema.Release) int {
	switch {
	case len(r.Fields) > 0:
		return len(r.Fields)
	case len(r.Shape) > 0:
		return len(r.Shape)
	}
	return 1
}

// Render draws a histogram release by its number of fields (the length
// of Shape): a bar chart for one field (chart.Bins, also for releases
// from before Shape existed, which have neither Shape nor Fields), a
// heatmap for two (chart.Heatmap) and one bar chart per field of the
// field's marginal for three (see grid). A Shape that does not fit the
// probabilities gets a note and the cells drawn as a flat list.
func (Kind) Render(r schema.Release, o chart.Options) []string {
	n := len(r.Probabilities)
	if n == 0 {
		return []string{o.Note("histogram with no bins in the release")}
	}
	bins := chart.Bins{P: r.Probabilities, Counts: r.NoisyCounts, Edges: r.Edges, Interval: r.Interval95}
	if len(r.Shape) == 0 && len(r.Fields) <= 1 {
		return bins.Draw(o)
	}
	// flat draws the cells in order, labelled by index: all that is
	// certain about them when the shape is wrong.
	flat := func(problem string) []string {
		lines := []string{o.Note(problem + ": cells drawn as a flat list, labelled by index")}
		if len(r.NoisyCounts) != n {
			lines = append(lines, o.Note(fmt.Sprintf("%d noisy counts for %d cells: missing ones shown as –", len(r.NoisyCounts), n)))
		}
		return append(lines, chart.Bins{P: r.Probabilities, Counts: r.NoisyCounts, Quiet: true}.Draw(o)...)
	}
	if len(r.Shape) == 0 {
		return flat(fmt.Sprintf("%d field names and no shape", len(r.Fields)))
	}
	shape, problem := checkShape(r.Shape, n)
	switch {
	case problem != "" && len(r.Shape) == 1:
		// One field: the bins are drawn as ever; only the shape is wrong.
		return append([]string{o.Note(problem)}, bins.Draw(o)...)
	case problem != "":
		return flat(problem)
	case len(shape) == 1 && len(r.Fields) > 1:
		return append([]string{o.Note(fmt.Sprintf("%d field names for a histogram over 1 field", len(r.Fields)))}, bins.Draw(o)...)
	case len(shape) == 1:
		return bins.Draw(o)
	}
	return grid(r, shape, o)
}

// checkShape checks a histogram's Shape against its n cells: every field
// has at least one bin and the bins multiply to n. It returns the shape
// as ints, or what is wrong with it. The product is checked by division
// before each multiplication, so no shape, however large its entries,
// overflows.
func checkShape(shape []int64, n int) ([]int, string) {
	for _, s := range shape {
		if s < 1 {
			return nil, fmt.Sprintf("shape %v has a field with %d bins", shape, s)
		}
	}
	out := make([]int, len(shape))
	prod := int64(1)
	for i, s := range shape {
		if s > math.MaxInt64/prod {
			return nil, fmt.Sprintf("shape %v has more cells than the %d probabilities", shape, n)
		}
		prod *= s
		out[i] = int(s) // s ≤ prod = n when the shape fits, else out is not returned
	}
	if prod != int64(n) {
		return nil, fmt.Sprintf("shape %v has %d cells, not the %d probabilities", shape, prod, n)
	}
	return out, ""
}

// grid draws a histogram over two or more fields whose shape fits its
// cells: a heatmap for two fields, one-field marginals for more. Edges
// and field names that do not fit the shape get a note and index labels
// or generic names instead.
func grid(r schema.Release, shape []int, o chart.Options) []string {
	n := len(r.Probabilities)
	dims := len(shape)
	var notes []string
	note := func(format string, args ...any) {
		notes = append(notes, o.Note(fmt.Sprintf(format, args...)))
	}
	names := make([]string, dims)
	for i := range names {
		names[i] = fmt.Sprintf("field %d", i+1)
		if len(r.Fields) == dims && r.Fields[i] != "" {
			names[i] = chart.Clean(r.Fields[i], chart.MaxName)
		}
	}
	if len(r.Fields) != dims {
		note("%d field names for a histogram over %d fields: fields are numbered", len(r.Fields), dims)
	}
	if dims > 3 {
		note("histogram over %d fields (at most 3 are expected): drawn as one-field marginals", dims)
	}
	want := 0
	for _, m := range shape {
		want += m + 1
	}
	var axes [][]float64 // each field's edges; nil when Edges do not fit the shape
	if len(r.Edges) == want {
		axes = make([][]float64, dims)
		off := 0
		for i, m := range shape {
			axes[i] = r.Edges[off : off+m+1]
			off += m + 1
		}
	} else {
		note("%d edges for shape %v, not %d: bins are labelled by index", len(r.Edges), r.Shape, want)
	}
	countsOK := len(r.NoisyCounts) == n
	bad := 0
	for _, p := range r.Probabilities {
		if !chart.Drawable(p) {
			bad++
		}
	}

	var sub strings.Builder
	for i, m := range shape {
		if i > 0 {
			sub.WriteString(" × ")
		}
		sub.WriteString(strconv.Itoa(m))
	}
	fmt.Fprintf(&sub, " bins over %s", strings.Join(names, " × "))
	if axes != nil {
		sub.WriteString(" on ")
		for i, e := range axes {
			if i > 0 {
				sub.WriteString(" × ")
			}
			fmt.Fprintf(&sub, "[%s, %s]", chart.Num(e[0]), chart.Num(e[len(e)-1]))
		}
	}

	if dims == 2 {
		if !countsOK {
			note("%d noisy counts for %d cells (the heatmap does not use them)", len(r.NoisyCounts), n)
		}
		if bad > 0 {
			note("%d of %d cells NaN, infinite or negative: shown as ?", bad, n)
		}
		return chart.Heatmap{P: r.Probabilities, Rows: shape[0], Cols: shape[1], Axes: axes,
			Names: [2]string{names[0], names[1]}, Sub: sub.String(), Notes: notes}.Draw(o)
	}
	if !countsOK {
		note("%d noisy counts for %d cells: marginal counts shown as –", len(r.NoisyCounts), n)
	}
	if bad > 0 {
		note("%d of %d cells NaN, infinite or negative: the marginals through them are not drawn or are off", bad, n)
	}
	sub.WriteString(": one-field marginals, probabilities and noisy counts summed over the other fields")
	lines := append([]string{sub.String()}, notes...)
	margP := chart.Marginals(r.Probabilities, shape)
	var margC [][]float64
	if countsOK {
		margC = chart.Marginals(r.NoisyCounts, shape)
	}
	for i := range shape {
		others := make([]string, 0, dims-1)
		others = append(others, names[:i]...)
		others = append(others, names[i+1:]...)
		title := fmt.Sprintf("marginal of %s (summed over %s)", names[i], strings.Join(others, ", "))
		bins := chart.Bins{P: margP[i], Quiet: true}
		if countsOK {
			bins.Counts = margC[i]
		}
		if axes != nil {
			bins.Edges = axes[i]
		}
		lines = append(lines, "", o.Paint(chart.Bold, title))
		lines = append(lines, bins.Draw(o)...)
	}
	return lines
}

// Line is a sparkline of the bins with their range and the noisy total,
// or for a histogram over several fields one sparkline per field.
func (Kind) Line(r schema.Release) string {
	switch {
	case len(r.Shape) > 1:
		return marginalSparklines(r)
	case len(r.Probabilities) > 0:
		total := 0.0
		for _, c := range r.NoisyCounts {
			total += math.Max(c, 0)
		}
		if len(r.Edges) == 0 {
			return fmt.Sprintf("%s  n≈%.0f", chart.Sparkline(r.Probabilities), total)
		}
		return fmt.Sprintf("%s  [%g, %g] n≈%.0f", chart.Sparkline(r.Probabilities), r.Edges[0], r.Edges[len(r.Edges)-1], total)
	}
	return ""
}

// marginalSparklines renders a histogram over several fields as one
// sparkline per field: the marginal probabilities (summed over the other
// fields), which fit on a line where the cells would not; then the number
// of synthetic rows, if any.
func marginalSparklines(r schema.Release) string {
	cells := 1
	for _, m := range r.Shape {
		if m < 1 || m > int64(len(r.Probabilities)) {
			return "(malformed shape)"
		}
		cells *= int(m)
	}
	if cells != len(r.Probabilities) || len(r.Fields) != len(r.Shape) {
		return "(malformed shape)"
	}
	var parts []string
	stride := cells
	for a, m := range r.Shape {
		stride /= int(m)
		marg := make([]float64, m)
		for c, p := range r.Probabilities {
			marg[(c/stride)%int(m)] += p
		}
		parts = append(parts, r.Fields[a]+" "+chart.Sparkline(marg))
	}
	s := strings.Join(parts, "  ")
	if d := len(r.Shape); len(r.Samples) > 0 {
		s += fmt.Sprintf("  %d synthetic rows", len(r.Samples)/d)
	}
	return s
}
