package regression

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
)

// This file reads the keys of a regression release (SPEC section 4.5):
// its method, its features and target with their bounds, and the settings
// of each method. A method's key given with another method is an error,
// as a key given where it would be ignored is everywhere; with an unknown
// method each value is still checked on its own.

// Regression methods (Release.Method). Each is (ε, δ)-DP under add/remove
// of one privacy unit; SPEC section 4.5 gives their calibration.
const (
	// MethodSSP is sufficient statistics perturbation: Gaussian noise on
	// XᵀX and Xᵀy, then ridge regression with Release.Lambda.
	MethodSSP = "ssp"
	// MethodAdaSSP is AdaSSP (Wang 2018): SSP with a ridge λ chosen from a
	// private lower bound on λ_min(XᵀX).
	MethodAdaSSP = "adassp"
	// MethodOPS is one posterior sample (Dimitrakakis et al. 2014, Wang
	// et al. 2015) of ridge regression with Release.Lambda.
	MethodOPS = "ops"
	// MethodAdaOPS is AdaOPS (Wang 2018): OPS with λ and the inverse
	// temperature chosen from private bounds (mregression.OPSGamma).
	MethodAdaOPS = "adaops"
	// MethodPCLS is private model selection over candidate feature sets
	// (Lei et al. 2018, Algorithm 1), then AdaSSP on the selected set.
	MethodPCLS = "pcls"
)

// Model selection mechanisms of method pcls (Release.Selection).
const (
	// SelectionExponential is the exponential mechanism over the
	// candidates' scores.
	SelectionExponential = "exponential"
	// SelectionNoisyMin is report-noisy-min with Laplace noise.
	SelectionNoisyMin = "noisy_min"
)

// Defaults of the regression keys that have one.
const (
	// DefaultRho is ρ, the failure probability of AdaSSP's private lower
	// bound on λ_min(XᵀX), as in Wang (2018) and SPEC section 4.5.
	DefaultRho = 0.05
	// DefaultSelectionShare is the share of ε that method pcls spends on
	// selecting a model.
	DefaultSelectionShare = 0.5
)

// MaxRegressionCandidates is the most candidate models method pcls may
// choose from. Every candidate's score is a constrained least-squares fit
// solved on every window, so the bound keeps a release's work (and the
// time a window takes to close) in check; it does not affect privacy, as
// the selection's sensitivity does not depend on the number of candidates.
const MaxRegressionCandidates = 4096

var (
	// pclsKeys are the regression keys only method pcls uses.
	pclsKeys = []string{"selection", "radius", "penalty", "max_support", "supports", "selection_share"}
	// variableKeys are the keys of one feature and of the target.
	variableKeys = []string{"field", "bounds"}

	methods    = []string{MethodSSP, MethodAdaSSP, MethodOPS, MethodAdaOPS, MethodPCLS}
	selections = []string{SelectionExponential, SelectionNoisyMin}
)

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "A differentially private linear regression of `target` on `features` by one of five methods, all (ε, δ)-DP (see [linear regression](#linear-regression))."
}

