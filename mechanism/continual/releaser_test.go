package continual

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// latticeData returns, per window t, the data part of the integer the
// releaser publishes at t (lattice units): x_t (per_window), the data sum of
// the tree block completed at t, or (Ĉx)_t/γ = Σ_s ĉ_{t−s}·x_s (sqrt, blt;
// small x only: plain int64 arithmetic).
func latticeData(p *Plan, x []int64) []int64 {
	out := make([]int64, len(x))
	for t := range x {
		switch p.method {
		case PerWindow:
			out[t] = x[t]
		case Tree:
			size := 1 << bitsTrailingZeros(t+1)
			for s := t + 1 - size; s <= t; s++ {
				out[t] += x[s]
			}
		default:
			for s := 0; s <= t; s++ {
				out[t] += p.cInt[t-s] * x[s]
			}
		}
	}
	return out
}

func bitsTrailingZeros(v int) int {
	n := 0
	for v&1 == 0 {
		v >>= 1
		n++
	}
	return n
}

// feed runs a fresh releaser of p on (x, z) and returns the totals.
func feed(t *testing.T, p *Plan, x, z []int64) []float64 {
	t.Helper()
	r, err := NewReleaser(p)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(x))
	for i := range x {
		if out[i], err = r.Next(x[i], z[i]); err != nil {
			t.Fatalf("%s window %d: %v", p.method, i, err)
		}
	}
	return out
}

// TestReleaserIsTheFactorization: the released totals equal
// B̂·(Ĉx + γz) of the dense factorization (built independently), the z of
// a row of C being the one of the window that completes it; every window
// takes exactly one z; the horizon is enforced.
func TestReleaserIsTheFactorization(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range Methods {
		for n := 1; n <= 16; n++ {
			p, _ := NewPlan(m, n, 1, 1)
			c, b, drawOf := dense(t, p)
			x, z := make([]int64, n), make([]int64, n)
			for i := range x {
				x[i] = rng.Int64N(5)
				z[i] = rng.Int64N(1<<30) - 1<<29
			}
			got := feed(t, p, x, z)
			for i := 0; i < n; i++ {
				var want float64
				for row, w := range drawOf {
					var cx float64
					for j := range x {
						cx += c[row][j] * float64(x[j])
					}
					want += b[i][row] * (cx + p.Grid()*float64(z[w]))
				}
				if math.Abs(got[i]-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("%s T=%d window %d: released %v, want B̂·(Ĉx+γz) = %v", m, n, i, got[i], want)
				}
			}
			r, _ := NewReleaser(p)
			for i := 0; i < n; i++ {
				r.Next(x[i], z[i])
			}
			if r.Step() != n {
				t.Errorf("%s T=%d: Step %d after %d windows", m, n, r.Step(), n)
			}
			if _, err := r.Next(1, 0); err == nil {
				t.Errorf("%s T=%d: release past the horizon", m, n)
			}
		}
	}
}

// TestReplay: random (x, z) sequences fed twice give bit-identical totals,
// and a releaser resumed by replaying the first s logged pairs, then
// continued, publishes exactly what the uninterrupted one did, for every s.
func TestReplay(t *testing.T) {
	const n = 37
	rng := rand.New(rand.NewPCG(3, 4))
	x, z := make([]int64, n), make([]int64, n)
	for i := range x {
		x[i] = rng.Int64N(1 << 20)
		z[i] = rng.Int64N(1<<40) - 1<<39
	}
	for _, m := range Methods {
		p, _ := NewPlan(m, n, 1, 1)
		want := feed(t, p, x, z)
		again := feed(t, p, x, z)
		for i := range want {
			if math.Float64bits(want[i]) != math.Float64bits(again[i]) {
				t.Fatalf("%s window %d: %v then %v", m, i, want[i], again[i])
			}
		}
		for stop := 0; stop <= n; stop++ {
			r, _ := NewReleaser(p) // the restarted process
			for i := 0; i < stop; i++ {
				got, err := r.Next(x[i], z[i])
				if err != nil || math.Float64bits(got) != math.Float64bits(want[i]) {
					t.Fatalf("%s replay to %d, window %d: %v, %v; published %v", m, stop, i, got, err, want[i])
				}
			}
			for i := stop; i < n; i++ {
				got, err := r.Next(x[i], z[i])
				if err != nil || math.Float64bits(got) != math.Float64bits(want[i]) {
					t.Fatalf("%s resumed at %d, window %d: %v, %v; want %v", m, stop, i, got, err, want[i])
				}
			}
		}
	}
}

