package capacity

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/accountant"
)

// Vector returns the restricted divergence for a d-dimensional output with
// independent noise of one kind and scale on every coordinate, the
// neighbouring inputs' outputs differing by the vector shifts (one entry
// per coordinate, the per-coordinate sensitivities). The class acts on the
// whole vector as the Minkowski sum of the per-coordinate classes:
// h(x) = Σ_i h_i(x_i) with each h_i in class (for Linear that is every
// affine a·x + c; for Poly2/Poly3 it is the separable polynomials, no
// cross terms).
//
// How the coordinates combine:
//
//   - KL, any class: exactly the sum of the per-coordinate figures. For
//     product laws and h = Σ h_i, E_P[h] = Σ E_{P_i}[h_i] and
//     log E_Q[e^h] = Σ log E_{Q_i}[e^{h_i}], so the supremum separates.
//   - Rényi, linear, gaussian: exactly the 1-d figure at the L2 norm of the
//     shifts. a·X under Q is N(0, ‖a‖²σ²) and E_P[a·X] = a·shift; for a fixed
//     ‖a‖ the objective only improves as a·shift grows, so a ∥ shift and the
//     problem is the scalar one with shift ‖shift‖₂ (Method Reduction).
//   - A single non-zero coordinate, any kind, class and divergence: exactly
//     the 1-d figure. The other coordinates have the same law under P and Q;
//     for h(x_1, y), the objective is an average over y of 1-d objectives of
//     h(·, y), each at most the 1-d supremum.
//   - Otherwise (Rényi with laplace or discrete kinds, or polynomial
//     classes): the sum of the per-coordinate figures, by the paper's
//     non-adaptive composition (see [ComposeNonAdaptive]); an upper bound,
//     returned with Method Reduction.
//
// Each coordinate's figure is capped at its unrestricted divergence (see
// [Restricted]), and unrestricted divergences of product laws add over the
// coordinates, so the result never exceeds the unrestricted divergence of
// the vector laws; a coordinate that is not computable wraps
// [ErrNotComputable].
func Vector(kind string, scale float64, shifts []float64, class Class, div Divergence) (Result, error) {
	if len(shifts) == 0 {
		return Result{}, fmt.Errorf("capacity: vector with no coordinates: %w", accountant.ErrInvalidMechanism)
	}
	nz, last := 0, 0
	for i, s := range shifts {
		if s != 0 {
			nz, last = nz+1, i
		}
	}
	if nz <= 1 {
		return Restricted(kind, scale, math.Abs(shifts[last]), class, div)
	}
	if !div.IsKL() && class == Linear && kind == accountant.KindGaussian {
		n := 0.0
		for _, s := range shifts {
			n = math.Hypot(n, s)
		}
		r, err := Restricted(kind, scale, n, class, div)
		if r.Method == Numerical {
			r.Method = Reduction
		}
		return r, err
	}
	sum := Result{Method: Reduction}
	for i, s := range shifts {
		r, err := Restricted(kind, scale, math.Abs(s), class, div)
		if err != nil {
			return Result{}, fmt.Errorf("coordinate %d: %w", i, err)
		}
		sum.Value += r.Value
		sum.ErrEst += r.ErrEst
	}
	return sum, nil
}

