package pdpstore

import (
	"log/slog"
	"maps"

	"github.com/dpstream/dpstream/mechanism/pdp"
	"github.com/dpstream/dpstream/schema"
)

// pdpBackend is where a Store's state lives: maps (memBackend) or a
// bbolt file (boltBackend).
type pdpBackend interface {
	// view runs fn on a read-only snapshot; update runs fn in one
	// transaction whose writes all happen, or none (fn's error).
	view(fn func(pdpTx) error) error
	update(fn func(pdpTx) error) error
	close() error
}

// pdpTx reads and writes a backend's state within one transaction.
type pdpTx interface {
	unit(stream, unit string) (schema.PDPUnit, bool, error)
	putUnit(u schema.PDPUnit) error
	// eachUnit calls fn for every unit of a stream.
	eachUnit(stream string, fn func(schema.PDPUnit) error) error
	// aggregate returns a copy of the stream's aggregate, nil if none.
	aggregate(stream string) (*pdpAggregate, error)
	putAggregate(stream string, a *pdpAggregate) error
	summarized(key string) (bool, error)
	putSummarized(key string) error
	position() (pdpPosition, error)
	putPosition(p pdpPosition) error
	// reset forgets everything.
	reset() error
}

// pdpApplier applies unit records in one transaction with the rule of
// Store.Restore, keeping the aggregates of the streams it touched
// until flush writes them.
type pdpApplier struct {
	tx   pdpTx
	aggs map[string]*pdpAggregate
}

func newApplier(tx pdpTx) *pdpApplier { return &pdpApplier{tx: tx, aggs: map[string]*pdpAggregate{}} }

func (p *pdpApplier) aggregate(stream string, delta float64) (*pdpAggregate, error) {
	if a := p.aggs[stream]; a != nil {
		return a, nil
	}
	a, err := p.tx.aggregate(stream)
	if err != nil {
		return nil, err
	}
	if a == nil {
		a = newAggregate(delta)
	}
	p.aggs[stream] = a
	return a, nil
}

// unit applies one validated record: it replaces the unit's record unless
// that has a later LastWindow, moving the unit between histogram buckets.
func (p *pdpApplier) unit(u schema.PDPUnit) error {
	old, seen, err := p.tx.unit(u.Stream, u.Unit)
	if err != nil {
		return err
	}
	if seen && (old.LastWindow > u.LastWindow || old == u) {
		return nil
	}
	a, err := p.aggregate(u.Stream, u.Delta)
	if err != nil {
		return err
	}
	if a.units == 0 {
		a.delta = u.Delta
	}
	if seen {
		a.add(a.epsilonOf(old), -1)
	}
	a.add(a.epsilonOf(u), 1)
	return p.tx.putUnit(u)
}

// record applies one record of pdp partition part: a unit account or the
// marker of a summarized window. An undecodable or invalid record is
// logged and skipped, as no update can have written it.
func (p *pdpApplier) record(part int, m Record, log *slog.Logger) error {
	switch m.Type {
	case schema.PDPTypeUnit:
		u, err := schema.DecodePDPUnit(m.Value)
		if err != nil {
			log.Error("skipping undecodable pdp unit record", "partition", part, "offset", m.Offset, "err", err)
			return nil
		}
		if err := checkUnit(u); err != nil {
			log.Error("skipping invalid pdp unit record", "partition", part, "offset", m.Offset, "err", err)
			return nil
		}
		return p.unit(u)
	case schema.PDPTypeSummary:
		return p.tx.putSummarized(string(m.Key))
	}
	return nil
}

func (p *pdpApplier) flush() error {
	for s, a := range p.aggs {
		if err := p.tx.putAggregate(s, a); err != nil {
			return err
		}
	}
	return nil
}

// rebuildAggregate counts every unit of a stream at δ delta: the one
// per-window step that reads all units, taken only when the stream's δ
// changed.
func rebuildAggregate(tx pdpTx, stream string, delta float64) (*pdpAggregate, error) {
	a := newAggregate(delta)
	memo := map[pdp.Account]float64{}
	err := tx.eachUnit(stream, func(u schema.PDPUnit) error {
		e := u.Epsilon
		if u.Delta != delta {
			if len(memo) > 1<<16 {
				clear(memo) // units with one history share it; keep it bounded
			}
			e = CachedEpsilon(memo, AccountOf(u), delta)
		}
		a.add(e, 1)
		return nil
	})
	return a, err
}

