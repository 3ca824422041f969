// Package metrics defines dpstream's Prometheus metrics (prefix dpstream_,
// counters end in _total, durations in _seconds, low-cardinality labels:
// stream, release, reason, status, topic, partition) and serves them,
// together with the liveness (/healthz) and readiness (/readyz) probes.
//
// Metrics are not differentially private. Most of them are exact counts of
// the input (Classes says which), so the endpoint is for operators only:
// it listens on loopback unless configured otherwise, and the per-instance
// DP gauges are registered only on request (EnablePDP).
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Class is who may see a metric: its values are computed without noise,
// so each is as confidential as what it is computed from.
type Class string

// The classes of Classes, most confidential first.
const (
	// Exact: exact counts of the input (events, rejections, clamped
	// values, consumer lag in records, windows holding events). Read
	// twice, around a window's end, they give that window's exact
	// statistics and undo the noise. As confidential as the input topics.
	Exact Class = "exact"
	// Restricted: per-instance DP aggregates, data-dependent like the
	// restricted pdp topic. Not served unless EnablePDP is called (config
	// metrics.pdp: true).
	Restricted Class = "restricted"
	// Operational: timing and resource use. No counts of the data, but
	// they grow with its volume (a side channel of low resolution): for
	// operators, not for the public.
	Operational Class = "operational"
	// Public: what the public releases topic already says (releases
	// published, budget spent).
	Public Class = "public"
)

// Classes is the Class of every dpstream_ metric. The Go runtime and
// process metrics (go_*, process_*) are Operational. A metric added to
// New must be classified here (a test checks that every one is) and in
// the README's metrics table.
var Classes = map[string]Class{
	"dpstream_events_consumed_total":          Exact,
	"dpstream_events_rejected_total":          Exact,
	"dpstream_events_late_total":              Exact,
	"dpstream_values_clamped_total":           Exact,
	"dpstream_contributions_dropped_total":    Exact,
	"dpstream_windows_open":                   Exact,
	"dpstream_windows_closed_total":           Exact,
	"dpstream_consumer_lag":                   Exact,
	"dpstream_unit_windows_assumed_total":     Exact,
	"dpstream_pdp_epsilon":                    Restricted,
	"dpstream_pdp_cumulative_epsilon":         Restricted,
	"dpstream_release_latency_seconds":        Operational,
	"dpstream_releases_total":                 Public,
	"dpstream_budget_epsilon_spent":           Public,
	"dpstream_budget_epsilon_remaining":       Public,
	"dpstream_partials_before_start_total":    Exact,
	"dpstream_release_fenced_total":           Operational,
	"dpstream_ledger_checkpoints_total":       Operational,
	"dpstream_ledger_duplicate_charges_total": Operational,
}

