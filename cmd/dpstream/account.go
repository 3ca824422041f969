package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/capacity"
)

// Neighbouring relations as reported by `dpstream account`, spelled like
// dp_accounting's NeighboringRelation values (lower case).
const (
	relAddRemove  = "add_or_remove_one"
	relReplaceOne = "replace_one"
)

func cmdAccount(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("account", "MECHANISM... [--delta D | --epsilon E] [--json]", `
A privacy calculator that needs no pipeline: give the mechanisms, get the
(ε, δ) guarantee of running all of them on the same data. The composition
is computed by Rényi DP with the accountant the pipeline's budget filter
uses (dp_accounting's RDP accountant and default orders); when every
mechanism is pure ε-DP the plain sum of their ε (basic composition) is
printed too, and the smaller of the two is the answer.

Each mechanism flag may be repeated and its value may end in xN to compose
the mechanism N times (default 1): --gaussian 1.3x17 is seventeen Gaussian
releases with noise multiplier 1.3. With --delta (default 1e-6) the command
prints ε; with --epsilon it prints δ instead. The table lists each
mechanism's cost alone at the same δ (or ε).

Every mechanism is accounted under add/remove-one-unit neighbours (adding or
removing all of one privacy unit's events), except --rr (randomized
response), whose guarantee is for replace-one neighbours; a total mixing the
two is sound only if the relations agree for the stream.

With --adversary linear (or poly2, poly3) it also prints the mechanisms'
capacity-bounded figure (Chaudhuri, Imola & Machanavajjhala 2019): the
divergence — KL, or Rényi of order --alpha — between the outputs on two
neighbouring inputs as seen by an adversary who may only post-process them
with functions of that class, beside the same divergence unrestricted. It
is a relaxation for reporting, not a guarantee: it holds only against that
class (no post-processing invariance beyond it) and composes only
non-adaptively; the (ε, δ) above is what the budget enforces. It is
computed for Laplace and Gaussian noise (continuous or discrete).

Example:
  dpstream account --gaussian 1.3x17 --laplace 2x5 --delta 1e-6
  dpstream account --laplace 1 --adversary linear`, stdout, stderr)
	var ms []mechInput
	for _, k := range mechKinds {
		fs.Var(&mechFlag{kind: k, list: &ms}, k.flag, k.usage)
	}
	delta := fs.Float64("delta", 1e-6, "print ε at this `δ`, in (0, 1)")
	epsilon := fs.Float64("epsilon", 0, "print δ at this `ε` (>= 0) instead of ε; excludes --delta")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	adversary := fs.String("adversary", "", "also print the capacity-bounded figure against `linear`, poly2 or poly3 adversaries")
	alpha := fs.Float64("alpha", 1, "with --adversary: the divergence, KL (1, default) or Rényi of this `order` (> 1)")
	// Every positional argument is a mistake, reported below with a hint
	// of its own: mechanisms are flags.
	pos, code, done := parseArgs(fs, args, len(args), stdout)
	if done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "dpstream account: "+format+"\n", a...)
		return exitConfig
	}
	if len(pos) > 0 {
		return fail("unexpected argument %q: give mechanisms as flags, e.g. --gaussian 1.3x17 (see 'dpstream account --help')", pos[0])
	}
	if len(ms) == 0 {
		return fail("no mechanism given: add at least one of --gaussian, --laplace, --discrete-gaussian, --discrete-laplace, --pure, --exponential, --rr, --zcdp (see 'dpstream account --help')")
	}
	byEpsilon := flagSet(fs, "epsilon")
	if byEpsilon && flagSet(fs, "delta") {
		return fail("give either --delta (to print ε) or --epsilon (to print δ), not both")
	}
	if byEpsilon {
		if !(*epsilon >= 0) || math.IsInf(*epsilon, 1) {
			return fail("--epsilon must be a finite number >= 0, got %v", *epsilon)
		}
	} else if !(*delta > 0 && *delta < 1) {
		return fail("--delta must be in (0, 1) (e.g. 1e-6), got %v; to certify δ = 0 use --epsilon and read pure_epsilon", *delta)
	}

	var r accountReport
	var err error
	if byEpsilon {
		r, err = accountDelta(ms, *epsilon)
	} else {
		r, err = accountEpsilon(ms, *delta)
	}
	if err != nil {
		return fail("%v", err)
	}
	if *adversary != "" || flagSet(fs, "alpha") {
		if *adversary == "" {
			return fail("--alpha is the order of the capacity-bounded figure: give --adversary linear, poly2 or poly3 with it")
		}
		if r.Adversary, err = adversaryFigure(ms, *adversary, *alpha); err != nil {
			return fail("%v", err)
		}
	}
	if *asJSON {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "dpstream account: encode JSON: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	printAccount(stdout, r)
	return exitOK
}

