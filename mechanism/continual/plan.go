package continual

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// Method names a factorization of the prefix-sum matrix (see the package
// documentation for each one's C and B).
type Method string

// The methods.
const (
	PerWindow Method = "per_window"
	Tree      Method = "tree"
	Sqrt      Method = "sqrt"
	BLT       Method = "blt"
)

// bltBuffers is the number of BLT buffers: at T = 1024 three come within
// 0.3% of sqrt's max variance at k = 1 (two: 3.5%; TestBLTNearSqrt).
const bltBuffers = 3

// Methods lists every method, in the order explain-style output shows them.
var Methods = []Method{PerWindow, Tree, Sqrt, BLT}

// Limits on a Plan's inputs. maxHorizon bounds T so state and the O(T²)
// sqrt arithmetic stay bounded; maxGramHorizon bounds T for the exact (or
// row-wise bounded) sensitivity when 1 < k < T, which needs the T×T matrix
// G = CᵀC (8·T² bytes) — longer horizons get a coarser upper bound (see
// NewPlan); maxEnumerate
// bounds the participation patterns enumerated for an exact sensitivity.
const (
	maxHorizon     = 1 << 20
	maxGramHorizon = 2048
	maxEnumerate   = 200_000
	// maxFactorHorizon bounds T for sqrt: B̂ = A·Ĉ⁻¹ comes from an
	// O(T²) series inversion (0.4 s at 2^15 on a shared 2-core machine,
	// cached per horizon), and the releaser's exact Ĉx costs O(t) per
	// window (1.3 s for the whole 2^15-window horizon).
	maxFactorHorizon = 1 << 15
	// maxBLTHorizon bounds T for blt: the fit costs O(T) per evaluation
	// (about 1 s at T = 1024 and 7 s at 8192 on a shared 2-core machine),
	// and three buffers drift from sqrt as T grows (0.3% at 1024, 1.0%
	// at 4096, 1.6% at 8192).
	maxBLTHorizon = 8192
)

// MaxHorizon returns the largest horizon method m serves: maxHorizon
// (2^20) for per_window and tree, 2^15 for sqrt (its O(T²) factor), 8192
// for blt (its fit); 0 for an unknown method. Auto skips the methods a
// horizon exceeds.
func MaxHorizon(m Method) int {
	switch m {
	case PerWindow, Tree:
		return maxHorizon
	case Sqrt:
		return maxFactorHorizon
	case BLT:
		return maxBLTHorizon
	}
	return 0
}

// horizonLimits names every method's largest horizon, for error messages.
func horizonLimits() string {
	parts := make([]string, len(Methods))
	for i, m := range Methods {
		parts[i] = fmt.Sprintf("%s up to %d", m, MaxHorizon(m))
	}
	return strings.Join(parts, ", ")
}

// Plan is one method's factorization for a horizon of T windows and the
// contribution bounds (k windows, L per window), with its exact (or, when
// marked, upper-bound) L2 sensitivity and the variance of every released
// running total. A Plan is immutable and safe for concurrent use.
type Plan struct {
	method Method
	t, k   int
	l      float64
	grid   float64 // γ: 1, or 2^−fixedBits for sqrt and blt
	sens   float64 // L2 sensitivity of Ĉ·x (real units), Δ
	lower  float64 // greedy lower bound on Δ (== sens when exact)
	exact  bool
	cInt   []int64   // sqrt, blt: Ĉ's integer coefficients ĉ_j = round(c_j·2^F)
	coef   []float64 // sqrt, blt: Ĉ's real coefficients ĉ_j·γ (exact)
	bTilde []float64 // sqrt, blt: B̂'s coefficients times γ (total_t = Σ_s bTilde_{t−s}·w_s)
	cumC2  []float64 // sqrt, blt: Σ_{m≤t} (ĉ_m·γ)², exact
	cumB2  []float64 // sqrt, blt: ‖B̂_t‖² = Σ_{m≤t} (B̂'s coefficient m)²
	cumI2  []float64 // sqrt, blt: ‖B̂_t − B̂_{t−1}‖²
	blt    bltParams // blt: the fitted buffers (of the unrounded C)
	maxRow float64   // max_t ‖B_t‖²
}

