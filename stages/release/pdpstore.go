package release

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/mechanism/pdp"
	"github.com/dpstream/dpstream/schema"
)

// This file is where a PDPStore keeps its state: every unit's cumulative
// account, a histogram of the accounts' ε per stream, the window summaries
// already written, and how far it has read the pdp topic.
//
// Bounded memory. The release stage's store (OpenPDPStore) is an on-disk
// cache of the compacted, restricted pdp topic, in a bbolt file: the
// accounts live on disk, and a window reads and writes only the accounts
// of its own units, in one transaction each way. What stays in the Go heap
// does not grow with the number of units: the window's units and their
// records, a catch-up batch (pdpCatchUpBatch records), and one stream's
// histogram while a transaction uses it (at most a few thousand buckets
// over any realistic range of ε), plus bbolt's dirty pages while a
// transaction commits (up to a page per record of a catch-up batch, 16 MB,
// returned after). Memory per unit in the heap is therefore nil: at 10⁶
// units BenchmarkPDPMillionUnits measures 4.6 MB of heap in use after a
// rebuild and 3.1 MB after a restart, against 318 MB (about 320 bytes a
// unit) for the accounts in maps. The file takes about 206 bytes per unit
// (an 81-byte value, the unit's name as key, and B+tree overhead); bbolt
// maps it read-only, so the pages the store touches count towards the
// process's RSS as page cache, which the kernel reclaims under memory
// pressure (a container's memory limit included) rather than failing.
// NewPDPStore keeps the same state in maps instead: every unit in memory,
// for `dpstream simulate` and tests.
//
// Per-window work. The window summary's distribution of the cumulative ε
// over all of the stream's units is read off the stream's histogram
// (pdpAggregate), which each update maintains by moving a unit from the
// bucket of its old ε to the bucket of its new one: a window costs one
// lookup and one write per unit of the window plus a walk over the
// histogram's non-empty buckets, whatever the number of units ever seen.
// The quantiles are then approximate, always from above: see
// PDPQuantileError. Only a change of the stream's δ (a configuration
// change) re-reads every account of the stream, once.
//
// A cache of the topic. Every record the store holds was acknowledged on
// the pdp topic first (the release stage applies a window's records after
// the topic acknowledged them, PDPStore.Commit), and the store remembers
// the offset of each pdp partition that it has read the topic up to
// (pdpPosition). At every start of a release handler it catches up from
// there (PDPStore.CatchUp): records written by another instance while it
// owned the streams, or by this one before a crash, are applied in offset
// order in bounded batches; a store file that is missing, unreadable, or
// from another topic is rebuilt from the topic the same way, from its
// first offset, so a new pod without a volume works, only more slowly at
// its first start. Records are applied as PDPStore.Restore does (the later
// LastWindow wins), so reading a record a second time (the store's own
// writes are read back at the next catch-up) changes nothing.
//
// Confidentiality (DESIGN invariant 6). The file holds the same
// data-dependent values as the pdp topic: it is created 0600 in a 0700
// directory, and must be protected like the topic (README, "pdp_store").

const (
	// pdpHistBits is how many mantissa bits of a cumulative ε the
	// histogram's bucket keeps: 2^7 buckets per power of two.
	pdpHistBits  = 7
	pdpHistShift = 52 - pdpHistBits
)

// PDPQuantileError is the relative error of the cumulative quantiles of a
// window summary (CumulativeP50, P90, P99), which are read off a
// histogram of the units' ε with 2^7 buckets per power of two: each
// reported q̂ is the upper edge of the bucket that holds the exact
// nearest-rank quantile q, capped at the exact maximum, so
//
//	q ≤ q̂ ≤ q·(1 + PDPQuantileError)   (q̂ = q when q = 0 or q is a bucket edge)
//
// for every q ≥ 2^-1022. A reported quantile is therefore never below the
// exact one: it stays a valid upper bound on the ε of the units it
// describes. CumulativeMax and CumulativeUnits are exact.
const PDPQuantileError = 1.0 / (1 << pdpHistBits)

// histKey returns the histogram bucket of a cumulative ε ≥ 0: bucket 0
// holds exactly 0, and bucket k ≥ 1 the ε in (histEdge(k−1), histEdge(k)].
// For positive floats the bit pattern orders like the value, so keeping
// the sign, the exponent and the top pdpHistBits mantissa bits of ε − 1ulp
// gives buckets of relative width at most 2^-pdpHistBits; +Inf (an
// account whose δ budget is used up) has a bucket of its own whose edge
// is +Inf.
func histKey(eps float64) uint32 {
	if !(eps > 0) {
		return 0
	}
	return uint32((math.Float64bits(eps)-1)>>pdpHistShift) + 1
}

