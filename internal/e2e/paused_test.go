//go:build unix

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/stages/release"
)

// The paused-owner test runs two release instances as child processes (this
// test binary, re-executed into TestPausedChild) beside one in-process
// accumulate instance. Whenever a child owns the release stage it stops
// itself (SIGSTOP) at a chosen step of the release protocol; the parent
// continues it (SIGCONT) only after the consumer group's session timeout
// has passed, so the other child has taken ownership in the meantime, and
// the continued child resumes in the middle of a release it no longer owns.
// DESIGN invariant 8 must hold: at most one payload per release id on the
// releases topic, every published payload a valid ledger charge, the
// budget counting exactly the valid charges, and no release lost.

// pausedChildEnv names the file with a child's pausedSpec.
const pausedChildEnv = "DPSTREAM_PAUSED_CHILD"

// pausedSessionTimeout is the children's session timeout; a pause lasts
// longer than it.
const pausedSessionTimeout = 3 * time.Second

// pausedCheckpointEvery is how often TestPausedOwner's children checkpoint
// and trim their ledger partitions.
const pausedCheckpointEvery = 700 * time.Millisecond

// pausePoint is one pause of a child: at the Hit-th call of failpoint Step
// counted from the previous pause's end (or from the start).
type pausePoint struct {
	Step string
	Hit  int
}

// pausedSpec is what a child runs.
type pausedSpec struct {
	Name string
	childBase
	// Markers is the directory where the child writes "<name>-<k>" just
	// before it stops itself for its k-th pause.
	Markers string
	Pauses  []pausePoint
	// Unfenced breaks the protocol for the negative test: the child
	// publishes each release right after its ledger append, without
	// reading it back.
	Unfenced bool
}

// TestPausedChild is the child process of the paused-owner tests; without
// DPSTREAM_PAUSED_CHILD it does nothing.
func TestPausedChild(t *testing.T) {
	var spec pausedSpec
	cfg, ps := readChildSpec(t, pausedChildEnv, &spec, func() childBase { return spec.childBase })
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("instance", spec.Name)
	var (
		mu   sync.Mutex
		next int // index of the next pause in spec.Pauses
		hits int // calls of its step since the previous pause
	)
	var unfenced *kafka.Writer
	if spec.Unfenced {
		unfenced = kafkaio.Plaintext(spec.Brokers).NewWriter(cfg.Topics.Releases)
	}
	failpoint := func(step string, rec kafka.Message) {
		if unfenced != nil && step == release.FailpointLedgerAppended {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := unfenced.WriteMessages(ctx, kafka.Message{Key: rec.Key, Value: rec.Value}); err != nil {
				fmt.Fprintf(os.Stderr, "paused child: unfenced publish failed: %v\n", err)
			}
			cancel()
		}
		mu.Lock()
		defer mu.Unlock()
		if next >= len(spec.Pauses) || step != spec.Pauses[next].Step {
			return
		}
		if hits++; hits < spec.Pauses[next].Hit {
			return
		}
		marker := filepath.Join(spec.Markers, fmt.Sprintf("%s-%d", spec.Name, next))
		if err := os.WriteFile(marker, []byte(step), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "paused child: marker: %v\n", err)
			return
		}
		log.Info("stopping itself (SIGSTOP)", "step", step, "pause", next)
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		log.Info("continued", "step", step, "pause", next)
		next, hits = next+1, 0
	}
	ci, cc := checkpoints(spec.CheckpointEvery)
	runChild(t, pipeline.Options{Config: cfg, Plan: ps, Conn: kafkaio.Plaintext(spec.Brokers), CheckpointInterval: ci, CheckpointCharges: cc,
		Stages: pipeline.Stages{Release: true}, Log: log, InstanceName: spec.Name,
		SessionTimeout: pausedSessionTimeout, Failpoint: archiveBeforeTrim(spec.Archive, kafkaio.Plaintext(spec.Brokers), cfg.Topics.Ledger, failpoint)})
}

