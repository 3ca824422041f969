package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// TopicSpec describes a topic dpstream needs.
type TopicSpec struct {
	Name       string
	Partitions int
	Compact    bool // cleanup.policy=compact (the accountant topic)
	// Forever disables time and size retention. The ledger needs it: the
	// accountant is rebuilt from the ledger, so an expired charge would be
	// forgotten and the budget overspent.
	Forever bool
}

// entries returns the topic configs for a spec.
func (s TopicSpec) entries() []kafka.ConfigEntry {
	var out []kafka.ConfigEntry
	if s.Compact {
		out = append(out, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
	}
	if s.Forever {
		out = append(out, kafka.ConfigEntry{ConfigName: "retention.ms", ConfigValue: "-1"},
			kafka.ConfigEntry{ConfigName: "retention.bytes", ConfigValue: "-1"})
	}
	return out
}

// Client returns a kafka-go client for c's brokers over c's transport.
func (c *Connection) Client() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Transport: c.roundTripper(), Timeout: 30 * time.Second}
}

// EnsureTopics creates the topics that do not exist yet. Existing topics are
// left as they are (their partition count is not changed). A topic the
// principal may not create is fine if it exists: brokers with ACLs refuse
// CreateTopics without the Create permission even for an existing topic,
// and a locked-down cluster has its topics created by an administrator.
func (c *Connection) EnsureTopics(ctx context.Context, specs []TopicSpec) error {
	if len(specs) == 0 {
		return nil
	}
	brokers := c.Brokers
	cl := c.Client()
	req := &kafka.CreateTopicsRequest{}
	for _, s := range specs {
		tc := kafka.TopicConfig{Topic: s.Name, NumPartitions: max(s.Partitions, 1), ReplicationFactor: -1, ConfigEntries: s.entries()}
		req.Topics = append(req.Topics, tc)
	}
	resp, err := cl.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("create topics on %v: %w (are the brokers reachable?)", brokers, err)
	}
	var errs []error
	for name, terr := range resp.Errors {
		if terr == nil || errors.Is(terr, kafka.TopicAlreadyExists) {
			continue
		}
		if errors.Is(terr, kafka.TopicAuthorizationFailed) {
			if _, err := c.Partitions(ctx, name); err != nil {
				errs = append(errs, fmt.Errorf("create topic %s: %w: grant the principal Create on it, or create it beforehand (%v)", name, terr, err))
			}
			continue
		}
		// Some brokers reject ReplicationFactor -1 (pre-2.4); retry with 1.
		if errors.Is(terr, kafka.InvalidReplicationFactor) {
			if err := createOne(ctx, cl, specs, name); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		errs = append(errs, fmt.Errorf("create topic %s: %w", name, terr))
	}
	return errors.Join(errs...)
}

func createOne(ctx context.Context, cl *kafka.Client, specs []TopicSpec, name string) error {
	for _, s := range specs {
		if s.Name != name {
			continue
		}
		tc := kafka.TopicConfig{Topic: s.Name, NumPartitions: max(s.Partitions, 1), ReplicationFactor: 1, ConfigEntries: s.entries()}
		resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
		if err != nil {
			return fmt.Errorf("create topic %s: %w", name, err)
		}
		if terr := resp.Errors[name]; terr != nil && !errors.Is(terr, kafka.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", name, terr)
		}
	}
	return nil
}

// Partitions returns the number of partitions of a topic.
func (c *Connection) Partitions(ctx context.Context, topic string) (int, error) {
	resp, err := c.Client().Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("metadata for %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Name == topic {
			if t.Error != nil {
				return 0, fmt.Errorf("topic %s: %w", topic, t.Error)
			}
			return len(t.Partitions), nil
		}
	}
	return 0, fmt.Errorf("topic %s not found", topic)
}

// EndOffsets returns the high watermark (next offset) of every partition.
func (c *Connection) EndOffsets(ctx context.Context, topic string) (map[int]int64, error) {
	return c.listOffsets(ctx, topic, false)
}

// StartOffsets returns the log start offset (the first offset still
// held) of every partition.
func (c *Connection) StartOffsets(ctx context.Context, topic string) (map[int]int64, error) {
	return c.listOffsets(ctx, topic, true)
}

