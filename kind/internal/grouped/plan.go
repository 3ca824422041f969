package grouped

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/keyed"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/quantile"
	"github.com/dpstream/dpstream/mechanism/selection"
	"github.com/dpstream/dpstream/schema"
)

// Metric is what a per-key kind releases for each key.
type Metric struct {
	// Name is the kind's name, for explain ("count", "sum", …).
	Name string
	// Keyed is the per-key mechanism's metric; "" releases keys only
	// (select_keys).
	Keyed keyed.Metric
	// Units counts each key's distinct units rather than its events
	// (count_units): a unit adds 1 to at most min(L, L0) keys.
	Units bool
	// Variance releases each key's variance (aggregate.CalibrateVariance).
	Variance bool
	// Ranks, when not nil, releases each key's quantiles at these ranks
	// from a quantile tree of Branching and Height over the bounds
	// (mechanism/quantile).
	Ranks             []float64
	Branching, Height int
}

// Plan is a calibrated per-key release. The guarantee of one window is
// that of its key selection (when the keys are not public) composed, by
// basic composition, with that of its values: the selection decides, from
// each key's noisy or sampled distinct-unit count, which keys are
// released (an (ε_s, δ_s)-DP mechanism on the key set, mechanism/
// selection); the values of the released keys are then the per-key
// mechanism (mechanism/keyed), private for any key set fixed by the
// selection's output, with the rest of the budget. A public key set needs
// no selection, and every key in it is released, from zero statistics
// when no unit reported it.
type Plan struct {
	// ConfigRelease is the release's configuration.
	ConfigRelease config.Release
	Config        *Config
	Metric        Metric
	// Selector selects the keys; nil with public keys.
	Selector *selection.Selector
	// Cal is the per-key values' calibration of a count, sum or mean;
	// VCal a variance's, QCal quantiles'; all nil for select_keys.
	Cal  *keyed.Calibration
	VCal *aggregate.VarianceCalibration
	QCal *quantile.Calibration
	// vq is a variance's quantizer.
	vq *aggregate.VarianceQuantizer
	// L is the stream's max_events_per_window.
	L int
}

// Global returns the group-by configuration of a release without group_by
// whose kind computes its statistic as a per-key one (variance,
// quantiles): one public key "" that every event has, published as the
// release's value (or its one list of quantiles) rather than per key.
func Global(v keys.Value) *Config { return &Config{Value: v, MaxKeys: 1, Keys: []string{""}} }

// global reports whether the plan is a release without group_by.
func (p *Plan) global() bool { return p.Config.GroupBy == "" }

// hasValues reports whether the release publishes values (all but
// select_keys).
func (p *Plan) hasValues() bool { return p.Cal != nil || p.VCal != nil || p.QCal != nil }

// NewPlan calibrates a per-key release r of st with group-by c (Global for
// a release without group_by).
func NewPlan(st *config.Stream, r config.Release, c *Config, m Metric) (*Plan, error) {
	p := &Plan{ConfigRelease: r, Config: c, Metric: m, L: st.Contribution.MaxEventsPerWindow}
	eps, delta := r.Epsilon, r.Delta
	if !c.Public() {
		sel, err := selection.New(selection.Params{Method: c.Selection.Method, Epsilon: c.Selection.Epsilon,
			Delta: c.Selection.Delta, MaxKeys: min(c.MaxKeys, p.L)})
		if err != nil {
			return nil, fmt.Errorf("key selection: %w", err)
		}
		p.Selector = sel
		eps -= c.Selection.Epsilon
		delta -= c.Selection.Delta
	}
	if r.Noise != config.NoiseGaussian {
		delta = 0
	}
	ub := aggregate.UnitBounds{MaxContributions: p.L, MaxKeys: c.MaxKeys, MaxPerKey: c.PerKey}
	lo, hi := c.Value.Bounds[0], c.Value.Bounds[1]
	switch {
	case m.Variance:
		vq, err := aggregate.NewVarianceQuantizer(lo, hi)
		if err != nil {
			return nil, err
		}
		vc, err := aggregate.CalibrateVariance(aggregate.VarianceSpec{Noise: noise.Kind(r.Noise), Epsilon: eps, Delta: delta, Lo: lo, Hi: hi, Bounds: ub})
		if err != nil {
			return nil, err
		}
		p.VCal, p.vq = &vc, &vq
		return p, nil
	case m.Ranks != nil:
		qc, err := quantile.Calibrate(quantile.Spec{Noise: noise.Kind(r.Noise), Epsilon: eps, Delta: delta,
			Tree: quantile.Tree{Lo: lo, Hi: hi, Branching: m.Branching, Height: m.Height}, Ranks: m.Ranks, Bounds: ub})
		if err != nil {
			return nil, err
		}
		p.QCal = &qc
		return p, nil
	case m.Keyed == "":
		return p, nil
	}
	b := keyed.Bounds{MaxEvents: p.L, MaxKeys: c.MaxKeys, PerKey: c.PerKey}
	if b.PerKey == 0 {
		b.PerKey = p.L
	}
	if m.Units {
		l := min(p.L, c.MaxKeys)
		b = keyed.Bounds{MaxEvents: l, MaxKeys: l, PerKey: 1}
	}
	cal, err := keyed.Calibrate(keyed.Spec{Metric: m.Keyed, Noise: noise.Kind(r.Noise), Epsilon: eps, Delta: delta,
		Lo: c.Value.Bounds[0], Hi: c.Value.Bounds[1], Bounds: b})
	if err != nil {
		return nil, err
	}
	p.Cal = &cal
	return p, nil
}

