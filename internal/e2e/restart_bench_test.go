//go:build unix

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// The restart benchmarks (issue 22's acceptance): how long `dpstream run`
// takes from exec to its first new release, and how much memory it needs,
// over a ledger of 10³, 10⁵ and 10⁶ past charges (BenchmarkRestart) and
// over an hour of 1 s windows of a per-key count of 40,000 public keys
// (BenchmarkRestartKeyed), for today's code (a binary built from the
// commit before checkpoints) and the code of this tree, measured in the
// same run as whole processes:
//
//	baseline  the old binary restarting on the ledger it wrote;
//	upgrade   this tree's binary, first start on that ledger: it reads it
//	          whole, checkpoints and trims it (the phase ends once the
//	          ledger is trimmed);
//	steady    this tree's binary again, starting from the checkpoint (the
//	          phase ends once it has checkpointed and trimmed again, so
//	          that the ledger left is what a running stage keeps).
//
// Each phase's process is started on the same data directory. Before it,
// the benchmark produces the events of a window a few seconds in the past
// and a later closer event: the accumulate stage then closes every window
// since the last phase's, and the release stage has the windows of its
// downtime to release (the new code in one group commit). restart-s is the
// time from exec to the first new release, every record of it for a
// release in chunks, on the releases topic (its records' timestamps, the
// writer's clock, so that the benchmark's polling does not count; "seen"
// in the log is when the benchmark saw it); rss-MB is the process's peak
// resident set (VmHWM, sampled until the end of the phase). The past
// windows end a few seconds before the first phase starts (the ones that
// passed while they were written are written too, so a case has a few
// more charges than named). After the steady phase kept-B/charge is what the ledger still
// holds per past charge: the bytes (keys, values, headers) of every record
// from each partition's log start to its end, divided by the charges
// synthesized; disk-B/charge is the size of the ledger's segment files on
// disk divided by the same (the embedded broker deletes a segment file
// only once all of it is before the log start, so up to a segment, 100 MB,
// of trimmed records stays on disk).
//
// The ledger is synthesized in the format the baseline writes, through the
// same record constructors and Avro encoding (ledger.ChargeMessage,
// ChunkMessages, EpochMessage, StartMessage; encodeChargeV4,
// schema.EncodeRelease, SplitRelease: unchanged since the baseline, which the
// benchmark checks by re-encoding the upgrade fixture's charges byte for
// byte), from the upgrade fixture's own charges of the same mechanisms,
// with the per-charge RDP curve the baseline stored: a stream start, one
// epoch marker, then one charge per past window (and, for a release in
// chunks, its chunk records before it), plus the releases topic's records
// of every one of them, so that neither binary republishes anything (a
// phase that does fails). The
// records are written in large produce batches straight to a broker on the
// data directory (a ledger written by a running stage has one batch per
// charge; only the broker's bookkeeping differs). The input and partials
// topics hold no history.
//
// Run it with
//
//	(cd /work/wt/baseline && go build -o /tmp/dpstream-base ./cmd/dpstream)
//	go build -o /tmp/dpstream-new ./cmd/dpstream
//	go test ./internal/e2e -run '^$' -bench Restart -benchtime 1x -timeout 60m \
//	    -restart-baseline /tmp/dpstream-base -restart-new /tmp/dpstream-new -restart-data /tmp/rb
//
// Without -restart-baseline, -restart-new and -restart-data the benchmarks
// skip. With -restart-external-broker the broker runs in a process of its
// own (this test binary, TestRestartBrokerChild) for the whole sequence
// and the stages connect to it (--brokers): restart-s and rss-MB are then
// the stage's own, without the embedded broker's loading of its data
// directory; broker-MB is the broker's resident set at the phase's end.
var (
	restartBaseline = flag.String("restart-baseline", "", "BenchmarkRestart*: a dpstream binary built from the code before checkpoints (today's code)")
	restartNew      = flag.String("restart-new", "", "BenchmarkRestart*: a dpstream binary built from this tree")
	restartData     = flag.String("restart-data", "", "BenchmarkRestart*: a directory for the benchmarks' data directories (GBs; each is deleted after its benchmark)")
	restartCharges  = flag.String("restart-charges", "1e3,1e5,1e6", "BenchmarkRestart: the past charges of each sub-benchmark, comma-separated")
	restartWindows  = flag.Int("restart-windows", 3600, "BenchmarkRestartKeyed: the past 1 s windows of the per-key release")
	restartKeys     = flag.Int("restart-keys", 40000, "BenchmarkRestartKeyed: the public keys of the per-key release")
	restartExternal = flag.Bool("restart-external-broker", false, "BenchmarkRestart*: run the broker in a process of its own, so that the stage's own time and RSS are measured")
	restartKeep     = flag.Bool("restart-keep", false, "BenchmarkRestart*: keep the data directories")
	restartLogLevel = flag.String("restart-log-level", "info", "BenchmarkRestart*: the --log-level of the measured processes (their logs are <data>/<case>/<phase>.log)")
)

// restartPhaseTimeout bounds each phase (one process): the baseline reads
// 10⁶ charges in about a minute.
const restartPhaseTimeout = 20 * time.Minute

