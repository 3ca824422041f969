package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	kregression "github.com/dpstream/dpstream/kind/regression"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// regressionConfig has two regressions of y on x1 and x2 with an
// intercept, AdaSSP (name ssp) and AdaOPS (name ops), each with ε = 4 and
// δ = 1e-6; %d is L. The budget is ample, so every window is released,
// and its δ leaves room for the approx_dp part of AdaOPS (2δ/3 per window)
// over the empty windows that close while the test runs.
func regressionConfig(L int) *testkit.Pipeline {
	y, x1, x2 := testkit.Var("y", -10, 6), testkit.Var("x1", -1, 1), testkit.Var("x2", 0, 10)
	return testkit.NewPipeline(testkit.NewStream("fit", "events").Partitions(4).MaxEvents(L).Budget(1000, 1e-4).Releases(
		testkit.Regression("ssp", "adassp", y, x1, x2).Epsilon(4).Delta(1e-6),
		testkit.Regression("ops", "adaops", y, x1, x2).Epsilon(4).Delta(1e-6)))
}

// The synthetic model: y = regIntercept + regCoef[0]·x1 + regCoef[1]·x2 +
// e, with x1 clamped to its bounds [-1, 1] (x1 is drawn from [-1.2, 1.2],
// so about 1/6 of the rows are clamped and the model stays linear in what
// the pipeline sees), x2 uniform on [0, 10] and e ~ N(0, regNoise²)
// truncated at ±4·regNoise, so y stays inside its bounds [-10, 6] (y is in
// [-7.2, 4.2]) and the fit is unbiased.
var (
	regCoef      = []float64{2, -0.5}
	regIntercept = 1.0
	regBounds    = [][2]float64{{-1, 1}, {0, 10}}
	regTarget    = [2]float64{-10, 6}
	regFeatures  = []string{"x1", "x2"}
)

const regNoise = 0.3

// genRegEvents makes nWindows windows of events from nUnits units, in
// window order: each unit has 1 to 3 events per window, in random order
// within the window, so L = 1 and L = 2 both drop rows.
func genRegEvents(seed uint64, nWindows, nUnits int) []map[string]any {
	rng := rand.New(rand.NewPCG(seed, 4))
	var out []map[string]any
	for w := 0; w < nWindows; w++ {
		var win []map[string]any
		for u := 0; u < nUnits; u++ {
			for k := 1 + rng.IntN(3); k > 0; k-- {
				x1 := rng.Float64()*2.4 - 1.2
				x2 := rng.Float64() * 10
				e := math.Max(-4*regNoise, math.Min(4*regNoise, rng.NormFloat64()*regNoise))
				y := regIntercept + regCoef[0]*math.Max(-1, math.Min(1, x1)) + regCoef[1]*x2 + e
				win = append(win, map[string]any{"user": fmt.Sprintf("u%d", u), "ts": base + int64(w)*1000 + rng.Int64N(1000),
					"x1": x1, "x2": x2, "y": y})
			}
		}
		rng.Shuffle(len(win), func(i, j int) { win[i], win[j] = win[j], win[i] })
		out = append(out, win...)
	}
	return out
}

// regWindow is the truth of one window: the exact statistics of the kept
// rows and the kept rows themselves (x1 clamped, x2, y).
type regWindow struct {
	stats regression.Stats
	rows  [][3]float64
}

// regTruth keeps the first L events of each unit in each window, in
// produce order (which is offset order on the unit's partition), and
// builds their exact statistics with the scaling the release documents
// (mregression.Scaling.Row and mregression.Stats.AddRow).
func regTruth(t *testing.T, evs []map[string]any, L int) map[int64]*regWindow {
	t.Helper()
	sc := regression.Scaling{FeatureBounds: regBounds, Intercept: true, TargetBounds: regTarget}
	out := map[int64]*regWindow{}
	for _, ev := range keptEvents(evs, L) {
		w := windowOf(ev)
		if out[w] == nil {
			out[w] = &regWindow{stats: regression.NewStats(sc.Dim())}
		}
		x1, x2, y := ev["x1"].(float64), ev["x2"].(float64), ev["y"].(float64)
		xu, yu, _, err := sc.Row([]float64{x1, x2}, y)
		if err != nil {
			t.Fatal(err)
		}
		if err := out[w].stats.AddRow(xu, yu); err != nil {
			t.Fatal(err)
		}
		out[w].rows = append(out[w].rows, [3]float64{math.Max(-1, math.Min(1, x1)), x2, y})
	}
	return out
}

