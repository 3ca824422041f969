package regression

import (
	"slices"
	"testing"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// TestMerge checks exact merging of regression partials and that a
// partial of the wrong dimension stops the window.
func TestMerge(t *testing.T) {
	b := base{Config: Release{Config: &Config{FeatureBounds: [][2]float64{{0, 1}}, Intercept: true, TargetBounds: [2]float64{0, 1}}}}
	if b.Dim() != 2 {
		t.Fatalf("Dim = %d, want 2 (one feature and the intercept)", b.Dim())
	}
	parts := []kind.Part{
		{Partition: 0, Stats: schema.ReleaseStats{Release: "fit", Count: 3, XtX: []int64{1, 2, 3}, Xty: []int64{4, 5}, Yty: 6}},
		{Partition: 1, Stats: schema.ReleaseStats{Release: "fit", Count: 4, XtX: []int64{10, -20, 30}, Xty: []int64{-40, 50}, Yty: 60}},
	}
	m, err := b.Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stats(m)
	if err != nil {
		t.Fatal(err)
	}
	if got.N != 7 || !slices.Equal(got.XtX, []int64{11, -18, 33}) || !slices.Equal(got.Xty, []int64{-36, 55}) || got.Yty != 66 {
		t.Errorf("merged %+v", got)
	}
	parts[1].Stats.XtX = []int64{1}
	if _, err := b.Merge(parts); err == nil {
		t.Error("a partial of the wrong dimension was merged")
	}
}
