package release

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pdpstore"
	"github.com/dpstream/dpstream/schema"
)

// The Kafka side of the restricted pdp topic: its records as the release
// stage writes them (pdpMessages) and as the per-instance DP store reads
// them back (kafkaPDPSource, a pdpstore.Source).

// kafkaPDPSource reads the pdp topic on Kafka for pdpstore.Store.CatchUp.
type kafkaPDPSource struct {
	conn  *kafkaio.Connection
	topic string
}

func (k kafkaPDPSource) Topic() string { return k.topic }

func (k kafkaPDPSource) Offsets(ctx context.Context) (map[int]int64, map[int]int64, error) {
	first, err := k.conn.StartOffsets(ctx, k.topic)
	if err != nil {
		return nil, nil, err
	}
	end, err := k.conn.EndOffsets(ctx, k.topic)
	return first, end, err
}

func (k kafkaPDPSource) Read(ctx context.Context, p int, from, end int64, fn func(pdpstore.Record) error) error {
	return k.conn.ReadRange(ctx, k.topic, p, from, end, func(m kafka.Message) error {
		return fn(pdpRecord(m))
	})
}

// pdpRecord is what the store reads of a pdp topic message: its offset,
// key, type header and value.
func pdpRecord(m kafka.Message) pdpstore.Record {
	return pdpstore.Record{Offset: m.Offset, Key: m.Key, Type: pdpType(m), Value: m.Value}
}

// pdpMessages returns the pdp topic records of a prepared window: the
// changed unit accounts, then the summary.
func pdpMessages(upd *pdpstore.Update) ([]kafka.Message, error) {
	msgs := make([]kafka.Message, 0, len(upd.Units)+1)
	unitHdr := []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeUnit)}}
	for _, u := range upd.Units {
		b, err := schema.EncodePDPUnit(u)
		if err != nil {
			return nil, fmt.Errorf("encode pdp unit: %w", err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(schema.PDPUnitKey(u.Stream, u.Unit)), Value: b, Headers: unitHdr})
	}
	b, err := schema.EncodePDPSummary(upd.Summary)
	if err != nil {
		return nil, fmt.Errorf("encode pdp summary: %w", err)
	}
	return append(msgs, kafka.Message{Key: []byte(upd.Key), Value: b,
		Headers: []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeSummary)}}}), nil
}
