package capacity

import "math"

// logIntegral returns log ∫ exp(ℓ(x)) dx (continuous) or log Σ_k exp(ℓ(k))
// over the integers (discrete), for a log-integrand ℓ that is −Inf where the
// integrand vanishes, tends to −Inf in both tails and is decreasing in |x|
// beyond minR (the caller's bound; 0 if ℓ is concave).
//
// Method. ℓ is evaluated on a grid: spacing unit/4 on [−32·unit, 32·unit],
// then geometric with ratio 1.02 outward, until beyond minR and more than
// cutoff = 60 below the largest value seen (so a second bump far out, as
// u₊^β e^{−|x|} has for a polynomial u of high power, is found). Every grid
// cell where ℓ comes within cutoff of the maximum at either end is
// integrated by adaptive Gauss–Kronrod (7/15) with relative tolerance 1e−13,
// after splitting at the edges of the support (the roots of the
// adversary's polynomial, where u₊^β has an algebraic endpoint singularity
// that GK handles by bisection), located by bisection to machine precision.
// The cells left out are below e^{−60} of the peak each and decreasing
// outward, so the truncation is negligible at double precision. Discrete
// sums run over every integer in the kept cells.
//
// Work is bounded by bud (nil: unbounded): every evaluation of ℓ and every
// integer summed spends one unit, and an adaptive Gauss–Kronrod panel that
// reaches maxGKDepth without meeting its tolerance exhausts the budget.
// Once the budget is exhausted logIntegral returns NaN at once; the caller
// checks bud.exhausted and reports [ErrNotComputable] rather than a value.
func logIntegral(l0 func(float64) float64, discrete bool, unit, minR float64, bud *budget) float64 {
	const cutoff = 60.0
	if bud.exhausted() {
		return math.NaN()
	}
	l := func(x float64) float64 {
		bud.spend(1)
		return l0(x)
	}
	// Grid, built symmetric: core then geometric tails.
	var pos []float64
	for k := 1; k <= 128; k++ {
		pos = append(pos, float64(k)*unit/4)
	}
	vals := map[float64]float64{}
	eval := func(x float64) float64 {
		if v, ok := vals[x]; ok {
			return v
		}
		v := l(x)
		vals[x] = v
		return v
	}
	lmax := eval(0)
	for _, x := range pos {
		lmax = math.Max(lmax, math.Max(eval(x), eval(-x)))
	}
	for x := pos[len(pos)-1]; ; {
		if x > minR && eval(x) < lmax-cutoff && eval(-x) < lmax-cutoff {
			break
		}
		if x > 1e15*unit || bud.exhausted() {
			break
		}
		x *= 1.02
		pos = append(pos, x)
		lmax = math.Max(lmax, math.Max(eval(x), eval(-x)))
	}
	if bud.exhausted() {
		return math.NaN()
	}
	if math.IsInf(lmax, -1) {
		return math.Inf(-1)
	}
	grid := make([]float64, 0, 2*len(pos)+1)
	for i := len(pos) - 1; i >= 0; i-- {
		grid = append(grid, -pos[i])
	}
	grid = append(grid, 0)
	grid = append(grid, pos...)
	f := func(x float64) float64 {
		v := l(x)
		if math.IsInf(v, -1) {
			return 0
		}
		return math.Exp(v - lmax)
	}
	s := 0.0
	for i := 0; i+1 < len(grid); i++ {
		if bud.exhausted() {
			return math.NaN()
		}
		a, b := grid[i], grid[i+1]
		la, lb := eval(a), eval(b)
		if la < lmax-cutoff && lb < lmax-cutoff {
			continue
		}
		if discrete {
			k0 := math.Ceil(a)
			if i > 0 && k0 == a {
				k0++ // a belongs to the previous cell
			}
			for k := k0; k <= b && !bud.exhausted(); k++ {
				s += f(k)
			}
			continue
		}
		inA, inB := !math.IsInf(la, -1), !math.IsInf(lb, -1)
		if inA != inB {
			// One support edge in the cell (two would be a sub-cell
			// sliver, negligible): bisect to it and integrate the part
			// inside.
			lo, hi := a, b
			for j := 0; j < 200 && hi-lo > 1e-15*math.Max(1, math.Abs(lo)); j++ {
				c := (lo + hi) / 2
				if !math.IsInf(l(c), -1) == inA {
					lo = c
				} else {
					hi = c
				}
			}
			if inA {
				s += adaptGK(f, a, lo, 1e-13, maxGKDepth, bud)
			} else {
				s += adaptGK(f, hi, b, 1e-13, maxGKDepth, bud)
			}
			continue
		}
		s += adaptGK(f, a, b, 1e-13, maxGKDepth, bud)
	}
	if bud.exhausted() {
		return math.NaN()
	}
	return lmax + math.Log(s)
}

