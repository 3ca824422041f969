package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// demoConfig is the demo's pipeline: one stream of taxi trips (Avro),
// five releases. %s are the window size, grace and the schema path.
const demoConfig = `# The pipeline 'dpstream demo' runs (printed by 'dpstream demo --print-config').
streams:
  - name: trips
    topic: demo.trips
    partitions: 4
    format: avro
    schema: %s
    privacy_unit: rider_id
    event_time: ts
    window: {size: %s, grace: %s, idle_timeout: 2s}
    contribution: {max_events_per_window: 3}
    budget: {epsilon: 12, delta: 1e-6}
    releases:
      - {name: trips, kind: count, noise: laplace, epsilon: 0.25}
      - {name: fare_mean, kind: mean, field: fare, bounds: [0, 120], noise: gaussian, epsilon: 0.5, delta: 1e-8}
      - {name: km_hist, kind: histogram, field: km, bounds: [0, 30], bins: 15, noise: laplace, epsilon: 0.5}
      - {name: fare_hist, kind: histogram, field: fare, bounds: [0, 120], bins: 12, noise: laplace, epsilon: 0.5}
      - {name: km_density, kind: density, field: km, bounds: [0, 30], terms: 8, noise: laplace, epsilon: 0.5}
      - {name: km_by_min, kind: histogram, fields: [km, minutes], bounds: [[0, 30], [0, 90]], bins: [8, 8], max_per_bin: 1, samples: 3, noise: gaussian, epsilon: 0.5, delta: 1e-8}
`

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", "[--windows N] [flags]", `
Run everything in one process: an embedded Kafka broker, a synthetic
producer of taxi trips (riders with skewed trip counts, fares, distances,
and a few malformed, out-of-range and late events), the accumulate and
release stages, and a readable line per release. With --windows N it stops
after N windows and exits 0; otherwise it runs until Ctrl-C. Other Kafka
clients can connect to the broker address it logs (e.g. 'kcat -b ADDR -L').`, stdout, stderr)
	windows := fs.Int("windows", 0, "stop after this many windows have been released (0: run until interrupted)")
	window := fs.Duration("window", 5*time.Second, "window size")
	rate := fs.Int("rate", 400, "trips produced per second")
	addr := fs.String("broker-addr", config.DefaultEmbeddedAddr, "listen address of the embedded broker (a free port is used if it is taken)")
	dataDir := fs.String("data-dir", "", "embedded broker data directory (default: a fresh temporary directory, removed at exit)")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9464", "serve /metrics here (\"off\" disables)")
	printConfig := fs.Bool("print-config", false, "print the demo's pipeline config and exit")
	seed := fs.Uint64("seed", 0, "seed of the synthetic data (0: random); the noise always comes from crypto/rand")
	var lf logFlags
	lf.register(fs)
	fs.Lookup("log-level").DefValue = "warn"
	lf.level = "warn"
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if *window < time.Second {
		fmt.Fprintln(stderr, "dpstream demo: --window must be at least 1s")
		return exitConfig
	}
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream demo:", err)
		return exitConfig
	}
	dir := *dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "dpstream-demo-"); err != nil {
			fmt.Fprintln(stderr, "dpstream demo:", err)
			return exitError
		}
		defer os.RemoveAll(dir)
	}
	schemaPath := filepath.Join(dir, "trip.avsc")
	if err := os.WriteFile(schemaPath, []byte(schema.TripSchema()), 0o644); err != nil {
		fmt.Fprintln(stderr, "dpstream demo:", err)
		return exitError
	}
	grace := max(*window/5, 500*time.Millisecond)
	yaml := fmt.Sprintf(demoConfig, schemaPath, *window, grace)
	if *printConfig {
		fmt.Fprint(stdout, yaml)
		return exitOK
	}
	cfg, err := config.Parse([]byte(yaml), "demo.yaml")
	if err != nil {
		printConfigError(stderr, err)
		return exitError
	}
	cfg.PDPStore = filepath.Join(dir, "pdp") // beside the broker's data, removed with it
	ps, err := plan.Build(cfg)
	if err != nil {
		printConfigError(stderr, err)
		return exitError
	}

	broker, err := kafkaio.StartEmbedded(*addr, filepath.Join(dir, "kafka"), log)
	if err != nil {
		log.Warn("embedded broker address taken; using a free port", "addr", *addr, "err", err)
		if broker, err = kafkaio.StartEmbedded("127.0.0.1:0", filepath.Join(dir, "kafka"), log); err != nil {
			fmt.Fprintln(stderr, "dpstream demo:", err)
			return exitError
		}
	}
	defer broker.Close()
	conn := broker.Conn()
	fmt.Fprintf(stdout, "dpstream demo: embedded Kafka broker on %s; while the demo runs, from another terminal:\n  dpstream tail releases --brokers %s   (or accountant, ledger, deadletter; kcat -b %s -L)\n",
		broker.Addr(), broker.Addr(), broker.Addr())
	fmt.Fprintf(stdout, "stream trips: %s windows, ≤ %d trips per rider per window, budget ε=%g at δ=%g; %d trips/s with a few malformed and late ones\n\n",
		*window, cfg.Streams[0].Contribution.MaxEventsPerWindow, cfg.Streams[0].Budget.Epsilon, cfg.Streams[0].Budget.Delta, *rate)

	m := metrics.New()
	if *metricsAddr != "off" && *metricsAddr != "" {
		if _, err := m.Serve(ctx, *metricsAddr, nil); err != nil {
			log.Warn("metrics disabled", "err", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := conn.EnsureTopics(ctx, pipeline.Topics(cfg)); err != nil {
		fmt.Fprintln(stderr, "dpstream demo:", err)
		return exitError
	}
	printer := &demoPrinter{w: stdout, want: *windows, perWindow: len(ps[0].Releases), done: cancel}
	var wg sync.WaitGroup
	wg.Add(1)
	var prodErr error
	go func() {
		defer wg.Done()
		prodErr = produceTrips(ctx, conn, cfg.Streams[0].Topic, *rate, *window, *seed)
	}()
	err = pipeline.Run(ctx, pipeline.Options{Config: cfg, Plan: ps, Conn: conn, Stages: pipeline.Stages{Accumulate: true, Release: true},
		Metrics: m, Log: log, OnRelease: printer.print})
	cancel()
	wg.Wait()
	if err != nil {
		fmt.Fprintln(stderr, "dpstream demo:", err)
		return exitError
	}
	if prodErr != nil && !errors.Is(prodErr, context.Canceled) {
		fmt.Fprintln(stderr, "dpstream demo: producer:", prodErr)
		return exitError
	}
	if printer.want > 0 && printer.windows < printer.want {
		fmt.Fprintf(stdout, "\ninterrupted after %d of %d windows\n", printer.windows, printer.want)
		return exitOK
	}
	fmt.Fprintf(stdout, "\n%d windows released.\n", printer.windows)
	return exitOK
}

// demoPrinter prints one readable line per release and stops the demo
// after the wanted number of windows.
type demoPrinter struct {
	mu        sync.Mutex
	w         io.Writer
	want      int
	perWindow int
	windows   int
	inWindow  int
	current   int64
	done      func()
}

func (p *demoPrinter) print(r schema.Release) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.want > 0 && p.windows >= p.want {
		return
	}
	if r.WindowStart != p.current {
		p.current, p.inWindow = r.WindowStart, 0
		fmt.Fprintf(p.w, "window %s–%s\n", time.UnixMilli(r.WindowStart).Format("15:04:05"), time.UnixMilli(r.WindowEnd).Format("15:04:05"))
	}
	fmt.Fprintln(p.w, "  "+formatRelease(r))
	p.inWindow++
	if p.inWindow == p.perWindow {
		p.windows++
		if p.want > 0 && p.windows >= p.want {
			p.done()
		}
	}
}

// formatRelease renders a release on one line: value with its noise-only
// 95% interval, or a sparkline of the histogram, and the budget used.
func formatRelease(r schema.Release) string {
	budget := fmt.Sprintf("ε spent %.2f of %g", r.EpsilonSpent, r.EpsilonBudget)
	if r.Status != "ok" {
		return fmt.Sprintf("%-10s %-9s refused: budget exhausted (%s)", r.Release, r.Kind, budget)
	}
	var body string
	switch {
	case r.Value != nil:
		iv := 0.0
		if r.Interval95 != nil {
			iv = *r.Interval95
		}
		body = fmt.Sprintf("%10.2f ± %-8.2f", *r.Value, iv)
	case len(r.Shape) > 1:
		body = marginalSparklines(r)
	case len(r.Probabilities) > 0:
		total := 0.0
		for _, c := range r.NoisyCounts {
			total += math.Max(c, 0)
		}
		body = fmt.Sprintf("%s  [%g, %g] n≈%.0f", sparkline(r.Probabilities), r.Edges[0], r.Edges[len(r.Edges)-1], total)
	case r.Kind == "density" && len(r.Densities) > 0 && len(r.Edges) == len(r.Densities):
		body = fmt.Sprintf("%s  [%g, %g] %d terms", sparkline(downsample(r.Densities, demoSparkPoints)),
			r.Edges[0], r.Edges[len(r.Edges)-1], len(r.Coefficients))
	}
	return fmt.Sprintf("%-10s %-9s %s  %s", r.Release, r.Kind, body, budget)
}

// marginalSparklines renders a histogram over several fields as one
// sparkline per field: the marginal probabilities (summed over the other
// fields), which fit on a line where the cells would not.
func marginalSparklines(r schema.Release) string {
	cells := 1
	for _, m := range r.Shape {
		if m < 1 || m > int64(len(r.Probabilities)) {
			return "(malformed shape)"
		}
		cells *= int(m)
	}
	if cells != len(r.Probabilities) || len(r.Fields) != len(r.Shape) {
		return "(malformed shape)"
	}
	var parts []string
	stride := cells
	for a, m := range r.Shape {
		stride /= int(m)
		marg := make([]float64, m)
		for c, p := range r.Probabilities {
			marg[(c/stride)%int(m)] += p
		}
		parts = append(parts, r.Fields[a]+" "+sparkline(marg))
	}
	s := strings.Join(parts, "  ")
	if d := len(r.Shape); len(r.Samples) > 0 {
		s += fmt.Sprintf("  %d synthetic rows", len(r.Samples)/d)
	}
	return s
}

// demoSparkPoints is how many of a density's grid values the demo's
// sparkline shows: a density has hundreds of grid points, a line has room
// for a histogram's worth.
const demoSparkPoints = 24

// downsample returns n values of xs at evenly spaced indices, first and
// last included, or xs itself when it has at most n values.
func downsample(xs []float64, n int) []float64 {
	if len(xs) <= n || n < 2 {
		return xs
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = xs[i*(len(xs)-1)/(n-1)]
	}
	return out
}

func sparkline(ps []float64) string {
	bars := []rune("▁▂▃▄▅▆▇█")
	top := 0.0
	for _, p := range ps {
		top = math.Max(top, p)
	}
	var b strings.Builder
	for _, p := range ps {
		i := 0
		if top > 0 {
			i = int(math.Round(p / top * float64(len(bars)-1)))
		}
		b.WriteRune(bars[i])
	}
	return b.String()
}

// produceTrips publishes synthetic taxi trips at rate per second until ctx
// is done: riders drawn with a Zipf-like skew (a few riders take many
// trips, so contribution bounding drops some), log-normal distances, fares
// from distance and duration, and about 1% bad records (garbage bytes, NaN
// fares, missing riders, fares far out of bounds, and trips timed two
// windows in the past, which arrive late).
func produceTrips(ctx context.Context, conn *kafkaio.Connection, topic string, rate int, window time.Duration, seed uint64) error {
	enc, err := schema.NewEncoder("avro", schema.TripSchema(), 0)
	if err != nil {
		return err
	}
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	zipf := rand.NewZipf(rng, 1.3, 4, 4999)
	w := conn.NewWriter(topic)
	w.Async = false
	defer w.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	perTick := max(rate/10, 1)
	trip := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		msgs := make([]kafka.Message, 0, perTick)
		for i := 0; i < perTick; i++ {
			trip++
			now := time.Now()
			rider := fmt.Sprintf("rider-%04d", zipf.Uint64())
			km := math.Min(math.Exp(rng.NormFloat64()*0.7+1.3), 60)
			minutes := km*2.2 + rng.ExpFloat64()*6
			fare := 3 + km*1.8 + minutes*0.35 + rng.NormFloat64()*2
			ev := map[string]any{"rider_id": rider, "trip_id": fmt.Sprintf("t%d", trip), "ts": now.UnixMilli(),
				"fare": fare, "km": km, "minutes": minutes, "zone": fmt.Sprintf("z%d", rng.IntN(12))}
			var value []byte
			switch u := rng.Float64(); {
			case u < 0.002:
				value = []byte("\x00\xffnot avro at all")
			case u < 0.004:
				ev["fare"] = math.NaN()
			case u < 0.006:
				ev["rider_id"] = ""
			case u < 0.008:
				ev["fare"] = 900.0 // clamped to the bounds, still counted
			case u < 0.010:
				ev["ts"] = now.Add(-2 * window).UnixMilli() // late
			}
			if value == nil {
				if value, err = enc.Encode(ev); err != nil {
					return fmt.Errorf("encode trip: %w", err)
				}
			}
			msgs = append(msgs, kafka.Message{Key: []byte(ev["rider_id"].(string)), Value: value})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("produce trips: %w", err)
		}
	}
}
