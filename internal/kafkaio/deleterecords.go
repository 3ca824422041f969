package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// kafka-go has no DeleteRecords API (Kafka's API key 21), which the release
// stage needs to trim its ledger up to a checkpoint; it is declared here in
// kafka-go's protocol encoding (the same struct tags its own APIs use), so
// that it travels over the connection's transport with its TLS and SASL.
// Versions 0 and 1 share one layout (1 only adds throttling semantics).

func init() {
	protocol.Register(&deleteRecordsRequest{}, &deleteRecordsResponse{})
}

type deleteRecordsRequest struct {
	Topics    []deleteRecordsRequestTopic `kafka:"min=v0,max=v1"`
	TimeoutMs int32                       `kafka:"min=v0,max=v1"`
}

type deleteRecordsRequestTopic struct {
	Name       string                          `kafka:"min=v0,max=v1"`
	Partitions []deleteRecordsRequestPartition `kafka:"min=v0,max=v1"`
}

type deleteRecordsRequestPartition struct {
	PartitionIndex int32 `kafka:"min=v0,max=v1"`
	Offset         int64 `kafka:"min=v0,max=v1"`
}

func (r *deleteRecordsRequest) ApiKey() protocol.ApiKey { return protocol.DeleteRecords }

// Broker sends the request to the leader of its (one) partition, or to the
// controller while the transport's metadata does not know the partition
// yet (a broker that does not lead it answers NOT_LEADER, and the caller
// retries).
func (r *deleteRecordsRequest) Broker(c protocol.Cluster) (protocol.Broker, error) {
	if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
		if t, ok := c.Topics[r.Topics[0].Name]; ok {
			if p, ok := t.Partitions[r.Topics[0].Partitions[0].PartitionIndex]; ok {
				if b, ok := c.Brokers[p.Leader]; ok {
					return b, nil
				}
			}
		}
	}
	if b, ok := c.Brokers[c.Controller]; ok {
		return b, nil
	}
	for _, b := range c.Brokers {
		return b, nil
	}
	return protocol.Broker{}, errors.New("delete records: no broker known")
}

type deleteRecordsResponse struct {
	ThrottleTimeMs int32                        `kafka:"min=v0,max=v1"`
	Topics         []deleteRecordsResponseTopic `kafka:"min=v0,max=v1"`
}

type deleteRecordsResponseTopic struct {
	Name       string                           `kafka:"min=v0,max=v1"`
	Partitions []deleteRecordsResponsePartition `kafka:"min=v0,max=v1"`
}

type deleteRecordsResponsePartition struct {
	PartitionIndex int32 `kafka:"min=v0,max=v1"`
	LowWatermark   int64 `kafka:"min=v0,max=v1"`
	ErrorCode      int16 `kafka:"min=v0,max=v1"`
}

func (r *deleteRecordsResponse) ApiKey() protocol.ApiKey { return protocol.DeleteRecords }

var _ protocol.BrokerMessage = (*deleteRecordsRequest)(nil)

// DeleteRecords deletes the records of one partition of topic before
// offset (Kafka's DeleteRecords: the partition's log start offset becomes
// offset, or stays where it is if it is already past it) and returns the
// partition's new log start. The principal needs the DELETE permission on
// the topic. The release stage trims its ledger with it, only up to a
// checkpoint it has read back (package internal/ledger).
func (c *Connection) DeleteRecords(ctx context.Context, topic string, partition int, offset int64) (int64, error) {
	req := &deleteRecordsRequest{TimeoutMs: 30000, Topics: []deleteRecordsRequestTopic{{
		Name: topic, Partitions: []deleteRecordsRequestPartition{{PartitionIndex: int32(partition), Offset: offset}},
	}}}
	rt := c.roundTripper()
	if rt == nil {
		rt = kafka.DefaultTransport
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := rt.RoundTrip(ctx, kafka.TCP(c.Brokers...), req)
	if err != nil {
		return 0, fmt.Errorf("delete records of %s[%d] before %d: %w", topic, partition, offset, err)
	}
	res, ok := m.(*deleteRecordsResponse)
	if !ok {
		return 0, fmt.Errorf("delete records of %s[%d]: unexpected response %T", topic, partition, m)
	}
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if t.Name != topic || int(p.PartitionIndex) != partition {
				continue
			}
			if p.ErrorCode == int16(kafka.OffsetOutOfRange) {
				// Apache Kafka leaves a log start already past offset
				// where it is; some brokers (kfake) answer out of range
				// instead. Either way nothing before offset is left.
				if starts, err := c.StartOffsets(ctx, topic); err == nil && starts[partition] >= offset {
					return starts[partition], nil
				}
			}
			if p.ErrorCode != 0 {
				return 0, fmt.Errorf("delete records of %s[%d] before %d: %w", topic, partition, offset, kafka.Error(p.ErrorCode))
			}
			return p.LowWatermark, nil
		}
	}
	return 0, fmt.Errorf("delete records of %s[%d]: the response does not name the partition", topic, partition)
}

// NewPartitionWriter is NewWriter with every record sent to one partition,
// whatever its key: the release stage appends its epoch markers and
// checkpoints to the ledger partition it owns.
func (c *Connection) NewPartitionWriter(topic string, partition int) *kafka.Writer {
	w := c.NewWriter(topic)
	w.Balancer = kafka.BalancerFunc(func(_ kafka.Message, partitions ...int) int {
		for _, p := range partitions {
			if p == partition {
				return p
			}
		}
		// A partition the topic does not have: kafka-go then fails the
		// write with an unknown-partition error rather than write
		// elsewhere.
		return partition
	})
	return w
}