// Components are the selection's (ε, δ) charge, if any, then the values'
// noise additions.
func (p *Plan) Components() []noise.Component {
	var out []noise.Component
	if p.Selector != nil {
		out = append(out, p.Selector.Component())
	}
	switch {
	case p.Cal != nil:
		out = append(out, p.Cal.Components...)
	case p.VCal != nil:
		out = append(out, p.VCal.Components...)
	case p.QCal != nil:
		out = append(out, p.QCal.Components...)
	}
	return out
}

// Charges returns one charge per component.
func (p *Plan) Charges() []kind.Charge { return kind.ComponentCharges(p.Components()) }

// PDP charges the key selection at its worst case (whether a unit's keys
// are released depends on other units' too), and each value component by
// the unit's own norm (Statistic.Norms): its L1 for discrete Laplace
// noise, its L2 for discrete Gaussian, plus the rounding of up to
// min(L0, L') keys to the noise grid.
func (p *Plan) PDP() ([]kind.PDPComponent, error) {
	var out []kind.PDPComponent
	if p.Selector != nil {
		out = append(out, kind.PDPComponentOf(p.Selector.Component()))
	}
	if p.VCal != nil || p.QCal != nil {
		// Charged at the worst case: the norms carry counted events only.
		for _, c := range p.Components()[len(out):] {
			out = append(out, kind.PDPComponentOf(c))
		}
		return out, nil
	}
	if p.Cal == nil {
		return out, nil
	}
	keys := min(p.Config.MaxKeys, p.L)
	for _, c := range p.Cal.Components {
		pc := kind.PDPComponentOf(c)
		base := 0 // the counts' norms
		if c.Purpose != keyed.PurposeCounts && p.counted() {
			base = 2 // a mean's sums follow its counts
		}
		pc.Norm = base
		if c.Noise == noise.DiscreteGaussian {
			pc.Norm = base + 1
		}
		pc.Slack = kind.GridSlack(c, keys)
		out = append(out, pc)
	}
	return out, nil
}

// counted says the unit norms include counted events: every metric but a
// sum (and select_keys, which has no values).
func (p *Plan) counted() bool {
	return (p.Cal != nil && p.Metric.Keyed != keyed.Sum) || p.VCal != nil || p.QCal != nil
}

// Widest fills the public keys and their values; a release with selected
// keys has no bound on its keys, and is split into chunks instead.
func (p *Plan) Widest(rel *schema.Release) {
	if p.global() {
		if p.QCal != nil {
			rel.Ranks = p.Metric.Ranks
			rel.Quantiles = [][]float64{kind.Wide(len(p.Metric.Ranks))}
			rel.Intervals95 = kind.Wide(1)
		}
		return
	}
	rel.Fields = []string{p.Config.GroupBy}
	if !p.Config.Public() {
		return
	}
	n := len(p.Config.Keys)
	rel.Keys = p.Config.Keys
	switch {
	case p.QCal != nil:
		rel.Ranks = p.Metric.Ranks
		rel.Quantiles = make([][]float64, n)
		for i := range rel.Quantiles {
			rel.Quantiles[i] = kind.Wide(len(p.Metric.Ranks))
		}
		rel.Intervals95 = kind.Wide(n)
	case p.hasValues():
		rel.Values = kind.Wide(n)
		rel.Intervals95 = kind.Wide(n)
	}
}

