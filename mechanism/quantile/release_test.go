package quantile

import (
	"errors"
	"math"
	mrand "math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/internal/stattest"
	"github.com/dpstream/dpstream/mechanism/noise"
)

func bounds(l, l0, c int) aggregate.UnitBounds {
	return aggregate.UnitBounds{MaxContributions: l, MaxKeys: l0, MaxPerKey: c}
}

func spec(kind noise.Kind, eps float64, tr Tree, b aggregate.UnitBounds, ranks ...float64) Spec {
	delta := 0.0
	if kind == noise.Gaussian {
		delta = 1e-5
	}
	return Spec{Noise: kind, Epsilon: eps, Delta: delta, Tree: tr, Ranks: ranks, Bounds: b}
}

var defaultTree = Tree{Lo: 0, Hi: 100, Branching: DefaultBranching, Height: DefaultHeight}

// TestSensitivityBruteForce enumerates every contribution a unit may make
// under small bounds (L events over L0 keys, at most c per key, each in any
// leaf of a b = 2, h = 2 tree) and checks that the largest L1 and squared
// L2 norms of the change of all node counts (levels 1..h, every key) are
// exactly the h·M and h·SquaredL2 that Calibrate charges.
func TestSensitivityBruteForce(t *testing.T) {
	tr := Tree{Lo: 0, Hi: 1, Branching: 2, Height: 2}
	nLeaves := tr.Leaves()
	for l := 1; l <= 4; l++ {
		for l0 := 1; l0 <= 3; l0++ {
			for c := 0; c <= l; c++ {
				b := bounds(l, l0, c)
				cp := c
				if cp == 0 {
					cp = l
				}
				var maxL1, maxL2 int64
				// Events are (key, leaf) pairs over l0 keys; enumerate
				// multisets of up to l events as non-decreasing sequences.
				cells := l0 * nLeaves
				var rec func(start int, evs []int)
				rec = func(start int, evs []int) {
					perKey := make([]int, l0)
					for _, e := range evs {
						perKey[e/nLeaves]++
					}
					for _, n := range perKey {
						if n > cp {
							return // violates the per-key cap; so does every extension
						}
					}
					// Node changes: for each key, level and node.
					delta := map[[3]int]int64{}
					for _, e := range evs {
						key, leaf := e/nLeaves, e%nLeaves
						for level := 1; level <= tr.Height; level++ {
							delta[[3]int{key, level, leaf / tr.span(level)}]++
						}
					}
					var l1, l2 int64
					for _, d := range delta {
						l1 += d
						l2 += d * d
					}
					maxL1, maxL2 = max(maxL1, l1), max(maxL2, l2)
					if len(evs) == l {
						return
					}
					for e := start; e < cells; e++ {
						rec(e, append(evs, e))
					}
				}
				rec(0, nil)
				h := int64(tr.Height)
				if maxL1 != h*b.Events() || maxL2 != h*b.SquaredL2() {
					t.Errorf("L=%d L0=%d c=%d: brute force L1 %d, L2² %d; charged %d, %d", l, l0, c, maxL1, maxL2, h*b.Events(), h*b.SquaredL2())
				}
				lap, err := Calibrate(spec(noise.Laplace, 1, tr, b, 0.5))
				if err != nil {
					t.Fatal(err)
				}
				if got := lap.Components[0].Sensitivity; got != float64(maxL1) {
					t.Errorf("L=%d L0=%d c=%d: laplace sensitivity %v, want %d", l, l0, c, got, maxL1)
				}
				gau, err := Calibrate(spec(noise.Gaussian, 1, tr, b, 0.5))
				if err != nil {
					t.Fatal(err)
				}
				if s := gau.Components[0].Sensitivity; s*s < float64(maxL2) || math.Nextafter(s, 0)*math.Nextafter(s, 0) >= float64(maxL2) {
					t.Errorf("L=%d L0=%d c=%d: gaussian sensitivity %v, want sqrt(%d) rounded up", l, l0, c, s, maxL2)
				}
			}
		}
	}
}

