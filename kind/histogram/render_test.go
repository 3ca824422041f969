package histogram

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/chart/charttest"
	"github.com/dpstream/dpstream/schema"
)

// Tests of the charts of histogram releases: which chart a record's shape
// gets and the notes on records that do not fit. The charts themselves
// are tested in package chart; every expected marginal and label below is
// computed by hand or from the definition in the test.

var seq, countsFor = charttest.Seq, charttest.CountsFor

func histRelease(p, counts, edges []float64) schema.Release {
	return schema.Release{ReleaseID: "s/h/0", Stream: "s", Release: "h", Kind: Name, Status: "ok",
		Probabilities: p, NoisyCounts: counts, Edges: edges}
}

func gridRelease(shape []int64, fields []string, p, edges []float64) schema.Release {
	return schema.Release{ReleaseID: "s/h2/0", Stream: "s", Release: "h2", Kind: Name, Status: "ok",
		Shape: shape, Fields: fields, Probabilities: p, NoisyCounts: countsFor(p, 1000), Edges: edges}
}

// TestRenderOneField checks that a one-field histogram is the bar chart of
// its bins, with Shape and Fields, as releases carry them now, exactly as
// without them, as older releases have it.
func TestRenderOneField(t *testing.T) {
	many := make([]float64, 120)
	for i := range many {
		many[i] = float64(i%7+1) / 480
	}
	for _, p := range [][]float64{{0.25, 0.75}, many} {
		old := histRelease(p, countsFor(p, 500), seq(0, 1, len(p)+1))
		iv := 3.0
		old.Interval95 = &iv
		cur := old
		cur.Shape, cur.Fields = []int64{int64(len(p))}, []string{"km"}
		for _, w := range []int{20, 80} {
			o := chart.Options{Width: w}
			a, b := Kind{}.Render(old, o), Kind{}.Render(cur, o)
			if strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Errorf("%d bins, width %d: with Shape and Fields\n%s\nwithout\n%s", len(p), w, strings.Join(b, "\n"), strings.Join(a, "\n"))
			}
			want := chart.Bins{P: old.Probabilities, Counts: old.NoisyCounts, Edges: old.Edges, Interval: &iv}.Draw(o)
			if strings.Join(a, "\n") != strings.Join(want, "\n") {
				t.Errorf("%d bins, width %d: not the chart of the bins:\n%s", len(p), w, strings.Join(a, "\n"))
			}
		}
	}
	charttest.CheckBars(t, Kind{}.Render(histRelease([]float64{0.2, 0.8}, []float64{20, 80}, []float64{0, 1, 2}), chart.Options{Width: 80}),
		[]float64{0.2, 0.8}, []float64{20, 80}, 80)
}

// TestRenderTwoFields checks that a histogram over two fields is a
// heatmap of its cells under a subheader with the fields' names and
// ranges, split from the release's edges.
func TestRenderTwoFields(t *testing.T) {
	p := []float64{
		0.05, 0.02, 0.05, 0.01,
		0.08, 0.30, 0.25, 0.04,
		0.00, 0.16, 0.02, 0.02,
	}
	r := gridRelease([]int64{3, 4}, []string{"age", "km"}, p, []float64{0, 10, 20, 30, 0, 1, 2, 3, 4})
	lines := Kind{}.Render(r, chart.Options{Width: 80})
	if want := "3 × 4 bins over age × km on [0, 30] × [0, 4]; shade ∝ probability"; lines[0] != want {
		t.Errorf("subheader %q, want %q", lines[0], want)
	}
	// Shades by the legend's rule, relative to the largest cell 0.30.
	for _, want := range []string{" 0 │░░░░░░░░░░░░░░░░", "10 │▒▒▒▒████████░░░░", "20 │    ▓▓▓▓░░░░░░░░", "0              4", "rows: age, columns: km"} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("heatmap lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}

// splitMarginals splits a 3-D chart into its title lines and the lines of
// each marginal's bar chart.
func splitMarginals(lines []string) (titles []string, blocks [][]string) {
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "marginal of "):
			titles = append(titles, l)
			blocks = append(blocks, nil)
		case len(blocks) > 0:
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], l)
		}
	}
	return titles, blocks
}

