// Package prediction is the prediction release kind: private prediction by
// subsample and aggregate (Dwork & Feldman 2018, "Privacy-preserving
// Prediction", COLT, arXiv:1803.10266, section 3; SPEC section 5; the
// mathematics is mechanism/prediction's). A window's units are split into
// r disjoint shards by a keyed hash of the unit (mprediction.Sharder), a
// non-private model is fit per shard inside the release stage, and each
// query is answered privately from the r models; the models, their
// statistics and their predictions are never published.
//
// # What a window does
//
// The accumulate stage keeps, per shard, the exact sufficient statistics
// of the shard's kept rows in fixed point (features clamped to their
// bounds and mapped to [−1, 1] on mregression.Quantum's grid, an
// intercept column of ones last): the row count, the upper triangle of
// XᵀX and Xᵀy — one column for a real target (mapped to [−1, 1] from its
// bounds), one per class for a label (the one-hot indicator). They travel
// in schema.ReleaseStats.Groups, one group per non-empty shard (key: the
// shard's index in decimal). The window's release publishes nothing about
// the data and is charged nothing (Charges and PDP are empty): its merged
// statistics become the window's model state (Predictor.ModelState), which
// the release stage keeps unpublished, and each answered query is charged
// QueryCharges.
//
// # Learners
//
// Real target: ridge regression with an unpenalized intercept, λ on the
// scaled problem (mprediction.FitRidgeGram). Label: the least-squares
// (Fisher-type) one-vs-rest classifier — one ridge fit per class on the
// one-hot indicator, the label of the largest score (ties to the lower
// class). It is chosen over logistic regression because it needs only
// XᵀX and XᵀY: a shard's statistic is a fixed-size integer vector that
// merges exactly across partitions and stays bounded whatever the number
// of rows, whereas a logistic fit needs the rows themselves. An empty shard
// (r is public, so it must still have a model) or a failed fit has the
// zero model: the midpoint of the target's bounds, or class 0.
//
// # Guarantee, neighbouring relation, sensitivity
//
// Every answer is differentially private with respect to the window's
// data under add/remove of one privacy unit (all of its kept events): a
// label answer is ε-DP (the soft majority, mprediction.Classify), a value
// answer and an evaluation ε-DP with discrete Laplace noise or (ε, δ)-DP
// with discrete Gaussian noise (mprediction.Regressor, Evaluator). The
// query is the querier's own, public input.
//
// Proof sketch: a unit's shard is a function of the unit and the key alone
// (with privacy_unit: event, of the event's own values: each event is a
// unit), never of other units or the data, so all of a unit's rows are in
// one shard and adding or removing the unit changes the statistics of
// exactly one shard (the per-shard sums are exact integers, so the other
// shards' are bit-identical). Each model is a deterministic function of
// its shard's statistics (ModelState → Model refits them in a fixed
// order), so exactly one of the r models can change: one vote moves (the
// votes' sensitivity is 1, which the soft majority is calibrated to), one
// clamped prediction moves within [lo, hi] (the average's sensitivity is
// (hi − lo)/r, which the noise is calibrated to), one model's m losses move
// within [0, B] (the mean loss's sensitivity is B/r). r is fixed by the
// configuration, never the number of non-empty shards. The window's own
// release is a function of the configuration only. Each answer is a
// separate mechanism, composed by the accountant.
//
// The sharding key: the guarantee holds for any key; a secret key (`key`)
// stops an adversary from choosing units that share a shard. Without one
// the key is derived from the stream's and the release's names, public.
package prediction

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/mechanism/noise"
	mprediction "github.com/dpstream/dpstream/mechanism/prediction"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

func init() { kind.Register(Kind{}) }

// classify is the soft majority; the privacy audit swaps in a broken one.
var classify = mprediction.Classify

// one is the scaled value 1 in units of mregression.Quantum: a one-hot
// indicator's value, so that XᵀY is in the same units (q²) as XᵀX.
const one = int64(1 / mregression.Quantum)

