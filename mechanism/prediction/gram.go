package prediction

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// FitRidgeGram fits ridge regression from exact sufficient statistics, for
// learners whose rows are never kept (the prediction release kind keeps
// per shard only XᵀX and Xᵀy, so a shard's partial stays bounded whatever
// its number of rows). xtx is the upper triangle of XᵀX, row-major with
// the diagonal (entry (i, j), i ≤ j, at index i·dim − i(i−1)/2 + (j − i)),
// and xty holds Xᵀy for one or more targets (one slice of dim values each,
// e.g. the one-hot columns of a one-vs-rest classifier). For each target it
// returns θ minimizing Σ_i (y_i − θᵀx_i)² + λ Σ_{j ≠ free} θ_j², the
// solution of (XᵀX + λ·P)θ = Xᵀy with P the identity but 0 at column free
// (the intercept column, whose coefficient is not penalized; −1 penalizes
// every column). With a column of ones as free this is FitRidge's
// centered ridge with an unpenalized intercept, written in its normal
// equations.
//
// One Cholesky factorization serves every target, so the fits are a
// deterministic function of the statistics. As FitRidge, a numerical
// failure — the matrix not positive definite (no rows: the intercept's
// diagonal is 0; λ = 0 on singular data) or a solution that is not finite —
// gives the zero model (θ = 0) with no error, because whether a fit fails
// depends on the shard's data and an error would let one unit switch an
// output on or off; the zero model is one more model a unit can change,
// which the answers' sensitivity (one model) already covers. Errors are
// for malformed input only: shapes, NaN or infinite statistics, λ.
func FitRidgeGram(xtx []float64, xty [][]float64, dim int, lambda float64, free int) ([][]float64, error) {
	if dim < 1 || dim > MaxDim+1 {
		return nil, fmt.Errorf("fit ridge gram: dimension %d, want 1 to %d", dim, MaxDim+1)
	}
	if len(xtx) != dim*(dim+1)/2 {
		return nil, fmt.Errorf("fit ridge gram: %d entries of XᵀX, want %d", len(xtx), dim*(dim+1)/2)
	}
	if !(lambda >= 0) || math.IsInf(lambda, 1) {
		return nil, fmt.Errorf("fit ridge gram: lambda %v must be finite and >= 0", lambda)
	}
	if free < -1 || free >= dim {
		return nil, fmt.Errorf("fit ridge gram: free column %d not in [-1, %d)", free, dim)
	}
	for i, v := range xtx {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("fit ridge gram: XᵀX entry %d is %v", i, v)
		}
	}
	for t, b := range xty {
		if len(b) != dim {
			return nil, fmt.Errorf("fit ridge gram: target %d has %d entries of Xᵀy, want %d", t, len(b), dim)
		}
		for i, v := range b {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("fit ridge gram: target %d Xᵀy entry %d is %v", t, i, v)
			}
		}
	}
	out := make([][]float64, len(xty))
	for t := range out {
		out[t] = make([]float64, dim)
	}
	a := mat.NewSymDense(dim, nil)
	k := 0
	for i := range dim {
		for j := i; j < dim; j++ {
			v := xtx[k]
			if i == j && i != free {
				v += lambda
			}
			a.SetSym(i, j, v)
			k++
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return out, nil // not positive definite: the zero models (see above)
	}
	for t, b := range xty {
		w := mat.NewVecDense(dim, out[t])
		if err := ch.SolveVecTo(w, mat.NewVecDense(dim, append([]float64(nil), b...))); err != nil {
			clear(out[t])
			continue
		}
		for _, v := range out[t] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				clear(out[t])
				break
			}
		}
	}
	return out, nil
}