// restartCase is one sub-benchmark: windows past windows of one release,
// each charged once.
type restartCase struct {
	name    string
	windows int
	// keys is 0 for a count, else the public keys of a per-key count.
	keys int
}

// restartResult is what one phase measured.
type restartResult struct {
	restart time.Duration
	rssMB   float64 // the peak VmHWM until the end of the phase
	firstMB float64 // the peak VmHWM until the first release
	// (Not wait4's ru_maxrss: Linux carries the forking process's peak
	// into it across the exec, and the benchmark's own is large.)
	brokerMB float64 // the external broker's VmRSS at the end of the phase
	first    string  // the first new release
	// marker is when the stage appended its epoch marker, from exec.
	marker time.Duration
	// group is how many new releases the releases topic held when the
	// first was complete.
	group int
	// seen is when the probe saw the first release.
	seen time.Duration
}

func restartFlags(b *testing.B) {
	if *restartBaseline == "" || *restartNew == "" || *restartData == "" {
		b.Skip("needs -restart-baseline BIN, -restart-new BIN and -restart-data DIR (see restart_bench_test.go)")
	}
	for _, p := range []string{*restartBaseline, *restartNew} {
		if _, err := os.Stat(p); err != nil {
			b.Fatalf("binary: %v", err)
		}
	}
}

// BenchmarkRestart measures restarts over a ledger of each of
// -restart-charges past charges of a count (one per 1 s window).
func BenchmarkRestart(b *testing.B) {
	restartFlags(b)
	steady := map[string]restartResult{}
	var names []string
	for _, s := range strings.Split(*restartCharges, ",") {
		s = strings.TrimSpace(s)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 1 || f != math.Trunc(f) {
			b.Fatalf("-restart-charges: %q is not a positive whole number", s)
		}
		rc := restartCase{name: "charges=" + s, windows: int(f)}
		b.Run(rc.name, func(b *testing.B) {
			steady[s] = runRestartCase(b, rc)
			names = append(names, s)
		})
	}
	if len(names) >= 2 {
		lo, hi := steady[names[0]], steady[names[len(names)-1]]
		b.Logf("steady restart, %s vs %s charges: time ×%.2f (target ≤ 2), peak RSS ×%.2f (target ≤ 2)",
			names[len(names)-1], names[0], hi.restart.Seconds()/lo.restart.Seconds(), hi.rssMB/lo.rssMB)
	}
}

// BenchmarkRestartKeyed measures restarts after -restart-windows 1 s
// windows of a per-key count over -restart-keys public keys (each window
// one release in chunks).
func BenchmarkRestartKeyed(b *testing.B) {
	restartFlags(b)
	runRestartCase(b, restartCase{name: fmt.Sprintf("keys=%d,windows=%d", *restartKeys, *restartWindows), windows: *restartWindows, keys: *restartKeys})
}

// runRestartCase synthesizes the case's ledger and runs the three phases
// on it, reporting each as a sub-benchmark; it returns the steady phase's
// result.
func runRestartCase(b *testing.B, rc restartCase) restartResult {
	dir := filepath.Join(*restartData, strings.NewReplacer("=", "", ",", "-").Replace(rc.name))
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if !*restartKeep {
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	rb := newRestartBench(b, dir, rc)
	defer rb.close()
	t0 := time.Now()
	rb.synthesize()
	b.Logf("%s: synthesized %d charges in %s: ledger %d records, %.1f MB (%.0f B/charge); releases %d records, %.1f MB",
		rc.name, rb.charges, time.Since(t0).Round(time.Millisecond), rb.ledgerRecords, float64(rb.ledgerBytes)/1e6,
		float64(rb.ledgerBytes)/float64(rb.charges), rb.releaseRecords, float64(rb.releaseBytes)/1e6)
	rb.startExternal()

	base := rb.phase("baseline", *restartBaseline, nil)
	start := rb.ledgerStart()
	upgrade := rb.phase("upgrade", *restartNew, func(p *restartProbe) bool {
		s, err := p.start(rb.cfg.Topics.Ledger)
		return err == nil && s > start
	})
	start = rb.ledgerStart()
	if start == 0 {
		b.Fatalf("%s: the upgrade did not trim the ledger", rc.name)
	}
	steady := rb.phase("steady", *restartNew, func(p *restartProbe) bool {
		s, err := p.start(rb.cfg.Topics.Ledger)
		return err == nil && s > start
	})
	kept, keptRecords, disk := rb.kept()
	rb.stopExternal()

	report := func(name string, r restartResult, extra func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.restart.Seconds(), "restart-s")
			b.ReportMetric(r.rssMB, "rss-MB")
			if *restartExternal {
				b.ReportMetric(r.brokerMB, "broker-MB")
			}
			if extra != nil {
				extra(b)
			}
		})
	}
	report("baseline", base, nil)
	report("upgrade", upgrade, nil)
	report("steady", steady, func(b *testing.B) {
		b.ReportMetric(float64(kept)/float64(rb.charges), "kept-B/charge")
		b.ReportMetric(float64(disk)/float64(rb.charges), "disk-B/charge")
	})
	b.Logf("%s: %-8s %8s %8s %8s %10s %12s %6s  first release", rc.name, "phase", "restart", "seen", "marker", "rss MB", "at first MB", "group")
	for _, x := range []struct {
		name string
		r    restartResult
	}{{"baseline", base}, {"upgrade", upgrade}, {"steady", steady}} {
		b.Logf("%s: %-8s %7.2fs %7.2fs %7.2fs %10.1f %12.1f %6d  %s", rc.name, x.name, x.r.restart.Seconds(), x.r.seen.Seconds(), x.r.marker.Seconds(),
			x.r.rssMB, x.r.firstMB, x.r.group, x.r.first)
	}
	b.Logf("%s: after the steady phase the ledger holds %d records, %d B from its log start (%.1f B/charge), %d B of segment files (%.1f B/charge)",
		rc.name, keptRecords, kept, float64(kept)/float64(rb.charges), disk, float64(disk)/float64(rb.charges))
	return steady
}

