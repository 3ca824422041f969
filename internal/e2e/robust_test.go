package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/accumulate"
	"github.com/dpstream/dpstream/stages/release"
)

// robustStream is a one-partition stream of the robustness tests.
func robustStream(name string) *testkit.Stream {
	return testkit.NewStream(name, name).Partitions(1).Window(time.Second, 200*time.Millisecond, time.Second).
		MaxEvents(100).Budget(1000, 1e-6)
}

// robustConfig is a JSON stream with a count.
func robustConfig() *testkit.Pipeline {
	return testkit.NewPipeline(robustStream("js").Releases(testkit.Count("n").Epsilon(1)))
}

func deleteTopic(t *testing.T, brokers []string, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kafkaio.Plaintext(brokers).Client().DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
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
	t.Parallel()
	const bound = 30 * time.Second
	for _, which := range []string{"input", "partials", "ledger", "releases"} {
		t.Run(which, func(t *testing.T) {
			h := newHarness(t, robustConfig())
			in := h.start("first", pipeline.Stages{Accumulate: true, Release: true}, nil)
			events := func(from, to int64) []map[string]any {
				var evs []map[string]any
				for i := from; i < to; i++ {
					evs = append(evs, map[string]any{"user": "u1", "ts": base + i*50})
				}
				return evs
			}
			input := h.cfg.Streams[0].Topic
			h.ProduceJSON(input, events(0, 40), "user")
			waitFor(t, 30*time.Second, "a release", func() bool { return len(h.releases()) > 0 }, in)
			topic := map[string]string{"input": input, "partials": h.cfg.Topics.Partials,
				"ledger": h.cfg.Topics.Ledger, "releases": h.cfg.Topics.Releases}[which]
			deleteTopic(t, h.Brokers, topic)
			if which != "input" {
				// More windows, so the stages write to the deleted topic.
				h.ProduceJSON(input, events(40, 120), "user")
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
				for _, m := range h.ReadAll(h.cfg.Topics.Releases) {
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

// oversizeConfig adds a Confluent-framed stream to robustConfig.
func oversizeConfig() *testkit.Pipeline {
	return robustConfig().Streams(robustStream("cf").ConfluentAvro("trip.avsc", 3).PrivacyUnit("rider_id").Releases(
		testkit.Sum("fare_sum", "fare", 0, 120).Epsilon(1)))
}

// setTopicConfig sets one config of a topic through the admin API.
func setTopicConfig(t *testing.T, brokers []string, topic, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kafkaio.Plaintext(brokers).Client().AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.AlterConfigRequestConfig{{Name: key, Value: value}}}}})
	if err != nil {
		t.Fatalf("set %s of %s: %v", key, topic, err)
	}
	for r, err := range resp.Errors {
		if err != nil {
			t.Fatalf("set %s of %v: %v", key, r, err)
		}
	}
}

// TestOversizedAndMisframed sends, between valid events, a record over the
// stream's max_event_bytes (on an input topic that accepts it), a rejected
// record too large for the dead-letter topic, and confluent-avro records
// with another schema id, a bad magic byte and a truncated header. The
// stream goes on; each bad record is dead-lettered with its reason (the
// oversized values left out, their size in a header); every valid event
// is accumulated.
func TestOversizedAndMisframed(t *testing.T) {
	h := newHarness(t, oversizeConfig())
	js, cf := h.cfg.Streams[0].Topic, h.cfg.Streams[1].Topic
	setTopicConfig(t, h.Brokers, js, "max.message.bytes", "4194304")
	const dlqMax = 256 << 10
	setTopicConfig(t, h.Brokers, h.cfg.Topics.DeadLetter, "max.message.bytes", strconv.Itoa(dlqMax))

	type rec struct {
		value  []byte
		reason string // "" for valid events
		detail string // part of the detail header
		omit   bool   // the dead letter leaves the value out
	}
	jsEvent := func(ts int64, extra string) []byte {
		return []byte(fmt.Sprintf(`{"user":"u1","ts":%d%s}`, ts, extra))
	}
	var jsRecs []rec
	for i := int64(0); i < 10; i++ {
		jsRecs = append(jsRecs, rec{value: jsEvent(base+i*50, "")})
	}
	huge := jsEvent(base+600, `,"pad":"`+strings.Repeat("x", 2<<20)+`"`)
	jsRecs = append(jsRecs,
		rec{value: huge, reason: "too_large", omit: true,
			detail: fmt.Sprintf("value of %d bytes is larger than the stream's max_event_bytes (1048576)", len(huge))},
		// Under max_event_bytes but over the dead-letter topic's limit.
		rec{value: []byte(`{"ts":1750000000700,"pad":"` + strings.Repeat("y", 300<<10) + `"}`), reason: "missing_unit", omit: true},
	)
	for i := int64(0); i < 10; i++ {
		jsRecs = append(jsRecs, rec{value: jsEvent(base+1000+i*50, "")})
	}

	enc, err := schema.NewEncoder(schema.FormatConfluentAvro, schema.TripSchema(), 3)
	if err != nil {
		t.Fatal(err)
	}
	trip := func(ts int64) []byte {
		b, err := enc.Encode(map[string]any{"rider_id": "r1", "trip_id": "t", "ts": ts, "fare": 2.0, "km": 1.0, "minutes": 3.0, "zone": "z"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	withID := func(b []byte, id uint32) []byte {
		out := append([]byte{}, b...)
		binary.BigEndian.PutUint32(out[1:5], id)
		return out
	}
	var cfRecs []rec
	for i := int64(0); i < 10; i++ {
		cfRecs = append(cfRecs, rec{value: trip(base + i*50)})
	}
	cfRecs = append(cfRecs,
		rec{value: withID(trip(base+600), 7), reason: "wrong_schema_id", detail: "schema id 7, expected 3"},
		rec{value: append([]byte{1}, trip(base + 600)[1:]...), reason: "bad_framing", detail: "magic byte 0x01, want 0x00"},
		rec{value: []byte{0, 0, 0}, reason: "bad_framing", detail: "shorter than 5 bytes"},
	)
	for i := int64(0); i < 10; i++ {
		cfRecs = append(cfRecs, rec{value: trip(base + 1000 + i*50)})
	}

	acc := h.start("acc", pipeline.Stages{Accumulate: true, Release: true}, nil)
	send := func(topic, key string, recs []rec) {
		w := h.Conn.NewWriter(topic)
		w.BatchBytes = 8 << 20 // the producer may send what the topic allows
		defer w.Close()
		var msgs []kafka.Message
		for _, r := range recs {
			msgs = append(msgs, kafka.Message{Key: []byte(key), Value: r.value})
		}
		h.Write(w, msgs...)
	}
	send(js, "u1", jsRecs)
	send(cf, "r1", cfRecs)

	bad := map[string]rec{} // by offset key "stream/offset"
	valid := map[string]int64{}
	for name, recs := range map[string][]rec{"js": jsRecs, "cf": cfRecs} {
		for i, r := range recs {
			if r.reason == "" {
				valid[name]++
			} else {
				bad[fmt.Sprintf("%s/%d", name, i)] = r
			}
		}
	}
	waitFor(t, 60*time.Second, "dead letters and every valid event accumulated", func() bool {
		return len(h.ReadAll(h.cfg.Topics.DeadLetter)) >= len(bad) && accumulated(h, "js") >= valid["js"] && accumulated(h, "cf") >= valid["cf"]
	}, acc)

	seen := map[string]bool{}
	for _, m := range h.ReadAll(h.cfg.Topics.DeadLetter) {
		hd := map[string]string{}
		for _, x := range m.Headers {
			hd[x.Key] = string(x.Value)
		}
		id := hd["dpstream.stream"] + "/" + hd["dpstream.offset"]
		want, ok := bad[id]
		if !ok {
			t.Errorf("unexpected dead letter %s (%s: %s)", id, hd["dpstream.reason"], hd["dpstream.detail"])
			continue
		}
		seen[id] = true
		if hd["dpstream.reason"] != want.reason || !strings.Contains(hd["dpstream.detail"], want.detail) {
			t.Errorf("dead letter %s: %s: %q, want %s with %q", id, hd["dpstream.reason"], hd["dpstream.detail"], want.reason, want.detail)
		}
		switch {
		case want.omit && (len(m.Value) != 0 || hd[accumulate.HeaderOriginalBytes] != strconv.Itoa(len(want.value))):
			t.Errorf("dead letter %s: %d value bytes, %s %q; want the value left out and its length %d",
				id, len(m.Value), accumulate.HeaderOriginalBytes, hd[accumulate.HeaderOriginalBytes], len(want.value))
		case !want.omit && (!bytes.Equal(m.Value, want.value) || hd[accumulate.HeaderOriginalBytes] != ""):
			t.Errorf("dead letter %s does not hold the original value", id)
		}
	}
	for id, r := range bad {
		if !seen[id] {
			t.Errorf("no dead letter for %s (%s)", id, r.reason)
		}
	}
	for _, s := range []string{"js", "cf"} {
		if got := accumulated(h, s); got != valid[s] {
			t.Errorf("stream %s: partials hold %d events, %d valid were sent", s, got, valid[s])
		}
	}
	if got := testutil.ToFloat64(acc.metrics.Rejected.WithLabelValues("js", "too_large")); got != 1 {
		t.Errorf("dpstream_events_rejected_total{stream=js,reason=too_large} = %v, want 1", got)
	}
	acc.check(t)
}
