package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/accountant"
)

// The golden vectors come from Google's dp_accounting RdpAccountant (see the
// file's "source" field). Every expected value in the golden tests below is
// read from the file, never produced by the code under test.

var accountGoldenPath = filepath.Join("..", "..", "testdata", "accounting.json")

type accountGolden struct {
	EpsilonCases []accountGoldenEps   `json:"epsilon_cases"`
	DeltaCases   []accountGoldenDelta `json:"delta_cases"`
}

type accountGoldenEps struct {
	Name        string                     `json:"name"`
	Mechanism   string                     `json:"mechanism"`
	Params      map[string]json.RawMessage `json:"params"`
	Delta       float64                    `json:"delta"`
	Neighboring string                     `json:"neighboring"`
	EpsilonRDP  float64                    `json:"epsilon_rdp"`
}

type accountGoldenDelta struct {
	Mechanism       string  `json:"mechanism"`
	NoiseMultiplier float64 `json:"noise_multiplier"`
	Count           int     `json:"count"`
	Epsilon         float64 `json:"epsilon"`
	DeltaRDP        float64 `json:"delta_rdp"`
}

func loadAccountGolden(t *testing.T) accountGolden {
	t.Helper()
	raw, err := os.ReadFile(accountGoldenPath)
	if err != nil {
		t.Fatalf("read golden vectors: %v", err)
	}
	var g accountGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("decode golden vectors: %v", err)
	}
	if len(g.EpsilonCases) == 0 || len(g.DeltaCases) == 0 {
		t.Fatalf("golden file has %d epsilon and %d delta cases; want both non-empty", len(g.EpsilonCases), len(g.DeltaCases))
	}
	return g
}

// accountArg is one mechanism flag built from a golden case: the flag, its
// parameter string (without xN) and its count.
type accountArg struct {
	flag  string
	param string
	count int
}

func (a accountArg) args() []string {
	return []string{"--" + a.flag, fmt.Sprintf("%sx%d", a.param, a.count)}
}

// exactNum formats a golden parameter so that it parses back to the same float64.
func exactNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// accountGoldenArgs translates a golden epsilon case into command-line mechanism
// flags. dp_accounting's noise_multiplier is σ/Δ2 for Gaussian and b/Δ1 for
// Laplace, which is what --gaussian and --laplace take.
func accountGoldenArgs(c accountGoldenEps) ([]accountArg, error) {
	var firstErr error
	get := func(name string) float64 {
		raw, ok := c.Params[name]
		if !ok {
			if firstErr == nil {
				firstErr = fmt.Errorf("case %q: missing param %q", c.Name, name)
			}
			return 0
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("case %q: param %q: %w", c.Name, name, err)
		}
		return v
	}
	pair := func(name string) accountArg {
		var v []float64
		if err := json.Unmarshal(c.Params[name], &v); (err != nil || len(v) != 2) && firstErr == nil {
			firstErr = fmt.Errorf("case %q: param %q must be [value, count]", c.Name, name)
			return accountArg{}
		}
		return accountArg{name, exactNum(v[0]), int(v[1])}
	}
	var as []accountArg
	switch c.Mechanism {
	case "gaussian", "laplace":
		as = []accountArg{{c.Mechanism, exactNum(get("noise_multiplier")), int(get("count"))}}
	case "discrete_gaussian":
		as = []accountArg{{"discrete-gaussian", exactNum(get("sigma")) + ":" + exactNum(get("sensitivity")), int(get("count"))}}
	case "randomized_response":
		as = []accountArg{{"rr", exactNum(get("noise_parameter")) + ":" + exactNum(get("num_buckets")), int(get("count"))}}
	case "exponential":
		as = []accountArg{{"exponential", exactNum(get("epsilon")), int(get("count"))}}
	case "zcdp":
		as = []accountArg{{"zcdp", exactNum(get("rho")), int(get("count"))}}
	case "mixed":
		as = []accountArg{pair("laplace"), pair("gaussian"), pair("exponential")}
	default:
		return nil, fmt.Errorf("case %q: unknown mechanism %q: teach accountArgs its flags", c.Name, c.Mechanism)
	}
	return as, firstErr
}

