package mean

import (
	"fmt"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/mechanism/aggregate"
)

// NewStatistic returns the exact statistic of a mean of the value at index
// at of an event's values, clamped to [lo, hi]: the window's count and
// Σ Units(v) with the mean's aggregate.Quantizer, whose units are centred
// on the midpoint of the bounds (CenteredSumUnits).
//
// A unit's contribution (kind.UnitNorms) is [k, |C|]: k its kept events,
// C = Σ Units(v)·Quantum() over its kept values with the mean's quantizer.
// Adding or removing the unit moves the count by exactly k and the centred
// sum by exactly C.
func NewStatistic(lo, hi float64, at int) (kind.Statistic, error) {
	return basic.NewSum(aggregate.KindMean, lo, hi, at)
}

// Fields is the averaged field.
func (p plan) Fields() []kind.Field { return []kind.Field{{Name: p.Config.Field}} }

// Statistic returns the mean's statistic on the configured bounds.
func (p plan) Statistic(at []int) (kind.Statistic, error) {
	if len(at) != 1 {
		return nil, fmt.Errorf("a mean reads one field, given %d places", len(at))
	}
	return NewStatistic(p.Config.Bounds[0], p.Config.Bounds[1], at[0])
}

// Norms is [k, |C|].
func (plan) Norms() kind.Norms { return kind.Norms{Head: 2} }

// PDP charges the count's noise by k (norm 0) and the centred sum's by
// |C| (norm 1), plus one grid step when the centred sum is released on a
// grid coarser than its quantum.
func (p plan) PDP() ([]kind.PDPComponent, error) {
	var out []kind.PDPComponent
	for _, c := range p.Cal.Components {
		pc := kind.PDPComponentOf(c)
		switch c.Purpose {
		case aggregate.PurposeCount:
			pc.Norm = 0
		case aggregate.PurposeCenteredSum:
			pc.Norm, pc.Slack = 1, kind.GridSlack(c, 1)
		default:
			return nil, fmt.Errorf("component %s has no per-instance rule", c.Purpose)
		}
		out = append(out, pc)
	}
	return out, nil
}