// Fields are the method, the variables and each method's settings.
func (Kind) Fields() []config.Field {
	return []config.Field{
		{Key: "method", Type: "`ssp` \\| `adassp` \\| `ops` \\| `adaops` \\| `pcls`", Default: "required", Doc: "`ssp`: Gaussian noise on XᵀX and Xᵀy, then ridge with `lambda`. `adassp`: the same with λ chosen from a private lower bound on λ_min(XᵀX) (Wang 2018). `ops`: one sample from the ridge posterior. `adaops`: OPS with λ and the sample's temperature chosen privately. `pcls`: private choice among candidate feature sets (Lei et al. 2018), then `adassp` on the chosen set. All are (ε, δ)-DP"},
		{Key: "features", Type: "list of `{field: name, bounds: [lo, hi]}`", Default: "required", Doc: fmt.Sprintf("the fields to fit on, 1–%d, distinct, none the privacy unit or the target; each is clamped to its `bounds` (finite, `lo < hi`) and mapped to [−1, 1]", mregression.MaxFeatures)},
		{Key: "target", Type: "`{field: name, bounds: [lo, hi]}`", Default: "required", Doc: "the field to predict, not a feature or the privacy unit; clamped to its `bounds` and mapped to [−1, 1]. Coefficients are reported on the original scale"},
		{Key: "intercept", Type: "`true` \\| `false`", Default: "`true`", Doc: "fit a constant term. It adds a column, which raises the noise a little"},
		{Key: "lambda", Type: "number", Default: "`0` for `ssp`", Doc: "`method` `ssp` and `ops` only: the ridge λ, finite; ≥ 0 for `ssp`; `ops` requires it and λ > 0 (the posterior sample's privacy needs λ + λ_min(XᵀX) above a floor set by ε, δ and the dimension; `ops` raises λ to that floor when its private λ_min bound falls short, so the reported `ridge` can be larger). The other methods choose λ themselves"},
		{Key: "rho", Type: "number", Default: fmt.Sprintf("`%g`", DefaultRho), Doc: "`method` `adassp`, `adaops` and `pcls` only: in (0, 1), the failure probability of the private lower bound on λ_min(XᵀX) that λ is chosen from; it trades accuracy, never privacy (for `adaops`, the bound that the posterior sample's guarantee rests on is covered by `delta`, not by `rho`)"},
		{Key: "selection", Type: "`exponential` \\| `noisy_min`", Default: "`exponential`", Doc: "`method: pcls` only: how the candidate model is chosen, by the exponential mechanism or report-noisy-min; both are ε-DP"},
		{Key: "radius", Type: "number", Default: "required for `pcls`", Doc: "`method: pcls` only: r > 0, the ℓ1 radius of the coefficients on the scaled problem (features and target in [−1, 1]). The choice's sensitivity is L·(1 + r)²: accuracy depends strongly on r"},
		{Key: "penalty", Type: "number", Default: "required for `pcls`", Doc: "`method: pcls` only: pen ≥ 0, added to a candidate's score per feature it uses. Accuracy depends strongly on it"},
		{Key: "max_support", Type: "int", Default: "—", Doc: fmt.Sprintf("`method: pcls` only, exactly one of `max_support` and `supports` required: the candidates are every set of 1 to `max_support` features, 1–(number of features), at most %d sets in all (Σ C(d, k) for k ≤ `max_support`)", MaxRegressionCandidates)},
		{Key: "supports", Type: "list of lists of feature names", Default: "—", Doc: fmt.Sprintf("`method: pcls` only, instead of `max_support`: the candidate models, 1–%d, each a non-empty set of names from `features`, no two the same", MaxRegressionCandidates)},
		{Key: "selection_share", Type: "number", Default: fmt.Sprintf("`%g`", DefaultSelectionShare), Doc: "`method: pcls` only: in (0, 1), the share of `epsilon` spent on choosing the model; the rest of `epsilon`, and all of `delta`, releases its coefficients"},
		{Key: "delta", Type: "number", Default: "required", Doc: "in (0, 1): every method is (ε, δ)-DP"},
		{Key: "noise", Type: "—", Default: "—", Doc: "not allowed: the method fixes the noise (Gaussian noise on statistics, or a Gaussian posterior sample)"},
	}
}

// Decode reads the keys of a regression release into r and records the
// fields it aggregates (every valid feature field and the target field),
// for the stream's privacy unit check. Its privacy keys are read by
// DecodePrivacy.
func (Kind) Decode(p *config.Params, rel *config.Release) {
	r := &Config{}
	rel.Params = r
	method, methodLine, methodOK := p.String("method")
	if methodOK && !slices.Contains(methods, method) {
		p.Errorf(methodLine, p.Path("method"), "%q is not one of %s%s", method, strings.Join(methods, ", "), config.DidYouMean(method, methods))
		methodOK = false
	}
	if !p.Has("method") {
		p.Errorf(p.Line(), p.Path("method"), "required for kind regression: one of %s", strings.Join(methods, ", "))
	}
	if !methodOK {
		method = "" // unknown: each method's keys are checked on their own
	}

	feats := features(p)
	target, targetLine, targetBounds, targetOK := target(p)
	if target != "" {
		if i := feats.find(target); i >= 0 {
			p.Errorf(targetLine, p.Path("target.field"), "%q is also features[%d].field (line %d); the target cannot be a feature, or the fit would predict it from itself",
				target, i, feats.lines[i])
			targetOK = false
		}
	}
	intercept := true
	if v, ok := p.Bool("intercept"); ok {
		intercept = v
	}
	lam := lambda(p, method)
	rh := rho(p, method)
	pcls(p, method, feats, r)
	r.Method = method
	if feats.ok {
		r.Features, r.FeatureBounds = feats.names, feats.bounds
	}
	if targetOK {
		r.Target, r.TargetBounds = target, targetBounds
	}
	r.Intercept, r.Lambda, r.Rho = intercept, lam, rh
	for i, name := range feats.names {
		if name != "" {
			p.Aggregate(name, feats.lines[i], config.Join(config.Index(p.Path("features"), i), "field"))
		}
	}
	if target != "" {
		p.Aggregate(target, targetLine, p.Path("target.field"))
	}
}

