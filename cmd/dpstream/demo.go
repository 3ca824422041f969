package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// demoConfig is the demo's pipeline: one stream of taxi trips (Avro),
// six releases. The verbs are the Avro schema (indented JSON), the window
// size and the grace. The schema is inline so that the printed config
// (--print-config) carries everything it needs and runs from any
// directory: there is no schema file to lose.
const demoConfig = `# The pipeline 'dpstream demo' runs (printed by 'dpstream demo --print-config').
# It runs as it is: dpstream run -c this.yaml (an embedded broker with its
# data in .dpstream/kafka, metrics on 127.0.0.1:9464); produce trips with
# dpstream produce -c this.yaml --file trips.jsonl.
streams:
  - name: trips
    topic: demo.trips
    partitions: 4
    format: avro
    # The Avro schema itself (schema/trip.avsc), inline: JSON is YAML.
    schema:
%s
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
      - {name: zone_trips, kind: count, group_by: zone, max_keys: 1, max_per_key: 2, noise: laplace, epsilon: 1, delta: 1e-9}
`

// demoYAML renders the demo's pipeline config for a window size.
func demoYAML(window time.Duration) string {
	grace := max(window/5, 500*time.Millisecond)
	lines := strings.Split(strings.TrimSpace(schema.TripSchema()), "\n")
	for i, l := range lines {
		lines[i] = "      " + l
	}
	return fmt.Sprintf(demoConfig, strings.Join(lines, "\n"), window, grace)
}

// checkDemoFlags returns why the demo's numeric flags make no sense, or "".
func checkDemoFlags(windows int, window time.Duration, rate int) string {
	switch {
	case windows < 0:
		return fmt.Sprintf("--windows %d: want 0 (run until interrupted) or a number of windows", windows)
	case window < time.Second:
		return fmt.Sprintf("--window %s: the window must be at least 1s", window)
	case window%time.Millisecond != 0:
		return fmt.Sprintf("--window %s: want a whole number of milliseconds", window)
	case rate < 1:
		return fmt.Sprintf("--rate %d: want at least 1 trip per second", rate)
	}
	return ""
}

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", "[--windows N] [flags]", `
Run everything in one process: an embedded Kafka broker, a synthetic
producer of taxi trips (riders with skewed trip counts, pickup zones from
a few busy ones to many rare ones, fares, distances, and a few malformed,
out-of-range and late events), the accumulate and release stages, and a
readable line per release. With --windows N it stops
after N windows and exits 0; otherwise it runs until Ctrl-C. Other Kafka
clients can connect to the broker address it logs (e.g. 'kcat -b ADDR -L').

