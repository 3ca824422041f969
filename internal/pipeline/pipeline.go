// Package pipeline wires a configuration to running stages: it resolves the
// brokers (starting the embedded one when none are configured), creates the
// topics, builds each stream's decoder, and runs the accumulate and release
// stages in one process. `dpstream run`, `dpstream demo` and the end-to-end
// tests all go through it.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/accumulate"
	"github.com/dpstream/dpstream/stages/release"
)

// Stages selects which stages a process runs (for scaling out: many
// accumulate processes, one release process).
type Stages struct {
	Accumulate bool
	Release    bool
}

// Options configures Run.
type Options struct {
	Config *config.Config
	Plan   []plan.Stream
	// Conn is the Kafka connection of every stage and admin request:
	// kafkaio.Connect(brokers, Config.Security) for configured brokers,
	// Embedded.Conn for the embedded one. Required; Run refuses a Conn
	// whose security is weaker than Config.Security asks for.
	Conn    *kafkaio.Connection
	Stages  Stages
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// Noise overrides the release noise (tests); default crypto/rand.
	Noise noise.Sampler
	// OnRelease is called for each published release.
	OnRelease func(schema.Release)
	// Now overrides the wall clock.
	Now func() time.Time
	// InstanceName is appended to log lines (tests run several instances).
	InstanceName string
	// SessionTimeout, if set, overrides the config's session_timeout
	// (tests).
	SessionTimeout time.Duration
	// RecordBytes, if set, lowers the largest record the stages write
	// before splitting a partial or a release into chunks (default
	// schema.MaxRecordBytes), so tests exercise chunks with small
	// releases. It must be the same in every run over the same topics, or
	// a replayed window would split differently.
	RecordBytes int
	// Failpoint, if set, is called at each step of both stages' commit
	// protocols (accumulate.Failpoint*, release.Failpoint*; rec is empty
	// for the accumulate steps). The crash tests kill the process there.
	// Nil in production.
	Failpoint func(step string, rec kafka.Message)
	// TopicCheckInterval is how often Run checks that the topics of the
	// selected stages still exist (default DefaultTopicCheckInterval).
	TopicCheckInterval time.Duration
	// CheckpointInterval and CheckpointCharges, if set, override how often
	// the release stage checkpoints and trims its ledger partitions
	// (release.Config; tests make them frequent).
	CheckpointInterval time.Duration
	CheckpointCharges  int
}

// Topics lists every topic the configuration needs.
func Topics(c *config.Config) []kafkaio.TopicSpec {
	t := c.Topics
	specs := []kafkaio.TopicSpec{
		// As many partitions each: partition p of both belongs to the
		// same streams, owned by one release instance at a time.
		{Name: t.Partials, Partitions: max(c.ReleasePartitions, 1)},
		{Name: t.Releases, Partitions: 1},
		{Name: t.Ledger, Partitions: max(c.ReleasePartitions, 1), Forever: true},
		{Name: t.Accountant, Partitions: 1, Compact: true},
		{Name: t.PDP, Partitions: 1, Compact: true},
		{Name: t.DeadLetter, Partitions: 1},
	}
	if kind.ConfigAnswersQueries(c) {
		// One partition each: every release instance reads every request
		// in order and answers those of the streams it owns, resuming at
		// its ledger partition's last answered offset.
		specs = append(specs, kafkaio.TopicSpec{Name: t.Requests, Partitions: 1}, kafkaio.TopicSpec{Name: t.Responses, Partitions: 1})
	}
	for _, s := range c.Streams {
		specs = append(specs, kafkaio.TopicSpec{Name: s.Topic, Partitions: s.Partitions})
	}
	return specs
}

// Groups are the consumer group ids of the two stages.
func Groups(c *config.Config) (accumulateGroup, releaseGroup string) {
	return c.Group + "-accumulate", c.Group + "-release"
}

