package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/testkit"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a running
// command (its logger, stage goroutines) and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cli runs one command through dispatch, as main does, and returns its exit
// code and output.
func cli(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut syncBuffer
	code = dispatch(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// cliTimeout is cli with a deadline, for commands that talk to a broker.
func cliTimeout(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	return cli(ctx, args...)
}

// configDir is the repository's testdata/config, seen from this package's
// directory (go test runs in it).
var configDir = filepath.Join("..", "..", "testdata", "config")

func TestHelp(t *testing.T) {
	// The flags each command must document: its interface as the brief
	// and the commands' descriptions define it.
	conn := []string{"c", "config", "brokers"}
	logf := []string{"log-level", "log-format"}
	documented := []struct {
		cmd   string
		flags []string
	}{
		{"run", append(append([]string{"broker-addr", "data-dir", "stages", "metrics-addr"}, conn...), logf...)},
		{"demo", append([]string{"windows", "window", "rate", "broker-addr", "data-dir", "metrics-addr", "print-config", "seed"}, logf...)},
		{"produce", append([]string{"stream", "file", "input-format", "batch"}, conn...)},
		{"tail", append([]string{"follow", "f", "topic", "chunks"}, conn...)},
		{"budget", conn},
		{"explain", []string{"c", "config"}},
		{"bench", []string{"events", "partitions"}},
	}
	cmdFlags := map[string][]string{}
	for _, d := range documented {
		cmdFlags[d.cmd] = d.flags
	}
	type tc struct {
		name  string
		args  []string
		cmd   string // command whose usage must be printed
		flags []string
	}
	var cases []tc
	for _, d := range documented {
		cases = append(cases,
			tc{d.cmd + " --help", []string{d.cmd, "--help"}, d.cmd, d.flags},
			tc{d.cmd + " -h", []string{d.cmd, "-h"}, d.cmd, d.flags},
			tc{"help " + d.cmd, []string{"help", d.cmd}, d.cmd, d.flags},
		)
	}
	// Every registered command, including ones added after this test was
	// written, answers --help with its usage on stdout.
	for _, c := range commands() {
		if _, ok := cmdFlags[c.name]; !ok {
			cases = append(cases, tc{c.name + " --help", []string{c.name, "--help"}, c.name, nil})
		}
	}
	// tail's first argument is the topic kind; --help after it works too.
	cases = append(cases, tc{"tail releases --help", []string{"tail", "releases", "--help"}, "tail", cmdFlags["tail"]})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := cli(t.Context(), c.args...)
			if code != exitOK {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
			}
			if stderr != "" {
				t.Errorf("help wrote to stderr:\n%s", stderr)
			}
			if !strings.HasPrefix(stdout, "Usage: dpstream "+c.cmd+" ") {
				t.Errorf("stdout does not start with the usage line of %q:\n%s", c.cmd, stdout)
			}
			for _, f := range c.flags {
				if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(f) + `\b`).MatchString(stdout) {
					t.Errorf("usage does not document flag -%s:\n%s", f, stdout)
				}
			}
			// run rejects --stages both (see TestUsageErrors), so its help
			// must not offer it as a value.
			if c.cmd == "run" && strings.Contains(stdout, "release, or both") {
				t.Errorf("run's --stages help offers the rejected value \"both\":\n%s", stdout)
			}
		})
	}

	t.Run("help", func(t *testing.T) {
		for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
			code, stdout, stderr := cli(t.Context(), args...)
			if code != exitOK || stderr != "" {
				t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", args, code, stderr)
			}
			for _, c := range commands() {
				if !regexp.MustCompile(`(?m)^  ` + c.name + ` +\S`).MatchString(stdout) {
					t.Errorf("%v: command %s is not listed with a summary:\n%s", args, c.name, stdout)
				}
			}
			for _, d := range documented {
				if !strings.Contains(stdout, "\n  "+d.cmd+" ") {
					t.Errorf("%v: documented command %s missing:\n%s", args, d.cmd, stdout)
				}
			}
		}
	})
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantStderr []string
	}{
		{"no command", nil, []string{"Usage:", "Commands:"}},
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "commands: ", "(see 'dpstream help')"}},
		{"help for unknown command", []string{"help", "frobnicate"}, []string{`unknown command "frobnicate"`, "commands: "}},
		{"run bad flag", []string{"run", "--no-such-flag"}, []string{"flag provided but not defined: -no-such-flag", "Usage: dpstream run"}},
		{"demo bad flag", []string{"demo", "--no-such-flag"}, []string{"not defined: -no-such-flag"}},
		{"produce bad flag", []string{"produce", "--no-such-flag"}, []string{"not defined: -no-such-flag"}},
		{"tail bad flag", []string{"tail", "releases", "--no-such-flag"}, []string{"not defined: -no-such-flag"}},
		{"tail bad flag first", []string{"tail", "--no-such-flag"}, []string{"not defined: -no-such-flag"}},
		{"budget bad flag", []string{"budget", "--no-such-flag"}, []string{"not defined: -no-such-flag"}},
		{"explain bad flag", []string{"explain", "--no-such-flag"}, []string{"not defined: -no-such-flag"}},
		{"bench bad flag", []string{"bench", "--no-such-flag"}, []string{"not defined: -no-such-flag"}},
		{"bench bad value", []string{"bench", "--events", "many"}, []string{`invalid value "many" for flag -events`}},
		{"demo window too short", []string{"demo", "--window", "500ms"}, []string{"--window 500ms: the window must be at least 1s"}},
		{"run unknown stage", []string{"run", "--stages", "accumulate,publish"}, []string{`unknown stage "publish"`}},
		// The help text must not offer a value the flag rejects.
		{"run stages both", []string{"run", "--stages", "both"}, []string{`unknown stage "both"`}},
		{"run bad log level", []string{"run", "--log-level", "loud"}, []string{`--log-level "loud"`}},
		{"tail without topic kind", []string{"tail"}, []string{"which topic? releases, accountant, ledger or deadletter"}},
		{"tail unknown topic kind", []string{"tail", "partials", "-c", filepath.Join(configDir, "pipeline.yaml")},
			[]string{`unknown topic kind "partials"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Nothing here may reach a broker: a short deadline turns an
			// accidental connection attempt into a fast failure.
			code, stdout, stderr := cliTimeout(t, 5*time.Second, c.args...)
			if code != exitConfig {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitConfig, stdout, stderr)
			}
			for _, w := range c.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(c.name, "unknown command") {
				checkCommandList(t, stderr)
			}
		})
	}
}

// checkCommandList checks the "commands: a, b, ..." line of an unknown
// command error: sorted, and naming at least every documented command.
func checkCommandList(t *testing.T, stderr string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^commands: ([a-z, ]+) \(`).FindStringSubmatch(stderr)
	if m == nil {
		t.Errorf("no command list:\n%s", stderr)
		return
	}
	names := strings.Split(m[1], ", ")
	if !slices.IsSorted(names) {
		t.Errorf("command list not sorted: %v", names)
	}
	for _, want := range []string{"bench", "budget", "demo", "explain", "produce", "run", "simulate", "tail"} {
		if !slices.Contains(names, want) {
			t.Errorf("command list %v lacks %s", names, want)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	// A release whose single window costs more than the whole budget.
	neverFit := filepath.Join(dir, "never_fit.yaml")
	writeFile(t, neverFit, `streams:
  - name: trips
    topic: trips.events
    format: json
    privacy_unit: rider_id
    window: {size: 1h}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 1, delta: 1e-6}
    releases:
      - {name: small, kind: count, epsilon: 0.5}
      - {name: greedy, kind: count, epsilon: 2}
metrics: {addr: "off"}
`)
	badEpsilon := filepath.Join(configDir, "bad_epsilon.yaml")
	// Lines and fields of bad_epsilon.yaml, read off the file.
	badEpsilonWant := []string{
		"nothing was started",
		badEpsilon + ":10: streams[0].budget.epsilon: must be > 0",
		badEpsilon + ":13: streams[0].releases[0].epsilon: must be > 0",
		badEpsilon + ":15: streams[0].releases[2].epsilon: must be finite",
		badEpsilon + ":17: streams[0].releases[4].epsilon: must be a number",
	}
	neverFitWant := []string{
		"nothing was started",
		neverFit + `:11: streams[0].releases[1].epsilon: release "greedy" can never fit`,
	}
	cases := []struct {
		name       string
		cmd        string
		path       string
		wantStderr []string
		notStderr  string
	}{
		{"run bad epsilon", "run", badEpsilon, badEpsilonWant, ""},
		{"explain bad epsilon", "explain", badEpsilon, badEpsilonWant, ""},
		{"run never fits", "run", neverFit, neverFitWant, `"small"`},
		{"explain never fits", "explain", neverFit, neverFitWant, `"small"`},
		{"run missing file", "run", filepath.Join(dir, "nope.yaml"), []string{"nope.yaml"}, ""},
		{"explain missing file", "explain", filepath.Join(dir, "nope.yaml"), []string{"nope.yaml"}, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{c.cmd, "-c", c.path}
			dataDir := filepath.Join(dir, fmt.Sprintf("data%d", i))
			if c.cmd == "run" {
				args = append(args, "--broker-addr", "127.0.0.1:0", "--data-dir", dataDir, "--metrics-addr", "off")
			}
			code, stdout, stderr := cliTimeout(t, 10*time.Second, args...)
			if code != exitConfig {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitConfig, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty on a config error:\n%s", stdout)
			}
			for _, w := range c.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if c.notStderr != "" && strings.Contains(stderr, c.notStderr) {
				t.Errorf("stderr blames a valid release (%s):\n%s", c.notStderr, stderr)
			}
			// Nothing started: the embedded broker would have created its
			// data directory.
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Errorf("data dir %s exists (err %v): the broker was started despite the config error", dataDir, err)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	code, stdout, stderr := cli(t.Context(), "explain", "-c", filepath.Join(configDir, "pipeline.yaml"))
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	// Hand calibration from testdata/config/pipeline.yaml, L =
	// max_events_per_window = 4, under add/remove of one rider (all of
	// their ≤ L events in the window):
	//   count:     Δ1 = L (each event adds 1),              b = Δ1/ε
	//   sum [0,C]: Δ1 = L·C (each clamped value ≤ C),       b = Δ1/ε
	//   histogram: Δ1 = L (each event moves one bin by 1),  b = Δ1/ε
	//   mean:      Gaussian on count Δ2 = L and on the centered sum
	//              Δ2 = L·(hi-lo)/2 (values centred at the midpoint).
	const L, eps = 4.0, 0.1
	rows := []struct {
		release string
		want    []string
	}{
		{"trip_count", []string{"count", fmt.Sprintf("count Δ1=%g", L), fmt.Sprintf("discrete Laplace(t=%g)", L/eps)}},
		{"fare_total", []string{"sum of fare in [0, 120]", fmt.Sprintf("sum Δ1=%g", L*120), fmt.Sprintf("discrete Laplace(t=%g)", L*120/eps)}},
		{"km_mean", []string{"mean of km in [0, 40]", fmt.Sprintf("count Δ2=%g", L), fmt.Sprintf("centered_sum Δ2=%g", L*(40-0)/2), "discrete Gaussian(σ="}},
		{"fare_hist", []string{"histogram 24 bins on [0, 120]", fmt.Sprintf("bins Δ1=%g", L), fmt.Sprintf("discrete Laplace(t=%g)", L/eps)}},
	}
	lines := strings.Split(stdout, "\n")
	if !strings.HasPrefix(stdout, "stream trips  (topic trips.events, unit rider_id, window 1h0m0s, ≤ 4 events per unit per window)") {
		t.Errorf("first line does not describe stream trips:\n%s", stdout)
	}
	if !strings.Contains(stdout, "budget ε=10 at δ=1e-06 per 24h0m0s") {
		t.Errorf("budget line missing:\n%s", stdout)
	}
	for _, r := range rows {
		var found []string
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && f[0] == r.release {
				found = append(found, l)
			}
		}
		if len(found) != 1 {
			t.Errorf("release %s: %d rows, want 1:\n%s", r.release, len(found), stdout)
			continue
		}
		for _, w := range r.want {
			if !strings.Contains(found[0], w) {
				t.Errorf("release %s: row lacks %q: %s", r.release, w, found[0])
			}
		}
		// A Laplace release alone costs exactly its configured ε per window.
		if strings.Contains(found[0], "Laplace") && !regexp.MustCompile(`\s`+regexp.QuoteMeta(strconv.FormatFloat(eps, 'g', -1, 64))+`\s`).MatchString(found[0]) {
			t.Errorf("release %s: ε per window %g not shown: %s", r.release, eps, found[0])
		}
	}
	if !strings.Contains(stdout, "all releases: ε=") {
		t.Errorf("summary line missing:\n%s", stdout)
	}
}

func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	code, stdout, stderr := cli(ctx, "demo", "--windows", "2", "--window", "1s", "--broker-addr", "127.0.0.1:0", "--metrics-addr", "off", "--rate", "200")
	if ctx.Err() != nil {
		t.Fatalf("demo did not finish within 30s (took %s); stdout:\n%s\nstderr:\n%s", time.Since(start), stdout, stderr)
	}
	if code != exitOK {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// The demo config's releases, in the order the release stage publishes
	// them within a window.
	releases := []string{"trips", "fare_mean", "km_hist", "fare_hist", "km_density", "km_by_min", "zone_trips"}
	headers := 0
	perWindow := map[int][]string{}
	for _, l := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(l, "window "):
			headers++
		case headers > 0 && strings.HasPrefix(l, "  "):
			f := strings.Fields(l)
			perWindow[headers] = append(perWindow[headers], f[0])
			if !strings.Contains(l, "ε spent") {
				t.Errorf("release line without budget: %q", l)
			}
		}
	}
	if headers != 2 {
		t.Fatalf("%d window headers, want 2:\n%s", headers, stdout)
	}
	for w := 1; w <= 2; w++ {
		if got := strings.Join(perWindow[w], ","); got != strings.Join(releases, ",") {
			t.Errorf("window %d: release lines %s, want one each of %v:\n%s", w, got, releases, stdout)
		}
	}
	if !strings.Contains(stdout, "2 windows released") {
		t.Errorf("no closing summary:\n%s", stdout)
	}
	// The per-key count says how many zones it released (at 200 trips/s
	// in 1 s windows even the busiest zone has too few riders to be sure
	// of selection, so the number is not checked).
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "zone_trips" && !strings.Contains(l, "refused") && !strings.Contains(l, " keys") {
			t.Errorf("per-key line without its keys: %q", l)
		}
	}
	// The two-field histogram shows one marginal sparkline per field and
	// its synthetic rows.
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "km_by_min" && !strings.Contains(l, "refused") {
			if !strings.Contains(l, " km ") || !strings.Contains(l, " minutes ") || !strings.Contains(l, "3 synthetic rows") {
				t.Errorf("two-field histogram line lacks its marginals or samples: %q", l)
			}
		}
	}
}

