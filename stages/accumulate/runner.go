package accumulate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/schema"
)

// Input binds a stream to its topic, decoder and extractor.
type Input struct {
	Stream    *Stream
	Topic     string
	Decoder   schema.Decoder
	Extractor *Extractor
	// MaxEventBytes is the largest record value admitted (0: no limit); a
	// larger one is rejected as ReasonTooLarge before it is decoded, and
	// its dead letter omits the value. It must not exceed
	// kafkaio.FetchMaxBytes, the most one fetch returns.
	MaxEventBytes int
}

// Config configures the accumulate stage.
type Config struct {
	// Conn is the Kafka connection (brokers, TLS, SASL) of every read,
	// write and group request; required.
	Conn            *kafkaio.Connection
	GroupID         string // consumer group of the input topics
	PartialsTopic   string
	DeadLetterTopic string
	Inputs          []Input
	Metrics         *metrics.Metrics
	Log             *slog.Logger
	// CommitInterval bounds how often offsets are committed (default 1s).
	CommitInterval time.Duration
	// Now is the wall clock (default time.Now); tests replace it.
	Now func() time.Time
	// SessionTimeout is the consumer group's session timeout (default 10s):
	// how long a crashed member holds its partitions.
	SessionTimeout time.Duration
	// Failpoint, if set, is called at each step of the commit protocol
	// (the Failpoint* constants); the crash tests
	// (internal/e2e/crash_test.go) kill the process there. Nil in
	// production.
	Failpoint func(step string)
	// RecordBytes, if set, is the largest record written before a partial
	// (accumulate) or a release (release) is split into chunks; default
	// schema.MaxRecordBytes (tests lower it).
	RecordBytes int
}

// Steps of the accumulate stage's commit protocol, as passed to
// Config.Failpoint: closed windows' partials (and dead letters) are
// acknowledged, then the commit point is committed.
const (
	// FailpointFlushed: partials and dead letters are acknowledged, their
	// offsets not yet committed.
	FailpointFlushed = "accumulate/flushed"
	// FailpointCommit: the offset commit is about to be sent.
	FailpointCommit = "accumulate/commit"
	// FailpointCommitted: the offset commit was acknowledged.
	FailpointCommitted = "accumulate/committed"
)

// Stage is the accumulate stage: a consumer-group member over the input
// topics of every configured stream.
type Stage struct {
	cfg      Config
	byTopic  map[string]*Input
	partials *kafka.Writer
	dlq      *kafka.Writer
	// dlqMaxValue is the largest value a dead letter keeps; a longer one
	// is left out (see deadLetter). Run sets it from the dead-letter
	// topic's max.message.bytes.
	dlqMaxValue int
	// partialBytes is the largest partial record written
	// (schema.MaxRecordBytes; tests lower it): a larger partial is written
	// as chunks (schema.SplitPartial). It is a constant, not the topic's
	// limit, so that a window replayed after a restart is split into the
	// same chunks as before.
	partialBytes int
	// writePartialsHook, if set, replaces the partials writer's
	// WriteMessages (tests).
	writePartialsHook func(context.Context, ...kafka.Message) error

	// active holds the partitions being handled, for InFlight: a drain
	// that runs out of time reports which ones it left uncommitted.
	activeMu sync.Mutex
	active   map[*partitionWorker]struct{}
}

