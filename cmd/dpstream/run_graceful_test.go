package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

// gatedProxy forwards TCP connections to a broker, holding each one until
// open is called. `run` bootstraps through it, so the test decides when the
// brokers start answering and can see /readyz while the pipeline is still
// starting. Only bootstrap goes through it: the broker's metadata names its
// own address, which clients use from then on.
type gatedProxy struct {
	ln     net.Listener
	target string
	gate   chan struct{} // closed by open
	done   chan struct{} // closed by close
	once   sync.Once
	mu     sync.Mutex
	conns  []net.Conn
}

func startGatedProxy(t *testing.T, target string) *gatedProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gatedProxy{ln: ln, target: target, gate: make(chan struct{}), done: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.track(c)
			go p.serve(c)
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *gatedProxy) addr() string { return p.ln.Addr().String() }

func (p *gatedProxy) open() { p.once.Do(func() { close(p.gate) }) }

func (p *gatedProxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *gatedProxy) serve(c net.Conn) {
	select {
	case <-p.gate:
	case <-p.done:
		c.Close()
		return
	}
	b, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.track(b)
	go func() {
		_, _ = io.Copy(b, c)
		b.Close()
	}()
	_, _ = io.Copy(c, b)
	c.Close()
}

func (p *gatedProxy) close() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// fakeProcess is runEnv for a test: signals the test sends, an exit that
// records its code instead of ending the test binary, and a release hook
// that can hold the first release of one window, keeping that window's
// release open for as long as the test likes.
type fakeProcess struct {
	signals chan os.Signal
	exits   chan int
	// holdWindow is the start of the window whose first release is held
	// (0: none); held receives it, and closing hold lets it go.
	holdWindow int64
	held       chan schema.Release
	hold       chan struct{}
	first      sync.Once
	holdOnce   sync.Once
}

func newFakeProcess(holdWindow int64) *fakeProcess {
	return &fakeProcess{signals: make(chan os.Signal, 4), exits: make(chan int, 4),
		holdWindow: holdWindow, held: make(chan schema.Release, 1), hold: make(chan struct{})}
}

func (f *fakeProcess) env() runEnv {
	return runEnv{
		notify:    func() (<-chan os.Signal, func()) { return f.signals, func() {} },
		exit:      func(code int) { f.exits <- code },
		onRelease: f.onRelease,
	}
}

func (f *fakeProcess) onRelease(r schema.Release) {
	if f.holdWindow == 0 || r.WindowStart != f.holdWindow {
		return
	}
	first := false
	f.first.Do(func() { first = true })
	if first {
		f.held <- r
		<-f.hold
	}
}

// letGo lets the held release, if any, go on.
func (f *fakeProcess) letGo() { f.holdOnce.Do(func() { close(f.hold) }) }

// running is one `dpstream run` driven through runWith.
type running struct {
	stderr  syncBuffer
	done    chan int
	started time.Time
}

func startRun(ctx context.Context, env runEnv, args ...string) *running {
	r := &running{done: make(chan int, 1), started: time.Now()}
	go func() {
		var stdout syncBuffer
		r.done <- runWith(ctx, args, &stdout, &r.stderr, env)
	}()
	return r
}

// wait returns run's exit code, failing the test if it takes over d.
func (r *running) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case code := <-r.done:
		return code
	case <-time.After(d):
		t.Fatalf("run did not return within %s; stderr:\n%s", d, r.stderr.String())
		return -1
	}
}

