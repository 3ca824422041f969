package release

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pdpstore"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Status values of a release.
const (
	StatusOK              = kind.StatusOK
	StatusBudgetExhausted = kind.StatusBudgetExhausted
)

// Config configures the release stage.
type Config struct {
	// Conn is the Kafka connection (brokers, TLS, SASL) of every read,
	// write and group request; required.
	Conn            *kafkaio.Connection
	GroupID         string
	PartialsTopic   string
	ReleasesTopic   string
	LedgerTopic     string
	AccountantTopic string
	// PDPTopic is the RESTRICTED topic of per-instance DP records (unit
	// accounts and window summaries); "" disables per-instance DP.
	PDPTopic string
	// PDPStoreDir is the directory of the on-disk store of the per-unit
	// accounts (pdpstore.Open), a cache of the pdp topic that keeps the
	// stage's memory bounded whatever the number of units. RESTRICTED like
	// the pdp topic. "" keeps the accounts in memory (tests).
	PDPStoreDir string
	Streams     []plan.Stream
	// Noise draws the mechanisms' noise (default: crypto/rand).
	Noise   noise.Sampler
	Metrics *metrics.Metrics
	Log     *slog.Logger
	Now     func() time.Time
	// OnRelease, if set, is called after each release is published (the
	// demo prints them).
	OnRelease func(schema.Release)
	// SessionTimeout is the consumer group's session timeout (default 10s):
	// how long a crashed member holds its partitions.
	SessionTimeout time.Duration
	// Starts are the streams' schedule starts (unix ms, from
	// ledger.StreamStarts): windows starting before a stream's start are
	// never released (see Merger). A stream without one has no start.
	Starts map[string]int64
	// Failpoint, if set, is called at each step of the commit protocol
	// (the Failpoint* constants) with the record the step concerns; the
	// crash tests (internal/e2e/crash_test.go) kill the process there. It
	// must not keep or modify rec. Nil in production.
	Failpoint func(step string, rec kafka.Message)
	// RequestsTopic and ResponsesTopic are the query path of prediction
	// releases (kind.Answerer): queries are read from partition 0 of the
	// first by every shard, each answering those of its own streams, and
	// answered on the second. "" when no release answers queries.
	RequestsTopic, ResponsesTopic string
	// RecordBytes, if set, is the largest record written before a partial
	// (accumulate) or a release (release) is split into chunks; default
	// schema.MaxRecordBytes (tests lower it).
	RecordBytes int
	// CheckpointInterval and CheckpointCharges are how often each owned
	// ledger partition is checkpointed and trimmed: after that much time
	// with records since the last checkpoint, or that many charges,
	// whichever comes first (defaults DefaultCheckpointInterval and
	// DefaultCheckpointCharges). A start or takeover reads the latest
	// checkpoint and the ledger after it, so these bound its work. A
	// negative CheckpointInterval writes none (tests that check every
	// charge the ledger ever held; tools).
	CheckpointInterval time.Duration
	CheckpointCharges  int
}

// Checkpoint defaults (Config.CheckpointInterval, CheckpointCharges).
const (
	DefaultCheckpointInterval = 10 * time.Second
	DefaultCheckpointCharges  = 20000
)