// mechKind describes one mechanism flag: its syntax and how a parameter
// string (the flag value without its xN suffix) becomes a Mechanism.
type mechKind struct {
	flag  string
	usage string // flag usage; the back-quoted word is the value's syntax
	parse func(param string) (accountant.Mechanism, []accountParam, error)
}

// accountParam is one named parameter of a mechanism as the user gave it,
// named like the golden vectors and dp_accounting's events.
type accountParam struct {
	name  string
	value float64
}

// mechKinds are the mechanism flags, in the order the help lists them. The
// noise multipliers of --gaussian and --laplace are dp_accounting's
// (GaussianDpEvent, LaplaceDpEvent): σ/Δ2 and b/Δ1, so the mechanism is
// built with sensitivity 1 and scale = the multiplier.
var mechKinds = []mechKind{
	{
		flag:  "gaussian",
		usage: "Gaussian noise with noise multiplier σ/Δ2 = `Z[xN]`",
		parse: func(s string) (accountant.Mechanism, []accountParam, error) {
			z, err := parsePositive(s, "noise multiplier Z")
			return accountant.Mechanism{Kind: accountant.KindGaussian, Scale: z, Sensitivity: 1},
				[]accountParam{{"noise_multiplier", z}}, err
		},
	},
	{
		flag:  "laplace",
		usage: "Laplace noise with noise multiplier b/Δ1 = `B[xN]` (ε0 = 1/B)",
		parse: func(s string) (accountant.Mechanism, []accountParam, error) {
			b, err := parsePositive(s, "noise multiplier B")
			return accountant.Mechanism{Kind: accountant.KindLaplace, Scale: b, Sensitivity: 1},
				[]accountParam{{"noise_multiplier", b}}, err
		},
	},
	{
		flag:  "discrete-gaussian",
		usage: "discrete Gaussian noise `SIGMA[:SENS][xN]`: σ and the L2 sensitivity in the same units, e.g. grid steps (SENS default 1)",
		parse: func(s string) (accountant.Mechanism, []accountParam, error) {
			sigma, sens, err := scaleAndSensitivity(s, "SIGMA")
			return accountant.Mechanism{Kind: accountant.KindDiscreteGaussian, Scale: sigma, Sensitivity: sens},
				[]accountParam{{"sigma", sigma}, {"sensitivity", sens}}, err
		},
	},
	{
		flag:  "discrete-laplace",
		usage: "discrete Laplace noise P(k) ∝ exp(−|k|/B), `B[:SENS][xN]`: B and the L1 sensitivity in the same units, e.g. grid steps (SENS default 1); ε0 = SENS/B",
		parse: func(s string) (accountant.Mechanism, []accountParam, error) {
			b, sens, err := scaleAndSensitivity(s, "B")
			return accountant.Mechanism{Kind: accountant.KindDiscreteLaplace, Scale: b, Sensitivity: sens},
				[]accountParam{{"scale", b}, {"sensitivity", sens}}, err
		},
	},
	{
		flag:  "pure",
		usage: "any pure ε0-DP mechanism, `EPS[xN]`",
		parse: func(s string) (accountant.Mechanism, []accountParam, error) {
			e, err := parsePositive(s, "EPS")
			return accountant.Mechanism{Kind: accountant.KindPure, Epsilon: e}, []accountParam{{"epsilon", e}}, err
		},
	},
	{
		flag:  "exponential",
		usage: "exponential mechanism (or report-noisy-max with Gumbel noise) with parameter `EPS[xN]`",
		parse: func(s string) (accountant.Mechanism, []accountParam, error) {
			e, err := parsePositive(s, "EPS")
			return accountant.Mechanism{Kind: accountant.KindExponential, Epsilon: e}, []accountParam{{"epsilon", e}}, err
		},
	},
	{
		flag:  "rr",
		usage: "k-ary randomized response `P:K[xN]`: noise parameter p in (0, 1] (the probability of a uniformly random answer) and k >= 2 categories; replace-one neighbours",
		parse: parseRRFlag,
	},
	{
		flag:  "zcdp",
		usage: "any ρ-zCDP mechanism, `RHO[xN]`",
		parse: func(s string) (accountant.Mechanism, []accountParam, error) {
			rho, err := parsePositive(s, "RHO")
			return accountant.Mechanism{Kind: accountant.KindZCDP, Epsilon: rho}, []accountParam{{"rho", rho}}, err
		},
	},
}

