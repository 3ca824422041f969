package quantile

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// PurposeNodes is the Component.Purpose of a quantile release's noisy node
// counts (one draw per node of levels 1..h, of every key).
const PurposeNodes = "tree_nodes"

// MaxRanks bounds the number of ranks one release computes; every rank
// costs at most h·b node reads.
const MaxRanks = 1024

// Spec is a quantile release's configuration, the only input to its
// calibration (never the data: SPEC section 1).
type Spec struct {
	// Noise is noise.Laplace (ε-DP) or noise.Gaussian ((ε, δ)-DP).
	Noise noise.Kind
	// Epsilon is the release's ε, finite and > 0; Delta its δ, in (0, 1)
	// for Gaussian noise and 0 for Laplace.
	Epsilon, Delta float64
	// Tree is the quantile tree: bounds, branching factor and height.
	Tree Tree
	// Ranks are the ranks to release, each in [0, 1], 1..MaxRanks of them,
	// in any order (post-processing: they do not affect the noise).
	Ranks []float64
	// Bounds are the unit's contribution bounds (MaxKeys 1 for a global
	// release).
	Bounds aggregate.UnitBounds
}

func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: quantiles: "+format, append([]any{noise.ErrInvalidSpec}, args...)...)
	}
	if msg := noise.CheckPrivacyParams(s.Noise, s.Epsilon, s.Delta); msg != "" {
		return bad("%s", msg)
	}
	if err := s.Tree.Validate(); err != nil {
		return err
	}
	if len(s.Ranks) < 1 || len(s.Ranks) > MaxRanks {
		return bad("want 1 to %d ranks, got %d", MaxRanks, len(s.Ranks))
	}
	for _, r := range s.Ranks {
		if !(r >= 0 && r <= 1) {
			return bad("rank %v is not in [0, 1]", r)
		}
	}
	if err := s.Bounds.Validate(); err != nil {
		return fmt.Errorf("quantiles: %w", err)
	}
	return nil
}

// equal reports whether two specs are the same configuration.
func (s Spec) equal(o Spec) bool {
	return s.Noise == o.Noise && s.Epsilon == o.Epsilon && s.Delta == o.Delta && s.Tree == o.Tree &&
		s.Bounds == o.Bounds && slices.Equal(s.Ranks, o.Ranks)
}

// Calibration is a Spec with the noise that makes it private. Build it
// with Calibrate: Release refuses one whose noise differs from what its
// Spec requires.
type Calibration struct {
	Spec Spec
	// Components is the one noise addition the accountant charges: integer
	// noise of Scale on every node count of levels 1..h of every key
	// (PurposeNodes, unit and grid 1), with the vector's exact L1
	// (discrete Laplace) or L2 (discrete Gaussian, rounded up) sensitivity
	// and the whole budget (Epsilon, Delta).
	Components []noise.Component
	// RankBound95 is E₉₅, in events: for any data, each released quantile
	// is, with probability at least 0.95 over the noise, within one leaf
	// of a point whose rank is within E₉₅/n of the requested rank (n the
	// key's events; see Release). It depends on the noise scale, b and h
	// only.
	RankBound95 float64
	// RankTypical95 is 1.96·sqrt(h·b·Var(Z)/4), in events: a first-order
	// 95% rank half-width (over n) for smooth data, where every node the
	// search reads holds many more events than the noise scale and events
	// spread evenly over siblings. Then no count is clamped and a level's
	// drift is Σ_j w_j·Z_j (see Release) with Σ_j w_j² ≈ b·ρ(1 − ρ) ≤ b/4.
	// It is an approximation, not a bound: sparse or adversarial data can
	// do worse (up to RankBound95). Levels whose nodes hold fewer events
	// than the noise add less than this counts, so on smooth data the
	// measured error is below it (TestUtility).
	RankTypical95 float64

	verified *verified
}

type verified struct {
	spec  Spec
	comps []noise.Component
	bound float64 // RankBound95 as Calibrate computed it
}

