package release

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/pdpstore"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind/regression"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/pdp"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// pdpDelta is the budget δ of every stream of these tests: the δ at which
// every per-instance ε here is stated.
const pdpDelta = 1e-6

// pdpKindsConfig is a stream with L = 4 and one release of each
// noise-adding kind. sum_small's ε is so small that its noise grid G is
// coarser than its quantum, and dg's likewise for its basis sums, so the
// grid rounding is exercised; hl and hg have a per-bin cap of 2, which
// lowers hg's L2 sensitivity to √8.
const pdpKindsConfig = `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 1000, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 1}
      - {name: sum, kind: sum, field: v, bounds: [-2, 10], epsilon: 0.5}
      - {name: sum_small, kind: sum, field: v, bounds: [-2, 10], epsilon: 0.001}
      - {name: mean, kind: mean, field: v, bounds: [0, 10], noise: gaussian, epsilon: 1, delta: 1e-7}
      - {name: hl, kind: histogram, field: v, bounds: [0, 4], bins: 4, max_per_bin: 2, epsilon: 1}
      - {name: hg, kind: histogram, field: v, bounds: [0, 4], bins: 4, max_per_bin: 2, noise: gaussian, epsilon: 1, delta: 1e-7}
      - {name: rr, kind: randomized_response, field: mode, categories: [a, b, c], p: 0.5, epsilon: 1}
      - {name: dl, kind: density, field: v, bounds: [0, 2], terms: 5, epsilon: 1}
      - {name: dg, kind: density, field: v, bounds: [0, 2], terms: 5, noise: gaussian, epsilon: 0.01, delta: 1e-7}
`

// pdpRegressionConfig is a stream with L = 2 rows per unit and the
// regressions whose per-unit losses do not need the fit: one feature on
// [−1, 1] and the intercept (d = 2 scaled columns), pcls with two features.
const pdpRegressionConfig = `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 1000, delta: 1e-6}
    releases:
      - {name: ssp, kind: regression, method: ssp, features: [{field: a, bounds: [-1, 1]}], target: {field: y, bounds: [-1, 1]}, lambda: 1, epsilon: 1, delta: 1e-6}
      - {name: adassp, kind: regression, method: adassp, features: [{field: a, bounds: [-1, 1]}], target: {field: y, bounds: [-1, 1]}, epsilon: 1, delta: 1e-6}
      - {name: pcls, kind: regression, method: pcls, features: [{field: a, bounds: [-1, 1]}, {field: b, bounds: [-1, 1]}], target: {field: y, bounds: [-1, 1]}, radius: 1, penalty: 0.1, max_support: 1, epsilon: 1, delta: 1e-6}
`

// pdpOPSConfig has the two posterior-sample regressions, L = 2.
const pdpOPSConfig = `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 1000, delta: 1e-6}
    releases:
      - {name: ops, kind: regression, method: ops, features: [{field: a, bounds: [-1, 1]}], target: {field: y, bounds: [-1, 1]}, lambda: 1, epsilon: 2, delta: 1e-7}
      - {name: adaops, kind: regression, method: adaops, features: [{field: a, bounds: [-1, 1]}], target: {field: y, bounds: [-1, 1]}, epsilon: 2, delta: 1e-7}
`

// buildStream parses and calibrates a one-stream configuration.
func buildStream(t *testing.T, yaml string) []plan.Stream {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "pdp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Budget.Delta != pdpDelta {
		t.Fatalf("plan: %d streams, δ %v", len(ps), ps[0].Budget.Delta)
	}
	return ps
}

// releaseOf returns the plan of the named release.
func releaseOf(t *testing.T, ps *plan.Stream, name string) *plan.Release {
	t.Helper()
	for i := range ps.Releases {
		if ps.Releases[i].Config.Name == name {
			return &ps.Releases[i]
		}
	}
	t.Fatalf("no release %s", name)
	return nil
}

// normsLenByKind is the contribution layout's length per kind (without a
// regression row), from the brief's table.
var normsLenByKind = map[string]int{"count": 1, "sum": 1, "mean": 2, "histogram": 2, "randomized_response": 2, "density": 3, "regression": 3}

// unitIn is one unit's contribution on one partition: norms per release
// name; a release left out gets zeros (no contribution to it).
type unitIn struct {
	unit  string
	part  int32
	norms map[string][]float64
}

// pdpWindow returns window wi of stream ps from parts partials whose
// statistics name every release (their values are not read by PreparePDP)
// and which carry the given units' contributions.
func pdpWindow(ps *plan.Stream, wi int64, parts int32, units []unitIn) Window {
	w := Window{Stream: ps.Config.Name, Start: wi * win, End: (wi + 1) * win}
	for p := range parts {
		pt := schema.Partial{Stream: w.Stream, WindowStart: w.Start, WindowEnd: w.End, Partition: p, Partitions: parts}
		for _, pr := range ps.Releases {
			pt.Stats = append(pt.Stats, schema.ReleaseStats{Release: pr.Config.Name})
		}
		for _, u := range units {
			if u.part != p {
				continue
			}
			uc := schema.UnitContribution{Unit: u.unit}
			for _, pr := range ps.Releases {
				v, ok := u.norms[pr.Config.Name]
				if !ok {
					v = make([]float64, normsLenByKind[pr.Config.Kind])
				}
				uc.Norms = append(uc.Norms, v)
			}
			pt.UnitContributions = append(pt.UnitContributions, uc)
		}
		w.Parts = append(w.Parts, pt)
	}
	return w
}

// outcomesFor returns outcomes of w for every release of ps, ok unless
// named in refused, as the Releaser would report them (without data: the
// per-unit losses of these kinds do not read it).
func outcomesFor(ps *plan.Stream, w Window, refused ...string) []Outcome {
	var out []Outcome
	for _, pr := range ps.Releases {
		st := StatusOK
		if slices.Contains(refused, pr.Config.Name) {
			st = StatusBudgetExhausted
		}
		out = append(out, Outcome{Release: schema.Release{ReleaseID: plan.ReleaseID(w.Stream, pr.Config.Name, w.Start),
			Stream: w.Stream, Release: pr.Config.Name, WindowStart: w.Start, WindowEnd: w.End, Status: st}})
	}
	return out
}

// grid returns n plus a grid step g when n > 0: the rounding to the noise
// grid can move a coordinate the unit moves by one step, never one it does
// not move.
func grid(n, g float64) float64 {
	if n == 0 {
		return 0
	}
	return n + g
}

// nearestRank returns the nearest-rank p-quantile (p in percent) of xs:
// the ⌈p·n/100⌉-th smallest.
func nearestRank(xs []float64, p int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	k := (p*len(s) + 99) / 100
	return s[k-1]
}

