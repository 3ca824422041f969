package chart

import (
	"math"
	"strings"
)

// Sparkline draws ps as one block character each, from ▁ to █, in
// proportion to the largest (which is █); for the demo's one-line
// summaries. A value that cannot be drawn (NaN, ±Inf, negative) is drawn
// as ▁ and does not count toward the largest.
func Sparkline(ps []float64) string {
	top := Top(ps)
	var b strings.Builder
	for _, p := range ps {
		i := 0
		if top > 0 && Drawable(p) {
			i = min(int(math.Round(p/top*float64(len(lowerEighths)-1))), len(lowerEighths)-1)
		}
		b.WriteRune(lowerEighths[i])
	}
	return b.String()
}

// Downsample returns n values of xs at evenly spaced indices, first and
// last included, or xs itself when it has at most n values: a long
// series' worth of a sparkline.
func Downsample(xs []float64, n int) []float64 {
	if len(xs) <= n || n < 2 {
		return xs
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = xs[i*(len(xs)-1)/(n-1)]
	}
	return out
}
