// Package variance is the release kind variance: the variance of a field's
// values kept in a window, each clamped to the configured [lo, hi], or with
// group_by the variance per key (Privacy on Beam's VariancePerKey,
// PipelineDP's VARIANCE), post-processed from a noisy count, a noisy
// centered sum and a noisy centered sum of squares.
//
// Guarantee: ε-DP (laplace) or (ε, δ)-DP (gaussian) under add/remove of one
// privacy unit, the budget split in three (basic composition of ε, or of ρ
// under zCDP). Sensitivity: a unit adds at most M = min(L, L0·c) counted
// events (one key without group_by: M = L), each moving the count by 1, the
// centered sum by at most (hi − lo)/2 and the twice-centered sum of squares
// by at most half its range; aggregate.CalibrateVariance has the exact
// fixed-point sensitivities and their proof. The variance
// clamp(mean(x²) − mean(x)², 0, ((hi − lo)/2)²) is post-processing. With
// group_by, keys are public or selected privately (package grouped).
// Source: the bounded variance of Google's differential-privacy library
// (BoundedVariance), with the exact sums of SPEC sections 0 and 2.
package variance

import (
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/kind/internal/keys"
)

// Name is the kind's name in the configuration and in release records.
const Name = "variance"

func init() { kind.Register(Kind{}) }

// Kind is the variance kind; it draws its releases as a value ± its 95%
// interval, and per-key ones as their top keys.
type Kind struct {
	grouped.Renderer
	grouped.Privacy
}

// Name returns "variance".
func (Kind) Name() string { return Name }

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "The variance of a numeric field over the kept events, each value clamped to `bounds`, from a noisy count, centered sum and centered sum of squares (the budget split in three); with `group_by`, the variance per key."
}

// Fields are the value field, its bounds and the group-by keys.
func (Kind) Fields() []config.Field {
	return append([]config.Field{keys.FieldDoc("whose variance is released (numbers)"), keys.BoundsDoc}, grouped.Fields(false)...)
}

// Decode reads field and bounds, and the group-by keys, into a
// *grouped.Config (grouped.Global without group_by).
func (Kind) Decode(p *config.Params, r *config.Release) { grouped.DecodeValue(p, r, Name, true) }

// KeyHint points a histogram's fields to field.
func (Kind) KeyHint(key string) string {
	if key == "fields" {
		return "use field for its one field"
	}
	return ""
}

// Plan calibrates a variance release of st.
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	c, err := keys.Params[grouped.Config](r)
	if err != nil {
		return nil, err
	}
	return grouped.NewPlan(st, r, c, grouped.Metric{Name: Name, Variance: true})
}
