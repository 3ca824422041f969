package continual

import (
	"math"
	"math/bits"
	"strings"
	"testing"
)

// dense returns the plan's C (rows × T) and B (T × rows) as dense matrices,
// built independently of the plan's fast paths, and for each row of C the
// window whose release draws its noise.
func dense(t *testing.T, p *Plan) (c, b [][]float64, drawOf []int) {
	t.Helper()
	n := p.t
	mat := func(r, k int) [][]float64 {
		m := make([][]float64, r)
		for i := range m {
			m[i] = make([]float64, k)
		}
		return m
	}
	switch p.method {
	case PerWindow:
		c, b = mat(n, n), mat(n, n)
		for i := 0; i < n; i++ {
			c[i][i] = 1
			drawOf = append(drawOf, i)
			for j := 0; j <= i; j++ {
				b[i][j] = 1
			}
		}
	case Sqrt, BLT:
		// Ĉ from the closed form (sqrt) or the fitted BLT, rounded to the
		// grid; B̂ = A·Ĉ⁻¹ by dense forward substitution.
		var cc []float64
		if p.method == BLT {
			_, cc = bltCoefficients(p.blt, n)
		} else {
			cc = make([]float64, n)
			for m := range cc {
				v := 1.0
				for i := 1; i <= m; i++ { // binom(2m, m)/4^m
					v *= float64(2*i-1) / float64(2*i)
				}
				cc[m] = v
			}
		}
		c, b = mat(n, n), mat(n, n)
		for i := 0; i < n; i++ {
			drawOf = append(drawOf, i)
			for j := 0; j <= i; j++ {
				c[i][j] = math.Round(cc[i-j]*(1<<fixedBits)) / (1 << fixedBits)
			}
		}
		inv := mat(n, n) // Ĉ⁻¹, column by column
		for j := 0; j < n; j++ {
			for i := j; i < n; i++ {
				v := 0.0
				if i == j {
					v = 1
				}
				for m := j; m < i; m++ {
					v -= c[i][m] * inv[m][j]
				}
				inv[i][j] = v / c[i][i]
			}
		}
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				for m := j; m <= i; m++ {
					b[i][j] += inv[m][j]
				}
			}
		}
	case Tree:
		type block struct{ h, start int }
		var rows []block
		index := map[block]int{}
		for h := 0; 1<<h <= n; h++ {
			for s := 0; s+1<<h <= n; s += 2 << h {
				index[block{h, s}] = len(rows)
				rows = append(rows, block{h, s})
			}
		}
		c, b = mat(len(rows), n), mat(n, len(rows))
		for r, bl := range rows {
			drawOf = append(drawOf, bl.start+1<<bl.h-1)
			for j := bl.start; j < bl.start+1<<bl.h; j++ {
				c[r][j] = 1
			}
		}
		for i := 0; i < n; i++ {
			start := 0
			for h := bits.Len(uint(i+1)) - 1; h >= 0; h-- {
				if (i+1)>>h&1 == 1 {
					r, ok := index[block{h, start}]
					if !ok {
						t.Fatalf("T=%d: prefix %d uses block (%d,%d) that is not a row of C", n, i, h, start)
					}
					b[i][r] = 1
					start += 1 << h
				}
			}
		}
	}
	return c, b, drawOf
}

func TestFactorizationSmall(t *testing.T) {
	for _, m := range Methods {
		for n := 1; n <= 16; n++ {
			p, err := NewPlan(m, n, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			c, b, _ := dense(t, p)
			// B·C = A.
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					var s float64
					for r := range c {
						s += b[i][r] * c[r][j]
					}
					want := 0.0
					if j <= i {
						want = 1
					}
					if math.Abs(s-want) > 1e-12 {
						t.Fatalf("%s T=%d: (BC)[%d][%d] = %v, want %v", m, n, i, j, s, want)
					}
				}
			}
			// Row norms of B, column norms, C·v and G = CᵀC agree with the fast paths.
			g := p.gram()
			v := make([]float64, n)
			for j := range v {
				v[j] = float64(j*j%7) - 2
			}
			cv := p.applyC(v)
			if len(cv) != len(c) {
				t.Fatalf("%s T=%d: applyC has %d rows, C has %d", m, n, len(cv), len(c))
			}
			for r := range c {
				var s float64
				for j := range v {
					s += c[r][j] * v[j]
				}
				if math.Abs(s-cv[r]) > 1e-9 {
					t.Fatalf("%s T=%d: (Cv)[%d] = %v, fast path %v", m, n, r, s, cv[r])
				}
			}
			for i := 0; i < n; i++ {
				if got, want := p.rowNormSq(i), sumSq(b[i]); math.Abs(got-want) > 1e-12 {
					t.Fatalf("%s T=%d: ‖B_%d‖² = %v, want %v", m, n, i, got, want)
				}
				for j := 0; j < n; j++ {
					var s float64
					for r := range c {
						s += c[r][i] * c[r][j]
					}
					if math.Abs(s-g[i][j]) > 1e-12 {
						t.Fatalf("%s T=%d: G[%d][%d] = %v, want %v", m, n, i, j, g[i][j], s)
					}
				}
				if math.Abs(p.colNormSq(i)-g[i][i]) > 1e-12 {
					t.Fatalf("%s T=%d: column norm² %d = %v, want %v", m, n, i, p.colNormSq(i), g[i][i])
				}
			}
		}
	}
}

