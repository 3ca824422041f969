// Package density is the release kind density: an orthogonal-series
// estimate of a field's density on its [lo, hi] from the cosine basis,
// published as noisy coefficients and the post-processed density on a
// grid, optionally with synthetic samples drawn from it.
//
// Guarantee: ε-DP (laplace) or (ε, δ)-DP (gaussian) under add/remove of one
// privacy unit, for the noisy count and the vector of m basis sums
// together. Sensitivity: each basis function is bounded by √2 on the
// clamped value, so a unit's at most L events move the vector of sums by
// at most L·√2·m in L1 and L·√(2m) in L2, and the count by L (see
// mdensity.Calibrate for the exact, grid-rounded values). The
// number of terms m (or terms: auto from the declared expected_events and
// smoothness) is fixed by the configuration, never the data. Source: the
// orthogonal-series density estimator of the lecture notes on DP (SPEC
// section 4.3; the notes' replace-one neighbours double the L1
// sensitivity), with the exact samplers of mechanism/noise.
package density

import (
	"fmt"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/keys"
	mdensity "github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/synthetic"
	"github.com/dpstream/dpstream/schema"
)

// Name is the kind's name in the configuration and in release records.
const Name = "density"

func init() { kind.Register(Kind{}) }

// Kind is the density kind.
type Kind struct{}

// Name returns "density".
func (Kind) Name() string { return Name }

// Plan calibrates a density release of st, with its terms and grid
// resolved (Spec).
func (Kind) Plan(st *config.Stream, cr config.Release) (kind.Plan, error) {
	c, err := keys.Params[Config](cr)
	if err != nil {
		return nil, err
	}
	r := Release{Release: cr, Config: c}
	dc, err := mdensity.Calibrate(Spec(st, r))
	if err != nil {
		return nil, err
	}
	return &Plan{Config: r, Cal: dc}, nil
}

// Terms returns the number of cosine terms of a density release: the
// configured terms, or with `terms: auto`
// mdensity.AutoTerms(expected_events, smoothness, mdensity.MaxTerms). It
// reads the configuration only (the declared window size, never the data),
// so the terms, and with them the noise, are data-independent.
func Terms(r Release) int {
	if r.TermsAuto {
		return mdensity.AutoTerms(float64(r.ExpectedEvents), r.Smoothness, mdensity.MaxTerms)
	}
	return r.Terms
}

// Spec returns the mechanism spec of a density release of st, with the
// terms resolved (Terms) and the grid defaulted to
// max(mdensity.DefaultGridPoints, terms + 1).
func Spec(st *config.Stream, r Release) mdensity.Spec {
	m := Terms(r)
	g := r.GridPoints
	if g == 0 {
		g = max(mdensity.DefaultGridPoints, m+1)
	}
	return mdensity.Spec{
		Noise: noise.Kind(r.Noise), Epsilon: r.Epsilon, Delta: r.Delta,
		Lo: r.Bounds[0], Hi: r.Bounds[1], Terms: m,
		MaxContributions: st.Contribution.MaxEventsPerWindow, GridPoints: g,
	}
}

// Config is a density's own keys, as Decode reads them.
type Config struct {
	// Field is the event field whose density is estimated, on Bounds
	// (values are clamped into it).
	Field  string
	Bounds [2]float64
	// Terms is the number m of cosine terms, in 1..mdensity.MaxTerms; 0
	// with TermsAuto.
	Terms int
	// TermsAuto is set by `terms: auto`: m is chosen by
	// mdensity.AutoTerms(ExpectedEvents, Smoothness, ...) when the release
	// is planned. It reads the declared size, never the data, so m (and
	// the noise) is data-independent.
	TermsAuto bool
	// ExpectedEvents is the declared number of kept events per window
	// that terms: auto sizes m for.
	ExpectedEvents int
	// Smoothness is the Sobolev smoothness γ > 0 that terms: auto
	// assumes, default mdensity.DefaultSmoothness.
	Smoothness float64
	// GridPoints is the number of points the density is evaluated on, in
	// [Terms + 1, mdensity.MaxGridPoints]; 0 means the default,
	// max(mdensity.DefaultGridPoints, m + 1).
	GridPoints int
	// Samples is how many synthetic values the release also publishes.
	Samples int
}