// mechInput is one mechanism given on the command line, validated.
type mechInput struct {
	flag   string // flag name without dashes
	value  string // the value as typed
	m      accountant.Mechanism
	params []accountParam
	curve  accountant.Curve // m.Curve(), Count applications
}

// mechFlag is a repeatable mechanism flag. All mechanism flags append to the
// same list, so the report keeps the command line's order.
type mechFlag struct {
	kind mechKind
	list *[]mechInput
}

// String is required by flag.Value; the flags have no default to show.
func (f *mechFlag) String() string { return "" }

// Set parses one occurrence of the flag. The returned error is printed by
// the flag package after `invalid value "…" for flag -name:`.
func (f *mechFlag) Set(v string) error {
	param, count, err := splitAccountCount(v)
	if err != nil {
		return err
	}
	m, params, err := f.kind.parse(param)
	if err != nil {
		return err
	}
	m.Count = count
	c, err := m.Curve()
	if err != nil {
		return fmt.Errorf("no usable guarantee (%w); use less extreme parameters or a smaller count", err)
	}
	*f.list = append(*f.list, mechInput{flag: f.kind.flag, value: v, m: m, params: params, curve: c})
	return nil
}

// splitAccountCount splits "PARAMxN" into PARAM and N, with N = 1 when there is no
// x suffix. N must be a whole number >= 1: a count of 0 would silently mean
// "nothing released", which is never what a calculator user wants to ask.
func splitAccountCount(v string) (string, int, error) {
	i := strings.LastIndexByte(v, 'x')
	if i < 0 {
		return v, 1, nil
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("count %q after x must be a whole number >= 1 (PARAMxN composes the mechanism N times)", v[i+1:])
	}
	return v[:i], n, nil
}

// parsePositive parses s as a positive finite number; what names it in the
// error.
func parsePositive(s, what string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number", what, s)
	}
	if !(x > 0) || math.IsInf(x, 1) {
		return 0, fmt.Errorf("%s must be a positive finite number, got %s", what, s)
	}
	return x, nil
}

// scaleAndSensitivity parses "SCALE[:SENS]", SENS defaulting to 1.
func scaleAndSensitivity(s, scaleName string) (scale, sens float64, err error) {
	scaleStr, sensStr, hasSens := strings.Cut(s, ":")
	if scale, err = parsePositive(scaleStr, scaleName); err != nil {
		return 0, 0, err
	}
	sens = 1
	if hasSens {
		if sens, err = parsePositive(sensStr, "sensitivity SENS"); err != nil {
			return 0, 0, err
		}
	}
	return scale, sens, nil
}