// Calibrate validates s and derives the noise of a quantile release. It
// reads the spec only, never data, so the charge is data-independent.
//
// Guarantee: Release with the result, called once per key of a window, is
// ε-DP (noise.Laplace) or (ε, δ)-DP (noise.Gaussian) for all the keys'
// releases together, under add/remove of one privacy unit (all of its
// events in the window; SPEC section 0), given s.Bounds (enforced upstream
// without looking at values).
//
// Mechanism (Google's quantile tree: go/dpagg/quantiles.go and
// "Differentially Private Quantile Trees", common_docs in
// google/differential-privacy): every kept event adds 1 to the count of
// one node at each level 1..h (its leaf's ancestors), and Release adds
// independent discrete noise to every node count of every key. Release
// draws the noise lazily, only for the nodes its search reads, but at most
// once per node (see Release), which has the same output distribution.
//
// Sensitivity, with proof sketch. Adding or removing the unit changes only
// its own kept events: n_k of them in key k, n ≥ 0 with n_k ≤ c',
// Σ n_k ≤ M = Bounds.Events() = min(L, L0·c') and at most L0 keys. Each
// event changes exactly one node per level by +1, so the node counts move
// by a non-negative integer vector whose entries sum to h·Σ n_k:
//
//	L1 = h·M,
//
// attained by any M events. At one level of key k the unit's n_k events
// spread over nodes as m_1 + m_2 + … = n_k with m_i ≥ 0, and
// Σ m_i² ≤ n_k² (equality when they share a node, e.g. one leaf), so the
// squared L2 norm is at most h·Σ_k n_k², whose maximum over the allowed n
// is Bounds.SquaredL2() (UnitBounds: ⌊M/c'⌋·c'² + (M mod c')²):
//
//	L2 = sqrt(h·(⌊M/c'⌋·c'² + (M mod c')²)),
//
// attained when each key's events share a leaf; for a global release
// (L0 = 1) L2 = √h·L. (Google's library uses h·L0·c and √(h·L0)·c, the
// same bounds without the cap L.)
//
// Discrete Laplace (pure ε-DP): t = h·M/ε on every node. The likelihood
// ratio of all the noisy node counts is a product over nodes, at most
// e^{L1/t} = e^ε (Dwork, McSherry, Nissim & Smith 2006; exact discrete
// noise: Canonne, Kamath & Steinke 2020).
//
// Discrete Gaussian ((ε, δ)-DP through zCDP): a node's shift of m under
// N_Z(0, σ²) is (m²/(2σ²))-zCDP (CKS 2020, Thm. 4), and Rényi divergences
// add over independent nodes, so the release is (L2²/(2σ²))-zCDP and
// (ε, δ)-DP with δ = noise.ZCDPDelta(ε, L2²/(2σ²)) (CKS 2020, Prop. 12).
// σ is the smallest meeting δ (noise.ZCDPGaussianSigma), rounded up to 24
// significant bits and re-checked. The accountant's discrete_gaussian
// charge Sensitivity²/(2σ²) is this ρ (Sensitivity is L2 rounded up).
//
// Errors wrap noise.ErrInvalidSpec and name the offending field.
func Calibrate(s Spec) (Calibration, error) {
	if err := s.validate(); err != nil {
		return Calibration{}, err
	}
	h := int64(s.Tree.Height)
	comp := noise.Component{Purpose: PurposeNodes, Noise: s.Noise.Discrete(), Quantum: 1, Granularity: 1, Epsilon: s.Epsilon, Delta: s.Delta}
	if s.Noise == noise.Laplace {
		l1 := h * s.Bounds.Events() // ≤ 24·2^24
		comp.Sensitivity = float64(l1)
		comp.Scale = float64(l1) / s.Epsilon
		if err := noise.CheckDiscreteScale("quantile node noise scale t", comp.Scale); err != nil {
			return Calibration{}, fmt.Errorf("%w: %w (epsilon too small?)", noise.ErrInvalidSpec, err)
		}
		comp.ExpectedAbsError = noise.DiscreteLaplaceAbsMean(comp.Scale)
	} else {
		l2 := sqrtUp(h * s.Bounds.SquaredL2()) // h·SquaredL2 ≤ 24·2^48 < 2^53
		sigma, err := noise.ZCDPGaussianSigma(s.Epsilon, s.Delta, l2)
		if err != nil {
			return Calibration{}, fmt.Errorf("%w: quantiles: %w", noise.ErrInvalidSpec, err)
		}
		sigma = noise.RoundUpSignificand(sigma)
		for i := 0; noise.ZCDPDelta(s.Epsilon, l2*l2/(2*sigma*sigma)) > s.Delta; i++ {
			if i == 16 {
				return Calibration{}, fmt.Errorf("%w: quantiles: rounded sigma %v misses delta %v", noise.ErrInvalidSpec, sigma, s.Delta)
			}
			sigma = noise.NextSignificand(sigma)
		}
		if err := noise.CheckDiscreteScale("quantile node noise sigma", sigma); err != nil {
			return Calibration{}, fmt.Errorf("%w: %w (epsilon too small?)", noise.ErrInvalidSpec, err)
		}
		comp.Sensitivity, comp.Scale = l2, sigma
		comp.ExpectedAbsError = noise.DiscreteGaussianAbsMean(sigma)
	}
	c := Calibration{Spec: s, Components: []noise.Component{comp}}
	c.RankBound95 = RankBound(comp, s.Tree.Branching, s.Tree.Height, 0.05)
	c.RankTypical95 = noise.NormalQ975 * math.Sqrt(float64(s.Tree.Height*s.Tree.Branching)*noise.Variance(comp)/4)
	c.verified = &verified{spec: s, comps: slices.Clone(c.Components), bound: c.RankBound95}
	return c, nil
}

