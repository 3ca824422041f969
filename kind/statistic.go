package kind

import "github.com/dpstream/dpstream/schema"

// Field is one event field a release reads.
type Field struct {
	// Name is the field's name in the event.
	Name string
	// Categories, when not nil, makes the field categorical: its value
	// must be a string (or an Avro enum symbol) among the map's keys, and
	// the event carries the mapped index in its place (the accumulate
	// stage's Extractor checks and maps it).
	Categories map[string]int
	// Key makes the field a grouping key (group_by): its value, a string
	// or a number, reaches the statistic as a string in the keys argument
	// of Check and Add, at the field's index (strings as they are, numbers
	// in canonical form, so 7 and 7.0 are one key); values holds 0 there.
	Key bool
}

// Statistic is a release's exact statistic as the accumulate stage keeps
// it: one Accumulator per window and input partition, whose partial
// (schema.ReleaseStats) the release stage merges with Plan.Merge. A kind's
// Plan builds it (Plan.Statistic) for the place of its fields among an
// event's values; the stage bounds each unit's kept events (its first L by
// offset) before any event reaches it, so a Statistic sees only kept
// events, and never decides which ones are kept.
//
// A Statistic and its Accumulators are deterministic functions of the
// events added, in offset order (DESIGN invariant 2): no clock, no
// randomness, no map order.
type Statistic interface {
	// NewWindow returns the empty statistic of one window.
	NewWindow() Accumulator
	// Norms is the layout of the per-unit contributions its accumulators
	// report (the same as its Plan's).
	Norms() Norms
}

// Accumulator is one release's exact statistic in one window on one input
// partition.
//
// An event applies to every release of its stream or to none: for each
// kept event the stage first calls Check on every release's accumulator,
// and only when none refuses the event calls Add on each. Check must
// therefore find every reason Add could have to fail.
type Accumulator interface {
	// Check returns an error when the event with these values cannot be
	// added (a value the statistic cannot take, a sum that would overflow
	// int64), and changes nothing that Stats or AppendNorms report. The
	// error says why, without naming the release (the stage does). keys
	// holds the event's key fields (Field.Key) at their indices, as values
	// holds the others; it is nil when no release of the stream reads a
	// key field.
	Check(values []float64, keys []string) error
	// Add adds the event last passed to Check, which accepted it (it may
	// reuse what Check computed). unit is the index of the event's privacy
	// unit among the window's units, in order of first appearance (0, 1,
	// …): a unit's index is fixed for the window, and a new unit's index is
	// the number of units before it. With contrib the accumulator also
	// keeps the unit's own contribution (AppendNorms); the stage passes
	// contrib for every event of a window or, once it drops the window's
	// contributions (DropUnits), for none after, and for at most
	// MaxUnitEvents events of one unit.
	Add(values []float64, keys []string, unit int, contrib bool) error
	// Stats fills the release's fields of the window's partial. rs arrives
	// with Release set and empty (non-nil) Bins and Terms; the window is
	// discarded afterwards, so Stats may hand over its own slices. An
	// empty window (NewWindow with nothing added) reports vectors of the
	// configured length, zero, so that partials always merge.
	Stats(rs *schema.ReleaseStats)
	// AppendNorms appends unit's contribution (layout Norms, with the Row
	// tail exactly when kept is 1) to buf; kept is the unit's kept events
	// in the window. It is called only for windows whose every event was
	// added with contrib; an error means the accumulator's own state is
	// inconsistent (a bug), and the window then carries no contributions.
	AppendNorms(buf []float64, unit, kept int) ([]float64, error)
	// DropUnits forgets every unit's contribution: the window will carry
	// none (its size would exceed what a partial may hold), and memory
	// stays bounded.
	DropUnits()
}

// MaxUnitEvents is the most events of one unit in one window that an
// Accumulator adds with contrib: the accumulate stage drops the window's
// contributions (DropUnits) rather than add a unit's next one. Below it a
// unit's exact summaries need no overflow check: |Σ units| stays below
// 2^31·2^30 for sums and means, Σ_j k_j² below 2^62 for cells, a density's
// basis sums below 2^31·K* < 2^62, and a regression's Gram entries below
// 2^31·2^32 < 2^63 (it is the most rows mregression.Stats holds). A kind
// whose per-unit summary could overflow below it must check its own.
const MaxUnitEvents = 1<<31 - 1

// Norms is the layout of a release's per-unit contributions
// (schema.UnitContribution.Norms[i] for release i; see UnitNorms).
type Norms struct {
	// Head is the number of entries every unit's contribution has.
	Head int
	// Row is the number of values a unit with exactly one kept event adds
	// after them (its single row, which an exact per-instance loss needs;
	// see PDPFit), 0 for kinds without one.
	Row int
}

// UnitNorms is privacy unit u's own contribution c_u to one release of one
// window on one input partition (schema.UnitContribution.Norms[i]), on the
// value scale of the release's statistic; each kind's Statistic documents
// its entries (Norms is their number). The entries are exact functions of
// u's kept events, computed from exact int64 sums in the release's
// fixed-point units and converted to float64 only at window close (exact
// while a sum stays below 2^53 units).
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
// Sensitivity, per instance: adding or removing u changes the release's
// statistic by exactly c_u. Proof sketch: contribution bounding is per
// unit (a unit's first L events by offset, then at most a cap of them per
// cell, both decided by the unit's own events only), so removing u does
// not change which events of any other unit are kept or counted; every
// statistic is a sum over kept events (counts, fixed-point sums, basis
// sums, Σ x·xᵀ and Σ x·y), so the change is the sum over u's own kept
// events, whose norms each kind lists. A unit's events all reach one input
// partition (events keyed by another unit are rejected as misrouted), so
// its partial on that partition holds its whole contribution to the
// window. Each entry is at most the worst-case sensitivity of SPEC section
// 0 (for example Σ_j k_j ≤ L and √(Σ_j k_j²) ≤ √(L·c)). A release that
// rounds its statistic to a noise grid must add that rounding to these
// values itself, as its calibration does (PDPComponent.Slack).
type UnitNorms []float64

// Row returns the single row that a contribution of layout l carries
// after its Head entries, and ok false when it carries none (the unit has
// several events, or the kind has no row) or n does not have that layout.
func (n UnitNorms) Row(l Norms) (row []float64, ok bool) {
	if l.Row < 1 || len(n) != l.Head+l.Row {
		return nil, false
	}
	return n[l.Head:], true
}