func parseRRFlag(s string) (accountant.Mechanism, []accountParam, error) {
	pStr, kStr, ok := strings.Cut(s, ":")
	if !ok {
		return accountant.Mechanism{}, nil, fmt.Errorf("want P:K, e.g. 0.5:10 (noise parameter p and k categories), got %q", s)
	}
	p, err := strconv.ParseFloat(pStr, 64)
	if err != nil || !(p > 0 && p <= 1) {
		return accountant.Mechanism{}, nil, fmt.Errorf("noise parameter P must be a number in (0, 1], got %q", pStr)
	}
	k, err := strconv.Atoi(kStr)
	if err != nil || k < 2 {
		return accountant.Mechanism{}, nil, fmt.Errorf("number of categories K must be a whole number >= 2, got %q", kStr)
	}
	return accountant.Mechanism{Kind: accountant.KindRandomizedResponse, Epsilon: p, K: k},
		[]accountParam{{"noise_parameter", p}, {"num_buckets", float64(k)}}, nil
}

// neighbouringOf is the relation m's curve is stated for (accountant.Mechanism).
func neighbouringOf(m accountant.Mechanism) string {
	if m.Kind == accountant.KindRandomizedResponse {
		return relReplaceOne
	}
	return relAddRemove
}

// accountReport is the result of `dpstream account`, also its --json form.
// Exactly one of the ε-mode fields (delta given, epsilon_rdp) or δ-mode
// fields (epsilon given, delta_rdp) is set.
type accountReport struct {
	Inputs     accountInputs `json:"inputs"`
	Mechanisms []mechReport  `json:"mechanisms"`
	// EpsilonRDP is the RDP bound on ε at Inputs.Delta (ε mode).
	EpsilonRDP *float64 `json:"epsilon_rdp,omitempty"`
	// DeltaRDP is the RDP bound on δ at Inputs.Epsilon (δ mode).
	DeltaRDP *float64 `json:"delta_rdp,omitempty"`
	// Order is the RDP order at which the conversion attains the bound;
	// omitted when no order gives a non-vacuous bound.
	Order *float64 `json:"order,omitempty"`
	// PureEpsilon is the basic-composition sum, present only when every
	// mechanism is pure ε-DP; it holds with δ = 0.
	PureEpsilon *float64 `json:"pure_epsilon,omitempty"`
	// Epsilon (ε mode) or Delta (δ mode) is the answer: the smaller of the
	// RDP and the pure bound; Bound says which ("rdp" or "pure").
	Epsilon  *float64 `json:"epsilon,omitempty"`
	Delta    *float64 `json:"delta,omitempty"`
	Bound    string   `json:"bound"`
	Warnings []string `json:"warnings,omitempty"`
	// Adversary is the capacity-bounded figure, with --adversary.
	Adversary *adversaryReport `json:"adversary,omitempty"`
}

// adversaryReport is the mechanisms' capacity-bounded figure: the
// divergence against a restricted class of adversaries, composed
// non-adaptively (accountant/capacity), beside the unrestricted one.
type adversaryReport struct {
	Class        string  `json:"class"`
	Divergence   string  `json:"divergence"`
	Alpha        float64 `json:"alpha"`
	Restricted   float64 `json:"restricted"`
	Unrestricted float64 `json:"unrestricted"`
}

