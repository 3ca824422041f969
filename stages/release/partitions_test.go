package release

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
)

// TestPartitionsChanged: a ledger partition written under another partition
// count is refused with ErrPartitionsChanged, not rebuilt: a checkpoint
// that records another count, and a charge of a stream that now belongs to
// another partition (whose owner would rebuild its budget from nothing).
func TestPartitionsChanged(t *testing.T) {
	rig := newStageRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.stage(1)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	for w := int64(1); w <= 2; w++ {
		if err := a.releaseWindow(ctx, window(w, 2)); err != nil {
			t.Fatal(err)
		}
	}
	untrimmed := rig.read("ledger") // a marker and charges, no checkpoint
	a.checkpointNow(t, ctx)
	if err := a.releaseWindow(ctx, window(3, 1)); err != nil {
		t.Fatal(err)
	}
	checkpointed := rig.read("ledger") // from the checkpoint on
	own := ledger.PartitionOf("s", 2)

	for _, tc := range []struct {
		name      string
		msgs      []kafka.Message
		partition int
		want      string
	}{
		{"a checkpoint of one partition", checkpointed, own, "written with 1 partitions and the topics now have 2"},
		{"a charge of a stream of another partition", untrimmed, 1 - own, "holds a charge of stream s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suffix := strings.ReplaceAll(tc.name, " ", "-")
			cfg := rig.cfg
			cfg.PartialsTopic, cfg.LedgerTopic = "partials-"+suffix, "ledger-"+suffix
			specs := []kafkaio.TopicSpec{{Name: cfg.PartialsTopic, Partitions: 2}, {Name: cfg.LedgerTopic, Partitions: 2, Forever: true}}
			if err := rig.conn.EnsureTopics(ctx, specs); err != nil {
				t.Fatal(err)
			}
			w := rig.conn.NewPartitionWriter(cfg.LedgerTopic, tc.partition)
			defer w.Close()
			for _, m := range tc.msgs {
				if err := w.WriteMessages(ctx, kafka.Message{Key: m.Key, Value: m.Value, Headers: m.Headers}); err != nil {
					t.Fatal(err)
				}
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.closeAll)
			if _, err := s.learnPartitions(ctx); err != nil {
				t.Fatal(err)
			}
			err = s.shard(tc.partition).takeOver(ctx)
			if !errors.Is(err, ErrPartitionsChanged) {
				t.Fatalf("takeover of partition %d: %v, want ErrPartitionsChanged", tc.partition, err)
			}
			for _, want := range []string{tc.want, "cannot reshard"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
