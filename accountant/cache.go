package accountant

import (
	"math"
	"sync"
	"sync/atomic"
)

// mechEntry is what one valid [Mechanism] contributes to a charge: its curve
// for Count applications and its pure or approx_dp epsilons, exactly the
// values [Mechanism.Curve] and [Mechanism.PureEpsilon] return. An entry is
// immutable once cached and is shared between goroutines: it is read, never
// written, and never handed to callers (Mechanism.Curve returns a copy).
type mechEntry struct {
	key   Mechanism
	curve [numOrders]float64 // m.Curve(): Count × the kind's curve
	// wellFormed is curveWellFormed(&curve): every entry >= 0. Curves are
	// (the constructors clamp rounding below zero), but a charge's sum is
	// trusted to be well formed only when each of its entries is.
	wellFormed bool
	// approx is set for kind approx_dp, whose ε and δ are composed by basic
	// composition: approxEps = Count·Epsilon, approxDelta = Count·Delta.
	approx                 bool
	approxEps, approxDelta float64
	// pureOK and pure are m.PureEpsilon() (Count·ε0) for the other kinds.
	pureOK bool
	pure   float64
}

// newMechEntry computes m's entry from scratch; it fails exactly when
// m.Curve would (the error is the same).
func newMechEntry(m Mechanism) (*mechEntry, error) {
	c, err := m.curve()
	if err != nil {
		return nil, err
	}
	e := &mechEntry{key: m}
	copy(e.curve[:], c)
	e.wellFormed = curveWellFormed(&e.curve)
	if m.Kind == KindApproxDP {
		n := float64(m.count())
		e.approx, e.approxEps, e.approxDelta = true, n*m.Epsilon, n*m.Delta
	} else {
		e.pure, e.pureOK = m.PureEpsilon()
	}
	return e, nil
}

// The mechanism cache maps each valid Mechanism (a comparable struct, so it
// is its own key) to its entry. Equal keys have equal curves: == on the float
// fields differs from bit equality only for ±0, and a field that can be zero
// is unused by its kind (Validate requires the used ones to be positive), so
// it does not enter the curve; NaN never equals itself, but a mechanism with
// a NaN field is invalid and is not cached.
//
// The cache is bounded: mechCacheShards shards of at most mechShardCap
// entries, a shard being emptied when a new entry finds it full. A release
// stage has one mechanism per configured release parameter set, far fewer,
// so in steady state nothing is recomputed; a workload of ever-new
// mechanisms costs what it cost without a cache (plus copying a 2 KB table
// per miss), and the memory stays below mechCacheShards·mechShardCap entries
// of about 1.3 KB.
//
// Each shard is a small open-addressing hash table (linear probing, at most
// half full, so a probe always ends at an empty slot) that is copied on
// write: a lookup loads the current table with one atomic read and never
// writes shared memory, so the release stage's goroutines (one per input
// shard) do not contend on a hit; a miss copies the table under the shard's
// mutex. A hand-rolled table rather than a Go map because hashing the
// Mechanism struct (its string and four floats) was a third of a charge's
// cost.
const (
	mechCacheShards = 16
	mechShardCap    = 64
	mechSlots       = 2 * mechShardCap // a power of two
)

type mechSlot struct {
	h uint64
	e *mechEntry // nil: empty
}

type mechTable struct {
	n     int
	slots [mechSlots]mechSlot
}

type mechShard struct {
	mu sync.Mutex // serialises writers
	t  atomic.Pointer[mechTable]
	_  [48]byte // keep shards on different cache lines
}

var mechCache [mechCacheShards]mechShard

// mechHash hashes m for the cache. Equal mechanisms hash equally (a zero
// float is hashed as +0, so ±0 agree); the Kind string enters through its
// length and first and last bytes, which tell the kinds apart, and any
// collision is resolved by comparing the mechanisms.
func mechHash(m Mechanism) uint64 {
	h := uint64(len(m.Kind))
	if n := len(m.Kind); n > 0 {
		h |= uint64(m.Kind[0])<<8 | uint64(m.Kind[n-1])<<16
	}
	for _, v := range [...]uint64{
		floatKey(m.Scale), floatKey(m.Sensitivity), floatKey(m.Epsilon), floatKey(m.Delta),
		uint64(m.K), uint64(m.Count),
	} {
		h = (h ^ v) * 0x9e3779b97f4a7c15
		h ^= h >> 29
	}
	return h
}

func floatKey(v float64) uint64 {
	if v == 0 {
		return 0
	}
	return math.Float64bits(v)
}

// find returns the entry of m (hash h) in t, or nil.
func (t *mechTable) find(m Mechanism, h uint64) *mechEntry {
	for i := (h >> 32) & (mechSlots - 1); ; i = (i + 1) & (mechSlots - 1) {
		sl := &t.slots[i]
		if sl.e == nil {
			return nil
		}
		if sl.h == h && sl.e.key == m {
			return sl.e
		}
	}
}

// insert adds e (hash h), which is not in t; t must be less than half full.
func (t *mechTable) insert(e *mechEntry, h uint64) {
	i := (h >> 32) & (mechSlots - 1)
	for t.slots[i].e != nil {
		i = (i + 1) & (mechSlots - 1)
	}
	t.slots[i] = mechSlot{h: h, e: e}
	t.n++
}

// lookup returns m's entry, computing and caching it on a miss. It does not
// allocate on a hit. An invalid m is not cached and gives the error of
// [Mechanism.Curve].
func lookup(m Mechanism) (*mechEntry, error) {
	h := mechHash(m)
	s := &mechCache[h%mechCacheShards]
	if t := s.t.Load(); t != nil {
		if e := t.find(m, h); e != nil {
			return e, nil
		}
	}
	e, err := newMechEntry(m)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := new(mechTable)
	if t := s.t.Load(); t != nil {
		if prev := t.find(m, h); prev != nil { // another goroutine was first
			return prev, nil
		}
		if t.n < mechShardCap {
			*next = *t
		} // else the shard is full: start it afresh (bounded)
	}
	next.insert(e, h)
	s.t.Store(next)
	return e, nil
}