// pausedRun is one paused-owner test: the harness, the children and the
// pauses seen.
type pausedRun struct {
	t        *testing.T
	h        *harness
	dir      string // markers and logs
	children map[string]*exec.Cmd
	// done is closed when a child has exited, with its Wait error in exit.
	done   map[string]chan struct{}
	exit   map[string]error
	pauses []string // "<child> at <step>", in the order they happened
	// refusals: a child that exits by itself ends the feeding instead of
	// failing the test (the negative test, where the release stage's
	// start-up check may refuse to go on), and is reported in exited.
	refusals bool
	exited   []string
	mu       sync.Mutex // guards exit
}

// TestPausedOwner pauses the owners of the release stage at up to eight
// steps of the release and checkpoint protocols (at least five reached),
// each time for longer than the session timeout, while windows keep
// completing; then checks invariants 1, 2 and 8 on the topics.
func TestPausedOwner(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	hit := func() int { return 1 + rng.IntN(2) }
	// The owners checkpoint and trim their ledger partitions as they go,
	// and pause in a checkpoint too: continued after the other took over,
	// an owner paused before reading its checkpoint back is fenced, and
	// one paused before its trim trims to a checkpoint the new owner has
	// read past (harmless: it stands for the records before it).
	r := newPausedRun(t, pausedCheckpointEvery)
	r.start("A", []pausePoint{{release.FailpointBeforeLedger, hit()}, {release.FailpointCheckpointConfirmed, 1}, {release.FailpointConfirmed, hit()}, {release.FailpointCommit, 1}}, false)
	r.start("B", []pausePoint{{release.FailpointLedgerAppended, hit()}, {release.FailpointCheckpointAppended, 1}, {release.FailpointPDPWritten, hit()}, {release.FailpointPublished, hit()}}, false)
	evs := r.feed(newPausedEvents(120), 40, 6)
	violations := checkInvariants(r.h, closedTruth(evs, 4))
	violations = append(violations, r.h.checkBudget()...)
	void := r.voidCharges()
	t.Logf("pauses: %v; %d void charges in the ledger; %d violations", r.pauses, void, len(violations))
	for _, v := range violations {
		t.Error(v)
	}
	if len(r.pauses) < 5 {
		t.Errorf("only %d pauses happened, want at least 5", len(r.pauses))
	}
	if void == 0 {
		t.Error("no void charge in the ledger: no paused owner appended a charge after losing ownership, so fencing was not exercised")
	}
}

// TestPausedOwnerCatchesUnfencedRelease is the negative case: children that
// publish right after the ledger append, without reading the charge back,
// publish a void charge's answer after a pause, and the checks must say so.
func TestPausedOwnerCatchesUnfencedRelease(t *testing.T) {
	t.Parallel()
	r := newPausedRun(t, 0)
	r.refusals = true
	r.start("A", []pausePoint{{release.FailpointBeforeLedger, 1}}, true)
	r.start("B", []pausePoint{{release.FailpointBeforeLedger, 1}}, true)
	evs := r.feed(newPausedEvents(16), 16, 1)
	caught := false
	for _, v := range checkInvariants(r.h, closedTruth(evs, 4)) {
		t.Logf("violation (expected): %s", v)
		if strings.Contains(v, "differ from the ledger's payload") || strings.Contains(v, "without a ledger charge") {
			caught = true
		}
	}
	if len(r.pauses) == 0 {
		t.Fatal("no owner paused: the unfenced protocol was not exercised")
	}
	if !caught {
		t.Errorf("a paused owner publishing without fencing was not caught (pauses %v, %d void charges, children that refused to go on: %v)", r.pauses, r.voidCharges(), r.exited)
	}
}