// Steps of the release stage's commit protocol, as passed to
// Config.Failpoint. In order, for each group of windows committed together
// (group commit): the windows' pdp records are written, then every
// release's ledger records are appended in one write, read back in one
// read, published in one write, and the budget states follow; the partials
// offset is committed after the group. Each step is passed once per
// release it concerns, after the step is done for the whole group (before
// it for FailpointBeforeLedger).
const (
	// FailpointPDPWritten: the window's pdp records are acknowledged, nothing is charged.
	FailpointPDPWritten = "release/pdp-written"
	// FailpointBeforeLedger: a release is decided, its ledger record not yet
	// sent. rec is the release as it will be published (key: release id;
	// chunk 0 of a release in chunks).
	FailpointBeforeLedger = "release/before-ledger"
	// FailpointChunksAppended: a release in chunks has its chunk records
	// 1..n-1 acknowledged by the ledger, its charge not yet sent (nothing
	// is charged). rec as above. Releases in one record skip this step.
	FailpointChunksAppended = "release/chunks-appended"
	// FailpointLedgerAppended: the ledger record is acknowledged (the
	// commit point), not yet read back. rec as above.
	FailpointLedgerAppended = "release/ledger-appended"
	// FailpointConfirmed: the ledger record was read back with no newer
	// owner's marker before it, the release is not yet published. rec as
	// above.
	FailpointConfirmed = "release/confirmed"
	// FailpointPublished: the release (every chunk of a release in chunks)
	// is acknowledged on the releases topic.
	FailpointPublished = "release/published"
	// FailpointCommit: the partials offset commit is about to be sent.
	FailpointCommit = "release/commit"

	// The steps of an answer to a query, as for a release: rec is the
	// response as it will be published (key: request id).
	//
	// FailpointAnswerBeforeLedger: the answer is decided (its noise
	// drawn), its ledger record not yet sent: nothing is charged.
	FailpointAnswerBeforeLedger = "predict/before-ledger"
	// FailpointAnswerLedgerAppended: the answer's ledger record is
	// acknowledged (the commit point), not yet read back.
	FailpointAnswerLedgerAppended = "predict/ledger-appended"
	// FailpointAnswerPublished: the response is acknowledged on the
	// responses topic.
	FailpointAnswerPublished = "predict/published"

	// The steps of a checkpoint of a ledger partition (rec: the
	// checkpoint record, its Partition the ledger partition).
	//
	// FailpointCheckpointBefore: the checkpoint is composed, not yet
	// appended.
	FailpointCheckpointBefore = "checkpoint/before"
	// FailpointCheckpointAppended: the checkpoint and its parts are
	// acknowledged, not yet read back.
	FailpointCheckpointAppended = "checkpoint/appended"
	// FailpointCheckpointConfirmed: the checkpoint was read back usable;
	// the records before it are not yet deleted.
	FailpointCheckpointConfirmed = "checkpoint/confirmed"
	// FailpointTrimmed: the records before the checkpoint are deleted.
	FailpointTrimmed = "checkpoint/trimmed"
)

// Stage is the release stage: a shell around the commit protocol. The
// streams are sharded by the partitions of the partials topic (the
// accumulate stage keys partials by stream); the ledger has as many
// partitions, and partition p of both belongs to the same streams
// (ledger.PartitionOf). The consumer group hands each partials partition
// to one release instance, which owns the partition's streams: it takes
// over the ledger partition (an epoch marker), rebuilds its Releaser from
// the partition's latest checkpoint and the records after it, and makes
// every decision of the Releaser durable ledger first (package
// internal/ledger). Each owned partition is a shard with its own lock,
// Releaser and ledger position; shards share the writers of the other
// topics and the per-instance DP store.
type Stage struct {
	cfg     Config
	streams map[string]*plan.Stream

	releases, accountantW, pdpW, responses *kafka.Writer

	// pdpMu serialises the per-instance DP store between shards: pdp
	// holds every unit's cumulative per-instance account and the summary
	// keys already written (so a window replayed after a crash is not
	// summarized again), on disk when PDPStoreDir is set, caught up with
	// the pdp topic by each takeover. pdpUnread counts the records this
	// stage wrote to the topic since it last caught up.
	pdpMu     sync.Mutex
	pdp       *pdpstore.Store
	pdpUnread int

	// owner names this process in its epoch markers, for operators.
	owner string

	// mu guards partitions and shards: the ledger's (and partials')
	// partition count, learned at Run (or Recover), and the shards this
	// instance holds, by partition. assigned are the partitions the
	// consumer group's latest generation gave this instance; joined is
	// set once it has had one.
	mu         sync.Mutex
	partitions int
	shards     map[int]*shard
	assigned   map[int]bool
	joined     bool

	// flight is what InFlight reports: the windows being released and
	// the partitions held. It has its own lock because a shard's lock is
	// held for a whole group of windows, which is exactly when InFlight is
	// asked.
	flightMu  sync.Mutex
	releasing map[int]string // partition -> "stream/window start" being released
	held      map[int]int64  // partials partition -> offset its next owner replays from
}