// TestTotalsArePostProcessing: two different (x, z) with the same
// released integers w give bit-identical totals: the totals are a
// function of w alone.
func TestTotalsArePostProcessing(t *testing.T) {
	const n = 40
	rng := rand.New(rand.NewPCG(5, 6))
	for _, m := range Methods {
		p, _ := NewPlan(m, n, 1, 1)
		x, x2, z := make([]int64, n), make([]int64, n), make([]int64, n)
		for i := range x {
			x[i], x2[i] = rng.Int64N(100), rng.Int64N(100)
			z[i] = rng.Int64N(1<<34) - 1<<33
		}
		d, d2 := latticeData(p, x), latticeData(p, x2)
		z2 := make([]int64, n)
		for i := range z2 {
			z2[i] = d[i] + z[i] - d2[i] // same w
		}
		a, b := feed(t, p, x, z), feed(t, p, x2, z2)
		same := true
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Fatalf("%s window %d: %v vs %v with equal w", m, i, a[i], b[i])
			}
			same = same && x[i] == x2[i]
		}
		if same {
			t.Fatal("test data: x and x' coincide")
		}
	}
}

// bigOf returns a as a big.Int.
func bigOf(a int128) *big.Int {
	v := new(big.Int).Lsh(new(big.Int).SetUint64(a.hi), 64)
	v.Or(v, new(big.Int).SetUint64(a.lo))
	if int64(a.hi) < 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	return v
}

// roundBig returns v correctly rounded to float64 (nearest, ties to even).
func roundBig(v *big.Int) float64 {
	f, _ := new(big.Float).SetInt(v).Float64()
	return f
}

// extremeInt64 returns an int64 spread over the whole range: often an end
// (±2^63), often near one, otherwise uniform with a random bit length.
func extremeInt64(rng *rand.Rand) int64 {
	switch rng.IntN(4) {
	case 0:
		return []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}[rng.IntN(4)]
	case 1:
		return math.MaxInt64 - rng.Int64N(1<<20)
	case 2:
		return math.MinInt64 + rng.Int64N(1<<20)
	default:
		v := int64(rng.Uint64() >> rng.IntN(64))
		if rng.IntN(2) == 0 {
			v = -v
		}
		return v
	}
}