// relNear reports whether a and b agree to a relative tol.
func relNear(a, b, tol float64) bool {
	return a == b || math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// quantileNear reports whether a cumulative quantile read off the store's
// histogram is within its stated error of the exact one q, from above
// (pdpstore.QuantileError), allowing the exact ε a relative 1e-12.
func quantileNear(got, q float64) bool {
	return got >= q*(1-1e-12) && got <= q*(1+pdpstore.QuantileError)*(1+1e-12)
}

// expectCharge applies the per-instance charges that the brief's formulas
// give a unit with norms v to account a.
type expectCharge func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error

// worstAccount charges a with the release's components at their recorded
// worst case (the ledger's NoiseComponents): the component-wise worst case.
func worstAccount(t *testing.T, pr *plan.Release) pdp.Account {
	t.Helper()
	var a pdp.Account
	for _, n := range pr.Noise {
		var err error
		switch n.Mechanism {
		case "discrete_laplace":
			err = a.AddPure(n.Sensitivity / n.Scale)
		case "discrete_gaussian":
			err = a.AddGaussian(n.Sensitivity, n.Scale)
		case "approx_dp":
			err = a.AddApprox(n.Epsilon, n.Delta)
		case "exponential":
			err = a.AddPure(n.Epsilon)
		case "zcdp":
			err = a.AddGaussian(1, 1/math.Sqrt(2*n.Epsilon))
		default:
			t.Fatalf("%s: noise %+v", pr.Config.Name, n)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// kindCharges are the brief's per-kind formulas for pdpKindsConfig. Each
// checks the plan's components are what the formula assumes (kind of
// noise, whether the grid is coarser than the quantum) before using them.
var kindCharges = map[string]expectCharge{
	"n": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c := pr.Kind.Components()[0]
		mustComp(t, c, aggregate.PurposeCount, noise.DiscreteLaplace)
		return a.AddPure(math.Min(v[0], c.Sensitivity) / c.Scale)
	},
	"sum": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c := pr.Kind.Components()[0]
		mustComp(t, c, aggregate.PurposeSum, noise.DiscreteLaplace)
		if c.Granularity != c.Quantum {
			t.Fatalf("sum: grid %v, quantum %v: want equal (no regridding)", c.Granularity, c.Quantum)
		}
		return a.AddPure(math.Min(v[0], c.Sensitivity) / c.Scale)
	},
	"sum_small": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c := pr.Kind.Components()[0]
		mustComp(t, c, aggregate.PurposeSum, noise.DiscreteLaplace)
		if !(c.Granularity > c.Quantum) {
			t.Fatalf("sum_small: grid %v, quantum %v: want a coarser grid", c.Granularity, c.Quantum)
		}
		return a.AddPure(math.Min(grid(v[0], c.Granularity), c.Sensitivity) / c.Scale)
	},
	"mean": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c0, c1 := pr.Kind.Components()[0], pr.Kind.Components()[1]
		mustComp(t, c0, aggregate.PurposeCount, noise.DiscreteGaussian)
		mustComp(t, c1, aggregate.PurposeCenteredSum, noise.DiscreteGaussian)
		if c1.Granularity != c1.Quantum {
			t.Fatalf("mean: grid %v, quantum %v: want equal", c1.Granularity, c1.Quantum)
		}
		if err := a.AddGaussian(math.Min(v[0], c0.Sensitivity), c0.Scale); err != nil {
			return err
		}
		return a.AddGaussian(math.Min(v[1], c1.Sensitivity), c1.Scale)
	},
	"hl": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c := pr.Kind.Components()[0]
		mustComp(t, c, aggregate.PurposeBins, noise.DiscreteLaplace)
		return a.AddPure(math.Min(v[0], c.Sensitivity) / c.Scale) // L1 = Σk_j
	},
	"hg": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c := pr.Kind.Components()[0]
		mustComp(t, c, aggregate.PurposeBins, noise.DiscreteGaussian)
		if math.Abs(c.Sensitivity-math.Sqrt(8)) > 1e-12 {
			t.Fatalf("hg: L2 sensitivity %v, want √8 (L = 4, cap 2)", c.Sensitivity)
		}
		return a.AddGaussian(math.Min(v[1], c.Sensitivity), c.Scale) // L2 = √Σk_j²
	},
	"rr": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c := pr.Kind.Components()[0]
		mustComp(t, c, aggregate.PurposeBins, noise.DiscreteLaplace)
		return a.AddPure(math.Min(v[0], c.Sensitivity) / c.Scale)
	},
	"dl": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c0, c1 := pr.Kind.Components()[0], pr.Kind.Components()[1]
		mustComp(t, c0, aggregate.PurposeCount, noise.DiscreteLaplace)
		mustComp(t, c1, density.PurposeBasisSums, noise.DiscreteLaplace)
		if c1.Granularity != c1.Quantum {
			t.Fatalf("dl: grid %v, quantum %v: want equal", c1.Granularity, c1.Quantum)
		}
		if err := a.AddPure(math.Min(v[0], c0.Sensitivity) / c0.Scale); err != nil {
			return err
		}
		return a.AddPure(math.Min(v[1], c1.Sensitivity) / c1.Scale) // ‖s‖₁
	},
	"dg": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		c0, c1 := pr.Kind.Components()[0], pr.Kind.Components()[1]
		mustComp(t, c0, aggregate.PurposeCount, noise.DiscreteGaussian)
		mustComp(t, c1, density.PurposeBasisSums, noise.DiscreteGaussian)
		if !(c1.Granularity > c1.Quantum) {
			t.Fatalf("dg: grid %v, quantum %v: want a coarser grid", c1.Granularity, c1.Quantum)
		}
		if err := a.AddGaussian(math.Min(v[0], c0.Sensitivity), c0.Scale); err != nil {
			return err
		}
		// ‖s‖₂ plus one grid step in each of the m = 5 coordinates, in L2.
		return a.AddGaussian(math.Min(grid(v[2], math.Sqrt(5)*c1.Granularity), c1.Sensitivity), c1.Scale)
	},
}

// regressionCharges are the formulas for pdpRegressionConfig.
var regressionCharges = map[string]expectCharge{
	"ssp": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		cg, cy := pr.Kind.Components()[0], pr.Kind.Components()[1]
		mustComp(t, cg, mregression.PurposeGram, noise.DiscreteGaussian)
		mustComp(t, cy, mregression.PurposeXty, noise.DiscreteGaussian)
		if cg.Granularity != cg.Quantum || cy.Granularity != cy.Quantum {
			t.Fatalf("ssp: grids %v %v, quantum %v: want equal", cg.Granularity, cy.Granularity, cg.Quantum)
		}
		if err := a.AddGaussian(math.Min(v[0], cg.Sensitivity), cg.Scale); err != nil {
			return err
		}
		return a.AddGaussian(math.Min(v[1], cy.Sensitivity), cy.Scale)
	},
	"adassp": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		cl, cg, cy := pr.Kind.Components()[0], pr.Kind.Components()[1], pr.Kind.Components()[2]
		mustComp(t, cl, mregression.PurposeLambdaMin, noise.DiscreteGaussian)
		mustComp(t, cg, mregression.PurposeGram, noise.DiscreteGaussian)
		mustComp(t, cy, mregression.PurposeXty, noise.DiscreteGaussian)
		if cg.Granularity != cg.Quantum || cy.Granularity != cy.Quantum {
			t.Fatalf("adassp: grids %v %v, quantum %v: want equal", cg.Granularity, cy.Granularity, cg.Quantum)
		}
		// λ_min moves by at most ‖G‖_F (Weyl), plus one step of its grid.
		if err := a.AddGaussian(math.Min(grid(v[2], cl.Granularity), cl.Sensitivity), cl.Scale); err != nil {
			return err
		}
		if err := a.AddGaussian(math.Min(v[0], cg.Sensitivity), cg.Scale); err != nil {
			return err
		}
		return a.AddGaussian(math.Min(v[1], cy.Sensitivity), cy.Scale)
	},
	"pcls": func(t *testing.T, pr *plan.Release, a *pdp.Account, v []float64) error {
		// Worst case for every unit: the selection's ε0 and the fit's ρ.
		sel, fit := pr.Noise[0], pr.Noise[1]
		if sel.Mechanism != "exponential" || fit.Mechanism != "zcdp" {
			t.Fatalf("pcls charges %+v", pr.Noise)
		}
		if err := a.AddPure(sel.Epsilon); err != nil {
			return err
		}
		return a.AddGaussian(1, 1/math.Sqrt(2*fit.Epsilon))
	},
}

