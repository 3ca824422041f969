package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
)

// StreamSchedule is what StreamStarts needs to know of a stream.
type StreamSchedule struct {
	Name string
	// Size is the window size; starts are aligned down to it.
	Size time.Duration
	// Configured is the configured start (streams[].start); zero when the
	// configuration sets none.
	Configured time.Time
}

// StreamStarts returns the window-aligned start of each stream's release
// schedule (unix ms), recording it in the ledger the first time a stream
// runs, so that every later run, and every process of the pipeline, uses
// the same one.
//
// The start is, in order: the configured start aligned down to a window
// boundary (the operator's choice, e.g. to release a backfill), the first
// start recorded in the ledger, or, for a stream that has none yet, the
// latest window the ledger charged for it (a ledger written before starts
// were recorded: windows before that one were released or skipped already,
// and an older version may have charged windows far in the past that an
// attacker's event times chose, so the earliest charge is no safe start)
// or else the window holding now. Only the configuration, the ledger and
// the wall clock at the first run decide it, never an event time: windows
// before it are never released, so no producer can make the pipeline
// charge windows of the past.
//
// Two processes starting at once may both append a start for a new stream;
// the first in the ledger counts, and StreamStarts re-reads the ledger after
// appending so that both return it.
func StreamStarts(ctx context.Context, conn *kafkaio.Connection, topic string, streams []StreamSchedule, now time.Time) (map[string]int64, error) {
	books, err := ReadBooks(ctx, conn, topic)
	if err != nil {
		return nil, err
	}
	bookOf := func(stream string) *Book { return books[PartitionOf(stream, len(books))] }
	var missing []kafka.Message
	for _, s := range streams {
		book := bookOf(s.Name)
		if _, ok := book.Start(s.Name); ok {
			continue
		}
		st := schema.StreamStart{Stream: s.Name, At: now.UnixMilli()}
		switch w, charged := book.LatestCharged(s.Name); {
		case !s.Configured.IsZero():
			st.Start, st.Source = Align(s.Configured.UnixMilli(), s.Size), schema.StartFromConfig
		case charged:
			st.Start, st.Source = Align(w, s.Size), schema.StartFromLedger
		default:
			st.Start, st.Source = Align(now.UnixMilli(), s.Size), schema.StartFromFirstRun
		}
		m, err := StartMessage(st)
		if err != nil {
			return nil, err
		}
		missing = append(missing, m)
	}
	if len(missing) > 0 {
		w := conn.NewWriter(topic)
		err := w.WriteMessages(ctx, missing...)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("record the streams' start in the ledger %s: %w", topic, err)
		}
		// Another process may have recorded a start first: the first counts.
		if books, err = ReadBooks(ctx, conn, topic); err != nil {
			return nil, err
		}
	}
	out := make(map[string]int64, len(streams))
	for _, s := range streams {
		if !s.Configured.IsZero() {
			out[s.Name] = Align(s.Configured.UnixMilli(), s.Size)
			continue
		}
		st, ok := bookOf(s.Name).Start(s.Name)
		if !ok {
			return nil, fmt.Errorf("ledger %s: the start of stream %s was written but cannot be read back", topic, s.Name)
		}
		out[s.Name] = st.Start
	}
	return out, nil
}

// Align returns the start of the window of the given size that holds t
// (unix ms; windows are aligned to the epoch).
func Align(t int64, size time.Duration) int64 {
	n := size.Milliseconds()
	if n <= 0 {
		return t
	}
	q := t / n
	if t%n != 0 && t < 0 {
		q--
	}
	return q * n
}

// PartitionOf is the ledger partition of a stream, among partitions: the
// one its records (stream start, charges, chunks) are appended to, by the
// murmur2 hash of the stream's name that kafkaio.NewWriter's partitioner
// uses for their key. It is also the stream's partition of the partials
// topic, which the accumulate stage keys by stream: the release instance
// that owns partials partition p owns ledger partition p.
func PartitionOf(stream string, partitions int) int {
	if partitions <= 1 {
		return 0
	}
	return kafkaio.PartitionFor([]byte(stream), partitions)
}

// ReadPartition reads one partition of the ledger into a Book, from its
// log start (a checkpoint, once the partition was trimmed: see
// "Checkpoints" in the package documentation) to its end, and calls fn, if
// set, with every entry. An ErrNoCheckpoint error means the partition lost
// records no checkpoint stands for. A partition trimmed while it is read
// (ErrGap) is read again from its new start, a few times, when fn is nil;
// with fn, the ErrGap error is returned, for the caller to start over.
func ReadPartition(ctx context.Context, conn *kafkaio.Connection, topic string, partition int, fn func(Entry) error) (*Book, error) {
	for attempt := 1; ; attempt++ {
		book, err := readPartition(ctx, conn, topic, partition, fn)
		// Trimmed while read (ErrGap): read it again from its new start,
		// unless fn saw the entries already (its caller starts over).
		if fn != nil || attempt == 5 || !errors.Is(err, ErrGap) {
			return book, err
		}
	}
}

