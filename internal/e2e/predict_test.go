//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/kind/prediction"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// The prediction test runs a stream with two prediction releases, a
// classifier (cls) and a regression (reg), as a child process (this test
// binary, re-executed into TestPredictChild) that kills itself at the
// steps of the answer protocol (release.FailpointAnswer*) while queries
// arrive, then checks on the topics that a crash never answers a request
// twice with different noise and never charges it twice:
//
//   - every request has an ok response, and every copy of it on the
//     responses topic is byte-identical to the payload of its one valid
//     ledger charge (an answer killed after its ledger append is
//     republished from the ledger, verbatim; one killed before it is
//     decided again, and only that decision is in the ledger);
//   - the stream's account counts exactly the valid ok charges of the
//     ledger, windows and answers.

// predictChildEnv names the file with a child's predictSpec.
const predictChildEnv = "DPSTREAM_PREDICT_CHILD"

// predictSpec is what one life of the child runs: killed at the KillHit-th
// call of failpoint KillStep ("" runs until SIGTERM).
type predictSpec struct {
	childBase
	KillStep string
	KillHit  int
}

// predictConfig: stream pred (privacy unit user, 2 partitions, 1s windows,
// at most 2 events per unit and window, an ample budget), a classifier of
// late (no or yes) and a ridge regression of y, both on x1 and x2, each
// from 5 shards, ε = 1 per answer.
func predictConfig() *testkit.Pipeline {
	feats := []testkit.Variable{testkit.Var("x1", -1, 1), testkit.Var("x2", 0, 10)}
	return testkit.NewPipeline(testkit.NewStream("pred", "events").Partitions(2).MaxEvents(2).Budget(1000, 1e-3).Releases(
		testkit.NewRelease("cls", "prediction").Set("features", feats).YAML("label", "{field: late, classes: [no, yes]}").
			Set("shards", 5).Set("key", "e2e-secret-of-16-bytes").Epsilon(1),
		testkit.NewRelease("reg", "prediction").Set("features", feats).Set("target", testkit.Var("y", -10, 6)).
			Set("shards", 5).Set("key", "e2e-secret-of-16-bytes").Epsilon(1).Noise("laplace")))
}