// adversaryFigure composes the mechanisms' figures against class (by name)
// for the divergence of order alpha (1: KL).
func adversaryFigure(ms []mechInput, class string, alpha float64) (*adversaryReport, error) {
	c, err := capacity.ParseClass(class)
	if err != nil {
		return nil, fmt.Errorf("--adversary %q is not one of linear, poly2, poly3", class)
	}
	if !(alpha >= 1) || math.IsInf(alpha, 0) {
		return nil, fmt.Errorf("--alpha must be 1 (KL) or a finite order > 1, got %v", alpha)
	}
	div := capacity.Renyi(alpha)
	out := &adversaryReport{Class: class, Divergence: div.String(), Alpha: alpha}
	for _, in := range ms {
		p, err := capacity.Figures(in.m, c, div)
		if err != nil {
			if errors.Is(err, capacity.ErrUnsupported) {
				return nil, fmt.Errorf("--%s %s: the capacity-bounded figure is computed for Laplace and Gaussian noise only (--laplace, --gaussian, --discrete-laplace, --discrete-gaussian)", in.flag, in.value)
			}
			if errors.Is(err, capacity.ErrNotComputable) {
				return nil, fmt.Errorf("--%s %s: the capacity-bounded figure is not computable here (%v); the unrestricted figure without --adversary still holds", in.flag, in.value, err)
			}
			return nil, fmt.Errorf("--%s %s: %v", in.flag, in.value, err)
		}
		out.Restricted = capacity.ComposeNonAdaptive(out.Restricted, p.Restricted)
		out.Unrestricted += p.Unrestricted
	}
	return out, nil
}

type accountInputs struct {
	Delta   *float64 `json:"delta,omitempty"`
	Epsilon *float64 `json:"epsilon,omitempty"`
}

// mechReport is one mechanism of the report with its cost alone.
type mechReport struct {
	Flag         string             `json:"flag"`
	Value        string             `json:"value"`
	Kind         string             `json:"kind"`
	Params       map[string]float64 `json:"params"`
	Count        int                `json:"count"`
	Neighbouring string             `json:"neighbouring"`
	EpsilonRDP   *float64           `json:"epsilon_rdp,omitempty"` // alone, at the input δ
	DeltaRDP     *float64           `json:"delta_rdp,omitempty"`   // alone, at the input ε
	PureEpsilon  *float64           `json:"pure_epsilon,omitempty"`
}

// composeInputs sums the curves and pure epsilons of ms and fills the
// per-mechanism part of the report.
func composeInputs(ms []mechInput) (r accountReport, total accountant.Curve, pure float64, allPure bool) {
	total = accountant.ZeroCurve()
	allPure = true
	rels := map[string]bool{}
	for _, in := range ms {
		total = total.Add(in.curve)
		mr := mechReport{
			Flag: in.flag, Value: in.value, Kind: in.m.Kind, Params: map[string]float64{},
			Count: in.m.Count, Neighbouring: neighbouringOf(in.m),
		}
		for _, p := range in.params {
			mr.Params[p.name] = p.value
		}
		if e, ok := in.m.PureEpsilon(); ok {
			mr.PureEpsilon = float64Ptr(e)
			pure += e
		} else {
			allPure = false
		}
		rels[mr.Neighbouring] = true
		r.Mechanisms = append(r.Mechanisms, mr)
	}
	if rels[relReplaceOne] && rels[relAddRemove] {
		r.Warnings = append(r.Warnings, "randomized response (--rr) is accounted under replace-one neighbours and the other mechanisms "+
			"under add/remove one unit: the total is sound only if the two relations agree for this stream "+
			"(e.g. a fixed population of producers)")
	}
	return r, total, pure, allPure
}

// accountEpsilon reports ε at delta. The answer is accountant.Cost, the
// number the budget filter would charge: min(RDP conversion, pure sum when
// every mechanism is pure).
func accountEpsilon(ms []mechInput, delta float64) (accountReport, error) {
	r, total, pure, allPure := composeInputs(ms)
	r.Inputs.Delta = float64Ptr(delta)
	for i, in := range ms {
		r.Mechanisms[i].EpsilonRDP = float64Ptr(accountant.Epsilon(in.curve, delta))
	}
	rdp := accountant.Epsilon(total, delta)
	if math.IsInf(rdp, 0) || math.IsNaN(rdp) || math.IsInf(pure, 0) {
		return r, errors.New("the composition has no finite guarantee (parameters too extreme); use more noise or fewer applications")
	}
	r.EpsilonRDP = float64Ptr(rdp)
	if o, ok := rdpBestOrder(total, func(c accountant.Curve) float64 { return accountant.Epsilon(c, delta) }, rdp); ok {
		r.Order = float64Ptr(o)
	}
	accs := make([]accountant.Mechanism, len(ms))
	for i, in := range ms {
		accs[i] = in.m
	}
	eps, err := accountant.Cost(accs, delta)
	if err != nil {
		return r, fmt.Errorf("compose: %w", err)
	}
	r.Epsilon = float64Ptr(eps)
	r.Bound = "rdp"
	if allPure {
		r.PureEpsilon = float64Ptr(pure)
		if pure < rdp {
			r.Bound = "pure"
		}
	}
	return r, nil
}

