package accountant

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// No test here draws random numbers: the checks against the definitions are
// deterministic numerical sums and integrals, so there is no false-failure
// rate to state. Expected values are hand-derived (shown beside each), taken
// from the golden file, or computed from the definition of the Rényi
// divergence independently of the closed forms under test.

// ---------------------------------------------------------------------------
// Orders and curve arithmetic

func TestOrdersShape(t *testing.T) {
	if len(Orders) != 156 {
		t.Fatalf("len(Orders) = %d, want 156", len(Orders))
	}
	for i := 1; i < len(Orders); i++ {
		if !(Orders[i] > Orders[i-1]) {
			t.Fatalf("Orders not strictly increasing at %d: %v <= %v", i, Orders[i], Orders[i-1])
		}
	}
	for _, tc := range []struct {
		i    int
		want float64
	}{{0, 1.1}, {98, 10.9}, {99, 11}, {151, 63}, {152, 128}, {155, 1024}} {
		if Orders[tc.i] != tc.want {
			t.Errorf("Orders[%d] = %v, want %v", tc.i, Orders[tc.i], tc.want)
		}
	}
}

func TestOrdersMutationDoesNotAffectAccounting(t *testing.T) {
	saved := Orders[0]
	Orders[0] = 1000
	defer func() { Orders[0] = saved }()
	if got := GaussianCurve(1)[0]; got != 1.1/2 { // α/(2z²) at α = 1.1, z = 1
		t.Fatalf("GaussianCurve(1)[0] = %v after mutating Orders, want %v", got, 1.1/2)
	}
}

func curvesClose(t *testing.T, what string, got, want Curve, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	for i := range want {
		if e := relErr(got[i], want[i]); e > rel {
			t.Errorf("%s: order %v: got %.17g want %.17g (rel %.3g > %g)", what, orders[i], got[i], want[i], e, rel)
			return
		}
	}
}

func isInfCurve(c Curve) bool {
	if len(c) != numOrders {
		return false
	}
	for _, v := range c {
		if !math.IsInf(v, 1) {
			return false
		}
	}
	return true
}

func TestCurveAddScale(t *testing.T) {
	g, l := GaussianCurve(2), LaplaceCurve(0.5)
	sum := g.Add(l)
	for i := range sum {
		if sum[i] != g[i]+l[i] {
			t.Fatalf("Add at %d: %v != %v + %v", i, sum[i], g[i], l[i])
		}
	}
	curvesClose(t, "Add commutes", l.Add(g), sum, 0)
	curvesClose(t, "nil acts as zero (left)", Curve(nil).Add(g), g, 0)
	curvesClose(t, "nil acts as zero (right)", g.Add(nil), g, 0)
	curvesClose(t, "nil+nil", Curve(nil).Add(nil), ZeroCurve(), 0)
	curvesClose(t, "Scale(3) = c+c+c", g.Scale(3), g.Add(g).Add(g), 1e-15)
	curvesClose(t, "Scale(0)", g.Scale(0), ZeroCurve(), 0)
	curvesClose(t, "Scale(0) of an Inf curve", infCurve().Scale(0), ZeroCurve(), 0)
	curvesClose(t, "nil.Scale", Curve(nil).Scale(5), ZeroCurve(), 0)

	// Receiver and argument are not modified.
	g0 := GaussianCurve(2)
	_ = g.Add(l)
	_ = g.Scale(7)
	curvesClose(t, "receiver unchanged", g, g0, 0)

	// Malformed input makes the result maximally conservative.
	for name, c := range map[string]Curve{
		"short+ok":  Curve{1, 2}.Add(g),
		"ok+short":  g.Add(Curve{1}),
		"scale -1":  g.Scale(-1),
		"scale NaN": g.Scale(math.NaN()),
		"short*2":   Curve{1}.Scale(2),
	} {
		if !isInfCurve(c) {
			t.Errorf("%s: want +Inf at every order, got %v", name, c[:3])
		}
	}
}

// Composition is additive: an account's curve after several charges, and a
// mechanism's curve with Count n, are the sums of the single curves.
func TestCompositionIsAdditive(t *testing.T) {
	ms := []Mechanism{
		{Kind: KindGaussian, Scale: 3, Sensitivity: 2},
		{Kind: KindLaplace, Scale: 2, Sensitivity: 1},
		{Kind: KindDiscreteLaplace, Scale: 4, Sensitivity: 1},
		{Kind: KindDiscreteGaussian, Scale: 5, Sensitivity: 1},
		{Kind: KindPure, Epsilon: 0.3},
		{Kind: KindExponential, Epsilon: 0.7},
		{Kind: KindRandomizedResponse, Epsilon: 0.4, K: 5},
		{Kind: KindZCDP, Epsilon: 0.02},
	}
	var acct Account
	want := ZeroCurve()
	for _, m := range ms {
		c, err := m.Curve()
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		for i := range want {
			want[i] += c[i]
		}
		if err := acct.Apply([]Mechanism{m}); err != nil {
			t.Fatal(err)
		}
		m7 := m
		m7.Count = 7
		c7, err := m7.Curve()
		if err != nil {
			t.Fatal(err)
		}
		seven := make(Curve, numOrders)
		for i := range c {
			seven[i] = 7 * c[i]
		}
		curvesClose(t, m.Kind+" Count=7", c7, seven, 1e-15)
	}
	curvesClose(t, "account curve", acct.Curve[:], want, 1e-14)
	if acct.Charges != len(ms) {
		t.Errorf("Charges = %d, want %d", acct.Charges, len(ms))
	}

	// One charge with all mechanisms equals the sequence of single charges.
	var one Account
	if err := one.Apply(ms); err != nil {
		t.Fatal(err)
	}
	curvesClose(t, "single charge", one.Curve[:], want, 1e-14)
	if one.Charges != 1 {
		t.Errorf("Charges = %d, want 1", one.Charges)
	}
}

