package e2e

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/stages/release"
)

const robustConfig = `
streams:
  - name: js
    topic: {{prefix}}.js
    partitions: 1
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s, grace: 200ms, idle_timeout: 1s}
    contribution: {max_events_per_window: 100}
    budget: {epsilon: 1000, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 1}
metrics: {addr: "off"}
`

func deleteTopic(t *testing.T, brokers []string, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kafkaio.Client(brokers).DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
	if err := resp.Errors[topic]; err != nil {
		t.Fatalf("delete topic %s: %v", topic, err)
	}
}

// TestTopicDeleted deletes one of the pipeline's topics via the admin API
// while the pipeline runs: Run must return, within a bound rather than
// hang or retry forever, an error naming the topic and what to do. A
// restart after the ledger was deleted must refuse to release (an empty
// ledger would start the budget over); after the releases topic was
// deleted it must republish every release from the ledger.
func TestTopicDeleted(t *testing.T) {
	const bound = 30 * time.Second
	for _, which := range []string{"input", "partials", "ledger", "releases"} {
		t.Run(which, func(t *testing.T) {
			h := newHarness(t, robustConfig)
			in := h.start("first", pipeline.Stages{Accumulate: true, Release: true}, nil)
			events := func(from, to int64) []map[string]any {
				var evs []map[string]any
				for i := from; i < to; i++ {
					evs = append(evs, map[string]any{"user": "u1", "ts": base + i*50})
				}
				return evs
			}
			input := h.cfg.Streams[0].Topic
			h.produceJSON(input, events(0, 40), "user")
			waitFor(t, 30*time.Second, "a release", func() bool { return len(h.releases()) > 0 }, in)
			topic := map[string]string{"input": input, "partials": h.cfg.Topics.Partials,
				"ledger": h.cfg.Topics.Ledger, "releases": h.cfg.Topics.Releases}[which]
			deleteTopic(t, h.brokers, topic)
			if which != "input" {
				// More windows, so the stages write to the deleted topic.
				h.produceJSON(input, events(40, 120), "user")
			}
			start := time.Now()
			select {
			case <-in.done:
			case <-time.After(bound):
				t.Fatalf("Run still running %s after %s was deleted", bound, topic)
			}
			t.Logf("Run returned after %s: %v", time.Since(start).Round(time.Millisecond), in.err)
			var mt *pipeline.MissingTopicError
			if !errors.As(in.err, &mt) || mt.Topic != topic {
				t.Fatalf("Run returned %v, want a MissingTopicError for %s", in.err, topic)
			}
			if !strings.Contains(in.err.Error(), "topic "+topic+" (") || mt.Fix == "" {
				t.Errorf("error %q does not name the topic and a fix", in.err)
			}

			switch which {
			case "ledger":
				// The restart recreates the ledger empty; the releases
				// topic still holds releases, so the release stage refuses.
				again := h.start("restart", pipeline.Stages{Accumulate: true, Release: true}, nil)
				select {
				case <-again.done:
				case <-time.After(bound):
					t.Fatalf("restart with an empty ledger still running after %s", bound)
				}
				if !errors.Is(again.err, release.ErrLedgerLost) || !strings.Contains(again.err.Error(), h.cfg.Topics.Ledger) {
					t.Fatalf("restart returned %v, want release.ErrLedgerLost naming %s", again.err, h.cfg.Topics.Ledger)
				}
				if n := len(h.ledger()); n != 0 {
					t.Errorf("the refused restart charged %d releases to the new ledger", n)
				}
			case "releases":
				// The restart recreates the releases topic and republishes
				// the ledger's releases verbatim.
				again := h.start("restart", pipeline.Stages{Accumulate: true, Release: true}, nil)
				ledger := h.ledger()
				waitFor(t, 30*time.Second, "releases republished", func() bool { return len(h.releases()) >= len(ledger) }, again)
				byID := map[string][]byte{}
				for _, m := range h.readAll(h.cfg.Topics.Releases) {
					byID[string(m.Key)] = m.Value
				}
				for _, lc := range ledger {
					if got, ok := byID[lc.ReleaseID]; !ok || !bytes.Equal(got, lc.Payload) {
						t.Errorf("release %s not republished verbatim from the ledger", lc.ReleaseID)
					}
				}
			}
		})
	}
}
