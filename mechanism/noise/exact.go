package noise

import (
	"errors"
	"math"
	"math/big"
	"math/bits"
)

// This file holds the exact samplers of Canonne, Kamath & Steinke 2020
// ("The Discrete Gaussian for Differential Privacy", NeurIPS; CKS below):
// Bernoulli(exp(−γ)) for rational γ (their Algorithm 1), the geometric and
// discrete Laplace samplers (Algorithm 2) and the discrete Gaussian
// (Algorithm 3). Every accept/reject decision compares integers: random
// words from a Source against exact rationals held in 64-bit, 128-bit or
// math/big integers. No floating-point value ever decides an outcome, so the
// distributions are exactly the ones stated, not approximations of them.
//
// Parameters given as float64 are exact dyadic rationals m·2^e; they are
// decomposed exactly (math.Frexp) and never rounded.

// Errors the samplers report. Both are wrapped with context by the exported
// methods of Noise.
var (
	// ErrSourceStuck is returned when one draw consumes more than
	// maxWordsPerDraw random words. A working Source makes this
	// astronomically unlikely: a draw is a short sequence of loops, each
	// of which ends with probability at least about 1/3 per step and
	// consumes a bit or a word per step, while the limit allows 2^14 words
	// (a million bits) against an average of about 3; a rough Chernoff
	// estimate puts the chance of reaching it far below 2^-1000. A
	// Source that returns a constant word can make a rejection loop spin
	// forever, and this turns that hang into an error. Conditioned on not
	// failing, the output distribution is unchanged: the accepted
	// iteration is distributed like any other.
	ErrSourceStuck = errors.New("random source looks stuck: too many words for one draw")
	// errOutOfRange is returned when a draw does not fit in an int64. For
	// the scales the samplers accept (at most MaxDiscreteScale) this has
	// probability below exp(−4096).
	errOutOfRange = errors.New("noise draw does not fit in int64")
)

// maxWordsPerDraw bounds the random words one sample may consume (see
// ErrSourceStuck). A discrete Laplace or Gaussian sample uses about 1 to 4
// on average.
const maxWordsPerDraw = 1 << 14

// MaxDiscreteScale is the largest discrete Laplace t and discrete Gaussian σ
// the samplers accept: 2^50 ≈ 1.1e15. Beyond it draws start to approach
// the int64 range (P(|Z| ≥ 2^62) ≈ exp(−2^12) at t = 2^50), and no release
// needs it: the granularity method keeps t and σ in grid units below 2^41.
const MaxDiscreteScale = 1 << 50

// rng draws random words from a Source for one sample. It keeps a buffer of
// unused bits for fair coins and counts the words it used, so a stuck
// Source ends in ErrSourceStuck instead of a hang. An rng lives for one
// exported call, so Noise itself keeps no state between calls.
type rng struct {
	src   Source
	bits  uint64 // unused random bits, lowest first
	nbits uint   // how many bits of bits are unused
	words int    // words drawn so far
	// proposals counts discrete Gaussian proposals (rejection rounds),
	// for the rejection-rate test.
	proposals int
	// scratch holds the big integers of the math/big paths, allocated on
	// first use and reused for the rest of the draw.
	scratch *bigScratch
}

// bigScratch is working storage for the math/big paths.
type bigScratch struct {
	x, rest, ratio big.Int
}

// big returns the draw's big-integer scratch space.
func (r *rng) big() *bigScratch {
	if r.scratch == nil {
		r.scratch = new(bigScratch)
	}
	return r.scratch
}

// sampleAbort carries a sampler error through panic to the exported entry
// point, which recovers it (see catch). It never escapes the package.
type sampleAbort struct{ err error }

// abort stops the current sample with err.
func abort(err error) { panic(sampleAbort{err}) }

// catch recovers a sampleAbort into *err; any other panic is re-raised.
func catch(err *error) {
	if r := recover(); r != nil {
		a, ok := r.(sampleAbort)
		if !ok {
			panic(r)
		}
		*err = a.err
	}
}