// TestCalibrate checks the scales: t = h·M/ε for Laplace; for Gaussian the
// smallest σ (to 24 bits) whose zCDP conversion meets δ.
func TestCalibrate(t *testing.T) {
	for _, tc := range []struct {
		b  aggregate.UnitBounds
		tr Tree
	}{
		{bounds(1, 1, 0), defaultTree},
		{bounds(5, 1, 0), defaultTree},
		{bounds(10, 3, 2), Tree{Lo: -1, Hi: 1, Branching: 4, Height: 6}},
		{bounds(10, 30, 2), Tree{Lo: -1, Hi: 1, Branching: 4, Height: 6}},
	} {
		for _, eps := range []float64{0.1, 1, 3} {
			h := float64(tc.tr.Height)
			lap, err := Calibrate(spec(noise.Laplace, eps, tc.tr, tc.b, 0.5))
			if err != nil {
				t.Fatal(err)
			}
			c := lap.Components[0]
			if want := h * float64(tc.b.Events()) / eps; c.Scale != want || c.Noise != noise.DiscreteLaplace || c.Epsilon != eps || c.Delta != 0 {
				t.Errorf("%+v ε=%v: laplace component %+v, want scale %v", tc.b, eps, c, want)
			}
			if c.Sensitivity/c.Scale > eps*(1+1e-15) {
				t.Errorf("%+v ε=%v: charge %v > ε", tc.b, eps, c.Sensitivity/c.Scale)
			}
			gs := spec(noise.Gaussian, eps, tc.tr, tc.b, 0.5)
			gau, err := Calibrate(gs)
			if err != nil {
				t.Fatal(err)
			}
			g := gau.Components[0]
			rho := func(sigma float64) float64 { return g.Sensitivity * g.Sensitivity / (2 * sigma * sigma) }
			if d := noise.ZCDPDelta(eps, rho(g.Scale)); d > gs.Delta {
				t.Errorf("%+v ε=%v: σ=%v gives δ=%v > %v", tc.b, eps, g.Scale, d, gs.Delta)
			}
			if d := noise.ZCDPDelta(eps, rho(g.Scale*(1-1e-6))); d <= gs.Delta {
				t.Errorf("%+v ε=%v: σ=%v is not the smallest (δ=%v at 1e-6 less)", tc.b, eps, g.Scale, d)
			}
			if lap.RankBound95 <= lap.RankTypical95 || gau.RankBound95 <= gau.RankTypical95 {
				t.Errorf("bounds: laplace %v ≤ typical %v or gaussian %v ≤ %v", lap.RankBound95, lap.RankTypical95, gau.RankBound95, gau.RankTypical95)
			}
		}
	}
}

func TestCalibrateErrors(t *testing.T) {
	ok := spec(noise.Laplace, 1, defaultTree, bounds(1, 1, 0), 0.5)
	for _, tc := range []struct {
		name string
		edit func(*Spec)
	}{
		{"epsilon 0", func(s *Spec) { s.Epsilon = 0 }},
		{"laplace with delta", func(s *Spec) { s.Delta = 1e-5 }},
		{"gaussian without delta", func(s *Spec) { s.Noise = noise.Gaussian }},
		{"unknown noise", func(s *Spec) { s.Noise = "cauchy" }},
		{"bad tree", func(s *Spec) { s.Tree.Branching = 1 }},
		{"no ranks", func(s *Spec) { s.Ranks = nil }},
		{"rank above 1", func(s *Spec) { s.Ranks = []float64{0.5, 1.5} }},
		{"rank NaN", func(s *Spec) { s.Ranks = []float64{math.NaN()} }},
		{"too many ranks", func(s *Spec) { s.Ranks = make([]float64, MaxRanks+1) }},
		{"L 0", func(s *Spec) { s.Bounds.MaxContributions = 0 }},
		{"L0 0", func(s *Spec) { s.Bounds.MaxKeys = 0 }},
		{"c above L", func(s *Spec) { s.Bounds.MaxPerKey = 2 }},
		{"noise above 2^50", func(s *Spec) { s.Epsilon = 1e-20 }},
	} {
		s := ok
		s.Ranks = slices.Clone(ok.Ranks)
		tc.edit(&s)
		if _, err := Calibrate(s); !errors.Is(err, noise.ErrInvalidSpec) {
			t.Errorf("%s: Calibrate = %v, want ErrInvalidSpec", tc.name, err)
		}
	}
}

