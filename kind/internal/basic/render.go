package basic

import (
	"fmt"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// DrawsValue is the kind.Renderer.Draws of count, sum and mean: a record
// that carries a value, or nothing at all, is drawn as theirs; one that
// carries probabilities or (without a value) densities is drawn by that
// shape, as a release of an unknown kind is.
func DrawsValue(r schema.Release) bool {
	s := kind.ShapeOf(r)
	return s == kind.ShapeValue || s == kind.ShapeNone
}

// RenderValue is the chart of a count, sum or mean: one line with the
// value and its noise-only 95% half-width.
func RenderValue(r schema.Release, o chart.Options) []string {
	if r.Value == nil {
		return []string{o.Note("no value in the release")}
	}
	s := "value " + chart.Num(*r.Value)
	if r.Interval95 != nil {
		s += " ± " + chart.Num(*r.Interval95) + " (95% noise interval)"
	}
	if r.RunningTotal == nil {
		return []string{s}
	}
	return []string{RunningLine(r), s + ", this window's increment"}
}

// RunningLine is a continual release's running total, its 95% half-width
// and its place in the horizon; "" for other releases.
func RunningLine(r schema.Release) string {
	if r.RunningTotal == nil {
		return ""
	}
	s := "running total " + chart.Num(*r.RunningTotal)
	if r.RunningInterval95 != nil {
		s += " ± " + chart.Num(*r.RunningInterval95)
	}
	return s + fmt.Sprintf(" (95%%; window %d of %d of the horizon)", r.HorizonWindow, r.Horizon)
}

// ValueLine is the demo's line of a count, sum or mean: the value and its
// noise-only 95% half-width (0 when the release has none), in columns.
func ValueLine(r schema.Release) string {
	if r.Value == nil {
		return ""
	}
	iv := 0.0
	if r.Interval95 != nil {
		iv = *r.Interval95
	}
	if r.RunningTotal != nil && r.RunningInterval95 != nil {
		return fmt.Sprintf("%10.2f ± %-8.2f so far (%d/%d)", *r.RunningTotal, *r.RunningInterval95, r.HorizonWindow, r.Horizon)
	}
	return fmt.Sprintf("%10.2f ± %-8.2f", *r.Value, iv)
}

// ValueRenderer is the kind.Renderer of count, sum and mean, which each
// embed it: a release of one value is drawn as the value ± its 95% noise
// interval. Adopted is the shape of other kinds' records it draws (one
// kind adopts each shape; see kind.RendererFor).
type ValueRenderer struct{ Adopted kind.Shape }

// Draws reports whether r carries a value or nothing (DrawsValue).
func (ValueRenderer) Draws(r schema.Release) bool { return DrawsValue(r) }

// Render draws the value ± its 95% noise interval (RenderValue).
func (ValueRenderer) Render(r schema.Release, o chart.Options) []string { return RenderValue(r, o) }

// Line is the value ± its 95% noise interval (ValueLine).
func (ValueRenderer) Line(r schema.Release) string { return ValueLine(r) }

// SampleWidth is 1.
func (ValueRenderer) SampleWidth(schema.Release) int { return 1 }

// Adopts returns Adopted.
func (v ValueRenderer) Adopts() kind.Shape { return v.Adopted }