// TestLatticeExact: for any int64 x and z — here near ±2^63, where every
// sum leaves int64 — every method releases the exact integer w
// (x + z; a tree block's Σx + z; Σ_s ĉ_{t−s}·x_s + z for sqrt and blt,
// checked with math/big), per_window and tree publish the exact integer
// total correctly rounded to float64, and sqrt and blt publish
// Σ_s bTilde_{t−s}·float64(w_s) with each float64(w_s) correctly rounded
// from the exact w_s; grid coefficients are exact; the only error left is
// the exhausted horizon, which changes nothing.
func TestLatticeExact(t *testing.T) {
	const n = 64
	rng := rand.New(rand.NewPCG(7, 8))
	for _, m := range Methods {
		p, _ := NewPlan(m, n, 1, 1)
		for i, v := range p.coef {
			if v != float64(p.cInt[i])*p.Grid() || v != math.Round(v/p.Grid())*p.Grid() {
				t.Fatalf("%s: coefficient %d = %v is not on the grid", m, i, v)
			}
		}
		for _, mix := range []string{"extreme", "small"} {
			r, _ := NewReleaser(p)
			var xs, ws []*big.Int
			for i := 0; i < n; i++ {
				x, z := extremeInt64(rng), extremeInt64(rng)
				if mix == "small" {
					x, z = rng.Int64N(1<<20), rng.Int64N(1<<40)-1<<39
				}
				got, err := r.Next(x, z)
				if err != nil {
					t.Fatalf("%s %s window %d (x = %d, z = %d): %v", m, mix, i, x, z, err)
				}
				xs = append(xs, big.NewInt(x))
				// The exact w and total.
				w := big.NewInt(z)
				switch m {
				case PerWindow:
					w.Add(w, xs[i])
				case Tree:
					for s := i + 1 - 1<<bitsTrailingZeros(i+1); s <= i; s++ {
						w.Add(w, xs[s])
					}
				default:
					for s := 0; s <= i; s++ {
						w.Add(w, new(big.Int).Mul(big.NewInt(p.cInt[i-s]), xs[s]))
					}
				}
				if bigOf(r.last).Cmp(w) != 0 {
					t.Fatalf("%s %s window %d: w = %v, exact %v", m, mix, i, bigOf(r.last), w)
				}
				ws = append(ws, w)
				var want float64
				switch m {
				case PerWindow:
					tot := new(big.Int)
					for _, v := range ws {
						tot.Add(tot, v)
					}
					want = roundBig(tot)
				case Tree:
					// The blocks of the decomposition of i+1, last first.
					tot := new(big.Int)
					for s := i; s >= 0; s -= 1 << bitsTrailingZeros(s+1) {
						tot.Add(tot, ws[s])
					}
					want = roundBig(tot)
				default:
					if r.ws[i] != roundBig(w) {
						t.Fatalf("%s %s window %d: float64(w) = %v, correctly rounded %v", m, mix, i, r.ws[i], roundBig(w))
					}
					want = float64(p.bTilde[0] * roundBig(ws[i]))
					for s := 0; s < i; s++ {
						want += float64(p.bTilde[i-s] * roundBig(ws[s]))
					}
				}
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%s %s window %d: total %v, want %v", m, mix, i, got, want)
				}
				if mix == "small" && m != Sqrt && m != BLT && got != math.Trunc(got) {
					t.Fatalf("%s window %d: total %v, want an integer", m, i, got)
				}
			}
			if got, err := r.Next(1, 0); err == nil || r.Step() != n {
				t.Errorf("%s: past the horizon: %v, %v, Step %d", m, got, err, r.Step())
			}
		}
	}
	if _, err := NewReleaser(nil); err == nil {
		t.Error("nil plan accepted")
	}
}

// TestNoOverflowAtTheLimits: the largest sums the ranges allow — every
// window's x and z at −2^63 (or 2^63 − 1), for the whole of the largest
// horizon each method takes — are released exactly: per_window and tree
// at 2^20 windows, sqrt at 2^15 (blt's 8192 is below sqrt's and its
// coefficients obey the same 2^25 bound). Skipped in -short mode.
func TestNoOverflowAtTheLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("full horizons at the limits")
	}
	for _, tc := range []struct {
		m    Method
		n    int
		x, z int64
	}{
		{PerWindow, maxHorizon, math.MaxInt64, math.MaxInt64},
		{PerWindow, maxHorizon, math.MinInt64, math.MinInt64},
		{Tree, maxHorizon, math.MinInt64, math.MinInt64},
		{Sqrt, maxFactorHorizon, math.MinInt64, math.MinInt64},
	} {
		p, err := NewPlan(tc.m, tc.n, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := NewReleaser(p)
		var got float64
		for i := 0; i < tc.n; i++ {
			if got, err = r.Next(tc.x, tc.z); err != nil {
				t.Fatalf("%s T=%d window %d: %v", tc.m, tc.n, i, err)
			}
		}
		// The last window's w and total, exactly.
		x, z := big.NewInt(tc.x), big.NewInt(tc.z)
		w, tot := new(big.Int), new(big.Int)
		switch tc.m {
		case PerWindow:
			w.Add(x, z)
			tot.Mul(w, big.NewInt(int64(tc.n)))
		case Tree:
			// T = 2^20: the last window completes the root block.
			w.Mul(x, big.NewInt(int64(tc.n)))
			w.Add(w, z)
			tot.Set(w)
		default:
			var sc int64
			for _, c := range p.cInt {
				sc += c
			}
			w.Mul(x, big.NewInt(sc))
			w.Add(w, z)
		}
		if bigOf(r.last).Cmp(w) != 0 {
			t.Errorf("%s T=%d: last w = %v, exact %v", tc.m, tc.n, bigOf(r.last), w)
		}
		if tc.m != Sqrt && got != roundBig(tot) {
			t.Errorf("%s T=%d: last total %v, exact %v", tc.m, tc.n, got, roundBig(tot))
		}
		// sqrt: the total is A·x up to the noise (γ·z = −2^39 a window,
		// times ‖B̂_t‖₁ < 2^10) and float rounding: relative 1e-6 is loose.
		if sum := float64(tc.n) * float64(tc.x); tc.m == Sqrt && !(math.Abs(got-sum) <= 1e-6*math.Abs(sum)) {
			t.Errorf("%s T=%d: last total %v, running sum of x %v", tc.m, tc.n, got, sum)
		}
		t.Logf("%s T=%d x=z=%d: last w = %v (%d bits), total %.6g", tc.m, tc.n, tc.x, w, w.BitLen(), got)
	}
}

