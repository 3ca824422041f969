package accumulate

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// This file keeps, while Stream.UnitContributions is on, every privacy
// unit's own contribution to each release of a window, and summarises it
// at window close into schema.Partial.UnitContributions for per-instance
// DP (SPEC section 4.6). The summaries depend on the unit's data: they are
// confidential (DESIGN invariant 6) and travel only on the internal
// partials topic to the release stage, which turns them into per-instance
// losses for the restricted dpstream.pdp topic.

// UnitNorms is the layout of schema.UnitContribution.Norms[i]: privacy
// unit u's own contribution c_u to release i (Stream.Releases[i]) of one
// window, on the value scale of the release's statistic. The entries are
// exact functions of u's kept events, computed from exact int64 sums in the
// release's fixed-point units and converted to float64 only at window
// close (exact while a sum stays below 2^53 units).
//
//	kind                           Norms[i]
//	count                          [k]
//	sum                            [|S|]
//	mean                           [k, |C|]
//	histogram, randomized_response [Σ_j k_j, √(Σ_j k_j²)]
//	density                        [k, ‖s‖₁, ‖s‖₂]
//	regression                     [‖upper(G)‖₂, ‖b‖₂, ‖G‖_F] and, only when k = 1, x_1, …, x_d, y
//
// where k is the number of u's kept events in the window (the first L by
// offset, SPEC section 0); S = Σ Quantizer.Units(v)·Quantum() over u's kept
// values v (clamped), with the sum's own aggregate.Quantizer; C the same
// with the mean's quantizer, whose units are centered on the midpoint of
// the bounds; k_j the number of u's events counted in cell (or category) j,
// that is after the per-cell cap Release.BinCap; s_j = Σ k_j(v)·Quantum()
// over u's kept values, with the release's density.Quantizer and
// its per-event units for term j = 1..m; and, for a regression, G = Σ x·xᵀ
// and b = Σ x·y over u's kept rows scaled by
// regression.Scaling.Row (units times RegressionQuantum²),
// ‖upper(G)‖₂ the Euclidean norm of G's upper triangle, diagonal included
// (the vector the release adds noise to), ‖G‖_F its Frobenius norm, and
// the tail the unit's single row on the value scale (units times
// RegressionQuantum; d = Scaling.Dim(), the intercept column included),
// which the exact per-instance loss of OPS needs (SPEC section 4.6). The
// constants Norm* name the indices.
//
// Guarantee: none by itself. UnitNorms are the per-instance sensitivities
// from which the release stage computes per-instance DP (Wang 2019,
// "Per-instance differential privacy", seed 000): ε_u = ‖c_u‖₁/b for
// Laplace noise of scale b, ρ_u = ‖c_u‖₂²/(2σ²) for Gaussian noise
// (pdp.GaussianRho, pdp.LaplaceEpsilon).
//
// Neighbouring relation: add or remove unit u, that is all of u's events
// in the window (SPEC section 0).
//
// Sensitivity, per instance: adding or removing u changes release i's
// statistic by exactly c_u. Proof sketch: contribution bounding is per
// unit (a unit's first L events by offset, then at most BinCap of them per
// cell, both decided by the unit's own events only), so removing u does
// not change which events of any other unit are kept or counted; every
// statistic is a sum over kept events (counts, fixed-point sums, basis
// sums, Σ x·xᵀ and Σ x·y), so the change is the sum over u's own kept
// events, whose norms are listed above. A unit's events all reach one
// input partition (events keyed by another unit are rejected as
// misrouted), so its partial on that partition holds its whole
// contribution to the window. Each entry is at most the worst-case
// sensitivity of SPEC section 0 (for example Σ_j k_j ≤ L and
// √(Σ_j k_j²) ≤ √(L·c)). A release that rounds its statistic to a noise
// grid must add that rounding to these values itself, as its calibration
// does.
type UnitNorms []float64

// Indices into UnitNorms, per release kind (see UnitNorms).
const (
	// NormEvents is k, the unit's kept events (count, mean, density).
	NormEvents = 0
	// NormSum is |S| of a sum release.
	NormSum = 0
	// NormCenteredSum is |C| of a mean release.
	NormCenteredSum = 1
	// NormCellsL1 is Σ_j k_j of a histogram or randomized_response.
	NormCellsL1 = 0
	// NormCellsL2 is √(Σ_j k_j²) of a histogram or randomized_response.
	NormCellsL2 = 1
	// NormDensityL1 is ‖s‖₁ of a density release.
	NormDensityL1 = 1
	// NormDensityL2 is ‖s‖₂ of a density release.
	NormDensityL2 = 2
	// NormGramUpperL2 is ‖upper(G)‖₂ of a regression release.
	NormGramUpperL2 = 0
	// NormXtyL2 is ‖b‖₂ of a regression release.
	NormXtyL2 = 1
	// NormGramFrobenius is ‖G‖_F of a regression release.
	NormGramFrobenius = 2
	// NormRow is where a regression unit's single row starts: x_1..x_d
	// at NormRow..NormRow+d−1 and y at NormRow+d, present only when the
	// unit has exactly one kept row.
	NormRow = 3
)