// listOffsets returns every partition's first (log start) or last (high
// watermark) offset.
//
// A topic created a moment ago (a lost topic that the start recreated, or a
// fresh cluster) may not have elected its partitions' leaders yet: Kafka
// answers CreateTopics before that, and ListOffsets then says "not leader"
// or "leader not available" for a while. Those answers are retried with a
// backoff for up to leaderWait; any other error, or one still there after
// it, is returned.
func (c *Connection) listOffsets(ctx context.Context, topic string, first bool) (map[int]int64, error) {
	deadline := time.Now().Add(leaderWait)
	backoff := 50 * time.Millisecond
	for {
		out, pending, err := c.listOffsetsOnce(ctx, topic, first)
		if err == nil || !pending || time.Now().After(deadline) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// leaderWait bounds how long listOffsets waits for a new topic's leaders.
const leaderWait = 15 * time.Second

// leaderPending reports whether err says that a partition's leader is not
// (yet) known to the broker asked: a transient state after a topic's
// creation or a leader's move.
func leaderPending(err error) bool {
	return errors.Is(err, kafka.NotLeaderForPartition) || errors.Is(err, kafka.LeaderNotAvailable) ||
		errors.Is(err, kafka.UnknownTopicOrPartition)
}

// listOffsetsOnce asks once; pending says the error is a partition's
// leader not known yet (a topic that is missing from the metadata is not
// pending: it is gone, and saying so is not delayed).
func (c *Connection) listOffsetsOnce(ctx context.Context, topic string, first bool) (out map[int]int64, pending bool, err error) {
	n, err := c.Partitions(ctx, topic)
	if err != nil {
		return nil, false, err
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for p := 0; p < n; p++ {
		o := kafka.LastOffsetOf(p)
		if first {
			o = kafka.FirstOffsetOf(p)
		}
		req.Topics[topic] = append(req.Topics[topic], o)
	}
	resp, err := c.Client().ListOffsets(ctx, req)
	if err != nil {
		return nil, false, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	out = make(map[int]int64, n)
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return nil, leaderPending(po.Error), fmt.Errorf("list offsets of %s[%d]: %w", topic, po.Partition, po.Error)
		}
		out[po.Partition] = po.LastOffset
		if first {
			out[po.Partition] = po.FirstOffset
		}
	}
	return out, false, nil
}

// TopicConfig returns a topic's effective value of one config key.
func (c *Connection) TopicConfig(ctx context.Context, topic, key string) (string, error) {
	resp, err := c.Client().DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{key}}},
	})
	if err != nil {
		return "", fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return "", fmt.Errorf("describe configs of %s: %w", topic, r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == key {
				return e.ConfigValue, nil
			}
		}
	}
	return "", fmt.Errorf("topic %s: no config %s", topic, key)
}

// MissingTopics returns those of topics that the cluster reports as
// unknown (deleted, or never created), in the order given. A failed
// request is an error, not a missing topic: a broker that does not answer
// says nothing about the topics. The metadata request never asks the broker
// to create a topic.
func (c *Connection) MissingTopics(ctx context.Context, topics []string) ([]string, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	resp, err := c.Client().Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("metadata for %v: %w", topics, err)
	}
	found := make(map[string]error, len(resp.Topics))
	for _, t := range resp.Topics {
		found[t.Name] = t.Error
	}
	var missing []string
	for _, name := range topics {
		terr, ok := found[name]
		switch {
		case !ok, errors.Is(terr, kafka.UnknownTopicOrPartition), errors.Is(terr, kafka.UnknownTopicID):
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// TopicDurability is what decides whether a write the brokers acknowledged
// to a topic (with acks=all, as every dpstream writer asks) survives the loss
// of a broker.
type TopicDurability struct {
	Brokers   int // brokers in the cluster
	Replicas  int // the topic's replication factor (fewest replicas of its partitions)
	MinInSync int // min.insync.replicas (0 when unknown)
	// UncleanElection is unclean.leader.election.enable: an out-of-sync
	// replica may become leader, dropping acknowledged writes.
	UncleanElection bool
}

// Durability describes a topic's replication and the configs that decide
// whether acknowledged writes survive a broker's loss.
func (c *Connection) Durability(ctx context.Context, topic string) (TopicDurability, error) {
	var d TopicDurability
	md, err := c.Client().Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return d, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	d.Brokers = len(md.Brokers)
	for _, t := range md.Topics {
		if t.Error != nil {
			return d, fmt.Errorf("metadata of %s: %w", topic, t.Error)
		}
		for i, p := range t.Partitions {
			if i == 0 || len(p.Replicas) < d.Replicas {
				d.Replicas = len(p.Replicas)
			}
		}
	}
	if v, err := c.TopicConfig(ctx, topic, "min.insync.replicas"); err == nil {
		d.MinInSync, _ = strconv.Atoi(v)
	}
	if v, err := c.TopicConfig(ctx, topic, "unclean.leader.election.enable"); err == nil {
		d.UncleanElection = v == "true"
	}
	return d, nil
}
