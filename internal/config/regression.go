package config

import (
	"math/big"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dpstream/dpstream/mechanism/regression"
)

// This file reads the keys of a regression release (SPEC section 4.5):
// its method, its features and target with their bounds, and the settings
// of each method. As for the other kinds, a key given where it would be
// ignored is an error (a regression key on another kind, or a method's key
// with another method), and with an unknown kind or method each value is
// still checked on its own.

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
	// temperature chosen from private bounds (regression.OPSGamma).
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
	// regressionKeys are the release keys only a regression uses.
	regressionKeys = []string{"method", "features", "target", "intercept", "lambda", "rho",
		"selection", "radius", "penalty", "max_support", "supports", "selection_share"}
	// pclsKeys are the regression keys only method pcls uses.
	pclsKeys = []string{"selection", "radius", "penalty", "max_support", "supports", "selection_share"}
	// variableKeys are the keys of one feature and of the target.
	variableKeys = []string{"field", "bounds"}

	methods    = []string{MethodSSP, MethodAdaSSP, MethodOPS, MethodAdaOPS, MethodPCLS}
	selections = []string{SelectionExponential, SelectionNoisyMin}
)

// regressionNoiseMsg explains why a regression release takes no noise key.
const regressionNoiseMsg = "must not be given for kind regression: its method fixes the noise (Gaussian noise on the sufficient statistics for ssp, adassp and pcls, a Gaussian posterior sample for ops and adaops), and every method is (ε, δ)-DP"

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

// fieldRef is an event field a release aggregates, where the file names it.
type fieldRef struct {
	name string
	line int
	path string
}

// regression reads the keys of a regression release into r and returns the
// fields it aggregates (every valid feature field and the target field),
// for the stream's privacy unit check. It does not read epsilon, delta or
// noise, which release reads for every kind.
func (d *decoder) regression(m *mapping, path, kind string, kindOK bool, r *Release) []fieldRef {
	isReg := kind == KindRegression
	if kindOK && !isReg {
		for _, key := range regressionKeys {
			if m.has(key) {
				d.errorf(m.values[key].Line, join(path, key), "is only used with kind regression, not %s", kind)
			}
		}
		return nil
	}

	method, methodLine, methodOK := d.str(m, "method")
	if methodOK && !contains(methods, method) {
		d.errorf(methodLine, join(path, "method"), "%q is not one of %s%s", method, strings.Join(methods, ", "), didYouMean(method, methods))
		methodOK = false
	}
	if !m.has("method") && isReg {
		d.errorf(m.line, join(path, "method"), "required for kind regression: one of %s", strings.Join(methods, ", "))
	}
	if !methodOK {
		method = "" // unknown: each method's keys are checked on their own
	}

	feats := d.features(m, path, isReg)
	target, targetLine, targetBounds, targetOK := d.target(m, path, isReg)
	if target != "" {
		if i := feats.find(target); i >= 0 {
			d.errorf(targetLine, join(path, "target.field"), "%q is also features[%d].field (line %d); the target cannot be a feature, or the fit would predict it from itself",
				target, i, feats.lines[i])
			targetOK = false
		}
	}
	intercept := true
	if v, ok := d.boolean(m, "intercept"); ok {
		intercept = v
	}
	lambda := d.lambda(m, path, method, isReg)
	rho := d.rho(m, path, method, isReg)
	d.pcls(m, path, method, isReg, feats, r)
	if !isReg {
		return nil
	}
	r.Method = method
	if feats.ok {
		r.Features, r.FeatureBounds = feats.names, feats.bounds
	}
	if targetOK {
		r.Target, r.TargetBounds = target, targetBounds
		r.Field, r.Bounds = target, targetBounds
	}
	r.Intercept, r.Lambda, r.Rho = intercept, lambda, rho
	var refs []fieldRef
	for i, name := range feats.names {
		if name != "" {
			refs = append(refs, fieldRef{name, feats.lines[i], join(index(join(path, "features"), i), "field")})
		}
	}
	if target != "" {
		refs = append(refs, fieldRef{target, targetLine, join(path, "target.field")})
	}
	return refs
}