// Metrics holds every dpstream metric, registered on its own registry so
// tests can create as many as they like.
type Metrics struct {
	Registry *prometheus.Registry

	// Accumulate stage.
	Consumed      *prometheus.CounterVec // {stream}: records read from the input topic
	Rejected      *prometheus.CounterVec // {stream, reason}: invalid input sent to the dead-letter topic (late events excluded)
	Late          *prometheus.CounterVec // {stream}: events for windows already closed, sent to the dead-letter topic
	Clamped       *prometheus.CounterVec // {stream, release}: values clamped to the release's bounds
	Dropped       *prometheus.CounterVec // {stream}: events dropped by the per-unit contribution bound
	WindowsOpen   *prometheus.GaugeVec   // {stream}: windows open on this instance's partitions
	WindowsClosed *prometheus.CounterVec // {stream}: windows closed (partials emitted), empty ones included
	ConsumerLag   *prometheus.GaugeVec   // {topic, partition}: records behind the partition's end
	// WindowsAssumed counts, per resumed partition, the windows of the
	// current horizon that every unit is taken to have used already
	// (contribution.max_windows' fail-safe after a restart or rebalance:
	// their admissions are not replayed).
	WindowsAssumed *prometheus.CounterVec // {stream}

	// Release stage and accountant.
	Releases       *prometheus.CounterVec   // {stream, release, status}
	ReleaseLatency *prometheus.HistogramVec // {stream}: first partial of a window seen -> releases published
	BudgetSpent    *prometheus.GaugeVec     // {stream}: epsilon spent at the stream's delta
	BudgetLeft     *prometheus.GaugeVec     // {stream}: epsilon remaining
	// Fenced counts the times this instance found another release
	// instance's epoch marker in the ledger after its own and stopped
	// publishing (DESIGN invariant 8). LedgerDuplicates counts valid ledger
	// charges for an already charged release id with a different payload,
	// each counted against the budget: the fencing protocol never writes
	// one, so any is a bug or an older version's ledger — alert on it.
	Fenced prometheus.Counter
	// Checkpoints counts the checkpoints of each ledger partition this
	// instance wrote and trimmed the ledger to.
	Checkpoints      *prometheus.CounterVec // {partition}
	LedgerDuplicates *prometheus.CounterVec // {stream}
	// PartialsBeforeStart counts partials of windows before their stream's
	// start that the release stage dropped (never released or charged). An
	// accumulator keeping the release schedule emits none: alert on it.
	PartialsBeforeStart *prometheus.CounterVec // {stream}
	// PDPEpsilon is a quantile (p50, p90, p99, max) over the window's
	// units of a release's per-instance ε, and PDPCumulative the same of
	// the units' cumulative per-instance ε. They are aggregates over many
	// units, but still depend on the data (the max is one unit's loss), so
	// they are Restricted: always set, served only after EnablePDP.
	PDPEpsilon    *prometheus.GaugeVec // {stream, release, quantile}
	PDPCumulative *prometheus.GaugeVec // {stream, quantile}
	pdpOnce       sync.Once

	// Health is the process state /readyz reports; the pipeline sets it.
	// It lives here because Metrics is what every part of a process
	// already shares with the HTTP server.
	Health *Health
}