// ---------------------------------------------------------------------------
// Curves against the definition of the Rényi divergence
//
// D_α(P‖Q) = (1/(α−1))·log Σ P^α Q^{1−α}, computed here by brute-force sums
// and numerical integration, independently of the closed forms.

// testOrders is a spread of orders, including fractional, integer and large.
var testOrders = []int{0, 4, 9, 26, 98, 99, 109, 151} // α = 1.1, 1.5, 2, 3.7, 10.9, 11, 21, 63

// logSumExp returns log Σ exp(x).
func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	if math.IsInf(m, -1) {
		return m
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// logIntegral returns log ∫_lo^hi exp(logf(x)) dx by composite Simpson with
// n (even) intervals, in log space. For the smooth exponential pieces used
// below the relative error is far below 1e-9.
func logIntegral(logf func(float64) float64, lo, hi float64, n int) float64 {
	h := (hi - lo) / float64(n)
	terms := make([]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		w := 2.0
		switch {
		case i == 0 || i == n:
			w = 1
		case i%2 == 1:
			w = 4
		}
		terms = append(terms, logf(lo+float64(i)*h)+math.Log(w*h/3))
	}
	return logSumExp(terms)
}

func TestLaplaceCurveMatchesDefinition(t *testing.T) {
	for _, eps0 := range []float64{0.1, 1, 3} {
		b, delta := 1.0, eps0 // Lap(0, 1) against Lap(eps0, 1): Δ1/b = eps0
		c := LaplaceCurve(eps0)
		for _, i := range testOrders {
			a := orders[i]
			logf := func(x float64) float64 {
				return a*(-math.Abs(x)/b) + (1-a)*(-math.Abs(x-delta)/b) - math.Log(2*b)
			}
			// Split at the kinks 0 and Δ; tails of 60b leave < e^{-60}.
			parts := []float64{
				logIntegral(logf, -60*b, 0, 20000),
				logIntegral(logf, 0, delta, 20000),
				logIntegral(logf, delta, delta+60*b, 20000),
			}
			want := logSumExp(parts) / (a - 1)
			if e := relErr(c[i], want); e > 1e-8 {
				t.Errorf("eps0=%v α=%v: LaplaceCurve %.15g, integral %.15g (rel %.3g)", eps0, a, c[i], want, e)
			}
		}
	}
}

// The Taylor branch of laplaceRDP (1 < α < 1.1, unused by the default
// orders) must agree with the closed form it replaces.
func TestLaplaceRDPTaylorBranch(t *testing.T) {
	for _, eps := range []float64{0.01, 1, 5} {
		for _, a := range []float64{1.001, 1.05, 1.0999} {
			closed := eps + math.Log1p((a-1)*math.Expm1(eps*(1-2*a))/(2*a-1))/(a-1)
			if e := relErr(laplaceRDP(eps, a), closed); e > 1e-9 {
				t.Errorf("eps=%v α=%v: series %.15g, closed form %.15g", eps, a, laplaceRDP(eps, a), closed)
			}
		}
	}
}

func TestGaussianCurveMatchesDefinition(t *testing.T) {
	for _, z := range []float64{0.5, 1, 4} {
		c := GaussianCurve(z)
		for _, i := range testOrders {
			a := orders[i]
			sigma, mu := z, 1.0 // N(0, σ²) against N(1, σ²): σ/Δ2 = z
			logf := func(x float64) float64 {
				return a*(-x*x/(2*sigma*sigma)) + (1-a)*(-(x-mu)*(x-mu)/(2*sigma*sigma)) - math.Log(sigma*math.Sqrt(2*math.Pi))
			}
			// The integrand is a Gaussian bump centred at (1−α)μ.
			centre := (1 - a) * mu
			want := logIntegral(logf, centre-40*sigma, centre+40*sigma, 20000) / (a - 1)
			if e := relErr(c[i], want); e > 1e-8 {
				t.Errorf("z=%v α=%v: GaussianCurve %.15g, integral %.15g", z, a, c[i], want)
			}
		}
	}
}

// discreteDivergence returns D_α(P‖Q) for P(k) ∝ exp(logw(k)) and
// Q(k) = P(k − shift), summing k over [lo, hi].
func discreteDivergence(logw func(k float64) float64, shift, a float64, lo, hi int) float64 {
	var num, norm []float64
	for k := lo; k <= hi; k++ {
		x := float64(k)
		num = append(num, a*logw(x)+(1-a)*logw(x-shift))
		norm = append(norm, logw(x))
	}
	return (logSumExp(num) - logSumExp(norm)) / (a - 1)
}

func TestDiscreteGaussianCurveMatchesDefinition(t *testing.T) {
	for _, tc := range []struct{ sigma, sens float64 }{{1, 1}, {3, 1}, {10, 2}, {2, 3}} {
		c := DiscreteGaussianCurve(tc.sigma, tc.sens)
		logw := func(k float64) float64 { return -k * k / (2 * tc.sigma * tc.sigma) }
		for _, i := range testOrders {
			a := orders[i]
			span := int(60*tc.sigma + a*tc.sens + 10)
			got := discreteDivergence(logw, tc.sens, a, -span, span)
			// CKS 2020: D_α ≤ αΔ²/(2σ²), with equality when (1−α)Δ is an
			// integer (integer α here), since then the shifted theta sum
			// equals the unshifted one.
			if got > c[i]*(1+1e-12) {
				t.Errorf("σ=%v Δ=%v α=%v: divergence %.15g exceeds curve %.15g", tc.sigma, tc.sens, a, got, c[i])
			}
			if a == math.Trunc(a) {
				if e := relErr(got, c[i]); e > 1e-10 {
					t.Errorf("σ=%v Δ=%v integer α=%v: divergence %.15g, curve %.15g (rel %.3g)", tc.sigma, tc.sens, a, got, c[i], e)
				}
			}
		}
	}
}

// The discrete Laplace curve decision (see Mechanism): for unit sensitivity
// the exact divergence equals PureCurve(1/b) and exceeds LaplaceCurve(1/b),
// so the continuous Laplace curve would under-charge; for larger
// sensitivities PureCurve(Δ/b) is still an upper bound.
func TestDiscreteLaplaceUsesPureCurve(t *testing.T) {
	for _, tc := range []struct{ b, sens float64 }{{1, 1}, {0.5, 1}, {4, 1}, {1, 2}, {2, 3}, {10, 2}} {
		eps0 := tc.sens / tc.b
		m := Mechanism{Kind: KindDiscreteLaplace, Scale: tc.b, Sensitivity: tc.sens}
		c, err := m.Curve()
		if err != nil {
			t.Fatal(err)
		}
		lap := LaplaceCurve(eps0)
		logw := func(k float64) float64 { return -math.Abs(k) / tc.b }
		span := int(80*tc.b + tc.sens + 10)
		for _, i := range testOrders {
			a := orders[i]
			exact := discreteDivergence(logw, tc.sens, a, -span, span)
			if exact > c[i]*(1+1e-10) {
				t.Errorf("b=%v Δ=%v α=%v: exact %.15g exceeds charged curve %.15g", tc.b, tc.sens, a, exact, c[i])
			}
			if tc.sens == 1 {
				if e := relErr(exact, c[i]); e > 1e-10 {
					t.Errorf("b=%v Δ=1 α=%v: exact %.15g, PureCurve %.15g (rel %.3g): should be tight", tc.b, a, exact, c[i], e)
				}
				if !(exact > lap[i]) {
					t.Errorf("b=%v Δ=1 α=%v: exact %.15g not above LaplaceCurve %.15g", tc.b, a, exact, lap[i])
				}
			}
		}
	}
}

func TestPureCurveMatchesSpecFormula(t *testing.T) {
	for _, eps0 := range []float64{0.05, 0.5, 1, 3, 10} {
		c := PureCurve(eps0)
		for i, a := range orders {
			// SPEC.md section 3, evaluated literally (fine for these ε0).
			want := (eps0*a + math.Log(1+math.Exp(eps0*(1-2*a))) - math.Log(1+math.Exp(eps0))) / (a - 1)
			if e := relErr(c[i], want); e > 1e-9 {
				t.Fatalf("eps0=%v α=%v: PureCurve %.15g, spec formula %.15g (rel %.3g)", eps0, a, c[i], want, e)
			}
			if c[i] > eps0 {
				t.Fatalf("eps0=%v α=%v: PureCurve %v above eps0", eps0, a, c[i])
			}
		}
	}
	// Small ε0: ε(α) ≈ α·ε0²/2 (second-order expansion), which the stable
	// form must reproduce where the literal one loses all digits.
	eps0 := 1e-6
	c := PureCurve(eps0)
	for _, i := range testOrders {
		a := orders[i]
		want := a * eps0 * eps0 / 2
		if e := relErr(c[i], want); e > 1e-4 {
			t.Errorf("eps0=1e-6 α=%v: PureCurve %.6g, α·ε0²/2 = %.6g (rel %.3g)", a, c[i], want, e)
		}
	}
}

// binaryRR is the exact divergence of binary randomized response with
// parameter eps0, the extremal ε0-DP mechanism.
func TestPureCurveIsBinaryRandomizedResponse(t *testing.T) {
	for _, eps0 := range []float64{0.2, 1, 4} {
		c := PureCurve(eps0)
		p := []float64{math.Exp(eps0) / (1 + math.Exp(eps0)), 1 / (1 + math.Exp(eps0))}
		q := []float64{p[1], p[0]}
		for _, i := range testOrders {
			a := orders[i]
			s := []float64{a*math.Log(p[0]) + (1-a)*math.Log(q[0]), a*math.Log(p[1]) + (1-a)*math.Log(q[1])}
			want := logSumExp(s) / (a - 1)
			if e := relErr(c[i], want); e > 1e-10 {
				t.Errorf("eps0=%v α=%v: PureCurve %.15g, binary RR %.15g", eps0, a, c[i], want)
			}
		}
	}
}

func TestRandomizedResponseCurveMatchesDefinition(t *testing.T) {
	for _, tc := range []struct {
		p float64
		k int
	}{{0.5, 2}, {0.25, 2}, {0.5, 10}, {0.9, 3}, {0.01, 4}} {
		c := RandomizedResponseCurve(tc.p, tc.k)
		kf := float64(tc.k)
		// P: true category 0; Q: true category 1 (replace-one).
		P, Q := make([]float64, tc.k), make([]float64, tc.k)
		for j := range P {
			P[j], Q[j] = tc.p/kf, tc.p/kf
		}
		P[0] += 1 - tc.p
		Q[1] += 1 - tc.p
		for _, i := range testOrders {
			a := orders[i]
			terms := make([]float64, tc.k)
			for j := range terms {
				terms[j] = a*math.Log(P[j]) + (1-a)*math.Log(Q[j])
			}
			want := logSumExp(terms) / (a - 1)
			if e := relErr(c[i], want); e > 1e-10 {
				t.Errorf("p=%v k=%d α=%v: curve %.15g, definition %.15g", tc.p, tc.k, a, c[i], want)
			}
		}
	}
	curvesClose(t, "p=1 is free", RandomizedResponseCurve(1, 3), ZeroCurve(), 0)
}

func TestExponentialCurveMatchesFormula(t *testing.T) {
	for _, eps0 := range []float64{1e-3, 0.1, 0.5, 1, 3, 20} {
		c := ExponentialCurve(eps0)
		y := eps0 / math.Expm1(eps0)
		xi := y - 1 - math.Log(y) - eps0*eps0/8 // dp_accounting's literal form
		for i, a := range orders {
			want := math.Min(xi+a*eps0*eps0/8, eps0)
			// The literal form loses ~1e-16/(ε0²/8) relative accuracy to
			// cancellation at small ε0: 1e-9 at ε0 = 1e-3, so allow 1e-7.
			if e := relErr(c[i], want); e > 1e-7 {
				t.Fatalf("eps0=%v α=%v: curve %.15g, formula %.15g (rel %.3g)", eps0, a, c[i], want, e)
			}
		}
	}
}

func TestZCDPCurve(t *testing.T) {
	c := ZCDPCurve(0.25)
	for i, a := range orders {
		if c[i] != 0.25*a {
			t.Fatalf("order %v: %v, want ρα = %v", a, c[i], 0.25*a)
		}
	}
	// Discrete Gaussian σ=1, Δ=1 is ρ = 1/2.
	curvesClose(t, "discrete gaussian = zcdp", DiscreteGaussianCurve(1, 1), ZCDPCurve(0.5), 0)
}

func TestCurveConstructorsRejectInvalidParameters(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for name, c := range map[string]Curve{
		"gaussian 0":        GaussianCurve(0),
		"gaussian -1":       GaussianCurve(-1),
		"gaussian NaN":      GaussianCurve(nan),
		"gaussian Inf":      GaussianCurve(inf),
		"dgauss sigma 0":    DiscreteGaussianCurve(0, 1),
		"dgauss sens -1":    DiscreteGaussianCurve(1, -1),
		"laplace 0":         LaplaceCurve(0),
		"laplace NaN":       LaplaceCurve(nan),
		"pure -1":           PureCurve(-1),
		"pure Inf":          PureCurve(inf),
		"exponential 0":     ExponentialCurve(0),
		"rr p 0":            RandomizedResponseCurve(0, 2),
		"rr p 1.5":          RandomizedResponseCurve(1.5, 2),
		"rr p NaN":          RandomizedResponseCurve(nan, 2),
		"rr k 1":            RandomizedResponseCurve(0.5, 1),
		"zcdp -0.1":         ZCDPCurve(-0.1),
		"zcdp NaN":          ZCDPCurve(nan),
		"gaussian negative": GaussianCurve(-3), // z² > 0 would hide the sign
	} {
		if !isInfCurve(c) {
			t.Errorf("%s: want +Inf at every order", name)
		}
	}
}

// ---------------------------------------------------------------------------
// Conversion

func TestEpsilonEdgeCases(t *testing.T) {
	inf := math.Inf(1)
	g := GaussianCurve(1)
	withNaN := GaussianCurve(1)
	for i := range withNaN {
		withNaN[i] = math.NaN()
	}
	for _, tc := range []struct {
		name  string
		c     Curve
		delta float64
		want  float64
	}{
		{"zero curve, delta 0", ZeroCurve(), 0, 0},
		{"nil curve, delta 0", nil, 0, 0},
		{"nil curve", nil, 1e-6, 0},
		{"nonzero curve, delta 0", g, 0, inf}, // RDP never certifies pure DP
		{"negative delta", g, -1e-6, inf},
		{"NaN delta", g, math.NaN(), inf},
		{"wrong length", Curve{1, 2, 3}, 1e-6, inf},
		{"NaN entries count as +Inf", withNaN, 1e-6, inf},
		{"all +Inf", infCurve(), 1e-6, inf},
		{"delta 1 is vacuous", g, 1, 0},
		// ZCDP ρ=1e-14: r(1.1) = 1.1e-14 and 1−e^{−r} ≈ 1.1e-14 < δ² = 1e-12,
		// so the KL branch certifies ε = 0.
		{"KL branch", ZCDPCurve(1e-14), 1e-6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Epsilon(tc.c, tc.delta); got != tc.want {
				t.Errorf("Epsilon = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeltaEdgeCases(t *testing.T) {
	g := GaussianCurve(1)
	for _, tc := range []struct {
		name string
		c    Curve
		eps  float64
		want float64
	}{
		{"nil curve", nil, 1, 0},
		{"zero curve", ZeroCurve(), 0, 0},
		{"negative epsilon", g, -1, 1},
		{"NaN epsilon", g, math.NaN(), 1},
		{"wrong length", Curve{1}, 1, 1},
		{"all +Inf", infCurve(), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Delta(tc.c, tc.eps); got != tc.want {
				t.Errorf("Delta = %v, want %v", got, tc.want)
			}
		})
	}
}

func conversionCurves() map[string]Curve {
	return map[string]Curve{
		"gaussian z=1 x7":     GaussianCurve(1).Scale(7),
		"gaussian z=4":        GaussianCurve(4),
		"laplace eps=1 x10":   LaplaceCurve(1).Scale(10),
		"pure 0.3 x3":         PureCurve(0.3).Scale(3),
		"exponential 0.5":     ExponentialCurve(0.5),
		"rr p=0.5 k=10":       RandomizedResponseCurve(0.5, 10),
		"mixed":               GaussianCurve(3).Scale(7).Add(LaplaceCurve(0.5).Scale(5)),
		"discrete gauss σ=10": DiscreteGaussianCurve(10, 2),
	}
}

func TestEpsilonDecreasesInDelta(t *testing.T) {
	deltas := []float64{1e-15, 1e-12, 1e-9, 1e-7, 1e-5, 1e-3, 0.01, 0.1, 0.5, 0.9}
	for name, c := range conversionCurves() {
		prev := math.Inf(1)
		for _, d := range deltas {
			e := Epsilon(c, d)
			if !(e >= 0) {
				t.Errorf("%s δ=%g: Epsilon %v not >= 0", name, d, e)
			}
			if e > prev {
				t.Errorf("%s: Epsilon increased from %v to %v at δ=%g", name, prev, e, d)
			}
			prev = e
		}
	}
}

// klInactive reports whether the KL term of the conversion is above δ at
// every order, i.e. sqrt(1 − e^{−r}) > δ; only then is Delta an exact inverse
// of Epsilon (otherwise the KL bound can certify a smaller δ).
func klInactive(c Curve, delta float64) bool {
	for _, r := range c {
		if !(math.Sqrt(-math.Expm1(-r)) > delta) {
			return false
		}
	}
	return true
}

func TestDeltaInvertsEpsilon(t *testing.T) {
	forward, backward := 0, 0
	for name, c := range conversionCurves() {
		for _, d := range []float64{1e-10, 1e-6, 1e-3} {
			e := Epsilon(c, d)
			if e == 0 || !klInactive(c, d) {
				continue // not meaningful: the KL branch decides
			}
			// For each order the CKS bound is a bijection between ε and δ, and
			// the minimum ε at δ=d is attained at some order α*, where the
			// inverse gives back exactly d; at other orders it gives ≥ d.
			forward++
			got := Delta(c, e)
			if relErr(got, d) > 1e-9 {
				t.Errorf("%s: Delta(Epsilon(c, %g)=%v) = %.15g", name, d, e, got)
			}
		}
		for _, eps := range []float64{0.5, 2, 8} {
			d := Delta(c, eps)
			if d <= 0 || d >= 1 || !klInactive(c, d*(1+1e-9)) {
				continue // not meaningful: the KL term decided δ, whose inverse is ε = 0 only for δ strictly above it
			}
			backward++
			if back := Epsilon(c, d); back > eps*(1+1e-9) {
				t.Errorf("%s: Epsilon(Delta(c, %v)=%g) = %.15g > %v", name, eps, d, back, eps)
			}
		}
	}
	// Guard against the skips swallowing the test.
	if forward < 15 || backward < 8 {
		t.Fatalf("only %d forward and %d backward checks ran", forward, backward)
	}
	t.Logf("%d forward, %d backward checks", forward, backward)
}

// ---------------------------------------------------------------------------
// Mechanism

func TestMechanismValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name    string
		m       Mechanism
		wantErr string // substring; "" means valid
	}{
		{"gaussian ok", Mechanism{Kind: KindGaussian, Scale: 2, Sensitivity: 1}, ""},
		{"laplace ok count 5", Mechanism{Kind: KindLaplace, Scale: 2, Sensitivity: 1, Count: 5}, ""},
		{"discrete gaussian ok", Mechanism{Kind: KindDiscreteGaussian, Scale: 2, Sensitivity: 1}, ""},
		{"discrete laplace ok", Mechanism{Kind: KindDiscreteLaplace, Scale: 2, Sensitivity: 3}, ""},
		{"pure ok", Mechanism{Kind: KindPure, Epsilon: 0.1}, ""},
		{"exponential ok", Mechanism{Kind: KindExponential, Epsilon: 1}, ""},
		{"zcdp ok", Mechanism{Kind: KindZCDP, Epsilon: 0.5}, ""},
		{"rr ok", Mechanism{Kind: KindRandomizedResponse, Epsilon: 0.5, K: 2}, ""},
		{"rr p=1 ok", Mechanism{Kind: KindRandomizedResponse, Epsilon: 1, K: 3}, ""},

		{"empty kind", Mechanism{Scale: 1, Sensitivity: 1}, "kind is empty"},
		{"unknown kind", Mechanism{Kind: "gauss"}, `unknown kind "gauss"`},
		{"negative count", Mechanism{Kind: KindPure, Epsilon: 1, Count: -1}, "count must be >= 0"},
		{"gaussian zero scale", Mechanism{Kind: KindGaussian, Sensitivity: 1}, "scale must be positive"},
		{"gaussian negative scale", Mechanism{Kind: KindGaussian, Scale: -1, Sensitivity: 1}, "scale must be positive"},
		{"gaussian NaN scale", Mechanism{Kind: KindGaussian, Scale: nan, Sensitivity: 1}, "scale must be positive"},
		{"gaussian Inf scale", Mechanism{Kind: KindGaussian, Scale: inf, Sensitivity: 1}, "scale must be positive"},
		{"laplace zero sensitivity", Mechanism{Kind: KindLaplace, Scale: 1}, "sensitivity must be positive"},
		{"laplace NaN sensitivity", Mechanism{Kind: KindLaplace, Scale: 1, Sensitivity: nan}, "sensitivity must be positive"},
		{"discrete laplace negative sensitivity", Mechanism{Kind: KindDiscreteLaplace, Scale: 1, Sensitivity: -2}, "sensitivity must be positive"},
		{"laplace ratio overflows", Mechanism{Kind: KindLaplace, Scale: 1e-300, Sensitivity: 1e300}, "sensitivity/scale"},
		{"gaussian with epsilon", Mechanism{Kind: KindGaussian, Scale: 1, Sensitivity: 1, Epsilon: 1}, "epsilon is not used"},
		{"laplace with k", Mechanism{Kind: KindLaplace, Scale: 1, Sensitivity: 1, K: 2}, "k is not used"},
		{"pure zero", Mechanism{Kind: KindPure}, "epsilon must be positive"},
		{"pure negative", Mechanism{Kind: KindPure, Epsilon: -0.5}, "epsilon must be positive"},
		{"pure NaN", Mechanism{Kind: KindPure, Epsilon: nan}, "epsilon must be positive"},
		{"exponential Inf", Mechanism{Kind: KindExponential, Epsilon: inf}, "epsilon must be positive"},
		{"zcdp zero", Mechanism{Kind: KindZCDP}, "epsilon must be positive"},
		{"pure with scale", Mechanism{Kind: KindPure, Epsilon: 1, Scale: 1}, "scale is not used"},
		{"zcdp with sensitivity", Mechanism{Kind: KindZCDP, Epsilon: 1, Sensitivity: 1}, "sensitivity is not used"},
		{"exponential with k", Mechanism{Kind: KindExponential, Epsilon: 1, K: 3}, "k is not used"},
		{"rr p zero", Mechanism{Kind: KindRandomizedResponse, K: 2}, "noise parameter p"},
		{"rr p above 1", Mechanism{Kind: KindRandomizedResponse, Epsilon: 1.5, K: 2}, "noise parameter p"},
		{"rr p NaN", Mechanism{Kind: KindRandomizedResponse, Epsilon: nan, K: 2}, "noise parameter p"},
		{"rr k 1", Mechanism{Kind: KindRandomizedResponse, Epsilon: 0.5, K: 1}, "k must be >= 2"},
		{"rr k 0", Mechanism{Kind: KindRandomizedResponse, Epsilon: 0.5}, "k must be >= 2"},
		{"rr with scale", Mechanism{Kind: KindRandomizedResponse, Epsilon: 0.5, K: 2, Scale: 1}, "scale is not used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				if _, err := tc.m.Curve(); err != nil {
					t.Fatalf("Curve() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate() = %q, want it to contain %q", err, tc.wantErr)
			}
			if !errors.Is(err, ErrInvalidMechanism) {
				t.Errorf("error %v does not wrap ErrInvalidMechanism", err)
			}
			if _, cerr := tc.m.Curve(); cerr == nil {
				t.Errorf("Curve() accepted an invalid mechanism")
			}
			if _, ok := tc.m.PureEpsilon(); ok {
				t.Errorf("PureEpsilon() ok for an invalid mechanism")
			}
		})
	}
}