// stateVersion is the first integer of a model state; stateHeader its
// header's length: version, r, features, target columns, classifier (0/1)
// and the configuration's fingerprint (Plan.fingerprint). Version 1 had no
// fingerprint: its states are refused, and the release answers from its
// next window.
const (
	stateVersion = 2
	stateHeader  = 6
)

// Plan is a calibrated prediction release. It implements kind.Predictor,
// and kind.Stateful through NewState (state.go).
type Plan struct {
	cfg     *Config
	sharder *mprediction.Sharder
	// eventLevel: the stream's privacy unit is the event (no unit field).
	eventLevel bool
	unitField  string
	sc         mregression.Scaling
	// d is D, the columns of a scaled row (features and the intercept);
	// sums the length of a shard's Sums.
	d, sums int
	eps     float64
	reg     *mprediction.Regressor // regression answers (target)
	eval    *mprediction.Evaluator // evaluations (nil: not allowed)
	evalMax float64                // B, the evaluation loss bound
	keyNote string
	// fp is the fingerprint of what the statistics' columns mean, the
	// model state header's last integer.
	fp int64
}

// Plan calibrates a prediction release from its configuration.
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	c, err := keys.Params[Config](r)
	if err != nil {
		return nil, err
	}
	if len(c.Features) == 0 || (c.Target == "") == (c.Label == "") {
		return nil, fmt.Errorf("release %q: features and exactly one of target and label are required", r.Name)
	}
	if c.Shards < MinShards || c.Shards > MaxShards {
		return nil, fmt.Errorf("release %q: %d shards, want %d to %d", r.Name, c.Shards, MinShards, MaxShards)
	}
	if n := stateInts(len(c.Features), c.targets(), c.Shards); n > MaxStateInts {
		return nil, fmt.Errorf("release %q: model state of %d integers, more than %d", r.Name, n, MaxStateInts)
	}
	p := &Plan{cfg: c, eps: r.Epsilon, eventLevel: st.PrivacyUnit == config.PrivacyUnitEvent, unitField: st.PrivacyUnit}
	key := []byte(c.Key)
	if c.Key == "" {
		sum := sha256.Sum256([]byte("dpstream prediction shards\x00" + st.Name + "\x00" + r.Name))
		key = sum[:]
		p.keyNote = "sharding key derived from the stream and release names (public): set key to a secret to stop anyone choosing units that share a shard"
	}
	if p.sharder, err = mprediction.NewSharder(key, c.Shards); err != nil {
		return nil, fmt.Errorf("release %q: %w", r.Name, err)
	}
	p.fp = fingerprint(key, c)
	tb := c.TargetBounds
	if c.Classifier() {
		tb = [2]float64{-1, 1} // unused: a label's columns are one-hot
	}
	p.sc = mregression.Scaling{FeatureBounds: c.FeatureBounds, Intercept: true, TargetBounds: tb}
	if err := p.sc.Validate(); err != nil {
		return nil, fmt.Errorf("release %q: %w", r.Name, err)
	}
	p.d = p.sc.Dim()
	p.sums = p.d*(p.d+1)/2 + c.targets()*p.d
	nz := noise.Laplace
	if r.Noise == config.NoiseGaussian {
		nz = noise.Gaussian
	}
	if !c.Classifier() {
		if p.reg, err = mprediction.NewRegressor(mprediction.RegressSpec{Lo: tb[0], Hi: tb[1], Noise: nz, Epsilon: r.Epsilon, Delta: r.Delta}); err != nil {
			return nil, fmt.Errorf("release %q: %w", r.Name, err)
		}
	} else if err := noise.CheckDiscreteScale("vote scale 2/epsilon", 2/r.Epsilon); err != nil {
		return nil, fmt.Errorf("release %q: %w (epsilon too small?)", r.Name, err) // as Classify checks it
	}
	if c.EvalBatch > 0 {
		w := tb[1] - tb[0]
		switch c.EvalLoss {
		case LossZeroOne:
			p.evalMax = 1
		case LossAbsolute:
			p.evalMax = w
		case LossSquared:
			p.evalMax = w * w
		default:
			return nil, fmt.Errorf("release %q: unknown loss %q", r.Name, c.EvalLoss)
		}
		if p.eval, err = mprediction.NewEvaluator(mprediction.EvalSpec{MaxLoss: p.evalMax, Queries: c.EvalBatch, Noise: nz, Epsilon: r.Epsilon, Delta: r.Delta}); err != nil {
			return nil, fmt.Errorf("release %q: %w", r.Name, err)
		}
	}
	return p, nil
}

