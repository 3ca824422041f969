package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// connFlags choose the Kafka cluster: configured brokers, or the embedded
// broker.
type connFlags struct {
	config     string
	brokers    string
	brokerAddr string
	dataDir    string
}

func (c *connFlags) register(fs *flag.FlagSet, withEmbedded bool) {
	fs.StringVar(&c.config, "c", "pipeline.yaml", "pipeline config file (see testdata/config/pipeline.yaml for a commented example)")
	fs.StringVar(&c.config, "config", "pipeline.yaml", "same as -c")
	fs.StringVar(&c.brokers, "brokers", "", "comma-separated Kafka brokers, overriding the config's brokers (e.g. localhost:9092)")
	if withEmbedded {
		fs.StringVar(&c.brokerAddr, "broker-addr", "", "listen address of the embedded broker when no brokers are configured (default from the config, 127.0.0.1:9092)")
		fs.StringVar(&c.dataDir, "data-dir", "", "data directory of the embedded broker (default from the config, .dpstream/kafka)")
	} else {
		fs.StringVar(&c.brokerAddr, "broker-addr", "", "address of a running dpstream's embedded broker when no brokers are configured (default from the config, 127.0.0.1:9092)")
	}
}

// load reads and checks the config and calibrates every release; errors are
// printed with their file and line.
func load(path string, stderr io.Writer) (*config.Config, []plan.Stream, bool) {
	cfg, err := config.Load(path)
	if err != nil {
		printConfigError(stderr, err)
		return nil, nil, false
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		printConfigError(stderr, err)
		return nil, nil, false
	}
	return cfg, ps, true
}

func printConfigError(w io.Writer, err error) {
	errs := config.Errors(err)
	if len(errs) == 0 {
		fmt.Fprintf(w, "dpstream: config: %v\n", err)
		return
	}
	fmt.Fprintf(w, "dpstream: the config has %d error(s); nothing was started:\n", len(errs))
	for _, e := range errs {
		fmt.Fprintf(w, "  %v\n", e)
	}
}

// connFor returns the Kafka connection to use, built once per command: the
// --brokers flag, else the config's brokers, with the config's security
// (TLS, SASL; the password is read here, so a missing one stops the
// command before it connects); or, with no brokers configured, the
// embedded broker, started here when startEmbedded (and closed by the
// returned func), else the address of a running dpstream's one. The
// embedded broker serves plaintext only: config.Parse rejects a security
// section without brokers. The config's security warnings (e.g.
// insecure_skip_verify) are logged to log, or printed to stderr when log
// is nil. A bad security setting is returned as a *configError.
func connFor(cfg *config.Config, c connFlags, startEmbedded bool, log *slog.Logger, stderr io.Writer) (*kafkaio.Connection, func(), error) {
	for _, w := range cfg.Warnings {
		if log != nil {
			log.Warn("config: "+w.Error(), "file", w.Path, "line", w.Line)
		} else {
			fmt.Fprintf(stderr, "dpstream: warning: %v\n", w)
		}
	}
	brokers := cfg.Brokers
	if c.brokers != "" {
		// The flag names other addresses of the same cluster (e.g. from
		// outside its network); the config's security still applies.
		brokers = splitList(c.brokers)
	}
	if len(brokers) > 0 {
		conn, err := kafkaio.Connect(brokers, cfg.Security)
		if err != nil {
			return nil, nil, &configError{err}
		}
		return conn, conn.Close, nil
	}
	addr := cfg.Embedded.Addr
	if c.brokerAddr != "" {
		addr = c.brokerAddr
	}
	if !startEmbedded {
		return kafkaio.Plaintext([]string{addr}), func() {}, nil
	}
	dir := cfg.Embedded.DataDir
	if c.dataDir != "" {
		dir = c.dataDir
	}
	var opts []kafkaio.EmbeddedOption
	if cfg.Embedded.NoSync {
		opts = append(opts, kafkaio.NoSync())
	}
	e, err := kafkaio.StartEmbedded(addr, dir, log, opts...)
	if err != nil {
		return nil, nil, err
	}
	closeBroker := func() {
		e.Close()
		if log != nil {
			log.Info("embedded broker stopped; its data is saved", "data_dir", dir)
		}
	}
	return e.Conn(), closeBroker, nil
}

// configError is a setting that cannot be used (an unset password
// variable, an unreadable certificate): exit code exitConfig, nothing was
// started.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// clientConn connects a client command (produce, tail, budget) to the
// brokers the config and flags name, and checks that they answer. On
// failure it has printed why, prefixed with "dpstream <name>:" and followed
// by hint (if any) when the brokers do not answer, and returns the exit
// code; closeConn is then nil.
func clientConn(ctx context.Context, name string, cfg *config.Config, c connFlags, hint string, stderr io.Writer) (conn *kafkaio.Connection, closeConn func(), code int) {
	conn, closeConn, err := connFor(cfg, c, false, nil, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "dpstream %s: %v\n", name, err)
		return nil, nil, connExitCode(err)
	}
	if err := conn.Check(ctx); err != nil {
		closeConn()
		fmt.Fprintf(stderr, "dpstream %s: %v%s\n", name, err, hint)
		return nil, nil, exitError
	}
	return conn, closeConn, exitOK
}

