package sum

import (
	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/schema"
)

// Draws reports whether r carries a value or nothing (basic.DrawsValue).
func (Kind) Draws(r schema.Release) bool { return basic.DrawsValue(r) }

// Render draws the value ± its 95% noise interval (basic.RenderValue).
func (Kind) Render(r schema.Release, o chart.Options) []string { return basic.RenderValue(r, o) }

// Line is the value ± its 95% noise interval (basic.ValueLine).
func (Kind) Line(r schema.Release) string { return basic.ValueLine(r) }

// SampleWidth is 1.
func (Kind) SampleWidth(schema.Release) int { return 1 }

// Adopts nothing: count draws a release of an unknown kind that carries a
// value, as sum would (one kind adopts each shape).
func (Kind) Adopts() kind.Shape { return kind.ShapeNone }