// sqrtUp returns the smallest float64 s with s·s ≥ v, for 0 < v < 2^53: a
// recorded L2 sensitivity must not round below the true one.
func sqrtUp(v int64) float64 {
	s := math.Sqrt(float64(v))
	for math.FMA(s, s, -float64(v)) < 0 {
		s = math.Nextafter(s, math.Inf(1))
	}
	return s
}

// check reports why c must not be released: its Spec must be valid and
// its component exactly what Calibrate derives, except that a larger Scale
// (more noise) is accepted. It returns the rank bound of c's component
// (RankBound at β = 0.05), recomputed unless c is what Calibrate returned.
func (c Calibration) check() (float64, error) {
	if v := c.verified; v != nil && v.spec.equal(c.Spec) && slices.Equal(v.comps, c.Components) {
		return v.bound, nil
	}
	want, err := Calibrate(c.Spec)
	if err != nil {
		return 0, err
	}
	if len(c.Components) != 1 {
		return 0, fmt.Errorf("%d components, want 1", len(c.Components))
	}
	g, w := c.Components[0], want.Components[0]
	if g.Purpose != w.Purpose || g.Noise != w.Noise || g.Quantum != 1 || g.Granularity != 1 || g.Sensitivity != w.Sensitivity {
		return 0, fmt.Errorf("component is %s/%s with sensitivity %v (quantum %v, grid %v), want %s/%s with %v (1, 1)",
			g.Purpose, g.Noise, g.Sensitivity, g.Quantum, g.Granularity, w.Purpose, w.Noise, w.Sensitivity)
	}
	if !(g.Scale >= w.Scale) || g.Scale > noise.MaxDiscreteScale {
		return 0, fmt.Errorf("node noise scale %v is below the calibrated %v (or above 2^50)", g.Scale, w.Scale)
	}
	return RankBound(g, c.Spec.Tree.Branching, c.Spec.Tree.Height, 0.05), nil
}

// Result is one key's released quantiles.
type Result struct {
	// Quantiles are aligned with Spec.Ranks and non-decreasing in rank
	// (equal ranks give equal values), each in [Lo, Hi].
	Quantiles []float64
	// NoisyTotal is the sum of the level-1 node counts with noise, each
	// clamped at 0: the total the search divides by, a noisy (biased
	// upwards) event count of the key.
	NoisyTotal float64
	// RankInterval95 is RankBound95/max(NoisyTotal, 1), capped at 1: the
	// rank half-width of Calibration.RankBound95 evaluated at the noisy
	// count (from the component actually drawn, so a hand-edited
	// RankBound95 does not change it).
	RankInterval95 float64
}