// mustComp fails unless c has the purpose and noise a formula assumes.
func mustComp(t *testing.T, c noise.Component, purpose string, noise noise.Kind) {
	t.Helper()
	if c.Purpose != purpose || c.Noise != noise {
		t.Fatalf("component %s/%s, want %s/%s", c.Purpose, c.Noise, purpose, noise)
	}
}

// kindCase is one unit of TestPDPWindowKinds: its norms per release and
// whether it is at (or beyond) the worst case.
type kindCase struct {
	unit  string
	norms map[string][]float64
	// worst: the norms are the worst case's (within rounding of the
	// sensitivities); beyond: above every sensitivity, so the cap applies.
	worst, beyond bool
}

// TestPDPWindowKinds checks per-unit losses against the formulas for each
// kind (the brief's table), one unit per window so that the release's max
// is that unit's ε: ε_u = min(pdp.Account of the formula's charges at δ,
// Cost). It checks that the formula's ε never exceeds the release's
// worst-case ε (Cost), that a unit at the worst case gets (within 1e-6
// relative; the theoretical maxima sit a rounding below the recorded
// sensitivities) and a unit beyond it gets exactly the component-wise
// worst case, that the unit's cumulative record holds every release's
// charges and its ε, and, with all units in one window, that each
// release's quantiles are the nearest-rank quantiles of those ε and the
// cumulative quantiles those of the units' cumulative ε.
func TestPDPWindowKinds(t *testing.T) {
	t.Run("noise", func(t *testing.T) {
		r8, r5 := math.Sqrt(8), math.Sqrt(5)
		runKinds(t, buildStream(t, pdpKindsConfig), kindCharges, []kindCase{
			{unit: "a", norms: map[string][]float64{"n": {1}, "sum": {3}, "sum_small": {3}, "mean": {1, 2.5}, "hl": {1, 1},
				"hg": {1, 1}, "rr": {1, 1}, "dl": {1, 0.8, 0.5}, "dg": {1, 0.8, 0.5}}},
			// b's sum_small values cancel (S = 0): no grid step is charged.
			{unit: "b", norms: map[string][]float64{"n": {2}, "sum": {7.5}, "sum_small": {0}, "mean": {2, 4}, "hl": {3, r5},
				"hg": {3, r5}, "rr": {2, 2}, "dl": {2, 2.1, 1.3}, "dg": {2, 2.1, 1.3}}},
			// L = 4 events at the bound of largest |v|, two per bin (cap 2),
			// and for the density at u = 0, where every |ψ_j| = √2.
			{unit: "w", worst: true, norms: map[string][]float64{"n": {4}, "sum": {40}, "sum_small": {40}, "mean": {4, 20}, "hl": {4, r8},
				"hg": {4, r8}, "rr": {4, 4}, "dl": {4, 20 * math.Sqrt2, 4 * math.Sqrt(10)}, "dg": {4, 20 * math.Sqrt2, 4 * math.Sqrt(10)}}},
			{unit: "x", beyond: true, norms: map[string][]float64{"n": {9}, "sum": {400}, "sum_small": {400}, "mean": {9, 90}, "hl": {9, 9},
				"hg": {9, 9}, "rr": {9, 9}, "dl": {9, 90, 90}, "dg": {9, 90, 90}}},
		})
	})
	t.Run("regression", func(t *testing.T) {
		// a: one row x = (0.5, 1) (feature, intercept), y = 0.25: G = xxᵀ
		// with upper triangle (0.25, 0.5, 1), b = x·y, ‖G‖_F = ‖x‖² = 1.25.
		// w: two rows x = (1, 1), y = 1: G = [[2, 2], [2, 2]], b = (2, 2).
		runKinds(t, buildStream(t, pdpRegressionConfig), regressionCharges, []kindCase{
			{unit: "a", norms: map[string][]float64{
				"ssp":    {math.Sqrt(1.3125), 0.25 * math.Sqrt(1.25), 1.25, 0.5, 1, 0.25},
				"adassp": {math.Sqrt(1.3125), 0.25 * math.Sqrt(1.25), 1.25, 0.5, 1, 0.25},
				"pcls":   {0.8, 0.3, 0.9}}},
			{unit: "w", worst: true, norms: map[string][]float64{
				"ssp":    {2 * math.Sqrt(3), 2 * math.Sqrt2, 4},
				"adassp": {2 * math.Sqrt(3), 2 * math.Sqrt2, 4},
				"pcls":   {2 * math.Sqrt(6), 2 * math.Sqrt(3), 6}}},
			{unit: "x", beyond: true, norms: map[string][]float64{"ssp": {10, 10, 10}, "adassp": {10, 10, 10}, "pcls": {10, 10, 10}}},
		})
	})
}