// restartBench is one case's data directory, configuration and broker.
type restartBench struct {
	b       *testing.B
	rc      restartCase
	dir     string
	dataDir string
	cfgPath string
	cfg     *config.Config
	// addr is where the stages' broker listens: the embedded broker of
	// `dpstream run` (a fixed free port), or the external broker.
	addr string
	// ext is the external broker process (-restart-external-broker).
	ext *exec.Cmd
	// h0 is the first past window, histEnd the start of the last one;
	// next is the start of the window the next phase releases.
	h0, histEnd, next int64
	// What the synthesis wrote: charges past windows (rc.windows, and the
	// few that passed while they were written), in so many records and
	// bytes.
	charges                       int
	ledgerRecords, releaseRecords int64
	ledgerBytes, releaseBytes     int64
}

// The configuration of the benchmarks' stream, in keys the baseline's
// configuration accepts too. A count (ε 0.5, L = 2: discrete Laplace of
// scale 4) or a per-key count of the same mechanism: the upgrade
// fixture's trips/n and trips/z, whose charges the synthesis starts from.
// The budget is large enough never to refuse.
const (
	restartStream  = "s"
	restartRelease = "n"
	restartBudget  = 1e9
)

func newRestartBench(b *testing.B, dir string, rc restartCase) *restartBench {
	rb := &restartBench{b: b, rc: rc, dir: dir, dataDir: filepath.Join(dir, "kafka"), cfgPath: filepath.Join(dir, "pipeline.yaml")}
	rb.addr = freeAddr(b)
	release := fmt.Sprintf("{name: %s, kind: count, epsilon: 0.5}", restartRelease)
	if rc.keys > 0 {
		keys := make([]string, rc.keys)
		for i := range keys {
			keys[i] = restartKey(i)
		}
		release = fmt.Sprintf("{name: %s, kind: count, group_by: zone, keys: [%s], epsilon: 0.5}", restartRelease, strings.Join(keys, ", "))
	}
	yaml := fmt.Sprintf(`embedded: {addr: "%s", data_dir: "%s"}
metrics: {addr: "off"}
streams:
  - name: %s
    topic: %s.events
    partitions: 1
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s, grace: 200ms, idle_timeout: 10m}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: %d, delta: 1e-6}
    pdp: false
    releases:
      - %s
`, rb.addr, rb.dataDir, restartStream, restartStream, int64(restartBudget), release)
	if err := os.WriteFile(rb.cfgPath, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse([]byte(yaml), rb.cfgPath)
	if err != nil {
		b.Fatalf("the benchmark's configuration: %v", err)
	}
	if _, err := plan.Build(cfg); err != nil {
		b.Fatalf("the benchmark's configuration: %v", err)
	}
	rb.cfg = cfg
	// The past windows end now, less the lead of the first phase's events
	// (see synthesize).
	rb.h0 = ledger.Align(time.Now().UnixMilli(), time.Second) - int64(rc.windows)*1000 - restartEventsLead - 1000
	return rb
}

// restartKey is the i-th public key of the per-key release.
func restartKey(i int) string { return fmt.Sprintf("k%05d", i) }

// freeAddr returns a loopback address with a port free now.
func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// withBroker runs fn with a cluster on the case's data directory: the
// external broker, or an embedded one of this process (without fsync)
// that is closed again, saving its data, when fn returns, so that the
// next `dpstream run` can take the directory.
func (rb *restartBench) withBroker(fn func(c *testkit.Cluster)) {
	b := rb.b
	if rb.ext != nil {
		conn := kafkaio.Plaintext([]string{rb.addr})
		fn(testkit.Attach(b, conn))
		return
	}
	e, err := kafkaio.StartEmbedded("127.0.0.1:0", rb.dataDir, nil, kafkaio.NoSync())
	if err != nil {
		b.Fatalf("embedded broker on %s: %v", rb.dataDir, err)
	}
	defer e.Close()
	fn(testkit.Attach(b, e.Conn()))
}

// synthesize writes the case's topics: the ledger and the releases of
// every past window, in the baseline's format, and the first phase's
// events.
func (rb *restartBench) synthesize() {
	b := rb.b
	tmpl := restartTemplates(b)
	rb.withBroker(func(c *testkit.Cluster) {
		// The baseline's topics: one partition each for the partials and
		// the ledger (pipeline.Topics with one release partition is what
		// the baseline creates).
		cfg := *rb.cfg
		cfg.ReleasePartitions = 1
		c.CreateTopics(pipeline.Topics(&cfg)...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		led := newTopicBatcher(ctx, c.Conn, cfg.Topics.Ledger)
		rel := newTopicBatcher(ctx, c.Conn, cfg.Topics.Releases)
		epoch := randomEpoch(b)
		start, err := ledger.StartMessage(schema.StreamStart{Stream: restartStream, Start: rb.h0, Source: schema.StartFromFirstRun, At: rb.h0})
		if err != nil {
			b.Fatal(err)
		}
		marker, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: epoch, Owner: "restart-bench synthetic", At: rb.h0})
		if err != nil {
			b.Fatal(err)
		}
		start.Time, marker.Time = time.UnixMilli(rb.h0), time.UnixMilli(rb.h0)
		led.add(start)
		led.add(marker)
		// Windows are encoded by two workers, in blocks, and written in
		// order.
		const block = 256
		type out struct{ ledger, releases []kafka.Message }
		var keys []string
		var ivs []float64
		if rb.rc.keys > 0 {
			keys, ivs = make([]string, rb.rc.keys), make([]float64, rb.rc.keys)
			for i := range keys {
				keys[i] = restartKey(i)
				ivs[i] = tmpl.keyed.Intervals95[0]
			}
		}
		encode := func(i int) out {
			ws := rb.h0 + int64(i)*1000
			at := ws + 1000 + 200 + int64(i%50)
			rng := mrand.New(mrand.NewPCG(uint64(i), 22))
			var r schema.Release
			var lc schema.LedgerCharge
			if rb.rc.keys == 0 {
				r, lc = tmpl.count, tmpl.countCharge
				v := float64(40 + rng.IntN(20) - 10)
				r.Value = &v
			} else {
				r, lc = tmpl.keyed, tmpl.keyedCharge
				r.Keys, r.Intervals95 = keys, ivs
				r.Values = make([]float64, len(keys))
				for k := range r.Values {
					r.Values[k] = float64(rng.IntN(17) - 8)
				}
			}
			id := plan.ReleaseID(restartStream, restartRelease, ws)
			r.ReleaseID, r.Stream, r.Release, r.WindowStart, r.WindowEnd = id, restartStream, restartRelease, ws, ws+1000
			// ε spent: the pure-ε composition of the charges so far (an
			// upper bound of the accountant's figure; any double encodes
			// to the same size).
			r.EpsilonSpent, r.EpsilonBudget, r.PublishedAt = 0.5*float64(i+1), restartBudget, at
			lc.ReleaseID, lc.Stream, lc.Release, lc.WindowStart, lc.Period, lc.At = id, restartStream, restartRelease, ws, 0, at
			payload, err := schema.EncodeRelease(r)
			if err != nil {
				panic(err)
			}
			var o out
			// As the baseline's Releaser.outcome: in chunks when the
			// payload exceeds what a ledger record holds.
			limit, err := schema.LedgerPayloadLimit(lc, schema.MaxRecordBytes)
			if err != nil {
				panic(err)
			}
			chunks := [][]byte{payload}
			if len(payload) > limit {
				parts, err := schema.SplitRelease(r, limit)
				if err != nil {
					panic(err)
				}
				chunks = make([][]byte, len(parts))
				for j, p := range parts {
					if chunks[j], err = schema.EncodeRelease(p); err != nil {
						panic(err)
					}
				}
				msgs, _, err := ledger.ChunkMessages(restartStream, id, epoch, chunks, at)
				if err != nil {
					panic(err)
				}
				o.ledger = append(o.ledger, msgs...)
			}
			lc.Payload = chunks[0]
			lb, err := encodeChargeV4(lc)
			if err != nil {
				panic(err)
			}
			o.ledger = append(o.ledger, ledger.ChargeMessage(restartStream, lb, epoch))
			for j, p := range chunks {
				m := kafka.Message{Key: []byte(id), Value: p}
				if len(chunks) > 1 {
					m.Headers = []kafka.Header{{Key: release.ChunkHeader, Value: []byte(fmt.Sprintf("%d/%d", j, len(chunks)))}}
				}
				o.releases = append(o.releases, m)
			}
			for j := range o.ledger {
				o.ledger[j].Time = time.UnixMilli(at)
			}
			for j := range o.releases {
				o.releases[j].Time = time.UnixMilli(at + 5)
			}
			return o
		}
		write := func(from, to int) {
			for lo := from; lo < to; lo += block {
				hi := min(lo+block, to)
				outs := make([]out, hi-lo)
				done := make(chan struct{})
				mid := lo + (hi-lo)/2
				go func() {
					defer close(done)
					for i := mid; i < hi; i++ {
						outs[i-lo] = encode(i)
					}
				}()
				for i := lo; i < mid; i++ {
					outs[i-lo] = encode(i)
				}
				<-done
				for _, o := range outs {
					for _, m := range o.ledger {
						led.add(m)
					}
					for _, m := range o.releases {
						rel.add(m)
					}
				}
			}
			for _, t := range []*topicBatcher{led, rel} {
				if err := t.close(); err != nil {
					b.Fatal(err)
				}
			}
			rb.ledgerRecords, rb.ledgerBytes = rb.ledgerRecords+led.records, rb.ledgerBytes+led.bytes
			rb.releaseRecords, rb.releaseBytes = rb.releaseRecords+rel.records, rb.releaseBytes+rel.bytes
			led = newTopicBatcher(ctx, c.Conn, cfg.Topics.Ledger)
			rel = newTopicBatcher(ctx, c.Conn, cfg.Topics.Releases)
			rb.charges = to
		}
		// The past windows end where the wall clock is when the first
		// phase starts, less the few seconds its events take (they must
		// be in the past): the windows that passed while they were
		// written are written too (a few more charges than asked), so
		// that a restart finds no backlog of windows but those of its
		// own downtime.
		write(0, rb.rc.windows)
		for {
			due := int((time.Now().UnixMilli()-restartEventsLead-rb.h0)/1000) - 1
			if due < rb.charges {
				break
			}
			write(rb.charges, due+1)
		}
		for _, t := range []*topicBatcher{led, rel} {
			if err := t.close(); err != nil {
				b.Fatal(err)
			}
		}
		rb.histEnd = rb.h0 + int64(rb.charges-1)*1000
		ends, err := c.Conn.EndOffsets(ctx, cfg.Topics.Ledger)
		if err != nil || ends[0] != rb.ledgerRecords {
			b.Fatalf("the synthesized ledger ends at %v (%v), want %d", ends, err, rb.ledgerRecords)
		}
		rb.next = rb.histEnd + 1000
		rb.produceWindow(c)
	})
}

