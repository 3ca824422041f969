//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/stages/accumulate"
	"github.com/dpstream/dpstream/stages/release"
)

// The crash test runs the pipeline as a child process (this test binary,
// re-executed into TestCrashChild) and SIGKILLs it again and again: at a
// random time, or at a named step of a stage's commit protocol (the
// stages' Failpoint hooks), then starts it again. After the last life it
// checks DESIGN.md section 6, invariants 1 and 2, on the topics:
//
//   - every release id is charged once in the ledger, every window with
//     events is charged, and every copy of a release on the releases topic
//     is byte-identical to the ledger's payload (a crash never recomputes a
//     release with fresh noise, never charges twice); the per-key release z
//     is in chunks in every window, and every copy of a chunk is
//     byte-identical to the ledger's payload of that chunk (the charge's for
//     chunk 0, the chunk record ledger.Book matched with the charge for the
//     others), every chunk is published, and the joined release holds each
//     of z's public keys exactly once (no key lost or duplicated, no mixture
//     of two attempts);
//   - every copy of a partial for one (stream, window, input partition) is
//     byte-identical (a replay rebuilds identical state), and the
//     partials the release stage used sum to the exact statistics of an
//     uninterrupted run (truthWithLateness, which TestRestart checks against
//     the pipeline itself): no valid event lost or counted twice.
//
// A deliberately broken child (publishing a release before its ledger
// append) must be caught by the same checks.

// crashConfig is TestRestart's configuration (windows close by event time
// only, idle timeout 10m, so every life of the child sees the same
// watermarks and the truth is computable from the events alone) with a
// per-key release before its two: z, a count per zone over crashZoneCount
// public keys, released every window whatever the events (absent keys as
// noise only), which makes its release larger than crashRecordBytes, the
// record limit the children run with (23 bytes per key), so it is written
// in chunks in every window. A limit this low keeps the ledger small: with
// the production limit (schema.MaxRecordBytes) every window would add
// about a megabyte of chunks to it, which every life reads at its start,
// slowly under -race; the chunk protocol is the same at any limit. It comes first so that a window's first release decided,
// the one the broken child's first kill publishes early, is in chunks.
// After n and h come two continual releases over horizons of
// continualHorizon windows (the 24 windows are three horizons): cn, a
// count with the square-root factorization, and ch, a histogram with the
// binary tree, whose runs every restart must continue exactly from the
// ledger's step logs (checkContinual).
func crashConfig() *testkit.Pipeline {
	return testkit.NewPipeline(testkit.NewStream("trips", "events").Partitions(4).
		Window(time.Second, 200*time.Millisecond, 10*time.Minute).Budget(1000, 1e-6).Releases(
		testkit.Count(crashZoneRelease).Set("group_by", "zone").Set("keys", crashZones()).Epsilon(0.5),
		testkit.Count("n").Epsilon(0.5),
		testkit.Histogram("h", "v", 0, 10, 5).Epsilon(0.5),
		continualOf(testkit.Count("cn").Noise("gaussian").Epsilon(0.5).Delta(1e-7), continualHorizon, "sqrt"),
		continualOf(testkit.Histogram("ch", "v", 0, 10, 5).Noise("gaussian").Epsilon(0.5).Delta(1e-7), continualHorizon, "tree")))
}

// crashZoneRelease is the name of the crash configuration's per-key
// release, and crashZoneCount its number of public keys: 1,500 keys of 6
// bytes with a value and an interval each take about 34,500 bytes, three
// chunks at crashRecordBytes.
const (
	crashZoneRelease = "z"
	crashZoneCount   = 1_500
	crashRecordBytes = 16_000
)

// crashZones are z's public keys, z00000 to z01499.
func crashZones() []string {
	out := make([]string, crashZoneCount)
	for i := range out {
		out[i] = zoneName(i)
	}
	return out
}

func zoneName(i int) string { return fmt.Sprintf("z%05d", i) }

// zoneOf is the zone every event of a unit reports: with max_keys 1, a
// unit's kept events all count in it, so z's exact count per zone is the
// kept events of its units (truth.zones).
func zoneOf(unit string) string {
	h := fnv.New32a()
	h.Write([]byte(unit))
	return zoneName(int(h.Sum32() % crashZoneCount))
}

