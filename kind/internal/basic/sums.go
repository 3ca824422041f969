package basic

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

// SumStatistic is the exact statistic of a sum or a mean: the count of a
// window's kept events and the sum of their values' fixed-point units
// (aggregate.Quantizer.Units, from the configured bounds only), each value
// clamped to [lo, hi] (clamps counted). A sum keeps Σ Units(v) (SumUnits),
// a mean the same centred on the midpoint of the bounds
// (CenteredSumUnits). The sums are exact int64 sums, so a partial does
// not depend on the order of its events beyond which ones contribution
// bounding keeps.
//
// A unit's contribution (kind.UnitNorms) is [|S|] for a sum and [k, |C|]
// for a mean: k its kept events, S = Σ Units(v)·Quantum() over its kept
// values with the sum's quantizer, C the same with the mean's, whose
// units are centred on the midpoint of the bounds.
type SumStatistic struct {
	kind   aggregate.Kind
	q      aggregate.Quantizer
	lo, hi float64
	at     int
}

// NewSum returns the statistic of a sum (aggregate.KindSum) or a mean
// (KindMean) of the value at index at of an event's values, on bounds
// [lo, hi]; an error for bounds without a quantizer.
func NewSum(k aggregate.Kind, lo, hi float64, at int) (*SumStatistic, error) {
	q, err := aggregate.NewQuantizer(k, lo, hi)
	if err != nil {
		return nil, err
	}
	if at < 0 {
		return nil, fmt.Errorf("value index %d", at)
	}
	return &SumStatistic{kind: k, q: q, lo: lo, hi: hi, at: at}, nil
}

// Quantum is the value of one unit of the sums.
func (s *SumStatistic) Quantum() float64 { return s.q.Quantum() }

// Norms is [|S|] for a sum, [k, |C|] for a mean.
func (s *SumStatistic) Norms() kind.Norms {
	if s.kind == aggregate.KindMean {
		return kind.Norms{Head: 2}
	}
	return kind.Norms{Head: 1}
}

// NewWindow returns a window with no event.
func (s *SumStatistic) NewWindow() kind.Accumulator { return &sumWindow{s: s} }

type sumWindow struct {
	s                   *SumStatistic
	count, sum, clamped int64
	// k and next are the units of the event Check accepted last and the
	// sum with them, for Add.
	k, next int64
	// units are the units' Σ Units(v), by unit index, while the window
	// keeps contributions.
	units []int64
}

// Check quantizes the value and refuses an event that would overflow the
// window's int64 sum; that needs more than aggregate.MaxSumEvents kept
// events, since each adds at most 2^30 units in magnitude. No value can
// stand in for the true sum then: saturating, wrapping or dropping events
// (which would let one unit's events displace another's) would release a
// statistic whose sensitivity differs from the calibrated one.
func (w *sumWindow) Check(values []float64, _ []string) error {
	s := w.s
	if s.at >= len(values) {
		return errors.New("value missing")
	}
	k, err := s.q.Units(values[s.at])
	if err != nil {
		return err
	}
	cur := w.sum
	next := cur + k
	if (k > 0 && next < cur) || (k < 0 && next > cur) {
		what := "sum"
		if s.kind == aggregate.KindMean {
			what = "centered sum"
		}
		return fmt.Errorf("the window's exact %s overflows int64 (%d + %d units) after %d kept events; "+
			"sums are exact up to %d events per window: use shorter windows or more partitions",
			what, cur, k, w.count, int64(aggregate.MaxSumEvents))
	}
	w.k, w.next = k, next
	return nil
}

func (w *sumWindow) Add(values []float64, _ []string, unit int, contrib bool) error {
	v := values[w.s.at]
	if v < w.s.lo || v > w.s.hi {
		w.clamped++
	}
	w.count++
	w.sum = w.next
	if contrib {
		w.units = grow(w.units, unit)
		w.units[unit] += w.k // cannot overflow: kind.MaxUnitEvents
	}
	return nil
}

func (w *sumWindow) Stats(rs *schema.ReleaseStats) {
	rs.Count, rs.Clamped = w.count, w.clamped
	if w.s.kind == aggregate.KindMean {
		rs.CenteredSumUnits = w.sum
	} else {
		rs.SumUnits = w.sum
	}
}

func (w *sumWindow) AppendNorms(buf []float64, unit, kept int) ([]float64, error) {
	if unit < 0 || unit >= len(w.units) {
		return nil, fmt.Errorf("no contribution of unit %d", unit)
	}
	s := math.Abs(float64(w.units[unit]) * w.s.q.Quantum())
	if w.s.kind == aggregate.KindMean {
		return append(buf, float64(kept), s), nil
	}
	return append(buf, s), nil
}

func (w *sumWindow) DropUnits() { w.units = nil }

// grow returns s with an entry for index i, zero if new. Units appear in
// index order, so this appends one entry at a time.
func grow[T any](s []T, i int) []T {
	for len(s) <= i {
		var zero T
		s = append(s, zero)
	}
	return s
}
