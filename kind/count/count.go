// Package count is the release kind count: the number of events kept in a
// window, after contribution bounding, plus discrete Laplace or discrete
// Gaussian noise; with group_by, the number of each key's counted events
// (package grouped: keys public or selected privately, values by
// mechanism/keyed, whose doc has the per-key guarantee and sensitivity).
//
// Guarantee: ε-DP (laplace) or (ε, δ)-DP (gaussian) under add/remove of one
// privacy unit. Sensitivity: a unit keeps at most L events per window, so
// adding or removing it moves the count by at most L (L1 and L2 alike).
// Source: the Laplace mechanism of Dwork, McSherry, Nissim & Smith (2006)
// and the discrete Gaussian of Canonne, Kamath & Steinke (2020), both
// sampled exactly (CKS 2020); see aggregate.Calibrate.
package count

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
const Name = "count"

// Count adopts values: a release of an unknown kind that carries a value
// (and no probabilities) is drawn as a count, sum and mean are.
func init() {
	kind.Register(Kind{Renderer: grouped.Renderer{ValueRenderer: basic.ValueRenderer{Adopted: kind.ShapeValue}}})
}

// Kind is the count kind; it draws its releases as a value ± its 95% noise
// interval, and per-key ones as their top keys (grouped.Renderer).
type Kind struct {
	grouped.Renderer
	grouped.Privacy
}

// Name returns "count".
func (Kind) Name() string { return Name }

// Plan calibrates a count release of st.
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	if c, ok := r.Params.(*grouped.Config); ok {
		return grouped.NewPlanOrRunning(st, r, c, grouped.Metric{Name: Name, Keyed: keyed.Count})
	}
	br := basic.Release{Release: r}
	p, err := basic.New(br, basic.Spec(aggregate.KindCount, st, br))
	if err != nil {
		return nil, err
	}
	if r.Continual != nil {
		return running.New(st, r, plan{p})
	}
	return plan{p}, nil
}

type plan struct{ *basic.Plan }

// Describe is just "count": a count has no field or bounds.
func (plan) Describe() string { return Name }

// TotalsShape is the count's continual statistic (kind.Totals).
func (p plan) TotalsShape() kind.TotalsShape { return p.CountTotals() }

// TotalsOf returns the window's count.
func (plan) TotalsOf(m kind.Merged) ([]int64, error) { return basic.CountOf(m) }

// FillTotals publishes the increment as value and the running total.
func (plan) FillTotals(rel *schema.Release, inc, inc95, tot, tot95 []float64) {
	basic.FillScalar(rel, 1, inc, inc95, tot, tot95)
}
