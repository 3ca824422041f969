package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// NewWriter returns a writer for one topic over c's transport (TLS, SASL)
// that waits for acks from all in-sync replicas (invariant 2: partials and
// ledger records count as written only once acknowledged) and partitions by
// the murmur2 hash of the key, the Java client's default, so that dpstream,
// Java producers and kcat with -X topic.partitioner=murmur2_random put a
// privacy unit on the same partition (see PartitionFor).
func (c *Connection) NewWriter(topic string) *kafka.Writer {
	return &kafka.Writer{
		Addr:                   kafka.TCP(c.Brokers...),
		Transport:              c.roundTripper(),
		Topic:                  topic,
		Balancer:               &kafka.Murmur2Balancer{},
		RequiredAcks:           kafka.RequireAll,
		BatchTimeout:           2 * time.Millisecond,
		BatchSize:              1000,
		AllowAutoTopicCreation: false,
		MaxAttempts:            10,
		WriteBackoffMin:        50 * time.Millisecond,
		WriteBackoffMax:        2 * time.Second,
	}
}

// PartitionFor is the partition a key belongs to under the murmur2
// partitioner of NewWriter. The accumulate stage bounds contributions per
// partition, so it checks that every event's privacy unit hashes to the
// partition it was read from.
func PartitionFor(key []byte, partitions int) int {
	var ps []int
	if v, ok := partitionLists.Load(partitions); ok {
		ps = v.([]int)
	} else {
		ps = make([]int, partitions)
		for i := range ps {
			ps[i] = i
		}
		partitionLists.Store(partitions, ps)
	}
	return kafka.Murmur2Balancer{}.Balance(kafka.Message{Key: key}, ps...)
}

// partitionLists caches the []int{0..n-1} the balancer wants, per n.
var partitionLists sync.Map

// FetchMaxBytes is the most a partition reader asks for in one fetch. A
// broker returns a first record batch larger than that all the same (KIP-74),
// but the accumulate stage admits no event larger than this minus framing
// (config.MaxEventBytesLimit), so no record it accepts depends on that.
const FetchMaxBytes = 16 << 20

// DefaultMaxMessageBytes is Kafka's default max.message.bytes (1 MiB plus
// the 12-byte log overhead): the size limit of a topic whose config cannot
// be read.
const DefaultMaxMessageBytes = 1048588

// FitBatchBytes sets w.BatchBytes to its topic's max.message.bytes and
// returns that limit. kafka-go refuses, before sending, a record larger
// than BatchBytes (default 1 MiB), whatever the topic allows: without
// this a record that the topic accepts (a large partial or ledger record
// on a topic configured for it) would fail client-side. On error w is left
// unchanged.
func (c *Connection) FitBatchBytes(ctx context.Context, w *kafka.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := c.TopicConfig(ctx, w.Topic, "max.message.bytes")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("topic %s: max.message.bytes %q is not a positive integer", w.Topic, v)
	}
	w.BatchBytes = int64(n)
	return n, nil
}

// NewPartitionReader returns a reader of one partition over c's dialer
// (TLS, SASL), starting at offset (kafka.FirstOffset or kafka.LastOffset
// are allowed).
func (c *Connection) NewPartitionReader(topic string, partition int, offset int64) (*kafka.Reader, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   c.Brokers,
		Dialer:    c.dialer,
		Topic:     topic,
		Partition: partition,
		MinBytes:  1,
		MaxBytes:  FetchMaxBytes,
		MaxWait:   200 * time.Millisecond,
	})
	if err := r.SetOffset(offset); err != nil {
		r.Close()
		return nil, fmt.Errorf("seek %s[%d] to %d: %w", topic, partition, offset, err)
	}
	return r, nil
}

// ReadAll reads every record of topic present when it is called (up to each
// partition's high watermark), partition by partition in offset order, and
// calls fn for each. It is how stages rebuild state (the ledger) and how
// `tail` without --follow works.
func (c *Connection) ReadAll(ctx context.Context, topic string, fn func(kafka.Message) error) error {
	return c.ReadFrom(ctx, topic, nil, fn)
}

// ReadFrom is ReadAll from the offsets from, by partition: a partition
// from lacks, or whose records before its offset were deleted or expired,
// is read from its start.
func (c *Connection) ReadFrom(ctx context.Context, topic string, from map[int]int64, fn func(kafka.Message) error) error {
	ends, err := c.EndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	var starts map[int]int64
	if len(from) > 0 {
		if starts, err = c.StartOffsets(ctx, topic); err != nil {
			return err
		}
	}
	parts := make([]int, 0, len(ends))
	for p := range ends {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	for _, p := range parts {
		off, ok := from[p]
		if !ok || off < starts[p] {
			off = kafka.FirstOffset
		}
		if err := c.ReadRange(ctx, topic, p, off, ends[p], fn); err != nil {
			return err
		}
	}
	return nil
}

// ReadRange calls fn for each record of one partition from offset from
// (kafka.FirstOffset for the first; a compacted topic may start later)
// until the record before end, in offset order. end must be at most the
// partition's high watermark (EndOffsets), or ReadRange waits for records
// that do not exist yet. It is how the release stage's pdp store catches
// up from the offset it had read to.
func (c *Connection) ReadRange(ctx context.Context, topic string, p int, from, end int64, fn func(kafka.Message) error) error {
	if end <= 0 || from >= end {
		return nil
	}
	r, err := c.NewPartitionReader(topic, p, from)
	if err != nil {
		return err
	}
	// Closed in the background: by the time the last record is read the
	// reader has sent its next fetch, which the broker holds for up to
	// MaxWait, and Close waits for it. A takeover reads its ledger
	// partition with ReadRange, so that wait (~150 ms) was most of an
	// empty takeover's time; the reader reads nothing more either way.
	defer func() { go r.Close() }()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("read %s[%d]: %w", topic, p, err)
		}
		if err := fn(m); err != nil {
			return err
		}
		if m.Offset+1 >= end {
			return nil
		}
	}
}

// Follow reads every partition of topic from offset start (kafka.FirstOffset
// or kafka.LastOffset) and calls fn for each record until ctx is done. fn is
// called from one goroutine at a time.
func (c *Connection) Follow(ctx context.Context, topic string, start int64, fn func(kafka.Message) error) error {
	n, err := c.Partitions(ctx, topic)
	if err != nil {
		return err
	}
	starts := make(map[int]int64, n)
	for p := 0; p < n; p++ {
		starts[p] = start
	}
	return c.FollowFrom(ctx, topic, starts, fn)
}

// FollowFrom is Follow from each partition's own offset: starts maps the
// partitions to read to their first offsets.
func (c *Connection) FollowFrom(ctx context.Context, topic string, starts map[int]int64, fn func(kafka.Message) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		errOnce error
	)
	for p, start := range starts {
		r, err := c.NewPartitionReader(topic, p, start)
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					mu.Lock()
					if errOnce == nil && ctx.Err() == nil {
						errOnce = fmt.Errorf("read %s[%d]: %w", topic, p, err)
						cancel()
					}
					mu.Unlock()
					return
				}
				mu.Lock()
				ferr := fn(m)
				if ferr != nil && errOnce == nil {
					errOnce = ferr
					cancel()
				}
				mu.Unlock()
				if ferr != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if errOnce != nil {
		return errOnce
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
