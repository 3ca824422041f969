package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// TestLedgerTailLost plays a broker that lost the tail of the ledger and of
// the releases topic (acknowledged writes it had not synced): the topics
// are replaced by copies of their first records. The two agree, so the
// releases topic cannot tell; the accountant topic's latest state still
// counts the lost charges, and the release stage must refuse to start,
// naming the topics, rather than spend again the budget of the lost
// charges. Before the accountant topic was cross-checked the restart ran
// normally with fewer charges.
func TestLedgerTailLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, robustConfig())
	in := h.start("first", pipeline.Stages{Accumulate: true, Release: true}, nil)
	var evs []map[string]any
	for i := int64(0); i < 200; i++ {
		evs = append(evs, map[string]any{"user": "u1", "ts": base + i*50})
	}
	h.ProduceJSON(h.cfg.Streams[0].Topic, evs, "user")
	waitFor(t, 60*time.Second, "six charged windows", func() bool { return len(h.ledger()) >= 6 }, in)
	in.stop()
	if in.err != nil {
		t.Fatalf("first run: %v", in.err)
	}

	// Keep the ledger up to its second charge and the releases topic's
	// first two releases: a tail lost on both.
	ledgerMsgs := h.ReadAll(h.cfg.Topics.Ledger)
	keep, charges := 0, 0
	for i, m := range ledgerMsgs {
		if typ := headerOf(m, schema.LedgerTypeHeader); typ == "" || typ == schema.LedgerTypeCharge {
			if charges++; charges == 2 {
				keep = i + 1
				break
			}
		}
	}
	releases := h.ReadAll(h.cfg.Topics.Releases)
	if keep == 0 || len(releases) < 2 {
		t.Fatalf("the first run left %d ledger records and %d releases", len(ledgerMsgs), len(releases))
	}
	h.replaceTopic(h.cfg.Topics.Ledger, ledgerMsgs[:keep])
	h.replaceTopic(h.cfg.Topics.Releases, releases[:2])

	again := h.start("restart", pipeline.Stages{Accumulate: true, Release: true}, nil)
	select {
	case <-again.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the restart on a ledger that lost its tail is still running after 60s")
	}
	if !errors.Is(again.err, release.ErrLedgerLost) {
		t.Fatalf("restart returned %v, want release.ErrLedgerLost", again.err)
	}
	for _, want := range []string{h.cfg.Topics.Accountant, h.cfg.Topics.Ledger, "restore the ledger"} {
		if !strings.Contains(again.err.Error(), want) {
			t.Errorf("error %q does not name %q", again.err, want)
		}
	}
	if n := len(h.ledger()); n != 2 {
		t.Errorf("the refused restart charged: the ledger holds %d valid charges, want the 2 kept", n)
	}
}

// replaceTopic deletes topic and recreates it holding msgs (keys, values
// and headers), in order, each on its partition.
func (h *harness) replaceTopic(topic string, msgs []kafka.Message) {
	h.t.Helper()
	deleteTopic(h.t, h.Brokers, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A real broker deletes asynchronously: wait until the topic is gone
	// before creating it again.
	for {
		missing, err := h.Conn.MissingTopics(ctx, []string{topic})
		if err == nil && len(missing) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("topic %s still exists after its deletion", topic)
		case <-time.After(200 * time.Millisecond):
		}
	}
	var spec []kafkaio.TopicSpec
	for _, s := range pipeline.Topics(h.cfg) {
		if s.Name == topic {
			spec = append(spec, s)
		}
	}
	if err := h.Conn.EnsureTopics(ctx, spec); err != nil {
		h.t.Fatalf("recreate %s: %v", topic, err)
	}
	if h.External() {
		if err := testkit.WaitTopicsReady(ctx, h.Conn, []string{topic}); err != nil {
			h.t.Fatalf("recreate %s: %v", topic, err)
		}
	}
	// Each record back on its partition: a ledger partition is a log of
	// its own (its epoch markers are keyed otherwise than its charges).
	writers := map[int]*kafka.Writer{}
	defer func() {
		for _, w := range writers {
			w.Close()
		}
	}()
	for _, m := range msgs {
		w := writers[m.Partition]
		if w == nil {
			w = h.Conn.NewPartitionWriter(topic, m.Partition)
			writers[m.Partition] = w
		}
		if err := w.WriteMessages(ctx, kafka.Message{Key: m.Key, Value: m.Value, Headers: m.Headers}); err != nil {
			h.t.Fatalf("write %s: %v", topic, err)
		}
	}
}

// headerOf returns the value of a record header ("" if absent).
func headerOf(m kafka.Message, key string) string {
	for _, hd := range m.Headers {
		if hd.Key == key {
			return string(hd.Value)
		}
	}
	return ""
}