// readPartition reads the partition once.
func readPartition(ctx context.Context, conn *kafkaio.Connection, topic string, partition int, fn func(Entry) error) (*Book, error) {
	starts, err := conn.StartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", topic, err)
	}
	ends, err := conn.EndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", topic, err)
	}
	book := &Book{}
	book.StartAt(starts[partition])
	if ends[partition] <= starts[partition] && starts[partition] > 0 {
		return nil, fmt.Errorf("ledger %s[%d]: %w: it holds no record from offset %d", topic, partition, ErrNoCheckpoint, starts[partition])
	}
	err = conn.ReadRange(ctx, topic, partition, kafka.FirstOffset, ends[partition], func(m kafka.Message) error {
		e, err := book.Apply(m)
		if err != nil {
			return err
		}
		if fn != nil {
			return fn(e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read ledger %s[%d]: %w", topic, partition, err)
	}
	return book, nil
}

// ReadBooks reads every partition of the ledger, one Book each, in
// partition order.
func ReadBooks(ctx context.Context, conn *kafkaio.Connection, topic string) ([]*Book, error) {
	n, err := conn.Partitions(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", topic, err)
	}
	books := make([]*Book, n)
	for p := range n {
		if books[p], err = ReadPartition(ctx, conn, topic, p, nil); err != nil {
			return nil, err
		}
	}
	return books, nil
}

// ReadBook reads a ledger of one partition into a Book (tools and tests of
// a one-partition ledger); a ledger of several partitions is an error (see
// ReadBooks).
func ReadBook(ctx context.Context, conn *kafkaio.Connection, topic string) (*Book, error) {
	books, err := ReadBooks(ctx, conn, topic)
	if err != nil {
		return nil, err
	}
	if len(books) != 1 {
		return nil, fmt.Errorf("ledger %s has %d partitions; read them with ReadBooks", topic, len(books))
	}
	return books[0], nil
}

// ReadHead reads the checkpoint a ledger partition starts with: the one
// it was trimmed to. It returns nil (and no error) for a partition that
// starts with any other record at offset 0 (never trimmed: a reader
// applies all of it), and an ErrNoCheckpoint error for one that starts
// after offset 0 without a complete checkpoint. It reads only the
// checkpoint's records: a takeover learns from it where the topics that
// witness the partition stood before reading them.
//
// A partition trimmed again while its head is read (Kafka's reader then
// jumps to the new log start, an ErrGap to the Book) is read again from its
// new start, a few times: its head is then the newer checkpoint.
func ReadHead(ctx context.Context, conn *kafkaio.Connection, topic string, partition int) (*Checkpoint, error) {
	for attempt := 1; ; attempt++ {
		cp, err := readHead(ctx, conn, topic, partition)
		if attempt == 5 || !errors.Is(err, ErrGap) {
			return cp, err
		}
	}
}

// readHead reads the partition's head once.
func readHead(ctx context.Context, conn *kafkaio.Connection, topic string, partition int) (*Checkpoint, error) {
	starts, err := conn.StartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", topic, err)
	}
	ends, err := conn.EndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", topic, err)
	}
	start, end := starts[partition], ends[partition]
	if end <= start {
		if start > 0 {
			return nil, fmt.Errorf("ledger %s[%d]: %w: it holds no record from offset %d", topic, partition, ErrNoCheckpoint, start)
		}
		return nil, nil
	}
	book := &Book{}
	book.StartAt(start)
	var head *Checkpoint
	errDone := errors.New("done")
	err = conn.ReadRange(ctx, topic, partition, kafka.FirstOffset, end, func(m kafka.Message) error {
		if book.applied == 0 && header(m, schema.LedgerTypeHeader) != schema.LedgerTypeCheckpoint && start == 0 {
			return errDone // a partition never trimmed
		}
		e, err := book.Apply(m)
		if err != nil {
			return err
		}
		if e.Checkpoint != nil {
			head = e.Checkpoint
			return errDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDone) {
		return nil, fmt.Errorf("read ledger %s[%d]: %w", topic, partition, err)
	}
	if head == nil && start > 0 {
		return nil, fmt.Errorf("ledger %s[%d]: %w: its checkpoint at offset %d lacks parts", topic, partition, ErrNoCheckpoint, start)
	}
	return head, nil
}
