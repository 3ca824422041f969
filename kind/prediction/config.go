package prediction

import (
	"fmt"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
	mprediction "github.com/dpstream/dpstream/mechanism/prediction"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
)

// This file reads the keys of a prediction release: the features, exactly
// one of a real target (ridge regression) and a categorical label (the
// least-squares classifier), the shards and their key, the learner's λ,
// the answers' limits and the private evaluation's batch.

// Defaults and bounds of the keys.
const (
	// DefaultShards is r when `shards` is absent: a compromise between the
	// models' accuracy (each sees 1/r of the units) and the answers' noise
	// (one vote in r, a range over r).
	DefaultShards = 25
	// MinShards is the fewest shards: one shard would answer with one
	// model's prediction, whose change is the whole answer.
	MinShards = 2
	// MaxShards bounds r; MaxStateInts bounds it further with many
	// features or classes.
	MaxShards = 4096
	// DefaultLambda is the ridge λ on the scaled problem (features mapped
	// to [−1, 1]) when `lambda` is absent.
	DefaultLambda = 1.0
	// MaxClasses bounds a label's classes: a model is one ridge fit per
	// class.
	MaxClasses = 256
	// MaxStateInts bounds the model state, r × (1 + D(D+1)/2 + T·D) int64s
	// (D = features + 1, T = 1 or the number of classes), which the
	// release stage keeps in the window's ledger charge: 2^16 longs are at
	// most 640 KiB in Avro, within one Kafka record.
	MaxStateInts = 1 << 16
	// MinKeyBytes is the shortest `key`: the sharder's (128 bits).
	MinKeyBytes = mprediction.MinKeyBytes
)

// Losses of a private evaluation (Config.EvalLoss).
const (
	LossZeroOne  = "zero_one"
	LossAbsolute = "absolute"
	LossSquared  = "squared"
)

var (
	variableKeys = []string{"field", "bounds"}
	labelKeys    = []string{"field", "classes"}
	evaluateKeys = []string{"batch", "loss"}
	losses       = []string{LossZeroOne, LossAbsolute, LossSquared}
)

// Kind is the prediction release kind.
type Kind struct{}

// Name is "prediction".
func (Kind) Name() string { return "prediction" }

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "Private prediction by subsample and aggregate (Dwork & Feldman 2018): each window's units are split by a keyed hash into `shards` models, never published; each query on the requests topic is answered privately from them and charged `epsilon` (the window itself publishes nothing about the data and costs nothing). `noise` (`laplace`, or `gaussian` with `delta`) is the noise of regression answers and evaluations; a label's answer is the exponential mechanism, pure ε-DP."
}

// Fields are the kind's keys.
func (Kind) Fields() []config.Field {
	return []config.Field{
		{Key: "features", Type: "list of `{field: name, bounds: [lo, hi]}`", Default: "required", Doc: fmt.Sprintf("the numeric fields a model predicts from, 1–%d, distinct, none the privacy unit, the target or the label; each clamped to its `bounds` and mapped to [−1, 1]. A query sends one value per feature, in this order", mregression.MaxFeatures)},
		{Key: "target", Type: "`{field: name, bounds: [lo, hi]}`", Default: "—", Doc: "exactly one of `target` and `label`: a real target, fitted by ridge regression per shard; answers are the average of the r predictions clamped to `bounds`, plus noise calibrated to (hi − lo)/r"},
		{Key: "label", Type: "`{field: name, classes: [names]}`", Default: "—", Doc: fmt.Sprintf("exactly one of `target` and `label`: a categorical field whose value (a string) must be one of `classes` (2–%d distinct names); each shard fits a least-squares one-vs-rest classifier, and answers are the soft majority of the r votes (the exponential mechanism)", MaxClasses)},
		{Key: "shards", Type: "int", Default: fmt.Sprintf("`%d`", DefaultShards), Doc: fmt.Sprintf("r, the number of disjoint shards and models, %d–%d (and r × (1 + D(D+1)/2 + T·D) ≤ %d with D = features + 1, T = 1 or the number of classes). More shards: less noise per answer, less data per model", MinShards, MaxShards, MaxStateInts)},
		{Key: "key", Type: "string", Default: "derived from the stream and release names", Doc: fmt.Sprintf("the secret key of the keyed hash (HMAC-SHA256) that puts a unit in a shard, at least %d bytes. The guarantee holds for any key; a secret one stops anyone from choosing units that share a shard. Without it the key is public (derived from the names). Changing it changes every model", MinKeyBytes)},
		{Key: "lambda", Type: "number", Default: fmt.Sprintf("`%g`", DefaultLambda), Doc: "the ridge λ ≥ 0 of every shard's fit, on the scaled problem (features in [−1, 1]); the intercept is not penalized. A shard whose fit fails (λ = 0 on singular data) has the zero model"},
		{Key: "max_queries", Type: "int", Default: "`0`", Doc: "the most answers one window's models give (0: no limit but the stream's budget)"},
		{Key: "evaluate", Type: "`{batch: m, loss: name}`", Default: "—", Doc: fmt.Sprintf("allows private evaluation: a query of `m` labelled rows (1–%d) is answered with the models' mean loss plus noise, charged `epsilon` once for the batch. `loss`: `zero_one` (with `label`, the default), `absolute` (default with `target`, bound hi − lo) or `squared` (bound (hi − lo)²)", mprediction.MaxEvalQueries)},
	}
}

