package regression

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file implements private model selection by penalized constrained
// least squares (PCLS; SPEC section 4.5; Lei, Charest, Slavkovic, Smith &
// Fienberg 2018, "Differentially private model selection with penalized
// and constrained likelihood", JRSS A, Algorithm 1). Each candidate
// support M is scored from the exact regression statistics by
//
//	Score(M) = L̂(M) + pen·|M|,  L̂(M) = min { Σ(y − xᵀβ)² : supp(β) ⊆ M, ‖β‖₁ ≤ r },
//
// and one candidate is selected with the exponential mechanism or
// report-noisy-min. Only the selection is private here; the coefficients of
// the selected model are released afterwards by another mechanism (AdaSSP
// on RestrictStats) with its own budget share.

// The selection rules of PCLSSpec.Selection.
const (
	// SelectionExponential samples M with P(M) ∝ exp(−ε·Score(M)/(2Δ))
	// (McSherry & Talwar 2007), by the Gumbel-max trick; Δ carries a
	// 0.05% slack for the solver's certified error (see SelectSupport).
	SelectionExponential = "exponential"
	// SelectionNoisyMin adds independent Laplace(2Δ/ε) noise to every
	// score and returns the smallest (report-noisy-min; Dwork & Roth 2014,
	// section 3.3), with exact discrete Laplace noise on a grid.
	SelectionNoisyMin = "noisy_min"
)

// MaxPCLSCandidates caps the number of candidate supports. Every candidate
// costs one constrained least-squares solve per window, and the
// exponential mechanism's utility degrades with log(#candidates), so a
// configuration that enumerates more is refused rather than silently
// truncated.
const MaxPCLSCandidates = 4096

// NoiseExponential is the Component.Noise of a PCLS selection: not a noise
// addition with a sensitivity but a pure ε-DP selection, charged to the
// accountant as accountant.Mechanism{Kind: "exponential", Epsilon: ε}
// (accountant.KindExponential has the same value).
const NoiseExponential noise.Kind = "exponential"

// PurposeModelSelection is the Component.Purpose of a PCLS selection.
const PurposeModelSelection = "model_selection"

// ErrPCLSNotConverged is wrapped by the errors of ConstrainedLoss and
// SelectSupport when the constrained least-squares solver cannot certify
// the accuracy it promises within its iteration cap (an extremely
// ill-conditioned problem). SelectSupport then releases nothing: a score
// whose error is not bounded has no sensitivity bound.
var ErrPCLSNotConverged = errors.New("pcls: constrained least squares did not reach the certified accuracy")

// PCLSSpec configures one private model selection. Like Spec, it is the
// only input to calibration: the noise, and so the charge, never depend on
// the data.
type PCLSSpec struct {
	// Epsilon is the selection's ε (pure DP), in (0, 2^20].
	Epsilon float64
	// Selection is SelectionExponential or SelectionNoisyMin.
	Selection string
	// Radius is r, the ℓ1 radius of the coefficients of the scaled
	// problem (intercept coefficient included), in (0, 2^20]. It bounds
	// every prediction |xᵀβ| ≤ ‖x‖∞·‖β‖₁ ≤ r, which is what bounds the
	// sensitivity; it also shrinks the fit, so it trades bias for noise
	// (Δ grows as (1 + r)²).
	Radius float64
	// Penalty is pen ≥ 0, added to a candidate's loss per selected
	// feature (the intercept is not counted); at most 2^100, which is
	// beyond any loss a window can have (≤ N·(1 + r)² < 2^72).
	Penalty float64
	// MaxSupport, if > 0, makes the candidates all non-empty subsets of
	// the features of size at most MaxSupport. Exactly one of MaxSupport
	// and Supports must be set.
	MaxSupport int
	// Supports, if non-empty, is the explicit list of candidates: each a
	// non-empty set of feature indices (0-based, into
	// Scaling.FeatureBounds; the intercept column is not a feature).
	Supports [][]int
	// Scaling is the regression's scaling (Scaling). Its
	// intercept column, if any, belongs to every candidate and is never
	// selected or penalized.
	Scaling Scaling
	// MaxContributions is L, the most rows one privacy unit keeps per
	// window (enforced upstream), at least 1.
	MaxContributions int
}

// validate reports a PCLSSpec that cannot be calibrated; the candidates
// are checked by CandidateSupports.
func (s PCLSSpec) validate() error {
	// ε ≤ 2^20 is far beyond any meaningful privacy level (a selection
	// with ε above about 20 is effectively the non-private argmin) and
	// keeps every grid index and noise scale finite and representable.
	if !(s.Epsilon > 0) || s.Epsilon > 1<<20 {
		return fmt.Errorf("%w: pcls epsilon %v must be in (0, 2^20]", noise.ErrInvalidSpec, s.Epsilon)
	}
	if s.Selection != SelectionExponential && s.Selection != SelectionNoisyMin {
		return fmt.Errorf("%w: pcls selection %q must be %q or %q", noise.ErrInvalidSpec, s.Selection, SelectionExponential, SelectionNoisyMin)
	}
	// r ≤ 2^20 keeps Δ = L·(1 + r)² far inside the range where the noise
	// samplers work; a radius that large would drown any selection anyway.
	if !(s.Radius > 0) || s.Radius > 1<<20 {
		return fmt.Errorf("%w: pcls radius %v must be in (0, 2^20]", noise.ErrInvalidSpec, s.Radius)
	}
	if !(s.Penalty >= 0) || s.Penalty > 0x1p100 {
		return fmt.Errorf("%w: pcls penalty %v must be in [0, 2^100]", noise.ErrInvalidSpec, s.Penalty)
	}
	// L ≤ 2^31 matches the most rows a window's statistics can hold.
	if s.MaxContributions < 1 || s.MaxContributions > MaxRows {
		return fmt.Errorf("%w: pcls max contributions %d must be in [1, %d]", noise.ErrInvalidSpec, s.MaxContributions, MaxRows)
	}
	if err := s.Scaling.Validate(); err != nil {
		return fmt.Errorf("pcls scaling: %w", err)
	}
	deltaSel, _ := pclsSlack(s)
	if _, _, err := noisyMinScale(s.Epsilon, deltaSel); err != nil {
		return fmt.Errorf("%w: pcls: %v", noise.ErrInvalidSpec, err)
	}
	return nil
}

