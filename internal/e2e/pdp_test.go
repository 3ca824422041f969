package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pdpstore"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/pdp"
	"github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// pdpConfig has two streams that together cover every per-instance rule the
// test recomputes:
//
//   - mix (L = 3): a count with discrete Laplace noise, a histogram with
//     discrete Gaussian noise and an AdaSSP regression, so a unit's
//     account mixes pure and Gaussian charges, and units keep 1 to 3 events
//     (the count's per-unit ε varies);
//   - ops (L = 1): an AdaOPS regression, so every unit has exactly one row
//     and its posterior sample gets the exact OPS loss (SPEC 4.6) rather
//     than the worst case.
//
// Windows close by event time only (grace 200ms, a long idle timeout), so
// the run with a restart decides exactly what an uninterrupted run would,
// and no empty window is released while the test runs. Budgets are ample:
// every release is ok.
func pdpConfig() *testkit.Pipeline {
	stream := func(name string) *testkit.Stream {
		return testkit.NewStream(name, name).Partitions(4).Window(time.Second, 200*time.Millisecond, 10*time.Minute).Budget(1000, 1e-5)
	}
	y, x1, x2 := testkit.Var("y", -10, 6), testkit.Var("x1", -1, 1), testkit.Var("x2", 0, 10)
	return testkit.NewPipeline(
		stream("mix").MaxEvents(3).Releases(
			testkit.Count("n").Noise("laplace").Epsilon(0.5),
			testkit.Histogram("h", "v", 0, 10, 5).Noise("gaussian").Epsilon(1).Delta(1e-7),
			testkit.Regression("ssp", "adassp", y, x1, x2).Epsilon(2).Delta(1e-7)),
		stream("ops").MaxEvents(1).Releases(
			testkit.Regression("ops", "adaops", y, x1, x2).Epsilon(4).Delta(1e-7)))
}

// pdpScaling is the regressions' scaling in pdpConfig (features x1 in
// [-1, 1], x2 in [0, 10], an intercept, target y in [-10, 6]).
var pdpScaling = regression.Scaling{FeatureBounds: [][2]float64{{-1, 1}, {0, 10}}, Intercept: true, TargetBounds: [2]float64{-10, 6}}

// pdpWindows is the number of released windows: 0 and 1 before the
// restart, 2 after it.
const pdpWindows = 3

// pdpStreamData describes one stream's synthetic data.
type pdpStreamData struct {
	name       string
	units      int // units u0..u(units-1); the first pdpAlways are in every window
	maxEvents  int // each present unit has 1..maxEvents events per window
	partitions int
}

// pdpAlways is how many units have events in every window (the units whose
// accounts must continue across the restart).
const pdpAlways = 12

// pdpEvent makes one event of unit u at time ts with every field the
// releases read: v in [-2, 12] (some clamped), x1 in [-1.2, 1.2] (some
// clamped) and x2 in [0, 10], y = 1 + 2·x1 − 0.5·x2 + noise inside its
// bounds.
func pdpEvent(rng *rand.Rand, u string, ts int64) map[string]any {
	x1 := rng.Float64()*2.4 - 1.2
	x2 := rng.Float64() * 10
	y := 1 + 2*math.Max(-1, math.Min(1, x1)) - 0.5*x2 + (rng.Float64()-0.5)*1.2
	return map[string]any{"user": u, "ts": ts, "v": math.Round((rng.Float64()*14-2)*100) / 100, "x1": x1, "x2": x2, "y": y}
}