// accountComposedExponential reports whether the case composes an exponential
// mechanism more than once: the golden vectors' known defect (see
// TestAccountGoldenEpsilon), identified exactly as accountant/golden_test.go
// identifies it.
func accountComposedExponential(as []accountArg) bool {
	for _, a := range as {
		if a.flag == "exponential" && a.count > 1 {
			return true
		}
	}
	return false
}

// accountJSON runs `dpstream account ... --json` and decodes the report.
func accountJSON(t *testing.T, args ...string) accountReport {
	t.Helper()
	args = append([]string{"account", "--json"}, args...)
	code, stdout, stderr := runAccountCLI(t, args...)
	if code != exitOK {
		t.Fatalf("%v: exit %d, want 0; stderr:\n%s", args, code, stderr)
	}
	if stderr != "" {
		t.Errorf("%v: unexpected stderr:\n%s", args, stderr)
	}
	var r accountReport
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%v: stdout is not one report object: %v\n%s", args, err, stdout)
	}
	if dec.More() {
		t.Errorf("%v: stdout has more than one JSON value:\n%s", args, stdout)
	}
	return r
}

// runAccountCLI runs one command through dispatch, as main does, and returns
// its exit code and output.
func runAccountCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func accountRelErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

func showFloat(p *float64) string {
	if p == nil {
		return "<absent>"
	}
	return exactNum(*p)
}

// accountTextbookPure is the basic-composition ε of a golden case when every
// mechanism in it is pure (count·ε0, Dwork et al. 2006), from the textbook
// ε0 of each kind: Laplace 1/b, exponential ε, randomized response
// log(k/p − k + 1) (replace-one). ok is false if some mechanism is not pure.
func accountTextbookPure(as []accountArg) (float64, bool, error) {
	sum := 0.0
	for _, a := range as {
		var e0 float64
		switch a.flag {
		case "laplace":
			b, err := strconv.ParseFloat(a.param, 64)
			if err != nil {
				return 0, false, err
			}
			e0 = 1 / b
		case "exponential":
			e, err := strconv.ParseFloat(a.param, 64)
			if err != nil {
				return 0, false, err
			}
			e0 = e
		case "rr":
			ps, ks, _ := strings.Cut(a.param, ":")
			p, err1 := strconv.ParseFloat(ps, 64)
			k, err2 := strconv.ParseFloat(ks, 64)
			if err1 != nil || err2 != nil {
				return 0, false, fmt.Errorf("rr param %q", a.param)
			}
			e0 = math.Log(k/p - k + 1)
		default:
			return 0, false, nil
		}
		sum += float64(a.count) * e0
	}
	return sum, true, nil
}

