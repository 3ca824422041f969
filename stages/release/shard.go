package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// shard is one partition's streams as this instance holds them: the
// owner of ledger partition p (and of partials partition p) while its
// epoch is set.
type shard struct {
	s *Stage
	// p is the partition; n the partitions of the ledger and partials.
	p, n    int
	streams map[string]*plan.Stream
	// ledger writes to ledger partition p only.
	ledger *kafka.Writer

	// mu serialises the Releaser between the takeover, the partials'
	// windows and the queries, and keeps a group commit's appends and
	// publishes together.
	mu  sync.Mutex
	rel *Releaser
	// ahead is set when a commit failed after the Releaser decided it:
	// the Releaser then holds outcomes (and a prediction window's models)
	// the ledger may lack, until the next takeover rebuilds it. No query
	// is answered and no checkpoint written meanwhile.
	ahead bool
	// Ownership (DESIGN invariant 8; package internal/ledger), under mu:
	// epoch is this instance's epoch while it owns the partition ("" when
	// it does not), book the partition read so far, and tail a reader of
	// it positioned at book.Next(), through which every record this
	// instance appends is read back before anything of it is published.
	epoch string
	book  *ledger.Book
	tail  *kafka.Reader
	// respondedNext is the requests topic's offset after the last request
	// of this shard's streams that the responses topic held a response to
	// when this instance took over, under mu: the query path reads on from
	// it or the Releaser's RequestNext, whichever is later.
	respondedNext int64
	// ready is set once a takeover has rebuilt the shard (Stage.Ready).
	ready atomic.Bool

	// sinceCheckpoint counts the charges appended since the last
	// checkpoint, lastCheckpoint is when it was written (or the takeover),
	// and checkpointDue is set when a takeover found no checkpoint to
	// start from, or many records after it, so that one is written at
	// once. Under mu.
	sinceCheckpoint int
	lastCheckpoint  time.Time
	checkpointDue   bool
	// trimWarned limits the warning about a ledger that cannot be trimmed.
	trimWarned time.Time
}

func newShard(s *Stage, p, n int, streams []plan.Stream) *shard {
	sh := &shard{s: s, p: p, n: n, streams: map[string]*plan.Stream{}, ledger: s.cfg.Conn.NewPartitionWriter(s.cfg.LedgerTopic, p)}
	sh.rel = NewReleaser(streams, s.cfg.Noise)
	for name, start := range s.cfg.Starts {
		if ledger.PartitionOf(name, n) == p {
			sh.rel.SetStart(name, start)
		}
	}
	if s.cfg.RecordBytes > 0 {
		sh.rel.recordBytes = s.cfg.RecordBytes
	}
	for i := range streams {
		sh.streams[streams[i].Config.Name] = &streams[i]
	}
	// Sized to the ledger, so that a large record the topic accepts is
	// not refused client-side.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.cfg.Conn.FitBatchBytes(ctx, sh.ledger); err != nil {
		s.cfg.Log.Warn("could not read a topic's max.message.bytes; assuming Kafka's default", "topic", s.cfg.LedgerTopic, "err", err, "default", kafkaio.DefaultMaxMessageBytes)
	}
	return sh
}

// close releases the shard's ownership and writer.
func (sh *shard) close() {
	sh.mu.Lock()
	sh.dropOwnership()
	sh.mu.Unlock()
	_ = sh.ledger.Close()
}

// owns reports whether stream belongs to this shard's partition.
func (sh *shard) owns(stream string) bool { return ledger.PartitionOf(stream, sh.n) == sh.p }

// dropOwnership forgets this instance's epoch and closes the ledger tail;
// the caller holds mu.
func (sh *shard) dropOwnership() {
	if sh.tail != nil {
		_ = sh.tail.Close()
	}
	sh.tail, sh.epoch = nil, ""
	sh.ready.Store(false)
}

// takeOver is takeOverAs with a fresh epoch.
func (sh *shard) takeOver(ctx context.Context) error {
	epoch, err := newEpoch()
	if err != nil {
		return err
	}
	return sh.takeOverAs(ctx, epoch)
}

