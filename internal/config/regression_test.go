package config_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/regression"
)

// inlineFeatures returns n features f0..f(n-1), each with bounds [0, 1],
// as a YAML flow list, with the names and bounds they decode to.
func inlineFeatures(n int) (string, []string, [][2]float64) {
	items := make([]string, n)
	names := make([]string, n)
	bounds := make([][2]float64, n)
	for i := range items {
		names[i] = fmt.Sprintf("f%d", i)
		items[i] = fmt.Sprintf("{field: %s, bounds: [0, 1]}", names[i])
		bounds[i] = [2]float64{0, 1}
	}
	return "[" + strings.Join(items, ", ") + "]", names, bounds
}

// subsets returns the first n non-empty subsets of the d features f0..,
// in the order of their bit masks 1, 2, 3, ..., as a YAML flow list; all
// are distinct sets. d must be small enough for n < 2^d.
func subsets(d, n int) string {
	items := make([]string, 0, n)
	for mask := 1; len(items) < n; mask++ {
		var names []string
		for i := range d {
			if mask&(1<<i) != 0 {
				names = append(names, fmt.Sprintf("f%d", i))
			}
		}
		items = append(items, "["+strings.Join(names, ", ")+"]")
	}
	return "[" + strings.Join(items, ", ") + "]"
}

var (
	features13, names13, bounds13 = inlineFeatures(13)
	features64, names64, bounds64 = inlineFeatures(64)
	features65, _, _              = inlineFeatures(65)
)