// crashCheckpointEvery is how often TestCrashSafety's children checkpoint
// and trim their ledger partitions (and every 50 charges).
const crashCheckpointEvery = 500 * time.Millisecond

// crashSessionTimeout is the children's consumer-group session timeout: a
// killed child's partitions move to the next one after it. Both test
// brokers allow it (the embedded broker and deploy/local-kafka.sh lower
// the minimum to 1s).
const crashSessionTimeout = 3 * time.Second

// crashChildEnv names the file with a child's crashSpec.
const crashChildEnv = "DPSTREAM_CRASH_CHILD"

// crashSpec is what one life of the child runs.
type crashSpec struct {
	childBase
	// KillStep, when set, kills the child at the KillHit-th call of that
	// failpoint; KillAsync kills it 0–3ms later instead, from another
	// goroutine, so the kill lands while the step's request is in flight.
	KillStep  string
	KillHit   int
	KillAsync bool
	// Broken makes the child break the protocol: "publish-before-ledger"
	// publishes each release before its ledger append.
	Broken string
}

// crashPoints are the failpoints a life may be killed at.
var crashPoints = []struct {
	step  string
	async bool
}{
	{release.FailpointPDPWritten, false},
	{release.FailpointBeforeLedger, false},
	{release.FailpointChunksAppended, false},
	{release.FailpointLedgerAppended, false},
	{release.FailpointConfirmed, false},
	{release.FailpointPublished, false},
	{release.FailpointCommit, true},
	{release.FailpointCheckpointBefore, false},
	{release.FailpointCheckpointAppended, false},
	{release.FailpointCheckpointConfirmed, false},
	{release.FailpointTrimmed, false},
	{accumulate.FailpointFlushed, false},
	{accumulate.FailpointCommit, true},
	{accumulate.FailpointCommitted, false},
}