// pdpWindowEvents makes window w's events of one stream, shuffled within
// the window: units u0..u(pdpAlways-1) always, the others with
// probability 0.7, each with 1..maxEvents events.
func pdpWindowEvents(rng *rand.Rand, sd pdpStreamData, w int64) []map[string]any {
	var out []map[string]any
	for u := 0; u < sd.units; u++ {
		if u >= pdpAlways && rng.Float64() >= 0.7 {
			continue
		}
		for k := 1 + rng.IntN(sd.maxEvents); k > 0; k-- {
			out = append(out, pdpEvent(rng, fmt.Sprintf("u%d", u), base+w*1000+rng.Int64N(1000)))
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// pdpClosers returns one event per input partition at base + w·1000 + 500
// from units named prefix0, prefix1, ... (one per partition): with grace
// 200ms it moves every partition's watermark past the end of window w−1.
// The closers are data like any other (the truth counts them).
func pdpClosers(rng *rand.Rand, prefix string, w int64, partitions int) []map[string]any {
	var out []map[string]any
	seen := map[int]bool{}
	for i := 0; len(seen) < partitions; i++ {
		u := fmt.Sprintf("%s%d", prefix, i)
		p := kafkaio.PartitionFor([]byte(u), partitions)
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, pdpEvent(rng, u, base+w*1000+500))
	}
	return out
}

// pdpUnitWindow is one unit's kept events in one window, summarised as the
// per-instance rules need them (SPEC 4.6; accumulate.UnitNorms).
type pdpUnitWindow struct {
	k    int              // kept events
	bins []int64          // kept events per histogram bin (v clamped to [0, 10])
	reg  regression.Stats // the unit's own scaled rows
	row  []float64        // its single row (x, y) on the value scale, when k = 1
}

// pdpWindowTruth is one window of one stream: its units and the merged
// regression statistics.
type pdpWindowTruth struct {
	units map[string]*pdpUnitWindow
	reg   regression.Stats
}

// pdpTruth keeps the first L events of each unit in each window, in
// produce order (offset order on the unit's partition), and summarises
// them per unit.
func pdpTruth(t *testing.T, evs []map[string]any, L int) map[int64]*pdpWindowTruth {
	t.Helper()
	d := pdpScaling.Dim()
	out := map[int64]*pdpWindowTruth{}
	for _, ev := range evs {
		w := ev["ts"].(int64) / 1000 * 1000
		if out[w] == nil {
			out[w] = &pdpWindowTruth{units: map[string]*pdpUnitWindow{}, reg: regression.NewStats(d)}
		}
		wt := out[w]
		u := ev["user"].(string)
		uw := wt.units[u]
		if uw == nil {
			uw = &pdpUnitWindow{bins: make([]int64, 5), reg: regression.NewStats(d)}
			wt.units[u] = uw
		}
		if uw.k >= L {
			continue
		}
		uw.k++
		v := math.Min(math.Max(ev["v"].(float64), 0), 10)
		uw.bins[aggregate.BinIndex(v, 0, 10, 5)]++
		xu, yu, _, err := pdpScaling.Row([]float64{ev["x1"].(float64), ev["x2"].(float64)}, ev["y"].(float64))
		if err != nil {
			t.Fatal(err)
		}
		if err := uw.reg.AddRow(xu, yu); err != nil {
			t.Fatal(err)
		}
		if err := wt.reg.AddRow(xu, yu); err != nil {
			t.Fatal(err)
		}
		if uw.k == 1 {
			uw.row = nil
			for _, x := range xu {
				uw.row = append(uw.row, float64(x)*regression.Quantum)
			}
			uw.row = append(uw.row, float64(yu)*regression.Quantum)
		} else {
			uw.row = nil
		}
	}
	return out
}

// pdpRegNorms returns ‖upper(G)‖₂, ‖b‖₂ and ‖G‖_F of a unit's own scaled
// regression statistics G = Σ x·xᵀ, b = Σ x·y (accumulate.UnitNorms),
// computed from the exact integers (units of RegressionQuantum²).
func pdpRegNorms(st regression.Stats) (upper, xty, frob float64) {
	const q2 = regression.Quantum * regression.Quantum
	d := st.Dim()
	var diag, off, b float64
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := float64(st.XtX[i*d-i*(i-1)/2+(j-i)]) * q2
			if i == j {
				diag += v * v
			} else {
				off += v * v
			}
		}
		v := float64(st.Xty[i]) * q2
		b += v * v
	}
	return math.Sqrt(diag + off), math.Sqrt(b), math.Sqrt(diag + 2*off)
}

// pdpOPS is what the exact OPS loss of a window's posterior sample needs:
// the window's merged statistics, the released ridge λ and the γ the
// release used (recovered from its standard errors).
type pdpOPS struct {
	xtx   *mat.SymDense
	xty   *mat.VecDense
	gamma float64
	lam   float64
}

// newPDPOPS recovers γ from an AdaOPS release r over the merged statistics
// st. OPS publishes θ̃ ~ N(θ̂, (γA)⁻¹), A = XᵀX + λI on the scaled
// problem, with scaled standard errors √((A⁻¹)_jj/γ), unscaled by
// |a_j/a_y| (a the affine maps onto [−1, 1]). So γ = (A⁻¹)_jj·(a_j/a_y)²/
// StdErr_j²; the two features must give the same γ (relative 1e-9: both
// come from one A⁻¹ in floating point).
func newPDPOPS(t *testing.T, r schema.Release, st regression.Stats) *pdpOPS {
	t.Helper()
	if r.Ridge == nil || len(r.StdErrors) != 2 {
		t.Fatalf("%s: ridge %v, %d standard errors; want a ridge and 2", r.ReleaseID, r.Ridge, len(r.StdErrors))
	}
	xtx, xty, _, _ := st.Float()
	a := mat.NewSymDense(3, nil)
	a.CopySym(xtx)
	for i := 0; i < 3; i++ {
		a.SetSym(i, i, a.At(i, i)+*r.Ridge)
	}
	var inv mat.Dense
	if err := inv.Inverse(a); err != nil {
		t.Fatalf("%s: XᵀX + λI: %v", r.ReleaseID, err)
	}
	slope := func(b [2]float64) float64 { return 2 / (b[1] - b[0]) }
	ay := slope(pdpScaling.TargetBounds)
	var gammas []float64
	for j, se := range r.StdErrors {
		f := slope(pdpScaling.FeatureBounds[j]) / ay
		gammas = append(gammas, inv.At(j, j)*f*f/(se*se))
	}
	if !(gammas[0] > 0) || math.Abs(gammas[0]-gammas[1]) > 1e-9*gammas[0] {
		t.Fatalf("%s: standard errors %v imply γ = %v; want one positive γ", r.ReleaseID, r.StdErrors, gammas)
	}
	return &pdpOPS{xtx: xtx, xty: xty, gamma: gammas[0], lam: *r.Ridge}
}

