//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childArgsEnv carries the JSON-encoded arguments of the dpstream command
// TestDPStreamChild runs as a real process.
const childArgsEnv = "DPSTREAM_TEST_CHILD_ARGS"

// TestDPStreamChild is the child process of the tests that need a real
// process (signals, a real stdout pipe): it runs mainProcess, as main
// does, and exits with its code.
func TestDPStreamChild(t *testing.T) {
	enc := os.Getenv(childArgsEnv)
	if enc == "" {
		t.Skip("runs only as a child process of the demo cleanup tests")
	}
	var args []string
	if err := json.Unmarshal([]byte(enc), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(mainProcess(args, os.Stdout, os.Stderr))
}

// TestDemoCleanup: the demo removes its temporary broker directory on
// every exit path a process can handle. Closing its output (`dpstream demo
// | head -3`) used to kill it with SIGPIPE before its deferred cleanup ran;
// now the write fails with EPIPE and the demo stops with exit 1. SIGHUP
// (the terminal closed) used to kill it too.
func TestDemoCleanup(t *testing.T) {
	cases := []struct {
		name string
		// stop ends the demo once it has printed its first window: it
		// closes the reader of its stdout, or sends a signal.
		stop     func(p *os.Process, stdout io.Closer) error
		wantCode int
		wantErr  string
	}{
		{"stdout closed (SIGPIPE)", func(_ *os.Process, out io.Closer) error { return out.Close() }, exitError, "cannot write the output"},
		{"SIGHUP", func(p *os.Process, _ io.Closer) error { return p.Signal(syscall.SIGHUP) }, exitOK, ""},
		{"SIGTERM", func(p *os.Process, _ io.Closer) error { return p.Signal(syscall.SIGTERM) }, exitOK, ""},
		{"SIGINT", func(p *os.Process, _ io.Closer) error { return p.Signal(os.Interrupt) }, exitOK, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			args, _ := json.Marshal([]string{"demo", "--window", "1s", "--rate", "50", "--broker-addr", "127.0.0.1:0", "--metrics-addr", "off"})
			cmd := exec.Command(os.Args[0], "-test.run=^TestDPStreamChild$", "-test.timeout=5m")
			cmd.Env = append(os.Environ(), childArgsEnv+"="+string(args), "TMPDIR="+tmp)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				_ = cmd.Process.Kill()
			}()

			// Read like `head`: until the first window's header and one
			// release under it, then act.
			lines := make(chan string)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			var seen []string
			deadline := time.After(2 * time.Minute)
		read:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("demo output ended early:\n%s\nstderr:\n%s", strings.Join(seen, "\n"), stderr.String())
					}
					seen = append(seen, l)
					if len(seen) > 1 && strings.HasPrefix(seen[len(seen)-2], "window ") && strings.HasPrefix(l, "  ") {
						break read
					}
				case <-deadline:
					t.Fatalf("no window released within 2 minutes:\n%s\nstderr:\n%s", strings.Join(seen, "\n"), stderr.String())
				}
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "dpstream-demo-") {
				t.Fatalf("while running, TMPDIR holds %v, want the demo's directory", ents)
			}
			if err := c.stop(cmd.Process, out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(c.name, "SIGPIPE") {
				// Keep reading, so that only the signal stops it.
				go func() {
					for range lines {
					}
				}()
			}

			var waitErr error
			select {
			case waitErr = <-exited:
			case <-time.After(2 * time.Minute):
				t.Fatalf("demo did not exit within 2 minutes; stderr:\n%s", stderr.String())
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(waitErr, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					t.Fatalf("demo was killed by %v; stderr:\n%s", ws.Signal(), stderr.String())
				}
				code = ee.ExitCode()
			} else if waitErr != nil {
				t.Fatal(waitErr)
			}
			if code != c.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.wantCode, stderr.String())
			}
			if c.wantErr != "" && !strings.Contains(stderr.String(), c.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", c.wantErr, stderr.String())
			}
			if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
				t.Errorf("the demo left %v in TMPDIR", ents)
			}
		})
	}
}
