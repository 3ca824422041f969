// Package countunits is the release kind count_units: the number of
// distinct privacy units with kept events in a window, or with group_by
// the number per key (Privacy on Beam's DistinctPrivacyID, PipelineDP's
// PRIVACY_ID_COUNT), plus discrete Laplace or Gaussian noise.
//
// Guarantee: ε-DP (laplace) or (ε, δ)-DP (gaussian) under add/remove of one
// privacy unit. Sensitivity: without group_by a unit is one unit, so it
// moves the count by 1 whatever its events. With group_by it counts in at
// most min(L, max_keys) keys (its first, by offset) and by one in each, so
// it moves at most that many keys' counts by 1: L1 = min(L, L0) and
// L2 = √min(L, L0) (mechanism/keyed with L' = min(L, L0) and a per-key cap
// of 1). Keys are public or selected privately (package grouped). Source:
// the Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006) and the
// discrete Gaussian (Canonne, Kamath & Steinke 2020), with the L0
// contribution bounding of Wilson et al. (2020).
package countunits

import (
	"fmt"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/mechanism/keyed"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Name is the kind's name in the configuration and in release records.
const Name = "count_units"

func init() { kind.Register(Kind{}) }

// Kind is the count_units kind; it draws its releases as a value ± its 95%
// noise interval, and per-key ones as their top keys.
type Kind struct {
	grouped.Renderer
	grouped.Privacy
}

// Name returns "count_units".
func (Kind) Name() string { return Name }

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "The number of distinct privacy units with kept events in the window, with discrete noise of sensitivity 1; with `group_by`, the number per key (a unit counts in at most `max_keys` keys)."
}

// Fields are the group-by keys but max_per_key: a unit counts once in a
// key whatever its events there.
func (Kind) Fields() []config.Field {
	var out []config.Field
	for _, f := range grouped.Fields(false) {
		if f.Key != "max_per_key" {
			out = append(out, f)
		}
	}
	return out
}

// Decode reads the group-by keys, if any, into a *grouped.Config.
func (Kind) Decode(p *config.Params, r *config.Release) {
	if c := grouped.Decode(p, Name, false); c != nil {
		r.Params = c
	}
}

// KeyHint explains why count_units takes no value field.
func (Kind) KeyHint(key string) string {
	switch key {
	case "field", "bounds":
		return "it counts units, not values"
	case "max_per_key":
		return "a unit counts once in a key"
	}
	return ""
}

// Plan calibrates a count_units release of st.
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	if c, ok := r.Params.(*grouped.Config); ok {
		return grouped.NewPlan(st, r, c, grouped.Metric{Name: Name, Keyed: keyed.Count, Units: true})
	}
	cal, err := keyed.Calibrate(keyed.Spec{Metric: keyed.Count, Noise: noise.Kind(r.Noise), Epsilon: r.Epsilon, Delta: r.Delta,
		Bounds: keyed.Bounds{MaxEvents: 1, MaxKeys: 1, PerKey: 1}})
	if err != nil {
		return nil, err
	}
	return &plan{cal: cal}, nil
}

// plan is a count_units release without group_by.
type plan struct{ cal keyed.Calibration }

func (p *plan) Components() []noise.Component { return p.cal.Components }
func (p *plan) Charges() []kind.Charge        { return kind.ComponentCharges(p.cal.Components) }
func (p *plan) Widest(*schema.Release)        {}
func (p *plan) Fields() []kind.Field          { return nil }
func (p *plan) Norms() kind.Norms             { return kind.Norms{Head: 1} }
func (p *plan) Describe() string              { return "distinct units" }
func (p *plan) Accuracy() string              { return fmt.Sprintf("%.3g", p.cal.ExpectedAbsError()) }
func (p *plan) Notes() []string               { return nil }

// Statistic counts the window's units: the stage numbers a window's units
// 0, 1, … in order of first appearance, so their number is one more than
// the largest index added.
func (p *plan) Statistic([]int) (kind.Statistic, error) { return unitsStatistic{}, nil }

// PDP charges each unit its norm, 1: every unit moves the count by one.
func (p *plan) PDP() ([]kind.PDPComponent, error) {
	c := kind.PDPComponentOf(p.cal.Components[0])
	c.Norm = 0
	return []kind.PDPComponent{c}, nil
}

// Merge adds the partitions' unit counts: a unit's events all reach one
// partition, so the partitions' units are disjoint.
func (p *plan) Merge(parts []kind.Part) (kind.Merged, error) {
	var n int64
	for _, part := range parts {
		c := part.Stats.Count
		if c < 0 {
			return nil, &kind.PartError{Partition: part.Partition, Err: fmt.Errorf("negative unit count %d", c)}
		}
		if n+c < n {
			return nil, fmt.Errorf("the merged unit count overflows int64")
		}
		n += c
	}
	return n, nil
}

// Release adds noise to the number of units.
func (p *plan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	n, ok := m.(int64)
	if !ok {
		return nil, fmt.Errorf("count_units release: merged statistics of type %T", m)
	}
	r, err := p.cal.Release(sampler, keyed.Stats{Count: n})
	if err != nil {
		return nil, err
	}
	rel.Value, rel.Interval95 = &r.Value, &r.Interval95
	return nil, nil
}

type unitsStatistic struct{}

func (unitsStatistic) NewWindow() kind.Accumulator { return &unitsWindow{} }
func (unitsStatistic) Norms() kind.Norms           { return kind.Norms{Head: 1} }

// unitsWindow counts the units of one window.
type unitsWindow struct{ units int }

func (w *unitsWindow) Check([]float64, []string) error { return nil }
func (w *unitsWindow) Add(_ []float64, _ []string, unit int, _ bool) error {
	w.units = max(w.units, unit+1)
	return nil
}
func (w *unitsWindow) Stats(rs *schema.ReleaseStats) { rs.Count = int64(w.units) }

// AppendNorms appends 1, the unit's own contribution to the count.
func (w *unitsWindow) AppendNorms(buf []float64, unit, _ int) ([]float64, error) {
	if unit < 0 || unit >= w.units {
		return nil, fmt.Errorf("no contribution of unit %d", unit)
	}
	return append(buf, 1), nil
}
func (w *unitsWindow) DropUnits() {}
