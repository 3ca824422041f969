package ledger

import (
	"context"
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
	book, err := ReadBook(ctx, conn, topic)
	if err != nil {
		return nil, err
	}
	var missing []kafka.Message
	for _, s := range streams {
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
		if book, err = ReadBook(ctx, conn, topic); err != nil {
			return nil, err
		}
	}
	out := make(map[string]int64, len(streams))
	for _, s := range streams {
		if !s.Configured.IsZero() {
			out[s.Name] = Align(s.Configured.UnixMilli(), s.Size)
			continue
		}
		st, ok := book.Start(s.Name)
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

// ReadBook reads the whole ledger into a Book. The ledger must have exactly
// one partition: fencing and the first-start rule rely on its total order.
func ReadBook(ctx context.Context, conn *kafkaio.Connection, topic string) (*Book, error) {
	n, err := conn.Partitions(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", topic, err)
	}
	if n != 1 {
		return nil, fmt.Errorf("ledger %s has %d partitions; it must have exactly one (its records are ordered): recreate it with one partition, copying the records in order", topic, n)
	}
	book := &Book{}
	err = conn.ReadAll(ctx, topic, func(m kafka.Message) error {
		_, err := book.Apply(m)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read ledger %s: %w", topic, err)
	}
	return book, nil
}