// newPausedRun starts a paused-owner run's accumulator; its release
// children checkpoint every checkpointEvery (0: never). The harness's
// setting is fixed before anything starts, as every pipeline reads it.
func newPausedRun(t *testing.T, checkpointEvery time.Duration) *pausedRun {
	h := newHarness(t, restartConfig(4))
	h.checkpointEvery = checkpointEvery
	dir := filepath.Join(h.dir, "paused")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &pausedRun{t: t, h: h, dir: dir, children: map[string]*exec.Cmd{}, done: map[string]chan struct{}{}, exit: map[string]error{}}
	h.start("acc", pipeline.Stages{Accumulate: true}, nil)
	t.Cleanup(r.stop)
	return r
}

// start starts a release-only child.
func (r *pausedRun) start(name string, pauses []pausePoint, unfenced bool) {
	spec := pausedSpec{Name: name, childBase: r.h.childBase(), Markers: r.dir, Pauses: pauses, Unfenced: unfenced}
	cmd, logf := r.h.startChild(r.dir, name, "TestPausedChild", pausedChildEnv, spec)
	done := make(chan struct{})
	r.children[name], r.done[name] = cmd, done
	go func() {
		err := cmd.Wait()
		logf.Close()
		r.mu.Lock()
		r.exit[name] = err
		r.mu.Unlock()
		close(done)
	}()
}

// pausedWindow is how many events each window of newPausedEvents holds.
const pausedWindow = 60

// newPausedEvents returns up to n windows of a paused-owner run's events
// (crashEvents' windows, without its closers), one slice per window, for
// feed to produce as many of as the run needs.
func newPausedEvents(n int) [][]map[string]any {
	evs := crashEvents(n)[:n*pausedWindow]
	out := make([][]map[string]any, n)
	for w := range out {
		out[w] = evs[w*pausedWindow : (w+1)*pausedWindow]
	}
	return out
}