// CandidateSupports returns the candidate supports of s in a deterministic
// order: the explicit Supports in their given order (each sorted
// ascending), or, with MaxSupport = K, all non-empty subsets of the d
// features of size at most K, by size and then lexicographically
// ({0}, {1}, …, {0, 1}, {0, 2}, …). The indices are features, not columns:
// the intercept column is added by the functions that solve.
//
// It returns an error wrapping ErrInvalidSpec for an invalid spec, for both
// or neither of MaxSupport and Supports, an empty, out-of-range or
// repeated index, a repeated support, or more than MaxPCLSCandidates
// candidates.
func CandidateSupports(s PCLSSpec) ([][]int, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	d := len(s.Scaling.FeatureBounds)
	switch {
	case s.MaxSupport != 0 && len(s.Supports) != 0:
		return nil, fmt.Errorf("%w: pcls needs MaxSupport or Supports, not both", noise.ErrInvalidSpec)
	case s.MaxSupport == 0 && len(s.Supports) == 0:
		return nil, fmt.Errorf("%w: pcls needs MaxSupport > 0 or a non-empty Supports list", noise.ErrInvalidSpec)
	case len(s.Supports) > MaxPCLSCandidates:
		return nil, fmt.Errorf("%w: pcls has %d candidate supports, at most %d", noise.ErrInvalidSpec, len(s.Supports), MaxPCLSCandidates)
	case len(s.Supports) > 0:
		out := make([][]int, len(s.Supports))
		seen := make(map[string]int, len(s.Supports))
		for i, m := range s.Supports {
			if len(m) == 0 {
				return nil, fmt.Errorf("%w: pcls support %d is empty", noise.ErrInvalidSpec, i)
			}
			c := slices.Clone(m)
			slices.Sort(c)
			for j, f := range c {
				if f < 0 || f >= d {
					return nil, fmt.Errorf("%w: pcls support %d: feature %d is not in [0, %d)", noise.ErrInvalidSpec, i, f, d)
				}
				if j > 0 && c[j-1] == f {
					return nil, fmt.Errorf("%w: pcls support %d repeats feature %d", noise.ErrInvalidSpec, i, f)
				}
			}
			key := fmt.Sprint(c)
			if k, dup := seen[key]; dup {
				return nil, fmt.Errorf("%w: pcls supports %d and %d are the same", noise.ErrInvalidSpec, k, i)
			}
			seen[key] = i
			out[i] = c
		}
		return out, nil
	}
	if s.MaxSupport < 0 || s.MaxSupport > d {
		return nil, fmt.Errorf("%w: pcls max support %d must be in [1, %d] (the number of features)", noise.ErrInvalidSpec, s.MaxSupport, d)
	}
	// Count first, so a configuration asking for C(64, 32) candidates is
	// refused without enumerating anything. C(d, k) is built up
	// incrementally and checked against the cap before it can overflow.
	total, c := 0, 1
	for k := 1; k <= s.MaxSupport; k++ {
		c = c * (d - k + 1) / k // exact: c·(d−k+1) is divisible by k
		total += c
		if total > MaxPCLSCandidates {
			return nil, fmt.Errorf("%w: pcls with %d features and max support %d has more than %d candidate supports", noise.ErrInvalidSpec, d, s.MaxSupport, MaxPCLSCandidates)
		}
	}
	out := make([][]int, 0, total)
	for k := 1; k <= s.MaxSupport; k++ {
		// Lexicographic k-subsets of {0, …, d−1}.
		idx := make([]int, k)
		for i := range idx {
			idx[i] = i
		}
		for {
			out = append(out, slices.Clone(idx))
			i := k - 1
			for i >= 0 && idx[i] == d-k+i {
				i--
			}
			if i < 0 {
				break
			}
			idx[i]++
			for j := i + 1; j < k; j++ {
				idx[j] = idx[j-1] + 1
			}
		}
	}
	return out, nil
}

// PCLSSensitivity returns Δ = L·(B_y + r·‖x‖∞)² = L·(1 + r)², the
// sensitivity of every candidate's constrained loss L̂(M) (and so of
// Score(M), whose penalty does not depend on the data) under add/remove
// one privacy unit, for rows scaled by Scaling (‖x‖∞ ≤ 1,
// |y| ≤ 1; SPEC section 4.5, derived). It returns NaN when L < 1 or r is
// not finite and > 0.
//
// Proof sketch. Write F_D(β) = Σ_{rows of D} (y − xᵀβ)² over the feasible
// set C_M = {β : supp(β) ⊆ M, ‖β‖₁ ≤ r}. For β ∈ C_M and a scaled row,
// |xᵀβ| ≤ ‖x‖∞·‖β‖₁ ≤ r (Hölder), so each term lies in [0, (1 + r)²]. If
// D' is D plus one unit's k ≤ L rows, F_{D'} = F_D + G with
// 0 ≤ G ≤ L·(1 + r)² on C_M. Hence min F_D ≤ min F_{D'} (G ≥ 0) and
// min F_{D'} ≤ F_{D'}(β*_D) ≤ min F_D + L·(1 + r)² (β*_D the minimizer
// on D): the minimum of a sum changes by at most the largest the added or
// removed terms can be. The change is moreover one-signed: adding a unit
// never decreases any score (this monotonicity is used by SelectSupport).
// The bound is attained in the limit of a large data set whose constrained
// fit is on the boundary, with the added rows at y = ±1 and x = ∓sign(β*)
// (see the tests). Lei et al. (2018) state the same bound for their
// bounded-data setting; the intercept coefficient is inside the ℓ1 ball
// here, which is what makes it hold with an intercept column.
func PCLSSensitivity(s PCLSSpec) float64 {
	if s.MaxContributions < 1 || !(s.Radius > 0) || math.IsInf(s.Radius, 1) {
		return math.NaN()
	}
	return float64(s.MaxContributions) * (1 + s.Radius) * (1 + s.Radius)
}

