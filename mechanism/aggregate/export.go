package aggregate

import "github.com/dpstream/dpstream/mechanism/noise"

// HalfWidth95 is the half-width of a 95% interval of comp's noise: the
// smallest G·m with P(|noise| > G·m) ≤ 0.05, plus G/2 for the rounding of
// a sum to a grid coarser than its unit. Per-key releases
// (mechanism/keyed) publish it beside each key's value.
func HalfWidth95(comp noise.Component) float64 { return halfWidth95(comp) }