// countingSampler counts the draws of a Sampler.
type countingSampler struct {
	n     noise.Sampler
	draws int
}

func (c *countingSampler) DiscreteLaplace(t float64) (int64, error) {
	c.draws++
	return c.n.DiscreteLaplace(t)
}

func (c *countingSampler) DiscreteGaussian(s float64) (int64, error) {
	c.draws++
	return c.n.DiscreteGaussian(s)
}

// sampleCounts returns n values from draw, sorted, and their leaf
// histogram.
func sampleCounts(t *testing.T, tr Tree, n int, draw func() float64) ([]float64, Counts) {
	t.Helper()
	xs := make([]float64, n)
	leaves := make([]int, n)
	for i := range xs {
		xs[i] = math.Max(tr.Lo, math.Min(draw(), tr.Hi))
		var err error
		if leaves[i], err = tr.Leaf(xs[i]); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(xs)
	c, err := FromLeaves(leaves)
	if err != nil {
		t.Fatal(err)
	}
	return xs, c
}

// TestReleaseMonotoneAndLazy releases unsorted, repeated and extreme
// ranks: outputs are in [Lo, Hi], non-decreasing in rank and equal for
// equal ranks; the noise is drawn at most once per node (at most h·b per
// distinct search, never more than the number of nodes), and a second
// release draws afresh.
func TestReleaseMonotoneAndLazy(t *testing.T) {
	tr := Tree{Lo: -5, Hi: 5, Branching: 4, Height: 3}
	rng := mrand.New(mrand.NewPCG(3, 4))
	_, counts := sampleCounts(t, tr, 2000, func() float64 { return rng.NormFloat64() * 2 })
	ranks := []float64{0.9, 0.1, 0.5, 0.5, 0, 1, 0.25, 0.75, 0.1, 0.99, 0.01}
	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		c, err := Calibrate(spec(kind, 0.5, tr, bounds(3, 1, 0), ranks...))
		if err != nil {
			t.Fatal(err)
		}
		nodes := 0
		for level := 1; level <= tr.Height; level++ {
			nodes += tr.Leaves() / tr.span(level)
		}
		for seed := range uint64(50) {
			cs := &countingSampler{n: noise.New(noise.SeededSource(seed))}
			r, err := Release(c, counts, cs)
			if err != nil {
				t.Fatal(err)
			}
			distinct := 9 // distinct ranks
			if cs.draws > distinct*tr.Height*tr.Branching || cs.draws > nodes || cs.draws < tr.Branching {
				t.Fatalf("%s seed %d: %d draws (nodes %d)", kind, seed, cs.draws, nodes)
			}
			for i := range ranks {
				q := r.Quantiles[i]
				if q < tr.Lo || q > tr.Hi {
					t.Fatalf("%s seed %d: quantile %v outside the bounds", kind, seed, q)
				}
				for j := range ranks {
					if ranks[i] < ranks[j] && q > r.Quantiles[j] || ranks[i] == ranks[j] && q != r.Quantiles[j] {
						t.Fatalf("%s seed %d: rank %v → %v but rank %v → %v", kind, seed, ranks[i], q, ranks[j], r.Quantiles[j])
					}
				}
			}
			before := cs.draws
			if _, err := Release(c, counts, cs); err != nil || cs.draws == before {
				t.Fatalf("%s: second release drew %d (err %v)", kind, cs.draws-before, err)
			}
		}
	}
}

