package pipeline

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
)

// testConfig is a small pipeline: one JSON stream on a 2-partition topic.
func testConfig() *testkit.Pipeline {
	return testkit.NewPipeline(testkit.NewStream("rides", "rides.events").Partitions(2).Releases(
		testkit.Count("n").Epsilon(0.5)))
}

// loadConfig parses and plans p, with the pDP store in a directory of the
// test's own.
func loadConfig(t *testing.T, p *testkit.Pipeline) (*config.Config, []plan.Stream) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Parse([]byte(p.YAML()), filepath.Join(dir, "pipeline.yaml"))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.PDPStore = filepath.Join(dir, "pdp")
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return cfg, ps
}

// TestRunLifecycle runs the stages against the embedded broker and checks
// what a supervisor relies on: the health state goes Starting → Ready →
// Stopping, InFlight names the running stages and the partitions they hold,
// and a cancelled Run returns nil with nothing in flight and both consumer
// groups left (no member waits for a session timeout to be evicted).
func TestRunLifecycle(t *testing.T) {
	cases := []struct {
		name   string
		stages Stages
		// wantInFlight must each be a line of InFlight once the stages have
		// their partitions.
		wantInFlight []string
		groups       func(*config.Config) []string
	}{
		{
			name:   "both stages",
			stages: Stages{Accumulate: true, Release: true},
			wantInFlight: []string{
				"accumulate stage: not stopped (consumer group not left: its partitions move after the session timeout)",
				"accumulate: stream rides, rides.events[0]: not drained; its next owner replays from the start of the partition",
				"accumulate: stream rides, rides.events[1]: not drained; its next owner replays from the start of the partition",
				"release stage: not stopped (consumer group not left: its partitions move after the session timeout)",
				// The partials topic has release_partitions partitions,
				// all held by this one release instance.
				"release: dpstream.partials[0]: not drained; its next owner replays from the start of the partition",
				"release: dpstream.partials[1]: not drained; its next owner replays from the start of the partition",
				"release: dpstream.partials[2]: not drained; its next owner replays from the start of the partition",
				"release: dpstream.partials[3]: not drained; its next owner replays from the start of the partition",
			},
			groups: func(c *config.Config) []string { a, r := Groups(c); return []string{a, r} },
		},
		{
			name:   "accumulate only",
			stages: Stages{Accumulate: true},
			wantInFlight: []string{
				"accumulate stage: not stopped (consumer group not left: its partitions move after the session timeout)",
				"accumulate: stream rides, rides.events[0]: not drained; its next owner replays from the start of the partition",
				"accumulate: stream rides, rides.events[1]: not drained; its next owner replays from the start of the partition",
			},
			groups: func(c *config.Config) []string { a, _ := Groups(c); return []string{a} },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			broker := testkit.StartBroker(t)
			cfg, ps := loadConfig(t, testConfig())
			m := metrics.New()
			p := New(Options{Config: cfg, Plan: ps, Conn: broker.Conn, Stages: c.stages, Metrics: m,
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if got := m.Health.State(); got != metrics.Starting {
				t.Fatalf("state before Run: %v, want starting", got)
			}
			if got := p.InFlight(); len(got) != 0 {
				t.Errorf("InFlight before Run: %q, want nothing", got)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()

			testkit.WaitFor(t, 10*time.Second, "ready", func() bool { return m.Health.State() == metrics.Ready })
			var inFlight []string
			testkit.WaitFor(t, 15*time.Second, "the stages to hold their partitions", func() bool {
				inFlight = p.InFlight()
				for _, w := range c.wantInFlight {
					if !slices.Contains(inFlight, w) {
						return false
					}
				}
				return true
			})
			if len(inFlight) != len(c.wantInFlight) {
				t.Errorf("InFlight has %d lines, want %d:\n%s", len(inFlight), len(c.wantInFlight), strings.Join(inFlight, "\n"))
			}
			if c.stages.Accumulate {
				// The accumulate stage reports its partitions' lag while it
				// holds them (checked below to be gone after it stops).
				testkit.WaitFor(t, 10*time.Second, "consumer lag series", func() bool { return testutil.CollectAndCount(m.ConsumerLag) > 0 })
			}

			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run after cancel: %v, want nil", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("Run did not return within 15s of cancellation")
			}
			if got := m.Health.State(); got != metrics.Stopping {
				t.Errorf("state after Run: %v, want stopping", got)
			}
			if got := p.InFlight(); len(got) != 0 {
				t.Errorf("InFlight after Run: %q, want nothing", got)
			}
			// A stopped instance reports no consumer lag: its partitions
			// may belong to another instance now.
			if n := testutil.CollectAndCount(m.ConsumerLag); n != 0 {
				t.Errorf("%d consumer lag series after Run returned, want 0", n)
			}
			// The session timeout is 10s: members still listed now were
			// not removed by a LeaveGroup.
			for g, n := range broker.Members(c.groups(cfg)...) {
				if n != 0 {
					t.Errorf("group %s has %d members after Run returned, want 0 (left)", g, n)
				}
			}
		})
	}
}

// TestRunUnreachable checks that a pipeline whose brokers do not answer
// fails and never reports ready.
func TestRunUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg, ps := loadConfig(t, testConfig())
	m := metrics.New()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err = Run(ctx, Options{Config: cfg, Plan: ps, Conn: kafkaio.Plaintext([]string{addr}), Stages: Stages{Accumulate: true, Release: true}, Metrics: m,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Run against %s: err %v (ctx %v), want a prompt connection error", addr, err, ctx.Err())
	}
	if got := m.Health.State(); got != metrics.Stopping {
		t.Errorf("state after a failed start: %v, want stopping", got)
	}
}

func TestDurabilityProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    kafkaio.TopicDurability
		want []string // substrings, one per problem
	}{
		{"single broker is not checked", kafkaio.TopicDurability{Brokers: 1, Replicas: 1, MinInSync: 1}, nil},
		{"well replicated", kafkaio.TopicDurability{Brokers: 5, Replicas: 3, MinInSync: 2}, nil},
		{"two brokers, two replicas", kafkaio.TopicDurability{Brokers: 2, Replicas: 2, MinInSync: 2}, nil},
		{"default cluster settings", kafkaio.TopicDurability{Brokers: 3, Replicas: 1, MinInSync: 1},
			[]string{"replication factor 1: want 3", "min.insync.replicas=1"}},
		{"unclean election", kafkaio.TopicDurability{Brokers: 3, Replicas: 3, MinInSync: 2, UncleanElection: true},
			[]string{"unclean.leader.election.enable=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := durabilityProblems(tc.d)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q does not say %q", got[i], w)
				}
			}
		})
	}
}

