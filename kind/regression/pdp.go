package regression

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/pdp"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
	"gonum.org/v1/gonum/mat"
)

// This file is what per-instance DP (SPEC section 4.6) needs of a
// regression release: which of the unit's norms bounds which noise
// addition, and, for a unit with a single row, the exact per-instance
// change of the statistics whose sensitivity depends on the data (λ_min,
// OPS's log Lipschitz bound) and the exact loss of OPS's posterior sample,
// from the release's Fit. The release stage composes the charges.

// PDP charges XᵀX's noise by ‖upper(G)‖₂ (norm 0) and Xᵀy's by ‖b‖₂
// (norm 1), plus one grid step per coordinate when released on a grid
// coarser than their unit; λ_min's by ‖G‖_F (norm 2, Weyl's inequality:
// adding the unit adds P = Σ x xᵀ ⪰ 0 to XᵀX, which moves λ_min by at most
// λ_max(P) ≤ ‖P‖_F), plus one step of its grid (the released index
// ⌈λ_min/g⌉ − 1 moves by at most ⌈Δλ/g⌉ ≤ Δλ/g + 1), or by the exact change
// for a unit with one row; the Lipschitz bound and the posterior sample at
// their worst case, or exactly for a unit with one row (Fit.RowLosses).
func (p *Plan) PDP() ([]kind.PDPComponent, error) {
	d := p.Dim()
	var out []kind.PDPComponent
	for _, c := range p.Cal.Components {
		pc := kind.PDPComponentOf(c)
		switch c.Purpose {
		case mregression.PurposeGram:
			pc.Norm, pc.Slack = 0, kind.GridSlack(c, d*(d+1)/2)
		case mregression.PurposeXty:
			pc.Norm, pc.Slack = 1, kind.GridSlack(c, d)
		case mregression.PurposeLambdaMin:
			pc.Norm, pc.Slack, pc.Exact = 2, c.Granularity, kind.ExactNorm
		case mregression.PurposeLipschitz:
			// The sensitivity depends on the released λ_min bound.
			pc.Exact = kind.ExactGaussian
		case mregression.PurposePosteriorSample:
			pc.Exact = kind.ExactLoss
		default:
			return nil, fmt.Errorf("component %s has no per-instance rule", c.Purpose)
		}
		if (c.Noise == noise.ApproxDP) != (pc.Exact == kind.ExactLoss) {
			return nil, fmt.Errorf("component %s has noise %q", c.Purpose, c.Noise)
		}
		out = append(out, pc)
	}
	return out, nil
}

// PDP charges both of a pcls release's charges at their worst case: the
// selection (exponential mechanism, ε0) and the AdaSSP fit on the selected
// support (ρ-zCDP).
func (p *PCLSPlan) PDP() ([]kind.PDPComponent, error) {
	var out []kind.PDPComponent
	for _, ch := range p.charges {
		n := ch.Noise
		switch n.Mechanism {
		case accountant.KindExponential, accountant.KindZCDP:
			out = append(out, kind.PDPComponent{Purpose: n.Purpose, Noise: n.Mechanism, Epsilon: n.Epsilon, Norm: -1})
		default:
			return nil, fmt.Errorf("pcls charge %s has mechanism %q", n.Purpose, n.Mechanism)
		}
	}
	return out, nil
}

// Summarize reports σ_ℓ of the released log Lipschitz bound (OPS,
// AdaOPS), which the per-instance losses of that bound are measured
// against.
func (f *Fit) Summarize(rel *schema.PDPRelease) {
	if f != nil {
		rel.LipschitzSigma = f.LipSigma
	}
}

