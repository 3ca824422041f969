package prediction

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// The learners are run per shard and never published: their outputs reach
// the querier only through Classify, Regressor or Evaluator. They must be
// deterministic functions of the shard's rows (in order), so that a shard
// whose rows did not change gives the same model: that is what limits a
// unit's influence to one model. Both are: fixed arithmetic, no
// randomness, a fixed iteration rule.

// MaxDim bounds the number of features of a learner.
const MaxDim = 1024

// MaxClasses bounds the number of labels of a classifier and of Classify.
const MaxClasses = 1 << 16

// Linear is a fitted linear model: Predict(x) = Intercept + Σ Weights_j·x_j.
type Linear struct {
	Weights   []float64
	Intercept float64
}

// Predict returns the model's prediction for the features x (len(x) must
// be len(Weights); extra features are ignored, missing ones count as 0).
func (m Linear) Predict(x []float64) float64 {
	v := m.Intercept
	for j, w := range m.Weights {
		if j < len(x) {
			v += w * x[j]
		}
	}
	return v
}

// checkRows validates a design matrix: every row has dim finite values.
func checkRows(x [][]float64, dim int) error {
	if dim < 1 || dim > MaxDim {
		return fmt.Errorf("dimension %d, want 1 to %d", dim, MaxDim)
	}
	for i, row := range x {
		if len(row) != dim {
			return fmt.Errorf("row %d has %d features, want %d", i, len(row), dim)
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("row %d feature %d is %v", i, j, v)
			}
		}
	}
	return nil
}

// columnMeans returns the mean of each column (zeros for no rows).
func columnMeans(x [][]float64, dim int) []float64 {
	mean := make([]float64, dim)
	if len(x) == 0 {
		return mean
	}
	for _, row := range x {
		for j, v := range row {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(len(x))
	}
	return mean
}

// FitRidge fits ridge regression with an unpenalized intercept: the
// minimizer of Σ_i (y_i − b − wᵀx_i)² + λ‖w‖², computed by centering (w
// solves (X̃ᵀX̃ + λI)w = X̃ᵀỹ with X̃, ỹ the centered data, b = ȳ − wᵀx̄) and
// a Cholesky factorization. dim is the number of features (needed for an
// empty shard). With no rows it returns the zero model (predicts 0), so
// every shard has a model and r stays fixed. λ must be finite and ≥ 0.
// When the fit fails numerically — X̃ᵀX̃ + λI not positive definite (λ = 0
// on singular data), or sums that overflow on huge finite features — it
// also returns the zero model, with no error: whether a fit succeeds
// depends on the shard's data, so an error would let one unit switch an
// output on or off; the zero model is one more model a unit can change,
// which the answers' sensitivity (one model) already covers. Errors are
// for malformed input only (shapes, NaN or Inf values, λ).
func FitRidge(x [][]float64, y []float64, dim int, lambda float64) (Linear, error) {
	if err := checkRows(x, dim); err != nil {
		return Linear{}, fmt.Errorf("fit ridge: %w", err)
	}
	if len(y) != len(x) {
		return Linear{}, fmt.Errorf("fit ridge: %d targets for %d rows", len(y), len(x))
	}
	if !(lambda >= 0) || math.IsInf(lambda, 1) {
		return Linear{}, fmt.Errorf("fit ridge: lambda %v must be finite and >= 0", lambda)
	}
	m := Linear{Weights: make([]float64, dim)}
	if len(x) == 0 {
		return m, nil
	}
	var ybar float64
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Linear{}, fmt.Errorf("fit ridge: target %d is %v", i, v)
		}
		ybar += v
	}
	ybar /= float64(len(y))
	mean := columnMeans(x, dim)
	ata := make([]float64, dim*dim) // upper triangle of X̃ᵀX̃
	b := mat.NewVecDense(dim, nil)
	xc := make([]float64, dim)
	for i, row := range x {
		for j, v := range row {
			xc[j] = v - mean[j]
		}
		addOuter(ata, xc, 1)
		b.AddScaledVec(b, y[i]-ybar, mat.NewVecDense(dim, xc))
	}
	zero := Linear{Weights: make([]float64, dim)}
	a := symmetric(ata, dim, lambda)
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return zero, nil // not positive definite: the zero model (see above)
	}
	w := mat.NewVecDense(dim, m.Weights)
	if err := ch.SolveVecTo(w, b); err != nil {
		return zero, nil
	}
	m.Intercept = ybar
	for j := range dim {
		m.Intercept -= m.Weights[j] * mean[j]
	}
	if !finiteModel(m) {
		return zero, nil
	}
	return m, nil
}