// Fields are the key field, then the value field of a sum or a mean.
func (p *Plan) Fields() []kind.Field {
	if p.global() {
		return []kind.Field{{Name: p.Config.Value.Field}}
	}
	fs := []kind.Field{{Name: p.Config.GroupBy, Key: true}}
	if p.Config.Value.Field != "" {
		fs = append(fs, kind.Field{Name: p.Config.Value.Field})
	}
	return fs
}

// Statistic is the per-key statistic for the key at at[0] and the value
// at at[1].
func (p *Plan) Statistic(at []int) (kind.Statistic, error) {
	if len(at) != len(p.Fields()) {
		return nil, fmt.Errorf("per-key statistic: %d field indices for %d fields", len(at), len(p.Fields()))
	}
	s := &Statistic{KeyAt: at[0], ValueAt: -1, MaxKeys: p.Config.MaxKeys, PerKey: p.Config.PerKey, Counted: p.counted()}
	valueAt := -1
	switch {
	case p.global():
		s.KeyAt, valueAt = -1, at[0]
	case len(at) > 1:
		valueAt = at[1]
	}
	if s.PerKey == 0 {
		s.PerKey = p.L
	}
	if p.Metric.Units {
		s.PerKey = 1
	}
	if valueAt >= 0 && p.hasValues() {
		s.ValueAt = valueAt
		s.Lo, s.Hi = p.Config.Value.Bounds[0], p.Config.Value.Bounds[1]
		switch {
		case p.Cal != nil:
			s.Quantizer = p.Cal.Quantizer
		case p.VCal != nil:
			s.Variance = p.vq
		default:
			t := p.QCal.Spec.Tree
			s.Tree = &t
		}
	}
	return s, nil
}

// Norms is the statistic's layout (Statistic.Norms).
func (p *Plan) Norms() kind.Norms {
	s, _ := p.Statistic(make([]int, len(p.Fields())))
	return s.Norms()
}

// sums is the number of sums a group of this plan carries.
func (p *Plan) sums() int {
	switch {
	case p.VCal != nil:
		return 2
	case p.Cal != nil && p.Config.Value.Field != "":
		return 1
	}
	return 0
}

// Merge adds the partials' groups exactly.
func (p *Plan) Merge(parts []kind.Part) (kind.Merged, error) {
	return Merge(parts, p.sums(), p.QCal != nil)
}

// Release selects the keys (or takes the public ones) and releases each
// one's value, in key order, with its own noise. The selection looks at
// each key's distinct units only, and a key no unit reported is never
// selected.
func (p *Plan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	groups, ok := m.(Merged)
	if !ok {
		return nil, fmt.Errorf("per-key release: merged statistics of type %T", m)
	}
	if !p.global() {
		rel.Fields = []string{p.Config.GroupBy}
	}
	var chosen []schema.GroupStats
	if p.Config.Public() {
		chosen = make([]schema.GroupStats, len(p.Config.Keys))
		for i, k := range p.Config.Keys {
			chosen[i], _ = groups.Find(k)
		}
	} else {
		for _, g := range groups {
			keep, err := p.Selector.Keep(sampler, g.Units)
			if err != nil {
				return nil, fmt.Errorf("key selection: %w", err)
			}
			if keep {
				chosen = append(chosen, g)
			}
		}
	}
	if !p.global() {
		rel.Keys = make([]string, len(chosen))
		for i, g := range chosen {
			rel.Keys[i] = g.Key
		}
	}
	switch {
	case p.VCal != nil:
		return nil, p.releaseVariance(chosen, sampler, rel)
	case p.QCal != nil:
		return nil, p.releaseQuantiles(chosen, sampler, rel)
	case p.Cal == nil:
		return nil, nil
	}
	rel.Values = make([]float64, len(chosen))
	rel.Intervals95 = make([]float64, len(chosen))
	for i, g := range chosen {
		s := keyed.Stats{Count: g.Count}
		if p.Metric.Units {
			s.Count = g.Units
		}
		if len(g.Sums) > 0 {
			s.Sum = g.Sums[0]
		}
		r, err := p.Cal.Release(sampler, s)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", g.Key, err)
		}
		rel.Values[i], rel.Intervals95[i] = r.Value, r.Interval95
	}
	p.globalValue(rel)
	return nil, nil
}

// globalValue moves the one key's value of a release without group_by to
// the release's value.
func (p *Plan) globalValue(rel *schema.Release) {
	if !p.global() || len(rel.Values) != 1 {
		return
	}
	v, iv := rel.Values[0], rel.Intervals95[0]
	rel.Value, rel.Interval95 = &v, &iv
	rel.Values, rel.Intervals95 = nil, nil
}