// accountDelta reports δ at epsilon: the RDP bound, or 0 when every
// mechanism is pure and the pure sum is at most epsilon (an (ε_p, 0)-DP
// mechanism is (ε, 0)-DP for every ε >= ε_p).
func accountDelta(ms []mechInput, epsilon float64) (accountReport, error) {
	r, total, pure, allPure := composeInputs(ms)
	r.Inputs.Epsilon = float64Ptr(epsilon)
	for i, in := range ms {
		r.Mechanisms[i].DeltaRDP = float64Ptr(accountant.Delta(in.curve, epsilon))
	}
	rdp := accountant.Delta(total, epsilon)
	if math.IsNaN(rdp) || math.IsInf(pure, 0) {
		return r, errors.New("the composition has no finite guarantee (parameters too extreme); use more noise or fewer applications")
	}
	r.DeltaRDP = float64Ptr(rdp)
	if rdp < 1 {
		if o, ok := rdpBestOrder(total, func(c accountant.Curve) float64 { return accountant.Delta(c, epsilon) }, rdp); ok {
			r.Order = float64Ptr(o)
		}
	}
	r.Delta = float64Ptr(rdp)
	r.Bound = "rdp"
	if allPure {
		r.PureEpsilon = float64Ptr(pure)
		if pure <= epsilon {
			r.Delta = float64Ptr(0.0)
			r.Bound = "pure"
		}
	}
	return r, nil
}

// rdpBestOrder returns the order at which convert (accountant.Epsilon or
// accountant.Delta at a fixed δ or ε) attains want on c. The accountant
// exports the minimum over orders but not the minimising order, and the
// conversion formula must not be duplicated here, so each order is isolated
// instead: a curve equal to c at order i and +Inf elsewhere converts to
// exactly order i's term (+Inf RDP gives ε = +Inf and δ = 1, never the
// minimum), computed by the same code with the same operands, so the order
// whose isolated value equals want is the minimiser. ok is false if none
// does (want was not produced by convert on c).
func rdpBestOrder(c accountant.Curve, convert func(accountant.Curve) float64, want float64) (float64, bool) {
	if len(c) != len(accountant.Orders) {
		return 0, false
	}
	one := make(accountant.Curve, len(c))
	for i := range c {
		for j := range one {
			one[j] = math.Inf(1)
		}
		one[i] = c[i]
		if convert(one) == want {
			return accountant.Orders[i], true
		}
	}
	return 0, false
}

func float64Ptr(x float64) *float64 { return &x }

