package kafkaio

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestDeleteRecords: records of a partition before an offset are deleted
// (the log start moves there, a reader from the first offset starts
// there), the other partitions are untouched, and a second delete below
// the log start leaves it where it is. A partition writer puts every
// record on its partition whatever the key.
func TestDeleteRecords(t *testing.T) {
	b, err := StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := b.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.EnsureTopics(ctx, []TopicSpec{{Name: "t", Partitions: 2, Forever: true}}); err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		w := c.NewPartitionWriter("t", p)
		var msgs []kafka.Message
		for i := range 10 {
			msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("key", i)), Value: []byte(fmt.Sprint(p, "/", i))})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	if ends, err := c.EndOffsets(ctx, "t"); err != nil || ends[0] != 10 || ends[1] != 10 {
		t.Fatalf("end offsets %v (%v), want 10 on each partition: the partition writer wrote elsewhere", ends, err)
	}
	low, err := c.DeleteRecords(ctx, "t", 1, 6)
	if err != nil || low != 6 {
		t.Fatalf("delete before 6: low watermark %d, %v", low, err)
	}
	starts, err := c.StartOffsets(ctx, "t")
	if err != nil || starts[0] != 0 || starts[1] != 6 {
		t.Fatalf("log starts %v (%v), want partition 0 at 0 and 1 at 6", starts, err)
	}
	var got []string
	if err := c.ReadRange(ctx, "t", 1, kafka.FirstOffset, 10, func(m kafka.Message) error {
		got = append(got, fmt.Sprintf("%d:%s", m.Offset, m.Value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[6:1/6 7:1/7 8:1/8 9:1/9]" {
		t.Errorf("partition 1 after the delete reads %v", got)
	}
	if low, err := c.DeleteRecords(ctx, "t", 1, 3); err != nil || low != 6 {
		t.Errorf("a delete below the log start: low watermark %d, %v; want 6 and no error", low, err)
	}
}