// TestReleaseExact checks the search and the interpolation without noise
// to speak of (ε = 10^6, so t = 4·10^-6 and every draw is 0): each
// quantile is within one leaf of a point whose rank is the requested one
// (up to the 1/n of rounding r·n to an event), and a point mass gives its
// leaf.
func TestReleaseExact(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(5, 6))
	xs, counts := sampleCounts(t, defaultTree, 5000, func() float64 { return 30 + 10*rng.ExpFloat64() })
	ranks := []float64{0, 0.01, 0.1, 0.5, 0.9, 0.999, 1}
	c, err := Calibrate(spec(noise.Laplace, 1e6, defaultTree, bounds(1, 1, 0), ranks...))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Release(c, counts, noise.New(noise.SeededSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	w := defaultTree.LeafWidth()
	for i, rank := range ranks {
		if e := rankError(xs, r.Quantiles[i], w, rank); e > 1/float64(len(xs)) {
			t.Errorf("rank %v: %v is %v off in rank (leaf width %v)", rank, r.Quantiles[i], e, w)
		}
	}
	if r.NoisyTotal != float64(len(xs)) {
		t.Errorf("noisy total %v, want %d", r.NoisyTotal, len(xs))
	}
	point, _ := FromLeaves(slices.Repeat([]int{4242}, 100))
	r, err = Release(c, point, noise.New(noise.SeededSource(2)))
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range r.Quantiles {
		if q < defaultTree.Edge(4242) || q > defaultTree.Edge(4243) {
			t.Errorf("point mass in leaf 4242: rank %v gave %v", ranks[i], q)
		}
	}
	// An empty key still releases (noise only), within the bounds.
	r, err = Release(c, nil, noise.New(noise.SeededSource(3)))
	if err != nil || len(r.Quantiles) != len(ranks) {
		t.Fatalf("empty key: %v, %v", r, err)
	}
}

// rankError returns how far q̂ is from rank r in the sense of Release's
// bound: the smallest e ≥ 0 with F(q̂ + w) ≥ r − e and F((q̂ − w)⁻) ≤ r + e,
// for the sorted sample xs.
func rankError(xs []float64, q, w, r float64) float64 {
	n := float64(len(xs))
	above := float64(sort.Search(len(xs), func(i int) bool { return xs[i] > q+w })) / n  // F(q̂ + w)
	below := float64(sort.Search(len(xs), func(i int) bool { return xs[i] >= q-w })) / n // F((q̂ − w)⁻)
	return math.Max(0, math.Max(r-above, below-r))
}

// plainRankError is |F(q̂) − r| with F(x) = #{events < x}/n, the usual
// rank error of a released quantile of continuous data.
func plainRankError(xs []float64, q, r float64) float64 {
	return math.Abs(float64(sort.SearchFloat64s(xs, q))/float64(len(xs)) - r)
}

// TestUtility releases the quantiles of 10^4 normal values at ε = 1 with
// the default tree on 200 fixed seeds: every released quantile satisfies
// the stated bound (within one leaf of a point whose rank is within
// RankBound95/n), and the median rank error is below RankTypical95/n. The
// measured errors are logged next to both.
func TestUtility(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(1, 2))
	xs, counts := sampleCounts(t, defaultTree, 10000, func() float64 { return 50 + 15*rng.NormFloat64() })
	n := float64(len(xs))
	ranks := []float64{0.1, 0.25, 0.5, 0.75, 0.9}
	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		c, err := Calibrate(spec(kind, 1, defaultTree, bounds(1, 1, 0), ranks...))
		if err != nil {
			t.Fatal(err)
		}
		var med, all []float64
		for seed := range uint64(200) {
			r, err := Release(c, counts, noise.New(noise.SeededSource(seed)))
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range r.Quantiles {
				if e := rankError(xs, q, defaultTree.LeafWidth(), ranks[i]); e > c.RankBound95/n {
					t.Errorf("%s seed %d rank %v: %v is %v off, bound %v", kind, seed, ranks[i], q, e, c.RankBound95/n)
				}
				e := plainRankError(xs, q, ranks[i])
				all = append(all, e)
				if ranks[i] == 0.5 {
					med = append(med, e)
				}
			}
		}
		slices.Sort(med)
		slices.Sort(all)
		t.Logf("%s ε=1, n=10^4, b=16, h=4 (scale %.3g): median's rank error median %.5f, p95 %.5f; all ranks median %.5f, p95 %.5f, max %.5f; typical95 %.5f, bound95 %.5f",
			kind, c.Components[0].Scale, med[len(med)/2], med[len(med)*95/100], all[len(all)/2], all[len(all)*95/100], all[len(all)-1],
			c.RankTypical95/n, c.RankBound95/n)
		if m := all[len(all)/2]; m > c.RankTypical95/n {
			t.Errorf("%s: median rank error %v above the typical figure %v", kind, m, c.RankTypical95/n)
		}
	}
}

