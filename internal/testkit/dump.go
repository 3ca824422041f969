package testkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
)

// Topic dumps: a broker's topics and consumer-group offsets written to a
// directory (DumpTopics) and loaded into a fresh broker (LoadTopics), so
// that a test can start from the exact records an earlier version of
// dpstream wrote — the upgrade fixtures under testdata/upgrade — rather
// than from records the code under test writes itself.
//
// A dump directory holds
//
//   - ManifestFile (manifest.json): the Manifest, naming each topic with
//     its partition count and the TopicSpec settings it was created with
//     (compacted, unlimited retention), its file and its record count, and
//     the committed offsets of the consumer groups on those topics;
//   - one file per topic, <topic>.jsonl: one DumpRecord per line, JSON,
//     partition by partition in offset order.
//
// The format is plain JSON so that a dump stays readable and diffable
// whatever the record schemas become; keys, values and header values are
// base64 (JSON's encoding of []byte), null for a record without a key or
// a tombstone.

// ManifestFile is the name of a dump's manifest in its directory.
const ManifestFile = "manifest.json"

// DumpFormat is the version of the dump layout this package writes and
// reads.
const DumpFormat = 1

// Manifest describes a dump directory: its topics and the consumer-group
// offsets committed on them.
type Manifest struct {
	Format int         `json:"format"`
	Topics []DumpTopic `json:"topics"`
	// Groups are the committed offsets (with their metadata) of the
	// dumped consumer groups, one per group, topic and partition that
	// had one.
	Groups []GroupOffset `json:"groups,omitempty"`
}

// DumpTopic is one dumped topic: the settings LoadTopics creates it with,
// the file holding its records (relative to the dump directory) and how
// many there are.
type DumpTopic struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
	Compact    bool   `json:"compact,omitempty"`
	Forever    bool   `json:"forever,omitempty"`
	File       string `json:"file"`
	Records    int    `json:"records"`
}

// Spec is the TopicSpec the topic was created with.
func (d DumpTopic) Spec() kafkaio.TopicSpec {
	return kafkaio.TopicSpec{Name: d.Name, Partitions: d.Partitions, Compact: d.Compact, Forever: d.Forever}
}

// GroupOffset is one committed consumer-group offset.
type GroupOffset struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata,omitempty"`
}

// DumpRecord is one record of a dumped topic. Timestamp is the record's
// timestamp in unix milliseconds.
type DumpRecord struct {
	Partition int          `json:"partition"`
	Offset    int64        `json:"offset"`
	Key       []byte       `json:"key"`
	Value     []byte       `json:"value"`
	Headers   []DumpHeader `json:"headers,omitempty"`
	Timestamp int64        `json:"timestamp"`
}

// DumpHeader is one record header.
type DumpHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Message is the record as kafka-go reads it (Topic left empty).
func (r DumpRecord) Message() kafka.Message {
	m := kafka.Message{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Time: time.UnixMilli(r.Timestamp)}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	return m
}

// dumpRecordOf is m as a DumpRecord.
func dumpRecordOf(m kafka.Message) DumpRecord {
	r := DumpRecord{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Time.UnixMilli()}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, DumpHeader{Key: h.Key, Value: h.Value})
	}
	return r
}

// DumpFileName is the file a topic's records are dumped to: the topic
// name (Kafka allows only [a-zA-Z0-9._-] in it) with ".jsonl".
func DumpFileName(topic string) string { return topic + ".jsonl" }

// DumpTopics writes every record of each of specs' topics to dir (which
// must exist), one file per topic (DumpFileName), and the manifest, with
// the committed offsets of groups on those topics. The topics are read up
// to their ends when DumpTopics is called, so nothing may write to them
// meanwhile. It returns the manifest written.
func DumpTopics(ctx context.Context, conn *kafkaio.Connection, dir string, specs []kafkaio.TopicSpec, groups []string) (Manifest, error) {
	man := Manifest{Format: DumpFormat}
	for _, s := range specs {
		n, err := conn.Partitions(ctx, s.Name)
		if err != nil {
			return man, fmt.Errorf("dump %s: %w", s.Name, err)
		}
		var recs []DumpRecord
		err = conn.ReadAll(ctx, s.Name, func(m kafka.Message) error {
			recs = append(recs, dumpRecordOf(m))
			return nil
		})
		if err != nil {
			return man, fmt.Errorf("dump %s: %w", s.Name, err)
		}
		t := DumpTopic{Name: s.Name, Partitions: n, Compact: s.Compact, Forever: s.Forever, File: DumpFileName(s.Name), Records: len(recs)}
		if err := writeTopicDump(filepath.Join(dir, t.File), recs); err != nil {
			return man, err
		}
		man.Topics = append(man.Topics, t)
	}
	for _, g := range groups {
		offs, err := committedOffsets(ctx, conn, g, man.Topics)
		if err != nil {
			return man, err
		}
		man.Groups = append(man.Groups, offs...)
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return man, err
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644); err != nil {
		return man, fmt.Errorf("dump manifest: %w", err)
	}
	return man, nil
}

