package main

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/chart/charttest"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/kind/density"
	"github.com/dpstream/dpstream/kind/histogram"
	"github.com/dpstream/dpstream/schema"
)

// Tests of 'tail releases --plot' and 'simulate --plot' as the CLI draws
// them: the header, refusals, which kind draws a release, the samples
// line and the flags. The charts themselves are tested with the kinds
// (kind/*/render_test.go) and in internal/chart.

// TestPlotByKind checks that plotBody draws each release with its own
// kind's renderer, and a release of an unknown kind, or one that does not
// have its kind's shape, by the data it carries: probabilities as a
// histogram, then a value, then densities as a density; with nothing to
// draw it says so.
func TestPlotByKind(t *testing.T) {
	v, iv := 42.0, 9.0
	p, e := []float64{0.25, 0.75}, []float64{0, 5, 10}
	d := []float64{0.1, 0.3, 0.2}
	o := chart.Options{Width: 60}
	wantHist := strings.Join(histogram.Kind{}.Render(schema.Release{Probabilities: p, Edges: e}, o), "\n")
	wantDens := strings.Join(density.Kind{}.Render(schema.Release{Densities: d}, o), "\n")
	cases := []struct {
		name string
		r    schema.Release
		want string
	}{
		{"count", schema.Release{Kind: "count", Value: &v, Interval95: &iv}, "value 42 ± 9 (95% noise interval)"},
		{"mean without a value", schema.Release{Kind: "mean"}, "no value in the release"},
		{"count with probabilities", schema.Release{Kind: "count", Value: &v, Probabilities: p, Edges: e}, wantHist},
		{"sum with densities only", schema.Release{Kind: "sum", Densities: d}, wantDens},
		{"unknown with probabilities", schema.Release{Kind: "sketch", Probabilities: p, Edges: e, Value: &v}, wantHist},
		{"unknown with a value", schema.Release{Kind: "sketch", Value: &v, Densities: d}, "value 42"},
		{"unknown with densities", schema.Release{Densities: d}, wantDens},
		{"unknown with nothing", schema.Release{Kind: "sketch"}, `kind "sketch": nothing to plot in the release`},
		{"no kind, nothing", schema.Release{}, `kind "": nothing to plot in the release`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.r.Status = "ok"
			if got := strings.Join(plotBody(c.r, o), "\n"); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestPlotOddReleases feeds releases a plotter could meet (refused, empty,
// unknown, inconsistent) and checks each gives a readable line and no
// chart, without panicking.
func TestPlotOddReleases(t *testing.T) {
	cases := []struct {
		name string
		r    schema.Release
		want string
	}{
		{"refused", schema.Release{Kind: "histogram", Status: "budget_exhausted"}, "refused: the stream's budget is exhausted"},
		{"refused with stray data", schema.Release{Kind: "histogram", Status: "budget_exhausted", Probabilities: []float64{1}}, "refused: the stream's budget is exhausted"},
		{"unknown status", schema.Release{Kind: "count", Status: "suppressed"}, `status "suppressed": not plotted`},
		{"no status", schema.Release{}, `status "": not plotted`},
		{"empty histogram", schema.Release{Kind: "histogram", Status: "ok"}, "histogram with no bins in the release"},
		{"empty density", schema.Release{Kind: "density", Status: "ok"}, "density with no values in the release"},
		{"unknown kind", schema.Release{Kind: "sketch", Status: "ok"}, `kind "sketch": nothing to plot`},
		{"counts without probabilities", schema.Release{Kind: "histogram", Status: "ok", NoisyCounts: []float64{1, 2}}, "histogram with no bins in the release"},
		{"probabilities without counts", schema.Release{Kind: "histogram", Status: "ok", Probabilities: []float64{0.5, 0.5}, Edges: []float64{0, 1, 2}}, "0 noisy counts for 2 bins: missing ones shown as –"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := plotRelease(&buf, c.r, chart.Options{Width: 80}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if !strings.Contains(out, c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
			if c.r.Status != "ok" && strings.ContainsAny(out, "█▏▎▍▌▋▊▉▁▂▃▄▅▆▇") {
				t.Errorf("a release that is not ok was drawn:\n%s", out)
			}
		})
	}
}

func TestPlotHeader(t *testing.T) {
	ms := func(tm time.Time) int64 { return tm.UnixMilli() }
	start := time.Date(2024, 5, 1, 12, 40, 0, 0, time.UTC)
	late := time.Date(2024, 5, 1, 23, 59, 58, 0, time.UTC)
	cases := []struct {
		name string
		r    schema.Release
		want string
	}{
		{"same day", schema.Release{Stream: "trips", Release: "km_hist", Kind: "histogram", Status: "ok",
			WindowStart: ms(start), WindowEnd: ms(start.Add(5 * time.Second)), EpsilonSpent: 1.75, EpsilonBudget: 12},
			"trips/km_hist (histogram)  2024-05-01 12:40:00–12:40:05 UTC  ok  ε spent 1.75 of 12"},
		{"across midnight", schema.Release{Stream: "trips", Release: "n", Kind: "count", Status: "budget_exhausted",
			WindowStart: ms(late), WindowEnd: ms(late.Add(5 * time.Second)), EpsilonSpent: 12, EpsilonBudget: 12},
			"trips/n (count)  2024-05-01 23:59:58–2024-05-02 00:00:03 UTC  budget_exhausted  ε spent 12 of 12"},
		{"three significant digits", schema.Release{Stream: "s", Release: "r", Kind: "mean", Status: "ok", EpsilonSpent: 0.5437981, EpsilonBudget: 1234.4},
			"s/r (mean)  1970-01-01 00:00:00–00:00:00 UTC  ok  ε spent 0.544 of 1234"},
		{"NaN budget", schema.Release{Stream: "s", Release: "r", Kind: "sum", Status: "ok", EpsilonSpent: math.NaN(), EpsilonBudget: 1},
			"s/r (sum)  1970-01-01 00:00:00–00:00:00 UTC  ok  ε spent NaN of 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := plotHeader(c.r); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestPlotColor checks that colours change nothing but escape codes,
// and that there are none without them.
func TestPlotColor(t *testing.T) {
	r := schema.Release{Stream: "s", Release: "h", Kind: "histogram", Status: "ok",
		Probabilities: []float64{0.2, 0.8}, NoisyCounts: []float64{20, 80}, Edges: []float64{0, 1, 2}}
	r.WindowEnd = 1000
	var plain, colored bytes.Buffer
	if err := plotRelease(&plain, r, chart.Options{Width: 60}); err != nil {
		t.Fatal(err)
	}
	if err := plotRelease(&colored, r, chart.Options{Width: 60, Color: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b") {
		t.Errorf("escape codes without Color:\n%q", plain.String())
	}
	if !strings.Contains(colored.String(), "\x1b[") {
		t.Errorf("no escape codes with Color:\n%q", colored.String())
	}
	if chart.StripANSI(colored.String()) != plain.String() {
		t.Errorf("colors changed the layout:\n%s\nvs\n%s", chart.StripANSI(colored.String()), plain.String())
	}
}

func TestPlotTailFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tail", "accountant", "--plot"}, "--plot draws releases only, not accountant"},
		{[]string{"tail", "releases", "--plot", "--width", "5"}, "--width 5: want 0 (automatic) or at least 20"},
		{[]string{"tail", "releases", "--plot", "--width", "-1"}, "--width -1"},
	}
	for _, c := range cases {
		code, _, stderr := cli(t.Context(), c.args...)
		if code != exitConfig || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, exitConfig, c.want)
		}
	}
}

// TestPlotFuzz draws thousands of random, mostly broken releases (random
// kinds, shapes, lengths, NaN and infinite values, names with control
// characters) at random widths, from a fixed seed. None may panic; every
// output is the header, a body and a blank line, holds no control
// character but newlines (a name from a release must not reach the
// terminal as an escape sequence) and, with colours off, no escape code.
// The demo's line of each (formatRelease) starts with the release's name
// and ends with its budget.
func TestPlotFuzz(t *testing.T) {
	rng := rand.New(rand.NewPCG(2024, 5))
	values := []float64{0, 0.1, 0.25, 1, 3, 1e-300, 1e300, -0.2, math.NaN(), math.Inf(1), math.Inf(-1)}
	names := []string{"", "x", "a long field name that goes on and on and on and on and on", "\x1b[2J", "tab\there", "new\nline", "\x00", "ünï"}
	shapes := []int64{-1, 0, 1, 2, 3, 5, 30, 1 << 40}
	kinds := []string{"histogram", "histogram", "randomized_response", "density", "count", "sum", "mean", "regression", "", "sketch"}
	floats := func(max int) []float64 {
		if rng.IntN(5) == 0 {
			return nil
		}
		xs := make([]float64, rng.IntN(max+1))
		for i := range xs {
			if rng.IntN(3) == 0 {
				xs[i] = values[rng.IntN(len(values))]
			} else {
				xs[i] = rng.Float64()
			}
		}
		return xs
	}
	strs := func() []string {
		if rng.IntN(4) == 0 {
			return nil
		}
		xs := make([]string, rng.IntN(5))
		for i := range xs {
			xs[i] = names[rng.IntN(len(names))]
		}
		return xs
	}
	for i := range 3000 {
		r := schema.Release{Stream: "s", Release: "r", Kind: kinds[rng.IntN(len(kinds))], Status: "ok",
			Probabilities: floats(40), NoisyCounts: floats(40), Edges: floats(50), Densities: floats(20),
			Fields: strs(), Categories: strs(), DebiasedCounts: floats(6), StdErrors: floats(6), Samples: floats(9)}
		if rng.IntN(4) > 0 {
			r.Shape = make([]int64, rng.IntN(5))
			for j := range r.Shape {
				r.Shape[j] = shapes[rng.IntN(len(shapes))]
			}
		}
		if r.Kind == "histogram" && rng.IntN(2) == 0 && len(r.Shape) > 0 {
			// A shape that fits, so that the heatmap and marginals are
			// reached too.
			n := int64(1)
			for j := range r.Shape {
				r.Shape[j] = 1 + rng.Int64N(6)
				n *= r.Shape[j]
			}
			r.Probabilities = make([]float64, n)
			for j := range r.Probabilities {
				r.Probabilities[j] = values[rng.IntN(len(values))]
			}
		}
		if rng.IntN(2) == 0 {
			x := values[rng.IntN(len(values))]
			r.LocalEpsilon = &x
		}
		if line := formatRelease(r); !strings.HasPrefix(line, "r ") || !strings.HasSuffix(line, "ε spent 0.00 of 0") {
			t.Fatalf("release %d %+v: demo line %q", i, r, line)
		}
		o := chart.Options{Width: rng.IntN(220), MaxBars: rng.IntN(60), Color: rng.IntN(2) == 0}
		var buf bytes.Buffer
		if err := plotRelease(&buf, r, o); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		out := buf.String()
		if !o.Color && strings.Contains(out, "\x1b") {
			t.Fatalf("release %d %+v: escape code with colours off:\n%q", i, r, out)
		}
		text := chart.StripANSI(out)
		if !strings.HasPrefix(text, plotHeader(r)+"\n") || !strings.HasSuffix(text, "\n\n") || len(text) <= len(plotHeader(r))+2 {
			t.Fatalf("release %d %+v: not header, body, blank line:\n%s", i, r, text)
		}
		for _, ch := range text {
			if ch != '\n' && (ch < 0x20 || ch == 0x7f || (ch >= 0x80 && ch < 0xa0)) {
				t.Fatalf("release %d %+v: control character %q in the output:\n%q", i, r, ch, text)
			}
		}
	}
}

// TestPlotSamples checks the line on synthetic samples: counted in
// samples of as many values as the release's own kind says.
func TestPlotSamples(t *testing.T) {
	h2 := schema.Release{Kind: "histogram", Status: "ok", Shape: []int64{2, 2}, Fields: []string{"a", "b"},
		Probabilities: []float64{0.1, 0.2, 0.3, 0.4}, Edges: []float64{0, 1, 2, 0, 1, 2},
		Samples: []float64{0.5, 1.5, 1.2, 0.1, 1.9, 1.9}}
	legacy := schema.Release{Kind: "histogram", Status: "ok", Probabilities: []float64{0.5, 0.5}, NoisyCounts: []float64{5, 5},
		Edges: []float64{0, 1, 2}, Samples: []float64{0.3}}
	dens := schema.Release{Kind: "density", Status: "ok", Edges: []float64{0, 0.5, 1}, Densities: []float64{1, 1, 1},
		Samples: []float64{0.1, 0.2, 0.3, 0.4, 0.5}}
	refused := h2
	refused.Status = "budget_exhausted"
	notWhole := h2
	notWhole.Samples = []float64{1, 2, 3}
	// A count's record that carries probabilities is drawn as a histogram,
	// but its samples are a count's: one value each.
	countCells := h2
	countCells.Kind = "count"
	unknown := h2
	unknown.Kind = "sketch"
	cases := []struct {
		name string
		r    schema.Release
		want string // "" for no samples line
	}{
		{"2-D: two values per sample", h2, "3 synthetic samples (drawn from this release; not plotted)"},
		{"1-D without fields", legacy, "1 synthetic sample (drawn from this release; not plotted)"},
		{"density: one value per sample", dens, "5 synthetic samples (drawn from this release; not plotted)"},
		{"refused", refused, ""},
		{"not whole samples", notWhole, "3 synthetic values do not make whole samples of 2 fields: not counted"},
		{"a count's, drawn as a histogram", countCells, "6 synthetic samples (drawn from this release; not plotted)"},
		{"unknown kind", unknown, "6 synthetic samples (drawn from this release; not plotted)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines := plotBody(c.r, chart.Options{Width: 80})
			last := lines[len(lines)-1]
			has := strings.Contains(strings.Join(lines, "\n"), "synthetic")
			switch {
			case c.want == "" && has:
				t.Errorf("samples line in\n%s", strings.Join(lines, "\n"))
			case c.want != "" && last != c.want:
				t.Errorf("last line %q, want %q", last, c.want)
			}
		})
	}
}

// TestPlotTail runs 'tail releases --plot' against an embedded broker
// holding a histogram, a count and a refused release.
func TestPlotTail(t *testing.T) {
	broker, err := kafkaio.StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	brokers := []string{broker.Addr()}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	const topic = "plot.releases"
	if err := kafkaio.Plaintext(brokers).EnsureTopics(ctx, []kafkaio.TopicSpec{{Name: topic, Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	v := 42.0
	iv := 9.0
	rels := []schema.Release{
		{ReleaseID: "trips/h/0", Stream: "trips", Release: "h", Kind: "histogram", Status: "ok", WindowEnd: 5000,
			Probabilities: []float64{0.25, 0.75}, NoisyCounts: []float64{25, 75}, Edges: []float64{0, 5, 10}},
		{ReleaseID: "trips/n/0", Stream: "trips", Release: "n", Kind: "count", Status: "ok", WindowEnd: 5000, Value: &v, Interval95: &iv},
		{ReleaseID: "trips/n/5000", Stream: "trips", Release: "n", Kind: "count", Status: "budget_exhausted", WindowStart: 5000, WindowEnd: 10000},
	}
	w := kafkaio.Plaintext(brokers).NewWriter(topic)
	w.Async = false
	for _, r := range rels {
		b, err := schema.EncodeRelease(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteMessages(ctx, kafka.Message{Key: []byte(r.Stream), Value: b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// No -c and no pipeline.yaml here: tail uses the default topics, and
	// --topic and --brokers point it at this broker.
	code, stdout, stderr := cliTimeout(t, 20*time.Second, "tail", "releases", "--plot", "--width", "40",
		"--brokers", broker.Addr(), "--topic", topic)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{
		"trips/h (histogram)  1970-01-01 00:00:00–00:00:05 UTC  ok",
		"value 42 ± 9 (95% noise interval)",
		"trips/n (count)  1970-01-01 00:00:05–00:00:10 UTC  budget_exhausted",
		"refused: the stream's budget is exhausted",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "{") {
		t.Errorf("JSON printed with --plot:\n%s", stdout)
	}
	bars := charttest.ParseBars(t, strings.Split(stdout, "\n"))
	if len(bars) != 2 || bars[0].Label != "[0,  5)" || bars[1].Label != "[5, 10]" || charttest.Cells(bars[1].Line) != 40 {
		t.Errorf("histogram lines %+v:\n%s", bars, stdout)
	}
}