// regressionNoiseMsg explains why a regression release takes no noise key.
const regressionNoiseMsg = "must not be given for kind regression: its method fixes the noise (Gaussian noise on the sufficient statistics for ssp, adassp and pcls, a Gaussian posterior sample for ops and adaops), and every method is (ε, δ)-DP"

// DecodePrivacy reads the privacy keys of a regression release: epsilon,
// and delta, which every method needs. There is no noise key: the method
// decides the noise, so Noise is "".
func (Kind) DecodePrivacy(p *config.Params, r *config.Release) {
	r.Noise = ""
	if p.Has("noise") {
		p.Errorf(p.KeyLine("noise"), p.Path("noise"), regressionNoiseMsg)
	}
	p.Epsilon(r)
	if !p.Has("delta") {
		p.Errorf(p.Line(), p.Path("delta"), "required for kind regression: a value in (0, 1); every method is (ε, δ)-DP")
	} else if v, ok := p.Delta(); ok {
		r.Delta = v
	}
}

// KeyHint explains where a regression's fields and bounds go.
func (Kind) KeyHint(key string) string {
	switch key {
	case "field":
		return "name the field to predict in target and the fields to fit on in features, each with its bounds"
	case "fields":
		return "list the fields to fit on in features"
	case "bounds":
		return "each feature and the target have their own: {field: name, bounds: [lo, hi]}"
	}
	return ""
}

// Config is a regression's own keys, as Decode reads them.
type Config struct {
	// Method is ssp, adassp, ops, adaops or pcls (the Method constants,
	// SPEC section 4.5).
	Method string
	// Features are the feature fields, in the order of the coefficients:
	// 1 to mregression.MaxFeatures distinct names, none the privacy unit
	// or the target.
	Features []string
	// FeatureBounds are the [lo, hi] of each of Features: each feature is
	// clamped to them and mapped to [−1, 1], which is what bounds every
	// method's sensitivity (mregression.Scaling).
	FeatureBounds [][2]float64
	// Target is the predicted field, not a feature and not the privacy
	// unit; TargetBounds the [lo, hi] it is clamped to and mapped to
	// [−1, 1] from.
	Target       string
	TargetBounds [2]float64
	// Intercept adds a constant column after the features, default true.
	// It counts in d_eff = len(Features) + 1, so it raises B_x = √d_eff and
	// with it the noise.
	Intercept bool
	// Lambda is the ridge λ ≥ 0 of methods ssp and ops: default 0 for
	// ssp; ops requires λ > 0. The posterior sample's privacy needs
	// λ + λ_min(XᵀX) above a floor fixed by ε, δ and the dimension
	// (OPSGamma's h); ops releases a private lower bound on λ_min and
	// raises λ to the floor when the bound falls short, so the ridge it
	// reports can exceed this one. 0 for other methods, which choose λ
	// from the data privately.
	Lambda float64
	// Rho is ρ of methods adassp, adaops and pcls, in (0, 1), default
	// DefaultRho: the failure probability of the private lower bound on
	// λ_min(XᵀX) from which AdaSSP chooses its ridge λ (Wang 2018,
	// Algorithm 2). That choice is post-processing of a private release,
	// so ρ trades accuracy and never privacy; for adaops the bound that
	// the posterior sample's guarantee rests on must fail with a
	// probability counted in delta instead, and ρ may only enter the
	// choice of λ. 0 for ssp and ops.
	Rho float64
	// Selection is how method pcls picks a candidate model:
	// SelectionExponential (default) or SelectionNoisyMin; both are ε-DP
	// with the score sensitivity of SPEC section 4.5.
	Selection string
	// Radius is r > 0 of method pcls: the ℓ1 radius of the coefficients on
	// the scaled problem (features and target in [−1, 1]). It sets the
	// sensitivity of a candidate's score under add/remove of one privacy
	// unit to L·(1 + r)² (SPEC section 4.5): with ‖β‖₁ ≤ r and ‖x‖∞,
	// |y| ≤ 1 each row's squared residual lies in [0, (1 + r)²], and a
	// unit's at most L rows move the constrained minimum by at most L
	// times that. So a larger r means a noisier choice of model.
	Radius float64
	// Penalty is pen ≥ 0 of method pcls, added to a candidate model's
	// score per selected feature.
	Penalty float64
	// MaxSupport makes the candidates of method pcls every subset of
	// Features of 1 to MaxSupport features, at most
	// MaxRegressionCandidates in all; 0 when Supports is given instead.
	MaxSupport int
	// Supports are the candidate models of method pcls when listed: each
	// a non-empty set of names from Features, no two the same set; nil
	// when MaxSupport is given instead.
	Supports [][]string
	// SelectionShare is the share of epsilon that method pcls spends on
	// selecting a model, in (0, 1), default DefaultSelectionShare; the
	// rest, with all of delta, releases the selected model's coefficients
	// with AdaSSP.
	SelectionShare float64
}