// committedOffsets returns group's committed offsets on the topics'
// partitions (those with none are left out).
func committedOffsets(ctx context.Context, conn *kafkaio.Connection, group string, topics []DumpTopic) ([]GroupOffset, error) {
	req := &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{}}
	for _, t := range topics {
		for p := range t.Partitions {
			req.Topics[t.Name] = append(req.Topics[t.Name], p)
		}
	}
	resp, err := conn.Client().OffsetFetch(ctx, req)
	if err == nil {
		err = resp.Error
	}
	if errors.Is(err, kafka.GroupIdNotFound) {
		return nil, nil // a group that never committed
	}
	if err != nil {
		return nil, fmt.Errorf("offsets of group %s: %w", group, err)
	}
	var out []GroupOffset
	for _, t := range topics {
		for _, p := range resp.Topics[t.Name] {
			if p.Error != nil {
				return nil, fmt.Errorf("offset of group %s on %s[%d]: %w", group, t.Name, p.Partition, p.Error)
			}
			if p.CommittedOffset >= 0 {
				out = append(out, GroupOffset{Group: group, Topic: t.Name, Partition: p.Partition, Offset: p.CommittedOffset, Metadata: p.Metadata})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out, nil
}

func writeTopicDump(path string, recs []DumpRecord) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("dump %s: %w", path, err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("dump %s: %w", path, err)
	}
	return nil
}

// ReadManifest reads a dump directory's manifest.
func ReadManifest(dir string) (Manifest, error) {
	var man Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return man, fmt.Errorf("topic dump: %w", err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		return man, fmt.Errorf("topic dump %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if man.Format != DumpFormat {
		return man, fmt.Errorf("topic dump %s: format %d, this reader knows %d", dir, man.Format, DumpFormat)
	}
	return man, nil
}

// Topic returns the manifest's topic of that name.
func (m Manifest) Topic(name string) (DumpTopic, bool) {
	i := slices.IndexFunc(m.Topics, func(t DumpTopic) bool { return t.Name == name })
	if i < 0 {
		return DumpTopic{}, false
	}
	return m.Topics[i], true
}

// ReadTopicDump reads one topic's dump file: its records partition by
// partition, each partition's in offset order, as DumpTopics wrote them.
// A file out of that order is an error.
func ReadTopicDump(path string) ([]DumpRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("topic dump: %w", err)
	}
	defer f.Close()
	var out []DumpRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20) // a line holds a whole record, base64
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r DumpRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if n := len(out); n > 0 {
			prev := out[n-1]
			if r.Partition < prev.Partition || r.Partition == prev.Partition && r.Offset <= prev.Offset {
				return nil, fmt.Errorf("%s:%d: record %d@%d after %d@%d: not in partition and offset order", path, line, r.Partition, r.Offset, prev.Partition, prev.Offset)
			}
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("topic dump %s: %w", path, err)
	}
	return out, nil
}

// loadBatchBytes bounds the records of one produce request of LoadTopics,
// well under a broker's default message.max.bytes.
const loadBatchBytes = 256 << 10

