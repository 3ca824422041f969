package basic

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpstream/dpstream/schema"
)

// TestCells checks the cells and every unit's contribution against a
// reference model of the cap: a unit's first c events in a cell count
// (c < L), then none; a cap of L or more caps nothing; and the units'
// norms are Σ_j k_j and √(Σ_j k_j²) of what counted.
func TestCells(t *testing.T) {
	const cells, l = 4, 5
	for _, binCap := range []int{0, 1, 2, l, l + 1} {
		c := NewCells(cells, binCap, l)
		capped := binCap > 0 && binCap < l
		r := rand.New(rand.NewPCG(3, uint64(binCap)))
		per := map[[2]int]int{}
		want := make([]int64, cells)
		var count, clamped int64
		for e := range 200 {
			u, cell, cl := r.IntN(10), r.IntN(cells), r.IntN(3) == 0
			if e < 10 {
				u = e
			}
			c.Add(u, cell, cl, true)
			count++
			if cl {
				clamped++
			}
			if capped && per[[2]int{u, cell}] == binCap {
				continue
			}
			per[[2]int{u, cell}]++
			want[cell]++
		}
		var rs schema.ReleaseStats
		c.Stats(&rs)
		if !slices.Equal(rs.Bins, want) || rs.Count != count || rs.Clamped != clamped {
			t.Errorf("cap %d: bins %v count %d clamped %d, want %v %d %d", binCap, rs.Bins, rs.Count, rs.Clamped, want, count, clamped)
		}
		for u := range 10 {
			var l1, sq int
			for k, n := range per {
				if k[0] == u {
					l1 += n
					sq += n * n
				}
			}
			got, err := c.AppendNorms(nil, u, 0)
			if err != nil || !equal(got, []float64{float64(l1), math.Sqrt(float64(sq))}) {
				t.Errorf("cap %d unit %d: norms %v (%v), want [%d √%d]", binCap, u, got, err, l1, sq)
			}
		}
	}
}

// TestCellsKeepNothingUnasked: without contributions an uncapped window
// keeps no per-unit cell counts; DropUnits forgets the units' norms, and
// the per-cell counts unless a cap still needs them (the cap keeps
// holding after it).
func TestCellsKeepNothingUnasked(t *testing.T) {
	c := NewCells(3, 0, 4)
	for u := range 5 {
		c.Add(u, u%3, false, false)
	}
	if c.perCell != nil || c.units != nil {
		t.Errorf("uncapped window without contributions keeps %d cell counts and %d units", len(c.perCell), len(c.units))
	}
	c = NewCells(3, 0, 4)
	c.Add(0, 1, false, true)
	c.DropUnits()
	if c.perCell != nil || c.units != nil {
		t.Error("DropUnits kept the contributions of an uncapped window")
	}
	c = NewCells(3, 1, 4)
	c.Add(0, 1, false, true)
	c.DropUnits()
	c.Add(0, 1, false, false) // unit 0's second event in cell 1: capped
	var rs schema.ReleaseStats
	c.Stats(&rs)
	if c.units != nil || !slices.Equal(rs.Bins, []int64{0, 1, 0}) || rs.Count != 2 {
		t.Errorf("after DropUnits: %d units, bins %v, count %d; want none, [0 1 0], 2", len(c.units), rs.Bins, rs.Count)
	}
}