// restartEventsLead is how long before now a phase's window starts:
// its closer event (3.5 s after) must be in the past too.
const restartEventsLead = 5000

// produceWindow produces the next phase's events: three units in window
// rb.next and a closer event 3.5 s later, which closes it (grace 200ms).
// It waits, if need be, until rb.next is restartEventsLead in the past.
func (rb *restartBench) produceWindow(c *testkit.Cluster) {
	w := rb.next
	if d := time.Until(time.UnixMilli(w + restartEventsLead)); d > 0 {
		time.Sleep(d)
	}
	var evs []map[string]any
	for i := range 3 {
		ev := map[string]any{"user": fmt.Sprintf("u%d", i), "ts": w + int64(i)*100}
		if rb.rc.keys > 0 {
			ev["zone"] = restartKey(i)
		}
		evs = append(evs, ev)
	}
	closer := map[string]any{"user": "closer", "ts": w + 3500}
	if rb.rc.keys > 0 {
		closer["zone"] = restartKey(0)
	}
	evs = append(evs, closer)
	c.ProduceJSON(rb.cfg.Streams[0].Topic, evs, "user")
}

// restartTemplateSet is the upgrade fixture's charges and releases that the
// synthesized ones copy: a count (trips/n) and a per-key count (trips/z,
// joined from its chunks), with the RDP curves the baseline recorded.
type restartTemplateSet struct {
	count, keyed             schema.Release
	countCharge, keyedCharge schema.LedgerCharge
}