// pclsSlack returns the sensitivity the selection is calibrated with and
// the optimization accuracy it demands of every score.
//
// The mechanism does not see the exact minimum L̂(M) but a computed value
// v: the loss at a feasible β̂, evaluated exactly on the integer statistics
// (so v ≥ L̂(M)), whose Frank–Wolfe duality gap is certified exactly to be
// at most tau = 2⁻¹²·Δ (so v ≤ L̂(M) + tau), then rounded to float64, which
// moves it by at most rho = 2⁻⁵³·(MaxRows + tau) (v ≤ yᵀy + tau
// and yᵀy ≤ N ≤ MaxRows for scaled targets). For neighbours D ⊂ D'
// the computed scores then satisfy
//
//	v(D') − v(D) ∈ [−tau − 2·rho, Δ + tau + 2·rho],
//
// an interval of width Δ + 2·tau + 4·rho, which also bounds
// |v(D') − v(D)|. deltaSel is that width, rounded up by a relative 2⁻⁴⁰ to
// cover the rounding of the float64 operations that compute Δ and it. The
// slack costs 0.05% of the noise.
func pclsSlack(s PCLSSpec) (deltaSel, tau float64) {
	delta := PCLSSensitivity(s)
	tau = delta * 0x1p-12
	rho := (MaxRows + tau) * 0x1p-53
	return (delta + 2*tau + 4*rho) * (1 + 0x1p-40), tau
}

// Charge returns what the accountant charges for one selection: a
// Component with Noise NoiseExponential, Purpose PurposeModelSelection and
// Epsilon = s.Epsilon (Sensitivity, Scale and Delta zero). Map it to
// accountant.Mechanism{Kind: string(c.Noise), Epsilon: c.Epsilon}; a
// mapping that copies only Scale and Sensitivity yields an invalid
// mechanism (epsilon 0), which the accountant refuses rather than
// under-charging.
//
// Both selection rules are ε-DP under add/remove one unit, and in fact
// (ε/2)-DP because the scores are monotone (see SelectSupport). The
// accountant's exponential curve min(ξ + α·ε²/8, ε) (SPEC section 3) holds
// for ε-bounded-range mechanisms (Durfee & Rogers 2019; Cesar & Rogers
// 2021, "Bounding, concentrating, and truncating: unifying privacy loss
// composition for data analytics"); an (ε/2)-DP mechanism has every
// privacy-loss value in [−ε/2, ε/2] and so is ε-bounded-range, for the
// noisy-min rule as well as the exponential mechanism. The charge depends
// on s only, never on data.
func (s PCLSSpec) Charge() (noise.Component, error) {
	if err := s.validate(); err != nil {
		return noise.Component{}, err
	}
	return noise.Component{Purpose: PurposeModelSelection, Noise: NoiseExponential, Epsilon: s.Epsilon}, nil
}

// clsMaxIter bounds the projected-gradient iterations of one solve. Well
// conditioned problems certify in tens to hundreds of iterations; the cap
// only stops pathological ones, which then fail with ErrPCLSNotConverged.
const clsMaxIter = 50000

// clsRelTol is ConstrainedLoss's certified accuracy, relative to the scale
// yᵀy + 2r‖Xᵀy‖∞ + r²·max|XᵀX| of the objective's terms on the ball:
// loose enough to be far above float64 rounding (about k²·2⁻⁵³ of that
// scale), tight enough for any statistical use.
const clsRelTol = 1e-10

// ConstrainedLoss returns the constrained least-squares loss
//
//	min { yᵀy − 2βᵀXᵀy + βᵀXᵀXβ : β_j = 0 for j ∉ support, ‖β‖₁ ≤ r }
//
// (that is, min Σ(y − xᵀβ)² over the rows behind the statistics) and a
// minimizer β, with len(β) = xty.Len() and zeros outside support. support
// lists column indices (include the intercept column if the model has one);
// it may be empty (β = 0, loss = yᵀy). xtx must be positive semidefinite,
// as every XᵀX is.
//
// Method: accelerated projected gradient (FISTA, Beck & Teboulle 2009, with
// the adaptive restart of O'Donoghue & Candès 2015) on the sub-problem,
// with step 1/λ_max(XᵀX restricted to the support) and the ℓ1-ball
// projection of Duchi, Shalev-Shwartz, Singer & Chandra 2008 (projectL1Ball).
// The problem is convex, so optimality can be certified: at a feasible β,
// f(β) − min f ≤ gap(β) = ⟨∇f(β), β⟩ + r·‖∇f(β)‖∞ (the Frank–Wolfe duality
// gap; by convexity f(β*) ≥ f(β) + ⟨∇f(β), β* − β⟩ ≥ f(β) − gap(β)). The
// iteration stops when gap ≤ 1e-10·S, S = yᵀy + 2r‖Xᵀy‖∞ + r²·max|XᵀX|,
// rather than on a small relative change of β: accelerated iterates can
// move slowly far from the optimum, and only the gap bounds the error.
// Accuracy on success: loss − min ≤ 1e-10·S, up to floating-point rounding
// of about (k² + k + 1)·2⁻⁵³·S (k = len(support)); ‖β‖₁ ≤ r up to a
// relative (k + 1)·2⁻⁵³.
//
// Errors: nil or mismatched inputs, a non-finite entry, an index out of
// range or repeated, r not finite and > 0, an indefinite xtx, or no
// certificate within the iteration cap (wrapping ErrPCLSNotConverged).
func ConstrainedLoss(xtx *mat.SymDense, xty *mat.VecDense, yty float64, support []int, r float64) (loss float64, beta []float64, err error) {
	if xtx == nil || xty == nil {
		return 0, nil, errors.New("constrained loss: nil statistics")
	}
	d := xty.Len()
	if xtx.SymmetricDim() != d {
		return 0, nil, fmt.Errorf("constrained loss: XᵀX is %d×%d but Xᵀy has %d entries", xtx.SymmetricDim(), xtx.SymmetricDim(), d)
	}
	if !(r > 0) || math.IsInf(r, 1) {
		return 0, nil, fmt.Errorf("constrained loss: radius %v must be finite and > 0", r)
	}
	if math.IsNaN(yty) || math.IsInf(yty, 0) {
		return 0, nil, fmt.Errorf("constrained loss: yᵀy = %v is not finite", yty)
	}
	if err := checkColumns(support, d); err != nil {
		return 0, nil, fmt.Errorf("constrained loss: %w", err)
	}
	p := newCLSProblem(len(support))
	for i, ci := range support {
		for j, cj := range support {
			p.a[i*p.k+j] = xtx.At(ci, cj)
		}
		p.b[i] = xty.AtVec(ci)
	}
	p.c, p.r = yty, r
	for _, v := range p.a {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, nil, errors.New("constrained loss: XᵀX has a non-finite entry")
		}
	}
	for _, v := range p.b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, nil, errors.New("constrained loss: Xᵀy has a non-finite entry")
		}
	}
	if err := p.prepare(); err != nil {
		return 0, nil, fmt.Errorf("constrained loss: %w", err)
	}
	x, gap, iters, ok := p.solve(clsRelTol*p.scale(), nil)
	if !ok {
		return 0, nil, fmt.Errorf("constrained loss on columns %v: duality gap %.3g above %.3g after %d iterations: %w", support, gap, clsRelTol*p.scale(), iters, ErrPCLSNotConverged)
	}
	beta = make([]float64, d)
	for i, ci := range support {
		beta[ci] = x[i]
	}
	return p.objective(x), beta, nil
}