// connExitCode is the exit code for an error of connFor.
func connExitCode(err error) int {
	var ce *configError
	if errors.As(err, &ce) {
		return exitConfig
	}
	return exitError
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// defaultShutdownTimeout is --shutdown-timeout's default. Kubernetes
// sends SIGKILL terminationGracePeriodSeconds (default 30s) after SIGTERM,
// so a pod spec should allow a few seconds more than the timeout: the
// abandoned-work log is written after it, and an embedded broker saves its
// data after that.
const defaultShutdownTimeout = 30 * time.Second

// runEnv is what `dpstream run` takes from its process: the stop signals
// and the exit a second signal forces. cmdRun uses the real ones; tests
// substitute fakes, and may watch releases.
type runEnv struct {
	// notify subscribes to the stop signals; stop unsubscribes.
	notify func() (signals <-chan os.Signal, stop func())
	// exit ends the process at once, skipping deferred work (os.Exit).
	exit func(code int)
	// onRelease, if set, is called for each published release, inside the
	// release stage's window (tests hold a window open with it).
	onRelease func(schema.Release)
}

// processEnv is the environment of the real process: SIGINT and SIGTERM,
// and os.Exit.
func processEnv() runEnv {
	return runEnv{
		notify: func() (<-chan os.Signal, func()) {
			c := make(chan os.Signal, 2)
			signal.Notify(c, os.Interrupt, syscall.SIGTERM)
			return c, func() { signal.Stop(c) }
		},
		exit: os.Exit,
	}
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, stdout, stderr, processEnv())
}

// runWith is `dpstream run`. ctx is done on the first stop signal (main's
// signal.NotifyContext); env.notify sees that signal too, and the ones
// after it.
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, env runEnv) int {
	// Subscribe before anything else, so that every stop signal after this
	// point is counted here as well as in ctx; a signal that came earlier
	// already cancelled ctx and counts as the first.
	sigs, stopSigs := env.notify()
	defer stopSigs()
	preSignalled := ctx.Err() != nil
	fs := newFlags("run", "-c pipeline.yaml [flags]", `
Run the pipeline described by the config: the accumulate stage (consumes the
streams' input topics, bounds contributions, emits partial statistics per
window) and the release stage (merges partials, charges the accountant,
publishes private releases ledger-first). With no brokers configured it
starts an embedded Kafka broker with a data directory, so topics survive a
restart. Run several accumulate-only processes against a real cluster to
scale out; run exactly one release process.

On SIGTERM or SIGINT it drains: it stops reading input, lets a window being
released finish, commits offsets, leaves the consumer groups and flushes its
writers, then exits 0. If that takes longer than --shutdown-timeout it logs
the work it abandons and exits 1; the next start recovers it as after a
crash. A second signal exits 1 at once. /readyz answers 200 only while the
stages run.`, stdout, stderr)
	var c connFlags
	var lf logFlags
	c.register(fs, true)
	lf.register(fs)
	stages := fs.String("stages", "accumulate,release", "comma-separated stages to run in this process: accumulate, release, or accumulate,release for both")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics, /healthz and /readyz here, overriding the config's metrics.addr (default "+config.DefaultMetricsAddr+", loopback only; \"off\" disables). Most metrics are exact counts of the input: bind beyond loopback only where a network policy admits your Prometheus alone")
	shutdownTimeout := fs.Duration("shutdown-timeout", defaultShutdownTimeout, "on SIGTERM or SIGINT, how long to drain (finish in-flight work, commit, leave the consumer groups) before giving up and exiting 1")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream run:", err)
		return exitConfig
	}
	if *shutdownTimeout <= 0 {
		fmt.Fprintf(stderr, "dpstream run: --shutdown-timeout %s: must be positive\n", *shutdownTimeout)
		return exitConfig
	}
	var sel pipeline.Stages
	for _, s := range splitList(*stages) {
		switch s {
		case "accumulate":
			sel.Accumulate = true
		case "release":
			sel.Release = true
		default:
			fmt.Fprintf(stderr, "dpstream run: --stages: unknown stage %q (want accumulate, release)\n", s)
			return exitConfig
		}
	}
	if !sel.Accumulate && !sel.Release {
		fmt.Fprintln(stderr, "dpstream run: --stages: name at least one stage (accumulate, release)")
		return exitConfig
	}
	cfg, ps, ok := load(c.config, stderr)
	if !ok {
		return exitConfig
	}
	conn, closeBroker, err := connFor(cfg, c, true, log, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream run:", err)
		return connExitCode(err)
	}
	// Deferred first, so it runs last: the embedded broker saves its data
	// on close, also after an abandoned drain.
	defer closeBroker()
	m := metrics.New()
	if cfg.Metrics.PDP {
		m.EnablePDP()
	}
	addr := cfg.Metrics.Addr
	if *metricsAddr != "" {
		addr = *metricsAddr
	}
	if addr != "" && addr != config.MetricsOff {
		// The server outlives ctx: during the drain, probes must get 503
		// from /readyz and 200 from /healthz, and Prometheus the last
		// scrape, rather than a refused connection.
		srvCtx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
		defer stopSrv()
		if _, err := m.Serve(srvCtx, addr, log); err != nil {
			fmt.Fprintln(stderr, "dpstream run:", err)
			return exitError
		}
	}
	log.Info("pipeline starting", "brokers", strings.Join(conn.Brokers, ","), "security", conn.Describe(), "streams", len(ps), "accumulate", sel.Accumulate, "release", sel.Release)
	p := pipeline.New(pipeline.Options{Config: cfg, Plan: ps, Conn: conn, Stages: sel, Metrics: m, Log: log, OnRelease: env.onRelease})
	sd := shutdown{timeout: *shutdownTimeout, signals: sigs, preSignalled: preSignalled, exit: env.exit, health: m.Health, log: log}
	code := sd.supervise(ctx, p.Run, p.InFlight)
	if code == exitOK {
		log.Info("pipeline stopped")
	}
	return code
}