// TestRenderThreeFields builds 3-D releases whose marginals are known in
// closed form and checks the three bar charts against them: probabilities
// p[a][b][c] = pa[a]·pb[b]·pc[c] (so the marginals are pa, pb, pc) and
// counts 1 + a + 10b + 100c (so the marginal of a is
// B·C·(1+a) + 10·C·B(B−1)/2 + 100·B·C(C−1)/2, and alike for b and c).
// Sums of integers are exact, so the counts must match exactly.
func TestRenderThreeFields(t *testing.T) {
	pa := []float64{0.2, 0.8}
	pb := []float64{0.1, 0.3, 0.6}
	pc := []float64{0.5, 0.25, 0.25, 0}
	A, B, C := len(pa), len(pb), len(pc)
	p := make([]float64, 0, A*B*C)
	counts := make([]float64, 0, A*B*C)
	for a := range A {
		for b := range B {
			for c := range C {
				p = append(p, pa[a]*pb[b]*pc[c])
				counts = append(counts, float64(1+a+10*b+100*c))
			}
		}
	}
	tri := func(n int) float64 { return float64(n * (n - 1) / 2) }
	ca, cb, cc := make([]float64, A), make([]float64, B), make([]float64, C)
	for a := range ca {
		ca[a] = float64(B*C*(1+a)) + 10*float64(C)*tri(B) + 100*float64(B)*tri(C)
	}
	for b := range cb {
		cb[b] = float64(A*C*(1+10*b)) + float64(C)*tri(A) + 100*float64(A)*tri(C)
	}
	for c := range cc {
		cc[c] = float64(A*B*(1+100*c)) + float64(B)*tri(A) + 10*float64(A)*tri(B)
	}
	edges := append(append([]float64{0, 1, 2}, seq(10, 5, 4)...), seq(-2, 1, 5)...)
	for _, w := range []int{20, 80, 200} {
		t.Run(fmt.Sprintf("width %d", w), func(t *testing.T) {
			r := gridRelease([]int64{2, 3, 4}, []string{"a", "b", "c"}, p, edges)
			r.NoisyCounts = counts
			lines := Kind{}.Render(r, chart.Options{Width: w})
			if !strings.HasPrefix(lines[0], "2 × 3 × 4 bins over a × b × c on [0, 2] × [10, 25] × [-2, 2]: one-field marginals") {
				t.Errorf("subheader %q", lines[0])
			}
			titles, blocks := splitMarginals(lines)
			wantTitles := []string{"marginal of a (summed over b, c)", "marginal of b (summed over a, c)", "marginal of c (summed over a, b)"}
			if strings.Join(titles, "|") != strings.Join(wantTitles, "|") {
				t.Fatalf("titles %q, want %q", titles, wantTitles)
			}
			wantLabels := [][]string{
				{"[0, 1)", "[1, 2]"},
				{"[10, 15)", "[15, 20)", "[20, 25]"},
				{"[-2, -1)", "[-1,  0)", "[ 0,  1)", "[ 1,  2]"},
			}
			for i, m := range [][2][]float64{{pa, ca}, {pb, cb}, {pc, cc}} {
				charttest.CheckBars(t, blocks[i], m[0], m[1], w)
				var labels []string
				for _, b := range charttest.ParseBars(t, blocks[i]) {
					labels = append(labels, b.Label)
				}
				if strings.Join(labels, "|") != strings.Join(wantLabels[i], "|") {
					t.Errorf("marginal %d labels %q, want %q", i, labels, wantLabels[i])
				}
			}
		})
	}
	// Without fitting edges and counts: one note each, bins by index,
	// counts as –, and the marginals still drawn.
	r := gridRelease([]int64{2, 3, 4}, []string{"a", "b", "c"}, p, []float64{0, 1})
	r.NoisyCounts = counts[:5]
	lines := Kind{}.Render(r, chart.Options{Width: 80})
	out := strings.Join(lines, "\n")
	for _, want := range []string{"2 edges for shape [2 3 4], not 12: bins are labelled by index", "5 noisy counts for 24 cells: marginal counts shown as –"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want the note %q once:\n%s", want, out)
		}
	}
	if strings.Contains(out, "edges do not bound") || strings.Contains(out, "missing ones shown") {
		t.Errorf("the marginals repeat the notes:\n%s", out)
	}
	_, blocks := splitMarginals(lines)
	for i, m := range [][]float64{pa, pb, pc} {
		bars := charttest.ParseBars(t, blocks[i])
		if len(bars) != len(m) || bars[0].Label != "#0" || bars[0].Fields[1] != "–" {
			t.Errorf("marginal %d: %+v", i, bars)
		}
	}
}