// affineOf returns a, b with v ↦ a·v + b mapping [lo, hi] onto [−1, 1]
// (SPEC section 4.5's scaling, written out here).
func affineOf(bd [2]float64) (a, b float64) {
	a = 2 / (bd[1] - bd[0])
	return a, -1 - a*bd[0]
}

// unscaleReg maps θ of the scaled model (x1, x2, intercept column) to the
// original scale: y = Σ coef_j·x_j + intercept with coef_j = θ_j·a_j/a_y
// and intercept = (θ₀ + Σ θ_j·b_j − b_y)/a_y. grad is the gradient of the
// intercept in θ (to propagate its variance).
func unscaleReg(theta []float64) (coef []float64, icpt float64, grad []float64) {
	ay, by := affineOf(regTarget)
	c := theta[2] - by
	grad = []float64{0, 0, 1 / ay}
	for j, bd := range regBounds {
		a, b := affineOf(bd)
		coef = append(coef, theta[j]*a/ay)
		c += theta[j] * b
		grad[j] = b / ay
	}
	return coef, c / ay, grad
}

// coefScale returns |a_j/a_y|, the factor from a scaled coefficient to the
// original one.
func coefScale(j int) float64 {
	a, _ := affineOf(regBounds[j])
	ay, _ := affineOf(regTarget)
	return math.Abs(a / ay)
}

// gramOf returns XᵀX and Xᵀy of exact statistics on the value scale
// (units of 2⁻³²; the upper triangle is stored row-major, entry (i, j) at
// i·d − i(i−1)/2 + (j − i)).
func gramOf(st regression.Stats) (*mat.SymDense, *mat.VecDense) {
	const q2 = 0x1p-32
	d := len(st.Xty)
	a := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			a.SetSym(i, j, float64(st.XtX[i*d-i*(i-1)/2+(j-i)])*q2)
		}
	}
	b := mat.NewVecDense(d, nil)
	for i := 0; i < d; i++ {
		b.SetVec(i, float64(st.Xty[i])*q2)
	}
	return a, b
}

// ridgeFit solves (XᵀX + λI)θ = Xᵀy for the exact statistics and returns θ
// and (XᵀX + λI)⁻¹.
func ridgeFit(t *testing.T, st regression.Stats, lambda float64) ([]float64, *mat.Dense) {
	t.Helper()
	a, b := gramOf(st)
	for i := 0; i < a.SymmetricDim(); i++ {
		a.SetSym(i, i, a.At(i, i)+lambda)
	}
	var inv mat.Dense
	if err := inv.Inverse(a); err != nil {
		t.Fatalf("XᵀX + λI: %v", err)
	}
	var th mat.VecDense
	th.MulVec(&inv, b)
	return slices.Clone(th.RawVector().Data), &inv
}

// olsRaw fits y on (x1, x2, 1) by least squares on the kept rows on the
// original scale and returns the coefficients (x1, x2, intercept) and
// their sampling standard errors regNoise·√((XᵀX)⁻¹_jj) for the known
// generating noise.
func olsRaw(t *testing.T, rows [][3]float64) (beta, se []float64) {
	t.Helper()
	x := mat.NewDense(len(rows), 3, nil)
	y := mat.NewVecDense(len(rows), nil)
	for i, r := range rows {
		x.SetRow(i, []float64{r[0], r[1], 1})
		y.SetVec(i, r[2])
	}
	var b mat.VecDense
	if err := b.SolveVec(x, y); err != nil {
		t.Fatalf("OLS: %v", err)
	}
	var xtx mat.Dense
	xtx.Mul(x.T(), x)
	var inv mat.Dense
	if err := inv.Inverse(&xtx); err != nil {
		t.Fatalf("OLS: %v", err)
	}
	for j := 0; j < 3; j++ {
		se = append(se, regNoise*math.Sqrt(inv.At(j, j)))
	}
	return slices.Clone(b.RawVector().Data), se
}

// quad returns vᵀMv.
func quad(m mat.Matrix, v []float64) float64 {
	s := 0.0
	for i := range v {
		for j := range v {
			s += v[i] * m.At(i, j) * v[j]
		}
	}
	return s
}

