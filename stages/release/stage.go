package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/mechanism"
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
	Streams  []plan.Stream
	// Noise draws the mechanisms' noise (default: crypto/rand).
	Noise   mechanism.Noise
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
}

// Steps of the release stage's commit protocol, as passed to
// Config.Failpoint. In order, for each window: the pdp records are written,
// then for each release the ledger append and the publish, then the budget
// state; the partials offset is committed after the window.
const (
	// FailpointPDPWritten: the window's pdp records are acknowledged, nothing is charged.
	FailpointPDPWritten = "release/pdp-written"
	// FailpointBeforeLedger: a release is decided, its ledger record not yet
	// sent. rec is the release as it will be published (key: release id).
	FailpointBeforeLedger = "release/before-ledger"
	// FailpointLedgerAppended: the ledger record is acknowledged (the
	// commit point), the release not yet published. rec as above.
	FailpointLedgerAppended = "release/ledger-appended"
	// FailpointPublished: the release is acknowledged on the releases topic.
	FailpointPublished = "release/published"
	// FailpointCommit: the partials offset commit is about to be sent.
	FailpointCommit = "release/commit"
)

// Stage is the release stage and the accountant it consults: a Releaser
// whose outcomes it makes durable on Kafka, ledger first.
type Stage struct {
	cfg     Config
	streams map[string]*plan.Stream

	releases, ledger, accountantW, pdpW *kafka.Writer

	// mu serialises the Releaser (the accountant state) between Recover and
	// the partition handlers, and keeps a window's ledger appends and
	// publishes together.
	mu  sync.Mutex
	rel *Releaser
	// pdp holds every unit's cumulative per-instance account, rebuilt from
	// the pdp topic by Recover; pdpDone the summary keys already written,
	// so a window replayed after a crash is not summarized again.
	pdp     *PDPStore
	pdpDone map[string]bool

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
		cfg.Noise = mechanism.NewNoise(mechanism.CryptoSource())
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
	for i := range cfg.Streams {
		s.streams[cfg.Streams[i].Config.Name] = &cfg.Streams[i]
	}
	s.releases = cfg.Conn.NewWriter(cfg.ReleasesTopic)
	s.ledger = cfg.Conn.NewWriter(cfg.LedgerTopic)
	s.accountantW = cfg.Conn.NewWriter(cfg.AccountantTopic)
	s.pdp, s.pdpDone = NewPDPStore(), map[string]bool{}
	if cfg.PDPTopic != "" {
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
	for _, w := range []*kafka.Writer{s.releases, s.ledger, s.accountantW, s.pdpW} {
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

// Recover rebuilds the accountant from the ledger, then republishes every
// ledger entry missing from the releases topic, verbatim (invariant 1: a
// crash between the ledger append and the publish never loses or
// recomputes a release), and publishes each stream's budget state.
func (s *Stage) Recover(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rel.Reset()
	var order []string
	err := s.cfg.Conn.ReadAll(ctx, s.cfg.LedgerTopic, func(m kafka.Message) error {
		if !isCharge(m) {
			return nil // a stream start (ledger.StreamStarts)
		}
		lc, err := schema.DecodeLedgerCharge(m.Value)
		if err != nil {
			return fmt.Errorf("ledger %d/%d: %w", m.Partition, m.Offset, err)
		}
		applied, err := s.rel.Restore(lc)
		if !applied {
			// A second record for an id can only come from two owners racing;
			// the first is the one that counts and was charged.
			s.cfg.Log.Warn("ledger holds a release twice; keeping the first", "release_id", lc.ReleaseID)
			return nil
		}
		order = append(order, lc.ReleaseID)
		return err
	})
	if err != nil {
		return fmt.Errorf("rebuild accountant from ledger %s: %w", s.cfg.LedgerTopic, err)
	}
	published := map[string]bool{}
	err = s.cfg.Conn.ReadAll(ctx, s.cfg.ReleasesTopic, func(m kafka.Message) error {
		published[string(m.Key)] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("read releases %s: %w", s.cfg.ReleasesTopic, err)
	}
	if err := s.checkLedgerComplete(published); err != nil {
		return err
	}
	var missing []kafka.Message
	for _, id := range order {
		if !published[id] {
			lc, _ := s.rel.Charged(id)
			missing = append(missing, kafka.Message{Key: []byte(id), Value: lc.Payload})
		}
	}
	if len(missing) > 0 {
		s.cfg.Log.Info("republishing releases charged in the ledger but not yet published", "count", len(missing))
		if err := s.releases.WriteMessages(ctx, missing...); err != nil {
			return fmt.Errorf("republish releases: %w", err)
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
	s.cfg.Log.Info("accountant rebuilt from ledger", "charges", len(order))
	return nil
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

// recoverPDP rebuilds the per-unit per-instance accounts and the set of
// summarized windows from the pdp topic.
func (s *Stage) recoverPDP(ctx context.Context) error {
	s.pdp, s.pdpDone = NewPDPStore(), map[string]bool{}
	if s.cfg.PDPTopic == "" {
		return nil
	}
	units := 0
	err := s.cfg.Conn.ReadAll(ctx, s.cfg.PDPTopic, func(m kafka.Message) error {
		switch pdpType(m) {
		case schema.PDPTypeUnit:
			u, err := schema.DecodePDPUnit(m.Value)
			if err != nil {
				s.cfg.Log.Error("skipping undecodable pdp unit record", "offset", m.Offset, "err", err)
				return nil
			}
			if err := s.pdp.Restore(u); err != nil {
				s.cfg.Log.Error("skipping invalid pdp unit record", "offset", m.Offset, "err", err)
				return nil
			}
			units++
		case schema.PDPTypeSummary:
			s.pdpDone[string(m.Key)] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuild per-instance accounts from %s: %w", s.cfg.PDPTopic, err)
	}
	if units > 0 {
		s.cfg.Log.Info("per-instance accounts rebuilt", "records", units)
	}
	return nil
}

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
// pdp topic, before any ledger record of the window: a crash after this and
// before the ledger replays the window, whose summary key is then known
// (pdpDone) and whose units are not charged twice (PDPStore.Window is
// idempotent per unit and window). A failure here stops the window before
// anything is charged.
func (s *Stage) writePDP(ctx context.Context, ps *plan.Stream, w Window, outcomes []Outcome) error {
	if s.pdpW == nil || !ps.Config.PDP {
		return nil
	}
	key := schema.PDPSummaryKey(w.Stream, w.Start)
	if s.pdpDone[key] {
		return nil
	}
	sum, units, err := s.pdp.Window(ps, w, outcomes, s.cfg.Now())
	if err != nil {
		return fmt.Errorf("per-instance DP of window %d: %w", w.Start, err)
	}
	msgs := make([]kafka.Message, 0, len(units)+1)
	unitHdr := []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeUnit)}}
	for _, u := range units {
		b, err := schema.EncodePDPUnit(u)
		if err != nil {
			return fmt.Errorf("encode pdp unit: %w", err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(schema.PDPUnitKey(u.Stream, u.Unit)), Value: b, Headers: unitHdr})
	}
	b, err := schema.EncodePDPSummary(sum)
	if err != nil {
		return fmt.Errorf("encode pdp summary: %w", err)
	}
	msgs = append(msgs, kafka.Message{Key: []byte(key), Value: b,
		Headers: []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeSummary)}}})
	if err := s.pdpW.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("write per-instance DP of window %d: %w", w.Start, err)
	}
	s.pdpDone[key] = true
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
	// Another instance may have owned these streams until now: rebuild from
	// the ledger before releasing anything.
	if _, err := retry(ctx, func() (struct{}, error) { return struct{}{}, s.Recover(ctx) }, log); err != nil {
		if errors.Is(err, ErrLedgerLost) {
			return err
		}
		return nil
	}
	r, err := s.cfg.Conn.NewPartitionReader(a.Topic, a.Partition, a.Offset)
	if err != nil {
		return err
	}
	defer r.Close()
	merger := s.newMerger(log)
	var committed int64 = -1
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
	// Commit only on a clean stop: after a failed release the merger has
	// already dropped the window, and committing would skip its partials.
	for {
		// Release the complete windows that have come due: their end plus
		// grace has passed on this stage's clock (Merger.Due). This runs
		// after every partial and every quiet second.
		for _, w := range merger.Due(s.cfg.Now()) {
			if err := s.releaseWindow(ctx, w); err != nil {
				if ctx.Err() != nil {
					return nil // stopping: the uncommitted partials are replayed
				}
				return err
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
				return nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				commit(false)
				continue
			}
			return fmt.Errorf("read partials: %w", err)
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

// releaseWindow releases every configured release of a complete window that
// the ledger does not hold yet: the Releaser decides them, and each is
// appended to the ledger, acknowledged, and only then published.
func (s *Stage) releaseWindow(ctx context.Context, w Window) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
		pub := kafka.Message{Key: []byte(id), Value: o.Charge.Payload}
		s.failpoint(FailpointBeforeLedger, pub)
		// Ledger first (invariant 1): the acknowledged ledger record is the
		// commit point; the releases topic is published from it.
		if err := s.ledger.WriteMessages(ctx, kafka.Message{Key: []byte(w.Stream), Value: o.Ledger}); err != nil {
			return fmt.Errorf("append %s to the ledger: %w (nothing was published; the window is retried after a restart)", id, err)
		}
		s.failpoint(FailpointLedgerAppended, pub)
		if err := s.releases.WriteMessages(ctx, pub); err != nil {
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

// publishState writes the stream's budget state to the compacted
// accountant topic (key: stream) and the budget gauges.
func (s *Stage) publishState(ctx context.Context, ps *plan.Stream, period int64) error {
	st, _ := s.rel.State(ps.Config.Name, period, s.cfg.Now())
	b, err := schema.EncodeBudgetState(st)
	if err != nil {
		return fmt.Errorf("encode budget state: %w", err)
	}
	if err := s.accountantW.WriteMessages(ctx, kafka.Message{Key: []byte(ps.Config.Name), Value: b}); err != nil {
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
		if errors.Is(err, ErrLedgerLost) {
			// Retrying cannot bring the charges back.
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