// Release is a regression release: the keys every release has and its
// own.
type Release struct {
	config.Release
	*Config
}

// featureSet is what was read of a regression's features.
type featureSet struct {
	names  []string     // field of each feature, "" where it is invalid
	lines  []int        // line of each feature's field, 0 where it is invalid
	bounds [][2]float64 // bounds of each feature; nil unless ok
	count  int          // number of features; 0 when the list itself is invalid
	ok     bool         // every feature is valid
}

// find returns the position of name among the valid features, or -1.
func (f featureSet) find(name string) int {
	for i, n := range f.names {
		if n != "" && n == name {
			return i
		}
	}
	return -1
}

// features reads a regression's features: a list of 1 to
// mregression.MaxFeatures {field: name, bounds: [lo, hi]}, with
// distinct fields.
func features(p *config.Params) featureSet {
	var fs featureSet
	fpath := p.Path("features")
	if !p.Has("features") {
		p.Errorf(p.Line(), fpath, "required for kind regression: the fields to fit on, 1 to %d of {field: name, bounds: [lo, hi]}", mregression.MaxFeatures)
		return fs
	}
	items, line, ok := p.List("features")
	if !ok {
		return fs
	}
	if len(items) < 1 || len(items) > mregression.MaxFeatures {
		p.Errorf(line, fpath, "must list 1 to %d features, got %d", mregression.MaxFeatures, len(items))
		return fs
	}
	fs.count = len(items)
	fs.names = make([]string, len(items))
	fs.lines = make([]int, len(items))
	bounds := make([][2]float64, len(items))
	fs.ok = true
	for i, item := range items {
		ipath := config.Index(fpath, i)
		name, nameLine, b, ok := variable(p, item, ipath)
		if name != "" {
			if j := fs.find(name); j >= 0 {
				p.Errorf(nameLine, config.Join(ipath, "field"), "%q is also features[%d].field (line %d); the features must be distinct", name, j, fs.lines[j])
				name, ok = "", false
			}
		}
		if name != "" {
			fs.names[i], fs.lines[i] = name, nameLine
		}
		bounds[i] = b
		fs.ok = fs.ok && ok
	}
	if fs.ok {
		fs.bounds = bounds
	}
	return fs
}

// target reads a regression's target: {field: name, bounds: [lo, hi]}.
func target(p *config.Params) (string, int, [2]float64, bool) {
	v, ok := p.Value("target")
	if !ok {
		p.Errorf(p.Line(), p.Path("target"), "required for kind regression: the field to predict, {field: name, bounds: [lo, hi]}")
		return "", 0, [2]float64{}, false
	}
	return variable(p, v, p.Path("target"))
}