// TestRenderMalformed feeds broken histogram releases and checks that
// each is explained by the note it calls for, in yellow, with what can
// still be drawn.
func TestRenderMalformed(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	four := []float64{0.1, 0.2, 0.3, 0.4}
	edges22 := []float64{0, 1, 2, 0, 1, 2}
	cases := []struct {
		name string
		r    schema.Release
		note string   // the yellow note, or its start
		also []string // more text the output must have
	}{
		{"no bins", schema.Release{Kind: Name, Status: "ok"}, "histogram with no bins in the release", nil},
		{"counts without probabilities", schema.Release{Kind: Name, Status: "ok", NoisyCounts: []float64{1, 2}}, "histogram with no bins in the release", nil},
		{"probabilities without counts", histRelease([]float64{0.5, 0.5}, nil, []float64{0, 1, 2}), "0 noisy counts for 2 bins: missing ones shown as –", nil},
		{"shape product too small", gridRelease([]int64{3, 4}, []string{"a", "b"}, seq(0.1, 0, 10), nil),
			"shape [3 4] has 12 cells, not the 10 probabilities: cells drawn as a flat list, labelled by index", []string{"#9 │"}},
		{"shape that overflows", gridRelease([]int64{1 << 62, 1 << 62}, []string{"a", "b"}, four, nil),
			"shape [4611686018427387904 4611686018427387904] has more cells than the 4 probabilities", []string{"#3 │"}},
		{"zero bins", gridRelease([]int64{0, 4}, []string{"a", "b"}, four, nil), "shape [0 4] has a field with 0 bins", nil},
		{"negative bins", gridRelease([]int64{2, -2}, []string{"a", "b"}, four, nil), "shape [2 -2] has a field with -2 bins", nil},
		{"one-field shape wrong", gridRelease([]int64{5}, []string{"a"}, []float64{0.5, 0.5}, []float64{0, 1, 2}),
			"shape [5] has 5 cells, not the 2 probabilities", []string{"[0, 1) │"}},
		{"one field, two names", gridRelease([]int64{2}, []string{"a", "b"}, []float64{0.5, 0.5}, []float64{0, 1, 2}),
			"2 field names for a histogram over 1 field", []string{"[1, 2] │"}},
		{"names and no shape", gridRelease(nil, []string{"a", "b"}, four, nil), "2 field names and no shape: cells drawn as a flat list", nil},
		{"2-D edges wrong", gridRelease([]int64{2, 2}, []string{"a", "b"}, four, []float64{0, 1, 2, 3, 4}),
			"5 edges for shape [2 2], not 6: bins are labelled by index", []string{"#0 │", "#1 │", "#0    #1"}},
		{"2-D names wrong", gridRelease([]int64{2, 2}, []string{"a"}, four, edges22),
			"1 field names for a histogram over 2 fields: fields are numbered", []string{"rows: field 1, columns: field 2"}},
		{"2-D NaN and negative cells", gridRelease([]int64{2, 2}, []string{"a", "b"}, []float64{nan, 0.4, -0.1, 0.6}, edges22),
			// 0.4 is ⅔ of the largest, 0.6: ▓.
			"2 of 4 cells NaN, infinite or negative: shown as ?", []string{"0 │????▓▓▓▓", "1 │????████"}},
		{"2-D counts wrong", func() schema.Release {
			r := gridRelease([]int64{2, 2}, []string{"a", "b"}, four, edges22)
			r.NoisyCounts = nil
			return r
		}(), "0 noisy counts for 4 cells (the heatmap does not use them)", nil},
		{"3-D infinite cell", gridRelease([]int64{1, 2, 2}, []string{"a", "b", "c"}, []float64{inf, 0.2, 0.3, 0.4}, []float64{0, 1, 0, 1, 2, 0, 1, 2}),
			"1 of 4 cells NaN, infinite or negative", []string{"(+Inf)"}},
		{"4 fields", gridRelease([]int64{1, 1, 2, 2}, []string{"a", "b", "c", "d"}, four, nil),
			"histogram over 4 fields (at most 3 are expected): drawn as one-field marginals", []string{"marginal of d (summed over a, b, c)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			colored := strings.Join(Kind{}.Render(c.r, chart.Options{Width: 60, Color: true}), "\n")
			plain := strings.Join(Kind{}.Render(c.r, chart.Options{Width: 60}), "\n")
			if !strings.Contains(colored, chart.Yellow+c.note) {
				t.Errorf("no yellow note %q:\n%s", c.note, plain)
			}
			if chart.StripANSI(colored) != plain {
				t.Errorf("colours changed the text:\n%s\nvs\n%s", chart.StripANSI(colored), plain)
			}
			for _, want := range c.also {
				if !strings.Contains(plain, want) {
					t.Errorf("output lacks %q:\n%s", want, plain)
				}
			}
		})
	}
}

func TestSampleWidth(t *testing.T) {
	cases := []struct {
		name string
		r    schema.Release
		want int
	}{
		{"two fields", schema.Release{Fields: []string{"a", "b"}, Shape: []int64{2, 2}}, 2},
		{"shape without names", schema.Release{Shape: []int64{2, 2, 2}}, 3},
		{"before Shape and Fields", schema.Release{}, 1},
	}
	for _, c := range cases {
		if got := (Kind{}).SampleWidth(c.r); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestLine checks the demo's line of records the demo never prints (its
// own releases are pinned by cmd/dpstream's TestDemoLine): none panics.
func TestLine(t *testing.T) {
	cases := []struct {
		name string
		r    schema.Release
		want string
	}{
		{"no edges", histRelease([]float64{0.25, 0.5, 0.25}, []float64{25, 50, -1}, nil), "▅█▅  n≈75"},
		{"no bins", histRelease(nil, nil, nil), ""},
		{"shape without names", gridRelease([]int64{2, 2}, nil, []float64{0.1, 0.2, 0.3, 0.4}, nil), "(malformed shape)"},
		{"shape too large", gridRelease([]int64{5, 2}, []string{"a", "b"}, []float64{0.1, 0.2, 0.3, 0.4}, nil), "(malformed shape)"},
		{"two fields", gridRelease([]int64{2, 2}, []string{"a", "b"}, []float64{0.1, 0.2, 0.3, 0.4}, nil), "a ▄█  b ▆█"},
	}
	for _, c := range cases {
		if got := (Kind{}).Line(c.r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