// Inputs builds the accumulate stage's view of every stream.
func Inputs(c *config.Config, ps []plan.Stream) ([]accumulate.Input, error) {
	var out []accumulate.Input
	for i := range ps {
		st := ps[i].Config
		schemaText, err := st.AvroSchema()
		if err != nil {
			return nil, err
		}
		dec, err := schema.NewDecoder(st.Format, schemaText, st.SchemaID)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", st.Name, err)
		}
		as := &accumulate.Stream{
			Name: st.Name, Size: st.Window.Size.Milliseconds(), Grace: st.Window.Grace.Milliseconds(),
			IdleTimeout: st.Window.IdleTimeout, MaxEvents: st.Contribution.MaxEventsPerWindow,
			MaxSkew: st.Window.MaxSkew.Milliseconds(),
			// k windows per horizon of the continual releases (config
			// checks they share one), which kind/running assumes.
			MaxWindows: st.Contribution.MaxWindows, Horizon: int64(st.Horizon()),
			// Per-unit contributions feed the per-instance DP certificates
			// on the restricted pdp topic.
			UnitContributions: st.PDP,
		}
		x := &accumulate.Extractor{Unit: st.PrivacyUnit, EventTime: eventTimeField(st.EventTime),
			EventLevel: st.PrivacyUnit == config.PrivacyUnitEvent}
		// Event.Values holds each release's first field at the release's
		// index, then the further fields of every release, in order; each
		// release's statistic is told where its fields are.
		var more []kind.Field
		var keyed []bool // parallel to x.Fields
		for ri, r := range ps[i].Releases {
			fields := r.Kind.Fields()
			own := kind.Field{} // a release that reads no field: a zero
			at := make([]int, len(fields))
			for j, f := range fields {
				if j == 0 {
					own, at[0] = f, ri
					continue
				}
				at[j] = len(ps[i].Releases) + len(more)
				more = append(more, f)
			}
			stat, err := r.Kind.Statistic(at)
			if err != nil {
				return nil, fmt.Errorf("stream %s release %s: %w", st.Name, r.Config.Name, err)
			}
			as.Releases = append(as.Releases, accumulate.Release{Name: r.Config.Name, Stat: stat})
			x.Fields = append(x.Fields, own.Name)
			x.Categories = append(x.Categories, own.Categories)
			keyed = append(keyed, own.Key)
		}
		for _, f := range more {
			x.Fields = append(x.Fields, f.Name)
			keyed = append(keyed, f.Key)
			if f.Categories != nil {
				for len(x.Categories) < len(x.Fields)-1 {
					x.Categories = append(x.Categories, nil)
				}
				x.Categories = append(x.Categories, f.Categories)
			}
		}
		if slices.Contains(keyed, true) {
			x.Keyed = keyed
		}
		out = append(out, accumulate.Input{Stream: as, Topic: st.Topic, Decoder: dec, Extractor: x, MaxEventBytes: st.MaxEventBytes})
	}
	return out, nil
}

func eventTimeField(f string) string {
	if f == "record_timestamp" {
		return ""
	}
	return f
}

// Run runs the selected stages until ctx is done or one fails; it returns
// the first failure (nil on cancellation). It is New(o).Run(ctx).
func Run(ctx context.Context, o Options) error {
	return New(o).Run(ctx)
}

// Pipeline is one run of the selected stages. Its Run drains the stages on
// cancellation; InFlight tells, meanwhile, what they have not finished, so
// a caller with a shutdown deadline can say what it abandons.
type Pipeline struct {
	o Options

	mu      sync.Mutex
	running map[string]stage // stages whose Run has not returned
}

// stage is what Pipeline needs of accumulate.Stage and release.Stage.
type stage interface {
	Run(context.Context) error
	InFlight() []string
}

// New returns a pipeline for o; nothing is started before Run.
func New(o Options) *Pipeline {
	return &Pipeline{o: o, running: map[string]stage{}}
}

