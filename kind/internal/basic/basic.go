// Package basic is what the kinds count, sum, mean and histogram share:
// each is calibrated by aggregate.Calibrate from an aggregate.Spec, merges
// its partials' integer statistics exactly (aggregate.Stats) and is
// released by aggregate.Release. The kind packages differ in the spec they
// build, the fields they publish and how they describe themselves. The
// counts of cells (Cells, CellsPDP, MergeStats) serve randomized_response's
// categories too, and the values' line and chart (render.go) count, sum
// and mean.
package basic

import (
	"fmt"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Spec returns the mechanism spec of a release of kind k of st without its
// kind-specific shape (a histogram adds its further fields and cap).
func Spec(k aggregate.Kind, st *config.Stream, r Release) aggregate.Spec {
	return aggregate.Spec{
		Kind: k, Noise: noise.Kind(r.Noise),
		Epsilon: r.Epsilon, Delta: r.Delta, Lo: r.Bounds[0], Hi: r.Bounds[1],
		MaxContributions: st.Contribution.MaxEventsPerWindow,
	}
}

// Release is a count, sum, mean or histogram release: the keys every
// release has and its (first) field with its bounds (zero for a count).
type Release struct {
	config.Release
	keys.Value
}

// Plan is a calibrated count, sum, mean or histogram release.
type Plan struct {
	Config Release
	Cal    aggregate.Calibration
}

// New calibrates spec for the release r.
func New(r Release, spec aggregate.Spec) (*Plan, error) {
	cal, err := aggregate.Calibrate(spec)
	if err != nil {
		return nil, err
	}
	return &Plan{Config: r, Cal: cal}, nil
}

// NewValue calibrates a release of kind k (sum or mean) of st: one field,
// read from r's *keys.Value, clamped to its bounds.
func NewValue(k aggregate.Kind, st *config.Stream, r config.Release) (*Plan, error) {
	v, err := keys.Params[keys.Value](r)
	if err != nil {
		return nil, err
	}
	br := Release{Release: r, Value: *v}
	return New(br, Spec(k, st, br))
}

// Charges returns one charge per calibrated noise addition.
func (p *Plan) Charges() []kind.Charge { return kind.ComponentCharges(p.Cal.Components) }

// Components returns the calibrated noise additions.
func (p *Plan) Components() []noise.Component { return p.Cal.Components }

// Widest adds nothing: a count, sum or mean publishes one value and its
// interval, which every release record is sized with.
func (p *Plan) Widest(*schema.Release) {}

// Merge adds the partials' counts, fixed-point sums and cells exactly
// (MergeStats with the calibration's cells).
func (p *Plan) Merge(parts []kind.Part) (kind.Merged, error) {
	return MergeStats(parts, p.Cal.Spec.Cells())
}

// MergeStats adds the partials' integer statistics (counts, fixed-point
// sums and the first cells entries of Bins, none when cells is 0)
// exactly, which makes the result independent of the order of the
// partials; they are added in partition order all the same. An int64
// overflow (more than aggregate.MaxSumEvents kept events in the window) is
// an error: the window is not released (see aggregate.Stats.Merge).
func MergeStats(parts []kind.Part, cells int) (aggregate.Stats, error) {
	out := aggregate.Stats{}
	if cells > 0 {
		out.Bins = make([]int64, cells)
	}
	for _, pt := range parts {
		rs := pt.Stats
		st := aggregate.Stats{Count: rs.Count, SumUnits: rs.SumUnits, CenteredSumUnits: rs.CenteredSumUnits}
		if cells > 0 {
			st.Bins = rs.Bins
		}
		if err := out.Merge(st); err != nil {
			return out, &kind.PartError{Partition: pt.Partition, Err: err}
		}
	}
	return out, nil
}

// Release runs aggregate.Release on the merged statistics and fills the
// value, its interval and the histogram's cells (NoisyCounts,
// Probabilities, Densities, Edges); it returns the mechanism's result for
// a histogram to add its shape and samples.
func (p *Plan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	_, err := p.ReleaseStats(m, sampler, rel)
	return nil, err
}

// ReleaseStats is Release, returning aggregate.Release's result.
func (p *Plan) ReleaseStats(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (aggregate.Result, error) {
	stats, ok := m.(aggregate.Stats)
	if !ok {
		return aggregate.Result{}, fmt.Errorf("%s release: merged statistics of type %T", p.Config.Kind, m)
	}
	res, err := aggregate.Release(p.Cal, stats, sampler)
	if err != nil {
		return res, err
	}
	rel.Value = res.Value
	if res.Value != nil {
		iv := res.Interval95
		rel.Interval95 = &iv
	}
	rel.NoisyCounts, rel.Probabilities, rel.Densities, rel.Edges = res.NoisyCounts, res.Probabilities, res.Densities, res.Edges
	return res, nil
}

// Describe describes a count, sum or mean for explain: its field and
// bounds.
func (p *Plan) Describe() string {
	c := p.Config
	return fmt.Sprintf("%s of %s in [%g, %g]", c.Kind, c.Field, c.Bounds[0], c.Bounds[1])
}

// Accuracy is the expected absolute error of the value.
func (p *Plan) Accuracy() string { return fmt.Sprintf("%.3g", p.Cal.ExpectedAbsError) }

// Notes has nothing to add.
func (p *Plan) Notes() []string { return nil }