// UnitNormsLen returns the length of a release's UnitNorms for kind,
// without a regression's single-row tail (which adds Dim()+1 entries when
// the unit has exactly one row), or an error for an unknown kind.
func UnitNormsLen(kind string) (int, error) {
	switch kind {
	case "count", "sum":
		return 1, nil
	case "mean", "histogram", "randomized_response":
		return 2, nil
	case "density", "regression":
		return 3, nil
	}
	return 0, fmt.Errorf("unit norms: unknown release kind %q", kind)
}

// Row returns the single scaled row (x, y) that a regression release's
// UnitNorms carries when the unit has exactly one row of d columns, and ok
// false when it carries none (the unit has several rows) or n is not a
// regression UnitNorms of dimension d.
func (n UnitNorms) Row(d int) (x []float64, y float64, ok bool) {
	if d < 1 || len(n) != NormRow+d+1 {
		return nil, 0, false
	}
	return n[NormRow : NormRow+d], n[NormRow+d], true
}

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
// to which its exact int64 summaries cannot overflow: |S| and |C| stay
// below 2^31·2^30 units, Σ_j k_j² below 2^62, density sums below
// 2^31·K* < 2^62, and Gram entries below MaxRegressionRows·2^32 < 2^63 (the
// limit is MaxRegressionRows, which RegressionStats.AddRow enforces). A
// window with a unit beyond it (possible only with L above 2^31) carries no
// contributions (UnitsTruncated) rather than inexact ones: per-instance DP
// is a report, and the stream must not stop for it.
const maxUnitEvents = regression.MaxRows

// Avro size bounds used by the estimate: a long (a string's length or an
// array block's count) takes at most 10 bytes as a zig-zag varint, plus
// the array's terminating zero block, and a double 8 bytes.
const (
	avroStringOverhead = 10
	avroArrayOverhead  = 10
	avroDouble         = 8
)

// unitState is one unit's state in one window: its kept events and, while
// Stream.UnitContributions is on, where its per-release contribution
// accumulators are in window.accs. The map value stays two words, so a
// stream without contributions pays little for them; with them, the
// accumulators of all units share one growing slice instead of one
// allocation per unit.
type unitState struct {
	kept int
	// acc is 1 + the index in window.accs of the unit's accumulator of
	// release 0 (the others follow); 0 when it has none. Meaningless once
	// the window is truncated (window.accs is then nil).
	acc int
}

// unitAccs returns the unit's accumulators, one per release, or nil when
// it has none or the window's contributions are truncated. The slice is
// valid until the next newUnit (which may move window.accs).
func (w *window) unitAccs(st unitState, releases int) []unitRelease {
	if st.acc == 0 || w.unitsTruncated {
		return nil
	}
	at := st.acc - 1
	return w.accs[at : at+releases : at+releases]
}

// unitRelease accumulates one unit's exact contribution to one release, in
// the release's fixed-point units. It is three words: the vectors of
// density and regression releases live behind vec, so that the common
// kinds do not pay for them.
type unitRelease struct {
	// units is Σ Units(v) (sum), Σ centered units (mean) or Σ_j k_j
	// (histogram, randomized_response).
	units int64
	// sq is Σ_j k_j² (histogram, randomized_response), kept exactly by
	// adding 2k_j + 1 when k_j grows by one.
	sq  int64
	vec *unitVectors // density and regression only
}

// unitVectors are a unit's vector accumulators for one density or
// regression release.
type unitVectors struct {
	// terms are the density sums s_j in units of 2^-30.
	terms []int64
	// rows are a regression unit's scaled rows (d x units, then y) while
	// storing them is smaller than their statistics; gram replaces them
	// beyond (see addUnitRow). Both are exact; the summary is the same
	// either way.
	rows []int64
	gram *regression.Stats
}

