package histogram

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

// Statistic is the exact statistic of a histogram: the count of a
// window's kept events and the count of each cell, an event's cell given
// by its fields' values clamped to their axes (row-major, the last field
// fastest: aggregate.CellIndex), with one clamp counted per event whatever
// the number of its fields clamped; optionally capped at c events of a
// unit per cell (the first c by offset).
//
// A unit's contribution (kind.UnitNorms) is [Σ_j k_j, √(Σ_j k_j²)], k_j
// the number of its events counted in cell j (after the cap): adding or
// removing the unit moves the cells by exactly k, whose L1 and L2 norms
// these are.
type Statistic struct {
	axes  []aggregate.Axis
	at    []int
	cells int
	// binCap and maxEvents decide the cap (basic.NewCells).
	binCap, maxEvents int
}

// NewStatistic returns the statistic of a histogram over axes (one to
// aggregate.MaxHistogramDims), axis j's value at index at[j] of an event's
// values, with a per-unit cap of binCap events per cell (0: none) for a
// stream keeping maxEvents (L) events per unit and window. An error for a
// shape no histogram has (bins, bounds or places missing).
func NewStatistic(axes []aggregate.Axis, at []int, binCap, maxEvents int) (*Statistic, error) {
	if len(at) != len(axes) {
		return nil, fmt.Errorf("%d fields for %d axes", len(at), len(axes))
	}
	bins := make([]int, len(axes))
	for j, a := range axes {
		if !(a.Lo < a.Hi) || math.IsInf(a.Hi-a.Lo, 0) {
			return nil, fmt.Errorf("axis %d: bounds [%v, %v] must be finite with lo < hi", j+1, a.Lo, a.Hi)
		}
		if at[j] < 0 {
			return nil, fmt.Errorf("axis %d: value index %d", j+1, at[j])
		}
		bins[j] = a.Bins
	}
	cells, err := aggregate.CellCount(bins)
	if err != nil {
		return nil, err
	}
	return &Statistic{axes: axes, at: at, cells: cells, binCap: binCap, maxEvents: maxEvents}, nil
}

// Norms is [Σ_j k_j, √(Σ_j k_j²)].
func (s *Statistic) Norms() kind.Norms { return kind.Norms{Head: 2} }

// NewWindow returns a window with every cell zero.
func (s *Statistic) NewWindow() kind.Accumulator {
	return &window{s: s, Cells: basic.NewCells(s.cells, s.binCap, s.maxEvents)}
}

type window struct {
	s *Statistic
	basic.Cells
	// cell and clamped are the event Check accepted last, for Add.
	cell    int
	clamped bool
}

// Check refuses an event without a value for each field, or with NaN (the
// Extractor produces neither; checking keeps a bad event from reaching a
// cell index of −1), and computes its cell.
func (w *window) Check(values []float64, _ []string) error {
	cell, clamped := 0, false
	for j, a := range w.s.axes {
		i := w.s.at[j]
		if i >= len(values) || math.IsNaN(values[i]) {
			if j == 0 {
				return errors.New("value missing or NaN")
			}
			return fmt.Errorf("value %d missing or NaN", i)
		}
		v := values[i]
		if v < a.Lo {
			v, clamped = a.Lo, true
		} else if v > a.Hi {
			v, clamped = a.Hi, true
		}
		cell = cell*a.Bins + aggregate.BinIndex(v, a.Lo, a.Hi, a.Bins)
	}
	w.cell, w.clamped = cell, clamped
	return nil
}

func (w *window) Add(_ []float64, _ []string, unit int, contrib bool) error {
	w.Cells.Add(unit, w.cell, w.clamped, contrib)
	return nil
}

func (w *window) Stats(rs *schema.ReleaseStats) { w.Cells.Stats(rs) }

// Fields are the histogram's fields, in the order of its axes.
func (p *Plan) Fields() []kind.Field {
	c := p.Config
	names := c.Fields
	if len(names) == 0 {
		names = []string{c.Field}
	}
	out := make([]kind.Field, len(names))
	for j, n := range names {
		out[j] = kind.Field{Name: n}
	}
	return out
}

// Statistic returns the histogram's statistic with the calibration's
// axes (bins: auto resolved) and the configured cap.
func (p *Plan) Statistic(at []int) (kind.Statistic, error) {
	return NewStatistic(p.Axes(), at, p.Config.MaxPerBin, p.Cal.Spec.MaxContributions)
}

// Norms is [Σ_j k_j, √(Σ_j k_j²)].
func (p *Plan) Norms() kind.Norms { return kind.Norms{Head: 2} }

// PDP charges the cells' noise by Σ_j k_j (Laplace, norm 0) or √(Σ_j k_j²)
// (Gaussian, norm 1); counts are released on their unit grid.
func (p *Plan) PDP() ([]kind.PDPComponent, error) { return basic.CellsPDP(p.Cal.Components) }