// takeOverAs makes this instance the owner of the shard's streams under
// epoch: it reads the topics that witness the ledger partition from where
// its latest checkpoint says they stood (the releases, responses and
// accountant topics; all of them without a checkpoint), appends an epoch
// marker to the partition, rebuilds the Releaser from the partition's
// first record on (its checkpoint once it was trimmed, and the records
// after it) and checks it against the witnesses (recover), and positions
// the ledger tail reader after it. Every record this instance appends from
// now on carries the epoch, and counts only once read back with no newer
// marker before it (confirm). If another instance's marker already follows
// this one's, it returns an ErrFenced error.
//
// The witnesses are read before the marker is appended, so everything they
// hold was written before it: every charge they count precedes the marker
// and is in the partition read that follows, unless the ledger lost it.
// Read after the marker, they could hold the releases of an instance that
// took over in between, and an intact ledger would look truncated.
//
// A retry after a failure may reuse the epoch: a marker whose write timed
// out but landed late is then this instance's own, not a newer owner's.
func (sh *shard) takeOverAs(ctx context.Context, epoch string) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.dropOwnership()
	from, err := ledger.ReadHead(ctx, sh.s.cfg.Conn, sh.s.cfg.LedgerTopic, sh.p)
	if err != nil {
		return sh.lost(err)
	}
	w, err := sh.readWitnesses(ctx, from)
	if err != nil {
		return err
	}
	m, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: epoch, Owner: sh.s.owner, At: sh.s.cfg.Now().UnixMilli()})
	if err != nil {
		return err
	}
	if err := sh.ledger.WriteMessages(ctx, m); err != nil {
		return fmt.Errorf("append an epoch marker to the ledger %s[%d]: %w", sh.s.cfg.LedgerTopic, sh.p, err)
	}
	if err := sh.recover(ctx, epoch, w); err != nil {
		return err
	}
	tail, err := sh.s.cfg.Conn.NewPartitionReader(sh.s.cfg.LedgerTopic, sh.p, sh.book.Next())
	if err != nil {
		return fmt.Errorf("ledger %s[%d]: %w", sh.s.cfg.LedgerTopic, sh.p, err)
	}
	sh.tail, sh.epoch, sh.ahead = tail, epoch, false
	sh.lastCheckpoint = sh.s.cfg.Now()
	sh.ready.Store(true)
	sh.s.cfg.Log.Info("took ownership of the release stage's streams of a ledger partition", "partition", sh.p, "streams", len(sh.streams), "epoch", epoch, "ledger_offset", sh.book.Next())
	return nil
}

// lost turns the ledger package's ErrNoCheckpoint into the stage's
// ErrLedgerLost, which names what to do.
func (sh *shard) lost(err error) error {
	if errors.Is(err, ledger.ErrNoCheckpoint) {
		return fmt.Errorf("%w: %w; restore the ledger topic %s from a backup or mirror that holds its checkpoint before restarting (do not recreate it empty)",
			ErrLedgerLost, err, sh.s.cfg.LedgerTopic)
	}
	return err
}

// consume reads the partials from offset from and releases the windows
// they complete, until ctx is done (nil) or a release fails. It returns
// the offset a new owner must replay from (the last committed one, or from)
// and, when fenced, an ErrFenced error.
func (sh *shard) consume(ctx context.Context, a kafkaio.Assignment, from int64, log *slog.Logger) (int64, error) {
	s := sh.s
	r, err := s.cfg.Conn.NewPartitionReader(a.Topic, a.Partition, from)
	if err != nil {
		return from, err
	}
	defer r.Close()
	merger := s.newMerger(log)
	var committed int64 = -1
	resume := func() int64 {
		if committed >= 0 {
			return committed
		}
		return from
	}
	lastCommit := s.cfg.Now()
	commit := func(force bool) {
		off, ok := merger.CommitOffset()
		if !ok || off == committed || (!force && s.cfg.Now().Sub(lastCommit) < time.Second) {
			return
		}
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.failpoint(FailpointCommit, kafka.Message{Topic: a.Topic, Partition: a.Partition, Offset: off})
		if err := a.Commit(cctx, off, ""); err == nil {
			committed = off
			lastCommit = s.cfg.Now()
			s.hold(a.Partition, off)
		}
	}
	// The queries are answered alongside, by this owner of the shard's
	// streams; an answer that fails (fenced, or not durable) ends the
	// consumption as a failed release does.
	queryErr := make(chan error, 1)
	if s.responses != nil {
		qctx, qcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { qcancel(); <-done }()
		go func() {
			defer close(done)
			if err := sh.serveQueries(qctx, log); err != nil {
				queryErr <- err
			}
		}()
	}
	// Commit only on a clean stop: after a failed release the merger has
	// already dropped the window, and committing would skip its partials.
	for {
		select {
		case err := <-queryErr:
			if ctx.Err() != nil {
				return resume(), nil
			}
			return resume(), fmt.Errorf("answering queries: %w", err)
		default:
		}
		// Release the complete windows that have come due (their end
		// plus grace has passed on this stage's clock: Merger.Due), all
		// in one group commit. This runs after every burst of partials
		// and every quiet second.
		if due := merger.Due(s.cfg.Now()); len(due) > 0 {
			if err := sh.releaseWindows(ctx, due); err != nil {
				if errors.Is(err, ErrFenced) {
					// Not committing: whoever owns the stage next replays
					// the partials from the last commit.
					return resume(), err
				}
				if ctx.Err() != nil {
					return resume(), nil // stopping: the uncommitted partials are replayed
				}
				return resume(), err
			}
		}
		if err := sh.maybeCheckpoint(ctx, false); err != nil {
			if errors.Is(err, ErrFenced) || ctx.Err() == nil {
				return resume(), err
			}
			return resume(), nil
		}
		// Wait at most a second for the next partial, so that the offset
		// reached by the last burst is committed while the topic is quiet,
		// not only when the next partial arrives: a restart then replays
		// less. Then take what the reader has buffered, without waiting,
		// so that a backlog is released many windows per group commit.
		n, err := sh.fetch(ctx, r, merger, time.Second, log)
		if err != nil {
			if ctx.Err() != nil {
				commit(true)
				log.Info("partials partition drained: started windows released, offset committed", "committed_offset", committed, "pending_windows", merger.Pending())
				return resume(), nil
			}
			return resume(), fmt.Errorf("read partials: %w", err)
		}
		if n > 0 {
			for i := 0; i < maxDrain && ctx.Err() == nil; i++ {
				k, err := sh.fetch(ctx, r, merger, drainWait, log)
				if err != nil || k == 0 {
					break
				}
			}
		}
		commit(false)
	}
}

