package kafkaio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestFitBatchBytes: kafka-go refuses a record over its default 1 MiB
// BatchBytes before sending it, even to a topic that allows more;
// FitBatchBytes sizes the writer to the topic, and the record goes
// through. A topic left at the default keeps Kafka's default limit.
func TestFitBatchBytes(t *testing.T) {
	b, err := StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := Plaintext(brokers).Client().CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: "big", NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: "4194304"}}},
		{Topic: "plain", NumPartitions: 1, ReplicationFactor: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range resp.Errors {
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	msg := kafka.Message{Key: []byte("k"), Value: []byte(strings.Repeat("x", 2<<20))}

	w := Plaintext(brokers).NewWriter("big")
	defer w.Close()
	if err := w.WriteMessages(ctx, msg); err == nil {
		t.Fatal("an unsized writer sent a 2 MiB record; the test no longer shows the client-side limit")
	}
	n, err := Plaintext(brokers).FitBatchBytes(ctx, w)
	if err != nil || n != 4194304 {
		t.Fatalf("FitBatchBytes = %d, %v; want 4194304", n, err)
	}
	if err := w.WriteMessages(ctx, msg); err != nil {
		t.Fatalf("a 2 MiB record to a topic allowing 4 MiB: %v", err)
	}

	plain := Plaintext(brokers).NewWriter("plain")
	defer plain.Close()
	if n, err := Plaintext(brokers).FitBatchBytes(ctx, plain); err != nil || n != DefaultMaxMessageBytes {
		t.Fatalf("FitBatchBytes of a default topic = %d, %v; want %d", n, err, DefaultMaxMessageBytes)
	}
	if _, err := Plaintext(brokers).FitBatchBytes(ctx, Plaintext(brokers).NewWriter("no-such-topic")); err == nil {
		t.Error("FitBatchBytes of a missing topic: no error")
	}
}

// TestMissingTopics: only topics the cluster does not have are reported,
// in the order asked.
func TestMissingTopics(t *testing.T) {
	b, err := StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	brokers := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Plaintext(brokers).EnsureTopics(ctx, []TopicSpec{{Name: "a"}, {Name: "c"}}); err != nil {
		t.Fatal(err)
	}
	got, err := Plaintext(brokers).MissingTopics(ctx, []string{"d", "a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "d,b" {
		t.Errorf("MissingTopics = %v, want [d b]", got)
	}
}