// word returns 64 fresh random bits.
func (r *rng) word() uint64 {
	r.words++
	if r.words > maxWordsPerDraw {
		abort(ErrSourceStuck)
	}
	return r.src.Uint64()
}

// bit returns one fair coin, from the buffered word.
func (r *rng) bit() bool {
	if r.nbits == 0 {
		r.refill()
	}
	r.nbits--
	b := r.bits&1 == 1
	r.bits >>= 1
	return b
}

// refill loads a fresh word into the bit buffer.
func (r *rng) refill() {
	r.bits, r.nbits = r.word(), 64
}

// uniform returns a uniform integer in [0, n), n ≥ 1, by Lemire's
// multiply-and-reject method (Lemire 2019, "Fast random integer generation
// in an interval", ACM TOMACS): w·n = hi·2^64 + lo with w uniform on
// [0, 2^64); each value of hi is hit by either ⌊2^64/n⌋ or ⌈2^64/n⌉ words,
// and rejecting lo < (2^64 − n) mod n removes exactly the surplus, so every
// value is hit by ⌊2^64/n⌋ words. No modulo bias; at most one rejection in
// two on average (fewer than one in 2^32 for n < 2^32).
func (r *rng) uniform(n uint64) uint64 {
	switch {
	case n <= 1:
		return 0
	case n&(n-1) == 0:
		return r.word() & (n - 1)
	}
	hi, lo := bits.Mul64(r.word(), n)
	if lo < n {
		thresh := -n % n // (2^64 − n) mod n
		for lo < thresh {
			hi, lo = bits.Mul64(r.word(), n)
		}
	}
	return hi
}

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

func (a u128) cmp(b u128) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// sub returns a − b; a ≥ b.
func (a u128) sub(b u128) u128 {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return u128{hi, lo}
}

// add returns a + b and whether it overflowed.
func (a u128) add(b u128) (u128, bool) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, c := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}, c != 0
}

// mul64 returns a·b and whether it overflowed.
func (a u128) mul64(b uint64) (u128, bool) {
	h1, lo := bits.Mul64(a.lo, b)
	h2, l2 := bits.Mul64(a.hi, b)
	hi, c := bits.Add64(h1, l2, 0)
	return u128{hi, lo}, h2 != 0 || c != 0
}

// shl returns a·2^k and whether bits were lost.
func (a u128) shl(k uint) (u128, bool) {
	if a.isZero() {
		return a, false
	}
	if k >= 128 || a.bitLen()+int(k) > 128 {
		return u128{}, true
	}
	if k >= 64 {
		return u128{a.lo << (k - 64), 0}, false
	}
	if k == 0 {
		return a, false
	}
	return u128{a.hi<<k | a.lo>>(64-k), a.lo << k}, false
}

// shr returns ⌊a/2^k⌋.
func (a u128) shr(k uint) u128 {
	switch {
	case k >= 128:
		return u128{}
	case k >= 64:
		return u128{0, a.hi >> (k - 64)}
	case k == 0:
		return a
	}
	return u128{a.hi >> k, a.lo>>k | a.hi<<(64-k)}
}

// div64 returns ⌊a/d⌋ for d ≥ 1.
func (a u128) div64(d uint64) u128 {
	qhi, rem := a.hi/d, a.hi%d
	qlo, _ := bits.Div64(rem, a.lo, d)
	return u128{qhi, qlo}
}

func (a u128) bitLen() int {
	if a.hi != 0 {
		return 64 + bits.Len64(a.hi)
	}
	return bits.Len64(a.lo)
}

func (a u128) big() *big.Int {
	b := new(big.Int).SetUint64(a.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(a.lo))
}