// TestEndToEndRegression runs AdaSSP and AdaOPS regressions through the
// whole pipeline on the real Kafka protocol (4 partitions, two windows of
// synthetic linear data with known coefficients, L = 1 and L = 2) and
// checks what they publish against truth computed here:
//
//   - every window is released once per release, ok, with the feature
//     names, method, an intercept, a ridge ≥ 0 and one coefficient and
//     standard error per feature;
//   - the merged partials equal the exact statistics of the kept rows
//     (first L per unit and window), scaled as the release documents;
//   - the coefficients and intercept lie within 6 standard errors of the
//     exact ridge fit at the released λ on the kept rows (see checkFit for
//     the standard errors and why 6), and hence within 6·StdErr + |fit −
//     truth| of the true coefficients, a tolerance that is checked to be
//     below half of each true coefficient, so a sign or factor-2 error
//     cannot pass;
//   - the ledger charges each release exactly the plan's noise (for AdaOPS
//     with its posterior sample as an approx_dp charge of ε/2 and 2δ/3),
//     with the published bytes as its payload;
//   - after each release, epsilon_spent is accountant.Cost of every charge
//     so far (windows in order, a window's releases in configuration
//     order; the empty windows that close while the stream is idle are
//     charged too), and the accountant topic's last state agrees.
func TestEndToEndRegression(t *testing.T) {
	tests := []struct {
		name                   string
		L                      int
		dataSeed, noiseSeed    uint64
		units                  int
		wantRowsLo, wantRowsHi int64 // kept rows per window: each unit keeps 1 to L
	}{
		{"L=1", 1, 61, 67, 4000, 4000, 4000},
		{"L=2", 2, 71, 73, 4000, 4000, 8000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const windows = 2
			h := newHarness(t, regressionConfig(tc.L))
			evs := genRegEvents(tc.dataSeed, windows, tc.units)
			truth := regTruth(t, evs, tc.L)

			// Produce before the stages start: the group reads from the
			// first offset, and no partition is ever idle before its data.
			h.ProduceJSON(h.cfg.Streams[0].Topic, evs, "user")
			sampler := noise.New(noise.SeededSource(tc.noiseSeed))
			acc := h.start("acc", pipeline.Stages{Accumulate: true}, nil)
			rel := h.start("rel", pipeline.Stages{Release: true}, sampler)
			waitFor(t, 90*time.Second, "regression releases of both data windows", func() bool {
				rs := h.releases()
				for _, name := range []string{"ssp", "ops"} {
					ws := releasedWindows(rs, name)
					for w := 0; w < windows; w++ {
						if !slices.Contains(ws, base+int64(w)*1000) {
							return false
						}
					}
				}
				return true
			}, acc, rel)
			// Let a duplicate release, if the stage made one, reach the topic.
			time.Sleep(time.Second)
			rel.stop()

			ps := h.plan[0]
			planned := map[string]int{}
			for i, pr := range ps.Releases {
				planned[pr.Config.Name] = i
			}
			byID := h.uniqueReleases()
			published := map[string][]byte{}
			for _, m := range h.ReadAll(h.cfg.Topics.Releases) {
				published[string(m.Key)] = m.Value
			}
			ledger := map[string]schema.LedgerCharge{}
			for _, lc := range h.ledger() {
				if _, dup := ledger[lc.ReleaseID]; dup {
					t.Errorf("ledger charges %s twice", lc.ReleaseID)
				}
				ledger[lc.ReleaseID] = lc
			}
			parts := h.partials()["fit"]

			for w := 0; w < windows; w++ {
				start := base + int64(w)*1000
				tr := truth[start]
				if tr == nil || tr.stats.N < tc.wantRowsLo || tr.stats.N > tc.wantRowsHi {
					t.Fatalf("test data: window %d keeps %v rows, want %d to %d", w, tr, tc.wantRowsLo, tc.wantRowsHi)
				}
				for _, name := range []string{"ssp", "ops"} {
					id := fmt.Sprintf("fit/%s/%d", name, start)
					r, ok := byID[id]
					if !ok {
						t.Fatalf("missing release %s", id)
					}
					pr := ps.Releases[planned[name]]
					if r.Status != "ok" || r.Kind != "regression" || r.Method != methodOf(pr.Config) || !slices.Equal(r.Fields, regFeatures) {
						t.Errorf("%s: status %s kind %s method %q fields %v, want ok regression %s on %v", id, r.Status, r.Kind, r.Method, r.Fields, methodOf(pr.Config), regFeatures)
						continue
					}
					if len(r.Coefficients) != 2 || len(r.StdErrors) != 2 || r.Intercept == nil || r.Ridge == nil || !(*r.Ridge >= 0) {
						t.Errorf("%s: %d coefficients, %d standard errors, intercept %v, ridge %v; want 2, 2, present and ≥ 0",
							id, len(r.Coefficients), len(r.StdErrors), r.Intercept, r.Ridge)
						continue
					}
					if r.Value != nil || r.NoisyCounts != nil {
						t.Errorf("%s: value %v, noisy counts %v; a regression has neither", id, r.Value, r.NoisyCounts)
					}

					// Exact statistics: merge the partials in partition
					// order, as the release stage does.
					got := regression.NewStats(3)
					pids := make([]int32, 0, len(parts[start]))
					for p := range parts[start] {
						pids = append(pids, p)
					}
					slices.Sort(pids)
					for _, p := range pids {
						for _, s := range parts[start][p].Stats {
							if s.Release != name {
								continue
							}
							if err := got.Merge(regression.Stats{N: s.Count, XtX: s.XtX, Xty: s.Xty, Yty: s.Yty}); err != nil {
								t.Fatalf("%s partition %d: %v", id, p, err)
							}
						}
					}
					want := tr.stats
					if got.N != want.N || !slices.Equal(got.XtX, want.XtX) || !slices.Equal(got.Xty, want.Xty) || got.Yty != want.Yty {
						t.Errorf("%s: merged partials n=%d XᵀX=%v Xᵀy=%v yᵀy=%d; truth n=%d XᵀX=%v Xᵀy=%v yᵀy=%d",
							id, got.N, got.XtX, got.Xty, got.Yty, want.N, want.XtX, want.Xty, want.Yty)
					}

					checkFit(t, id, r, tr)

					// Ledger: exactly the plan's charge, and the published
					// bytes as its payload.
					if !slices.Equal(r.Noise, pr.Noise) {
						t.Errorf("%s: noise %+v, plan %+v", id, r.Noise, pr.Noise)
					}
					lc, ok := ledger[id]
					if !ok || lc.Status != "ok" || !slices.Equal(lc.Charges, pr.Noise) || !bytes.Equal(lc.Payload, published[id]) {
						t.Errorf("%s: ledger %+v, want status ok charging %+v with the published payload", id, lc.Charges, pr.Noise)
					}
					if name == "ops" {
						var approx []schema.NoiseComponent
						for _, c := range lc.Charges {
							if c.Mechanism == accountant.KindApproxDP {
								approx = append(approx, c)
							}
						}
						eps, dlt := pr.Config.Epsilon, pr.Config.Delta
						if len(approx) != 1 || approx[0].Purpose != regression.PurposePosteriorSample || approx[0].Epsilon != eps/2 ||
							math.Abs(approx[0].Delta-2*dlt/3) > 1e-12*dlt || approx[0].Scale != 0 {
							t.Errorf("%s: approx_dp charges %+v, want the posterior sample at ε/2 = %v, δ = 2δ/3 = %v", id, approx, eps/2, 2*dlt/3)
						}
					}
				}
			}

			// Budget: every release (the data windows and the empty ones
			// after them) in charge order, composed by accountant.Cost.
			all := make([]schema.Release, 0, len(byID))
			for _, r := range byID {
				all = append(all, r)
			}
			slices.SortFunc(all, func(a, b schema.Release) int {
				if c := cmp.Compare(a.WindowStart, b.WindowStart); c != 0 {
					return c
				}
				return cmp.Compare(planned[a.Release], planned[b.Release])
			})
			var charged []accountant.Mechanism
			spent := 0.0
			for _, r := range all {
				if r.Status != "ok" {
					t.Errorf("%s: status %s, want ok (the budget allows every window)", r.ReleaseID, r.Status)
					continue
				}
				charged = append(charged, ps.Releases[planned[r.Release]].Mechanisms...)
				var err error
				if spent, err = accountant.Cost(charged, ps.Budget.Delta); err != nil {
					t.Fatal(err)
				}
				if math.Abs(r.EpsilonSpent-spent) > 1e-9*spent {
					t.Errorf("%s: epsilon spent %.12f, accountant.Cost of the %d charges so far %.12f", r.ReleaseID, r.EpsilonSpent, len(charged), spent)
				}
			}
			last := h.lastBudgetState("fit")
			if last.Stream != "fit" || last.ReleasesCharged != int64(len(all)) || last.ReleasesRefused != 0 || math.Abs(last.EpsilonSpent-spent) > 1e-9*spent {
				t.Errorf("accountant %+v; want %d charged, 0 refused, spent %.12f", last, len(all), spent)
			}
			if last.PureEpsilon != nil {
				t.Errorf("accountant keeps a pure ε %v for Gaussian and approx_dp charges", *last.PureEpsilon)
			}
		})
	}
}

