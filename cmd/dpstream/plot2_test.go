package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/schema"
)

// Tests of the charts of histograms over several fields, of
// randomized_response releases and of synthetic samples (plot.go). Every
// expected shade, marginal and label below is computed by hand or from
// the definition in the test, never taken from the code's output.

// heatmap is a parsed heatmap chart.
type heatmap struct {
	labels  []string // row labels, trimmed
	grid    [][]rune // the cells of each row, cellW runes per cell
	labelW  int      // width of the label column
	axis    string   // the " └───" line
	xlabels string   // the line under the axis
	legend  string   // the line starting "█ = largest cell"
	lines   []string
}

// parseHeatmap parses the lines of plotHeatmap: grid rows (label " │"
// cells) up to the axis line (" └"), then the x labels and the legend.
func parseHeatmap(t *testing.T, lines []string) heatmap {
	t.Helper()
	h := heatmap{lines: lines}
	axisAt := -1
	for i, line := range lines {
		if j := strings.Index(line, " │"); j >= 0 && axisAt < 0 {
			h.labels = append(h.labels, strings.TrimSpace(line[:j]))
			h.labelW = cells(line[:j])
			h.grid = append(h.grid, []rune(line[j+len(" │"):]))
		}
		if strings.Contains(line, " └") && axisAt < 0 {
			h.axis, axisAt = line, i
		}
		if strings.HasPrefix(line, "█ = largest cell") {
			h.legend = line
		}
	}
	if axisAt < 0 || axisAt+1 >= len(lines) || h.legend == "" {
		t.Fatalf("no axis, x labels or legend:\n%s", strings.Join(lines, "\n"))
	}
	h.xlabels = lines[axisAt+1]
	return h
}

// shadeOf is the character the legend promises for a cell of probability
// v in a map whose largest cell is top: blank for 0, ░ ▒ ▓ █ for up to
// ¼, ½, ¾ and all of top; ? for what cannot be drawn.
func shadeOf(v, top float64) rune {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return '?'
	case v == 0:
		return ' '
	case v <= top/4:
		return '░'
	case v <= top/2:
		return '▒'
	case v <= 3*top/4:
		return '▓'
	}
	return '█'
}

func heatRelease(shape []int64, fields []string, p, edges []float64) schema.Release {
	return schema.Release{ReleaseID: "s/h2/0", Stream: "s", Release: "h2", Kind: "histogram", Status: "ok",
		Shape: shape, Fields: fields, Probabilities: p, NoisyCounts: countsFor(p, 1000), Edges: edges}
}

