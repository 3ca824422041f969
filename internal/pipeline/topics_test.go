package pipeline

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/stages/accumulate"
)

// TestWatchTopics: the watch returns nothing while the topics exist and
// when cancelled, and a MissingTopicError naming the topic, its role and
// fix once a topic has been missing at two checks in a row.
func TestWatchTopics(t *testing.T) {
	b := testkit.StartBroker(t)
	brokers := b.Brokers
	b.CreateTopics(kafkaio.TopicSpec{Name: "in"}, kafkaio.TopicSpec{Name: "ledger"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics := map[string]topicRole{"in": {"the input", "recreate it"}, "ledger": {"the ledger", "restore it"}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const interval = 50 * time.Millisecond

	// Present: the watch runs until cancelled, then returns nil.
	wctx, wcancel := context.WithTimeout(ctx, 10*interval)
	if err := watchTopics(wctx, kafkaio.Plaintext(brokers), topics, interval, log); err != nil {
		t.Fatalf("watch with every topic present: %v", err)
	}
	wcancel()

	resp, err := kafkaio.Plaintext(brokers).Client().DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{"ledger"}})
	if err != nil || resp.Errors["ledger"] != nil {
		t.Fatalf("delete: %v %v", err, resp.Errors)
	}
	// The watch reports the deletion at the second check that misses the
	// topic, not the first (a topic being recreated is missing once) and
	// not later: exactly one "checking again" warning comes before it.
	var warnings strings.Builder
	counted := slog.New(slog.NewTextHandler(&warnings, nil))
	start := time.Now()
	err = watchTopics(ctx, kafkaio.Plaintext(brokers), topics, interval, counted)
	var mt *MissingTopicError
	if !errors.As(err, &mt) || mt.Topic != "ledger" || mt.Role != "the ledger" || mt.Fix != "restore it" {
		t.Fatalf("watch after deleting the ledger: %v, want a MissingTopicError for it", err)
	}
	if n := strings.Count(warnings.String(), "topic not found; checking again"); n != 1 {
		t.Errorf("%d warnings before the error, want 1 (reported at the second missing check):\n%s", n, warnings.String())
	}
	if d := time.Since(start); d < 2*interval {
		t.Errorf("the deletion was reported after %s, before two checks (%s)", d, 2*interval)
	}
}

// TestMaxEventBytesLimitFits: the largest max_event_bytes the
// configuration allows is one the accumulate stage accepts (one fetch can
// return it).
func TestMaxEventBytesLimitFits(t *testing.T) {
	_, err := accumulate.New(accumulate.Config{Conn: kafkaio.Plaintext([]string{"127.0.0.1:1"}), GroupID: "g", PartialsTopic: "p", DeadLetterTopic: "d",
		Inputs: []accumulate.Input{{Stream: &accumulate.Stream{Name: "s"}, Topic: "in", MaxEventBytes: config.MaxEventBytesLimit}}})
	if err != nil {
		t.Fatalf("config.MaxEventBytesLimit %d: %v", config.MaxEventBytesLimit, err)
	}
}