// TestRankBoundCoverage checks the probability statement behind the
// bound. (1) RankBound's Chernoff quantile of a sum of h·b independent
// |Z| is exceeded at most 5% of the time (and is not absurdly loose). (2)
// On small, sparse and clustered data sets, where the noise dominates and
// the bound is not trivial, the released quantiles violate the rank
// statement of Release in at most 5% of releases per rank (a binomial test
// at false-failure rate 1e-6).
func TestRankBoundCoverage(t *testing.T) {
	src := noise.New(stattest.NewFastSource(11))
	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		c, err := Calibrate(spec(kind, 1, defaultTree, bounds(2, 1, 0), 0.5))
		if err != nil {
			t.Fatal(err)
		}
		comp := c.Components[0]
		const trials = 20000
		k := defaultTree.Branching * defaultTree.Height
		sums := make([]float64, trials)
		over := 0
		for i := range sums {
			for range k {
				v, err := noise.AddToCount(src, comp, 0)
				if err != nil {
					t.Fatal(err)
				}
				sums[i] += math.Abs(v)
			}
			if sums[i] > c.RankBound95 {
				over++
			}
		}
		slices.Sort(sums)
		q95 := sums[trials*95/100]
		t.Logf("%s scale %.3g: Σ of %d |Z|: empirical 95%% quantile %.1f, RankBound95 %.1f", kind, comp.Scale, k, q95, c.RankBound95)
		if !stattest.BinomialOK(over, trials, 0.05, stattest.FalseFail) && float64(over)/trials > 0.05 {
			t.Errorf("%s: the bound was exceeded in %d of %d draws", kind, over, trials)
		}
		if c.RankBound95 > 1.5*q95 {
			t.Errorf("%s: bound %v is more than 1.5× the empirical quantile %v", kind, c.RankBound95, q95)
		}
	}

	rng := mrand.New(mrand.NewPCG(9, 9))
	clusters := []float64{3, 3.001, 41, 41.5, 97}
	datasets := map[string]func() float64{
		"clustered": func() float64 { return clusters[rng.IntN(len(clusters))] },
		"two spikes": func() float64 {
			if rng.IntN(10) == 0 {
				return 99.9
			}
			return 0.05
		},
		"uniform": func() float64 { return 100 * rng.Float64() },
	}
	ranks := []float64{0, 0.05, 0.3, 0.5, 0.8, 1}
	for name, draw := range datasets {
		for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
			c, err := Calibrate(spec(kind, 1, defaultTree, bounds(1, 1, 0), ranks...))
			if err != nil {
				t.Fatal(err)
			}
			// n is chosen so that the bound is about a third of the ranks.
			n := int(3 * c.RankBound95)
			xs, counts := sampleCounts(t, defaultTree, n, draw)
			const releases = 2000
			miss := make([]int, len(ranks))
			worst := 0.0
			for seed := range uint64(releases) {
				r, err := Release(c, counts, noise.New(stattest.NewFastSource(1000+seed)))
				if err != nil {
					t.Fatal(err)
				}
				for i, q := range r.Quantiles {
					e := rankError(xs, q, defaultTree.LeafWidth(), ranks[i])
					worst = math.Max(worst, e*float64(n))
					if e > c.RankBound95/float64(n) {
						miss[i]++
					}
				}
			}
			t.Logf("%s/%s n=%d: worst rank error %.1f events, bound %.1f; misses per rank %v of %d", name, kind, n, worst, c.RankBound95, miss, releases)
			for i, m := range miss {
				if float64(m)/releases > 0.05 && !stattest.BinomialOK(m, releases, 0.05, stattest.FalseFail) {
					t.Errorf("%s/%s rank %v: %d misses in %d releases", name, kind, ranks[i], m, releases)
				}
			}
		}
	}
}