Without --data-dir the broker's data lives in a fresh temporary directory
that the demo removes however it stops: at the end, on SIGINT, SIGTERM or
SIGHUP, and when its output is closed (e.g. 'dpstream demo | head', which
ends it with exit 1 instead of a SIGPIPE death). Only SIGKILL leaves it
behind.`, stdout, stderr)
	windows := fs.Int("windows", 0, "stop after this many windows have been released (0: run until interrupted)")
	window := fs.Duration("window", 5*time.Second, "window size, at least 1s")
	rate := fs.Int("rate", 400, "trips produced per second, at least 1")
	addr := fs.String("broker-addr", config.DefaultEmbeddedAddr, "listen address of the embedded broker (a free port is used if it is taken)")
	dataDir := fs.String("data-dir", "", "embedded broker data directory (default: a fresh temporary directory, removed at exit)")
	metricsAddr := fs.String("metrics-addr", config.DefaultMetricsAddr, "serve /metrics here (\"off\" disables); loopback by default, as for run")
	printConfig := fs.Bool("print-config", false, "print the demo's pipeline config (it runs as it is with 'dpstream run -c') and exit")
	seed := fs.Uint64("seed", 0, "seed of the synthetic data (0: random); the noise always comes from crypto/rand")
	var lf logFlags
	lf.register(fs)
	fs.Lookup("log-level").DefValue = "warn"
	lf.level = "warn"
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if msg := checkDemoFlags(*windows, *window, *rate); msg != "" {
		fmt.Fprintln(stderr, "dpstream demo:", msg)
		return exitConfig
	}
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream demo:", err)
		return exitConfig
	}
	yaml := demoYAML(*window)
	if *printConfig {
		fmt.Fprint(stdout, yaml)
		return exitOK
	}
	cfg, err := config.Parse([]byte(yaml), "demo.yaml")
	if err != nil {
		printConfigError(stderr, err)
		return exitError
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		printConfigError(stderr, err)
		return exitError
	}

	// Every way the demo can be stopped, but SIGKILL, ends in a return from
	// here, so the deferred removal of its temporary directory runs: main
	// turns SIGINT and SIGTERM into ctx, SIGHUP (the terminal closed) is
	// added here, and a reader that goes away (SIGPIPE) makes the next
	// write fail with EPIPE, which out turns into a stop.
	ctx, stopHUP := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stopHUP()
	stopPipe := notifySIGPIPE()
	defer stopPipe()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &stopWriter{w: stdout, stop: cancel}

	dir := *dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "dpstream-demo-"); err != nil {
			fmt.Fprintln(stderr, "dpstream demo:", err)
			return exitError
		}
		defer os.RemoveAll(dir)
	}
	cfg.PDPStore = filepath.Join(dir, "pdp") // beside the broker's data, removed with it
	brokerDir := filepath.Join(dir, "kafka")
	broker, err := kafkaio.StartEmbedded(*addr, brokerDir, log, kafkaio.NoSync())
	if err != nil && !errors.Is(err, kafkaio.ErrDataDirLocked) {
		log.Warn("embedded broker address taken; using a free port", "addr", *addr, "err", err)
		broker, err = kafkaio.StartEmbedded("127.0.0.1:0", brokerDir, log, kafkaio.NoSync())
	}
	if err != nil {
		fmt.Fprintln(stderr, "dpstream demo:", err)
		return exitError
	}
	defer broker.Close()
	conn := broker.Conn()
	fmt.Fprintf(out, "dpstream demo: embedded Kafka broker on %s; while the demo runs, from another terminal:\n  dpstream tail releases --brokers %s   (or accountant, ledger, deadletter; kcat -b %s -L)\n",
		broker.Addr(), broker.Addr(), broker.Addr())
	fmt.Fprintf(out, "stream trips: %s windows, ≤ %d trips per rider per window, budget ε=%g at δ=%g; %d trips/s with a few malformed and late ones\n\n",
		*window, cfg.Streams[0].Contribution.MaxEventsPerWindow, cfg.Streams[0].Budget.Epsilon, cfg.Streams[0].Budget.Delta, *rate)
	if err := out.Err(); err != nil {
		return demoOutputClosed(stderr, err)
	}

	m := metrics.New()
	// The demo's data is synthetic: its per-instance DP gauges show what
	// they look like (the restricted row of the Grafana dashboard) and
	// reveal nobody.
	m.EnablePDP()
	if *metricsAddr != config.MetricsOff && *metricsAddr != "" {
		if _, err := m.Serve(ctx, *metricsAddr, nil); err != nil {
			log.Warn("metrics disabled", "err", err)
		}
	}
	if err := conn.EnsureTopics(ctx, pipeline.Topics(cfg)); err != nil {
		fmt.Fprintln(stderr, "dpstream demo:", err)
		return exitError
	}
	printer := &demoPrinter{w: out, want: *windows, perWindow: len(ps[0].Releases), done: cancel}
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
	if werr := out.Err(); werr != nil {
		return demoOutputClosed(stderr, werr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "dpstream demo:", err)
		return exitError
	}
	if prodErr != nil && !errors.Is(prodErr, context.Canceled) {
		fmt.Fprintln(stderr, "dpstream demo: producer:", prodErr)
		return exitError
	}
	if printer.want > 0 && printer.windows < printer.want {
		fmt.Fprintf(out, "\ninterrupted after %d of %d windows\n", printer.windows, printer.want)
		return exitOK
	}
	fmt.Fprintf(out, "\n%d windows released.\n", printer.windows)
	return exitOK
}

// demoOutputClosed reports a demo stopped because its output could not be
// written (the reader of a pipe went away) and returns the exit code.
func demoOutputClosed(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "dpstream demo: stopped: cannot write the output (%v)\n", err)
	return exitError
}

// stopWriter passes writes to w until one fails; it then keeps the error,
// calls stop once and discards every later write. The demo writes all its
// output through one, so a closed pipe stops it instead of leaving it to
// print into the void (or, without SIGPIPE handling, killing it before it
// removes its temporary directory).
type stopWriter struct {
	mu   sync.Mutex
	w    io.Writer
	err  error
	stop func()
}

func (s *stopWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.err = err
		s.stop()
	}
	return n, err
}

// Err is the first write error, or nil.
func (s *stopWriter) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
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

// formatRelease renders a release on one line: its name and kind, the
// line its kind draws of it (kind.Renderer.Line, e.g. a value with its
// noise-only 95% interval or a sparkline of probabilities; a release of an
// unknown kind is drawn by the data it carries, see kind.RendererFor),
// and the budget used.
func formatRelease(r schema.Release) string {
	budget := fmt.Sprintf("ε spent %.2f of %g", r.EpsilonSpent, r.EpsilonBudget)
	if r.Status != "ok" {
		return fmt.Sprintf("%-10s %-9s refused: budget exhausted (%s)", r.Release, r.Kind, budget)
	}
	var body string
	if rd, ok := kind.RendererFor(r); ok {
		body = rd.Line(r)
	}
	return fmt.Sprintf("%-10s %-9s %s  %s", r.Release, r.Kind, body, budget)
}

// The demo's riders and pickup zones. Both are Zipf-like, P(k) ∝ (v+k)^-s
// for k = 0 … n-1, as in a real city.
const (
	// 5,000 riders ("rider-0000" …), s = 1.3, v = 4: a few riders take
	// many trips, so contribution bounding (3 trips per rider per window)
	// drops some. At the default rate (400 trips/s, 5 s windows: 2,000
	// trips) a window has 534.6 distinct riders and keeps 822.9 of its
	// trips (expected values).
	demoRiders, riderSkew, riderOffset = 5000, 1.3, 4
	// 60 pickup zones ("z0" busiest … "z59" rarest), s = 1.6, v = 3: z0
	// takes 21.1% of the trips, z4 5.4%, z59 0.17%. Expected distinct
	// riders per zone in a window at the default rate, counting each
	// rider's 3 kept trips (TestDemoZones checks these against the
	// producer's draws):
	//
	//	z0 157.1, z1 102.9, z2 73.4, z3 55.4, z4 43.6, z5 35.4,
	//	z9 18.7, z14 10.8, z19 7.1, z29 3.9, z39 2.5, z49 1.8, z59 1.4
	//
	// z0 … z8 expect more than 20 riders, z25 … z59 (35 zones) fewer than
	// 5. With one zone per rider per window (max_keys 1, its first trip's)
	// they are 535 × P(zone): z0 113, z4 29, z9 12, z19 4.7, z59 0.9. So
	// private partition selection, whose threshold is a few tens of units
	// (about 19 for Laplace thresholding at ε = 1, δ = 1e-8 and max_keys
	// 1), releases the handful of busy zones and not the rare ones. At
	// --rate 200 with 1 s windows (200 trips, as in TestDemo) z0 expects
	// 29 riders and 37 zones fewer than one.
	demoZones, zoneSkew, zoneOffset = 60, 1.6, 3
)

// tripDraws is the producer's randomness: one seeded generator, and the
// riders and pickup zones drawn from it.
type tripDraws struct {
	rng           *rand.Rand
	riders, zones *rand.Zipf
}

// newTripDraws seeds the producer's randomness (the demo's --seed).
func newTripDraws(seed uint64) tripDraws {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	return tripDraws{
		rng:    rng,
		riders: rand.NewZipf(rng, riderSkew, riderOffset, demoRiders-1),
		zones:  rand.NewZipf(rng, zoneSkew, zoneOffset, demoZones-1),
	}
}

// rider draws the rider of the next trip.
func (d tripDraws) rider() string { return fmt.Sprintf("rider-%04d", d.riders.Uint64()) }

// zone draws the pickup zone of the next trip.
func (d tripDraws) zone() string { return fmt.Sprintf("z%d", d.zones.Uint64()) }

// produceTrips publishes synthetic taxi trips at rate per second until ctx
// is done: riders and pickup zones drawn with a Zipf-like skew (see
// tripDraws), log-normal distances, fares from distance and duration, and
// about 1% bad records (garbage bytes, NaN fares, missing riders, fares far
// out of bounds, and trips timed two windows in the past, which arrive
// late).
func produceTrips(ctx context.Context, conn *kafkaio.Connection, topic string, rate int, window time.Duration, seed uint64) error {
	enc, err := schema.NewEncoder("avro", schema.TripSchema(), 0)
	if err != nil {
		return err
	}
	if seed == 0 {
		seed = rand.Uint64()
	}
	draws := newTripDraws(seed)
	rng := draws.rng
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
			rider := draws.rider()
			km := math.Min(math.Exp(rng.NormFloat64()*0.7+1.3), 60)
			minutes := km*2.2 + rng.ExpFloat64()*6
			fare := 3 + km*1.8 + minutes*0.35 + rng.NormFloat64()*2
			ev := map[string]any{"rider_id": rider, "trip_id": fmt.Sprintf("t%d", trip), "ts": now.UnixMilli(),
				"fare": fare, "km": km, "minutes": minutes, "zone": draws.zone()}
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