// Run runs the selected stages until ctx is done or one fails; it returns
// the first failure (nil on cancellation). A Pipeline runs once.
//
// It reports the process state in o.Metrics.Health, which /readyz serves:
// Ready once the brokers answered (the topics exist) and every stage is
// running, Stopping from the moment ctx is done or a stage fails. When
// either happens the other stages drain (see accumulate.Stage.Run and
// release.Stage.Run: in-flight work finishes, offsets are committed, the
// consumer groups are left, the writers flushed); Run returns once all have.
// Run itself sets no deadline on the drain: a caller that needs one stops
// waiting and reports InFlight.
func (p *Pipeline) Run(ctx context.Context) error {
	o := p.o
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	if o.InstanceName != "" {
		log = log.With("instance", o.InstanceName)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	health := o.Metrics.Health
	defer health.SetStopping()
	if err := checkConn(o.Conn, o.Config.Security); err != nil {
		return err
	}
	if err := o.Conn.Check(ctx); err != nil {
		return err
	}
	if err := o.Conn.EnsureTopics(ctx, Topics(o.Config)); err != nil {
		return err
	}
	if err := checkPartitions(ctx, o.Conn, o.Config.Topics); err != nil {
		return err
	}
	if o.Stages.Release {
		checkLedgerRetention(ctx, o.Conn, o.Config.Topics.Ledger, log)
		for _, topic := range []string{o.Config.Topics.Ledger, o.Config.Topics.Accountant} {
			checkDurability(ctx, o.Conn, topic, log)
		}
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	starts, err := StreamStarts(ctx, o.Conn, o.Config, now(), log)
	if err != nil {
		return err
	}
	accGroup, relGroup := Groups(o.Config)
	session := o.Config.SessionTimeout
	if o.SessionTimeout > 0 {
		session = o.SessionTimeout
	}
	var stages []stage
	var names []string
	if o.Stages.Accumulate {
		inputs, err := Inputs(o.Config, o.Plan)
		if err != nil {
			return err
		}
		for _, in := range inputs {
			in.Stream.Start = starts[in.Stream.Name]
		}
		ac := accumulate.Config{
			Conn: o.Conn, GroupID: accGroup, PartialsTopic: o.Config.Topics.Partials,
			DeadLetterTopic: o.Config.Topics.DeadLetter, Inputs: inputs, Metrics: o.Metrics,
			Log: log.With("stage", "accumulate"), Now: o.Now, SessionTimeout: session, RecordBytes: o.RecordBytes,
		}
		if fp := o.Failpoint; fp != nil {
			ac.Failpoint = func(step string) { fp(step, kafka.Message{}) }
		}
		acc, err := accumulate.New(ac)
		if err != nil {
			return err
		}
		stages, names = append(stages, acc), append(names, "accumulate")
	}
	if o.Stages.Release {
		rel, err := release.New(release.Config{
			Conn: o.Conn, GroupID: relGroup, PartialsTopic: o.Config.Topics.Partials,
			ReleasesTopic: o.Config.Topics.Releases, LedgerTopic: o.Config.Topics.Ledger,
			AccountantTopic: o.Config.Topics.Accountant, PDPTopic: o.Config.Topics.PDP, PDPStoreDir: o.Config.PDPStore, Streams: o.Plan, Noise: o.Noise,
			RequestsTopic: o.Config.Topics.Requests, ResponsesTopic: o.Config.Topics.Responses,
			Metrics: o.Metrics, Log: log.With("stage", "release"), Now: o.Now, OnRelease: o.OnRelease,
			SessionTimeout: session, Failpoint: o.Failpoint, Starts: starts, RecordBytes: o.RecordBytes,
			CheckpointInterval: o.CheckpointInterval, CheckpointCharges: o.CheckpointCharges,
		})
		if err != nil {
			return err
		}
		// Ready only once every stream this instance owns is rebuilt and
		// releasing.
		health.AddReadyCheck(rel.Ready)
		stages, names = append(stages, rel), append(names, "release")
	}
	if len(stages) == 0 {
		return errors.New("no stage selected")
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(stages))
	p.mu.Lock()
	for i, st := range stages {
		p.running[names[i]] = st
	}
	p.mu.Unlock()
	for i, st := range stages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := st.Run(ctx)
			p.mu.Lock()
			delete(p.running, names[i])
			p.mu.Unlock()
			if err != nil {
				errs[i] = fmt.Errorf("%s stage: %w", names[i], err)
				log.Error("stage failed; stopping the others", "stage", names[i], "err", err)
				cancel()
				return
			}
			log.Info("stage stopped", "stage", names[i])
		}()
	}
	// A deleted topic stops the pipeline with an error that names it: a
	// reader of a deleted topic would otherwise wait for records forever.
	watched := watchedTopics(o.Config, o.Stages)
	interval := o.TopicCheckInterval
	if interval <= 0 {
		interval = DefaultTopicCheckInterval
	}
	var watchErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := watchTopics(ctx, o.Conn, watched, interval, log); err != nil {
			watchErr = err
			log.Error("a topic was deleted; stopping", "err", err)
			cancel()
		}
	}()
	if ctx.Err() == nil {
		health.SetReady()
		log.Info("stages running", "stages", names)
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			// Shutdown began (or a stage failed): stop being routed to
			// before the drain, not after it.
			health.SetStopping()
			log.Info("stopping: no further input is read; in-flight work finishes, offsets are committed, consumer groups are left")
		case <-stopped:
		}
	}()
	wg.Wait()
	close(stopped)
	if watchErr != nil {
		return errors.Join(append([]error{watchErr}, errs...)...)
	}
	if err := errors.Join(errs...); err != nil {
		// A stage that failed writing to or reading from a deleted topic
		// reports the client's error ("topic not found"); say which topic
		// is gone and what to do, first.
		if parent.Err() == nil {
			dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
			missing := missingTopicErrors(dctx, o.Conn, watched)
			dcancel()
			if len(missing) > 0 {
				return errors.Join(append(missing, err)...)
			}
		}
		return err
	}
	return nil
}