// TestAccountGoldenEpsilon runs every epsilon case of the golden file through
// the command line and checks epsilon_rdp to 1e-6 relative error.
//
// Known defect in the vectors (documented in accountant/golden_test.go): for
// "exponential eps=E xN" with N > 1, and for the "mixed" case with
// exponential(0.5)x2, the golden epsilon_rdp is the value of ONE exponential
// mechanism (the generator dropped the count). RDP composes additively
// (Mironov 2017, Prop. 1), so the command must print the correctly composed
// value, which is larger. For those cases the test asserts instead that
// (a) the command reproduces the golden value to 1e-6 when the exponential
// count is forced to 1, which identifies the defect exactly, (b) the
// composed value it prints is strictly larger, and (c) the composed value is
// the accountant's for the composed mechanisms. If the vectors are
// regenerated correctly, (a) fails and says to drop the special case.
func TestAccountGoldenEpsilon(t *testing.T) {
	g := loadAccountGolden(t)
	for i, c := range g.EpsilonCases {
		t.Run(fmt.Sprintf("%02d %s delta=%g", i, c.Name, c.Delta), func(t *testing.T) {
			as, err := accountGoldenArgs(c)
			if err != nil {
				t.Fatal(err)
			}
			build := func(as []accountArg) []string {
				args := []string{"--delta", exactNum(c.Delta)}
				for _, a := range as {
					args = append(args, a.args()...)
				}
				return args
			}
			r := accountJSON(t, build(as)...)
			if r.EpsilonRDP == nil || r.Epsilon == nil || r.DeltaRDP != nil || r.Delta != nil {
				t.Fatalf("ε mode report: epsilon_rdp %s, epsilon %s, delta_rdp %s, delta %s; want the first two only",
					showFloat(r.EpsilonRDP), showFloat(r.Epsilon), showFloat(r.DeltaRDP), showFloat(r.Delta))
			}
			if r.Inputs.Delta == nil || *r.Inputs.Delta != c.Delta {
				t.Errorf("inputs.delta = %s, want %v", showFloat(r.Inputs.Delta), c.Delta)
			}
			if len(r.Mechanisms) != len(as) {
				t.Fatalf("%d mechanisms reported, %d given", len(r.Mechanisms), len(as))
			}
			for j, m := range r.Mechanisms {
				if m.Flag != as[j].flag || m.Count != as[j].count {
					t.Errorf("mechanism %d reported as --%s x%d, given --%s x%d", j, m.Flag, m.Count, as[j].flag, as[j].count)
				}
				if !strings.EqualFold(m.Neighbouring, c.Neighboring) {
					t.Errorf("mechanism %d: neighbouring %q, golden %q", j, m.Neighbouring, c.Neighboring)
				}
			}

			// Pure composition, against the textbook ε0 of each kind.
			wantPure, allPure, err := accountTextbookPure(as)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !allPure && r.PureEpsilon != nil:
				t.Errorf("pure_epsilon = %v reported for a composition that is not pure", *r.PureEpsilon)
			case allPure && r.PureEpsilon == nil:
				t.Errorf("pure_epsilon absent, want %v (every mechanism is pure)", wantPure)
			case allPure && accountRelErr(*r.PureEpsilon, wantPure) > 1e-12:
				t.Errorf("pure_epsilon = %v, textbook count·ε0 = %v", *r.PureEpsilon, wantPure)
			}
			// The answer is the smaller of the two bounds.
			wantEps, wantBound := *r.EpsilonRDP, "rdp"
			if allPure && r.PureEpsilon != nil && *r.PureEpsilon < wantEps {
				wantEps, wantBound = *r.PureEpsilon, "pure"
			}
			if *r.Epsilon != wantEps || r.Bound != wantBound {
				t.Errorf("epsilon = %v (bound %q), want min(rdp %v, pure %s) = %v (%q)",
					*r.Epsilon, r.Bound, *r.EpsilonRDP, showFloat(r.PureEpsilon), wantEps, wantBound)
			}

			got := *r.EpsilonRDP
			if !accountComposedExponential(as) {
				if e := accountRelErr(got, c.EpsilonRDP); e > 1e-6 {
					t.Errorf("epsilon_rdp = %.17g, golden %.17g (rel err %.3g > 1e-6)", got, c.EpsilonRDP, e)
				}
				return
			}
			single := make([]accountArg, len(as))
			copy(single, as)
			var ms []accountant.Mechanism // the composed mechanisms, for (c)
			for j := range single {
				p, err := strconv.ParseFloat(strings.Split(single[j].param, ":")[0], 64)
				if err != nil {
					t.Fatal(err)
				}
				switch single[j].flag {
				case "exponential":
					ms = append(ms, accountant.Mechanism{Kind: accountant.KindExponential, Epsilon: p, Count: single[j].count})
					single[j].count = 1
				case "laplace":
					ms = append(ms, accountant.Mechanism{Kind: accountant.KindLaplace, Scale: p, Sensitivity: 1, Count: single[j].count})
				case "gaussian":
					ms = append(ms, accountant.Mechanism{Kind: accountant.KindGaussian, Scale: p, Sensitivity: 1, Count: single[j].count})
				default:
					t.Fatalf("known-defect case with an unexpected --%s flag", single[j].flag)
				}
			}
			rs := accountJSON(t, build(single)...)
			if e := accountRelErr(*rs.EpsilonRDP, c.EpsilonRDP); e > 1e-6 {
				t.Fatalf("known-defect case no longer matches a single exponential application (rel err %.3g); "+
					"if the vectors were regenerated, drop the composedExponential special case. Composed value %.17g, golden %.17g",
					e, got, c.EpsilonRDP)
			}
			if got <= c.EpsilonRDP*(1+1e-6) {
				t.Errorf("composed epsilon_rdp %.17g should exceed the single-application golden %.17g", got, c.EpsilonRDP)
			}
			curve := accountant.ZeroCurve()
			for _, m := range ms {
				mc, err := m.Curve()
				if err != nil {
					t.Fatal(err)
				}
				curve = curve.Add(mc)
			}
			if want := accountant.Epsilon(curve, c.Delta); accountRelErr(got, want) > 1e-12 {
				t.Errorf("composed epsilon_rdp %.17g, accountant.Epsilon of the composed curve %.17g", got, want)
			}
			t.Logf("golden vector defect: epsilon_rdp %.6g is one exponential application; the command prints the composed %.6g", c.EpsilonRDP, got)
		})
	}
}