// checkColumns reports a column list with an index outside [0, d) or a
// repeated index.
func checkColumns(cols []int, d int) error {
	seen := make(map[int]bool, len(cols))
	for _, c := range cols {
		if c < 0 || c >= d {
			return fmt.Errorf("column %d is not in [0, %d)", c, d)
		}
		if seen[c] {
			return fmt.Errorf("column %d is repeated", c)
		}
		seen[c] = true
	}
	return nil
}

// clsProblem is min f(β) = c − 2bᵀβ + βᵀAβ over ‖β‖₁ ≤ r in k dimensions,
// with A (row-major k×k) positive semidefinite.
type clsProblem struct {
	k    int
	a, b []float64
	c, r float64
	lip  float64   // an upper bound on λ_max(A); 0 when A = 0
	buf  []float64 // scratch for projectL1Ball
}

func newCLSProblem(k int) *clsProblem {
	return &clsProblem{k: k, a: make([]float64, k*k), b: make([]float64, k), buf: make([]float64, k)}
}

// prepare computes lip from the eigenvalues of A and rejects an indefinite
// A, on which the problem is not convex and the gap certifies nothing. The
// eigenvalues are accurate to about k·2⁻⁵³·‖A‖, so λ_max is inflated by a
// relative 1e-9 (a smaller step is always safe) and eigenvalues down to
// −1e-9·λ_max count as zero.
func (p *clsProblem) prepare() error {
	if p.k == 0 {
		return nil
	}
	sym := mat.NewSymDense(p.k, nil)
	for i := range p.k {
		for j := i; j < p.k; j++ {
			if p.a[i*p.k+j] != p.a[j*p.k+i] {
				return fmt.Errorf("XᵀX is not symmetric at (%d, %d)", i, j)
			}
			sym.SetSym(i, j, p.a[i*p.k+j])
		}
	}
	var es mat.EigenSym
	if !es.Factorize(sym, false) {
		return errors.New("eigenvalues of XᵀX did not converge")
	}
	vals := es.Values(nil) // ascending
	lmax, lmin := vals[p.k-1], vals[0]
	if lmin < -1e-9*math.Max(lmax, 0) || (lmax <= 0 && lmin < 0) {
		return fmt.Errorf("XᵀX is not positive semidefinite (smallest eigenvalue %v, largest %v)", lmin, lmax)
	}
	p.lip = math.Max(lmax, 0) * (1 + 1e-9)
	return nil
}

// scale returns S = c + 2r‖b‖∞ + r²·max|A|, a bound on the sum of the
// magnitudes of f's terms anywhere on the ball: the natural unit for its
// absolute accuracy.
func (p *clsProblem) scale() float64 {
	bmax, amax := 0.0, 0.0
	for _, v := range p.b {
		bmax = math.Max(bmax, math.Abs(v))
	}
	for _, v := range p.a {
		amax = math.Max(amax, math.Abs(v))
	}
	return math.Abs(p.c) + 2*p.r*bmax + p.r*p.r*amax
}

// mulA sets out = A·x.
func (p *clsProblem) mulA(out, x []float64) {
	for i := range p.k {
		s := 0.0
		row := p.a[i*p.k : (i+1)*p.k]
		for j, v := range row {
			s += v * x[j]
		}
		out[i] = s
	}
}

// objective returns f(x) = c + xᵀ(Ax − 2b).
func (p *clsProblem) objective(x []float64) float64 {
	ax := make([]float64, p.k)
	p.mulA(ax, x)
	f := p.c
	for i := range p.k {
		f += x[i] * (ax[i] - 2*p.b[i])
	}
	return f
}

// gapAt returns the Frank–Wolfe gap ⟨∇f(x), x⟩ + r‖∇f(x)‖∞ at x from
// ax = A·x, with ∇f(x) = 2(Ax − b).
func (p *clsProblem) gapAt(x, ax []float64) float64 {
	dot, gmax := 0.0, 0.0
	for i := range p.k {
		h := ax[i] - p.b[i]
		dot += h * x[i]
		gmax = math.Max(gmax, math.Abs(h))
	}
	return 2 * (dot + p.r*gmax)
}