// Release computes one key's quantiles at c.Spec.Ranks from its exact leaf
// histogram, adding noise from n. It satisfies the guarantee stated by
// Calibrate when called once per key and window (each call draws fresh
// noise for that key's tree).
//
// Search (Google's QuantileTree.Result, without its post-processing
// threshold α, see below). For a rank r, start at the root with residual
// rank ρ = r. At a node u of level < h read the noisy counts of its b
// children, d_j = max(c_j + Z_j, 0). If D = Σ d_j is 0, stop at u.
// Otherwise go to the first child i with d_i > 0 and P_i = Σ_{j≤i} d_j ≥
// ρ·D, with residual ρ' = (ρ·D − P_{i−1})/d_i ∈ [0, 1]. At the node where
// the search ends (a leaf, or u), return Left + ρ·(Right − Left) for its
// interval [Left, Right]: linear interpolation, as Google does.
//
// Lazy noise. The noise of a node is drawn the first time any rank's
// search reads it and kept for the rest of the release, so every node has
// at most one draw per release and all ranks see one consistent noisy tree.
// This is distributed exactly as noising every node first and then
// searching: the draws are independent of the data and of each other, the
// search only ever reads noisy counts, and a node's draw is independent of
// whatever made the search read it (principle of deferred decisions). The
// release is therefore post-processing of the fully noised tree that
// Calibrate charges for, and unread nodes cost nothing to sample. At most
// min(#ranks·h·b, nodes) draws are made.
//
// Monotonicity. For one noisy tree the map r ↦ output is non-decreasing
// (the chosen child and then the residual rank are non-decreasing in r,
// and the nodes' intervals are ordered); Release computes the ranks in
// increasing order and takes a running maximum, so the released list is
// non-decreasing in rank whatever the floating-point rounding.
//
// Error bound (derived for this package). Let n be the key's events and,
// for the output's node, A its events to the left and N its own. Track
// p = A_u + ρ·N_u (p = r·n at the root). A step from u to child i changes
// p by Σ_j w_j·(c_j − d_j) with w_j = 1 − ρ (j < i), ρ' − ρ (j = i) and
// −ρ (j > i), all in [−1, 1] (substitute ρ·D = P_{i−1} + ρ'·d_i), and
// |c_j − d_j| ≤ |Z_j| (clamping at 0 only moves d_j towards c_j ≥ 0). So
// |p_end − r·n| ≤ S = Σ|Z| over the h·b nodes read, and when the search
// stops early the stopping node holds N_u = Σ c_j ≤ Σ|Z_j| of that
// level's draws. The search for one rank reads, at each level, b nodes
// whose noise is independent of how it got there, so S is distributed as
// a sum of h·b independent |Z|, and S ≤ E₉₅ = Calibration.RankBound95 with
// probability ≥ 0.95 (a Chernoff bound; RankBound). Since p ∈ [A, A + N],
// the released q̂ lies in the end node's interval and w = LeafWidth:
//
//	F(q̂ + w) ≥ r − E₉₅/n  and  F((q̂ − w)⁻) ≤ r + E₉₅/n,
//
// with F(x) = #{events ≤ x}/n and F(x⁻) = #{events < x}/n (w = 0 when the
// search stopped early): q̂ is within one leaf of a point whose rank is
// within E₉₅/n of r, for every data set. Over k ranks at once the
// probability is at least 1 − 0.05·k (union bound). The bound is for the
// worst case over data and over the search path; on smooth data the
// signs of the terms cancel and the typical error is several times smaller
// (TestUtility logs both). Google's α = 0.0075, which treats children below
// α·D as empty, helps on sparse data but can move a rank by up to b·α
// (12% for b = 16) on adversarial data, which would void the bound; it is
// not used. Ranks are not moved into [0.005, 0.995] either (Google does):
// the bound holds at every rank, and at r = 0 or 1 it is what it says.
//
// It returns an error, and releases nothing, for a nil n, a calibration
// that does not fit its spec, counts that are not a leaf histogram of the
// tree (Counts.Check), a failed noise draw or an overflowing count.
func Release(c Calibration, counts Counts, n noise.Sampler) (Result, error) {
	if n == nil {
		return Result{}, errors.New("release quantiles: nil noise")
	}
	bound, err := c.check()
	if err != nil {
		return Result{}, fmt.Errorf("release quantiles: calibration does not fit its spec (build it with Calibrate): %w", err)
	}
	if err := counts.Check(c.Spec.Tree); err != nil {
		return Result{}, fmt.Errorf("release quantiles: %w", err)
	}
	nt, err := newNoisyTree(c.Spec.Tree, counts, c.Components[0], n)
	if err != nil {
		return Result{}, fmt.Errorf("release quantiles: %w", err)
	}
	ranks := c.Spec.Ranks
	order := make([]int, len(ranks))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ranks[order[a]] < ranks[order[b]] })
	out := make([]float64, len(ranks))
	last := c.Spec.Tree.Lo
	for _, i := range order {
		v, err := nt.quantile(ranks[i])
		if err != nil {
			return Result{}, fmt.Errorf("release quantiles: rank %v: %w", ranks[i], err)
		}
		last = math.Max(last, v)
		out[i] = last
	}
	total, err := nt.childrenTotal(0, 0)
	if err != nil {
		return Result{}, fmt.Errorf("release quantiles: %w", err)
	}
	return Result{
		Quantiles:      out,
		NoisyTotal:     total,
		RankInterval95: math.Min(bound/math.Max(total, 1), 1),
	}, nil
}