// Config is a prediction release's own keys.
type Config struct {
	// Features are the feature fields, in the order of a query's values;
	// FeatureBounds their [lo, hi].
	Features      []string
	FeatureBounds [][2]float64
	// Target and TargetBounds are set for a regression; Label and Classes
	// for a classifier (exactly one of Target and Label is set).
	Target       string
	TargetBounds [2]float64
	Label        string
	Classes      []string
	// Shards is r.
	Shards int
	// Key is the sharding key; "" when not given (Plan derives a public
	// one from the stream's and release's names).
	Key string
	// Lambda is the ridge λ on the scaled problem.
	Lambda float64
	// MaxQueries is Predictor.QueryLimit (0: none).
	MaxQueries int
	// EvalBatch is the batch size of a private evaluation (0: evaluation
	// is not allowed) and EvalLoss its loss.
	EvalBatch int
	EvalLoss  string
}

// AnswersQueries is true: a prediction release answers queries, so the
// pipeline creates the requests and responses topics (kind.QueryConfig).
func (*Config) AnswersQueries() bool { return true }

// Classifier reports whether the release predicts a label.
func (c *Config) Classifier() bool { return c.Label != "" }

// targets is T: the number of Xᵀy columns (1, or one per class).
func (c *Config) targets() int {
	if c.Classifier() {
		return len(c.Classes)
	}
	return 1
}

// stateInts is the size of the model state for r shards.
func stateInts(features, targets, shards int) int64 {
	d := int64(features + 1)
	return stateHeader + int64(shards)*(1+d*(d+1)/2+int64(targets)*d)
}