// histEdge is the upper edge of bucket k: the largest ε it holds.
func histEdge(k uint32) float64 { return math.Float64frombits(uint64(k) << pdpHistShift) }

// pdpAggregate is what a stream's window summary reports about all of its
// units: their number, the largest ε, and the histogram of their ε, all at
// one δ.
type pdpAggregate struct {
	delta float64 // the δ every ε counted here is at
	units int64
	max   float64 // the largest ε ever counted (an account never shrinks)
	hist  map[uint32]int64
}

func newAggregate(delta float64) *pdpAggregate {
	return &pdpAggregate{delta: delta, hist: map[uint32]int64{}}
}

// epsilonOf returns the ε at a.delta of a unit record: its own when it was
// written at that δ, else recomputed from its account (a valid bound at
// a.delta, without the record's cap). It depends only on the record and
// a.delta, so the bucket a unit was counted in can always be found again.
func (a *pdpAggregate) epsilonOf(u schema.PDPUnit) float64 {
	if u.Delta == a.delta {
		return u.Epsilon
	}
	return accountOf(u).Epsilon(a.delta)
}

// add counts n more (or, n < 0, fewer) units with ε eps.
func (a *pdpAggregate) add(eps float64, n int64) {
	k := histKey(eps)
	if a.hist[k] += n; a.hist[k] == 0 {
		delete(a.hist, k)
	}
	a.units += n
	if n > 0 && eps > a.max {
		a.max = eps
	}
}

// quantiles returns the nearest-rank p50, p90 and p99 (pdp.Summary's
// definition) read off the histogram, each the upper edge of its bucket
// capped at the maximum (see PDPQuantileError), and the maximum; all 0
// without units.
func (a *pdpAggregate) quantiles() (p50, p90, p99, max float64) {
	if a.units <= 0 {
		return 0, 0, 0, 0
	}
	keys := slices.Sorted(maps.Keys(a.hist))
	out := [3]float64{}
	var seen int64
	i := 0
	for qi, p := range [3]int64{50, 90, 99} {
		rank := (p*a.units + 99) / 100 // ⌈p·n/100⌉ ≥ 1
		for i < len(keys) && seen+a.hist[keys[i]] < rank {
			seen += a.hist[keys[i]]
			i++
		}
		if i == len(keys) { // cannot happen while units = Σ hist
			out[qi] = a.max
			continue
		}
		out[qi] = math.Min(histEdge(keys[i]), a.max)
	}
	return out[0], out[1], out[2], a.max
}

// clone returns a deep copy.
func (a *pdpAggregate) clone() *pdpAggregate {
	c := *a
	c.hist = maps.Clone(a.hist)
	return &c
}

const pdpAggregateVersion = 1

// encode: version, δ, units, max, buckets, then (key, count) per bucket.
func (a *pdpAggregate) encode() []byte {
	b := make([]byte, 0, 1+8*3+4+12*len(a.hist))
	b = append(b, pdpAggregateVersion)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(a.delta))
	b = binary.BigEndian.AppendUint64(b, uint64(a.units))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(a.max))
	b = binary.BigEndian.AppendUint32(b, uint32(len(a.hist)))
	for _, k := range slices.Sorted(maps.Keys(a.hist)) {
		b = binary.BigEndian.AppendUint32(b, k)
		b = binary.BigEndian.AppendUint64(b, uint64(a.hist[k]))
	}
	return b
}

func decodeAggregate(b []byte) (*pdpAggregate, error) {
	if len(b) < 29 || b[0] != pdpAggregateVersion {
		return nil, errors.New("pdp store: malformed stream aggregate")
	}
	a := &pdpAggregate{delta: math.Float64frombits(binary.BigEndian.Uint64(b[1:])),
		units: int64(binary.BigEndian.Uint64(b[9:])), max: math.Float64frombits(binary.BigEndian.Uint64(b[17:]))}
	n := int(binary.BigEndian.Uint32(b[25:]))
	b = b[29:]
	if len(b) != 12*n {
		return nil, errors.New("pdp store: malformed stream aggregate")
	}
	a.hist = make(map[uint32]int64, n)
	for i := range n {
		a.hist[binary.BigEndian.Uint32(b[12*i:])] = int64(binary.BigEndian.Uint64(b[12*i+4:]))
	}
	return a, nil
}

