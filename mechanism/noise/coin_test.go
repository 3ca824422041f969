package noise

import (
	"math"
	"testing"

	"github.com/dpstream/dpstream/mechanism/internal/stattest"
)

// TestCoinBigPath checks that the math/big coin (used when p's binary
// expansion reaches past 2^−126) decides exactly like the 128-bit one on
// the same random bits, by forcing it for an ordinary p, followed by a
// uniform draw from the same Rand as randomized response does; and that
// tiny p take that path.
func TestCoinBigPath(t *testing.T) {
	c := NewCoin(6 / (math.Exp(1.5) + 5))
	forced := c
	forced.bnum, forced.bden = c.num.big(), c.den.big()
	a, b := stattest.NewFastSource(77), stattest.NewFastSource(77)
	for i := range 5000 {
		var x, y bool
		var u, v uint64
		err1 := Draw(a, func(r *Rand) { x, u = r.Flip(c), r.Uniform(6) })
		err2 := Draw(b, func(r *Rand) { y, v = r.Flip(forced), r.Uniform(6) })
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if x != y || u != v {
			t.Fatalf("draw %d: 128-bit path gives (%v, %d), big path (%v, %d)", i, x, u, y, v)
		}
	}
	for _, p := range []float64{0x1.0000000000001p-80, 0x1p-127, 0x1p-1074} {
		if NewCoin(p).bnum == nil {
			t.Fatalf("p = %v did not take the big-integer path", p)
		}
	}
	if NewCoin(0x1p-100).bnum != nil {
		t.Error("p = 2^-100 (denominator 2^100) took the big-integer path")
	}
}