// goodRegressions are valid regression releases with the Release each must
// decode to. The expected values are written from the YAML and the
// defaults of the brief (intercept true, rho 0.05, lambda 0, selection
// exponential, selection_share 0.5) by hand; Line is 10, where the
// release starts in withRelease.
var goodRegressions = []struct {
	name string
	yaml string
	want config.Release
}{
	{
		name: "adassp, the block form of the brief, with defaults",
		yaml: `      - name: mpg_fit
        kind: regression
        method: adassp
        features:
          - {field: horsepower, bounds: [0, 250]}
          - {field: weight, bounds: [1500, 5500]}
        target: {field: mpg, bounds: [5, 50]}
        epsilon: 1
        delta: 1e-6
`,
		want: config.Release{Name: "mpg_fit", Kind: "regression", Params: &regression.Config{Method: regression.MethodAdaSSP, Features: []string{"horsepower", "weight"}, FeatureBounds: [][2]float64{{0, 250}, {1500, 5500}}, Target: "mpg", TargetBounds: [2]float64{5, 50}, Intercept: true, Rho: 0.05}, Epsilon: 1, Delta: 1e-6, Line: 10},
	},
	{
		name: "ssp without intercept, lambda default 0",
		yaml: "      - {name: s, kind: regression, method: ssp, features: [{field: x, bounds: [-1, 1]}], target: {field: y, bounds: [0, 10]}, intercept: false, epsilon: 0.5, delta: 1e-9}\n",
		want: config.Release{Name: "s", Kind: "regression", Params: &regression.Config{Method: regression.MethodSSP, Features: []string{"x"}, FeatureBounds: [][2]float64{{-1, 1}}, Target: "y", TargetBounds: [2]float64{0, 10}}, Epsilon: 0.5, Delta: 1e-9, Line: 10},
	},
	{
		name: "ssp with lambda",
		yaml: "      - {name: s, kind: regression, method: ssp, features: [{field: x, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, lambda: 2.5, epsilon: 0.5, delta: 1e-9}\n",
		want: config.Release{Name: "s", Kind: "regression", Params: &regression.Config{Method: regression.MethodSSP, Features: []string{"x"}, FeatureBounds: [][2]float64{{0, 1}}, Target: "y", TargetBounds: [2]float64{0, 1}, Intercept: true, Lambda: 2.5}, Epsilon: 0.5, Delta: 1e-9, Line: 10},
	},
	{
		name: "ops with lambda",
		yaml: "      - {name: o, kind: regression, method: ops, features: [{field: a, bounds: [0, 2]}, {field: b, bounds: [-3, 3]}], target: {field: y, bounds: [1, 2]}, lambda: 1, epsilon: 2, delta: 1e-6}\n",
		want: config.Release{Name: "o", Kind: "regression", Params: &regression.Config{Method: regression.MethodOPS, Features: []string{"a", "b"}, FeatureBounds: [][2]float64{{0, 2}, {-3, 3}}, Target: "y", TargetBounds: [2]float64{1, 2}, Intercept: true, Lambda: 1}, Epsilon: 2, Delta: 1e-6, Line: 10},
	},
	{
		name: "adaops with rho and an explicit intercept",
		yaml: "      - {name: ao, kind: regression, method: adaops, features: [{field: a, bounds: [0, 2]}], target: {field: y, bounds: [1, 2]}, intercept: true, rho: 0.1, epsilon: 2, delta: 1e-6}\n",
		want: config.Release{Name: "ao", Kind: "regression", Params: &regression.Config{Method: regression.MethodAdaOPS, Features: []string{"a"}, FeatureBounds: [][2]float64{{0, 2}}, Target: "y", TargetBounds: [2]float64{1, 2}, Intercept: true, Rho: 0.1}, Epsilon: 2, Delta: 1e-6, Line: 10},
	},
	{
		name: "pcls with max_support and defaults",
		yaml: `      - name: mpg_sel
        kind: regression
        method: pcls
        features:
          - {field: horsepower, bounds: [0, 250]}
          - {field: weight, bounds: [1500, 5500]}
          - {field: acceleration, bounds: [8, 25]}
        target: {field: mpg, bounds: [5, 50]}
        radius: 2
        penalty: 0.5
        max_support: 3
        epsilon: 1
        delta: 1e-6
`,
		want: config.Release{Name: "mpg_sel", Kind: "regression", Params: &regression.Config{Method: regression.MethodPCLS, Features: []string{"horsepower", "weight", "acceleration"}, FeatureBounds: [][2]float64{{0, 250}, {1500, 5500}, {8, 25}}, Target: "mpg", TargetBounds: [2]float64{5, 50}, Intercept: true, Rho: 0.05, Selection: regression.SelectionExponential, Radius: 2, Penalty: 0.5, MaxSupport: 3, SelectionShare: 0.5}, Epsilon: 1, Delta: 1e-6, Line: 10},
	},
	{
		name: "pcls with supports, noisy_min and every setting",
		yaml: `      - name: mpg_sel
        kind: regression
        method: pcls
        features:
          - {field: horsepower, bounds: [0, 250]}
          - {field: weight, bounds: [1500, 5500]}
        target: {field: mpg, bounds: [5, 50]}
        intercept: false
        rho: 0.01
        selection: noisy_min
        radius: 0.5
        penalty: 0
        supports: [[horsepower], [weight, horsepower]]
        selection_share: 0.25
        epsilon: 1
        delta: 1e-6
`,
		want: config.Release{Name: "mpg_sel", Kind: "regression", Params: &regression.Config{Method: regression.MethodPCLS, Features: []string{"horsepower", "weight"}, FeatureBounds: [][2]float64{{0, 250}, {1500, 5500}}, Target: "mpg", TargetBounds: [2]float64{5, 50}, Rho: 0.01, Selection: regression.SelectionNoisyMin, Radius: 0.5, Supports: [][]string{{"horsepower"}, {"weight", "horsepower"}}, SelectionShare: 0.25}, Epsilon: 1, Delta: 1e-6, Line: 10},
	},
	{
		// Σ C(13, k) for k = 1..6 is half of the 2¹³ subsets (the sizes
		// 0..6 mirror 7..13) less the empty one: 4095 ≤ 4096.
		name: "pcls with 4095 candidates from max_support",
		yaml: "      - {name: big, kind: regression, method: pcls, features: " + features13 + ", target: {field: y, bounds: [0, 1]}, radius: 1, penalty: 0.1, max_support: 6, epsilon: 1, delta: 1e-6}\n",
		want: config.Release{Name: "big", Kind: "regression", Params: &regression.Config{Method: regression.MethodPCLS, Features: names13, FeatureBounds: bounds13, Target: "y", TargetBounds: [2]float64{0, 1}, Intercept: true, Rho: 0.05, Selection: regression.SelectionExponential, Radius: 1, Penalty: 0.1, MaxSupport: 6, SelectionShare: 0.5}, Epsilon: 1, Delta: 1e-6, Line: 10},
	},
	{
		name: "64 features, the most",
		yaml: "      - {name: wide, kind: regression, method: ssp, features: " + features64 + ", target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-6}\n",
		want: config.Release{Name: "wide", Kind: "regression", Params: &regression.Config{Method: regression.MethodSSP, Features: names64, FeatureBounds: bounds64, Target: "y", TargetBounds: [2]float64{0, 1}, Intercept: true}, Epsilon: 1, Delta: 1e-6, Line: 10},
	},
}