// Decode reads a prediction release's keys into r.Params, reporting every
// mistake at its line.
func (Kind) Decode(p *config.Params, rel *config.Release) {
	c := &Config{Shards: DefaultShards, Lambda: DefaultLambda}
	rel.Params = c
	featOK := features(p, c)
	hasT, hasL := p.Has("target"), p.Has("label")
	switch {
	case hasT && hasL:
		p.Errorf(p.KeyLine("label"), p.Path("label"), "cannot be given with target (line %d): give target for a real value (ridge regression) or label for a class, not both", p.KeyLine("target"))
	case !hasT && !hasL:
		p.Errorf(p.Line(), p.Path("target"), "required for kind prediction: target {field: name, bounds: [lo, hi]} for a real value, or label {field: name, classes: [names]} for a class")
	case hasT:
		target(p, c)
	default:
		label(p, c)
	}
	for _, v := range []struct{ name, path string }{{c.Target, "target.field"}, {c.Label, "label.field"}} {
		if v.name == "" {
			continue
		}
		for i, f := range c.Features {
			if f == v.name {
				p.Errorf(p.KeyLine(strings.SplitN(v.path, ".", 2)[0]), p.Path(v.path), "%q is also features[%d].field; a model cannot predict a field from itself", v.name, i)
			}
		}
	}
	if v, line, ok := p.Int("shards"); ok {
		if v < MinShards || v > MaxShards {
			p.Errorf(line, p.Path("shards"), "must be in %d..%d, got %d", MinShards, MaxShards, v)
		} else {
			c.Shards = v
			if n := stateInts(len(c.Features), c.targets(), v); featOK && n > MaxStateInts {
				p.Errorf(line, p.Path("shards"), "%d shards of %d features and %d target columns make a model state of %d integers, more than %d: use fewer shards, features or classes", v, len(c.Features), c.targets(), n, MaxStateInts)
			}
		}
	} else if n := stateInts(len(c.Features), c.targets(), c.Shards); featOK && !p.Has("shards") && n > MaxStateInts {
		p.Errorf(p.Line(), p.Path("shards"), "the default %d shards of %d features and %d target columns make a model state of %d integers, more than %d: set fewer shards, or use fewer features or classes", c.Shards, len(c.Features), c.targets(), n, MaxStateInts)
	}
	if v, line, ok := p.String("key"); ok {
		if len(v) < MinKeyBytes {
			p.Errorf(line, p.Path("key"), "must be at least %d bytes (a secret the sharding hash is keyed with), got %d", MinKeyBytes, len(v))
		} else {
			c.Key = v
		}
	}
	if v, line, ok := p.Number("lambda"); ok {
		if !config.Finite(v) || v < 0 {
			p.Errorf(line, p.Path("lambda"), "must be finite and >= 0, got %s", config.FormatFloat(v))
		} else {
			c.Lambda = v
		}
	}
	if v, line, ok := p.Int("max_queries"); ok {
		if v < 0 {
			p.Errorf(line, p.Path("max_queries"), "must be >= 0 (0: no limit but the budget), got %d", v)
		} else {
			c.MaxQueries = v
		}
	}
	evaluate(p, c, hasT && !hasL, hasL && !hasT)
	p.DecodeNoise(rel)
}

// KeyHint explains where a prediction's fields go.
func (Kind) KeyHint(key string) string {
	switch key {
	case "field", "fields":
		return "list the fields to predict from in features, and the field to predict in target or label"
	case "bounds":
		return "each feature and the target have their own: {field: name, bounds: [lo, hi]}"
	case "classes", "categories":
		return "a label lists its classes: label: {field: name, classes: [a, b]}"
	}
	return ""
}

// fieldName reads the field of a variable mapping.
func fieldName(vm *config.Params, path string) (string, int, bool) {
	v, l, ok := vm.String("field")
	if !ok {
		if !vm.Has("field") {
			vm.Errorf(vm.Line(), config.Join(path, "field"), "required: the event field")
		}
		return "", 0, false
	}
	if strings.TrimSpace(v) == "" {
		vm.Errorf(l, config.Join(path, "field"), "must name an event field")
		return "", 0, false
	}
	return v, l, true
}

// variable reads {field: name, bounds: [lo, hi]} at path and records that
// the release aggregates the field (never the privacy unit).
func variable(p *config.Params, n config.Node, path string) (string, [2]float64, bool) {
	var b [2]float64
	if !n.IsMapping() {
		p.Errorf(n.Line(), path, "must be {field: name, bounds: [lo, hi]}, got %s", n.Describe())
		return "", b, false
	}
	vm, ok := p.Mapping(n, path, variableKeys)
	if !ok {
		return "", b, false
	}
	name, line, ok := fieldName(vm, path)
	if ok {
		p.Aggregate(name, line, config.Join(path, "field"))
	}
	if !vm.Has("bounds") {
		vm.Errorf(vm.Line(), config.Join(path, "bounds"), "required: [lo, hi], the range values are clamped to and mapped to [−1, 1] from")
		return name, b, false
	}
	b, good := vm.Bounds("bounds")
	return name, b, ok && good
}

// features reads the feature list into c; it reports whether every
// feature is valid.
func features(p *config.Params, c *Config) bool {
	items, line, ok := p.List("features")
	if !ok {
		if !p.Has("features") {
			p.Errorf(p.Line(), p.Path("features"), "required for kind prediction: the fields to predict from, [{field: name, bounds: [lo, hi]}, …]")
		}
		return false
	}
	if len(items) < 1 || len(items) > mregression.MaxFeatures {
		p.Errorf(line, p.Path("features"), "must list 1 to %d features, got %d", mregression.MaxFeatures, len(items))
		return false
	}
	all := true
	names := make([]string, len(items))
	bounds := make([][2]float64, len(items))
	for i, item := range items {
		ipath := config.Index(p.Path("features"), i)
		name, b, ok := variable(p, item, ipath)
		for j := range i {
			if name != "" && names[j] == name {
				p.Errorf(item.Line(), config.Join(ipath, "field"), "%q is also features[%d].field; the features must be distinct", name, j)
				ok = false
			}
		}
		names[i], bounds[i] = name, b
		all = all && ok
	}
	if all {
		c.Features, c.FeatureBounds = names, bounds
	}
	return all
}