// fingerprint identifies what a model state's integers mean: the
// features (names, order, bounds), the target and its bounds or the label
// and its classes (names, order), and the sharding key — everything but
// the counts the header states, which a state of another configuration
// can share. A state written under another one is refused (Model) rather
// than answering with a feature read as another, a class's votes under
// another name or units sharded by another key. It is keyed by the
// sharding key (HMAC-SHA256, first 8 bytes), so the ledger, which keeps
// it, learns nothing of the key. λ, the noise and the answers' limits are
// not in it: they do not change the statistics.
func fingerprint(key []byte, c *Config) int64 {
	m := hmac.New(sha256.New, key)
	str := func(s string) {
		m.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		m.Write([]byte(s))
	}
	num := func(v float64) { m.Write(binary.BigEndian.AppendUint64(nil, math.Float64bits(v+0))) }
	str("dpstream prediction state")
	for i, f := range c.Features {
		str(f)
		num(c.FeatureBounds[i][0])
		num(c.FeatureBounds[i][1])
	}
	str(c.Target)
	num(c.TargetBounds[0])
	num(c.TargetBounds[1])
	str(c.Label)
	for _, cl := range c.Classes {
		str(cl)
	}
	return int64(binary.BigEndian.Uint64(m.Sum(nil)))
}

// Charges are empty: training costs nothing, each answer is charged
// (QueryCharges).
func (p *Plan) Charges() []kind.Charge { return nil }

// Components are empty, as Charges.
func (p *Plan) Components() []noise.Component { return nil }

// PDP is empty: the window's release has no charge.
func (p *Plan) PDP() ([]kind.PDPComponent, error) { return nil, nil }

// learner names the learner, for Describe and the record's method.
func (p *Plan) learner() string {
	if p.cfg.Classifier() {
		return "ls_classifier"
	}
	return "ridge"
}

// Describe says what the release computes.
func (p *Plan) Describe() string {
	what := fmt.Sprintf("ridge regression of %s", p.cfg.Target)
	if p.cfg.Classifier() {
		what = fmt.Sprintf("least-squares classifier of %s (%d classes)", p.cfg.Label, len(p.cfg.Classes))
	}
	return fmt.Sprintf("prediction: %s on %d features, %d shards; models never published, each answer charged", what, len(p.cfg.Features), p.cfg.Shards)
}

// Accuracy says how far an answer is expected to be from the models'
// non-private aggregate.
func (p *Plan) Accuracy() string {
	r := p.cfg.Shards
	if p.cfg.Classifier() {
		// Two labels: the majority's label loses with probability
		// 1/(1 + e^{ε·lead/2}) ≤ 5% once the lead is ≥ 2·ln(19)/ε votes.
		return fmt.Sprintf("the majority's label with ≥95%% probability when it leads by ≥ %d of %d votes", int(math.Ceil(2*math.Log(19)/p.eps)), r)
	}
	return fmt.Sprintf("±%.3g per answer (95%%)", p.regressHalfWidth())
}

// regressHalfWidth is the 95% half-width of a regression answer's noise.
func (p *Plan) regressHalfWidth() float64 {
	c := p.reg.Charge()
	return (p.cfg.TargetBounds[1] - p.cfg.TargetBounds[0]) * halfWidth95(c) / (float64(int64(1)<<mprediction.FixedBits) * float64(p.cfg.Shards))
}

// evalHalfWidth is the 95% half-width of an evaluation's noise.
func (p *Plan) evalHalfWidth() float64 {
	return p.evalMax * halfWidth95(p.eval.Charge()) / (float64(int64(1)<<mprediction.FixedBits) * float64(p.cfg.Shards) * float64(p.cfg.EvalBatch))
}

func halfWidth95(c noise.Component) float64 {
	if c.Noise == noise.DiscreteGaussian {
		return noise.DiscreteGaussianHalfWidth95(c.Scale)
	}
	return noise.DiscreteLaplaceHalfWidth95(c.Scale)
}

