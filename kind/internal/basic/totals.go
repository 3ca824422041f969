package basic

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

// CountTotals returns a count's continual statistic: the count, whose
// change by one unit in a window is at most L (kind.Totals).
func (p *Plan) CountTotals() kind.TotalsShape {
	return kind.TotalsShape{N: 1, L2: float64(p.Cal.Spec.MaxContributions), Unit: 1, Layout: "count"}
}

// CountOf returns the merged count as a one-coordinate vector.
func CountOf(m kind.Merged) ([]int64, error) {
	s, ok := m.(aggregate.Stats)
	if !ok {
		return nil, fmt.Errorf("merged statistics of type %T", m)
	}
	return []int64{s.Count}, nil
}

// FillScalar fills a continual count's or sum's value and running total,
// scaled from the vector's integer units by unit.
func FillScalar(rel *schema.Release, unit float64, increments, incIntervals, totals, totIntervals []float64) {
	v, t, t95 := increments[0]*unit, totals[0]*unit, totIntervals[0]*unit
	rel.Value, rel.RunningTotal, rel.RunningInterval95 = &v, &t, &t95
	if len(incIntervals) > 0 {
		i95 := incIntervals[0] * unit
		rel.Interval95 = &i95
	}
}

// sumTotalsUnits is about how many units of the continual sum's grid one
// unit's events in a window may move it by (SumTotals): the sum's
// fixed-point units (up to 2^30 per value) would overflow the continual
// factor's int64 arithmetic within a few windows.
const sumTotalsUnits = 1 << 12

// SumTotals returns a sum's continual statistic: the fixed-point sum K
// regridded to r = 2^j units, ⌊K/r + 1/2⌋, with r the smallest power of
// two that brings the window sensitivity D = L·K* (K* = MaxUnits) to at
// most sumTotalsUnits grid steps. Rounding moves each neighbour's value
// by less than one step, so a unit moves the regridded sum by at most
// ⌈D/r⌉ + 1 steps: the L2 returned. unit is the value of one step, q·r.
func (p *Plan) SumTotals() (shape kind.TotalsShape, r int64, unit float64, err error) {
	z, err := p.Cal.Spec.Quantizer()
	if err != nil {
		return shape, 0, 0, err
	}
	d := float64(p.Cal.Spec.MaxContributions) * float64(z.MaxUnits())
	r = 1
	for d/float64(r) > sumTotalsUnits {
		r *= 2
	}
	unit = z.Quantum() * float64(r)
	return kind.TotalsShape{N: 1, L2: math.Ceil(d/float64(r)) + 1, Unit: unit,
		Layout: fmt.Sprintf("sum [%v, %v] unit %v", p.Cal.Spec.Lo, p.Cal.Spec.Hi, unit)}, r, unit, nil
}

// SumOf returns the merged sum regridded to r units (SumTotals).
func SumOf(m kind.Merged, r int64) ([]int64, error) {
	s, ok := m.(aggregate.Stats)
	if !ok {
		return nil, fmt.Errorf("merged statistics of type %T", m)
	}
	// ⌊K/r + 1/2⌋ in integers: floor division of K + r/2 (r a power of
	// two, K far from overflow: |K| ≤ MaxSumEvents·2^30).
	k := s.SumUnits + r/2
	q := k / r
	if k%r != 0 && k < 0 {
		q--
	}
	return []int64{q}, nil
}

// HistogramTotals returns a histogram's continual statistic: its bins,
// whose change by one unit in a window has L2 norm at most
// √(c²·⌊L/c⌋ + (L mod c)²) with c the per-bin cap (L without one): the
// most L events spread with at most c per bin can reach.
func (p *Plan) HistogramTotals() kind.TotalsShape {
	l := p.Cal.Spec.MaxContributions
	c := p.Cal.Spec.BinCap
	if c <= 0 || c > l {
		c = l
	}
	sq := float64(c*c*(l/c) + (l%c)*(l%c))
	layout := fmt.Sprintf("histogram cap %d", c)
	for _, a := range p.Cal.Spec.HistogramAxes() {
		layout += fmt.Sprintf(" [%v, %v]/%d", a.Lo, a.Hi, a.Bins)
	}
	return kind.TotalsShape{N: p.Cal.Spec.Cells(), L2: math.Sqrt(sq), Unit: 1, Layout: layout}
}

// BinsOf returns the merged bins.
func BinsOf(m kind.Merged, n int) ([]int64, error) {
	s, ok := m.(aggregate.Stats)
	if !ok {
		return nil, fmt.Errorf("merged statistics of type %T", m)
	}
	if len(s.Bins) != n {
		return nil, fmt.Errorf("merged statistics have %d bins, want %d", len(s.Bins), n)
	}
	return s.Bins, nil
}