// memBackend keeps everything in maps. A write transaction collects its
// writes and applies them when fn succeeds.
type memBackend struct {
	units map[string]map[string]schema.PDPUnit
	aggs  map[string]*pdpAggregate
	done  map[string]bool
	pos   pdpPosition
}

func newMemBackend() *memBackend {
	return &memBackend{units: map[string]map[string]schema.PDPUnit{}, aggs: map[string]*pdpAggregate{}, done: map[string]bool{}}
}

func (b *memBackend) view(fn func(pdpTx) error) error { return fn(&memTx{b: b}) }

func (b *memBackend) update(fn func(pdpTx) error) error {
	tx := &memTx{b: b, units: map[string]map[string]schema.PDPUnit{}, aggs: map[string]*pdpAggregate{}, done: map[string]bool{}}
	if err := fn(tx); err != nil {
		return err
	}
	if tx.wiped {
		*b = *newMemBackend()
	}
	for s, us := range tx.units {
		m := b.units[s]
		if m == nil {
			m = map[string]schema.PDPUnit{}
			b.units[s] = m
		}
		maps.Copy(m, us)
	}
	maps.Copy(b.aggs, tx.aggs)
	maps.Copy(b.done, tx.done)
	if tx.pos != nil {
		b.pos = *tx.pos
	}
	return nil
}

func (b *memBackend) close() error { return nil }

// memTx reads through its pending writes to the backend (unless wiped).
type memTx struct {
	b     *memBackend
	units map[string]map[string]schema.PDPUnit
	aggs  map[string]*pdpAggregate
	done  map[string]bool
	pos   *pdpPosition
	wiped bool
}

func (t *memTx) unit(stream, unit string) (schema.PDPUnit, bool, error) {
	if u, ok := t.units[stream][unit]; ok {
		return u, true, nil
	}
	if t.wiped {
		return schema.PDPUnit{}, false, nil
	}
	u, ok := t.b.units[stream][unit]
	return u, ok, nil
}

func (t *memTx) putUnit(u schema.PDPUnit) error {
	m := t.units[u.Stream]
	if m == nil {
		m = map[string]schema.PDPUnit{}
		t.units[u.Stream] = m
	}
	m[u.Unit] = u
	return nil
}

func (t *memTx) eachUnit(stream string, fn func(schema.PDPUnit) error) error {
	for _, u := range t.units[stream] {
		if err := fn(u); err != nil {
			return err
		}
	}
	if t.wiped {
		return nil
	}
	for name, u := range t.b.units[stream] {
		if _, pending := t.units[stream][name]; pending {
			continue
		}
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

func (t *memTx) aggregate(stream string) (*pdpAggregate, error) {
	a := t.aggs[stream]
	if a == nil && !t.wiped {
		a = t.b.aggs[stream]
	}
	if a == nil {
		return nil, nil
	}
	return a.clone(), nil
}

func (t *memTx) putAggregate(stream string, a *pdpAggregate) error {
	t.aggs[stream] = a.clone()
	return nil
}

func (t *memTx) summarized(key string) (bool, error) {
	return t.done[key] || (!t.wiped && t.b.done[key]), nil
}

func (t *memTx) putSummarized(key string) error {
	t.done[key] = true
	return nil
}

func (t *memTx) position() (pdpPosition, error) {
	p := t.pos
	if p == nil {
		if t.wiped {
			return pdpPosition{}, nil
		}
		p = &t.b.pos
	}
	return pdpPosition{Topic: p.Topic, Parts: maps.Clone(p.Parts)}, nil
}

func (t *memTx) putPosition(p pdpPosition) error {
	p.Parts = maps.Clone(p.Parts)
	t.pos = &p
	return nil
}

func (t *memTx) reset() error {
	clear(t.units)
	clear(t.aggs)
	clear(t.done)
	t.pos, t.wiped = nil, true
	return nil
}