// TestPlotHeatmap checks 2-D heatmaps against their releases: one row per
// bin of the first field (or per group of adjacent bins beyond
// maxHeatRows), columns summed in groups only when the second field has
// more bins than the width leaves, cells as wide as fit (at most
// maxHeatCellW), every cell shaded by its summed probability relative to
// the largest, rows labelled by their lower edges, the second field's first
// and last edges under the axis, and the legend's maximum and field names.
func TestPlotHeatmap(t *testing.T) {
	// A hand-made 3 × 4 map with its largest cell 0.30; the shades are
	// from the legend's rule: .01 .02 .04 .05 .07 ≤ .075 (¼) ░, .08 ≤ .15
	// ▒, .16 ≤ .225 ▓, .25 and .30 > .225 █.
	small := []float64{
		0.05, 0.02, 0.05, 0.01,
		0.08, 0.30, 0.25, 0.04,
		0.00, 0.16, 0.02, 0.02,
	}
	// A smooth bump on a 60 × 200 grid: rows are grouped by 3 (60 > 24)
	// and columns by what the width leaves.
	big := make([]float64, 60*200)
	total := 0.0
	for i := range 60 {
		for j := range 200 {
			big[i*200+j] = math.Exp(-math.Pow(float64(i-20)/9, 2) - math.Pow(float64(j-130)/40, 2))
			total += big[i*200+j]
		}
	}
	for i := range big {
		big[i] /= total
	}
	cases := []struct {
		name       string
		rows, cols int
		p          []float64
		edges      []float64
		widths     []int
		wantKR     int      // rows per group
		wantLabels []string // every row label, if given
		wantShades []string // every row's cell shades (one rune per cell), if given
		wantX      [2]string
	}{
		{"3 × 4 by hand", 3, 4, small, append([]float64{0, 10, 20, 30}, 0, 1, 2, 3, 4), []int{20, 80, 200},
			1, []string{"0", "10", "20"}, []string{"░░░░", "▒██░", " ▓░░"}, [2]string{"0", "4"}},
		{"60 × 200 compressed", 60, 200, big, append(seq(0, 1, 61), seq(-1, 0.01, 201)...), []int{20, 80, 200},
			3, nil, nil, [2]string{"-1.00", "1.00"}},
		{"1 × 1", 1, 1, []float64{1}, []float64{5, 6, 7, 8}, []int{20},
			1, []string{"5"}, []string{"█"}, [2]string{"7", "8"}},
	}
	for _, c := range cases {
		for _, w := range c.widths {
			t.Run(fmt.Sprintf("%s/width %d", c.name, w), func(t *testing.T) {
				r := heatRelease([]int64{int64(c.rows), int64(c.cols)}, []string{"age", "km"}, c.p, c.edges)
				lines := plotHistogram(r, plotOptions{Width: w})
				h := parseHeatmap(t, lines)
				nr := (c.rows + c.wantKR - 1) / c.wantKR
				if len(h.grid) != nr {
					t.Fatalf("%d rows, want %d:\n%s", len(h.grid), nr, strings.Join(lines, "\n"))
				}
				// Columns: the fewest groups of adjacent bins that fit.
				avail := w - h.labelW - 2
				kc := 1
				for (c.cols+kc-1)/kc > avail {
					kc++
				}
				nc := (c.cols + kc - 1) / kc
				gridW := len(h.grid[0])
				cellW := gridW / nc
				if gridW%nc != 0 || cellW < 1 || cellW > maxHeatCellW || (cellW < maxHeatCellW && (cellW+1)*nc <= avail) {
					t.Fatalf("grid of %d cells for %d columns in %d free cells: want equal cells as wide as fit, at most %d",
						gridW, nc, avail, maxHeatCellW)
				}
				if (kc > 1 || c.wantKR > 1) != strings.Contains(lines[0], "adjacent bins, probabilities summed") {
					t.Errorf("subheader %q: says it groups bins iff they are grouped (%d × %d)", lines[0], c.wantKR, kc)
				}
				// The sums the cells show, from the definition.
				sums := make([][]float64, nr)
				top := 0.0
				for g := range sums {
					sums[g] = make([]float64, nc)
					for i := g * c.wantKR; i < min((g+1)*c.wantKR, c.rows); i++ {
						for j := range c.cols {
							sums[g][j/kc] += c.p[i*c.cols+j]
						}
					}
					for _, v := range sums[g] {
						top = math.Max(top, v)
					}
				}
				darkest := 0
				for g, row := range h.grid {
					if len(row) != gridW {
						t.Fatalf("row %d is %d cells, row 0 %d", g, len(row), gridW)
					}
					shades := make([]rune, nc)
					for k := range nc {
						cell := row[k*cellW : (k+1)*cellW]
						for _, ch := range cell {
							if ch != cell[0] {
								t.Fatalf("row %d cell %d is not one shade: %q", g, k, string(cell))
							}
						}
						shades[k] = cell[0]
						if want := shadeOf(sums[g][k], top); cell[0] != want {
							t.Errorf("row %d cell %d (p=%.5f of max %.5f): shade %q, want %q", g, k, sums[g][k], top, cell[0], want)
						}
						if sums[g][k] == top && cell[0] == '█' {
							darkest++
						}
					}
					if c.wantShades != nil && string(shades) != c.wantShades[g] {
						t.Errorf("row %d shades %q, want %q", g, string(shades), c.wantShades[g])
					}
					// The label is the group's lower edge.
					if lo, err := strconv.ParseFloat(h.labels[g], 64); err != nil || math.Abs(lo-c.edges[g*c.wantKR]) > 1e-9 {
						t.Errorf("row %d label %q, want the lower edge %v", g, h.labels[g], c.edges[g*c.wantKR])
					}
				}
				if darkest == 0 {
					t.Errorf("no cell with the largest probability %v is █", top)
				}
				if c.wantLabels != nil && strings.Join(h.labels, "|") != strings.Join(c.wantLabels, "|") {
					t.Errorf("labels %q, want %q", h.labels, c.wantLabels)
				}
				for _, l := range lines[1:] { // all but the subheader fit
					if cells(l) > w && !strings.HasPrefix(l, "█ = largest") {
						t.Errorf("line wider than %d: %q", w, l)
					}
				}
				if got := cells(h.axis); got != h.labelW+2+gridW {
					t.Errorf("axis %q is %d cells, want under the grid (%d)", h.axis, got, h.labelW+2+gridW)
				}
				if f := strings.Fields(h.xlabels); len(f) != 2 || f[0] != c.wantX[0] || f[1] != c.wantX[1] {
					t.Errorf("x labels %q, want %q … %q", h.xlabels, c.wantX[0], c.wantX[1])
				}
				if gridW >= len(c.wantX[0])+len(c.wantX[1])+1 && cells(h.xlabels) != h.labelW+2+gridW {
					t.Errorf("x labels %q do not span the grid", h.xlabels)
				}
				// Legend: the largest (summed) cell in % with one decimal,
				// and the fields.
				pct := strings.TrimSuffix(strings.Fields(strings.TrimPrefix(h.legend, "█ = largest cell, "))[0], "%;")
				if got, err := strconv.ParseFloat(pct, 64); err != nil || math.Abs(got-100*top) > 0.05+1e-9 {
					t.Errorf("legend %q: largest cell %q, want %.3f%%", h.legend, pct, 100*top)
				}
				if !strings.HasSuffix(h.legend, "rows: age, columns: km") {
					t.Errorf("legend %q does not name the rows and columns", h.legend)
				}
			})
		}
	}
}

