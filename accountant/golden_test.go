package accountant

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// The golden vectors come from Google's dp_accounting RdpAccountant with
// default orders (see the file's "source" field). They are independent of
// this package: every expected value below is read from the file.

type goldenFile struct {
	Source       string               `json:"source"`
	Orders       []float64            `json:"orders"`
	RDPCurves    map[string][]float64 `json:"rdp_curves"`
	EpsilonCases []goldenEpsilonCase  `json:"epsilon_cases"`
	DeltaCases   []goldenDeltaCase    `json:"delta_cases"`
}

type goldenEpsilonCase struct {
	Name        string                     `json:"name"`
	Mechanism   string                     `json:"mechanism"`
	Params      map[string]json.RawMessage `json:"params"`
	Delta       float64                    `json:"delta"`
	Neighboring string                     `json:"neighboring"`
	EpsilonRDP  float64                    `json:"epsilon_rdp"`
}

type goldenDeltaCase struct {
	Mechanism       string  `json:"mechanism"`
	NoiseMultiplier float64 `json:"noise_multiplier"`
	Count           int     `json:"count"`
	Epsilon         float64 `json:"epsilon"`
	DeltaRDP        float64 `json:"delta_rdp"`
}

func loadGolden(t *testing.T) goldenFile {
	t.Helper()
	raw, err := os.ReadFile("../testdata/accounting.json")
	if err != nil {
		t.Fatalf("read golden vectors: %v", err)
	}
	var g goldenFile
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("decode golden vectors: %v", err)
	}
	if len(g.EpsilonCases) == 0 || len(g.DeltaCases) == 0 || len(g.RDPCurves) == 0 {
		t.Fatalf("golden file has %d epsilon cases, %d delta cases, %d curves; want all non-empty",
			len(g.EpsilonCases), len(g.DeltaCases), len(g.RDPCurves))
	}
	return g
}

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

// param decodes one numeric parameter of a golden case.
func param(c goldenEpsilonCase, name string) (float64, error) {
	raw, ok := c.Params[name]
	if !ok {
		return 0, fmt.Errorf("case %q: missing param %q", c.Name, name)
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("case %q: param %q: %w", c.Name, name, err)
	}
	return v, nil
}

// pair decodes a "mixed" component [parameter, count].
func pair(c goldenEpsilonCase, name string) (float64, int, error) {
	raw, ok := c.Params[name]
	if !ok {
		return 0, 0, fmt.Errorf("case %q: missing param %q", c.Name, name)
	}
	var v []float64
	if err := json.Unmarshal(raw, &v); err != nil || len(v) != 2 {
		return 0, 0, fmt.Errorf("case %q: param %q must be [value, count]: %v", c.Name, name, err)
	}
	return v[0], int(v[1]), nil
}

// goldenMechanisms translates a golden case into the Mechanism values the
// ledger would store. dp_accounting's noise_multiplier is σ/Δ2 for Gaussian
// and b/Δ1 for Laplace, so sensitivity 1 with scale = noise multiplier.
func goldenMechanisms(c goldenEpsilonCase) ([]Mechanism, error) {
	var firstErr error
	get := func(name string) float64 {
		v, err := param(c, name)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	}
	var ms []Mechanism
	switch c.Mechanism {
	case "gaussian":
		ms = []Mechanism{{Kind: KindGaussian, Scale: get("noise_multiplier"), Sensitivity: 1, Count: int(get("count"))}}
	case "laplace":
		ms = []Mechanism{{Kind: KindLaplace, Scale: get("noise_multiplier"), Sensitivity: 1, Count: int(get("count"))}}
	case "discrete_gaussian":
		ms = []Mechanism{{Kind: KindDiscreteGaussian, Scale: get("sigma"), Sensitivity: get("sensitivity"), Count: int(get("count"))}}
	case "randomized_response":
		ms = []Mechanism{{Kind: KindRandomizedResponse, Epsilon: get("noise_parameter"), K: int(get("num_buckets")), Count: int(get("count"))}}
	case "exponential":
		ms = []Mechanism{{Kind: KindExponential, Epsilon: get("epsilon"), Count: int(get("count"))}}
	case "zcdp":
		ms = []Mechanism{{Kind: KindZCDP, Epsilon: get("rho"), Count: int(get("count"))}}
	case "mixed":
		lb, ln, err1 := pair(c, "laplace")
		gz, gn, err2 := pair(c, "gaussian")
		ee, en, err3 := pair(c, "exponential")
		for _, err := range []error{err1, err2, err3} {
			if err != nil {
				return nil, err
			}
		}
		ms = []Mechanism{
			{Kind: KindLaplace, Scale: lb, Sensitivity: 1, Count: ln},
			{Kind: KindGaussian, Scale: gz, Sensitivity: 1, Count: gn},
			{Kind: KindExponential, Epsilon: ee, Count: en},
		}
	default:
		return nil, fmt.Errorf("case %q: unknown mechanism %q", c.Name, c.Mechanism)
	}
	return ms, firstErr
}

func curveOf(ms []Mechanism) (Curve, error) {
	c := ZeroCurve()
	for _, m := range ms {
		mc, err := m.Curve()
		if err != nil {
			return nil, err
		}
		c = c.Add(mc)
	}
	return c, nil
}