// finiteModel reports whether every weight and the intercept are finite.
func finiteModel(m Linear) bool {
	if math.IsNaN(m.Intercept) || math.IsInf(m.Intercept, 0) {
		return false
	}
	for _, w := range m.Weights {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return false
		}
	}
	return true
}

// Logistic is a fitted logistic-regression classifier over Classes labels:
// one binary model for two classes (label 1 iff its score is > 0), and one
// model per class, one-vs-rest, for more (the label of the largest score,
// ties to the lower label).
type Logistic struct {
	Classes int
	// Models holds one Linear score (log-odds) for two classes, Classes
	// of them otherwise.
	Models []Linear
}

// Predict returns the predicted label of x.
func (m Logistic) Predict(x []float64) int {
	if len(m.Models) == 1 {
		if m.Models[0].Predict(x) > 0 {
			return 1
		}
		return 0
	}
	best, bestV := 0, math.Inf(-1)
	for c, lm := range m.Models {
		if v := lm.Predict(x); v > bestV {
			best, bestV = c, v
		}
	}
	return best
}

// Newton's method settings of FitLogistic: at most logisticMaxIter steps,
// stopping when the largest coordinate of a step is below logisticTol.
const (
	logisticMaxIter = 100
	logisticTol     = 1e-9
)

// FitLogistic fits L2-penalized logistic regression: for two classes the
// minimizer of Σ_i log(1 + e^{−s_i·θᵀx̃_i}) + (λ/2)‖θ‖² with s_i = ±1,
// x̃_i = (1, x_i − x̄) (the features centered by their shard mean, so the
// penalty on the intercept shrinks towards log-odds 0 only), and for more
// classes one such model per class against the rest. The objective is
// strictly convex for λ > 0 (so its minimizer exists and is unique, also for
// a shard with no rows or with one class only) and is minimized by Newton's
// method with backtracking (halving the step until the objective does not
// increase), a deterministic rule. With no rows every model is 0, which
// predicts label 0. λ must be finite and > 0; labels must be in
// [0, classes).
func FitLogistic(x [][]float64, labels []int, dim, classes int, lambda float64) (Logistic, error) {
	if err := checkRows(x, dim); err != nil {
		return Logistic{}, fmt.Errorf("fit logistic: %w", err)
	}
	if len(labels) != len(x) {
		return Logistic{}, fmt.Errorf("fit logistic: %d labels for %d rows", len(labels), len(x))
	}
	if classes < 2 || classes > MaxClasses {
		return Logistic{}, fmt.Errorf("fit logistic: %d classes, want 2 to %d", classes, MaxClasses)
	}
	if !(lambda > 0) || math.IsInf(lambda, 1) {
		return Logistic{}, fmt.Errorf("fit logistic: lambda %v must be finite and > 0", lambda)
	}
	for i, l := range labels {
		if l < 0 || l >= classes {
			return Logistic{}, fmt.Errorf("fit logistic: label %d of row %d not in [0, %d)", l, i, classes)
		}
	}
	mean := columnMeans(x, dim)
	m := Logistic{Classes: classes}
	fit := func(pos int) (Linear, error) {
		y := make([]float64, len(labels))
		for i, l := range labels {
			if l == pos {
				y[i] = 1
			}
		}
		zero := Linear{Weights: make([]float64, dim)}
		theta, err := newtonLogistic(x, y, mean, lambda)
		if err != nil {
			// A numerical failure depends on the shard's data: the zero
			// model (scores 0), as FitRidge does, never an error.
			return zero, nil
		}
		lm := Linear{Weights: theta[1:], Intercept: theta[0]}
		for j := range dim {
			lm.Intercept -= lm.Weights[j] * mean[j]
		}
		if !finiteModel(lm) {
			return zero, nil
		}
		return lm, nil
	}
	if classes == 2 {
		lm, err := fit(1)
		if err != nil {
			return Logistic{}, fmt.Errorf("fit logistic: %w", err)
		}
		m.Models = []Linear{lm}
		return m, nil
	}
	for c := range classes {
		lm, err := fit(c)
		if err != nil {
			return Logistic{}, fmt.Errorf("fit logistic: class %d: %w", c, err)
		}
		m.Models = append(m.Models, lm)
	}
	return m, nil
}