// solve runs FISTA with adaptive restart from init (projected onto the
// ball; nil means 0) until the duality gap at the current iterate is at
// most tol. It returns the iterate, its gap and whether the gap reached
// tol, and the number of iterations run. It gives up after clsMaxIter
// iterations, or earlier when the iterate has moved by less than 1e-15 of
// its size in each of the last 100 iterations: progress has stalled at
// the floating-point floor, and the gap it has is the best it will get.
// (A relative-improvement test would also stop ill-conditioned problems
// that are still building momentum: FISTA's progress along a direction of
// curvature μ grows like k²·μ/L before it converges.) Each iteration costs
// one product by A: A·z for the extrapolated point is combined from A·x of
// the last two iterates.
func (p *clsProblem) solve(tol float64, init []float64) (x []float64, gap float64, iters int, ok bool) {
	k := p.k
	x = make([]float64, k)
	if k == 0 {
		return x, 0, 0, true
	}
	if init != nil {
		projectL1Ball(x, init, p.r, p.buf)
	}
	if p.lip == 0 {
		// A = 0: f is linear, minimized at the vertex r·sign(b_i)·e_i of
		// the largest |b_i| (or anywhere when b = 0).
		clear(x)
		best := 0
		for i, v := range p.b {
			if math.Abs(v) > math.Abs(p.b[best]) {
				best = i
			}
		}
		if p.b[best] != 0 {
			x[best] = math.Copysign(p.r, p.b[best])
		}
		ax := make([]float64, k)
		p.mulA(ax, x)
		return x, p.gapAt(x, ax), 0, true
	}
	ax := make([]float64, k)
	p.mulA(ax, x)
	if gap = p.gapAt(x, ax); gap <= tol {
		return x, gap, 0, true
	}
	z, az := slices.Clone(x), slices.Clone(ax)
	w, xn, axn := make([]float64, k), make([]float64, k), make([]float64, k)
	t := 1.0
	still := 0 // consecutive iterations without a visible move
	for it := range clsMaxIter {
		for i := range k {
			w[i] = z[i] - (az[i]-p.b[i])/p.lip
		}
		projectL1Ball(xn, w, p.r, p.buf)
		p.mulA(axn, xn)
		gap = p.gapAt(xn, axn)
		if gap <= tol {
			return xn, gap, it + 1, true
		}
		move, size := 0.0, 0.0
		for i := range k {
			move = math.Max(move, math.Abs(xn[i]-x[i]))
			size = math.Max(size, math.Abs(xn[i]))
		}
		if move <= 1e-15*size {
			if still++; still >= 100 {
				return xn, gap, it + 1, false
			}
		} else {
			still = 0
		}
		// Restart the momentum when it points uphill:
		// (z − x_{n})·(x_{n} − x) > 0 (O'Donoghue & Candès 2015).
		up := 0.0
		for i := range k {
			up += (z[i] - xn[i]) * (xn[i] - x[i])
		}
		if up > 0 {
			t = 1
			copy(z, xn)
			copy(az, axn)
		} else {
			tn := (1 + math.Sqrt(1+4*t*t)) / 2
			m := (t - 1) / tn
			for i := range k {
				z[i] = xn[i] + m*(xn[i]-x[i])
				az[i] = axn[i] + m*(axn[i]-ax[i])
			}
			t = tn
		}
		x, xn = xn, x
		ax, axn = axn, ax
	}
	return x, gap, clsMaxIter, false
}

// projectL1Ball sets out to the Euclidean projection of v onto the ℓ1 ball
// {u : ‖u‖₁ ≤ r}, r > 0 (Duchi, Shalev-Shwartz, Singer & Chandra 2008,
// "Efficient projections onto the ℓ1-ball for learning in high
// dimensions", ICML, Fig. 1): v itself if it is inside, otherwise
// out_i = sign(v_i)·max(|v_i| − θ, 0) with θ > 0 the unique value making
// ‖out‖₁ = r, found from the sorted magnitudes in O(k log k). out, v and
// the scratch buf must have the same length; out and v may be the same
// slice.
func projectL1Ball(out, v []float64, r float64, buf []float64) {
	l1 := 0.0
	for _, x := range v {
		l1 += math.Abs(x)
	}
	if l1 <= r {
		copy(out, v)
		return
	}
	u := buf[:len(v)]
	for i, x := range v {
		u[i] = math.Abs(x)
	}
	slices.Sort(u)
	slices.Reverse(u)
	// θ = (Σ_{i≤ρ} u_i − r)/ρ with ρ the largest j such that
	// u_j > (Σ_{i≤j} u_i − r)/j; the condition holds for j = 1 (u_1 > u_1 − r)
	// and for exactly the first ρ indices.
	sum, theta := 0.0, 0.0
	for j, x := range u {
		sum += x
		if t := (sum - r) / float64(j+1); x > t {
			theta = t
		} else {
			break
		}
	}
	l1 = 0
	for i, x := range v {
		out[i] = math.Copysign(math.Max(math.Abs(x)-theta, 0), x)
		l1 += math.Abs(out[i])
	}
	// |v_i| − θ cancels when the ball is small next to v, leaving a
	// relative error of up to 2⁻⁵³·|v_i|/|out_i|; rescaling brings the
	// norm back to r up to a relative (k + 1)·2⁻⁵³.
	if l1 > r {
		f := r / l1
		for i := range out {
			out[i] *= f
		}
	}
}

// exactScale is the fixed-point grid of the certified coefficients: β is
// rounded to multiples of 2⁻⁶⁰ so the loss and the duality gap can be
// computed exactly in integers from the integer statistics.
const exactScale = 60