// TestCrashChild is the child process of the crash tests; without
// DPSTREAM_CRASH_CHILD it does nothing.
func TestCrashChild(t *testing.T) {
	var spec crashSpec
	cfg, ps := readChildSpec(t, crashChildEnv, &spec, func() childBase { return spec.childBase })
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var (
		mu   sync.Mutex
		hits = map[string]int{}
	)
	var broken *kafka.Writer
	if spec.Broken == "publish-before-ledger" {
		broken = kafkaio.Plaintext(spec.Brokers).NewWriter(cfg.Topics.Releases)
	}
	failpoint := func(step string, rec kafka.Message) {
		if broken != nil && step == release.FailpointBeforeLedger {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := broken.WriteMessages(ctx, kafka.Message{Key: rec.Key, Value: rec.Value})
			cancel()
			if err != nil {
				fmt.Fprintf(os.Stderr, "crash child: broken publish failed: %v\n", err)
			}
		}
		if step != spec.KillStep {
			return
		}
		mu.Lock()
		hits[step]++
		n := hits[step]
		mu.Unlock()
		if n != spec.KillHit {
			return
		}
		fmt.Fprintf(os.Stderr, "crash child: SIGKILL at %s (hit %d)\n", step, n)
		if spec.KillAsync {
			go func() {
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}()
			return
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	ci, cc := checkpoints(spec.CheckpointEvery)
	runChild(t, pipeline.Options{Config: cfg, Plan: ps, Conn: kafkaio.Plaintext(spec.Brokers), CheckpointInterval: ci, CheckpointCharges: cc,
		Stages: pipeline.Stages{Accumulate: true, Release: true}, Log: log,
		SessionTimeout: crashSessionTimeout, Failpoint: archiveBeforeTrim(spec.Archive, kafkaio.Plaintext(spec.Brokers), cfg.Topics.Ledger, failpoint), RecordBytes: crashRecordBytes})
}

// crashRun is one crash test: the harness, the events and the child lives.
type crashRun struct {
	t    *testing.T
	h    *harness
	rng  *rand.Rand
	logs string // directory of the children's logs
	life int
	// refusals: a life that exits by itself ends the run with an error
	// instead of failing the test (the broken-protocol test, where the
	// release stage's start-up check may refuse to go on).
	refusals bool
	// patient waits for a life's failpoint for patientWait rather than
	// failpointWait: the broken-protocol test needs its kills to land at
	// their step, however slow the machine is.
	patient bool
	// want is the exact statistics of an uninterrupted run, per window.
	want map[int64]truth
	// kills counts lives ended by SIGKILL, by what killed them.
	kills map[string]int
}

// TestCrashSafety kills the pipeline child at least DPSTREAM_CRASH_KILLS
// (default 20) times at random times and failpoints, then checks the
// topics. The children checkpoint and trim their ledger partitions every
// crashCheckpointEvery, so the kills land in checkpoints and trims too, and
// every life but the first rebuilds from a checkpoint; the checks read
// every ledger record ever written (the children archive what they trim).
// The kill schedule's seed is logged; DPSTREAM_CRASH_SEED replays the same
// schedule (the timing of each life still varies).
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	kills := 20
	if v := os.Getenv("DPSTREAM_CRASH_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("DPSTREAM_CRASH_KILLS=%q: want a positive integer", v)
		}
		kills = n
	}
	r := newCrashRun(t, crashCheckpointEvery)
	// 24 windows: with ~20 lives each life's new input closes about one
	// window, so the release failpoints are reached in most lives.
	evs := crashEvents(24)
	want := closedTruth(evs, 4)
	if _, late := truthWithLateness(evs, 2, 4, 200); late == 0 {
		t.Fatal("the disorder produced no late events; the test would not exercise the watermark")
	}
	// The first lives cycle through every failpoint once, so each run kills
	// at every step; the rest are drawn at random, a third of them at a
	// random time.
	var plans []crashSpec
	for _, i := range r.rng.Perm(len(crashPoints)) {
		plans = append(plans, crashSpec{KillStep: crashPoints[i].step, KillAsync: crashPoints[i].async, KillHit: 1 + r.rng.IntN(3)})
	}
	for len(plans) < kills {
		if r.rng.IntN(3) == 0 {
			plans = append(plans, crashSpec{}) // killed by the parent at a random time
			continue
		}
		p := crashPoints[r.rng.IntN(len(crashPoints))]
		plans = append(plans, crashSpec{KillStep: p.step, KillAsync: p.async, KillHit: 1 + r.rng.IntN(3)})
	}
	if err := r.run(evs, plans); err != nil {
		t.Fatal(err)
	}
	violations := checkInvariants(r.h, want)
	violations = append(violations, r.h.checkBudget()...)
	// The ledger partition was trimmed to a checkpoint (else the
	// checkpoints' protocol was not exercised), and a takeover from it
	// rebuilds the budget the full ledger gives (checkBudget: the final
	// life's published state).
	if start := r.h.ledgerStart(r.h.partialsPartition("trips")); start == 0 {
		violations = append(violations, "the ledger partition of trips was never trimmed to a checkpoint")
	}
	t.Logf("%d lives killed (%v); %d violations", len(plans), r.kills, len(violations))
	for _, v := range violations {
		t.Error(v)
	}
	total := 0
	for _, n := range r.kills {
		total += n
	}
	if total < kills {
		t.Errorf("only %d of the %d lives were killed", total, kills)
	}
}

