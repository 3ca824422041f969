package testkit

import (
	"regexp"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
)

// TestClusterRoundTrip: what a test produces through the harness it reads
// back, decoded, and a broker with a data directory keeps it over a
// restart on the same address.
func TestClusterRoundTrip(t *testing.T) {
	c := StartBroker(t, DataDir(""))
	if c.External() || c.Prefix != "" || c.Topic("x") != "x" {
		t.Fatalf("embedded cluster: external %v, prefix %q, topic %q", c.External(), c.Prefix, c.Topic("x"))
	}
	c.CreateTopics(kafkaio.TopicSpec{Name: "events", Partitions: 2}, kafkaio.TopicSpec{Name: "releases", Partitions: 1})
	c.ProduceJSON("events", []map[string]any{{"user": "a", "v": 1}, {"user": "b", "v": 2}, {"user": "a", "v": 3}}, "user")
	v := 4.5
	rs := []schema.Release{
		{ReleaseID: "s/n/0", Stream: "s", Release: "n", Kind: "count", Status: "ok", WindowEnd: 1000, Value: &v},
		{ReleaseID: "s/n/1000", Stream: "s", Release: "n", Kind: "count", Status: "budget_exhausted", WindowStart: 1000, WindowEnd: 2000},
	}
	c.ProduceReleases("releases", rs...)

	check := func(when string) {
		t.Helper()
		perUnit := map[string][]string{}
		for _, m := range c.ReadAll("events") {
			perUnit[string(m.Key)] = append(perUnit[string(m.Key)], string(m.Value))
		}
		if got := strings.Join(perUnit["a"], " "); got != `{"user":"a","v":1} {"user":"a","v":3}` {
			t.Errorf("%s: unit a's events %s, want both in order", when, got)
		}
		if len(perUnit["b"]) != 1 {
			t.Errorf("%s: unit b's events %v, want one", when, perUnit["b"])
		}
		got := c.Releases("releases")
		if len(got) != 2 || got[0].ReleaseID != rs[0].ReleaseID || *got[0].Value != v || got[1].Status != "budget_exhausted" {
			t.Errorf("%s: releases %+v, want %+v", when, got, rs)
		}
	}
	check("before the restart")
	addr := c.Addr
	c.Restart()
	if c.Addr != addr || c.Broker == nil {
		t.Fatalf("restarted on %s (broker %v), want %s", c.Addr, c.Broker, addr)
	}
	check("after the restart")
}

// TestClusterLedger: Ledger leaves out the byte-identical repeat of a
// charge and LedgerWithRepeats keeps it; a charge with the same id and
// another payload is in both.
func TestClusterLedger(t *testing.T) {
	c := StartBroker(t)
	c.CreateTopics(kafkaio.TopicSpec{Name: "ledger", Partitions: 1})
	charge := func(payload string) kafka.Message {
		lc := schema.LedgerCharge{ReleaseID: "s/n/0", Stream: "s", Release: "n", Status: "ok", Payload: []byte(payload)}
		b, err := schema.EncodeLedgerCharge(lc)
		if err != nil {
			t.Fatal(err)
		}
		return kafka.Message{Key: []byte(lc.ReleaseID), Value: b}
	}
	c.Produce("ledger", charge("one"), charge("one"), charge("two"))
	if got := c.Ledger("ledger"); len(got) != 2 || string(got[0].Payload) != "one" || string(got[1].Payload) != "two" {
		t.Errorf("Ledger: %d charges %+v, want one and two", len(got), got)
	}
	if got := c.LedgerWithRepeats("ledger"); len(got) != 3 {
		t.Errorf("LedgerWithRepeats: %d charges, want 3", len(got))
	}
}

// TestTopicPrefix checks the per-test prefix used on an external broker:
// subtest names with characters Kafka rejects in topic names (the "=" of
// "L=1", "/", "_", ".", spaces) become "-", the stamp keeps reruns apart, and
// the result stays a legal topic name even for very long test names. The
// expected strings are written by hand from the rule.
func TestTopicPrefix(t *testing.T) {
	legal := regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)
	tests := []struct {
		name  string
		stamp int64
		want  string
	}{
		{"TestEndToEnd", 42, "testendtoend-42"},
		{"TestEndToEndRegression/L=1", 7, "testendtoendregression-l-1-7"},
		{"TestX/a_b.c d", 1, "testx-a-b-c-d-1"},
		{"TestÄ", 3, "test---3"}, // Ä is two bytes in UTF-8, each replaced
		{strings.Repeat("a", 300), 5, strings.Repeat("a", 150) + "-5"},
	}
	for _, tc := range tests {
		got := TopicPrefix(tc.name, tc.stamp)
		if got != tc.want {
			t.Errorf("TopicPrefix(%q, %d) = %q, want %q", tc.name, tc.stamp, got, tc.want)
		}
		// The harness appends "." and an internal topic's name, e.g.
		// dpstream.accountant: the result must still be a legal topic.
		if topic := got + ".dpstream.accountant"; !legal.MatchString(topic) {
			t.Errorf("TopicPrefix(%q): %q is not a legal Kafka topic name", tc.name, topic)
		}
	}
}