// TestDurabilityOfEmbeddedTopic reads the durability of a topic on a
// three-broker embedded cluster.
func TestDurabilityOfEmbeddedTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := kafkaio.Plaintext(c.ListenAddrs()).Durability(ctx, "ledger")
	if err != nil {
		t.Fatal(err)
	}
	if d.Brokers != 3 || d.Replicas < 1 {
		t.Errorf("durability %+v, want 3 brokers and at least one replica", d)
	}
}

// TestRunRefusesMultiPartitionPartials: a partials topic created with
// several partitions (by an administrator, with a cluster default of 3)
// stops Run before any stage starts, naming the topic; with one release
// process per partition, the process's handlers would fence each other.
func TestRunRefusesMultiPartitionPartials(t *testing.T) {
	b := testkit.StartBroker(t)
	cfg, ps := loadConfig(t, testkit.NewPipeline(testkit.NewStream("s", "s.events").Window(time.Second, 0, 0).MaxEvents(1).Budget(1, 1e-6).
		Releases(testkit.Count("n").Epsilon(0.5))))
	b.CreateTopics(kafkaio.TopicSpec{Name: cfg.Topics.Partials, Partitions: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(ctx, Options{Config: cfg, Plan: ps, Conn: b.Conn, Stages: Stages{Release: true}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), cfg.Topics.Partials) || !strings.Contains(err.Error(), "3 partitions") {
		t.Fatalf("Run with a 3-partition partials topic: %v, want an error naming it", err)
	}
}