// TestCrashSafetyCatchesBrokenProtocol runs the crash test on a child that
// publishes each release before appending it to the ledger, killed between
// the two: the next life decides the release again with fresh noise, so
// the published copy differs from the ledger's. The checks must say so.
// The first kill (hit 1) is at a window's first release, z, in chunks: the
// child publishes its chunk 0 early (without the chunk header, as the
// failpoint gives it the record's key and value), and the checks must name
// every such release; the second (hit 2), if the release stage's start-up
// check lets its life go on, at a release in one record.
func TestCrashSafetyCatchesBrokenProtocol(t *testing.T) {
	t.Parallel()
	r := newCrashRun(t, 0)
	r.refusals, r.patient = true, true
	evs := crashEvents(6)
	want := closedTruth(evs, 4)
	plans := []crashSpec{
		{KillStep: release.FailpointBeforeLedger, KillHit: 1, Broken: "publish-before-ledger"},
		{KillStep: release.FailpointBeforeLedger, KillHit: 2, Broken: "publish-before-ledger"},
	}
	// The release stage's own start-up check (ErrLedgerLost: a published
	// release without a ledger charge) may refuse the next life; the
	// topics are checked either way.
	if err := r.run(evs, plans); err != nil {
		t.Logf("a life after the broken publish failed (the ledger check may refuse it): %v", err)
	}
	violations := checkInvariants(r.h, want)
	caught := false
	for _, v := range violations {
		t.Logf("violation (expected): %s", v)
		if strings.Contains(v, "differ from the ledger's payload") || strings.Contains(v, "without a ledger charge") {
			caught = true
		}
	}
	if r.kills[release.FailpointBeforeLedger] == 0 {
		t.Fatalf("no life was killed between publish and ledger append (kills: %v); the broken protocol was not exercised", r.kills)
	}
	if !caught {
		t.Errorf("publishing before the ledger append was not caught: %d violations, none about a copy differing from the ledger or lacking a charge", len(violations))
	}
	// The broken child's copies of z's chunks are the records of z without
	// the chunk header (the release stage writes every chunk with it).
	early := 0
	for _, m := range r.h.ReadAll(r.h.cfg.Topics.Releases) {
		id := string(m.Key)
		if !strings.HasPrefix(id, "trips/"+crashZoneRelease+"/") || slices.ContainsFunc(m.Headers, func(hd kafka.Header) bool { return hd.Key == release.ChunkHeader }) {
			continue
		}
		early++
		if !slices.ContainsFunc(violations, func(v string) bool {
			return strings.Contains(v, "release "+id+":") || strings.Contains(v, "release "+id+" ")
		}) {
			t.Errorf("chunk 0 of %s, published before its ledger append (releases offset %d), was not caught", id, m.Offset)
		}
	}
	t.Logf("%d chunks of a release in chunks published before the ledger append", early)
}

// newCrashRun prepares a crash run whose children checkpoint every
// checkpointEvery (0: never).
func newCrashRun(t *testing.T, checkpointEvery time.Duration) *crashRun {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("DPSTREAM_CRASH_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("DPSTREAM_CRASH_SEED=%q: want an unsigned integer", v)
		}
		seed = s
	}
	t.Logf("kill schedule seed %d (replay with DPSTREAM_CRASH_SEED=%d)", seed, seed)
	h := newHarness(t, crashConfig())
	h.checkpointEvery = checkpointEvery
	logs := filepath.Join(h.dir, "children")
	// DPSTREAM_CRASH_LOGS keeps the children's logs in a directory that
	// outlives the test, to read after a failure.
	if d := os.Getenv("DPSTREAM_CRASH_LOGS"); d != "" {
		logs = d
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	return &crashRun{t: t, h: h, rng: rand.New(rand.NewPCG(seed, 7)), logs: logs, kills: map[string]int{}}
}

// crashEvents are nWindows windows of events over 4 partitions, with
// TestRestart's disorder (every 7th event 700ms older, late or not
// depending on its partition's watermark), then one closing event per
// partition two windows later. Every event has its unit's zone (zoneOf).
func crashEvents(nWindows int) []map[string]any {
	evs := genEvents(11, nWindows, 60, 40)
	for i := range evs {
		if i%7 == 3 && evs[i]["ts"].(int64)-700 >= base {
			evs[i]["ts"] = evs[i]["ts"].(int64) - 700
		}
	}
	evs = append(evs, closers(int64(nWindows+1), 4)...)
	for _, ev := range evs {
		ev["zone"] = zoneOf(ev["user"].(string))
	}
	return evs
}

