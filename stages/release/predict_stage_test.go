package release

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// The query path of a Stage on an embedded broker: serveQueries and
// answer, driven directly (no consumer group), with the fakePredictor of
// predict_test.go as release n of stream s.

// newPredictRig is a stageRig whose release n answers queries (budget ε,
// max_queries limit), with the requests and responses topics.
func newPredictRig(t testing.TB, budget float64, limit int) *stageRig {
	t.Helper()
	rig := newStageRig(t)
	rig.cfg.Streams = predictPlan(t, budget, limit)
	rig.cfg.RequestsTopic, rig.cfg.ResponsesTopic = "requests", "responses"
	rig.topics("requests", "responses")
	return rig
}

// topics creates topics of one partition.
func (r *stageRig) topics(names ...string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var specs []kafkaio.TopicSpec
	for _, n := range names {
		specs = append(specs, kafkaio.TopicSpec{Name: n, Partitions: 1})
	}
	if err := r.conn.EnsureTopics(ctx, specs); err != nil {
		r.t.Fatal(err)
	}
}

// request sends request values (JSON, as kcat would) to the requests topic.
func (r *stageRig) request(topic string, values ...string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := r.conn.NewWriter(topic)
	defer w.Close()
	for _, v := range values {
		if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(v)}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// jsonQuery is a valid predict request of release n, as JSON.
func jsonQuery(id string) string {
	b, _ := json.Marshal(map[string]any{"request_id": id, "stream": "s", "release": "n", "features": []float64{1, 2}})
	return string(b)
}

// server is s.serveQueries running until stop.
type server struct {
	cancel context.CancelFunc
	done   chan error
	err    error
	ended  bool
}

// serving runs s.serveQueries until stop is called.
func serving(s *Stage) *server {
	ctx, cancel := context.WithCancel(context.Background())
	sv := &server{cancel: cancel, done: make(chan error, 1)}
	go func() { sv.done <- s.serveQueries(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	return sv
}

// exited returns serveQueries' error if it has returned by itself.
func (sv *server) exited() (error, bool) {
	if !sv.ended {
		select {
		case sv.err = <-sv.done:
			sv.ended = true
		default:
		}
	}
	return sv.err, sv.ended
}

// stop ends serveQueries and returns its error.
func (sv *server) stop() error {
	sv.cancel()
	if !sv.ended {
		sv.err, sv.ended = <-sv.done, true
	}
	return sv.err
}

// responses returns the responses topic's records, decoded, in order.
func (r *stageRig) responses() []schema.PredictResponse {
	r.t.Helper()
	var out []schema.PredictResponse
	for _, m := range r.read("responses") {
		a, err := schema.DecodePredictResponse(m.Value)
		if err != nil {
			r.t.Fatalf("response at %d: %v", m.Offset, err)
		}
		out = append(out, a)
	}
	return out
}

// awaitResponse waits (generously) until the responses topic holds a
// response to request id, and returns the responses then; it fails at
// once if sv stopped serving.
func (r *stageRig) awaitResponse(sv *server, id string) []schema.PredictResponse {
	r.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		rs := r.responses()
		for _, a := range rs {
			if a.RequestID == id {
				return rs
			}
		}
		if err, ended := sv.exited(); ended {
			r.t.Fatalf("serveQueries returned %v before a response to %s", err, id)
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no response to %s within the deadline; responses: %+v", id, rs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// answerCharges returns the ledger's valid answer charges by request id.
func (r *stageRig) answerCharges() map[string]int {
	r.t.Helper()
	var book ledger.Book
	out := map[string]int{}
	for _, m := range r.read("ledger") {
		e, err := book.Apply(m)
		if err != nil {
			r.t.Fatal(err)
		}
		if e.Type == schema.LedgerTypeCharge && e.Valid && e.Charge.IsAnswer() {
			out[e.Charge.RequestID]++
		}
	}
	return out
}

// TestServeOversizeRequest: a request whose response would echo more than
// a record may hold (a long request id, stream or release name, echoed in
// the response and its reason) is not a poison pill: the stage answers the
// next request. Without bounds on what a response echoes, publishing the
// response fails, serveQueries returns the error, the release stage stops,
// and its restart reads the same request again: a crash loop that one
// querier causes, stopping every release.
func TestServeOversizeRequest(t *testing.T) {
	big := strings.Repeat("x", 600<<10)
	for _, tc := range []struct{ name, req string }{
		{"request id", `{"request_id":"` + big + `","stream":"s","release":"n","features":[1,2]}`},
		{"stream", `{"request_id":"a","stream":"` + big + `","release":"n","features":[1,2]}`},
		{"release", `{"request_id":"a","stream":"s","release":"` + big + `","features":[1,2]}`},
		{"op", `{"request_id":"a","stream":"s","release":"n","op":"` + big + `","features":[1,2]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newPredictRig(t, 100, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s := rig.stage(1)
			if err := s.takeOver(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.releaseWindow(ctx, window(1, 3)); err != nil {
				t.Fatal(err)
			}
			rig.request("requests", tc.req, jsonQuery("next"))
			sv := serving(s)
			rs := rig.awaitResponse(sv, "next")
			if err := sv.stop(); err != nil {
				t.Fatalf("serveQueries: %v", err)
			}
			for _, m := range rig.read("responses") {
				if len(m.Key)+len(m.Value) > 64<<10 {
					t.Errorf("a response of %d bytes: a response must not grow with what the request echoes", len(m.Key)+len(m.Value))
				}
			}
			if a := rs[len(rs)-1]; a.RequestID != "next" || a.Status != StatusOK {
				t.Errorf("the next request's response %+v", a)
			}
		})
	}
}

// TestServeRestartDoesNotReanswer: a request that was responded to
// without noise (here no_model, before the release's first window) is not
// decided again after a restart. Before, a restart read the requests topic
// from the ledger's last answered offset + 1 and decided every later
// request again: once a model existed, a request already told no_model was
// answered ok and charged to the stream's budget — two different
// responses for one request, and a backlog of stale requests spending the
// budget at every restart.
func TestServeRestartDoesNotReanswer(t *testing.T) {
	rig := newPredictRig(t, 100, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.stage(1)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	rig.request("requests", jsonQuery("early"))
	sv := serving(a)
	rig.awaitResponse(sv, "early")
	if err := sv.stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(1, 3)); err != nil {
		t.Fatal(err)
	}
	// A restart: a new instance takes over and serves.
	b := rig.stage(2)
	if err := b.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	rig.request("requests", jsonQuery("late"))
	sv = serving(b)
	rs := rig.awaitResponse(sv, "late")
	if err := sv.stop(); err != nil {
		t.Fatal(err)
	}
	var early []string
	for _, r := range rs {
		if r.RequestID == "early" {
			early = append(early, r.Status)
		}
	}
	if len(early) != 1 || early[0] != schema.PredictNoModel {
		t.Errorf("responses to the request sent before any model: %v, want one no_model", early)
	}
	if n := rig.answerCharges()["early"]; n != 0 {
		t.Errorf("the request told no_model was charged %d times after the restart", n)
	}
	if n := rig.answerCharges()["late"]; n != 1 {
		t.Errorf("the request after the restart was charged %d times, want 1", n)
	}
}

// TestServeRecreatedRequestsTopic: the requests topic deleted and
// recreated (here: the stage pointed at a fresh one) starts again at
// offset 0, below the offset the ledger says was read. The stage reads the
// new topic from its start. Before, it waited past the new topic's end
// (kafka-go retries "reading past the last offset" forever): no request
// was answered until the new topic outgrew the old offset, and the
// requests before that offset were never answered.
func TestServeRecreatedRequestsTopic(t *testing.T) {
	rig := newPredictRig(t, 100, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a := rig.stage(1)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(1, 3)); err != nil {
		t.Fatal(err)
	}
	rig.request("requests", jsonQuery("o1"), jsonQuery("o2"), jsonQuery("o3"), jsonQuery("o4"))
	sv := serving(a)
	rig.awaitResponse(sv, "o4")
	if err := sv.stop(); err != nil {
		t.Fatal(err)
	}
	rig.topics("requests2")
	rig.cfg.RequestsTopic = "requests2"
	b := rig.stage(2)
	if err := b.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	rig.request("requests2", jsonQuery("new"))
	sv = serving(b)
	rig.awaitResponse(sv, "new")
	if err := sv.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestServeFencedAnswer plays a paused owner on the query path: A owns the
// stage and has a model; B takes over (as after A's session expired); A,
// still believing it owns the stage, decides a request with its own noise.
// A's charge is void: it must not publish it, and B's rebuild must not
// count it. B answers the request itself, once, and every ok response
// published is byte-identical to its valid ledger charge's payload.
func TestServeFencedAnswer(t *testing.T) {
	rig := newPredictRig(t, 100, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := rig.stage(1), rig.stage(2)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(1, 3)); err != nil {
		t.Fatal(err)
	}
	rig.request("requests", jsonQuery("q"))
	if err := b.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	req := rig.read("requests")[0]
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := a.answer(ctx, req, log); !errors.Is(err, ErrFenced) {
		t.Fatalf("the old owner's answer returned %v, want ErrFenced", err)
	}
	if rs := rig.responses(); len(rs) != 0 {
		t.Fatalf("the old owner published %+v", rs)
	}
	// B rebuilt before A's void charge: a fresh rebuild must not count it.
	c := rig.stage(3)
	if err := c.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	sv := serving(c)
	rig.awaitResponse(sv, "q")
	if err := sv.stop(); err != nil {
		t.Fatal(err)
	}
	var book ledger.Book
	valid, void := map[string][]byte{}, 0
	for _, m := range rig.read("ledger") {
		e, err := book.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type != schema.LedgerTypeCharge || !e.Charge.IsAnswer() {
			continue
		}
		if !e.Valid {
			void++
			continue
		}
		if _, dup := valid[e.Charge.RequestID]; dup {
			t.Errorf("request %s has two valid answer charges", e.Charge.RequestID)
		}
		valid[e.Charge.RequestID] = e.Charge.Payload
	}
	if void != 1 || len(valid) != 1 {
		t.Errorf("%d void and %d valid answer charges, want 1 and 1", void, len(valid))
	}
	for _, m := range rig.read("responses") {
		if string(m.Value) != string(valid[string(m.Key)]) {
			t.Errorf("the response to %s differs from its valid ledger charge's payload", m.Key)
		}
	}
	st, _ := c.only().rel.State("s", 0, time.Now())
	if st.ReleasesCharged != 3 { // the window's two releases and one answer
		t.Errorf("the budget counts %d charges, want 3", st.ReleasesCharged)
	}
}

// TestServeAfterFencedRelease: once a release of A's is fenced, A's next
// answer is fenced at once. Before, A kept its epoch until its handler
// dropped it; the ledger tail had read the newer marker already, so the
// answer's read back never found a valid charge and waited out its
// 30-second timeout holding the stage's lock, then failed with a read
// error rather than ErrFenced (its charge void all the same).
func TestServeAfterFencedRelease(t *testing.T) {
	rig := newPredictRig(t, 100, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := rig.stage(1), rig.stage(2)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := b.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(2, 3)); !errors.Is(err, ErrFenced) {
		t.Fatalf("the old owner's release returned %v, want ErrFenced", err)
	}
	rig.request("requests", jsonQuery("q"))
	req := rig.read("requests")[0]
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := a.answer(ctx, req, log); !errors.Is(err, ErrFenced) {
		t.Fatalf("the old owner's answer after a fenced release returned %v, want ErrFenced", err)
	}
	if rs := rig.responses(); len(rs) != 0 {
		t.Fatalf("the old owner published %+v", rs)
	}
}

// TestServeAfterFailedRelease: a window whose release fails after the
// Releaser decided some of it (here its histogram's partial is malformed,
// after release n, the prediction, was decided with its new models) leaves
// the Releaser ahead of the ledger; no query is answered from that state,
// so no answer comes from models that never became durable.
func TestServeAfterFailedRelease(t *testing.T) {
	rig := newPredictRig(t, 100, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := rig.stage(1)
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.releaseWindow(ctx, window(1, 3)); err != nil {
		t.Fatal(err)
	}
	bad := window(2, 3)
	bad.Parts[0].Stats[1].Bins = []int64{1} // histogram h: 1 bin of 3
	if err := a.releaseWindow(ctx, bad); err == nil {
		t.Fatal("a malformed partial was released")
	}
	rig.request("requests", jsonQuery("q"))
	req := rig.read("requests")[0]
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := a.answer(ctx, req, log); err == nil || !strings.Contains(err.Error(), "not be durable") {
		t.Fatalf("an answer after a failed release returned %v, want the stage to wait for recovery", err)
	}
	if rs := rig.responses(); len(rs) != 0 {
		t.Fatalf("published %+v", rs)
	}
	// A takeover rebuilds the Releaser from the ledger: answers resume,
	// from the last durable window's models (window 2's: release n was
	// decided, and written, before h failed).
	if err := a.takeOver(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.answer(ctx, req, log); err != nil {
		t.Fatal(err)
	}
	rs := rig.responses()
	if len(rs) != 1 || rs[0].Status != StatusOK || rs[0].WindowStart != 2*win {
		t.Fatalf("after recovery: %+v, want one ok answer from window 2", rs)
	}
}
