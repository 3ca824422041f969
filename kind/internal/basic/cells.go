package basic

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Cells is the exact statistic of a histogram's cells or a
// randomized_response release's categories in one window: the count of
// kept events and each cell's count, with an optional per-unit cap c per
// cell, the first c of a unit's kept events in a cell by offset.
//
// A unit's contribution (kind.UnitNorms) is [Σ_j k_j, √(Σ_j k_j²)], k_j
// the number of the unit's events counted in cell j, after the cap.
type Cells struct {
	count, clamped int64
	bins           []int64
	// cap is c, 0 when no cell is capped.
	cap int
	// perCell counts each unit's events per cell, keyed by unit·cells +
	// cell: for a cap, and for every cell while the window keeps
	// contributions (k_j²).
	perCell map[uint64]int
	// units are Σ_j k_j and Σ_j k_j² by unit index, with contributions.
	units []cellUnit
}

type cellUnit struct{ l1, sq int64 }

// NewCells returns the empty statistic of n cells, capped at binCap
// events of a unit per cell when binCap is in (0, maxEvents) (a cap of L
// or more caps nothing: a unit has at most L kept events).
func NewCells(n, binCap, maxEvents int) Cells {
	c := Cells{bins: make([]int64, n)}
	if binCap > 0 && binCap < maxEvents {
		c.cap = binCap
	}
	return c
}

// Add counts a kept event of unit in cell, unless the unit already has c
// events in that cell in this window. Which events count depends only on
// their order and the cell they fall in, both the unit's own, so the cap
// bounds every unit's change to each cell by c without looking at other
// units (SPEC section 0). With contrib it also adds the counted event to
// the unit's Σ_j k_j and Σ_j k_j², the latter exactly as
// (k_j + 1)² − k_j² = 2k_j + 1. clamped counts the event as clamped.
func (c *Cells) Add(unit, cell int, clamped, contrib bool) {
	c.count++
	if clamped {
		c.clamped++
	}
	if contrib {
		c.units = grow(c.units, unit)
	}
	if capped := c.cap > 0; capped || contrib {
		if c.perCell == nil {
			c.perCell = map[uint64]int{}
		}
		k := uint64(unit)*uint64(len(c.bins)) + uint64(cell)
		n := c.perCell[k]
		if capped && n >= c.cap {
			return
		}
		c.perCell[k] = n + 1
		if contrib {
			u := &c.units[unit]
			u.l1++
			u.sq += 2*int64(n) + 1 // n < kind.MaxUnitEvents: no overflow
		}
	}
	c.bins[cell]++
}

// Stats reports the count, the clamps and the cells.
func (c *Cells) Stats(rs *schema.ReleaseStats) {
	rs.Count, rs.Clamped, rs.Bins = c.count, c.clamped, c.bins
}

// AppendNorms appends [Σ_j k_j, √(Σ_j k_j²)] of unit.
func (c *Cells) AppendNorms(buf []float64, unit, _ int) ([]float64, error) {
	if unit < 0 || unit >= len(c.units) {
		return nil, fmt.Errorf("no contribution of unit %d", unit)
	}
	u := c.units[unit]
	return append(buf, float64(u.l1), math.Sqrt(float64(u.sq))), nil
}

// DropUnits forgets the units' contributions, and the cell counts that
// only they needed.
func (c *Cells) DropUnits() {
	c.units = nil
	if c.cap == 0 {
		c.perCell = nil
	}
}

// CellsPDP returns the per-instance rules of a statistic of cells
// (Cells): the bins' noise charged by the unit's L1 or L2 norm.
func CellsPDP(comps []noise.Component) ([]kind.PDPComponent, error) {
	var out []kind.PDPComponent
	for _, c := range comps {
		pc := kind.PDPComponentOf(c)
		if c.Purpose != aggregate.PurposeBins {
			return nil, fmt.Errorf("component %s has no per-instance rule", c.Purpose)
		}
		pc.Norm = 0 // Σ_j k_j for Laplace
		if c.Noise == noise.DiscreteGaussian {
			pc.Norm = 1 // √(Σ_j k_j²)
		}
		out = append(out, pc)
	}
	return out, nil
}
