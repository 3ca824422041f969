package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// timeout bounds each of the harness's calls to the cluster: generous, so
// that a slow or loaded machine does not fail a test.
const timeout = 30 * time.Second

// Cluster is one test's Kafka cluster: an embedded broker the test owns
// (StartBroker), the brokers named by KAFKA_BROKERS (NewCluster), or a
// connection the test made itself (Attach). Its methods fail the test on
// any error.
type Cluster struct {
	t testing.TB
	// Broker is the embedded broker (nil on an external cluster, and
	// between the stop and start of Restart).
	Broker *kafkaio.Embedded
	// Addr is the embedded broker's address; Brokers and Conn are how
	// the test and its pipelines reach the cluster.
	Addr    string
	Brokers []string
	Conn    *kafkaio.Connection
	// Prefix is the test's topic and group prefix on an external cluster
	// shared by many tests and runs ("" on a cluster of the test's own).
	Prefix   string
	embedded bool
	dataDir  string
}

// BrokerOption configures StartBroker.
type BrokerOption func(*brokerOptions)

type brokerOptions struct {
	persist bool
	dataDir string
}

// DataDir keeps the broker's data in dir ("": a new temporary directory)
// rather than in memory: Restart needs it, and so does a test of what the
// broker persists.
func DataDir(dir string) BrokerOption {
	return func(o *brokerOptions) { o.persist, o.dataDir = true, dir }
}

// StartBroker starts an embedded broker on a free loopback port, with its
// data in memory unless DataDir says otherwise, and closes it when the test
// ends.
func StartBroker(t testing.TB, opts ...BrokerOption) *Cluster {
	t.Helper()
	var o brokerOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.persist && o.dataDir == "" {
		o.dataDir = filepath.Join(t.TempDir(), "kafka")
	}
	b, err := kafkaio.StartEmbedded("127.0.0.1:0", o.dataDir, nil)
	if err != nil {
		t.Fatalf("embedded broker: %v", err)
	}
	c := &Cluster{t: t, Broker: b, Addr: b.Addr(), Brokers: []string{b.Addr()}, Conn: b.Conn(), embedded: true, dataDir: o.dataDir}
	t.Cleanup(func() {
		if c.Broker != nil {
			c.Broker.Close()
		}
	})
	return c
}

// NewCluster returns the cluster of the brokers in KAFKA_BROKERS when it
// is set, with a Prefix of the test's own (see TopicPrefix), or else
// StartBroker(t, opts...).
func NewCluster(t testing.TB, opts ...BrokerOption) *Cluster {
	t.Helper()
	ext := os.Getenv("KAFKA_BROKERS")
	if ext == "" {
		return StartBroker(t, opts...)
	}
	brokers := strings.Split(ext, ",")
	return &Cluster{t: t, Brokers: brokers, Conn: kafkaio.Plaintext(brokers), Prefix: TopicPrefix(t.Name(), time.Now().UnixNano())}
}

// Attach is the cluster behind a connection the test made (a secured one,
// say); the test keeps closing what it started.
func Attach(t testing.TB, conn *kafkaio.Connection) *Cluster {
	return &Cluster{t: t, Brokers: conn.Brokers, Conn: conn}
}

// External reports whether the cluster is KAFKA_BROKERS, shared with other
// tests and runs.
func (c *Cluster) External() bool { return c.Prefix != "" }

// Topic returns name with the cluster's Prefix: the name of one of the
// test's topics on the cluster.
func (c *Cluster) Topic(name string) string {
	if c.Prefix == "" {
		return name
	}
	return c.Prefix + "." + name
}

