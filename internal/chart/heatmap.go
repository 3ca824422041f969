package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

const (
	// maxHeatRows caps the rows of a heatmap: with more bins in the first
	// field, adjacent rows are summed in groups (post-processing, like
	// the groups of a bar chart of bins) so the map fits a screen.
	maxHeatRows = 24
	// maxHeatCellW is the widest a heatmap cell is drawn. Two cells of
	// width make a roughly square character cell; a few more keep a map of
	// few columns readable without turning it into bars.
	maxHeatCellW = 4
)

// heatRamp shades a heatmap cell by its share of the largest cell: blank
// for 0, then ░ ▒ ▓ █ for up to ¼, ½, ¾ and all of it.
var heatRamp = []rune(" ░▒▓█")

// heatColors are eight 256-colour foregrounds, from dim blue to yellow,
// that refine the four shades to eighths when colours are on: level l
// (1..8) is drawn as heatRamp[⌈l/2⌉] in heatColors[l-1], so the colours
// add resolution without changing a character.
var heatColors = []string{
	"\x1b[38;5;61m", "\x1b[38;5;67m", "\x1b[38;5;73m", "\x1b[38;5;79m",
	"\x1b[38;5;114m", "\x1b[38;5;150m", "\x1b[38;5;186m", "\x1b[38;5;226m",
}

// Heatmap is what a heatmap is drawn from: probabilities over the cells
// of two fields.
type Heatmap struct {
	P          []float64   // Rows × Cols probabilities, row-major (the second field fastest)
	Rows, Cols int         // bins of the first and of the second field, both ≥ 1
	Axes       [][]float64 // the two fields' edges (Rows+1 and Cols+1 of them), or nil: bins labelled by index
	Names      [2]string   // the fields' names, for the legend
	Sub        string      // the subheader so far, which Draw completes with how the map is shown
	Notes      []string    // the caller's notes, drawn under the subheader
}

