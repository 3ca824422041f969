package pdpstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/dpstream/dpstream/schema"
)

// The on-disk backend (Open): the file format of a bbolt store and its
// slots. Changing a layout here needs a new pdpStoreFormat (or record
// version): a file of another format is rebuilt from the topic.

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

// bucket returns a top-level bucket (created by Open and reset).
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

// Slots is how many store files Open tries in its
// directory. Each release process takes the first one no other process
// holds, so processes that share a directory (several on one host, or a
// paused owner and its successor) never wait for each other; any slot is
// a valid cache of the topic, as it catches up before use.
const Slots = 8

// ErrBusy is returned by Open when every slot of its
// directory is held by another process.
var ErrBusy = errors.New("every pdp store slot is in use")

// Open opens the release stage's on-disk store in dir (created
// 0700 if missing): the first of Slots files pdp-N.db that no
// other process has open, created 0600. A file that bbolt cannot open (a
// partial write after a power loss, another format) is removed and
// recreated empty: it is a cache, rebuilt from the pdp topic by the next
// CatchUp. The store must be closed with Close.
func Open(dir string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pdp store: %w", err)
	}
	for i := range Slots {
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
		return &Store{db: &boltBackend{db}, path: path}, nil
	}
	return nil, fmt.Errorf("pdp store %s: %w (%d files pdp-0.db…pdp-%d.db are held by other processes)", dir, ErrBusy, Slots, Slots-1)
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