// NewPlan returns the plan of method m for a horizon of horizon windows, a
// unit in at most k of them (k ≥ horizon: every window) with at most l per
// window. It fails on an unknown method or out-of-range bounds.
func NewPlan(m Method, horizon, k int, l int64) (*Plan, error) {
	switch m {
	case PerWindow, Tree, Sqrt, BLT:
	default:
		return nil, fmt.Errorf("continual: unknown method %q (want per_window, tree, sqrt or blt)", m)
	}
	if horizon < 1 {
		return nil, fmt.Errorf("continual: horizon %d must be at least 1", horizon)
	}
	if k < 1 {
		return nil, fmt.Errorf("continual: max windows per unit %d must be at least 1", k)
	}
	if l < 1 || l > 1<<40 {
		return nil, fmt.Errorf("continual: per-window bound %d outside [1, 2^40]", l)
	}
	if horizon > MaxHorizon(m) {
		return nil, fmt.Errorf("continual: %s supports a horizon up to %d windows, got %d (%s)", m, MaxHorizon(m), horizon, horizonLimits())
	}
	k = min(k, horizon)
	p := &Plan{method: m, t: horizon, k: k, l: float64(l), grid: 1}
	if m == Sqrt || m == BLT {
		f, err := cachedFactor(m, horizon)
		if err != nil {
			return nil, err
		}
		p.blt, p.cInt, p.coef, p.bTilde, p.cumC2, p.cumB2, p.cumI2 = f.blt, f.cInt, f.coef, f.bTilde, f.cumC2, f.cumB2, f.cumI2
		p.grid = grid
		if k > 1 {
			for i, v := range p.cInt {
				if v < 0 {
					return nil, fmt.Errorf("continual: %s factor has coefficient ĉ_%d = %d < 0; its sensitivity for k > 1 is not computed", m, i, v)
				}
			}
		}
	}
	for t := 0; t < horizon; t++ {
		p.maxRow = math.Max(p.maxRow, p.rowNormSq(t))
	}
	var s2, lo2 float64
	switch {
	case k == 1:
		for j := 0; j < horizon; j++ {
			s2 = math.Max(s2, p.colNormSq(j))
		}
		lo2, p.exact = s2, true
	case k == horizon && p.coef != nil:
		// Toeplitz C: (C·1)_t = c_0 + … + c_t, in O(T).
		var pre float64
		for _, v := range p.coef {
			pre += v
			s2 += pre * pre
		}
		lo2, p.exact = s2, true
	case k == horizon:
		ones := make([]float64, horizon)
		for i := range ones {
			ones[i] = 1
		}
		s2 = sumSq(p.applyC(ones))
		lo2, p.exact = s2, true
	case m == PerWindow:
		// G = I: any k windows give Σ_{i,j∈P} G_ij = k, exactly.
		s2, lo2, p.exact = float64(k), float64(k), true
	case horizon > maxGramHorizon:
		// Too long for the T×T Gram matrix: two upper bounds, both valid
		// for G ≥ 0. (a) G_ij ≤ ‖C e_i‖·‖C e_j‖ (Cauchy–Schwarz), so
		// Σ_{i,j∈P} G_ij ≤ (Σ_{j∈P} ‖C e_j‖)² ≤ k²·max_j ‖C e_j‖². (b) The
		// pattern sum only grows with P (G ≥ 0), so the k = T value
		// ‖C·1‖² bounds it. The lower bound is one window's (k = 1),
		// which is always a pattern: the slack shows in explain.
		var col2, all2 float64
		for j := 0; j < horizon; j++ {
			col2 = math.Max(col2, p.colNormSq(j))
		}
		if p.coef != nil {
			var pre float64
			for _, v := range p.coef {
				pre += v
				all2 += pre * pre
			}
		} else {
			ones := make([]float64, horizon)
			for i := range ones {
				ones[i] = 1
			}
			all2 = sumSq(p.applyC(ones))
		}
		s2, lo2 = math.Min(float64(k)*float64(k)*col2, all2), col2
	default:
		g := p.gram()
		lo2 = greedyPattern(g, k)
		if binomAtMost(horizon, k, maxEnumerate) {
			s2, p.exact = exactPattern(g, k), true
			lo2 = s2
		} else {
			s2 = patternUpperBound(g, k)
			// The bound is attained (the tree's usually is): exact.
			p.exact = lo2 >= s2*(1-1e-12)
		}
	}
	p.lower = p.l * math.Sqrt(lo2)
	if p.coef == nil {
		// per_window, tree: every sum above adds small integers, exactly.
		p.sens = p.l * math.Sqrt(s2)
		return p, nil
	}
	// sqrt, blt: the entries of G are integers times γ² summed exactly
	// (factorCheck keeps Σĉ² below 2^53); the pattern sums of n ≤ k² (or
	// the T squares of k = T) nonnegative terms carry a relative rounding
	// error below n·2^−53, so s2 is rounded up by (n+2)·2^−52 and the
	// square root and the product by L up by one ulp each: Δ is never
	// below the exact sensitivity of Ĉ.
	n := 0
	switch {
	case k == horizon:
		n = horizon
	case k > 1:
		n = k*k + horizon // the Gram patterns' k² terms, or the bounds' sums
	}
	s2 *= 1 + float64(n+2)*0x1p-52
	p.sens = nextUp(p.l * nextUp(math.Sqrt(s2)))
	return p, nil
}

