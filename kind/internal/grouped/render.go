package grouped

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/schema"
)

// IsPerKey reports whether r is a per-key release: it has no single value,
// and names its group_by field or carries keys (a count, sum or mean
// without group_by has a value; a record of another kind drawn as a value
// may name fields).
func IsPerKey(r schema.Release) bool {
	return r.Value == nil && (len(r.Fields) > 0 || len(r.Keys) > 0)
}

// Renderer draws the releases of a kind with or without group_by: per-key
// ones as the top keys, the others as the kind's value (basic).
type Renderer struct{ basic.ValueRenderer }

// Draws reports whether r is per-key or carries a value (or nothing).
func (v Renderer) Draws(r schema.Release) bool { return IsPerKey(r) || v.ValueRenderer.Draws(r) }

// Render draws the top keys of a per-key release, or the value.
func (v Renderer) Render(r schema.Release, o chart.Options) []string {
	if IsPerKey(r) {
		return RenderKeys(r, o)
	}
	return v.ValueRenderer.Render(r, o)
}

// Line summarizes the top keys of a per-key release, or the value.
func (v Renderer) Line(r schema.Release) string {
	if IsPerKey(r) {
		return KeysLine(r)
	}
	return v.ValueRenderer.Line(r)
}

// top returns the indices of r's keys, the largest values first (ties
// and keys without values in key order), and whether the values fit.
func top(r schema.Release) ([]int, bool) {
	idx := make([]int, len(r.Keys))
	for i := range idx {
		idx[i] = i
	}
	ok := len(r.Values) == len(r.Keys)
	if ok {
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(r.Values[b], r.Values[a]) })
	}
	return idx, ok
}

// RenderKeys draws a per-key release: one bar per key for the keys with
// the largest values (at most the chart's bar limit), labelled by the key,
// then the value ± its 95% noise interval; a release of keys only lists
// them.
func RenderKeys(r schema.Release, o chart.Options) []string {
	field := "key"
	if len(r.Fields) == 1 {
		field = chart.Clean(r.Fields[0], chart.MaxName)
	}
	if len(r.Keys) == 0 {
		return []string{"no " + field + " selected in this window"}
	}
	idx, ok := top(r)
	limit := o.BarLimit()
	shown := min(len(idx), limit)
	if len(r.Values) == 0 {
		names := make([]string, shown)
		for i := range names {
			names[i] = chart.Clean(r.Keys[idx[i]], chart.MaxName)
		}
		more := ""
		if shown < len(r.Keys) {
			more = fmt.Sprintf(", … (%d more)", len(r.Keys)-shown)
		}
		return []string{fmt.Sprintf("%d %s values selected: %s%s", len(r.Keys), field, strings.Join(names, ", "), more)}
	}
	lines := []string{fmt.Sprintf("%d values of %s; the %d largest, bar ∝ value, then value ± 95%% noise interval", len(r.Keys), field, shown), ""}
	if !ok {
		return append(lines, o.Note(fmt.Sprintf("%d values for %d keys: nothing to draw", len(r.Values), len(r.Keys))))
	}
	ivOK := len(r.Intervals95) == len(r.Keys)
	rows := make([]chart.Row, shown)
	for i := range rows {
		j := idx[i]
		num := chart.Num(r.Values[j])
		if ivOK {
			num += " ± " + chart.Num(r.Intervals95[j])
		}
		rows[i] = chart.Row{Label: chart.Clean(r.Keys[j], chart.MaxName), Value: r.Values[j], Num: num}
	}
	bars, suffix := chart.Bars(rows, "values", o)
	if suffix != "" {
		lines[0] += suffix
	}
	return append(lines, bars...)
}

// KeysLine is the demo's line of a per-key release: a bar per key of the
// (at most 12) keys with the largest values, largest first, the number of
// keys and the three largest with their values.
func KeysLine(r schema.Release) string {
	idx, ok := top(r)
	var b strings.Builder
	if ok && len(idx) > 0 {
		vals := make([]float64, 0, 12)
		for _, j := range idx[:min(12, len(idx))] {
			vals = append(vals, max(r.Values[j], 0))
		}
		b.WriteString(chart.Sparkline(vals) + "  ")
	}
	fmt.Fprintf(&b, "%d keys", len(r.Keys))
	for i := 0; i < min(3, len(idx)); i++ {
		if i == 0 {
			b.WriteString(":")
		}
		j := idx[i]
		fmt.Fprintf(&b, " %s", chart.Clean(r.Keys[j], 16))
		if ok {
			fmt.Fprintf(&b, " %s", chart.Num(r.Values[j]))
		}
	}
	return b.String()
}

// KeysRenderer draws the releases of a kind that is always per key
// (select_keys, count_units without group_by is a value).
type KeysRenderer struct{}

// Draws is true: every record of the kind is drawn as one.
func (KeysRenderer) Draws(schema.Release) bool { return true }

// Render draws the keys (RenderKeys).
func (KeysRenderer) Render(r schema.Release, o chart.Options) []string { return RenderKeys(r, o) }

// Line summarizes the keys (KeysLine).
func (KeysRenderer) Line(r schema.Release) string { return KeysLine(r) }

// SampleWidth is 1.
func (KeysRenderer) SampleWidth(schema.Release) int { return 1 }

// Adopts nothing.
func (KeysRenderer) Adopts() kind.Shape { return kind.ShapeNone }