// TestPlotHeatmapColor checks that colours only refine the shades: the
// text without escape codes is the plain chart, and the largest cell is
// painted in the top colour.
func TestPlotHeatmapColor(t *testing.T) {
	p := []float64{0.1, 0.2, 0.3, 0.4}
	r := heatRelease([]int64{2, 2}, []string{"x", "y"}, p, []float64{0, 1, 2, 0, 1, 2})
	var plain, colored bytes.Buffer
	if err := plotRelease(&plain, r, plotOptions{Width: 40}); err != nil {
		t.Fatal(err)
	}
	if err := plotRelease(&colored, r, plotOptions{Width: 40, Color: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b") {
		t.Errorf("escape codes without Color:\n%q", plain.String())
	}
	if stripANSI(colored.String()) != plain.String() {
		t.Errorf("colours changed the text:\n%s\nvs\n%s", stripANSI(colored.String()), plain.String())
	}
	// 0.4 is the largest: top colour; 0.1 is ¼ of it: ⌈8/4⌉ = level 2.
	for _, want := range []string{heatColors[7] + "████" + ansiReset, heatColors[1] + "░░░░" + ansiReset} {
		if !strings.Contains(colored.String(), want) {
			t.Errorf("coloured chart lacks %q:\n%q", want, colored.String())
		}
	}
}

func TestHeatCells(t *testing.T) {
	v := make([]float64, 15) // 3 × 5, v[i][j] = 5i + j + 1
	for i := range v {
		v[i] = float64(i + 1)
	}
	cases := []struct {
		name   string
		kr, kc int
		want   [][]float64
	}{
		{"no grouping", 1, 1, [][]float64{{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, {11, 12, 13, 14, 15}}},
		// Rows {0,1},{2}; columns {0,1},{2,3},{4}.
		{"2 × 2 blocks, last ones smaller", 2, 2, [][]float64{{1 + 2 + 6 + 7, 3 + 4 + 8 + 9, 5 + 10}, {11 + 12, 13 + 14, 15}}},
		{"everything in one", 3, 5, [][]float64{{120}}},
		{"blocks larger than the grid", 10, 10, [][]float64{{120}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := heatCells(v, 3, 5, c.kr, c.kc)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	// Grouping keeps the total mass, whatever the blocks.
	rng := rand.New(rand.NewPCG(7, 11))
	for range 50 {
		rows, cols := 1+rng.IntN(70), 1+rng.IntN(300)
		p := make([]float64, rows*cols)
		sum := 0.0
		for i := range p {
			p[i] = rng.Float64()
			sum += p[i]
		}
		kr, kc := 1+rng.IntN(rows), 1+rng.IntN(cols)
		got := 0.0
		for _, row := range heatCells(p, rows, cols, kr, kc) {
			for _, x := range row {
				got += x
			}
		}
		// Only the order of the additions differs: a relative error of a
		// few ulps per term bounds the difference.
		if math.Abs(got-sum) > 1e-12*sum {
			t.Errorf("%d × %d in %d × %d blocks: mass %v, want %v", rows, cols, kr, kc, got, sum)
		}
	}
}

func TestMarginals(t *testing.T) {
	cases := []struct {
		name  string
		v     []float64
		shape []int
		want  [][]float64
	}{
		{"2 × 3", []float64{1, 2, 3, 4, 5, 6}, []int{2, 3}, [][]float64{{6, 15}, {5, 7, 9}}},
		// v[a][b][c] = 4a + 2b + c + 1
		{"2 × 2 × 2", []float64{1, 2, 3, 4, 5, 6, 7, 8}, []int{2, 2, 2}, [][]float64{{10, 26}, {14, 22}, {16, 20}}},
		{"one field", []float64{1, 2}, []int{2}, [][]float64{{1, 2}}},
	}
	for _, c := range cases {
		if got := marginals(c.v, c.shape); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
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

// TestPlotHistogram3D builds 3-D releases whose marginals are known in
// closed form and checks the three bar charts against them: probabilities
// p[a][b][c] = pa[a]·pb[b]·pc[c] (so the marginals are pa, pb, pc) and
// counts 1 + a + 10b + 100c (so the marginal of a is
// B·C·(1+a) + 10·C·B(B−1)/2 + 100·B·C(C−1)/2, and alike for b and c).
// Sums of integers are exact, so the counts must match exactly.
func TestPlotHistogram3D(t *testing.T) {
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
			r := heatRelease([]int64{2, 3, 4}, []string{"a", "b", "c"}, p, edges)
			r.NoisyCounts = counts
			lines := plotHistogram(r, plotOptions{Width: w})
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
				checkBarLines(t, blocks[i], m[0], m[1], w)
				var labels []string
				for _, b := range parseBars(t, blocks[i]) {
					labels = append(labels, b.label)
				}
				if strings.Join(labels, "|") != strings.Join(wantLabels[i], "|") {
					t.Errorf("marginal %d labels %q, want %q", i, labels, wantLabels[i])
				}
			}
		})
	}
	// Without fitting edges and counts: one note each, bins by index,
	// counts as –, and the marginals still drawn.
	r := heatRelease([]int64{2, 3, 4}, []string{"a", "b", "c"}, p, []float64{0, 1})
	r.NoisyCounts = counts[:5]
	lines := plotHistogram(r, plotOptions{Width: 80})
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
		bars := parseBars(t, blocks[i])
		if len(bars) != len(m) || bars[0].label != "#0" || bars[0].fields[1] != "–" {
			t.Errorf("marginal %d: %+v", i, bars)
		}
	}
}

// TestPlotHistogramShapeCompat checks that a one-field histogram with
// Shape and Fields, as releases carry them now, is drawn exactly as the
// same histogram without them, as older releases have it.
func TestPlotHistogramShapeCompat(t *testing.T) {
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
			a, b := plotBody(old, plotOptions{Width: w}), plotBody(cur, plotOptions{Width: w})
			if strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Errorf("%d bins, width %d: with Shape and Fields\n%s\nwithout\n%s", len(p), w, strings.Join(b, "\n"), strings.Join(a, "\n"))
			}
		}
	}
}

