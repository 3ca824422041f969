package pdpstore

import (
	"fmt"
	"math"

	"github.com/dpstream/dpstream/mechanism/pdp"
	"github.com/dpstream/dpstream/schema"
)

// Store holds every unit's cumulative per-instance account per stream:
// the state behind the compacted, restricted dpstream.pdp topic, rebuilt
// from it (CatchUp, or Restore record by record) and advanced one released
// window at a time (Prepare, then Commit). Every value it holds is
// confidential (DESIGN invariant 6).
//
// The release stage's store is on disk (Open), so its memory does not
// grow with the number of units, and a window's work is proportional to
// the window's units; NewMemory's keeps everything in memory. See the
// package doc for both, the memory per unit, and the error of the
// cumulative quantiles (QuantileError).
//
// A Store is not safe for concurrent use; the release stage serialises
// it with the Releaser.
type Store struct {
	db   pdpBackend
	path string // the bbolt file, "" in memory
}

// NewMemory returns an empty store that keeps every unit in memory
// (`dpstream simulate`, tests): no unit has paid anything.
func NewMemory() *Store {
	return &Store{db: newMemBackend()}
}

// Path is the file of an on-disk store ("" for NewMemory's).
func (s *Store) Path() string { return s.path }

// Close closes the store's file, if it has one.
func (s *Store) Close() error { return s.db.close() }

// AccountOf returns the per-instance account a unit record holds.
func AccountOf(u schema.PDPUnit) pdp.Account {
	return pdp.Account{GaussianRho: u.GaussianRho, PureRho: u.PureRho, PureEpsilon: u.PureEpsilon,
		ApproxEpsilon: u.ApproxEpsilon, ApproxDelta: u.ApproxDelta, Charges: u.Charges}
}

// RecordOf returns a record of account a for a unit of a stream, without
// LastWindow, δ, ε and time, which the caller stamps.
func RecordOf(a pdp.Account, stream, unit string) schema.PDPUnit {
	return schema.PDPUnit{Stream: stream, Unit: unit, GaussianRho: a.GaussianRho, PureRho: a.PureRho,
		PureEpsilon: a.PureEpsilon, ApproxEpsilon: a.ApproxEpsilon, ApproxDelta: a.ApproxDelta, Charges: a.Charges}
}

// CachedEpsilon returns a.Epsilon(delta), sharing the search between
// accounts with equal totals (units with the same history) through memo.
func CachedEpsilon(memo map[pdp.Account]float64, a pdp.Account, delta float64) float64 {
	a.Charges = 0 // Epsilon does not depend on the count
	if e, ok := memo[a]; ok {
		return e
	}
	e := a.Epsilon(delta)
	memo[a] = e
	return e
}

// checkUnit returns an error for a record that no update can have
// written: no stream, a negative or non-finite account entry, a negative
// or NaN ε, or a δ outside (0, 1).
func checkUnit(u schema.PDPUnit) error {
	if u.Stream == "" {
		return fmt.Errorf("pdp restore: unit %q: record has no stream", u.Unit)
	}
	acct := AccountOf(u)
	for _, f := range []struct {
		name string
		v    float64
	}{{"gaussian_rho", acct.GaussianRho}, {"pure_rho", acct.PureRho}, {"pure_epsilon", acct.PureEpsilon},
		{"approx_epsilon", acct.ApproxEpsilon}, {"approx_delta", acct.ApproxDelta}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) {
			return fmt.Errorf("pdp restore: stream %q unit %q: %s is %v, want finite and >= 0", u.Stream, u.Unit, f.name, f.v)
		}
	}
	if u.Charges < 0 {
		return fmt.Errorf("pdp restore: stream %q unit %q: %d charges", u.Stream, u.Unit, u.Charges)
	}
	if !(u.Epsilon >= 0) {
		return fmt.Errorf("pdp restore: stream %q unit %q: epsilon is %v, want >= 0", u.Stream, u.Unit, u.Epsilon)
	}
	if !(u.Delta > 0 && u.Delta < 1) {
		return fmt.Errorf("pdp restore: stream %q unit %q: delta is %v, want in (0, 1)", u.Stream, u.Unit, u.Delta)
	}
	return nil
}

