package noise

import (
	"math/big"
)

// Coin is an exact Bernoulli(p) coin for a float64 p in (0, 1], as the
// local randomizers need: p = num/2^shift (num odd) is decomposed exactly
// and Flip compares random bits against that rational (bernoulliRatio), so
// the coin lands heads with probability exactly p.
//
// The rational is held in 128 bits when shift ≤ 126 (bernoulliRatio needs
// the denominator below 2^127) and as big integers otherwise (only for
// p < 2^−74 whose binary expansion reaches past 2^−126). always is p == 1.
// The zero Coin never lands heads.
type Coin struct {
	always     bool
	num, den   u128
	bnum, bden *big.Int
}

// NewCoin returns the exact coin with probability p. The caller checks that
// p is in (0, 1].
func NewCoin(p float64) Coin {
	var c Coin
	if p == 1 {
		c.always = true
		return c
	}
	// p < 1, so p = m·2^e with m odd and e < 0: num = m, shift = −e.
	s := splitFloat(p)
	shift := uint(-s.e)
	if shift <= 126 {
		c.num = u128{0, s.m}
		c.den, _ = u128{0, 1}.shl(shift)
	} else {
		c.bnum = new(big.Int).SetUint64(s.m)
		c.bden = new(big.Int).Lsh(big.NewInt(1), shift)
	}
	return c
}

// Rand draws exact coins and uniform integers from a Source during one call
// of Draw. It shares the samplers' bit buffer and word budget, so a stuck
// Source ends the call with ErrSourceStuck instead of a hang.
type Rand struct{ r rng }

// Draw calls f with a Rand reading src, and returns the error that stopped
// a draw inside f (a Source that looks stuck), or nil.
func Draw(src Source, f func(r *Rand)) (err error) {
	defer catch(&err)
	r := Rand{rng{src: src}}
	f(&r)
	return nil
}

// Flip returns true with probability exactly c's p (exact.go's
// bernoulliRatio on p = num/2^shift).
func (r *Rand) Flip(c Coin) bool {
	switch {
	case c.always:
		return true
	case c.bnum != nil:
		return r.r.bernoulliRatioBig(c.bnum, c.bden)
	}
	return r.r.bernoulliRatio(c.num, c.den)
}

// Uniform returns a uniform integer in [0, n), n ≥ 1, without modulo bias
// (exact.go's uniform).
func (r *Rand) Uniform(n uint64) uint64 { return r.r.uniform(n) }