// New checks the configuration and creates the stage's writers.
func New(cfg Config) (*Stage, error) {
	if cfg.Conn == nil || len(cfg.Conn.Brokers) == 0 || cfg.GroupID == "" || cfg.PartialsTopic == "" || cfg.DeadLetterTopic == "" {
		return nil, errors.New("accumulate: a connection with brokers, the group, and the partials and dead-letter topics are required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Stage{cfg: cfg, byTopic: map[string]*Input{}, active: map[*partitionWorker]struct{}{}}
	for i := range cfg.Inputs {
		in := &cfg.Inputs[i]
		if _, dup := s.byTopic[in.Topic]; dup {
			return nil, fmt.Errorf("accumulate: topic %s is used by two streams", in.Topic)
		}
		if in.MaxEventBytes < 0 || in.MaxEventBytes > kafkaio.FetchMaxBytes-fetchOverhead {
			return nil, fmt.Errorf("accumulate: stream %s: max event size %d bytes is outside 0..%d (what one fetch of %d bytes can return)",
				in.Stream.Name, in.MaxEventBytes, kafkaio.FetchMaxBytes-fetchOverhead, kafkaio.FetchMaxBytes)
		}
		s.byTopic[in.Topic] = in
	}
	s.partials = cfg.Conn.NewWriter(cfg.PartialsTopic)
	s.dlq = cfg.Conn.NewWriter(cfg.DeadLetterTopic)
	s.dlqMaxValue = dlqValueLimit(kafkaio.DefaultMaxMessageBytes)
	s.partialBytes = schema.MaxRecordBytes
	if cfg.RecordBytes > 0 {
		s.partialBytes = cfg.RecordBytes
	}
	return s, nil
}

// fetchOverhead is room for a record's framing within a fetch: a record
// whose value is at most FetchMaxBytes-fetchOverhead always fits.
const fetchOverhead = 64 << 10

// dlqHeadroom is room for a dead letter's key, headers (the detail can be
// long) and batch framing within the dead-letter topic's max.message.bytes.
const dlqHeadroom = 16 << 10

// dlqValueLimit is the largest value a dead letter keeps on a topic whose
// max.message.bytes is maxMessage.
func dlqValueLimit(maxMessage int) int { return max(maxMessage-dlqHeadroom, 0) }

// Run consumes until ctx is done. Partition state lives only as long as the
// partition is assigned; a new owner rebuilds it from the committed offset
// and watermark.
//
// When ctx is done it drains: every partition stops reading, flushes the
// partials and dead letters of the windows it closed, waits for their acks
// and commits its commit point (Partition.CommitPoint: the oldest open
// window's first offset with the watermark before it), so the next owner
// replays exactly the open windows and nothing already emitted (invariant
// 2). Then the member leaves the consumer group, so the partitions are
// reassigned at once rather than after the session timeout, and the writers
// are closed. Run returns when all of this is done.
func (s *Stage) Run(ctx context.Context) error {
	topics := make([]string, 0, len(s.byTopic))
	for t := range s.byTopic {
		topics = append(topics, t)
	}
	// Size the writers to their topics, so that what the brokers accept is
	// not refused client-side, and a dead letter never outgrows its topic.
	if n, err := s.cfg.Conn.FitBatchBytes(ctx, s.dlq); err == nil {
		s.dlqMaxValue = dlqValueLimit(n)
	} else {
		s.cfg.Log.Warn("could not read the dead-letter topic's max.message.bytes; assuming Kafka's default", "err", err, "default", kafkaio.DefaultMaxMessageBytes)
	}
	if _, err := s.cfg.Conn.FitBatchBytes(ctx, s.partials); err != nil {
		s.cfg.Log.Warn("could not read the partials topic's max.message.bytes; assuming Kafka's default", "err", err, "default", kafkaio.DefaultMaxMessageBytes)
	}
	err := kafkaio.RunGroup(ctx, kafkaio.GroupConfig{Conn: s.cfg.Conn, GroupID: s.cfg.GroupID, Topics: topics, Log: s.cfg.Log,
		SessionTimeout: s.cfg.SessionTimeout}, s.handle)
	// RunGroup returns after its partition handlers drained and the member
	// left the group.
	s.cfg.Log.Info("left the consumer group", "group", s.cfg.GroupID)
	if cerr := errors.Join(s.partials.Close(), s.dlq.Close()); cerr != nil {
		// Every write was acknowledged before its offsets were committed,
		// so a close error loses nothing; it is worth a look all the same.
		s.cfg.Log.Warn("closing the partials and dead-letter writers", "err", cerr)
	}
	return err
}

// InFlight describes the partitions this stage still holds, one line each
// with the offset their next owner will replay from. A drain that runs out
// of time logs it as the work it abandons; the replay loses nothing
// (invariant 2), it only repeats work.
func (s *Stage) InFlight() []string {
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	out := make([]string, 0, len(s.active))
	for w := range s.active {
		from := "the start of the partition"
		if off := w.resume.Load(); off >= 0 {
			from = "offset " + strconv.FormatInt(off, 10)
		}
		out = append(out, fmt.Sprintf("accumulate: stream %s, %s[%d]: not drained; its next owner replays from %s",
			w.in.Stream.Name, w.a.Topic, w.a.Partition, from))
	}
	sort.Strings(out)
	return out
}

type fetched struct {
	m   kafka.Message
	err error
}

func (s *Stage) handle(ctx context.Context, a kafkaio.Assignment) error {
	in := s.byTopic[a.Topic]
	log := s.cfg.Log.With("stream", in.Stream.Name, "topic", a.Topic, "partition", a.Partition)
	res, err := DecodeResume(a.Metadata)
	if err != nil {
		log.Warn("ignoring offset metadata", "err", err)
	}
	count, err := retry(ctx, func() (int, error) { return s.cfg.Conn.Partitions(ctx, a.Topic) })
	if err != nil {
		return nil // ctx done
	}
	r, err := s.cfg.Conn.NewPartitionReader(a.Topic, a.Partition, a.Offset)
	if err != nil {
		return err
	}
	defer r.Close()
	log.Info("partition assigned", "offset", a.Offset, "watermark", res.Watermark, "closed", res.Closed)

	w := &partitionWorker{s: s, in: in, a: a, log: log, reader: r,
		part:    NewPartitionResumed(in.Stream, int32(a.Partition), int32(count), res),
		lastMsg: s.cfg.Now(), lastCommit: s.cfg.Now(), backlogEnd: -1}
	n := max(w.part.AssumedWindows(res.Closed), w.part.AssumeUpTo(s.cfg.Now().UnixMilli()))
	if n > 0 {
		// contribution.max_windows' fail-safe (horizon.go).
		log.Warn("resumed mid-horizon: the admissions of the horizon's windows closed before the commit are not replayed, so every unit is taken to have used them (at most max_windows minus these windows more in this horizon)",
			"windows_assumed", n, "max_windows", in.Stream.MaxWindows, "horizon", in.Stream.Horizon)
		s.cfg.Metrics.WindowsAssumed.WithLabelValues(in.Stream.Name).Add(float64(n))
	}
	w.resume.Store(a.Offset)
	s.activeMu.Lock()
	s.active[w] = struct{}{}
	s.activeMu.Unlock()
	defer func() {
		s.activeMu.Lock()
		delete(s.active, w)
		s.activeMu.Unlock()
	}()
	ch := make(chan fetched, 512)
	go func() {
		defer close(ch)
		for {
			m, err := r.FetchMessage(ctx)
			if err == nil {
				w.inFlight.Add(1)
			}
			select {
			case ch <- fetched{m, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lagLabels := []string{a.Topic, strconv.Itoa(a.Partition)}
	// The partition may move to another instance: drop this instance's
	// lag series, or it would keep reporting its last value beside the
	// new owner's.
	defer s.cfg.Metrics.ConsumerLag.DeleteLabelValues(lagLabels...)
	defer s.cfg.Metrics.WindowsOpen.WithLabelValues(in.Stream.Name).Sub(float64(w.part.OpenWindows()))
	// next handles one fetched record (done: the handler returns err).
	next := func(f fetched, ok bool) (done bool, err error) {
		if !ok || f.err != nil {
			if ctx.Err() != nil {
				w.shutdown()
				return true, nil
			}
			if f.err != nil {
				return true, fmt.Errorf("read %s[%d]: %w", a.Topic, a.Partition, f.err)
			}
			return true, nil
		}
		rerr := w.record(ctx, f.m)
		w.inFlight.Add(-1)
		if rerr != nil {
			return true, w.stop(ctx, rerr)
		}
		if len(w.pendingPartials)+len(w.pendingDLQ) >= 1000 {
			if err := w.flush(ctx); err != nil {
				return true, w.stop(ctx, err)
			}
		}
		return false, nil
	}
	for {
		select {
		case f, ok := <-ch:
			if done, err := next(f, ok); done {
				return err
			}
		case <-tick.C:
			// First the records fetched already (at most the channel's
			// capacity, so a flood cannot starve the tick): after a stall
			// of this loop (a slow flush or commit) the clock has moved on
			// without them, and the tick's Pace must see the watermark
			// they move, or it would close their windows before reading
			// them.
			for n := len(ch); n > 0; n-- {
				f, ok := <-ch
				if done, err := next(f, ok); done {
					return err
				}
			}
			s.cfg.Metrics.ConsumerLag.WithLabelValues(lagLabels...).Set(float64(r.Lag()))
			if err := w.tick(ctx); err != nil {
				return w.stop(ctx, err)
			}
		case <-ctx.Done():
			w.shutdown()
			return nil
		}
	}
}

// partitionWorker is the loop state of one assigned partition.
type partitionWorker struct {
	s          *Stage
	in         *Input
	a          kafkaio.Assignment
	log        *slog.Logger
	part       *Partition
	lastMsg    time.Time
	lastCommit time.Time
	// caughtUp is true when the last record read was the partition's last
	// one. Only a caught-up partition can be idle: a consumer replaying
	// after a restart or rebalance is behind, not quiet, and advancing its
	// watermark by the wall clock would close windows before their
	// events are replayed.
	caughtUp bool
	// backlogEnd is the partition's end offset when this worker first
	// fetched from it (the first record's high-water mark; -1 before):
	// the backlog it found at its assignment, a replay after a restart or
	// rebalance. paced is set once that backlog has been read (or the
	// partition was caught up): from then on every tick runs the
	// schedule's backstop, Partition.Pace, busy or not, caught up or not.
	// A flood cannot keep a partition from being paced: it only adds
	// records after backlogEnd.
	backlogEnd int64
	paced      bool
	reader     *kafka.Reader
	// inFlight counts records fetched but not yet processed; a partition
	// with records in flight is not idle, whatever the broker says.
	inFlight    atomic.Int64
	committed   int64
	committedMD string
	// resume is the offset the partition's next owner starts from: the
	// assignment's, then the last one committed. InFlight reads it from
	// another goroutine.
	resume          atomic.Int64
	pendingPartials []kafka.Message
	// pendingCuts are indexes into pendingPartials where the chunks of a
	// partial in chunks start and end: flush writes each partial's chunks
	// in a write of their own (see flush).
	pendingCuts  []int
	pendingDLQ   []kafka.Message
	lateSinceLog int
	lastLateLog  time.Time
	// scheduleSinceLog counts the events rejected as future or
	// before_start since the last warning about them, at lastScheduleLog.
	scheduleSinceLog map[Reason]int
	lastScheduleLog  time.Time
	// followLogged: the partition said once that, with no event yet, its
	// windows follow the wall clock.
	followLogged bool
	// stalledSinceLog counts the windows Pace closed since the last
	// warning about them, at lastStallLog.
	stalledSinceLog int
	lastStallLog    time.Time
}

// warnSchedule counts an event rejected by the release schedule (future or
// before_start) and warns, at most every 10 seconds, with the counts and
// the latest detail: a flood means a producer's clock or event times are
// wrong, or a backfill that needs streams[].start.
func (w *partitionWorker) warnSchedule(rej *Rejection) {
	if w.scheduleSinceLog == nil {
		w.scheduleSinceLog = map[Reason]int{}
	}
	w.scheduleSinceLog[rej.Reason]++
	now := w.s.cfg.Now()
	if now.Sub(w.lastScheduleLog) < 10*time.Second {
		return
	}
	w.log.Warn("events outside the release schedule dead-lettered: no event time can add windows before the stream's start or close windows ahead of the wall clock",
		"future", w.scheduleSinceLog[ReasonFuture], "before_start", w.scheduleSinceLog[ReasonBeforeStart], "latest", rej.Error())
	clear(w.scheduleSinceLog)
	w.lastScheduleLog = now
}

func (w *partitionWorker) record(ctx context.Context, m kafka.Message) error {
	s, name := w.s, w.in.Stream.Name
	w.lastMsg = s.cfg.Now()
	w.caughtUp = m.HighWaterMark > 0 && m.Offset+1 >= m.HighWaterMark
	if w.backlogEnd < 0 && m.HighWaterMark > 0 {
		w.backlogEnd = m.HighWaterMark
	}
	if w.caughtUp || (w.backlogEnd >= 0 && m.Offset+1 >= w.backlogEnd) {
		w.paced = true
	}
	s.cfg.Metrics.Consumed.WithLabelValues(name).Inc()
	openBefore := w.part.OpenWindows()
	defer func() {
		s.cfg.Metrics.WindowsOpen.WithLabelValues(name).Add(float64(w.part.OpenWindows() - openBefore))
	}()
	ev, rej := w.decode(m)
	if rej != nil {
		w.part.Skip(m.Offset)
		s.cfg.Metrics.Rejected.WithLabelValues(name, string(rej.Reason)).Inc()
		if rej.Reason == ReasonFuture || rej.Reason == ReasonBeforeStart {
			w.warnSchedule(rej)
		}
		w.deadLetter(m, rej)
		return nil
	}
	outcome, closed, err := w.part.Add(ev)
	if err != nil {
		// Only an int64 overflow of a window's exact sum (more than
		// aggregate.MaxSumEvents kept events) gets here. Stopping is the
		// only private answer: see Partition.Add.
		w.log.Error("cannot accumulate the window exactly; stopping without releasing it", "offset", m.Offset, "err", err)
		return fmt.Errorf("accumulate %s[%d]@%d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	switch outcome {
	case Late:
		s.cfg.Metrics.Late.WithLabelValues(name).Inc()
		w.lateSinceLog++
		if now := s.cfg.Now(); now.Sub(w.lastLateLog) >= 10*time.Second {
			// Late events are normal in small numbers; a flood usually means
			// past-dated data produced after the partition's windows closed
			// (e.g. a backfill into a running pipeline whose idle partitions
			// followed the wall clock).
			w.log.Warn("late events dead-lettered: their windows already closed on this partition",
				"count", w.lateSinceLog, "event_time", time.UnixMilli(ev.Time).UTC().Format(time.RFC3339),
				"watermark", time.UnixMilli(w.part.Watermark()).UTC().Format(time.RFC3339))
			w.lateSinceLog, w.lastLateLog = 0, now
		}
		w.deadLetter(m, w.part.LateRejection(ev))
	case Dropped:
		s.cfg.Metrics.Dropped.WithLabelValues(name).Inc()
	}
	return w.emit(closed)
}

func (w *partitionWorker) decode(m kafka.Message) (Event, *Rejection) {
	r := Record{Value: m.Value, Offset: m.Offset, Time: m.Time, Partition: w.a.Partition, Partitions: int(w.part.count)}
	return w.in.Admit(r, w.s.cfg.Now())
}

// deadLetter queues the dead letter of a rejected record. It keeps the
// record's key and value, except that a value over the stream's
// MaxEventBytes or too long for the dead-letter topic is left out (a
// header gives its length): writing it would fail with Message Size Too
// Large, and the stage would stop at the same record after every restart
// (invariant 7: bad input never stops the stream).
func (w *partitionWorker) deadLetter(m kafka.Message, rej *Rejection) {
	hs := []kafka.Header{
		{Key: "dpstream.reason", Value: []byte(rej.Reason)},
		{Key: "dpstream.detail", Value: []byte(rej.Detail)},
		{Key: "dpstream.stream", Value: []byte(w.in.Stream.Name)},
		{Key: "dpstream.topic", Value: []byte(m.Topic)},
		{Key: "dpstream.partition", Value: []byte(strconv.Itoa(m.Partition))},
		{Key: "dpstream.offset", Value: []byte(strconv.FormatInt(m.Offset, 10))},
	}
	value, key := m.Value, m.Key
	if omitValue(rej, len(key)+len(value), w.s.dlqMaxValue) {
		hs = append(hs, kafka.Header{Key: HeaderOriginalBytes, Value: []byte(strconv.Itoa(len(value)))})
		value = nil
		if len(key) > w.s.dlqMaxValue {
			key = nil // a key that alone is too large: the headers locate the record
		}
	}
	w.pendingDLQ = append(w.pendingDLQ, kafka.Message{Key: key, Value: value, Headers: hs})
}

// HeaderOriginalBytes is the dead-letter header giving the length of a
// value the dead letter leaves out (see partitionWorker.deadLetter); it
// is absent when the dead letter holds the value.
const HeaderOriginalBytes = "dpstream.original_bytes"

// omitValue reports whether a dead letter leaves out the record's value:
// always for ReasonTooLarge, otherwise when key and value together exceed
// the dead-letter topic's limit.
func omitValue(rej *Rejection, size, limit int) bool {
	return rej.Reason == ReasonTooLarge || size > limit
}

// emit queues the partials of closed windows, keyed by stream. A partial
// larger than a record is queued as its chunks (schema.SplitPartial), in
// order, which the release stage joins once all have arrived; splitting
// is deterministic, so a window replayed after a crash gives the same
// chunks.
func (w *partitionWorker) emit(closed []schema.Partial) error {
	for _, p := range closed {
		b, err := schema.EncodePartial(p)
		if err != nil {
			return fmt.Errorf("encode partial: %w", err)
		}
		if limit := w.s.partialBytes; limit > 0 && len(b) > limit {
			chunks, err := schema.SplitPartial(p, limit)
			if err != nil {
				return fmt.Errorf("window %d: its partial of %d bytes does not fit in Kafka records: %w", p.WindowStart, len(b), err)
			}
			w.pendingCuts = append(w.pendingCuts, len(w.pendingPartials))
			for _, c := range chunks {
				cb, err := schema.EncodePartial(c)
				if err != nil {
					return fmt.Errorf("encode chunk %d of a partial: %w", c.Chunk, err)
				}
				w.pendingPartials = append(w.pendingPartials, kafka.Message{Key: []byte(p.Stream), Value: cb})
			}
			w.pendingCuts = append(w.pendingCuts, len(w.pendingPartials))
		} else {
			w.pendingPartials = append(w.pendingPartials, kafka.Message{Key: []byte(p.Stream), Value: b})
		}
		w.s.cfg.Metrics.WindowsClosed.WithLabelValues(p.Stream).Inc()
		for _, rs := range p.Stats {
			if rs.Clamped > 0 {
				w.s.cfg.Metrics.Clamped.WithLabelValues(p.Stream, rs.Release).Add(float64(rs.Clamped))
			}
		}
	}
	return nil
}

func (w *partitionWorker) tick(ctx context.Context) error {
	now := w.s.cfg.Now()
	openBefore := w.part.OpenWindows()
	if now.Sub(w.lastMsg) >= w.in.Stream.IdleTimeout && !w.caughtUp && w.inFlight.Load() == 0 {
		// No record for a while but not known to be at the end (nothing read
		// since assignment): ask the broker.
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		lag, err := w.reader.ReadLag(lctx)
		cancel()
		w.caughtUp = err == nil && lag <= 0
	}
	if err := w.emit(w.due(now)); err != nil {
		return err
	}
	w.s.cfg.Metrics.WindowsOpen.WithLabelValues(w.in.Stream.Name).Add(float64(w.part.OpenWindows() - openBefore))
	if err := w.flush(ctx); err != nil {
		return err
	}
	if now.Sub(w.lastCommit) >= w.s.cfg.CommitInterval {
		return w.commit(ctx)
	}
	return nil
}

// due returns the partials of the windows the wall clock closes at now,
// by two rules. Idle: a partition that is caught up, has nothing in
// flight and has had no record for the idle timeout is quiet, and event
// time moves on with the wall clock. Pace, the schedule's backstop: once
// the partition has read the backlog it found at its assignment, a
// watermark that has fallen more than the idle timeout behind its best
// pace is advanced by the wall clock, whatever records keep arriving, so
// that no input can hold the partition's windows, and so every release of
// the stream, back (Partition.Pace gives the bound). A replay of the
// backlog is neither: it is behind, not quiet or stalled.
func (w *partitionWorker) due(now time.Time) []schema.Partial {
	var out []schema.Partial
	idleFor := now.Sub(w.lastMsg)
	if w.caughtUp {
		w.paced = true
	}
	if w.caughtUp && w.inFlight.Load() == 0 {
		if !w.followLogged && w.part.MaxEventTime() == NoWatermark && idleFor >= w.in.Stream.IdleTimeout {
			w.followLogged = true
			w.log.Info("partition has no events yet; it reports its windows, empty, as the wall clock passes their end plus grace (past-dated events produced from now on will be late)",
				"watermark", time.UnixMilli(w.part.Watermark()).UTC().Format(time.RFC3339))
		}
		out = w.part.Idle(now, idleFor)
	}
	if !w.paced {
		return out
	}
	stalled := w.part.Pace(now)
	if len(stalled) > 0 {
		w.stalledSinceLog += len(stalled)
		if now.Sub(w.lastStallLog) >= 10*time.Second {
			w.log.Warn("windows closed by the wall clock: the partition's watermark fell more than idle_timeout behind its best pace (records that do not move it, such as rejected or late ones or record timestamps in the past, or more input than the stage reads in time); events read later for these windows are late",
				"windows", w.stalledSinceLog, "watermark", time.UnixMilli(w.part.Watermark()).UTC().Format(time.RFC3339Nano))
			w.stalledSinceLog, w.lastStallLog = 0, now
		}
	}
	return append(out, stalled...)
}

// flush writes pending partials and dead letters and waits for their acks.
// The chunks of a partial in chunks are written by a write of their own,
// after what precedes them and before what follows them is sent: if a
// chunk fails, flush fails before anything of a later window reaches the
// partials topic, and the replay after the failure writes the window's
// chunks again, so the release stage never sees a partition move past a
// window whose chunks are incomplete (Merger). The offsets that produced
// them are committed only after flush succeeded (commit).
func (w *partitionWorker) flush(ctx context.Context) error {
	if len(w.pendingDLQ) > 0 {
		if err := w.s.dlq.WriteMessages(ctx, w.pendingDLQ...); err != nil {
			return fmt.Errorf("write dead letters: %w", err)
		}
		w.pendingDLQ = w.pendingDLQ[:0]
	}
	if len(w.pendingPartials) > 0 {
		from := 0
		for _, cut := range append(w.pendingCuts, len(w.pendingPartials)) {
			if cut <= from {
				continue
			}
			if err := w.s.writePartials(ctx, w.pendingPartials[from:cut]...); err != nil {
				return fmt.Errorf("write partials: %w", err)
			}
			from = cut
		}
		w.pendingPartials, w.pendingCuts = w.pendingPartials[:0], w.pendingCuts[:0]
		w.s.failpoint(FailpointFlushed)
	}
	return nil
}

// writePartials writes msgs to the partials topic and waits for their acks.
func (s *Stage) writePartials(ctx context.Context, msgs ...kafka.Message) error {
	if s.writePartialsHook != nil {
		return s.writePartialsHook(ctx, msgs...)
	}
	return s.partials.WriteMessages(ctx, msgs...)
}

// commit commits the restart point. It runs only after flush, so every
// partial of a closed window is acknowledged before the offsets that
// produced it are committed (invariant 2).
func (w *partitionWorker) commit(ctx context.Context) error {
	w.lastCommit = w.s.cfg.Now()
	off, md, ok := w.part.CommitPoint()
	if !ok || (off == w.committed && md == w.committedMD) {
		return nil
	}
	w.s.failpoint(FailpointCommit)
	if err := w.a.Commit(ctx, off, md); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		// A failed commit only means more replay after a restart.
		w.log.Warn("offset commit failed", "err", err)
		return nil
	}
	w.s.failpoint(FailpointCommitted)
	w.committed, w.committedMD = off, md
	w.resume.Store(off)
	return nil
}

// shutdown flushes and commits what it can when the partition is revoked
// or the stage stops, so the next owner replays less. Records fetched but
// not processed yet are left to the next owner: it reads them from the
// commit point.
func (w *partitionWorker) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.flush(ctx); err != nil {
		w.log.Warn("flush on shutdown failed; the next owner will replay", "err", err)
		return
	}
	_ = w.commit(ctx)
	w.log.Info("partition drained: partials acknowledged, commit point committed", "committed_offset", w.resume.Load(), "open_windows", w.part.OpenWindows())
}

// stop is shutdown for a failing partition: if the context was cancelled the
// error is only the cancellation.
func (w *partitionWorker) stop(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		w.shutdown()
		return nil
	}
	return err
}

// failpoint calls Config.Failpoint, if set.
func (s *Stage) failpoint(step string) {
	if s.cfg.Failpoint != nil {
		s.cfg.Failpoint(step)
	}
}

// retry calls fn with backoff until it succeeds or ctx is done.
func retry[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	backoff := 100 * time.Millisecond
	for {
		v, err := fn()
		if err == nil {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