// loss returns the exact per-instance ε at delta of the posterior sample
// for the unit whose single scaled row is row = (x, y) (SPEC 4.6, OPS):
// with A₋ = XᵀX + λI − xxᵀ (the statistics without the row), μ = xᵀA₋⁻¹x
// and r = y − xᵀA₋⁻¹(Xᵀy − x·y), computed here directly, then
// pdp.OPSPrivacyLoss(μ, r, γ, delta).
func (o *pdpOPS) loss(t *testing.T, row []float64, delta float64) float64 {
	t.Helper()
	x, y := row[:3], row[3]
	a := mat.NewDense(3, 3, nil)
	b := mat.NewVecDense(3, nil)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			v := o.xtx.At(i, j) - x[i]*x[j]
			if i == j {
				v += o.lam
			}
			a.Set(i, j, v)
		}
		b.SetVec(i, o.xty.AtVec(i)-x[i]*y)
	}
	var ainvx, theta mat.VecDense
	xv := mat.NewVecDense(3, slices.Clone(x))
	if err := ainvx.SolveVec(a, xv); err != nil {
		t.Fatalf("A without the row: %v", err)
	}
	if err := theta.SolveVec(a, b); err != nil {
		t.Fatalf("A without the row: %v", err)
	}
	mu := mat.Dot(xv, &ainvx)
	r := y - mat.Dot(xv, &theta)
	eps, err := pdp.OPSPrivacyLoss(mu, r, o.gamma, delta)
	if err != nil {
		t.Fatalf("OPS loss of row %v: %v", row, err)
	}
	return eps
}

// pdpCharge is one expected per-instance charge to a unit's account.
type pdpCharge struct {
	kind string // pure, gaussian, approx
	x, y float64
	// exact marks a posterior-sample charge below the component's worst
	// case (the exact OPS loss was smaller).
	exact bool
}

func (c pdpCharge) apply(t *testing.T, a *pdp.Account) {
	t.Helper()
	var err error
	switch c.kind {
	case "pure":
		err = a.AddPure(c.x)
	case "gaussian":
		err = a.AddGaussian(c.x, c.y)
	case "approx":
		err = a.AddApprox(c.x, c.y)
	}
	if err != nil {
		t.Fatalf("charge %+v: %v", c, err)
	}
}