func rrRelease(cats []string, p, debiased, se []float64, le *float64) schema.Release {
	return schema.Release{ReleaseID: "s/rr/0", Stream: "s", Release: "rr", Kind: "randomized_response", Status: "ok",
		Fields: []string{"colour"}, Categories: cats, Probabilities: p, DebiasedCounts: debiased, StdErrors: se, LocalEpsilon: le}
}

func TestPlotRR(t *testing.T) {
	le := math.Log(4) // 1.386…: three significant digits in the footer
	cats := []string{"red", "green", "blue", "other"}
	p := []float64{0.5, 0.3, 0.2, 0}
	debiased := []float64{120, 70.5, -3.5, 0}
	se := []float64{10, 5, 2.5, 1}
	// 1.96 × se by hand.
	wantNums := []string{"120 ± 19.6", "70.5 ± 9.8", "-3.5 ± 4.9", "0 ± 1.96"}
	const footer = "local ε = 1.39 per report (randomized by producers); central noise as configured"
	for _, w := range []int{20, 30, 80, 200} {
		t.Run(fmt.Sprintf("width %d", w), func(t *testing.T) {
			lines := plotBody(rrRelease(cats, p, debiased, se, &le), plotOptions{Width: w})
			if !strings.HasPrefix(lines[0], "4 categories of colour; bar ∝ debiased frequency, then frequency and debiased count ± 1.96 standard errors") {
				t.Errorf("subheader %q", lines[0])
			}
			if lines[len(lines)-1] != footer {
				t.Errorf("footer %q, want %q", lines[len(lines)-1], footer)
			}
			bars := parseBars(t, lines)
			if len(bars) != len(cats) {
				t.Fatalf("%d bars for %d categories:\n%s", len(bars), len(cats), strings.Join(lines, "\n"))
			}
			lineW := cells(bars[0].line)
			barW := 0
			for i, b := range bars {
				if got := strings.TrimSpace(b.label); got != cats[i] {
					t.Errorf("bar %d label %q, want %q (categories in order)", i, got, cats[i])
				}
				if !strings.HasPrefix(b.label, cats[i]) {
					t.Errorf("label %q is not left-aligned", b.label)
				}
				if len(b.fields) > 0 && cells(b.line) != lineW {
					t.Errorf("line %d is %d cells, line 0 %d", i, cells(b.line), lineW)
				}
				barW = max(barW, b.eighths/8)
			}
			if lineW > w {
				t.Errorf("lines of %d cells at width %d", lineW, w)
			}
			for i, b := range bars {
				// The largest frequency fills the bar column; the others are
				// in proportion within one eighth.
				want := p[i] / p[0] * float64(barW*8)
				if math.Abs(float64(b.eighths)-want) > 1 {
					t.Errorf("bar %d: %d eighths, want %.2f ± 1", i, b.eighths, want)
				}
				switch len(b.fields) {
				case 4: // pct, count, ±, half-width
					if got := strings.Join(b.fields[1:], " "); got != wantNums[i] {
						t.Errorf("bar %d: %q, want %q", i, got, wantNums[i])
					}
					fallthrough
				case 1:
					if want := strconv.FormatFloat(100*p[i], 'f', 1, 64) + "%"; b.fields[0] != want {
						t.Errorf("bar %d: frequency %q, want %q", i, b.fields[0], want)
					}
				case 0:
				default:
					t.Errorf("bar %d: numbers %q", i, b.fields)
				}
			}
			if w >= 80 && len(bars[0].fields) != 4 {
				t.Errorf("width %d: numbers %q, want frequency and count ± error", w, bars[0].fields)
			}
			if len(bars[0].fields) < 4 && !strings.Contains(lines[0], "columns are too few to show the") {
				t.Errorf("numbers dropped without a word: %q", lines[0])
			}
			if strings.Contains(strings.Join(lines, "\n"), "bins") {
				t.Errorf("drawn as a histogram:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

// TestPlotMalformed feeds broken releases and checks that each is
// explained by the note it calls for, in yellow, with what can still be
// drawn.
func TestPlotMalformed(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	le := 1.0
	four := []float64{0.1, 0.2, 0.3, 0.4}
	edges22 := []float64{0, 1, 2, 0, 1, 2}
	cases := []struct {
		name string
		r    schema.Release
		note string   // the yellow note, or its start
		also []string // more text the output must have
	}{
		{"shape product too small", heatRelease([]int64{3, 4}, []string{"a", "b"}, seq(0.1, 0, 10), nil),
			"shape [3 4] has 12 cells, not the 10 probabilities: cells drawn as a flat list, labelled by index", []string{"#9 │"}},
		{"shape that overflows", heatRelease([]int64{1 << 62, 1 << 62}, []string{"a", "b"}, four, nil),
			"shape [4611686018427387904 4611686018427387904] has more cells than the 4 probabilities", []string{"#3 │"}},
		{"zero bins", heatRelease([]int64{0, 4}, []string{"a", "b"}, four, nil), "shape [0 4] has a field with 0 bins", nil},
		{"negative bins", heatRelease([]int64{2, -2}, []string{"a", "b"}, four, nil), "shape [2 -2] has a field with -2 bins", nil},
		{"one-field shape wrong", heatRelease([]int64{5}, []string{"a"}, []float64{0.5, 0.5}, []float64{0, 1, 2}),
			"shape [5] has 5 cells, not the 2 probabilities", []string{"[0, 1) │"}},
		{"one field, two names", heatRelease([]int64{2}, []string{"a", "b"}, []float64{0.5, 0.5}, []float64{0, 1, 2}),
			"2 field names for a histogram over 1 field", []string{"[1, 2] │"}},
		{"names and no shape", heatRelease(nil, []string{"a", "b"}, four, nil), "2 field names and no shape: cells drawn as a flat list", nil},
		{"2-D edges wrong", heatRelease([]int64{2, 2}, []string{"a", "b"}, four, []float64{0, 1, 2, 3, 4}),
			"5 edges for shape [2 2], not 6: bins are labelled by index", []string{"#0 │", "#1 │", "#0    #1"}},
		{"2-D names wrong", heatRelease([]int64{2, 2}, []string{"a"}, four, edges22),
			"1 field names for a histogram over 2 fields: fields are numbered", []string{"rows: field 1, columns: field 2"}},
		{"2-D NaN and negative cells", heatRelease([]int64{2, 2}, []string{"a", "b"}, []float64{nan, 0.4, -0.1, 0.6}, edges22),
			// 0.4 is ⅔ of the largest, 0.6: ▓.
			"2 of 4 cells NaN, infinite or negative: shown as ?", []string{"0 │????▓▓▓▓", "1 │????████"}},
		{"2-D counts wrong", func() schema.Release {
			r := heatRelease([]int64{2, 2}, []string{"a", "b"}, four, edges22)
			r.NoisyCounts = nil
			return r
		}(), "0 noisy counts for 4 cells (the heatmap does not use them)", nil},
		{"3-D infinite cell", heatRelease([]int64{1, 2, 2}, []string{"a", "b", "c"}, []float64{inf, 0.2, 0.3, 0.4}, []float64{0, 1, 0, 1, 2, 0, 1, 2}),
			"1 of 4 cells NaN, infinite or negative", []string{"(+Inf)"}},
		{"4 fields", heatRelease([]int64{1, 1, 2, 2}, []string{"a", "b", "c", "d"}, four, nil),
			"histogram over 4 fields (at most 3 are expected): drawn as one-field marginals", []string{"marginal of d (summed over a, b, c)"}},
		{"categories missing", rrRelease([]string{"x", "y"}, []float64{0.2, 0.3, 0.5}, []float64{2, 3, 5}, []float64{1, 1, 1}, &le),
			"2 category names for 3 frequencies: categories are labelled by index", []string{"#2 │"}},
		{"debiased counts missing", rrRelease([]string{"x", "y"}, []float64{0.4, 0.6}, nil, []float64{1, 1}, &le),
			"0 debiased counts for 2 categories: counts shown as –", []string{"40.0%  –"}},
		{"standard errors missing", rrRelease([]string{"x", "y"}, []float64{0.4, 0.6}, []float64{4, 6}, []float64{1}, &le),
			"1 standard errors for 2 categories: counts shown without them", []string{"60.0%  6"}},
		{"NaN frequency", rrRelease([]string{"x", "y"}, []float64{nan, 0.6}, []float64{4, 6}, []float64{1, 1}, &le),
			"1 of 2 frequencies NaN, infinite or negative: not drawn", []string{"(NaN)"}},
		{"frequencies off the simplex", rrRelease([]string{"x", "y"}, []float64{0.4, 0.4}, []float64{4, 6}, []float64{1, 1}, &le),
			"frequencies sum to 0.8, not 1", nil},
		{"no local ε", rrRelease([]string{"x", "y"}, []float64{0.4, 0.6}, []float64{4, 6}, []float64{1, 1}, nil),
			"no local ε in the release (randomized by producers); central noise as configured", nil},
		{"no frequencies", rrRelease([]string{"x"}, nil, []float64{1}, []float64{1}, &le),
			"randomized_response with no frequencies in the release", nil},
		{"samples not whole", func() schema.Release {
			r := heatRelease([]int64{2, 2}, []string{"a", "b"}, four, edges22)
			r.Samples = []float64{1, 2, 3}
			return r
		}(), "3 synthetic values do not make whole samples of 2 fields: not counted", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var colored, plain bytes.Buffer
			if err := plotRelease(&colored, c.r, plotOptions{Width: 60, Color: true}); err != nil {
				t.Fatal(err)
			}
			if err := plotRelease(&plain, c.r, plotOptions{Width: 60}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(colored.String(), ansiYellow+c.note) {
				t.Errorf("no yellow note %q:\n%s", c.note, plain.String())
			}
			for _, want := range c.also {
				if !strings.Contains(plain.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, plain.String())
				}
			}
		})
	}
}

// TestPlotFuzz draws thousands of random, mostly broken releases (random
// kinds, shapes, lengths, NaN and infinite values, names with control
// characters) at random widths, from a fixed seed. None may panic; every
// output is the header, a body and a blank line, holds no control
// character but newlines (a name from a release must not reach the
// terminal as an escape sequence) and, with colours off, no escape code.
func TestPlotFuzz(t *testing.T) {
	rng := rand.New(rand.NewPCG(2024, 5))
	values := []float64{0, 0.1, 0.25, 1, 3, 1e-300, 1e300, -0.2, math.NaN(), math.Inf(1), math.Inf(-1)}
	names := []string{"", "x", "a long field name that goes on and on and on and on and on", "\x1b[2J", "tab\there", "new\nline", "\x00", "ünï"}
	shapes := []int64{-1, 0, 1, 2, 3, 5, 30, 1 << 40}
	kinds := []string{"histogram", "histogram", "randomized_response", "density", "count", ""}
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
		o := plotOptions{Width: rng.IntN(220), MaxBars: rng.IntN(60), Color: rng.IntN(2) == 0}
		var buf bytes.Buffer
		if err := plotRelease(&buf, r, o); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		out := buf.String()
		if !o.Color && strings.Contains(out, "\x1b") {
			t.Fatalf("release %d %+v: escape code with colours off:\n%q", i, r, out)
		}
		text := stripANSI(out)
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

func TestPlotSamples(t *testing.T) {
	h2 := heatRelease([]int64{2, 2}, []string{"a", "b"}, []float64{0.1, 0.2, 0.3, 0.4}, []float64{0, 1, 2, 0, 1, 2})
	h2.Samples = []float64{0.5, 1.5, 1.2, 0.1, 1.9, 1.9}
	legacy := histRelease([]float64{0.5, 0.5}, []float64{5, 5}, []float64{0, 1, 2})
	legacy.Samples = []float64{0.3}
	dens := densityRelease([]float64{0, 0.5, 1}, []float64{1, 1, 1})
	dens.Samples = []float64{0.1, 0.2, 0.3, 0.4, 0.5}
	refused := h2
	refused.Status = "budget_exhausted"
	cases := []struct {
		name string
		r    schema.Release
		want string // "" for no samples line
	}{
		{"2-D: two values per sample", h2, "3 synthetic samples (drawn from this release; not plotted)"},
		{"1-D without fields", legacy, "1 synthetic sample (drawn from this release; not plotted)"},
		{"density: one value per sample", dens, "5 synthetic samples (drawn from this release; not plotted)"},
		{"refused", refused, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines := plotBody(c.r, plotOptions{Width: 80})
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