// releaseVariance releases each chosen key's variance and its 95%
// interval.
func (p *Plan) releaseVariance(chosen []schema.GroupStats, sampler noise.Sampler, rel *schema.Release) error {
	rel.Values = make([]float64, len(chosen))
	rel.Intervals95 = make([]float64, len(chosen))
	for i, g := range chosen {
		st := aggregate.VarianceStats{Count: g.Count}
		if len(g.Sums) == 2 {
			st.SumUnits, st.SquareUnits = g.Sums[0], g.Sums[1]
		}
		r, err := aggregate.ReleaseVariance(*p.VCal, st, sampler)
		if err != nil {
			return fmt.Errorf("key %q: %w", g.Key, err)
		}
		rel.Values[i], rel.Intervals95[i] = r.Variance, r.VarianceInterval95
	}
	p.globalValue(rel)
	return nil
}

// releaseQuantiles releases each chosen key's quantiles at the ranks, and
// the 95% bound on their rank error.
func (p *Plan) releaseQuantiles(chosen []schema.GroupStats, sampler noise.Sampler, rel *schema.Release) error {
	rel.Ranks = p.Metric.Ranks
	rel.Quantiles = make([][]float64, len(chosen))
	rel.Intervals95 = make([]float64, len(chosen))
	for i, g := range chosen {
		r, err := quantile.Release(*p.QCal, quantile.Counts(g.Cells), sampler)
		if err != nil {
			return fmt.Errorf("key %q: %w", g.Key, err)
		}
		rel.Quantiles[i], rel.Intervals95[i] = r.Quantiles, r.RankInterval95
	}
	return nil
}

// Describe says what the release computes per key and how keys are chosen.
func (p *Plan) Describe() string {
	var b strings.Builder
	b.WriteString(p.Metric.Name)
	if f := p.Config.Value.Field; f != "" {
		fmt.Fprintf(&b, " of %s on [%s, %s]", f, config.FormatFloat(p.Config.Value.Bounds[0]), config.FormatFloat(p.Config.Value.Bounds[1]))
	}
	if p.global() {
		return b.String()
	}
	fmt.Fprintf(&b, " per %s (max_keys %d", p.Config.GroupBy, p.Config.MaxKeys)
	if p.Config.PerKey != 0 && !p.Metric.Units {
		fmt.Fprintf(&b, ", max_per_key %d", p.Config.PerKey)
	}
	b.WriteString(")")
	if p.Config.Public() {
		fmt.Fprintf(&b, ", %d public keys", len(p.Config.Keys))
	} else {
		b.WriteString(", keys selected privately")
	}
	return b.String()
}

// Accuracy is the expected absolute error of one key's value (of its
// count, for a mean), or the units a key needs to be released.
func (p *Plan) Accuracy() string {
	per := " per key"
	if p.global() {
		per = ""
	}
	switch {
	case p.VCal != nil:
		return p.VCal.Accuracy() + per
	case p.QCal != nil:
		return p.QCal.Accuracy() + per
	case p.Cal == nil:
		return fmt.Sprintf("a key with %d units is released with probability 0.5", p.Selector.UnitsFor(0.5))
	}
	if p.Metric.Keyed == keyed.Mean {
		return fmt.Sprintf("count %.3g, centered sum %.3g per key", p.Cal.Components[0].ExpectedAbsError, p.Cal.Components[1].ExpectedAbsError)
	}
	return fmt.Sprintf("%.3g per key", p.Cal.ExpectedAbsError())
}

// Notes give the key selection's threshold and the probability that a key
// with n units is released.
func (p *Plan) Notes() []string {
	if p.Selector == nil {
		return nil
	}
	s := p.Selector
	var probs []string
	for _, q := range []float64{0.01, 0.5, 0.99} {
		probs = append(probs, fmt.Sprintf("%g%% from %d units", q*100, s.UnitsFor(q)))
	}
	name := p.ConfigRelease.Name
	return []string{
		fmt.Sprintf("%s's key selection: %s", name, s.Describe()),
		fmt.Sprintf("%s releases a key with probability %s; one with a single unit with probability %.3g", name, strings.Join(probs, ", "), s.Probability(1)),
	}
}

// Threshold is the selection's threshold in units (NaN with public keys).
func (p *Plan) Threshold() float64 {
	if p.Selector == nil {
		return math.NaN()
	}
	return p.Selector.Threshold()
}