// composedExponential reports whether the case composes an exponential
// mechanism more than once. See TestGoldenEpsilon.
func composedExponential(ms []Mechanism) bool {
	for _, m := range ms {
		if m.Kind == KindExponential && m.Count > 1 {
			return true
		}
	}
	return false
}

func TestGoldenOrders(t *testing.T) {
	g := loadGolden(t)
	if len(g.Orders) != len(Orders) {
		t.Fatalf("len(Orders) = %d, golden has %d", len(Orders), len(g.Orders))
	}
	for i := range g.Orders {
		if Orders[i] != g.Orders[i] { // exact: the conversion depends on the orders bit for bit
			t.Errorf("Orders[%d] = %v, golden %v", i, Orders[i], g.Orders[i])
		}
	}
}

func TestGoldenCurves(t *testing.T) {
	g := loadGolden(t)
	build := map[string]Curve{
		"laplace b=1":  LaplaceCurve(1), // eps0 = Δ1/b = 1
		"gaussian z=1": GaussianCurve(1),
	}
	for name, want := range g.RDPCurves {
		t.Run(name, func(t *testing.T) {
			got, ok := build[name]
			if !ok {
				t.Fatalf("golden curve %q has no constructor in this test; add one", name)
			}
			if len(want) != len(got) {
				t.Fatalf("golden curve has %d orders, ours %d", len(want), len(got))
			}
			for i := range want {
				if d := math.Abs(got[i] - want[i]); d > 1e-9 {
					t.Errorf("order %v: got %.17g, golden %.17g (|diff| %.3g > 1e-9)", Orders[i], got[i], want[i], d)
				}
			}
		})
	}
}

// TestGoldenEpsilon checks every epsilon case to 1e-6 relative error.
//
// Known defect in the vectors: for "exponential eps=E xN" with N > 1, and for
// the "mixed" case with exponential(0.5)x2, the golden epsilon_rdp equals the
// value of ONE exponential mechanism (the generator dropped the count for
// ExponentialMechanismDpEvent). That cannot be the RDP accountant's answer for
// a composition: RDP composes additively (Mironov 2017, Prop. 1, and
// dp_accounting multiplies every event's curve by its count), so N > 1
// applications must cost strictly more than one. Accepting those values
// would under-charge. For those cases the test asserts instead that (a) the
// golden value is reproduced to 1e-6 with the exponential count forced to 1,
// which identifies the defect exactly, and (b) the correctly composed value
// is strictly larger. If the vectors are regenerated correctly, (a) fails and
// tells you to delete this special case.
func TestGoldenEpsilon(t *testing.T) {
	g := loadGolden(t)
	for i, c := range g.EpsilonCases {
		t.Run(fmt.Sprintf("%02d %s delta=%g", i, c.Name, c.Delta), func(t *testing.T) {
			ms, err := goldenMechanisms(c)
			if err != nil {
				t.Fatal(err)
			}
			wantRel := "ADD_OR_REMOVE_ONE"
			if c.Mechanism == "randomized_response" {
				wantRel = "REPLACE_ONE"
			}
			if c.Neighboring != wantRel {
				t.Errorf("golden neighbouring relation %q, this package's curve is for %q", c.Neighboring, wantRel)
			}
			curve, err := curveOf(ms)
			if err != nil {
				t.Fatal(err)
			}
			got := Epsilon(curve, c.Delta)
			if !composedExponential(ms) {
				if e := relErr(got, c.EpsilonRDP); e > 1e-6 {
					t.Errorf("Epsilon = %.17g, golden %.17g (rel err %.3g > 1e-6)", got, c.EpsilonRDP, e)
				}
				return
			}
			single := make([]Mechanism, len(ms))
			copy(single, ms)
			for j := range single {
				if single[j].Kind == KindExponential {
					single[j].Count = 1
				}
			}
			sc, err := curveOf(single)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(Epsilon(sc, c.Delta), c.EpsilonRDP); e > 1e-6 {
				t.Fatalf("known-defect case no longer matches a single exponential application (rel err %.3g); "+
					"if the vectors were regenerated, drop the composedExponential special case. Composed value %.17g, golden %.17g",
					e, got, c.EpsilonRDP)
			}
			if got <= c.EpsilonRDP*(1+1e-6) {
				t.Errorf("composed Epsilon %.17g should exceed the single-application golden %.17g", got, c.EpsilonRDP)
			}
			t.Logf("golden vector defect: epsilon_rdp %.6g is one exponential application; composed value is %.6g", c.EpsilonRDP, got)
		})
	}
}

func TestGoldenDelta(t *testing.T) {
	g := loadGolden(t)
	for i, c := range g.DeltaCases {
		t.Run(fmt.Sprintf("%02d %s z=%g x%d eps=%g", i, c.Mechanism, c.NoiseMultiplier, c.Count, c.Epsilon), func(t *testing.T) {
			if c.Mechanism != "gaussian" {
				t.Fatalf("unsupported golden delta mechanism %q", c.Mechanism)
			}
			m := Mechanism{Kind: KindGaussian, Scale: c.NoiseMultiplier, Sensitivity: 1, Count: c.Count}
			curve, err := m.Curve()
			if err != nil {
				t.Fatal(err)
			}
			got := Delta(curve, c.Epsilon)
			if e := relErr(got, c.DeltaRDP); e > 1e-6 {
				t.Errorf("Delta = %.17g, golden %.17g (rel err %.3g > 1e-6)", got, c.DeltaRDP, e)
			}
		})
	}
}