// noisyTree is one key's tree during a release: the exact node counts,
// read from the leaf histogram, and the noise drawn so far.
type noisyTree struct {
	t      Tree
	leaves []int64 // the histogram's leaves, increasing
	cum    []int64 // cum[i] = events in the first i pairs
	comp   noise.Component
	n      noise.Sampler
	drawn  map[uint64]float64 // d = max(c + Z, 0) by node key (level<<32 | index)
}

func newNoisyTree(t Tree, counts Counts, comp noise.Component, n noise.Sampler) (*noisyTree, error) {
	k := len(counts) / 2
	nt := &noisyTree{t: t, leaves: make([]int64, k), cum: make([]int64, k+1), comp: comp, n: n, drawn: map[uint64]float64{}}
	for i := range k {
		nt.leaves[i] = counts[2*i]
		var ok bool
		if nt.cum[i+1], ok = noise.AddInt64(nt.cum[i], counts[2*i+1]); !ok {
			return nil, errors.New("total count overflows int64")
		}
	}
	return nt, nil
}

// count returns the exact count of node index of level (leaves
// [index·span, (index+1)·span)).
func (nt *noisyTree) count(level, index int) int64 {
	span := int64(nt.t.span(level))
	lo := int64(index) * span
	i := sort.Search(len(nt.leaves), func(i int) bool { return nt.leaves[i] >= lo })
	j := sort.Search(len(nt.leaves), func(j int) bool { return nt.leaves[j] >= lo+span })
	return nt.cum[j] - nt.cum[i]
}

// noisy returns max(c + Z, 0) for node index of level (1 ≤ level ≤ h),
// drawing Z the first time and reusing it afterwards. c + Z is exact in
// int64 (noise.AddToCount) and its float64 is exact below 2^53.
func (nt *noisyTree) noisy(level, index int) (float64, error) {
	key := uint64(level)<<32 | uint64(index)
	if d, ok := nt.drawn[key]; ok {
		return d, nil
	}
	v, err := noise.AddToCount(nt.n, nt.comp, nt.count(level, index))
	if err != nil {
		return 0, err
	}
	d := math.Max(v, 0)
	nt.drawn[key] = d
	return d, nil
}