// variable reads one feature or the target, {field: name, bounds: [lo, hi]}
// at path. It returns the field (or "" when it is invalid) and its line
// even when the bounds are invalid, so that the field's other checks still
// run; ok reports whether both are valid.
func variable(p *config.Params, n config.Node, path string) (name string, line int, b [2]float64, ok bool) {
	if !n.IsMapping() {
		p.Errorf(n.Line(), path, "must be {field: name, bounds: [lo, hi]}, got %s", n.Describe())
		return "", 0, b, false
	}
	vm, isMap := p.Mapping(n, path, variableKeys)
	if !isMap {
		return "", 0, b, false // unreachable: n is a mapping
	}
	ok = true
	if v, l, good := vm.String("field"); good {
		if strings.TrimSpace(v) == "" {
			vm.Errorf(l, config.Join(path, "field"), "must name an event field")
			ok = false
		} else {
			name, line = v, l
		}
	} else {
		if !vm.Has("field") {
			vm.Errorf(vm.Line(), config.Join(path, "field"), "required: the event field, whose values must be numbers")
		}
		ok = false
	}
	if !vm.Has("bounds") {
		vm.Errorf(vm.Line(), config.Join(path, "bounds"), "required: [lo, hi], the range values are clamped to and mapped to [−1, 1] from")
		return name, line, b, false
	}
	b, good := vm.Bounds("bounds")
	return name, line, b, ok && good
}

// lambda reads the ridge λ of methods ssp (>= 0, default 0) and ops (> 0,
// required), and reports it with any other method.
func lambda(p *config.Params, method string) float64 {
	lpath := p.Path("lambda")
	if !p.Has("lambda") {
		if method == MethodOPS {
			p.Errorf(p.Line(), lpath, "required for method ops: the ridge λ > 0 (the posterior sample's privacy needs λ + λ_min(XᵀX) above a floor set by epsilon, delta and the number of features; ops raises λ to that floor when the private λ_min bound falls short; adaops chooses λ itself)")
		}
		return 0
	}
	if method != "" && method != MethodSSP && method != MethodOPS {
		hint := " (it chooses λ from a private lower bound on λ_min(XᵀX))"
		if method == MethodPCLS {
			hint = " (it fits the selected model with adassp, which chooses λ from a private lower bound on λ_min(XᵀX))"
		}
		p.Errorf(p.KeyLine("lambda"), lpath, "is only used with method ssp or ops, not %s%s", method, hint)
		return 0
	}
	v, line, ok := p.Number("lambda")
	if !ok {
		return 0
	}
	switch {
	case !config.Finite(v) || v < 0:
		p.Errorf(line, lpath, "must be finite and >= 0, got %s", config.FormatFloat(v))
		return 0
	case v == 0 && method == MethodOPS:
		p.Errorf(line, lpath, "must be > 0 with method ops: the posterior sample's privacy needs λ + λ_min(XᵀX) above a floor set by epsilon, delta and the number of features; ops raises λ to that floor when the private λ_min bound falls short (adaops chooses λ itself)")
		return 0
	}
	return v
}

// usesRho reports whether method chooses its ridge λ from a private lower
// bound on λ_min(XᵀX) with failure probability ρ.
func usesRho(method string) bool {
	return method == MethodAdaSSP || method == MethodAdaOPS || method == MethodPCLS
}

// rho reads ρ of methods adassp, adaops and pcls, default DefaultRho, and
// reports it with any other method.
func rho(p *config.Params, method string) float64 {
	rpath := p.Path("rho")
	if !p.Has("rho") {
		if usesRho(method) {
			return DefaultRho
		}
		return 0
	}
	if method != "" && !usesRho(method) {
		p.Errorf(p.KeyLine("rho"), rpath, "is only used with method adassp, adaops or pcls, not %s (its λ is given, not chosen from a private bound)", method)
		return 0
	}
	v, line, ok := p.Number("rho")
	if !ok {
		return 0
	}
	if !(v > 0 && v < 1) { // also true for NaN
		p.Errorf(line, rpath, "must be in (0, 1), the probability that the private lower bound on λ_min(XᵀX) fails, got %s", config.FormatFloat(v))
		return 0
	}
	return v
}