// Restore applies one dpstream.pdp unit record, as read back from the
// compacted topic. Of two records for the same (stream, unit) the one with
// the later LastWindow wins, and of two with the same LastWindow the one
// restored last: every update adds charges and advances LastWindow, so this
// is the newest record in offset order, and a stale record replayed late
// can never roll an account back (which would under-report the unit's loss
// and let a window be charged twice). It returns an error, and changes
// nothing, for a record that no update can have written (checkUnit) or
// when the store cannot be written.
func (s *Store) Restore(u schema.PDPUnit) error {
	if err := checkUnit(u); err != nil {
		return err
	}
	return s.db.update(func(tx pdpTx) error {
		ap := newApplier(tx)
		if err := ap.unit(u); err != nil {
			return err
		}
		return ap.flush()
	})
}

// Units returns the number of units of the stream with a cumulative
// account (0 also when the store cannot be read).
func (s *Store) Units(stream string) int {
	var n int64
	_ = s.db.view(func(tx pdpTx) error {
		a, err := tx.aggregate(stream)
		if a != nil {
			n = a.units
		}
		return err
	})
	return int(n)
}

// Unit returns the cumulative record of one unit of a stream (false also
// when the store cannot be read).
func (s *Store) Unit(stream, unit string) (schema.PDPUnit, bool) {
	var u schema.PDPUnit
	var ok bool
	_ = s.db.view(func(tx pdpTx) error {
		var err error
		u, ok, err = tx.unit(stream, unit)
		return err
	})
	return u, ok
}

// EachUnit calls fn with the record of every unit of a stream, in no
// particular order, from one snapshot of the store, and stops at fn's
// first error. It reads every account of the stream: it is for tests and
// tools, not for a window's work.
func (s *Store) EachUnit(stream string, fn func(schema.PDPUnit) error) error {
	return s.db.view(func(tx pdpTx) error { return tx.eachUnit(stream, fn) })
}

// Summarized reports whether the summary of the pdp key (schema.
// PDPSummaryKey) is in the store: written by a Commit or read from the
// topic.
func (s *Store) Summarized(key string) (bool, error) {
	var done bool
	err := s.db.view(func(tx pdpTx) error {
		var err error
		done, err = tx.summarized(key)
		return err
	})
	return done, err
}

// Update is one window's change of a stream's accounts, built by Prepare
// and not yet applied to the store: the window's pdp records (the summary
// and the changed unit records), to write to the pdp topic, then to apply
// with Commit.
type Update struct {
	Summary schema.PDPSummary
	Units   []schema.PDPUnit
	// Key is the summary's pdp key (schema.PDPSummaryKey).
	Key string
	// rebuilt is the stream's aggregate recounted at a new δ, if Prepare
	// had to.
	rebuilt *pdpAggregate
}

// Draft is a stream's accounts as Prepare's fn sees them: read from
// Prepare's snapshot, changed only in the Update being built.
type Draft struct {
	tx      pdpTx
	sum     *schema.PDPSummary
	agg     *pdpAggregate
	units   []schema.PDPUnit
	changed map[string]bool
}

// Change reads the account of unit and calls fn with it (a zero record
// and seen false when the unit has none). When fn returns ok, its record
// replaces the unit's in the Update: the unit is moved from the
// histogram's bucket of its old ε (at the window's δ) to that of the new
// record's, and the record is appended to Update.Units. A unit can be
// changed once per Draft. The error is fn's as it returned it, or the
// store's.
func (d *Draft) Change(unit string, fn func(old schema.PDPUnit, seen bool) (rec schema.PDPUnit, ok bool, err error)) error {
	stream := d.sum.Stream
	if d.changed[unit] {
		return fmt.Errorf("pdp window %d of stream %q unit %q: changed twice", d.sum.WindowStart, stream, unit)
	}
	old, seen, err := d.tx.unit(stream, unit)
	if err != nil {
		return fmt.Errorf("pdp window %d of stream %q unit %q: %w", d.sum.WindowStart, stream, unit, err)
	}
	rec, ok, err := fn(old, seen)
	if err != nil || !ok {
		return err
	}
	if rec.Stream != stream || rec.Unit != unit {
		return fmt.Errorf("pdp window %d of stream %q unit %q: given the record of unit %q of stream %q", d.sum.WindowStart, stream, unit, rec.Unit, rec.Stream)
	}
	if seen {
		d.agg.add(d.agg.epsilonOf(old), -1)
	}
	d.agg.add(d.agg.epsilonOf(rec), 1)
	d.units = append(d.units, rec)
	d.changed[unit] = true
	return nil
}

