package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

// TestUpgradeCheckpointsAndContinues takes the ledger written by the code
// before checkpoints (the upgrade fixture, one partition, no checkpoint)
// through an upgrade:
//
//   - the release stage reads the whole ledger once, rebuilds the budget
//     the fixture's accountant topic recorded, writes a checkpoint and
//     trims the ledger to it;
//   - a second takeover starts from that checkpoint (the ledger's first
//     record) and rebuilds the same budget, republishing nothing;
//   - the pipeline then continues the fixture's streams: new windows of
//     trips are released once each, the continual count's horizon that the
//     fixture began goes on from its step logs (checkContinual over every
//     ledger record, the trimmed ones from the archive), and the budget the
//     accountant publishes counts what the whole ledger holds.
func TestUpgradeCheckpointsAndContinues(t *testing.T) {
	t.Parallel()
	dir := upgradeFixtureDir
	sum, cfg, ps := readUpgradeFixture(t, dir)
	c := testkit.StartBroker(t)
	c.Load(dir)
	archive := filepath.Join(t.TempDir(), "archive")
	t0 := time.Now()
	clock := func() time.Time { return time.UnixMilli(sum.ClockEnd).Add(time.Since(t0)) }
	run := func(name string, st pipeline.Stages, until func() bool, what string) {
		t.Helper()
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- pipeline.Run(ctx, pipeline.Options{Config: cfg, Plan: ps, Conn: c.Conn, Stages: st, Log: testLogger(t), Now: clock,
				RecordBytes: sum.RecordBytes, InstanceName: name, CheckpointInterval: 200 * time.Millisecond, CheckpointCharges: 20,
				Failpoint: archiveBeforeTrim(archive, c.Conn, cfg.Topics.Ledger, nil)})
		}()
		testkit.WaitFor(t, 90*time.Second, what, func() bool {
			select {
			case err := <-done:
				t.Fatalf("%s: the pipeline stopped: %v", name, err)
			default:
			}
			return until()
		})
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	head := func() *ledger.Checkpoint {
		cp, err := ledger.ReadHead(ctx, c.Conn, cfg.Topics.Ledger, 0)
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	statesSince := func(from int) map[string]schema.BudgetState {
		ms := c.ReadAll(cfg.Topics.Accountant)
		if len(ms) <= from {
			return nil
		}
		st, err := latestBudgetStates(ms[from:])
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	checkStates := func(life string, got map[string]schema.BudgetState) {
		t.Helper()
		for _, s := range cfg.Streams {
			g, w := got[s.Name], sum.Budget[s.Name]
			g.UpdatedAt, w.UpdatedAt = 0, 0
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s: stream %s rebuilt as\n%s\nthe fixture recorded\n%s", life, s.Name, jsonOf(g), jsonOf(w))
			}
		}
	}
	published := len(c.ReadAll(cfg.Topics.Releases))

	// The upgrade: read all, checkpoint, trim.
	acct := len(c.ReadAll(cfg.Topics.Accountant))
	run("upgrade", pipeline.Stages{Release: true}, func() bool {
		cp := head()
		return cp != nil && len(statesSince(acct)) == len(cfg.Streams)
	}, "the fixture's ledger checkpointed and trimmed")
	checkStates("after the upgrade", statesSince(acct))
	if start := c.StartOffset(cfg.Topics.Ledger, 0); start == 0 {
		t.Fatal("the ledger was not trimmed")
	}

	// The second takeover: from the checkpoint.
	acct = len(c.ReadAll(cfg.Topics.Accountant))
	run("from-checkpoint", pipeline.Stages{Release: true}, func() bool { return len(statesSince(acct)) == len(cfg.Streams) },
		"the budget rebuilt from the checkpoint")
	checkStates("from the checkpoint", statesSince(acct))
	if n := len(c.ReadAll(cfg.Topics.Releases)); n != published {
		t.Errorf("%d releases after two takeovers, %d before: a takeover republished what was published", n, published)
	}

	// Continue trips: windows 6..9 with events, closed by one event per
	// partition in window 11.
	var evs []map[string]any
	for w := int64(6); w <= 9; w++ {
		for i := range 12 {
			evs = append(evs, map[string]any{"user": fmt.Sprintf("u%d", i), "ts": base + w*1000 + int64(i)*50, "v": float64(i % 10), "zone": fmt.Sprintf("z%03d", i)})
		}
	}
	evs = append(evs, closers(11, 2)...)
	for _, ev := range evs {
		if _, ok := ev["zone"]; !ok {
			ev["zone"] = "z000"
		}
		if _, ok := ev["v"]; !ok {
			ev["v"] = 1.0
		}
	}
	c.ProduceJSON("trips.events", evs, "user")
	want := map[string]bool{}
	for w := int64(6); w <= 9; w++ {
		for _, r := range []string{"z", "n", "h", "cn"} {
			want[fmt.Sprintf("trips/%s/%d", r, base+w*1000)] = true
		}
	}
	count := func() map[string]int {
		n := map[string]int{}
		for _, m := range c.ReadAll(cfg.Topics.Releases) {
			if want[string(m.Key)] {
				n[string(m.Key)]++
			}
		}
		return n
	}
	run("continue", pipeline.Stages{Accumulate: true, Release: true}, func() bool { return len(count()) == len(want) }, "trips windows 6..9 released")
	for id := range want {
		for _, m := range c.ReadAll(cfg.Topics.Releases) {
			if string(m.Key) != id {
				continue
			}
			// z is in chunks: one record per chunk, each once.
			if _, _, chunked := chunkIndex(m); !chunked && count()[id] != 1 {
				t.Errorf("%s published %d times, want once", id, count()[id])
			}
		}
	}
	// Every record the ledger ever held: the fixture's (archived when
	// trimmed) and the new ones.
	all := ledgerWithArchive(t, c, cfg.Topics.Ledger, archive)
	series, bad := checkContinual(ps, all)
	for _, b := range bad {
		t.Error(b)
	}
	cn := series["trips/cn"]
	if len(cn) < 8 {
		t.Errorf("the continual count cn has %d windows checked, want the fixture's 6 and the 4 new ones", len(cn))
	}
	// The budget counts what the whole ledger holds.
	var ok int64
	books := ledgerBooks{}
	for _, m := range all {
		e, err := books.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == schema.LedgerTypeCharge && e.Valid && !e.Identical && e.Charge.Stream == "trips" && e.Charge.Status == "ok" && len(e.Charge.Charges) > 0 {
			ok++
		}
	}
	states, err := latestBudgetStates(c.ReadAll(cfg.Topics.Accountant))
	if err != nil {
		t.Fatal(err)
	}
	if st := states["trips"]; st.ReleasesCharged != ok {
		t.Errorf("trips: the budget counts %d charges, the whole ledger holds %d", st.ReleasesCharged, ok)
	}
}

// chunkIndex reads a releases-topic record's chunk header.
func chunkIndex(m kafka.Message) (chunk, chunks int, ok bool) {
	for _, h := range m.Headers {
		if h.Key == "dpstream-chunk" {
			if _, err := fmt.Sscanf(string(h.Value), "%d/%d", &chunk, &chunks); err == nil {
				return chunk, chunks, true
			}
		}
	}
	return 0, 0, false
}

// ledgerWithArchive is every record a ledger topic ever held: the records
// archived before each trim (archiveBeforeTrim) and the topic's, once each,
// by partition and offset.
//
// The topic is read before the archive, so that a trim while this runs
// cannot hide a record: a record trimmed before or during the topic's read
// was archived before it was trimmed, so before the archive is read. (Read
// the other way round, a trim between the two reads loses its records, and
// the Books see a gap.)
func ledgerWithArchive(t *testing.T, c *testkit.Cluster, topic, archive string) []kafka.Message {
	t.Helper()
	seen := map[[2]int64]kafka.Message{}
	for _, m := range c.ReadAll(topic) {
		seen[[2]int64{int64(m.Partition), m.Offset}] = m
	}
	files, _ := filepath.Glob(filepath.Join(archive, "*.jsonl"))
	for _, f := range files {
		recs, err := testkit.ReadArchive(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, r := range recs {
			seen[[2]int64{int64(r.Partition), r.Offset}] = r.Message()
		}
	}
	out := make([]kafka.Message, 0, len(seen))
	for _, m := range seen {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b kafka.Message) int {
		if a.Partition != b.Partition {
			return a.Partition - b.Partition
		}
		return int(a.Offset - b.Offset)
	})
	return out
}