// pcls reads the keys of method pcls: selection, radius, penalty,
// selection_share, and exactly one of max_support and supports; it reports
// them with any other method.
func pcls(p *config.Params, method string, feats featureSet, r *Config) {
	if method != "" && method != MethodPCLS {
		for _, key := range pclsKeys {
			if p.Has(key) {
				p.Errorf(p.KeyLine(key), p.Path(key), "is only used with method pcls, not %s", method)
			}
		}
		return
	}
	store := method == MethodPCLS
	required := func(key, msg string) {
		if store && !p.Has(key) {
			p.Errorf(p.Line(), p.Path(key), "required for method pcls: %s", msg)
		}
	}

	selection := SelectionExponential
	if v, line, ok := p.String("selection"); ok {
		if !slices.Contains(selections, v) {
			p.Errorf(line, p.Path("selection"), "%q is not one of %s%s", v, strings.Join(selections, ", "), config.DidYouMean(v, selections))
		} else {
			selection = v
		}
	}
	required("radius", "r > 0, the ℓ1 radius of the coefficients on the scaled problem (features and target mapped to [−1, 1]); the selection's noise grows as (1 + r)²")
	var radius float64
	if v, line, ok := p.Number("radius"); ok {
		if !config.Finite(v) || v <= 0 {
			p.Errorf(line, p.Path("radius"), "must be finite and > 0, got %s", config.FormatFloat(v))
		} else {
			radius = v
		}
	}
	required("penalty", "pen >= 0, added to a candidate model's score per selected feature")
	var penalty float64
	if v, line, ok := p.Number("penalty"); ok {
		if !config.Finite(v) || v < 0 {
			p.Errorf(line, p.Path("penalty"), "must be finite and >= 0, got %s", config.FormatFloat(v))
		} else {
			penalty = v
		}
	}
	share := DefaultSelectionShare
	if v, line, ok := p.Number("selection_share"); ok {
		if !(v > 0 && v < 1) { // also true for NaN
			p.Errorf(line, p.Path("selection_share"), "must be in (0, 1), the share of epsilon spent on selecting the model (the rest releases its coefficients), got %s", config.FormatFloat(v))
		} else {
			share = v
		}
	}

	hasMax, hasSupports := p.Has("max_support"), p.Has("supports")
	switch {
	case hasMax && hasSupports:
		p.Errorf(p.KeyLine("supports"), p.Path("supports"), "cannot be given together with max_support (line %d): both set the candidate models; give exactly one", p.KeyLine("max_support"))
	case store && !hasMax && !hasSupports:
		p.Errorf(p.Line(), p.Path("max_support"), "required for method pcls (or supports instead): the most features in a candidate model; give exactly one of max_support and supports")
	}
	maxSupport := maxSupportOf(p, feats)
	supports := supportsOf(p, feats)
	if !store {
		return
	}
	r.Selection, r.Radius, r.Penalty, r.SelectionShare = selection, radius, penalty, share
	if !hasSupports {
		r.MaxSupport = maxSupport
	}
	if !hasMax {
		r.Supports = supports
	}
}

// maxSupport reads max_support, in 1..(the number of features), such that
// the subsets it makes number at most MaxRegressionCandidates. It returns 0
// when absent or invalid.
func maxSupportOf(p *config.Params, feats featureSet) int {
	v, line, ok := p.Int("max_support")
	if !ok {
		return 0
	}
	mpath := p.Path("max_support")
	switch {
	case v < 1:
		p.Errorf(line, mpath, "must be >= 1, got %d", v)
		return 0
	case feats.count == 0:
		return v // the features are invalid, and reported
	case v > feats.count:
		p.Errorf(line, mpath, "must be in 1..%d (the number of features), got %d", feats.count, v)
		return 0
	}
	if n := candidateModels(feats.count, v); n.Cmp(big.NewInt(MaxRegressionCandidates)) > 0 {
		most := 1
		for most < feats.count && candidateModels(feats.count, most+1).Cmp(big.NewInt(MaxRegressionCandidates)) <= 0 {
			most++
		}
		p.Errorf(line, mpath, "%d makes %s candidate models (every subset of 1 to %d of the %d features), more than %d; use max_support: %d or less, or list the candidates in supports",
			v, n, v, feats.count, MaxRegressionCandidates, most)
		return 0
	}
	return v
}

