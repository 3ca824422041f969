package aggregate

import (
	"fmt"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// MaxUnitEvents is the largest L (UnitBounds.MaxContributions) that a
// variance or quantile release accepts: 2^24 kept events per unit per
// window. It keeps every sensitivity those releases derive from the
// bounds exact in int64 and float64 (SquaredL2 ≤ L² ≤ 2^48, times a tree
// height ≤ 24 still below 2^53) while being far above any useful bound.
const MaxUnitEvents = 1 << 24

// UnitBounds are the per-window contribution bounds of one privacy unit
// that a per-key (group_by) release relies on, all enforced upstream by the
// accumulate stage without looking at values (SPEC section 0):
//
//   - L = MaxContributions: the unit keeps at most L events in the window,
//     over all keys together;
//   - L0 = MaxKeys: its kept events fall in at most L0 keys (a global,
//     ungrouped release is the case L0 = 1);
//   - c = MaxPerKey: at most c of its kept events fall in one key (0: no
//     per-key cap, c = L).
//
// Adding or removing the unit therefore changes the per-key event counts
// by a vector n ≥ 0 with n_k ≤ c' = min(c, L), Σ_k n_k ≤ L and at most L0
// non-zero entries. Events and SquaredL2 give the two norms every
// per-key sensitivity is built from.
type UnitBounds struct {
	MaxContributions int // L, in [1, MaxUnitEvents]
	MaxKeys          int // L0, at least 1
	MaxPerKey        int // c, in [0, L]; 0 means no per-key cap
}

// Validate reports the first problem with b, wrapped in
// noise.ErrInvalidSpec.
func (b UnitBounds) Validate() error {
	switch {
	case b.MaxContributions < 1 || b.MaxContributions > MaxUnitEvents:
		return fmt.Errorf("%w: max contributions per window must be in [1, %d], got %d", noise.ErrInvalidSpec, MaxUnitEvents, b.MaxContributions)
	case b.MaxKeys < 1:
		return fmt.Errorf("%w: max keys per unit must be >= 1, got %d", noise.ErrInvalidSpec, b.MaxKeys)
	case b.MaxPerKey < 0 || b.MaxPerKey > b.MaxContributions:
		return fmt.Errorf("%w: max events per key must be in [0, %d] (0: no cap; at most max contributions), got %d",
			noise.ErrInvalidSpec, b.MaxContributions, b.MaxPerKey)
	}
	return nil
}

// perKey returns c' = min(c, L), the effective per-key cap.
func (b UnitBounds) perKey() int {
	if b.MaxPerKey == 0 || b.MaxPerKey > b.MaxContributions {
		return b.MaxContributions
	}
	return b.MaxPerKey
}

// Events returns M = min(L, L0·c'), the most kept events one unit has over
// all keys: Σ_k n_k ≤ L, and at most L0 keys hold at most c' each. It is
// the L1 norm of the largest change of the per-key counts, attained by
// ⌊M/c'⌋ keys at c' and one at M mod c'. b must be valid.
func (b UnitBounds) Events() int64 {
	c := b.perKey()
	if b.MaxKeys >= (b.MaxContributions+c-1)/c { // L0·c' ≥ L, without overflow
		return int64(b.MaxContributions)
	}
	return int64(b.MaxKeys) * int64(c)
}

// SquaredL2 returns max Σ_k n_k² over the changes the bounds allow:
// ⌊M/c'⌋·c'² + (M mod c')², M = Events(). Σ n_k² is convex, so its
// maximum over the polytope {0 ≤ n_k ≤ c', Σ n_k ≤ M} is at a vertex, and
// the vertex that fills keys to c' one after the other majorizes every
// other (the same argument as for a histogram with a per-cell cap;
// binsL2Squared). At most ⌈M/c'⌉ ≤ L0 keys are used, so the L0 bound
// holds. It is at most M·c' ≤ L² ≤ 2^48. b must be valid.
func (b UnitBounds) SquaredL2() int64 {
	return binsL2Squared(int(b.Events()), b.perKey())
}
