package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/regression"
	"github.com/dpstream/dpstream/mechanism/noise"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
)

// regressionConfig is a stream with a count release and the release
// %[3]s (a regression here), a contribution bound of %[1]d rows per unit
// and window, and a budget of ε = 10 at δ = %[2]s.
const regressionConfig = `
streams:
  - name: cars
    topic: cars.events
    format: json
    privacy_unit: car
    event_time: ts
    window: {size: 1h}
    contribution: {max_events_per_window: %[1]d}
    budget: {epsilon: 10, delta: %[2]s}
    releases:
      - {name: first, kind: count, epsilon: 0.5}
      - %[3]s
`

// buildRegression parses regressionConfig with release r and builds it.
func buildRegression(t *testing.T, l int, budgetDelta, r string) ([]Stream, string, error) {
	t.Helper()
	src := fmt.Sprintf(regressionConfig, l, budgetDelta, r)
	c, err := config.Parse([]byte(src), "reg.yaml")
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ps, err := Build(c)
	return ps, src, err
}

// lineOf returns the 1-based line of src that contains s (0 if none): the
// test's own count, to compare with the line an error names.
func lineOf(src, s string) int {
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	return 0
}

// TestBuildRegression builds one regression release per method from YAML
// and checks the plan against the configuration: the mechanism spec (the
// scaling bounds, the intercept, L, λ for ssp and ops, ρ for the adaptive
// methods, 0 where a method ignores it), the components in the documented
// release order, the charges (Mechanisms) and the recorded noise (Noise)
// matching the components one for one (the posterior sample of ops and
// adaops as an approx_dp charge with ε and δ and no scale), and the cost.
//
// Cost: the charge is what the accountant composes, so Cost must equal
// accountant.Cost of the Mechanisms at the stream's δ and fit the budget.
// With the stream's δ at least the release's, it must also be at most the
// release's ε: the Gaussian components are calibrated to (ε, δ) (ssp,
// adassp) or (ε/2, δ/3) (ops, adaops) through zCDP, and the approx_dp part
// adds ε/2 and 2δ/3, so converting at δ_B − 2δ/3 ≥ δ/3 gives at most ε.
// The accountant converts at finitely many Rényi orders, which can only
// make its ε larger than the calibration's; that is why the stream's δ
// here is 10× the release's (at equal δ the check measures the grid of
// orders, not the calibration).
func TestBuildRegression(t *testing.T) {
	feats := `features: [{field: hp, bounds: [0, 250]}, {field: weight, bounds: [1500, 5500]}], target: {field: mpg, bounds: [5, 50]}`
	wantFB := [][2]float64{{0, 250}, {1500, 5500}}
	wantTB := [2]float64{5, 50}
	tests := []struct {
		name      string
		l         int
		release   string
		method    mregression.Method
		eps, dlt  float64
		intercept bool
		lambda    float64
		rho       float64
		purposes  []string
	}{
		{"ssp with lambda", 2, `{name: r, kind: regression, method: ssp, ` + feats + `, lambda: 2.5, epsilon: 1, delta: 1e-6}`,
			mregression.MethodSSP, 1, 1e-6, true, 2.5, 0, []string{mregression.PurposeGram, mregression.PurposeXty}},
		{"adassp without intercept", 1, `{name: r, kind: regression, method: adassp, ` + feats + `, intercept: false, rho: 0.1, epsilon: 0.8, delta: 1e-7}`,
			mregression.MethodAdaSSP, 0.8, 1e-7, false, 0, 0.1, []string{mregression.PurposeLambdaMin, mregression.PurposeGram, mregression.PurposeXty}},
		{"ops with lambda", 3, `{name: r, kind: regression, method: ops, ` + feats + `, lambda: 4, epsilon: 2, delta: 1e-6}`,
			mregression.MethodOPS, 2, 1e-6, true, 4, 0, []string{mregression.PurposeLambdaMin, mregression.PurposeLipschitz, mregression.PurposePosteriorSample}},
		// rho not given: the default 0.05 (regression.DefaultRho, Wang 2018).
		{"adaops", 1, `{name: r, kind: regression, method: adaops, ` + feats + `, epsilon: 1, delta: 1e-6}`,
			mregression.MethodAdaOPS, 1, 1e-6, true, 0, 0.05, []string{mregression.PurposeLambdaMin, mregression.PurposeLipschitz, mregression.PurposePosteriorSample}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const budgetEps = 10.0
			budgetDelta := tc.dlt * 10
			ps, _, err := buildRegression(t, tc.l, fmt.Sprint(budgetDelta), tc.release)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if len(ps) != 1 || len(ps[0].Releases) != 2 {
				t.Fatalf("plan %+v, want one stream with the count and the regression", ps)
			}
			r := ps[0].Releases[1]
			rp, ok := r.Kind.(*regression.Plan)
			if !ok {
				t.Fatalf("release plan %T, want a regression plan", r.Kind)
			}
			if _, ok := ps[0].Releases[0].Kind.(*regression.Plan); ok {
				t.Errorf("the count release has a regression plan")
			}

			sp := rp.Cal.Spec
			if sp.Method != tc.method || sp.Epsilon != tc.eps || sp.Delta != tc.dlt || sp.MaxContributions != tc.l {
				t.Errorf("spec method %s ε %v δ %v L %d, want %s %v %v %d", sp.Method, sp.Epsilon, sp.Delta, sp.MaxContributions, tc.method, tc.eps, tc.dlt, tc.l)
			}
			if !slices.Equal(sp.Scaling.FeatureBounds, wantFB) || sp.Scaling.TargetBounds != wantTB || sp.Scaling.Intercept != tc.intercept {
				t.Errorf("scaling %+v, want features %v, target %v, intercept %v", sp.Scaling, wantFB, wantTB, tc.intercept)
			}
			if sp.Lambda != tc.lambda || sp.Rho != tc.rho {
				t.Errorf("spec λ %v ρ %v, want %v %v", sp.Lambda, sp.Rho, tc.lambda, tc.rho)
			}
			wantDim := 2
			if tc.intercept {
				wantDim = 3
			}
			if rp.Dim() != wantDim {
				t.Errorf("RegressionDim %d, want %d (2 features, intercept %v)", rp.Dim(), wantDim, tc.intercept)
			}

			comps := r.Kind.Components()
			var purposes []string
			for _, c := range comps {
				purposes = append(purposes, c.Purpose)
			}
			if !slices.Equal(purposes, tc.purposes) {
				t.Fatalf("components %v, want %v", purposes, tc.purposes)
			}
			if len(r.Mechanisms) != len(comps) || len(r.Noise) != len(comps) {
				t.Fatalf("%d charges and %d recorded noise components for %d components", len(r.Mechanisms), len(r.Noise), len(comps))
			}
			rho := 0.0
			for i, c := range comps {
				m, n := r.Mechanisms[i], r.Noise[i]
				if n.Purpose != c.Purpose || n.Mechanism != string(c.Noise) || n.Epsilon != c.Epsilon || n.Delta != c.Delta {
					t.Errorf("noise %d %+v does not record component %+v", i, n, c)
				}
				if c.Noise == noise.ApproxDP {
					// The posterior sample: (ε/2, 2δ/3) as a whole
					// (δ/3 for the sample, δ/3 for the released bounds).
					if c.Purpose != mregression.PurposePosteriorSample || !near(c.Epsilon, tc.eps/2) || !near(c.Delta, 2*tc.dlt/3) {
						t.Errorf("approx_dp component %+v, want the posterior sample with ε = %v, δ = %v", c, tc.eps/2, 2*tc.dlt/3)
					}
					want := accountant.Mechanism{Kind: accountant.KindApproxDP, Epsilon: c.Epsilon, Delta: c.Delta}
					if m != want {
						t.Errorf("charge %d %+v, want %+v", i, m, want)
					}
					if n.Scale != 0 || n.Sensitivity != 0 {
						t.Errorf("approx_dp noise %+v has a scale or sensitivity", n)
					}
					continue
				}
				if c.Noise != noise.DiscreteGaussian {
					t.Errorf("component %s: noise %s, want discrete_gaussian", c.Purpose, c.Noise)
				}
				want := accountant.Mechanism{Kind: string(c.Noise), Scale: c.Scale, Sensitivity: c.Sensitivity}
				if m != want || n.Scale != c.Scale || n.Sensitivity != c.Sensitivity {
					t.Errorf("charge %d %+v, noise %+v; want %+v from component %+v", i, m, n, want, c)
				}
				rho += c.Sensitivity * c.Sensitivity / (2 * c.Scale * c.Scale)
			}
			// The charged ρ = ΣΔ²/(2σ²) is the calibration's (the discrete
			// Gaussian's zCDP, CKS 2020 Thm. 4).
			if !near(rho, rp.Cal.Rho) {
				t.Errorf("charged zCDP ρ %v, calibration's %v", rho, rp.Cal.Rho)
			}

			cost, err := accountant.Cost(r.Mechanisms, budgetDelta)
			if err != nil {
				t.Fatal(err)
			}
			if r.Cost != cost {
				t.Errorf("Cost %v, accountant.Cost of the charges %v", r.Cost, cost)
			}
			if !(r.Cost > 0) || r.Cost > budgetEps {
				t.Errorf("Cost %v, want in (0, %v]", r.Cost, budgetEps)
			}
			if r.Cost > tc.eps*(1+1e-9) {
				t.Errorf("Cost %v at δ_B = %v exceeds the release's ε = %v (δ = %v)", r.Cost, budgetDelta, tc.eps, tc.dlt)
			}
			// The stream's per-window cost composes both releases.
			all := append(slices.Clone(ps[0].Releases[0].Mechanisms), r.Mechanisms...)
			if want, _ := accountant.Cost(all, budgetDelta); ps[0].PerWindow != want {
				t.Errorf("PerWindow %v, want accountant.Cost of both releases %v", ps[0].PerWindow, want)
			}
		})
	}
}

