package release

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
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
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Status values of a release.
const (
	StatusOK              = "ok"
	StatusBudgetExhausted = "budget_exhausted"
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
	// accounts (OpenPDPStore), a cache of the pdp topic that keeps the
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
	// releases (kind.Predictor): queries are read from partition 0 of the
	// first, by the instance that owns the stage, and answered on the
	// second. "" when no release answers queries.
	RequestsTopic, ResponsesTopic string
	// RecordBytes, if set, is the largest record written before a partial
	// (accumulate) or a release (release) is split into chunks; default
	// schema.MaxRecordBytes (tests lower it).
	RecordBytes int
}

// Steps of the release stage's commit protocol, as passed to
// Config.Failpoint. In order, for each window: the pdp records are written,
// then for each release the ledger append and the publish, then the budget
// state; the partials offset is committed after the window.
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
)

// Stage is the release stage and the accountant it consults: a Releaser
// whose outcomes it makes durable on Kafka, ledger first.
type Stage struct {
	cfg     Config
	streams map[string]*plan.Stream

	releases, ledger, accountantW, pdpW, responses *kafka.Writer

	// mu serialises the Releaser (the accountant state) between Recover and
	// the partition handlers, and keeps a window's ledger appends and
	// publishes together.
	mu  sync.Mutex
	rel *Releaser
	// ahead is set when a window's release failed after the Releaser
	// decided it: the Releaser then holds outcomes (and a prediction
	// window's models) the ledger may lack, until the next takeover
	// rebuilds it. No query is answered meanwhile, so none comes from a
	// model that never became durable.
	ahead bool
	// pdp holds every unit's cumulative per-instance account and the
	// summary keys already written (so a window replayed after a crash is
	// not summarized again): on disk when PDPStoreDir is set, caught up
	// with the pdp topic by Recover. pdpUnread counts the records this
	// stage wrote to the topic since it last caught up.
	pdp       *PDPStore
	pdpUnread int

	// Ownership of the release stage (DESIGN invariant 8; package
	// internal/ledger), under mu: epoch is this instance's epoch while it
	// owns the stage ("" when it does not), book the ledger read so far,
	// and tail a reader of the ledger positioned at book.Next(), through
	// which every charge is read back before its release is published.
	epoch string
	book  *ledger.Book
	tail  *kafka.Reader
	// owner names this process in its epoch markers, for operators.
	owner string
	// respondedNext is the requests topic's offset after the last request
	// the responses topic held a response to when this instance took over
	// (witnesses.respondedNext), under mu: serveQueries reads on from it
	// or the ledger's RequestNext, whichever is later.
	respondedNext int64

	// flight is what InFlight reports: the window being released and the
	// partitions held. It has its own lock because mu is held for a whole
	// window's release, which is exactly when InFlight is asked.
	flightMu  sync.Mutex
	releasing string        // "stream/window start" being released, or ""
	held      map[int]int64 // partials partition -> offset its next owner replays from
}