// softplus returns log(1 + e^z) without overflow.
func softplus(z float64) float64 {
	if z > 0 {
		return z + math.Log1p(math.Exp(-z))
	}
	return math.Log1p(math.Exp(z))
}

// newtonLogistic minimizes the penalized logistic loss of targets y ∈ {0, 1}
// over θ = (intercept, weights) on the centered features, by Newton steps
// with backtracking.
func newtonLogistic(x [][]float64, y []float64, mean []float64, lambda float64) ([]float64, error) {
	dim := len(mean)
	p := dim + 1
	theta := make([]float64, p)
	xt := make([]float64, p)
	row := func(i int) []float64 {
		xt[0] = 1
		for j, v := range x[i] {
			xt[j+1] = v - mean[j]
		}
		return xt
	}
	dot := func(a, b []float64) float64 {
		var s float64
		for j := range a {
			s += a[j] * b[j]
		}
		return s
	}
	objective := func(th []float64) float64 {
		var f float64
		for i := range x {
			z := dot(th, row(i))
			// −log σ(z) for y = 1, −log(1 − σ(z)) for y = 0.
			if y[i] == 1 {
				f += softplus(-z)
			} else {
				f += softplus(z)
			}
		}
		return f + lambda/2*dot(th, th)
	}
	cur := objective(theta)
	next := make([]float64, p)
	for range logisticMaxIter {
		hu := make([]float64, p*p) // upper triangle of the Hessian
		g := mat.NewVecDense(p, nil)
		for i := range x {
			r := row(i)
			z := dot(theta, r)
			pr := 1 / (1 + math.Exp(-z))
			for j, v := range r {
				g.SetVec(j, g.AtVec(j)+(pr-y[i])*v)
			}
			addOuter(hu, r, pr*(1-pr))
		}
		for j := range p {
			g.SetVec(j, g.AtVec(j)+lambda*theta[j])
		}
		h := symmetric(hu, p, lambda)
		var ch mat.Cholesky
		if !ch.Factorize(h) {
			return nil, fmt.Errorf("newton: Hessian is not positive definite")
		}
		step := mat.NewVecDense(p, nil)
		if err := ch.SolveVecTo(step, g); err != nil {
			return nil, fmt.Errorf("newton: %w", err)
		}
		t := 1.0
		var f float64
		for k := 0; ; k++ {
			for j := range p {
				next[j] = theta[j] - t*step.AtVec(j)
			}
			f = objective(next)
			if f <= cur || k == 50 {
				break
			}
			t /= 2
		}
		if !(f <= cur) {
			break // no decrease along the Newton direction: at the minimum to rounding
		}
		var maxStep float64
		for j := range p {
			maxStep = math.Max(maxStep, math.Abs(theta[j]-next[j]))
		}
		copy(theta, next)
		cur = f
		if maxStep < logisticTol {
			break
		}
	}
	return theta, nil
}

// addOuter adds c·vvᵀ to the upper triangle of the n×n row-major matrix a.
func addOuter(a, v []float64, c float64) {
	n := len(v)
	for j, vj := range v {
		cv := c * vj
		row := a[j*n : (j+1)*n]
		for k := j; k < n; k++ {
			row[k] += cv * v[k]
		}
	}
}

// symmetric returns the SymDense of an upper triangle plus λ on the
// diagonal.
func symmetric(upper []float64, n int, lambda float64) *mat.SymDense {
	for j := range n {
		upper[j*n+j] += lambda
	}
	return mat.NewSymDense(n, upper)
}