// near reports whether a and b agree to a relative 1e-12.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// TestBuildRegressionErrors: a regression release that cannot be
// calibrated, or whose one window can never fit the stream's budget, is a
// config error that names the release's line and field (counted here from
// the YAML text) and says what to change.
func TestBuildRegressionErrors(t *testing.T) {
	feats := `features: [{field: hp, bounds: [0, 250]}, {field: weight, bounds: [1500, 5500]}], target: {field: mpg, bounds: [5, 50]}`
	tests := []struct {
		name, release, field string
		msg                  []string
	}{
		// At ε = 5e-6 the Lipschitz bound's share needs a noise
		// multiplier 1/√(2ρ) ≈ 6.1e5, above the 2¹⁹ the mechanism allows.
		{"ops epsilon too small for the Lipschitz bound", `{name: bad, kind: regression, method: ops, ` + feats + `, lambda: 1, epsilon: 5e-6, delta: 1e-6}`,
			"streams[0].releases[1]", []string{"lipschitz", "epsilon too small"}},
		// At ε = 1e-6 the λ_min release is calibrated first and cannot be:
		// once its grid g exceeds L·d its sensitivity ⌈L·d/g⌉·g is g
		// itself, so σ = g·⌈1/√(2ρ)⌉ and the next grid σ·2⁻²⁰ exceeds g
		// whenever 1/√(2ρ) > 2²⁰ — there is no fixed point. The error
		// must still tell the user what to change, as every other
		// calibration error does.
		{"ops epsilon too small for lambda_min", `{name: bad, kind: regression, method: ops, ` + feats + `, lambda: 1, epsilon: 1e-6, delta: 1e-6}`,
			"streams[0].releases[1]", []string{"lambda_min", "epsilon too small"}},
		{"adassp over the budget", `{name: bad, kind: regression, method: adassp, ` + feats + `, epsilon: 20, delta: 1e-6}`,
			"streams[0].releases[1].epsilon", []string{`release "bad" can never fit the stream budget`, "lower this release's epsilon"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, src, err := buildRegression(t, 1, "1e-5", tc.release)
			if err == nil {
				t.Fatalf("Build accepted %s: %+v", tc.release, ps)
			}
			if ps != nil {
				t.Errorf("Build returned streams with its error")
			}
			errs := config.Errors(err)
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", err)
			}
			e := errs[0]
			wantLine := lineOf(src, "name: bad")
			if e.Path != "reg.yaml" || e.Line != wantLine || e.Field != tc.field {
				t.Errorf("error at %s:%d %s, want reg.yaml:%d %s", e.Path, e.Line, e.Field, wantLine, tc.field)
			}
			for _, m := range tc.msg {
				if !strings.Contains(e.Msg, m) {
					t.Errorf("message %q lacks %q", e.Msg, m)
				}
			}
		})
	}
}

