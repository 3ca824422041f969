//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/testkit"
)

// startHint is what to do when the integration suite has no broker.
const startHint = `the integration suite (-tags integration) runs against a real Apache Kafka broker named by KAFKA_BROKERS, and KAFKA_BROKERS is unset. Start a local one and run the suite with:

    deploy/local-kafka.sh fetch && deploy/local-kafka.sh start
    KAFKA_BROKERS=$(deploy/local-kafka.sh brokers) go test -tags integration -count=1 ./internal/e2e/...
    deploy/local-kafka.sh stop

(without -tags integration, go test runs the same e2e tests on the embedded broker)`

// TestIntegrationBroker is the integration suite's entry check. With the
// integration tag every other e2e test runs against KAFKA_BROKERS; without
// a broker they would quietly fall back to the embedded one, so this test
// fails instead and says how to start a broker. It then checks that the
// brokers are a real Kafka cluster (not a dpstream embedded broker given by
// mistake) and makes one round trip through a fresh 3-partition topic with
// dpstream's own writer and reader: every record comes back once, in
// produce order per partition, on the partition PartitionFor assigns its
// key, which is the partition the accumulate stage's misrouting check
// expects.
func TestIntegrationBroker(t *testing.T) {
	env := os.Getenv("KAFKA_BROKERS")
	if env == "" {
		t.Fatal(startHint)
	}
	// The CI broker is plaintext (deploy/local-kafka.sh).
	c := testkit.NewCluster(t)
	conn := c.Conn
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	meta, err := conn.Client().Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		t.Fatalf("metadata from KAFKA_BROKERS=%s: %v (is the broker running? deploy/local-kafka.sh status)", env, err)
	}
	if meta.ClusterID == "dpstream-embedded" {
		t.Fatalf("KAFKA_BROKERS=%s is a dpstream embedded broker (cluster id %q), not Apache Kafka; start one with deploy/local-kafka.sh start", env, meta.ClusterID)
	}
	if len(meta.Brokers) == 0 {
		t.Fatalf("metadata from %s lists no brokers", env)
	}
	t.Logf("cluster %s: %d broker(s), controller %d", meta.ClusterID, len(meta.Brokers), meta.Controller.ID)

	const partitions, records = 3, 60
	topic := c.Topic("roundtrip")
	c.CreateTopics(kafkaio.TopicSpec{Name: topic, Partitions: partitions})
	if n, err := conn.Partitions(ctx, topic); err != nil || n != partitions {
		t.Fatalf("%s has %d partitions (err %v), want %d", topic, n, err, partitions)
	}

	w := conn.NewWriter(topic)
	msgs := make([]kafka.Message, records)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("unit%d", i%17)), Value: []byte(fmt.Sprintf("v%03d", i))}
	}
	err = w.WriteMessages(ctx, msgs...)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}

	// Sent values per key, in order; partition records must match them.
	sent := map[string][]string{}
	for _, m := range msgs {
		sent[string(m.Key)] = append(sent[string(m.Key)], string(m.Value))
	}
	got := map[string][]string{}
	n := 0
	if err := conn.ReadAll(ctx, topic, func(m kafka.Message) error {
		n++
		if want := kafkaio.PartitionFor(m.Key, partitions); m.Partition != want {
			t.Errorf("record %s (key %s) on partition %d, PartitionFor says %d", m.Value, m.Key, m.Partition, want)
		}
		got[string(m.Key)] = append(got[string(m.Key)], string(m.Value))
		return nil
	}); err != nil {
		t.Fatalf("read back %s: %v", topic, err)
	}
	if n != records {
		t.Errorf("read %d records back, produced %d", n, records)
	}
	for k, vs := range sent {
		if fmt.Sprint(got[k]) != fmt.Sprint(vs) {
			t.Errorf("key %s: read %v, produced %v (lost, duplicated or reordered)", k, got[k], vs)
		}
	}
}
