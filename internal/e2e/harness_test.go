package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// harness is one test's Kafka cluster (testkit.NewCluster: the embedded
// broker in the test's directory, or KAFKA_BROKERS with topic names made
// unique per test) and pipeline configuration.
type harness struct {
	// Cluster is how the test and its pipelines reach the cluster:
	// plaintext to the embedded broker or KAFKA_BROKERS, TLS and SASL in
	// the security tests.
	*testkit.Cluster
	t    *testing.T
	dir  string
	cfg  *config.Config
	plan []plan.Stream
	log  *slog.Logger
	// yaml is the configuration text, its stream topics prefixed with the
	// cluster's Prefix: a child process (the crash test's) rebuilds the
	// same cfg from it with parseConfig.
	yaml string
	// shift is what the test clock (now) adds to the wall clock, fixed at
	// the first pipeline start (0: not yet); wall makes the pipelines run
	// on the wall clock itself (useWallClock).
	shift time.Duration
	wall  bool
	// checkpointEvery, if set, makes the pipelines checkpoint and trim
	// their ledger partitions that often (see checkpoints).
	checkpointEvery time.Duration
}

// The test clock. The tests' events sit at a fixed historical time (base),
// and their windows close by event time. Under the release schedule
// (DESIGN section 5) a window closes only once the wall clock has passed
// its end plus grace, and events before a stream's start are not counted.
// So every test stream starts at base (parseConfig gives it that start
// unless its config sets one), and the pipelines run on a clock that reads
// base + testClockLead when the test's first pipeline starts and then runs
// at the wall clock's pace: the data of every test (at most about 30
// windows of 1s) is then in the past, no window is held back by the
// clock, and the windows after the data follow the clock as they followed
// the wall clock before. The crash test's children read the same clock
// from testClockEnv.
const (
	testClockLead = time.Minute
	testClockEnv  = "DPSTREAM_TEST_CLOCK_SHIFT_MS"
)

// withTestStart gives every stream without a configured start the start
// base.
func withTestStart(cfg *config.Config) {
	for i := range cfg.Streams {
		if cfg.Streams[i].Start.IsZero() {
			cfg.Streams[i].Start = time.UnixMilli(base).UTC()
		}
	}
}

// useWallClock makes the test's pipelines run on the wall clock, with the
// streams' starts as their configs set them (recorded at the first run if
// none): for the tests of the schedule itself. Call it before start.
func (h *harness) useWallClock() {
	h.wall = true
	for i := range h.cfg.Streams {
		if h.cfg.Streams[i].Start.Equal(time.UnixMilli(base)) {
			h.cfg.Streams[i].Start = time.Time{}
		}
	}
}

// clock returns the pipelines' clock (see testClockLead); nil means the
// wall clock.
func (h *harness) clock() func() time.Time {
	if h.wall {
		return nil
	}
	withTestStart(h.cfg) // harnesses not made by newHarness (secureHarness)
	if h.shift == 0 {
		h.shift = time.UnixMilli(base).Add(testClockLead).Sub(time.Now())
	}
	shift := h.shift
	return func() time.Time { return time.Now().Add(shift) }
}

// clockEnv is the environment entry that gives a child process the test's
// clock (clockFromEnv).
func (h *harness) clockEnv() string {
	if h.clock() == nil {
		return testClockEnv + "="
	}
	return fmt.Sprintf("%s=%d", testClockEnv, h.shift.Milliseconds())
}

// clockFromEnv returns the clock a parent test gave this process with
// clockEnv (nil: the wall clock).
func clockFromEnv() func() time.Time {
	ms, err := strconv.ParseInt(os.Getenv(testClockEnv), 10, 64)
	if err != nil {
		return nil
	}
	shift := time.Duration(ms) * time.Millisecond
	return func() time.Time { return time.Now().Add(shift) }
}

// newHarness starts the test's cluster, renders p (its stream topics with
// the cluster's prefix; a stream's schema, e.g. trip.avsc, is found in the
// test's directory), parses and plans it, and creates its topics.
func newHarness(t *testing.T, p *testkit.Pipeline) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, Cluster: testkit.NewCluster(t, testkit.DataDir(filepath.Join(dir, "kafka")))}
	if err := os.WriteFile(filepath.Join(dir, "trip.avsc"), []byte(schema.TripSchema()), 0o644); err != nil {
		t.Fatal(err)
	}
	h.yaml = expandContinual(p.TopicPrefix(h.Prefix).YAML())
	cfg, ps, err := parseConfig(h.yaml, dir, h.Prefix, h.External())
	if err != nil {
		t.Fatal(err)
	}
	h.cfg, h.plan = cfg, ps
	h.log = testLogger(t)
	h.CreateTopics(pipeline.Topics(cfg)...)
	return h
}

