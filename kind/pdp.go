package kind

import (
	"math"

	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// PDPComponent is one charge of a release as per-instance DP (SPEC
// section 4.6) charges a unit for it: where the unit's own sensitivity for
// it is in the unit's contribution (UnitNorms), and what may be added to
// it. The release stage composes the charges (pdp.Account); a
// kind says only which of its norms bounds which of its noise additions,
// which is what its Statistic's layout and its calibration fix together.
type PDPComponent struct {
	Purpose string
	// Noise is the component's mechanism: a discrete Gaussian or discrete
	// Laplace noise addition, an (ε, δ) mechanism as a whole
	// (noise.ApproxDP), or accountant.KindExponential or
	// accountant.KindZCDP (pcls), the last three charged at their worst
	// case unless Exact says otherwise.
	Noise string
	// Sensitivity and Scale are the component's worst-case sensitivity
	// and noise scale, on the value scale.
	Sensitivity, Scale float64
	// Epsilon and Delta are an approx_dp component's (ε, δ), an
	// exponential mechanism's ε0 and a zcdp charge's ρ (in Epsilon).
	Epsilon, Delta float64
	// Norm is the index in the unit's contribution of its per-instance
	// sensitivity for this component, or -1 when the component is charged
	// at its worst case.
	Norm int
	// Slack is what rounding the statistic to its noise grid can add to a
	// non-zero norm (see GridSlack).
	Slack float64
	// Exact says how the release's fit (PDPFit) can tighten the charge of
	// a unit with a single row.
	Exact Exact
}

// Exact is how a release's fit tightens one component's per-instance
// charge for a unit whose contribution carries its single row
// (PDPRowLosses.Row gives x and y).
type Exact uint8

// The ways a fit tightens a charge.
const (
	// ExactNone: the component is charged from its norm (or worst case).
	ExactNone Exact = iota
	// ExactNorm: x is the unit's exact shift of the statistic; the norm
	// is the smaller of the two (before Slack).
	ExactNorm
	// ExactGaussian: the unit is charged a Gaussian of sensitivity x and
	// σ y in place of the worst case.
	ExactGaussian
	// ExactLoss: x is the unit's exact ε for an approx_dp component, in
	// place of its worst-case ε (δ stays the component's).
	ExactLoss
)

// PDPComponentOf returns the per-instance view of a calibrated noise
// addition c: its noise, sensitivity, scale and (ε, δ), charged at its
// worst case (Norm −1) until the kind says which norm bounds it.
func PDPComponentOf(c noise.Component) PDPComponent {
	return PDPComponent{Purpose: c.Purpose, Noise: string(c.Noise), Sensitivity: c.Sensitivity, Scale: c.Scale,
		Epsilon: c.Epsilon, Delta: c.Delta, Norm: -1}
}

// GridSlack is the rounding slack of a statistic of coords coordinates
// that c releases on a grid G coarser than its unit q: ⌊x + d⌋ − ⌊x⌋ ≤
// ⌈d⌉ ≤ d + 1 per coordinate, so the rounded shift of a unit is at most
// its exact one plus one grid step per coordinate, c·G in L1 (discrete
// Laplace) and √c·G in L2 (discrete Gaussian); 0 when G is the unit.
func GridSlack(c noise.Component, coords int) float64 {
	if !(c.Granularity > c.Quantum) {
		return 0
	}
	if c.Noise == noise.DiscreteGaussian {
		return math.Sqrt(float64(coords)) * c.Granularity
	}
	return float64(coords) * c.Granularity
}

// PDPFit is implemented by a release's Fit (Plan.Release) when its
// per-instance certificates depend on it: a regression's fit, whose merged
// statistics, ridge and posterior temperature make the losses of its
// single-row units exact (Exact). A Fit depends on the data; like the
// certificates, it is never published (DESIGN invariant 6).
type PDPFit interface {
	Fit
	// Summarize fills what the release's pDP summary says of the fit
	// (e.g. the σ its per-instance losses are measured against).
	Summarize(rel *schema.PDPRelease)
	// RowLosses returns the evaluator of the Exact components among comps
	// (the plan's PDP) for the window, or nil when the fit tightens none.
	RowLosses(comps []PDPComponent) (PDPRowLosses, error)
}

// PDPRowLosses tightens the per-instance charges of a release's Exact
// components for units with a single row.
type PDPRowLosses interface {
	// Row returns x (and y, for ExactGaussian) for component ci of the
	// plan's PDP and a unit whose contribution carries the single row row
	// (UnitNorms.Row); ok is false when the fit has nothing for that
	// component (the unit is then charged as without a fit).
	Row(ci int, row []float64) (x, y float64, ok bool, err error)
}
