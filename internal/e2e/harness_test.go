package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// harness is one test's Kafka cluster (the embedded broker in a temporary
// directory, or KAFKA_BROKERS with topic names made unique per test) and
// pipeline configuration.
type harness struct {
	t       *testing.T
	dir     string
	broker  *kafkaio.Embedded
	addr    string
	brokers []string
	// conn is how the test and its pipelines reach the cluster:
	// plaintext to the embedded broker or KAFKA_BROKERS, TLS and SASL in
	// the security tests.
	conn *kafkaio.Connection
	cfg  *config.Config
	plan []plan.Stream
	log  *slog.Logger
	// yaml is the configuration text after substitution and prefix the
	// topic prefix ("t" on the embedded broker): a child process (the
	// crash test's) rebuilds the same cfg from them with parseConfig.
	yaml, prefix string
	// shift is what the test clock (now) adds to the wall clock, fixed at
	// the first pipeline start (0: not yet); wall makes the pipelines run
	// on the wall clock itself (useWallClock).
	shift time.Duration
	wall  bool
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

// newHarness parses yamlText (after replacing {{prefix}} by a per-test topic
// prefix and {{dir}} by the test's directory) and starts the cluster.
func newHarness(t *testing.T, yamlText string) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir()}
	prefix := "t"
	if ext := os.Getenv("KAFKA_BROKERS"); ext != "" {
		h.brokers = strings.Split(ext, ",")
		h.conn = kafkaio.Plaintext(h.brokers)
		prefix = topicPrefix(t.Name(), time.Now().UnixNano())
	} else {
		h.startBroker("127.0.0.1:0")
	}
	if err := os.WriteFile(filepath.Join(h.dir, "trip.avsc"), []byte(schema.TripSchema()), 0o644); err != nil {
		t.Fatal(err)
	}
	yamlText = strings.ReplaceAll(yamlText, "{{prefix}}", prefix)
	yamlText = strings.ReplaceAll(yamlText, "{{dir}}", h.dir)
	h.yaml, h.prefix = yamlText, prefix
	cfg, ps, err := parseConfig(yamlText, h.dir, prefix, os.Getenv("KAFKA_BROKERS") != "")
	if err != nil {
		t.Fatal(err)
	}
	h.cfg, h.plan = cfg, ps
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	h.log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	specs := pipeline.Topics(cfg)
	if err := h.conn.EnsureTopics(ctx, specs); err != nil {
		t.Fatalf("topics: %v", err)
	}
	if h.broker == nil {
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = s.Name
		}
		// A real broker answers CreateTopics once the controller has
		// recorded the topics, before their leaders serve them: wait, so
		// the test's first produce or read does not race that.
		if err := waitTopicsReady(ctx, h.conn, names); err != nil {
			t.Fatalf("topics: %v", err)
		}
		// Registered first, so it runs after the instances' cleanups have
		// stopped them. A failed test keeps its topics for inspection.
		t.Cleanup(func() {
			if !t.Failed() {
				deleteTopics(t, h.conn, names)
			}
		})
	}
	return h
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
		// of its own (release.OpenPDPStore).
		cfg.PDPStore = filepath.Join(dir, "pdp")
	}
	withTestStart(cfg)
	if external {
		cfg.Group = prefix
		for _, p := range []*string{&cfg.Topics.Partials, &cfg.Topics.Releases, &cfg.Topics.Ledger, &cfg.Topics.Accountant, &cfg.Topics.PDP, &cfg.Topics.DeadLetter} {
			*p = prefix + "." + *p
		}
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("plan: %w", err)
	}
	return cfg, ps, nil
}

// waitTopicsReady polls until every partition of every topic answers a
// ListOffsets request, or ctx ends. Metadata naming a leader is not enough
// on Apache Kafka: the leader serves the partition a moment after its
// metadata cache shows it (a ListOffsets then fails with "Not Leader For
// Partition"), so ask the leader itself.
func waitTopicsReady(ctx context.Context, conn *kafkaio.Connection, topics []string) error {
	for _, topic := range topics {
		for {
			ends, err := conn.EndOffsets(ctx, topic)
			if err == nil && len(ends) == 0 {
				err = errors.New("no partitions yet")
			}
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("topic %s not ready on %v (last error: %v): %w", topic, conn.Brokers, err, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// deleteTopics removes a passed test's topics from an external broker so a
// long-lived development broker does not fill up; failures are only
// logged, since the test itself is over.
func deleteTopics(t *testing.T, conn *kafkaio.Connection, topics []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := conn.Client().DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: topics})
	if err != nil {
		t.Logf("delete topics %v: %v", topics, err)
		return
	}
	for name, err := range resp.Errors {
		if err != nil {
			t.Logf("delete topic %s: %v", name, err)
		}
	}
}

// topicPrefix makes a test's topic and group prefix on a shared external
// broker: the test name (subtest names included, e.g. "L=1") lowercased with
// every character Kafka does not allow in a topic name replaced by "-", plus
// a nanosecond stamp so a rerun (-count=N) on the same broker starts from
// empty topics and fresh consumer groups. It is kept well under Kafka's
// 249-character limit, which also leaves room for the topics' suffixes.
func topicPrefix(testName string, stamp int64) string {
	name := []byte(strings.ToLower(testName))
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			name[i] = '-'
		}
	}
	const maxName = 150
	if len(name) > maxName {
		name = name[:maxName]
	}
	return fmt.Sprintf("%s-%d", name, stamp)
}