// New checks the configuration and creates the stage's writers.
func New(cfg Config) (*Stage, error) {
	if cfg.Conn == nil || len(cfg.Conn.Brokers) == 0 || cfg.GroupID == "" || cfg.PartialsTopic == "" || cfg.ReleasesTopic == "" || cfg.LedgerTopic == "" || cfg.AccountantTopic == "" {
		return nil, errors.New("release: a connection with brokers, the group, and the partials, releases, ledger and accountant topics are required")
	}
	if cfg.Noise == nil {
		cfg.Noise = noise.New(noise.CryptoSource())
	}
	// Shards draw noise concurrently; a sampler need not be safe for
	// that (a seeded one is not).
	cfg.Noise = &lockedSampler{s: cfg.Noise}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CheckpointInterval == 0 {
		cfg.CheckpointInterval = DefaultCheckpointInterval
	}
	if cfg.CheckpointCharges <= 0 {
		cfg.CheckpointCharges = DefaultCheckpointCharges
	}
	s := &Stage{cfg: cfg, streams: map[string]*plan.Stream{}, shards: map[int]*shard{}, assigned: map[int]bool{},
		releasing: map[int]string{}, held: map[int]int64{}}
	for i := range cfg.Streams {
		s.streams[cfg.Streams[i].Config.Name] = &cfg.Streams[i]
	}
	s.releases = cfg.Conn.NewWriter(cfg.ReleasesTopic)
	s.accountantW = cfg.Conn.NewWriter(cfg.AccountantTopic)
	if NewReleaser(cfg.Streams, cfg.Noise).HasPredictors() {
		if cfg.RequestsTopic == "" || cfg.ResponsesTopic == "" {
			return nil, errors.New("release: a prediction release needs the requests and responses topics")
		}
		s.responses = cfg.Conn.NewWriter(cfg.ResponsesTopic)
	}
	s.pdp = pdpstore.NewMemory()
	host, _ := os.Hostname()
	s.owner = fmt.Sprintf("%s pid %d", host, os.Getpid())
	if cfg.PDPTopic != "" {
		if cfg.PDPStoreDir != "" && slices.ContainsFunc(cfg.Streams, func(ps plan.Stream) bool { return ps.Config.PDP }) {
			st, err := pdpstore.Open(cfg.PDPStoreDir, cfg.Log)
			if err != nil {
				return nil, fmt.Errorf("release: per-instance DP store (pdp_store): %w", err)
			}
			s.pdp = st
			cfg.Log.Info("per-instance DP accounts kept on disk", "path", st.Path())
		}
		s.pdpW = cfg.Conn.NewWriter(cfg.PDPTopic)
	}
	return s, nil
}

// lockedSampler serialises a noise.Sampler between shards.
type lockedSampler struct {
	mu sync.Mutex
	s  noise.Sampler
}

func (l *lockedSampler) DiscreteLaplace(scale float64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.DiscreteLaplace(scale)
}

func (l *lockedSampler) DiscreteGaussian(sigma float64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.DiscreteGaussian(sigma)
}