// run produces the events in len(plans)+1 chunks cut at random places:
// before each killed life one chunk, then the last chunk before a final
// life that runs until every window is released and stops cleanly; it
// returns the final life's failure, if any.
func (r *crashRun) run(evs []map[string]any, plans []crashSpec) error {
	t, h := r.t, r.h
	r.want = closedTruth(evs, 4)
	// Evenly spaced cuts, each moved at random by up to a third of the
	// spacing: every chunk is about the same length (so most lives close a
	// window and reach the release failpoints), and the cuts still land
	// anywhere within a window.
	step := len(evs) / (len(plans) + 1)
	bounds := []int{0}
	for i := 1; i <= len(plans) && step > 0; i++ {
		c := i*step + r.rng.IntN(2*step/3+1) - step/3
		bounds = append(bounds, min(max(c, bounds[len(bounds)-1]), len(evs)))
	}
	bounds = append(bounds, len(evs))
	topic := h.cfg.Streams[0].Topic
	retries := map[string]int{}
	for i := 0; i < len(plans); i++ {
		plan := plans[i]
		if i+1 < len(bounds) && bounds[i] < bounds[i+1] {
			h.ProduceJSON(topic, evs[bounds[i]:bounds[i+1]], "user")
		}
		r.life++
		how, err := r.killedLife(plan)
		if err != nil {
			if !r.refusals {
				t.Fatal(err)
			}
			return err
		}
		r.kills[how]++
		t.Logf("life %d: killed by %s", r.life, how)
		if plan.KillStep != "" && how != plan.KillStep && r.kills[plan.KillStep] == 0 && retries[plan.KillStep] < 2 && i+1 < len(plans) {
			retries[plan.KillStep]++
			// Its life closed no window (or made no commit) before the
			// timeout: try that step again in the next life (twice at
			// most) rather than let a run miss it, dropping the last
			// (random) plan so the number of lives stays the same. The
			// release stage commits at most once a second and only while
			// partials arrive, so release/commit is the step most often
			// missed.
			retry := plan
			retry.KillHit = 1
			plans = slices.Insert(plans[:len(plans)-1], i+1, retry)
		}
	}
	if n := len(plans); n+1 < len(bounds) {
		h.ProduceJSON(topic, evs[bounds[n]:], "user")
	}
	r.life++
	return r.finalLife()
}

// start starts one life of the child.
func (r *crashRun) start(spec crashSpec) (*exec.Cmd, *os.File) {
	spec.childBase = r.h.childBase()
	return r.h.startChild(r.logs, fmt.Sprintf("life%02d", r.life), "TestCrashChild", crashChildEnv, spec)
}

// failpointWait is how long a life killed at a failpoint may run without
// reaching it, counted from when the child has joined both consumer
// groups (so a slow start does not eat into it); joinWait bounds the wait
// for the joins. A life that misses its failpoint is killed by the parent
// and the step retried (run), so neither is a pass/fail limit.
const (
	failpointWait = 10 * time.Second
	// patientWait is how long a patient run waits for a failpoint: a
	// window's first release comes within seconds of joining on an idle
	// machine, and the test must not depend on it coming that fast.
	patientWait = 3 * time.Minute
	joinWait    = 60 * time.Second
)

// killedLife runs one life until it is killed: by its failpoint, or by the
// parent at a random time (plans without a failpoint, and failpoints not
// reached within failpointWait of joining). It returns what killed it, or
// an error with the tail of its log if it exited by itself: nothing in a
// correct pipeline's input should stop it.
func (r *crashRun) killedLife(plan crashSpec) (string, error) {
	cmd, logf := r.start(plan)
	defer logf.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	started := time.Now()
	how := plan.KillStep
	var deadline time.Time // zero until the child has joined both groups
	if how == "" {
		// Joining the groups takes up to the dead predecessor's session
		// timeout; kill anywhere from startup to well into processing.
		deadline = started.Add(time.Duration(300+r.rng.IntN(5700)) * time.Millisecond)
		how = "parent at a random time"
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if !killed(err) {
				return "", fmt.Errorf("life %d exited by itself (%v) instead of being killed at %s:\n%s", r.life, err, plan.KillStep, r.tail(r.life))
			}
			return how, nil
		case <-tick.C:
		}
		if deadline.IsZero() {
			switch {
			case r.joinedBoth(r.life) && r.patient && plan.KillStep != "":
				deadline = time.Now().Add(patientWait)
			case r.joinedBoth(r.life):
				deadline = time.Now().Add(failpointWait)
			case time.Since(started) > joinWait:
				deadline = time.Now()
			}
		}
		if deadline.IsZero() || time.Now().Before(deadline) {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := <-done
		if !killed(err) {
			return "", fmt.Errorf("life %d exited by itself (%v):\n%s", r.life, err, r.tail(r.life))
		}
		if plan.KillStep != "" {
			return "parent (failpoint " + plan.KillStep + " not reached)", nil
		}
		return how, nil
	}
}