func (h *harness) startBroker(addr string) {
	h.t.Helper()
	b, err := kafkaio.StartEmbedded(addr, filepath.Join(h.dir, "kafka"), nil)
	if err != nil {
		h.t.Fatalf("embedded broker: %v", err)
	}
	h.broker, h.addr, h.brokers, h.conn = b, b.Addr(), []string{b.Addr()}, b.Conn()
	h.t.Cleanup(func() {
		if h.broker != nil {
			h.broker.Close()
		}
	})
}

// restartBroker stops the embedded broker and starts it again on the same
// address and data directory. An external broker (KAFKA_BROKERS) is not the
// test's to restart: it keeps running, so the caller restarts only the
// pipeline, and the test says so in its log.
func (h *harness) restartBroker() {
	if h.broker == nil {
		h.t.Log("external broker (KAFKA_BROKERS): not restarted; only the pipeline restarts")
		return
	}
	h.broker.Close()
	h.broker = nil
	var err error
	for i := 0; i < 50; i++ { // the port may take a moment to free
		var b *kafkaio.Embedded
		if b, err = kafkaio.StartEmbedded(h.addr, filepath.Join(h.dir, "kafka"), nil); err == nil {
			h.broker = b
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.t.Fatalf("restart embedded broker: %v", err)
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
		in.err = pipeline.Run(ctx, pipeline.Options{Config: h.cfg, Plan: h.plan, Conn: h.conn, Stages: st,
			Metrics: in.metrics, Log: h.log, Noise: sampler, InstanceName: name, Now: now})
	}()
	h.t.Cleanup(in.stop)
	return in
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

// produceJSON publishes events to the stream's topic, keyed by unit, in
// order (the murmur2 writer keeps per-partition order).
func (h *harness) produceJSON(topic string, evs []map[string]any, unitField string) {
	h.t.Helper()
	w := h.conn.NewWriter(topic)
	defer w.Close()
	msgs := make([]kafka.Message, 0, len(evs))
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			h.t.Fatal(err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint(ev[unitField])), Value: b})
	}
	h.produceRaw(w, msgs)
}

func (h *harness) produceRaw(w *kafka.Writer, msgs []kafka.Message) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		h.t.Fatalf("produce: %v", err)
	}
}

// readAll returns every record of a topic.
func (h *harness) readAll(topic string) []kafka.Message {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []kafka.Message
	if err := h.conn.ReadAll(ctx, topic, func(m kafka.Message) error {
		out = append(out, m)
		return nil
	}); err != nil {
		h.t.Fatalf("read %s: %v", topic, err)
	}
	return out
}

func (h *harness) releases() []schema.Release {
	h.t.Helper()
	var out []schema.Release
	for _, m := range h.readAll(h.cfg.Topics.Releases) {
		r, err := schema.DecodeRelease(m.Value)
		if err != nil {
			h.t.Fatalf("release at %d: %v", m.Offset, err)
		}
		out = append(out, r)
	}
	return out
}

// ledger returns the ledger's valid charges in ledger order (package
// internal/ledger: void charges, of instances that had lost ownership, are
// left out, and so are byte-identical repeats of a charge; a second valid
// charge with another payload is kept, so checks see it).
func (h *harness) ledger() []schema.LedgerCharge {
	h.t.Helper()
	var out []schema.LedgerCharge
	var book ledger.Book
	for _, m := range h.readAll(h.cfg.Topics.Ledger) {
		e, err := book.Apply(m)
		if err != nil {
			h.t.Fatalf("ledger: %v", err)
		}
		if e.Type == schema.LedgerTypeCharge && e.Valid && !e.Identical {
			out = append(out, e.Charge)
		}
	}
	return out
}

// partials returns the partials the release stage used: the first one per
// (stream, window, partition), in topic order.
func (h *harness) partials() map[string]map[int64]map[int32]schema.Partial {
	h.t.Helper()
	out := map[string]map[int64]map[int32]schema.Partial{}
	for _, m := range h.readAll(h.cfg.Topics.Partials) {
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			h.t.Fatalf("partial at %d: %v", m.Offset, err)
		}
		if out[p.Stream] == nil {
			out[p.Stream] = map[int64]map[int32]schema.Partial{}
		}
		if out[p.Stream][p.WindowStart] == nil {
			out[p.Stream][p.WindowStart] = map[int32]schema.Partial{}
		}
		if _, dup := out[p.Stream][p.WindowStart][p.Partition]; !dup {
			out[p.Stream][p.WindowStart][p.Partition] = p
		}
	}
	return out
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool, instances ...*instance) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		for _, in := range instances {
			in.check(t)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