// InFlight describes the work the pipeline has not finished: a line for
// each stage whose Run has not returned, followed by the stage's own
// account of its in-flight work. It is empty once Run returned, and safe to
// call from any goroutine while Run runs.
func (p *Pipeline) InFlight() []string {
	p.mu.Lock()
	names := make([]string, 0, len(p.running))
	for n := range p.running {
		names = append(names, n)
	}
	sort.Strings(names)
	stages := make([]stage, len(names))
	for i, n := range names {
		stages[i] = p.running[n]
	}
	p.mu.Unlock()
	var out []string
	for i, n := range names {
		out = append(out, fmt.Sprintf("%s stage: not stopped (consumer group not left: its partitions move after the session timeout)", n))
		out = append(out, stages[i].InFlight()...)
	}
	return out
}

// StreamStarts returns the start of each stream's release schedule (unix
// ms, a window boundary), recording it in the ledger the first time a
// stream runs (ledger.StreamStarts: the configured start, else the first
// one recorded, else the window holding now). Every process calls it
// before its stages start and hands the starts to both stages, so an
// accumulate-only and a release-only process agree, and a restart, or a
// partition that never committed a watermark, starts where the stream
// started rather than where some event time says.
func StreamStarts(ctx context.Context, conn *kafkaio.Connection, c *config.Config, now time.Time, log *slog.Logger) (map[string]int64, error) {
	scheds := make([]ledger.StreamSchedule, 0, len(c.Streams))
	for _, s := range c.Streams {
		scheds = append(scheds, ledger.StreamSchedule{Name: s.Name, Size: s.Window.Size, Configured: s.Start})
	}
	starts, err := ledger.StreamStarts(ctx, conn, c.Topics.Ledger, scheds, now)
	if err != nil {
		return nil, fmt.Errorf("the streams' release schedule: %w", err)
	}
	for _, s := range c.Streams {
		log.Info("release schedule: every window from the stream's start on is released once its end plus grace has passed",
			"stream", s.Name, "start", time.UnixMilli(starts[s.Name]).UTC().Format(time.RFC3339), "configured", !s.Start.IsZero())
	}
	return starts, nil
}

// checkLedgerRetention warns when the ledger can expire: the accountant is
// rebuilt from it (its latest checkpoint and the charges after it) at every
// start, and only the release stage may delete its records, up to a
// checkpoint; an expired charge or checkpoint would be forgotten
// and the budget overspent. dpstream creates the ledger with retention -1;
// a topic created by someone else may differ.
func checkLedgerRetention(ctx context.Context, conn *kafkaio.Connection, ledger string, log *slog.Logger) {
	v, err := conn.TopicConfig(ctx, ledger, "retention.ms")
	if err != nil {
		log.Warn("could not check the ledger's retention; it must be unlimited (retention.ms=-1)", "topic", ledger, "err", err)
		return
	}
	if v != "-1" {
		log.Error("the ledger topic expires records: budget charges older than its retention will be forgotten at the next start and the budget overspent; set retention.ms=-1 on it",
			"topic", ledger, "retention.ms", v)
	}
}