// TestTreeShapes compares tree shapes with the same 2^16 leaves at ε = 1
// on 10^4 normal values: the default b = 16, h = 4 has a median rank error
// within 1.25× of the best shape tried (see DefaultBranching).
func TestTreeShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("compares shapes over many releases")
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	draw := func() float64 { return 50 + 15*rng.NormFloat64() }
	ranks := []float64{0.1, 0.5, 0.9}
	medians := map[[2]int]float64{}
	best := math.Inf(1)
	for _, shape := range [][2]int{{16, 4}, {2, 16}, {4, 8}, {256, 2}} {
		tr := Tree{Lo: 0, Hi: 100, Branching: shape[0], Height: shape[1]}
		xs, counts := sampleCounts(t, tr, 10000, draw)
		c, err := Calibrate(spec(noise.Laplace, 1, tr, bounds(1, 1, 0), ranks...))
		if err != nil {
			t.Fatal(err)
		}
		var errs []float64
		for seed := range uint64(150) {
			r, err := Release(c, counts, noise.New(noise.SeededSource(seed)))
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range r.Quantiles {
				errs = append(errs, plainRankError(xs, q, ranks[i]))
			}
		}
		slices.Sort(errs)
		medians[shape] = errs[len(errs)/2]
		best = math.Min(best, medians[shape])
		t.Logf("b=%d h=%d: median rank error %.5f, p95 %.5f, bound95/n %.5f", shape[0], shape[1], medians[shape], errs[len(errs)*95/100], c.RankBound95/1e4)
	}
	if d := medians[[2]int{16, 4}]; d > 1.25*best {
		t.Errorf("default shape's median rank error %v, best %v", d, best)
	}
}

// TestReleaseRejects covers what Release refuses without releasing.
func TestReleaseRejects(t *testing.T) {
	c, err := Calibrate(spec(noise.Laplace, 1, defaultTree, bounds(2, 1, 0), 0.5))
	if err != nil {
		t.Fatal(err)
	}
	nz := noise.New(noise.SeededSource(1))
	if _, err := Release(c, nil, nil); err == nil {
		t.Error("nil sampler accepted")
	}
	if _, err := Release(c, Counts{70000, 1}, nz); err == nil {
		t.Error("leaf outside the tree accepted")
	}
	less := c
	less.Components = slices.Clone(c.Components)
	less.Components[0].Scale /= 2
	if _, err := Release(less, nil, nz); err == nil {
		t.Error("half the noise accepted")
	}
	lowSens := c
	lowSens.Components = slices.Clone(c.Components)
	lowSens.Components[0].Sensitivity /= 2
	lowSens.Components[0].Scale /= 2
	if _, err := Release(lowSens, nil, nz); err == nil {
		t.Error("half the sensitivity accepted")
	}
	edited := c
	edited.Spec.Bounds.MaxContributions = 4 // needs twice the noise
	if _, err := Release(edited, nil, nz); err == nil {
		t.Error("a spec edited after calibration accepted")
	}
	more := c
	more.Components = slices.Clone(c.Components)
	more.Components[0].Scale *= 2
	if _, err := Release(more, nil, nz); err != nil {
		t.Errorf("more noise refused: %v", err)
	}
	desc, acc := c.Describe(), c.Accuracy()
	if !strings.Contains(desc, "16-ary tree of height 4") || !strings.Contains(acc, "rank within") {
		t.Errorf("explain strings: %q, %q", desc, acc)
	}
	t.Logf("explain: %s; %s", desc, acc)
}