// New creates the metrics on a fresh registry (with Go and process collectors).
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) { r.MustRegister(c) }
	m := &Metrics{Registry: r, Health: &Health{}}
	m.Consumed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_events_consumed_total", Help: "CONFIDENTIAL (exact, from the input): Records read from a stream's input topic."}, []string{"stream"})
	m.Rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_events_rejected_total", Help: "CONFIDENTIAL (exact, from the input): Invalid input records sent to the dead-letter topic, by reason (late events are in dpstream_events_late_total)."}, []string{"stream", "reason"})
	m.Late = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_events_late_total", Help: "CONFIDENTIAL (exact, from the input): Events for windows already closed, sent to the dead-letter topic with reason late."}, []string{"stream"})
	m.Clamped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_values_clamped_total", Help: "CONFIDENTIAL (exact, from the input): Values clamped to a release's declared bounds."}, []string{"stream", "release"})
	m.Dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_contributions_dropped_total", Help: "CONFIDENTIAL (exact, from the input): Events dropped because their privacy unit already had max_events_per_window events in the window, or max_windows windows in the horizon."}, []string{"stream"})
	m.WindowsOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpstream_windows_open", Help: "CONFIDENTIAL (exact, from the input): Windows open on this instance's input partitions."}, []string{"stream"})
	m.WindowsClosed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_windows_closed_total", Help: "CONFIDENTIAL (exact, from the input): Windows closed on an input partition (one partial emitted each, empty windows included)."}, []string{"stream"})
	m.ConsumerLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpstream_consumer_lag", Help: "CONFIDENTIAL (exact, from the input): Records between the consumer's position and the end of the partition."}, []string{"topic", "partition"})
	m.Releases = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_releases_total", Help: "Releases published, by status (ok, budget_exhausted)."}, []string{"stream", "release", "status"})
	m.ReleaseLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dpstream_release_latency_seconds", Help: "Seconds from the first partial of a window reaching the release stage to the window's releases being published.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}, []string{"stream"})
	m.BudgetSpent = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpstream_budget_epsilon_spent", Help: "Epsilon spent by a stream at its budget delta (current period)."}, []string{"stream"})
	m.BudgetLeft = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpstream_budget_epsilon_remaining", Help: "Epsilon remaining in a stream's budget (current period)."}, []string{"stream"})
	m.Fenced = prometheus.NewCounter(prometheus.CounterOpts{Name: "dpstream_release_fenced_total", Help: "Times this release instance found a newer owner's epoch marker in the ledger and stopped publishing."})
	m.Checkpoints = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_ledger_checkpoints_total", Help: "Checkpoints of a ledger partition written by this release instance and trimmed to (the records before them deleted)."}, []string{"partition"})
	m.LedgerDuplicates = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_ledger_duplicate_charges_total", Help: "Valid ledger charges for an already charged release id with a different payload, each counted against the budget (should stay 0)."}, []string{"stream"})
	m.PDPEpsilon = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpstream_pdp_epsilon", Help: "RESTRICTED aggregate: quantile over the latest window's units of a release's per-instance epsilon at the stream's delta."}, []string{"stream", "release", "quantile"})
	m.PDPCumulative = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpstream_pdp_cumulative_epsilon", Help: "RESTRICTED aggregate: quantile over a stream's units of their cumulative per-instance epsilon at the stream's delta."}, []string{"stream", "quantile"})
	// The pDP gauges are not registered here: see EnablePDP.
	for _, c := range []prometheus.Collector{m.Consumed, m.Rejected, m.Late, m.Clamped, m.Dropped, m.WindowsOpen, m.WindowsClosed, m.ConsumerLag, m.Releases, m.ReleaseLatency, m.BudgetSpent, m.BudgetLeft, m.Fenced, m.Checkpoints, m.LedgerDuplicates} {
		f(c)
	}
	m.WindowsAssumed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_unit_windows_assumed_total", Help: "CONFIDENTIAL (from the input's event times): Windows of the current horizon that a resumed partition takes every unit to have used (contribution.max_windows fail-safe: their admissions are not replayed), summed over resumes."}, []string{"stream"})
	f(m.WindowsAssumed)
	m.PartialsBeforeStart = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dpstream_partials_before_start_total", Help: "Partials of windows before their stream's start dropped by the release stage: never released or charged (should stay 0)."}, []string{"stream"})
	f(m.PartialsBeforeStart)
	return m
}

// EnablePDP serves the Restricted per-instance DP gauges (PDPEpsilon,
// PDPCumulative) on /metrics from now on; calling it again does nothing.
// Without it they are still set by the release stage but never exported:
// per-instance losses depend on the data, and the restricted pdp topic
// (dpstream budget --pdp) already shows them to those who may see them.
func (m *Metrics) EnablePDP() {
	m.pdpOnce.Do(func() {
		m.Registry.MustRegister(m.PDPEpsilon, m.PDPCumulative)
	})
}

// Serve serves, on addr, until ctx is done:
//
//   - /metrics: the Prometheus metrics;
//   - /healthz: liveness, 200 "ok" whenever the process answers HTTP,
//     including while it starts and drains (it never looks at Kafka);
//   - /readyz: readiness, 200 "ready" only while m.Health is Ready (the
//     stages run against reachable brokers), 503 "starting" before that and
//     503 "stopping" from the moment shutdown begins.
//
// It returns once the listener is bound, so a port clash is reported at
// start. A caller that drains on shutdown should keep ctx alive until the
// drain is over, so probes and scrapes see the 503 rather than a refused
// connection.
func (m *Metrics) Serve(ctx context.Context, addr string, log *slog.Logger) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s: %w (set metrics.addr in the config or --metrics-addr; \"off\" disables)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	mux.HandleFunc("/healthz", healthz)
	h := m.Health
	if h == nil {
		// A Metrics not made by New: serve a state nobody sets, which
		// honestly says "not ready" rather than nothing.
		h = &Health{}
	}
	mux.HandleFunc("/readyz", h.readyz)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && log != nil {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	if log != nil {
		log.Info("metrics listening", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	return ln.Addr(), nil
}