// Notes warn about the sharding key and event-level units.
func (p *Plan) Notes() []string {
	var out []string
	if p.keyNote != "" {
		out = append(out, p.keyNote)
	}
	if p.eventLevel {
		out = append(out, "privacy_unit event: an event's shard is a keyed hash of its own values, so a person's events can train several models")
	}
	return out
}

// fill sets the record's fields, all from the configuration.
func (p *Plan) fill(rel *schema.Release) {
	rel.Fields = slices.Clone(p.cfg.Features)
	rel.Method = p.learner()
	if p.cfg.Classifier() {
		rel.Categories = slices.Clone(p.cfg.Classes)
	}
}

// Widest fills what Release fills: configuration only.
func (p *Plan) Widest(rel *schema.Release) { p.fill(rel) }

// Release publishes nothing about the data: the window's record names the
// features, the learner and (for a label) the classes, all public
// configuration. The merged statistics stay with the release stage, as
// the model state.
func (p *Plan) Release(m kind.Merged, _ noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	if _, ok := m.(*merged); !ok {
		return nil, fmt.Errorf("prediction: merged statistics of type %T", m)
	}
	p.fill(rel)
	return nil, nil
}

// Fields are the label or target first, the features, and (unless the
// privacy unit is the event) the privacy unit's field as a key: the
// statistic needs the unit's identity to shard it, and the accumulate
// stage gives an accumulator only the unit's index.
func (p *Plan) Fields() []kind.Field {
	var out []kind.Field
	if p.cfg.Classifier() {
		cats := make(map[string]int, len(p.cfg.Classes))
		for i, c := range p.cfg.Classes {
			cats[c] = i
		}
		out = append(out, kind.Field{Name: p.cfg.Label, Categories: cats})
	} else {
		out = append(out, kind.Field{Name: p.cfg.Target})
	}
	for _, f := range p.cfg.Features {
		out = append(out, kind.Field{Name: f})
	}
	if !p.eventLevel {
		out = append(out, kind.Field{Name: p.unitField, Key: true})
	}
	return out
}

// Norms is one entry: the unit's kept rows (all in its one shard).
func (p *Plan) Norms() kind.Norms { return kind.Norms{Head: 1} }

// Statistic returns the per-shard statistic for the fields at at.
func (p *Plan) Statistic(at []int) (kind.Statistic, error) {
	if want := len(p.Fields()); len(at) != want {
		return nil, fmt.Errorf("prediction reads %d fields, given %d places", want, len(at))
	}
	return &Statistic{p: p, at: slices.Clone(at)}, nil
}

// Statistic is the exact per-shard statistic of a prediction release (see
// the package comment). A unit's contribution (kind.UnitNorms) is its
// number of kept rows, all in one shard.
type Statistic struct {
	p  *Plan
	at []int
}

// Norms is the plan's.
func (s *Statistic) Norms() kind.Norms { return s.p.Norms() }

// NewWindow returns an empty window (no shard has rows).
func (s *Statistic) NewWindow() kind.Accumulator {
	return &window{s: s, shards: make([]*shard, s.p.cfg.Shards), x: make([]float64, len(s.p.cfg.Features))}
}

// shard is one shard's exact statistics: rows, units and the sums
// (upper(XᵀX), then Xᵀy per target column), in units of Quantum².
type shard struct {
	n, units int64
	sums     []int64
}

type window struct {
	s      *Statistic
	shards []*shard
	rows   int64
	// seen marks the units added (bit per unit index), for the shards'
	// unit counts; contrib is each unit's kept rows while the window keeps
	// contributions.
	seen    []uint64
	contrib []int64
	// x is scratch; xu, class (or yu) and at are the row Check accepted.
	x     []float64
	xu    []int64
	yu    int64
	class int
	at    int
}