// target reads target into c.
func target(p *config.Params, c *Config) {
	n, _ := p.Value("target")
	if name, b, ok := variable(p, n, p.Path("target")); ok {
		c.Target, c.TargetBounds = name, b
	}
}

// label reads label into c: {field, classes}, 2 to MaxClasses distinct
// non-empty names.
func label(p *config.Params, c *Config) {
	n, _ := p.Value("label")
	path := p.Path("label")
	if !n.IsMapping() {
		p.Errorf(n.Line(), path, "must be {field: name, classes: [names]}, got %s", n.Describe())
		return
	}
	lm, ok := p.Mapping(n, path, labelKeys)
	if !ok {
		return
	}
	name, line, nameOK := fieldName(lm, path)
	if nameOK {
		p.Aggregate(name, line, config.Join(path, "field"))
	}
	items, cline, ok := lm.List("classes")
	if !ok {
		if !lm.Has("classes") {
			lm.Errorf(lm.Line(), config.Join(path, "classes"), "required: the label's class names, [a, b, …]; an event whose label is not one of them is refused")
		}
		return
	}
	if len(items) < 2 || len(items) > MaxClasses {
		lm.Errorf(cline, config.Join(path, "classes"), "must list 2 to %d classes, got %d", MaxClasses, len(items))
		return
	}
	classes := make([]string, 0, len(items))
	for i, it := range items {
		ipath := config.Index(config.Join(path, "classes"), i)
		v, isScalar := it.Scalar()
		switch {
		case !isScalar || strings.TrimSpace(v) == "":
			lm.Errorf(it.Line(), ipath, "must be a class name, got %s", it.Describe())
			ok = false
		case contains(classes, v):
			lm.Errorf(it.Line(), ipath, "%q is listed twice", v)
			ok = false
		}
		classes = append(classes, v)
	}
	if ok && nameOK {
		c.Label, c.Classes = name, classes
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// evaluate reads evaluate: {batch, loss}.
func evaluate(p *config.Params, c *Config, regression, classifier bool) {
	n, ok := p.Value("evaluate")
	if !ok {
		return
	}
	path := p.Path("evaluate")
	if !n.IsMapping() {
		p.Errorf(n.Line(), path, "must be {batch: m, loss: name}, got %s", n.Describe())
		return
	}
	em, ok := p.Mapping(n, path, evaluateKeys)
	if !ok {
		return
	}
	batch := 0
	if v, line, ok := em.Int("batch"); ok {
		if v < 1 || v > mprediction.MaxEvalQueries {
			em.Errorf(line, config.Join(path, "batch"), "must be in 1..%d labelled rows, got %d", mprediction.MaxEvalQueries, v)
		} else {
			batch = v
		}
	} else if !em.Has("batch") {
		em.Errorf(em.Line(), config.Join(path, "batch"), "required: m, the number of labelled rows of an evaluation query (public; the noise does not grow with it)")
	}
	loss := ""
	switch {
	case classifier:
		loss = LossZeroOne
	case regression:
		loss = LossAbsolute
	}
	if v, line, ok := em.String("loss"); ok {
		switch {
		case !contains(losses, v):
			em.Errorf(line, config.Join(path, "loss"), "%q is not one of %s%s", v, strings.Join(losses, ", "), config.DidYouMean(v, losses))
			return
		case classifier && v != LossZeroOne:
			em.Errorf(line, config.Join(path, "loss"), "must be zero_one with label (a class has no distance), got %s", v)
			return
		case regression && v == LossZeroOne:
			em.Errorf(line, config.Join(path, "loss"), "zero_one is for a label; with target use absolute or squared")
			return
		}
		loss = v
	}
	if batch > 0 && loss != "" {
		c.EvalBatch, c.EvalLoss = batch, loss
	}
}
