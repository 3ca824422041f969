package prediction

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// MinKeyBytes is the shortest sharding key accepted: 128 bits, so the key
// cannot be guessed by enumeration.
const MinKeyBytes = 16

// MaxShards bounds r, the number of shards (and models).
const MaxShards = 1 << 16

// Sharder assigns privacy units to r disjoint shards by a keyed hash.
//
// Shard(u) = ⌊h(u)·r / 2^64⌋, where h(u) is the first 8 bytes (big-endian)
// of HMAC-SHA256(key, u). It is deterministic (the same unit always goes to
// the same shard, in every window, process and restart), depends on the
// unit and the key only (never on other units or on the data), and, for a
// secret key, HMAC-SHA256 being a pseudo-random function, the shards are
// balanced like independent uniform draws: the multiply-shift map from 64
// bits to [0, r) is off uniform by at most r/2^64 per shard (Lemire 2019,
// "Fast random integer generation in an interval").
//
// Privacy: the partition is what subsample and aggregate needs: a unit's
// rows all go to one shard, so adding or removing the unit changes one
// shard's data. That holds for any key; the key's secrecy only stops an
// adversary from crafting units that land in a chosen shard.
type Sharder struct {
	key    []byte
	shards int
}

// NewSharder returns the sharder of r shards with the given secret key (at
// least MinKeyBytes bytes; the key is copied). It returns an error for
// r outside [1, MaxShards] or a short key.
func NewSharder(key []byte, shards int) (*Sharder, error) {
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("sharder: %d shards, want 1 to %d", shards, MaxShards)
	}
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("sharder: key of %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	return &Sharder{key: append([]byte(nil), key...), shards: shards}, nil
}

// Shards returns r.
func (s *Sharder) Shards() int { return s.shards }

// Shard returns the shard of a unit, in [0, r).
func (s *Sharder) Shard(unit []byte) int {
	m := hmac.New(sha256.New, s.key)
	m.Write(unit)
	var sum [sha256.Size]byte
	h := binary.BigEndian.Uint64(m.Sum(sum[:0]))
	hi, _ := bits.Mul64(h, uint64(s.shards))
	return int(hi)
}

// ShardString is Shard of the unit's bytes.
func (s *Sharder) ShardString(unit string) int { return s.Shard([]byte(unit)) }
