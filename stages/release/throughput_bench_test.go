package release

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// The release stage's throughput (issue 22): an owner catching up a
// stream started hours ago must charge at least 5,000 windows/s, and the
// query service answer at least 5,000 predictions/s. Both benchmarks run
// on the embedded broker, in memory or on a data directory fsynced before
// every acknowledgement, and check what they time: every window charged
// exactly once and published, every request answered once.
//
//	go test ./stages/release -run '^$' -bench 'CatchUp|Answers' -benchtime 1x

// benchBrokers are the embedded brokers the benchmarks run on: in memory,
// and on a data directory with every write fsynced (the embedded broker's
// default with a directory).
var benchBrokers = []string{"memory", "fsync"}

// benchRig is a stageRig on the broker named by kind.
func benchRig(b *testing.B, kind string) *stageRig {
	b.Helper()
	if kind == "fsync" {
		return newStageRigIn(b, b.TempDir())
	}
	return newStageRig(b)
}

// countPlanOf is one stream "s" of 1 s windows with one count release
// "n" and a budget that no catch-up exhausts: one charge per window.
func countPlanOf(t testing.TB) []plan.Stream {
	t.Helper()
	return mustPlan(t, `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 1000000, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 1}
`)
}

// produce writes msgs to topic in one write.
func (r *stageRig) produce(topic string, msgs []kafka.Message) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := r.conn.NewWriter(topic)
	w.BatchSize = len(msgs)
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		r.t.Fatal(err)
	}
}

// backlog writes the partials of n closed 1 s windows of stream s, the
// last ending a minute ago, to the partials topic (one accumulate
// partition), and returns the windows' starts.
func (r *stageRig) backlog(n int) []int64 {
	r.t.Helper()
	first := time.Now().Add(-time.Minute).Truncate(time.Second).UnixMilli() - int64(n)*1000
	starts := make([]int64, n)
	msgs := make([]kafka.Message, n)
	for i := range n {
		start := first + int64(i)*1000
		v, err := schema.EncodePartial(schema.Partial{Stream: "s", WindowStart: start, WindowEnd: start + 1000, Partitions: 1,
			Events: 3, FirstOffset: -1, LastOffset: -1, Stats: []schema.ReleaseStats{{Release: "n", Count: 3, Bins: []int64{}}}})
		if err != nil {
			r.t.Fatal(err)
		}
		starts[i], msgs[i] = start, kafka.Message{Key: []byte("s"), Value: v}
	}
	r.produce("partials", msgs)
	return starts
}