// checkPartitions refuses a partials topic and a ledger whose partition
// counts differ: partition p of both belongs to the same streams
// (ledger.PartitionOf), owned by one release instance at a time.
func checkPartitions(ctx context.Context, conn *kafkaio.Connection, t config.Topics) error {
	parts, err := conn.Partitions(ctx, t.Partials)
	if err != nil {
		return fmt.Errorf("topics.partials %s: %w", t.Partials, err)
	}
	led, err := conn.Partitions(ctx, t.Ledger)
	if err != nil {
		return fmt.Errorf("topics.ledger %s: %w", t.Ledger, err)
	}
	if parts != led {
		return fmt.Errorf("topics.partials %s has %d partitions and topics.ledger %s has %d: they must have as many (partition p of both holds the same streams); "+
			"point topics.partials or topics.ledger at topics of equal partition counts (release_partitions sets it for the topics dpstream creates)", t.Partials, parts, t.Ledger, led)
	}
	return nil
}

// checkDurability logs an error for each setting of a budget topic (the
// ledger, and the accountant topic that witnesses it) under which the loss
// of one broker can drop writes the cluster acknowledged: the ledger would
// then forget charges, and the release stage either refuses to start (when
// the accountant topic or the releases topic witness them) or, if every
// witness lost them too, spends the budget again. A single-broker cluster
// (the embedded broker) is not checked: there, the broker's own fsync
// decides (embedded.sync).
func checkDurability(ctx context.Context, conn *kafkaio.Connection, topic string, log *slog.Logger) {
	d, err := conn.Durability(ctx, topic)
	if err != nil {
		log.Warn("could not check the replication of a budget topic", "topic", topic, "err", err)
		return
	}
	for _, p := range durabilityProblems(d) {
		log.Error("a budget topic can lose acknowledged writes when a broker fails", "topic", topic, "problem", p)
	}
}

// durabilityProblems lists what makes acknowledged writes to a topic
// losable on a cluster of d.Brokers brokers, each with the fix.
func durabilityProblems(d kafkaio.TopicDurability) []string {
	if d.Brokers < 2 {
		return nil
	}
	var out []string
	if want := min(3, d.Brokers); d.Replicas < want {
		out = append(out, fmt.Sprintf("replication factor %d: want %d (reassign the partition to more brokers with kafka-reassign-partitions.sh)", d.Replicas, want))
	}
	if d.MinInSync < 2 {
		out = append(out, fmt.Sprintf("min.insync.replicas=%d: with acks=all a write is acknowledged once that many replicas have it; want 2 (kafka-configs.sh --alter --entity-type topics --entity-name <topic> --add-config min.insync.replicas=2)", d.MinInSync))
	}
	if d.UncleanElection {
		out = append(out, "unclean.leader.election.enable=true lets a replica that missed writes become leader and drop them; set it to false")
	}
	return out
}

// checkConn refuses a missing connection, and one without the TLS or SASL
// the config asks for: a caller that built its Connection some other way
// than kafkaio.Connect(brokers, cfg.Security) must not silently run a
// secured configuration in plaintext.
func checkConn(conn *kafkaio.Connection, sec config.Security) error {
	switch {
	case conn == nil || len(conn.Brokers) == 0:
		return errors.New("pipeline: no Kafka connection (brokers) given")
	case sec.TLS.Enabled && conn.TLS() == nil:
		return errors.New("pipeline: the config enables security.tls but the Kafka connection has no TLS")
	case sec.SASL.Mechanism != "" && conn.SASL() == nil:
		return fmt.Errorf("pipeline: the config sets security.sasl (%s) but the Kafka connection has no SASL", sec.SASL.Mechanism)
	case sec.SASL.Mechanism != "" && conn.SASL().Name() != sec.SASL.Mechanism:
		return fmt.Errorf("pipeline: the config sets security.sasl mechanism %s but the Kafka connection uses %s", sec.SASL.Mechanism, conn.SASL().Name())
	}
	return nil
}