// certifyLoss evaluates, exactly, the loss f(β̂) and the duality gap at β̂
// on the integer statistics st restricted to cols, where β̂ is beta
// (aligned with cols) truncated toward zero to the grid 2⁻⁶⁰ and, if its
// ℓ1 norm still exceeds r by rounding, shrunk (in its largest entries) to
// be exactly feasible. It returns f(β̂) rounded to nearest float64, the gap
// (rounded, for diagnostics), whether the exact gap is at most tau, and β̂.
//
// Units: XᵀX, Xᵀy, yᵀy are integers in units of q² = 2⁻³², β̂_i = m_i·2⁻⁶⁰,
// so with h = A·m − 2⁶⁰·b (units 2⁻⁹²; h is ½∇f) the loss is
// F = 2¹²⁰·yᵀy + mᵀh − 2⁶⁰·mᵀb and the gap 2·(mᵀh + r·2⁶⁰·‖h‖∞), both in
// units of 2⁻¹⁵². r and tau enter as exact dyadic rationals, and every
// comparison is between integers.
func certifyLoss(st Stats, cols []int, beta []float64, r, tau float64) (loss, gap float64, ok bool, bhat []float64) {
	k, d := len(cols), st.Dim()
	m := make([]big.Int, k)
	var f big.Float
	l1, t1, t2 := new(big.Int), new(big.Int), new(big.Int)
	for i, v := range beta {
		f.SetFloat64(v)
		f.SetMantExp(&f, exactScale)
		f.Int(&m[i]) // truncates toward zero
		l1.Add(l1, t1.Abs(&m[i]))
	}
	// Exact feasibility: Σ|m_i| ≤ ⌊r·2⁶⁰⌋ = ⌊rm·2^(re+60)⌋. Truncation only
	// shrinks |β_i|, so any excess comes from the float projection and is
	// a few ulps; it is taken off the largest entries.
	rm, re := dyadicParts(r)
	lim := shiftInt(new(big.Int), rm, re+exactScale)
	excess := l1.Sub(l1, lim)
	for excess.Sign() > 0 {
		top := 0
		for i := range m {
			if t1.Abs(&m[i]).Cmp(t2.Abs(&m[top])) > 0 {
				top = i
			}
		}
		cut := t1.Abs(&m[top])
		if cut.Cmp(excess) > 0 {
			cut.Set(excess)
		}
		if m[top].Sign() > 0 {
			m[top].Sub(&m[top], cut)
		} else {
			m[top].Add(&m[top], cut)
		}
		excess.Sub(excess, cut)
	}
	var h, hmax, mh, mb, aij big.Int
	for i, ci := range cols {
		h.SetInt64(0)
		for j, cj := range cols {
			a, b := ci, cj
			if a > b {
				a, b = b, a
			}
			aij.SetInt64(st.XtX[upperIndex(d, a, b)])
			h.Add(&h, t1.Mul(&aij, &m[j]))
		}
		aij.SetInt64(st.Xty[ci])
		h.Sub(&h, t1.Lsh(&aij, exactScale))
		if t1.Abs(&h).Cmp(&hmax) > 0 {
			hmax.Set(t1)
		}
		mh.Add(&mh, t1.Mul(&m[i], &h))
		mb.Add(&mb, t1.Mul(&m[i], &aij))
	}
	F := new(big.Int).Lsh(big.NewInt(st.Yty), 2*exactScale)
	F.Add(F, &mh)
	F.Sub(F, mb.Lsh(&mb, exactScale))
	f.SetPrec(0) // SetInt then takes the precision it needs: exact
	f.SetInt(F)
	f.SetMantExp(&f, -(2*exactScale + 32))
	loss, _ = f.Float64()

	// gap·2¹⁵² = 2·mh + 2·rm·hmax·2^(re+60); compare with
	// tau·2¹⁵² = tm·2^(te+152), all scaled by 2^s to be integers.
	tm, te := dyadicParts(tau)
	sh := max(0, -(re + exactScale), -(te + 2*exactScale + 32))
	lhs := new(big.Int).Lsh(&mh, uint(1+sh))
	lhs.Add(lhs, shiftInt(t1, t2.Mul(rm, &hmax), 1+re+exactScale+sh))
	rhs := shiftInt(t2, tm, te+2*exactScale+32+sh)
	ok = lhs.Cmp(rhs) <= 0
	f.SetPrec(0)
	f.SetInt(lhs)
	f.SetMantExp(&f, -(2*exactScale + 32 + sh))
	gap, _ = f.Float64()
	bhat = make([]float64, k)
	for i := range m {
		f.SetPrec(0)
		f.SetInt(&m[i])
		f.SetMantExp(&f, -exactScale)
		bhat[i], _ = f.Float64()
	}
	return loss, gap, ok, bhat
}

// dyadicParts returns the integer m and exponent e with x = m·2^e exactly,
// for finite x ≥ 0.
func dyadicParts(x float64) (*big.Int, int) {
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac ∈ [0.5, 1) or 0
	return new(big.Int).SetUint64(uint64(math.Ldexp(frac, 53))), exp - 53
}

// shiftInt sets z = ⌊x·2^s⌋ for x ≥ 0 and returns z.
func shiftInt(z, x *big.Int, s int) *big.Int {
	if s >= 0 {
		return z.Lsh(x, uint(s))
	}
	return z.Rsh(x, uint(-s))
}

// pclsColumns returns the columns of a candidate: its features and, when
// the scaling has one, the intercept column (the last).
func pclsColumns(s PCLSSpec, support []int) []int {
	cols := slices.Clone(support)
	if s.Scaling.Intercept {
		cols = append(cols, s.Scaling.Dim()-1)
	}
	return cols
}

// pclsLosses returns the candidates of s and, for each, its certified
// constrained loss v (see pclsSlack): L̂(M) ≤ v ≤ L̂(M) + tau up to the
// final rounding to float64. These are confidential.
func pclsLosses(s PCLSSpec, st Stats) (cands [][]int, losses []float64, err error) {
	cands, err = CandidateSupports(s)
	if err != nil {
		return nil, nil, err
	}
	d := s.Scaling.Dim()
	if st.Dim() != d || len(st.XtX) != d*(d+1)/2 {
		return nil, nil, fmt.Errorf("pcls: statistics have %d columns (%d XᵀX entries), the scaling has %d", st.Dim(), len(st.XtX), d)
	}
	if st.N < 0 {
		return nil, nil, fmt.Errorf("pcls: statistics have %d rows", st.N)
	}
	_, tau := pclsSlack(s)
	xtx, xty, yty, _ := st.Float()
	losses = make([]float64, len(cands))
	for i, m := range cands {
		cols := pclsColumns(s, m)
		p := newCLSProblem(len(cols))
		for a, ca := range cols {
			for b, cb := range cols {
				p.a[a*p.k+b] = xtx.At(ca, cb)
			}
			p.b[a] = xty.AtVec(ca)
		}
		p.c, p.r = yty, s.Radius
		if err := p.prepare(); err != nil {
			return nil, nil, fmt.Errorf("pcls candidate %v: %w", m, err)
		}
		// The float solver aims below tau, and the exact certificate
		// decides; a tighter target is tried before giving up, since
		// rounding in the float gap can hide the last bit of progress.
		var x []float64
		certified := false
		var gap float64
		for _, target := range []float64{tau / 4, tau / 64, tau / 1024} {
			x, _, _, _ = p.solve(target, x)
			var v float64
			v, gap, certified, _ = certifyLoss(st, cols, x, s.Radius, tau)
			if certified {
				losses[i] = v
				break
			}
		}
		if !certified {
			return nil, nil, fmt.Errorf("pcls candidate %v: duality gap %.3g above %.3g: %w", m, gap, tau, ErrPCLSNotConverged)
		}
	}
	return cands, losses, nil
}

