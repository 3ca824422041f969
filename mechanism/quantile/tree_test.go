package quantile

import (
	"errors"
	"math"
	mrand "math/rand/v2"
	"slices"
	"testing"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// inLeaf reports whether the clamped v lies in leaf j by the published
// edges: Edge(j) ≤ v < Edge(j+1), or v ≤ Hi for the last leaf.
func inLeaf(tr Tree, v float64, j int) bool {
	v = math.Max(tr.Lo, math.Min(v, tr.Hi))
	if j == tr.Leaves()-1 {
		return tr.Edge(j) <= v && v <= tr.Hi
	}
	return tr.Edge(j) <= v && v < tr.Edge(j+1)
}

// TestLeafExact pins the leaf of values at and around the edges, outside
// the bounds, and on bounds whose width is not a power of two (where
// (v − Lo)/(Hi − Lo)·b^h rounds), and checks that every value is in the
// leaf whose published edges contain it.
func TestLeafExact(t *testing.T) {
	def := Tree{Lo: 0, Hi: 100, Branching: DefaultBranching, Height: DefaultHeight}
	odd := Tree{Lo: 0.1, Hi: 0.7, Branching: 3, Height: 5} // 243 leaves, inexact edges
	neg := Tree{Lo: -1e300, Hi: 1e300, Branching: 2, Height: 10}
	cases := []struct {
		name string
		tr   Tree
		v    float64
		want int
	}{
		{"lo", def, 0, 0},
		{"hi is in the last leaf", def, 100, 65535},
		{"below lo clamps", def, -5, 0},
		{"above hi clamps", def, 1e9, 65535},
		{"-inf clamps", def, math.Inf(-1), 0},
		{"+inf clamps", def, math.Inf(1), 65535},
		{"midpoint edge starts leaf 32768", def, 50, 32768},
		{"just below the midpoint edge", def, math.Nextafter(50, 0), 32767},
		{"just above lo", def, math.Nextafter(0, 1), 0},
		{"just below hi", def, math.Nextafter(100, 0), 65535},
		{"odd: lo", odd, 0.1, 0},
		{"odd: hi", odd, 0.7, 242},
		{"odd: edge 81 itself", odd, odd.Edge(81), 81},
		{"odd: just below edge 81", odd, math.Nextafter(odd.Edge(81), 0), 80},
		{"odd: edge 242", odd, odd.Edge(242), 242},
		{"huge bounds: 0 is edge 512", neg, 0, 512},
		{"huge bounds: just below 0", neg, -1e-300, 511},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.tr.Leaf(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Leaf(%v) = %d, want %d", tc.v, got, tc.want)
			}
			if !inLeaf(tc.tr, tc.v, got) {
				t.Errorf("Leaf(%v) = %d, but its edges are [%v, %v)", tc.v, got, tc.tr.Edge(got), tc.tr.Edge(got+1))
			}
		})
	}
	// Every edge, its neighbours and random values, on several trees.
	rng := mrand.New(mrand.NewPCG(7, 8))
	for _, tr := range []Tree{def, odd, neg, {Lo: 1e15, Hi: 1e15 + 3, Branching: 2, Height: 3}} {
		for j := 0; j <= tr.Leaves(); j++ {
			e := tr.Edge(j)
			for _, v := range []float64{math.Nextafter(e, math.Inf(-1)), e, math.Nextafter(e, math.Inf(1))} {
				got, err := tr.Leaf(v)
				if err != nil || !inLeaf(tr, v, got) {
					t.Fatalf("%+v: Leaf(%v) = %d, %v: not the leaf of its edges", tr, v, got, err)
				}
			}
			if j > 0 && tr.Edge(j-1) > e {
				t.Fatalf("%+v: edges decrease at %d", tr, j)
			}
		}
		for range 10000 {
			v := tr.Lo + (tr.Hi-tr.Lo)*(1.2*rng.Float64()-0.1)
			got, err := tr.Leaf(v)
			if err != nil || !inLeaf(tr, v, got) {
				t.Fatalf("%+v: Leaf(%v) = %d, %v: not the leaf of its edges", tr, v, got, err)
			}
		}
	}
}

