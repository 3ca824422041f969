package kafkaio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// lockChildDirEnv names the data directory TestEmbeddedLockChild locks
// when the test binary runs as that child process.
const lockChildDirEnv = "DPSTREAM_TEST_LOCK_CHILD_DIR"

// checkLocked checks that err is the locked-directory error for dir and
// the holder pid, with the way out.
func checkLocked(t *testing.T, err error, dir string, pid int) {
	t.Helper()
	if !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("second broker on %s: err %v, want ErrDataDirLocked", dir, err)
	}
	abs, _ := filepath.Abs(dir)
	for _, want := range []string{abs, fmt.Sprintf("process %d", pid), "--data-dir", "embedded.data_dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// roundTrip writes a record to a fresh topic of the broker and reads it
// back: the broker serves.
func roundTrip(t *testing.T, e *Embedded, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn := e.Conn()
	if err := conn.EnsureTopics(ctx, []TopicSpec{{Name: topic, Partitions: 1}}); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	w := conn.NewWriter(topic)
	err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("v")})
	w.Close()
	if err != nil {
		t.Fatalf("write %s: %v", topic, err)
	}
	if n, err := count(ctx, e, topic); err != nil || n != 1 {
		t.Fatalf("read %s: %d records, err %v; want the one written", topic, n, err)
	}
}

// count returns the number of records in topic.
func count(ctx context.Context, e *Embedded, topic string) (int, error) {
	n := 0
	err := e.Conn().ReadAll(ctx, topic, func(kafka.Message) error { n++; return nil })
	return n, err
}

// TestEmbeddedDataDirLock: a second broker on a data directory that a
// broker holds fails at once, naming the directory and the holder's pid,
// and leaves the first one serving; after Close the directory is free.
func TestEmbeddedDataDirLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kafka")
	first, err := StartEmbedded("127.0.0.1:0", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			first.Close()
		}
	}()
	roundTrip(t, first, "before")

	second, err := StartEmbedded("127.0.0.1:0", dir, nil)
	if err == nil {
		second.Close()
		t.Fatalf("a second broker started on %s, which the first holds", dir)
	}
	checkLocked(t, err, dir, os.Getpid())
	roundTrip(t, first, "after")

	first.Close()
	closed = true
	third, err := StartEmbedded("127.0.0.1:0", dir, nil)
	if err != nil {
		t.Fatalf("after Close, the directory is still locked: %v", err)
	}
	defer third.Close()
	// The first broker's topics were saved and are served again.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if n, err := count(ctx, third, "after"); err != nil || n != 1 {
		t.Errorf("topic of the first broker after restart: %d records, err %v", n, err)
	}
}

// TestEmbeddedDataDirLockDies: the lock is the operating system's, so a
// holder killed with SIGKILL (no Close, no deferred code) releases it, and
// a stale lock file left behind locks nothing.
func TestEmbeddedDataDirLockDies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kafka")
	child := exec.Command(os.Args[0], "-test.run=^TestEmbeddedLockChild$", "-test.timeout=5m")
	child.Env = append(os.Environ(), lockChildDirEnv+"="+dir)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		_ = child.Process.Kill()
		<-exited
	}()
	locked := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "locked ") {
				locked <- l
			}
		}
		exited <- child.Wait()
	}()
	select {
	case <-locked:
	case err := <-exited:
		exited <- err
		t.Fatalf("child exited before it locked the directory: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("child did not lock the directory within 2 minutes")
	}

	if e, err := StartEmbedded("127.0.0.1:0", dir, nil); err == nil {
		e.Close()
		t.Fatalf("a broker started on %s, which the child holds", dir)
	} else {
		checkLocked(t, err, dir, child.Process.Pid)
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		exited <- nil
	case <-time.After(2 * time.Minute):
		t.Fatal("killed child did not exit within 2 minutes")
	}
	if pid := readLockPID(filepath.Join(dir, LockFile)); pid != strconv.Itoa(child.Process.Pid) {
		t.Errorf("lock file holds pid %q, want the dead child's %d (it is left behind)", pid, child.Process.Pid)
	}
	e, err := StartEmbedded("127.0.0.1:0", dir, nil)
	if err != nil {
		t.Fatalf("the directory of a killed broker is still locked: %v", err)
	}
	defer e.Close()
	roundTrip(t, e, "after-kill")
}

// TestEmbeddedLockChild is TestEmbeddedDataDirLockDies's child process:
// it starts a broker on the directory, says so, and waits to be killed.
func TestEmbeddedLockChild(t *testing.T) {
	dir := os.Getenv(lockChildDirEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestEmbeddedDataDirLockDies")
	}
	e, err := StartEmbedded("127.0.0.1:0", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fmt.Printf("locked %d\n", os.Getpid())
	time.Sleep(5 * time.Minute)
}