// learnPartitions reads the partials and ledger topics' partition counts:
// they must agree, since partition p of both belongs to the same streams.
func (s *Stage) learnPartitions(ctx context.Context) (int, error) {
	s.mu.Lock()
	n := s.partitions
	s.mu.Unlock()
	if n > 0 {
		return n, nil
	}
	parts, err := s.cfg.Conn.Partitions(ctx, s.cfg.PartialsTopic)
	if err != nil {
		return 0, fmt.Errorf("partials %s: %w", s.cfg.PartialsTopic, err)
	}
	led, err := s.cfg.Conn.Partitions(ctx, s.cfg.LedgerTopic)
	if err != nil {
		return 0, fmt.Errorf("ledger %s: %w", s.cfg.LedgerTopic, err)
	}
	if parts != led {
		return 0, fmt.Errorf("the partials topic %s has %d partitions and the ledger %s %d: they must have as many (partition p of both holds the same streams); "+
			"create the ledger with %d partitions, or point topics.partials at a topic of %d", s.cfg.PartialsTopic, parts, s.cfg.LedgerTopic, led, parts, led)
	}
	s.mu.Lock()
	s.partitions = parts
	s.mu.Unlock()
	return parts, nil
}

// Run consumes partials until ctx is done.
//
// When ctx is done it drains: it reads no further partial, but a group of
// windows whose release has started finishes (pdp records, ledger
// appends, publishes, budget states), so a clean stop leaves nothing for a
// takeover to republish. It then commits the partials offsets the mergers
// need to be rebuilt (Merger.CommitOffset), leaves the consumer group so a
// standby takes over at once, and closes its writers. Run returns when all
// of this is done.
func (s *Stage) Run(ctx context.Context) error {
	// Size the writers to their topics, so that a large ledger record (it
	// carries the whole release payload) that the topic accepts is not
	// refused client-side.
	for _, w := range []*kafka.Writer{s.releases, s.accountantW, s.pdpW, s.responses} {
		if w == nil {
			continue
		}
		if _, err := s.cfg.Conn.FitBatchBytes(ctx, w); err != nil {
			s.cfg.Log.Warn("could not read a topic's max.message.bytes; assuming Kafka's default", "topic", w.Topic, "err", err, "default", kafkaio.DefaultMaxMessageBytes)
		}
	}
	if _, err := s.learnPartitions(ctx); err != nil {
		return err
	}
	err := kafkaio.RunGroup(ctx, kafkaio.GroupConfig{Conn: s.cfg.Conn, GroupID: s.cfg.GroupID, Topics: []string{s.cfg.PartialsTopic}, Log: s.cfg.Log,
		SessionTimeout: s.cfg.SessionTimeout, OnGeneration: s.generation}, s.handle)
	// RunGroup returns after its partition handlers drained and the member
	// left the group.
	s.cfg.Log.Info("left the consumer group", "group", s.cfg.GroupID)
	closeErr := errors.Join(s.releases.Close(), s.accountantW.Close())
	if s.pdpW != nil {
		closeErr = errors.Join(closeErr, s.pdpW.Close())
	}
	if s.responses != nil {
		closeErr = errors.Join(closeErr, s.responses.Close())
	}
	closeErr = errors.Join(closeErr, s.pdp.Close())
	if closeErr != nil {
		// Every write was acknowledged before it counted, so a close error
		// loses nothing; it is worth a look all the same.
		s.cfg.Log.Warn("closing the release stage's writers", "err", closeErr)
	}
	return err
}

// generation records the partials partitions a consumer-group generation
// assigned this instance (kafkaio.GroupConfig.OnGeneration), for Ready.
func (s *Stage) generation(assigned map[string][]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.joined = true
	clear(s.assigned)
	for _, p := range assigned[s.cfg.PartialsTopic] {
		s.assigned[p] = true
	}
}