// TestInt128Float64: int128's float64 conversion is correctly rounded
// (nearest, ties to even) against math/big, at the edges (around ±2^63,
// ±2^64, ±2^127, exact halfway cases with and without lower bits) and at
// random values of every bit length.
func TestInt128Float64(t *testing.T) {
	cases := []int128{
		{}, i128(1), i128(-1), i128(math.MaxInt64), i128(math.MinInt64),
		{hi: 0, lo: math.MaxUint64},                 // 2^64 − 1
		{hi: 1, lo: 0},                              // 2^64
		{hi: math.MaxUint64, lo: 0},                 // −2^64
		{hi: math.MaxUint64, lo: 1},                 // −2^64 + 1
		{hi: 1, lo: 1 << 11},                        // 2^64 + half an ulp (ulp 2^12): tie to even, down
		{hi: 1, lo: 3 << 11},                        // 2^64 + 1.5 ulp: tie to even, up
		{hi: 1, lo: 1<<11 + 1},                      // just above the tie: up
		{hi: 1, lo: 1<<11 - 1},                      // just below: down
		{hi: 1<<63 - 1, lo: math.MaxUint64},         // 2^127 − 1: rounds to 2^127
		{hi: 1 << 63, lo: 0},                        // −2^127
		{hi: 1<<53 - 1, lo: 1 << 63},                // 2^117 − 2^64 + 2^63: a tie carried from the low word
		{hi: 1<<53 - 1, lo: 1<<63 | 1},              // the same plus one: up
		{hi: 1 << 52, lo: 1},                        // 2^116 + 1: the sticky bit alone, down
		{hi: (1<<53 - 1) << 10, lo: math.MaxUint64}, // 127 ones: rounds up to 2^127
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 20000; i++ {
		b := rng.IntN(128)
		a := int128{hi: rng.Uint64(), lo: rng.Uint64()}
		if b < 64 {
			a.hi, a.lo = 0, a.lo>>(63-b)
		} else {
			a.hi >>= 127 - b
		}
		if rng.IntN(2) == 0 {
			a = a.neg()
		}
		cases = append(cases, a)
	}
	for _, a := range cases {
		want := roundBig(bigOf(a))
		if got := a.float64(); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%v (%#x %#x): %v, correctly rounded %v", bigOf(a), a.hi, a.lo, got, want)
		}
	}
	if s := i128(-5).add(i128(3)).mulAdd(-4, math.MinInt64); bigOf(s).String() != "36893488147419103230" {
		t.Errorf("−5 + 3 + (−4)·(−2^63) = %v", bigOf(s))
	}
}

// TestFingerprint: equal plans share a fingerprint; another horizon or
// method does not.
func TestFingerprint(t *testing.T) {
	a, _ := NewPlan(BLT, 32, 1, 1)
	b, _ := NewPlan(BLT, 32, 2, 5)
	c, _ := NewPlan(BLT, 33, 1, 1)
	d, _ := NewPlan(Sqrt, 32, 1, 1)
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("same factor, different fingerprints")
	}
	if a.Fingerprint() == c.Fingerprint() || a.Fingerprint() == d.Fingerprint() {
		t.Error("different factors share a fingerprint")
	}
}
