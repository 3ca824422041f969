package capacity

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/accountant"
)

// ErrUnsupported is wrapped by errors for a mechanism kind, class or
// divergence this package has no figure for; test with errors.Is.
var ErrUnsupported = errors.New("capacity: unsupported")

// ErrNotComputable is wrapped by errors for a figure this package cannot
// compute reliably within its work bound: a discrete law whose scale is
// above [MaxDiscreteScale] grid steps (the sums over the integers grow
// with the scale), a figure whose quadrature or summation would exceed the
// per-figure work budget (an integrand adaptive quadrature cannot resolve,
// e.g. a cubic adversary at a very large shift), or a value that comes out
// NaN or infinite. No figure is returned with it: callers report the
// figure as unavailable (the release stage records null, `dpstream
// account` prints the error) and fall back to the unrestricted divergence,
// which bounds every restricted one. Test with errors.Is.
var ErrNotComputable = errors.New("capacity: figure not computable")

// MaxDiscreteScale is the largest scale (b or σ, in grid steps) of a
// discrete noise law this package computes numerical figures for; above it
// a figure without a closed form wraps [ErrNotComputable] (the discrete
// Laplace linear KL, a closed form, is computed at any scale whose
// unrestricted sum fits the work budget). The discrete figures sum over the
// integers, about 64·scale terms per expectation and thousands of
// expectations per optimisation. At 10^4 a figure takes up to about two
// seconds (measured: discrete_gaussian linear KL 0.4 s, poly3 Rényi 1.1 s;
// discrete_laplace Rényi and poly2 KL hit the work budget in ≤ 2.2 s and
// wrap ErrNotComputable); above it every such figure would, so it fails at
// once. Fixed-point ledger charges (scales of 2^20 and more) are beyond it;
// their unrestricted figure is the one to report.
const MaxDiscreteScale = 10000

// Class is an adversary class H: the functions an adversary may apply to
// the released value before comparing the two output laws. Every class here
// is a vector space containing the constants and closed under x ↦ sx + t,
// which is what makes the figures depend on sensitivity/scale only and
// equal in both directions of neighbouring (see the package doc).
type Class int

// The adversary classes.
const (
	// Linear is H = {x ↦ a·x + c}: affine functions of the output.
	Linear Class = iota + 1
	// Poly2 is polynomials of degree ≤ 2 in the (scalar) output.
	Poly2
	// Poly3 is polynomials of degree ≤ 3 in the (scalar) output.
	Poly3
)

// Degree returns the polynomial degree of the class (1, 2 or 3).
func (c Class) Degree() int { return int(c) }