// Method returns the plan's method.
func (p *Plan) Method() Method { return p.method }

// Horizon returns T, the number of windows the plan serves.
func (p *Plan) Horizon() int { return p.t }

// Sensitivity returns Δ, the L2 sensitivity of C·x under the plan's
// participation bounds: exact when SensitivityExact reports so, otherwise
// a proven upper bound (see the package documentation).
func (p *Plan) Sensitivity() float64 { return p.sens }

// SensitivityExact reports whether Sensitivity is the exact maximum (k = 1,
// k ≥ T, or few enough patterns to enumerate) rather than an upper bound.
func (p *Plan) SensitivityExact() bool { return p.exact }

// SensitivityLowerBound returns the sensitivity of the best participation
// pattern a greedy search found: the true Δ lies in [this, Sensitivity()].
func (p *Plan) SensitivityLowerBound() float64 { return p.lower }

// Grid returns γ, the lattice the mechanism's release lives on in real
// units: 1 for per_window and tree (C is 0/1, C·x is an integer vector),
// 2^−F (F = 24) for sqrt and blt, whose fixed-point factor Ĉ has
// coefficients in γℤ. The released vector is w = Ĉx/γ + z, integers.
func (p *Plan) Grid() float64 { return p.grid }

// LatticeScale returns σ/γ, the scale to pass to
// noise.Sampler.DiscreteGaussian for each window's z when the plan's noise
// is σ in real units. The sampler accepts scales up to 2^50, so sqrt and
// blt take σ ≤ 2^26 (a larger σ makes the draw fail, not the release
// unsafe).
func (p *Plan) LatticeScale(sigma float64) float64 { return sigma / p.grid }

// DrawNoise returns one window's z ~ N_Z(0, (σ/γ)²) from n: the value
// Releaser.Next takes, and the ledger logs.
func (p *Plan) DrawNoise(n noise.Sampler, sigma float64) (int64, error) {
	z, err := n.DiscreteGaussian(p.LatticeScale(sigma))
	if err != nil {
		return 0, fmt.Errorf("continual: %s noise: %w", p.method, err)
	}
	return z, nil
}

// Variance returns the variance of the released running total at window t
// (0-based) when every coordinate of Ĉ·x gets noise of standard deviation
// sigma (in real units; σ/γ in lattice units): σ²·‖B̂_t‖². (The discrete
// Gaussian's variance is below σ² by a relative 8π²s²·e^{−2π²s²} at
// lattice scale s, nothing at the scales used here.) It returns NaN for t outside [0, T).
func (p *Plan) Variance(t int, sigma float64) float64 {
	if t < 0 || t >= p.t {
		return math.NaN()
	}
	return sigma * sigma * p.rowNormSq(t)
}

