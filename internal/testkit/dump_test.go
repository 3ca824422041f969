package testkit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
)

// TestDumpLoadRoundTrip: a dump loaded into a fresh broker and dumped
// again gives the same files byte for byte (records at the same
// partitions and offsets, with their keys, values, headers, timestamps,
// and the groups' committed offsets and metadata); the topics are created
// with their partition counts and settings; loading over a non-empty
// topic, or a dump whose offsets have a gap, is an error.
func TestDumpLoadRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := StartBroker(t)
	specs := []kafkaio.TopicSpec{
		{Name: "events", Partitions: 3},
		{Name: "state", Partitions: 1, Compact: true},
		{Name: "log", Partitions: 1, Forever: true},
		{Name: "empty", Partitions: 2},
	}
	src.CreateTopics(specs...)
	at := time.UnixMilli(1_750_000_000_123)
	var evs []kafka.Message
	for i := range 20 {
		evs = append(evs, kafka.Message{Key: []byte{byte('a' + i%7)}, Value: []byte(strings.Repeat("v", i)), Time: at.Add(time.Duration(i) * time.Millisecond)})
	}
	src.Produce("events", evs...)
	src.Produce("state",
		kafka.Message{Key: []byte("s1"), Value: []byte("one"), Headers: []kafka.Header{{Key: "h", Value: []byte("1")}, {Key: "empty", Value: []byte{}}}, Time: at},
		kafka.Message{Key: []byte("s1"), Value: nil, Time: at}, // a tombstone
	)
	src.Produce("log", kafka.Message{Value: []byte("no key"), Time: at}, kafka.Message{Key: []byte("k"), Value: []byte{0, 1, 2, 255}, Time: at})
	commit := func(c *Cluster, group, topic string, p int, off int64, md string) {
		t.Helper()
		resp, err := c.Conn.Client().OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1,
			Topics: map[string][]kafka.OffsetCommit{topic: {{Partition: p, Offset: off, Metadata: md}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range resp.Topics {
			for _, x := range ps {
				if x.Error != nil {
					t.Fatal(x.Error)
				}
			}
		}
	}
	commit(src, "g-acc", "events", 1, 3, `{"watermark":5}`)
	commit(src, "g-acc", "events", 2, 1, "")
	commit(src, "g-rel", "log", 0, 2, "")

	dir1 := t.TempDir()
	man, err := DumpTopics(ctx, src.Conn, dir1, specs, []string{"g-acc", "g-rel", "g-none"})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, tp := range man.Topics {
		counts[tp.Name] = tp.Records
	}
	if counts["events"] != 20 || counts["state"] != 2 || counts["log"] != 2 || counts["empty"] != 0 {
		t.Errorf("dumped record counts %v, want events 20, state 2, log 2, empty 0", counts)
	}
	if len(man.Groups) != 3 {
		t.Errorf("dumped group offsets %+v, want the 3 committed", man.Groups)
	}
	recs, err := ReadTopicDump(filepath.Join(dir1, DumpFileName("state")))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Value != nil || len(recs[0].Headers) != 2 || recs[0].Timestamp != at.UnixMilli() {
		t.Errorf("state dump %+v: want a record with 2 headers at %d, then a tombstone", recs, at.UnixMilli())
	}

	dst := StartBroker(t)
	if got := dst.Load(dir1); len(got.Topics) != len(specs) {
		t.Fatalf("loaded %d topics, want %d", len(got.Topics), len(specs))
	}
	for _, s := range specs {
		n, err := dst.Conn.Partitions(ctx, s.Name)
		if err != nil || n != s.Partitions {
			t.Errorf("loaded topic %s has %d partitions (%v), want %d", s.Name, n, err, s.Partitions)
		}
	}
	if v, err := dst.Conn.TopicConfig(ctx, "state", "cleanup.policy"); err != nil || v != "compact" {
		t.Errorf("loaded topic state: cleanup.policy %q (%v), want compact", v, err)
	}
	if v, err := dst.Conn.TopicConfig(ctx, "log", "retention.ms"); err != nil || v != "-1" {
		t.Errorf("loaded topic log: retention.ms %q (%v), want -1", v, err)
	}
	dir2 := t.TempDir()
	if _, err := DumpTopics(ctx, dst.Conn, dir2, specs, []string{"g-acc", "g-rel", "g-none"}); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir(dir1)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		a, _ := os.ReadFile(filepath.Join(dir1, f.Name()))
		b, err := os.ReadFile(filepath.Join(dir2, f.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the dump of the loaded broker differs from the dump loaded (%v)\n%s\n---\n%s", f.Name(), err, a, b)
		}
	}

	// Loading again: the topics are no longer empty.
	if _, err := LoadTopics(ctx, dst.Conn, dir1); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("loading over loaded topics: %v, want a not-empty error", err)
	}
	// A dump with a gap cannot be reproduced on a fresh partition.
	path := filepath.Join(dir1, DumpFileName("log"))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(`"offset":1,`), []byte(`"offset":2,`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTopics(ctx, StartBroker(t).Conn, dir1); err == nil || !strings.Contains(err.Error(), "gaps") {
		t.Errorf("loading a dump with a gap: %v, want an error", err)
	}
}