// TestPredictChild is the child process of TestPredictCrash; without
// DPSTREAM_PREDICT_CHILD it does nothing.
func TestPredictChild(t *testing.T) {
	var spec predictSpec
	cfg, ps := readChildSpec(t, predictChildEnv, &spec, func() childBase { return spec.childBase })
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var (
		mu   sync.Mutex
		hits int
	)
	failpoint := func(step string, rec kafka.Message) {
		if step != spec.KillStep {
			return
		}
		mu.Lock()
		hits++
		n := hits
		mu.Unlock()
		if n != spec.KillHit {
			return
		}
		fmt.Fprintf(os.Stderr, "predict child: SIGKILL at %s (hit %d, request %s)\n", step, n, rec.Key)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	ci, cc := checkpoints(spec.CheckpointEvery)
	runChild(t, pipeline.Options{Config: cfg, Plan: ps, Conn: kafkaio.Plaintext(spec.Brokers), CheckpointInterval: ci, CheckpointCharges: cc,
		Stages: pipeline.Stages{Accumulate: true, Release: true}, Log: log,
		SessionTimeout: 3 * time.Second, Failpoint: archiveBeforeTrim(spec.Archive, kafkaio.Plaintext(spec.Brokers), cfg.Topics.Ledger, failpoint)})
}

// genPredictEvents makes nWindows windows of events of nUnits units (1 to
// 3 events each per window), with regression's model for y and late = yes
// when y > 0.
func genPredictEvents(seed uint64, nWindows, nUnits int) []map[string]any {
	evs := genRegEvents(seed, nWindows, nUnits)
	for _, ev := range evs {
		late := "no"
		if ev["y"].(float64) > 0 {
			late = "yes"
		}
		ev["late"] = late
	}
	return evs
}

// TestPredictCrash kills the pipeline at every step of the answer
// protocol while it answers queries, then checks the responses against
// the ledger (see the top of this file).
func TestPredictCrash(t *testing.T) {
	t.Parallel()
	h := newHarness(t, predictConfig())
	logs := t.TempDir()
	h.ProduceJSON(h.cfg.Streams[0].Topic, genPredictEvents(83, 2, 300), "user")
	rng := rand.New(rand.NewPCG(89, 97))

	lives := []predictSpec{
		{KillStep: release.FailpointAnswerLedgerAppended, KillHit: 2},
		{KillStep: release.FailpointAnswerBeforeLedger, KillHit: 1},
		{KillStep: release.FailpointAnswerPublished, KillHit: 2},
		{KillStep: release.FailpointAnswerLedgerAppended, KillHit: 1},
		{KillStep: release.FailpointAnswerBeforeLedger, KillHit: 3},
		{}, // the last life answers what is left, then stops cleanly
	}
	var ids []string
	killedAt := map[string]int{}
	for life, spec := range lives {
		spec.childBase = h.childBase()
		name := fmt.Sprintf("life%d", life)
		cmd, logf := h.startChild(logs, name, "TestPredictChild", predictChildEnv, spec)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if life == 0 {
			// Queries before the first model would be answered no_model:
			// wait until both releases have released a window.
			waitForChild(t, exited, logf, 120*time.Second, "a model of each prediction release", func() bool {
				ws := map[string]bool{}
				for _, r := range h.releases() {
					ws[r.Release] = ws[r.Release] || r.Status == release.StatusOK
				}
				return ws["cls"] && ws["reg"]
			})
		}
		// Each life gets new queries: enough to reach its failpoint.
		var batch []kafka.Message
		for i := 0; i < 6; i++ {
			id := fmt.Sprintf("%s-q%d", name, i)
			ids = append(ids, id)
			rel, row := "cls", []float64{rng.Float64()*2 - 1, rng.Float64() * 10}
			if i%2 == 1 {
				rel = "reg"
			}
			b, err := schema.EncodePredictRequest(schema.PredictRequest{RequestID: id, Stream: "pred", Release: rel, Rows: [][]float64{row}})
			if err != nil {
				t.Fatal(err)
			}
			batch = append(batch, kafka.Message{Key: []byte(id), Value: b})
		}
		h.Produce(h.cfg.Topics.Requests, batch...)
		if spec.KillStep == "" {
			waitForChild(t, exited, logf, 120*time.Second, "a response to every request", func() bool {
				got := map[string]bool{}
				for _, m := range h.ReadAll(h.cfg.Topics.Responses) {
					got[string(m.Key)] = true
				}
				for _, id := range ids {
					if !got[id] {
						return false
					}
				}
				return true
			})
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := <-exited; err != nil {
				t.Fatalf("last life: %v\n%s", err, readLog(logf))
			}
			logf.Close()
			continue
		}
		select {
		case <-exited:
		case <-time.After(120 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("%s never reached %s (hit %d)\n%s", name, spec.KillStep, spec.KillHit, readLog(logf))
		}
		if !strings.Contains(readLog(logf), "SIGKILL at "+spec.KillStep) {
			t.Fatalf("%s exited without being killed at %s\n%s", name, spec.KillStep, readLog(logf))
		}
		killedAt[spec.KillStep]++
		logf.Close()
	}
	t.Logf("%d requests, lives killed at %v", len(ids), killedAt)

	// One valid ok charge per request, and every copy of its response is
	// the charge's payload.
	answers := map[string]schema.LedgerCharge{}
	var windowCharges, answerCharges int64
	for _, lc := range h.ledger() {
		if lc.Stream != "pred" || lc.Status != release.StatusOK {
			continue
		}
		if !lc.IsAnswer() {
			// A prediction window costs nothing: only its answers are
			// charged.
			if len(lc.Charges) > 0 {
				t.Errorf("window %s is charged %+v", lc.ReleaseID, lc.Charges)
			}
			if len(prediction.LegacyCharge(lc).Model) == 0 {
				t.Errorf("window %s has no model state in the ledger", lc.ReleaseID)
			}
			windowCharges++
			continue
		}
		answerCharges++
		if _, dup := answers[lc.RequestID]; dup {
			t.Errorf("request %s is charged twice in the ledger", lc.RequestID)
		}
		answers[lc.RequestID] = lc
	}
	copies := map[string]int{}
	for _, m := range h.ReadAll(h.cfg.Topics.Responses) {
		a, err := schema.DecodePredictResponse(m.Value)
		if err != nil {
			t.Errorf("undecodable response %q: %v", m.Key, err)
			continue
		}
		if a.Status != release.StatusOK {
			t.Errorf("request %s answered %s: %s", a.RequestID, a.Status, a.Reason)
			continue
		}
		lc, ok := answers[a.RequestID]
		if !ok {
			t.Errorf("request %s has a response but no ledger charge", a.RequestID)
			continue
		}
		if !bytes.Equal(m.Value, lc.Payload) {
			t.Errorf("a copy of request %s's response differs from its ledger payload (a second answer with fresh noise)", a.RequestID)
		}
		if a.Release == "cls" && a.Label != "no" && a.Label != "yes" {
			t.Errorf("request %s: label %q", a.RequestID, a.Label)
		}
		if a.Release == "reg" && (math.IsNaN(a.Value) || a.Interval95 <= 0) {
			t.Errorf("request %s: value %v ± %v", a.RequestID, a.Value, a.Interval95)
		}
		copies[a.RequestID]++
	}
	for _, id := range ids {
		if copies[id] == 0 {
			t.Errorf("request %s has no response", id)
		}
	}
	if len(answers) != len(ids) {
		t.Errorf("%d answers charged, want one per request (%d)", len(answers), len(ids))
	}
	if st := h.lastBudgetState("pred"); st.ReleasesCharged != answerCharges || windowCharges == 0 {
		t.Errorf("the account counts %d charges; the ledger holds %d answers (and %d free windows)", st.ReleasesCharged, answerCharges, windowCharges)
	}
	for _, spec := range lives[:len(lives)-1] {
		if killedAt[spec.KillStep] == 0 {
			t.Errorf("no life was killed at %s", spec.KillStep)
		}
	}
}

// waitForChild polls cond until it holds, failing with the child's log if
// the child exits first or the timeout passes.
func waitForChild(t *testing.T, exited chan error, logf *os.File, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case err := <-exited:
			t.Fatalf("the child exited (%v) while waiting for %s\n%s", err, what, readLog(logf))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v\n%s", what, timeout, readLog(logf))
		}
	}
}

// readLog returns the child's log so far.
func readLog(f *os.File) string {
	b, err := os.ReadFile(filepath.Clean(f.Name()))
	if err != nil {
		return err.Error()
	}
	return string(b)
}
