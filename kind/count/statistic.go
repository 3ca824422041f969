package count

import (
	"fmt"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

// Statistic is the exact statistic of a count: the number of kept events
// of a window. A count reads no field.
//
// A unit's contribution (kind.UnitNorms) is [k], k the number of its kept
// events in the window: adding or removing the unit moves the count by
// exactly k.
type Statistic struct{}

// NewStatistic returns the statistic of a count.
func NewStatistic() Statistic { return Statistic{} }

// Norms is [k].
func (Statistic) Norms() kind.Norms { return kind.Norms{Head: 1} }

// NewWindow returns a window with no event counted.
func (Statistic) NewWindow() kind.Accumulator { return &window{} }

type window struct{ n int64 }

// Check accepts every event: a count reads no value and cannot overflow
// (a window holds fewer events than there are int64 offsets).
func (*window) Check([]float64, []string) error { return nil }

func (w *window) Add([]float64, []string, int, bool) error {
	w.n++
	return nil
}

func (w *window) Stats(rs *schema.ReleaseStats) { rs.Count = w.n }

// AppendNorms appends k: the stage counts a unit's kept events itself.
func (*window) AppendNorms(buf []float64, _, kept int) ([]float64, error) {
	return append(buf, float64(kept)), nil
}

func (*window) DropUnits() {}

// Fields is empty: a count reads no field.
func (plan) Fields() []kind.Field { return nil }

// Statistic returns the count's statistic.
func (plan) Statistic([]int) (kind.Statistic, error) { return NewStatistic(), nil }

// Norms is the Statistic's: [k].
func (plan) Norms() kind.Norms { return Statistic{}.Norms() }

// PDP charges the count's noise by the unit's k (norm 0), which is exact
// on the count's unit grid.
func (p plan) PDP() ([]kind.PDPComponent, error) {
	var out []kind.PDPComponent
	for _, c := range p.Cal.Components {
		pc := kind.PDPComponentOf(c)
		if c.Purpose != aggregate.PurposeCount {
			return nil, fmt.Errorf("component %s has no per-instance rule", c.Purpose)
		}
		pc.Norm = 0
		out = append(out, pc)
	}
	return out, nil
}