// prepare does what Run does before it joins the consumer group: it sizes
// the stage's writers to their topics and learns the partition count.
func prepare(t testing.TB, s *Stage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, w := range []*kafka.Writer{s.releases, s.accountantW, s.responses} {
		if w != nil {
			if _, err := s.cfg.Conn.FitBatchBytes(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.learnPartitions(ctx); err != nil {
		t.Fatal(err)
	}
}

// handling runs s.handle on partials partition 0 from its start, as the
// consumer group would hand it over (offset commits are accepted and
// dropped), until the returned stop is called; stop returns handle's error.
func handling(s *Stage) (stop func() error, exited <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	a := kafkaio.Assignment{Topic: "partials", Partition: 0, Offset: kafka.FirstOffset,
		Commit: func(context.Context, int64, string) error { return nil }}
	go func() { done <- s.handle(ctx, a) }()
	return func() error { cancel(); return <-done }, done
}

// BenchmarkCatchUp: a stream's partials topic holds a backlog of closed
// windows (15 min and 3 h of 1 s windows); a new owner takes over the
// partition and releases them all. Timed from the handler's start
// (takeover included) to the last release published; reports charges/s.
func BenchmarkCatchUp(b *testing.B) {
	for _, windows := range []int{900, 10800} {
		for _, broker := range benchBrokers {
			b.Run(fmt.Sprintf("windows=%d/broker=%s", windows, broker), func(b *testing.B) {
				var elapsed time.Duration
				for range b.N {
					b.StopTimer()
					rig := benchRig(b, broker)
					rig.cfg.Streams = countPlanOf(b)
					starts := rig.backlog(windows)
					var published atomic.Int64
					all := make(chan struct{})
					rig.cfg.OnRelease = func(schema.Release) {
						if published.Add(1) == int64(windows) {
							close(all)
						}
					}
					s := rig.stage(1)
					prepare(b, s)
					b.StartTimer()
					t0 := time.Now()
					stop, exited := handling(s)
					select {
					case <-all:
					case err := <-exited:
						b.Fatalf("the handler returned %v after %d of %d releases", err, published.Load(), windows)
					case <-time.After(150 * time.Second):
						b.Fatalf("%d of %d releases published after 150 s", published.Load(), windows)
					}
					elapsed += time.Since(t0)
					b.StopTimer()
					if err := stop(); err != nil {
						b.Fatal(err)
					}
					rig.checkCaughtUp(starts)
				}
				b.ReportMetric(float64(windows)*float64(b.N)/elapsed.Seconds(), "charges/s")
			})
		}
	}
}

// checkCaughtUp fails unless the ledger holds exactly one valid charge,
// ok, of release n of every window of starts and nothing else, and the
// releases topic holds each exactly once.
func (r *stageRig) checkCaughtUp(starts []int64) {
	r.t.Helper()
	want := make(map[string]bool, len(starts))
	for _, st := range starts {
		want[plan.ReleaseID("s", "n", st)] = true
	}
	var book ledger.Book
	charged := map[string]int{}
	for _, m := range r.read("ledger") {
		e, err := book.Apply(m)
		if err != nil {
			r.t.Fatal(err)
		}
		if e.Type != schema.LedgerTypeCharge || !e.Valid {
			continue
		}
		if !want[e.Charge.ReleaseID] || e.Charge.Status != StatusOK {
			r.t.Fatalf("unexpected charge %s (status %s)", e.Charge.ReleaseID, e.Charge.Status)
		}
		charged[e.Charge.ReleaseID]++
	}
	published := map[string]int{}
	for _, m := range r.read("releases") {
		published[string(m.Key)]++
	}
	for id := range want {
		if charged[id] != 1 || published[id] != 1 {
			r.t.Fatalf("release %s: %d valid charges and %d publications, want 1 of each", id, charged[id], published[id])
		}
	}
	if len(published) != len(want) {
		r.t.Fatalf("%d releases published, want %d", len(published), len(want))
	}
}

// BenchmarkAnswers: the prediction query service of an owner that has a
// model answers a burst of requests already on the requests topic. Timed
// from serveQueries' start to the last answer published; reports
// answers/s.
func BenchmarkAnswers(b *testing.B) {
	for _, requests := range []int{1000, 20000} {
		for _, broker := range benchBrokers {
			b.Run(fmt.Sprintf("requests=%d/broker=%s", requests, broker), func(b *testing.B) {
				var elapsed time.Duration
				for range b.N {
					b.StopTimer()
					rig := benchRig(b, broker)
					rig.cfg.Streams = predictPlan(b, 1e6, 0)
					rig.cfg.RequestsTopic, rig.cfg.ResponsesTopic = "requests", "responses"
					rig.topics("requests", "responses")
					rig.cfg.Metrics = metrics.New()
					answered := rig.cfg.Metrics.Releases.WithLabelValues("s", "n", "answer")
					s := rig.stage(1)
					prepare(b, s)
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					if err := s.takeOver(ctx); err != nil {
						b.Fatal(err)
					}
					if err := s.releaseWindow(ctx, window(1, 3)); err != nil {
						b.Fatal(err)
					}
					cancel()
					msgs := make([]kafka.Message, requests)
					for i := range msgs {
						msgs[i] = kafka.Message{Value: []byte(jsonQuery("q" + strconv.Itoa(i)))}
					}
					rig.produce("requests", msgs)
					b.StartTimer()
					t0 := time.Now()
					sv := serving(s)
					deadline := t0.Add(150 * time.Second)
					for testutil.ToFloat64(answered) < float64(requests) {
						if err, ended := sv.exited(); ended {
							b.Fatalf("serveQueries returned %v after %v of %d answers", err, testutil.ToFloat64(answered), requests)
						}
						if time.Now().After(deadline) {
							b.Fatalf("%v of %d answers after 150 s", testutil.ToFloat64(answered), requests)
						}
						time.Sleep(time.Millisecond)
					}
					elapsed += time.Since(t0)
					b.StopTimer()
					if err := sv.stop(); err != nil {
						b.Fatal(err)
					}
					rig.checkAnswered(requests)
				}
				b.ReportMetric(float64(requests)*float64(b.N)/elapsed.Seconds(), "answers/s")
			})
		}
	}
}

// checkAnswered fails unless requests q0..q<n-1> each have exactly one
// response, ok, and one valid answer charge, and there is nothing else.
func (r *stageRig) checkAnswered(n int) {
	r.t.Helper()
	rs := r.responses()
	if len(rs) != n {
		r.t.Fatalf("%d responses, want %d", len(rs), n)
	}
	seen := map[string]bool{}
	for _, a := range rs {
		if seen[a.RequestID] || a.Status != StatusOK {
			r.t.Fatalf("response %+v: a repeat, or not ok", a)
		}
		seen[a.RequestID] = true
	}
	charges := r.answerCharges()
	if len(charges) != n {
		r.t.Fatalf("%d requests charged, want %d", len(charges), n)
	}
	for i := range n {
		id := "q" + strconv.Itoa(i)
		if !seen[id] || charges[id] != 1 {
			r.t.Fatalf("request %s: responded %v, %d valid charges; want a response and 1 charge", id, seen[id], charges[id])
		}
	}
}