// Check scales the row and finds its shard.
func (w *window) Check(values []float64, ks []string) error {
	p, at := w.s.p, w.s.at
	for _, k := range at[:1+len(p.cfg.Features)] {
		if k < 0 || k >= len(values) {
			return errors.New("a prediction field has no value")
		}
	}
	for j := range p.cfg.Features {
		w.x[j] = values[at[1+j]]
	}
	y := values[at[0]]
	if p.cfg.Classifier() {
		if y != math.Trunc(y) || y < 0 || y >= float64(len(p.cfg.Classes)) {
			return fmt.Errorf("label index %v is not a class", y)
		}
		w.class, y = int(y), 0
	}
	xu, yu, _, err := p.sc.Row(w.x, y)
	if err != nil {
		return err
	}
	var sh int
	if p.eventLevel {
		sh = p.sharder.Shard(eventBytes(values, at))
	} else {
		k := at[len(at)-1]
		if k < 0 || k >= len(ks) || ks[k] == "" {
			return fmt.Errorf("no privacy unit %q to shard by", p.unitField)
		}
		sh = p.sharder.ShardString(ks[k])
	}
	if s := w.shards[sh]; s != nil && s.n >= mregression.MaxRows {
		return fmt.Errorf("a shard's statistics are exact up to %d rows per window: use shorter windows", int64(mregression.MaxRows))
	}
	w.xu, w.yu, w.at = xu, yu, sh
	return nil
}

// eventBytes encodes an event's values (label or target, features) for
// its shard under privacy_unit: event: a function of the event alone.
func eventBytes(values []float64, at []int) []byte {
	b := make([]byte, 0, 8*len(at))
	for _, k := range at {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(values[k]+0)) // +0: −0 and 0 alike
	}
	return b
}

// Add adds the row Check accepted to its shard.
func (w *window) Add(_ []float64, _ []string, unit int, contrib bool) error {
	p := w.s.p
	s := w.shards[w.at]
	if s == nil {
		s = &shard{sums: make([]int64, p.sums)}
		w.shards[w.at] = s
	}
	d := p.d
	k := 0
	for i := range d {
		for j := i; j < d; j++ {
			s.sums[k] += w.xu[i] * w.xu[j]
			k++
		}
	}
	off := k
	if p.cfg.Classifier() {
		off += w.class * d
		for i := range d {
			s.sums[off+i] += w.xu[i] * one
		}
	} else {
		for i := range d {
			s.sums[off+i] += w.xu[i] * w.yu
		}
	}
	s.n++
	w.rows++
	if unit >= 0 {
		for len(w.seen)*64 <= unit {
			w.seen = append(w.seen, 0)
		}
		if w.seen[unit/64]&(1<<(unit%64)) == 0 {
			w.seen[unit/64] |= 1 << (unit % 64)
			s.units++
		}
	}
	if contrib {
		for len(w.contrib) <= unit {
			w.contrib = append(w.contrib, 0)
		}
		w.contrib[unit]++
	}
	return nil
}

