// Package mean is the release kind mean: the mean of a field's values kept
// in a window, each clamped to the configured [lo, hi], post-processed from
// a noisy count and a noisy sum of the values centred on the midpoint of
// the bounds.
//
// Guarantee: ε-DP (laplace) or (ε, δ)-DP (gaussian) under add/remove of one
// privacy unit, the budget split between the count and the centred sum
// (basic composition). Sensitivity: |v − mid| ≤ (hi − lo)/2 for a clamped
// value and a unit keeps at most L events, so a unit moves the centred sum
// by at most L·(hi − lo)/2 and the count by L. Source: the clamped-sum
// sensitivity of Dwork & Roth (2014), section 3.3, with centring as in
// SPEC section 0; see aggregate.Calibrate.
//
// With group_by, the mean of each key's counted values (package grouped:
// keys public or selected privately, values by mechanism/keyed, whose doc
// has the per-key guarantee and sensitivity).
package mean

import (
	"fmt"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/keyed"
)

// Name is the kind's name in the configuration and in release records.
const Name = "mean"

func init() { kind.Register(Kind{}) }

// Kind is the mean kind; it draws its releases as a value ± its 95% noise
// interval, and per-key ones as their top keys (grouped.Renderer).
type Kind struct {
	grouped.Renderer
	grouped.Privacy
}

// Name returns "mean".
func (Kind) Name() string { return Name }

// Plan calibrates a mean release of st.
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	if c, ok := r.Params.(*grouped.Config); ok {
		return grouped.NewPlan(st, r, c, grouped.Metric{Name: Name, Keyed: keyed.Mean})
	}
	p, err := basic.NewValue(aggregate.KindMean, st, r)
	if err != nil {
		return nil, err
	}
	return plan{p}, nil
}

type plan struct{ *basic.Plan }

// Accuracy is the centred sum's expected error over the count: the
// centred sum's noise divided by the count dominates, so E|error| is about
// its E|noise|/n for n events (first order in 1/n). The mean's own error
// depends on the true count, which calibration must not see.
func (p plan) Accuracy() string {
	for _, c := range p.Cal.Components {
		if c.Purpose == aggregate.PurposeCenteredSum {
			return fmt.Sprintf("≈ %.3g/n", c.ExpectedAbsError)
		}
	}
	return "—"
}
