package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/testkit"
)

// TestRunDataDirLocked: a second `run` (and a `demo --data-dir`) on the
// data directory of a running `run`'s embedded broker fails before it
// starts anything, with exit 1 and an error naming the directory, the
// holder's pid and the way out; the first keeps working. Without the lock
// both started, and the directory ended with an inconsistent ledger and
// accountant pair.
func TestRunDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	// The working directory is where the default pdp_store (and any
	// other relative default) lives: a directory of the test's own, not
	// the package's source directory.
	t.Chdir(t.TempDir())
	dataDir := filepath.Join(dir, "kafka")
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	cfgPath := testkit.NewPipeline(ridesStream("rides.events").Partitions(1).Budget(100, 1e-6)).
		Embedded(addr, dataDir).WriteFile(t, filepath.Join(dir, "pipeline.yaml"))

	runCtx, stopRun := context.WithCancel(t.Context())
	defer stopRun()
	first := startRun(runCtx, newFakeProcess(0).env(), "-c", cfgPath, "--metrics-addr", metricsAddr, "--log-level", "warn")
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stopRun()
			first.wait(t, 30*time.Second)
		}
	})
	waitProbe(t, first, metricsAddr, "/readyz", http.StatusOK, "ready", 30*time.Second)

	abs, err := filepath.Abs(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := []string{"embedded broker data directory in use", abs, fmt.Sprintf("locked by process %d", os.Getpid()), "Stop that process first", "--data-dir"}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"second run", []string{"run", "-c", cfgPath}},
		// The demo puts its broker in <data-dir>/kafka.
		{"demo on the same directory", []string{"demo", "--data-dir", dir}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Addresses of its own, so that only the directory clashes,
			// and so that what it started can be seen.
			otherBroker, otherMetrics := freeAddr(t), freeAddr(t)
			args := append(c.args, "--broker-addr", otherBroker, "--metrics-addr", otherMetrics)
			// On a clash nothing is started, so this returns at once; a
			// second process that did start would run until the deadline.
			code, stdout, stderr := cliTimeout(t, 60*time.Second, args...)
			if code != exitError {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitError, stdout, stderr)
			}
			for _, w := range wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for what, a := range map[string]string{"broker": otherBroker, "metrics server": otherMetrics} {
				if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
					c.Close()
					t.Errorf("its %s is listening on %s after the clash", what, a)
				}
			}
		})
	}

	// The first still serves: it is ready, and releases a window of new
	// events.
	if code, body, err := probe(metricsAddr, "/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("first run after the clashes: /readyz %d %q (%v), want 200", code, body, err)
	}
	events := filepath.Join(dir, "events.jsonl")
	now := time.Now().UnixMilli()
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, `{"user":"u%d","ts":%d}`+"\n", i, now)
	}
	writeFile(t, events, b.String())
	if code, _, stderr := cliTimeout(t, 30*time.Second, "produce", "-c", cfgPath, "--file", events); code != exitOK {
		t.Fatalf("produce to the first run: exit %d; stderr:\n%s", code, stderr)
	}
	poll(t, 60*time.Second, "a release from the first run", &first.stderr, func() bool {
		for _, r := range tailJSON(t, "releases", cfgPath) {
			if r["status"] == "ok" {
				return true
			}
		}
		return false
	})
	stopRun()
	stopped = true
	if code := first.wait(t, 30*time.Second); code != exitOK {
		t.Errorf("first run exited %d after cancellation, want 0; stderr:\n%s", code, first.stderr.String())
	}
}