// testLogger is the pipelines' logger: warnings in the test's log, and
// everything with -v.
func testLogger(t *testing.T) *slog.Logger {
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

// parseConfig parses a test configuration and plans it; streams without a
// start start at base (see testClockLead). On an external broker (shared
// by many tests and runs) the group and the internal topics get the test's
// prefix too.
func parseConfig(yamlText, dir, prefix string, external bool) (*config.Config, []plan.Stream, error) {
	cfg, err := config.Parse([]byte(yamlText), filepath.Join(dir, "pipeline.yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	if !strings.Contains(yamlText, "pdp_store:") {
		// The test's directory, not the package's: every release instance
		// of the test (and each crash-test life) shares it, each in a slot
		// of its own (pdpstore.Open).
		cfg.PDPStore = filepath.Join(dir, "pdp")
	}
	withTestStart(cfg)
	if external {
		cfg.Group = prefix
		for _, p := range []*string{&cfg.Topics.Partials, &cfg.Topics.Releases, &cfg.Topics.Ledger, &cfg.Topics.Accountant, &cfg.Topics.PDP, &cfg.Topics.DeadLetter, &cfg.Topics.Requests, &cfg.Topics.Responses} {
			*p = prefix + "." + *p
		}
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("plan: %w", err)
	}
	return cfg, ps, nil
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// instance is one running pipeline process (some stages).
type instance struct {
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	metrics *metrics.Metrics
}

func (h *harness) start(name string, st pipeline.Stages, sampler noise.Sampler) *instance {
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{cancel: cancel, done: make(chan struct{}), metrics: metrics.New()}
	now := h.clock()
	go func() {
		defer close(in.done)
		ci, cc := checkpoints(h.checkpointEvery)
		in.err = pipeline.Run(ctx, pipeline.Options{Config: h.cfg, Plan: h.plan, Conn: h.Conn, Stages: st,
			Metrics: in.metrics, Log: h.log, Noise: sampler, InstanceName: name, Now: now,
			CheckpointInterval: ci, CheckpointCharges: cc, Failpoint: archiveBeforeTrim(h.archiveDir(), h.Conn, h.cfg.Topics.Ledger, nil)})
	}()
	h.t.Cleanup(in.stop)
	return in
}

// partialsPartition is the partition of the partials topic (and of the
// ledger) a stream belongs to.
func (h *harness) partialsPartition(stream string) int {
	return ledger.PartitionOf(stream, h.cfg.ReleasePartitions)
}

func (in *instance) stop() {
	in.cancel()
	<-in.done
}

func (in *instance) check(t *testing.T) {
	t.Helper()
	select {
	case <-in.done:
		if in.err != nil && !errors.Is(in.err, context.Canceled) {
			t.Fatalf("pipeline instance failed: %v", in.err)
		}
	default:
	}
}

// event is a test event with its truth attributes.
type event struct {
	Unit string
	TS   int64
	V    float64
}

// releases returns every release the pipeline published.
func (h *harness) releases() []schema.Release {
	h.t.Helper()
	return h.Releases(h.cfg.Topics.Releases)
}

// uniqueReleases returns the published releases by id, failing the test
// for every release published more than once.
func (h *harness) uniqueReleases() map[string]schema.Release {
	h.t.Helper()
	byID := map[string]schema.Release{}
	for _, r := range h.releases() {
		if _, dup := byID[r.ReleaseID]; dup {
			h.t.Errorf("release %s published more than once", r.ReleaseID)
		}
		byID[r.ReleaseID] = r
	}
	return byID
}

// ledger returns the ledger's valid charges in ledger order
// (testkit.Cluster.Ledger).
// ledger returns every valid charge the ledger ever held (fullLedger), as
// the accountant counts them: byte-identical repeats left out.
func (h *harness) ledger() []schema.LedgerCharge {
	h.t.Helper()
	var out []schema.LedgerCharge
	books := ledgerBooks{}
	for _, m := range h.fullLedger() {
		e, err := books.Apply(m)
		if err != nil {
			h.t.Fatalf("ledger: %v", err)
		}
		if e.Type == schema.LedgerTypeCharge && e.Valid && !e.Identical {
			out = append(out, e.Charge)
		}
	}
	return out
}

// lastBudgetState returns the latest budget state of stream on the
// accountant topic (zero if none).
func (h *harness) lastBudgetState(stream string) schema.BudgetState {
	h.t.Helper()
	var last schema.BudgetState
	for _, st := range h.BudgetStates(h.cfg.Topics.Accountant) {
		if st.Stream == stream {
			last = st
		}
	}
	return last
}

// partials returns the partials the release stage used: the first one per
// (stream, window, partition), in topic order.
func (h *harness) partials() map[string]map[int64]map[int32]schema.Partial {
	h.t.Helper()
	return h.Partials(h.cfg.Topics.Partials)
}

// waitFor polls cond until it holds or the timeout passes, failing at
// once if one of the instances has failed.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool, instances ...*instance) {
	t.Helper()
	testkit.WaitFor(t, timeout, what, func() bool {
		if cond() {
			return true
		}
		for _, in := range instances {
			in.check(t)
		}
		return false
	})
}

// releasedWindows returns the distinct window starts with a release of the
// given name.
func releasedWindows(rs []schema.Release, name string) []int64 {
	seen := map[int64]bool{}
	for _, r := range rs {
		if r.Release == name {
			seen[r.WindowStart] = true
		}
	}
	out := make([]int64, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ledgerBooks applies ledger records to one ledger.Book per partition:
// each partition is a log of its own (its own epochs and checkpoints).
type ledgerBooks map[int]*ledger.Book

// Apply applies m to the Book of its partition.
func (b ledgerBooks) Apply(m kafka.Message) (ledger.Entry, error) {
	book := b[m.Partition]
	if book == nil {
		book = &ledger.Book{}
		b[m.Partition] = book
	}
	return book.Apply(m)
}

// Void is the void charges applied, over every partition.
func (b ledgerBooks) Void() int {
	n := 0
	for _, book := range b {
		n += book.Void()
	}
	return n
}

// Start is a stream's first recorded start, on whichever partition holds
// it.
func (b ledgerBooks) Start(stream string) (schema.StreamStart, bool) {
	for _, book := range b {
		if st, ok := book.Start(stream); ok {
			return st, true
		}
	}
	return schema.StreamStart{}, false
}

// archiveDir is ledgerArchiveDir with checkpoints on, "" without.
func (h *harness) archiveDir() string {
	if h.checkpointEvery <= 0 {
		return ""
	}
	return h.ledgerArchiveDir()
}

// ledgerArchiveDir is where the pipelines of a harness with checkpoints
// keep the ledger records they trim (archiveBeforeTrim), so that checks
// still see every record ever written.
func (h *harness) ledgerArchiveDir() string { return filepath.Join(h.dir, "ledger-archive") }

// fullLedger returns every record the ledger ever held: those trimmed away
// since (from the archives written before each trim) and the topic's, each
// once, by partition and offset.
func (h *harness) fullLedger() []kafka.Message {
	h.t.Helper()
	return ledgerWithArchive(h.t, h.Cluster, h.cfg.Topics.Ledger, h.ledgerArchiveDir())
}

// archiveBeforeTrim wraps a pipeline's failpoint: at
// release.FailpointCheckpointConfirmed, before the stage deletes the
// ledger partition's records before the checkpoint, it appends them to a
// file of dir (the harness's ledgerArchiveDir), so that the checks can
// read every record ever written (fullLedger). Nil dir: fp as it is.
// archiveSeq numbers the archive files of this process.
var archiveSeq atomic.Int64

func archiveBeforeTrim(dir string, conn *kafkaio.Connection, ledgerTopic string, fp func(string, kafka.Message)) func(string, kafka.Message) {
	if dir == "" {
		return fp
	}
	return func(step string, rec kafka.Message) {
		if step == release.FailpointCheckpointConfirmed {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			// One file a trim: the same trim point can be archived twice
			// (a takeover trims again what a paused owner was about to).
			path := filepath.Join(dir, fmt.Sprintf("pid%d-p%d-%d-%d.jsonl", os.Getpid(), rec.Partition, rec.Offset, archiveSeq.Add(1)))
			if err := testkit.ArchiveRecords(ctx, conn, ledgerTopic, rec.Partition, rec.Offset, path); err != nil {
				fmt.Fprintf(os.Stderr, "archive the ledger before a trim: %v\n", err)
				os.Exit(3) // the checks could not see what is trimmed
			}
			cancel()
		}
		if fp != nil {
			fp(step, rec)
		}
	}
}

// checkBudget compares the ledger's valid charges with the budget states
// the accountant topic holds last, stream by stream: each stream's latest
// state must count the charges and refusals the ledger holds for its
// stream and period, and every stream the ledger charged must have one.
func (h *harness) checkBudget() []string {
	type sp struct {
		stream string
		period int64
	}
	type counts struct{ ok, refused int64 }
	fromLedger := map[sp]counts{}
	streams := map[string]bool{}
	for _, lc := range h.ledger() {
		k := sp{lc.Stream, lc.Period}
		c := fromLedger[k]
		// As the accountant counts: an ok charge with noise components (a
		// continual release's later windows and a prediction release's
		// windows charge nothing), and every refusal.
		switch {
		case lc.Status == release.StatusOK && len(lc.Charges) > 0:
			c.ok++
		case lc.Status == release.StatusBudgetExhausted:
			c.refused++
		}
		fromLedger[k] = c
		streams[lc.Stream] = true
	}
	last := map[string]schema.BudgetState{}
	for _, m := range h.ReadAll(h.cfg.Topics.Accountant) {
		s, err := schema.DecodeBudgetState(m.Value)
		if err != nil {
			return []string{fmt.Sprintf("budget state at %d: %v", m.Offset, err)}
		}
		last[s.Stream] = s
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(streams)) {
		st, ok := last[name]
		if !ok {
			out = append(out, fmt.Sprintf("stream %s: the ledger holds charges, the accountant topic no budget state", name))
			continue
		}
		c := fromLedger[sp{name, st.Period}]
		if st.ReleasesCharged != c.ok || st.ReleasesRefused != c.refused {
			out = append(out, fmt.Sprintf("stream %s period %d: the budget counts %d charges and %d refusals, the ledger holds %d valid charges and %d refusals",
				name, st.Period, st.ReleasesCharged, st.ReleasesRefused, c.ok, c.refused))
		}
	}
	return out
}

// ledgerStart is the log start offset of a ledger partition: above 0 once
// it was trimmed to a checkpoint.
func (h *harness) ledgerStart(partition int) int64 {
	h.t.Helper()
	return h.StartOffset(h.cfg.Topics.Ledger, partition)
}

// balanced reports whether consumer group has exactly members members,
// the group stable, each holding partitions/members of topic's partitions
// and all of them held.
func (h *harness) balanced(group, topic string, members, partitions int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.Conn.Client().DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(resp.Groups) != 1 {
		return false
	}
	g := resp.Groups[0]
	if g.GroupState != "Stable" || len(g.Members) != members {
		return false
	}
	held := map[int]bool{}
	for _, m := range g.Members {
		n := 0
		for _, t := range m.MemberAssignments.Topics {
			if t.Topic == topic {
				n += len(t.Partitions)
				for _, p := range t.Partitions {
					held[p] = true
				}
			}
		}
		if n != partitions/members {
			return false
		}
	}
	return len(held) == partitions
}

// describeGroup describes a consumer group's members and assignments, for
// a failure message.
func (h *harness) describeGroup(group string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.Conn.Client().DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return fmt.Sprintf("(describe group %s: %v)", group, err)
	}
	var out []string
	for _, g := range resp.Groups {
		var ms []string
		for _, m := range g.Members {
			var ps []string
			for _, t := range m.MemberAssignments.Topics {
				ps = append(ps, fmt.Sprintf("%s%v", t.Topic, t.Partitions))
			}
			ms = append(ms, fmt.Sprintf("%s %s", m.MemberID, strings.Join(ps, " ")))
		}
		out = append(out, fmt.Sprintf("%s %s [%s]", g.GroupID, g.GroupState, strings.Join(ms, "; ")))
	}
	return strings.Join(out, "; ")
}