// bruteSensitivity returns max ‖C·d‖ over d ∈ {0, …, L}^T with at most k
// nonzero entries, by enumeration.
func bruteSensitivity(c [][]float64, n, k, l int) float64 {
	d := make([]int, n)
	best := 0.0
	for {
		nz := 0
		for _, v := range d {
			if v != 0 {
				nz++
			}
		}
		if nz <= k {
			var s float64
			for r := range c {
				var x float64
				for j, v := range d {
					x += c[r][j] * float64(v)
				}
				s += x * x
			}
			best = math.Max(best, s)
		}
		i := 0
		for i < n && d[i] == l {
			d[i] = 0
			i++
		}
		if i == n {
			return math.Sqrt(best)
		}
		d[i]++
	}
}

func TestSensitivityBruteForce(t *testing.T) {
	cases := []struct{ n, l int }{{1, 1}, {2, 2}, {3, 2}, {4, 2}, {5, 2}, {6, 2}, {7, 1}, {8, 2}, {11, 1}, {12, 1}}
	for _, m := range Methods {
		for _, tc := range cases {
			for k := 1; k <= tc.n; k++ {
				p, err := NewPlan(m, tc.n, k, int64(tc.l))
				if err != nil {
					t.Fatal(err)
				}
				c, _, _ := dense(t, p)
				want := bruteSensitivity(c, tc.n, k, tc.l)
				if !p.SensitivityExact() || math.Abs(p.Sensitivity()-want) > 1e-9*want {
					t.Errorf("%s T=%d k=%d L=%d: Δ = %v (exact %v), brute force %v", m, tc.n, k, tc.l, p.Sensitivity(), p.SensitivityExact(), want)
				}
				// The bounds used when enumeration is too costly bracket it.
				if k > 1 && k < tc.n {
					g := p.gram()
					lo := float64(tc.l) * math.Sqrt(greedyPattern(g, k))
					hi := float64(tc.l) * math.Sqrt(patternUpperBound(g, k))
					if lo > want*(1+1e-12) || hi < want*(1-1e-12) {
						t.Errorf("%s T=%d k=%d: bounds [%v, %v] miss %v", m, tc.n, k, lo, hi, want)
					}
				}
			}
		}
	}
}

// TestSensitivityLargeK checks the bound path on horizons too long to
// enumerate: lower ≤ upper, and the plan says it is a bound.
func TestSensitivityLargeK(t *testing.T) {
	for _, m := range Methods {
		for _, tc := range []struct{ n, k int }{{64, 4}, {1024, 8}} {
			p, err := NewPlan(m, tc.n, tc.k, 1)
			if err != nil {
				t.Fatal(err)
			}
			if p.SensitivityLowerBound() > p.Sensitivity()*(1+1e-12) {
				t.Errorf("%s T=%d k=%d: lower bound %v above %v", m, tc.n, tc.k, p.SensitivityLowerBound(), p.Sensitivity())
			}
			if p.SensitivityExact() != (p.SensitivityLowerBound() >= p.Sensitivity()*(1-1e-12)) {
				t.Errorf("%s T=%d k=%d: exact = %v with Δ ∈ [%v, %v]", m, tc.n, tc.k, p.SensitivityExact(), p.SensitivityLowerBound(), p.Sensitivity())
			}
			t.Logf("%s T=%d k=%d: Δ ∈ [%.4f, %.4f]", m, tc.n, tc.k, p.SensitivityLowerBound(), p.Sensitivity())
		}
	}
}

func TestNewPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Method
		n, k int
		l    int64
		want string // in the message
	}{
		{"unknown method", "honaker", 8, 1, 1, "unknown method"},
		{"zero horizon", Sqrt, 0, 1, 1, "at least 1"},
		{"huge horizon", Tree, maxHorizon + 1, 1, 1, "tree supports a horizon up to 1048576 windows"},
		{"zero k", Tree, 8, 0, 1, "at least 1"},
		{"zero L", Tree, 8, 1, 0, "per-window bound"},
		// Each message names the method's own limit and every other's.
		{"blt too long", BLT, maxBLTHorizon + 1, 1, 1, "blt supports a horizon up to 8192 windows, got 8193 (per_window up to 1048576, tree up to 1048576, sqrt up to 32768, blt up to 8192)"},
		{"blt beyond sqrt", BLT, maxFactorHorizon + 1, 1, 1, "sqrt up to 32768"},
		{"sqrt too long", Sqrt, maxFactorHorizon + 1, 1, 1, "sqrt supports a horizon up to 32768 windows, got 32769"},
	} {
		_, err := NewPlan(tc.m, tc.n, tc.k, tc.l)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestAutoLongHorizons: beyond blt's (8192) and sqrt's (2^15) horizons
// Auto skips them and picks the best of the methods that serve the
// horizon — at T = 10000 among per_window, tree and sqrt, at T = 40000
// between per_window and tree — for units in one window and in every
// window; it fails only for bounds no method takes (a horizon past 2^20;
// 1 < k < T past the Gram limit, which is every method's).
func TestAutoLongHorizons(t *testing.T) {
	for _, tc := range []struct {
		n, k int
		fit  []Method
		want Method
	}{
		{10000, 1, []Method{PerWindow, Tree, Sqrt}, Sqrt},
		{10000, 10000, []Method{PerWindow, Tree, Sqrt}, PerWindow},
		{40000, 1, []Method{PerWindow, Tree}, Tree},
		{40000, 40000, []Method{PerWindow, Tree}, PerWindow},
	} {
		got, err := Auto(tc.n, tc.k, 1)
		if err != nil {
			t.Fatalf("T=%d k=%d: %v", tc.n, tc.k, err)
		}
		best, score := Method(""), math.Inf(1)
		for _, m := range tc.fit {
			p, err := NewPlan(m, tc.n, tc.k, 1)
			if err != nil {
				t.Fatalf("T=%d k=%d %s: %v", tc.n, tc.k, m, err)
			}
			v := p.Sensitivity() * p.Sensitivity() * p.maxRow
			t.Logf("T=%d k=%d %-10s Δ²·max‖B_t‖² = %.5g", tc.n, tc.k, m, v)
			if v < score {
				best, score = m, v
			}
		}
		if got.Method() != best || best != tc.want {
			t.Errorf("T=%d k=%d: auto picks %s, the best that fits is %s (expected %s)", tc.n, tc.k, got.Method(), best, tc.want)
		}
	}
	for _, tc := range []struct {
		n, k int
		want string
	}{
		{maxHorizon + 1, 1, "no method supports a horizon of 1048577 windows (per_window up to 1048576, tree up to 1048576, sqrt up to 32768, blt up to 8192)"},
		{0, 1, "at least 1"},
	} {
		if _, err := Auto(tc.n, tc.k, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Auto(%d, %d): error %v, want one containing %q", tc.n, tc.k, err, tc.want)
		}
	}
}

// TestClosedForms checks the formulas the package documentation states at
// T = 1024: sqrt's ‖B_t‖² and column norm below 1 + (1 + ln T)/π, tree's
// popcount and levels.
func TestClosedForms(t *testing.T) {
	const n = 1024
	sq, _ := NewPlan(Sqrt, n, 1, 1)
	bound := 1 + (1+math.Log(n))/math.Pi
	if sq.maxRow > bound || sq.Sensitivity()*sq.Sensitivity() > bound {
		t.Errorf("sqrt: max ‖B_t‖² = %v, Δ² = %v, want ≤ %v", sq.maxRow, sq.Sensitivity()*sq.Sensitivity(), bound)
	}
	tr, _ := NewPlan(Tree, n, 1, 1)
	if tr.maxRow != 10 || tr.Sensitivity() != math.Sqrt(11) {
		t.Errorf("tree: max ‖B_t‖² = %v, Δ = %v, want 10 and √11", tr.maxRow, tr.Sensitivity())
	}
	pw, _ := NewPlan(PerWindow, n, n, 3)
	if pw.maxRow != n || pw.Sensitivity() != 3*math.Sqrt(n) {
		t.Errorf("per_window k=T: max ‖B_t‖² = %v, Δ = %v", pw.maxRow, pw.Sensitivity())
	}
}

// TestBLTNearSqrt: the fitted three-buffer BLT is within 1% of sqrt's
// max variance at T = 1024, k = 1 (Dvijotham et al. report "within a few
// percent"), with a state of 4 numbers instead of T, and its C is
// nonnegative so every k is supported.
func TestBLTNearSqrt(t *testing.T) {
	const n = 1024
	sq, _ := NewPlan(Sqrt, n, 1, 1)
	bl, err := NewPlan(BLT, n, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	ratio := bl.MaxVariance(bl.Sensitivity()) / sq.MaxVariance(sq.Sensitivity())
	t.Logf("blt/sqrt max variance at equal ρ: %.5f (ω %v, λ %v)", ratio, bl.blt.omega, bl.blt.lambda)
	if ratio > 1.01 || ratio < 0.9 {
		t.Errorf("blt/sqrt = %v, want within 1%% (and not far below the near-optimal sqrt)", ratio)
	}
	for i, v := range bl.coef {
		if v < 0 {
			t.Fatalf("c_%d = %v < 0", i, v)
		}
	}
}

// TestIncrementVariance checks IncrementVariance against the dense B̂:
// the increment total_t − total_{t−1} is (B̂_t − B̂_{t−1})·w.
func TestIncrementVariance(t *testing.T) {
	for _, m := range Methods {
		for _, horizon := range []int{1, 7, 16, 33} {
			p, err := NewPlan(m, horizon, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			_, b, _ := dense(t, p)
			for row := range horizon {
				var want float64
				for j := range b[row] {
					d := b[row][j]
					if row > 0 {
						d -= b[row-1][j]
					}
					want += d * d
				}
				if got := p.IncrementVariance(row, 1); math.Abs(got-want) > 1e-9*max(1, want) {
					t.Errorf("%s T=%d t=%d: increment variance %v, dense %v", m, horizon, row, got, want)
				}
			}
		}
	}
}

// TestVarianceFrom checks VarianceFrom and IncrementVarianceFrom against
// a releaser that skips its first steps (x = 0, z = 0) and then draws unit
// noise: the totals' and increments' variances are those of the B̂ rows
// restricted to the noisy steps, computed from the dense B̂.
func TestVarianceFrom(t *testing.T) {
	for _, m := range Methods {
		horizon := 13
		p, err := NewPlan(m, horizon, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		_, b, drawOf := dense(t, p)
		for first := 0; first < horizon; first++ {
			for row := first; row < horizon; row++ {
				var tot, inc float64
				for j := range b[row] {
					if drawOf[j] < first {
						continue // drawn at a skipped step: no noise
					}
					tot += b[row][j] * b[row][j]
					d := b[row][j]
					if row > first {
						d -= b[row-1][j]
					}
					inc += d * d
				}
				if got := p.VarianceFrom(first, row, 1); math.Abs(got-tot) > 1e-9*max(1, tot) {
					t.Errorf("%s first=%d t=%d: variance %v, dense %v", m, first, row, got, tot)
				}
				if got := p.IncrementVarianceFrom(first, row, 1); math.Abs(got-inc) > 1e-9*max(1, inc) {
					t.Errorf("%s first=%d t=%d: increment variance %v, dense %v", m, first, row, got, inc)
				}
			}
		}
	}
}

// TestLongHorizonPartialParticipation: beyond the Gram matrix's horizon,
// 1 < k < T gets an upper bound (exact for per_window, √k): never below
// the k = 1 sensitivity nor above the k = T one, and at most k times the
// k = 1 one.
func TestLongHorizonPartialParticipation(t *testing.T) {
	const horizon, k = 4096, 3
	for _, m := range []Method{PerWindow, Tree, Sqrt} {
		p, err := NewPlan(m, horizon, k, 2)
		if err != nil {
			t.Fatal(err)
		}
		one, err := NewPlan(m, horizon, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		all, err := NewPlan(m, horizon, horizon, 2)
		if err != nil {
			t.Fatal(err)
		}
		s := p.Sensitivity()
		if s < one.Sensitivity() || s > all.Sensitivity()*(1+1e-9) || s > float64(k)*one.Sensitivity()*(1+1e-9) {
			t.Errorf("%s: Δ = %v outside [Δ(k=1) = %v, min(k·Δ(k=1), Δ(k=T) = %v)]", m, s, one.Sensitivity(), all.Sensitivity())
		}
		if m == PerWindow && (s != 2*math.Sqrt(k) || !p.SensitivityExact()) {
			t.Errorf("per_window: Δ = %v (exact %v), want 2√3 exactly", s, p.SensitivityExact())
		}
		if p.SensitivityLowerBound() > s {
			t.Errorf("%s: lower bound %v above Δ %v", m, p.SensitivityLowerBound(), s)
		}
	}
}
