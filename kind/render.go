package kind

import (
	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/schema"
)

// Renderer is implemented by a Kind whose releases can be drawn in a
// terminal: the chart of 'dpstream tail releases --plot' and
// 'dpstream simulate --plot', and the demo's one-line summary. It reads
// only the public release record, never the configuration, because tail
// draws records from the releases topic without any (and post-processing
// of a published release costs no privacy).
//
// It is an interface of its own, which the CLI asks a kind for, rather
// than part of Kind: a kind that does not draw is still a whole kind (its
// releases are printed as JSON and drawn by their shape, as a release of
// an unknown kind is), and the stages, which never draw, need not see it.
//
// A record read from a topic can be anything: a release of a kind this
// build does not know, one from another version, or one made by hand.
// RendererFor picks the renderer for it, and every method must draw any
// record without panicking, with a note on what does not fit.
type Renderer interface {
	// Draws reports whether r, a release of this kind, has data Render
	// draws as this kind's; when it does not, the record is drawn by its
	// Shape, as a release of an unknown kind is (RendererFor).
	Draws(r schema.Release) bool
	// Render draws the body of the chart of r, whose status is ok: the
	// lines under the header line that names the release, its window and
	// its budget.
	Render(r schema.Release, o chart.Options) []string
	// Line is the demo's summary of r, whose status is ok, on one line
	// (without the release's name and kind, which the demo prints before
	// it, and the budget, which it prints after): "" when there is
	// nothing to show.
	Line(r schema.Release) string
	// SampleWidth is the number of values in one of the synthetic
	// samples r carries (one per field of the release).
	SampleWidth(r schema.Release) int
	// Adopts is the shape of the releases of other kinds, or of unknown
	// ones, this renderer draws (see RendererFor), or ShapeNone. At most
	// one registered kind adopts each shape.
	Adopts() Shape
}

// Shape is the data a release record carries that a chart can be drawn
// from, whatever its kind says: the releases of a kind this build does
// not know are drawn by their shape.
type Shape int

// The shapes of a release record, in the order ShapeOf looks for them.
const (
	ShapeNone  Shape = iota // nothing a chart can be drawn from
	ShapeCells              // probabilities over cells (Probabilities)
	ShapeValue              // one value (Value)
	ShapeCurve              // a function on a grid (Densities)
)

// ShapeOf is the shape of r: cells if it has probabilities, else a value
// if it has one, else a curve if it has densities; the order in which
// dpstream has always drawn a release of a kind it does not know.
func ShapeOf(r schema.Release) Shape {
	switch {
	case len(r.Probabilities) > 0:
		return ShapeCells
	case r.Value != nil:
		return ShapeValue
	case len(r.Densities) > 0:
		return ShapeCurve
	}
	return ShapeNone
}

// RendererOf returns the renderer of the registered kind of that name, if
// it is one.
func RendererOf(name string) (Renderer, bool) {
	k, ok := Lookup(name)
	if !ok {
		return nil, false
	}
	rd, ok := k.(Renderer)
	return rd, ok
}

// RendererFor returns the renderer that draws r: its own kind's when that
// Draws r, else the one of the registered kind that Adopts r's shape
// (ShapeOf), else none (the caller says there is nothing to draw).
func RendererFor(r schema.Release) (Renderer, bool) {
	if rd, ok := RendererOf(r.Kind); ok && rd.Draws(r) {
		return rd, true
	}
	shape := ShapeOf(r)
	if shape == ShapeNone {
		return nil, false
	}
	for _, name := range Names() {
		if rd, ok := RendererOf(name); ok && rd.Adopts() == shape {
			return rd, true
		}
	}
	return nil, false
}