// childrenTotal returns D, the sum of the clamped noisy counts of the
// children of node index of level, summed in child order.
func (nt *noisyTree) childrenTotal(level, index int) (float64, error) {
	total := 0.0
	for j := range nt.t.Branching {
		d, err := nt.noisy(level+1, index*nt.t.Branching+j)
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// quantile runs the search of Release for rank r.
func (nt *noisyTree) quantile(r float64) (float64, error) {
	b := nt.t.Branching
	level, index, rho := 0, 0, r
	for level < nt.t.Height {
		total, err := nt.childrenTotal(level, index)
		if err != nil {
			return 0, err
		}
		if total == 0 {
			break
		}
		target := rho * total // ≤ total: rounding is monotone and ρ ≤ 1
		first := index * b
		choice, before := -1, 0.0
		partial := 0.0
		for j := range b {
			d, _ := nt.noisy(level+1, first+j) // drawn by childrenTotal
			if d > 0 {
				choice, before = j, partial
				if partial+d >= target {
					break
				}
			}
			partial += d
		}
		// The last positive child always qualifies (its partial sum is the
		// total, accumulated in the same order), so choice ≥ 0 here.
		d, _ := nt.noisy(level+1, first+choice)
		rho = math.Max(0, math.Min((target-before)/d, 1))
		level, index = level+1, first+choice
	}
	span := nt.t.span(level)
	left, right := nt.t.Edge(index*span), nt.t.Edge((index+1)*span)
	return math.Max(left, math.Min(left+rho*(right-left), right)), nil
}

// RankBound returns x with P(S > x) ≤ beta for S the sum of h·b
// independent |Z|, Z the integer noise of comp (Granularity 1): the
// Chernoff bound
//
//	x = min_{λ>0} (h·b·log E[e^{λ|Z|}] + log(1/β))/λ,
//
// minimised over λ by golden-section search (the objective is unimodal:
// with g(λ) = h·b·log E e^{λ|Z|} convex and g(0) = 0, the sign of the
// derivative of (g + c)/λ is that of λg′ − g − c, which increases).
// E e^{λ|Z|} is exact for the discrete Laplace,
// (1 − q)/(1 + q)·(1 + q·e^λ)/(1 − q·e^λ) with q = e^{−1/t} (λ < 1/t), and
// summed term by term for the discrete Gaussian with σ ≤ 1024; above, it
// is the half-normal's 2·e^{λ²σ²/2}·Φ(λσ), which the discrete sum matches
// to a relative O(1/σ) (an accuracy statement, not a privacy parameter).
// Release's error bound uses it with beta = 0.05.
func RankBound(comp noise.Component, b, h int, beta float64) float64 {
	k := float64(b * h)
	c := math.Log(1 / beta)
	s := comp.Scale / comp.Granularity
	var logMGF func(lambda float64) float64
	var lmax float64
	if comp.Noise == noise.DiscreteLaplace {
		q := math.Exp(-1 / s)
		lmax = 1 / s
		logMGF = func(l float64) float64 {
			qe := q * math.Exp(l)
			return math.Log((1-q)/(1+q)) + math.Log1p(qe) - math.Log1p(-qe)
		}
	} else {
		lmax = 10 / s // λσ ≤ 10 is far past the optimum, λσ ≈ √(2c/k)
		if s <= noise.DiscreteGaussianExactMaxSigma {
			logMGF = func(l float64) float64 { return dgLogMGFAbs(s, l) }
		} else {
			logMGF = func(l float64) float64 {
				return math.Log(2) + l*l*s*s/2 + math.Log(0.5*math.Erfc(-l*s/math.Sqrt2))
			}
		}
	}
	f := func(l float64) float64 { return (k*logMGF(l) + c) / l }
	// Golden-section search on λ = lmax·u, u in (0, 1).
	lo, hi := 1e-9, 1-1e-9
	phi := (math.Sqrt(5) - 1) / 2
	x1, x2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
	f1, f2 := f(lmax*x1), f(lmax*x2)
	for range 200 {
		if f1 < f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - phi*(hi-lo)
			f1 = f(lmax * x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + phi*(hi-lo)
			f2 = f(lmax * x2)
		}
	}
	return comp.Granularity * math.Min(f1, f2)
}

// dgLogMGFAbs returns log E[e^{λ|Z|}] for Z ~ N_Z(0, σ²), summed until the
// terms fall below 1e-20 of the sum (past the peak at y ≈ λσ²).
func dgLogMGFAbs(sigma, lambda float64) float64 {
	s2 := 2 * sigma * sigma
	num, den := 1.0, 1.0
	for y := 1.0; ; y++ {
		g := math.Exp(-y * y / s2)
		num += 2 * math.Exp(lambda*y-y*y/s2)
		den += 2 * g
		if y > lambda*sigma*sigma && math.Exp(lambda*y-y*y/s2) < 1e-20*num && g < 1e-20*den {
			break
		}
	}
	return math.Log(num / den)
}

// Describe says what a quantile release computes, for `dpstream explain`.
func (c Calibration) Describe() string {
	t := c.Spec.Tree
	return fmt.Sprintf("quantiles at ranks %v: %d-ary tree of height %d on [%g, %g] (%d leaves of width %.3g)",
		c.Spec.Ranks, t.Branching, t.Height, t.Lo, t.Hi, t.Leaves(), t.LeafWidth())
}

// Accuracy states the error of Release for explain: each quantile is
// within one leaf of a point whose rank is within RankBound95/n of the
// requested rank, with probability ≥ 0.95 for any data, and typically
// within RankTypical95/n on smooth data, for n events of a key.
func (c Calibration) Accuracy() string {
	return fmt.Sprintf("rank within ±%.3g/n (95%%, any data; ≈ ±%.3g/n on smooth data; n events of the key), value within one leaf (%.3g)",
		c.RankBound95, c.RankTypical95, c.Spec.Tree.LeafWidth())
}
