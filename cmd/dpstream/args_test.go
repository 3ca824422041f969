package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

// TestUnexpectedArguments: a positional argument that a command does not
// take is a usage error (exit 2) naming it, wherever it stands, and it no
// longer swallows the flags after it. The working directory holds a valid
// pipeline.yaml, the file every command falls back to: before, `explain
// extra -c missing.yaml` explained it and exited 0, and `run other.yaml
// --brokers kafka:9092` ran it on an embedded broker.
func TestUnexpectedArguments(t *testing.T) {
	dir := t.TempDir()
	testkit.NewPipeline(ridesStream("rides.events").EventTime("").Window(time.Second, 0, 0)).
		Embedded("127.0.0.1:0", filepath.Join(dir, "kafka")).WriteFile(t, filepath.Join(dir, "pipeline.yaml"))
	t.Chdir(dir)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"run config as a word", []string{"run", "other.yaml", "--brokers", "kafka:9092"},
			[]string{`dpstream run: unexpected argument "other.yaml" (did you mean -c other.yaml?)`, "dpstream run --help"}},
		{"run word after flags", []string{"run", "--stages", "release", "extra"}, []string{`unexpected argument "extra"`}},
		{"explain extra word", []string{"explain", "extra", "-c", "missing.yaml"}, []string{`dpstream explain: unexpected argument "extra"`}},
		{"explain yml hint", []string{"explain", "p.yml"}, []string{`unexpected argument "p.yml" (did you mean -c p.yml?)`}},
		{"explain after --", []string{"explain", "-c", "pipeline.yaml", "--", "x"}, []string{`unexpected argument "x"`}},
		{"tail second word", []string{"tail", "releases", "ledger"}, []string{`dpstream tail: unexpected argument "ledger"`}},
		{"tail word after flags", []string{"tail", "releases", "--follow", "extra"}, []string{`unexpected argument "extra"`}},
		{"budget extra word", []string{"budget", "extra", "--json"}, []string{`dpstream budget: unexpected argument "extra"`}},
		{"demo windows as a word", []string{"demo", "3", "--windows", "1"}, []string{`dpstream demo: unexpected argument "3"`}},
		{"produce file as a word", []string{"produce", "events.jsonl"}, []string{`unexpected argument "events.jsonl" (did you mean --file events.jsonl?)`}},
		{"simulate input as a word", []string{"simulate", "events.csv"}, []string{`unexpected argument "events.csv" (did you mean --input events.csv?)`}},
		{"account mechanism as a word", []string{"account", "gaussian", "--laplace", "2"}, []string{`unexpected argument "gaussian"`, "give mechanisms as flags"}},
		{"bench events as a word", []string{"bench", "1000"}, []string{`dpstream bench: unexpected argument "1000"`}},
		// A bool flag takes no separate value: "false" is a stray word.
		{"tail bool flag value", []string{"tail", "releases", "--follow", "false"}, []string{`unexpected argument "false"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Nothing may start: a short deadline turns a command that ran
			// anyway into a failure rather than a hang.
			code, stdout, stderr := cliTimeout(t, 10*time.Second, c.args...)
			if code != exitConfig {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitConfig, stdout, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout not empty:\n%s", stdout)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "kafka")); !os.IsNotExist(err) {
		t.Errorf("an embedded broker was started (its data dir exists, err %v)", err)
	}
}

// TestFlagsAroundPositional: flags count before and after a command's
// positional argument (tail's topic kind). Each case ends in an error that
// only the flag's value can cause, so nothing connects.
func TestFlagsAroundPositional(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"flag after the kind", []string{"tail", "releases", "--plot", "--width", "5"}, "--width 5"},
		{"flag before the kind", []string{"tail", "--plot", "--width", "5", "releases"}, "--width 5"},
		{"config after the kind", []string{"tail", "releases", "--follow", "-c", missing}, "missing.yaml"},
		{"config before the kind", []string{"tail", "-c", missing, "releases"}, "missing.yaml"},
		{"plot of another kind", []string{"tail", "--plot", "ledger"}, "--plot draws releases only"},
		{"chunks of another kind", []string{"tail", "ledger", "--chunks"}, "--chunks applies to releases only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := cliTimeout(t, 10*time.Second, c.args...)
			if code != exitConfig || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q (stdout %q)", code, stderr, exitConfig, c.want, stdout)
			}
		})
	}
}

// TestNonsenseFlagValues: numeric flags whose value means nothing are
// usage errors (exit 2) naming the flag, before anything starts. The
// demo's temporary directory would be the first thing it creates.
func TestNonsenseFlagValues(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"demo negative windows", []string{"demo", "--windows", "-1"}, "--windows -1"},
		{"demo zero window", []string{"demo", "--window", "0"}, "--window 0s"},
		{"demo negative window", []string{"demo", "--window", "-5s"}, "--window -5s"},
		{"demo window under 1s", []string{"demo", "--window", "500ms"}, "at least 1s"},
		{"demo window not whole ms", []string{"demo", "--window", "1000500us"}, "whole number of milliseconds"},
		{"demo zero rate", []string{"demo", "--rate", "0"}, "--rate 0"},
		{"demo negative rate", []string{"demo", "--rate", "-3"}, "--rate -3"},
		{"demo print-config checks too", []string{"demo", "--print-config", "--windows", "-1"}, "--windows -1"},
		{"bench zero events", []string{"bench", "--events", "0"}, "--events 0"},
		{"bench zero partitions", []string{"bench", "--partitions", "0"}, "--partitions 0"},
		{"produce zero batch", []string{"produce", "--batch", "0"}, "--batch 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := cliTimeout(t, 10*time.Second, c.args...)
			if code != exitConfig || !strings.Contains(stderr, c.want) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d, no output and %q", code, stdout, stderr, exitConfig, c.want)
			}
		})
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

// TestDemoPrintConfig: `demo --print-config` prints a config that runs as
// it is, from another directory, after the demo's temporary directory is
// gone (before, it named a schema file inside it). The schema is inline,
// and a trip produced with it is decoded and released by `run`.
func TestDemoPrintConfig(t *testing.T) {
	tmp := t.TempDir()
	// The working directory is where the default pdp_store (and any
	// other relative default) lives: a directory of the test's own, not
	// the package's source directory.
	t.Chdir(t.TempDir())
	t.Setenv("TMPDIR", tmp)
	code, printed, stderr := cli(t.Context(), "demo", "--print-config", "--window", "1s")
	if code != exitOK || stderr != "" {
		t.Fatalf("demo --print-config: exit %d, stderr:\n%s", code, stderr)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("--print-config created temporary files: %v", ents)
	}
	if strings.Contains(printed, tmp) || strings.Contains(printed, "dpstream-demo-") {
		t.Errorf("printed config names a temporary path:\n%s", printed)
	}

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "p.yaml")
	writeFile(t, cfgPath, printed)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("printed config does not load: %v\n%s", err, printed)
	}
	st := cfg.Streams[0]
	var got, want any
	if err := json.Unmarshal([]byte(st.SchemaJSON), &got); err != nil {
		t.Fatalf("inline schema %q: %v", st.SchemaJSON, err)
	}
	if err := json.Unmarshal([]byte(schema.TripSchema()), &want); err != nil {
		t.Fatal(err)
	}
	if st.Schema != "" || !reflect.DeepEqual(got, want) {
		t.Errorf("stream schema: path %q, inline %s; want no path and schema/trip.avsc inline", st.Schema, st.SchemaJSON)
	}
	if code, _, stderr := cli(t.Context(), "explain", "-c", cfgPath); code != exitOK {
		t.Fatalf("explain -c printed config: exit %d; stderr:\n%s", code, stderr)
	}

	// run it, with only what a user in another directory would add.
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	runCtx, stopRun := context.WithCancel(t.Context())
	r := startRun(runCtx, newFakeProcess(0).env(), "-c", cfgPath, "--broker-addr", addr,
		"--data-dir", filepath.Join(dir, "data"), "--metrics-addr", metricsAddr, "--log-level", "warn")
	t.Cleanup(func() {
		stopRun()
		r.wait(t, 30*time.Second)
	})
	waitProbe(t, r, metricsAddr, "/readyz", http.StatusOK, "ready", 30*time.Second)
	trips := filepath.Join(dir, "trips.jsonl")
	now := time.Now().UnixMilli()
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, `{"rider_id":"r%d","trip_id":"t%d","ts":%d,"fare":12.5,"km":3.2,"minutes":11,"zone":"z1"}`+"\n", i, i, now)
	}
	writeFile(t, trips, b.String())
	if code, _, stderr := cliTimeout(t, 30*time.Second, "produce", "-c", cfgPath, "--broker-addr", addr, "--file", trips); code != exitOK || !strings.Contains(stderr, "0 lines rejected") {
		t.Fatalf("produce with the inline schema: exit %d; stderr:\n%s", code, stderr)
	}
	poll(t, 60*time.Second, "a release of the produced trips", &r.stderr, func() bool {
		code, stdout, _ := cliTimeout(t, 20*time.Second, "tail", "releases", "-c", cfgPath, "--broker-addr", addr)
		return code == exitOK && strings.Contains(stdout, `"status":"ok"`)
	})
}