func TestMechanismCurveRejectsNonFiniteGuarantee(t *testing.T) {
	// z = 1e-200: z² underflows to 0 and α/(2z²) is +Inf.
	m := Mechanism{Kind: KindGaussian, Scale: 1e-200, Sensitivity: 1}
	if _, err := m.Curve(); err == nil || !strings.Contains(err.Error(), "no finite guarantee") {
		t.Fatalf("Curve() error = %v, want a no-finite-guarantee error", err)
	}
}

func TestMechanismCurveMapping(t *testing.T) {
	for _, tc := range []struct {
		m    Mechanism
		want Curve
	}{
		{Mechanism{Kind: KindGaussian, Scale: 6, Sensitivity: 2}, GaussianCurve(3)},
		{Mechanism{Kind: KindDiscreteGaussian, Scale: 6, Sensitivity: 2}, ZCDPCurve(4.0 / 72)},
		{Mechanism{Kind: KindLaplace, Scale: 4, Sensitivity: 2}, LaplaceCurve(0.5)},
		{Mechanism{Kind: KindDiscreteLaplace, Scale: 4, Sensitivity: 2}, PureCurve(0.5)},
		{Mechanism{Kind: KindPure, Epsilon: 0.5, Count: 3}, PureCurve(0.5).Scale(3)},
		{Mechanism{Kind: KindExponential, Epsilon: 0.5}, ExponentialCurve(0.5)},
		{Mechanism{Kind: KindRandomizedResponse, Epsilon: 0.3, K: 4}, RandomizedResponseCurve(0.3, 4)},
		{Mechanism{Kind: KindZCDP, Epsilon: 0.1, Count: 2}, ZCDPCurve(0.2)},
	} {
		got, err := tc.m.Curve()
		if err != nil {
			t.Fatalf("%+v: %v", tc.m, err)
		}
		curvesClose(t, tc.m.Kind, got, tc.want, 1e-14)
	}
}