// joinedBoth reports whether a life's log shows a generation of both the
// accumulate and the release consumer group.
func (r *crashRun) joinedBoth(life int) bool {
	b, err := os.ReadFile(filepath.Join(r.logs, fmt.Sprintf("life%02d.log", life)))
	if err != nil {
		return false
	}
	acc, rel := pipeline.Groups(r.h.cfg)
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "consumer group: generation started") {
			continue
		}
		for _, g := range []string{acc, rel} {
			if strings.Contains(line, "group="+g+" ") {
				seen[g] = true
			}
		}
	}
	return seen[acc] && seen[rel]
}

// finalStall is how long the final life may go without progress: without
// a new ledger charge, release or partial and without a release id
// becoming complete. It is far longer than any step of a healthy
// pipeline takes on a loaded machine (a rejoin after a dead member's
// session expires takes a few seconds), and the final life has no limit
// on its total time, so a slow machine only makes it take longer, while a
// pipeline that stops short of releasing everything still fails.
const finalStall = 60 * time.Second

// crashProgress is what the final life has produced so far.
type crashProgress struct {
	missing                   int // release ids not both charged and published
	ledger, releases, partial int64
}

func (r *crashRun) progress(want map[string]bool) crashProgress {
	h := r.h
	p := crashProgress{missing: unreleased(h, want)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range []struct {
		topic string
		n     *int64
	}{{h.cfg.Topics.Ledger, &p.ledger}, {h.cfg.Topics.Releases, &p.releases}, {h.cfg.Topics.Partials, &p.partial}} {
		ends, err := h.Conn.EndOffsets(ctx, t.topic)
		if err != nil {
			r.t.Fatalf("end offsets of %s: %v", t.topic, err)
		}
		for _, e := range ends {
			*t.n += e
		}
	}
	return p
}

// finalLife runs the child without a kill until every window with events
// has both releases in the ledger and on the releases topic, then stops it
// with SIGTERM and expects a clean exit. It fails when the child makes no
// progress for finalStall (or the test binary's deadline comes near, to
// say so before the test is killed). It returns what went wrong, with the
// consumer groups' members and assignments and the tail of the child's
// log.
func (r *crashRun) finalLife() error {
	cmd, logf := r.start(crashSpec{})
	defer logf.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	want := releaseIDs(r.h, r.want)
	start := time.Now()
	last, lastAt := crashProgress{missing: -1}, start
	testDeadline, hasDeadline := r.t.Deadline()
	for {
		select {
		case err := <-done:
			return fmt.Errorf("final life exited by itself (%v):\n%s", err, r.tail(r.life))
		default:
		}
		p := r.progress(want)
		if p.missing == 0 {
			break
		}
		if p != last {
			last, lastAt = p, time.Now()
		}
		stalled := time.Since(lastAt) > finalStall
		if stalled || hasDeadline && time.Until(testDeadline) < 30*time.Second {
			why := fmt.Sprintf("no progress for %s", finalStall)
			if !stalled {
				why = "the test binary's deadline is near"
			}
			groups := r.describeGroups()
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			return fmt.Errorf("final life: %d of %d releases still missing after %s (%s; %d ledger records, %d releases, %d partials); consumer groups: %s\n%s",
				p.missing, len(want), time.Since(start).Round(time.Second), why, p.ledger, p.releases, p.partial, groups, r.tail(r.life))
		}
		time.Sleep(250 * time.Millisecond)
	}
	r.t.Logf("final life: every release charged and published after %s", time.Since(start).Round(time.Second))
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("final life did not stop cleanly on SIGTERM: %v\n%s", err, r.tail(r.life))
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("final life did not stop within 60s of SIGTERM:\n%s", r.tail(r.life))
	}
	return nil
}

// describeGroups describes the pipeline's consumer groups (state, members
// and their assignments) for a failure message.
func (r *crashRun) describeGroups() string {
	acc, rel := pipeline.Groups(r.h.cfg)
	return r.h.describeGroup(acc) + "; " + r.h.describeGroup(rel)
}

// killed reports whether a child's exit was SIGKILL.
func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// tail returns the last lines of a life's log.
func (r *crashRun) tail(life int) string {
	b, err := os.ReadFile(filepath.Join(r.logs, fmt.Sprintf("life%02d.log", life)))
	if err != nil {
		return err.Error()
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