func TestLeafErrors(t *testing.T) {
	def := Tree{Lo: 0, Hi: 1, Branching: 2, Height: 2}
	if _, err := def.Leaf(math.NaN()); err == nil {
		t.Error("Leaf(NaN) gave no error")
	}
	for _, tr := range []Tree{
		{Lo: 1, Hi: 0, Branching: 2, Height: 2},
		{Lo: 0, Hi: 0, Branching: 2, Height: 2},
		{Lo: math.NaN(), Hi: 1, Branching: 2, Height: 2},
		{Lo: 0, Hi: math.Inf(1), Branching: 2, Height: 2},
		{Lo: -math.MaxFloat64, Hi: math.MaxFloat64, Branching: 2, Height: 2},
		{Lo: 0, Hi: 1, Branching: 1, Height: 2},
		{Lo: 0, Hi: 1, Branching: 2, Height: 0},
		{Lo: 0, Hi: 1, Branching: 2, Height: 25},
		{Lo: 0, Hi: 1, Branching: 1 << 12, Height: 3},
	} {
		if err := tr.Validate(); !errors.Is(err, noise.ErrInvalidSpec) {
			t.Errorf("%+v: Validate = %v, want ErrInvalidSpec", tr, err)
		}
		if _, err := tr.Leaf(0.5); err == nil {
			t.Errorf("%+v: Leaf gave no error", tr)
		}
	}
	for _, tr := range []Tree{{Lo: 0, Hi: 1, Branching: 2, Height: 24}, {Lo: 0, Hi: 1, Branching: 1 << 24, Height: 1}, {Lo: 0, Hi: 1, Branching: 16, Height: 6}} {
		if err := tr.Validate(); err != nil {
			t.Errorf("%+v: %v", tr, err)
		}
	}
}

// TestCounts checks the sparse leaf histogram: Add and FromLeaves build
// the same canonical form, Merge adds leaf by leaf in any order, and
// malformed or overflowing histograms are refused.
func TestCounts(t *testing.T) {
	tr := Tree{Lo: 0, Hi: 1, Branching: 4, Height: 3} // 64 leaves
	rng := mrand.New(mrand.NewPCG(1, 1))
	var all []int
	var parts []Counts
	for p := range 5 {
		var leaves []int
		var c Counts
		for range 50 + 30*p {
			leaf := rng.IntN(64)
			if p == 2 {
				leaf = 10 + rng.IntN(3) // a part with few distinct leaves
			}
			leaves = append(leaves, leaf)
			var err error
			if c, err = c.Add(leaf, 1); err != nil {
				t.Fatal(err)
			}
		}
		f, err := FromLeaves(leaves)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c, f) {
			t.Fatalf("part %d: Add built %v, FromLeaves %v", p, c, f)
		}
		if err := c.Check(tr); err != nil {
			t.Fatal(err)
		}
		all = append(all, leaves...)
		parts = append(parts, c)
	}
	want, _ := FromLeaves(all)
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}} {
		var m Counts
		for _, i := range order {
			var err error
			if m, err = m.Merge(parts[i]); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(m, want) {
			t.Errorf("merge in order %v = %v, want %v", order, m, want)
		}
	}
	if n, err := want.Total(); err != nil || n != int64(len(all)) {
		t.Errorf("Total = %d, %v, want %d", n, err, len(all))
	}
	// Merge leaves its inputs alone.
	a, b := Counts{1, 2, 5, 1}, Counts{1, 3, 7, 4}
	if m, _ := a.Merge(b); !slices.Equal(m, Counts{1, 5, 5, 1, 7, 4}) || !slices.Equal(a, Counts{1, 2, 5, 1}) || !slices.Equal(b, Counts{1, 3, 7, 4}) {
		t.Errorf("merge: %v (inputs now %v, %v)", m, a, b)
	}

	bad := []struct {
		name string
		c    Counts
	}{
		{"odd length", Counts{1, 2, 3}},
		{"negative leaf", Counts{-1, 2}},
		{"leaf past the end", Counts{64, 1}},
		{"unsorted", Counts{5, 1, 3, 1}},
		{"duplicate leaf", Counts{5, 1, 5, 1}},
		{"zero count", Counts{5, 0}},
		{"negative count", Counts{5, -3}},
	}
	for _, tc := range bad {
		if err := tc.c.Check(tr); err == nil {
			t.Errorf("%s: Check accepted %v", tc.name, tc.c)
		}
	}
	big := Counts{3, math.MaxInt64}
	if _, err := big.Add(3, 1); err == nil {
		t.Error("Add overflowed silently")
	}
	if _, err := big.Merge(Counts{3, 1}); err == nil {
		t.Error("Merge overflowed silently")
	}
	if _, err := (Counts{3, math.MaxInt64, 4, 1}).Total(); err == nil {
		t.Error("Total overflowed silently")
	}
	if _, err := (Counts{}).Add(-1, 1); err == nil {
		t.Error("Add accepted a negative leaf")
	}
	if _, err := (Counts{}).Add(1, 0); err == nil {
		t.Error("Add accepted zero events")
	}
	if _, err := FromLeaves([]int{3, -1}); err == nil {
		t.Error("FromLeaves accepted a negative leaf")
	}
}