// TestBuildRegressionOPSSmallLambda configures ops with a ridge far too
// small for its ε: at h = λ alone the posterior's curvature would cost
// B_x²(1 + w²)/(2λ) ≫ ε₁, so OPSGamma is infeasible there. Build accepts
// the release (its calibration does not depend on λ), and the release does
// not fail either: mregression.Release raises λ until h = λ + λ̃_min reaches
//
//	h_min = B_x²(1 + w²)/(2·α·ε₁), α = 1/2, ε₁ = ε/(2L), w = √2·erfcinv(δ₁),
//
// δ₁ = δ/3 for L = 1 (the documented OPS step 2). On empty statistics
// λ_min(XᵀX) = 0, so the private lower bound λ̃_min is 0 unless its noise
// exceeds its √(2 log(6/δ)) margin, which has probability ≤ δ/6 (and is
// fixed by the seed), and the released ridge is h_min itself. h_min is
// computed here from the formula; the mechanism rounds λ up to a multiple
// of 2⁻³² and inflates w by 1e-9, which the relative 1e-6 tolerance
// covers.
func TestBuildRegressionOPSSmallLambda(t *testing.T) {
	const eps, delta, lambda = 0.1, 1e-6, 0.001
	rel := fmt.Sprintf(`{name: r, kind: regression, method: ops, features: [{field: hp, bounds: [0, 250]}, {field: weight, bounds: [1500, 5500]}], target: {field: mpg, bounds: [5, 50]}, lambda: %v, epsilon: %v, delta: %v}`, lambda, eps, delta)
	ps, _, err := buildRegression(t, 1, "1e-5", rel)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	rp, _ := ps[0].Releases[1].Kind.(*regression.Plan)
	if rp == nil || rp.Cal.Spec.Lambda != lambda {
		t.Fatalf("plan %+v, want ops with λ = %v", ps[0].Releases[1].Kind, lambda)
	}
	const bx2 = 3.0 // two features and the intercept
	epsRow, deltaRow := eps/2, delta/3
	w := math.Sqrt2 * math.Erfcinv(deltaRow)
	hMin := bx2 * (1 + w*w) / (2 * 0.5 * epsRow)
	if curvature := bx2 * (1 + w*w) / (2 * lambda); curvature <= epsRow {
		t.Fatalf("test setup: at h = λ the curvature costs %v ≤ ε₁ = %v; λ is not too small", curvature, epsRow)
	}
	res, err := mregression.Release(rp.Cal, mregression.NewStats(3), noise.New(noise.SeededSource(1)))
	if err != nil {
		t.Fatalf("release of the plan's calibration failed: %v", err)
	}
	if math.Abs(res.Lambda-hMin) > 1e-6*hMin {
		t.Errorf("ridge used %v, want it raised from the configured %v to h_min = %v", res.Lambda, lambda, hMin)
	}
	if !(res.Gamma > 0) || len(res.Coefficients) != 2 {
		t.Errorf("release γ %v, %d coefficients; want γ > 0 and 2 coefficients", res.Gamma, len(res.Coefficients))
	}
}