// checkFit checks a released regression against the kept rows tr.
//
// Reference: θ_ref = (XᵀX + λI)⁻¹Xᵀy on the exact scaled statistics with
// the released ridge λ, unscaled here (unscaleReg). With λ = 0 it is OLS,
// which the test also fits on the raw rows as a check of its own
// unscaling (the rows are quantized to 2⁻¹⁶ of their range, so the two
// agree to about 1e-5).
//
// Standard errors. AdaOPS: θ̃ ~ N(θ_ref, (γA)⁻¹), A = XᵀX + λI, exactly
// (up to the 2⁻²⁰ grid of its normal draws), and StdErr_j =
// √((A⁻¹)_jj/γ)·|a_j/a_y|. γ is not published, so it is recovered from
// each feature's StdErr and must agree between the two (a relative 1e-6),
// which checks the unscaling of the standard errors; the intercept's
// standard error is then √(gᵀA⁻¹g/γ), g its gradient in θ. AdaSSP: to
// first order θ̃ − θ_ref ≈ M⁻¹(e − Eθ), M = XᵀX + λI, whose covariance is
// M⁻¹[σ_y²I + σ_g²(‖θ‖²I + θθᵀ − diag(θ²))]M⁻¹ (the mechanism's
// documented formula, with σ_g, σ_y the xtx and xty noise scales of the
// release); computed here from the exact M and θ_ref, it must agree with
// the released StdErr within 25%. The release evaluates it at the noisy
// M̃ = M + E and θ̃. ‖E‖ ≤ ‖E‖_F, and ‖E‖_F² is σ_g² times 3 squared
// diagonal and twice 3 squared off-diagonal standard normals, at most
// 2σ_g²·χ²₆, with P(χ²₆ > 50) < 5e-9; so ‖E‖ ≤ 10σ_g, which is checked to
// be at most 8% of λ_min(M) (η). Then M̃⁻¹ is within η/(1 − η) < 9% of
// M⁻¹, and the covariance, quadratic in it, within about 20%.
//
// Tolerance: |θ̃_j − θ_ref,j| ≤ 6·SE_j. For AdaOPS the deviation is
// Gaussian, P(|Z| > 6) = 2e-9; for AdaSSP the first-order term is
// Gaussian and the rest at most about η of it, so P(|Z| > 5.5) < 4e-8.
// Over the 2 variants × 2 windows × 2 releases × 3 values the check fails
// for a correct implementation with probability below 1e-6 over seeds (it
// is deterministic with the seeds above).
func checkFit(t *testing.T, id string, r schema.Release, tr *regWindow) {
	t.Helper()
	lambda := *r.Ridge
	thRef, ainv := ridgeFit(t, tr.stats, lambda)
	refCoef, refIcpt, grad := unscaleReg(thRef)

	// The test's unscaling against OLS on the raw rows.
	ols, olsSE := olsRaw(t, tr.rows)
	if lambda == 0 {
		for j, v := range append(slices.Clone(refCoef), refIcpt) {
			if math.Abs(v-ols[j]) > 1e-3*math.Abs(ols[j]) {
				t.Fatalf("%s: the test's unscaled exact fit %v differs from OLS on the raw rows %v", id, append(refCoef, refIcpt), ols)
			}
		}
	}
	// The data: OLS within 6 sampling standard errors of the model.
	for j, tv := range append(slices.Clone(regCoef), regIntercept) {
		if math.Abs(ols[j]-tv) > 6*olsSE[j] {
			t.Fatalf("test data: OLS %v is %v sampling standard errors from the model's %v", ols[j], math.Abs(ols[j]-tv)/olsSE[j], tv)
		}
	}

	se := slices.Clone(r.StdErrors)
	for j, s := range se {
		if !(s > 0) || math.IsInf(s, 0) {
			t.Fatalf("%s: standard error %d is %v, want finite and > 0", id, j, s)
		}
	}
	var icptSE float64
	switch r.Method {
	case "adaops":
		var gamma []float64
		for j := range se {
			g := ainv.At(j, j) * coefScale(j) * coefScale(j) / (se[j] * se[j])
			gamma = append(gamma, g)
		}
		if math.Abs(gamma[0]-gamma[1]) > 1e-6*gamma[0] {
			t.Errorf("%s: standard errors %v imply γ = %v for x1 and %v for x2; one γ scales the posterior of every coefficient", id, se, gamma[0], gamma[1])
		}
		icptSE = math.Sqrt(quad(ainv, grad) / gamma[0])
	case "adassp":
		var sg, sy float64
		for _, c := range r.Noise {
			switch c.Purpose {
			case regression.PurposeGram:
				sg = c.Scale
			case regression.PurposeXty:
				sy = c.Scale
			}
		}
		a, _ := gramOf(tr.stats)
		var eig mat.EigenSym
		if !eig.Factorize(a, false) {
			t.Fatal("eigenvalues of XᵀX")
		}
		if lmin := eig.Values(nil)[0] + lambda; 10*sg > 0.08*lmin {
			t.Fatalf("test data: the noise bound 10σ_g = %v on ‖E‖ is more than 8%% of λ_min(M) = %v; the first-order standard errors do not apply", 10*sg, lmin)
		}
		n2 := 0.0
		for _, v := range thRef {
			n2 += v * v
		}
		s := mat.NewSymDense(3, nil)
		for i := 0; i < 3; i++ {
			for j := i; j < 3; j++ {
				v := sg * sg * thRef[i] * thRef[j]
				if i == j {
					v = sy*sy + sg*sg*n2
				}
				s.SetSym(i, j, v)
			}
		}
		var tmp, cov mat.Dense
		tmp.Mul(ainv, s)
		cov.Mul(&tmp, ainv)
		for j := range se {
			pred := math.Sqrt(cov.At(j, j)) * coefScale(j)
			if math.Abs(se[j]/pred-1) > 0.25 {
				t.Errorf("%s: standard error of %s %v, first-order prediction at the exact statistics %v (more than 25%% apart)", id, regFeatures[j], se[j], pred)
			}
		}
		// The intercept's prediction, with the same 25% allowance.
		icptSE = 1.25 * math.Sqrt(quad(&cov, grad))
	default:
		t.Fatalf("%s: method %q", id, r.Method)
	}

	for j, c := range r.Coefficients {
		if d := math.Abs(c - refCoef[j]); !(d <= 6*se[j]) {
			t.Errorf("%s: %s = %v, exact fit at λ = %v is %v: off by %.2f standard errors (%v), want ≤ 6", id, regFeatures[j], c, lambda, refCoef[j], d/se[j], se[j])
		}
		// Against the model: 6·SE plus the exact fit's own error, a
		// tolerance that must be below half the true coefficient.
		tol := 6*se[j] + math.Abs(refCoef[j]-regCoef[j])
		if tol >= math.Abs(regCoef[j])/2 {
			t.Fatalf("test data: %s: tolerance %v is not below half of the true coefficient %v; the check could not tell a factor of 2", id, tol, regCoef[j])
		}
		if math.Abs(c-regCoef[j]) > tol {
			t.Errorf("%s: %s = %v, true %v: beyond 6·StdErr + |fit − true| = %v", id, regFeatures[j], c, regCoef[j], tol)
		}
	}
	if d := math.Abs(*r.Intercept - refIcpt); !(d <= 6*icptSE) {
		t.Errorf("%s: intercept %v, exact fit %v: off by %.2f of its standard error %v, want ≤ 6", id, *r.Intercept, refIcpt, d/icptSE, icptSE)
	}
}

// methodOf returns a regression release's method, "" for other kinds.
func methodOf(r config.Release) string {
	if c, ok := r.Params.(*kregression.Config); ok {
		return c.Method
	}
	return ""
}