// maxDrain bounds the partials read without waiting between two group
// commits, and drainWait is how long a read waits for the reader's next
// buffered partial before the windows they completed are released.
const (
	maxDrain  = 2000
	drainWait = 2 * time.Millisecond
)

// fetch reads one partial (waiting at most wait) into the merger; it
// returns 0 and no error when none came in time.
func (sh *shard) fetch(ctx context.Context, r *kafka.Reader, merger *Merger, wait time.Duration, log *slog.Logger) (int, error) {
	fctx, cancel := context.WithTimeout(ctx, wait)
	m, err := r.FetchMessage(fctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return 0, nil
		}
		return 0, err
	}
	p, err := schema.DecodePartial(m.Value)
	if err != nil {
		log.Error("skipping undecodable partial", "offset", m.Offset, "err", err)
		return 1, nil
	}
	if _, ok := sh.streams[p.Stream]; !ok {
		if _, configured := sh.s.streams[p.Stream]; configured {
			log.Warn("skipping partial of a stream of another partition (an accumulator partitioning partials otherwise than by the stream's name)", "stream", p.Stream)
		} else {
			log.Warn("skipping partial of a stream not in the config", "stream", p.Stream)
		}
		return 1, nil
	}
	merger.Record(p, m.Offset, sh.s.cfg.Now())
	return 1, nil
}

// fenced handles the loss of ownership: another release instance's epoch
// marker follows this one's, so this instance publishes nothing more under
// its epoch. Normally the other instance took over because this one lost
// its consumer-group membership (it was paused or cut off), and the group
// ends this generation at its next heartbeat: fenced then returns false
// once ctx is done, and the next generation's handler takes ownership again
// if the partials come back. If the generation is still alive after two
// session timeouts, this instance is still the group's owner of the
// partials, and the marker was written by no live owner (an instance paused
// before its marker write that then died, or a marker of this instance's
// own that landed late): fenced returns true and the caller takes over
// again, rather than stall the stage until some rebalance. Safety never
// rests on this wait, only on the markers: whoever took over last owns the
// partition.
func (sh *shard) fenced(ctx context.Context, log *slog.Logger, err error) (retake bool) {
	sh.s.cfg.Metrics.Fenced.Inc()
	log.Warn("another release instance owns these streams; this instance publishes nothing until it owns the partials again", "err", err)
	sh.mu.Lock()
	sh.dropOwnership()
	sh.mu.Unlock()
	session := sh.s.cfg.SessionTimeout
	if session <= 0 {
		session = 10 * time.Second
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(2 * session):
		log.Warn("still the consumer group's owner of the partials two session timeouts after being fenced: the newer marker has no live owner; taking over again")
		return true
	}
}

// publishStates writes the budget state of each stream-period to the
// compacted accountant topic (key: stream), in one write, with the ledger
// offset they reflect, and sets the budget gauges.
func (sh *shard) publishStates(ctx context.Context, periods map[string]int64) error {
	if len(periods) == 0 {
		return nil
	}
	now := sh.s.cfg.Now()
	msgs := make([]kafka.Message, 0, len(periods))
	for _, name := range sortedStreams(periods) {
		st, _ := sh.rel.State(name, periods[name], now)
		b, err := schema.EncodeBudgetState(st)
		if err != nil {
			return fmt.Errorf("encode budget state: %w", err)
		}
		msg := kafka.Message{Key: []byte(name), Value: b}
		if sh.book != nil {
			msg.Headers = []kafka.Header{{Key: LedgerOffsetHeader, Value: []byte(strconv.FormatInt(sh.book.Next(), 10))}}
		}
		msgs = append(msgs, msg)
		sh.s.cfg.Metrics.BudgetSpent.WithLabelValues(name).Set(st.EpsilonSpent)
		sh.s.cfg.Metrics.BudgetLeft.WithLabelValues(name).Set(st.EpsilonRemaining)
	}
	if err := sh.s.accountantW.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("publish budget states: %w", err)
	}
	return nil
}
