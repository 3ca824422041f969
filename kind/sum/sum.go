// Package sum is the release kind sum: the sum of a field's values kept in
// a window, each clamped to the configured [lo, hi], plus discrete noise on
// a power-of-two grid.
//
// Guarantee: ε-DP (laplace) or (ε, δ)-DP (gaussian) under add/remove of one
// privacy unit. Sensitivity: each clamped value is at most max(|lo|, |hi|)
// in magnitude and a unit keeps at most L events, so a unit moves the sum
// by at most L·max(|lo|, |hi|) (rounded up to the noise grid; see
// aggregate.Calibrate). Source: Dwork & Roth (2014), section 3.3, with the
// exact sums and samplers of mechanism (SPEC sections 0 and 2).
//
// With group_by, the sum of each key's counted values (package grouped:
// keys public or selected privately, values by mechanism/keyed, whose doc
// has the per-key guarantee and sensitivity).
package sum

import (
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/keyed"
	"github.com/dpstream/dpstream/schema"
)

// Name is the kind's name in the configuration and in release records.
const Name = "sum"

func init() { kind.Register(Kind{}) }

// Kind is the sum kind; it draws its releases as a value ± its 95% noise
// interval, and per-key ones as their top keys (grouped.Renderer).
type Kind struct {
	grouped.Renderer
	grouped.Privacy
}

// Name returns "sum".
func (Kind) Name() string { return Name }

// Plan calibrates a sum release of st.
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	if c, ok := r.Params.(*grouped.Config); ok {
		return grouped.NewPlanOrRunning(st, r, c, grouped.Metric{Name: Name, Keyed: keyed.Sum})
	}
	p, err := basic.NewValue(aggregate.KindSum, st, r)
	if err != nil {
		return nil, err
	}
	if r.Continual != nil {
		shape, grid, unit, err := p.SumTotals()
		if err != nil {
			return nil, err
		}
		return running.New(st, r, totals{plan{p}, shape, grid, unit})
	}
	return plan{p}, nil
}

// totals is a continual sum's statistic: the sum regridded so that the
// continual factor's integer arithmetic has room (basic.SumTotals).
type totals struct {
	plan
	shape kind.TotalsShape
	grid  int64
	unit  float64
}

// TotalsShape is the regridded sum (kind.Totals).
func (t totals) TotalsShape() kind.TotalsShape { return t.shape }

// TotalsOf returns the window's regridded sum.
func (t totals) TotalsOf(m kind.Merged) ([]int64, error) { return basic.SumOf(m, t.grid) }

// FillTotals publishes the increment as value and the running total, in
// the values' units.
func (t totals) FillTotals(rel *schema.Release, inc, inc95, tot, tot95 []float64) {
	basic.FillScalar(rel, t.unit, inc, inc95, tot, tot95)
}