// candidateModels returns Σ C(d, k) for k = 1..maxSupport, the number of
// feature subsets of size 1 to maxSupport, exactly.
func candidateModels(d, maxSupport int) *big.Int {
	sum, c := new(big.Int), new(big.Int)
	for k := 1; k <= maxSupport && k <= d; k++ {
		sum.Add(sum, c.Binomial(int64(d), int64(k)))
	}
	return sum
}

// supports reads the listed candidate models of method pcls: 1 to
// MaxRegressionCandidates non-empty lists of feature names, each name at
// most once in a list and no two lists the same set. Names are checked
// against the features when every feature is valid. It returns nil after
// an error.
func supportsOf(p *config.Params, feats featureSet) [][]string {
	spath := p.Path("supports")
	items, line, ok := p.List("supports")
	if !ok {
		return nil
	}
	if len(items) < 1 || len(items) > MaxRegressionCandidates {
		p.Errorf(line, spath, "must list 1 to %d candidate models, got %d", MaxRegressionCandidates, len(items))
		return nil
	}
	type seenAt struct{ index, line int }
	seen := map[string]seenAt{} // canonical set -> first support listing it
	out := make([][]string, 0, len(items))
	ok = true
	for i, item := range items {
		ipath := config.Index(spath, i)
		names, good := support(p, item, ipath, i, feats)
		if !good {
			ok = false
			continue
		}
		key := supportKey(names)
		if first, dup := seen[key]; dup {
			p.Errorf(item.Line(), ipath, "is the same model as supports[%d] (line %d); each candidate must be listed once", first.index, first.line)
			ok = false
			continue
		}
		seen[key] = seenAt{i, item.Line()}
		out = append(out, names)
	}
	if !ok {
		return nil
	}
	return out
}

// support reads supports[i], at path: one candidate model, a non-empty
// list of distinct feature names.
func support(p *config.Params, item config.Node, path string, i int, feats featureSet) ([]string, bool) {
	content, isList := item.Items()
	if !isList {
		p.Errorf(item.Line(), path, "must be a list of feature names, e.g. [%s], got %s", exampleSupport(feats), item.Describe())
		return nil, false
	}
	if len(content) == 0 {
		p.Errorf(item.Line(), path, "must not be empty: a candidate model has at least one feature")
		return nil, false
	}
	names := make([]string, 0, len(content))
	at := map[string]int{} // name -> its position in the list
	ok := true
	for j, n := range content {
		npath := config.Index(path, j)
		name, isScalar := n.Scalar()
		if !isScalar {
			p.Errorf(n.Line(), npath, "must be a feature name, got %s", n.Describe())
			ok = false
			continue
		}
		if feats.ok && feats.find(name) < 0 {
			p.Errorf(n.Line(), npath, "%q is not one of the features (%s)%s", name, strings.Join(feats.names, ", "), config.DidYouMean(name, feats.names))
			ok = false
			continue
		}
		if k, dup := at[name]; dup {
			p.Errorf(n.Line(), npath, "%q is also supports[%d][%d]; a model lists each feature once", name, i, k)
			ok = false
			continue
		}
		at[name] = j
		names = append(names, name)
	}
	return names, ok
}

// supportKey returns a key that is equal for two supports exactly when
// they hold the same set of names: the names sorted, quoted and joined.
func supportKey(names []string) string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	var b strings.Builder
	for _, n := range sorted {
		b.WriteString(strconv.Quote(n))
		b.WriteByte(',')
	}
	return b.String()
}

// exampleSupport returns up to two feature names for an example, or
// "a, b" when the features are unknown.
func exampleSupport(feats featureSet) string {
	var names []string
	for _, n := range feats.names {
		if n != "" && len(names) < 2 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "a, b"
	}
	return strings.Join(names, ", ")
}