// Restart stops the embedded broker and starts it again on the same
// address and data directory (StartBroker with DataDir). A broker shared
// with other tests (KAFKA_BROKERS) keeps running: the test then restarts
// only its pipeline, and its log says so.
func (c *Cluster) Restart() {
	c.t.Helper()
	if c.External() {
		c.t.Log("external broker (KAFKA_BROKERS): not restarted; only the pipeline restarts")
		return
	}
	if !c.embedded {
		c.t.Fatal("Restart of an attached cluster: the test restarts what it started")
	}
	if c.dataDir == "" {
		c.t.Fatal("Restart of an in-memory broker: start it with DataDir")
	}
	c.Broker.Close()
	c.Broker = nil
	var err error
	for i := 0; i < 50; i++ { // the port may take a moment to free
		var b *kafkaio.Embedded
		if b, err = kafkaio.StartEmbedded(c.Addr, c.dataDir, nil); err == nil {
			c.Broker = b
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("restart embedded broker: %v", err)
}

// CreateTopics creates the topics that do not exist yet. On an external
// cluster it also waits until every partition is served, and deletes the
// topics when the test has passed (a failed test keeps them for
// inspection).
func (c *Cluster) CreateTopics(specs ...kafkaio.TopicSpec) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Conn.EnsureTopics(ctx, specs); err != nil {
		c.t.Fatalf("topics: %v", err)
	}
	if !c.External() {
		return
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	// A real broker answers CreateTopics once the controller has recorded
	// the topics, before their leaders serve them: wait, so the test's
	// first produce or read does not race that.
	if err := WaitTopicsReady(ctx, c.Conn, names); err != nil {
		c.t.Fatalf("topics: %v", err)
	}
	// Cleanups run last registered first: registered now, before the
	// test starts anything that uses the topics, this runs after those
	// have been stopped.
	t := c.t
	t.Cleanup(func() {
		if !t.Failed() {
			DeleteTopics(t, c.Conn, names)
		}
	})
}

// WaitTopicsReady polls until every partition of every topic answers a
// ListOffsets request, or ctx ends. Metadata naming a leader is not enough
// on Apache Kafka: the leader serves the partition a moment after its
// metadata cache shows it (a ListOffsets then fails with "Not Leader For
// Partition"), so ask the leader itself.
func WaitTopicsReady(ctx context.Context, conn *kafkaio.Connection, topics []string) error {
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

// DeleteTopics removes a passed test's topics from an external broker so a
// long-lived development broker does not fill up; failures are only
// logged, since the test itself is over.
func DeleteTopics(t testing.TB, conn *kafkaio.Connection, topics []string) {
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

// TopicPrefix makes a test's topic and group prefix on a shared external
// broker: the test name (subtest names included, e.g. "L=1") lowercased with
// every character Kafka does not allow in a topic name replaced by "-", plus
// a nanosecond stamp so a rerun (-count=N) on the same broker starts from
// empty topics and fresh consumer groups. It is kept well under Kafka's
// 249-character limit, which also leaves room for the topics' suffixes.
func TopicPrefix(testName string, stamp int64) string {
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

// Produce publishes msgs to topic in order (the writer's murmur2
// partitioner keeps each key's order on its partition).
func (c *Cluster) Produce(topic string, msgs ...kafka.Message) {
	c.t.Helper()
	w := c.Conn.NewWriter(topic)
	defer w.Close()
	c.Write(w, msgs...)
}

// Write publishes msgs with a writer the test configured itself.
func (c *Cluster) Write(w *kafka.Writer, msgs ...kafka.Message) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		c.t.Fatalf("produce to %s: %v", w.Topic, err)
	}
}

// ProduceJSON publishes events as JSON to topic, keyed by their unitField,
// in order.
func (c *Cluster) ProduceJSON(topic string, evs []map[string]any, unitField string) {
	c.t.Helper()
	msgs := make([]kafka.Message, 0, len(evs))
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			c.t.Fatal(err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint(ev[unitField])), Value: b})
	}
	c.Produce(topic, msgs...)
}

// ProduceReleases publishes releases to topic as the release stage encodes
// them, keyed by stream, in order.
func (c *Cluster) ProduceReleases(topic string, rs ...schema.Release) {
	c.t.Helper()
	msgs := make([]kafka.Message, 0, len(rs))
	for _, r := range rs {
		b, err := schema.EncodeRelease(r)
		if err != nil {
			c.t.Fatalf("encode release %s: %v", r.ReleaseID, err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(r.Stream), Value: b})
	}
	c.Produce(topic, msgs...)
}

