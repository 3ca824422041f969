package release

import (
	"fmt"
	"slices"
	"sort"

	"github.com/dpstream/dpstream/accountant/books"
	"github.com/dpstream/dpstream/schema"
)

// This file is what a ledger checkpoint keeps of the Releaser: its books.
// A restart restores them (RestoreState) and applies only the ledger after
// the checkpoint (Restore), so neither its time nor its memory depends on
// how many charges were ever made.

// keptPeriods is how many budget periods of a stream, counting back from
// its latest, the Releaser keeps accounts of. A window is charged to its
// own period, and a stream's windows are decided in order, so only the
// latest period is ever charged again; an answer is charged to its model
// window's period, which is at most one behind. Older accounts are
// history, and dropping them keeps the state bounded.
const keptPeriods = 2

// EncodeState returns the Releaser's books: per stream, the accounts of
// its last keptPeriods budget periods (with their query accounts and
// capacity-bounded figures), per release its high-water mark and the
// state its kind keeps across windows (kind.State.Encode, in
// ReleaseBooks.State), and the requests topic's offset after the last
// answer. A Releaser restored
// from it (RestoreState) decides every later window, and restores every
// later ledger charge, as this one does.
func (r *Releaser) EncodeState() (schema.ReleaserState, error) {
	st := schema.ReleaserState{RequestNext: r.requestNext}
	names := make([]string, 0, len(r.streams))
	for n := range r.streams {
		names = append(names, n)
	}
	// Streams charged in the ledger but no longer configured keep their
	// accounts too: the configuration may bring them back.
	for _, n := range r.books.Streams() {
		if _, ok := r.streams[n]; !ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		sb := schema.StreamBooks{Stream: name}
		// books.AccountState has schema.AccountState's fields: the two
		// convert.
		for _, p := range r.books.Export(name) {
			pa := schema.PeriodAccount{Period: p.Period, Account: schema.AccountState(p.Account),
				KL: p.KL, LinearKL: p.LinearKL, WithoutKL: p.WithoutKL}
			if p.Queries != nil {
				qs := schema.AccountState(*p.Queries)
				pa.Queries = &qs
			}
			sb.Accounts = append(sb.Accounts, pa)
		}
		var rels []string
		for k := range r.decided {
			if k.stream == name {
				rels = append(rels, k.release)
			}
		}
		states := map[string][]byte{}
		for k, rs := range r.states {
			if k.stream != name {
				continue
			}
			b, err := rs.Encode()
			if err != nil {
				return schema.ReleaserState{}, fmt.Errorf("checkpoint: release %s/%s: %w", name, k.release, err)
			}
			if len(b) == 0 {
				continue
			}
			states[k.release] = b
			if !slices.Contains(rels, k.release) {
				rels = append(rels, k.release)
			}
		}
		sort.Strings(rels)
		for _, rel := range rels {
			rb := schema.ReleaseBooks{Release: rel}
			if w, ok := r.decided[runKey{name, rel}]; ok {
				rb.Decided = &w
			}
			rb.State = states[rel]
			sb.Releases = append(sb.Releases, rb)
		}
		st.Streams = append(st.Streams, sb)
	}
	return st, nil
}

// RestoreState replaces the Releaser's books with st (EncodeState's), as
// Reset does before a rebuild from the ledger. Each release's state is
// given to its kind (kind.State.Decode: ReleaseBooks.State, or the legacy
// Run and Model of checkpoints written before it), under the current
// configuration's plan, which drops a state of another configuration as a
// restore from the ledger drops its charges. A malformed account, or a
// state its kind cannot read, is an error: the budget is never rebuilt
// from a state it cannot read exactly.
func (r *Releaser) RestoreState(st schema.ReleaserState) error {
	r.Reset()
	r.requestNext = st.RequestNext
	for _, sb := range st.Streams {
		accounts := make([]books.PeriodState, len(sb.Accounts))
		for i, pa := range sb.Accounts {
			accounts[i] = books.PeriodState{Period: pa.Period, Account: books.AccountState(pa.Account),
				KL: pa.KL, LinearKL: pa.LinearKL, WithoutKL: pa.WithoutKL}
			if pa.Queries != nil {
				q := books.AccountState(*pa.Queries)
				accounts[i].Queries = &q
			}
		}
		if err := r.books.Import(sb.Stream, accounts); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		for _, rb := range sb.Releases {
			k := runKey{sb.Stream, rb.Release}
			if rb.Decided != nil {
				r.decided[k] = *rb.Decided
			}
			if rb.State == nil && rb.Run == nil && rb.Model == nil {
				continue
			}
			st, err := r.state(sb.Stream, rb.Release)
			if err != nil {
				return fmt.Errorf("checkpoint: %w", err)
			}
			if st == nil {
				continue // no longer a release that keeps state
			}
			if err := st.Decode(rb); err != nil {
				return fmt.Errorf("checkpoint: stream %s release %s: %w", sb.Stream, rb.Release, err)
			}
		}
	}
	return nil
}

// MarkCheckpoint tells the Releaser that its state is checkpointed: the
// answer ids it remembers to answer a request id once are forgotten (see
// answeredIDs), and accounts older than keptPeriods are dropped, so that
// memory stays bounded by the checkpoint interval.
func (r *Releaser) MarkCheckpoint() {
	clear(r.answeredIDs)
	r.books.Drop()
}
