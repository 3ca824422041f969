package accumulate

import (
	"fmt"
	"slices"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// This file keeps, while Stream.UnitContributions is on, every privacy
// unit's own contribution to each release of a window, and summarises it
// at window close into schema.Partial.UnitContributions for per-instance
// DP (SPEC section 4.6). The summaries depend on the unit's data: they are
// confidential (DESIGN invariant 6) and travel only on the internal
// partials topic to the release stage, which turns them into per-instance
// losses for the restricted dpstream.pdp topic. Each release's statistic
// keeps its units' contributions itself (kind.Accumulator); this file
// decides which windows carry them, and assembles them.

// UnitNorms is the layout of schema.UnitContribution.Norms[i]: privacy
// unit u's own contribution to release i (Stream.Releases[i]) of one
// window, whose entries each kind's Statistic documents (kind.UnitNorms,
// with the guarantee, the neighbouring relation and the proof that adding
// or removing u moves the statistic by exactly it). The stage bounds a
// unit's events before any statistic sees them (its first L by offset,
// SPEC section 0), so the entries are functions of u's kept events only.
type UnitNorms = kind.UnitNorms

// MaxUnitContributionBytes bounds the estimated Avro size of a partial's
// UnitContributions. A Kafka record must stay below about 1 MB; this
// leaves about 400 kB for the rest of the partial, whose statistics are a
// few kB for typical releases (a histogram with very many cells, up to
// aggregate.MaxBins, can need more than that by itself: this limit does
// not address it). A window whose contributions would be larger carries
// none and sets Partial.UnitsTruncated: per-instance DP is then
// unavailable for it, which the release stage reports.
const MaxUnitContributionBytes = 600_000

// maxUnitEvents is the number of kept events of one unit in one window up
// to which the kinds' exact per-unit summaries cannot overflow
// (kind.MaxUnitEvents). A window with a unit beyond it (possible only with
// L above 2^31) carries no contributions (UnitsTruncated) rather than
// inexact ones: per-instance DP is a report, and the stream must not stop
// for it.
const maxUnitEvents = kind.MaxUnitEvents

// Avro size bounds used by the estimate: a long (a string's length or an
// array block's count) takes at most 10 bytes as a zig-zag varint, plus
// the array's terminating zero block, and a double 8 bytes.
const (
	avroStringOverhead = 10
	avroArrayOverhead  = 10
	avroDouble         = 8
)

// unitState is one unit's state in one window: its kept events and its
// index among the window's units, in order of first appearance, by which
// the releases' statistics keep its contribution (kind.Accumulator.Add).
// The map value stays two words, so a stream without contributions pays
// little for them.
type unitState struct {
	kept  int
	index int
}

// unitBaseBytes returns the estimated Avro size of one unit's contribution
// without its unit string and without any row tail: the norms array, and
// per release one array of kind.Norms.Head doubles. Window truncation may
// be decided from it early (see newUnit): the size of a window's
// contributions can only grow by it when a unit appears.
func unitBaseBytes(s *Stream) int {
	n := avroStringOverhead + avroArrayOverhead
	for _, r := range s.Releases {
		l := 0 // no contribution for a release without a statistic
		if r.Stat != nil {
			l = r.Stat.Norms().Head
		}
		n += avroArrayOverhead + avroDouble*l
	}
	return n
}

// contributionBytes estimates from above the Avro size of us as a
// partial's unit_contributions field (see the avro* constants).
func contributionBytes(us []schema.UnitContribution) int {
	n := avroArrayOverhead
	for _, u := range us {
		n += len(u.Unit) + avroStringOverhead + avroArrayOverhead
		for _, v := range u.Norms {
			n += avroArrayOverhead + avroDouble*len(v)
		}
	}
	return n
}

// newUnit counts a unit seen for the first time in window w towards the
// window's contributions, and truncates them when the estimated size of
// the units so far, without row tails, already exceeds
// MaxUnitContributionBytes: the close-time estimate would too (it only
// adds to it), so the contributions are dropped at once and memory stays
// bounded by the limit.
func (p *Partition) newUnit(w *window, unit string) {
	w.unitBytes += len(unit) + p.unitBytes
	if avroArrayOverhead+w.unitBytes > MaxUnitContributionBytes {
		w.truncateUnits()
	}
}

// truncateUnits drops every unit's contribution: the window will carry no
// contributions and reports UnitsTruncated.
func (w *window) truncateUnits() {
	w.unitsTruncated = true
	for _, st := range w.stats {
		st.DropUnits()
	}
}

// unitContributions returns the sorted contributions of window w's units
// (see UnitNorms), or truncated true (and none) when they would not fit in
// MaxUnitContributionBytes or were dropped earlier.
func (p *Partition) unitContributions(w *window) (us []schema.UnitContribution, truncated bool, err error) {
	if w.unitsTruncated {
		return nil, true, nil
	}
	if len(w.perUnit) == 0 {
		return nil, false, nil
	}
	names := make([]string, 0, len(w.perUnit))
	for u := range w.perUnit {
		names = append(names, u)
	}
	slices.Sort(names)
	us = make([]schema.UnitContribution, len(names))
	for k, u := range names {
		norms, err := p.unitNorms(w, w.perUnit[u])
		if err != nil {
			return nil, false, fmt.Errorf("unit %q: %w", u, err)
		}
		us[k] = schema.UnitContribution{Unit: u, Norms: norms}
	}
	if contributionBytes(us) > MaxUnitContributionBytes {
		return nil, true, nil
	}
	return us, false, nil
}

// unitNorms returns one unit's contribution to each release of window w
// (UnitNorms), from one backing array.
func (p *Partition) unitNorms(w *window, st unitState) ([][]float64, error) {
	rels := p.s.Releases
	size := 0
	for _, r := range rels {
		l := r.Stat.Norms()
		size += l.Head
		if st.kept == 1 {
			size += l.Row
		}
	}
	buf := make([]float64, 0, size)
	norms := make([][]float64, len(rels))
	for i, r := range rels {
		from := len(buf)
		var err error
		if buf, err = w.stats[i].AppendNorms(buf, st.index, st.kept); err != nil {
			return nil, fmt.Errorf("release %s: %w", r.Name, err)
		}
		norms[i] = buf[from:len(buf):len(buf)]
		// The release stage reads the entries by this layout: a
		// statistic that wrote another must not send them.
		if l := r.Stat.Norms(); len(norms[i]) != l.Head && (st.kept != 1 || len(norms[i]) != l.Head+l.Row) {
			return nil, fmt.Errorf("release %s: %d norms, want %d (%d with a row)", r.Name, len(norms[i]), l.Head, l.Head+l.Row)
		}
	}
	return norms, nil
}