func runKinds(t *testing.T, ps []plan.Stream, charges map[string]expectCharge, cases []kindCase) {
	t.Helper()
	s := &ps[0]
	now := time.UnixMilli(5000)
	perRelease := map[string][]float64{} // expected ε per release, over the cases
	var cumulative []float64
	for wi, tc := range cases {
		w := pdpWindow(s, int64(wi), 1, []unitIn{{unit: tc.unit, norms: tc.norms}})
		st := pdpstore.NewMemory()
		sum, recs, err := PDPWindow(st, s, w, outcomesFor(s, w), now)
		if err != nil {
			t.Fatalf("%s: %v", tc.unit, err)
		}
		var total pdp.Account
		for ri := range s.Releases {
			pr := &s.Releases[ri]
			name := pr.Config.Name
			var a pdp.Account
			if err := charges[name](t, pr, &a, tc.norms[name]); err != nil {
				t.Fatal(err)
			}
			if err := charges[name](t, pr, &total, tc.norms[name]); err != nil {
				t.Fatal(err)
			}
			formula := a.Epsilon(pdpDelta)
			want := math.Min(formula, pr.Cost)
			worst := math.Min(worstAccount(t, pr).Epsilon(pdpDelta), pr.Cost)
			perRelease[name] = append(perRelease[name], want)
			got := sum.Releases[ri]
			if got.Release != name || got.Status != StatusOK || got.Units != 1 || got.DPEpsilon != pr.Cost {
				t.Errorf("%s %s: summary %+v, want ok, 1 unit, dp_epsilon %v", tc.unit, name, got, pr.Cost)
			}
			if !relNear(got.Max, want, 1e-12) || got.P50 != got.Max || got.P90 != got.Max || got.P99 != got.Max {
				t.Errorf("%s %s: ε_u %v (p50 %v), want %v", tc.unit, name, got.Max, got.P50, want)
			}
			if formula > pr.Cost*(1+1e-9) {
				t.Errorf("%s %s: formula ε %v above the release's worst case %v", tc.unit, name, formula, pr.Cost)
			}
			if got.Max > worst*(1+1e-12) {
				t.Errorf("%s %s: ε_u %v above the component-wise worst case %v", tc.unit, name, got.Max, worst)
			}
			if tc.beyond && !relNear(got.Max, worst, 1e-12) {
				t.Errorf("%s %s: capped ε_u %v, want the component-wise worst case %v", tc.unit, name, got.Max, worst)
			}
			if tc.worst && !relNear(got.Max, worst, 1e-6) {
				t.Errorf("%s %s: worst-case unit's ε_u %v, want the component-wise worst case %v", tc.unit, name, got.Max, worst)
			}
		}
		if len(recs) != 1 {
			t.Fatalf("%s: %d records, want 1", tc.unit, len(recs))
		}
		r := recs[0]
		wantEps := total.Epsilon(pdpDelta)
		cumulative = append(cumulative, wantEps)
		if r.Stream != "s" || r.Unit != tc.unit || r.LastWindow != w.Start || r.Delta != pdpDelta || r.UpdatedAt != now.UnixMilli() ||
			r.Charges != total.Charges || !relNear(r.GaussianRho, total.GaussianRho, 1e-12) || !relNear(r.PureRho, total.PureRho, 1e-12) ||
			!relNear(r.PureEpsilon, total.PureEpsilon, 1e-12) || r.ApproxEpsilon != 0 || r.ApproxDelta != 0 || !relNear(r.Epsilon, wantEps, 1e-12) {
			t.Errorf("%s: record %+v, want account %+v with ε %v at window %d", tc.unit, r, total, wantEps, w.Start)
		}
		if sum.CumulativeUnits != 1 || !relNear(sum.CumulativeMax, wantEps, 1e-12) {
			t.Errorf("%s: cumulative %d units, max %v; want 1, %v", tc.unit, sum.CumulativeUnits, sum.CumulativeMax, wantEps)
		}
	}

	// All units in one window, spread over two partitions.
	var units []unitIn
	for i, tc := range cases {
		units = append(units, unitIn{unit: tc.unit, part: int32(i % 2), norms: tc.norms})
	}
	w := pdpWindow(s, 100, 2, units)
	st := pdpstore.NewMemory()
	sum, recs, err := PDPWindow(st, s, w, outcomesFor(s, w), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(cases) || st.Units("s") != len(cases) {
		t.Fatalf("%d records, %d units in the store, want %d", len(recs), st.Units("s"), len(cases))
	}
	for ri, got := range sum.Releases {
		want := perRelease[s.Releases[ri].Config.Name]
		if got.Units != int64(len(cases)) || !relNear(got.P50, nearestRank(want, 50), 1e-12) || !relNear(got.P90, nearestRank(want, 90), 1e-12) ||
			!relNear(got.P99, nearestRank(want, 99), 1e-12) || !relNear(got.Max, slices.Max(want), 1e-12) {
			t.Errorf("%s: summary %+v, want quantiles of %v", got.Release, got, want)
		}
	}
	if sum.CumulativeUnits != int64(len(cases)) || !quantileNear(sum.CumulativeP50, nearestRank(cumulative, 50)) ||
		!quantileNear(sum.CumulativeP90, nearestRank(cumulative, 90)) || !relNear(sum.CumulativeMax, slices.Max(cumulative), 1e-12) {
		t.Errorf("cumulative %d units p50 %v p90 %v max %v, want quantiles of %v", sum.CumulativeUnits, sum.CumulativeP50, sum.CumulativeP90, sum.CumulativeMax, cumulative)
	}
	if sum.Stream != "s" || sum.WindowStart != w.Start || sum.WindowEnd != w.End || sum.Delta != pdpDelta || sum.PublishedAt != now.UnixMilli() {
		t.Errorf("summary header %+v", sum)
	}
}

// TestPDPSplitUnit: a unit found in two partials of a window (each unit
// should be on one partition only) is charged for the sum of its norms,
// the triangle-inequality bound: a unit with one event in the same cell on
// each of two partitions moved that cell by 2, so its L2 norm is 2, not
// the √2 that combining in quadrature would give.
func TestPDPSplitUnit(t *testing.T) {
	ps := buildStream(t, pdpKindsConfig)
	s := &ps[0]
	half := map[string][]float64{"n": {1}, "hg": {1, 1}, "sum": {3}}
	split := pdpWindow(s, 0, 2, []unitIn{{unit: "m", part: 0, norms: half}, {unit: "m", part: 1, norms: half}})
	whole := pdpWindow(s, 0, 1, []unitIn{{unit: "m", norms: map[string][]float64{"n": {2}, "hg": {2, 2}, "sum": {6}}}})
	a, _, err := PDPWindow(pdpstore.NewMemory(), s, split, outcomesFor(s, split), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := PDPWindow(pdpstore.NewMemory(), s, whole, outcomesFor(s, whole), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Releases {
		if a.Releases[i] != b.Releases[i] {
			t.Errorf("split unit %+v, want as one partial with the summed norms %+v", a.Releases[i], b.Releases[i])
		}
	}
	hg := releaseOf(t, s, "hg")
	c := hg.Kind.Components()[0]
	var quad pdp.Account
	if err := quad.AddGaussian(math.Sqrt2, c.Scale); err != nil {
		t.Fatal(err)
	}
	if got := a.Releases[slices.IndexFunc(s.Releases, func(r plan.Release) bool { return r.Config.Name == "hg" })].Max; !(got > quad.Epsilon(pdpDelta)) {
		t.Errorf("split unit's hg ε %v, want above the quadrature combination's %v", got, quad.Epsilon(pdpDelta))
	}
}

// opsUnit is one unit of TestPDPOPS: its rows (feature, target) on the
// original scale.
type opsUnit struct {
	name string
	rows [][2]float64
}

// TestPDPOPS runs ops and adaops releases through the Releaser on a window
// of 30 one-row units and one two-row unit, then checks each unit's
// per-release ε: for a one-row unit, the posterior sample is charged
// OPSPrivacyLoss(μ, r, γ, δ_c) (capped at its ε_c), with the leverage μ =
// xᵀ(A − xxᵀ)⁻¹x and the leave-one-out error r = y − xᵀ(A − xxᵀ)⁻¹(Xᵀy −
// x·y) computed here by direct solves (A = XᵀX + λI with the release's
// published ridge λ and its γ); λ_min is charged ‖G‖_F + g, the Lipschitz
// bound its worst case. The two-row unit, and every unit when the outcome
// lacks the fit (rebuilt from the ledger), get the posterior's worst case.
func TestPDPOPS(t *testing.T) {
	ps := buildStream(t, pdpOPSConfig)
	s := &ps[0]
	var units []opsUnit
	for i := range 30 {
		x := -0.9 + 1.8*float64(i)/29
		y := 0.6*x - 0.1 + 0.3*math.Sin(float64(7*i)) // a line with deterministic scatter
		units = append(units, opsUnit{name: fmt.Sprintf("u%02d", i), rows: [][2]float64{{x, y}}})
	}
	units = append(units, opsUnit{name: "two", rows: [][2]float64{{0.5, 0.4}, {-0.2, 0.1}}})

	// The window: units alternate between two partitions; the statistics
	// are built as the accumulate stage builds them.
	rc, err := regression.ReleaseOf(s.Releases[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	sc := regression.Scaling(rc)
	d := sc.Dim()
	w := Window{Stream: "s", Start: 0, End: win}
	stats := []mregression.Stats{mregression.NewStats(d), mregression.NewStats(d)}
	contrib := map[string][]float64{} // the unit's norms, with its row if it has one
	const q = mregression.Quantum
	for i, u := range units {
		g := mregression.NewStats(d)
		var xs [][]float64
		var ys []float64
		for _, row := range u.rows {
			xu, yu, _, err := sc.Row([]float64{row[0]}, row[1])
			if err != nil {
				t.Fatal(err)
			}
			if err := stats[i%2].AddRow(xu, yu); err != nil {
				t.Fatal(err)
			}
			if err := g.AddRow(xu, yu); err != nil {
				t.Fatal(err)
			}
			x := make([]float64, d)
			for j := range xu {
				x[j] = float64(xu[j]) * q
			}
			xs, ys = append(xs, x), append(ys, float64(yu)*q)
		}
		gm, b, _, _ := g.Float()
		var upper, frob, bn float64
		for r := range d {
			for c := range d {
				frob += gm.At(r, c) * gm.At(r, c)
				if c >= r {
					upper += gm.At(r, c) * gm.At(r, c)
				}
			}
			bn += b.AtVec(r) * b.AtVec(r)
		}
		v := []float64{math.Sqrt(upper), math.Sqrt(bn), math.Sqrt(frob)}
		if len(xs) == 1 {
			v = append(append(v, xs[0]...), ys[0])
		}
		contrib[u.name] = v
	}
	for p := range 2 {
		rs := stats[p]
		pt := schema.Partial{Stream: "s", WindowStart: 0, WindowEnd: win, Partition: int32(p), Partitions: 2, Events: rs.N}
		for _, pr := range s.Releases {
			pt.Stats = append(pt.Stats, schema.ReleaseStats{Release: pr.Config.Name, Count: rs.N, Bins: []int64{}, Terms: []int64{},
				XtX: rs.XtX, Xty: rs.Xty, Yty: rs.Yty})
		}
		w.Parts = append(w.Parts, pt)
	}
	// Each unit is checked in a copy of the window whose partials carry
	// only its own contribution: the release ran on every row, and the
	// summary's max is that unit's ε.
	only := func(u string) Window {
		c := w
		c.Parts = slices.Clone(w.Parts)
		for p := range c.Parts {
			c.Parts[p].UnitContributions = nil
		}
		i := slices.IndexFunc(units, func(x opsUnit) bool { return x.name == u })
		c.Parts[i%2].UnitContributions = []schema.UnitContribution{{Unit: u, Norms: [][]float64{contrib[u], contrib[u]}}}
		return c
	}

	outs, err := NewReleaser(ps, noise.New(noise.SeededSource(11))).ReleaseWindow(w, time.UnixMilli(1))
	if err != nil || len(outs) != 2 {
		t.Fatalf("ReleaseWindow: %d outcomes, %v", len(outs), err)
	}
	full := mregression.NewStats(d)
	for _, st := range stats {
		if err := full.Merge(st); err != nil {
			t.Fatal(err)
		}
	}
	xtx, xty, _, _ := full.Float()
	ledgerOnly := []Outcome{{Release: outs[0].Release, Charge: outs[0].Charge}, {Release: outs[1].Release, Charge: outs[1].Charge}}
	exact := 0 // one-row unit-releases whose posterior loss is below ε_c
	for _, u := range units {
		got, _, err := PDPWindow(pdpstore.NewMemory(), s, only(u.name), outs, time.Time{})
		if err != nil {
			t.Fatalf("%s: %v", u.name, err)
		}
		worstPost, _, err := PDPWindow(pdpstore.NewMemory(), s, only(u.name), ledgerOnly, time.Time{})
		if err != nil {
			t.Fatalf("%s: %v", u.name, err)
		}
		for ri, o := range outs {
			pr := &s.Releases[ri]
			rel := o.Release
			fit, _ := o.fit.(*regression.Fit)
			if rel.Status != StatusOK || rel.Ridge == nil || fit == nil || !(fit.Gamma > 0) || fit.Lambda != *rel.Ridge {
				t.Fatalf("%s: outcome status %s ridge %v fit %+v", rel.Release, rel.Status, rel.Ridge, o.fit)
			}
			lambda, gamma := *rel.Ridge, fit.Gamma
			cl, clip, post := pr.Kind.Components()[0], pr.Kind.Components()[1], pr.Kind.Components()[2]
			mustComp(t, cl, mregression.PurposeLambdaMin, noise.DiscreteGaussian)
			mustComp(t, clip, mregression.PurposeLipschitz, noise.DiscreteGaussian)
			mustComp(t, post, mregression.PurposePosteriorSample, noise.ApproxDP)
			v := contrib[u.name]
			postEps := post.Epsilon
			lamNorm := v[2] // ‖G_u‖_F, the Weyl bound
			// The Lipschitz bound's charge, normalized to σ_ℓ = 1: the
			// worst case Sensitivity/Scale, or for a one-row unit the
			// exact change of ℓ = log(1 + B_x‖θ̂‖) at the release's ridge
			// plus the documented slack (2η, 1e-9·(1 + |ℓ| + |ℓ'|) and one
			// grid step of σ_ℓ), over σ_ℓ.
			lipNorm := clip.Sensitivity / clip.Scale
			if len(v) > 3 {
				ellOf := func(g *mat.SymDense, b *mat.VecDense) float64 {
					a := mat.NewDense(d, d, nil)
					for i := range d {
						for j := range d {
							a.Set(i, j, g.At(i, j))
						}
						a.Set(i, i, a.At(i, i)+lambda)
					}
					var th mat.VecDense
					if err := th.SolveVec(a, b); err != nil {
						t.Fatal(err)
					}
					return math.Log1p(math.Sqrt(float64(d)) * mat.Norm(&th, 2))
				}
				xv := mat.NewVecDense(d, append([]float64(nil), v[3:3+d]...))
				gw := mat.NewSymDense(d, nil)
				gw.CopySym(xtx)
				gw.SymRankOne(gw, -1, xv)
				bw := mat.NewVecDense(d, nil)
				bw.AddScaledVec(xty, -v[3+d], xv)
				e1, e2 := ellOf(xtx, xty), ellOf(gw, bw)
				sig := fit.LipSigma
				g, err := noise.Granularity(sig)
				if err != nil || !(sig > 0) {
					t.Fatalf("lipschitz sigma %v: %v", sig, err)
				}
				n := math.Abs(e1-e2) + 2*mregression.LipschitzEvalError + 1e-9*(1+math.Abs(e1)+math.Abs(e2)) + g
				if !(n/sig < lipNorm) {
					t.Errorf("%s: exact Lipschitz change %v is not below the worst case %v·σ_ℓ", u.name, n, lipNorm)
				}
				lipNorm = math.Min(n/sig, lipNorm)
			}
			if len(v) > 3 {
				// One row: the exact change of λ_min(XᵀX) by the row,
				// plus the evaluator's documented float slack.
				xv := mat.NewVecDense(d, append([]float64(nil), v[3:3+d]...))
				without := mat.NewSymDense(d, nil)
				without.CopySym(xtx)
				without.SymRankOne(without, -1, xv)
				var e1, e2 mat.EigenSym
				if !e1.Factorize(xtx, false) || !e2.Factorize(without, false) {
					t.Fatal("eigendecomposition failed")
				}
				exactChange := math.Abs(e1.Values(nil)[0]-e2.Values(nil)[0]) + 1e-12*(mat.Norm(xtx, 2)+1)
				if !(exactChange < v[2]) {
					t.Errorf("%s: exact λ_min change %v is not below the Weyl bound %v", u.name, exactChange, v[2])
				}
				lamNorm = math.Min(v[2], exactChange)
			}
			if len(v) > 3 {
				x, y := v[3:3+d], v[3+d]
				mu, r := leaveOneOut(t, xtx, xty, lambda, x, y)
				e, err := pdp.OPSPrivacyLoss(mu, r, gamma, post.Delta)
				if err != nil {
					t.Fatal(err)
				}
				if e < post.Epsilon {
					exact++
				}
				postEps = math.Min(e, post.Epsilon)
			}
			expect := func(postEps, lamNorm, lipNorm float64) float64 {
				var a pdp.Account
				for _, err := range []error{
					a.AddGaussian(math.Min(grid(lamNorm, cl.Granularity), cl.Sensitivity), cl.Scale),
					a.AddGaussian(lipNorm, 1),
					a.AddApprox(postEps, post.Delta),
				} {
					if err != nil {
						t.Fatal(err)
					}
				}
				return math.Min(a.Epsilon(pdpDelta), pr.Cost)
			}
			if want := expect(postEps, lamNorm, lipNorm); !relNear(got.Releases[ri].Max, want, 1e-9) {
				t.Errorf("%s %s: ε_u %v, want %v (posterior ε %v of %v)", u.name, rel.Release, got.Releases[ri].Max, want, postEps, post.Epsilon)
			}
			if want := expect(post.Epsilon, v[2], clip.Sensitivity/clip.Scale); !relNear(worstPost.Releases[ri].Max, want, 1e-9) {
				t.Errorf("%s %s without the fit: ε_u %v, want the posterior's worst case %v", u.name, rel.Release, worstPost.Releases[ri].Max, want)
			}
		}
	}
	// The exact loss must be what decides most one-row units, or this test
	// would only exercise the cap.
	if exact < 50 {
		t.Errorf("only %d of 60 one-row unit-releases have a posterior loss below ε_c", exact)
	}
}

// leaveOneOut returns μ = xᵀA₋⁻¹x and r = y − xᵀA₋⁻¹(Xᵀy − x·y) with
// A₋ = XᵀX − xxᵀ + λI, by direct solves (independent of
// pdp.OPSLeaveOneOut's Sherman–Morrison update).
func leaveOneOut(t *testing.T, xtx *mat.SymDense, xty *mat.VecDense, lambda float64, x []float64, y float64) (mu, r float64) {
	t.Helper()
	d := len(x)
	a := mat.NewDense(d, d, nil)
	b := mat.NewVecDense(d, nil)
	for i := range d {
		for j := range d {
			v := xtx.At(i, j) - x[i]*x[j]
			if i == j {
				v += lambda
			}
			a.Set(i, j, v)
		}
		b.SetVec(i, xty.AtVec(i)-x[i]*y)
	}
	xv := mat.NewVecDense(d, slices.Clone(x))
	var u, th mat.VecDense
	if err := u.SolveVec(a, xv); err != nil {
		t.Fatal(err)
	}
	if err := th.SolveVec(a, b); err != nil {
		t.Fatal(err)
	}
	return mat.Dot(xv, &u), y - mat.Dot(xv, &th)
}

// contributions attaches unit contributions to testPlan's window: per
// unit, its partition, count k and histogram (L1, L2).
func contributions(w Window, units map[string][3]float64, part map[string]int) Window {
	w.Parts = slices.Clone(w.Parts)
	for _, u := range slices.Sorted(maps.Keys(units)) {
		v := units[u]
		p := part[u]
		w.Parts[p].UnitContributions = append(slices.Clone(w.Parts[p].UnitContributions),
			schema.UnitContribution{Unit: u, Norms: [][]float64{{v[0]}, {v[1], v[2]}}})
	}
	return w
}

// TestPDPRefusedAndUnavailable runs the Releaser with a budget of ε = 1.5,
// in which the first window's count (ε = 1) fits and its histogram
// (ε = 1 more) does not. The count is charged to the units, the refused
// histogram is reported budget_exhausted with nothing charged (its ε 0, no
// DP ε either). A window with a truncated partial reports every release
// unavailable and charges nobody; a window without an outcome for a
// release reports that one unavailable and charges the rest.
func TestPDPRefusedAndUnavailable(t *testing.T) {
	ps := testPlan(t, 1.5)
	s := &ps[0]
	r := NewReleaser(ps, zeroNoise{})
	w0 := contributions(window(0, 3, 2), map[string][3]float64{"u1": {3, 3, 3}, "u2": {1, 1, 1}, "u3": {1, 1, 1}},
		map[string]int{"u1": 0, "u2": 1, "u3": 1})
	outs, err := r.ReleaseWindow(w0, time.Time{})
	if err != nil || len(outs) != 2 || outs[0].Release.Status != StatusOK || outs[1].Release.Status != StatusBudgetExhausted {
		t.Fatalf("ReleaseWindow: %d outcomes, %v; want the count ok and the histogram refused", len(outs), err)
	}
	st := pdpstore.NewMemory()
	sum, recs, err := PDPWindow(st, s, w0, outs, time.UnixMilli(9))
	if err != nil {
		t.Fatal(err)
	}
	n := s.Releases[0].Kind.Components()[0]
	if n.Scale != 4 {
		t.Fatalf("count scale %v, want L/ε = 4", n.Scale)
	}
	// Count, Laplace: ε_u = k/4, pure, so the account's ε is exactly k/4.
	if got := sum.Releases[0]; got.Status != StatusOK || got.Units != 3 || got.P50 != 0.25 || got.Max != 0.75 || got.DPEpsilon != s.Releases[0].Cost {
		t.Errorf("count: %+v, want ok, 3 units, p50 0.25, max 0.75", got)
	}
	if got := sum.Releases[1]; got != (schema.PDPRelease{Release: "h", Status: StatusBudgetExhausted, Units: 3}) {
		t.Errorf("refused histogram: %+v, want budget_exhausted, 3 units, nothing else", got)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, rec := range recs {
		k := map[string]float64{"u1": 3, "u2": 1, "u3": 1}[rec.Unit]
		if rec.Charges != 1 || rec.PureEpsilon != k/4 || rec.GaussianRho != 0 || rec.Epsilon != k/4 {
			t.Errorf("record %+v: want the count's charge only, ε %v", rec, k/4)
		}
	}
	if sum.CumulativeUnits != 3 || sum.CumulativeMax != 0.75 || sum.CumulativeP50 != 0.25 {
		t.Errorf("cumulative: %+v", sum)
	}

	// Truncated: one partial could not carry its units.
	before := snapshot(st, "s")
	w1 := contributions(window(1, 3, 2), map[string][3]float64{"u1": {1, 1, 1}}, map[string]int{"u1": 0})
	w1.Parts[1].UnitsTruncated = true
	sum, recs, err = PDPWindow(st, s, w1, outcomesFor(s, w1), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range sum.Releases {
		if got != (schema.PDPRelease{Release: s.Releases[i].Config.Name, Status: StatusUnavailable, DPEpsilon: s.Releases[i].Cost}) {
			t.Errorf("truncated window: %+v, want unavailable with the DP ε only", got)
		}
	}
	if len(recs) != 0 || !sameRecords(snapshot(st, "s"), before) || sum.CumulativeUnits != 3 || sum.CumulativeMax != 0.75 {
		t.Errorf("truncated window charged: %d records, cumulative %+v", len(recs), sum)
	}

	// No outcome for the histogram: unavailable; the count is charged.
	w2 := contributions(window(2, 3, 2), map[string][3]float64{"u1": {2, 2, 2}}, map[string]int{"u1": 0})
	sum, recs, err = PDPWindow(st, s, w2, outcomesFor(s, w2)[:1], time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Releases[0].Status != StatusOK || sum.Releases[1].Status != StatusUnavailable || sum.Releases[1].Units != 1 {
		t.Errorf("missing outcome: %+v", sum.Releases)
	}
	if len(recs) != 1 || recs[0].Unit != "u1" || recs[0].PureEpsilon != 0.75+0.5 || recs[0].Charges != 2 {
		t.Errorf("records %+v, want u1 charged 2/4 more", recs)
	}
}

// snapshot copies a stream's records.
func snapshot(st *pdpstore.Store, stream string) map[string]schema.PDPUnit {
	out := map[string]schema.PDPUnit{}
	err := st.EachUnit(stream, func(u schema.PDPUnit) error {
		out[u.Unit] = u
		return nil
	})
	if err != nil {
		panic(err) // a memory store cannot fail
	}
	return out
}

// sameRecords reports whether two record sets are equal.
func sameRecords(a, b map[string]schema.PDPUnit) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPDPIdempotentAndRestore: applying a window twice changes nothing the
// second time (no record, same store, same per-release summary); a store
// restored from the emitted records continues exactly as the original; a
// stale record restored after a newer one does not roll the account back;
// and a window at start 0 charges units that have no record yet.
func TestPDPIdempotentAndRestore(t *testing.T) {
	ps := testPlan(t, 100)
	s := &ps[0]
	st := pdpstore.NewMemory()
	w0 := contributions(window(0, 3, 2), map[string][3]float64{"u1": {3, 2, 2}, "u2": {1, 1, 1}}, map[string]int{"u1": 0, "u2": 1})
	first, recs0, err := PDPWindow(st, s, w0, outcomesFor(s, w0), time.UnixMilli(1))
	if err != nil || len(recs0) != 2 {
		t.Fatalf("window 0: %d records, %v", len(recs0), err)
	}
	after0 := snapshot(st, "s")
	again, recs, err := PDPWindow(st, s, w0, outcomesFor(s, w0), time.UnixMilli(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 0 || !sameRecords(snapshot(st, "s"), after0) {
		t.Errorf("second application: %d records, store changed %v", len(recs), !sameRecords(snapshot(st, "s"), after0))
	}
	if !slices.Equal(again.Releases, first.Releases) || again.CumulativeMax != first.CumulativeMax || again.CumulativeUnits != first.CumulativeUnits {
		t.Errorf("second application's summary %+v, want %+v", again, first)
	}

	restored := pdpstore.NewMemory()
	for _, rec := range recs0 {
		if err := restored.Restore(rec); err != nil {
			t.Fatal(err)
		}
	}
	w1 := contributions(window(1, 3, 2), map[string][3]float64{"u1": {1, 1, 1}, "u3": {4, 4, 4}}, map[string]int{"u1": 0, "u3": 1})
	a, ra, err := PDPWindow(st, s, w1, outcomesFor(s, w1), time.UnixMilli(3))
	if err != nil {
		t.Fatal(err)
	}
	b, rb, err := PDPWindow(restored, s, w1, outcomesFor(s, w1), time.UnixMilli(3))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ra, rb) || !slices.Equal(a.Releases, b.Releases) || a.CumulativeUnits != 3 || b.CumulativeUnits != 3 ||
		a.CumulativeP50 != b.CumulativeP50 || a.CumulativeMax != b.CumulativeMax {
		t.Errorf("restored store diverges:\n%+v\n%+v\n%+v\n%+v", ra, rb, a, b)
	}
	// u1 paid k/4 = 3/4 + 1/4 for the count (Laplace, scale 4) and
	// L1/4 = 2/4 + 1/4 for the histogram: pure ε 1.75, in 4 charges.
	u1, ok := restored.Unit("s", "u1")
	if !ok || u1.PureEpsilon != 1.75 || u1.Charges != 4 || u1.LastWindow != win {
		t.Errorf("u1 after two windows: %+v, want pure ε 1.75 in 4 charges, last window %d", u1, win)
	}
	// A stale record (window 0's) after the newer one is ignored.
	old := recs0[slices.IndexFunc(recs0, func(r schema.PDPUnit) bool { return r.Unit == "u1" })]
	if err := restored.Restore(old); err != nil {
		t.Fatal(err)
	}
	if got, _ := restored.Unit("s", "u1"); got != u1 {
		t.Errorf("stale record rolled the account back: %+v, want %+v", got, u1)
	}
}

// TestPDPErrors: contributions or outcomes that do not fit the plan are
// errors, and the store is left as it was.
func TestPDPErrors(t *testing.T) {
	ps := testPlan(t, 100)
	s := &ps[0]
	st := pdpstore.NewMemory()
	w0 := contributions(window(0, 1, 1), map[string][3]float64{"u1": {1, 1, 1}}, map[string]int{"u1": 0})
	if _, _, err := PDPWindow(st, s, w0, outcomesFor(s, w0), time.Time{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(st, "s")
	w1 := contributions(window(1, 1, 1), map[string][3]float64{"u1": {1, 1, 1}, "u2": {2, 2, 2}}, map[string]int{"u1": 0, "u2": 1})
	tests := []struct {
		name string
		edit func(w *Window, o []Outcome) (*plan.Stream, []Outcome)
		want string
	}{
		{"missing norms", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			w.Parts[1].UnitContributions[0].Norms = w.Parts[1].UnitContributions[0].Norms[:1]
			return s, o
		}, "1 norm vectors for 2 releases"},
		{"wrong length", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			w.Parts[1].UnitContributions[0].Norms[1] = []float64{1}
			return s, o
		}, "1 norms, want 2"},
		{"negative norm", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			w.Parts[1].UnitContributions[0].Norms[0] = []float64{-1}
			return s, o
		}, "want finite and >= 0"},
		{"NaN norm", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			w.Parts[1].UnitContributions[0].Norms[0] = []float64{math.NaN()}
			return s, o
		}, "want finite and >= 0"},
		{"outcome of another window", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			o[1].Release.WindowStart = 0
			return s, o
		}, "is of stream"},
		{"outcome twice", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			return s, append(o, o[0])
		}, "given twice"},
		{"unknown release", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			o[0].Release.Release = "zz"
			return s, o
		}, "not in the configuration"},
		{"unknown status", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			o[0].Release.Status = "weird"
			return s, o
		}, "has status"},
		{"another stream's plan", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			w.Stream = "t"
			return s, o
		}, "given the plan of stream"},
		{"no plan", func(w *Window, o []Outcome) (*plan.Stream, []Outcome) {
			return nil, o
		}, "no stream plan"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := w1
			w.Parts = slices.Clone(w1.Parts)
			for p := range w.Parts {
				w.Parts[p].UnitContributions = slices.Clone(w1.Parts[p].UnitContributions)
				for u := range w.Parts[p].UnitContributions {
					w.Parts[p].UnitContributions[u].Norms = slices.Clone(w1.Parts[p].UnitContributions[u].Norms)
				}
			}
			o := outcomesFor(s, w1)
			sp, o := tc.edit(&w, o)
			_, recs, err := PDPWindow(st, sp, w, o, time.Time{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if recs != nil || !sameRecords(snapshot(st, "s"), before) {
				t.Errorf("a failed window changed the store (records %v)", recs)
			}
		})
	}
	// Restore rejects records no update can have written.
	for _, bad := range []schema.PDPUnit{{Unit: "u"}, {Stream: "s", Unit: "u", PureRho: -1}, {Stream: "s", Unit: "u", GaussianRho: math.Inf(1)},
		{Stream: "s", Unit: "u", ApproxDelta: math.NaN()}, {Stream: "s", Unit: "u", Charges: -1}} {
		if err := st.Restore(bad); err == nil {
			t.Errorf("Restore(%+v): no error", bad)
		}
	}
	if !sameRecords(snapshot(st, "s"), before) {
		t.Error("a rejected record changed the store")
	}
}

// TestPDPCostCap: a release's per-unit ε is at most its worst-case ε
// (Cost), which is a valid bound at the same δ; the cap does not touch the
// cumulative account, which composes the per-instance charges. Cost is
// lowered by hand here to 0.3 so that it binds for a count unit with k = 2
// (k/scale = 0.5) and not for k = 1 (0.25).
func TestPDPCostCap(t *testing.T) {
	ps := testPlan(t, 100)
	s := &ps[0]
	s.Releases[0].Cost = 0.3
	w := contributions(window(0, 1, 1), map[string][3]float64{"u1": {1, 0, 0}, "u2": {2, 0, 0}}, map[string]int{"u1": 0, "u2": 1})
	sum, recs, err := PDPWindow(pdpstore.NewMemory(), s, w, outcomesFor(s, w), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Releases[0]; got.P50 != 0.25 || got.Max != 0.3 || got.DPEpsilon != 0.3 {
		t.Errorf("count: %+v, want p50 0.25 (k = 1) and max 0.3 (k = 2, capped at Cost)", got)
	}
	if len(recs) != 2 || recs[1].Unit != "u2" || recs[1].PureEpsilon != 0.5 || recs[1].Epsilon != 0.5 {
		t.Errorf("records %+v, want u2's account uncapped at 0.5", recs)
	}
}

// TestPDPCumulativeCappedByDP checks that a unit's cumulative per-instance
// ε never exceeds what the accountant has spent for the stream (the DP
// bound holds for every unit): a unit at the worst case in every window of
// Laplace releases accumulates plain sums that outgrow the accountant's
// RDP composition, and the record is capped at the spent ε; a unit below
// the worst case keeps its own, smaller account value.
func TestPDPCumulativeCappedByDP(t *testing.T) {
	const yaml = `streams:
  - name: s
    topic: s.in
    format: json
    privacy_unit: u
    window: {size: 1m}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 1000, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 0.5}
      - {name: h, kind: histogram, field: v, bounds: [0, 1], bins: 4, epsilon: 0.5}
`
	ps := buildStream(t, yaml)
	st := pdpstore.NewMemory()
	rel := NewReleaser(ps, noise.New(noise.SeededSource(3)))
	var lastSpent float64
	for wi := int64(0); wi < 30; wi++ {
		w := pdpWindow(&ps[0], wi, 1, []unitIn{
			{unit: "worst", norms: map[string][]float64{"n": {4}, "h": {4, 4}}},
			{unit: "light", norms: map[string][]float64{"n": {1}, "h": {1, 1}}},
		})
		for i := range w.Parts {
			w.Parts[i].Stats[1].Bins = make([]int64, 4)
		}
		outs, err := rel.ReleaseWindow(w, time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		lastSpent = outs[len(outs)-1].Release.EpsilonSpent
		if _, _, err := PDPWindow(st, &ps[0], w, outs, time.UnixMilli(0)); err != nil {
			t.Fatal(err)
		}
	}
	worst, _ := st.Unit("s", "worst")
	light, _ := st.Unit("s", "light")
	acct := pdp.Account{GaussianRho: worst.GaussianRho, PureRho: worst.PureRho, PureEpsilon: worst.PureEpsilon}
	if own := acct.Epsilon(1e-6); !(own > lastSpent) {
		t.Fatalf("the worst unit's own account (%v) does not exceed the spent ε %v: the test does not exercise the cap", own, lastSpent)
	}
	if worst.Epsilon != lastSpent {
		t.Errorf("worst unit's cumulative ε = %v, want the accountant's spent %v", worst.Epsilon, lastSpent)
	}
	la := pdp.Account{GaussianRho: light.GaussianRho, PureRho: light.PureRho, PureEpsilon: light.PureEpsilon}
	if want := la.Epsilon(1e-6); light.Epsilon != want || !(want < lastSpent) {
		t.Errorf("light unit's cumulative ε = %v, want its own account %v (below %v)", light.Epsilon, want, lastSpent)
	}
}