// Stats reports one group per non-empty shard, sorted by key.
func (w *window) Stats(rs *schema.ReleaseStats) {
	rs.Count = w.rows
	keys := make([]string, 0, len(w.shards))
	for i, s := range w.shards {
		if s != nil {
			keys = append(keys, strconv.Itoa(i))
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		i, _ := strconv.Atoi(k)
		s := w.shards[i]
		rs.Groups = append(rs.Groups, schema.GroupStats{Key: k, Units: s.units, Count: s.n, Sums: s.sums})
	}
}

// AppendNorms appends the unit's kept rows.
func (w *window) AppendNorms(buf []float64, unit, kept int) ([]float64, error) {
	if unit < 0 || unit >= len(w.contrib) || w.contrib[unit] != int64(kept) {
		return nil, fmt.Errorf("unit %d: rows do not match %d kept events", unit, kept)
	}
	return append(buf, float64(w.contrib[unit])), nil
}

// DropUnits forgets the units' rows.
func (w *window) DropUnits() { w.contrib = nil }

// merged is a window's merged statistics: one shard per index, nil for a
// shard without rows.
type merged struct{ shards []*shard }

// Merge adds the partials' shards exactly; a shard missing from a partial
// is zero there.
func (p *Plan) Merge(parts []kind.Part) (kind.Merged, error) {
	m := &merged{shards: make([]*shard, p.cfg.Shards)}
	for _, pt := range parts {
		if err := p.mergePart(m, pt.Stats); err != nil {
			return nil, &kind.PartError{Partition: pt.Partition, Err: err}
		}
	}
	return m, nil
}

func (p *Plan) mergePart(m *merged, rs schema.ReleaseStats) error {
	seen := make(map[int]bool, len(rs.Groups))
	var rows int64
	// Check everything first, so that a bad partial leaves m unchanged.
	for _, g := range rs.Groups {
		i, err := strconv.Atoi(g.Key)
		if err != nil || strconv.Itoa(i) != g.Key || i < 0 || i >= p.cfg.Shards {
			return fmt.Errorf("group %q is not a shard of %d", g.Key, p.cfg.Shards)
		}
		if seen[i] {
			return fmt.Errorf("shard %d twice", i)
		}
		seen[i] = true
		if len(g.Sums) != p.sums || g.Count < 0 || g.Units < 0 || len(g.Cells) != 0 {
			return fmt.Errorf("shard %d: %d sums with %d rows, want %d sums", i, len(g.Sums), g.Count, p.sums)
		}
		var ok bool
		if rows, ok = noise.AddInt64(rows, g.Count); !ok {
			return errors.New("rows overflow")
		}
		if s := m.shards[i]; s != nil {
			if _, ok := noise.AddInt64(s.n, g.Count); !ok {
				return fmt.Errorf("shard %d: rows overflow", i)
			}
			if _, ok := noise.AddInt64(s.units, g.Units); !ok {
				return fmt.Errorf("shard %d: units overflow", i)
			}
			for k, v := range g.Sums {
				if _, ok := noise.AddInt64(s.sums[k], v); !ok {
					return fmt.Errorf("shard %d: sum %d overflows", i, k)
				}
			}
		}
	}
	if rows != rs.Count {
		return fmt.Errorf("%d rows in the shards, %d in the partial", rows, rs.Count)
	}
	for _, g := range rs.Groups {
		i, _ := strconv.Atoi(g.Key)
		s := m.shards[i]
		if s == nil {
			m.shards[i] = &shard{n: g.Count, units: g.Units, sums: slices.Clone(g.Sums)}
			continue
		}
		s.n += g.Count
		s.units += g.Units
		for k, v := range g.Sums {
			s.sums[k] += v
		}
	}
	return nil
}

// ModelState returns the merged statistics as integers: a header
// (version, r, features, target columns, classifier 0/1, fingerprint),
// then per shard
// its rows and sums (zeros for an empty shard).
func (p *Plan) ModelState(m kind.Merged) ([]int64, error) {
	mg, ok := m.(*merged)
	if !ok || len(mg.shards) != p.cfg.Shards {
		return nil, fmt.Errorf("prediction: merged statistics of type %T", m)
	}
	cls := int64(0)
	if p.cfg.Classifier() {
		cls = 1
	}
	out := make([]int64, 0, stateInts(len(p.cfg.Features), p.cfg.targets(), p.cfg.Shards))
	out = append(out, stateVersion, int64(p.cfg.Shards), int64(len(p.cfg.Features)), int64(p.cfg.targets()), cls, p.fp)
	zero := make([]int64, p.sums)
	for _, s := range mg.shards {
		if s == nil {
			out = append(out, 0)
			out = append(out, zero...)
			continue
		}
		out = append(out, s.n)
		out = append(out, s.sums...)
	}
	return out, nil
}

// Model refits the r models from a state ModelState returned,
// deterministically.
func (p *Plan) Model(state []int64) (kind.Model, error) { return p.model(state, p.cfg.Shards) }

// model rebuilds the models of a state of the given number of shards (the
// configuration's, or 1 for the accuracy test's single model).
func (p *Plan) model(state []int64, shards int) (*Model, error) {
	cls := int64(0)
	if p.cfg.Classifier() {
		cls = 1
	}
	want := []int64{stateVersion, int64(shards), int64(len(p.cfg.Features)), int64(p.cfg.targets()), cls, p.fp}
	if len(state) < stateHeader || !slices.Equal(state[:stateHeader], want) {
		return nil, fmt.Errorf("prediction: model state header %v, want %v (a state of another configuration)", state[:min(len(state), stateHeader)], want)
	}
	if n := stateInts(len(p.cfg.Features), p.cfg.targets(), shards); int64(len(state)) != n {
		return nil, fmt.Errorf("prediction: model state of %d integers, want %d", len(state), n)
	}
	const q2 = mregression.Quantum * mregression.Quantum
	d, tri, T := p.d, p.d*(p.d+1)/2, p.cfg.targets()
	mdl := &Model{p: p, theta: make([][][]float64, shards)}
	rest := state[stateHeader:]
	xtx := make([]float64, tri)
	for i := range shards {
		rec := rest[i*(1+p.sums) : (i+1)*(1+p.sums)]
		if rec[0] < 0 {
			return nil, fmt.Errorf("prediction: shard %d has %d rows", i, rec[0])
		}
		xty := make([][]float64, T)
		if rec[0] == 0 {
			for t := range xty {
				xty[t] = make([]float64, d)
			}
			mdl.theta[i] = xty // the zero model
			continue
		}
		for k, v := range rec[1 : 1+tri] {
			xtx[k] = float64(v) * q2
		}
		for t := range xty {
			xty[t] = make([]float64, d)
			for k, v := range rec[1+tri+t*d : 1+tri+(t+1)*d] {
				xty[t][k] = float64(v) * q2
			}
		}
		th, err := mprediction.FitRidgeGram(xtx, xty, d, p.cfg.Lambda, d-1)
		if err != nil {
			return nil, fmt.Errorf("prediction: shard %d: %w", i, err)
		}
		mdl.theta[i] = th
	}
	return mdl, nil
}

// QueryCharges are one answer's charge: the soft majority (exponential
// mechanism, ε) or the noisy average for a prediction, the noisy mean loss
// for an evaluation; nil for an op the release does not answer.
func (p *Plan) QueryCharges(op string) []kind.Charge {
	switch {
	case op == kind.OpPredict && p.cfg.Classifier():
		c := mprediction.ClassifyCharge(p.eps)
		// kind.ComponentCharges maps noise additions by Scale and
		// Sensitivity; the exponential mechanism is charged by ε.
		return []kind.Charge{{
			Mechanism: accountant.Mechanism{Kind: accountant.KindExponential, Epsilon: c.Epsilon},
			Noise:     schema.NoiseComponent{Purpose: c.Purpose, Mechanism: accountant.KindExponential, Epsilon: c.Epsilon},
		}}
	case op == kind.OpPredict:
		return kind.ComponentCharges([]noise.Component{p.reg.Charge()})
	case op == kind.OpEvaluate && p.eval != nil:
		return kind.ComponentCharges([]noise.Component{p.eval.Charge()})
	}
	return nil
}

// QueryLimit is max_queries.
func (p *Plan) QueryLimit() int { return p.cfg.MaxQueries }

// Check validates a query against the configuration.
func (p *Plan) Check(q kind.Query) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", kind.ErrQuery, fmt.Sprintf(format, args...))
	}
	switch q.Op {
	case kind.OpPredict:
		if len(q.Rows) != 1 {
			return bad("a prediction takes one row of features, got %d", len(q.Rows))
		}
		if len(q.Labels) != 0 {
			return bad("a prediction takes no labels, got %d", len(q.Labels))
		}
	case kind.OpEvaluate:
		if p.eval == nil {
			return bad("this release answers no evaluations (configure evaluate: {batch: m})")
		}
		if len(q.Rows) != p.cfg.EvalBatch || len(q.Labels) != p.cfg.EvalBatch {
			return bad("an evaluation takes %d rows and %d labels, got %d and %d", p.cfg.EvalBatch, p.cfg.EvalBatch, len(q.Rows), len(q.Labels))
		}
		for i, l := range q.Labels {
			if p.cfg.Classifier() {
				if !slices.Contains(p.cfg.Classes, l) {
					return bad("label %d %q is not one of the classes (%s)", i, l, strings.Join(p.cfg.Classes, ", "))
				}
			} else if v, err := strconv.ParseFloat(l, 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("label %d %q is not a finite number", i, l)
			}
		}
	default:
		return bad("unknown op %q (want %s or %s)", q.Op, kind.OpPredict, kind.OpEvaluate)
	}
	for i, row := range q.Rows {
		if len(row) != len(p.cfg.Features) {
			return bad("row %d has %d features, want %d (%s)", i, len(row), len(p.cfg.Features), strings.Join(p.cfg.Features, ", "))
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("row %d feature %s is %v", i, p.cfg.Features[j], v)
			}
		}
	}
	return nil
}