// probe GETs path from the metrics server at addr: the status code and the
// trimmed body, or an error when nothing answers.
func probe(addr, path string) (int, string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// waitProbe polls path until it answers code and body, failing after d.
func waitProbe(t *testing.T, r *running, addr, path string, code int, body string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	var gotCode int
	var gotBody string
	var err error
	for time.Now().Before(deadline) {
		if gotCode, gotBody, err = probe(addr, path); err == nil && gotCode == code && gotBody == body {
			return
		}
		select {
		case exit := <-r.done:
			r.done <- exit // for wait
			t.Fatalf("run exited with %d while waiting for %s to answer %d %q; stderr:\n%s", exit, path, code, body, r.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s never answered %d %q within %s (last: %d %q, err %v); run stderr:\n%s", path, code, body, d, gotCode, gotBody, err, r.stderr.String())
}

// TestRunGracefulShutdown drives `dpstream run` in-process against a broker
// the test owns, through a proxy that keeps the brokers silent until the
// test opens it. In every case /readyz must answer 503 "starting" while the
// brokers are silent, 200 "ready" once the stages run, and 503 "stopping"
// as soon as shutdown begins, while the drain is still going (the first
// release of the first window is held open by the release hook, so the
// drain cannot finish before the test lets it). The cases then differ in
// how the drain ends: it finishes within the timeout (exit 0, the held
// window completed, offsets committed, groups left, and a restart re-reads
// nothing already released), the timeout passes (exit 1, the abandoned work
// logged), or a second signal forces the exit (exit 1 at once).
func TestRunGracefulShutdown(t *testing.T) {
	const base = int64(1_750_000_000_000) // window-aligned and long past
	// The input's events are all in window [base, base+1s). Idle closes
	// it, and ~250ms later the empty window after it; the first release of
	// that second window is held. Holding the second rather than the first
	// makes the drain's own commit necessary: the release stage commits at
	// most once a second while running, and did so after the first window.
	const heldWindow = base + 1000
	cases := []struct {
		name    string
		timeout time.Duration
		// letGoInDrain lets the held release go once /readyz said
		// stopping; otherwise it stays held until run returned.
		letGoInDrain bool
		// secondSignal sends another SIGTERM once /readyz said stopping.
		secondSignal bool
		wantCode     int
		wantExitCall bool
		// within bounds how long run may take after shutdown began.
		within  time.Duration
		wantLog []string
	}{
		{
			name: "drains within the timeout", timeout: 20 * time.Second, letGoInDrain: true,
			wantCode: exitOK, within: 15 * time.Second,
			wantLog: []string{
				"shutdown requested: draining",
				"stopping: no further input is read",
				"partials partition drained: started windows released, offset committed",
				"partition drained: partials acknowledged, commit point committed",
				`msg="left the consumer group" stage=accumulate`,
				`msg="left the consumer group" stage=release`,
				`msg="stage stopped" stage=accumulate`,
				`msg="stage stopped" stage=release`,
				"drained: in-flight work finished, offsets committed, consumer groups left, writers flushed",
				"pipeline stopped",
			},
		},
		{
			name: "timeout passes", timeout: 300 * time.Millisecond,
			wantCode: exitError, within: 5 * time.Second,
			wantLog: []string{
				"shutdown requested: draining",
				"shutdown timeout passed: exiting without finishing the drain",
				fmt.Sprintf(`work="release: window rides/%d was being released; what reached the ledger is republished verbatim at the next start, the rest is decided then"`, heldWindow),
				`work="release stage: not stopped (consumer group not left: its partitions move after the session timeout)"`,
				fmt.Sprintf(`work="release: dpstream.partials[%d]: not drained; its next owner replays from`, ridesPartition),
			},
		},
		{
			name: "second signal forces exit", timeout: 20 * time.Second, secondSignal: true,
			wantCode: exitError, wantExitCall: true, within: 5 * time.Second,
			wantLog: []string{
				"shutdown requested: draining",
				"second stop signal: exiting now without finishing the drain",
				fmt.Sprintf(`work="release: window rides/%d was being released;`, heldWindow),
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// The test reaches the broker directly, run through the proxy.
			direct := testkit.StartBroker(t)
			proxy := startGatedProxy(t, direct.Addr)
			// The stream starts at base: the events are long past.
			cfgPath := testkit.NewPipeline(ridesStream("rides.events").Partitions(1).Start(time.UnixMilli(base)).Budget(100, 1e-6).Releases(
				testkit.Histogram("h", "v", 0, 10, 5).Epsilon(0.5))).
				Brokers(proxy.addr()).PDPStore(filepath.Join(dir, "pdp")).WriteFile(t, filepath.Join(dir, "pipeline.yaml"))
			cfg, err := config.Load(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			accGroup, relGroup := pipeline.Groups(cfg)

			// The input is in place before run starts.
			direct.CreateTopics(pipeline.Topics(cfg)...)
			var msgs []kafka.Message
			for i := int64(0); i < 16; i++ {
				u := fmt.Sprintf("u%d", i%8)
				msgs = append(msgs, kafka.Message{Key: []byte(u), Value: fmt.Appendf(nil, `{"user":%q,"ts":%d,"v":%d}`, u, base+i*50, i%10)})
			}
			direct.Produce("rides.events", msgs...)

			metricsAddr := freeAddr(t)
			f := newFakeProcess(heldWindow)
			// Whatever happens, let the held release go before the broker
			// closes, so the pipeline's goroutines can finish.
			t.Cleanup(f.letGo)
			runCtx, stopRun := context.WithCancel(t.Context())
			defer stopRun()
			r := startRun(runCtx, f.env(), "-c", cfgPath, "--metrics-addr", metricsAddr, "--shutdown-timeout", c.timeout.String())

			// Starting: the server answers, the brokers do not yet.
			waitProbe(t, r, metricsAddr, "/healthz", http.StatusOK, "ok", 10*time.Second)
			if code, body, err := probe(metricsAddr, "/readyz"); err != nil || code != http.StatusServiceUnavailable || body != "starting" {
				t.Fatalf("/readyz while the brokers are silent: %d %q (%v), want 503 \"starting\"", code, body, err)
			}
			proxy.open()
			waitProbe(t, r, metricsAddr, "/readyz", http.StatusOK, "ready", 15*time.Second)

			var held schema.Release
			select {
			case held = <-f.held:
			case <-time.After(20 * time.Second):
				t.Fatalf("no release within 20s; run stderr:\n%s", r.stderr.String())
			}
			if held.WindowStart != heldWindow || held.Release != "n" {
				t.Fatalf("held release %s, want the first release n of window %d", held.ReleaseID, heldWindow)
			}

			// Shutdown begins as in the real process: the signal cancels
			// ctx and reaches run's own subscription.
			stopRun()
			f.signals <- syscall.SIGTERM
			shutdownAt := time.Now()
			if c.timeout > time.Second {
				// The held window keeps the drain going: readiness must
				// already say stopping while liveness still says ok.
				waitProbe(t, r, metricsAddr, "/readyz", http.StatusServiceUnavailable, "stopping", 5*time.Second)
				if code, body, err := probe(metricsAddr, "/healthz"); err != nil || code != http.StatusOK || body != "ok" {
					t.Errorf("/healthz while draining: %d %q (%v), want 200 \"ok\"", code, body, err)
				}
			}
			if c.letGoInDrain {
				f.letGo()
			}
			if c.secondSignal {
				f.signals <- syscall.SIGTERM
			}
			code := r.wait(t, c.within+5*time.Second)
			took := time.Since(shutdownAt)
			f.letGo()
			stderr := r.stderr.String()
			if code != c.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.wantCode, stderr)
			}
			if took > c.within {
				t.Errorf("run took %s after shutdown began, want under %s", took, c.within)
			}
			if c.wantCode == exitError && !c.wantExitCall && took < c.timeout {
				t.Errorf("run gave up after %s, before its %s timeout", took, c.timeout)
			}
			select {
			case got := <-f.exits:
				if !c.wantExitCall || got != exitError {
					t.Errorf("exit(%d) called; want a call: %v, with %d", got, c.wantExitCall, exitError)
				}
			default:
				if c.wantExitCall {
					t.Error("a second signal did not call exit")
				}
			}
			for _, want := range c.wantLog {
				if !strings.Contains(stderr, want) {
					t.Errorf("log lacks %q:\n%s", want, stderr)
				}
			}

			if c.wantCode != exitOK {
				// The process would be gone now; here its goroutines carry
				// on. Wait for them to leave the groups before the broker
				// closes, so nothing outlives the test.
				deadline := time.Now().Add(15 * time.Second)
				for time.Now().Before(deadline) {
					if m := direct.Members(accGroup, relGroup); m[accGroup]+m[relGroup] == 0 {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				t.Fatal("the abandoned pipeline did not wind down within 15s")
			}
			checkDrained(t, direct, cfg, held, accGroup, relGroup)
			checkRestart(t, direct, cfgPath, cfg)
		})
	}
}

// ridesPartition is the partition of the partials topic (and the ledger)
// that stream rides belongs to, with the default release_partitions.
var ridesPartition = ledger.PartitionOf("rides", config.DefaultReleasePartitions)

// checkDrained checks what a clean drain leaves behind: the groups left, the
// held window's releases all in the ledger and published verbatim, and the
// committed offsets exactly where a restart must resume.
func checkDrained(t *testing.T, brokers *testkit.Cluster, cfg *config.Config, held schema.Release, accGroup, relGroup string) {
	t.Helper()
	// kafka-go's session timeout is 10s: a member still listed now did
	// not leave.
	for g, n := range brokers.Members(accGroup, relGroup) {
		if n != 0 {
			t.Errorf("group %s has %d members after run exited, want 0", g, n)
		}
	}

	ledger := brokers.LedgerWithRepeats(cfg.Topics.Ledger)
	published := map[string][][]byte{}
	for _, m := range brokers.ReadAll(cfg.Topics.Releases) {
		published[string(m.Key)] = append(published[string(m.Key)], m.Value)
	}
	released := map[int64]bool{}
	for _, lc := range ledger {
		released[lc.WindowStart] = true
		if p := published[lc.ReleaseID]; len(p) != 1 || !bytes.Equal(p[0], lc.Payload) {
			t.Errorf("release %s: published %d times (want once, byte-identical to the ledger)", lc.ReleaseID, len(p))
		}
	}
	// The held window finished during the drain: both its releases.
	for _, name := range []string{"n", "h"} {
		id := fmt.Sprintf("rides/%s/%d", name, held.WindowStart)
		if len(published[id]) == 0 {
			t.Errorf("release %s of the window being released at shutdown is not published", id)
		}
	}

	// Accumulate: every event's window closed, so the commit point is the
	// end of the input, with the watermark in the metadata.
	inputEnd := int64(len(brokers.ReadAll("rides.events")))
	off, md := brokers.CommittedOffset(accGroup, "rides.events", 0)
	if off != inputEnd || !strings.HasPrefix(md, "dpstream/v1 wm=") {
		t.Errorf("accumulate committed rides.events[0] at %d (metadata %q), want the end %d with a watermark", off, md, inputEnd)
	}
	// Release: the merger resumes from the last partial it took in, which
	// is the last partial of a released window (later partials, emitted
	// while the held window blocked the stage, were never read).
	lastReleased := int64(-1)
	for _, m := range brokers.ReadAll(cfg.Topics.Partials) {
		if m.Partition != ridesPartition {
			continue
		}
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			t.Fatalf("partial at %d: %v", m.Offset, err)
		}
		if released[p.WindowStart] {
			lastReleased = max(lastReleased, m.Offset)
		}
	}
	if off, _ := brokers.CommittedOffset(relGroup, cfg.Topics.Partials, ridesPartition); off != lastReleased || off < 0 {
		t.Errorf("release committed %s[%d] at %d, want %d, the last partial of a released window", cfg.Topics.Partials, ridesPartition, off, lastReleased)
	}
}

// checkRestart runs the pipeline again on the drained topics until it has
// released a new window, and checks that it read no input again and
// released nothing twice.
func checkRestart(t *testing.T, brokers *testkit.Cluster, cfgPath string, cfg *config.Config) {
	t.Helper()
	before := brokers.LedgerWithRepeats(cfg.Topics.Ledger)
	lastWindow := int64(0)
	for _, lc := range before {
		lastWindow = max(lastWindow, lc.WindowStart)
	}
	metricsAddr := freeAddr(t)
	f := newFakeProcess(0)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	r := startRun(ctx, f.env(), "-c", cfgPath, "--metrics-addr", metricsAddr, "--shutdown-timeout", "20s")
	waitProbe(t, r, metricsAddr, "/readyz", http.StatusOK, "ready", 15*time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for {
		newer := false
		for _, lc := range brokers.LedgerWithRepeats(cfg.Topics.Ledger) {
			newer = newer || lc.WindowStart > lastWindow
		}
		if newer {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted pipeline released no new window within 15s; stderr:\n%s", r.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, body, err := probe(metricsAddr, "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	// Absent or zero: the input was committed at its end.
	if m := regexp.MustCompile(`(?m)^dpstream_events_consumed_total\{stream="rides"\} (\S+)$`).FindStringSubmatch(body); m != nil && m[1] != "0" {
		t.Errorf("the restarted pipeline read %s input records again, want 0", m[1])
	}
	stop()
	f.signals <- syscall.SIGINT
	if code := r.wait(t, 20*time.Second); code != exitOK {
		t.Fatalf("restarted run: exit %d; stderr:\n%s", code, r.stderr.String())
	}
	seen := map[string]int{}
	for _, lc := range brokers.LedgerWithRepeats(cfg.Topics.Ledger) {
		seen[lc.ReleaseID]++
	}
	for _, lc := range before {
		if seen[lc.ReleaseID] != 1 {
			t.Errorf("release %s is in the ledger %d times after the restart, want once", lc.ReleaseID, seen[lc.ReleaseID])
		}
	}
}

func TestRunShutdownTimeoutFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"zero", []string{"--shutdown-timeout", "0s"}, "--shutdown-timeout 0s: must be positive"},
		{"negative", []string{"--shutdown-timeout", "-1s"}, "--shutdown-timeout -1s: must be positive"},
		{"not a duration", []string{"--shutdown-timeout", "soon"}, `invalid value "soon" for flag -shutdown-timeout`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := cliTimeout(t, 5*time.Second, append([]string{"run", "-c", filepath.Join(configDir, "pipeline.yaml")}, c.args...)...)
			if code != exitConfig || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, want %d, with %q in stderr:\n%s", code, exitConfig, c.want, stderr)
			}
		})
	}
	code, stdout, _ := cli(t.Context(), "run", "--help")
	if code != exitOK || !regexp.MustCompile(`(?m)^  -shutdown-timeout duration\n.*\(default 30s\)`).MatchString(stdout) {
		t.Errorf("run --help does not document -shutdown-timeout with its 30s default:\n%s", stdout)
	}
}

// TestSupervise checks run's shutdown logic on a fake pipeline, where each
// path can be forced: how shutdown starts (the parent context, run's own
// signal subscription, a signal from before the subscription), how the
// pipeline behaves (fails by itself, drains, fails while draining, never
// finishes), and what run then does (exit code, exit call, log).
func TestSupervise(t *testing.T) {
	stuck := make(chan struct{}) // never-finishing pipelines wait for it
	t.Cleanup(func() { close(stuck) })
	pipelines := map[string]func(context.Context) error{
		"fails by itself": func(context.Context) error { return errors.New("boom") },
		// Drains slowly enough that a signal sent with the cancellation is
		// read during the drain.
		"drains": func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond)
			return ctx.Err()
		},
		"fails while draining": func(ctx context.Context) error {
			<-ctx.Done()
			return errors.New("commit failed")
		},
		"never finishes": func(context.Context) error { <-stuck; return nil },
	}
	cases := []struct {
		name         string
		pipeline     string
		timeout      time.Duration
		preSignalled bool
		cancelCtx    bool // cancel the parent context, as main's first signal does
		signals      int  // signals sent on run's own subscription
		wantCode     int
		wantExitCall bool
		wantLog      []string
		notLog       []string
	}{
		{name: "pipeline fails before any signal", pipeline: "fails by itself", timeout: 5 * time.Second,
			wantCode: exitError, wantLog: []string{`msg="pipeline failed" err=boom`}, notLog: []string{"shutdown requested"}},
		{name: "signal: cancel and subscription", pipeline: "drains", timeout: 5 * time.Second, cancelCtx: true, signals: 1,
			wantCode: exitOK, wantLog: []string{"shutdown requested: draining", "drained:"}, notLog: []string{"second stop signal"}},
		{name: "signal seen only by the subscription", pipeline: "drains", timeout: 5 * time.Second, signals: 1,
			wantCode: exitOK, wantLog: []string{`msg="shutdown requested: draining" signal=terminated`, "drained:"}},
		{name: "parent context cancelled without a signal", pipeline: "drains", timeout: 5 * time.Second, cancelCtx: true,
			wantCode: exitOK, wantLog: []string{"drained:"}},
		{name: "pipeline fails while draining", pipeline: "fails while draining", timeout: 5 * time.Second, cancelCtx: true, signals: 1,
			wantCode: exitError, wantLog: []string{`msg="pipeline failed" err="commit failed"`}, notLog: []string{"drained:"}},
		{name: "timeout passes", pipeline: "never finishes", timeout: 100 * time.Millisecond, cancelCtx: true, signals: 1,
			wantCode: exitError, wantLog: []string{"shutdown timeout passed", `msg=abandoned work="release: window s/0 was being released"`}},
		{name: "second signal", pipeline: "never finishes", timeout: 5 * time.Second, cancelCtx: true, signals: 2,
			wantCode: exitError, wantExitCall: true, wantLog: []string{"second stop signal", `msg=abandoned work="release: window s/0 was being released"`}},
		{name: "signal before the subscription, then one more", pipeline: "never finishes", timeout: 5 * time.Second,
			preSignalled: true, cancelCtx: true, signals: 1, wantCode: exitError, wantExitCall: true, wantLog: []string{"second stop signal"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logBuf syncBuffer
			sigs := make(chan os.Signal, 4)
			exits := make(chan int, 4)
			health := metrics.New().Health
			sd := shutdown{timeout: c.timeout, signals: sigs, preSignalled: c.preSignalled,
				exit: func(code int) { exits <- code }, health: health, log: slog.New(slog.NewTextHandler(&logBuf, nil))}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if c.cancelCtx {
				cancel()
			}
			for range c.signals {
				sigs <- syscall.SIGTERM
			}
			inFlight := func() []string { return []string{"release: window s/0 was being released"} }
			start := time.Now()
			code := sd.supervise(ctx, pipelines[c.pipeline], inFlight)
			took := time.Since(start)
			log := logBuf.String()
			if code != c.wantCode {
				t.Errorf("exit code %d, want %d; log:\n%s", code, c.wantCode, log)
			}
			select {
			case got := <-exits:
				if !c.wantExitCall || got != exitError {
					t.Errorf("exit(%d) called; want a call: %v, with %d", got, c.wantExitCall, exitError)
				}
			default:
				if c.wantExitCall {
					t.Error("exit not called")
				}
			}
			// Nothing may wait for the timeout but the timeout case, and
			// that one not much longer than it.
			if limit := min(c.timeout, time.Second) + 2*time.Second; took > limit {
				t.Errorf("supervise took %s, want under %s", took, limit)
			}
			if strings.Contains(c.name, "timeout") && took < c.timeout {
				t.Errorf("gave up after %s, before the %s timeout", took, c.timeout)
			}
			if c.cancelCtx || c.signals > 0 {
				if got := health.State(); got != metrics.Stopping {
					t.Errorf("health %v after shutdown, want stopping", got)
				}
			}
			for _, w := range c.wantLog {
				if !strings.Contains(log, w) {
					t.Errorf("log lacks %q:\n%s", w, log)
				}
			}
			for _, w := range c.notLog {
				if strings.Contains(log, w) {
					t.Errorf("log has %q:\n%s", w, log)
				}
			}
		})
	}
}