func (c Class) String() string {
	switch c {
	case Linear:
		return "linear"
	case Poly2:
		return "poly2"
	case Poly3:
		return "poly3"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// ParseClass maps "linear", "poly2", "poly3" (the names the CLI will use) to
// a Class.
func ParseClass(s string) (Class, error) {
	switch s {
	case "linear":
		return Linear, nil
	case "poly2":
		return Poly2, nil
	case "poly3":
		return Poly3, nil
	}
	return 0, fmt.Errorf("capacity: unknown adversary class %q (want linear, poly2 or poly3): %w", s, ErrUnsupported)
}

func (c Class) valid() error {
	if c < Linear || c > Poly3 {
		return fmt.Errorf("capacity: invalid adversary class %d: %w", int(c), ErrUnsupported)
	}
	return nil
}

// Divergence selects the divergence: Alpha == 1 is the Kullback–Leibler
// divergence, Alpha > 1 the Rényi divergence of that order.
type Divergence struct {
	Alpha float64
}

// KL is the Kullback–Leibler divergence.
func KL() Divergence { return Divergence{Alpha: 1} }

// Renyi is the Rényi divergence of order alpha (> 1; 1 means KL).
func Renyi(alpha float64) Divergence { return Divergence{Alpha: alpha} }

// IsKL reports whether d is the KL divergence.
func (d Divergence) IsKL() bool { return d.Alpha == 1 }

func (d Divergence) String() string {
	if d.IsKL() {
		return "KL"
	}
	return fmt.Sprintf("Renyi(%g)", d.Alpha)
}

func (d Divergence) valid() error {
	if !(d.Alpha >= 1) || math.IsInf(d.Alpha, 0) {
		return fmt.Errorf("capacity: divergence order must be finite and >= 1, got %v: %w", d.Alpha, ErrUnsupported)
	}
	return nil
}

// Method says how a figure was obtained.
type Method int

// The methods.
const (
	// ClosedForm: an exact formula (see the package doc for each).
	ClosedForm Method = iota + 1
	// Numerical: concave maximisation over the adversary's coefficients with
	// the expectations by quadrature or summation; see [Result.ErrEst].
	Numerical
	// Reduction: exact reduction to other figures (a sum over coordinates,
	// or a 1-d figure at the L2 norm), each closed-form or numerical.
	Reduction
)

func (m Method) String() string {
	switch m {
	case ClosedForm:
		return "closed form"
	case Numerical:
		return "numerical"
	case Reduction:
		return "reduction"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Result is one restricted divergence.
type Result struct {
	Value  float64
	Method Method
	// ErrEst is the estimated optimisation gap (0 for closed forms): the
	// Newton decrement ½gᵀ(−H)⁻¹g of the concave objective at the returned
	// coefficients, g and H by central differences, mapped to the divergence
	// scale, plus 1e−10 for quadrature. Numerical values approach the
	// supremum from below (every coefficient vector gives a lower bound), so
	// the true value lies in [Value − 1e−10, Value + ErrEst]. Value and
	// Value + ErrEst are capped at the unrestricted divergence between the
	// same laws ([Unrestricted]), which bounds every restricted one, up to
	// 1e−9 (the quadrature allowance).
	ErrEst float64
	// Coeffs are the maximising adversary's non-constant coefficients,
	// degree 1 first, as a polynomial in t = (output − Center)/Width (output
	// in units of the noise scale for the continuous kinds, in grid steps for
	// the discrete ones; the neighbouring laws are centred at 0 and at the
	// shift). For KL the adversary is h(t) = Σ a_j t^j (its constant is
	// determined); for Rényi it is u(t) = c + Σ θ_j t^j normalised to
	// E_P[u] = 1, which fixes c. Nil for closed forms.
	Coeffs        []float64
	Center, Width float64
}

// Restricted returns the restricted divergence D^H(P‖Q) between the output
// laws of an additive mechanism on neighbouring inputs: Q is the noise law
// (kind laplace, gaussian, discrete_laplace or discrete_gaussian, with scale
// b or σ) and P is Q shifted by shift (the sensitivity, an integer for the
// discrete kinds). It uses the closed forms where they exist and numerical
// optimisation otherwise; see the package doc for the table.
//
// The result never exceeds the unrestricted divergence (Value + ErrEst is
// capped at it, up to 1e−9, see [Result]) and is never NaN or infinite: a figure that
// cannot be computed within the work bound (a discrete scale above
// [MaxDiscreteScale], an exhausted quadrature budget) or that comes out
// non-finite wraps [ErrNotComputable] instead.
func Restricted(kind string, scale, shift float64, class Class, div Divergence) (Result, error) {
	if err := class.valid(); err != nil {
		return Result{}, err
	}
	if err := div.valid(); err != nil {
		return Result{}, err
	}
	q, err := newLaw(kind, scale)
	if err != nil {
		return Result{}, err
	}
	mu, err := q.normShift(shift, scale)
	if err != nil {
		return Result{}, err
	}
	v, closed := closedForm(q, mu, class, div)
	if !closed && q.discrete && q.scale > MaxDiscreteScale {
		return Result{}, fmt.Errorf("capacity: %s scale %v is above %d grid steps: %w", q.kind, q.scale, MaxDiscreteScale, ErrNotComputable)
	}
	bud := newBudget()
	u := q.unrestricted(mu, div, bud)
	if bud.exhausted() || math.IsNaN(u) || math.IsInf(u, 0) {
		return Result{}, fmt.Errorf("capacity: %s %v unrestricted bound at shift %v: %w", q.kind, div, mu, ErrNotComputable)
	}
	var r Result
	if closed {
		r = Result{Value: v, Method: ClosedForm}
	} else {
		r, err = numerical(q, mu, class, div, bud)
		if err != nil {
			return Result{}, err
		}
	}
	return capAt(r, u, q.kind, mu, class, div)
}

// capSlack is how far above the unrestricted divergence capAt leaves a
// figure alone: the 1e−10 quadrature allowance in ErrEst puts numerical
// figures that attain the unrestricted value (e.g. discrete Gaussian
// linear KL) 1e−10 above it, and those figures are recorded in the ledger
// (the golden files) as they were. Anything further above is capped.
const capSlack = 1e-9

// capAt makes r's figure honest: a NaN or −Inf Value (or a NaN ErrEst)
// wraps [ErrNotComputable], and Value and Value + ErrEst are capped at u, the
// unrestricted divergence between the same two laws. The cap loses
// nothing: every restricted divergence is at most the unrestricted one
// (D^H ≤ D, package doc), so the true value lies in [Value, min(u,
// Value + ErrEst)] and the capped figure is still an upper bound on it.
// A result with Value + ErrEst within [capSlack] above u is left alone.
// (Without the cap, ErrEst from finite differences on a nearly flat or
// non-smooth objective reached tens of nats, or +Inf. A +Inf Value comes
// from the quadrature's tail truncation when the adversary's polynomial
// vanishes on all of Q's kept mass — a discrete law of small scale at a
// large shift; it is capped at u like any other.)
func capAt(r Result, u float64, kind string, mu float64, class Class, div Divergence) (Result, error) {
	if math.IsNaN(r.Value) || math.IsInf(r.Value, -1) || math.IsNaN(r.ErrEst) {
		return Result{}, fmt.Errorf("capacity: %s %v %v at shift %v: value %v: %w", kind, class, div, mu, r.Value, ErrNotComputable)
	}
	if !(r.Value+r.ErrEst <= u+capSlack) {
		r.Value = math.Min(r.Value, u)
		r.ErrEst = u - r.Value
	}
	if r.ErrEst < 0 {
		r.ErrEst = 0
	}
	return r, nil
}

// Unrestricted returns the ordinary (unrestricted) divergence between the
// same two laws as [Restricted]: the figure every restricted one is below.
func Unrestricted(kind string, scale, shift float64, div Divergence) (float64, error) {
	if err := div.valid(); err != nil {
		return 0, err
	}
	q, err := newLaw(kind, scale)
	if err != nil {
		return 0, err
	}
	mu, err := q.normShift(shift, scale)
	if err != nil {
		return 0, err
	}
	bud := newBudget()
	u := q.unrestricted(mu, div, bud)
	if bud.exhausted() || math.IsNaN(u) || math.IsInf(u, 0) {
		return 0, fmt.Errorf("capacity: %s %v unrestricted at shift %v: %w", q.kind, div, mu, ErrNotComputable)
	}
	return u, nil
}

// normShift validates the shift and returns it in the law's units (divided
// by the mechanism's scale for the continuous kinds, which newLaw
// normalises to scale 1).
func (q law) normShift(shift, scale float64) (float64, error) {
	if !(shift >= 0) || math.IsInf(shift, 0) {
		return 0, fmt.Errorf("capacity: %s: shift (sensitivity) must be finite and >= 0, got %v: %w", q.kind, shift, accountant.ErrInvalidMechanism)
	}
	if q.discrete {
		if shift != math.Trunc(shift) {
			return 0, fmt.Errorf("capacity: %s: sensitivity must be an integer number of grid steps, got %v: %w", q.kind, shift, accountant.ErrInvalidMechanism)
		}
		return shift, nil
	}
	return shift / scale, nil
}

// closedForm returns the exact value where one is known (see the package
// doc for the derivations).
func closedForm(q law, mu float64, class Class, div Divergence) (float64, bool) {
	if mu == 0 {
		return 0, true
	}
	if div.IsKL() {
		switch q.kind {
		case accountant.KindGaussian:
			// The log-likelihood ratio μx − μ²/2 is linear, so every class
			// attains the unrestricted KL.
			return mu * mu / 2, true
		case accountant.KindLaplace:
			if class == Linear {
				return laplaceLinearKL(mu), true
			}
		case accountant.KindDiscreteLaplace:
			if class == Linear {
				return discreteLaplaceLinearKL(q.scale, mu), true
			}
		}
		return 0, false
	}
	if q.kind == accountant.KindLaplace && class == Linear {
		beta := div.Alpha / (div.Alpha - 1)
		if mu >= beta {
			return laplaceLinearRenyiLarge(mu, div.Alpha), true
		}
	}
	return 0, false
}

// laplaceLinearKL is sup_a aε − log E[e^{aZ}] for Z ~ Lap(1), E[e^{aZ}] =
// 1/(1−a²): the maximiser solves ε = 2a/(1−a²), a = (√(1+ε²) − 1)/ε, and
// the value is √(1+ε²) − 1 − log((1+√(1+ε²))/2). Small ε: ε²/4 − O(ε⁴).
func laplaceLinearKL(e float64) float64 {
	s := math.Hypot(1, e)
	// √(1+ε²) − 1 = ε²/(√(1+ε²)+1) without cancellation.
	d := e * e / (s + 1)
	return d - math.Log1p(d/2)
}

// discreteLaplaceLinearKL is sup_a an − log M(a) for the two-sided geometric
// law P(k) ∝ r^{|k|}, r = e^{−1/b}, whose MGF is M(a) = (1−r)² /
// ((1−re^a)(1−re^{−a})) for |a| < 1/b. Setting M'/M = n gives, with y = e^a,
// r(n+1)y² − n(1+r²)y + r(n−1) = 0; the root in (1, 1/r) is the larger one.
// It is solved for z = ry instead, (n+1)z² − n(1+r²)z + r²(n−1) = 0 (the
// equation times r), so that nothing divides by r, which underflows to 0
// for b < 1/745; then a = log z + 1/b and r/y = r²/z.
//
// For r ≥ 1e−100 (b ≥ 1/230) the original form is kept: it is accurate
// there, and the ledger's recorded figures stay bit-identical.
func discreteLaplaceLinearKL(b, n float64) float64 {
	r := math.Exp(-1 / b)
	if r >= 1e-100 {
		A := r * (n + 1)
		B := -n * (1 + r*r)
		C := r * (n - 1)
		y := (-B + math.Sqrt(B*B-4*A*C)) / (2 * A)
		a := math.Log(y)
		logM := 2*math.Log1p(-r) - math.Log1p(-r*y) - math.Log1p(-r/y)
		return a*n - logM
	}
	A := n + 1
	B := -n * (1 + r*r)
	C := r * r * (n - 1)
	z := (-B + math.Sqrt(B*B-4*A*C)) / (2 * A)
	a := math.Log(z) + 1/b
	logM := 2*math.Log1p(-r) - math.Log1p(-z) - math.Log1p(-r*r/z)
	return a*n - logM
}

// laplaceLinearRenyiLarge is the linear-restricted Rényi divergence of
// order α for Laplace noise when ε ≥ β = α/(α−1): the adversary u = x − s
// with s = ε − β ≥ 0 is a stationary point of the concave objective, so
// R = ε − β + β log β − log(Γ(β+1)/2).
func laplaceLinearRenyiLarge(e, alpha float64) float64 {
	beta := alpha / (alpha - 1)
	lg, _ := math.Lgamma(beta + 1)
	return e - beta + beta*math.Log(beta) - lg + math.Ln2
}

// numerical maximises the variational objective over the coefficients of
// the class (see the package doc, "Numerical method"). The adversary is a
// polynomial in t = (x − m)/w, m = μ/2 the midpoint of the two laws and
// w = max(scale, μ/2), so that its coefficients are of order one whatever
// the scale and shift (the classes are closed under affine maps, so the
// value does not change).
//
// The work is bounded by bud (see [logIntegral]); when it runs out the
// figure wraps [ErrNotComputable].
func numerical(q law, mu float64, class Class, div Divergence, bud *budget) (Result, error) {
	m := mu / 2
	w := math.Max(q.scale, mu/2)
	mx := q.momentsP(mu - m) // moments of X − m under P
	var mp [4]float64        // E_P[T^j]
	for j := range mp {
		mp[j] = mx[j] / math.Pow(w, float64(j))
	}
	deg := class.Degree()
	var obj func(th []float64) float64
	if div.IsKL() {
		// KL: J(a) = Σ a_j E_P[T^j] − log E_Q[e^{h(T)}], h = Σ_{j≥1} a_j t^j,
		// concave in a. A cubic term makes E_Q[e^h] infinite for every law
		// here (their tails are e^{−|x|} or e^{−x²}), so Poly3 has the same
		// value as Poly2.
		if deg > 2 {
			deg = 2
		}
		maxA2 := q.maxA2 * w * w
		maxA1 := q.maxA1 * w
		obj = func(a []float64) float64 {
			a2 := 0.0
			if deg == 2 {
				a2 = a[1]
			}
			if a2 > maxA2 || (a2 == maxA2 && (maxA2 > 0 || math.Abs(a[0]) >= maxA1)) {
				return math.Inf(-1)
			}
			lin := 0.0
			for j := range a {
				lin += a[j] * mp[j+1]
			}
			return lin - logIntegral(func(x float64) float64 {
				t, v := (x-m)/w, 0.0
				for j := len(a) - 1; j >= 0; j-- {
					v = (v + a[j]) * t
				}
				return v + q.logq(x)
			}, q.discrete, q.scale, 0, bud) // concave: a2 ≤ maxA2
		}
	} else {
		// Rényi of order α, β = α/(α−1): with f(x) = x^α the variational
		// form is G = sup_h E_P[h] − (α−1)α^{−β} E_Q[h₊^β], R = log G/(α−1).
		// Maximising over the scale of h in closed form leaves
		// R = sup_u β log E_P[u] − log E_Q[u₊^β] (u in the class, homogeneous
		// of degree 0), i.e. R = −log min { E_Q[u₊^β] : E_P[u] = 1 }, a convex
		// minimisation on an affine set. Parametrise by the non-constant
		// coefficients, the constant being 1 − Σ_{j≥1} θ_j E_P[T^j].
		a := div.Alpha
		beta := a / (a - 1)
		obj = func(th []float64) float64 {
			c := 1.0
			for j := range th {
				c -= th[j] * mp[j+1]
			}
			return -logIntegral(func(x float64) float64 {
				t, v := (x-m)/w, 0.0
				for j := len(th) - 1; j >= 0; j-- {
					v = (v + th[j]) * t
				}
				v += c
				if v <= 0 {
					return math.Inf(-1)
				}
				return beta*math.Log(v) + q.logq(x)
			}, q.discrete, q.scale, math.Abs(m)+tailStart(c, th, beta, w, q.scale), bud)
		}
	}
	// Start at h = 0 (KL) or u ≡ 1 (Rényi), value 0. For Rényi the optimal
	// u is ≈ 1 + h/β with h of order one (u₊^β ≈ e^h as α → 1), so the
	// initial simplex is scaled by 1/β.
	x0 := make([]float64, deg)
	step := 0.5
	if !div.IsKL() {
		step = 0.5 * (div.Alpha - 1) / div.Alpha
	}
	th, best, err := maximize(obj, x0, step)
	if bud.exhausted() {
		err = errBudget
	}
	if err != nil {
		return Result{}, fmt.Errorf("capacity: %s %v %v at shift %v: %w", q.kind, class, div, mu, err)
	}
	th, best, gap := newtonPolish(obj, th, best)
	if bud.exhausted() {
		return Result{}, fmt.Errorf("capacity: %s %v %v at shift %v: %w", q.kind, class, div, mu, errBudget)
	}
	if best < 0 {
		best = 0
	}
	return Result{Value: best, Method: Numerical, ErrEst: gap + 1e-10, Coeffs: th, Center: m, Width: w}, nil
}

// errBudget wraps [ErrNotComputable] for a figure whose work budget ran out.
var errBudget = fmt.Errorf("work budget of %d evaluations exhausted: %w", figureBudget, ErrNotComputable)

// tailStart bounds where β log u((x−m)/w) + log q(x) starts to decrease
// in |x − m|, for u(t) = c + Σ θ_j t^{j+1}: beyond the Cauchy bound r on the
// roots of u (in x units, about m), |d/dx log u| ≤ d/(|x − m| − r), while
// log q decreases at rate ≥ 1/scale for |x| ≥ scale; so
// |x − m| > r + (βd + 1)·scale suffices (the caller adds |m|).
func tailStart(c float64, th []float64, beta, w, scale float64) float64 {
	coef := append([]float64{c}, th...)
	d := len(coef) - 1
	for d > 0 && coef[d] == 0 {
		d--
	}
	if d == 0 {
		return scale
	}
	r := 0.0
	for j := 0; j < d; j++ {
		r = math.Max(r, math.Abs(coef[j]/coef[d]))
	}
	return (1+r)*w + (beta*float64(d)+1)*scale
}

// maximize runs Nelder–Mead on obj (maximising), restarting from the best
// point with a shrinking simplex until a restart improves by less than
// 1e−13: restarts guard against the simplex collapsing early, and the
// objective is concave, so any local maximum is the global one.
//
// gonum/optimize has the same method, but it imports gonum/stat/distmv and
// through it golang.org/x/tools, which go.sum does not carry; this small
// version keeps the package inside the module's current dependencies.
func maximize(obj func([]float64) float64, x0 []float64, step float64) ([]float64, float64, error) {
	f := func(x []float64) float64 {
		v := obj(x)
		if math.IsNaN(v) {
			return math.Inf(-1)
		}
		return v
	}
	x := append([]float64(nil), x0...)
	best := f(x)
	if math.IsInf(best, -1) {
		return nil, 0, errors.New("objective is not finite at the starting point")
	}
	for restart := 0; restart < 12; restart++ {
		y, v := nelderMead(f, x, step, 3000)
		improved := v - best
		if v > best {
			best = v
			x = y
		}
		if improved < 1e-13 && restart > 0 {
			break
		}
		step /= 3
	}
	return x, best, nil
}

// nelderMead maximises f from x0 with an axis-aligned initial simplex of
// the given size, standard coefficients (reflection 1, expansion 2,
// contraction ½, shrink ½), stopping when the simplex's values agree to
// 1e−15 (relative) or after maxEval evaluations.
func nelderMead(f func([]float64) float64, x0 []float64, size float64, maxEval int) ([]float64, float64) {
	n := len(x0)
	pts := make([][]float64, n+1)
	vals := make([]float64, n+1)
	for i := range pts {
		pts[i] = append([]float64(nil), x0...)
		if i > 0 {
			pts[i][i-1] += size
		}
		vals[i] = f(pts[i])
	}
	evals := n + 1
	point := func(c []float64, w []float64, t float64) []float64 {
		y := make([]float64, n)
		for j := range y {
			y[j] = c[j] + t*(w[j]-c[j])
		}
		return y
	}
	for evals < maxEval {
		// Order: best first.
		for i := 1; i <= n; i++ {
			for j := i; j > 0 && vals[j] > vals[j-1]; j-- {
				vals[j], vals[j-1] = vals[j-1], vals[j]
				pts[j], pts[j-1] = pts[j-1], pts[j]
			}
		}
		if math.Abs(vals[0]-vals[n]) <= 1e-15*math.Max(1, math.Abs(vals[0])) {
			break
		}
		c := make([]float64, n)
		for i := 0; i < n; i++ {
			for j := range c {
				c[j] += pts[i][j] / float64(n)
			}
		}
		r := point(c, pts[n], -1)
		fr := f(r)
		evals++
		switch {
		case fr > vals[0]:
			e := point(c, pts[n], -2)
			fe := f(e)
			evals++
			if fe > fr {
				pts[n], vals[n] = e, fe
			} else {
				pts[n], vals[n] = r, fr
			}
		case fr > vals[n-1]:
			pts[n], vals[n] = r, fr
		default:
			k := point(c, pts[n], 0.5)
			if fr > vals[n] {
				k = point(c, r, 0.5)
			}
			fk := f(k)
			evals++
			if fk > math.Max(fr, vals[n]) {
				pts[n], vals[n] = k, fk
				continue
			}
			for i := 1; i <= n; i++ {
				pts[i] = point(pts[0], pts[i], 0.5)
				vals[i] = f(pts[i])
				evals++
			}
		}
	}
	bi := 0
	for i := range vals {
		if vals[i] > vals[bi] {
			bi = i
		}
	}
	return pts[bi], vals[bi]
}

// newtonPolish estimates the gradient g and Hessian H of obj at x by central
// differences, takes one Newton step if it improves obj, and returns the
// Newton decrement ½gᵀ(−H)⁻¹g at the final point as the estimated gap to the
// supremum (exact for a quadratic; for the smooth concave objectives here
// the gap near the optimum is quadratic to leading order).
func newtonPolish(obj func([]float64) float64, x []float64, fx float64) ([]float64, float64, float64) {
	dec := func(x []float64, fx float64) (*mat.VecDense, float64, bool) {
		n := len(x)
		h := make([]float64, n)
		for i := range h {
			h[i] = 1e-3 * math.Max(1, math.Abs(x[i]))
		}
		at := func(d map[int]float64) float64 {
			y := append([]float64(nil), x...)
			for i, s := range d {
				y[i] += s
			}
			return obj(y)
		}
		g := mat.NewVecDense(n, nil)
		H := mat.NewSymDense(n, nil)
		for i := 0; i < n; i++ {
			fp, fm := at(map[int]float64{i: h[i]}), at(map[int]float64{i: -h[i]})
			g.SetVec(i, (fp-fm)/(2*h[i]))
			H.SetSym(i, i, -(fp-2*fx+fm)/(h[i]*h[i]))
			for j := 0; j < i; j++ {
				fpp := at(map[int]float64{i: h[i], j: h[j]})
				fpm := at(map[int]float64{i: h[i], j: -h[j]})
				fmp := at(map[int]float64{i: -h[i], j: h[j]})
				fmm := at(map[int]float64{i: -h[i], j: -h[j]})
				H.SetSym(i, j, -(fpp-fpm-fmp+fmm)/(4*h[i]*h[j]))
			}
		}
		var step mat.VecDense
		if err := step.SolveVec(H, g); err != nil {
			return nil, 0, false
		}
		d := mat.Dot(g, &step) / 2
		if !(d >= 0) || math.IsInf(d, 0) {
			return nil, 0, false
		}
		return &step, d, true
	}
	step, d, ok := dec(x, fx)
	if !ok {
		return x, fx, math.Abs(fx) * 1e-6 // no curvature estimate: a loose stand-in
	}
	y := append([]float64(nil), x...)
	for i := range y {
		y[i] += step.AtVec(i)
	}
	if fy := obj(y); fy > fx {
		x, fx = y, fy
		if _, d2, ok := dec(x, fx); ok {
			d = d2
		}
	}
	return x, fx, d
}
