package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

const benchConfig = `streams:
  - name: bench
    topic: bench.events
    partitions: %d
    format: json
    privacy_unit: user
    event_time: ts
    start: %s
    window: {size: 1s, grace: 0s, idle_timeout: 1m}
    contribution: {max_events_per_window: 1000}
    budget: {epsilon: 1000000, delta: 1e-6}
    pdp: %t
    releases:
      - {name: n, kind: count, epsilon: 1}
      - {name: v_mean, kind: mean, field: v, bounds: [0, 100], epsilon: 1}
      - {name: v_hist, kind: histogram, field: v, bounds: [0, 100], bins: 20, epsilon: 1}
metrics: {addr: "off"}
`

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", "[--events N] [--partitions P] [--pdp on|off] [--json]", `
Measure throughput on the embedded broker: produce N JSON events to a
topic, read them with three bare consumers (the baselines: Kafka I/O alone;
a kafka-go Reader as the stages use, kafka-go's batch fetch Conn.ReadBatch,
and a franz-go client), then run the accumulate and release stages over the same topic and
time until every event is consumed and every window that event time closes
(all but the last) is released. Prints both
rates and their ratio; both are measured in the same run on the same
machine, so the ratio is the number to compare (absolute rates vary with
machine load).`, stdout, stderr)
	n := fs.Int("events", 200000, "events to produce")
	parts := fs.Int("partitions", 4, "partitions of the input topic")
	pdpFlag := fs.String("pdp", "on", "per-instance DP bookkeeping on the bench's stream: on (the default of a stream) or off")
	asJSON := fs.Bool("json", false, "print the result as one JSON object (runs keyed dpstream, kafka-go, kafka-go-batch, franz-go, each with events_per_s)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the dpstream run to this file (go tool pprof)")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if *n < 1 || *parts < 1 {
		fmt.Fprintf(stderr, "dpstream bench: --events %d --partitions %d: want at least 1 of each\n", *n, *parts)
		return exitConfig
	}
	if *pdpFlag != "on" && *pdpFlag != "off" {
		fmt.Fprintf(stderr, "dpstream bench: --pdp %q: want on or off\n", *pdpFlag)
		return exitConfig
	}
	dir, err := os.MkdirTemp("", "dpstream-bench-")
	if err != nil {
		fmt.Fprintln(stderr, "dpstream bench:", err)
		return exitError
	}
	defer os.RemoveAll(dir)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "dpstream bench: -cpuprofile:", err)
			return exitConfig
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "dpstream bench: -cpuprofile:", err)
			return exitError
		}
		defer pprof.StopCPUProfile()
	}
	res, err := runBench(ctx, dir, *n, *parts, *pdpFlag == "on", stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream bench:", err)
		return exitError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res.json()); err != nil {
			fmt.Fprintln(stderr, "dpstream bench:", err)
			return exitError
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "events: %d on %d partitions (embedded broker), per-instance DP %s\n", *n, *parts, *pdpFlag)
	fmt.Fprintf(stdout, "bare kafka-go consume:  %10.0f events/s  (%s)\n", res.bareRate(), res.bare.Round(time.Millisecond))
	fmt.Fprintf(stdout, "bare kafka-go batch:    %10.0f events/s  (%s)\n", res.rate(res.batch), res.batch.Round(time.Millisecond))
	fmt.Fprintf(stdout, "bare franz-go:          %10.0f events/s  (%s)\n", res.rate(res.franz), res.franz.Round(time.Millisecond))
	fmt.Fprintf(stdout, "dpstream end to end:    %10.0f events/s  (%s)\n", res.pipeRate(), res.pipe.Round(time.Millisecond))
	fmt.Fprintf(stdout, "ratio dpstream / bare:  %10.3f\n", res.pipeRate()/res.bareRate())
	fmt.Fprintf(stdout, "ratio dpstream / batch: %10.3f\n", res.pipeRate()/res.rate(res.batch))
	fmt.Fprintf(stdout, "ratio dpstream / franz: %10.3f\n", res.pipeRate()/res.rate(res.franz))
	return exitOK
}

// benchResult is one bench run's times for its n events: the pipeline
// end to end and each baseline (bare consumers of the same topic).
type benchResult struct {
	n, partitions int
	pdp           bool
	// pdpRecords is what the run wrote to the pdp topic.
	pdpRecords int64
	// bare is kafka-go's Reader, batch its Conn.ReadBatch, franz a
	// franz-go client.
	bare, batch, franz, pipe time.Duration
}

func (r benchResult) rate(d time.Duration) float64 { return float64(r.n) / d.Seconds() }
func (r benchResult) bareRate() float64            { return r.rate(r.bare) }
func (r benchResult) pipeRate() float64            { return r.rate(r.pipe) }

// benchRunJSON is one run of `bench --json`'s runs map.
type benchRunJSON struct {
	EventsPerS float64 `json:"events_per_s"`
	Seconds    float64 `json:"seconds"`
}

// benchJSON is `bench --json`'s output: the runs keyed dpstream,
// kafka-go (Reader), kafka-go-batch and franz-go, and the ratios of
// dpstream to each baseline.
type benchJSON struct {
	Events     int                     `json:"events"`
	Partitions int                     `json:"partitions"`
	PDP        bool                    `json:"pdp"`
	PDPRecords int64                   `json:"pdp_records"`
	Broker     string                  `json:"broker"`
	Runs       map[string]benchRunJSON `json:"runs"`
	Ratios     map[string]float64      `json:"ratios"`
}

func (r benchResult) json() benchJSON {
	run := func(d time.Duration) benchRunJSON { return benchRunJSON{EventsPerS: r.rate(d), Seconds: d.Seconds()} }
	return benchJSON{Events: r.n, Partitions: r.partitions, PDP: r.pdp, PDPRecords: r.pdpRecords, Broker: "embedded",
		Runs: map[string]benchRunJSON{"dpstream": run(r.pipe), "kafka-go": run(r.bare), "kafka-go-batch": run(r.batch), "franz-go": run(r.franz)},
		Ratios: map[string]float64{"dpstream/kafka-go": r.pipeRate() / r.bareRate(),
			"dpstream/kafka-go-batch": r.pipeRate() / r.rate(r.batch), "dpstream/franz-go": r.pipeRate() / r.rate(r.franz)}}
}

func runBench(ctx context.Context, dir string, n, parts int, pdp bool, progress io.Writer) (benchResult, error) {
	res := benchResult{n: n, partitions: parts, pdp: pdp}
	broker, err := kafkaio.StartEmbedded("127.0.0.1:0", filepath.Join(dir, "kafka"), nil, kafkaio.NoSync())
	if err != nil {
		return res, err
	}
	defer broker.Close()
	conn := broker.Conn()
	// The events' times start at the stream's start and end before the wall
	// clock, so that the release schedule admits every one (none before the
	// start, none ahead of the clock) and lets every window close as event
	// time passes it, at the pipeline's own speed: 20 events per ms of event
	// time, and a second to spare.
	start := time.Now().UTC().Add(-time.Duration(n/20)*time.Millisecond - 2*time.Second).Truncate(time.Second)
	cfg, err := config.Parse([]byte(fmt.Sprintf(benchConfig, parts, start.Format(time.RFC3339), pdp)), "bench.yaml")
	if err != nil {
		return res, err
	}
	cfg.PDPStore = filepath.Join(dir, "pdp")
	ps, err := plan.Build(cfg)
	if err != nil {
		return res, err
	}
	if err := conn.EnsureTopics(ctx, pipeline.Topics(cfg)); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "producing %d events...\n", n)
	w := conn.NewWriter("bench.events")
	t0ms := start.UnixMilli()
	batch := make([]kafka.Message, 0, 2000)
	for i := 0; i < n; i++ {
		user := fmt.Sprintf("u%d", i%5000)
		// 20 events per ms of event time: 20,000 events per 1s window.
		ts := t0ms + int64(i/20)
		batch = append(batch, kafka.Message{Key: []byte(user), Value: fmt.Appendf(nil, `{"user":%q,"ts":%d,"v":%d}`, user, ts, i%101)})
		if len(batch) == cap(batch) || i == n-1 {
			if err := w.WriteMessages(ctx, batch...); err != nil {
				w.Close()
				return res, err
			}
			batch = batch[:0]
		}
	}
	w.Close()

	ends, err := conn.EndOffsets(ctx, "bench.events")
	if err != nil {
		return res, err
	}
	fmt.Fprintln(progress, "baseline: bare kafka-go Reader...")
	if res.bare, err = benchReaderBaseline(ctx, conn, "bench.events", ends); err != nil {
		return res, fmt.Errorf("kafka-go Reader baseline: %w", err)
	}
	fmt.Fprintln(progress, "baseline: bare kafka-go Conn.ReadBatch...")
	if res.batch, err = benchBatchBaseline(ctx, broker.Addr(), "bench.events", ends); err != nil {
		return res, fmt.Errorf("kafka-go batch baseline: %w", err)
	}
	fmt.Fprintln(progress, "baseline: bare franz-go consumer...")
	if res.franz, err = benchFranzBaseline(ctx, broker.Addr(), "bench.events", ends); err != nil {
		return res, fmt.Errorf("franz-go baseline: %w", err)
	}

	fmt.Fprintln(progress, "dpstream: accumulate + release...")
	// Every window but the last closes by event time; the last would wait
	// for the idle timeout, which is not throughput.
	windows := (int64(n-1)/20)/1000 + 1
	wantReleased := int(windows-1) * len(ps[0].Releases)
	var released atomic.Int64
	m := metrics.New()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t1 := time.Now()
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = pipeline.Run(pctx, pipeline.Options{Config: cfg, Plan: ps, Conn: conn,
			Stages: pipeline.Stages{Accumulate: true, Release: true}, Metrics: m,
			Log:       slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn})),
			OnRelease: func(schema.Release) { released.Add(1) }})
	}()
	for {
		consumed := testutil.ToFloat64(m.Consumed.WithLabelValues("bench"))
		if int(consumed) >= n && int(released.Load()) >= wantReleased {
			break
		}
		select {
		case <-done:
			return res, fmt.Errorf("pipeline stopped early: %w", runErr)
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	res.pipe = time.Since(t1)
	cancel()
	<-done
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return res, runErr
	}
	// A rejected or late event would make the run measure the dead-letter
	// path instead of the pipeline (as when the schedule refused every
	// event before the stream's start): refuse to report a rate.
	if rejected, late := counterSum(m.Rejected), counterSum(m.Late); rejected+late > 0 {
		return res, fmt.Errorf("%v of %d events were dead-lettered (%v rejected, %v late): the rate would not measure the pipeline", rejected+late, n, rejected, late)
	}
	// What the run wrote to the pdp topic: none with --pdp off, so that a
	// comparison of on and off measures the bookkeeping.
	pends, err := conn.EndOffsets(ctx, cfg.Topics.PDP)
	if err != nil {
		return res, fmt.Errorf("the pdp topic's end offsets: %w", err)
	}
	for _, e := range pends {
		res.pdpRecords += e
	}
	return res, nil
}

// counterSum adds every series of a counter vector.
func counterSum(c *prometheus.CounterVec) float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) == nil && pb.Counter != nil {
			sum += pb.Counter.GetValue()
		}
	}
	return sum
}
