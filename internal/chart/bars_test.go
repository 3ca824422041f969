package chart

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/chart/charttest"
)

var seq, countsFor = charttest.Seq, charttest.CountsFor

// TestBinsBars checks bar charts of bins against the bins themselves
// (charttest.CheckBars): one line per bin, the width, bars in proportion
// within an eighth, the numbers, and values that cannot be drawn.
func TestBinsBars(t *testing.T) {
	skewed := []float64{0.01, 0.05, 0.12, 0.2, 0.18, 0.14, 0.1, 0.07, 0.05, 0.03, 0.02, 0.015, 0.01, 0.003, 0.002}
	uniform := []float64{0.25, 0.25, 0.25, 0.25}
	tiny := []float64{0.9999, 0.0001} // the small bin rounds to 0 eighths but is not 0
	bad := []float64{0.4, math.NaN(), 0.3, math.Inf(1), -0.1, 0.4}
	cases := []struct {
		name   string
		p      []float64
		counts []float64
		edges  []float64
	}{
		{"15 skewed bins", skewed, countsFor(skewed, 1234), seq(0, 2, 16)},
		{"single bin", []float64{1}, []float64{57}, []float64{0, 1}},
		{"all zero", []float64{0, 0, 0}, []float64{-2, 0, -5}, seq(0, 10, 4)},
		{"uniform", uniform, []float64{10, 11, 9, 10}, seq(-1, 0.5, 5)},
		{"tiny bin", tiny, []float64{9999, 1}, []float64{0, 1, 2}},
		{"NaN, Inf and negative", bad, []float64{4, math.NaN(), 3, math.Inf(1), -1, 4}, seq(0, 1, 7)},
		{"wide counts", []float64{0.5, 0.5}, []float64{123456789, 123456788}, []float64{0, 50, 100}},
	}
	for _, c := range cases {
		for _, w := range []int{20, 80, 200} {
			t.Run(fmt.Sprintf("%s/width %d", c.name, w), func(t *testing.T) {
				lines := Bins{P: c.p, Counts: c.counts, Edges: c.edges}.Draw(Options{Width: w})
				charttest.CheckBars(t, lines, c.p, c.counts, w)
			})
		}
	}
}

func TestBinsLabels(t *testing.T) {
	cases := []struct {
		name  string
		edges []float64
		bins  int
		want  []string // every label, in order
		note  string   // a line the chart must have, if any
	}{
		{"integers right-aligned", seq(0, 2, 6), 5, []string{"[0,  2)", "[2,  4)", "[4,  6)", "[6,  8)", "[8, 10]"}, ""},
		{"two-digit edges", []float64{0, 5, 10, 15}, 3, []string{"[ 0,  5)", "[ 5, 10)", "[10, 15]"}, ""},
		{"float noise in edges", []float64{0, 0.1, 0.2, 0.30000000000000004}, 3, []string{"[0.0, 0.1)", "[0.1, 0.2)", "[0.2, 0.3]"}, ""},
		{"negative edges", []float64{-1, -0.5, 0, 0.5, 1}, 4, []string{"[-1.0, -0.5)", "[-0.5,  0.0)", "[ 0.0,  0.5)", "[ 0.5,  1.0]"}, ""},
		{"thirds", []float64{0, 1.0 / 3, 2.0 / 3, 1}, 3, []string{"[0.000, 0.333)", "[0.333, 0.667)", "[0.667, 1.000]"}, ""},
		{"tiny magnitudes", []float64{1e-6, 2e-6, 3e-6}, 2, []string{"[1e-06, 2e-06)", "[2e-06, 3e-06]"}, ""},
		{"no edges", nil, 3, []string{"#0", "#1", "#2"}, "0 edges do not bound 3 bins: bins are labelled by index"},
		{"wrong number of edges", []float64{0, 1, 2}, 12, []string{" #0", " #1", " #2", " #3", " #4", " #5", " #6", " #7", " #8", " #9", "#10", "#11"}, "3 edges do not bound 12 bins: bins are labelled by index"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := make([]float64, c.bins)
			for i := range p {
				p[i] = 1 / float64(c.bins)
			}
			lines := Bins{P: p, Counts: countsFor(p, 100), Edges: c.edges}.Draw(Options{Width: 80})
			bars := charttest.ParseBars(t, lines)
			var got []string
			for _, b := range bars {
				got = append(got, b.Label)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("labels\n got %q\nwant %q", got, c.want)
			}
			if c.note != "" && !strings.Contains(strings.Join(lines, "\n"), c.note) {
				t.Errorf("no line %q:\n%s", c.note, strings.Join(lines, "\n"))
			}
		})
	}
}