// Model is one window's r models, on the scaled problem: theta[i][t] are
// shard i's coefficients for target column t (the intercept's last).
type Model struct {
	p     *Plan
	theta [][][]float64
}

// scale maps a query row to the scaled features and the intercept column.
func (m *Model) scale(row []float64, xs []float64) {
	for j, v := range row {
		b := m.p.cfg.FeatureBounds[j]
		xs[j] = (mprediction.Clamp(v, b[0], b[1])-b[0])/(b[1]-b[0])*2 - 1
	}
	xs[len(row)] = 1
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// predict returns each model's prediction of a scaled row: a value on the
// target's scale, or a class index (as a float).
func (m *Model) predict(xs []float64, out []float64) {
	tb := m.p.cfg.TargetBounds
	for i, th := range m.theta {
		if !m.p.cfg.Classifier() {
			out[i] = tb[0] + (dot(th[0], xs)+1)/2*(tb[1]-tb[0])
			continue
		}
		best, bestV := 0, math.Inf(-1)
		for c, tc := range th {
			if v := dot(tc, xs); v > bestV { // NaN never wins: class 0 stays
				best, bestV = c, v
			}
		}
		out[i] = float64(best)
	}
}

// Answer answers a query Check accepts.
func (m *Model) Answer(q kind.Query, sampler noise.Sampler) (kind.Answer, error) {
	p := m.p
	if err := p.Check(q); err != nil {
		return kind.Answer{}, err
	}
	r := len(m.theta)
	xs := make([]float64, p.d)
	preds := make([]float64, r)
	if q.Op == kind.OpPredict {
		m.scale(q.Rows[0], xs)
		m.predict(xs, preds)
		if p.cfg.Classifier() {
			labels := make([]int, r)
			for i, v := range preds {
				labels[i] = int(v)
			}
			votes, err := mprediction.Votes(labels, len(p.cfg.Classes))
			if err != nil {
				return kind.Answer{}, err
			}
			b, err := classify(votes, p.eps, sampler)
			if err != nil {
				return kind.Answer{}, err
			}
			return kind.Answer{Label: p.cfg.Classes[b]}, nil
		}
		v, err := p.reg.Regress(preds, sampler)
		if err != nil {
			return kind.Answer{}, err
		}
		return kind.Answer{Value: v, Interval95: p.regressHalfWidth()}, nil
	}
	losses := make([][]float64, r)
	for i := range losses {
		losses[i] = make([]float64, len(q.Rows))
	}
	tb := p.cfg.TargetBounds
	for j, row := range q.Rows {
		m.scale(row, xs)
		m.predict(xs, preds)
		var y float64
		var cls int
		if p.cfg.Classifier() {
			cls = slices.Index(p.cfg.Classes, q.Labels[j])
		} else {
			y, _ = strconv.ParseFloat(q.Labels[j], 64) // Check parsed it
		}
		for i, v := range preds {
			switch p.cfg.EvalLoss {
			case LossZeroOne:
				losses[i][j] = mprediction.ZeroOneLoss(int(v), cls)
			case LossAbsolute:
				losses[i][j] = mprediction.AbsoluteLoss(v, y, tb[0], tb[1])
			default:
				losses[i][j] = mprediction.SquaredLoss(v, y, tb[0], tb[1])
			}
		}
	}
	v, err := p.eval.Evaluate(losses, sampler)
	if err != nil {
		return kind.Answer{}, err
	}
	return kind.Answer{Value: v, Interval95: p.evalHalfWidth()}, nil
}

var _ kind.Predictor = (*Plan)(nil)