// Release is a density release: the keys every release has and its own.
type Release struct {
	config.Release
	*Config
}

// Plan is a calibrated density release.
type Plan struct {
	Config Release
	Cal    mdensity.Calibration
}

// Charges returns the count's and the basis sums' charges.
func (p *Plan) Charges() []kind.Charge { return kind.ComponentCharges(p.Cal.Components) }

// Components returns the count's and the basis sums' noise.
func (p *Plan) Components() []noise.Component { return p.Cal.Components }

// Widest sizes the grid, the coefficients and the samples.
func (p *Plan) Widest(rel *schema.Release) {
	g := p.Cal.Spec.GridPoints
	rel.Edges, rel.Densities, rel.Coefficients = kind.Wide(g), kind.Wide(g), kind.Wide(p.Cal.Spec.Terms)
	rel.Samples = kind.Wide(p.Config.Samples)
}

// Merge adds the partials' counts and integer basis sums exactly, in
// partition order (the result does not depend on the order; see
// mdensity.Stats.Merge). A partial whose term array does not have
// m entries, or an int64 overflow, is an error and the window is not
// released.
func (p *Plan) Merge(parts []kind.Part) (kind.Merged, error) {
	terms := p.Cal.Spec.Terms
	out := mdensity.Stats{Terms: make([]int64, terms)}
	for _, pt := range parts {
		rs := pt.Stats
		if len(rs.Terms) != terms {
			return out, &kind.PartError{Partition: pt.Partition, Err: fmt.Errorf("partial has %d basis sums, want %d terms", len(rs.Terms), terms)}
		}
		if err := out.Merge(mdensity.Stats{Count: rs.Count, Terms: rs.Terms}); err != nil {
			return out, &kind.PartError{Partition: pt.Partition, Err: err}
		}
	}
	return out, nil
}

// Release publishes the noisy coefficients and the post-processed density
// on the grid (Edges), no value, and the synthetic samples (drawn from the
// released density only, with randomness from the noise's source).
func (p *Plan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	stats, ok := m.(mdensity.Stats)
	if !ok {
		return nil, fmt.Errorf("density release: merged statistics of type %T", m)
	}
	res, err := mdensity.Release(p.Cal, stats, sampler)
	if err != nil {
		return nil, err
	}
	rel.Coefficients, rel.Edges, rel.Densities = res.Coefficients, res.Grid, res.Density
	if p.Config.Samples > 0 {
		if rel.Samples, err = synthetic.Density(noise.SourceOf(sampler), res.Grid, res.Density, p.Config.Samples); err != nil {
			return nil, fmt.Errorf("synthetic samples: %w", err)
		}
	}
	return nil, nil
}

// Describe names the field, the bounds and the terms.
func (p *Plan) Describe() string {
	c := p.Config
	auto := ""
	if c.TermsAuto {
		auto = " (auto)"
	}
	return fmt.Sprintf("density of %s on [%g, %g], %d terms%s", c.Field, c.Bounds[0], c.Bounds[1], p.Cal.Spec.Terms, auto)
}

// Accuracy is the error of one coefficient: a noisy basis sum divided by
// the noisy count, so about E|noise of one sum|/n for n events (first
// order in 1/n).
func (p *Plan) Accuracy() string {
	for _, c := range p.Cal.Components {
		if c.Purpose == mdensity.PurposeBasisSums {
			return fmt.Sprintf("≈ %.3g/n per coefficient", c.ExpectedAbsError)
		}
	}
	return "—"
}

// Notes has nothing to add.
func (p *Plan) Notes() []string { return nil }