func TestPureEpsilon(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      Mechanism
		want   float64
		wantOK bool
	}{
		{"laplace b=2 Δ=1 x3", Mechanism{Kind: KindLaplace, Scale: 2, Sensitivity: 1, Count: 3}, 1.5, true},
		{"discrete laplace b=4 Δ=2", Mechanism{Kind: KindDiscreteLaplace, Scale: 4, Sensitivity: 2}, 0.5, true},
		{"pure count 0 means 1", Mechanism{Kind: KindPure, Epsilon: 0.7}, 0.7, true},
		{"exponential x2", Mechanism{Kind: KindExponential, Epsilon: 0.5, Count: 2}, 1, true},
		{"rr p=0.5 k=2: log 3", Mechanism{Kind: KindRandomizedResponse, Epsilon: 0.5, K: 2}, math.Log(3), true},
		{"rr p=0.5 k=10: log 11", Mechanism{Kind: KindRandomizedResponse, Epsilon: 0.5, K: 10}, math.Log(11), true},
		{"rr p=1: 0", Mechanism{Kind: KindRandomizedResponse, Epsilon: 1, K: 10}, 0, true},
		{"gaussian", Mechanism{Kind: KindGaussian, Scale: 1, Sensitivity: 1}, 0, false},
		{"discrete gaussian", Mechanism{Kind: KindDiscreteGaussian, Scale: 1, Sensitivity: 1}, 0, false},
		{"zcdp", Mechanism{Kind: KindZCDP, Epsilon: 1}, 0, false},
		{"invalid laplace", Mechanism{Kind: KindLaplace, Sensitivity: 1}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.m.PureEpsilon()
			if ok != tc.wantOK || relErr(got, tc.want) > 1e-15 {
				t.Errorf("PureEpsilon() = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Account and budget filter

// goldenGaussianZ1x7 is epsilon_rdp of "gaussian z=1.0 x7" at δ = 1e-5 and
// goldenLaplaceB1x10 that of "laplace b=1.0 x10" at δ = 1e-6, from
// testdata/accounting.json (dp_accounting).
const (
	goldenGaussianZ1x7  = 15.17541982626362
	goldenGaussianZ1x1  = 4.728507067217623
	goldenLaplaceB1x10  = 9.998981367929638
	goldenLaplaceB1x1   = 1.0050751401882467
	goldenLaplaceB1At11 = 0.40001752816402125 // laplace b=1 RDP curve at α = 1.1, its minimum
)

func TestAccountFilter(t *testing.T) {
	lap := func(eps0 float64) []Mechanism { // ε0 = Δ1/b with Δ1 = 1
		return []Mechanism{{Kind: KindLaplace, Scale: 1 / eps0, Sensitivity: 1}}
	}
	pure := func(eps0 float64) []Mechanism { return []Mechanism{{Kind: KindPure, Epsilon: eps0}} }
	gauss := func(z float64) []Mechanism { return []Mechanism{{Kind: KindGaussian, Scale: z, Sensitivity: 1}} }
	repeat := func(n int, ms []Mechanism) [][]Mechanism {
		out := make([][]Mechanism, n)
		for i := range out {
			out[i] = ms
		}
		return out
	}
	bools := func(n int, v bool) []bool {
		out := make([]bool, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		budget  Budget
		charges [][]Mechanism
		want    []bool
		why     string
	}{
		{
			name:    "pure charges, delta 0",
			budget:  Budget{Epsilon: 1, Delta: 0},
			charges: repeat(5, pure(0.25)),
			want:    []bool{true, true, true, true, false},
			why:     "0.25·4 = 1 fits exactly (δ=0: only the pure sum counts); 1.25 does not",
		},
		{
			name:    "refusal then a smaller charge fits",
			budget:  Budget{Epsilon: 1, Delta: 0},
			charges: [][]Mechanism{pure(0.6), pure(0.6), {{Kind: KindExponential, Epsilon: 0.4}}, pure(0.01)},
			want:    []bool{true, false, true, false},
			why:     "0.6; 1.2 > 1 refused; 0.6 + 0.4 = 1 fits; 1.01 refused",
		},
		{
			name:    "gaussian cannot meet a pure budget",
			budget:  Budget{Epsilon: 10, Delta: 0},
			charges: [][]Mechanism{pure(1), gauss(10), pure(1)},
			want:    []bool{true, false, true},
			why:     "RDP gives ε = +Inf at δ = 0, and a gaussian charge makes the account impure",
		},
		{
			name:    "gaussian at the golden boundary",
			budget:  Budget{Epsilon: goldenGaussianZ1x7, Delta: 1e-5},
			charges: repeat(8, gauss(1)),
			want:    append(bools(7, true), false),
			why:     "7 charges cost exactly the budget (golden); the 8th curve is larger at every order",
		},
		{
			name:    "RDP beats the pure sum",
			budget:  Budget{Epsilon: 9.999, Delta: 1e-6},
			charges: repeat(11, lap(1)),
			want:    append(bools(10, true), false),
			why: "after 10 the pure sum is 10 > 9.999 but RDP gives 9.99898 (golden); " +
				"the 11th adds at least min_α r(α) = 0.40002 at every order, so ≥ 10.399",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a Account
			accepted, refused := 0, 0
			for i, ms := range tc.charges {
				ok, err := a.Try(tc.budget, ms)
				if err != nil {
					t.Fatalf("charge %d: %v", i, err)
				}
				if ok != tc.want[i] {
					t.Fatalf("charge %d: Try = %v, want %v (%s); spent now %v", i, ok, tc.want[i], tc.why, a.Spent(tc.budget.Delta))
				}
				if ok {
					accepted++
				} else {
					refused++
				}
				if s := a.Spent(tc.budget.Delta); s > tc.budget.Epsilon*(1+1e-12) {
					t.Fatalf("charge %d: spent %v exceeds budget %v", i, s, tc.budget.Epsilon)
				}
			}
			if a.Charges != accepted || a.Refused != refused {
				t.Errorf("Charges, Refused = %d, %d; want %d, %d", a.Charges, a.Refused, accepted, refused)
			}
		})
	}
}

func TestAccountSpent(t *testing.T) {
	lap1 := []Mechanism{{Kind: KindLaplace, Scale: 1, Sensitivity: 1}}

	var empty Account
	if s := empty.Spent(1e-6); s != 0 {
		t.Errorf("empty account Spent = %v, want 0", s)
	}
	if s := empty.Spent(0); s != 0 {
		t.Errorf("empty account Spent(0) = %v, want 0", s)
	}
	if s := empty.Spent(-1); !math.IsInf(s, 1) {
		t.Errorf("Spent(-1) = %v, want +Inf", s)
	}

	// One Laplace(b=1): RDP gives 1.00508 (golden) > pure 1, so pure wins.
	var one Account
	if err := one.Apply(lap1); err != nil {
		t.Fatal(err)
	}
	if !one.AllPure || one.Pure != 1 {
		t.Fatalf("after one Laplace: AllPure=%v Pure=%v, want true, 1", one.AllPure, one.Pure)
	}
	if e := Epsilon(one.Curve[:], 1e-6); relErr(e, goldenLaplaceB1x1) > 1e-6 {
		t.Errorf("RDP epsilon %v, golden %v", e, goldenLaplaceB1x1)
	}
	if s := one.Spent(1e-6); s != 1 {
		t.Errorf("Spent = %v, want 1 (pure bound)", s)
	}

	// Ten: RDP gives 9.99898 (golden) < pure 10, so RDP wins.
	var ten Account
	for range 10 {
		if err := ten.Apply(lap1); err != nil {
			t.Fatal(err)
		}
	}
	if s := ten.Spent(1e-6); relErr(s, goldenLaplaceB1x10) > 1e-6 {
		t.Errorf("Spent = %v, want golden %v", s, goldenLaplaceB1x10)
	}
	if s := ten.Spent(0); s != 10 {
		t.Errorf("Spent(0) = %v, want pure sum 10", s)
	}

	// A gaussian charge ends purity for good.
	if err := ten.Apply([]Mechanism{{Kind: KindGaussian, Scale: 100, Sensitivity: 1}}); err != nil {
		t.Fatal(err)
	}
	if ten.AllPure {
		t.Errorf("AllPure after a gaussian charge")
	}
	if s := ten.Spent(0); !math.IsInf(s, 1) {
		t.Errorf("Spent(0) = %v after a gaussian charge, want +Inf", s)
	}
	if err := ten.Apply(lap1); err != nil {
		t.Fatal(err)
	}
	if ten.AllPure {
		t.Errorf("AllPure came back after a pure charge")
	}
}

func TestAccountErrorsLeaveStateUnchanged(t *testing.T) {
	var a Account
	if err := a.Apply([]Mechanism{{Kind: KindPure, Epsilon: 0.5}}); err != nil {
		t.Fatal(err)
	}
	before := a // an independent copy: Curve is an array
	good := []Mechanism{{Kind: KindPure, Epsilon: 0.1}}
	bad := []Mechanism{{Kind: KindPure, Epsilon: 0.1}, {Kind: KindGaussian, Scale: -1, Sensitivity: 1}}

	for _, tc := range []struct {
		name    string
		run     func() error
		wantErr error
	}{
		{"try invalid mechanism", func() error { _, err := a.Try(Budget{Epsilon: 10, Delta: 1e-6}, bad); return err }, ErrInvalidMechanism},
		{"try no mechanisms", func() error { _, err := a.Try(Budget{Epsilon: 10, Delta: 1e-6}, nil); return err }, ErrInvalidMechanism},
		{"try negative budget", func() error { _, err := a.Try(Budget{Epsilon: -1, Delta: 1e-6}, good); return err }, ErrInvalidBudget},
		{"try NaN budget", func() error { _, err := a.Try(Budget{Epsilon: math.NaN(), Delta: 1e-6}, good); return err }, ErrInvalidBudget},
		{"try Inf budget", func() error { _, err := a.Try(Budget{Epsilon: math.Inf(1), Delta: 1e-6}, good); return err }, ErrInvalidBudget},
		{"try delta 1", func() error { _, err := a.Try(Budget{Epsilon: 1, Delta: 1}, good); return err }, ErrInvalidBudget},
		{"try negative delta", func() error { _, err := a.Try(Budget{Epsilon: 1, Delta: -1e-9}, good); return err }, ErrInvalidBudget},
		{"apply invalid mechanism", func() error { return a.Apply(bad) }, ErrInvalidMechanism},
		{"apply no mechanisms", func() error { return a.Apply(nil) }, ErrInvalidMechanism},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if a.Charges != before.Charges || a.Refused != before.Refused || a.Pure != before.Pure || a.AllPure != before.AllPure {
				t.Errorf("account changed: %+v, was %+v", a, before)
			}
			curvesClose(t, "curve unchanged", a.Curve[:], before.Curve[:], 0)
		})
	}

	var negative, nan [NumOrders]float64
	negative[3] = -5
	nan[100] = math.NaN()
	for name, corrupt := range map[string]Account{
		"negative entry": {Curve: negative, Charges: 1},
		"NaN entry":      {Curve: nan, Charges: 1},
		"NaN pure":       {Pure: math.NaN(), AllPure: true, Charges: 1},
	} {
		if err := corrupt.Apply(good); err == nil {
			t.Errorf("%s: Apply on a corrupt account succeeded", name)
		}
		if _, err := corrupt.Try(Budget{Epsilon: 100, Delta: 1e-6}, good); err == nil {
			t.Errorf("%s: Try on a corrupt account succeeded", name)
		}
	}
	if s := (Account{Curve: [NumOrders]float64(GaussianCurve(1)), Pure: math.NaN(), AllPure: true, Charges: 1}).Spent(1e-5); relErr(s, goldenGaussianZ1x1) > 1e-6 {
		t.Errorf("NaN pure: Spent = %v, want the RDP value %v", s, goldenGaussianZ1x1)
	}
	for name, c := range map[string][NumOrders]float64{"negative": negative, "NaN": nan} {
		if s := (Account{Curve: c, Charges: 1}).Spent(1e-6); !math.IsInf(s, 1) {
			t.Errorf("%s curve: Spent = %v, want +Inf", name, s)
		}
	}
}

func TestCost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ms    []Mechanism
		delta float64
		want  float64
	}{
		// RDP 1.00508 (golden) > pure 1: the pure bound is reported.
		{"laplace b=1", []Mechanism{{Kind: KindLaplace, Scale: 1, Sensitivity: 1}}, 1e-6, 1},
		{"gaussian z=1", []Mechanism{{Kind: KindGaussian, Scale: 1, Sensitivity: 1}}, 1e-5, goldenGaussianZ1x1},
		{"gaussian z=1 x7", []Mechanism{{Kind: KindGaussian, Scale: 2, Sensitivity: 2, Count: 7}}, 1e-5, goldenGaussianZ1x7},
		{"laplace b=1 x10", []Mechanism{{Kind: KindLaplace, Scale: 1, Sensitivity: 1, Count: 10}}, 1e-6, goldenLaplaceB1x10},
		{"pure at delta 0", []Mechanism{{Kind: KindPure, Epsilon: 0.5}, {Kind: KindExponential, Epsilon: 0.25}}, 0, 0.75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Cost(tc.ms, tc.delta)
			if err != nil {
				t.Fatal(err)
			}
			if relErr(got, tc.want) > 1e-6 {
				t.Errorf("Cost = %.15g, want %.15g", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		ms      []Mechanism
		delta   float64
		wantErr error
	}{
		{"no mechanisms", nil, 1e-6, ErrInvalidMechanism},
		{"invalid mechanism", []Mechanism{{Kind: KindPure}}, 1e-6, ErrInvalidMechanism},
		{"delta 1", []Mechanism{{Kind: KindPure, Epsilon: 1}}, 1, ErrInvalidBudget},
		{"delta NaN", []Mechanism{{Kind: KindPure, Epsilon: 1}}, math.NaN(), ErrInvalidBudget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Cost(tc.ms, tc.delta); !errors.Is(err, tc.wantErr) {
				t.Errorf("Cost error = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// The minimum of the Laplace b=1 curve, used in TestAccountFilter's
// reasoning, is at the smallest order (RDP is non-decreasing in α).
func TestLaplaceCurveMinimumAtFirstOrder(t *testing.T) {
	c := LaplaceCurve(1)
	if relErr(c[0], goldenLaplaceB1At11) > 1e-12 {
		t.Fatalf("LaplaceCurve(1) at 1.1 = %v, golden %v", c[0], goldenLaplaceB1At11)
	}
	for i := 1; i < len(c); i++ {
		if c[i] < c[i-1] {
			t.Fatalf("LaplaceCurve not non-decreasing at order %v", orders[i])
		}
	}
}