// Prepare builds a window's Update of the accounts of stream sum.Stream
// from one read-only snapshot of the store, without changing the store
// (Commit applies it). sum is the window's summary record, the caller's
// per-release part filled in; fn decides the window's unit accounts,
// reading and replacing them through the Draft (Draft.Change), which
// reads only the accounts it is asked for.
//
// The stream's histogram is counted at δ sum.Delta: when its accounts
// were counted at another δ (the configuration changed), Prepare first
// recounts every account of the stream at sum.Delta, recomputing the ε
// of those written at another δ from their accounts (a valid bound at
// sum.Delta) — the one step that reads them all. The Update's summary is
// sum with its cumulative part set from the histogram after fn's
// changes: CumulativeUnits and CumulativeMax exactly, CumulativeP50, P90
// and P99 from above within QuantileError. Its Key is the summary's
// (schema.PDPSummaryKey of sum's stream and window start).
//
// On fn's error (returned as it is) or the store's, Prepare returns no
// Update.
func (s *Store) Prepare(sum schema.PDPSummary, fn func(*Draft) error) (*Update, error) {
	var upd *Update
	err := s.db.view(func(tx pdpTx) error {
		agg, err := tx.aggregate(sum.Stream)
		if err != nil {
			return fmt.Errorf("pdp window %d of stream %q: %w", sum.WindowStart, sum.Stream, err)
		}
		u := &Update{Key: schema.PDPSummaryKey(sum.Stream, sum.WindowStart)}
		switch {
		case agg == nil || agg.units == 0:
			agg = newAggregate(sum.Delta)
		case agg.delta != sum.Delta:
			// Accounts restored at another δ (the configuration changed):
			// the cumulative distribution is at this window's δ.
			// Recounting it is the one step that reads every account,
			// once per change of δ.
			if agg, err = rebuildAggregate(tx, sum.Stream, sum.Delta); err != nil {
				return fmt.Errorf("pdp window %d of stream %q: recount at delta %v: %w", sum.WindowStart, sum.Stream, sum.Delta, err)
			}
			u.rebuilt = agg.clone()
		}
		d := &Draft{tx: tx, sum: &sum, agg: agg, changed: map[string]bool{}}
		if err := fn(d); err != nil {
			return err
		}
		sum.CumulativeUnits = agg.units
		sum.CumulativeP50, sum.CumulativeP90, sum.CumulativeP99, sum.CumulativeMax = agg.quantiles()
		u.Summary, u.Units = sum, d.units
		upd = u
		return nil
	})
	if err != nil {
		return nil, err
	}
	return upd, nil
}

// Commit applies a prepared window to the store in one transaction: the
// changed unit records (with Restore's rule, so a record applied already,
// read back from the topic, changes nothing), the stream's aggregate, and
// the mark that the window is summarized (Summarized). Nothing else may
// change the store between Prepare and Commit. On an error the store is
// unchanged.
func (s *Store) Commit(u *Update) error {
	err := s.db.update(func(tx pdpTx) error {
		if u.rebuilt != nil {
			if err := tx.putAggregate(u.Summary.Stream, u.rebuilt); err != nil {
				return err
			}
		}
		ap := newApplier(tx)
		for _, rec := range u.Units {
			if err := ap.unit(rec); err != nil {
				return err
			}
		}
		if err := ap.flush(); err != nil {
			return err
		}
		if u.Key == "" {
			return nil
		}
		return tx.putSummarized(u.Key)
	})
	if err != nil {
		return fmt.Errorf("pdp window %d of stream %q: apply to the store: %w", u.Summary.WindowStart, u.Summary.Stream, err)
	}
	return nil
}
