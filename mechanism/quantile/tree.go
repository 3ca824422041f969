package quantile

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// The tree's defaults and limits.
const (
	// DefaultBranching and DefaultHeight are Google's defaults
	// (go/dpagg/quantiles.go): 16^4 = 65536 leaves, a resolution of 2^-16
	// of [Lo, Hi]. For a fixed number of leaves b^h the rank error grows
	// roughly like h^{3/2}·√b (h noisy levels, each adding noise of scale
	// ∝ h over about √b siblings; see Release), which is smallest near
	// h = 4 for 2^16 leaves; TestTreeShapes measures it.
	DefaultBranching = 16
	DefaultHeight    = 4
	// MaxLeaves bounds b^h. Leaf counts are sparse, so the bound is not
	// about memory; it keeps node indices and edges exact (b^h ≤ 2^24 <
	// 2^53) and the height, and with it the sensitivity, at most 24.
	MaxLeaves = 1 << 24
)

// Tree is the exact side of a quantile release: a complete b-ary tree of
// height h over [Lo, Hi] whose b^h leaves are equal-width intervals. A
// value belongs to one leaf (Leaf) and so to one node per level 1..h (the
// leaf's ancestors; the root, level 0, is not counted, as in Google's
// library); Release reads the node counts from the leaf counts (Counts).
//
// Leaf j is [Edge(j), Edge(j+1)), the last one closed at Hi, with the
// edges of aggregate.BinEdge for b^h bins: Leaf is aggregate.BinIndex, which
// checks the value against those same float64 edges, so the leaf a value
// is counted in is exactly the one whose published edges contain it, with
// no rounding surprise at an edge. Values below Lo or above Hi are clamped
// into the first or last leaf. A node at level ℓ is the run of
// b^(h−ℓ) consecutive leaves below it, and its interval is
// [Edge(first leaf), Edge(last leaf + 1)).
type Tree struct {
	Lo, Hi    float64
	Branching int // b ≥ 2
	Height    int // h ≥ 1, with b^h ≤ MaxLeaves
}

// Validate reports why t is not a usable tree, wrapped in
// noise.ErrInvalidSpec.
func (t Tree) Validate() error {
	if math.IsNaN(t.Lo) || math.IsNaN(t.Hi) || math.IsInf(t.Lo, 0) || math.IsInf(t.Hi, 0) || !(t.Lo < t.Hi) || math.IsInf(t.Hi-t.Lo, 0) {
		return fmt.Errorf("%w: quantile tree needs finite bounds with lo < hi and a finite width, got [%v, %v]", noise.ErrInvalidSpec, t.Lo, t.Hi)
	}
	if t.Branching < 2 || t.Height < 1 {
		return fmt.Errorf("%w: quantile tree needs branching >= 2 and height >= 1, got %d and %d", noise.ErrInvalidSpec, t.Branching, t.Height)
	}
	n := 1
	for range t.Height {
		if n > MaxLeaves/t.Branching {
			return fmt.Errorf("%w: quantile tree with branching %d and height %d has more than %d leaves", noise.ErrInvalidSpec, t.Branching, t.Height, MaxLeaves)
		}
		n *= t.Branching
	}
	return nil
}

// Leaves returns b^h, the number of leaves of a valid tree.
func (t Tree) Leaves() int {
	n := 1
	for range t.Height {
		n *= t.Branching
	}
	return n
}

// span returns b^(h−level), the number of leaves under one node of level.
func (t Tree) span(level int) int {
	n := 1
	for range t.Height - level {
		n *= t.Branching
	}
	return n
}

// Leaf returns the leaf of v: the j with Edge(j) ≤ v < Edge(j+1) (v ≤ Hi
// for the last leaf), after clamping v into [Lo, Hi]. It is an exact,
// deterministic function of v. It returns an error for NaN and for an
// invalid tree.
func (t Tree) Leaf(v float64) (int, error) {
	if err := t.Validate(); err != nil {
		return 0, err
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("quantile tree: value is NaN")
	}
	return aggregate.BinIndex(v, t.Lo, t.Hi, t.Leaves()), nil
}

// Edge returns edge j of the leaves (0 ≤ j ≤ b^h): Lo for j = 0, Hi for
// j = b^h, non-decreasing in j (aggregate.BinEdge).
func (t Tree) Edge(j int) float64 {
	return aggregate.BinEdge(t.Lo, t.Hi, t.Leaves(), j)
}

// LeafWidth returns (Hi − Lo)/b^h, the resolution of the released values.
func (t Tree) LeafWidth() float64 {
	return (t.Hi - t.Lo) / float64(t.Leaves())
}