// unitValueLen is the length of a unit record in the bbolt store: a
// version byte and ten 8-byte fields (stream and unit are in the keys).
const unitValueLen = 1 + 10*8

const pdpUnitVersion = 1

func encodeUnit(u schema.PDPUnit) []byte {
	b := make([]byte, 0, unitValueLen)
	b = append(b, pdpUnitVersion)
	for _, f := range []float64{u.GaussianRho, u.PureRho, u.PureEpsilon, u.ApproxEpsilon, u.ApproxDelta} {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(u.Charges))
	b = binary.BigEndian.AppendUint64(b, uint64(u.LastWindow))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(u.Epsilon))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(u.Delta))
	b = binary.BigEndian.AppendUint64(b, uint64(u.UpdatedAt))
	return b
}

func decodeUnit(stream, unit string, b []byte) (schema.PDPUnit, error) {
	if len(b) != unitValueLen || b[0] != pdpUnitVersion {
		return schema.PDPUnit{}, fmt.Errorf("pdp store: malformed record of unit %q of stream %q", unit, stream)
	}
	f := func(i int) uint64 { return binary.BigEndian.Uint64(b[1+8*i:]) }
	return schema.PDPUnit{Stream: stream, Unit: unit,
		GaussianRho: math.Float64frombits(f(0)), PureRho: math.Float64frombits(f(1)), PureEpsilon: math.Float64frombits(f(2)),
		ApproxEpsilon: math.Float64frombits(f(3)), ApproxDelta: math.Float64frombits(f(4)), Charges: int64(f(5)),
		LastWindow: int64(f(6)), Epsilon: math.Float64frombits(f(7)), Delta: math.Float64frombits(f(8)), UpdatedAt: int64(f(9))}, nil
}

// pdpPosition is how far the store has read the pdp topic: per partition,
// the offset after the last record applied and a hash of that record's
// key, which tells a topic that was deleted and recreated (its record at
// that offset is another one) from the one the store was built from.
type pdpPosition struct {
	Topic string             `json:"topic"`
	Parts map[int]pdpPartPos `json:"partitions"`
}

type pdpPartPos struct {
	Next    int64  `json:"next"`
	LastKey uint64 `json:"last_key"`
}

func keyHash(k []byte) uint64 {
	h := fnv.New64a()
	h.Write(k)
	return h.Sum64()
}

// pdpBackend is where a PDPStore's state lives: maps (memBackend) or a
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
// PDPStore.Restore, keeping the aggregates of the streams it touched
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

// message applies one pdp topic record: a unit account or the marker of a
// summarized window. An undecodable or invalid record is logged and
// skipped, as no update can have written it.
func (p *pdpApplier) message(m kafka.Message, log *slog.Logger) error {
	switch pdpType(m) {
	case schema.PDPTypeUnit:
		u, err := schema.DecodePDPUnit(m.Value)
		if err != nil {
			log.Error("skipping undecodable pdp unit record", "partition", m.Partition, "offset", m.Offset, "err", err)
			return nil
		}
		if err := checkPDPUnit(u); err != nil {
			log.Error("skipping invalid pdp unit record", "partition", m.Partition, "offset", m.Offset, "err", err)
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
			e = cachedEpsilon(memo, accountOf(u), delta)
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

// Buckets of the bbolt store.
var (
	bktUnits      = []byte("units")      // stream → unit → encodeUnit
	bktAggregates = []byte("aggregates") // stream → pdpAggregate.encode
	bktSummaries  = []byte("summaries")  // pdp summary key → ""
	bktMeta       = []byte("meta")       // "position" → JSON pdpPosition, "format" → version
	keyPosition   = []byte("position")
	keyFormat     = []byte("format")
)

// pdpStoreFormat is the layout version of the bbolt store; a file of
// another version is rebuilt from the topic.
const pdpStoreFormat = "1"

type boltBackend struct{ db *bolt.DB }

func (b *boltBackend) view(fn func(pdpTx) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(&boltTx{tx}) })
}

func (b *boltBackend) update(fn func(pdpTx) error) error {
	return b.db.Update(func(tx *bolt.Tx) error { return fn(&boltTx{tx}) })
}

func (b *boltBackend) close() error { return b.db.Close() }

type boltTx struct{ tx *bolt.Tx }

// bucket returns a top-level bucket (created by OpenPDPStore and reset).
func (t *boltTx) bucket(name []byte) (*bolt.Bucket, error) {
	b := t.tx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("pdp store: bucket %s is missing", name)
	}
	return b, nil
}