// TestBinsMany checks the decision for many bins: up to MaxBars (default
// 50) bins get one line each; more are summed into groups of
// k = ⌈bins/MaxBars⌉ adjacent bins, the last group possibly smaller, so
// that the chart stays within MaxBars lines at any bin count.
func TestBinsMany(t *testing.T) {
	cases := []struct {
		bins, maxBars int
		wantGroups    int
		wantK         int
		lastSize      int
		firstLabel    string
		lastLabel     string
	}{
		{10000, 0, 50, 200, 200, "[0.00, 0.02)", "[0.98, 1.00]"},
		{50, 0, 50, 1, 1, "[0.00, 0.02)", "[0.98, 1.00]"},
		{51, 0, 26, 2, 1, "", ""},
		{101, 50, 34, 3, 2, "", ""},
		{1000, 7, 7, 143, 142, "", ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d bins, at most %d lines", c.bins, c.maxBars), func(t *testing.T) {
			p := make([]float64, c.bins)
			total := 0.0
			for i := range p {
				p[i] = 1 + math.Sin(float64(i)*7/float64(c.bins))
				total += p[i]
			}
			for i := range p {
				p[i] /= total
			}
			counts := countsFor(p, 1e6)
			edges := make([]float64, c.bins+1)
			for i := range edges {
				edges[i] = float64(i) / float64(c.bins)
			}
			for _, w := range []int{20, 80, 200} {
				lines := Bins{P: p, Counts: counts, Edges: edges}.Draw(Options{Width: w, MaxBars: c.maxBars})
				bars := charttest.ParseBars(t, lines)
				if len(bars) != c.wantGroups {
					t.Fatalf("width %d: %d lines, want %d groups", w, len(bars), c.wantGroups)
				}
				if c.wantK > 1 {
					want := fmt.Sprintf("shown as %d groups of %d adjacent bins", c.wantGroups, c.wantK)
					if c.lastSize != c.wantK {
						want += fmt.Sprintf(" (the last of %d)", c.lastSize)
					}
					if !strings.Contains(lines[0], want) {
						t.Errorf("subheader %q does not say %q", lines[0], want)
					}
				}
				if c.firstLabel != "" && (bars[0].Label != c.firstLabel || bars[len(bars)-1].Label != c.lastLabel) {
					t.Errorf("labels %q … %q, want %q … %q", bars[0].Label, bars[len(bars)-1].Label, c.firstLabel, c.lastLabel)
				}
				// The chart of the groups is the chart of bins that are
				// the groups' sums.
				var gp, gc, ge []float64
				for first := 0; first < c.bins; first += c.wantK {
					last := min(first+c.wantK, c.bins)
					sp, sc := 0.0, 0.0
					for i := first; i < last; i++ {
						sp += p[i]
						sc += counts[i]
					}
					gp, gc, ge = append(gp, sp), append(gc, sc), append(ge, edges[first])
				}
				ge = append(ge, edges[c.bins])
				if len(gp) != c.wantGroups || c.bins-(c.wantGroups-1)*c.wantK != c.lastSize {
					t.Fatalf("test case inconsistent: %d groups, last of %d", len(gp), c.bins-(c.wantGroups-1)*c.wantK)
				}
				grouped := Bins{P: gp, Counts: gc, Edges: ge}.Draw(Options{Width: w})
				for i, b := range bars {
					want := charttest.ParseBars(t, grouped)[i]
					if b.Line != want.Line {
						t.Errorf("width %d group %d:\n got %q\nwant %q (the summed bins' line)", w, i, b.Line, want.Line)
					}
				}
				charttest.CheckBars(t, grouped, gp, gc, w)
			}
		})
	}
}

// TestBinsNotes checks the notes on counts that do not fit the bins, and
// that Quiet leaves them (and the edges' note) out.
func TestBinsNotes(t *testing.T) {
	b := Bins{P: []float64{0.5, 0.5}, Edges: []float64{0, 1, 2}}
	out := strings.Join(b.Draw(Options{Width: 80}), "\n")
	if !strings.Contains(out, "0 noisy counts for 2 bins: missing ones shown as –") {
		t.Errorf("no note on the missing counts:\n%s", out)
	}
	b.Quiet, b.Edges = true, nil
	out = strings.Join(b.Draw(Options{Width: 80}), "\n")
	if strings.Contains(out, "noisy counts for") || strings.Contains(out, "edges do not bound") {
		t.Errorf("a quiet chart has notes:\n%s", out)
	}
	if got := (Bins{}).Draw(Options{Width: 80}); len(got) != 1 || !strings.Contains(got[0], "no bins") {
		t.Errorf("no bins: %q", got)
	}
}