// New checks the configuration and creates the stage's writers.
func New(cfg Config) (*Stage, error) {
	if cfg.Conn == nil || len(cfg.Conn.Brokers) == 0 || cfg.GroupID == "" || cfg.PartialsTopic == "" || cfg.ReleasesTopic == "" || cfg.LedgerTopic == "" || cfg.AccountantTopic == "" {
		return nil, errors.New("release: a connection with brokers, the group, and the partials, releases, ledger and accountant topics are required")
	}
	if cfg.Noise == nil {
		cfg.Noise = noise.New(noise.CryptoSource())
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Stage{cfg: cfg, streams: map[string]*plan.Stream{}, rel: NewReleaser(cfg.Streams, cfg.Noise), held: map[int]int64{}}
	for name, start := range cfg.Starts {
		s.rel.SetStart(name, start)
	}
	if cfg.RecordBytes > 0 {
		s.rel.recordBytes = cfg.RecordBytes
	}
	for i := range cfg.Streams {
		s.streams[cfg.Streams[i].Config.Name] = &cfg.Streams[i]
	}
	s.releases = cfg.Conn.NewWriter(cfg.ReleasesTopic)
	s.ledger = cfg.Conn.NewWriter(cfg.LedgerTopic)
	s.accountantW = cfg.Conn.NewWriter(cfg.AccountantTopic)
	if s.rel.HasPredictors() {
		if cfg.RequestsTopic == "" || cfg.ResponsesTopic == "" {
			return nil, errors.New("release: a prediction release needs the requests and responses topics")
		}
		s.responses = cfg.Conn.NewWriter(cfg.ResponsesTopic)
	}
	s.pdp = NewPDPStore()
	host, _ := os.Hostname()
	s.owner = fmt.Sprintf("%s pid %d", host, os.Getpid())
	if cfg.PDPTopic != "" {
		if cfg.PDPStoreDir != "" && slices.ContainsFunc(cfg.Streams, func(ps plan.Stream) bool { return ps.Config.PDP }) {
			st, err := OpenPDPStore(cfg.PDPStoreDir, cfg.Log)
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

// Run consumes partials until ctx is done.
//
// When ctx is done it drains: it reads no further partial, but a window
// whose release has started finishes (pdp records, ledger appends,
// publishes, budget state), so a clean stop leaves nothing for Recover to
// republish. It then commits the partials offset the merger needs to be
// rebuilt (Merger.CommitOffset), leaves the consumer group so a standby
// takes over at once, and closes its writers. Run returns when all of this
// is done.
func (s *Stage) Run(ctx context.Context) error {
	// Size the writers to their topics, so that a large ledger record (it
	// carries the whole release payload) that the topic accepts is not
	// refused client-side.
	for _, w := range []*kafka.Writer{s.releases, s.ledger, s.accountantW, s.pdpW, s.responses} {
		if w == nil {
			continue
		}
		if _, err := s.cfg.Conn.FitBatchBytes(ctx, w); err != nil {
			s.cfg.Log.Warn("could not read a topic's max.message.bytes; assuming Kafka's default", "topic", w.Topic, "err", err, "default", kafkaio.DefaultMaxMessageBytes)
		}
	}
	err := kafkaio.RunGroup(ctx, kafkaio.GroupConfig{Conn: s.cfg.Conn, GroupID: s.cfg.GroupID, Topics: []string{s.cfg.PartialsTopic}, Log: s.cfg.Log,
		SessionTimeout: s.cfg.SessionTimeout}, s.handle)
	// RunGroup returns after its partition handlers drained and the member
	// left the group.
	s.cfg.Log.Info("left the consumer group", "group", s.cfg.GroupID)
	closeErr := errors.Join(s.releases.Close(), s.ledger.Close(), s.accountantW.Close())
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

// InFlight describes the work this stage has not finished: the window
// being released, if any, and each partials partition still held with the
// offset its next owner replays from. A drain that runs out of time logs it
// as the work it abandons. Abandoning it is a crash as far as the topics go,
// and invariant 1 covers it: the next start's Recover republishes verbatim
// what reached the ledger and decides the rest then.
func (s *Stage) InFlight() []string {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	var out []string
	if s.releasing != "" {
		out = append(out, fmt.Sprintf("release: window %s was being released; what reached the ledger is republished verbatim at the next start, the rest is decided then", s.releasing))
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

// setReleasing records the window being released ("" when none).
func (s *Stage) setReleasing(w string) {
	s.flightMu.Lock()
	s.releasing = w
	s.flightMu.Unlock()
}

// ErrFenced is wrapped by the error of a release stage that found another
// release instance's epoch marker in the ledger after its own: that instance
// owns the release stage now, and this one must not publish (DESIGN
// invariant 8). Its handler waits for the consumer group's next generation.
var ErrFenced = errors.New("fenced: another release instance took ownership of the release stage")

// Recover takes ownership of the release stage without a consumer-group
// assignment (tests, tools): see takeOver.
func (s *Stage) Recover(ctx context.Context) error { return s.takeOver(ctx) }

// takeOver is takeOverAs with a fresh epoch.
func (s *Stage) takeOver(ctx context.Context) error {
	epoch, err := newEpoch()
	if err != nil {
		return err
	}
	return s.takeOverAs(ctx, epoch)
}

// takeOverAs makes this instance the owner of the release stage under
// epoch: it reads the topics that witness the ledger (the releases topic
// and the accountant topic), appends an epoch marker to the ledger,
// rebuilds the accountant from the ledger up to and past that marker and
// checks it against the witnesses (recover), and positions the ledger tail
// reader after it. Every charge this instance appends from now on carries
// the epoch, and is published only once read back with no newer marker
// before it (confirm). If another instance's marker already follows this
// one's, it returns an ErrFenced error.
//
// The witnesses are read before the marker is appended, so everything they
// hold was written before it: every charge they count precedes the marker
// and is in the ledger read that follows, unless the ledger lost it. Read
// after the marker, they could hold the releases of an instance that took
// over in between, and an intact ledger would look truncated.
//
// A retry after a failure may reuse the epoch: a marker whose write timed
// out but landed late is then this instance's own, not a newer owner's.
func (s *Stage) takeOverAs(ctx context.Context, epoch string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropOwnership()
	w, err := s.readWitnesses(ctx)
	if err != nil {
		return err
	}
	m, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: epoch, Owner: s.owner, At: s.cfg.Now().UnixMilli()})
	if err != nil {
		return err
	}
	if err := s.ledger.WriteMessages(ctx, m); err != nil {
		return fmt.Errorf("append an epoch marker to the ledger %s: %w", s.cfg.LedgerTopic, err)
	}
	if err := s.recover(ctx, epoch, w); err != nil {
		return err
	}
	tail, err := s.cfg.Conn.NewPartitionReader(s.cfg.LedgerTopic, 0, s.book.Next())
	if err != nil {
		return fmt.Errorf("ledger %s: %w", s.cfg.LedgerTopic, err)
	}
	s.tail, s.epoch, s.ahead = tail, epoch, false
	s.cfg.Log.Info("took ownership of the release stage", "epoch", epoch, "ledger_offset", s.book.Next())
	return nil
}

// witnesses is what the topics other than the ledger say about its
// charges: the release ids on the releases topic, and each stream's latest
// budget state on the accountant topic with the ledger offset it reflects.
type witnesses struct {
	published map[string]bool
	// chunks holds, for each release id with chunks on the releases topic
	// (ChunkHeader), the indexes seen. (A record without the header, which
	// only a release in one record has, counts for no chunk: at worst a
	// chunk is republished, byte-identical.)
	chunks map[string]map[int32]bool
	states map[string]witnessedState
	// answered are the request ids on the responses topic with an ok
	// answer.
	answered map[string]bool
	// respondedNext is the offset after the highest request offset
	// (RequestOffsetHeader) of the responses topic's records, of any
	// status; 0 when none has one.
	respondedNext int64
}

// missing returns the indexes of the chunks of release id, published as n
// records (1 for a release in one record), that the releases topic lacks.
func (w witnesses) missing(id string, n int) []int32 {
	if n <= 1 {
		if w.published[id] {
			return nil
		}
		return []int32{0}
	}
	var out []int32
	for i := range int32(n) {
		if !w.chunks[id][i] {
			out = append(out, i)
		}
	}
	return out
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

// witnessedState is a budget state and the ledger offset it reflects (the
// LedgerOffsetHeader; -1 for a state written before the header existed).
type witnessedState struct {
	schema.BudgetState
	ledgerOffset int64
}

// readWitnesses reads the releases topic's ids and the accountant topic's
// states.
func (s *Stage) readWitnesses(ctx context.Context) (witnesses, error) {
	w := witnesses{published: map[string]bool{}, chunks: map[string]map[int32]bool{}}
	err := s.cfg.Conn.ReadAll(ctx, s.cfg.ReleasesTopic, func(m kafka.Message) error {
		id := string(m.Key)
		w.published[id] = true
		if c, _, ok := chunkOf(m); ok {
			if w.chunks[id] == nil {
				w.chunks[id] = map[int32]bool{}
			}
			w.chunks[id][c] = true
		}
		return nil
	})
	if err != nil {
		return w, fmt.Errorf("read releases %s: %w", s.cfg.ReleasesTopic, err)
	}
	if s.responses != nil {
		w.answered = map[string]bool{}
		err = s.cfg.Conn.ReadAll(ctx, s.cfg.ResponsesTopic, func(m kafka.Message) error {
			// Only an ok answer has a ledger charge to witness; the
			// value is decoded because the key is the request id alone.
			if a, err := schema.DecodePredictResponse(m.Value); err == nil && a.Status == StatusOK {
				w.answered[AnswerID(a.Stream, a.Release, a.RequestID)] = true
			}
			if off, ok := requestOffset(m); ok {
				w.respondedNext = max(w.respondedNext, off+1)
			}
			return nil
		})
		if err != nil {
			return w, fmt.Errorf("read responses %s: %w", s.cfg.ResponsesTopic, err)
		}
	}
	w.states, err = s.readStates(ctx)
	return w, err
}

// dropOwnership forgets this instance's epoch and closes the ledger tail;
// the caller holds mu.
func (s *Stage) dropOwnership() {
	if s.tail != nil {
		_ = s.tail.Close()
	}
	s.tail, s.epoch = nil, ""
}

// newEpoch returns a random epoch id (128 bits from crypto/rand).
func newEpoch() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("epoch id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// recover rebuilds the accountant from the ledger's valid charges (package
// internal/ledger: void charges, written by instances that had lost
// ownership, were never published and are not counted; two different valid
// answers for one release id are both counted), checks the ledger against
// what else witnesses charges (the releases topic and the accountant
// topic's latest state; ErrLedgerLost if it lacks some), republishes every
// valid charge missing from the releases topic, verbatim (invariant 1: a
// crash between the ledger append and the publish never loses or
// recomputes a release), and publishes each stream's budget state. With a
// non-empty epoch, the ledger must end with that epoch's marker: a later
// marker of another epoch is an ErrFenced error. The caller holds mu.
func (s *Stage) recover(ctx context.Context, epoch string, wit witnesses) error {
	s.rel.Reset()
	s.respondedNext = wit.respondedNext
	book := &ledger.Book{}
	var order []string
	// missing are the records of valid charges that the releases topic
	// lacks, collected as the ledger is read so that only they are kept:
	// every chunk of a release in chunks comes from the chunk records the
	// ledger ties to its charge (Entry.Chunks), byte for byte.
	var missing []kafka.Message
	// unanswered are the responses of answers charged in the ledger that
	// the responses topic lacks, republished verbatim like releases.
	var unanswered []kafka.Message
	seen, void, dups, unpublishable := false, 0, 0, 0
	markerOffset := int64(-1) // this instance's first marker of epoch
	err := s.cfg.Conn.ReadAll(ctx, s.cfg.LedgerTopic, func(m kafka.Message) error {
		e, err := book.Apply(m)
		if err != nil {
			return err
		}
		switch {
		case e.Type == schema.LedgerTypeEpoch && e.Epoch == epoch:
			if !seen {
				markerOffset = e.Offset
			}
			seen = true
		case e.Type != schema.LedgerTypeCharge:
		case !e.Valid:
			void++
		case e.Identical:
			// The same answer written twice (a retried append): one
			// publication, one charge.
		default:
			dup, err := s.rel.Restore(e.Charge)
			if err != nil {
				return err
			}
			if dup {
				dups++
				s.cfg.Metrics.LedgerDuplicates.WithLabelValues(e.Charge.Stream).Inc()
				s.cfg.Log.Error("the ledger holds two different answers for one release; both are counted against the budget",
					"release_id", e.Charge.ReleaseID, "ledger_offset", e.Offset)
				return nil
			}
			if e.Charge.IsAnswer() {
				if !wit.answered[e.Charge.ReleaseID] && e.Charge.Status == StatusOK {
					unanswered = append(unanswered, response(e.Charge.RequestID, e.Charge.Payload, e.Charge.RequestOffset))
				}
				return nil
			}
			order = append(order, e.Charge.ReleaseID)
			msgs, ok := republish(e, wit)
			if !ok {
				unpublishable++
				s.cfg.Log.Error("a release in chunks is charged in the ledger but the ledger lacks its chunks (a ledger not written by this protocol, or damaged): it is counted against the budget and cannot be republished",
					"release_id", e.Charge.ReleaseID, "ledger_offset", e.Offset)
			}
			missing = append(missing, msgs...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuild accountant from ledger %s: %w", s.cfg.LedgerTopic, err)
	}
	s.book = book
	if epoch != "" && !seen {
		return fmt.Errorf("ledger %s: this instance's epoch marker %s is not in the ledger it just appended it to", s.cfg.LedgerTopic, epoch)
	}
	if epoch != "" && book.Epoch() != epoch {
		mk := book.Marker()
		return fmt.Errorf("%w: epoch %s (%s, at %s) follows this instance's epoch %s in the ledger",
			ErrFenced, mk.Epoch, mk.Owner, time.UnixMilli(mk.At).UTC().Format(time.RFC3339), epoch)
	}
	if void > 0 {
		s.cfg.Log.Info("ledger holds void charges: appended by release instances after they lost ownership, never published, not counted", "count", void)
	}
	published := wit.published
	if err := s.checkLedgerComplete(published); err != nil {
		return err
	}
	for id := range wit.answered {
		// An answer on the responses topic was charged before it was
		// published, as a release was.
		if _, ok := s.rel.Charged(id); !ok {
			return fmt.Errorf("%w: the responses topic %s holds an answer (%s) that the ledger %s has no charge for: "+
				"the ledger was deleted or truncated; restore it from a backup or mirror before restarting (do not recreate it empty)",
				ErrLedgerLost, s.cfg.ResponsesTopic, id, s.cfg.LedgerTopic)
		}
	}
	if err := s.checkAccountant(wit.states, markerOffset); err != nil {
		return err
	}
	if len(missing) > 0 {
		s.cfg.Log.Info("republishing releases charged in the ledger but not yet published", "count", len(missing))
		if err := s.releases.WriteMessages(ctx, missing...); err != nil {
			return fmt.Errorf("republish releases: %w", err)
		}
	}
	if len(unanswered) > 0 {
		if s.responses == nil {
			s.cfg.Log.Warn("the ledger holds answers to queries that the responses topic lacks, but no release answers queries now: not republished", "count", len(unanswered))
		} else {
			s.cfg.Log.Info("republishing answers charged in the ledger but not yet published", "count", len(unanswered))
			if err := s.responses.WriteMessages(ctx, unanswered...); err != nil {
				return fmt.Errorf("republish answers: %w", err)
			}
		}
	}
	for name, ps := range s.streams {
		period := s.rel.LatestPeriod(name)
		if err := s.publishState(ctx, ps, period); err != nil {
			return err
		}
	}
	if err := s.recoverPDP(ctx); err != nil {
		return err
	}
	s.cfg.Log.Info("accountant rebuilt from ledger", "charges", len(order), "void", void, "duplicates", dups, "unpublishable", unpublishable)
	return nil
}

// republish returns the releases-topic records of a valid charge's release
// that the releases topic lacks (wit): for a release in one record its
// payload, for a release in chunks the missing ones of its chunk 0 (the
// charge's payload) and the chunks the ledger ties to the charge. ok is
// false for a charge whose payload is chunk 0 of a release in chunks that
// the ledger holds no chunks of: nothing of it can be republished.
func republish(e ledger.Entry, wit witnesses) (msgs []kafka.Message, ok bool) {
	id := e.Charge.ReleaseID
	if e.Chunks == nil {
		if len(wit.missing(id, 1)) == 0 {
			return nil, true
		}
		// Decoded only when it is to be republished: a chunk 0 alone is
		// not the release.
		if rel, err := schema.DecodeRelease(e.Charge.Payload); err == nil && rel.Chunks > 1 {
			return nil, false
		}
		return []kafka.Message{publication(id, e.Charge.Payload, 0, 1)}, true
	}
	n := len(e.Chunks) + 1
	for _, i := range wit.missing(id, n) {
		payload := e.Charge.Payload
		if i > 0 {
			payload = e.Chunks[i-1]
		}
		msgs = append(msgs, publication(id, payload, int(i), n))
	}
	return msgs, true
}

// LedgerOffsetHeader, on a budget state on the accountant topic, is the
// ledger offset the state reflects: the offset after the last ledger record
// its writer had read when it wrote it. A state with a higher one is newer,
// whatever the order of the writes: a release instance that was paused
// before writing its state and lost ownership meanwhile writes an older
// state after a newer owner's.
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

// readStates returns the latest budget state of each stream on the
// accountant topic: per stream (the key), the one reflecting the highest
// ledger offset (LedgerOffsetHeader), and of states reflecting the same
// (or written before the header existed), the last one. An undecodable
// record is skipped with a warning: the topic is a witness of the ledger,
// not the budget's source of truth.
func (s *Stage) readStates(ctx context.Context) (map[string]witnessedState, error) {
	states := map[string]witnessedState{}
	err := s.cfg.Conn.ReadAll(ctx, s.cfg.AccountantTopic, func(m kafka.Message) error {
		key := string(m.Key)
		if m.Value == nil {
			delete(states, key) // a tombstone
			return nil
		}
		st, err := schema.DecodeBudgetState(m.Value)
		if err != nil {
			s.cfg.Log.Warn("skipping an undecodable budget state", "topic", s.cfg.AccountantTopic, "offset", m.Offset, "err", err)
			return nil
		}
		off := StateOffset(m)
		if prev, ok := states[key]; !ok || off >= prev.ledgerOffset {
			states[key] = witnessedState{BudgetState: st, ledgerOffset: off}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read accountant %s: %w", s.cfg.AccountantTopic, err)
	}
	return states, nil
}

// ErrLedgerLost is wrapped by Recover's error when the releases topic holds
// releases that the ledger has no charge for. A release is published only
// after its ledger record is acknowledged, and the ledger never expires, so
// the ledger was deleted (and recreated empty) or truncated: rebuilding the
// accountant from it would forget budget already spent. The stage refuses
// to run rather than overspend the budget.
var ErrLedgerLost = errors.New("the ledger lacks charges of published releases")

// checkLedgerComplete returns an ErrLedgerLost error when a published
// release id has no charge in the rebuilt accountant.
func (s *Stage) checkLedgerComplete(published map[string]bool) error {
	var lost []string
	for id := range published {
		if _, ok := s.rel.Charged(id); !ok {
			lost = append(lost, id)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	sort.Strings(lost)
	return fmt.Errorf("%w: the releases topic %s holds %d releases (e.g. %s) that the ledger %s has no charge for: "+
		"the ledger was deleted or truncated, and rebuilding the budget from it would start the budget over; "+
		"restore the ledger topic from a backup or mirror before restarting (do not recreate it empty)",
		ErrLedgerLost, s.cfg.ReleasesTopic, len(lost), lost[0], s.cfg.LedgerTopic)
}

// checkAccountant returns an ErrLedgerLost error when the accountant
// topic's latest state of a configured stream (read before this instance's
// epoch marker, at ledger offset marker, was appended) records more charges
// or refusals in its budget period than the rebuilt ledger holds, or
// reflects a ledger offset past the marker. Every state is published after
// the charges it counts were appended to the ledger and read back, and
// reflects an offset the ledger had reached before the marker, so a ledger
// holding fewer charges, or ending before that offset, has lost records (a
// broker that lost unsynced data, a topic restored from an old backup):
// rebuilding the budget from it would spend again what was already spent.
func (s *Stage) checkAccountant(states map[string]witnessedState, marker int64) error {
	names := make([]string, 0, len(states))
	for name := range states {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		st := states[name]
		if _, ok := s.streams[name]; !ok {
			continue
		}
		got, _ := s.rel.State(name, st.Period, s.cfg.Now())
		lost := got.ReleasesCharged < st.ReleasesCharged || got.ReleasesRefused < st.ReleasesRefused
		if !lost && (marker < 0 || st.ledgerOffset <= marker) {
			continue
		}
		return fmt.Errorf("%w: the accountant topic %s records %d charges and %d refusals of stream %s in budget period %d (updated %s, reflecting ledger offset %d), "+
			"but the ledger %s holds only %d and %d (and this instance's marker is at offset %d): the ledger lost records (a lost log tail or an old backup), and rebuilding the budget from it "+
			"would spend again what was spent; restore the ledger topic (and the releases topic) from a replica or backup that holds them. "+
			"Only if you know the accountant state is wrong, delete its record (a tombstone for key %q on %s) and restart",
			ErrLedgerLost, s.cfg.AccountantTopic, st.ReleasesCharged, st.ReleasesRefused, name, st.Period,
			time.UnixMilli(st.UpdatedAt).UTC().Format(time.RFC3339), st.ledgerOffset, s.cfg.LedgerTopic, got.ReleasesCharged, got.ReleasesRefused, marker, name, s.cfg.AccountantTopic)
	}
	return nil
}

// recoverPDP brings the per-unit per-instance accounts and the set of
// summarized windows up to date with the pdp topic: the store reads only
// the records it has not read yet (all of them the first time, or when
// its file was lost), in batches, so neither the time nor the memory of a
// restart grows with what it had read before.
func (s *Stage) recoverPDP(ctx context.Context) error {
	if s.cfg.PDPTopic == "" {
		return nil
	}
	n, err := s.pdp.CatchUp(ctx, kafkaPDPSource{conn: s.cfg.Conn, topic: s.cfg.PDPTopic}, s.cfg.Log)
	if err != nil {
		return fmt.Errorf("catch up per-instance accounts with %s: %w", s.cfg.PDPTopic, err)
	}
	s.pdpUnread = 0
	if n > 0 {
		s.cfg.Log.Info("per-instance accounts caught up with the pdp topic", "records", n)
	}
	return nil
}

// pdpCatchUpEvery is how many records writePDP lets accumulate on the pdp
// topic, unread by the store, before it catches up: the store applies its
// own records when they are acknowledged, but remembers the offsets it
// has read only by reading, and the next Recover reads again what it has
// not. This bounds that re-read.
const pdpCatchUpEvery = 50000

// pdpType returns a pdp record's type header.
func pdpType(m kafka.Message) string {
	for _, h := range m.Headers {
		if h.Key == schema.PDPTypeHeader {
			return string(h.Value)
		}
	}
	return ""
}

// writePDP computes a window's per-instance DP from its decided outcomes
// and writes the changed unit accounts and the window's summary to the
// pdp topic, before any ledger record of the window, and then applies
// them to the store: a crash after the topic write and before the ledger
// replays the window, whose summary the store then knows (from the
// commit, or read back by Recover's catch-up) and whose units are not
// charged twice (PDPStore.Prepare is idempotent per unit and window). A
// failure here stops the window before anything is charged.
func (s *Stage) writePDP(ctx context.Context, ps *plan.Stream, w Window, outcomes []Outcome) error {
	if s.pdpW == nil || !ps.Config.PDP {
		return nil
	}
	key := schema.PDPSummaryKey(w.Stream, w.Start)
	done, err := s.pdp.Summarized(key)
	if err != nil {
		return fmt.Errorf("per-instance DP of window %d: %w", w.Start, err)
	}
	if done {
		return nil
	}
	upd, err := s.pdp.Prepare(ps, w, outcomes, s.cfg.Now())
	if err != nil {
		return fmt.Errorf("per-instance DP of window %d: %w", w.Start, err)
	}
	sum := upd.Summary
	msgs, err := pdpMessages(upd)
	if err != nil {
		return err
	}
	if err := s.pdpW.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("write per-instance DP of window %d: %w", w.Start, err)
	}
	// Only now: the store never holds what the topic may not.
	if err := s.pdp.Commit(upd); err != nil {
		return fmt.Errorf("per-instance DP of window %d is on %s but not in the store (the next start reads it back): %w", w.Start, s.cfg.PDPTopic, err)
	}
	if s.pdpUnread += len(msgs); s.pdpUnread >= pdpCatchUpEvery {
		if _, err := s.pdp.CatchUp(ctx, kafkaPDPSource{conn: s.cfg.Conn, topic: s.cfg.PDPTopic}, s.cfg.Log); err != nil {
			s.cfg.Log.Warn("could not catch the per-instance DP store up with the pdp topic; the next start will", "err", err)
		} else {
			s.pdpUnread = 0
		}
	}
	for _, r := range sum.Releases {
		if r.Status != StatusOK {
			continue
		}
		for q, v := range map[string]float64{"p50": r.P50, "p90": r.P90, "p99": r.P99, "max": r.Max} {
			s.cfg.Metrics.PDPEpsilon.WithLabelValues(w.Stream, r.Release, q).Set(v)
		}
	}
	for q, v := range map[string]float64{"p50": sum.CumulativeP50, "p90": sum.CumulativeP90, "p99": sum.CumulativeP99, "max": sum.CumulativeMax} {
		s.cfg.Metrics.PDPCumulative.WithLabelValues(w.Stream, q).Set(v)
	}
	for _, r := range sum.Releases {
		if r.Status == StatusUnavailable {
			s.cfg.Log.Warn("per-instance DP unavailable for a window (too many units for one partial record); the units' cumulative accounts omit it",
				"stream", w.Stream, "window", w.Start)
			break
		}
	}
	return nil
}

func (s *Stage) handle(ctx context.Context, a kafkaio.Assignment) error {
	log := s.cfg.Log.With("topic", a.Topic, "partition", a.Partition)
	s.hold(a.Partition, a.Offset)
	defer s.unhold(a.Partition)
	defer func() {
		s.mu.Lock()
		s.dropOwnership()
		s.mu.Unlock()
	}()
	from := a.Offset
	for {
		// Another instance may have owned these streams until now: take
		// ownership (an epoch marker in the ledger) and rebuild from the
		// ledger before releasing anything. The retries reuse the epoch.
		epoch, err := newEpoch()
		if err != nil {
			return err
		}
		_, err = retry(ctx, func() (struct{}, error) { return struct{}{}, s.takeOverAs(ctx, epoch) }, log)
		if err == nil {
			var resume int64
			resume, err = s.consume(ctx, a, from, log)
			from = resume
		}
		switch {
		case err == nil || ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrFenced):
			if s.fenced(ctx, log, err) {
				continue // still the group's owner of the partials: take over again
			}
			return nil
		default:
			return err
		}
	}
}

// consume reads the partials from offset from and releases the windows
// they complete, until ctx is done (nil) or a release fails. It returns
// the offset a new owner must replay from (the last committed one, or from)
// and, when fenced, an ErrFenced error.
func (s *Stage) consume(ctx context.Context, a kafkaio.Assignment, from int64, log *slog.Logger) (int64, error) {
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
	// The queries are answered alongside, by this owner of the stage; an
	// answer that fails (fenced, or not durable) ends the consumption as
	// a failed release does.
	queryErr := make(chan error, 1)
	if s.responses != nil {
		qctx, qcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { qcancel(); <-done }()
		go func() {
			defer close(done)
			if err := s.serveQueries(qctx, log); err != nil {
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
		// Release the complete windows that have come due: their end plus
		// grace has passed on this stage's clock (Merger.Due). This runs
		// after every partial and every quiet second.
		for _, w := range merger.Due(s.cfg.Now()) {
			if err := s.releaseWindow(ctx, w); err != nil {
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
		// Wait at most a second for the next partial, so that the offset
		// reached by the last burst is committed while the topic is quiet,
		// not only when the next partial arrives: a restart then replays
		// less.
		fctx, fcancel := context.WithTimeout(ctx, time.Second)
		m, err := r.FetchMessage(fctx)
		fcancel()
		if err != nil {
			if ctx.Err() != nil {
				commit(true)
				log.Info("partials partition drained: started windows released, offset committed", "committed_offset", committed, "pending_windows", merger.Pending())
				return resume(), nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				commit(false)
				continue
			}
			return resume(), fmt.Errorf("read partials: %w", err)
		}
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			log.Error("skipping undecodable partial", "offset", m.Offset, "err", err)
			continue
		}
		if _, ok := s.streams[p.Stream]; !ok {
			log.Warn("skipping partial of a stream not in the config", "stream", p.Stream)
			continue
		}
		merger.Record(p, m.Offset, s.cfg.Now())
		commit(false)
	}
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
// stage.
func (s *Stage) fenced(ctx context.Context, log *slog.Logger, err error) (retake bool) {
	s.cfg.Metrics.Fenced.Inc()
	log.Warn("another release instance owns the release stage; this instance publishes nothing until it owns the partials again", "err", err)
	s.mu.Lock()
	s.dropOwnership()
	s.mu.Unlock()
	session := s.cfg.SessionTimeout
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

// releaseWindow releases every configured release of a complete window that
// the ledger does not hold yet: the Releaser decides them, and each is
// appended to the ledger, acknowledged, and only then published.
func (s *Stage) releaseWindow(ctx context.Context, w Window) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		if err != nil {
			s.ahead = true
		}
	}()
	// A window that has started releasing finishes (ledger, publish, state)
	// even when the stage is asked to stop, so a clean shutdown leaves no
	// release waiting for recovery; only a crash does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	s.setReleasing(w.Stream + "/" + strconv.FormatInt(w.Start, 10))
	defer s.setReleasing("")
	ps := s.streams[w.Stream]
	period := ps.Period(w.Start)
	// Outcomes decided before a failure are charged: write them, then fail.
	// If a write fails, the Releaser is ahead of the ledger; the handler
	// fails, and every handler starts with Recover, which rebuilds the
	// Releaser from the ledger, so unwritten outcomes (whose noise was never
	// published) are forgotten and decided again.
	outcomes, decideErr := s.rel.ReleaseWindow(w, s.cfg.Now())
	if decideErr == nil && len(outcomes) > 0 {
		if err := s.writePDP(ctx, ps, w, outcomes); err != nil {
			// Nothing is charged yet: the Releaser is ahead of the ledger,
			// and the restart's Recover forgets these outcomes.
			return err
		}
		s.failpoint(FailpointPDPWritten, kafka.Message{Key: []byte(w.Stream)})
	}
	published := false
	for _, o := range outcomes {
		id := o.Release.ReleaseID
		pubs := []kafka.Message{publication(id, o.Charge.Payload, 0, 1)}
		if n := len(o.Chunks); n > 0 {
			pubs = make([]kafka.Message, n)
			for i, c := range o.Chunks {
				pubs[i] = publication(id, c, i, n)
			}
		}
		pub := pubs[0]
		s.failpoint(FailpointBeforeLedger, pub)
		// Ledger first (invariant 1): the acknowledged ledger record is the
		// commit point; the releases topic is published from it, and only
		// once it is read back with no newer owner's marker before it
		// (invariant 8). A release in chunks has its chunks 1..n-1 in the
		// ledger before its charge, tied to it by their digest (package
		// internal/ledger, "Releases in chunks").
		var digest [sha256.Size]byte
		if len(o.Chunks) > 0 {
			if s.epoch == "" {
				return fmt.Errorf("%w: this instance does not own the release stage", ErrFenced)
			}
			msgs, d, err := ledger.ChunkMessages(w.Stream, id, s.epoch, o.Chunks, o.Charge.At)
			if err != nil {
				return err
			}
			if err := s.ledger.WriteMessages(ctx, msgs...); err != nil {
				return fmt.Errorf("append the chunks of %s to the ledger: %w (nothing was charged or published; the window is retried after a restart)", id, err)
			}
			s.failpoint(FailpointChunksAppended, pub)
			digest = d
		}
		if err := s.ledger.WriteMessages(ctx, ledger.ChargeMessage(w.Stream, o.Ledger, s.epoch)); err != nil {
			return fmt.Errorf("append %s to the ledger: %w (nothing was published; the window is retried after a restart)", id, err)
		}
		s.failpoint(FailpointLedgerAppended, pub)
		if err := s.confirm(ctx, id, len(o.Chunks), digest); err != nil {
			return err
		}
		s.failpoint(FailpointConfirmed, pub)
		if err := s.releases.WriteMessages(ctx, pubs...); err != nil {
			return fmt.Errorf("publish %s: %w (it is in the ledger and will be republished at start)", id, err)
		}
		s.failpoint(FailpointPublished, pub)
		published = true
		s.cfg.Metrics.Releases.WithLabelValues(w.Stream, o.Release.Release, o.Release.Status).Inc()
		if s.cfg.OnRelease != nil {
			s.cfg.OnRelease(o.Release)
		}
	}
	if decideErr != nil {
		return decideErr
	}
	if published {
		s.cfg.Metrics.ReleaseLatency.WithLabelValues(w.Stream).Observe(s.cfg.Now().Sub(w.FirstSeen).Seconds())
		return s.publishState(ctx, ps, period)
	}
	return nil
}

// confirm reads the ledger on from where this instance last read it to the
// charge of release id that it has just appended under its epoch. It
// returns nil if no marker of another epoch came before the charge (the
// charge is valid: every rebuild counts it, so it may be published), and an
// ErrFenced error otherwise (the charge is void: it must never be
// published). For a release in chunks (chunks > 0) the charge must also
// come with the chunk records of digest that this instance appended before
// it, as every rebuild will match them (ledger.Entry.Chunks): only then are
// the chunks it publishes those a recovery would republish. The caller
// holds mu and owns the stage (s.epoch is set).
func (s *Stage) confirm(ctx context.Context, id string, chunks int, digest [sha256.Size]byte) error {
	if s.tail == nil || s.epoch == "" {
		return fmt.Errorf("%w: this instance does not own the release stage", ErrFenced)
	}
	for {
		m, err := s.tail.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("read back %s from the ledger %s: %w (it is in the ledger; whether it is published is decided at the next start)", id, s.cfg.LedgerTopic, err)
		}
		e, err := s.book.Apply(m)
		if err != nil {
			return err
		}
		switch {
		case e.Type == schema.LedgerTypeEpoch && e.Epoch != s.epoch:
			// Ownership is lost now, not when the handler gets to it: the
			// tail has read past the newer marker, so a later confirm
			// under this epoch would never find a valid charge (the
			// query path may append one before the handler stops).
			err := fmt.Errorf("%w: epoch %s (%s) appended its marker at ledger offset %d, before this instance's charge of %s",
				ErrFenced, e.Marker.Epoch, e.Marker.Owner, e.Offset, id)
			s.dropOwnership()
			return err
		case e.Type == schema.LedgerTypeCharge && e.Valid && e.Epoch == s.epoch && e.Charge.ReleaseID == id:
			if chunks > 0 && (len(e.Chunks) != chunks-1 || e.ChunksDigest != digest) {
				return fmt.Errorf("read back %s from the ledger %s: its charge (offset %d) does not come with the %d chunk records appended before it; "+
					"it is charged but not published, and cannot be republished", id, s.cfg.LedgerTopic, e.Offset, chunks-1)
			}
			return nil
		}
	}
}

// publishState writes the stream's budget state to the compacted
// accountant topic (key: stream) and the budget gauges.
func (s *Stage) publishState(ctx context.Context, ps *plan.Stream, period int64) error {
	st, _ := s.rel.State(ps.Config.Name, period, s.cfg.Now())
	b, err := schema.EncodeBudgetState(st)
	if err != nil {
		return fmt.Errorf("encode budget state: %w", err)
	}
	msg := kafka.Message{Key: []byte(ps.Config.Name), Value: b}
	if s.book != nil {
		msg.Headers = []kafka.Header{{Key: LedgerOffsetHeader, Value: []byte(strconv.FormatInt(s.book.Next(), 10))}}
	}
	if err := s.accountantW.WriteMessages(ctx, msg); err != nil {
		return fmt.Errorf("publish budget state of %s: %w", ps.Config.Name, err)
	}
	s.cfg.Metrics.BudgetSpent.WithLabelValues(ps.Config.Name).Set(st.EpsilonSpent)
	s.cfg.Metrics.BudgetLeft.WithLabelValues(ps.Config.Name).Set(st.EpsilonRemaining)
	return nil
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
		if errors.Is(err, ErrLedgerLost) || errors.Is(err, ErrFenced) {
			// Retrying cannot bring the charges back; and taking over again
			// would fence the instance that owns the stage now.
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