func (t *boltTx) unit(stream, unit string) (schema.PDPUnit, bool, error) {
	units, err := t.bucket(bktUnits)
	if err != nil {
		return schema.PDPUnit{}, false, err
	}
	sb := units.Bucket([]byte(stream))
	if sb == nil {
		return schema.PDPUnit{}, false, nil
	}
	v := sb.Get([]byte(unit))
	if v == nil {
		return schema.PDPUnit{}, false, nil
	}
	u, err := decodeUnit(stream, unit, v)
	return u, err == nil, err
}

func (t *boltTx) putUnit(u schema.PDPUnit) error {
	units, err := t.bucket(bktUnits)
	if err != nil {
		return err
	}
	sb, err := units.CreateBucketIfNotExists([]byte(u.Stream))
	if err != nil {
		return fmt.Errorf("pdp store: stream %q: %w", u.Stream, err)
	}
	return sb.Put([]byte(u.Unit), encodeUnit(u))
}

func (t *boltTx) eachUnit(stream string, fn func(schema.PDPUnit) error) error {
	units, err := t.bucket(bktUnits)
	if err != nil {
		return err
	}
	sb := units.Bucket([]byte(stream))
	if sb == nil {
		return nil
	}
	return sb.ForEach(func(k, v []byte) error {
		u, err := decodeUnit(stream, string(k), v)
		if err != nil {
			return err
		}
		return fn(u)
	})
}

func (t *boltTx) aggregate(stream string) (*pdpAggregate, error) {
	b, err := t.bucket(bktAggregates)
	if err != nil {
		return nil, err
	}
	v := b.Get([]byte(stream))
	if v == nil {
		return nil, nil
	}
	return decodeAggregate(v)
}

func (t *boltTx) putAggregate(stream string, a *pdpAggregate) error {
	b, err := t.bucket(bktAggregates)
	if err != nil {
		return err
	}
	return b.Put([]byte(stream), a.encode())
}

func (t *boltTx) summarized(key string) (bool, error) {
	b, err := t.bucket(bktSummaries)
	if err != nil {
		return false, err
	}
	return b.Get([]byte(key)) != nil, nil
}

func (t *boltTx) putSummarized(key string) error {
	b, err := t.bucket(bktSummaries)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), []byte{})
}

func (t *boltTx) position() (pdpPosition, error) {
	b, err := t.bucket(bktMeta)
	if err != nil {
		return pdpPosition{}, err
	}
	var p pdpPosition
	if v := b.Get(keyPosition); v != nil {
		if err := json.Unmarshal(v, &p); err != nil {
			return pdpPosition{}, fmt.Errorf("pdp store: position: %w", err)
		}
	}
	return p, nil
}

func (t *boltTx) putPosition(p pdpPosition) error {
	b, err := t.bucket(bktMeta)
	if err != nil {
		return err
	}
	v, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("pdp store: position: %w", err)
	}
	return b.Put(keyPosition, v)
}

func (t *boltTx) reset() error {
	for _, name := range [][]byte{bktUnits, bktAggregates, bktSummaries, bktMeta} {
		if t.tx.Bucket(name) != nil {
			if err := t.tx.DeleteBucket(name); err != nil {
				return fmt.Errorf("pdp store: reset %s: %w", name, err)
			}
		}
	}
	return initBuckets(t.tx)
}

// initBuckets creates the top-level buckets and the format marker.
func initBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{bktUnits, bktAggregates, bktSummaries, bktMeta} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("pdp store: create %s: %w", name, err)
		}
	}
	return tx.Bucket(bktMeta).Put(keyFormat, []byte(pdpStoreFormat))
}

// PDPStoreSlots is how many store files OpenPDPStore tries in its
// directory. Each release process takes the first one no other process
// holds, so processes that share a directory (several on one host, or a
// paused owner and its successor) never wait for each other; any slot is
// a valid cache of the topic, as it catches up before use.
const PDPStoreSlots = 8

// ErrPDPStoreBusy is returned by OpenPDPStore when every slot of its
// directory is held by another process.
var ErrPDPStoreBusy = errors.New("every pdp store slot is in use")

