package chart

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/chart/charttest"
)

// Tests of heatmaps and marginals. Every expected shade, sum and label
// below is computed by hand or from the definition in the test, never
// taken from the code's output.

var cells = charttest.Cells

// parsedHeatmap is a parsed heatmap chart.
type parsedHeatmap struct {
	labels  []string // row labels, trimmed
	grid    [][]rune // the cells of each row, cellW runes per cell
	labelW  int      // width of the label column
	axis    string   // the " └───" line
	xlabels string   // the line under the axis
	legend  string   // the line starting "█ = largest cell"
}

// parseHeatmap parses the lines of a heatmap: grid rows (label " │"
// cells) up to the axis line (" └"), then the x labels and the legend.
func parseHeatmap(t *testing.T, lines []string) parsedHeatmap {
	t.Helper()
	var h parsedHeatmap
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

// TestHeatmap checks heatmaps against their cells: one row per bin of the
// first field (or per group of adjacent bins beyond maxHeatRows), columns
// summed in groups only when the second field has more bins than the
// width leaves, cells as wide as fit (at most maxHeatCellW), every cell
// shaded by its summed probability relative to the largest, rows labelled
// by their lower edges, the second field's first and last edges under the
// axis, and the legend's maximum and field names.
func TestHeatmap(t *testing.T) {
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
		edges      [2][]float64
		widths     []int
		wantKR     int      // rows per group
		wantLabels []string // every row label, if given
		wantShades []string // every row's cell shades (one rune per cell), if given
		wantX      [2]string
	}{
		{"3 × 4 by hand", 3, 4, small, [2][]float64{{0, 10, 20, 30}, {0, 1, 2, 3, 4}}, []int{20, 80, 200},
			1, []string{"0", "10", "20"}, []string{"░░░░", "▒██░", " ▓░░"}, [2]string{"0", "4"}},
		{"60 × 200 compressed", 60, 200, big, [2][]float64{seq(0, 1, 61), seq(-1, 0.01, 201)}, []int{20, 80, 200},
			3, nil, nil, [2]string{"-1.00", "1.00"}},
		{"1 × 1", 1, 1, []float64{1}, [2][]float64{{5, 6}, {7, 8}}, []int{20},
			1, []string{"5"}, []string{"█"}, [2]string{"7", "8"}},
	}
	for _, c := range cases {
		for _, w := range c.widths {
			t.Run(fmt.Sprintf("%s/width %d", c.name, w), func(t *testing.T) {
				m := Heatmap{P: c.p, Rows: c.rows, Cols: c.cols, Axes: [][]float64{c.edges[0], c.edges[1]},
					Names: [2]string{"age", "km"}, Sub: "sub", Notes: []string{"a note"}}
				lines := m.Draw(Options{Width: w})
				if len(lines) < 2 || !strings.HasPrefix(lines[0], "sub") || lines[1] != "a note" {
					t.Fatalf("want the subheader and the note first:\n%s", strings.Join(lines, "\n"))
				}
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
					if lo, err := strconv.ParseFloat(h.labels[g], 64); err != nil || math.Abs(lo-c.edges[0][g*c.wantKR]) > 1e-9 {
						t.Errorf("row %d label %q, want the lower edge %v", g, h.labels[g], c.edges[0][g*c.wantKR])
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

// TestHeatmapWithoutAxes: without edges the rows and the axis are
// labelled by bin index, and cells that cannot be drawn are shown as ?.
func TestHeatmapWithoutAxes(t *testing.T) {
	lines := Heatmap{P: []float64{math.NaN(), 0.4, -0.1, 0.6}, Rows: 2, Cols: 2, Names: [2]string{"a", "b"}}.Draw(Options{Width: 40})
	out := strings.Join(lines, "\n")
	// 0.4 is ⅔ of the largest, 0.6: ▓.
	for _, want := range []string{"#0 │????▓▓▓▓", "#1 │????████", "#0    #1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestHeatmapColor checks that colours only refine the shades: the text
// without escape codes is the plain chart, and the largest cell is
// painted in the top colour.
func TestHeatmapColor(t *testing.T) {
	m := Heatmap{P: []float64{0.1, 0.2, 0.3, 0.4}, Rows: 2, Cols: 2, Axes: [][]float64{{0, 1, 2}, {0, 1, 2}}, Names: [2]string{"x", "y"}}
	plain := strings.Join(m.Draw(Options{Width: 40}), "\n")
	colored := strings.Join(m.Draw(Options{Width: 40, Color: true}), "\n")
	if strings.Contains(plain, "\x1b") {
		t.Errorf("escape codes without Color:\n%q", plain)
	}
	if StripANSI(colored) != plain {
		t.Errorf("colours changed the text:\n%s\nvs\n%s", StripANSI(colored), plain)
	}
	// 0.4 is the largest: top colour; 0.1 is ¼ of it: ⌈8/4⌉ = level 2.
	for _, want := range []string{heatColors[7] + "████" + Reset, heatColors[1] + "░░░░" + Reset} {
		if !strings.Contains(colored, want) {
			t.Errorf("coloured chart lacks %q:\n%q", want, colored)
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
		if got := Marginals(c.v, c.shape); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