// pdpExpectedCharges returns, from the rules of SPEC 4.6 (and
// release.PreparePDP's documentation of them), a unit's charges for
// one release of one window, in component order. The unit's per-instance
// norm n for a component is its own contribution to the noised statistic
// (count: k; Gaussian bins: √Σk_j²; xtx: ‖upper(G)‖₂; xty: ‖b‖₂;
// lambda_min: ‖G‖_F, or for a unit with a single row x the exact change
// λ_min(G) − λ_min(G − xxᵀ) of the window's merged XᵀX G, plus 1e-12·(‖G‖₂
// + 1) for the eigensolver, when smaller), plus the grid rounding (one grid step per
// coordinate, when the grid is coarser than the statistic's unit; λ_min
// always one step), capped at the component's worst-case sensitivity. The
// Lipschitz bound is charged at its worst case; the posterior sample at
// the exact OPS loss of the unit's single row, capped at its ε, or at its
// worst case for a unit with several rows.
func pdpExpectedCharges(t *testing.T, pr *plan.Release, uw *pdpUnitWindow, ops *pdpOPS, merged regression.Stats, lipSigma float64) []pdpCharge {
	t.Helper()
	comps := pr.Kind.Components()
	var out []pdpCharge
	for _, c := range comps {
		gauss := c.Noise == noise.DiscreteGaussian
		regrid := func(coords int) float64 {
			if !(c.Granularity > c.Quantum) {
				return 0
			}
			if gauss {
				return math.Sqrt(float64(coords)) * c.Granularity
			}
			return float64(coords) * c.Granularity
		}
		var n, slack float64
		upper, xty, frob := pdpRegNorms(uw.reg)
		d := pdpScaling.Dim()
		switch c.Purpose {
		case aggregate.PurposeCount:
			n = float64(uw.k)
		case aggregate.PurposeBins:
			var l1, sq int64
			for _, k := range uw.bins {
				l1 += k
				sq += k * k
			}
			n = float64(l1)
			if gauss {
				n = math.Sqrt(float64(sq))
			}
		case regression.PurposeGram:
			n, slack = upper, regrid(d*(d+1)/2)
		case regression.PurposeXty:
			n, slack = xty, regrid(d)
		case regression.PurposeLambdaMin:
			n, slack = frob, c.Granularity
			if uw.row != nil && n > 0 {
				g, _, _, _ := merged.Float()
				xv := mat.NewVecDense(d, append([]float64(nil), uw.row[:d]...))
				without := mat.NewSymDense(d, nil)
				without.CopySym(g)
				without.SymRankOne(without, -1, xv)
				var e1, e2 mat.EigenSym
				if !e1.Factorize(g, false) || !e2.Factorize(without, false) {
					t.Fatal("eigendecomposition failed")
				}
				n = math.Min(n, math.Abs(e1.Values(nil)[0]-e2.Values(nil)[0])+1e-12*(mat.Norm(g, 2)+1))
			}
		case regression.PurposeLipschitz:
			n = c.Sensitivity
			if uw.row != nil && ops != nil && lipSigma > 0 {
				// One row: the exact change of ℓ = log(1 + B_x‖θ̂‖) at the
				// release's ridge, plus 2η, 1e-9·(1 + |ℓ| + |ℓ'|) and one
				// grid step of σ_ℓ (σ_ℓ from the summary), against σ_ℓ.
				g, b, _, _ := merged.Float()
				ellOf := func(g *mat.SymDense, b *mat.VecDense) float64 {
					a := mat.NewDense(d, d, nil)
					for i := range d {
						for j := range d {
							a.Set(i, j, g.At(i, j))
						}
						a.Set(i, i, a.At(i, i)+ops.lam)
					}
					var th mat.VecDense
					if err := th.SolveVec(a, b); err != nil {
						t.Fatal(err)
					}
					return math.Log1p(math.Sqrt(float64(d)) * mat.Norm(&th, 2))
				}
				xv := mat.NewVecDense(d, append([]float64(nil), uw.row[:d]...))
				gw := mat.NewSymDense(d, nil)
				gw.CopySym(g)
				gw.SymRankOne(gw, -1, xv)
				bw := mat.NewVecDense(d, nil)
				bw.AddScaledVec(b, -uw.row[d], xv)
				e1, e2 := ellOf(g, b), ellOf(gw, bw)
				grid, err := noise.Granularity(lipSigma)
				if err != nil {
					t.Fatal(err)
				}
				exact := math.Abs(e1-e2) + 2*regression.LipschitzEvalError + 1e-9*(1+math.Abs(e1)+math.Abs(e2)) + grid
				out = append(out, pdpCharge{kind: "gaussian", x: math.Min(exact/lipSigma, c.Sensitivity/c.Scale), y: 1})
				continue
			}
		case regression.PurposePosteriorSample:
			eps := c.Epsilon
			if uw.row != nil {
				eps = math.Min(ops.loss(t, uw.row, c.Delta), c.Epsilon)
			}
			out = append(out, pdpCharge{kind: "approx", x: eps, y: c.Delta, exact: eps < c.Epsilon})
			continue
		default:
			t.Fatalf("release %s: component %s has no rule in this test", pr.Config.Name, c.Purpose)
		}
		if n > 0 {
			n = math.Min(n+slack, c.Sensitivity)
		}
		if gauss {
			out = append(out, pdpCharge{kind: "gaussian", x: n, y: c.Scale})
		} else {
			out = append(out, pdpCharge{kind: "pure", x: n / c.Scale})
		}
	}
	return out
}

// nearestRank returns the p-th percentile of xs by the nearest-rank
// definition (the ⌈p·n/100⌉-th smallest), the quantile SPEC 4.6 reports.
func nearestRank(xs []float64, p int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(p*len(s)+99)/100-1]
}

// relClose reports |got − want| ≤ tol·max(|want|, 1e-300), or both zero.
func relClose(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), 1e-300)
}

// pdpRecords splits the pdp topic by its type header, in offset order.
func pdpRecords(t *testing.T, msgs []kafka.Message) (sums []schema.PDPSummary, sumKeys []string, units []schema.PDPUnit, unitKeys []string) {
	t.Helper()
	for _, m := range msgs {
		typ := ""
		for _, h := range m.Headers {
			if h.Key == schema.PDPTypeHeader {
				typ = string(h.Value)
			}
		}
		switch typ {
		case schema.PDPTypeSummary:
			s, err := schema.DecodePDPSummary(m.Value)
			if err != nil {
				t.Fatalf("pdp summary at %d: %v", m.Offset, err)
			}
			sums, sumKeys = append(sums, s), append(sumKeys, string(m.Key))
		case schema.PDPTypeUnit:
			u, err := schema.DecodePDPUnit(m.Value)
			if err != nil {
				t.Fatalf("pdp unit at %d: %v", m.Offset, err)
			}
			units, unitKeys = append(units, u), append(unitKeys, string(m.Key))
		default:
			t.Errorf("pdp record at %d has type header %q, want %s or %s", m.Offset, typ, schema.PDPTypeUnit, schema.PDPTypeSummary)
		}
	}
	return sums, sumKeys, units, unitKeys
}

