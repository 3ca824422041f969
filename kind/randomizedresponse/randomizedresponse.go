// Package randomizedresponse is the release kind randomized_response: the
// counts of a categorical field that producers randomized locally with
// k-ary randomized response of parameter p before publishing, released
// with central noise and debiased into estimates of the true category
// counts (SPEC section 4.4).
//
// Guarantee, central: ε-DP (laplace) or (ε, δ)-DP (gaussian) under
// add/remove of one privacy unit, exactly the histogram's over the k
// category counts (sensitivity L in L1; with a per-unit cap c per category
// sqrt(⌊L/c⌋·c² + (L mod c)²) in L2). Local, per report and independent of
// the central one: ε_local = log((1 − p + p/k)/(p/k)) against anyone who
// sees the report before the release (rr.Mechanism).
// Debiasing is post-processing. Source: Warner (1965); the k-ary
// mechanism and its debiasing as in the lecture notes on DP; see
// rr.Calibrate and rr.Release.
package randomizedresponse

import (
	"fmt"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/rr"
	"github.com/dpstream/dpstream/schema"
)

// Name is the kind's name in the configuration and in release records.
const Name = "randomized_response"

func init() { kind.Register(Kind{}) }

// Kind is the randomized_response kind.
type Kind struct{}

// Name returns "randomized_response".
func (Kind) Name() string { return Name }

// Plan calibrates a randomized_response release of st.
func (Kind) Plan(st *config.Stream, cr config.Release) (kind.Plan, error) {
	c, err := keys.Params[Config](cr)
	if err != nil {
		return nil, err
	}
	r := Release{Release: cr, Config: c}
	spec, err := Spec(st, r)
	if err != nil {
		return nil, err
	}
	rc, err := rr.Calibrate(spec)
	if err != nil {
		return nil, err
	}
	return &Plan{Config: r, Cal: rc}, nil
}

// Spec returns the mechanism spec of a randomized_response release of st:
// the producers' p as configured, or derived from epsilon_local by
// p = k/(e^ε + k − 1) (rr.ForEpsilon).
func Spec(st *config.Stream, r Release) (rr.Spec, error) {
	k := len(r.Categories)
	p := r.RRProbability
	if p == 0 {
		mech, err := rr.ForEpsilon(k, r.LocalEpsilon)
		if err != nil {
			return rr.Spec{}, fmt.Errorf("epsilon_local: %w", err)
		}
		p = mech.P()
	}
	return rr.Spec{
		Noise: noise.Kind(r.Noise), Epsilon: r.Epsilon, Delta: r.Delta,
		Categories: k, P: p, MaxContributions: st.Contribution.MaxEventsPerWindow, BinCap: r.MaxPerBin,
	}, nil
}

// Config is a randomized_response release's own keys, as Decode reads
// them.
type Config struct {
	// Field is the event field holding the reported category.
	Field string
	// Categories are the field's values, 2..MaxCategories, distinct,
	// non-blank, in the order the release reports them.
	Categories []string
	// RRProbability is p of the producers' k-ary randomized response: the
	// probability that a report is a uniform category instead of the true
	// one, in (0, 1); 0 when LocalEpsilon is given instead. Exactly one of
	// the two is set.
	RRProbability float64
	// LocalEpsilon is the producers' local ε, > 0 and finite; 0 when
	// RRProbability is given instead.
	LocalEpsilon float64
	// MaxPerBin is c, the most reports of one unit counted in one category
	// per window, in 1..L; 0 means no cap.
	MaxPerBin int
}

// Release is a randomized_response release: the keys every release has
// and its own.
type Release struct {
	config.Release
	*Config
}

// Plan is a calibrated randomized_response release.
type Plan struct {
	Config Release
	Cal    rr.Calibration
}

// Charges returns the category counts' charge.
func (p *Plan) Charges() []kind.Charge { return kind.ComponentCharges(p.Cal.Components) }

// Components returns the category counts' noise.
func (p *Plan) Components() []noise.Component { return p.Cal.Components }

// Widest sizes the k counts, estimates, errors and frequencies.
func (p *Plan) Widest(rel *schema.Release) {
	k := p.Cal.Spec.Categories
	rel.NoisyCounts, rel.DebiasedCounts, rel.StdErrors, rel.Probabilities = kind.Wide(k), kind.Wide(k), kind.Wide(k), kind.Wide(k)
	rel.Fields, rel.Categories = []string{p.Config.Field}, p.Config.Categories
}

// Merge adds the partials' category counts exactly, as a histogram's cells.
func (p *Plan) Merge(parts []kind.Part) (kind.Merged, error) {
	return basic.MergeStats(parts, p.Cal.Spec.Categories)
}

// Release adds central noise to the category counts and debiases them.
func (p *Plan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	stats, ok := m.(aggregate.Stats)
	if !ok {
		return nil, fmt.Errorf("randomized_response release: merged statistics of type %T", m)
	}
	res, err := rr.Release(p.Cal, stats.Bins, sampler)
	if err != nil {
		return nil, err
	}
	c := p.Config
	iv, le := res.Interval95, res.LocalEpsilon
	rel.Fields, rel.Categories = []string{c.Field}, c.Categories
	rel.NoisyCounts, rel.DebiasedCounts, rel.StdErrors, rel.Probabilities = res.NoisyCounts, res.Debiased, res.StdErr, res.Frequencies
	rel.Interval95, rel.LocalEpsilon = &iv, &le
	return nil, nil
}

// Describe names the field, its categories and the producers'
// randomization.
func (p *Plan) Describe() string {
	return fmt.Sprintf("randomized_response of %s, %d categories, local ε=%.3g (p=%.3g)", p.Config.Field,
		p.Cal.Spec.Categories, p.Cal.Spec.LocalEpsilon(), p.Cal.Spec.P)
}

// Accuracy is each noisy count's expected absolute error.
func (p *Plan) Accuracy() string {
	if len(p.Cal.Components) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3g per noisy count", p.Cal.Components[0].ExpectedAbsError)
}

// Notes has nothing to add.
func (p *Plan) Notes() []string { return nil }