// mechanismDesc is the table's description of a mechanism, e.g. "gaussian z=1.3".
func mechanismDesc(m mechReport) string {
	switch m.Kind {
	case accountant.KindGaussian:
		return fmt.Sprintf("gaussian z=%g", m.Params["noise_multiplier"])
	case accountant.KindLaplace:
		return fmt.Sprintf("laplace b=%g (ε0=%.4g)", m.Params["noise_multiplier"], 1/m.Params["noise_multiplier"])
	case accountant.KindDiscreteGaussian:
		return fmt.Sprintf("discrete gaussian σ=%g Δ2=%g", m.Params["sigma"], m.Params["sensitivity"])
	case accountant.KindDiscreteLaplace:
		return fmt.Sprintf("discrete laplace b=%g Δ1=%g", m.Params["scale"], m.Params["sensitivity"])
	case accountant.KindPure:
		return fmt.Sprintf("pure ε0=%g", m.Params["epsilon"])
	case accountant.KindExponential:
		return fmt.Sprintf("exponential ε0=%g", m.Params["epsilon"])
	case accountant.KindRandomizedResponse:
		return fmt.Sprintf("randomized response p=%g k=%g", m.Params["noise_parameter"], m.Params["num_buckets"])
	case accountant.KindZCDP:
		return fmt.Sprintf("zcdp ρ=%g", m.Params["rho"])
	}
	return m.Kind
}

func neighbouringDesc(rel string) string {
	if rel == relReplaceOne {
		return "replace one"
	}
	return "add/remove one"
}

// accountNum is the table's number format: six significant digits (--json has
// full precision).
func accountNum(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

func printAccount(w io.Writer, r accountReport) {
	byDelta := r.Inputs.Delta != nil
	col := ""
	if byDelta {
		col = fmt.Sprintf("ε alone at δ=%g", *r.Inputs.Delta)
	} else {
		col = fmt.Sprintf("δ alone at ε=%g", *r.Inputs.Epsilon)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mechanism\tcount\tneighbours\t%s (RDP)\tpure ε\n", col)
	for _, m := range r.Mechanisms {
		alone := ""
		if byDelta {
			alone = accountNum(*m.EpsilonRDP)
		} else {
			alone = accountNum(*m.DeltaRDP)
		}
		pure := "—"
		if m.PureEpsilon != nil {
			pure = accountNum(*m.PureEpsilon)
		}
		fmt.Fprintf(tw, "%s\t×%d\t%s\t%s\t%s\n", mechanismDesc(m), m.Count, neighbouringDesc(m.Neighbouring), alone, pure)
	}
	tw.Flush()
	fmt.Fprintln(w)

	order := ""
	if r.Order != nil {
		order = fmt.Sprintf(", order α=%g", *r.Order)
	}
	if byDelta {
		fmt.Fprintf(w, "total: ε = %s at δ = %g (RDP%s)\n", accountNum(*r.EpsilonRDP), *r.Inputs.Delta, order)
		if r.PureEpsilon != nil {
			fmt.Fprintf(w, "pure composition: ε = %s (δ = 0)\n", accountNum(*r.PureEpsilon))
			if r.Bound == "pure" {
				fmt.Fprintf(w, "smaller: pure composition, ε = %s (it holds with δ = 0)\n", accountNum(*r.Epsilon))
			} else {
				fmt.Fprintf(w, "smaller: RDP, ε = %s at δ = %g\n", accountNum(*r.Epsilon), *r.Inputs.Delta)
			}
		}
	} else {
		eps := *r.Inputs.Epsilon
		fmt.Fprintf(w, "total: δ = %s at ε = %g (RDP%s)\n", accountNum(*r.DeltaRDP), eps, order)
		if r.PureEpsilon != nil {
			if r.Bound == "pure" {
				fmt.Fprintf(w, "pure composition: ε = %s <= %g, so δ = 0 (smaller than RDP)\n", accountNum(*r.PureEpsilon), eps)
			} else {
				fmt.Fprintf(w, "pure composition: ε = %s > %g, no guarantee at ε = %g; RDP applies\n", accountNum(*r.PureEpsilon), eps, eps)
			}
		}
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	if a := r.Adversary; a != nil {
		fmt.Fprintf(w, "against %s adversaries (%s, non-adaptive composition): %s (unrestricted %s %s)\n",
			a.Class, a.Divergence, accountNum(a.Restricted), a.Divergence, accountNum(a.Unrestricted))
		fmt.Fprintln(w, "  a relaxation: it holds only against that class and for non-adaptive composition; the guarantee is the (ε, δ) above")
	}
}