// Figure returns the restricted divergence of one ledger charge m against
// the adversary class: its noise kind (laplace, gaussian, discrete_laplace
// or discrete_gaussian), Scale and Sensitivity, with the two output laws
// those of neighbouring inputs whose true values differ by the full
// sensitivity in one coordinate, applied m.Count times (the Count
// applications composed by [ComposeNonAdaptive]: they are independent
// noise draws on fixed inputs).
//
// Numerical entries are reported as Value + ErrEst (see [Result]): the
// optimiser's value is a lower bound on the supremum and ErrEst its
// estimated gap, so the figure leans towards the adversary; it is capped (up to 1e−9)
// at the unrestricted divergence (see [Restricted]), an upper bound on the
// supremum, so the cap loses nothing.
//
// A figure that cannot be computed within the work bound, or that would
// be NaN or infinite, wraps [ErrNotComputable] (see [Restricted]); no
// figure is returned as NaN or ±Inf with a nil error.
//
// Scope. For a scalar output this is exact (up to [Result.ErrEst] where
// numerical). For a vector output it is exact when a neighbour moves one
// coordinate; for gaussian kinds it is exact for every shift of the given L2
// norm against Linear (see [Vector]) and for KL against every class (the
// linear class already attains the unrestricted Δ²/(2σ²)); for laplace
// linear KL the worst shift of L1 norm Δ1 is a single coordinate, because
// the 1-d figure g is convex with g(0) = 0, hence superadditive, and the
// coordinates add. Other vector cases: use [Vector] with the actual shifts.
//
// Other kinds (pure, exponential, zcdp, approx_dp, randomized_response)
// wrap [ErrUnsupported]: they have no additive-noise output law here, and
// their unrestricted figure is the one to report.
func Figure(m accountant.Mechanism, class Class, div Divergence) (float64, error) {
	if err := m.Validate(); err != nil {
		return 0, fmt.Errorf("capacity: figure: %w", err)
	}
	switch m.Kind {
	case accountant.KindLaplace, accountant.KindGaussian, accountant.KindDiscreteLaplace, accountant.KindDiscreteGaussian:
	default:
		return 0, fmt.Errorf("capacity: figure for mechanism kind %q: %w", m.Kind, ErrUnsupported)
	}
	r, err := Restricted(m.Kind, m.Scale, m.Sensitivity, class, div)
	if err != nil {
		return 0, fmt.Errorf("capacity: figure: %w", err)
	}
	n := m.Count
	if n == 0 {
		n = 1
	}
	// Numerical values approach the supremum from below; report the upper
	// end of the estimated interval so that a figure errs on the side of
	// the adversary.
	return ComposeNonAdaptive(repeat(r.Value+r.ErrEst, n)...), nil
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// ComposeNonAdaptive is the paper's composition theorem (Theorem 4): if
// mechanism i is ε_i-private in the restricted divergence against class H_i
// and the mechanisms are run on the same input with independent randomness
// and NO mechanism's choice depending on another's output (non-adaptive),
// then releasing all outputs together is Σ ε_i-private against the
// Minkowski-sum class {(y_1, …, y_k) ↦ Σ_i h_i(y_i) : h_i ∈ H_i}, for the
// same divergence throughout (KL, or Rényi of one order α).
//
// Conditions, exactly:
//   - non-adaptive only. Restricted divergences have no adaptive chain rule;
//     a mechanism chosen after seeing another's output is not covered.
//   - the joint adversary is a sum of per-output adversaries: a degree-2
//     polynomial in two outputs with a cross term y_1·y_2 is outside the
//     composed class, and so is any non-linear function of a linear
//     adversary's view; no post-processing invariance beyond the class.
//   - KL: proved here with equality for product laws (the supremum
//     separates, see [Vector]), so the sum is exact for the composed class.
//   - Rényi (one order α for all): as stated by the paper's authors; not
//     re-derived here. Checked numerically in the tests against exact 2-d
//     figures: gaussian linear (the 1-d figure at the L2 norm) and laplace
//     linear (direct computation, inner expectation in closed form), where
//     the sum is an upper bound as the theorem says (e.g. laplace shifts
//     (1, 1), α = 2: joint 0.7911 ≤ 0.4396 + 0.4396).
func ComposeNonAdaptive(figures ...float64) float64 {
	s := 0.0
	for _, f := range figures {
		s += f
	}
	return s
}

// Compose returns the non-adaptive composition ([ComposeNonAdaptive]) of
// the figures of the given charges ([Figure]): what a stream's ledger of
// independent noise additions gives against the class. It errors on the
// first charge without a figure; the caller decides whether to report the
// unrestricted figure for those instead.
func Compose(charges []accountant.Mechanism, class Class, div Divergence) (float64, error) {
	figs := make([]float64, 0, len(charges))
	for i, m := range charges {
		f, err := Figure(m, class, div)
		if err != nil {
			return 0, fmt.Errorf("capacity: charge %d: %w", i, err)
		}
		figs = append(figs, f)
	}
	return ComposeNonAdaptive(figs...), nil
}

// MatrixBound is the matrix-mechanism bound (the paper's Theorem 5, in the
// form derived here): a release y = B·(C·x + z), with z i.i.d. noise of the
// given kind and scale on each of C's rows and B any fixed matrix, against
// LINEAR adversaries on y, on neighbours whose inputs differ by the vector
// u (a unit's contribution), satisfies
//
//	D^lin(y | x ‖ y | x') ≤ D^lin(C·x + z ‖ C·x' + z) = Vector(kind, scale, |C·u|, Linear, div).
//
// Proof sketch: a linear adversary a·y + c on y is the linear adversary
// (Bᵀa)·w + c on w = C·x + z (post-processing by B keeps a linear adversary
// linear, the one case where the class is closed under the
// post-processing), so the supremum over the smaller set is at most the
// one over all linear adversaries on w; the right side is [Vector] with the
// shift C·(x − x'). Histograms: C = I and a unit moving one cell by Δ gives
// the 1-d figure. Factorised continual release (prefix sums A = B·C): u is
// the unit's per-window contributions. It is linear adversaries only: a
// polynomial of degree ≥ 2 in y is a polynomial in w with cross terms, outside
// the separable classes [Vector] handles.
//
// C is given by rows (len(C) rows of len(u) entries).
func MatrixBound(kind string, scale float64, C [][]float64, u []float64, div Divergence) (Result, error) {
	if len(C) == 0 {
		return Result{}, fmt.Errorf("capacity: matrix bound: C has no rows: %w", accountant.ErrInvalidMechanism)
	}
	shift := make([]float64, len(C))
	for i, row := range C {
		if len(row) != len(u) {
			return Result{}, fmt.Errorf("capacity: matrix bound: row %d of C has %d entries, u has %d: %w", i, len(row), len(u), accountant.ErrInvalidMechanism)
		}
		for j, c := range row {
			shift[i] += c * u[j]
		}
		shift[i] = math.Abs(shift[i])
	}
	return Vector(kind, scale, shift, Linear, div)
}

// Pair is a figure against an adversary class ([Figure]) beside the
// unrestricted divergence between the same two output laws: what dpstream
// reports for a charge, a ledger or a stream (the unrestricted one is the
// guarantee against every adversary; Restricted is at most it, up to
// [Result.ErrEst]).
type Pair struct {
	Restricted, Unrestricted float64
}

// Figures returns m's [Figure] against class beside its unrestricted
// divergence ([Unrestricted], m.Count-fold: divergences of independent
// draws add). It wraps [ErrUnsupported] for a kind without an
// additive-noise law, like [Figure].
func Figures(m accountant.Mechanism, class Class, div Divergence) (Pair, error) {
	f, err := Figure(m, class, div)
	if err != nil {
		return Pair{}, err
	}
	u, err := Unrestricted(m.Kind, m.Scale, m.Sensitivity, div)
	if err != nil {
		return Pair{}, fmt.Errorf("capacity: unrestricted figure: %w", err)
	}
	return Pair{Restricted: f, Unrestricted: float64(max(m.Count, 1)) * u}, nil
}

// ComposeFigures returns the non-adaptive composition ([ComposeNonAdaptive])
// of the [Figures] of the charges, restricted and unrestricted alike (the
// unrestricted divergences of independent draws add too). It errors on the
// first charge without a figure, wrapping [ErrUnsupported] when its kind
// has no additive-noise law. No charges compose to the zero Pair.
func ComposeFigures(charges []accountant.Mechanism, class Class, div Divergence) (Pair, error) {
	var sum Pair
	for i, m := range charges {
		p, err := Figures(m, class, div)
		if err != nil {
			return Pair{}, fmt.Errorf("capacity: charge %d: %w", i, err)
		}
		sum.Restricted = ComposeNonAdaptive(sum.Restricted, p.Restricted)
		sum.Unrestricted += p.Unrestricted
	}
	return sum, nil
}