func TestRegressionValues(t *testing.T) {
	for _, tt := range goodRegressions {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(withRelease(tt.yaml)), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Streams[0].Releases[0]
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("release =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestRegressionSupportsLimit checks the bound on listed candidates at
// and one past regression.MaxRegressionCandidates.
func TestRegressionSupportsLimit(t *testing.T) {
	rel := func(n int) string {
		return "      - {name: r, kind: regression, method: pcls, features: " + features13 +
			", target: {field: y, bounds: [0, 1]}, radius: 1, penalty: 0, supports: " + subsets(13, n) + ", epsilon: 1, delta: 1e-6}\n"
	}
	cfg, err := config.Parse([]byte(withRelease(rel(4096))), "p.yaml")
	if err != nil {
		t.Fatalf("4096 supports: %v", err)
	}
	r := cfg.Streams[0].Releases[0].Params.(*regression.Config)
	if len(r.Supports) != 4096 || !reflect.DeepEqual(r.Supports[2], []string{"f0", "f1"}) || r.MaxSupport != 0 {
		t.Errorf("4096 supports: got %d, third %v, max_support %d", len(r.Supports), r.Supports[2], r.MaxSupport)
	}
	_, err = config.Parse([]byte(withRelease(rel(4097))), "p.yaml")
	checkErrors(t, err, "p.yaml", []want{{10, "streams[0].releases[0].supports", "must list 1 to 4096 candidate models, got 4097"}})
}

// TestRegressionAnchors checks that features and a target can be shared
// between releases with YAML anchors, and that a merged mapping works for
// a target.
func TestRegressionAnchors(t *testing.T) {
	src := withRelease(`      - {name: a, kind: regression, method: adassp, features: &fs [{field: x, bounds: [0, 1]}, {field: z, bounds: [2, 3]}], target: &y {field: y, bounds: [0, 9]}, epsilon: 1, delta: 1e-6}
      - {name: b, kind: regression, method: ops, features: *fs, target: {<<: *y, bounds: [1, 2]}, lambda: 3, epsilon: 1, delta: 1e-6}
`)
	cfg, err := config.Parse([]byte(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs := []*regression.Config{cfg.Streams[0].Releases[0].Params.(*regression.Config), cfg.Streams[0].Releases[1].Params.(*regression.Config)}
	checks := []struct {
		name      string
		got, want any
	}{
		{"b.Features", rs[1].Features, []string{"x", "z"}},
		{"b.FeatureBounds", rs[1].FeatureBounds, [][2]float64{{0, 1}, {2, 3}}},
		{"a.TargetBounds", rs[0].TargetBounds, [2]float64{0, 9}},
		{"b.Target", rs[1].Target, "y"},
		{"b.TargetBounds", rs[1].TargetBounds, [2]float64{1, 2}},
		{"b.Lambda", rs[1].Lambda, 3.0},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestRegressionErrors covers the checks of the regression keys that the
// fixture does not. The release starts on line 10; the privacy unit
// rider_id is on line 5.
func TestRegressionErrors(t *testing.T) {
	const rel = "streams[0].releases[0]"
	// xy are valid features and target, for cases that change one thing.
	const xy = "features: [{field: x, bounds: [0, 1]}, {field: z, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}"
	tests := []struct {
		name  string
		rel   string
		wants []want
	}{
		{"nothing but the kind",
			"      - {name: r, kind: regression, epsilon: 1}\n",
			[]want{
				{10, rel + ".method", "required for kind regression: one of ssp, adassp, ops, adaops, pcls"},
				{10, rel + ".features", "required for kind regression: the fields to fit on, 1 to 64 of {field: name, bounds: [lo, hi]}"},
				{10, rel + ".target", "required for kind regression: the field to predict, {field: name, bounds: [lo, hi]}"},
				{10, rel + ".delta", "required for kind regression: a value in (0, 1); every method is (ε, δ)-DP"},
			}},
		{"misspelt method",
			"      - {name: r, kind: regression, method: adasp, " + xy + ", epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".method", `"adasp" is not one of ssp, adassp, ops, adaops, pcls (did you mean "adassp"?)`}}},
		{"noise",
			"      - {name: r, kind: regression, method: ssp, " + xy + ", noise: gaussian, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".noise", "must not be given for kind regression: its method fixes the noise (Gaussian noise on the sufficient statistics for ssp, adassp and pcls, a Gaussian posterior sample for ops and adaops), and every method is (ε, δ)-DP"}}},
		{"delta 0",
			"      - {name: r, kind: regression, method: ssp, " + xy + ", epsilon: 1, delta: 0}\n",
			[]want{{10, rel + ".delta", "must be in (0, 1), got 0"}}},
		{"keys of other kinds",
			"      - {name: r, kind: regression, method: ssp, " + xy + ", field: y, bounds: [0, 1], fields: [x], bins: 3, terms: 4, categories: [a, b], max_per_bin: 1, samples: 5, epsilon: 1, delta: 1e-6}\n",
			[]want{
				{10, rel + ".field", "is only used with kind density, histogram, mean, quantiles, randomized_response, sum or variance, not regression (name the field to predict in target and the fields to fit on in features, each with its bounds)"},
				{10, rel + ".bounds", "is only used with kind density, histogram, mean, quantiles, sum or variance, not regression (each feature and the target have their own: {field: name, bounds: [lo, hi]})"},
				{10, rel + ".fields", "is only used with kind histogram, not regression (list the fields to fit on in features)"},
				{10, rel + ".bins", "is only used with kind histogram, not regression"},
				{10, rel + ".terms", "is only used with kind density, not regression"},
				{10, rel + ".categories", "is only used with kind randomized_response, not regression"},
				{10, rel + ".max_per_bin", "is only used with kind histogram or randomized_response, not regression"},
				{10, rel + ".samples", "is only used with kind density or histogram, not regression"},
			}},
		{"regression keys on a sum",
			"      - {name: s, kind: sum, field: f, bounds: [0, 1], method: ssp, target: {field: y, bounds: [0, 1]}, radius: 1, epsilon: 1}\n",
			[]want{
				{10, rel + ".method", "is only used with kind regression, not sum"},
				{10, rel + ".target", "is only used with kind prediction or regression, not sum"},
				{10, rel + ".radius", "is only used with kind regression, not sum"},
			}},
		// A kind's keys are its spec's: with an unknown kind only the kind
		// (and the keys every release has) is reported, and the kind's keys
		// once it is fixed.
		{"unknown kind: the kind is reported",
			"      - {name: r, kind: regresion, method: foo, features: [], lambda: -1, epsilon: 1}\n",
			[]want{
				{10, rel + ".kind", `"regresion" is not one of count, count_units, density, histogram, mean, prediction, quantiles, randomized_response, regression, select_keys, sum, variance (did you mean "regression"?)`},
			}},
		{"65 features",
			"      - {name: r, kind: regression, method: ssp, features: " + features65 + ", target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".features", "must list 1 to 64 features, got 65"}}},
		{"features not a list",
			"      - {name: r, kind: regression, method: ssp, features: {field: x, bounds: [0, 1]}, target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".features", "must be a list, got a mapping"}}},
		{"a feature given as a name",
			"      - {name: r, kind: regression, method: ssp, features: [x], target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".features[0]", `must be {field: name, bounds: [lo, hi]}, got string "x"`}}},
		{"a feature without bounds, one with a misspelt key",
			"      - {name: r, kind: regression, method: ssp, features: [{field: x}, {feild: z, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-6}\n",
			[]want{
				{10, rel + ".features[0].bounds", "required: [lo, hi], the range values are clamped to and mapped to [−1, 1] from"},
				{10, rel + ".features[1]", `unknown field "feild" (did you mean "field"?)`},
				{10, rel + ".features[1].field", "required: the event field, whose values must be numbers"},
			}},
		{"blank feature field, bad bounds",
			"      - {name: r, kind: regression, method: ssp, features: [{field: \" \", bounds: [0, 1]}, {field: z, bounds: [1, .inf]}], target: {field: y, bounds: [2, 2]}, epsilon: 1, delta: 1e-6}\n",
			[]want{
				{10, rel + ".features[0].field", "must name an event field"},
				{10, rel + ".features[1].bounds", "must be finite, got +Inf"},
				{10, rel + ".target.bounds", "lo and hi are equal (2); need lo < hi"},
			}},
		{"target not a mapping",
			"      - {name: r, kind: regression, method: ssp, features: [{field: x, bounds: [0, 1]}], target: y, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".target", `must be {field: name, bounds: [lo, hi]}, got string "y"`}}},
		{"target is a feature, on its own line",
			"      - name: r\n        kind: regression\n        method: ssp\n        features:\n          - {field: x, bounds: [0, 1]}\n          - {field: y, bounds: [0, 1]}\n        target: {field: y, bounds: [0, 5]}\n        epsilon: 1\n        delta: 1e-6\n",
			[]want{{16, rel + ".target.field", `"y" is also features[1].field (line 15); the target cannot be a feature, or the fit would predict it from itself`}}},
		{"target is a feature whose bounds are invalid",
			"      - {name: r, kind: regression, method: ssp, features: [{field: y, bounds: [1, 0]}], target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-6}\n",
			[]want{
				{10, rel + ".features[0].bounds", "reversed: lo 1 > hi 0; write [0, 1]"},
				{10, rel + ".target.field", `"y" is also features[0].field (line 10)`},
			}},
		{"privacy unit as a feature and as the target",
			"      - name: r\n        kind: regression\n        method: ssp\n        features: [{field: x, bounds: [0, 1]}, {field: rider_id, bounds: [0, 1]}]\n        target: {field: rider_id, bounds: [0, 1]}\n        epsilon: 1\n        delta: 1e-6\n",
			[]want{
				{13, rel + ".features[1].field", `"rider_id" is the stream's privacy unit (line 5); a release cannot aggregate the identifier it protects`},
				{14, rel + ".target.field", `"rider_id" is also features[1].field (line 13)`},
				{14, rel + ".target.field", `"rider_id" is the stream's privacy unit (line 5)`},
			}},
		{"intercept not a boolean",
			"      - {name: r, kind: regression, method: ssp, " + xy + ", intercept: yes, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".intercept", `must be true or false, got string "yes"`}}},
		{"intercept a list",
			"      - {name: r, kind: regression, method: ssp, " + xy + ", intercept: [true], epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".intercept", "must be true or false, got a list"}}},
		{"lambda with adassp",
			"      - {name: r, kind: regression, method: adassp, " + xy + ", lambda: 1, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".lambda", "is only used with method ssp or ops, not adassp (it chooses λ from a private lower bound on λ_min(XᵀX))"}}},
		{"lambda with pcls",
			"      - {name: r, kind: regression, method: pcls, " + xy + ", lambda: 1, radius: 1, penalty: 0, max_support: 1, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".lambda", "is only used with method ssp or ops, not pcls (it fits the selected model with adassp, which chooses λ from a private lower bound on λ_min(XᵀX))"}}},
		{"lambda not finite for ssp",
			"      - {name: r, kind: regression, method: ssp, " + xy + ", lambda: .inf, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".lambda", "must be finite and >= 0, got +Inf"}}},
		{"ops without lambda",
			"      - {name: r, kind: regression, method: ops, " + xy + ", epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".lambda", "required for method ops: the ridge λ > 0 (the posterior sample's privacy needs λ + λ_min(XᵀX) above a floor set by epsilon, delta and the number of features; ops raises λ to that floor when the private λ_min bound falls short; adaops chooses λ itself)"}}},
		{"ops with lambda 0",
			"      - {name: r, kind: regression, method: ops, " + xy + ", lambda: 0, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".lambda", "must be > 0 with method ops: the posterior sample's privacy needs λ + λ_min(XᵀX) above a floor set by epsilon, delta and the number of features; ops raises λ to that floor when the private λ_min bound falls short (adaops chooses λ itself)"}}},
		{"rho with ssp",
			"      - {name: r, kind: regression, method: ssp, " + xy + ", rho: 0.1, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".rho", "is only used with method adassp, adaops or pcls, not ssp (its λ is given, not chosen from a private bound)"}}},
		{"rho 1",
			"      - {name: r, kind: regression, method: adaops, " + xy + ", rho: 1, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".rho", "must be in (0, 1), the probability that the private lower bound on λ_min(XᵀX) fails, got 1"}}},
		{"pcls keys with adassp",
			"      - {name: r, kind: regression, method: adassp, " + xy + ", selection: exponential, max_support: 1, supports: [[x]], selection_share: 0.5, epsilon: 1, delta: 1e-6}\n",
			[]want{
				{10, rel + ".selection", "is only used with method pcls, not adassp"},
				{10, rel + ".max_support", "is only used with method pcls, not adassp"},
				{10, rel + ".supports", "is only used with method pcls, not adassp"},
				{10, rel + ".selection_share", "is only used with method pcls, not adassp"},
			}},
		{"pcls without its required keys",
			"      - {name: r, kind: regression, method: pcls, " + xy + ", epsilon: 1, delta: 1e-6}\n",
			[]want{
				{10, rel + ".radius", "required for method pcls: r > 0, the ℓ1 radius of the coefficients on the scaled problem (features and target mapped to [−1, 1]); the selection's noise grows as (1 + r)²"},
				{10, rel + ".penalty", "required for method pcls: pen >= 0, added to a candidate model's score per selected feature"},
				{10, rel + ".max_support", "required for method pcls (or supports instead): the most features in a candidate model; give exactly one of max_support and supports"},
			}},
		{"pcls values out of range",
			"      - {name: r, kind: regression, method: pcls, " + xy + ", selection: exponental, radius: 0, penalty: -1, selection_share: 1, max_support: 1, epsilon: 1, delta: 1e-6}\n",
			[]want{
				{10, rel + ".selection", `"exponental" is not one of exponential, noisy_min (did you mean "exponential"?)`},
				{10, rel + ".radius", "must be finite and > 0, got 0"},
				{10, rel + ".penalty", "must be finite and >= 0, got -1"},
				{10, rel + ".selection_share", "must be in (0, 1), the share of epsilon spent on selecting the model (the rest releases its coefficients), got 1"},
			}},
		{"both max_support and supports",
			"      - name: r\n        kind: regression\n        method: pcls\n        features: [{field: x, bounds: [0, 1]}]\n        target: {field: y, bounds: [0, 1]}\n        radius: 1\n        penalty: 0\n        max_support: 1\n        supports: [[x]]\n        epsilon: 1\n        delta: 1e-6\n",
			[]want{{18, rel + ".supports", "cannot be given together with max_support (line 17): both set the candidate models; give exactly one"}}},
		{"max_support 0",
			"      - {name: r, kind: regression, method: pcls, " + xy + ", radius: 1, penalty: 0, max_support: 0, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".max_support", "must be >= 1, got 0"}}},
		{"max_support above the number of features",
			"      - {name: r, kind: regression, method: pcls, " + xy + ", radius: 1, penalty: 0, max_support: 3, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".max_support", "must be in 1..2 (the number of features), got 3"}}},
		{
			// Σ C(13, k) for k = 1..7 = 4095 + C(13, 7) = 4095 + 1716.
			"max_support one past the candidate limit",
			"      - {name: r, kind: regression, method: pcls, features: " + features13 + ", target: {field: y, bounds: [0, 1]}, radius: 1, penalty: 0, max_support: 7, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".max_support", "7 makes 5811 candidate models (every subset of 1 to 7 of the 13 features), more than 4096; use max_support: 6 or less, or list the candidates in supports"}}},
		{
			// 64 + C(64, 2) = 64 + 2016 = 2080 candidates for 2; adding
			// C(64, 3) = 41664 makes 43744.
			"max_support 3 of 64 features",
			"      - {name: r, kind: regression, method: pcls, features: " + features64 + ", target: {field: y, bounds: [0, 1]}, radius: 1, penalty: 0, max_support: 3, epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".max_support", "3 makes 43744 candidate models (every subset of 1 to 3 of the 64 features), more than 4096; use max_support: 2 or less"}}},
		{"bad supports",
			"      - {name: r, kind: regression, method: pcls, " + xy + ", radius: 1, penalty: 0, supports: [[], x, [zz], [x, x], [x, z], [z, x], [~]], epsilon: 1, delta: 1e-6}\n",
			[]want{
				{10, rel + ".supports[0]", "must not be empty: a candidate model has at least one feature"},
				{10, rel + ".supports[1]", `must be a list of feature names, e.g. [x, z], got string "x"`},
				{10, rel + ".supports[2][0]", `"zz" is not one of the features (x, z) (did you mean "z"?)`},
				{10, rel + ".supports[3][1]", `"x" is also supports[3][0]; a model lists each feature once`},
				{10, rel + ".supports[5]", "is the same model as supports[4] (line 10); each candidate must be listed once"},
				{10, rel + ".supports[6][0]", "must be a feature name, got null"},
			}},
		{"empty supports",
			"      - {name: r, kind: regression, method: pcls, " + xy + ", radius: 1, penalty: 0, supports: [], epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".supports", "must list 1 to 4096 candidate models, got 0"}}},
		{"supports of invalid features are not checked against them",
			"      - {name: r, kind: regression, method: pcls, features: [{field: x, bounds: [1, 0]}], target: {field: y, bounds: [0, 1]}, radius: 1, penalty: 0, supports: [[x], [w]], epsilon: 1, delta: 1e-6}\n",
			[]want{{10, rel + ".features[0].bounds", "reversed"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(withRelease(tt.rel)), "p.yaml")
			checkErrors(t, err, "p.yaml", tt.wants)
		})
	}
}

// TestRegressionEventUnit checks that with event-level privacy a feature
// named "event" is an ordinary field.
func TestRegressionEventUnit(t *testing.T) {
	src := strings.Replace(withRelease("      - {name: r, kind: regression, method: ssp, features: [{field: event, bounds: [0, 1]}], target: {field: rider_id, bounds: [0, 1]}, epsilon: 1, delta: 1e-6}\n"),
		"privacy_unit: rider_id", "privacy_unit: event", 1)
	cfg, err := config.Parse([]byte(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Streams[0].Releases[0].Params.(*regression.Config); !reflect.DeepEqual(r.Features, []string{"event"}) || r.Target != "rider_id" {
		t.Errorf("Features %v Target %q, want [event] rider_id", r.Features, r.Target)
	}
}

// TestRegressionErrorString checks the whole text of regression errors:
// file:line: field path: message.
func TestRegressionErrorString(t *testing.T) {
	tests := []struct {
		rel  string
		want string
	}{
		{"      - {name: r, kind: regression, method: ssp, features: [{field: x, bounds: [0, 1]}, {field: x, bounds: [0, 2]}], target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-6}\n",
			`p.yaml:10: streams[0].releases[0].features[1].field: "x" is also features[0].field (line 10); the features must be distinct`},
		{"      - {name: r, kind: regression, method: ops, features: [{field: x, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, lambda: 1, noise: laplace, epsilon: 1, delta: 1e-6}\n",
			"p.yaml:10: streams[0].releases[0].noise: must not be given for kind regression: its method fixes the noise (Gaussian noise on the sufficient statistics for ssp, adassp and pcls, a Gaussian posterior sample for ops and adaops), and every method is (ε, δ)-DP"},
		{"      - {name: r, kind: regression, method: pcls, features: [{field: x, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, radius: 1, penalty: 0, supports: [[y]], epsilon: 1, delta: 1e-6}\n",
			`p.yaml:10: streams[0].releases[0].supports[0][0]: "y" is not one of the features (x)`},
	}
	for _, tt := range tests {
		_, err := config.Parse([]byte(withRelease(tt.rel)), "p.yaml")
		if err == nil || err.Error() != tt.want {
			t.Errorf("error = %v\nwant %s", err, tt.want)
		}
	}
}