// TestAccountGoldenDelta runs every delta case of the golden file with
// --epsilon and checks delta_rdp to 1e-6 relative error.
func TestAccountGoldenDelta(t *testing.T) {
	g := loadAccountGolden(t)
	for i, c := range g.DeltaCases {
		t.Run(fmt.Sprintf("%02d %s z=%g x%d eps=%g", i, c.Mechanism, c.NoiseMultiplier, c.Count, c.Epsilon), func(t *testing.T) {
			if c.Mechanism != "gaussian" {
				t.Fatalf("unsupported golden delta mechanism %q: teach this test its flag", c.Mechanism)
			}
			r := accountJSON(t, "--epsilon", exactNum(c.Epsilon), "--gaussian", fmt.Sprintf("%sx%d", exactNum(c.NoiseMultiplier), c.Count))
			if r.DeltaRDP == nil || r.Delta == nil || r.EpsilonRDP != nil || r.Epsilon != nil {
				t.Fatalf("δ mode report: delta_rdp %s, delta %s, epsilon_rdp %s, epsilon %s; want the first two only",
					showFloat(r.DeltaRDP), showFloat(r.Delta), showFloat(r.EpsilonRDP), showFloat(r.Epsilon))
			}
			if r.Inputs.Epsilon == nil || *r.Inputs.Epsilon != c.Epsilon {
				t.Errorf("inputs.epsilon = %s, want %v", showFloat(r.Inputs.Epsilon), c.Epsilon)
			}
			if e := accountRelErr(*r.DeltaRDP, c.DeltaRDP); e > 1e-6 {
				t.Errorf("delta_rdp = %.17g, golden %.17g (rel err %.3g > 1e-6)", *r.DeltaRDP, c.DeltaRDP, e)
			}
			// A Gaussian is not pure: the answer is the RDP bound.
			if r.PureEpsilon != nil || *r.Delta != *r.DeltaRDP || r.Bound != "rdp" {
				t.Errorf("pure_epsilon %s, delta %v, bound %q; want no pure bound and delta = delta_rdp", showFloat(r.PureEpsilon), *r.Delta, r.Bound)
			}
		})
	}
}

// TestAccountOrder checks the reported order against the CKS 2020 (Prop. 12)
// conversion written out for n Gaussian mechanisms, whose RDP is
// ε(α) = nα/(2z²) (Mironov 2017, Prop. 7): at the reported order the
// formula must give epsilon_rdp, and no default order may give less.
func TestAccountOrder(t *testing.T) {
	cases := []struct {
		z     float64
		n     int
		delta float64
	}{
		{1.3, 17, 1e-6}, {1, 1, 1e-5}, {10, 1000, 1e-8}, {0.5, 7, 1e-5},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("z=%g x%d delta=%g", c.z, c.n, c.delta), func(t *testing.T) {
			r := accountJSON(t, "--gaussian", fmt.Sprintf("%sx%d", exactNum(c.z), c.n), "--delta", exactNum(c.delta))
			if r.Order == nil {
				t.Fatal("no order reported")
			}
			cks := func(a float64) float64 {
				rdp := float64(c.n) * a / (2 * c.z * c.z)
				return rdp + math.Log1p(-1/a) - math.Log(c.delta*a)/(a-1)
			}
			if e := accountRelErr(cks(*r.Order), *r.EpsilonRDP); e > 1e-12 {
				t.Errorf("at the reported order %v the conversion gives %.17g, epsilon_rdp is %.17g", *r.Order, cks(*r.Order), *r.EpsilonRDP)
			}
			for _, a := range accountant.Orders {
				if v := cks(a); v < *r.EpsilonRDP*(1-1e-12) {
					t.Errorf("order %v gives %.17g < epsilon_rdp %.17g at the reported order %v", a, v, *r.EpsilonRDP, *r.Order)
				}
			}
		})
	}
}

