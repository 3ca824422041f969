package regression

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstream/dpstream/kind"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// Statistic is the exact statistic of a regression release: the
// sufficient statistics XᵀX (upper triangle), Xᵀy and yᵀy of a window's
// kept rows and their number, each row scaled by the release's
// mregression.Scaling (features and target clamped to their
// bounds and mapped to [−1, 1], in units of mregression.Quantum),
// with one clamp counted per row that had any value outside its bounds.
//
// A unit's contribution (kind.UnitNorms) is [‖upper(G)‖₂, ‖b‖₂, ‖G‖_F]
// and, only when the unit has exactly one kept row, that row x_1, …, x_d,
// y after them (d = Scaling.Dim(), the intercept column included, on the
// value scale: units times mregression.Quantum), which the exact
// per-instance loss of a posterior sample needs (SPEC section 4.6). G =
// Σ x·xᵀ and b = Σ x·y over the unit's kept rows (units times
// mregression.Quantum²); ‖upper(G)‖₂ is the Euclidean norm of G's upper
// triangle, diagonal included (the vector the release adds noise to),
// ‖G‖_F its Frobenius norm. Adding or removing the unit moves XᵀX by
// exactly upper(G) and Xᵀy by exactly b.
type Statistic struct {
	sc mregression.Scaling
	// target and features are the indices of the target's and the
	// features' values in an event's values.
	target   int
	features []int
}

// NewStatistic returns the statistic of a regression scaled by sc, whose
// target's value is at index target of an event's values and feature j's
// at features[j]; an error for a scaling that does not validate or a
// feature count that does not match it.
func NewStatistic(sc mregression.Scaling, target int, features []int) (*Statistic, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if len(features) != len(sc.FeatureBounds) {
		return nil, fmt.Errorf("%d feature values for %d features", len(features), len(sc.FeatureBounds))
	}
	return &Statistic{sc: sc, target: target, features: features}, nil
}

// Norms is [‖upper(G)‖₂, ‖b‖₂, ‖G‖_F], then the single row of d + 1
// values.
func (s *Statistic) Norms() kind.Norms { return normsOf(s.sc.Dim()) }

func normsOf(d int) kind.Norms { return kind.Norms{Head: 3, Row: d + 1} }

// NewWindow returns a window of zero statistics of the release's
// dimension: an empty window reports them, so the release stage always
// merges arrays of the right length.
func (s *Statistic) NewWindow() kind.Accumulator {
	return &window{s: s, stats: mregression.NewStats(s.sc.Dim()), x: make([]float64, len(s.features))}
}

type window struct {
	s       *Statistic
	clamped int64
	stats   mregression.Stats
	// x is scratch for the features' values; xu, yu and rowClamped are
	// the scaled row Check accepted last, for Add.
	x          []float64
	xu         []int64
	yu         int64
	rowClamped bool
	// units are the units' rows or statistics by unit index, while the
	// window keeps contributions; gram is scratch for a unit's statistics
	// at window close.
	units []unitRows
	gram  mregression.Stats
}

// unitRows is one unit's contribution: its scaled rows (d units, then y)
// while storing them is smaller than their statistics, gram beyond (see
// addRow). Both are exact; the norms are the same either way.
type unitRows struct {
	rows []int64
	gram *mregression.Stats
}

// A unit's gram holds every row the stage adds with contrib
// (kind.MaxUnitEvents): this fails to compile if mregression.Stats held
// fewer.
const _ = uint64(mregression.MaxRows - kind.MaxUnitEvents)

// Check scales the event's row, refusing a missing or NaN value (the
// Extractor produces neither) and a row beyond
// mregression.MaxRows, up to which the statistics are exact.
func (w *window) Check(values []float64, _ []string) error {
	s := w.s
	for j, k := range s.features {
		if k < 0 || k >= len(values) {
			return fmt.Errorf("feature %d has no value", j+1)
		}
		w.x[j] = values[k]
	}
	if s.target < 0 || s.target >= len(values) {
		return errors.New("no target value")
	}
	xu, yu, clamped, err := s.sc.Row(w.x, values[s.target])
	if err != nil {
		return err
	}
	if w.stats.N >= mregression.MaxRows {
		return fmt.Errorf("regression statistics are exact up to %d rows per window: use shorter windows or more partitions", int64(mregression.MaxRows))
	}
	w.xu, w.yu, w.rowClamped = xu, yu, clamped
	return nil
}

// Add adds the row Check scaled to the window's statistics and, with
// contrib, to the unit's.
func (w *window) Add(_ []float64, _ []string, unit int, contrib bool) error {
	if err := w.stats.AddRow(w.xu, w.yu); err != nil {
		return err
	}
	if contrib {
		w.units = grow(w.units, unit)
		if err := w.units[unit].addRow(len(w.xu), w.xu, w.yu); err != nil {
			return fmt.Errorf("unit contribution: %w", err)
		}
	}
	if w.rowClamped {
		w.clamped++
	}
	return nil
}