// SelectSupport privately selects a model: it scores every candidate of
// CandidateSupports(s) by Score(M) = L̂(M) + pen·|M| on the window's exact
// statistics and returns the selected candidate (feature indices, as
// CandidateSupports lists them; the intercept is implied by the scaling)
// together with all the scores, in candidate order. src supplies the
// randomness; nil means CryptoSource().
//
// The scores are computed from the raw data and are NOT private: they are
// for tests and confidential diagnostics only and must never be published
// or logged. Only support is released.
//
// Guarantee: the selection is ε-DP (ε = s.Epsilon) under add/remove one
// privacy unit (at most L = s.MaxContributions rows), and in fact
// (ε/2)-DP; charge it with s.Charge(). Sensitivity: every L̂(M) moves by at
// most Δ = PCLSSensitivity(s) = L·(1 + r)², and only upwards when a unit is
// added (proof at PCLSSensitivity). The computed scores (certified to
// within 2⁻¹²·Δ of the exact minima, see pclsSlack) move within an
// interval of width Δsel = Δ + 2τ + 4ρ ≈ Δ·(1 + 2⁻¹¹) + 2⁻²⁰ (pclsSlack),
// which the rules are calibrated with:
//
//   - SelectionExponential: P(M) ∝ exp(−ε·Score(M)/(2Δsel)) (McSherry &
//     Talwar 2007; Lei et al. 2018, Algorithm 1), sampled as the argmax of
//     −ε·Score(M)/(2Δsel) + G_M with independent standard Gumbel G_M
//     (Gumbel-max). If every score moves by a_M ∈ [a, a + Δsel], the log
//     probability ratio of any M is −ε·a_M/(2Δsel) + log(Z/Z') ∈
//     [−ε/2, ε/2]; with scores moving in both directions by up to Δsel it
//     would be ε (the textbook bound).
//   - SelectionNoisyMin: with g the grid of the granularity method, each
//     score is rounded to the grid index K_M = round(v_M/g) (plus the
//     penalty's own index, which is data-independent), exact discrete
//     Laplace noise Z_M of scale t = b/g is added, with
//     b = 2(Δsel + 4g₀)/ε ≈ 2Δ/ε, g₀ = Granularity(2Δsel/ε) and
//     g = Granularity(b) ≤ 2g₀ (noisyMinScale), and the smallest K_M + Z_M wins (ties to the lower index),
//     compared exactly in integers. Fixing the other noises, M wins iff
//     Z_M ≤ T_M for an integer threshold T_M; the index shifts of
//     neighbours lie in an integer interval of width w ≤ Δsel/g + 2, so
//     T_M moves by at most w, and P(Z ≤ T − w) ≥ e^{−w/t}·P(Z ≤ T) for the
//     discrete Laplace: (w/t ≤ ε/2)-DP, and ε-DP without the one-signed
//     shift (Dwork & Roth 2014, Claim 3.9, adapted to integer noise).
//
// Floating-point caveat: the noisy-min rule is exact (integer noise and
// exact integer comparisons; its inputs are the certified scores, whose
// rounding is covered by Δsel). The exponential rule is not: it draws each
// G_M = −log(−log U) from a U on the grid (j + ½)·2⁻⁵³ (so G is truncated
// to about [−3.6, 37.4], a tail mass of 6e-17 per candidate), evaluates
// logarithms and the exponent in float64 (see selectExponential), and so
// matches the ideal law only up to a total-variation distance of order
// m·2⁻⁵⁰ for m candidates: an additive δ of that order, which the
// accountant does not charge (Ilvento 2020, "Implementing the exponential
// mechanism with base-2 differential privacy", CCS, gives exact
// alternatives). Choose noisy_min where that matters. Either way the
// output is a single index, so there are no low-order bits of a noisy
// value to leak (Mironov 2012).
//
// Errors: an invalid spec or candidate list (wrapping ErrInvalidSpec),
// statistics that do not match the scaling, a score that cannot be
// certified (wrapping ErrPCLSNotConverged), or a failed noise draw. All
// but the last two depend on the configuration only.
func SelectSupport(s PCLSSpec, st Stats, src noise.Source) (support []int, scores []float64, err error) {
	cands, losses, err := pclsLosses(s, st)
	if err != nil {
		return nil, nil, fmt.Errorf("select support: %w", err)
	}
	if src == nil {
		src = noise.CryptoSource()
	}
	deltaSel, _ := pclsSlack(s)
	sizes := make([]int, len(cands))
	scores = make([]float64, len(cands))
	for i, m := range cands {
		sizes[i] = len(m)
		scores[i] = losses[i] + s.Penalty*float64(len(m))
	}
	i, err := selectIndex(s.Selection, losses, sizes, s.Penalty, s.Epsilon, deltaSel, src)
	if err != nil {
		return nil, nil, fmt.Errorf("select support: %w", err)
	}
	return slices.Clone(cands[i]), scores, nil
}

// selectIndex runs the selection rule on the certified losses with the
// penalty pen per feature, calibrated to (eps, deltaSel), and returns the
// index of the selected candidate. It is SelectSupport's randomized step,
// separate so the privacy audit can run it many times on fixed scores.
func selectIndex(rule string, losses []float64, sizes []int, pen, eps, deltaSel float64, src noise.Source) (int, error) {
	if len(losses) == 0 || len(losses) != len(sizes) {
		return 0, fmt.Errorf("selection over %d losses and %d sizes", len(losses), len(sizes))
	}
	switch rule {
	case SelectionExponential:
		return selectExponential(losses, sizes, pen, eps, deltaSel, src), nil
	case SelectionNoisyMin:
		return selectNoisyMin(losses, sizes, pen, eps, deltaSel, src)
	}
	return 0, fmt.Errorf("%w: unknown pcls selection %q", noise.ErrInvalidSpec, rule)
}

// selectExponential is the Gumbel-max sampler of the exponential
// mechanism: argmax_M u_M + G_M with independent standard Gumbel G_M and
// u_M = −ε·(Score(M) − Score(ref))/(2Δsel) has P(M) = e^{u_M}/Σe^{u},
// exactly for continuous Gumbel noise (Gumbel 1954; e.g. Durfee & Rogers
// 2019). Any reference gives the same law; ref is the (numerically)
// smallest score, so the exponents are at most about 0 and a candidate
// can only win with u_M ≥ −41 (G lies in [−3.6, 37.4]).
//
// Score differences are formed as (v_M − v_ref) + pen·(|M| − |ref|),
// never as differences of the rounded sums v + pen·|M|: with a large
// penalty those would round away the losses' differences (at pen·|M| =
// 2^60 the sum's float64 spacing is 256, far above Δ), and a change of a
// loss by less than Δ could then move a score by a whole spacing. As
// written, the data enter only through v_M − v_ref, whose rounding is of
// the order of the losses' own float64 rounding (ρ in pclsSlack), and the
// exponent of a candidate that can win is rounded by at most about
// 2⁻⁵²·41.
func selectExponential(losses []float64, sizes []int, pen, eps, deltaSel float64, src noise.Source) int {
	diff := func(i, j int) float64 {
		return (losses[i] - losses[j]) + pen*float64(sizes[i]-sizes[j])
	}
	ref := 0
	for i := range losses {
		if diff(i, ref) < 0 {
			ref = i
		}
	}
	k := eps / (2 * deltaSel)
	best, bestV := 0, math.Inf(-1)
	for i := range losses {
		u := (float64(src.Uint64()>>11) + 0.5) * 0x1p-53 // in (0, 1)
		g := -math.Log(-math.Log(u))
		if v := -k*diff(i, ref) + g; v > bestV {
			best, bestV = i, v
		}
	}
	return best
}