// TestAccountText checks the human-readable output: the table, the total
// line with the same numbers as --json, the pure line only when every
// mechanism is pure, which bound is smaller, and the neighbouring warning.
func TestAccountText(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    []string // substrings of stdout
		notWant []string
	}{
		{
			name: "issue example",
			args: []string{"--gaussian", "1.3x17", "--laplace", "2x5", "--delta", "1e-6"},
			want: []string{"gaussian z=1.3", "×17", "laplace b=2 (ε0=0.5)", "×5", "add/remove one",
				"total: ε = %e at δ = 1e-06 (RDP, order α=%o)"},
			notWant: []string{"pure composition", "warning"},
		},
		{
			name:    "all pure, pure smaller",
			args:    []string{"--laplace", "1", "--pure", "0.5x2"},
			want:    []string{"total: ε = %e at δ = 1e-06 (RDP, order α=%o)", "pure composition: ε = 2 (δ = 0)", "smaller: pure composition, ε = 2"},
			notWant: []string{"smaller: RDP"},
		},
		{
			name: "all pure, RDP smaller",
			args: []string{"--laplace", "10x100"},
			want: []string{"pure composition: ε = 10 (δ = 0)", "smaller: RDP, ε = %e at δ = 1e-06"},
		},
		{
			name: "epsilon mode",
			args: []string{"--gaussian", "1x10", "--epsilon", "5"},
			want: []string{"δ alone at ε=5", "total: δ = %d at ε = 5 (RDP, order α=%o)"},
		},
		{
			name: "epsilon mode, pure gives delta 0",
			args: []string{"--laplace", "10x3", "--epsilon", "1"},
			want: []string{"pure composition: ε = 0.3 <= 1, so δ = 0"},
		},
		{
			name: "epsilon mode, pure above epsilon",
			args: []string{"--laplace", "1x3", "--epsilon", "1"},
			want: []string{"pure composition: ε = 3 > 1, no guarantee at ε = 1; RDP applies"},
		},
		{
			name: "mixed relations warn",
			args: []string{"--rr", "0.5:10", "--zcdp", "0.01"},
			want: []string{"randomized response p=0.5 k=10", "replace one", "zcdp ρ=0.01",
				"warning: randomized response (--rr) is accounted under replace-one"},
		},
		{
			name:    "randomized response alone does not warn",
			args:    []string{"--rr", "0.25:2x20"},
			want:    []string{"replace one", "pure composition"},
			notWant: []string{"warning"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := accountJSON(t, c.args...)
			code, stdout, stderr := runAccountCLI(t, append([]string{"account"}, c.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
			}
			// %e, %d and %o stand for the JSON report's RDP ε, RDP δ and
			// order, so the text and --json must agree.
			sub := func(s string) string {
				if r.EpsilonRDP != nil {
					s = strings.ReplaceAll(s, "%e", accountNum(*r.EpsilonRDP))
				}
				if r.DeltaRDP != nil {
					s = strings.ReplaceAll(s, "%d", accountNum(*r.DeltaRDP))
				}
				if r.Order != nil {
					s = strings.ReplaceAll(s, "%o", exactNum(*r.Order))
				}
				return s
			}
			for _, w := range c.want {
				if w = sub(w); !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, stdout)
				}
			}
			if n := strings.Count(stdout, "\n"); n < len(r.Mechanisms)+3 {
				t.Errorf("want a header, %d mechanism rows and a total; got %d lines:\n%s", len(r.Mechanisms), n, stdout)
			}
		})
	}
}