// Draw draws the heatmap: the subheader and notes, then one text row per
// bin of the first field (labelled by its lower edge), one cell per bin
// of the second, shaded by probability (heatRamp, refined by heatColors
// when colours are on) relative to the largest cell; then an x axis with
// the second field's first and last edges and a legend. More than
// maxHeatRows rows, or more columns than the width leaves, are summed in
// groups of adjacent bins (heatCells).
func (h Heatmap) Draw(o Options) []string {
	rowsN, colsN := h.Rows, h.Cols
	axes := h.Axes
	kr := ceilDiv(rowsN, maxHeatRows)
	nr := ceilDiv(rowsN, kr)

	labels := make([]string, nr)
	if axes != nil {
		shown := make([]float64, 0, nr+1) // the edges that set the decimals
		for g := range nr {
			shown = append(shown, axes[0][g*kr])
		}
		format := edgeFormat(append(shown, axes[0][rowsN]))
		for g := range nr {
			labels[g] = format(axes[0][g*kr])
		}
	} else {
		for g := range nr {
			labels[g] = "#" + strconv.Itoa(g*kr)
		}
	}
	labelW := 0
	for _, l := range labels {
		labelW = max(labelW, Cells(l))
	}
	width := o.LineWidth()
	avail := max(width-labelW-2, minBarFloor)
	kc := ceilDiv(colsN, avail)
	nc := ceilDiv(colsN, kc)
	cellW := min(max(avail/nc, 1), maxHeatCellW)
	gridW := nc * cellW

	cells := heatCells(h.P, rowsN, colsN, kr, kc)
	top := 0.0
	for _, row := range cells {
		top = math.Max(top, Top(row))
	}

	sub := h.Sub
	if kr > 1 || kc > 1 {
		sub += fmt.Sprintf(", shown as %d × %d cells of up to %d × %d adjacent bins, probabilities summed", nr, nc, kr, kc)
	}
	sub += "; shade ∝ probability"
	lines := append([]string{sub}, h.Notes...)
	for g, row := range cells {
		// Runs of cells of one level are painted as one, so colours cost
		// one escape sequence per run, not per cell.
		var b strings.Builder
		for c := 0; c < len(row); {
			l := heatLevel(row[c], top) // -1: not drawable
			end := c + 1
			for end < len(row) && heatLevel(row[end], top) == l {
				end++
			}
			n := (end - c) * cellW
			switch {
			case l < 0:
				b.WriteString(o.Note(strings.Repeat("?", n)))
			case l == 0:
				b.WriteString(strings.Repeat(" ", n))
			default:
				b.WriteString(o.Paint(heatColors[l-1], strings.Repeat(string(heatRamp[(l+1)/2]), n)))
			}
			c = end
		}
		lines = append(lines, Pad(labels[g], labelW, true)+" │"+b.String())
	}
	lines = append(lines, strings.Repeat(" ", labelW)+" └"+strings.Repeat("─", gridW))

	lo, hi := "#0", "#"+strconv.Itoa(colsN-1)
	if axes != nil {
		shown := make([]float64, 0, nc+1)
		for g := range nc {
			shown = append(shown, axes[1][g*kc])
		}
		format := edgeFormat(append(shown, axes[1][colsN]))
		lo, hi = format(axes[1][0]), format(axes[1][colsN])
	}
	// lo under the first column and hi ending under the last; when they
	// are wider than the grid, moved left to stay within the width.
	x := lo + strings.Repeat(" ", max(gridW-Cells(lo)-Cells(hi), 1)) + hi
	indent := min(labelW+2, max(width-Cells(x), 0))
	lines = append(lines, truncRunes(strings.Repeat(" ", indent)+x, width))

	var ramp strings.Builder
	for l := 2; l <= 8; l += 2 {
		ramp.WriteString(o.Paint(heatColors[l-1], string(heatRamp[l/2])))
	}
	lines = append(lines, fmt.Sprintf("█ = largest cell, %s; %s up to ¼ ½ ¾ 1 of it; rows: %s, columns: %s",
		Percent(top), ramp.String(), h.Names[0], h.Names[1]))
	return lines
}

// heatCells sums a rows × cols grid p (row-major) over blocks of kr
// adjacent rows and kc adjacent columns, the last blocks possibly smaller:
// ⌈rows/kr⌉ rows of ⌈cols/kc⌉ sums, which add up to the sum of p.
func heatCells(p []float64, rows, cols, kr, kc int) [][]float64 {
	out := make([][]float64, ceilDiv(rows, kr))
	for g := range out {
		out[g] = make([]float64, ceilDiv(cols, kc))
	}
	for i := range rows {
		for j := range cols {
			out[i/kr][j/kc] += p[i*cols+j]
		}
	}
	return out
}

// heatLevel is the shade of v where top is the darkest: -1 when v cannot
// be drawn (NaN, ±Inf, negative), 0 when v or top is 0, else ⌈8·v/top⌉ in
// 1..8, so that any positive cell is visible and exactly the cells above
// ⅞ of the largest get the top level (above ¾ the darkest character).
func heatLevel(v, top float64) int {
	if !Drawable(v) {
		return -1
	}
	if !(top > 0) || !(v > 0) {
		return 0
	}
	return min(max(int(math.Ceil(8*v/top)), 1), 8)
}

// ceilDiv is ⌈a/b⌉ for a ≥ 0 and b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Marginals sums the cells of a histogram of the given shape (row-major,
// last field fastest) over all fields but one, for each field in turn:
// Marginals(v, shape)[i][j] is the sum of the cells whose i-th field is in
// bin j. Summing released cells is post-processing. len(v) must be the
// product of shape.
func Marginals(v []float64, shape []int) [][]float64 {
	out := make([][]float64, len(shape))
	for i, m := range shape {
		out[i] = make([]float64, m)
	}
	idx := make([]int, len(shape)) // the multi-index of cell c
	for _, x := range v {
		for i, j := range idx {
			out[i][j] += x
		}
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out
}
