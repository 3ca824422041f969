package randomizedresponse

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/schema"
)

// Statistic is the exact statistic of a randomized_response release: the
// count of a window's kept events and of each of the k reported
// categories, optionally capped at c events of a unit per category (the
// first c by offset). An event carries the reported category's index in
// [0, k) (the Extractor maps the names, Plan.Fields).
//
// A unit's contribution (kind.UnitNorms) is [Σ_j k_j, √(Σ_j k_j²)], k_j
// the number of its events counted in category j (after the cap), exactly
// as a histogram's cells.
type Statistic struct {
	categories, at    int
	binCap, maxEvents int
}

// NewStatistic returns the statistic of k categories whose reported index
// is at index at of an event's values, with a per-unit cap of binCap
// events per category (0: none) for a stream keeping maxEvents (L) events
// per unit and window; an error without categories.
func NewStatistic(k, at, binCap, maxEvents int) (*Statistic, error) {
	if k < 1 {
		return nil, errors.New("no categories")
	}
	if at < 0 {
		return nil, fmt.Errorf("value index %d", at)
	}
	return &Statistic{categories: k, at: at, binCap: binCap, maxEvents: maxEvents}, nil
}

// Norms is [Σ_j k_j, √(Σ_j k_j²)].
func (s *Statistic) Norms() kind.Norms { return kind.Norms{Head: 2} }

// NewWindow returns a window with every category zero.
func (s *Statistic) NewWindow() kind.Accumulator {
	return &window{s: s, Cells: basic.NewCells(s.categories, s.binCap, s.maxEvents)}
}

type window struct {
	s *Statistic
	basic.Cells
}

// Check refuses an event whose value is not a category index (the
// Extractor never produces one).
func (w *window) Check(values []float64, _ []string) error {
	if w.s.at >= len(values) {
		return errors.New("no value")
	}
	if v := values[w.s.at]; !(v >= 0 && v < float64(w.s.categories)) || v != math.Trunc(v) {
		return fmt.Errorf("category index %v is not an integer in [0, %d)", v, w.s.categories)
	}
	return nil
}

func (w *window) Add(values []float64, _ []string, unit int, contrib bool) error {
	w.Cells.Add(unit, int(values[w.s.at]), false, contrib)
	return nil
}

func (w *window) Stats(rs *schema.ReleaseStats) { w.Cells.Stats(rs) }

// Fields is the randomized field, categorical: the Extractor maps each
// configured category to its index.
func (p *Plan) Fields() []kind.Field {
	c := p.Config
	cats := make(map[string]int, len(c.Categories))
	for j, name := range c.Categories {
		cats[name] = j
	}
	return []kind.Field{{Name: c.Field, Categories: cats}}
}

// Statistic returns the categories' statistic with the configured cap.
func (p *Plan) Statistic(at []int) (kind.Statistic, error) {
	if len(at) != 1 {
		return nil, fmt.Errorf("a randomized_response reads one field, given %d places", len(at))
	}
	return NewStatistic(p.Cal.Spec.Categories, at[0], p.Config.MaxPerBin, p.Cal.Spec.MaxContributions)
}

// Norms is [Σ_j k_j, √(Σ_j k_j²)].
func (p *Plan) Norms() kind.Norms { return kind.Norms{Head: 2} }

// PDP charges the category counts' noise by Σ_j k_j (Laplace) or
// √(Σ_j k_j²) (Gaussian), as a histogram's.
func (p *Plan) PDP() ([]kind.PDPComponent, error) { return basic.CellsPDP(p.Cal.Components) }
