//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
)

// The crash and paused-owner tests run pipelines as child processes: this
// test binary, re-executed into a child test (TestCrashChild,
// TestPausedChild) with a spec file named in an environment variable.

// childBase is what every child needs to rebuild its parent's cluster
// connection and configuration; the specs embed it.
type childBase struct {
	YAML     string
	Dir      string
	Prefix   string
	External bool
	Brokers  []string
	// CheckpointEvery is the release stage's checkpoint interval (see
	// checkpoints); 0: no checkpoints. Archive is where the child keeps
	// the ledger records it trims (archiveBeforeTrim).
	CheckpointEvery time.Duration
	Archive         string
}

// childBase returns the harness's part of a child's spec.
func (h *harness) childBase() childBase {
	return childBase{YAML: h.yaml, Dir: h.dir, Prefix: h.Prefix, External: h.External(), Brokers: h.Brokers, CheckpointEvery: h.checkpointEvery,
		Archive: h.archiveDir()}
}

// checkpoints returns the checkpoint settings of a pipeline run with
// checkpoints every d (none for 0: most end-to-end checks read every
// charge from the ledger, which a trim would delete; the checkpoint tests
// set d).
func checkpoints(d time.Duration) (interval time.Duration, charges int) {
	if d <= 0 {
		return -1, 0
	}
	return d, 50
}

// readChildSpec reads, in a child process, the spec its parent wrote to
// the file named by env into spec, and rebuilds the configuration from
// base. Without env it skips the test: it is a child test, run only when
// re-executed by its parent.
func readChildSpec(t *testing.T, env string, spec any, base func() childBase) (*config.Config, []plan.Stream) {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Skip("a child process of another test; runs only when re-executed by it")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, spec); err != nil {
		t.Fatal(err)
	}
	c := base()
	cfg, ps, err := parseConfig(c.YAML, c.Dir, c.Prefix, c.External)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, ps
}

// startChild writes spec to dir/name.json and starts this test binary
// re-executed into test, on the harness's clock, with the spec's path in
// env and its output in dir/name.log (which the caller closes).
func (h *harness) startChild(dir, name, test, env string, spec any) (*exec.Cmd, *os.File) {
	t := h.t
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(dir, name+".json")
	if err := os.WriteFile(specPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), env+"="+specPath, h.clockEnv())
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	return cmd, logf
}

// runChild runs a child's pipeline on its parent's clock until SIGTERM,
// failing the child test if the pipeline fails.
func runChild(t *testing.T, o pipeline.Options) {
	t.Helper()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	o.Now = clockFromEnv()
	if err := pipeline.Run(ctx, o); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
}