// MaxVariance returns max_t Variance(t, sigma), the worst window's variance.
func (p *Plan) MaxVariance(sigma float64) float64 { return sigma * sigma * p.maxRow }

// Rho returns the zCDP ρ = Δ²/(2σ²) of the whole horizon with noise sigma
// in real units (discrete Gaussian on the lattice γℤ: Canonne, Kamath &
// Steinke 2020, Thm. 4; see the package documentation).
func (p *Plan) Rho(sigma float64) float64 { return p.sens * p.sens / (2 * sigma * sigma) }

// SigmaForRho returns σ = Δ/√(2ρ), the noise (real units) that makes the
// horizon ρ-zCDP, rounded up to 24 significant bits
// (noise.RoundUpSignificand: at most 2^−23 more noise, and the exact
// sampler's acceptance test then fits in 128-bit integers; σ/γ keeps the
// 24 bits, γ being a power of two).
func (p *Plan) SigmaForRho(rho float64) (float64, error) {
	if !(rho > 0) || math.IsInf(rho, 0) {
		return 0, fmt.Errorf("continual: ρ %v must be finite and positive", rho)
	}
	return noise.RoundUpSignificand(p.sens / math.Sqrt(2*rho)), nil
}

// MaxVarianceAtRho returns the worst window's variance at zCDP ρ:
// Δ²·max_t ‖B_t‖²/(2ρ), the figure methods are compared by.
func (p *Plan) MaxVarianceAtRho(rho float64) (float64, error) {
	s, err := p.SigmaForRho(rho)
	if err != nil {
		return 0, err
	}
	return p.MaxVariance(s), nil
}

// sqrtCoefficients returns c_j = binom(2j, j)/4^j for j < n, the
// coefficients of (1 − x)^{−1/2}, by c_j = c_{j−1}·(2j−1)/(2j).
func sqrtCoefficients(n int) []float64 {
	c := make([]float64, n)
	c[0] = 1
	for j := 1; j < n; j++ {
		c[j] = c[j-1] * float64(2*j-1) / float64(2*j)
	}
	return c
}

// treeNodeUsed reports whether the level-h block containing leaf j, the
// block [m·2^h, (m+1)·2^h) with m = j>>h, is a row of the tree's C: m even
// (a left child; some prefix's binary decomposition uses it) and the
// block inside [0, T).
func treeNodeUsed(j, h, horizon int) bool {
	m := j >> h
	return m%2 == 0 && (m+1)<<h <= horizon
}

// treeLevels returns the number of levels of the tree over T leaves.
func treeLevels(horizon int) int { return bits.Len(uint(horizon)) }

// nextUp returns the next float64 above v.
func nextUp(v float64) float64 { return math.Nextafter(v, math.Inf(1)) }

// rowNormSq returns ‖B_t‖².
func (p *Plan) rowNormSq(t int) float64 {
	switch p.method {
	case PerWindow:
		return float64(t + 1)
	case Tree:
		return float64(bits.OnesCount(uint(t + 1)))
	default:
		return p.cumB2[t]
	}
}

// colNormSq returns ‖C e_j‖².
func (p *Plan) colNormSq(j int) float64 {
	switch p.method {
	case PerWindow:
		return 1
	case Tree:
		n := 0
		for h := 0; h < treeLevels(p.t); h++ {
			if treeNodeUsed(j, h, p.t) {
				n++
			}
		}
		return float64(n)
	default:
		return p.cumC2[p.t-1-j]
	}
}

// applyC returns C·v (for tree, one entry per used block, level by level).
func (p *Plan) applyC(v []float64) []float64 {
	switch p.method {
	case PerWindow:
		return append([]float64(nil), v...)
	case Tree:
		var out []float64
		for h := 0; h < treeLevels(p.t); h++ {
			for start := 0; start+1<<h <= p.t; start += 2 << h {
				var s float64
				for j := start; j < start+1<<h; j++ {
					s += v[j]
				}
				out = append(out, s)
			}
		}
		return out
	default:
		out := make([]float64, p.t)
		for t := range out {
			var s float64
			for i := 0; i <= t; i++ {
				s += p.coef[t-i] * v[i]
			}
			out[t] = s
		}
		return out
	}
}