// ReadAll returns every record of topic, partition by partition. A read
// that fails is tried again until the timeout: after Restart, kafka-go's
// shared pool still holds connections to the stopped broker, and the
// first request on each fails (and drops it).
func (c *Cluster) ReadAll(topic string) []kafka.Message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		var out []kafka.Message
		err := c.Conn.ReadAll(ctx, topic, func(m kafka.Message) error {
			out = append(out, m)
			return nil
		})
		if err == nil {
			return out
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("read %s: %v", topic, err)
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Releases decodes every release on a releases topic.
func (c *Cluster) Releases(topic string) []schema.Release {
	c.t.Helper()
	return decodeAll(c, topic, "release", schema.DecodeRelease)
}

// decodeAll decodes every record of topic with decode, failing the test
// on the first record that does not decode.
func decodeAll[T any](c *Cluster, topic, what string, decode func([]byte) (T, error)) []T {
	c.t.Helper()
	var out []T
	for _, m := range c.ReadAll(topic) {
		v, err := decode(m.Value)
		if err != nil {
			c.t.Fatalf("%s at %s[%d]@%d: %v", what, topic, m.Partition, m.Offset, err)
		}
		out = append(out, v)
	}
	return out
}

// Ledger returns a ledger topic's valid charges in ledger order (partition
// by partition; from each partition's log start, so charges a checkpoint
// summarizes are not among them), as the
// accountant counts them (package internal/ledger): void charges, of
// instances that had lost ownership, are left out, and so are
// byte-identical repeats of a charge; a second valid charge with another
// payload is kept, so checks see it.
func (c *Cluster) Ledger(topic string) []schema.LedgerCharge {
	c.t.Helper()
	return c.ledger(topic, false)
}

// LedgerWithRepeats is Ledger with the byte-identical repeats kept: for
// checks that a charge was written once.
func (c *Cluster) LedgerWithRepeats(topic string) []schema.LedgerCharge {
	c.t.Helper()
	return c.ledger(topic, true)
}

func (c *Cluster) ledger(topic string, repeats bool) []schema.LedgerCharge {
	c.t.Helper()
	var out []schema.LedgerCharge
	// One Book per partition: each is a log of its own (its own epochs,
	// its own checkpoint), and charges come partition by partition.
	books := map[int]*ledger.Book{}
	for _, m := range c.ReadAll(topic) {
		book := books[m.Partition]
		if book == nil {
			book = &ledger.Book{}
			books[m.Partition] = book
		}
		e, err := book.Apply(m)
		if err != nil {
			c.t.Fatalf("ledger: %v", err)
		}
		if e.Type == schema.LedgerTypeCharge && e.Valid && (repeats || !e.Identical) {
			out = append(out, e.Charge)
		}
	}
	return out
}

// BudgetStates decodes every budget state on an accountant topic, in
// topic order.
func (c *Cluster) BudgetStates(topic string) []schema.BudgetState {
	c.t.Helper()
	return decodeAll(c, topic, "budget state", schema.DecodeBudgetState)
}

// Partials returns the partials the release stage uses from a partials
// topic: the first one per (stream, window, partition), in topic order.
func (c *Cluster) Partials(topic string) map[string]map[int64]map[int32]schema.Partial {
	c.t.Helper()
	out := map[string]map[int64]map[int32]schema.Partial{}
	for _, m := range c.ReadAll(topic) {
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			c.t.Fatalf("partial at %d: %v", m.Offset, err)
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

// Members returns the member count of each consumer group.
func (c *Cluster) Members(groups ...string) map[string]int {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := c.Conn.Client().DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: groups})
	if err != nil {
		c.t.Fatalf("describe groups %v: %v", groups, err)
	}
	out := map[string]int{}
	for _, g := range resp.Groups {
		if g.Error != nil {
			c.t.Fatalf("describe group %s: %v", g.GroupID, g.Error)
		}
		out[g.GroupID] = len(g.Members)
	}
	return out
}

// CommittedOffset returns group's committed offset and metadata for one
// partition of topic (offset -1 when none).
func (c *Cluster) CommittedOffset(group, topic string, partition int) (int64, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := c.Conn.Client().OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {partition}}})
	if err != nil {
		c.t.Fatalf("offset fetch %s %s: %v", group, topic, err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Partition == partition {
			if p.Error != nil {
				c.t.Fatalf("offset fetch %s %s[%d]: %v", group, topic, partition, p.Error)
			}
			return p.CommittedOffset, p.Metadata
		}
	}
	return -1, ""
}

// WaitFor polls cond every 100ms until it holds, failing the test after
// timeout with what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StartOffset is the log start offset of a partition of topic: above 0
// once records before it were deleted (the release stage trims its ledger
// to a checkpoint).
func (c *Cluster) StartOffset(topic string, partition int) int64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	starts, err := c.Conn.StartOffsets(ctx, topic)
	if err != nil {
		c.t.Fatal(err)
	}
	return starts[partition]
}
