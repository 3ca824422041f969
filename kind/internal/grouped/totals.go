package grouped

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/mechanism/keyed"
	"github.com/dpstream/dpstream/schema"
)

// totalsUnits bounds, like basic's, how many grid steps of a continual
// per-key sum one key's change in one window may be: the sums' fixed-point
// units would overflow the continual factor's integer arithmetic.
const totalsUnits = 1 << 12

// Totals is the continual statistic of a per-key count or sum with public
// keys (kind.Totals, for package kind/running): one coordinate per key, in
// the order of the keys.
type Totals struct {
	*Plan
	shape kind.TotalsShape
	grid  int64 // regridding of a sum's units (1 for counts)
}

// NewTotals returns p's continual statistic. Only counts and sums with
// public keys have one: privately selected keys differ from window to
// window, so no key has a running total.
//
// Sensitivity (L2, per window, in the vector's units): a unit changes at
// most m = Bounds.Keys() keys, each by at most D (a count's c; a sum's
// ⌈c·K*/r⌉ + 1 regridded steps, the +1 for rounding ⌊K/r + 1/2⌋), and by
// at most S in all (L' for a count; ⌈L'·K*/r⌉ + m for a sum). The largest
// L2 norm of such a change is at the vertex with ⌊S/D⌋ keys at D and one
// at the remainder: √(a·D² + (S − a·D)²), a = min(⌊S/D⌋, m) (the rest only
// when a < m).
func NewTotals(p *Plan) (*Totals, error) {
	if !p.Config.Public() {
		return nil, errors.New("continual: running totals per key need public keys (keys: [...]): privately selected keys change from window to window")
	}
	if p.Cal == nil || (p.Metric.Keyed != keyed.Count && p.Metric.Keyed != keyed.Sum) || p.Metric.Units {
		return nil, fmt.Errorf("continual: %s per key has no running total", p.Metric.Name)
	}
	b := p.Cal.Spec.Bounds
	if b.PerKey == 0 {
		b.PerKey = p.L
	}
	m := int64(b.Keys())
	d, s, unit, r := int64(b.PerKey), int64(b.Events()), 1.0, int64(1)
	if p.Metric.Keyed == keyed.Sum {
		z := p.Cal.Quantizer
		kstar := float64(z.MaxUnits())
		for float64(b.PerKey)*kstar/float64(r) > totalsUnits {
			r *= 2
		}
		d = int64(math.Ceil(float64(b.PerKey)*kstar/float64(r))) + 1
		s = int64(math.Ceil(float64(b.Events())*kstar/float64(r))) + m
		unit = z.Quantum() * float64(r)
	}
	a := min(s/d, m)
	sq := float64(a) * float64(d) * float64(d)
	if a < m {
		rest := float64(s - a*d)
		sq += rest * rest
	}
	// The layout names the keys in full (a hash would do as well), so a
	// run resumes only over the same keys in the same order.
	layout := fmt.Sprintf("%s by %s [%v, %v] unit %v keys %q", p.Metric.Name, p.Config.GroupBy, p.Config.Value.Bounds[0], p.Config.Value.Bounds[1], unit, p.Config.Keys)
	return &Totals{Plan: p, grid: r, shape: kind.TotalsShape{N: len(p.Config.Keys), L2: math.Sqrt(sq), Unit: unit, Layout: layout}}, nil
}

// TotalsShape is one coordinate per public key.
func (t *Totals) TotalsShape() kind.TotalsShape { return t.shape }

// TotalsOf returns each public key's count, or its sum regridded to
// t.grid units (⌊K/r + 1/2⌋), in the order of the keys; 0 for a key no
// unit reported.
func (t *Totals) TotalsOf(m kind.Merged) ([]int64, error) {
	groups, ok := m.(Merged)
	if !ok {
		return nil, fmt.Errorf("per-key release: merged statistics of type %T", m)
	}
	out := make([]int64, len(t.Config.Keys))
	for i, k := range t.Config.Keys {
		g, _ := groups.Find(k)
		if t.Metric.Keyed == keyed.Count {
			out[i] = g.Count
			continue
		}
		if len(g.Sums) > 0 {
			v := g.Sums[0] + t.grid/2
			q := v / t.grid
			if v%t.grid != 0 && v < 0 {
				q--
			}
			out[i] = q
		}
	}
	return out, nil
}

// FillTotals publishes the keys, each key's increment as its value and
// its running total, in the values' units.
func (t *Totals) FillTotals(rel *schema.Release, inc, inc95, tot, tot95 []float64) {
	u := t.shape.Unit
	scale := func(v []float64) []float64 {
		if v == nil {
			return nil
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x * u
		}
		return out
	}
	rel.Fields = []string{t.Config.GroupBy}
	rel.Keys = t.Config.Keys
	rel.Values, rel.Intervals95 = scale(inc), scale(inc95)
	rel.RunningTotals, rel.RunningIntervals95 = scale(tot), scale(tot95)
}

// NewPlanOrRunning is NewPlan, made continual (running totals per key,
// kind/running) when r has a continual mapping.
func NewPlanOrRunning(st *config.Stream, r config.Release, c *Config, m Metric) (kind.Plan, error) {
	p, err := NewPlan(st, r, c, m)
	if err != nil {
		return nil, err
	}
	if r.Continual == nil {
		return p, nil
	}
	t, err := NewTotals(p)
	if err != nil {
		return nil, err
	}
	return running.New(st, r, t)
}