// TestEndToEndPDP runs the pipeline with per-instance DP (SPEC 4.6) over
// three windows of two streams (pdpConfig), with a restart of the pipeline
// after the second window (and of the embedded broker on the same data
// directory; an external broker keeps running), and checks the restricted
// pdp topic against values recomputed here from the kept events (first L
// per unit and window, in produce order) and the plan:
//
//   - one summary per stream and released window (key, header
//     pdp_summary), its releases in configuration order, each ok with
//     units = the window's units with kept events, p50 ≤ p90 ≤ p99 ≤ max ≤
//     dp_epsilon = the plan's Cost at the stream's δ (an empty window
//     released before the data, if any, has no units and charges nobody);
//   - every release's quantiles equal the nearest-rank quantiles of the
//     per-unit ε_u recomputed here: min(pdp.Account of the unit's charges
//     for that release, Cost). For the Laplace count ε_u = k/scale exactly;
//     for AdaOPS the posterior sample's charge is the exact OPS loss of the
//     unit's single row (with γ recovered from the published standard
//     errors), which the data make smaller than the worst case;
//   - one unit record per unit and window it appeared in (key, header
//     pdp_unit), whose account (ρ, pure ε, approximate ε and δ, charges)
//     and ε equal a pdp.Account rebuilt here over the windows so
//     far, with ε non-decreasing per unit and at most the stream's spent ε;
//   - the summary's cumulative distribution is that of the rebuilt
//     accounts of every unit seen so far: their number and maximum
//     exactly, p50, p90 and p99 from above within
//     pdpstore.QuantileError (after the restart too, both when the
//     release stage's on-disk store was kept, and caught up with the
//     topic, and when it was lost and rebuilt from the topic);
//   - across the restart: the units present in every window continue from
//     their earlier totals (window 2's records, written by the second run,
//     equal the accounts rebuilt over windows 0 to 2), no unit is charged
//     twice for a window, no window is summarized twice, and no window
//     summarized before the restart is summarized after it.
//
// Everything is deterministic (seeded data and noise); nothing is
// statistical. Tolerances: 0 for the count; a relative 1e-12 for the mix
// stream, where only the order of floating-point sums can differ; a
// relative 1e-9 for the ops stream, whose OPS loss depends on γ, which is
// recovered here from the published standard errors (a wrong row, λ, γ or
// δ, or the worst case in place of the exact loss, changes the values by
// 1e-5 relative or far more).
func TestEndToEndPDP(t *testing.T) {
	for _, c := range []struct {
		name      string
		loseStore bool
	}{{"store kept", false}, {"store lost", true}} {
		t.Run(c.name, func(t *testing.T) { testEndToEndPDP(t, c.loseStore) })
	}
}