// OpenPDPStore opens the release stage's on-disk store in dir (created
// 0700 if missing): the first of PDPStoreSlots files pdp-N.db that no
// other process has open, created 0600. A file that bbolt cannot open (a
// partial write after a power loss, another format) is removed and
// recreated empty: it is a cache, rebuilt from the pdp topic by the next
// CatchUp. The store must be closed with Close.
func OpenPDPStore(dir string, log *slog.Logger) (*PDPStore, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pdp store: %w", err)
	}
	for i := range PDPStoreSlots {
		path := filepath.Join(dir, fmt.Sprintf("pdp-%d.db", i))
		db, err := openBolt(path)
		if errors.Is(err, bolterrors.ErrTimeout) {
			continue // another process holds this slot
		}
		if err != nil {
			log.Warn("pdp store file unusable; recreating it, to be rebuilt from the pdp topic", "path", path, "err", err)
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return nil, fmt.Errorf("pdp store: remove unusable %s: %w", path, rerr)
			}
			if db, err = openBolt(path); errors.Is(err, bolterrors.ErrTimeout) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("pdp store %s: %w", path, err)
			}
		}
		// Tighten a file left with looser permissions (umask, copies).
		if err := os.Chmod(path, 0o600); err != nil {
			db.Close()
			return nil, fmt.Errorf("pdp store %s: %w", path, err)
		}
		return &PDPStore{db: &boltBackend{db}, path: path}, nil
	}
	return nil, fmt.Errorf("pdp store %s: %w (%d files pdp-0.db…pdp-%d.db are held by other processes)", dir, ErrPDPStoreBusy, PDPStoreSlots, PDPStoreSlots-1)
}