// unitBaseBytes returns the estimated Avro size of one unit's contribution
// without its unit string and without any regression tail: the norms
// array, and per release one array of UnitNormsLen doubles. Window
// truncation may be decided from it early (see newUnit): the size of a
// window's contributions can only grow by it when a unit appears.
func unitBaseBytes(s *Stream) int {
	n := avroStringOverhead + avroArrayOverhead
	for _, r := range s.Releases {
		l, err := UnitNormsLen(r.Kind)
		if err != nil {
			l = 0 // no contribution for a kind the stage does not know
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

// newUnit makes room for the accumulators of a unit seen for the first
// time in window w and returns unitState.acc for it, or 0 when the
// window's contributions are (now) truncated: when the estimated size of
// the units so far, without regression tails, already exceeds
// MaxUnitContributionBytes the close-time estimate would too (it only adds
// to it), so the accumulators are dropped at once and memory stays bounded
// by the limit.
func (p *Partition) newUnit(w *window, unit string) int {
	w.unitBytes += len(unit) + p.unitBytes
	if avroArrayOverhead+w.unitBytes > MaxUnitContributionBytes {
		w.truncateUnits()
		return 0
	}
	if w.accs == nil {
		// Most windows of a stream have about as many units as the last
		// one: start there rather than grow by doubling (capacity only;
		// nothing observable depends on it).
		w.accs = make([]unitRelease, 0, max(p.accsHint, len(p.s.Releases)))
	}
	at := len(w.accs)
	w.accs = append(w.accs, make([]unitRelease, len(p.s.Releases))...)
	return at + 1
}

// truncateUnits drops every unit's accumulators: the window will carry no
// contributions and reports UnitsTruncated.
func (w *window) truncateUnits() {
	w.unitsTruncated = true
	w.accs = nil
}

// addUnitRow adds one scaled row of d columns to a unit's regression
// accumulator. Rows are kept as they are while k rows take no more room
// than the statistics (k·(d+1) ≤ d(d+1)/2 + d + 1 int64s) and folded into
// a RegressionStats beyond, so a unit costs the smaller of the two. The
// single row of a unit with one row is therefore always at hand (d + 1 is
// never more than the statistics' size).
func addUnitRow(ar *unitRelease, d int, xu []int64, yu int64) error {
	if ar.vec == nil {
		ar.vec = &unitVectors{}
	}
	a := ar.vec
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
	st := regression.NewStats(d)
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
		st := w.perUnit[u]
		accs := w.unitAccs(st, len(p.s.Releases))
		if accs == nil {
			// Every kept event of a unit of a window that is not truncated
			// has accumulators; anything else is a bug, and inexact
			// contributions must not go out.
			return nil, false, fmt.Errorf("unit %q has no contribution accumulators", u)
		}
		norms, err := p.unitNorms(st.kept, accs)
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

// unitNorms converts one unit's exact accumulators into its UnitNorms per
// release, from one backing array.
func (p *Partition) unitNorms(kept int, accs []unitRelease) ([][]float64, error) {
	rels := p.s.Releases
	size := 0
	for i, r := range rels {
		l, err := UnitNormsLen(r.Kind)
		if err != nil {
			return nil, fmt.Errorf("release %s: %w", r.Name, err)
		}
		if r.Kind == "regression" && kept == 1 {
			l += r.Regression.Scaling.Dim() + 1
		}
		if i >= len(accs) {
			return nil, fmt.Errorf("release %s: no accumulator", r.Name)
		}
		size += l
	}
	buf := make([]float64, 0, size)
	norms := make([][]float64, len(rels))
	k := float64(kept)
	for i, r := range rels {
		a := &accs[i]
		from := len(buf)
		switch r.Kind {
		case "count":
			buf = append(buf, k)
		case "sum":
			buf = append(buf, math.Abs(float64(a.units)*p.quant[i].Quantum()))
		case "mean":
			buf = append(buf, k, math.Abs(float64(a.units)*p.quant[i].Quantum()))
		case "histogram", "randomized_response":
			buf = append(buf, float64(a.units), math.Sqrt(float64(a.sq)))
		case "density":
			q := p.dquant[i].Quantum()
			var l1, l2 float64
			var terms []int64 // none: no kept event reached the release
			if a.vec != nil {
				terms = a.vec.terms
			}
			for _, s := range terms {
				v := float64(s) * q
				l1 += math.Abs(v)
				l2 += v * v
			}
			buf = append(buf, k, l1, math.Sqrt(l2))
		case "regression":
			var err error
			if buf, err = p.regressionNorms(buf, i, kept, a); err != nil {
				return nil, fmt.Errorf("release %s: %w", r.Name, err)
			}
		}
		norms[i] = buf[from:len(buf):len(buf)]
	}
	return norms, nil
}

// regressionNorms appends a regression unit's ‖upper(G)‖₂, ‖b‖₂ and ‖G‖_F,
// and its row when it has exactly one (kept = 1), to buf. Rows not yet
// folded are folded into scratch statistics first, so the norms are
// computed from the same exact integers either way.
func (p *Partition) regressionNorms(buf []float64, i, kept int, ar *unitRelease) ([]float64, error) {
	d := p.s.Releases[i].Regression.Scaling.Dim()
	if ar.vec == nil {
		return nil, fmt.Errorf("no rows for %d kept events", kept)
	}
	a := ar.vec
	g := a.gram
	if g == nil {
		g = &p.gramScratch[i]
		if g.Dim() != d || len(g.XtX) != d*(d+1)/2 {
			*g = regression.NewStats(d)
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
	const q2 = regression.Quantum * regression.Quantum
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
			buf = append(buf, float64(u)*regression.Quantum)
		}
	}
	return buf, nil
}

// addUnitDensity adds value v's per-event units of density release i to a
// unit's sums s_j (allocated at its first event).
func (p *Partition) addUnitDensity(a *unitRelease, i int, v float64) error {
	dst := p.dunits[i]
	if err := p.dquant[i].Units(v, dst); err != nil {
		return fmt.Errorf("unit contribution: %w", err)
	}
	if a.vec == nil {
		a.vec = &unitVectors{terms: make([]int64, len(dst))}
	}
	for j, k := range dst {
		a.vec.terms[j] += k // cannot overflow: maxUnitEvents
	}
	return nil
}