func (w *window) Stats(rs *schema.ReleaseStats) {
	rs.Count, rs.Clamped = w.stats.N, w.clamped
	rs.XtX, rs.Xty, rs.Yty = w.stats.XtX, w.stats.Xty, w.stats.Yty
}

// addRow adds one scaled row of d columns to a unit's contribution. Rows
// are kept as they are while k rows take no more room than the statistics
// (k·(d+1) ≤ d(d+1)/2 + d + 1 int64s) and folded into an mregression.Stats
// beyond, so a unit costs the smaller of the two. The single row of a unit
// with one row is therefore always at hand (d + 1 is never more than the
// statistics' size).
func (a *unitRows) addRow(d int, xu []int64, yu int64) error {
	if a.gram != nil {
		return a.gram.AddRow(xu, yu)
	}
	stride := d + 1
	if len(a.rows)+stride <= d*(d+1)/2+d+1 {
		if a.rows == nil {
			a.rows = make([]int64, 0, stride)
		}
		a.rows = append(append(a.rows, xu...), yu)
		return nil
	}
	st := mregression.NewStats(d)
	for r := 0; r+stride <= len(a.rows); r += stride {
		if err := st.AddRow(a.rows[r:r+d], a.rows[r+d]); err != nil {
			return err
		}
	}
	if err := st.AddRow(xu, yu); err != nil {
		return err
	}
	a.gram, a.rows = &st, nil
	return nil
}

// AppendNorms appends the unit's ‖upper(G)‖₂, ‖b‖₂ and ‖G‖_F, and its row
// when it has exactly one (kept = 1). Rows not yet folded are folded into
// scratch statistics first, so the norms are computed from the same exact
// integers either way.
func (w *window) AppendNorms(buf []float64, unit, kept int) ([]float64, error) {
	d := w.s.sc.Dim()
	if unit < 0 || unit >= len(w.units) {
		return nil, fmt.Errorf("no rows for %d kept events", kept)
	}
	a := &w.units[unit]
	g := a.gram
	if g == nil {
		g = &w.gram
		if g.Dim() != d || len(g.XtX) != d*(d+1)/2 {
			*g = mregression.NewStats(d)
		}
		clear(g.XtX)
		clear(g.Xty)
		g.N, g.Yty = 0, 0
		for r := 0; r+d+1 <= len(a.rows); r += d + 1 {
			if err := g.AddRow(a.rows[r:r+d], a.rows[r+d]); err != nil {
				return nil, err
			}
		}
	}
	if g.N != int64(kept) {
		return nil, fmt.Errorf("%d rows for %d kept events", g.N, kept)
	}
	const q2 = mregression.Quantum * mregression.Quantum
	var diag, off, xty float64
	idx := 0
	for r := range d {
		for c := r; c < d; c++ {
			v := float64(g.XtX[idx]) * q2
			if c == r {
				diag += v * v
			} else {
				off += v * v
			}
			idx++
		}
		v := float64(g.Xty[r]) * q2
		xty += v * v
	}
	// G is symmetric: the Frobenius norm counts each off-diagonal entry
	// of the upper triangle twice.
	buf = append(buf, math.Sqrt(diag+off), math.Sqrt(xty), math.Sqrt(diag+2*off))
	if kept == 1 {
		if len(a.rows) != d+1 {
			return nil, fmt.Errorf("one row of %d values, want %d", len(a.rows), d+1)
		}
		for _, u := range a.rows {
			buf = append(buf, float64(u)*mregression.Quantum)
		}
	}
	return buf, nil
}

func (w *window) DropUnits() { w.units = nil }

// grow returns s with an entry for index i, zero if new. Units appear in
// index order, so this appends one entry at a time.
func grow[T any](s []T, i int) []T {
	for len(s) <= i {
		var zero T
		s = append(s, zero)
	}
	return s
}

// Fields are the target, then the features in order.
func (b base) Fields() []kind.Field {
	c := b.Config
	out := []kind.Field{{Name: c.Target}}
	for _, f := range c.Features {
		out = append(out, kind.Field{Name: f})
	}
	return out
}

// Statistic returns the regression's statistic: the target's value at
// at[0], the features' after it.
func (b base) Statistic(at []int) (kind.Statistic, error) {
	if len(at) < 1 {
		return nil, errors.New("a regression reads its target and features, given no places")
	}
	return NewStatistic(Scaling(b.Config), at[0], at[1:])
}

// Norms is [‖upper(G)‖₂, ‖b‖₂, ‖G‖_F] with a row of Dim() + 1 values.
func (b base) Norms() kind.Norms { return normsOf(b.Dim()) }