// shutdown is how `run` stops: the first stop signal starts a drain
// bounded by timeout, a second one exits at once.
type shutdown struct {
	timeout time.Duration
	// signals delivers every stop signal, the first included (it also
	// cancels the parent context).
	signals <-chan os.Signal
	// preSignalled is true when a stop signal arrived before signals was
	// subscribed: it counts as the first.
	preSignalled bool
	exit         func(code int)
	health       *metrics.Health
	log          *slog.Logger
}

// supervise runs run until it fails by itself, or ctx is done, or a stop
// signal arrives; then it cancels run's context and waits for run to
// drain, at most timeout. It returns the exit code: 0 when run stopped
// cleanly within the timeout, 1 when run failed, the timeout passed (the
// work inFlight reports is logged as abandoned) or a second stop signal
// came, in which case it calls exit(1) first.
func (sd shutdown) supervise(ctx context.Context, run func(context.Context) error, inFlight func() []string) int {
	// However it ends, the process is on its way out: not ready.
	defer sd.health.SetStopping()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	signals := 0
	if sd.preSignalled {
		signals = 1
	}
	var sig os.Signal
	select {
	case err := <-done:
		// Stopped by itself: a stage failed (the pipeline drained the
		// others already) or it could not start.
		return sd.exitCode(err)
	case <-ctx.Done():
		// The signal behind this also arrives on sd.signals and is
		// counted there.
		sd.log.Info("shutdown requested: draining", "timeout", sd.timeout)
	case sig = <-sd.signals:
		signals++
		sd.log.Info("shutdown requested: draining", "signal", sig.String(), "timeout", sd.timeout)
	}
	began := time.Now()
	sd.health.SetStopping()
	cancel()
	// forced ends the drain at once, on a second stop signal.
	forced := func(sig os.Signal) int {
		sd.log.Error("second stop signal: exiting now without finishing the drain; the next start recovers the abandoned work as after a crash",
			"signal", sig.String(), "draining_for", time.Since(began).Round(time.Millisecond))
		sd.logAbandoned(inFlight())
		sd.exit(exitError)
		return exitError
	}
	if signals >= 2 {
		// One before the subscription, and sig.
		return forced(sig)
	}
	timer := time.NewTimer(sd.timeout)
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			code := sd.exitCode(err)
			if code == exitOK {
				sd.log.Info("drained: in-flight work finished, offsets committed, consumer groups left, writers flushed", "took", time.Since(began).Round(time.Millisecond))
			}
			return code
		case <-timer.C:
			sd.log.Error("shutdown timeout passed: exiting without finishing the drain; the next start recovers the abandoned work as after a crash",
				"timeout", sd.timeout)
			sd.logAbandoned(inFlight())
			return exitError
		case sig = <-sd.signals:
			signals++
			if signals >= 2 {
				return forced(sig)
			}
			// The first signal, arriving after its cancellation of ctx.
		}
	}
}

// logAbandoned logs each piece of unfinished work.
func (sd shutdown) logAbandoned(work []string) {
	if len(work) == 0 {
		// The stages stopped; what is left is in the process's own
		// teardown (the metrics server, the embedded broker's save).
		sd.log.Error("abandoned: nothing reported in flight by the stages")
	}
	for _, w := range work {
		sd.log.Error("abandoned", "work", w)
	}
}

// exitCode maps the pipeline's result to run's exit code.
func (sd shutdown) exitCode(err error) int {
	if err != nil && !errors.Is(err, context.Canceled) {
		sd.log.Error("pipeline failed", "err", err)
		return exitError
	}
	return exitOK
}
