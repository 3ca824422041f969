package density

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	mdensity "github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Statistic is the exact statistic of a density release: the count of a
// window's kept events and the m integer basis sums K_j = Σ k_j(v) of
// their values clamped to [lo, hi] (mdensity.Quantizer, from the
// configured bounds and terms only, so every window and partition uses
// the same units), clamps counted.
//
// A unit's contribution (kind.UnitNorms) is [k, ‖s‖₁, ‖s‖₂]: k its kept
// events, s_j = Σ k_j(v)·Quantum() over its kept values, j = 1..m. Adding
// or removing the unit moves the count by exactly k and the basis sums by
// exactly s.
type Statistic struct {
	z      mdensity.Quantizer
	lo, hi float64
	at     int
}

// NewStatistic returns the statistic of a density of the value at index
// at of an event's values on [lo, hi] with terms cosine terms; an error
// for bounds or terms without a quantizer.
func NewStatistic(lo, hi float64, terms, at int) (*Statistic, error) {
	z, err := mdensity.NewQuantizer(lo, hi, terms)
	if err != nil {
		return nil, err
	}
	if at < 0 {
		return nil, fmt.Errorf("value index %d", at)
	}
	return &Statistic{z: z, lo: lo, hi: hi, at: at}, nil
}

// Norms is [k, ‖s‖₁, ‖s‖₂].
func (s *Statistic) Norms() kind.Norms { return kind.Norms{Head: 3} }

// NewWindow returns a window with m zero basis sums: an empty window
// still reports them, so the release stage always merges vectors of the
// right length.
func (s *Statistic) NewWindow() kind.Accumulator {
	return &window{s: s, stats: s.z.NewStats()}
}

type window struct {
	s              *Statistic
	count, clamped int64
	stats          mdensity.Stats
	// units are the units' sums s_j in units of 2^-30, m per unit index,
	// while the window keeps contributions; dst is scratch for one
	// event's units.
	units, dst []int64
}

// Check refuses what mdensity.Quantizer.Add would refuse: a NaN value (the
// Extractor never produces one) and an event beyond
// mdensity.MaxEvents, after which a basis sum could overflow.
func (w *window) Check(values []float64, _ []string) error {
	if w.s.at >= len(values) {
		return errors.New("value missing")
	}
	if math.IsNaN(values[w.s.at]) {
		return errors.New("value is NaN")
	}
	if w.stats.Count >= mdensity.MaxEvents {
		return fmt.Errorf("the window's exact basis sums would overflow int64 after %d kept events; "+
			"density sums are exact up to %d events per window: use shorter windows or more partitions",
			w.stats.Count, int64(mdensity.MaxEvents))
	}
	return nil
}

// Add clamps the value (counting the clamp) and adds its units to the
// basis sums and, with contrib, to the unit's. Check has refused
// everything mdensity.Quantizer.Add can, so this cannot fail half-way.
func (w *window) Add(values []float64, _ []string, unit int, contrib bool) error {
	v := values[w.s.at]
	if v < w.s.lo {
		v = w.s.lo
		w.clamped++
	} else if v > w.s.hi {
		v = w.s.hi
		w.clamped++
	}
	w.count++
	if err := w.s.z.Add(&w.stats, v); err != nil {
		return err
	}
	if !contrib {
		return nil
	}
	m := w.s.z.Terms()
	if w.dst == nil {
		w.dst = make([]int64, m)
	}
	if err := w.s.z.Units(v, w.dst); err != nil {
		return fmt.Errorf("unit contribution: %w", err)
	}
	for len(w.units) < (unit+1)*m {
		w.units = append(w.units, make([]int64, m)...)
	}
	sums := w.units[unit*m : (unit+1)*m]
	for j, k := range w.dst {
		sums[j] += k // cannot overflow: kind.MaxUnitEvents
	}
	return nil
}

func (w *window) Stats(rs *schema.ReleaseStats) {
	rs.Count, rs.Clamped, rs.Terms = w.count, w.clamped, w.stats.Terms
}

func (w *window) AppendNorms(buf []float64, unit, kept int) ([]float64, error) {
	m := w.s.z.Terms()
	if unit < 0 || (unit+1)*m > len(w.units) {
		return nil, fmt.Errorf("no contribution of unit %d", unit)
	}
	q := w.s.z.Quantum()
	var l1, l2 float64
	for _, s := range w.units[unit*m : (unit+1)*m] {
		v := float64(s) * q
		l1 += math.Abs(v)
		l2 += v * v
	}
	return append(buf, float64(kept), l1, math.Sqrt(l2)), nil
}

func (w *window) DropUnits() { w.units = nil }

// Fields is the field whose density is estimated.
func (p *Plan) Fields() []kind.Field { return []kind.Field{{Name: p.Config.Field}} }

// Statistic returns the density's statistic with the calibration's terms
// (terms: auto resolved): the accumulate stage must use the same m.
func (p *Plan) Statistic(at []int) (kind.Statistic, error) {
	if len(at) != 1 {
		return nil, fmt.Errorf("a density reads one field, given %d places", len(at))
	}
	return NewStatistic(p.Config.Bounds[0], p.Config.Bounds[1], p.Cal.Spec.Terms, at[0])
}

// Norms is [k, ‖s‖₁, ‖s‖₂].
func (p *Plan) Norms() kind.Norms { return kind.Norms{Head: 3} }

// PDP charges the count's noise by k (norm 0) and the basis sums' by ‖s‖₁
// (Laplace, norm 1) or ‖s‖₂ (Gaussian, norm 2), plus one grid step per
// term when the sums are released on a grid coarser than their unit.
func (p *Plan) PDP() ([]kind.PDPComponent, error) {
	var out []kind.PDPComponent
	for _, c := range p.Cal.Components {
		pc := kind.PDPComponentOf(c)
		switch c.Purpose {
		case aggregate.PurposeCount:
			pc.Norm = 0
		case mdensity.PurposeBasisSums:
			pc.Norm, pc.Slack = 1, kind.GridSlack(c, p.Cal.Spec.Terms)
			if c.Noise == noise.DiscreteGaussian {
				pc.Norm = 2
			}
		default:
			return nil, fmt.Errorf("component %s has no per-instance rule", c.Purpose)
		}
		out = append(out, pc)
	}
	return out, nil
}