// TestAccountJSONShape checks the --json breakdown: one entry per flag in
// command-line order, the parameters as given, each mechanism's cost alone
// (which for a single mechanism is the total), and that the output is a
// single JSON object.
func TestAccountJSONShape(t *testing.T) {
	r := accountJSON(t, "--zcdp", "0.5", "--discrete-laplace", "4:2x3", "--gaussian", "2", "--discrete-gaussian", "3x2", "--exponential", "0.1")
	want := []struct {
		flag   string
		kind   string
		params map[string]float64
		count  int
		pure   bool
	}{
		{"zcdp", accountant.KindZCDP, map[string]float64{"rho": 0.5}, 1, false},
		{"discrete-laplace", accountant.KindDiscreteLaplace, map[string]float64{"scale": 4, "sensitivity": 2}, 3, true},
		{"gaussian", accountant.KindGaussian, map[string]float64{"noise_multiplier": 2}, 1, false},
		{"discrete-gaussian", accountant.KindDiscreteGaussian, map[string]float64{"sigma": 3, "sensitivity": 1}, 2, false},
		{"exponential", accountant.KindExponential, map[string]float64{"epsilon": 0.1}, 1, true},
	}
	if len(r.Mechanisms) != len(want) {
		t.Fatalf("%d mechanisms, want %d", len(r.Mechanisms), len(want))
	}
	for i, w := range want {
		m := r.Mechanisms[i]
		if m.Flag != w.flag || m.Kind != w.kind || m.Count != w.count || fmt.Sprint(m.Params) != fmt.Sprint(w.params) {
			t.Errorf("mechanism %d = --%s %s x%d %v, want --%s %s x%d %v", i, m.Flag, m.Kind, m.Count, m.Params, w.flag, w.kind, w.count, w.params)
		}
		if (m.PureEpsilon != nil) != w.pure || m.EpsilonRDP == nil || m.DeltaRDP != nil {
			t.Errorf("mechanism %d: pure_epsilon %s (want present: %v), epsilon_rdp %s, delta_rdp %s",
				i, showFloat(m.PureEpsilon), w.pure, showFloat(m.EpsilonRDP), showFloat(m.DeltaRDP))
		}
	}
	// discrete Laplace: ε0 = Δ1/b = 2/4, three times.
	if p := r.Mechanisms[1].PureEpsilon; p == nil || accountRelErr(*p, 1.5) > 1e-15 {
		t.Errorf("discrete laplace 4:2x3 pure_epsilon = %s, want 3·2/4 = 1.5", showFloat(p))
	}
	if r.PureEpsilon != nil {
		t.Errorf("pure_epsilon %v reported though zcdp and gaussian are not pure", *r.PureEpsilon)
	}
	// Composition can only cost more than any part alone.
	for i, m := range r.Mechanisms {
		if *m.EpsilonRDP > *r.EpsilonRDP {
			t.Errorf("mechanism %d alone costs %v > the total %v", i, *m.EpsilonRDP, *r.EpsilonRDP)
		}
	}
	// zcdp 0.5 alone is the golden "zcdp rho=0.5" case (5.2215396311544175 at δ=1e-6).
	single := accountJSON(t, "--zcdp", "0.5")
	if *single.Mechanisms[0].EpsilonRDP != *single.EpsilonRDP || *r.Mechanisms[0].EpsilonRDP != *single.EpsilonRDP {
		t.Errorf("zcdp alone: row %v, total %v, row in the mixed report %v; want all equal",
			*single.Mechanisms[0].EpsilonRDP, *single.EpsilonRDP, *r.Mechanisms[0].EpsilonRDP)
	}
}