// TestRoundTrip drives the whole CLI against one `run` process: produce
// JSON lines and CSV, then read every topic back with tail and budget.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	const (
		stream = "rides"
		topic  = "cli.rides"
		base   = int64(1_750_000_000_000) // window-aligned, long past: windows close by event time
	)
	// The stream starts at base: the events are long past.
	cfgPath := testkit.NewPipeline(ridesStream(topic).Partitions(2).Start(time.UnixMilli(base)).Budget(20, 1e-6).Releases(
		testkit.Histogram("h", "v", 0, 10, 5).Epsilon(0.5))).
		Embedded(addr, filepath.Join(dir, "kafka")).PDPStore(filepath.Join(dir, "pdp")).
		WriteFile(t, filepath.Join(dir, "pipeline.yaml"))

	// Windows 0-2 as JSON lines; 8 units so both partitions get events.
	var jsonl strings.Builder
	jsonEvents := 0
	for w := int64(0); w < 3; w++ {
		for i := int64(0); i < 16; i++ {
			fmt.Fprintf(&jsonl, `{"user":"u%d","ts":%d,"v":%d}`+"\n", i%8, base+w*1000+i*50, i%10)
			jsonEvents++
		}
	}
	jsonlPath := filepath.Join(dir, "events.jsonl")
	writeFile(t, jsonlPath, jsonl.String())
	// Window 3 as CSV with a header; later than every JSON event, so not late.
	csvPath := filepath.Join(dir, "events.csv")
	writeFile(t, csvPath, fmt.Sprintf("user,ts,v\nu1,%d,2.5\nu2,%d,7\nu3,%d,9.5\n", base+3000, base+3100, base+3200))
	const csvEvents = 3
	windows := []int64{base, base + 1000, base + 2000, base + 3000}
	wantIDs := map[string]bool{}
	for _, ws := range windows {
		for _, r := range []string{"n", "h"} {
			wantIDs[fmt.Sprintf("%s/%s/%d", stream, r, ws)] = true
		}
	}

	runCtx, stopRun := context.WithCancel(t.Context())
	var runOut, runErr syncBuffer
	runDone := make(chan int, 1)
	go func() {
		runDone <- dispatch(runCtx, []string{"run", "-c", cfgPath, "--log-level", "warn"}, &runOut, &runErr)
	}()
	runCode, runExited := 0, false
	waitRun := func(d time.Duration) bool {
		if runExited {
			return true
		}
		select {
		case runCode = <-runDone:
			runExited = true
		case <-time.After(d):
		}
		return runExited
	}
	t.Cleanup(func() {
		stopRun()
		waitRun(15 * time.Second)
	})

	// Wait for the embedded broker.
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if waitRun(50 * time.Millisecond) {
			t.Fatalf("run exited with %d before its broker listened; stderr:\n%s", runCode, runErr.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker on %s not listening after 15s: %v; run stderr:\n%s", addr, err, runErr.String())
		}
	}

	// Produce promptly: a partition that stays empty for idle_timeout after
	// assignment follows the wall clock, and these old events would be late.
	code, _, stderr := cliTimeout(t, 20*time.Second, "produce", "-c", cfgPath, "--file", jsonlPath)
	if code != exitOK || !strings.Contains(stderr, fmt.Sprintf("produced %d records to %s", jsonEvents, topic)) || !strings.Contains(stderr, "0 lines rejected") {
		t.Fatalf("produce jsonl: exit %d; stderr:\n%s", code, stderr)
	}
	code, _, stderr = cliTimeout(t, 20*time.Second, "produce", "-c", cfgPath, "--file", csvPath)
	if code != exitOK || !strings.Contains(stderr, fmt.Sprintf("produced %d records to %s", csvEvents, topic)) {
		t.Fatalf("produce csv: exit %d; stderr:\n%s", code, stderr)
	}
	// produce rejects malformed lines itself, so send garbage directly.
	garbage := []byte("\x00\xffnot json")
	w := kafkaio.Plaintext([]string{addr}).NewWriter(topic)
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	err := w.WriteMessages(wctx, kafka.Message{Key: []byte("u1"), Value: garbage})
	wcancel()
	w.Close()
	if err != nil {
		t.Fatalf("write garbage: %v", err)
	}

	// tail releases: every window's releases, as JSON lines.
	var releases []map[string]any
	poll(t, 30*time.Second, "releases of windows 0-3", &runErr, func() bool {
		releases = tailJSON(t, "releases", cfgPath)
		got := map[string]bool{}
		for _, r := range releases {
			got[fmt.Sprint(r["release_id"])] = true
		}
		for id := range wantIDs {
			if !got[id] {
				return false
			}
		}
		return true
	})
	seen := map[string]int{}
	for _, r := range releases {
		id := fmt.Sprint(r["release_id"])
		seen[id]++
		ws, _ := r["window_start"].(float64)
		we, _ := r["window_end"].(float64)
		if want := fmt.Sprintf("%v/%v/%d", r["stream"], r["release"], int64(ws)); id != want {
			t.Errorf("release id %q, want stream/release/window_start = %q", id, want)
		}
		// Windows after the data's keep closing, empty, while the stream
		// is idle (the release schedule must not depend on the data);
		// nothing may precede it or be misaligned.
		if !wantIDs[id] && (int64(ws) < base+4000 || (int64(ws)-base)%1000 != 0) {
			t.Errorf("unexpected release %s", id)
		}
		if we-ws != 1000 {
			t.Errorf("%s: window [%v, %v) is not 1s", id, ws, we)
		}
		if r["status"] != "ok" {
			t.Errorf("%s: status %v, want ok", id, r["status"])
		}
		switch r["release"] {
		case "n":
			if _, ok := r["value"].(float64); !ok {
				t.Errorf("%s: count without a value: %v", id, r)
			}
		case "h":
			if nc, _ := r["noisy_counts"].([]any); len(nc) != 5 {
				t.Errorf("%s: histogram has %d noisy counts, want 5 bins", id, len(nc))
			}
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("release %s printed %d times, want once", id, n)
		}
	}

	// tail ledger: one valid charge per release, payload decoded, after
	// the release instance's epoch marker and the stream's start (or the
	// checkpoint that stands for them).
	charges := func() []map[string]any {
		var out []map[string]any
		for _, l := range tailJSON(t, "ledger", cfgPath) {
			if l["type"] == "charge" {
				out = append(out, l)
			}
		}
		return out
	}
	poll(t, 10*time.Second, "ledger charges", &runErr, func() bool { return len(charges()) >= len(wantIDs) })
	types := map[any]int{}
	for _, l := range tailJSON(t, "ledger", cfgPath) {
		types[l["type"]]++
	}
	// The release instance's epoch marker, or the checkpoint that
	// summarizes it once the ledger was trimmed.
	if types["epoch"] == 0 && types["checkpoint"] == 0 {
		t.Errorf("tail ledger shows record types %v, want an epoch marker or a checkpoint", types)
	}
	for _, l := range charges() {
		id := fmt.Sprint(l["release_id"])
		if l["valid"] != true || l["epoch"] == "" {
			t.Errorf("ledger %s: valid %v epoch %v, want a valid charge with an epoch", id, l["valid"], l["epoch"])
		}
		p, ok := l["payload"].(map[string]any)
		if !ok {
			t.Errorf("ledger %s: payload is not a decoded release: %v", id, l["payload"])
			continue
		}
		if p["release_id"] != id || p["status"] != l["status"] {
			t.Errorf("ledger %s: payload release_id %v status %v, want %s %v", id, p["release_id"], p["status"], id, l["status"])
		}
		if ch, _ := l["charges"].([]any); l["status"] == "ok" && len(ch) == 0 {
			t.Errorf("ledger %s: ok without charges", id)
		}
	}

	// tail accountant: the latest state of the stream counts every charge.
	var lastState map[string]any
	poll(t, 10*time.Second, "accountant state with every charge", &runErr, func() bool {
		for _, s := range tailJSON(t, "accountant", cfgPath) {
			if s["stream"] == stream {
				lastState = s
			}
		}
		n, _ := lastState["releases_charged"].(float64)
		return n >= float64(len(wantIDs))
	})
	if spent, _ := lastState["epsilon_spent"].(float64); spent <= 0 || spent > 20 {
		t.Errorf("accountant: epsilon_spent %v, want in (0, 20]", lastState["epsilon_spent"])
	}

	// tail deadletter: the garbage record, with its reason and bytes.
	var dead []map[string]any
	poll(t, 10*time.Second, "the garbage record in the dead-letter topic", &runErr, func() bool {
		dead = tailJSON(t, "deadletter", cfgPath)
		return len(dead) > 0
	})
	if len(dead) != 1 {
		t.Errorf("%d dead letters, want 1 (only the garbage record is bad): %v", len(dead), dead)
	}
	d := dead[0]
	if d["reason"] != "undecodable" || d["stream"] != stream || d["topic"] != topic || d["key"] != "u1" {
		t.Errorf("dead letter %v: want reason undecodable, stream %s, topic %s, key u1", d, stream, topic)
	}
	if v, err := base64.StdEncoding.DecodeString(fmt.Sprint(d["value"])); d["value_encoding"] != "base64" || err != nil || !bytes.Equal(v, garbage) {
		t.Errorf("dead letter value %v (%v) does not round-trip to the garbage bytes", d["value"], d["value_encoding"])
	}

	// budget: a right-aligned table with a row for the stream.
	code, stdout, stderr := cliTimeout(t, 20*time.Second, "budget", "-c", cfgPath)
	if code != exitOK {
		t.Fatalf("budget: exit %d; stderr:\n%s", code, stderr)
	}
	var row []string
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == stream {
			row = f
		}
	}
	// stream period charged refused spent δ budget remaining, then the
	// capacity-bounded figures: linear KL (unrestricted KL)
	if len(row) < 10 {
		t.Fatalf("budget: no row of 8 columns and the KL figures for %s:\n%s", stream, stdout)
	}
	lin, err1 := strconv.ParseFloat(row[8], 64)
	kl, err2 := strconv.ParseFloat(strings.Trim(row[9], "(),"), 64)
	if err1 != nil || err2 != nil || !(lin > 0 && lin <= kl*(1+1e-3)) {
		t.Errorf("budget: linear KL %q and KL %q, want 0 < linear <= KL:\n%s", row[8], row[9], stdout)
	}
	charged, err := strconv.Atoi(row[2])
	if err != nil || charged <= 0 {
		t.Errorf("budget: charged %q, want > 0:\n%s", row[2], stdout)
	}
	if charged < len(wantIDs) {
		t.Errorf("budget: charged %d, want ≥ %d (one per release and window, and later idle windows)", charged, len(wantIDs))
	}
	spent, err1 := strconv.ParseFloat(row[4], 64)
	total, err2 := strconv.ParseFloat(row[6], 64)
	remaining, err3 := strconv.ParseFloat(row[7], 64)
	if err1 != nil || err2 != nil || err3 != nil || total != 20 || spent <= 0 || abs(spent+remaining-total) > 1e-3 {
		t.Errorf("budget: spent %q + remaining %q should be the budget %q = 20:\n%s", row[4], row[7], row[6], stdout)
	}

	stopRun()
	if !waitRun(15 * time.Second) {
		t.Fatal("run did not stop within 15s of cancellation")
	}
	if runCode != exitOK {
		t.Errorf("run exited %d after cancellation, want 0; stderr:\n%s", runCode, runErr.String())
	}
}

// tailJSON runs `tail what -c cfg` and decodes its JSON lines.
func tailJSON(t *testing.T, what, cfgPath string) []map[string]any {
	t.Helper()
	code, stdout, stderr := cliTimeout(t, 20*time.Second, "tail", what, "-c", cfgPath)
	if code != exitOK {
		t.Fatalf("tail %s: exit %d; stderr:\n%s", what, code, stderr)
	}
	if stderr != "" {
		t.Errorf("tail %s: stderr:\n%s", what, stderr)
	}
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("tail %s: line is not a JSON object: %v: %q", what, err, sc.Text())
		}
		out = append(out, v)
	}
	return out
}

// poll calls cond until it is true, failing after timeout with the run's
// log.
func poll(t *testing.T, timeout time.Duration, what string, runLog *syncBuffer, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; run stderr:\n%s", timeout, what, runLog.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// ridesStream is the stream of most CLI tests: JSON events of unit user,
// their time in ts, at most 3 a unit and window of 1s, and a count of
// ε = 0.5.
func ridesStream(topic string) *testkit.Stream {
	return testkit.NewStream("rides", topic).MaxEvents(3).Releases(testkit.Count("n").Epsilon(0.5))
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