// Counts is the exact sparse leaf histogram of one key (or of a whole
// window without group_by): flat pairs (leaf, count), Counts[2i] the leaf
// and Counts[2i+1] its number of kept events (≥ 1), with leaves strictly
// increasing. Empty leaves are absent, so a key costs 16 bytes per
// distinct leaf it has events in (at most 16·b^h, 1 MiB for the default
// tree, and never more than 16 bytes per event), plus a slice header. It is
// what a partial carries (a flat []int64), and partials merge by adding
// counts leaf by leaf (Merge), which is exact and independent of the order
// of merging. The nil Counts is the empty histogram.
type Counts []int64

// Check reports why c is not a well-formed leaf histogram of tree t:
// odd length, a leaf outside [0, b^h), leaves not strictly increasing, or
// a count below 1.
func (c Counts) Check(t Tree) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if len(c)%2 != 0 {
		return fmt.Errorf("quantile counts: odd length %d (want (leaf, count) pairs)", len(c))
	}
	leaves := int64(t.Leaves())
	prev := int64(-1)
	for i := 0; i < len(c); i += 2 {
		leaf, n := c[i], c[i+1]
		switch {
		case leaf < 0 || leaf >= leaves:
			return fmt.Errorf("quantile counts: leaf %d outside [0, %d)", leaf, leaves)
		case leaf <= prev:
			return fmt.Errorf("quantile counts: leaf %d after %d (leaves must increase strictly)", leaf, prev)
		case n < 1:
			return fmt.Errorf("quantile counts: leaf %d has count %d (want >= 1)", leaf, n)
		}
		prev = leaf
	}
	return nil
}

// Total returns the number of events in c, or an error if it overflows
// int64.
func (c Counts) Total() (int64, error) {
	var s int64
	for i := 1; i < len(c); i += 2 {
		var ok bool
		if s, ok = noise.AddInt64(s, c[i]); !ok {
			return 0, fmt.Errorf("quantile counts: total overflows int64")
		}
	}
	return s, nil
}

// Add returns c with n ≥ 1 more events in leaf (c may be modified in
// place, like append). It is O(log k) for a leaf already present and O(k)
// for a new one (k the number of pairs); an accumulator that sees many
// distinct leaves per key should collect leaves and use FromLeaves and
// Merge instead. It returns an error, and c unchanged, for a negative leaf,
// n < 1, or a count that would overflow int64.
func (c Counts) Add(leaf int, n int64) (Counts, error) {
	if leaf < 0 || n < 1 {
		return c, fmt.Errorf("quantile counts: add %d events to leaf %d (want leaf >= 0 and at least one event)", n, leaf)
	}
	k := len(c) / 2
	i := sort.Search(k, func(i int) bool { return c[2*i] >= int64(leaf) })
	if i < k && c[2*i] == int64(leaf) {
		s, ok := noise.AddInt64(c[2*i+1], n)
		if !ok {
			return c, fmt.Errorf("quantile counts: leaf %d count overflows int64", leaf)
		}
		c[2*i+1] = s
		return c, nil
	}
	return slices.Insert(c, 2*i, int64(leaf), n), nil
}

// FromLeaves returns the leaf histogram of the given leaf indices, one per
// event, in any order (the slice is not modified). It returns an error for
// a negative leaf.
func FromLeaves(leaves []int) (Counts, error) {
	s := slices.Clone(leaves)
	slices.Sort(s)
	var c Counts
	for i := 0; i < len(s); {
		if s[i] < 0 {
			return nil, fmt.Errorf("quantile counts: negative leaf %d", s[i])
		}
		j := i + 1
		for j < len(s) && s[j] == s[i] {
			j++
		}
		c = append(c, int64(s[i]), int64(j-i))
		i = j
	}
	return c, nil
}

// Merge returns the leaf-by-leaf sum of c and o (a new slice; neither is
// modified). Both must have sorted leaves (Check); it returns an error if
// a count overflows int64.
func (c Counts) Merge(o Counts) (Counts, error) {
	out := make(Counts, 0, len(c)+len(o))
	i, j := 0, 0
	for i+1 < len(c) || j+1 < len(o) {
		switch {
		case j+1 >= len(o) || (i+1 < len(c) && c[i] < o[j]):
			out = append(out, c[i], c[i+1])
			i += 2
		case i+1 >= len(c) || o[j] < c[i]:
			out = append(out, o[j], o[j+1])
			j += 2
		default:
			s, ok := noise.AddInt64(c[i+1], o[j+1])
			if !ok {
				return nil, fmt.Errorf("quantile counts: merge: leaf %d count overflows int64", c[i])
			}
			out = append(out, c[i], s)
			i += 2
			j += 2
		}
	}
	return out, nil
}