// maxGKDepth is the deepest bisection adaptGK makes (2^30 panels of a cell
// at most, in principle; the budget stops it far sooner).
const maxGKDepth = 30

// figureBudget is the number of integrand evaluations (and integers
// summed) one figure may spend: ordinary figures take 10^6–10^7, the
// slowest in the tests (laplace poly3 at α = 1.001; discrete_laplace poly3
// at scale 1000) 5.5–6.6·10^7 at about 30 ns each, so 10^8 is a few
// seconds of work at most. A figure that needs more — a discrete law of very large
// scale, or an integrand adaptive quadrature cannot resolve — is reported
// as [ErrNotComputable] instead of hanging.
const figureBudget = 100_000_000

// budget counts the work of one figure; a nil *budget is unlimited.
type budget struct {
	left int
	over bool
}

func newBudget() *budget { return &budget{left: figureBudget} }

func (b *budget) spend(n int) {
	if b == nil {
		return
	}
	b.left -= n
	if b.left < 0 {
		b.over = true
	}
}

func (b *budget) exhausted() bool { return b != nil && b.over }

// Gauss–Kronrod 7/15 nodes and weights (the standard QUADPACK values).
var (
	gkX = [8]float64{
		0.991455371120812639206854697526329,
		0.949107912342758524526189684047851,
		0.864864423359769072789712788640926,
		0.741531185599394439863864773280788,
		0.586087235467691130294144845693013,
		0.405845151377397166906606412076961,
		0.207784955007898467600689403773245,
		0,
	}
	gkWK = [8]float64{
		0.022935322010529224963732008058970,
		0.063092092629978553290700663189204,
		0.104790010322250183839876322541518,
		0.140653259715525918745189590510238,
		0.169004726639267902826583426598550,
		0.190350578064785409913256402421014,
		0.204432940075298892414161999234649,
		0.209482141084727828012999174891714,
	}
	gkWG = [4]float64{
		0.129484966168869693270611432679082,
		0.279705391489276667901467771423780,
		0.381830050505118944950369775488975,
		0.417959183673469387755102040816327,
	}
)

// gk15 returns the Kronrod estimate of ∫_a^b f and its difference from the
// embedded Gauss estimate.
func gk15(f func(float64) float64, a, b float64) (float64, float64) {
	c, h := (a+b)/2, (b-a)/2
	fc := f(c)
	k := fc * gkWK[7]
	g := fc * gkWG[3]
	for i := 0; i < 7; i++ {
		x := h * gkX[i]
		s := f(c-x) + f(c+x)
		k += gkWK[i] * s
		if i%2 == 1 {
			g += gkWG[i/2] * s
		}
	}
	return k * h, math.Abs((k - g) * h)
}

// adaptGK integrates f on [a, b] by recursive bisection until the
// Gauss–Kronrod difference on a piece is below tol times its estimate (or
// below 1e−17 in absolute terms: the integrands here are normalised to a
// peak of 1 on supports of width ≥ 1e−2, so that is far below the relative
// tolerance of the total), at most depth levels deep. Reaching the depth
// without meeting the tolerance exhausts bud (the integral is not
// resolved), and an exhausted bud stops the recursion.
func adaptGK(f func(float64) float64, a, b, tol float64, depth int, bud *budget) float64 {
	if bud.exhausted() {
		return 0
	}
	v, e := gk15(f, a, b)
	if e <= tol*math.Abs(v) || e < 1e-17 {
		return v
	}
	if depth == 0 {
		if bud != nil {
			bud.over = true
		}
		return v
	}
	m := (a + b) / 2
	return adaptGK(f, a, m, tol, depth-1, bud) + adaptGK(f, m, b, tol, depth-1, bud)
}
