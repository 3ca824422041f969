package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/density"
	"github.com/dpstream/dpstream/kind/histogram"
	"github.com/dpstream/dpstream/kind/randomizedresponse"
	"github.com/dpstream/dpstream/kind/sum"
)

// minimalRelease is the release line of minimal that withRelease replaces.
const minimalRelease = "      - {name: n, kind: count, epsilon: 0.5}\n"

// withRelease returns minimal with its one release replaced by rel, a YAML
// list item indented as in minimal (the release's mapping starts on line
// 10). The stream has L = max_events_per_window = 4 and privacy unit
// rider_id.
func withRelease(rel string) string {
	return strings.Replace(minimal, minimalRelease, rel, 1)
}

// goodReleases are valid releases using the keys of histograms over
// several fields, bins: auto, max_per_bin, samples and randomized
// response, with the Release each must decode to. The expected values are
// written from the YAML by hand; Line is 10, where the release starts.
var goodReleases = []struct {
	name string
	yaml string
	want config.Release
}{
	{
		name: "histogram with one field, as before",
		yaml: "      - {name: fare_hist, kind: histogram, field: fare, bounds: [0, 100], bins: 20, epsilon: 0.5}\n",
		want: config.Release{Name: "fare_hist", Kind: "histogram", Params: &histogram.Config{Field: "fare", Bounds: [2]float64{0, 100}, Bins: 20, Fields: []string{"fare"}, AxisBounds: [][2]float64{{0, 100}}, AxisBins: []int{20}}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		name: "histogram with one field given as fields, bounds and bins as lists",
		yaml: "      - {name: h, kind: histogram, fields: [fare], bounds: [[0, 100]], bins: [20], epsilon: 0.5}\n",
		want: config.Release{Name: "h", Kind: "histogram", Params: &histogram.Config{Field: "fare", Bounds: [2]float64{0, 100}, Bins: 20, Fields: []string{"fare"}, AxisBounds: [][2]float64{{0, 100}}, AxisBins: []int{20}}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		name: "histogram over two fields, the block form of the documentation",
		yaml: `      - name: pickup
        kind: histogram
        fields: [pickup_lon, pickup_lat]
        bounds: [[-74.05, -73.75], [40.6, 40.9]]
        bins: [30, 30]
        max_per_bin: 1
        samples: 100
        noise: gaussian
        epsilon: 1
        delta: 1e-6
`,
		want: config.Release{Name: "pickup", Kind: "histogram", Params: &histogram.Config{Field: "pickup_lon", Bounds: [2]float64{-74.05, -73.75}, Bins: 30, Fields: []string{"pickup_lon", "pickup_lat"}, AxisBounds: [][2]float64{{-74.05, -73.75}, {40.6, 40.9}}, AxisBins: []int{30, 30}, MaxPerBin: 1, Samples: 100}, Noise: config.NoiseGaussian, Epsilon: 1, Delta: 1e-6, Line: 10},
	},
	{
		// 21³ = 9261 cells, the most for one bin count on 3 fields.
		name: "one bin count for three fields",
		yaml: "      - {name: h, kind: histogram, fields: [a, b, c], bounds: [[0, 1], [-1, 1], [5, 6]], bins: 21, max_per_bin: 4, epsilon: 0.5}\n",
		want: config.Release{Name: "h", Kind: "histogram", Params: &histogram.Config{Field: "a", Bounds: [2]float64{0, 1}, Bins: 21, Fields: []string{"a", "b", "c"}, AxisBounds: [][2]float64{{0, 1}, {-1, 1}, {5, 6}}, AxisBins: []int{21, 21, 21}, MaxPerBin: 4}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		// Exactly MaxBins cells.
		name: "bins product at the limit",
		yaml: "      - {name: h, kind: histogram, fields: [a, b], bounds: [[0, 1], [0, 1]], bins: [100, 100], epsilon: 0.5}\n",
		want: config.Release{Name: "h", Kind: "histogram", Params: &histogram.Config{Field: "a", Bounds: [2]float64{0, 1}, Bins: 100, Fields: []string{"a", "b"}, AxisBounds: [][2]float64{{0, 1}, {0, 1}}, AxisBins: []int{100, 100}}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		name: "bins auto",
		yaml: "      - {name: h, kind: histogram, fields: [x, y], bounds: [[0, 1], [0, 2]], bins: auto, expected_events: 20000, samples: 0, epsilon: 0.5}\n",
		want: config.Release{Name: "h", Kind: "histogram", Params: &histogram.Config{Field: "x", Bounds: [2]float64{0, 1}, Fields: []string{"x", "y"}, AxisBounds: [][2]float64{{0, 1}, {0, 2}}, BinsAuto: true, ExpectedEvents: 20000}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		// AutoBins caps itself: an enormous declared size still gives at
		// most MaxBins cells, so it is accepted.
		name: "bins auto with a huge declared size",
		yaml: "      - {name: h, kind: histogram, fields: [x, y, z], bounds: [[0, 1], [0, 1], [0, 1]], bins: auto, expected_events: 9223372036854775807, epsilon: 0.5}\n",
		want: config.Release{Name: "h", Kind: "histogram", Params: &histogram.Config{Field: "x", Bounds: [2]float64{0, 1}, Fields: []string{"x", "y", "z"}, AxisBounds: [][2]float64{{0, 1}, {0, 1}, {0, 1}}, BinsAuto: true, ExpectedEvents: 9223372036854775807}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		name: "density with samples",
		yaml: "      - {name: d, kind: density, field: km, bounds: [0, 40], terms: 8, samples: 100000, epsilon: 0.5}\n",
		want: config.Release{Name: "d", Kind: "density", Params: &density.Config{Field: "km", Bounds: [2]float64{0, 40}, Terms: 8, Samples: 100000}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		name: "density with terms auto and expected_events",
		yaml: "      - {name: d, kind: density, field: km, bounds: [0, 40], terms: auto, expected_events: 5000, epsilon: 0.5}\n",
		want: config.Release{Name: "d", Kind: "density", Params: &density.Config{Field: "km", Bounds: [2]float64{0, 40}, TermsAuto: true, ExpectedEvents: 5000, Smoothness: 2}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		name: "randomized response with epsilon_local, the block form of the documentation",
		yaml: `      - name: mode
        kind: randomized_response
        field: travel_mode
        categories: [walk, bike, bus, car]
        epsilon_local: 1.0
        max_per_bin: 1
        noise: laplace
        epsilon: 0.5
`,
		want: config.Release{Name: "mode", Kind: "randomized_response", Params: &randomizedresponse.Config{Field: "travel_mode", Categories: []string{"walk", "bike", "bus", "car"}, LocalEpsilon: 1, MaxPerBin: 1}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
	{
		// Any scalar is a category's text, as for every string field.
		name: "randomized response with p and Gaussian central noise",
		yaml: "      - {name: rr, kind: randomized_response, field: level, categories: [1, 2, \"3\", yes], p: 0.4, noise: gaussian, epsilon: 1, delta: 1e-9}\n",
		want: config.Release{Name: "rr", Kind: "randomized_response", Params: &randomizedresponse.Config{Field: "level", Categories: []string{"1", "2", "3", "yes"}, RRProbability: 0.4}, Noise: config.NoiseGaussian, Epsilon: 1, Delta: 1e-9, Line: 10},
	},
	{
		name: "sum has no histogram settings",
		yaml: "      - {name: s, kind: sum, field: fare, bounds: [0, 120], epsilon: 0.5}\n",
		want: config.Release{Name: "s", Kind: "sum", Params: &sum.Config{Field: "fare", Bounds: [2]float64{0, 120}}, Noise: config.NoiseLaplace, Epsilon: 0.5, Line: 10},
	},
}

func TestReleaseValues(t *testing.T) {
	for _, tt := range goodReleases {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(withRelease(tt.yaml)), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Streams[0].Releases[0]
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("release =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestReleaseAnchors checks that YAML anchors work for the new list keys:
// one categories list and one fields list shared by two releases.
func TestReleaseAnchors(t *testing.T) {
	src := withRelease(`      - {name: a, kind: randomized_response, field: m, categories: &cats [x, y, z], p: 0.5, epsilon: 0.5}
      - {name: b, kind: randomized_response, field: n, categories: *cats, epsilon_local: 2, epsilon: 0.5}
      - {name: c, kind: histogram, fields: &xy [x, y], bounds: &b2 [[0, 1], [0, 1]], bins: 3, epsilon: 0.5}
      - {name: d, kind: histogram, fields: *xy, bounds: *b2, bins: [2, 5], epsilon: 0.5}
`)
	cfg, err := config.Parse([]byte(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Streams[0].Releases
	rr := func(i int) *randomizedresponse.Config { return rs[i].Params.(*randomizedresponse.Config) }
	h := func(i int) *histogram.Config { return rs[i].Params.(*histogram.Config) }
	checks := []struct {
		name      string
		got, want any
	}{
		{"a.Categories", rr(0).Categories, []string{"x", "y", "z"}},
		{"b.Categories", rr(1).Categories, []string{"x", "y", "z"}},
		{"b.LocalEpsilon", rr(1).LocalEpsilon, 2.0},
		{"c.AxisBins", h(2).AxisBins, []int{3, 3}},
		{"d.Fields", h(3).Fields, []string{"x", "y"}},
		{"d.AxisBounds", h(3).AxisBounds, [][2]float64{{0, 1}, {0, 1}}},
		{"d.AxisBins", h(3).AxisBins, []int{2, 5}},
		{"d.Bins", h(3).Bins, 2},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestReleaseKeyErrors covers the boundaries and combinations of the new
// keys that the fixtures do not. Releases start on line 10 of the file.
func TestReleaseKeyErrors(t *testing.T) {
	const rel = "streams[0].releases[0]"
	tests := []struct {
		name  string
		rel   string // replaces minimal's release
		wants []want
	}{
		{"22 bins on 3 fields",
			"      - {name: h, kind: histogram, fields: [a, b, c], bounds: [[0, 1], [0, 1], [0, 1]], bins: 22, epsilon: 0.5}\n",
			[]want{{10, rel + ".bins", "22 bins on each of 3 fields make 10648 cells, more than 10000; use fewer bins (or a list with one count per field)"}}},
		{"one cell over the limit",
			"      - {name: h, kind: histogram, fields: [a, b], bounds: [[0, 1], [0, 1]], bins: [100, 101], epsilon: 0.5}\n",
			[]want{{10, rel + ".bins", "[100, 101] make 10100 cells (the product of the bins of the fields), more than 10000"}}},
		{"nested bounds for a sum",
			"      - {name: s, kind: sum, field: fare, bounds: [[0, 1], [0, 1]], epsilon: 0.5}\n",
			[]want{{10, rel + ".bounds", "must be [lo, hi], two numbers; item 1 is a list"}}},
		{"bins auto for a count",
			"      - {name: c, kind: count, bins: auto, expected_events: 5, epsilon: 0.5}\n",
			[]want{
				{10, rel + ".bins", "is only used with kind histogram, not count"},
				{10, rel + ".expected_events", "is only used with kind density or histogram, not count"},
			}},
		{"bins for a density",
			"      - {name: d, kind: density, field: km, bounds: [0, 1], terms: auto, bins: auto, expected_events: 5, epsilon: 0.5}\n",
			[]want{{10, rel + ".bins", "is only used with kind histogram, not density"}}},
		{"fields for a count",
			"      - {name: c, kind: count, fields: [a], epsilon: 0.5}\n",
			[]want{{10, rel + ".fields", "is only used with kind histogram, not count"}}},
		{"fields for a randomized response",
			"      - {name: r, kind: randomized_response, fields: [a], categories: [x, y], p: 0.5, epsilon: 0.5}\n",
			[]want{
				{10, rel + ".field", "required for kind randomized_response"},
				{10, rel + ".fields", "is only used with kind histogram, not randomized_response (use field for its one field)"},
			}},
		{"histogram without field or fields",
			"      - {name: h, kind: histogram, bounds: [0, 1], bins: 3, epsilon: 0.5}\n",
			[]want{{10, rel + ".field", "required for kind histogram: the event field to bin (or fields: [a, b] for a histogram over 2 to 3 fields)"}}},
		{"four bounds pairs",
			"      - {name: h, kind: histogram, field: a, bounds: [[0, 1], [0, 1], [0, 1], [0, 1]], bins: 3, epsilon: 0.5}\n",
			[]want{{10, rel + ".bounds", "has 4 [lo, hi] for 1 field: give one [lo, hi] per field"}}},
		{"bins list for one field given as field",
			"      - {name: h, kind: histogram, field: a, bounds: [0, 1], bins: [3, 3], epsilon: 0.5}\n",
			[]want{{10, rel + ".bins", "has 2 entries for 1 field: give one per field"}}},
		{"nested bounds item with one number",
			"      - {name: h, kind: histogram, fields: [a, b], bounds: [[0, 1], [2]], bins: 3, epsilon: 0.5}\n",
			[]want{{10, rel + ".bounds[1]", "must be [lo, hi], two numbers; got 1 items"}}},
		{"privacy unit as first of fields",
			"      - {name: h, kind: histogram, fields: [rider_id, b], bounds: [[0, 1], [0, 1]], bins: 3, epsilon: 0.5}\n",
			[]want{{10, rel + ".fields[0]", `"rider_id" is the stream's privacy unit (line 5)`}}},
		{"field and fields on different lines",
			"      - name: h\n        kind: histogram\n        field: a\n        fields: [a, b]\n        bounds: [[0, 1], [0, 1]]\n        bins: 3\n        epsilon: 0.5\n",
			[]want{{13, rel + ".fields", "cannot be given together with field (line 12)"}}},
		{"bins auto needs expected_events, reported at bins",
			"      - name: h\n        kind: histogram\n        field: a\n        bounds: [0, 1]\n        bins: auto\n        epsilon: 0.5\n",
			[]want{{14, rel + ".expected_events", "required with bins: auto"}}},
		{"expected_events with a histogram lacking bins",
			"      - {name: h, kind: histogram, field: a, bounds: [0, 1], expected_events: 10, epsilon: 0.5}\n",
			[]want{{10, rel + ".bins", "required for kind histogram: the number of equal-width bins (one integer for every field, a list with one per field, or auto with expected_events)"}}},
		{"max_per_bin one above L",
			"      - {name: h, kind: histogram, field: a, bounds: [0, 1], bins: 3, max_per_bin: 5, epsilon: 0.5}\n",
			[]want{{10, rel + ".max_per_bin", "5 is more than contribution.max_events_per_window 4 (line 7)"}}},
		{"too many categories",
			"      - {name: r, kind: randomized_response, field: m, categories: [" + strings.Repeat("c, ", 1000) + "c], p: 0.5, epsilon: 0.5}\n",
			[]want{{10, rel + ".categories", "must list 2 to 1000 categories, got 1001"}}},
		{"p not a number",
			"      - {name: r, kind: randomized_response, field: m, categories: [x, y], p: .nan, epsilon: 0.5}\n",
			[]want{{10, rel + ".p", "must be in (0, 1), the probability that a producer reports a uniform category instead of the true one, got NaN"}}},
		{"negative epsilon_local",
			"      - {name: r, kind: randomized_response, field: m, categories: [x, y], epsilon_local: -1, epsilon: 0.5}\n",
			[]want{{10, rel + ".epsilon_local", "must be > 0, got -1"}}},
		{"categories list of lists",
			"      - {name: r, kind: randomized_response, field: m, categories: [[x], y], p: 0.5, epsilon: 0.5}\n",
			[]want{{10, rel + ".categories[0]", "must be a string, got a list"}}},
		{"samples on a sum",
			"      - {name: s, kind: sum, field: fare, bounds: [0, 1], samples: 10, epsilon: 0.5}\n",
			[]want{{10, rel + ".samples", "is only used with kind density or histogram, not sum"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(withRelease(tt.rel)), "p.yaml")
			checkErrors(t, err, "p.yaml", tt.wants)
		})
	}
}

// TestMaxPerBinInvalidL checks that max_per_bin is not compared with an
// invalid L, which is reported on its own.
func TestMaxPerBinInvalidL(t *testing.T) {
	src := strings.Replace(withRelease("      - {name: h, kind: histogram, field: a, bounds: [0, 1], bins: 3, max_per_bin: 2, epsilon: 0.5}\n"),
		"max_events_per_window: 4", "max_events_per_window: 0", 1)
	_, err := config.Parse([]byte(src), "p.yaml")
	checkErrors(t, err, "p.yaml", []want{{7, "streams[0].contribution.max_events_per_window", "must be >= 1, got 0"}})
}

// TestNewKeyErrorString checks the whole text of errors about the new keys:
// file:line: field path: message.
func TestNewKeyErrorString(t *testing.T) {
	tests := []struct {
		rel  string
		want string
	}{
		{"      - {name: h, kind: histogram, fields: [a, b], bounds: [[0, 1], [0, 1]], bins: [3, 0], epsilon: 0.5}\n",
			"p.yaml:10: streams[0].releases[0].bins[1]: must be in 1..10000, got 0"},
		{"      - {name: r, kind: randomized_response, field: m, categories: [x, y], p: 2, epsilon: 0.5}\n",
			"p.yaml:10: streams[0].releases[0].p: must be in (0, 1), the probability that a producer reports a uniform category instead of the true one, got 2"},
	}
	for _, tt := range tests {
		_, err := config.Parse([]byte(withRelease(tt.rel)), "p.yaml")
		if err == nil || err.Error() != tt.want {
			t.Errorf("error = %v\nwant %s", err, tt.want)
		}
	}
}

// TestReleaseErrorOrder checks the order of a release's errors on one line
// (a release written as one YAML flow mapping), which the sort by line
// keeps: the kind's keys first, then noise, epsilon and delta, then the
// stream's checks of the release (its privacy unit aggregated, a cap
// above L). The order is the one dpstream has always printed.
func TestReleaseErrorOrder(t *testing.T) {
	const rel = "streams[0].releases[0]."
	tests := []struct {
		name string
		rel  string
		want []string // fields of the errors on line 10, in order
	}{
		{"a kind's key before epsilon",
			`      - {name: s, kind: sum, field: "", bounds: [0, 1], epsilon: -1}` + "\n",
			[]string{"field", "epsilon"}},
		{"noise before epsilon",
			"      - {name: s, kind: sum, field: f, bounds: [0, 1], noise: foo, epsilon: -1}\n",
			[]string{"noise", "epsilon"}},
		{"epsilon before delta",
			"      - {name: s, kind: sum, field: f, bounds: [0, 1], noise: gaussian, epsilon: -1, delta: 2}\n",
			[]string{"epsilon", "delta"}},
		{"a kind that reads noise and delta itself",
			"      - {name: g, kind: regression, method: foo, features: [{field: x, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, noise: gaussian, epsilon: 0, delta: 2}\n",
			[]string{"method", "noise", "epsilon", "delta"}},
		{"an unknown kind before epsilon",
			"      - {name: x, kind: histgram, epsilon: -1}\n",
			[]string{"kind", "epsilon"}},
		{"a histogram's field, bounds and fields",
			`      - {name: h, kind: histogram, field: "", fields: [a, b], bins: 3, epsilon: 0.5}` + "\n",
			[]string{"field", "bounds", "fields"}},
		{"randomized_response's cap before its categories",
			"      - {name: r, kind: randomized_response, field: m, categories: [a], max_per_bin: 0, p: 0.5, epsilon: 0.5}\n",
			[]string{"max_per_bin", "categories"}},
		{"a check against the stream last",
			"      - {name: h, kind: histogram, fields: [a, rider_id], bounds: [[0, 1], [0, 1]], bins: [3, 3], max_per_bin: 9, epsilon: 0, delta: 0.5}\n",
			[]string{"epsilon", "delta", "fields[1]", "max_per_bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(withRelease(tt.rel)), "p.yaml")
			var got []string
			for _, e := range config.Errors(err) {
				if e.Line == 10 {
					got = append(got, strings.TrimPrefix(e.Field, rel))
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors on the release's line: %q, want %q (%v)", got, tt.want, err)
			}
		})
	}
}