// LoadTopics loads the dump in dir into the cluster of conn and returns
// its manifest: it creates each topic with its recorded partition count
// and settings (kafkaio.TopicSpec: compacted, unlimited retention), which
// must not exist yet (or be empty with that partition count), produces
// every record to its recorded partition in offset order with its key,
// value, headers and timestamp, and commits the recorded consumer-group
// offsets (with their metadata) as simple commits, so the groups must have
// no members. The cluster then holds exactly the dumped records: LoadTopics
// checks that every record landed at its recorded offset (the broker
// assigns offsets from 0 on a fresh partition, so a dump whose offsets
// have gaps, of a compacted or truncated topic, cannot be loaded and is an
// error) and reads each topic back to compare it record for record.
func LoadTopics(ctx context.Context, conn *kafkaio.Connection, dir string) (Manifest, error) {
	man, err := ReadManifest(dir)
	if err != nil {
		return man, err
	}
	specs := make([]kafkaio.TopicSpec, len(man.Topics))
	for i, t := range man.Topics {
		specs[i] = t.Spec()
	}
	if err := conn.EnsureTopics(ctx, specs); err != nil {
		return man, fmt.Errorf("load %s: %w", dir, err)
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	if err := WaitTopicsReady(ctx, conn, names); err != nil {
		return man, fmt.Errorf("load %s: %w", dir, err)
	}
	for _, t := range man.Topics {
		if err := loadTopic(ctx, conn, dir, t); err != nil {
			return man, fmt.Errorf("load %s: %w", dir, err)
		}
	}
	if err := commitOffsets(ctx, conn, man.Groups); err != nil {
		return man, fmt.Errorf("load %s: %w", dir, err)
	}
	return man, nil
}

// loadTopic produces one dumped topic's records into it (fresh, with its
// recorded partition count) and checks the result.
func loadTopic(ctx context.Context, conn *kafkaio.Connection, dir string, t DumpTopic) error {
	recs, err := ReadTopicDump(filepath.Join(dir, t.File))
	if err != nil {
		return err
	}
	if len(recs) != t.Records {
		return fmt.Errorf("topic %s: %d records in %s, the manifest says %d", t.Name, len(recs), t.File, t.Records)
	}
	n, err := conn.Partitions(ctx, t.Name)
	if err != nil {
		return err
	}
	if n != t.Partitions {
		return fmt.Errorf("topic %s has %d partitions, the dump %d: load into a cluster without it", t.Name, n, t.Partitions)
	}
	ends, err := conn.EndOffsets(ctx, t.Name)
	if err != nil {
		return err
	}
	for p, end := range ends {
		if end != 0 {
			return fmt.Errorf("topic %s[%d] is not empty (ends at %d): load into a cluster without it", t.Name, p, end)
		}
	}
	byPart := map[int][]DumpRecord{}
	for _, r := range recs {
		if r.Partition < 0 || r.Partition >= t.Partitions {
			return fmt.Errorf("topic %s: a record of partition %d, of %d", t.Name, r.Partition, t.Partitions)
		}
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	cl := conn.Client()
	for p := range t.Partitions {
		rs := byPart[p]
		for i, r := range rs {
			if r.Offset != int64(i) {
				return fmt.Errorf("topic %s[%d]: record %d of the dump has offset %d; a fresh partition would put it at %d (a dump with gaps cannot be loaded)", t.Name, p, i, r.Offset, i)
			}
		}
		for start := 0; start < len(rs); {
			end, size := start, 0
			for end < len(rs) && (end == start || size+recordSize(rs[end]) <= loadBatchBytes) {
				size += recordSize(rs[end])
				end++
			}
			batch := make([]kafka.Record, 0, end-start)
			for _, r := range rs[start:end] {
				rec := kafka.Record{Time: time.UnixMilli(r.Timestamp), Key: kafka.NewBytes(r.Key), Value: kafka.NewBytes(r.Value)}
				for _, h := range r.Headers {
					rec.Headers = append(rec.Headers, kafka.Header{Key: h.Key, Value: h.Value})
				}
				batch = append(batch, rec)
			}
			resp, err := cl.Produce(ctx, &kafka.ProduceRequest{Topic: t.Name, Partition: p, RequiredAcks: kafka.RequireAll, Records: kafka.NewRecordReader(batch...)})
			if err == nil {
				err = resp.Error
			}
			if err != nil {
				return fmt.Errorf("produce to %s[%d]: %w", t.Name, p, err)
			}
			if resp.BaseOffset != rs[start].Offset {
				return fmt.Errorf("topic %s[%d]: records %d.. landed at offset %d, want %d", t.Name, p, rs[start].Offset, resp.BaseOffset, rs[start].Offset)
			}
			start = end
		}
	}
	// Read back: the same records at the same offsets.
	i := 0
	err = conn.ReadAll(ctx, t.Name, func(m kafka.Message) error {
		if i >= len(recs) {
			return fmt.Errorf("more records than the dump's %d", len(recs))
		}
		if err := sameRecord(recs[i], m); err != nil {
			return fmt.Errorf("record %d@%d: %w", recs[i].Partition, recs[i].Offset, err)
		}
		i++
		return nil
	})
	if err == nil && i != len(recs) {
		err = fmt.Errorf("%d records read back, the dump has %d", i, len(recs))
	}
	if err != nil {
		return fmt.Errorf("topic %s after loading: %w", t.Name, err)
	}
	return nil
}

func recordSize(r DumpRecord) int {
	n := len(r.Key) + len(r.Value) + 64
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// sameRecord reports how a record read back differs from its dump.
func sameRecord(want DumpRecord, m kafka.Message) error {
	var diffs []string
	if m.Partition != want.Partition || m.Offset != want.Offset {
		diffs = append(diffs, fmt.Sprintf("at %d@%d", m.Partition, m.Offset))
	}
	if !bytes.Equal(m.Key, want.Key) || (m.Key == nil) != (want.Key == nil) {
		diffs = append(diffs, "key")
	}
	if !bytes.Equal(m.Value, want.Value) || (m.Value == nil) != (want.Value == nil) {
		diffs = append(diffs, "value")
	}
	if m.Time.UnixMilli() != want.Timestamp {
		diffs = append(diffs, fmt.Sprintf("timestamp %d, want %d", m.Time.UnixMilli(), want.Timestamp))
	}
	if len(m.Headers) != len(want.Headers) {
		diffs = append(diffs, fmt.Sprintf("%d headers, want %d", len(m.Headers), len(want.Headers)))
	} else {
		for j, h := range m.Headers {
			if h.Key != want.Headers[j].Key || !bytes.Equal(h.Value, want.Headers[j].Value) {
				diffs = append(diffs, "header "+want.Headers[j].Key)
			}
		}
	}
	if len(diffs) > 0 {
		return errors.New("differs from the dump: " + strings.Join(diffs, ", "))
	}
	return nil
}

// commitOffsets commits the offsets as simple commits (generation -1, no
// member: Kafka accepts them for a group without members) and reads them
// back.
func commitOffsets(ctx context.Context, conn *kafkaio.Connection, offs []GroupOffset) error {
	byGroup := map[string]map[string][]kafka.OffsetCommit{}
	var groups []string
	for _, o := range offs {
		if byGroup[o.Group] == nil {
			byGroup[o.Group] = map[string][]kafka.OffsetCommit{}
			groups = append(groups, o.Group)
		}
		byGroup[o.Group][o.Topic] = append(byGroup[o.Group][o.Topic], kafka.OffsetCommit{Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata})
	}
	cl := conn.Client()
	for _, g := range groups {
		resp, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: g, GenerationID: -1, Topics: byGroup[g]})
		if err != nil {
			return fmt.Errorf("commit the offsets of group %s: %w", g, err)
		}
		for topic, ps := range resp.Topics {
			for _, p := range ps {
				if p.Error != nil {
					return fmt.Errorf("commit the offset of group %s on %s[%d]: %w", g, topic, p.Partition, p.Error)
				}
			}
		}
	}
	for _, g := range groups {
		var topics []DumpTopic
		parts := map[string]int{}
		for _, o := range offs {
			if o.Group == g {
				parts[o.Topic] = max(parts[o.Topic], o.Partition+1)
			}
		}
		for name, n := range parts {
			topics = append(topics, DumpTopic{Name: name, Partitions: n})
		}
		got, err := committedOffsets(ctx, conn, g, topics)
		if err != nil {
			return err
		}
		var want []GroupOffset
		for _, o := range offs {
			if o.Group == g {
				want = append(want, o)
			}
		}
		sort.Slice(want, func(i, j int) bool {
			if want[i].Topic != want[j].Topic {
				return want[i].Topic < want[j].Topic
			}
			return want[i].Partition < want[j].Partition
		})
		if !slices.Equal(got, want) {
			return fmt.Errorf("group %s: committed %+v, want %+v", g, got, want)
		}
	}
	return nil
}

// Load loads the dump in dir into the cluster (LoadTopics) and returns
// its manifest, failing the test on any error. The cluster must be one
// of the test's own (not KAFKA_BROKERS): a dump's topics have the names
// they were recorded with.
func (c *Cluster) Load(dir string) Manifest {
	c.t.Helper()
	if c.External() {
		c.t.Fatal("Load on a shared external cluster: a dump's topic names are fixed; load it into a broker of the test's own (StartBroker)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	man, err := LoadTopics(ctx, c.Conn, dir)
	if err != nil {
		c.t.Fatal(err)
	}
	return man
}

// ArchiveRecords writes the records of partition of topic before offset
// end (from the partition's log start) to a new file path, one DumpRecord a
// line: the end-to-end tests keep there what the release stage is about to
// delete from its ledger, so that their checks still see every record. The
// file appears whole or not at all (written beside it, synced, renamed), so
// that a check reading the archive while a pipeline runs never sees part
// of one; an existing path is an error (each trim gets a file of its own).
func ArchiveRecords(ctx context.Context, conn *kafkaio.Connection, topic string, partition int, end int64, path string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	err := conn.ReadRange(ctx, topic, partition, kafka.FirstOffset, end, func(m kafka.Message) error {
		return enc.Encode(dumpRecordOf(m))
	})
	if err != nil {
		return fmt.Errorf("archive %s[%d] before %d: %w", topic, partition, end, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("archive %s[%d] before %d: %s exists", topic, partition, end, path)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadArchive reads a file ArchiveRecords wrote (records in any order).
func ReadArchive(path string) ([]DumpRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []DumpRecord
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r DumpRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}