// u128FromBig returns b as a u128 if 0 ≤ b < 2^128.
func u128FromBig(b *big.Int) (u128, bool) {
	if b.Sign() < 0 || b.BitLen() > 128 {
		return u128{}, false
	}
	lo := new(big.Int).And(b, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi := new(big.Int).Rsh(b, 64).Uint64()
	return u128{hi, lo}, true
}

// bernoulliRatio returns true with probability n/d, for 0 ≤ n < d < 2^127.
//
// It compares a uniform real U = 0.b₁b₂b₃… (fair bits b_i) with the
// binary expansion p = n/d = 0.p₁p₂p₃…, generating both one digit at a
// time: p_i is whether 2n ≥ d, after which n becomes 2n − p_i·d (long
// division). At the first i with b_i ≠ p_i, U < p exactly when p_i = 1; if
// the remainder reaches 0 the rest of p is zeros and U ≥ p (U = p has
// probability 0). Each digit decides with probability 1/2, so it uses two
// random bits on average, whatever the size of n and d.
func (r *rng) bernoulliRatio(n, d u128) bool {
	if n.hi == 0 && d.hi == 0 && d.lo < 1<<63 {
		return r.bernoulliRatio64(n.lo, d.lo)
	}
	for !n.isZero() {
		n2 := u128{n.hi<<1 | n.lo>>63, n.lo << 1} // 2n < 2d ≤ 2^128
		digit := n2.cmp(d) >= 0
		if digit {
			n2 = n2.sub(d)
		}
		if r.bit() != digit {
			return digit
		}
		n = n2
	}
	return false
}

// bernoulliRatio64 is bernoulliRatio for 0 ≤ n < d < 2^63, in uint64
// arithmetic; it consumes the same bits.
func (r *rng) bernoulliRatio64(n, d uint64) bool {
	for n != 0 {
		n <<= 1
		digit := n >= d
		if digit {
			n -= d
		}
		if r.nbits == 0 {
			r.refill()
		}
		r.nbits--
		b := r.bits&1 == 1
		r.bits >>= 1
		if b != digit {
			return digit
		}
	}
	return false
}

// bernoulliRatioBig is bernoulliRatio for big integers, 0 ≤ n < d. It
// consumes exactly the same bits as bernoulliRatio on the same inputs.
func (r *rng) bernoulliRatioBig(n, d *big.Int) bool {
	rest := r.big().ratio.Set(n)
	for rest.Sign() != 0 {
		rest.Lsh(rest, 1)
		digit := rest.Cmp(d) >= 0
		if digit {
			rest.Sub(rest, d)
		}
		if r.bit() != digit {
			return digit
		}
	}
	return false
}

// bernoulliInv returns true with probability 1/k, k ≥ 1.
func (r *rng) bernoulliInv(k uint64) bool {
	if k == 1 {
		return true
	}
	if k < 1<<63 {
		return r.bernoulliRatio64(1, k)
	}
	return r.bernoulliRatio(u128{0, 1}, u128{0, k})
}

// bernoulliExpMinusOne returns true with probability exp(−1): CKS
// Algorithm 1 at γ = 1, where the first trial Bernoulli(γ/1) always
// succeeds and the k-th is Bernoulli(1/k).
func (r *rng) bernoulliExpMinusOne() bool {
	k := uint64(2)
	for r.bernoulliInv(k) {
		k++
	}
	return k%2 == 1
}

// bernoulliExpFrac returns true with probability exp(−n/d) for
// 0 ≤ n/d ≤ 1 (CKS Algorithm 1). With A_k ~ Bernoulli(γ/k) independent, K is
// the first k with A_k = 0; P(K > k) = γ^k/k!, so
// P(K odd) = Σ_{k odd} (γ^{k−1}/(k−1)! − γ^k/k!) = Σ_j (−γ)^j/j! = e^{−γ}.
// Bernoulli(γ/k) is drawn as Bernoulli(1/k) ∧ Bernoulli(γ), two independent
// coins whose product has the right probability, so no product k·d is
// ever formed.
func (r *rng) bernoulliExpFrac(n, d u128) bool {
	k := uint64(1)
	for r.bernoulliInv(k) && r.bernoulliRatio(n, d) {
		k++
	}
	return k%2 == 1
}

// bernoulliExpFracBig is bernoulliExpFrac with big integers.
func (r *rng) bernoulliExpFracBig(n, d *big.Int) bool {
	k := uint64(1)
	for r.bernoulliInv(k) && r.bernoulliRatioBig(n, d) {
		k++
	}
	return k%2 == 1
}

// bernoulliExp returns true with probability exp(−n/d) for any n ≥ 0,
// d ≥ 1 (CKS Algorithm 1, γ > 1 case): exp(−γ) = exp(−1)^⌊γ⌋·exp(−{γ}), one
// independent coin per factor, stopping at the first failure. Peeling one
// unit of γ off per successful exp(−1) coin avoids dividing n by d, and the
// loop runs fewer than 1/(1 − e^{−1}) ≈ 1.58 times on average however large
// γ is.
func (r *rng) bernoulliExp(n, d u128) bool {
	for n.cmp(d) >= 0 {
		n = n.sub(d)
		if !r.bernoulliExpMinusOne() {
			return false
		}
	}
	return r.bernoulliExpFrac(n, d)
}

// bernoulliExpBig is bernoulliExp with big integers; n is not modified
// (but must not be the draw's rest or ratio scratch).
func (r *rng) bernoulliExpBig(n, d *big.Int) bool {
	rest := r.big().rest.Set(n)
	for rest.Cmp(d) >= 0 {
		rest.Sub(rest, d)
		if !r.bernoulliExpMinusOne() {
			return false
		}
	}
	return r.bernoulliExpFracBig(rest, d)
}

// geometricExpMinusOne returns V ≥ 0 with P(V = v) = (1 − e^{−1})·e^{−v}:
// the number of successes of independent Bernoulli(exp(−1)) coins before
// the first failure.
func (r *rng) geometricExpMinusOne() uint64 {
	var v uint64
	for r.bernoulliExpMinusOne() {
		v++
	}
	return v
}

// dyadic is a positive float64 split exactly as m·2^e with m odd.
type dyadic struct {
	m uint64
	e int
}

// splitFloat returns x = m·2^e exactly, m odd, for finite x > 0.
func splitFloat(x float64) dyadic {
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac ∈ [0.5, 1)
	m := uint64(math.Ldexp(frac, 53))
	e := exp - 53
	tz := bits.TrailingZeros64(m)
	return dyadic{m >> tz, e + tz}
}

// laplaceParams is the rational scale t = n/(d·2^shift) of a discrete
// Laplace distribution, n, d ≥ 1.
type laplaceParams struct {
	n, d  uint64
	shift uint
}

// laplaceFromFloat converts a float64 scale exactly; t must be finite, > 0
// and at most MaxDiscreteScale.
func laplaceFromFloat(t float64) laplaceParams {
	s := splitFloat(t)
	if s.e >= 0 {
		return laplaceParams{n: s.m << uint(s.e), d: 1}
	}
	return laplaceParams{n: s.m, d: 1, shift: uint(-s.e)}
}

// discreteLaplace returns Z with P(Z = z) ∝ exp(−|z|/t), t = n/(d·2^shift)
// (CKS Algorithm 2, with their t = n and s = d·2^shift).
//
// Proof sketch: U is uniform on [0, n) and kept with probability
// exp(−U/n), so P(U = u) ∝ e^{−u/n}; V is geometric with
// P(V = v) ∝ e^{−v}; X = U + n·V then has P(X = x) ∝ e^{−x/n} on x ≥ 0
// (each x has exactly one decomposition). Y = ⌊X/s⌋ sums that over blocks
// of s consecutive integers, so P(Y = y) ∝ e^{−y·s/n} = e^{−y/t}. A fair
// sign with −0 rejected gives P(Z = z) ∝ e^{−|z|/t} on all of ℤ. Each
// round is accepted with probability at least (1 − e^{−1})/2 ≈ 0.32.
// ⌊X/(d·2^shift)⌋ = ⌊⌊X/2^shift⌋/d⌋, computed exactly in 128 bits.
func (r *rng) discreteLaplace(p laplaceParams) int64 {
	for {
		u := r.uniform(p.n)
		if !r.bernoulliExpFrac(u128{0, u}, u128{0, p.n}) {
			continue
		}
		v := r.geometricExpMinusOne()
		x, ovf := u128{0, p.n}.mul64(v)
		if !ovf {
			x, ovf = x.add(u128{0, u})
		}
		if ovf {
			abort(errOutOfRange)
		}
		y := x.shr(p.shift)
		if p.d > 1 {
			y = y.div64(p.d)
		}
		if y.hi != 0 || y.lo > math.MaxInt64 {
			abort(errOutOfRange)
		}
		neg := r.bit()
		if neg && y.lo == 0 {
			continue
		}
		if neg {
			return -int64(y.lo)
		}
		return int64(y.lo)
	}
}

// gaussParams is an exact discrete Gaussian N_Z(0, σ²) for the rejection
// sampler: proposals from the discrete Laplace with integer scale t, and
// a proposal y accepted with probability exp(−γ(|y|)),
//
//	γ(a) = (a − σ²/t)²/(2σ²) = (a·mul − sub)²/den,
//
// with the integers mul, sub, den below. When all three fit (den below
// 2^127, as bernoulliRatio needs) the sampler works in 128-bit integers
// (fast); the math/big copies are built only when needed.
type gaussParams struct {
	t             uint64
	fast          bool
	mul, sub, den u128
	// bmul, bsub, bden are mul, sub, den as big integers; nil until
	// bigs is called, unless the values do not fit in 128 bits.
	bmul, bsub, bden *big.Int
}

// bigs makes sure the big-integer copies exist.
func (g *gaussParams) bigs() {
	if g.bmul == nil {
		g.bmul, g.bsub, g.bden = g.mul.big(), g.sub.big(), g.den.big()
	}
}

// gaussFromFloat builds the parameters for σ, finite, > 0 and at most
// MaxDiscreteScale.
//
// Integer σ: t = σ, so σ²/t = σ and γ(a) = (a − σ)²/(2σ²): mul = 1,
// sub = σ, den = 2σ² < 2^101. Otherwise σ = M/2^k (M odd, k ≥ 1) and
// t = ⌊σ⌋ + 1 as in CKS: σ² = M²/4^k and
// γ(a) = (a·t·4^k − M²)²/(2·M²·4^k·t²), which fits in 128 bits when M has
// at most about 24 significant bits (Calibrate rounds σ so). Any integer
// t > 0 gives an exact sampler (see discreteGaussian); t ≈ σ keeps the
// acceptance rate near 0.76 for large σ.
func gaussFromFloat(sigma float64) gaussParams {
	s := splitFloat(sigma)
	if s.e >= 0 {
		v := s.m << uint(s.e)
		den, _ := u128{0, v}.mul64(v)
		den, _ = den.shl(1)
		return gaussParams{t: v, fast: true, mul: u128{0, 1}, sub: u128{0, v}, den: den}
	}
	k := uint(-s.e)
	t := uint64(1)
	if k < 64 {
		t = s.m>>k + 1
	}
	hi, lo := bits.Mul64(s.m, s.m)
	m2 := u128{hi, lo}
	mul, o1 := u128{0, t}.shl(2 * k)
	den, o2 := m2.mul64(t)
	o3, o4, o5 := false, false, false
	if !o2 {
		den, o3 = den.mul64(t)
	}
	if !o2 && !o3 {
		den, o4 = den.shl(2*k + 1)
		o5 = den.bitLen() > 127
	}
	if o1 || o2 || o3 || o4 || o5 {
		M := new(big.Int).SetUint64(s.m)
		q := new(big.Int).Lsh(big.NewInt(1), 2*k)
		return gaussFromRational(new(big.Int).Mul(M, M), q, t)
	}
	return gaussParams{t: t, fast: true, mul: mul, sub: m2, den: den}
}

// gaussFromRational builds the parameters for σ² = p/q (p, q ≥ 1) with
// proposal scale t ≥ 1: mul = t·q, sub = p, den = 2·p·q·t², since
// (a − p/(q t))²/(2p/q) = (a·t·q − p)²/(2·p·q·t²).
func gaussFromRational(p, q *big.Int, t uint64) gaussParams {
	bt := new(big.Int).SetUint64(t)
	g := gaussParams{t: t}
	g.bmul = new(big.Int).Mul(bt, q)
	g.bsub = new(big.Int).Set(p)
	g.bden = new(big.Int).Mul(p, q)
	g.bden.Mul(g.bden, bt)
	g.bden.Mul(g.bden, bt)
	g.bden.Lsh(g.bden, 1)
	var ok1, ok2, ok3 bool
	g.mul, ok1 = u128FromBig(g.bmul)
	g.sub, ok2 = u128FromBig(g.bsub)
	g.den, ok3 = u128FromBig(g.bden)
	g.fast = ok1 && ok2 && ok3 && g.den.bitLen() <= 127
	return g
}

// gaussFromRat builds the parameters for a rational σ² > 0 with the CKS
// proposal scale t = ⌊σ⌋ + 1 = ⌊√⌊σ²⌋⌋ + 1. It returns false if t does
// not fit in a uint64.
func gaussFromRat(sigma2 *big.Rat) (gaussParams, bool) {
	fl := new(big.Int).Quo(sigma2.Num(), sigma2.Denom())
	t := new(big.Int).Sqrt(fl)
	t.Add(t, big.NewInt(1))
	if !t.IsUint64() {
		return gaussParams{}, false
	}
	return gaussFromRational(sigma2.Num(), sigma2.Denom(), t.Uint64()), true
}

// gammaNum returns (a·mul − sub)² in 128 bits, or false if it does not fit.
func (g *gaussParams) gammaNum(a uint64) (u128, bool) {
	x, ovf := g.mul.mul64(a)
	if ovf {
		return u128{}, false
	}
	if x.cmp(g.sub) >= 0 {
		x = x.sub(g.sub)
	} else {
		x = g.sub.sub(x)
	}
	if x.hi != 0 {
		return u128{}, false
	}
	hi, lo := bits.Mul64(x.lo, x.lo)
	return u128{hi, lo}, true
}

// acceptBig is the acceptance coin computed with big integers.
func (r *rng) acceptBig(g *gaussParams, a uint64) bool {
	g.bigs()
	x := r.big().x.SetUint64(a)
	x.Mul(x, g.bmul)
	x.Sub(x, g.bsub)
	x.Mul(x, x)
	return r.bernoulliExpBig(x, g.bden)
}

// discreteGaussian returns a draw from N_Z(0, σ²): P(Z = z) ∝ exp(−z²/(2σ²))
// on the integers (CKS Algorithm 3). forceBig makes every acceptance coin
// use big integers; it exists so tests can check that both arithmetic paths
// make identical decisions from identical words.
//
// Proof sketch: with a proposal Y from the discrete Laplace of scale t,
// −y²/(2σ²) + |y|/t = σ²/(2t²) − (|y| − σ²/t)²/(2σ²), so
// P(Y = y)·exp(−γ(|y|)) ∝ exp(−y²/(2σ²)): accepting with probability
// exp(−γ(|y|)) ≤ 1 leaves exactly the discrete Gaussian, for any t > 0.
// The acceptance probability per round is
// e^{−σ²/(2t²)}·Σ_y e^{−y²/(2σ²)}/Σ_y e^{−|y|/t}, about 0.76 for t ≈ σ ≫ 1.
func (r *rng) discreteGaussian(g *gaussParams, forceBig bool) int64 {
	lap := laplaceParams{n: g.t, d: 1}
	for {
		r.proposals++
		y := r.discreteLaplace(lap)
		a := uint64(y)
		if y < 0 {
			a = uint64(-y)
		}
		accept := false
		num, ok := u128{}, false
		if g.fast && !forceBig {
			num, ok = g.gammaNum(a)
		}
		if ok {
			accept = r.bernoulliExp(num, g.den)
		} else {
			accept = r.acceptBig(g, a)
		}
		if accept {
			return y
		}
	}
}