// testEndToEndPDP is TestEndToEndPDP, with the release stage's pdp store
// directory removed before the second run when loseStore is set (a new
// pod without a volume).
func testEndToEndPDP(t *testing.T, loseStore bool) {
	h := newHarness(t, pdpConfig())
	rng := rand.New(rand.NewPCG(91, 3))
	streams := []pdpStreamData{
		{name: "mix", units: 90, maxEvents: 4, partitions: 4},
		{name: "ops", units: 90, maxEvents: 2, partitions: 4},
	}
	topic := map[string]string{}
	for _, sc := range h.cfg.Streams {
		topic[sc.Name] = sc.Topic
	}
	// Per stream: windows 0 and 1, then closers in window 2 (produced
	// before the restart), then window 2's data and closers in window 3
	// (after it). Window 3 is never released.
	before, after := map[string][]map[string]any{}, map[string][]map[string]any{}
	all := map[string][]map[string]any{}
	for _, sd := range streams {
		for w := int64(0); w < 2; w++ {
			before[sd.name] = append(before[sd.name], pdpWindowEvents(rng, sd, w)...)
		}
		before[sd.name] = append(before[sd.name], pdpClosers(rng, "c", 2, sd.partitions)...)
		after[sd.name] = append(pdpWindowEvents(rng, sd, 2), pdpClosers(rng, "d", 3, sd.partitions)...)
		all[sd.name] = append(slices.Clone(before[sd.name]), after[sd.name]...)
	}
	plans := map[string]*plan.Stream{}
	for i := range h.plan {
		plans[h.plan[i].Config.Name] = &h.plan[i]
	}
	truths := map[string]map[int64]*pdpWindowTruth{}
	for _, sd := range streams {
		truths[sd.name] = pdpTruth(t, all[sd.name], plans[sd.name].Config.Contribution.MaxEventsPerWindow)
	}

	released := func(windows int) func() bool {
		return func() bool {
			got := map[string]bool{}
			for _, r := range h.releases() {
				got[r.ReleaseID] = true
			}
			for _, ps := range h.plan {
				for _, pr := range ps.Releases {
					for w := 0; w < windows; w++ {
						if !got[plan.ReleaseID(ps.Config.Name, pr.Config.Name, base+int64(w)*1000)] {
							return false
						}
					}
				}
			}
			return true
		}
	}

	// First run: windows 0 and 1.
	for _, sd := range streams {
		h.ProduceJSON(topic[sd.name], before[sd.name], "user")
	}
	in := h.start("first", pipeline.Stages{Accumulate: true, Release: true}, noise.New(noise.SeededSource(93)))
	waitFor(t, 30*time.Second, "windows 0 and 1 released", released(2), in)
	in.stop()
	beforeRestart := len(h.ReadAll(h.cfg.Topics.PDP))
	h.Restart()
	if loseStore {
		if err := os.RemoveAll(h.cfg.PDPStore); err != nil {
			t.Fatal(err)
		}
	}

	// Second run on the same data directory: window 2.
	for _, sd := range streams {
		h.ProduceJSON(topic[sd.name], after[sd.name], "user")
	}
	in2 := h.start("second", pipeline.Stages{Accumulate: true, Release: true}, noise.New(noise.SeededSource(97)))
	waitFor(t, 30*time.Second, "window 2 released", released(pdpWindows), in2)
	// Let a duplicate summary, if the stage wrote one, reach the topic.
	time.Sleep(time.Second)
	in2.stop()

	msgs := h.ReadAll(h.cfg.Topics.PDP)
	sums, sumKeys, unitRecs, unitKeys := pdpRecords(t, msgs)
	byID := map[string]schema.Release{}
	for _, r := range h.releases() {
		byID[r.ReleaseID] = r
	}

	// The released windows per stream: the three data windows, and any
	// empty window the accumulate stage closed before the first data (a
	// partition whose first event is within the grace of a window start
	// closes the window before it); window 3 is never closed.
	windowsOf := map[string][]int64{}
	for _, r := range byID {
		if !slices.Contains(windowsOf[r.Stream], r.WindowStart) {
			windowsOf[r.Stream] = append(windowsOf[r.Stream], r.WindowStart)
		}
	}
	for _, sd := range streams {
		ws := windowsOf[sd.name]
		slices.Sort(ws)
		for w := int64(0); w < pdpWindows; w++ {
			if !slices.Contains(ws, base+w*1000) {
				t.Fatalf("%s: window %d not released (released: %v)", sd.name, w, ws)
			}
		}
		if ws[len(ws)-1] != base+2000 {
			t.Fatalf("%s: released windows %v; window 3 must stay open", sd.name, ws)
		}
	}

	// Summaries: exactly one per released window; after the restart only
	// windows not summarized before it.
	summary := map[string]schema.PDPSummary{}
	for i, s := range sums {
		if want := schema.PDPSummaryKey(s.Stream, s.WindowStart); sumKeys[i] != want {
			t.Errorf("summary of %s window %d has key %q, want %q", s.Stream, s.WindowStart, sumKeys[i], want)
		}
		if _, dup := summary[sumKeys[i]]; dup {
			t.Errorf("window %s summarized twice", sumKeys[i])
		}
		summary[sumKeys[i]] = s
	}
	nReleased := 0
	for _, sd := range streams {
		nReleased += len(windowsOf[sd.name])
	}
	if len(summary) != nReleased {
		t.Errorf("%d summarized windows, want one per released window (%d): %v", len(summary), nReleased, sumKeys)
	}
	summarizedBefore := map[string]bool{}
	for i, m := range msgs {
		if i < beforeRestart {
			summarizedBefore[string(m.Key)] = true
		} else if strings.HasPrefix(string(m.Key), "summary/") && summarizedBefore[string(m.Key)] {
			t.Errorf("after the restart, %s was summarized again", m.Key)
		}
	}
	for _, sd := range streams {
		for w := int64(0); w < 2; w++ {
			if key := schema.PDPSummaryKey(sd.name, base+w*1000); !summarizedBefore[key] {
				t.Errorf("%s was not summarized before the restart", key)
			}
		}
	}

	unitsByStream := map[string]map[string][]schema.PDPUnit{}
	for i, u := range unitRecs {
		if want := schema.PDPUnitKey(u.Stream, u.Unit); unitKeys[i] != want {
			t.Errorf("unit record of %s/%s has key %q, want %q", u.Stream, u.Unit, unitKeys[i], want)
		}
		if unitsByStream[u.Stream] == nil {
			unitsByStream[u.Stream] = map[string][]schema.PDPUnit{}
		}
		unitsByStream[u.Stream][u.Unit] = append(unitsByStream[u.Stream][u.Unit], u)
	}

	for _, sd := range streams {
		ps := plans[sd.name]
		delta := ps.Budget.Delta
		tol := 1e-12
		if sd.name == "ops" {
			tol = 1e-9
		}
		accts := map[string]pdp.Account{}
		var mechs []accountant.Mechanism
		exactOPS := 0
		for _, start := range windowsOf[sd.name] {
			wt := truths[sd.name][start]
			if wt == nil {
				wt = &pdpWindowTruth{units: map[string]*pdpUnitWindow{}} // an empty window
			}
			key := schema.PDPSummaryKey(sd.name, start)
			s, ok := summary[key]
			if !ok {
				t.Errorf("no summary %s", key)
				continue
			}
			if s.WindowEnd != start+1000 || s.Delta != delta || len(s.Releases) != len(ps.Releases) {
				t.Errorf("%s: window end %d, δ %v, %d releases; want %d, %v, %d", key, s.WindowEnd, s.Delta, len(s.Releases), start+1000, delta, len(ps.Releases))
				continue
			}
			unitNames := make([]string, 0, len(wt.units))
			for u := range wt.units {
				unitNames = append(unitNames, u)
			}
			slices.Sort(unitNames)
			for ri := range ps.Releases {
				pr := &ps.Releases[ri]
				got := s.Releases[ri]
				id := plan.ReleaseID(sd.name, pr.Config.Name, start)
				if rel, ok := byID[id]; !ok || rel.Status != "ok" {
					t.Fatalf("%s: release %+v, want it published ok", id, rel)
				}
				if got.Release != pr.Config.Name || got.Status != "ok" || got.Units != int64(len(unitNames)) || got.DPEpsilon != pr.Cost {
					t.Errorf("%s: pdp release %s status %s units %d dp_epsilon %v; want %s ok %d %v",
						id, got.Release, got.Status, got.Units, got.DPEpsilon, pr.Config.Name, len(unitNames), pr.Cost)
				}
				if !(got.P50 <= got.P90 && got.P90 <= got.P99 && got.P99 <= got.Max && got.Max <= got.DPEpsilon) {
					t.Errorf("%s: quantiles %v ≤ %v ≤ %v ≤ %v ≤ dp_epsilon %v do not hold", id, got.P50, got.P90, got.P99, got.Max, got.DPEpsilon)
				}
				mechs = append(mechs, pr.Mechanisms...)
				if len(unitNames) == 0 {
					// Nobody pays for an empty window; the quantiles are 0.
					if got.P50 != 0 || got.Max != 0 {
						t.Errorf("%s: empty window with quantiles %v..%v, want 0", id, got.P50, got.Max)
					}
					continue
				}
				var ops *pdpOPS
				if methodOf(pr.Config) == "adaops" {
					ops = newPDPOPS(t, byID[id], wt.reg)
					if !(got.LipschitzSigma > 0) {
						t.Errorf("%s: summary has no Lipschitz σ (%v); the exact Lipschitz charge would go untested", id, got.LipschitzSigma)
					}
				} else if got.LipschitzSigma != 0 {
					t.Errorf("%s: Lipschitz σ %v on a release without one", id, got.LipschitzSigma)
				}
				eps := make([]float64, 0, len(unitNames))
				for _, u := range unitNames {
					var one pdp.Account
					a := accts[u]
					for _, c := range pdpExpectedCharges(t, pr, wt.units[u], ops, wt.reg, got.LipschitzSigma) {
						c.apply(t, &one)
						c.apply(t, &a)
						if c.exact {
							exactOPS++
						}
					}
					accts[u] = a
					e := math.Min(one.Epsilon(delta), pr.Cost)
					if pr.Config.Kind == "count" {
						// Laplace: exactly k/scale (k ≤ L, so never above Cost).
						if want := pdp.LaplaceEpsilon(float64(wt.units[u].k), pr.Kind.Components()[0].Scale); e != want {
							t.Fatalf("test rebuild: count ε of %s is %v, want k/scale = %v", u, e, want)
						}
					}
					eps = append(eps, e)
				}
				for _, q := range []struct {
					name      string
					got, want float64
				}{
					{"p50", got.P50, nearestRank(eps, 50)}, {"p90", got.P90, nearestRank(eps, 90)},
					{"p99", got.P99, nearestRank(eps, 99)}, {"max", got.Max, slices.Max(eps)},
				} {
					qtol := tol
					if pr.Config.Kind == "count" {
						qtol = 0 // k/scale exactly
					}
					if !relClose(q.got, q.want, qtol) {
						t.Errorf("%s: per-unit ε %s %v, recomputed %v", id, q.name, q.got, q.want)
					}
				}
			}
			spent, err := accountant.Cost(mechs, delta)
			if err != nil {
				t.Fatal(err)
			}

			// Unit records of this window: one per unit that appeared.
			var cum []float64
			for u, a := range accts {
				want := a.Epsilon(delta)
				cum = append(cum, want)
				_, inWindow := wt.units[u]
				var rec *schema.PDPUnit
				for i, r := range unitsByStream[sd.name][u] {
					if r.LastWindow == start {
						if rec != nil {
							t.Errorf("%s/%s: two records for window %d (charged twice?)", sd.name, u, start)
						}
						rec = &unitsByStream[sd.name][u][i]
					}
				}
				switch {
				case !inWindow && rec != nil:
					t.Errorf("%s/%s: record for window %d, where it has no events", sd.name, u, start)
				case inWindow && rec == nil:
					t.Errorf("%s/%s: no record for window %d, where it has %d events", sd.name, u, start, wt.units[u].k)
				case inWindow:
					if rec.Charges != a.Charges || rec.Delta != delta ||
						!relClose(rec.GaussianRho, a.GaussianRho, tol) || !relClose(rec.PureRho, a.PureRho, tol) ||
						!relClose(rec.PureEpsilon, a.PureEpsilon, tol) || !relClose(rec.ApproxEpsilon, a.ApproxEpsilon, tol) ||
						!relClose(rec.ApproxDelta, a.ApproxDelta, tol) || !relClose(rec.Epsilon, want, tol) {
						t.Errorf("%s/%s window %d: record %+v; rebuilt account %+v with ε %v at δ %v", sd.name, u, start, *rec, a, want, delta)
					}
					if rec.Epsilon > spent*(1+1e-12) {
						t.Errorf("%s/%s window %d: cumulative per-instance ε %v exceeds the stream's spent ε %v", sd.name, u, start, rec.Epsilon, spent)
					}
				}
			}
			if s.CumulativeUnits != int64(len(accts)) {
				t.Errorf("%s: cumulative units %d, want %d (every unit seen so far)", key, s.CumulativeUnits, len(accts))
			}
			if len(cum) == 0 && (s.CumulativeP50 != 0 || s.CumulativeMax != 0) {
				t.Errorf("%s: no unit yet, cumulative quantiles %v..%v, want 0", key, s.CumulativeP50, s.CumulativeMax)
			}
			if len(cum) > 0 {
				// p50, p90 and p99 come from the store's histogram: never
				// below the exact quantile, at most pdpstore.QuantileError above.
				for _, q := range []struct {
					name      string
					got, want float64
					hist      bool
				}{
					{"p50", s.CumulativeP50, nearestRank(cum, 50), true}, {"p90", s.CumulativeP90, nearestRank(cum, 90), true},
					{"p99", s.CumulativeP99, nearestRank(cum, 99), true}, {"max", s.CumulativeMax, slices.Max(cum), false},
				} {
					ok := relClose(q.got, q.want, tol)
					if q.hist {
						ok = q.got >= q.want*(1-tol) && q.got <= q.want*(1+pdpstore.QuantileError)*(1+tol)
					}
					if !ok {
						t.Errorf("%s: cumulative %s %v, rebuilt %v", key, q.name, q.got, q.want)
					}
				}
			}
		}
		if sd.name == "ops" && exactOPS == 0 {
			t.Fatal("test data: no unit's OPS loss is below the worst case; the exact-loss check would be vacuous")
		}

		// Per unit: records in offset order have increasing windows and
		// non-decreasing ε, one per window it appeared in, and the units
		// present in every window continue across the restart.
		for u, recs := range unitsByStream[sd.name] {
			var windows []int64
			for w := int64(0); w < pdpWindows; w++ {
				if _, ok := truths[sd.name][base+w*1000].units[u]; ok {
					windows = append(windows, base+w*1000)
				}
			}
			var got []int64
			for i, r := range recs {
				got = append(got, r.LastWindow)
				if i > 0 && (r.Epsilon < recs[i-1].Epsilon || r.Charges <= recs[i-1].Charges || r.LastWindow <= recs[i-1].LastWindow) {
					t.Errorf("%s/%s: record %+v after %+v: windows must increase, ε must not decrease and charges must grow", sd.name, u, r, recs[i-1])
				}
			}
			if !slices.Equal(got, windows) {
				t.Errorf("%s/%s: records for windows %v, want one per window with events %v", sd.name, u, got, windows)
			}
			if len(recs) == pdpWindows && !(recs[2].Epsilon > recs[1].Epsilon) {
				t.Errorf("%s/%s: ε after window 2 (after the restart) %v, not above window 1's %v: the account did not continue", sd.name, u, recs[2].Epsilon, recs[1].Epsilon)
			}
		}
		full := 0
		for u := 0; u < pdpAlways; u++ {
			if len(unitsByStream[sd.name][fmt.Sprintf("u%d", u)]) == pdpWindows {
				full++
			}
		}
		if full != pdpAlways {
			t.Errorf("%s: %d of the %d units with events in every window have a record per window", sd.name, full, pdpAlways)
		}
	}
}
