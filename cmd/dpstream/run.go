package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
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

// brokersFor returns the brokers to use: the flag, the config, or an
// embedded broker started here (closed by the returned func).
func brokersFor(cfg *config.Config, c connFlags, startEmbedded bool, log *slog.Logger) ([]string, func(), error) {
	if c.brokers != "" {
		return splitList(c.brokers), func() {}, nil
	}
	if len(cfg.Brokers) > 0 {
		return cfg.Brokers, func() {}, nil
	}
	addr := cfg.Embedded.Addr
	if c.brokerAddr != "" {
		addr = c.brokerAddr
	}
	if !startEmbedded {
		return []string{addr}, func() {}, nil
	}
	dir := cfg.Embedded.DataDir
	if c.dataDir != "" {
		dir = c.dataDir
	}
	e, err := kafkaio.StartEmbedded(addr, dir, log)
	if err != nil {
		return nil, nil, err
	}
	return []string{e.Addr()}, e.Close, nil
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

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "-c pipeline.yaml [flags]", `
Run the pipeline described by the config: the accumulate stage (consumes the
streams' input topics, bounds contributions, emits partial statistics per
window) and the release stage (merges partials, charges the accountant,
publishes private releases ledger-first). With no brokers configured it
starts an embedded Kafka broker with a data directory, so topics survive a
restart. Run several accumulate-only processes against a real cluster to
scale out; run exactly one release process.`, stdout, stderr)
	var c connFlags
	var lf logFlags
	c.register(fs, true)
	lf.register(fs)
	stages := fs.String("stages", "accumulate,release", "comma-separated stages to run in this process: accumulate, release, or accumulate,release for both")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics here, overriding the config (\"off\" disables)")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream run:", err)
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
	brokers, closeBroker, err := brokersFor(cfg, c, true, log)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream run:", err)
		return exitError
	}
	defer closeBroker()
	m := metrics.New()
	addr := cfg.Metrics.Addr
	if *metricsAddr != "" {
		addr = *metricsAddr
	}
	if addr != "" && addr != config.MetricsOff {
		if _, err := m.Serve(ctx, addr, log); err != nil {
			fmt.Fprintln(stderr, "dpstream run:", err)
			return exitError
		}
	}
	log.Info("pipeline starting", "brokers", strings.Join(brokers, ","), "streams", len(ps), "accumulate", sel.Accumulate, "release", sel.Release)
	err = pipeline.Run(ctx, pipeline.Options{Config: cfg, Plan: ps, Brokers: brokers, Stages: sel, Metrics: m, Log: log})
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error("pipeline failed", "err", err)
		return exitError
	}
	log.Info("pipeline stopped")
	return exitOK
}
