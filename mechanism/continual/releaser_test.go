package continual

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpstream/dpstream/mechanism/noise"
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

// TestLatticeExact: the released w of sqrt and blt is the exact integer
// Σ_s ĉ_{t−s}·x_s + z_t (checked with math/big at |x| ≈ 2^33, where a
// float64 computation would round), totals of per_window and tree are
// integers, and an overflow of Ĉx, of w or of a sum is an error that
// leaves the releaser as it was.
func TestLatticeExact(t *testing.T) {
	const n = 64
	rng := rand.New(rand.NewPCG(7, 8))
	for _, m := range []Method{Sqrt, BLT} {
		p, _ := NewPlan(m, n, 1, 1)
		for i, v := range p.coef {
			if v != float64(p.cInt[i])*p.Grid() || v != math.Round(v/p.Grid())*p.Grid() {
				t.Fatalf("%s: coefficient %d = %v is not on the grid", m, i, v)
			}
		}
		r, _ := NewReleaser(p)
		var xs []*big.Int
		for i := 0; i < n; i++ {
			x := 1<<33 + rng.Int64N(1<<20)
			z := rng.Int64N(1<<40) - 1<<39
			if _, err := r.Next(x, z); err != nil {
				t.Fatalf("%s window %d: %v", m, i, err)
			}
			xs = append(xs, big.NewInt(x))
			want := big.NewInt(z)
			for s := 0; s <= i; s++ {
				want.Add(want, new(big.Int).Mul(big.NewInt(p.cInt[i-s]), xs[s]))
			}
			if !want.IsInt64() || r.ws[i] != want.Int64() {
				t.Fatalf("%s window %d: w = %d, exact %v", m, i, r.ws[i], want)
			}
		}
	}
	s := noise.New(noise.SeededSource(140))
	for _, m := range []Method{PerWindow, Tree} {
		p, _ := NewPlan(m, n, 1, 1)
		if p.Grid() != 1 {
			t.Fatalf("%s: grid %v, want 1", m, p.Grid())
		}
		sigma, _ := p.SigmaForRho(0.5)
		x := make([]int64, n)
		for i := range x {
			x[i] = 2
		}
		tot, _, err := Run(p, s, sigma, x)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range tot {
			if v != math.Trunc(v) {
				t.Fatalf("%s window %d: total %v, want an integer", m, i, v)
			}
		}
	}
	// Overflows: each is refused, the state is kept, and the releaser then
	// continues exactly like one that never saw the bad window.
	for _, tc := range []struct {
		m    Method
		x, z int64
	}{
		{Sqrt, math.MaxInt64 / (1 << 20), 0}, // Ĉx
		{BLT, math.MinInt64 / (1 << 20), 0},
		{Sqrt, 0, math.MaxInt64 - 1}, // w after a first window
		{PerWindow, math.MaxInt64, 1},
		{PerWindow, math.MaxInt64 - 5, 0}, // Σw
		{Tree, math.MaxInt64 - 5, 0},      // block sums
		{Tree, 0, math.MaxInt64 - 5},      // block w
	} {
		p, _ := NewPlan(tc.m, 8, 1, 1)
		r, _ := NewReleaser(p)
		first, err := r.Next(1<<20, 7)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(tc.x, tc.z); err == nil {
			t.Errorf("%s x=%d z=%d: no overflow error", tc.m, tc.x, tc.z)
			continue
		}
		if r.Step() != 1 {
			t.Errorf("%s: Step %d after a refused window", tc.m, r.Step())
		}
		got, err := r.Next(3, -2)
		want := feed(t, p, []int64{1 << 20, 3}, []int64{7, -2})
		if err != nil || got != want[1] || first != want[0] {
			t.Errorf("%s: after the refused window %v, %v; want %v", tc.m, got, err, want[1])
		}
	}
	if _, err := NewReleaser(nil); err == nil {
		t.Error("nil plan accepted")
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