func TestAccountErrors(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantStderr []string
	}{
		{"no mechanism", nil, []string{"no mechanism given", "--gaussian"}},
		{"no mechanism, delta only", []string{"--delta", "1e-5"}, []string{"no mechanism given"}},
		{"delta and epsilon", []string{"--gaussian", "1", "--delta", "1e-5", "--epsilon", "1"}, []string{"either --delta", "or --epsilon", "not both"}},
		{"delta zero", []string{"--gaussian", "1", "--delta", "0"}, []string{"--delta must be in (0, 1)", "got 0"}},
		{"delta one", []string{"--gaussian", "1", "--delta", "1"}, []string{"--delta must be in (0, 1)"}},
		{"delta negative", []string{"--gaussian", "1", "--delta", "-1e-6"}, []string{"--delta must be in (0, 1)"}},
		{"delta NaN", []string{"--gaussian", "1", "--delta", "NaN"}, []string{"--delta must be in (0, 1)"}},
		{"delta not a number", []string{"--gaussian", "1", "--delta", "small"}, []string{`invalid value "small" for flag -delta`}},
		{"epsilon negative", []string{"--gaussian", "1", "--epsilon", "-1"}, []string{"--epsilon must be a finite number >= 0"}},
		{"epsilon infinite", []string{"--gaussian", "1", "--epsilon", "+Inf"}, []string{"--epsilon must be a finite number >= 0"}},
		{"bad number", []string{"--gaussian", "abc"}, []string{`invalid value "abc" for flag -gaussian`, `noise multiplier Z "abc" is not a number`}},
		{"negative multiplier", []string{"--laplace", "-2x5"}, []string{`invalid value "-2x5" for flag -laplace`, "must be a positive finite number"}},
		{"zero multiplier", []string{"--gaussian", "0"}, []string{"must be a positive finite number"}},
		{"infinite multiplier", []string{"--gaussian", "Inf"}, []string{"must be a positive finite number"}},
		{"count zero", []string{"--gaussian", "1x0"}, []string{`count "0" after x must be a whole number >= 1`}},
		{"count fractional", []string{"--gaussian", "1x1.5"}, []string{`count "1.5" after x must be a whole number >= 1`}},
		{"count negative", []string{"--pure", "1x-3"}, []string{`count "-3" after x`}},
		{"count missing", []string{"--pure", "1x"}, []string{`count "" after x`}},
		{"rr without k", []string{"--rr", "0.5"}, []string{"want P:K"}},
		{"rr p above 1", []string{"--rr", "1.5:2"}, []string{"noise parameter P must be a number in (0, 1]"}},
		{"rr p zero", []string{"--rr", "0:2"}, []string{"noise parameter P must be a number in (0, 1]"}},
		{"rr k one", []string{"--rr", "0.5:1"}, []string{"number of categories K must be a whole number >= 2"}},
		{"rr k fractional", []string{"--rr", "0.5:2.5x3"}, []string{"number of categories K"}},
		{"discrete gaussian zero sensitivity", []string{"--discrete-gaussian", "1:0"}, []string{"sensitivity SENS must be a positive finite number"}},
		{"discrete laplace bad scale", []string{"--discrete-laplace", "b:1"}, []string{`B "b" is not a number`}},
		{"zcdp negative", []string{"--zcdp", "-0.1"}, []string{"RHO must be a positive finite number"}},
		{"exponential not a number", []string{"--exponential", "e"}, []string{`EPS "e" is not a number`}},
		{"no finite guarantee", []string{"--pure", "1e308x10"}, []string{"no usable guarantee", "use less extreme parameters"}},
		{"total overflows", []string{"--pure", "1e308", "--pure", "1e308"}, []string{"no finite guarantee"}},
		{"positional argument", []string{"gaussian", "1.3x17"}, []string{`unexpected argument "gaussian"`, "give mechanisms as flags"}},
		{"unknown flag", []string{"--poisson", "1"}, []string{"flag provided but not defined: -poisson", "Usage: dpstream account"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runAccountCLI(t, append([]string{"account"}, c.args...)...)
			if code != exitConfig {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitConfig, stdout, stderr)
			}
			if stdout != "" {
				t.Errorf("a usage error printed to stdout:\n%s", stdout)
			}
			for _, w := range c.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestAccountHelp(t *testing.T) {
	flags := []string{"gaussian", "laplace", "discrete-gaussian", "discrete-laplace", "pure", "exponential", "rr", "zcdp", "delta", "epsilon", "json"}
	for _, args := range [][]string{{"account", "--help"}, {"account", "-h"}, {"help", "account"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runAccountCLI(t, args...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
			}
			if !strings.HasPrefix(stdout, "Usage: dpstream account ") {
				t.Errorf("stdout does not start with the usage line:\n%s", stdout)
			}
			for _, f := range flags {
				if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(f) + `\b`).MatchString(stdout) {
					t.Errorf("usage does not document flag -%s:\n%s", f, stdout)
				}
			}
			for _, w := range []string{"add/remove-one-unit", "replace-one", "xN", "dpstream account --gaussian 1.3x17 --laplace 2x5 --delta 1e-6"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("help lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
	t.Run("listed in dpstream help", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := dispatch(t.Context(), []string{"help"}, &out, &errOut); code != exitOK {
			t.Fatalf("exit %d", code)
		}
		if !regexp.MustCompile(`(?m)^  account +\S`).MatchString(out.String()) {
			t.Errorf("account is not listed with a summary:\n%s", out.String())
		}
	})
}

// TestAccountAdversary: --adversary prints the capacity-bounded figure
// beside the unrestricted one: the closed forms for one Laplace (ε = 1:
// √2 − 1 − log((1 + √2)/2) against linear adversaries, e^{−1} unrestricted)
// and one Gaussian (linear adversaries see the whole KL, 1/(2σ²)), and
// non-adaptive composition adds; refused for mechanisms without an
// additive-noise law, and for a bad class or order.
func TestAccountAdversary(t *testing.T) {
	account := func(args ...string) (int, string, string) {
		t.Helper()
		return runAccountCLI(t, append([]string{"account"}, args...)...)
	}
	lapLinear := math.Sqrt2 - 1 - math.Log((1+math.Sqrt2)/2)
	for _, tc := range []struct {
		args                     []string
		restricted, unrestricted float64
	}{
		{[]string{"--laplace", "1", "--adversary", "linear"}, lapLinear, math.Exp(-1)},
		{[]string{"--gaussian", "2", "--adversary", "linear"}, 0.125, 0.125},
		{[]string{"--laplace", "1x3", "--gaussian", "2", "--adversary", "linear"}, 3*lapLinear + 0.125, 3*math.Exp(-1) + 0.125},
	} {
		code, out, errOut := account(append(tc.args, "--json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		var r accountReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		a := r.Adversary
		if a == nil || math.Abs(a.Restricted-tc.restricted) > 1e-9 || math.Abs(a.Unrestricted-tc.unrestricted) > 1e-9 || a.Divergence != "KL" {
			t.Errorf("%v: %+v, want restricted %v, unrestricted %v", tc.args, a, tc.restricted, tc.unrestricted)
		}
		_, text, _ := account(tc.args...)
		if !strings.Contains(text, "against linear adversaries (KL, non-adaptive composition)") || !strings.Contains(text, "a relaxation") {
			t.Errorf("%v: the table lacks the figure:\n%s", tc.args, text)
		}
	}
	// Rényi of order 2 against poly2 is below the unrestricted one.
	code, out, _ := account("--laplace", "1", "--adversary", "poly2", "--alpha", "2", "--json")
	var r accountReport
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Adversary == nil || !(r.Adversary.Restricted < r.Adversary.Unrestricted) || r.Adversary.Divergence != "Renyi(2)" {
		t.Errorf("poly2 Rényi(2): exit %d, %+v", code, r.Adversary)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pure", "1", "--adversary", "linear"}, "computed for Laplace and Gaussian noise only"},
		{[]string{"--laplace", "1", "--adversary", "cubic"}, `--adversary "cubic" is not one of linear, poly2, poly3`},
		{[]string{"--laplace", "1", "--adversary", "linear", "--alpha", "0.5"}, "--alpha must be 1 (KL) or a finite order > 1"},
		{[]string{"--laplace", "1", "--alpha", "2"}, "give --adversary linear, poly2 or poly3 with it"},
	} {
		code, _, errOut := account(tc.args...)
		if code != exitConfig || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", tc.args, code, errOut, exitConfig, tc.want)
		}
	}
}