// features reads a regression's features: a list of 1 to
// regression.MaxFeatures {field: name, bounds: [lo, hi]}, with
// distinct fields.
func (d *decoder) features(m *mapping, path string, required bool) featureSet {
	var fs featureSet
	fpath := join(path, "features")
	if !m.has("features") {
		if required {
			d.errorf(m.line, fpath, "required for kind regression: the fields to fit on, 1 to %d of {field: name, bounds: [lo, hi]}", regression.MaxFeatures)
		}
		return fs
	}
	items, line, ok := d.list(m, "features")
	if !ok {
		return fs
	}
	if len(items) < 1 || len(items) > regression.MaxFeatures {
		d.errorf(line, fpath, "must list 1 to %d features, got %d", regression.MaxFeatures, len(items))
		return fs
	}
	fs.count = len(items)
	fs.names = make([]string, len(items))
	fs.lines = make([]int, len(items))
	bounds := make([][2]float64, len(items))
	fs.ok = true
	for i, item := range items {
		ipath := index(fpath, i)
		name, nameLine, b, ok := d.variable(item, ipath)
		if name != "" {
			if j := fs.find(name); j >= 0 {
				d.errorf(nameLine, join(ipath, "field"), "%q is also features[%d].field (line %d); the features must be distinct", name, j, fs.lines[j])
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
func (d *decoder) target(m *mapping, path string, required bool) (string, int, [2]float64, bool) {
	if !m.has("target") {
		if required {
			d.errorf(m.line, join(path, "target"), "required for kind regression: the field to predict, {field: name, bounds: [lo, hi]}")
		}
		return "", 0, [2]float64{}, false
	}
	return d.variable(m.values["target"], join(path, "target"))
}

// variable reads one feature or the target, {field: name, bounds: [lo, hi]}
// at path. It returns the field (or "" when it is invalid) and its line
// even when the bounds are invalid, so that the field's other checks still
// run; ok reports whether both are valid.
func (d *decoder) variable(n *yaml.Node, path string) (name string, line int, b [2]float64, ok bool) {
	if r := resolve(n); r == nil || r.Kind != yaml.MappingNode {
		line := 0
		if n != nil {
			line = n.Line
		}
		d.errorf(line, path, "must be {field: name, bounds: [lo, hi]}, got %s", describe(n))
		return "", 0, b, false
	}
	vm := d.mappingOf(n, path, variableKeys, nil)
	if vm == nil {
		return "", 0, b, false // unreachable: n is a mapping
	}
	ok = true
	if v, l, good := d.str(vm, "field"); good {
		if strings.TrimSpace(v) == "" {
			d.errorf(l, join(path, "field"), "must name an event field")
			ok = false
		} else {
			name, line = v, l
		}
	} else {
		if !vm.has("field") {
			d.errorf(vm.line, join(path, "field"), "required: the event field, whose values must be numbers")
		}
		ok = false
	}
	if !vm.has("bounds") {
		d.errorf(vm.line, join(path, "bounds"), "required: [lo, hi], the range values are clamped to and mapped to [−1, 1] from")
		return name, line, b, false
	}
	b, good := d.bounds(vm)
	return name, line, b, ok && good
}

// lambda reads the ridge λ of methods ssp (>= 0, default 0) and ops (> 0,
// required), and reports it with any other method.
func (d *decoder) lambda(m *mapping, path, method string, isReg bool) float64 {
	lpath := join(path, "lambda")
	if !m.has("lambda") {
		if isReg && method == MethodOPS {
			d.errorf(m.line, lpath, "required for method ops: the ridge λ > 0 (the posterior sample's privacy needs λ + λ_min(XᵀX) above a floor set by epsilon, delta and the number of features; ops raises λ to that floor when the private λ_min bound falls short; adaops chooses λ itself)")
		}
		return 0
	}
	if method != "" && method != MethodSSP && method != MethodOPS {
		hint := " (it chooses λ from a private lower bound on λ_min(XᵀX))"
		if method == MethodPCLS {
			hint = " (it fits the selected model with adassp, which chooses λ from a private lower bound on λ_min(XᵀX))"
		}
		d.errorf(m.values["lambda"].Line, lpath, "is only used with method ssp or ops, not %s%s", method, hint)
		return 0
	}
	v, line, ok := d.number(m, "lambda")
	if !ok {
		return 0
	}
	switch {
	case !finite(v) || v < 0:
		d.errorf(line, lpath, "must be finite and >= 0, got %s", fmtFloat(v))
		return 0
	case v == 0 && method == MethodOPS:
		d.errorf(line, lpath, "must be > 0 with method ops: the posterior sample's privacy needs λ + λ_min(XᵀX) above a floor set by epsilon, delta and the number of features; ops raises λ to that floor when the private λ_min bound falls short (adaops chooses λ itself)")
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
func (d *decoder) rho(m *mapping, path, method string, isReg bool) float64 {
	rpath := join(path, "rho")
	if !m.has("rho") {
		if isReg && usesRho(method) {
			return DefaultRho
		}
		return 0
	}
	if method != "" && !usesRho(method) {
		d.errorf(m.values["rho"].Line, rpath, "is only used with method adassp, adaops or pcls, not %s (its λ is given, not chosen from a private bound)", method)
		return 0
	}
	v, line, ok := d.number(m, "rho")
	if !ok {
		return 0
	}
	if !(v > 0 && v < 1) { // also true for NaN
		d.errorf(line, rpath, "must be in (0, 1), the probability that the private lower bound on λ_min(XᵀX) fails, got %s", fmtFloat(v))
		return 0
	}
	return v
}

// pcls reads the keys of method pcls: selection, radius, penalty,
// selection_share, and exactly one of max_support and supports; it reports
// them with any other method.
func (d *decoder) pcls(m *mapping, path, method string, isReg bool, feats featureSet, r *Release) {
	if method != "" && method != MethodPCLS {
		for _, key := range pclsKeys {
			if m.has(key) {
				d.errorf(m.values[key].Line, join(path, key), "is only used with method pcls, not %s", method)
			}
		}
		return
	}
	store := isReg && method == MethodPCLS
	required := func(key, msg string) {
		if store && !m.has(key) {
			d.errorf(m.line, join(path, key), "required for method pcls: %s", msg)
		}
	}

	selection := SelectionExponential
	if v, line, ok := d.str(m, "selection"); ok {
		if !contains(selections, v) {
			d.errorf(line, join(path, "selection"), "%q is not one of %s%s", v, strings.Join(selections, ", "), didYouMean(v, selections))
		} else {
			selection = v
		}
	}
	required("radius", "r > 0, the ℓ1 radius of the coefficients on the scaled problem (features and target mapped to [−1, 1]); the selection's noise grows as (1 + r)²")
	var radius float64
	if v, line, ok := d.number(m, "radius"); ok {
		if !finite(v) || v <= 0 {
			d.errorf(line, join(path, "radius"), "must be finite and > 0, got %s", fmtFloat(v))
		} else {
			radius = v
		}
	}
	required("penalty", "pen >= 0, added to a candidate model's score per selected feature")
	var penalty float64
	if v, line, ok := d.number(m, "penalty"); ok {
		if !finite(v) || v < 0 {
			d.errorf(line, join(path, "penalty"), "must be finite and >= 0, got %s", fmtFloat(v))
		} else {
			penalty = v
		}
	}
	share := DefaultSelectionShare
	if v, line, ok := d.number(m, "selection_share"); ok {
		if !(v > 0 && v < 1) { // also true for NaN
			d.errorf(line, join(path, "selection_share"), "must be in (0, 1), the share of epsilon spent on selecting the model (the rest releases its coefficients), got %s", fmtFloat(v))
		} else {
			share = v
		}
	}

	hasMax, hasSupports := m.has("max_support"), m.has("supports")
	switch {
	case hasMax && hasSupports:
		d.errorf(m.values["supports"].Line, join(path, "supports"), "cannot be given together with max_support (line %d): both set the candidate models; give exactly one", m.values["max_support"].Line)
	case store && !hasMax && !hasSupports:
		d.errorf(m.line, join(path, "max_support"), "required for method pcls (or supports instead): the most features in a candidate model; give exactly one of max_support and supports")
	}
	maxSupport := d.maxSupport(m, path, feats)
	supports := d.supports(m, path, feats)
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
func (d *decoder) maxSupport(m *mapping, path string, feats featureSet) int {
	v, line, ok := d.integer(m, "max_support")
	if !ok {
		return 0
	}
	mpath := join(path, "max_support")
	switch {
	case v < 1:
		d.errorf(line, mpath, "must be >= 1, got %d", v)
		return 0
	case feats.count == 0:
		return v // the features are invalid, and reported
	case v > feats.count:
		d.errorf(line, mpath, "must be in 1..%d (the number of features), got %d", feats.count, v)
		return 0
	}
	if n := candidateModels(feats.count, v); n.Cmp(big.NewInt(MaxRegressionCandidates)) > 0 {
		most := 1
		for most < feats.count && candidateModels(feats.count, most+1).Cmp(big.NewInt(MaxRegressionCandidates)) <= 0 {
			most++
		}
		d.errorf(line, mpath, "%d makes %s candidate models (every subset of 1 to %d of the %d features), more than %d; use max_support: %d or less, or list the candidates in supports",
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
func (d *decoder) supports(m *mapping, path string, feats featureSet) [][]string {
	spath := join(path, "supports")
	items, line, ok := d.list(m, "supports")
	if !ok {
		return nil
	}
	if len(items) < 1 || len(items) > MaxRegressionCandidates {
		d.errorf(line, spath, "must list 1 to %d candidate models, got %d", MaxRegressionCandidates, len(items))
		return nil
	}
	type seenAt struct{ index, line int }
	seen := map[string]seenAt{} // canonical set -> first support listing it
	out := make([][]string, 0, len(items))
	ok = true
	for i, item := range items {
		ipath := index(spath, i)
		names, good := d.support(item, ipath, i, feats)
		if !good {
			ok = false
			continue
		}
		key := supportKey(names)
		if first, dup := seen[key]; dup {
			d.errorf(item.Line, ipath, "is the same model as supports[%d] (line %d); each candidate must be listed once", first.index, first.line)
			ok = false
			continue
		}
		seen[key] = seenAt{i, item.Line}
		out = append(out, names)
	}
	if !ok {
		return nil
	}
	return out
}

// support reads supports[i], at path: one candidate model, a non-empty
// list of distinct feature names.
func (d *decoder) support(item *yaml.Node, path string, i int, feats featureSet) ([]string, bool) {
	ri := resolve(item)
	if ri == nil || ri.Kind != yaml.SequenceNode {
		d.errorf(item.Line, path, "must be a list of feature names, e.g. [%s], got %s", exampleSupport(feats), describe(item))
		return nil, false
	}
	if len(ri.Content) == 0 {
		d.errorf(item.Line, path, "must not be empty: a candidate model has at least one feature")
		return nil, false
	}
	names := make([]string, 0, len(ri.Content))
	at := map[string]int{} // name -> its position in the list
	ok := true
	for j, n := range ri.Content {
		npath := index(path, j)
		rn := resolve(n)
		if rn == nil || rn.Kind != yaml.ScalarNode || isNull(rn) {
			d.errorf(n.Line, npath, "must be a feature name, got %s", describe(n))
			ok = false
			continue
		}
		name := rn.Value
		if feats.ok && feats.find(name) < 0 {
			d.errorf(n.Line, npath, "%q is not one of the features (%s)%s", name, strings.Join(feats.names, ", "), didYouMean(name, feats.names))
			ok = false
			continue
		}
		if k, dup := at[name]; dup {
			d.errorf(n.Line, npath, "%q is also supports[%d][%d]; a model lists each feature once", name, i, k)
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

// regressionPrivacy reads the privacy parameters of a regression release:
// epsilon, and delta, which every method needs. There is no noise key: the
// method decides the noise, so Noise is "".
func (d *decoder) regressionPrivacy(m *mapping, path string, r *Release) {
	r.Noise = ""
	if m.has("noise") {
		d.errorf(m.values["noise"].Line, join(path, "noise"), regressionNoiseMsg)
	}
	if v, ok := d.epsilon(m); ok {
		r.Epsilon = v
	}
	if !m.has("delta") {
		d.errorf(m.line, join(path, "delta"), "required for kind regression: a value in (0, 1); every method is (ε, δ)-DP")
	} else if v, ok := d.delta(m); ok {
		r.Delta = v
	}
}
