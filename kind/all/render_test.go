package all_test

import (
	"testing"

	"github.com/dpstream/dpstream/kind"
	_ "github.com/dpstream/dpstream/kind/all"
	"github.com/dpstream/dpstream/schema"
)

// TestRenderers checks the registry's renderers: every kind draws its
// releases, and each shape a release of an unknown kind can have is
// adopted by exactly one kind, so that which kind draws such a release
// never depends on the order of the registry.
func TestRenderers(t *testing.T) {
	adopters := map[kind.Shape][]string{}
	for _, name := range kind.Names() {
		rd, ok := kind.RendererOf(name)
		if !ok {
			t.Errorf("kind %s has no renderer", name)
			continue
		}
		if s := rd.Adopts(); s != kind.ShapeNone {
			adopters[s] = append(adopters[s], name)
		}
	}
	for _, s := range []kind.Shape{kind.ShapeCells, kind.ShapeValue, kind.ShapeCurve} {
		if len(adopters[s]) != 1 {
			t.Errorf("shape %d is adopted by %v, want exactly one kind", s, adopters[s])
		}
	}
}

// TestRendererFor pins which kind draws which record: its own kind, unless
// the record does not have its kind's shape; then, as for a record of an
// unknown kind, the kind that adopts its shape, probabilities before a
// value before densities.
func TestRendererFor(t *testing.T) {
	v := 1.0
	p, d := []float64{1}, []float64{1}
	cases := []struct {
		name string
		r    schema.Release
		want string // the kind whose renderer draws it; "" for none
	}{
		{"histogram", schema.Release{Kind: "histogram", Probabilities: p}, "histogram"},
		{"empty histogram", schema.Release{Kind: "histogram"}, "histogram"},
		{"histogram with a value", schema.Release{Kind: "histogram", Value: &v}, "histogram"},
		{"density", schema.Release{Kind: "density", Densities: d}, "density"},
		{"density with probabilities", schema.Release{Kind: "density", Probabilities: p}, "density"},
		{"randomized response", schema.Release{Kind: "randomized_response", Probabilities: p}, "randomized_response"},
		{"regression", schema.Release{Kind: "regression"}, "regression"},
		{"count", schema.Release{Kind: "count", Value: &v}, "count"},
		{"sum", schema.Release{Kind: "sum", Value: &v}, "sum"},
		{"mean without a value", schema.Release{Kind: "mean"}, "mean"},
		{"count with probabilities", schema.Release{Kind: "count", Value: &v, Probabilities: p}, "histogram"},
		{"sum with densities only", schema.Release{Kind: "sum", Densities: d}, "density"},
		{"mean with a value and densities", schema.Release{Kind: "mean", Value: &v, Densities: d}, "mean"},
		{"unknown with probabilities", schema.Release{Kind: "sketch", Probabilities: p, Value: &v, Densities: d}, "histogram"},
		{"unknown with a value", schema.Release{Kind: "sketch", Value: &v, Densities: d}, "count"},
		{"unknown with densities", schema.Release{Kind: "", Densities: d}, "density"},
		{"unknown with nothing", schema.Release{Kind: "sketch"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rd, ok := kind.RendererFor(c.r)
			var got string
			if ok {
				got = rd.(kind.Kind).Name()
			}
			if got != c.want {
				t.Errorf("drawn by %q, want %q", got, c.want)
			}
		})
	}
}
