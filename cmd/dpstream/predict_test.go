package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

const (
	requestsTopic  = "dpstream.predict.requests"
	responsesTopic = "dpstream.predict.responses"
)

// predictCLI is an embedded broker with the query topics, as the release
// stage creates them (one partition each), and a fake responder in place
// of the release stage.
type predictCLI struct {
	*testkit.Cluster
	mu   sync.Mutex
	seen []schema.PredictRequest // the requests the responder read, in order
}

// newPredictCLI starts a broker with the query topics, and, when answer is
// not nil, a responder that reads every request and publishes the
// responses answer returns for it, in order (several: another querier's
// answer first, a duplicate after), keyed by request id, as the release
// stage does.
func newPredictCLI(t *testing.T, answer func(schema.PredictRequest) []schema.PredictResponse) *predictCLI {
	t.Helper()
	c := &predictCLI{Cluster: testkit.StartBroker(t)}
	c.CreateTopics(kafkaio.TopicSpec{Name: requestsTopic, Partitions: 1}, kafkaio.TopicSpec{Name: responsesTopic, Partitions: 1})
	if answer == nil {
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// Registered after the broker's cleanup, so it runs before it.
	t.Cleanup(func() { cancel(); <-done })
	w := c.Conn.NewWriter(responsesTopic)
	go func() {
		defer close(done)
		defer w.Close()
		err := c.Conn.Follow(ctx, requestsTopic, kafka.FirstOffset, func(m kafka.Message) error {
			q, err := schema.DecodePredictRequest(m.Value)
			if err != nil {
				t.Errorf("responder: request at offset %d: %v", m.Offset, err)
				return nil
			}
			c.mu.Lock()
			c.seen = append(c.seen, q)
			c.mu.Unlock()
			var msgs []kafka.Message
			for _, a := range answer(q) {
				b, err := schema.EncodePredictResponse(a)
				if err != nil {
					t.Errorf("responder: %v", err)
					return nil
				}
				msgs = append(msgs, kafka.Message{Key: []byte(a.RequestID), Value: b})
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil && ctx.Err() == nil {
				t.Errorf("responder: %v", err)
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			t.Errorf("responder: %v", err)
		}
	}()
	return c
}

// requests returns the requests the responder has read.
func (c *predictCLI) requests() []schema.PredictRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]schema.PredictRequest(nil), c.seen...)
}

// predict runs `predict --brokers ADDR args...` with a generous deadline.
func (c *predictCLI) predict(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cliTimeout(t, 60*time.Second, append([]string{"predict", "--brokers", c.Addr}, args...)...)
}

// answerOf is the response the release stage would give q with status
// and reason.
func answerOf(q schema.PredictRequest, status, reason string) schema.PredictResponse {
	a := schema.PredictResponse{RequestID: q.RequestID, Stream: q.Stream, Release: q.Release, Op: q.Op, Status: status, Reason: reason, AnsweredAt: 1}
	if status == "ok" {
		a.WindowStart, a.Label, a.Epsilon = 60000, "yes", 0.1
	}
	return a
}

// statusByRelease answers each request with the status named by its
// release: the releases of TestPredictStatuses.
func statusByRelease(q schema.PredictRequest) []schema.PredictResponse {
	switch q.Release {
	case "spent":
		return []schema.PredictResponse{answerOf(q, "budget_exhausted", "stream budget ε = 1 would be exceeded")}
	case "bad":
		return []schema.PredictResponse{answerOf(q, schema.PredictInvalid, "3 features, the release has 2")}
	case "cold":
		return []schema.PredictResponse{answerOf(q, schema.PredictNoModel, "")}
	case "gone":
		return []schema.PredictResponse{answerOf(q, schema.PredictUnknownRelease, "")}
	}
	return []schema.PredictResponse{answerOf(q, "ok", "")}
}

// oneLine decodes stdout as exactly one JSON response.
func oneLine(t *testing.T, stdout string) schema.PredictResponse {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 1 || lines[0] == "" {
		t.Fatalf("stdout has %d lines, want one JSON response:\n%s", len(lines), stdout)
	}
	var a schema.PredictResponse
	if err := json.Unmarshal([]byte(lines[0]), &a); err != nil {
		t.Fatalf("stdout is not a JSON response: %v: %s", err, stdout)
	}
	return a
}

// TestPredictStatuses: each status of the answer prints the response as
// one JSON line, and exits with its own code and a stderr message that
// says what happened (nothing for ok).
func TestPredictStatuses(t *testing.T) {
	c := newPredictCLI(t, statusByRelease)
	cases := []struct {
		release string
		code    int
		status  string
		stderr  []string
	}{
		{"r", exitOK, "ok", nil},
		{"spent", exitPredictBudget, "budget_exhausted", []string{"request q-spent refused, budget exhausted: stream budget ε = 1 would be exceeded", "nothing was charged", "dpstream budget"}},
		{"bad", exitPredictInvalid, "invalid", []string{"request q-bad is invalid: 3 features, the release has 2", "Nothing was charged"}},
		{"cold", exitPredictNoModel, "no_model", []string{"release cold of stream s has no model yet", "first window"}},
		{"gone", exitPredictUnknown, "unknown_release", []string{"stream s has no prediction release gone", "--stream and --release"}},
	}
	seen := map[int]string{}
	for _, tc := range cases {
		t.Run(tc.release, func(t *testing.T) {
			if prev, dup := seen[tc.code]; dup {
				t.Fatalf("exit code %d of %s is also %s's", tc.code, tc.status, prev)
			}
			seen[tc.code] = tc.status
			id := "q-" + tc.release
			code, stdout, stderr := c.predict(t, "--stream", "s", "--release", tc.release, "--features", "1.5, 2,0", "--id", id)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			a := oneLine(t, stdout)
			if a.RequestID != id || a.Status != tc.status || a.Release != tc.release {
				t.Errorf("printed %+v, want request %s with status %s", a, id, tc.status)
			}
			if tc.stderr == nil && stderr != "" {
				t.Errorf("stderr for an ok answer (with --id nothing is said):\n%s", stderr)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	// What the responder read is what was asked: one row, in order.
	for _, q := range c.requests() {
		if q.Op != "predict" || q.Stream != "s" || len(q.Rows) != 1 || len(q.Rows[0]) != 3 || q.Rows[0][0] != 1.5 || q.Rows[0][1] != 2 || q.Rows[0][2] != 0 {
			t.Errorf("request as sent: %+v, want op predict, stream s, rows [[1.5 2 0]]", q)
		}
	}
}

// TestPredictOwnAnswerOnly: predict prints its own request's answer and
// nothing else: not an older non-ok response with the same id already on
// the topic (asked again, the request may be answered now), not another
// querier's answer published first, not an answer of the same id for
// another stream, and a duplicate identical answer once. An id answered ok
// before is a retry: its answer is read from the topic and the request is
// not sent again (the release stage answers an id once). Without --id it
// makes a random id and says it on stderr.
func TestPredictOwnAnswerOnly(t *testing.T) {
	c := newPredictCLI(t, func(q schema.PredictRequest) []schema.PredictResponse {
		other := answerOf(schema.PredictRequest{RequestID: "someone-else", Stream: q.Stream, Release: q.Release, Op: "predict"}, "ok", "")
		other.Label = "other"
		wrongStream := answerOf(q, "ok", "")
		wrongStream.Stream, wrongStream.Label = "another-stream", "wrong-stream"
		mine := answerOf(q, "ok", "")
		mine.Label = "fresh"
		return []schema.PredictResponse{other, wrongStream, mine, mine}
	})
	for _, old := range []schema.PredictResponse{
		answerOf(schema.PredictRequest{RequestID: "q1", Stream: "s", Release: "r", Op: "predict"}, "no_model", "no window yet"),
		answerOf(schema.PredictRequest{RequestID: "q0", Stream: "s", Release: "r", Op: "predict"}, "ok", ""),
		answerOf(schema.PredictRequest{RequestID: "q0", Stream: "x", Release: "r", Op: "predict"}, "ok", ""),
	} {
		old.Label = "earlier-" + old.Stream
		b, err := schema.EncodePredictResponse(old)
		if err != nil {
			t.Fatal(err)
		}
		c.Produce(responsesTopic, kafka.Message{Key: []byte(old.RequestID), Value: b})
	}

	code, stdout, stderr := c.predict(t, "--stream", "s", "--release", "r", "--features", "1", "--id", "q1")
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if a := oneLine(t, stdout); a.RequestID != "q1" || a.Label != "fresh" {
		t.Errorf("printed %+v, want q1's answer to this request (label fresh)", a)
	}
	code, stdout, stderr = c.predict(t, "--stream", "s", "--release", "r", "--features", "1", "--id", "q0")
	if code != exitOK {
		t.Fatalf("retry: exit %d; stderr:\n%s", code, stderr)
	}
	if a := oneLine(t, stdout); a.RequestID != "q0" || a.Label != "earlier-s" {
		t.Errorf("retry: printed %+v, want q0's earlier answer for stream s", a)
	}
	if !strings.Contains(stderr, "answered before") {
		t.Errorf("retry: stderr does not say the answer is an earlier one:\n%s", stderr)
	}
	code, stdout, stderr = c.predict(t, "--stream", "s", "--release", "r", "--features", "1")
	if code != exitOK {
		t.Fatalf("random id: exit %d; stderr:\n%s", code, stderr)
	}
	a := oneLine(t, stdout)
	if !strings.HasPrefix(a.RequestID, "q-") || a.Label != "fresh" {
		t.Errorf("random id: printed %+v, want a q-… id and label fresh", a)
	}
	if !strings.Contains(stderr, "request "+a.RequestID+" sent to "+requestsTopic) {
		t.Errorf("random id: stderr does not name the id %s:\n%s", a.RequestID, stderr)
	}
	// The responder reads the requests in order and has answered the
	// last one: had q0 been sent again, it would have read it.
	for _, q := range c.requests() {
		if q.RequestID == "q0" {
			t.Errorf("retry: request q0 was sent again although it was answered")
		}
	}
}

// TestPredictTimeout: with nothing answering, predict gives up after
// --timeout with exit code 7 and says what to check; the request is on
// the requests topic, where `tail requests` shows it.
func TestPredictTimeout(t *testing.T) {
	c := newPredictCLI(t, nil)
	code, stdout, stderr := c.predict(t, "--stream", "s", "--release", "r", "--features", "1,2", "--id", "q-late", "--timeout", "300ms")
	if code != exitPredictTimeout {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitPredictTimeout, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout without an answer:\n%s", stdout)
	}
	for _, w := range []string{"no answer to request q-late within 300ms", "dpstream run", "release stage", "r is a prediction release of stream s", requestsTopic, "--id q-late"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	code, stdout, stderr = cliTimeout(t, 60*time.Second, "tail", "requests", "--brokers", c.Addr)
	if code != exitOK || !strings.Contains(stdout, `"request_id":"q-late"`) || !strings.Contains(stdout, `"rows":[[1,2]]`) {
		t.Errorf("tail requests: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestPredictMissingTopics: without the query topics (no release stage
// with a prediction release has run) predict says so, sends nothing,
// and does not wait for --timeout.
func TestPredictMissingTopics(t *testing.T) {
	b := testkit.StartBroker(t)
	code, _, stderr := cliTimeout(t, 60*time.Second, "predict", "--brokers", b.Addr, "--stream", "s", "--release", "r", "--features", "1", "--timeout", "1h")
	if code != exitError {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitError, stderr)
	}
	for _, w := range []string{"does not exist", requestsTopic, "dpstream run", "prediction release"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// TestPredictEvaluate: --evaluate sends one evaluate request with every
// row and label of a CSV or JSON-lines file, in order.
func TestPredictEvaluate(t *testing.T) {
	c := newPredictCLI(t, func(q schema.PredictRequest) []schema.PredictResponse {
		a := answerOf(q, "ok", "")
		a.Label, a.Value, a.Interval95 = "", 0.25, 0.1
		return []schema.PredictResponse{a}
	})
	dir := t.TempDir()
	files := map[string]string{
		"eval.csv":   "x1,x2,label\n1.5,2,yes\n\n0,-1,no\n",
		"eval.jsonl": "{\"features\":[1.5,2],\"label\":\"yes\"}\n\n{\"features\":[0,-1],\"label\":\"no\"}\n",
		"eval.txt":   "{\"features\":[1.5,2],\"label\":\"yes\"}\n{\"features\":[0,-1],\"label\":\"no\"}",
	}
	for name, text := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			writeFile(t, path, text)
			id := "q-eval-" + name
			code, stdout, stderr := c.predict(t, "--stream", "s", "--release", "r", "--evaluate", path, "--id", id)
			if code != exitOK {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			if a := oneLine(t, stdout); a.RequestID != id || a.Op != "evaluate" || a.Value != 0.25 {
				t.Errorf("printed %+v, want the evaluate answer of %s", a, id)
			}
			var q *schema.PredictRequest
			for _, r := range c.requests() {
				if r.RequestID == id {
					q = &r
				}
			}
			if q == nil {
				t.Fatalf("the responder did not read %s", id)
			}
			if q.Op != "evaluate" || len(q.Rows) != 2 || q.Rows[0][0] != 1.5 || q.Rows[1][1] != -1 || strings.Join(q.Labels, ",") != "yes,no" {
				t.Errorf("request as sent: %+v, want op evaluate, rows [[1.5 2] [0 -1]], labels [yes no]", q)
			}
		})
	}
}

// TestReadEvalRows: the --evaluate parser takes CSV (header: features,
// then label) and JSON lines, and names the line of every bad row.
func TestReadEvalRows(t *testing.T) {
	cases := []struct {
		name, in   string
		rows       int
		labels     string
		wantErrors []string // each must appear; none means success
	}{
		{"csv", "a,b,label\n1,2,x\n3,4,y\n", 2, "x,y", nil},
		{"csv label any case, spaces", "a, b, Label\n1, 2, x\n", 1, "x", nil},
		{"csv regression labels", "a,label\n1,2.5\n", 1, "2.5", nil},
		{"jsonl", "{\"features\":[1,2],\"label\":\"x\"}\n{\"features\":[3,4],\"label\":\"y\"}\n", 2, "x,y", nil},
		{"jsonl numeric label kept as written", "{\"features\":[1],\"label\":2.50}\n", 1, "2.50", nil},
		{"csv header without label", "a,b,c\n1,2,x\n", 0, "", []string{"line 1:", `last column is "c"`, "label"}},
		{"csv label only", "label\nx\n", 0, "", []string{"line 1:"}},
		{"empty", "", 0, "", []string{"line 1: no CSV header"}},
		{"csv no rows", "a,label\n", 0, "", []string{"no labelled rows"}},
		{"csv bad number", "a,b,label\n1,2,x\n1,zz,y\n", 0, "", []string{`line 3: column b: "zz" is not a number`}},
		{"csv NaN", "a,label\nNaN,x\n", 0, "", []string{`line 2: column a: "NaN" is not a finite number`}},
		{"csv wrong width", "a,b,label\n1,2,x\n\n1,y\n", 0, "", []string{"line 4: 2 columns, want 3 (2 features and label)"}},
		{"csv empty label", "a,label\n1,\n", 0, "", []string{"line 2: empty label"}},
		{"csv several errors", "a,label\nx,1\n1,\n", 0, "", []string{"line 2:", "line 3: empty label"}},
		{"csv bad quote", "a,label\n1,\"x\n", 0, "", []string{"line 2"}},
		{"jsonl not json", "{\"features\":[1],\"label\":\"x\"}\n{oops\n", 0, "", []string{"line 2: want {\"features\""}},
		{"jsonl unknown field", "{\"features\":[1],\"label\":\"x\",\"lable\":1}\n", 0, "", []string{"line 1:", "lable"}},
		{"jsonl no label", "{\"features\":[1]}\n", 0, "", []string{"line 1: no label"}},
		{"jsonl no features", "\n{\"label\":\"x\"}\n", 0, "", []string{"line 2: no features"}},
		{"jsonl bool label", "{\"features\":[1],\"label\":true}\n", 0, "", []string{"line 1: label true: want a string or a number"}},
		{"jsonl string feature", "{\"features\":[\"1\"],\"label\":\"x\"}\n", 0, "", []string{"line 1:"}},
		{"jsonl ragged", "{\"features\":[1,2],\"label\":\"x\"}\n{\"features\":[1],\"label\":\"y\"}\n", 0, "", []string{"line 2: 1 features, but the first row has 2"}},
		{"jsonl two values", "{\"features\":[1],\"label\":\"x\"} {}\n", 0, "", []string{"line 1: more than one JSON value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows, labels, err := readEvalRows([]byte(tc.in))
			if tc.wantErrors == nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) != tc.rows || strings.Join(labels, ",") != tc.labels {
					t.Errorf("%d rows, labels %v; want %d rows, labels %s", len(rows), labels, tc.rows, tc.labels)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; rows %v labels %v", rows, labels)
			}
			for _, w := range tc.wantErrors {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestPredictBatch: --batch sends one request per JSON line (flags fill
// in the stream and release, a missing id is generated) and prints each
// answer once, as it arrives; the exit code is that of the first request
// whose answer is not ok.
func TestPredictBatch(t *testing.T) {
	c := newPredictCLI(t, func(q schema.PredictRequest) []schema.PredictResponse {
		if q.Rows[0][0] < 0 {
			return []schema.PredictResponse{answerOf(q, schema.PredictInvalid, "negative")}
		}
		a := answerOf(q, "ok", "")
		return []schema.PredictResponse{a, a}
	})
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	writeFile(t, path, `{"request_id":"b1","features":[1]}
{"request_id":"b2","stream":"s","release":"r","rows":[[-1]]}

{"features":[2]}
`)
	code, stdout, stderr := c.predict(t, "--stream", "s", "--release", "r", "--batch", path)
	if code != exitPredictInvalid {
		t.Fatalf("exit %d, want %d (b2 is invalid); stderr:\n%s", code, exitPredictInvalid, stderr)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var a schema.PredictResponse
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if _, dup := got[a.RequestID]; dup {
			t.Errorf("%s printed twice:\n%s", a.RequestID, stdout)
		}
		got[a.RequestID] = a.Status
	}
	if len(got) != 3 || got["b1"] != "ok" || got["b2"] != "invalid" {
		t.Errorf("answers %v, want b1 ok, b2 invalid and a generated id ok", got)
	}
	if !strings.Contains(stderr, "request b2 is invalid: negative") {
		t.Errorf("stderr does not explain b2:\n%s", stderr)
	}
}

// TestPredictUsage: bad flags, files and configs are refused with exit 2
// before anything is sent (no broker is needed to get there).
func TestPredictUsage(t *testing.T) {
	dir := t.TempDir()
	cfgPath := testkit.NewPipeline(ridesStream("cli.rides")).Brokers("127.0.0.1:1").WriteFile(t, filepath.Join(dir, "pipeline.yaml"))
	badEval := filepath.Join(dir, "bad.csv")
	writeFile(t, badEval, "a,label\n1,x\nq,y\n")
	badBatch := filepath.Join(dir, "bad.jsonl")
	writeFile(t, badBatch, "{\"request_id\":\"a\",\"features\":[1]}\n{\"request_id\":\"a\",\"features\":[2]}\n{\"request_id\":\"c\"}\n")
	conn := []string{"--brokers", "127.0.0.1:1"}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"no question", append([]string{"--stream", "s", "--release", "r"}, conn...), []string{"give one of --features"}},
		{"two questions", append([]string{"--stream", "s", "--release", "r", "--features", "1", "--evaluate", badEval}, conn...), []string{"give one of"}},
		{"no stream", append([]string{"--release", "r", "--features", "1"}, conn...), []string{"--stream and --release are required"}},
		{"bad features", append([]string{"--stream", "s", "--release", "r", "--features", "1,x"}, conn...), []string{`--features: value 2: "x" is not a number`}},
		{"infinite feature", append([]string{"--stream", "s", "--release", "r", "--features", "Inf"}, conn...), []string{"not a finite number"}},
		{"zero timeout", append([]string{"--stream", "s", "--release", "r", "--features", "1", "--timeout", "0s"}, conn...), []string{"--timeout 0s"}},
		{"id with batch", append([]string{"--batch", badBatch, "--id", "x"}, conn...), []string{"--id applies to one request"}},
		{"long id", append([]string{"--stream", "s", "--release", "r", "--features", "1", "--id", strings.Repeat("x", 300)}, conn...), []string{"at most 256"}},
		{"bad evaluate file", append([]string{"--stream", "s", "--release", "r", "--evaluate", badEval}, conn...),
			[]string{"--evaluate " + badEval + ": nothing was sent", `line 3: column a: "q" is not a number`}},
		{"missing evaluate file", append([]string{"--stream", "s", "--release", "r", "--evaluate", filepath.Join(dir, "none.csv")}, conn...), []string{"none.csv"}},
		{"bad batch", append([]string{"--stream", "s", "--release", "r", "--batch", badBatch}, conn...),
			[]string{`line 2: request_id "a" repeats line 1's`, "line 3:", "no rows"}},
		{"config: not a prediction release", []string{"-c", cfgPath, "--stream", "rides", "--release", "n", "--features", "1"},
			[]string{"release n of stream rides is a count release, not a prediction release"}},
		{"config: no such release", []string{"-c", cfgPath, "--release", "nope", "--features", "1"}, []string{`stream rides has no release "nope"`}},
		{"config: no prediction release", []string{"-c", cfgPath, "--features", "1"}, []string{"stream rides has no prediction release in the config"}},
		{"config: no such stream", []string{"-c", cfgPath, "--stream", "nope", "--features", "1"}, []string{`no stream "nope"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cliTimeout(t, 10*time.Second, append([]string{"predict"}, tc.args...)...)
			if code != exitConfig {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitConfig, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestPredictHelp: the help documents the flags, the exit codes and the
// kcat recipe.
func TestPredictHelp(t *testing.T) {
	code, stdout, stderr := cli(t.Context(), "predict", "--help")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, w := range []string{"-stream", "-release", "-features", "-evaluate", "-batch", "-id", "-timeout", "-brokers",
		"kcat -P -b BROKER -t dpstream.predict.requests", "dpstream tail responses", "3 budget_exhausted", "7 no answer"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("help lacks %q:\n%s", w, stdout)
		}
	}
}

// TestTailPredictTopics: `tail requests` prints requests written as Avro
// or as JSON (as kcat sends them), a malformed one with its reason, and
// `tail responses` prints the answers as JSON lines.
func TestTailPredictTopics(t *testing.T) {
	c := newPredictCLI(t, nil)
	avro, err := schema.EncodePredictRequest(schema.PredictRequest{RequestID: "a1", Stream: "s", Release: "r", Rows: [][]float64{{1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	c.Produce(requestsTopic,
		kafka.Message{Key: []byte("a1"), Value: avro},
		kafka.Message{Value: []byte(`{"request_id":"j1","stream":"S","release":"R","features":[1.5,2,0]}`)},
		kafka.Message{Value: []byte(`{"request_id":"j2","stream":"S","release":"R"}`)})
	resp := answerOf(schema.PredictRequest{RequestID: "a1", Stream: "s", Release: "r", Op: "predict"}, "ok", "")
	rb, err := schema.EncodePredictResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	c.Produce(responsesTopic, kafka.Message{Key: []byte("a1"), Value: rb})

	type line struct {
		schema.PredictRequest
		Invalid string `json:"invalid"`
	}
	code, stdout, stderr := cliTimeout(t, 60*time.Second, "tail", "requests", "--brokers", c.Addr)
	if code != exitOK || stderr != "" {
		t.Fatalf("tail requests: exit %d; stderr:\n%s", code, stderr)
	}
	var reqs []line
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r line
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("tail requests: %q: %v", l, err)
		}
		reqs = append(reqs, r)
	}
	if len(reqs) != 3 || reqs[0].RequestID != "a1" || reqs[0].Op != "predict" || reqs[0].Invalid != "" ||
		reqs[1].RequestID != "j1" || len(reqs[1].Rows) != 1 || reqs[1].Rows[0][0] != 1.5 || reqs[1].Invalid != "" ||
		reqs[2].RequestID != "j2" || !strings.Contains(reqs[2].Invalid, "no rows") {
		t.Errorf("tail requests printed:\n%s", stdout)
	}

	code, stdout, stderr = cliTimeout(t, 60*time.Second, "tail", "responses", "--brokers", c.Addr)
	if code != exitOK || stderr != "" {
		t.Fatalf("tail responses: exit %d; stderr:\n%s", code, stderr)
	}
	if a := oneLine(t, stdout); a != resp {
		t.Errorf("tail responses printed %+v, want %+v", a, resp)
	}
}

// TestTailPredictUsage: tail names the query topics among its kinds.
func TestTailPredictUsage(t *testing.T) {
	for _, args := range [][]string{{"tail"}, {"tail", "queries", "--brokers", "127.0.0.1:1"}} {
		code, _, stderr := cliTimeout(t, 10*time.Second, args...)
		if code != exitConfig || !strings.Contains(stderr, "requests") || !strings.Contains(stderr, "responses") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the query topics named", args, code, stderr)
		}
	}
}