// Ready reports whether this instance releases every stream it owns: it
// has joined the consumer group, and every partials partition the group
// assigned it is held by a shard that took over its ledger partition and
// rebuilt its state (an instance assigned nothing, a standby, is ready).
// The error says what it waits for. /readyz serves it.
func (s *Stage) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.joined {
		return errors.New("release: not yet a member of the consumer group " + s.cfg.GroupID)
	}
	var waiting []string
	for p := range s.assigned {
		sh := s.shards[p]
		if sh == nil || !sh.ready.Load() {
			waiting = append(waiting, strconv.Itoa(p))
		}
	}
	if len(waiting) > 0 {
		sort.Strings(waiting)
		return fmt.Errorf("release: rebuilding the streams of partitions %v of %s", waiting, s.cfg.PartialsTopic)
	}
	return nil
}

// InFlight describes the work this stage has not finished: the windows
// being released, if any, and each partials partition still held with the
// offset its next owner replays from. A drain that runs out of time logs it
// as the work it abandons. Abandoning it is a crash as far as the topics go,
// and invariant 1 covers it: the next owner's takeover republishes verbatim
// what reached the ledger and decides the rest then.
func (s *Stage) InFlight() []string {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	var out []string
	ps := make([]int, 0, len(s.releasing))
	for p := range s.releasing {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	for _, p := range ps {
		out = append(out, fmt.Sprintf("release: window %s was being released; what reached the ledger is republished verbatim at the next start, the rest is decided then", s.releasing[p]))
	}
	parts := make([]int, 0, len(s.held))
	for p := range s.held {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	for _, p := range parts {
		from := "the start of the partition"
		if off := s.held[p]; off >= 0 {
			from = "offset " + strconv.FormatInt(off, 10)
		}
		out = append(out, fmt.Sprintf("release: %s[%d]: not drained; its next owner replays from %s", s.cfg.PartialsTopic, p, from))
	}
	return out
}

// hold records that partition is handled and where its next owner would
// resume; unhold forgets it.
func (s *Stage) hold(partition int, resume int64) {
	s.flightMu.Lock()
	s.held[partition] = resume
	s.flightMu.Unlock()
}

func (s *Stage) unhold(partition int) {
	s.flightMu.Lock()
	delete(s.held, partition)
	s.flightMu.Unlock()
}

// setReleasing records the window a partition's shard is releasing (""
// when none).
func (s *Stage) setReleasing(partition int, w string) {
	s.flightMu.Lock()
	if w == "" {
		delete(s.releasing, partition)
	} else {
		s.releasing[partition] = w
	}
	s.flightMu.Unlock()
}

// ErrFenced is wrapped by the error of a shard that found another release
// instance's epoch marker in its ledger partition after its own: that
// instance owns the partition's streams now, and this one must not publish
// (DESIGN invariant 8). Its handler waits for the consumer group's next
// generation.
var ErrFenced = errors.New("fenced: another release instance took ownership of the release stage")

// Recover takes ownership of every partition's streams without a
// consumer-group assignment (tests, tools): see shard.takeOver.
func (s *Stage) Recover(ctx context.Context) error {
	n, err := s.learnPartitions(ctx)
	if err != nil {
		return err
	}
	for p := range n {
		if err := s.shard(p).takeOver(ctx); err != nil {
			return err
		}
	}
	return nil
}

// shard returns the shard of a partition, creating it (not owning
// anything yet) on first use.
func (s *Stage) shard(p int) *shard {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh := s.shards[p]; sh != nil {
		return sh
	}
	n := max(s.partitions, 1)
	var streams []plan.Stream
	for _, ps := range s.cfg.Streams {
		if ledger.PartitionOf(ps.Config.Name, n) == p {
			streams = append(streams, ps)
		}
	}
	sh := newShard(s, p, n, streams)
	s.shards[p] = sh
	return sh
}

// dropShard forgets a partition's shard once its handler is done with it.
func (s *Stage) dropShard(p int) {
	s.mu.Lock()
	sh := s.shards[p]
	delete(s.shards, p)
	s.mu.Unlock()
	if sh != nil {
		sh.close()
	}
}

func (s *Stage) handle(ctx context.Context, a kafkaio.Assignment) error {
	log := s.cfg.Log.With("topic", a.Topic, "partition", a.Partition)
	s.hold(a.Partition, a.Offset)
	defer s.unhold(a.Partition)
	sh := s.shard(a.Partition)
	defer s.dropShard(a.Partition)
	from := a.Offset
	for {
		// Another instance may have owned these streams until now: take
		// ownership (an epoch marker in the ledger partition) and rebuild
		// before releasing anything. The retries reuse the epoch.
		epoch, err := newEpoch()
		if err != nil {
			return err
		}
		_, err = retry(ctx, func() (struct{}, error) { return struct{}{}, sh.takeOverAs(ctx, epoch) }, log)
		if err == nil {
			var resume int64
			resume, err = sh.consume(ctx, a, from, log)
			from = resume
		}
		switch {
		case err == nil || ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrFenced):
			if sh.fenced(ctx, log, err) {
				continue // still the group's owner of the partials: take over again
			}
			return nil
		default:
			return err
		}
	}
}

// newEpoch returns a random epoch id (128 bits from crypto/rand).
func newEpoch() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("epoch id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ChunkHeader, on a record of the releases topic, says which chunk of its
// release the record is, as "<chunk>/<chunks>" (e.g. "0/3"); records of
// releases in one record do not have it. The record's value says the same
// (Release.Chunk, Release.Chunks); the header lets the release stage check
// which chunks are published without decoding them.
const ChunkHeader = "dpstream-chunk"

// publication returns the releases-topic record of chunk i of n of release
// id (n 1: a release in one record), whose value is payload.
func publication(id string, payload []byte, i, n int) kafka.Message {
	m := kafka.Message{Key: []byte(id), Value: payload}
	if n > 1 {
		m.Headers = []kafka.Header{{Key: ChunkHeader, Value: []byte(fmt.Sprintf("%d/%d", i, n))}}
	}
	return m
}

// chunkOf reads a releases-topic record's ChunkHeader: ok is false for a
// record without it (or with a malformed one).
func chunkOf(m kafka.Message) (chunk, chunks int32, ok bool) {
	for _, h := range m.Headers {
		if h.Key != ChunkHeader {
			continue
		}
		var c, n int32
		if _, err := fmt.Sscanf(string(h.Value), "%d/%d", &c, &n); err == nil && c >= 0 && c < n {
			return c, n, true
		}
	}
	return 0, 0, false
}

// LedgerOffsetHeader, on a budget state on the accountant topic, is the
// ledger offset the state reflects: the offset after the last record its
// writer had read of the stream's ledger partition when it wrote it. A
// state with a higher one is newer, whatever the order of the writes: a
// release instance that was paused before writing its state and lost
// ownership meanwhile writes an older state after a newer owner's.
const LedgerOffsetHeader = "dpstream-ledger-offset"

// StateOffset returns the ledger offset a budget state record on the
// accountant topic reflects (LedgerOffsetHeader), or -1 for a record
// written before the header existed. Of a stream's states, the one with the
// highest offset is the latest, and of equal ones the last written.
func StateOffset(m kafka.Message) int64 {
	for _, h := range m.Headers {
		if h.Key == LedgerOffsetHeader {
			if v, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// failpoint calls Config.Failpoint, if set.
func (s *Stage) failpoint(step string, rec kafka.Message) {
	if s.cfg.Failpoint != nil {
		s.cfg.Failpoint(step, rec)
	}
}

func retry[T any](ctx context.Context, fn func() (T, error), log *slog.Logger) (T, error) {
	backoff := 200 * time.Millisecond
	for {
		v, err := fn()
		if err == nil {
			return v, nil
		}
		if errors.Is(err, ErrLedgerLost) || errors.Is(err, ErrPartitionsChanged) || errors.Is(err, ErrFenced) {
			// Retrying cannot bring the charges back or the partition
			// count; and taking over again would fence the instance that
			// owns the stage now.
			return v, err
		}
		log.Warn("retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