// gram returns G = CᵀC as a dense T×T matrix, in O(T²).
func (p *Plan) gram() [][]float64 {
	n := p.t
	g := make([][]float64, n)
	for i := range g {
		g[i] = make([]float64, n)
	}
	switch p.method {
	case PerWindow:
		for i := range g {
			g[i][i] = 1
		}
	case Tree:
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				c := 0
				for h := 0; h < treeLevels(n); h++ {
					if i>>h == j>>h && treeNodeUsed(i, h, n) {
						c++
					}
				}
				g[i][j], g[j][i] = float64(c), float64(c)
			}
		}
	default:
		// G(i,j) = Σ_{t ≥ max(i,j)} c_{t−i}·c_{t−j}, so
		// G(i,j) = G(i+1,j+1) + c_{T−1−i}·c_{T−1−j}, with G = 0 past T.
		c := p.coef
		for i := n - 1; i >= 0; i-- {
			for j := n - 1; j >= i; j-- {
				v := c[n-1-i] * c[n-1-j]
				if j+1 < n {
					v += g[i+1][j+1]
				}
				g[i][j], g[j][i] = v, v
			}
		}
	}
	return g
}

func sumSq(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return s
}

// patternValue returns Σ_{i,j∈P} G_ij.
func patternValue(g [][]float64, pat []int) float64 {
	var s float64
	for _, i := range pat {
		for _, j := range pat {
			s += g[i][j]
		}
	}
	return s
}

// exactPattern returns max over |P| = k of Σ_{i,j∈P} G_ij by enumeration.
func exactPattern(g [][]float64, k int) float64 {
	n := len(g)
	pat := make([]int, k)
	for i := range pat {
		pat[i] = i
	}
	best := 0.0
	for {
		best = math.Max(best, patternValue(g, pat))
		i := k - 1
		for i >= 0 && pat[i] == n-k+i {
			i--
		}
		if i < 0 {
			return best
		}
		pat[i]++
		for j := i + 1; j < k; j++ {
			pat[j] = pat[j-1] + 1
		}
	}
}

// greedyPattern returns the value of a pattern grown greedily from every
// start window (best of them): a lower bound on the maximum.
func greedyPattern(g [][]float64, k int) float64 {
	n := len(g)
	best := 0.0
	in := make([]bool, n)
	gain := make([]float64, n) // Σ_{j∈P} G_ij
	// Start from every window when that is cheap, else from 17 spread out.
	step := 1
	if n*n*k > 50_000_000 {
		step = max(1, n/16)
	}
	for start := 0; start < n; start += step {
		clear(in)
		clear(gain)
		val := 0.0
		next := start
		for size := 0; size < k; size++ {
			val += 2*gain[next] + g[next][next]
			in[next] = true
			for i := range gain {
				gain[i] += g[i][next]
			}
			b := -1
			for i := range gain {
				if !in[i] && (b < 0 || 2*gain[i]+g[i][i] > 2*gain[b]+g[b][b]) {
					b = i
				}
			}
			next = b
		}
		best = math.Max(best, val)
	}
	return best
}

// patternUpperBound returns the sum of the k largest row scores, a row's
// score being the sum of its k largest entries: an upper bound on
// max_{|P|=k} Σ_{i,j∈P} G_ij because each i ∈ P contributes Σ_{j∈P} G_ij
// ≤ its score (G ≥ 0).
func patternUpperBound(g [][]float64, k int) float64 {
	scores := make([]float64, len(g))
	row := make([]float64, len(g))
	for i := range g {
		copy(row, g[i])
		sort.Sort(sort.Reverse(sort.Float64Slice(row)))
		for _, v := range row[:k] {
			scores[i] += v
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(scores)))
	var s float64
	for _, v := range scores[:k] {
		s += v
	}
	return s
}

// binomAtMost reports whether binom(n, k) ≤ limit.
func binomAtMost(n, k, limit int) bool {
	k = min(k, n-k)
	b := 1.0
	for i := 1; i <= k; i++ {
		b = b * float64(n-k+i) / float64(i)
		if b > float64(limit) {
			return false
		}
	}
	return true
}