// openBolt opens one slot without waiting for its lock, and makes sure
// its buckets exist and its format is this one's (else it is emptied).
func openBolt(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Nanosecond, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bktMeta); m != nil && !bytes.Equal(m.Get(keyFormat), []byte(pdpStoreFormat)) {
			return (&boltTx{tx}).reset()
		}
		return initBuckets(tx)
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Path is the file of an on-disk store ("" for NewPDPStore's).
func (s *PDPStore) Path() string { return s.path }

// Close closes the store's file, if it has one.
func (s *PDPStore) Close() error { return s.db.close() }

// pdpCatchUpBatch is how many topic records CatchUp applies per
// transaction: what it holds in memory at once.
const pdpCatchUpBatch = 4096

// pdpSource is the pdp topic as CatchUp reads it.
type pdpSource interface {
	// Topic names it; a store built from another topic is rebuilt.
	Topic() string
	// Offsets returns each partition's first and end (next) offset.
	Offsets(ctx context.Context) (first, end map[int]int64, err error)
	// Read calls fn for each record of a partition from offset from
	// (or the first after it) until the record before end.
	Read(ctx context.Context, partition int, from, end int64, fn func(kafka.Message) error) error
}

// kafkaPDPSource reads the pdp topic on Kafka.
type kafkaPDPSource struct {
	conn  *kafkaio.Connection
	topic string
}

func (k kafkaPDPSource) Topic() string { return k.topic }

func (k kafkaPDPSource) Offsets(ctx context.Context) (map[int]int64, map[int]int64, error) {
	first, err := k.conn.StartOffsets(ctx, k.topic)
	if err != nil {
		return nil, nil, err
	}
	end, err := k.conn.EndOffsets(ctx, k.topic)
	return first, end, err
}

func (k kafkaPDPSource) Read(ctx context.Context, p int, from, end int64, fn func(kafka.Message) error) error {
	return k.conn.ReadRange(ctx, k.topic, p, from, end, fn)
}

// errPDPTopicChanged: the topic is not the one the store was built from.
var errPDPTopicChanged = errors.New("the pdp topic is not the one the store was built from")

// CatchUp applies every record of the pdp topic that the store has not
// read yet, in offset order per partition, pdpCatchUpBatch records per
// transaction, each committed with the position it reached; it returns
// how many records it read. A crash between batches loses nothing: the
// next CatchUp goes on from the last committed batch. When the topic is
// not the one the store was built from (another name; a partition that
// shrank below the store's position, as a deleted and recreated topic
// does; or another record at the last offset applied), the store is
// emptied and rebuilt from the topic's first offset.
func (s *PDPStore) CatchUp(ctx context.Context, src pdpSource, log *slog.Logger) (int, error) {
	if log == nil {
		log = slog.Default()
	}
	n, err := s.catchUp(ctx, src, log)
	if !errors.Is(err, errPDPTopicChanged) {
		return n, err
	}
	log.Warn("pdp store was built from another pdp topic (deleted, recreated or renamed); rebuilding it from the topic", "topic", src.Topic(), "store", s.path, "reason", err)
	if err := s.db.update(func(tx pdpTx) error { return tx.reset() }); err != nil {
		return n, fmt.Errorf("pdp store: reset: %w", err)
	}
	m, err := s.catchUp(ctx, src, log)
	return n + m, err
}

func (s *PDPStore) catchUp(ctx context.Context, src pdpSource, log *slog.Logger) (int, error) {
	first, end, err := src.Offsets(ctx)
	if err != nil {
		return 0, fmt.Errorf("offsets of %s: %w", src.Topic(), err)
	}
	var pos pdpPosition
	if err := s.db.view(func(tx pdpTx) error { pos, err = tx.position(); return err }); err != nil {
		return 0, err
	}
	switch {
	case pos.Topic != "" && pos.Topic != src.Topic():
		return 0, fmt.Errorf("%w: store of topic %q", errPDPTopicChanged, pos.Topic)
	case pos.Parts == nil:
		pos.Parts = map[int]pdpPartPos{}
	}
	pos.Topic = src.Topic()
	for p, pp := range pos.Parts {
		if e, ok := end[p]; !ok || pp.Next > e {
			return 0, fmt.Errorf("%w: partition %d ends at %d, below the store's position %d", errPDPTopicChanged, p, e, pp.Next)
		}
	}
	read := 0
	for _, p := range slices.Sorted(maps.Keys(end)) {
		pp, known := pos.Parts[p]
		from := pp.Next
		if from >= end[p] {
			continue
		}
		// Read the last applied record again, to check it is the same.
		start, verify := from, known && from > 0
		if verify {
			start = from - 1
		}
		if start < first[p] {
			if from < first[p] {
				log.Warn("records of the pdp topic were deleted before this store read them; accounts they held are missing",
					"topic", src.Topic(), "partition", p, "store_position", from, "first_offset", first[p])
			}
			start, verify = first[p], false
		}
		batch := make([]kafka.Message, 0, pdpCatchUpBatch)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			last := batch[len(batch)-1]
			err := s.db.update(func(tx pdpTx) error {
				ap := newApplier(tx)
				for _, m := range batch {
					if err := ap.message(m, log); err != nil {
						return err
					}
				}
				if err := ap.flush(); err != nil {
					return err
				}
				pos.Parts[p] = pdpPartPos{Next: last.Offset + 1, LastKey: keyHash(last.Key)}
				return tx.putPosition(pos)
			})
			if err != nil {
				delete(pos.Parts, p)
				if known {
					pos.Parts[p] = pp
				}
				return fmt.Errorf("pdp store: apply %s[%d] up to offset %d: %w", src.Topic(), p, last.Offset, err)
			}
			read += len(batch)
			pp, known = pos.Parts[p], true
			batch = batch[:0]
			return nil
		}
		err := src.Read(ctx, p, start, end[p], func(m kafka.Message) error {
			if m.Offset < from {
				if verify && m.Offset == from-1 && keyHash(m.Key) != pp.LastKey {
					return fmt.Errorf("%w: %s[%d] holds another record at offset %d", errPDPTopicChanged, src.Topic(), p, m.Offset)
				}
				return nil
			}
			batch = append(batch, m)
			if len(batch) == pdpCatchUpBatch {
				return flush()
			}
			return nil
		})
		if err != nil {
			return read, err
		}
		if err := flush(); err != nil {
			return read, err
		}
	}
	return read, nil
}

// pdpMessages returns the pdp topic records of a prepared window: the
// changed unit accounts, then the summary.
func pdpMessages(upd *PDPUpdate) ([]kafka.Message, error) {
	msgs := make([]kafka.Message, 0, len(upd.Units)+1)
	unitHdr := []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeUnit)}}
	for _, u := range upd.Units {
		b, err := schema.EncodePDPUnit(u)
		if err != nil {
			return nil, fmt.Errorf("encode pdp unit: %w", err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(schema.PDPUnitKey(u.Stream, u.Unit)), Value: b, Headers: unitHdr})
	}
	b, err := schema.EncodePDPSummary(upd.Summary)
	if err != nil {
		return nil, fmt.Errorf("encode pdp summary: %w", err)
	}
	return append(msgs, kafka.Message{Key: []byte(upd.Key), Value: b,
		Headers: []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeSummary)}}}), nil
}

// Summarized reports whether the summary of the pdp key (schema.
// PDPSummaryKey) is in the store: written by a Commit or read from the
// topic.
func (s *PDPStore) Summarized(key string) (bool, error) {
	var done bool
	err := s.db.view(func(tx pdpTx) error {
		var err error
		done, err = tx.summarized(key)
		return err
	})
	return done, err
}
