package sum

import (
	"fmt"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/mechanism/aggregate"
)

// NewStatistic returns the exact statistic of a sum of the value at index
// at of an event's values, clamped to [lo, hi]: the window's count and
// Σ Units(v) with the sum's aggregate.Quantizer (SumUnits).
//
// A unit's contribution (kind.UnitNorms) is [|S|], S = Σ Units(v)·Quantum()
// over its kept values: adding or removing the unit moves the exact sum
// by exactly S.
func NewStatistic(lo, hi float64, at int) (kind.Statistic, error) {
	return basic.NewSum(aggregate.KindSum, lo, hi, at)
}

type plan struct{ *basic.Plan }

// Fields is the summed field.
func (p plan) Fields() []kind.Field { return []kind.Field{{Name: p.Config.Field}} }

// Statistic returns the sum's statistic on the configured bounds.
func (p plan) Statistic(at []int) (kind.Statistic, error) {
	if len(at) != 1 {
		return nil, fmt.Errorf("a sum reads one field, given %d places", len(at))
	}
	return NewStatistic(p.Config.Bounds[0], p.Config.Bounds[1], at[0])
}

// Norms is [|S|].
func (plan) Norms() kind.Norms { return kind.Norms{Head: 1} }

// PDP charges the sum's noise by |S| (norm 0), plus one grid step when
// the sum is released on a grid coarser than its quantum.
func (p plan) PDP() ([]kind.PDPComponent, error) {
	var out []kind.PDPComponent
	for _, c := range p.Cal.Components {
		pc := kind.PDPComponentOf(c)
		if c.Purpose != aggregate.PurposeSum {
			return nil, fmt.Errorf("component %s has no per-instance rule", c.Purpose)
		}
		pc.Norm, pc.Slack = 0, kind.GridSlack(c, 1)
		out = append(out, pc)
	}
	return out, nil
}