// Auto returns the plan with the smallest worst-window variance at equal
// privacy (the smallest Δ²·max_t ‖B_t‖², which is MaxVarianceAtRho times
// 2ρ) for the bounds among the methods whose MaxHorizon admits the
// horizon (per_window and tree always do up to 2^20; sqrt up to 2^15,
// blt up to 8192); ties go to the earlier method in Methods, so with
// units in every window it never does worse than per_window. Any other
// failure of a method (bad bounds) is returned, as is a horizon no method
// serves.
func Auto(horizon, k int, l int64) (*Plan, error) {
	var best *Plan
	for _, m := range Methods {
		if horizon > MaxHorizon(m) {
			continue
		}
		p, err := NewPlan(m, horizon, k, l)
		if err != nil {
			return nil, err
		}
		if best == nil || p.sens*p.sens*p.maxRow < best.sens*best.sens*best.maxRow {
			best = p
		}
	}
	if best == nil {
		return nil, fmt.Errorf("continual: no method supports a horizon of %d windows (%s)", horizon, horizonLimits())
	}
	return best, nil
}

// IncrementVariance returns the variance of the released increment
// total_t − total_{t−1} (total_{−1} = 0) with noise sigma: σ²·‖B̂_t − B̂_{t−1}‖².
// per_window: σ² (one window's noise). tree: window t completes one block
// and drops the j = trailing-zeros(t+1) blocks it replaces, so the
// increment is one block's w minus j others', σ²·(1 + j). sqrt, blt: row t
// of B̂ − its row t−1 is the series inverse of ĉ, σ²·Σ_{m≤t} (inv_m/γ)².
// It returns NaN for t outside [0, T).
func (p *Plan) IncrementVariance(t int, sigma float64) float64 {
	if t < 0 || t >= p.t {
		return math.NaN()
	}
	switch p.method {
	case PerWindow:
		return sigma * sigma
	case Tree:
		return sigma * sigma * float64(1+bits.TrailingZeros(uint(t+1)))
	default:
		return sigma * sigma * p.cumI2[t]
	}
}

// VarianceFrom is Variance for a run that began at step first, the steps
// before it fed x = 0 and z = 0 (no noise: kind/running's skipped steps):
// only the noise drawn from step first on reaches the total. For the
// Toeplitz methods (per_window, sqrt, blt) that is Variance(t − first);
// for tree, σ² per block of t+1's decomposition completed at or after
// first. It returns NaN unless 0 ≤ first ≤ t < T.
func (p *Plan) VarianceFrom(first, t int, sigma float64) float64 {
	if first < 0 || first > t || t >= p.t {
		return math.NaN()
	}
	if p.method != Tree {
		return p.Variance(t-first, sigma)
	}
	return sigma * sigma * float64(treeNoisyBlocks(0, t+1, first))
}

// IncrementVarianceFrom is IncrementVariance for a run that began at step
// first (see VarianceFrom); at t = first the increment is the total.
func (p *Plan) IncrementVarianceFrom(first, t int, sigma float64) float64 {
	if first < 0 || first > t || t >= p.t {
		return math.NaN()
	}
	if p.method != Tree {
		return p.IncrementVariance(t-first, sigma)
	}
	// The block completed at t (noisy: t ≥ first) replaces the blocks of
	// t's decomposition inside [t+1−2^j, t), j = trailing-zeros(t+1).
	j := bits.TrailingZeros(uint(t + 1))
	return sigma * sigma * float64(1+treeNoisyBlocks(t+1-(1<<j), t, first))
}

// treeNoisyBlocks counts the blocks of the binary decomposition of the
// steps [lo, hi) (lo a multiple of the first block's size, as in a
// prefix's decomposition) whose completing step, their last, is at or
// after first.
func treeNoisyBlocks(lo, hi, first int) int {
	n := 0
	for a := lo; a < hi; {
		size := 1 << (bits.Len(uint(hi-a)) - 1)
		for a%size != 0 {
			size >>= 1
		}
		if a+size-1 >= first {
			n++
		}
		a += size
	}
	return n
}