func restartTemplates(b *testing.B) restartTemplateSet {
	b.Helper()
	recs, err := testkit.ReadTopicDump(filepath.Join(upgradeFixtureDir, "dpstream.ledger.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var t restartTemplateSet
	var haveCount, haveKeyed bool
	for _, r := range recs {
		m := r.Message()
		if typ := ledgerType(m); typ != schema.LedgerTypeCharge {
			continue
		}
		lc, err := schema.DecodeLedgerCharge(m.Value)
		if err != nil {
			b.Fatal(err)
		}
		// The encoder is the baseline's: every charge it wrote encodes
		// again to the same bytes.
		again, err := encodeChargeV4(lc)
		if err != nil || string(again) != string(m.Value) {
			b.Fatalf("the fixture's charge at %d does not re-encode to its bytes (%v): the charge encoding changed since the baseline", r.Offset, err)
		}
		switch {
		case !haveCount && lc.Stream == "trips" && lc.Release == "n" && lc.Status == release.StatusOK:
			t.countCharge, haveCount = lc, true
			if t.count, err = schema.DecodeRelease(lc.Payload); err != nil {
				b.Fatal(err)
			}
		case !haveKeyed && lc.Stream == "trips" && lc.Release == "z" && lc.Status == release.StatusOK:
			t.keyedCharge, haveKeyed = lc, true
		}
	}
	if !haveCount || !haveKeyed || len(t.countCharge.RDP) == 0 {
		b.Fatal("the upgrade fixture lacks the charges of trips/n and trips/z, with their RDP curves")
	}
	// trips/z's release, joined from its chunks on the releases topic.
	rels, err := testkit.ReadTopicDump(filepath.Join(upgradeFixtureDir, "dpstream.releases.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	var chunks []schema.Release
	for _, r := range rels {
		if string(r.Key) == t.keyedCharge.ReleaseID {
			c, err := schema.DecodeRelease(r.Value)
			if err != nil {
				b.Fatal(err)
			}
			chunks = append(chunks, c)
		}
	}
	if t.keyed, err = schema.JoinRelease(chunks); err != nil {
		b.Fatalf("the fixture's %s: %v", t.keyedCharge.ReleaseID, err)
	}
	t.keyed.Chunk, t.keyed.Chunks = 0, 0
	return t
}

// encodeChargeV4 encodes lc as the baseline wrote charges, in
// schema/legacy/ledger_charge_v4.avsc: v5 appended one field, the kinds'
// state (bytes), so a charge without state is its v5 encoding less the
// final byte (the empty bytes' zero length). The result is checked to
// decode to lc again.
func encodeChargeV4(lc schema.LedgerCharge) ([]byte, error) {
	if len(lc.State) > 0 {
		return nil, fmt.Errorf("charge %s has a state, which v4 cannot carry", lc.ReleaseID)
	}
	b, err := schema.EncodeLedgerCharge(lc)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[len(b)-1] != 0 {
		return nil, fmt.Errorf("charge %s: the v5 encoding does not end with an empty state", lc.ReleaseID)
	}
	b = b[:len(b)-1]
	back, err := schema.DecodeLedgerCharge(b)
	if err != nil {
		return nil, fmt.Errorf("charge %s: its v4 encoding does not decode: %w", lc.ReleaseID, err)
	}
	if back.ReleaseID != lc.ReleaseID || len(back.Payload) != len(lc.Payload) || len(back.RDP) != len(lc.RDP) {
		return nil, fmt.Errorf("charge %s: its v4 encoding decodes to another charge", lc.ReleaseID)
	}
	return b, nil
}

// ledgerType is a ledger record's type header.
func ledgerType(m kafka.Message) string {
	for _, h := range m.Headers {
		if h.Key == schema.LedgerTypeHeader {
			return string(h.Value)
		}
	}
	return schema.LedgerTypeCharge
}

func randomEpoch(b *testing.B) string {
	var x [16]byte
	if _, err := rand.Read(x[:]); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(x[:])
}

// topicBatcher produces records to partition 0 of a topic in large
// batches, one produce request at a time, from a goroutine of its own.
type topicBatcher struct {
	cl             *kafka.Client
	ctx            context.Context
	topic          string
	batch          []kafka.Record
	size           int
	ch             chan []kafka.Record
	errc           chan error
	records, bytes int64
}

// restartBatchBytes keeps a produce batch under the broker's 1 MiB
// message.max.bytes (a record larger than it goes alone).
const restartBatchBytes = 900 << 10

func newTopicBatcher(ctx context.Context, conn *kafkaio.Connection, topic string) *topicBatcher {
	t := &topicBatcher{cl: conn.Client(), ctx: ctx, topic: topic, ch: make(chan []kafka.Record, 4), errc: make(chan error, 1)}
	go func() {
		var err error
		for batch := range t.ch {
			if err != nil {
				continue
			}
			var resp *kafka.ProduceResponse
			resp, err = t.cl.Produce(ctx, &kafka.ProduceRequest{Topic: topic, Partition: 0, RequiredAcks: kafka.RequireAll, Records: kafka.NewRecordReader(batch...)})
			if err == nil && resp.Error != nil {
				err = resp.Error
			}
			if err != nil {
				err = fmt.Errorf("produce to %s: %w", topic, err)
			}
		}
		t.errc <- err
	}()
	return t
}

func (t *topicBatcher) add(m kafka.Message) {
	n := len(m.Key) + len(m.Value) + 32
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	if len(t.batch) > 0 && t.size+n > restartBatchBytes {
		t.flush()
	}
	t.batch = append(t.batch, kafka.Record{Time: m.Time, Key: kafka.NewBytes(m.Key), Value: kafka.NewBytes(m.Value), Headers: m.Headers})
	t.size += n
	t.records++
	t.bytes += int64(recordBytes(m))
}

func (t *topicBatcher) flush() {
	if len(t.batch) > 0 {
		t.ch <- t.batch
		t.batch, t.size = nil, 0
	}
}

func (t *topicBatcher) close() error {
	t.flush()
	close(t.ch)
	return <-t.errc
}

// recordBytes is what a record holds: its key, value and headers.
func recordBytes(m kafka.Message) int {
	n := len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// ledgerStart is the ledger's log start offset.
func (rb *restartBench) ledgerStart() int64 {
	var start int64
	rb.withBroker(func(c *testkit.Cluster) { start = c.StartOffset(rb.cfg.Topics.Ledger, 0) })
	return start
}

// phase runs one `dpstream run` of bin on the case's data directory after
// producing the events of one more window: it measures the time from exec
// to that release on the releases topic, then waits for until (if set),
// stops the process with SIGTERM and returns what it measured.
func (rb *restartBench) phase(name, bin string, until func(*restartProbe) bool) restartResult {
	b := rb.b
	var relEnd, ledEnd int64
	if name != "baseline" { // the synthesis produced the first window
		rb.next = max(ledger.Align(time.Now().UnixMilli(), time.Second)-restartEventsLead, rb.next+5000)
		rb.withBroker(func(c *testkit.Cluster) { rb.produceWindow(c) })
	}
	rb.withBroker(func(c *testkit.Cluster) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ends, err := c.Conn.EndOffsets(ctx, rb.cfg.Topics.Releases)
		if err != nil {
			b.Fatal(err)
		}
		relEnd = ends[0]
		if ends, err = c.Conn.EndOffsets(ctx, rb.cfg.Topics.Ledger); err != nil {
			b.Fatal(err)
		}
		ledEnd = ends[0]
	})
	logPath := filepath.Join(rb.dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logf.Close()
	args := []string{"run", "-c", rb.cfgPath, "--log-level", *restartLogLevel}
	if rb.ext != nil {
		args = append(args, "--brokers", rb.addr)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = rb.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var res restartResult
	fail := func(format string, args ...any) {
		_ = cmd.Process.Kill()
		<-exited
		b.Fatalf("%s %s: %s\n%s", rb.rc.name, name, fmt.Sprintf(format, args...), tailFile(logPath, 30))
	}
	probe := newRestartProbe(rb.addr)
	defer probe.close()
	deadline := t0.Add(restartPhaseTimeout)
	// The peak resident set: VmHWM is the kernel's, but it may read
	// lower later (it is brought up to date lazily), so the highest
	// reading counts.
	sample := func() { res.rssMB = max(res.rssMB, vmHWM(cmd.Process.Pid)) }
	// The times are the records' own timestamps (the writer's clock, the
	// same machine's as t0), so the probe's polling does not count.
	since := func(m kafka.Message) time.Duration { return m.Time.Sub(t0) }
	// The first new release: the id of a window after the past ones, and
	// every chunk of it.
	seen := map[string]map[int]bool{}
	pos := relEnd
	var seenAt time.Duration
	for res.first == "" {
		select {
		case err := <-exited:
			exited <- err
			fail("exited before its first release: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			fail("no release after %s", restartPhaseTimeout)
		}
		// When the stage appended its first ledger record (the epoch
		// marker: its takeover has begun), for the log.
		if res.marker == 0 {
			if m, ok := probe.at(rb.cfg.Topics.Ledger, ledEnd); ok {
				res.marker = since(m)
			}
		}
		end, err := probe.end(rb.cfg.Topics.Releases)
		if err == nil && end > pos {
			err = probe.read(rb.cfg.Topics.Releases, pos, end, func(m kafka.Message) error {
				pos = m.Offset + 1
				id := string(m.Key)
				_, _, w, ok := plan.ParseReleaseID(id)
				if !ok {
					return fmt.Errorf("release id %q", id)
				}
				if w <= rb.histEnd {
					return fmt.Errorf("%s republished %s, a synthesized release: the synthesized topics are not what the binary expects", name, id)
				}
				chunk, chunks, chunked := chunkIndex(m)
				if !chunked {
					chunk, chunks = 0, 1
				}
				if seen[id] == nil {
					seen[id] = map[int]bool{}
				}
				seen[id][chunk] = true
				if len(seen[id]) == chunks && res.first == "" {
					res.restart, res.first, seenAt = since(m), id, time.Since(t0)
				}
				return nil
			})
			if err != nil && strings.Contains(err.Error(), "republished") {
				fail("%v", err)
			}
		}
		if res.first == "" {
			sample()
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The windows published with it: the first group commit (the windows
	// of the downtime, due together), as far as the topic holds them.
	res.group = len(seen)
	if res.restart <= 0 || res.restart > seenAt {
		fail("the first release's timestamp is %s after exec, but it was seen %s after", res.restart, seenAt)
	}
	res.seen = seenAt
	sample()
	res.firstMB = res.rssMB
	if until != nil {
		for !until(probe) {
			select {
			case err := <-exited:
				exited <- err
				fail("exited: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				fail("not done after %s", restartPhaseTimeout)
			}
			sample()
			time.Sleep(100 * time.Millisecond)
		}
	}
	sample()
	if rb.ext != nil {
		res.brokerMB = vmRSS(rb.ext.Process.Pid)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			b.Fatalf("%s %s: exit after SIGTERM: %v\n%s", rb.rc.name, name, err, tailFile(logPath, 30))
		}
	case <-time.After(2 * time.Minute):
		fail("did not stop within 2 minutes of SIGTERM")
	}
	return res
}

// restartProbe watches the topics of a broker that comes and goes (the
// embedded broker of the process being measured), over a transport of its
// own: kafka-go's shared one keeps the connections of the last one.
type restartProbe struct {
	addr      string
	transport *kafka.Transport
	cl        *kafka.Client
}

func newRestartProbe(addr string) *restartProbe {
	tr := &kafka.Transport{DialTimeout: 500 * time.Millisecond, MetadataTTL: time.Second}
	return &restartProbe{addr: addr, transport: tr, cl: &kafka.Client{Addr: kafka.TCP(addr), Transport: tr, Timeout: 2 * time.Second}}
}

func (p *restartProbe) close() { p.transport.CloseIdleConnections() }

// offset is partition 0's first or next offset.
func (p *restartProbe) offset(topic string, first bool) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kafka.LastOffsetOf(0)
	if first {
		req = kafka.FirstOffsetOf(0)
	}
	resp, err := p.cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {req}}})
	if err != nil {
		return 0, err
	}
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return 0, po.Error
		}
		if first {
			return po.FirstOffset, nil
		}
		return po.LastOffset, nil
	}
	return 0, fmt.Errorf("no offsets of %s", topic)
}

func (p *restartProbe) end(topic string) (int64, error)   { return p.offset(topic, false) }
func (p *restartProbe) start(topic string) (int64, error) { return p.offset(topic, true) }

// read calls fn with partition 0's records from from to end.
func (p *restartProbe) read(topic string, from, end int64, fn func(kafka.Message) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{p.addr}, Topic: topic, Partition: 0, MinBytes: 1, MaxBytes: kafkaio.FetchMaxBytes, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return err
	}
	for from < end {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
		from = m.Offset + 1
	}
	return nil
}

// at returns partition 0's record at offset off, once there is one.
func (p *restartProbe) at(topic string, off int64) (kafka.Message, bool) {
	end, err := p.end(topic)
	if err != nil || end <= off {
		return kafka.Message{}, false
	}
	var out kafka.Message
	err = p.read(topic, off, off+1, func(m kafka.Message) error { out = m; return nil })
	return out, err == nil
}

// kept returns what the ledger holds after the phases: the bytes of its
// records from each partition's log start, their count, and the size of
// its segment files.
func (rb *restartBench) kept() (keptBytes, records, diskBytes int64) {
	rb.withBroker(func(c *testkit.Cluster) {
		for _, m := range c.ReadAll(rb.cfg.Topics.Ledger) {
			keptBytes += int64(recordBytes(m))
			records++
		}
	})
	n := max(rb.cfg.ReleasePartitions, 1)
	for p := range n {
		// kfake's partition directory (persist.go partDir).
		dir := filepath.Join(rb.dataDir, "partitions", fmt.Sprintf("%s-%d", url.PathEscape(rb.cfg.Topics.Ledger), p))
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".dat") {
				diskBytes += info.Size()
			}
		}
	}
	return keptBytes, records, diskBytes
}

// vmHWM is a process's peak resident set in MB (0 if unknown).
func vmHWM(pid int) float64 { return procStatusMB(pid, "VmHWM:") }

// vmRSS is a process's resident set in MB (0 if unknown).
func vmRSS(pid int) float64 { return procStatusMB(pid, "VmRSS:") }

func procStatusMB(pid int, field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// tailFile returns the last n lines of a file, for a failure message.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// restartBrokerEnv names the data directory and address of the external
// broker child (TestRestartBrokerChild), as "addr dir".
const restartBrokerEnv = "DPSTREAM_RESTART_BROKER"

// startExternal starts the external broker process, with -restart-external-broker.
func (rb *restartBench) startExternal() {
	if !*restartExternal {
		return
	}
	b := rb.b
	logf, err := os.Create(filepath.Join(rb.dir, "broker.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRestartBrokerChild$", "-test.bench=^$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), restartBrokerEnv+"="+rb.addr+" "+rb.dataDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	logf.Close()
	rb.ext = cmd
	// Not kafkaio's Check: when the broker does not answer yet, it probes
	// for TLS, and the embedded broker takes the hello for the length of a
	// request of hundreds of MB, which it allocates.
	probe := newRestartProbe(rb.addr)
	defer probe.close()
	testkit.WaitFor(b, 10*time.Minute, "the external broker", func() bool {
		_, err := probe.end(rb.cfg.Topics.Releases)
		return err == nil
	})
}

// stopExternal stops the external broker, which saves its data.
func (rb *restartBench) stopExternal() {
	if rb.ext == nil {
		return
	}
	_ = rb.ext.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- rb.ext.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			rb.b.Errorf("the external broker: %v", err)
		}
	case <-time.After(2 * time.Minute):
		_ = rb.ext.Process.Kill()
		<-done
	}
	rb.ext = nil
}

func (rb *restartBench) close() {
	if rb.ext != nil {
		_ = rb.ext.Process.Kill()
		_, _ = rb.ext.Process.Wait()
		rb.ext = nil
	}
}

// TestRestartBrokerChild is the external broker of the restart benchmarks
// (-restart-external-broker): an embedded broker on the data directory and
// address in DPSTREAM_RESTART_BROKER, with every write fsynced as `dpstream
// run`'s is by default, until SIGTERM. Without the variable it skips.
func TestRestartBrokerChild(t *testing.T) {
	spec := os.Getenv(restartBrokerEnv)
	if spec == "" {
		t.Skip("the restart benchmarks' broker process; runs only when started by them")
	}
	addr, dir, ok := strings.Cut(spec, " ")
	if !ok {
		t.Fatalf("%s=%q: want \"addr dir\"", restartBrokerEnv, spec)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	e, err := kafkaio.StartEmbedded(addr, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	e.Close()
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal(ctx.Err())
	}
}