// feed produces the events a window at a time, continuing every paused
// child once the session timeout (and a margin) has passed since it
// stopped: at least minWindows windows, and more (up to all of them) until
// at least wantPauses pauses happened, so that a slow machine, on which
// each pause takes longer, still gives the owners windows to reach their
// steps in; then the closing events. It waits for the pauses still to
// come and until every window with events is released (making progress,
// with no fixed total deadline), stops the children, and returns the
// events produced, from which the checks compute what was due.
func (r *pausedRun) feed(windows [][]map[string]any, minWindows, wantPauses int) []map[string]any {
	t, h := r.t, r.h
	topic := h.cfg.Streams[0].Topic
	stopped := map[string]time.Time{} // marker file -> when seen
	continued := map[string]bool{}
	// takeovers[name] is how many times the other child had taken
	// ownership when a pause was seen: the paused child is continued only
	// once the other has taken over after it (and the session timeout has
	// passed), so the pause ends in the middle of a release the paused
	// child no longer owns, however slow the machine; unless the other is
	// paused too, when nobody could take over.
	takeovers := map[string]int{}
	other := func(child string) string {
		for name := range r.children {
			if name != child {
				return name
			}
		}
		return ""
	}
	// poll continues the children due and reports whether to go on.
	poll := func() bool {
		entries, err := os.ReadDir(r.dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if strings.Contains(name, ".") {
				continue // specs and logs
			}
			child := strings.SplitN(name, "-", 2)[0]
			if _, seen := stopped[name]; !seen {
				step, _ := os.ReadFile(filepath.Join(r.dir, name))
				stopped[name] = time.Now()
				takeovers[name] = r.takeovers(other(child))
				r.pauses = append(r.pauses, name+" at "+string(step))
			}
			if continued[name] || time.Since(stopped[name]) < pausedSessionTimeout+2*time.Second {
				continue
			}
			otherPaused := false
			for m := range stopped {
				if strings.HasPrefix(m, other(child)+"-") && !continued[m] {
					otherPaused = true
				}
			}
			// Both paused: nobody can take over until one goes on.
			if r.takeovers(other(child)) == takeovers[name] && !otherPaused {
				if time.Since(stopped[name]) > 2*time.Minute {
					t.Fatalf("%s has been paused for 2 minutes and %s has not taken over the release stage:\n%s", child, other(child), r.tail(other(child)))
				}
				continue
			}
			if err := r.children[child].Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatalf("continue %s: %v", child, err)
			}
			continued[name] = true
		}
		for name, done := range r.done {
			select {
			case <-done:
				r.mu.Lock()
				err := r.exit[name]
				r.mu.Unlock()
				if !r.refusals {
					t.Fatalf("child %s exited by itself (%v):\n%s", name, err, r.tail(name))
				}
				t.Logf("child %s exited by itself (%v); checking the topics as they are", name, err)
				r.exited = append(r.exited, name)
				return false
			default:
			}
		}
		return true
	}
	var evs []map[string]any
	produce := func(chunk []map[string]any) bool {
		h.ProduceJSON(topic, chunk, "user")
		evs = append(evs, chunk...)
		for deadline := time.Now().Add(400 * time.Millisecond); time.Now().Before(deadline); {
			if !poll() {
				r.stop()
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
		return true
	}
	w := 0
	for ; w < len(windows) && (w < minWindows || len(r.pauses) < wantPauses); w++ {
		if !produce(windows[w]) {
			return evs
		}
	}
	// The closers: one event per input partition a window later, so that
	// every window produced closes.
	cl := closers(int64(w+1), 4)
	for _, ev := range cl {
		ev["zone"] = zoneOf(ev["user"].(string))
	}
	if !produce(cl) {
		return evs
	}
	// Wait for the pauses still to come, each within a generous time of
	// the previous one (an owner reaches its step within a few windows).
	last, lastCount := time.Now(), len(r.pauses)
	for len(r.pauses) < wantPauses || len(continued) < len(stopped) {
		if !poll() {
			r.stop()
			return evs
		}
		if len(r.pauses) != lastCount {
			last, lastCount = time.Now(), len(r.pauses)
		}
		if len(continued) == len(stopped) && time.Since(last) > 60*time.Second {
			t.Logf("no further pause after 60s (%d of %d): the owners did not reach their steps again", len(r.pauses), wantPauses)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := releaseIDs(h, closedTruth(evs, 4))
	missing, lastMissing, progress := unreleased(h, want), -1, time.Now()
	for missing > 0 {
		if !poll() {
			r.stop()
			return evs
		}
		if missing != lastMissing {
			lastMissing, progress = missing, time.Now()
		}
		if time.Since(progress) > 90*time.Second {
			t.Fatalf("%d of %d releases still missing, no progress for 90s;\nA:\n%s\nB:\n%s", missing, len(want), r.tail("A"), r.tail("B"))
		}
		time.Sleep(200 * time.Millisecond)
		missing = unreleased(h, want)
	}
	// Let a continued owner that is still finishing its window surface
	// whatever it would publish, then stop everyone.
	time.Sleep(2 * time.Second)
	r.stop()
	return evs
}

// stop stops the children (continuing any still stopped) and waits for them.
func (r *pausedRun) stop() {
	for name, cmd := range r.children {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done[name]:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-r.done[name]
		}
		delete(r.children, name)
	}
}

// voidCharges counts the ledger's void charges.
func (r *pausedRun) voidCharges() int {
	book := ledgerBooks{}
	for _, m := range r.h.fullLedger() {
		if _, err := book.Apply(m); err != nil {
			r.t.Fatalf("ledger: %v", err)
		}
	}
	return book.Void()
}

// takeovers counts the times a child took ownership of the release stage,
// from its log.
func (r *pausedRun) takeovers(name string) int {
	b, _ := os.ReadFile(filepath.Join(r.dir, name+".log"))
	return strings.Count(string(b), "took ownership of the release stage")
}

// tail returns the last lines of a child's log.
func (r *pausedRun) tail(name string) string {
	b, err := os.ReadFile(filepath.Join(r.dir, name+".log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-30, 0):], "\n")
}