// RowLosses returns the evaluators of the exact per-instance charges of a
// unit with one row, for the components of comps that have them, or nil
// when the fit has none: a posterior sample's loss (needs γ), λ_min's
// change and the Lipschitz bound's (needs σ_ℓ).
func (f *Fit) RowLosses(comps []kind.PDPComponent) (kind.PDPRowLosses, error) {
	if f == nil {
		return nil, nil
	}
	rl := &rowLosses{comps: comps}
	var err error
	for _, c := range comps {
		if c.Exact == kind.ExactLoss && rl.ops == nil {
			if rl.ops, err = newOPSFit(f); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range comps {
		if c.Exact == kind.ExactNorm && rl.lm == nil {
			if rl.lm, err = newLambdaMinFit(f); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range comps {
		if c.Exact == kind.ExactGaussian {
			if rl.lf, err = newLipschitzFit(f, c.Sensitivity, c.Scale); err != nil {
				return nil, err
			}
			break
		}
	}
	return rl, nil
}

// rowLosses evaluates a window's exact per-instance charges for units with
// one row; each evaluator is nil when the fit has nothing for it.
type rowLosses struct {
	comps []kind.PDPComponent
	ops   *opsFit
	lm    *lambdaMinFit
	lf    *lipschitzFit
}

// Row returns the posterior sample's exact ε (capped at the component's),
// λ_min's exact change, or the Lipschitz bound's exact change and σ_ℓ.
func (r *rowLosses) Row(ci int, row []float64) (x, y float64, ok bool, err error) {
	if ci < 0 || ci >= len(r.comps) {
		return 0, 0, false, fmt.Errorf("component %d of %d", ci, len(r.comps))
	}
	c := r.comps[ci]
	switch c.Exact {
	case kind.ExactLoss:
		if r.ops == nil {
			return 0, 0, false, nil
		}
		x, err = r.ops.loss(row, c.Delta, c.Epsilon)
	case kind.ExactNorm:
		if r.lm == nil {
			return 0, 0, false, nil
		}
		x, err = r.lm.change(row)
	case kind.ExactGaussian:
		if r.lf == nil {
			return 0, 0, false, nil
		}
		x, y = 0, r.lf.sigma
		x, err = r.lf.change(row)
	default:
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	return x, y, true, nil
}

// opsFit evaluates the exact per-row loss of an OPS posterior sample: the
// leave-one-out quantities of the merged statistics at the release's λ,
// and its γ.
type opsFit struct {
	loo   *pdp.OPSLeaveOneOut
	gamma float64
	d     int
}

// newOPSFit returns the evaluator of a release's fit, or nil when the
// outcome has none (a release without a posterior sample, or an outcome
// rebuilt from the ledger): its units are then charged the worst case.
func newOPSFit(fit *Fit) (*opsFit, error) {
	if fit == nil || fit.Gamma == 0 {
		return nil, nil
	}
	if !(fit.Gamma > 0) || math.IsInf(fit.Gamma, 1) {
		return nil, fmt.Errorf("posterior sample: gamma %v is not finite and positive", fit.Gamma)
	}
	xtx, xty, _, _ := fit.Stats.Float()
	loo, err := pdp.NewOPSLeaveOneOut(xtx, xty, fit.Lambda)
	if err != nil {
		return nil, fmt.Errorf("posterior sample: %w", err)
	}
	return &opsFit{loo: loo, gamma: fit.Gamma, d: fit.Stats.Dim()}, nil
}

// loss returns the exact per-instance ε of the single row (x, y) =
// row[:d], row[d] at delta, capped at capEps.
func (f *opsFit) loss(row []float64, delta, capEps float64) (float64, error) {
	if len(row) != f.d+1 {
		return 0, fmt.Errorf("posterior sample: row of %d values for %d columns", len(row), f.d)
	}
	mu, r, err := f.loo.Row(row[:f.d], row[f.d])
	if err != nil {
		return 0, fmt.Errorf("posterior sample: %w", err)
	}
	eps, err := pdp.OPSPrivacyLoss(mu, r, f.gamma, delta)
	if err != nil {
		return 0, fmt.Errorf("posterior sample: %w", err)
	}
	return math.Min(eps, capEps), nil
}

// lambdaMinFit evaluates the exact per-instance change of λ_min(XᵀX) for
// a unit with one row x: λ_min(G) − λ_min(G − xxᵀ), G the merged window's
// XᵀX with the unit. This is exactly how far the unit moves the statistic
// whose grid index is released (the pair D, D minus the unit), so it may
// replace the Frobenius bound ‖xxᵀ‖_F = ‖x‖² (Weyl) of the unit's
// contribution (Statistic); it is never larger. Eigenvalues are computed in float64
// from the exact statistics; evalSlack covers their error.
type lambdaMinFit struct {
	g         *mat.SymDense
	lmin      float64
	evalSlack float64
	d         int
}

// newLambdaMinFit returns the evaluator for a release's merged statistics,
// or nil when the outcome has none.
func newLambdaMinFit(fit *Fit) (*lambdaMinFit, error) {
	if fit == nil {
		return nil, nil
	}
	g, _, _, _ := fit.Stats.Float()
	lmin, err := minEigen(g)
	if err != nil {
		return nil, err
	}
	// Symmetric eigensolvers are backward stable: each eigenvalue is off
	// by at most a small multiple of d·ε_mach·‖G‖₂. 1e-12·‖G‖_F is far
	// above that for d ≤ 64.
	return &lambdaMinFit{g: g, lmin: lmin, evalSlack: 1e-12 * (mat.Norm(g, 2) + 1), d: fit.Stats.Dim()}, nil
}

// withoutRow returns G − xxᵀ, the Gram matrix of a window without one
// row x, and x as a vector (for the caller's Xᵀy update).
func withoutRow(g *mat.SymDense, x []float64) (*mat.SymDense, *mat.VecDense) {
	d := len(x)
	out := mat.NewSymDense(d, nil)
	out.CopySym(g)
	xv := mat.NewVecDense(d, append([]float64(nil), x...))
	out.SymRankOne(out, -1, xv)
	return out, xv
}

// minEigen returns the smallest eigenvalue of a symmetric matrix.
func minEigen(a *mat.SymDense) (float64, error) {
	var es mat.EigenSym
	if !es.Factorize(a, false) {
		return 0, errors.New("lambda_min: eigendecomposition failed")
	}
	v := es.Values(nil)
	return v[0], nil // ascending
}

// change returns the unit's exact |Δλ_min| for its row (x = row[:d]), plus
// the evaluation slack.
func (f *lambdaMinFit) change(row []float64) (float64, error) {
	if len(row) != f.d+1 {
		return 0, fmt.Errorf("lambda_min: row of %d values for %d columns", len(row), f.d)
	}
	without, _ := withoutRow(f.g, row[:f.d])
	lm, err := minEigen(without)
	if err != nil {
		return 0, err
	}
	return math.Abs(f.lmin-lm) + f.evalSlack, nil
}

// lipschitzFit evaluates the exact per-instance change of OPS's released
// log Lipschitz bound ℓ = log(B_y + B_x‖θ̂‖), θ̂ = (G + λI)⁻¹b at the
// release's ridge λ, for a unit with one row (x, y): |ℓ(D) − ℓ(D minus
// the row)|, with G − xxᵀ and b − x·y. Conditioned on the released λ_min
// bound (which fixes λ and σ_ℓ), that is how far the unit moves the
// released statistic; plus 2η for the release's own evaluation error
// (mregression.LipschitzEvalError), a generous 1e-9·(1 + |ℓ| +
// |ℓ'|) for this float64 evaluation, and one grid step of the granularity
// method that releases it (noise.Granularity). It is then charged
// against σ_ℓ, capped at the component's worst case.
type lipschitzFit struct {
	g         *mat.SymDense
	b         *mat.VecDense
	lambda    float64
	bx        float64
	ell       float64
	sigma     float64
	grid      float64
	d         int
	worstNorm float64 // σ_ℓ·Sensitivity/Scale: the worst-case change
}

// newLipschitzFit returns the evaluator of a release's fit, or nil when
// the outcome carries none.
func newLipschitzFit(fit *Fit, sens, scale float64) (*lipschitzFit, error) {
	if fit == nil || !(fit.LipSigma > 0) {
		return nil, nil
	}
	g, b, _, _ := fit.Stats.Float()
	d := fit.Stats.Dim()
	f := &lipschitzFit{g: g, b: b, lambda: fit.Lambda, bx: math.Sqrt(float64(d)), sigma: fit.LipSigma, d: d,
		worstNorm: fit.LipSigma * sens / scale}
	var err error
	if f.grid, err = noise.Granularity(fit.LipSigma); err != nil {
		return nil, fmt.Errorf("lipschitz: %w", err)
	}
	if f.ell, err = f.logBound(g, b); err != nil {
		return nil, err
	}
	return f, nil
}

// logBound returns log(1 + B_x‖(g + λI)⁻¹b‖) (B_y = 1 after scaling).
func (f *lipschitzFit) logBound(g *mat.SymDense, b *mat.VecDense) (float64, error) {
	a := mat.NewSymDense(f.d, nil)
	a.CopySym(g)
	for i := range f.d {
		a.SetSym(i, i, a.At(i, i)+f.lambda)
	}
	var chol mat.Cholesky
	if !chol.Factorize(a) {
		return 0, errors.New("lipschitz: XᵀX + λI is not positive definite")
	}
	var theta mat.VecDense
	if err := chol.SolveVecTo(&theta, b); err != nil {
		return 0, fmt.Errorf("lipschitz: %w", err)
	}
	return math.Log1p(f.bx * mat.Norm(&theta, 2)), nil
}

// change returns the unit's per-instance change of the released ℓ (value
// scale, slack included), at most the worst case.
func (f *lipschitzFit) change(row []float64) (float64, error) {
	if len(row) != f.d+1 {
		return 0, fmt.Errorf("lipschitz: row of %d values for %d columns", len(row), f.d)
	}
	g, xv := withoutRow(f.g, row[:f.d])
	b := mat.NewVecDense(f.d, nil)
	b.AddScaledVec(f.b, -row[f.d], xv)
	ell, err := f.logBound(g, b)
	if err != nil {
		return 0, err
	}
	n := math.Abs(f.ell-ell) + 2*mregression.LipschitzEvalError + 1e-9*(1+math.Abs(f.ell)+math.Abs(ell)) + f.grid
	return math.Min(n, f.worstNorm), nil
}