// noisyMinScale returns the Laplace scale b and grid g of the noisy-min
// rule: b = 2(Δsel + 2·gg)/ε with gg = 2·Granularity(2Δsel/ε), and
// g = Granularity(b) ≤ gg (b exceeds 2Δsel/ε by a relative 2⁻³⁷ at most,
// so its granularity is at most one power of two above), hence
// b ≥ 2(Δsel + 2g)/ε. Both depend on the configuration only.
func noisyMinScale(eps, deltaSel float64) (b, g float64, err error) {
	g0, err := noise.Granularity(2 * deltaSel / eps)
	if err != nil {
		return 0, 0, fmt.Errorf("noisy min scale: %w", err)
	}
	gg := 2 * g0
	b = 2 * (deltaSel + 2*gg) / eps
	g, err = noise.Granularity(b)
	if err != nil {
		return 0, 0, fmt.Errorf("noisy min scale: %w", err)
	}
	if g > gg {
		return 0, 0, fmt.Errorf("noisy min scale: grid %v above %v", g, gg)
	}
	return b, g, nil
}

// selectNoisyMin is report-noisy-min with discrete Laplace noise on the
// grid of the granularity method (see SelectSupport for the guarantee).
// The totals K_M + P_M + Z_M are compared exactly as big integers: the
// indices can exceed 2⁶³ for large windows, and a rounded comparison
// could tie or reorder.
func selectNoisyMin(losses []float64, sizes []int, pen, eps, deltaSel float64, src noise.Source) (int, error) {
	b, g, err := noisyMinScale(eps, deltaSel)
	if err != nil {
		return 0, err
	}
	nz := noise.New(src)
	best := -1
	var bestT, tot, bk, bp big.Int
	var fl big.Float
	for i, l := range losses {
		k, err := noise.GridIndex(l, g)
		if err != nil {
			return 0, fmt.Errorf("noisy min: loss of candidate %d: %w", i, err)
		}
		p, err := noise.GridIndex(pen*float64(sizes[i]), g)
		if err != nil {
			return 0, fmt.Errorf("noisy min: penalty of candidate %d: %w", i, err)
		}
		z, err := nz.DiscreteLaplace(b / g)
		if err != nil {
			return 0, fmt.Errorf("noisy min: %w", err)
		}
		fl.SetFloat64(k).Int(&bk) // k and p are integral: exact
		fl.SetFloat64(p).Int(&bp)
		tot.Add(&bk, &bp)
		tot.Add(&tot, big.NewInt(z))
		if best < 0 || tot.Cmp(&bestT) < 0 {
			best = i
			bestT.Set(&tot)
		}
	}
	return best, nil
}

// RestrictStats returns the statistics of the sub-model on columns (column
// indices of st, strictly increasing): XᵀX restricted to those rows and
// columns, Xᵀy to those entries, yᵀy and N unchanged. The result is exact
// (the same integers), so a mechanism run on it, such as AdaSSP on the
// selected model, has the sensitivities of a regression with
// len(columns) columns. Include the intercept column to keep it; see
// PCLSSpec.Restrict.
func RestrictStats(st Stats, columns []int) (Stats, error) {
	d := st.Dim()
	if len(st.XtX) != d*(d+1)/2 {
		return Stats{}, fmt.Errorf("restrict stats: %d XᵀX entries for %d columns", len(st.XtX), d)
	}
	if len(columns) == 0 {
		return Stats{}, errors.New("restrict stats: no columns")
	}
	for i, c := range columns {
		if c < 0 || c >= d {
			return Stats{}, fmt.Errorf("restrict stats: column %d is not in [0, %d)", c, d)
		}
		if i > 0 && columns[i-1] >= c {
			return Stats{}, fmt.Errorf("restrict stats: columns %v are not strictly increasing", columns)
		}
	}
	k := len(columns)
	out := NewStats(k)
	for i, ci := range columns {
		for j := i; j < k; j++ {
			out.XtX[upperIndex(k, i, j)] = st.XtX[upperIndex(d, ci, columns[j])]
		}
		out.Xty[i] = st.Xty[ci]
	}
	out.Yty, out.N = st.Yty, st.N
	return out, nil
}

// Restrict returns the statistics and the scaling of the model on support
// (feature indices, such as SelectSupport's result), with the intercept
// column kept when s.Scaling has one, so that a coefficient release on the
// result can be mapped back with the returned scaling's Unscale.
func (s PCLSSpec) Restrict(st Stats, support []int) (Stats, Scaling, error) {
	d := len(s.Scaling.FeatureBounds)
	m := slices.Clone(support)
	slices.Sort(m)
	sc := Scaling{Intercept: s.Scaling.Intercept, TargetBounds: s.Scaling.TargetBounds}
	for i, f := range m {
		if f < 0 || f >= d {
			return Stats{}, Scaling{}, fmt.Errorf("restrict: feature %d is not in [0, %d)", f, d)
		}
		if i > 0 && m[i-1] == f {
			return Stats{}, Scaling{}, fmt.Errorf("restrict: feature %d is repeated", f)
		}
		sc.FeatureBounds = append(sc.FeatureBounds, s.Scaling.FeatureBounds[f])
	}
	if st.Dim() != s.Scaling.Dim() {
		return Stats{}, Scaling{}, fmt.Errorf("restrict: statistics have %d columns, the scaling has %d", st.Dim(), s.Scaling.Dim())
	}
	sub, err := RestrictStats(st, pclsColumns(s, m))
	if err != nil {
		return Stats{}, Scaling{}, fmt.Errorf("restrict: %w", err)
	}
	return sub, sc, nil
}
