package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// Exit codes of `dpstream predict` beyond exitOK, exitError and
// exitConfig: one per way a request can go unanswered, so that a script
// can tell a spent budget (stop asking) from a malformed request (fix it)
// from a release not ready yet (ask later) without parsing stderr.
const (
	exitPredictBudget  = 3 // budget_exhausted: the stream's budget or the release's max_queries is spent
	exitPredictInvalid = 4 // invalid: the release rejected the request (reason on stderr)
	exitPredictNoModel = 5 // no_model: the release has not released a window yet
	exitPredictUnknown = 6 // unknown_release: no prediction release of that name on the stream
	exitPredictTimeout = 7 // no answer within --timeout

	// statusOK is a response's status when the request was answered.
	statusOK = "ok"
)

// maxEvalFileBytes bounds what --evaluate and --batch read: far more than
// schema.MaxPredictRows rows of any sensible width.
const maxEvalFileBytes = 64 << 20

func cmdPredict(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("predict", "[-c pipeline.yaml] --stream S --release R (--features X1,X2,... | --evaluate FILE | --batch FILE) [flags]", `
Ask a prediction release a question over Kafka and print its private
answer: publish one PredictRequest to the requests topic (topics.requests,
default dpstream.predict.requests), then read the responses topic
(topics.responses) from where it ended before the request was sent, until
the response with the request's id arrives, and print it as one JSON line.
Other requests' responses, and any answer older than this request, are
skipped. Each answer is charged to the stream's privacy budget once: a
request id is answered once, and asking again with the same --id returns
the same answer at no further cost.

  --features 1.5,2,0   predict: one row of features, in the release's
                       feature order; the answer's label (a classifier) or
                       value ± interval95 (a regression)
  --evaluate FILE      private evaluation: the models' noisy mean loss over
                       labelled rows, from a CSV file with a header (the
                       feature columns in order, then a label column) or
                       JSON lines {"features":[1.5,2,0],"label":"yes"}
  --batch FILE         JSON lines, one request each as kcat would write it
                       (request_id, stream, release, features or rows, op,
                       labels; --stream, --release fill in missing ones, a
                       missing request_id is generated); the responses are
                       printed as they arrive, one line per request

Exit codes: 0 ok (for --batch: every answer ok); 1 Kafka failure; 2 usage
or configuration error, nothing sent; 3 budget_exhausted; 4 invalid (the
reason is on stderr); 5 no_model (no window released yet: ask later);
6 unknown_release; 7 no answer within --timeout. For --batch, 7 if any
request went unanswered, else the code of the first request (in input
order) whose answer is not ok.

Without dpstream, with kcat (requests may be JSON; responses are Avro,
so read them with 'dpstream tail responses'):
  echo '{"request_id":"q1","stream":"S","release":"R","features":[1.5,2,0]}' |
    kcat -P -b BROKER -t dpstream.predict.requests
  kcat -C -b BROKER -t dpstream.predict.responses   # Avro; prefer: dpstream tail responses -f`, stdout, stderr)
	var c connFlags
	c.register(fs, false)
	stream := fs.String("stream", "", "stream of the release (default: the config's only stream)")
	release := fs.String("release", "", "prediction release to ask (default: the stream's only prediction release in the config)")
	features := fs.String("features", "", "predict: one row of comma-separated numbers, in the release's feature order")
	evaluate := fs.String("evaluate", "", "evaluate: CSV (header: features, then label) or JSON lines {\"features\":[...],\"label\":\"...\"}; - reads stdin")
	batch := fs.String("batch", "", "JSON lines of requests, one per line; - reads stdin")
	id := fs.String("id", "", "request id (default: a random one, printed to stderr); the same id asks again without a second charge")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the answer")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	modes := 0
	for _, s := range []string{*features, *evaluate, *batch} {
		if s != "" {
			modes++
		}
	}
	if modes != 1 {
		fmt.Fprintln(stderr, "dpstream predict: give one of --features X1,X2,... (predict), --evaluate FILE (evaluate) or --batch FILE (JSON lines of requests)")
		return exitConfig
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "dpstream predict: --timeout %s: want a positive duration, e.g. 30s\n", *timeout)
		return exitConfig
	}
	if *id != "" && *batch != "" {
		fmt.Fprintln(stderr, "dpstream predict: --id applies to one request; in --batch, give each line its request_id")
		return exitConfig
	}
	cfg, ok := loadForClient(c.config, flagSet(fs, "c", "config"), stderr)
	if !ok {
		return exitConfig
	}
	s, r, err := predictTarget(cfg, *stream, *release, *batch == "")
	if err != nil {
		fmt.Fprintln(stderr, "dpstream predict:", err)
		return exitConfig
	}

	var reqs []schema.PredictRequest
	switch {
	case *features != "":
		row, err := parseFeatures(*features)
		if err != nil {
			fmt.Fprintln(stderr, "dpstream predict: --features:", err)
			return exitConfig
		}
		reqs = []schema.PredictRequest{{Op: "predict", Rows: [][]float64{row}}}
	case *evaluate != "":
		rows, labels, err := readInputFile(*evaluate, "evaluate", stderr, readEvalRows)
		if err != nil {
			printInputErrors(stderr, "--evaluate "+*evaluate, err)
			return exitConfig
		}
		reqs = []schema.PredictRequest{{Op: "evaluate", Rows: rows, Labels: labels}}
	default:
		reqs, _, err = readInputFile(*batch, "batch", stderr, func(b []byte) ([]schema.PredictRequest, struct{}, error) {
			q, err := readBatch(b, s, r)
			return q, struct{}{}, err
		})
		if err != nil {
			printInputErrors(stderr, "--batch "+*batch, err)
			return exitConfig
		}
	}
	if *batch == "" {
		q := &reqs[0]
		q.Stream, q.Release, q.RequestID = s, r, *id
		if q.RequestID == "" {
			q.RequestID = newRequestID()
		}
	}
	// Check each request as the release stage will decode it, so that
	// what is wrong with it is said here and nothing is sent.
	msgs := make([]kafka.Message, len(reqs))
	for i, q := range reqs {
		b, err := schema.EncodePredictRequest(q)
		if err == nil {
			_, err = schema.DecodePredictRequest(b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "dpstream predict: request %q: %v\n", q.RequestID, err)
			return exitConfig
		}
		msgs[i] = kafka.Message{Key: []byte(q.RequestID), Value: b}
	}

	conn, closeConn, code := clientConn(ctx, "predict", cfg, c, " (is the pipeline running?)", stderr)
	if code != exitOK {
		return code
	}
	defer closeConn()
	reqTopic, respTopic := cfg.Topics.Requests, cfg.Topics.Responses
	missing, err := conn.MissingTopics(ctx, []string{reqTopic, respTopic})
	if err != nil {
		fmt.Fprintf(stderr, "dpstream predict: %v (brokers: %v)\n", err, conn.Brokers)
		return exitError
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "dpstream predict: topic %s does not exist on %v. The release stage creates the query topics when its config has a prediction release: is `dpstream run` running with one, on these brokers? (topics.requests and topics.responses name them: %s, %s)\n",
			strings.Join(missing, " and "), conn.Brokers, reqTopic, respTopic)
		return exitError
	}
	// The responses topic's end, observed before anything is sent: every
	// answer to these requests comes after it.
	starts, err := conn.EndOffsets(ctx, respTopic)
	if err != nil {
		fmt.Fprintf(stderr, "dpstream predict: %v (brokers: %v)\n", err, conn.Brokers)
		return exitError
	}
	// A request id the querier chose may have been answered before (a
	// retry after a timeout): the release stage answers an id once, and
	// its answer is on the responses topic, so it is read from there, and
	// the request is not sent again.
	earlier := map[string]schema.PredictResponse{}
	if *id != "" || *batch != "" {
		wanted := map[string]schema.PredictRequest{}
		for _, q := range reqs {
			wanted[q.RequestID] = q
		}
		err := conn.ReadAll(ctx, respTopic, func(m kafka.Message) error {
			a, err := schema.DecodePredictResponse(m.Value)
			if q, ok := wanted[a.RequestID]; err == nil && ok && a.Status == statusOK && a.Stream == q.Stream && a.Release == q.Release {
				earlier[a.RequestID] = a
			}
			return nil
		})
		if err != nil {
			fmt.Fprintf(stderr, "dpstream predict: read %s: %v (brokers: %v)\n", respTopic, err, conn.Brokers)
			return exitError
		}
	}
	if len(earlier) > 0 {
		var unsent []kafka.Message
		for i, q := range reqs {
			if _, ok := earlier[q.RequestID]; ok {
				fmt.Fprintf(stderr, "request %s was answered before: its answer, from %s, is not asked for again\n", q.RequestID, respTopic)
				continue
			}
			unsent = append(unsent, msgs[i])
		}
		msgs = unsent
	}
	var werr error
	if len(msgs) > 0 {
		w := conn.NewWriter(reqTopic)
		werr = w.WriteMessages(ctx, msgs...)
		w.Close()
	}
	if werr != nil {
		fmt.Fprintf(stderr, "dpstream predict: send to %s: %v (brokers: %v)\n", reqTopic, werr, conn.Brokers)
		return exitError
	}
	if *batch == "" && *id == "" {
		fmt.Fprintf(stderr, "request %s sent to %s; waiting up to %s for the answer on %s\n", reqs[0].RequestID, reqTopic, *timeout, respTopic)
	}

	waitCtx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	pending := make(map[string]schema.PredictRequest, len(reqs))
	for _, q := range reqs {
		pending[q.RequestID] = q
	}
	answers := map[string]schema.PredictResponse{}
	enc := json.NewEncoder(stdout)
	var printErr error
	for _, q := range reqs {
		if a, ok := earlier[q.RequestID]; ok {
			delete(pending, q.RequestID)
			answers[q.RequestID] = a
			if err := enc.Encode(a); err != nil {
				return exitError
			}
		}
	}
	if len(pending) > 0 {
		err = readFrom(waitCtx, conn, respTopic, starts, func(m kafka.Message) (bool, error) {
			a, err := schema.DecodePredictResponse(m.Value)
			if err != nil {
				// Not an answer to any request of ours.
				return false, nil
			}
			q, ok := pending[a.RequestID]
			if !ok || (a.Stream != "" && a.Stream != q.Stream) || (a.Release != "" && a.Release != q.Release) {
				return false, nil // another querier's answer, or an answer printed already
			}
			delete(pending, a.RequestID)
			answers[a.RequestID] = a
			if err := enc.Encode(a); err != nil {
				printErr = err
				return true, nil
			}
			explainStatus(stderr, q, a)
			return len(pending) == 0, nil
		})
	}
	if printErr != nil {
		return exitError // stdout closed: nobody reads the answers
	}
	if err != nil && waitCtx.Err() == nil {
		fmt.Fprintf(stderr, "dpstream predict: %v (brokers: %v)\n", err, conn.Brokers)
		return exitError
	}
	if len(pending) > 0 {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "dpstream predict: interrupted before %d answer(s) arrived\n", len(pending))
			return exitError
		}
		for _, q := range reqs {
			if _, ok := pending[q.RequestID]; ok {
				fmt.Fprintf(stderr, "dpstream predict: no answer to request %s within %s on %s. Check that `dpstream run` is running with the release stage (--stages all or release) on these brokers (%v), that %s is a prediction release of stream %s in its config (`dpstream explain -c pipeline.yaml`), and that it reads %s (topics.requests). The request stays queued and is answered once: `--id %s` asks again at no further cost.\n",
					q.RequestID, *timeout, respTopic, conn.Brokers, q.Release, q.Stream, reqTopic, q.RequestID)
			}
		}
		return exitPredictTimeout
	}
	for _, q := range reqs {
		if code := statusExit(answers[q.RequestID].Status); code != exitOK {
			return code
		}
	}
	return exitOK
}

// predictTarget resolves --stream and --release against the config when it
// names streams: a missing one defaults to the only choice, and one the
// config does not have, or a release that is not a prediction release, is
// an error that says what to give instead. Without streams in the config
// (brokers from --brokers only) both must be given. For --batch (need
// false) they are defaults for the lines and may stay empty.
func predictTarget(cfg *config.Config, stream, release string, need bool) (string, string, error) {
	if len(cfg.Streams) == 0 {
		if need && (stream == "" || release == "") {
			return "", "", errors.New("--stream and --release are required (no config names the streams: give -c pipeline.yaml, or both flags)")
		}
		return stream, release, nil
	}
	if stream == "" && !need {
		if release != "" {
			return "", "", errors.New("--release without --stream in --batch: give --stream too")
		}
		return "", "", nil
	}
	st, err := pickStream(cfg, stream)
	if err != nil {
		return "", "", err
	}
	var preds []string
	for _, r := range st.Releases {
		if kind.AnswersQueries(r) {
			preds = append(preds, r.Name)
		}
	}
	if release == "" {
		if !need {
			return st.Name, "", nil
		}
		if len(preds) == 1 {
			return st.Name, preds[0], nil
		}
		if len(preds) == 0 {
			return "", "", fmt.Errorf("stream %s has no prediction release in the config (a release that answers queries, such as kind: prediction); add one, or give --release", st.Name)
		}
		return "", "", fmt.Errorf("stream %s has %d prediction releases; choose one with --release (%s)", st.Name, len(preds), strings.Join(preds, ", "))
	}
	for _, r := range st.Releases {
		if r.Name == release {
			if !kind.AnswersQueries(r) {
				return "", "", fmt.Errorf("release %s of stream %s is a %s release, not a prediction release: it answers no queries%s", release, st.Name, r.Kind, listHint(preds))
			}
			return st.Name, release, nil
		}
	}
	return "", "", fmt.Errorf("stream %s has no release %q in the config%s", st.Name, release, listHint(preds))
}

func listHint(preds []string) string {
	if len(preds) == 0 {
		return ""
	}
	return " (its prediction releases: " + strings.Join(preds, ", ") + ")"
}

// newRequestID returns a random request id: 64 random bits, so that two
// queriers' ids do not collide (an id answered once is never answered
// again, whoever asks).
func newRequestID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a time-based
		// id is still unique enough for one querier.
		return fmt.Sprintf("q-%x", time.Now().UnixNano())
	}
	return "q-" + hex.EncodeToString(b[:])
}

// parseFeatures parses --features: comma-separated finite numbers.
func parseFeatures(s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	row := make([]float64, len(parts))
	for i, p := range parts {
		v, err := parseFinite(p)
		if err != nil {
			return nil, fmt.Errorf("value %d: %v", i+1, err)
		}
		row[i] = v
	}
	return row, nil
}

// parseFinite parses a decimal number, refusing NaN and infinities, which
// no model answers for.
func parseFinite(s string) (float64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return v, nil
}

// statusExit is the exit code for a response's status.
func statusExit(status string) int {
	switch status {
	case "ok":
		return exitOK
	case "budget_exhausted":
		return exitPredictBudget
	case schema.PredictInvalid:
		return exitPredictInvalid
	case schema.PredictNoModel:
		return exitPredictNoModel
	case schema.PredictUnknownRelease:
		return exitPredictUnknown
	}
	return exitError
}

// explainStatus says on stderr why an answer is not ok, and what to do.
func explainStatus(w io.Writer, q schema.PredictRequest, a schema.PredictResponse) {
	reason := ""
	if a.Reason != "" {
		reason = ": " + a.Reason
	}
	switch a.Status {
	case "ok":
	case "budget_exhausted":
		fmt.Fprintf(w, "dpstream predict: request %s refused, budget exhausted%s. Stream %s's privacy budget (or release %s's max_queries) allows no more answers; nothing was charged. `dpstream budget` shows what remains.\n",
			q.RequestID, reason, q.Stream, q.Release)
	case schema.PredictInvalid:
		fmt.Fprintf(w, "dpstream predict: request %s is invalid%s. Nothing was charged; fix the request and send it with a new --id.\n", q.RequestID, reason)
	case schema.PredictNoModel:
		fmt.Fprintf(w, "dpstream predict: release %s of stream %s has no model yet%s: no window has been released. Ask again after its first window closes (`dpstream tail releases -f` shows it).\n",
			q.Release, q.Stream, reason)
	case schema.PredictUnknownRelease:
		fmt.Fprintf(w, "dpstream predict: stream %s has no prediction release %s%s. Check --stream and --release against the config `dpstream run` uses.\n",
			q.Stream, q.Release, reason)
	default:
		fmt.Fprintf(w, "dpstream predict: request %s: unknown status %q%s (is this dpstream older than the pipeline's?)\n", q.RequestID, a.Status, reason)
	}
}

// readFrom reads every partition of topic from its offset in starts, and
// calls fn for each record, from one goroutine at a time, until fn says it
// is done or ctx ends (then it returns nil: the caller knows what it was
// waiting for).
func readFrom(ctx context.Context, conn *kafkaio.Connection, topic string, starts map[int]int64, fn func(kafka.Message) (bool, error)) error {
	errDone := errors.New("done")
	err := conn.FollowFrom(ctx, topic, starts, func(m kafka.Message) error {
		done, err := fn(m)
		if err == nil && done {
			return errDone
		}
		return err
	})
	if errors.Is(err, errDone) || (err != nil && ctx.Err() != nil) {
		return nil
	}
	return err
}

// readInputFile reads the file of --evaluate or --batch ("-": stdin),
// bounded by maxEvalFileBytes, and parses it with parse.
func readInputFile[T, U any](path, flagName string, stderr io.Writer, parse func([]byte) (T, U, error)) (T, U, error) {
	var zt T
	var zu U
	in, closeIn, err := openInput(path, flagName, stderr)
	if err != nil {
		return zt, zu, err
	}
	defer closeIn()
	b, err := io.ReadAll(io.LimitReader(in, maxEvalFileBytes+1))
	if err != nil {
		return zt, zu, err
	}
	if len(b) > maxEvalFileBytes {
		return zt, zu, fmt.Errorf("larger than %d MiB", maxEvalFileBytes>>20)
	}
	return parse(b)
}

// printInputErrors prints a file's errors, one a line, the first 20.
func printInputErrors(w io.Writer, what string, err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	fmt.Fprintf(w, "dpstream predict: %s: nothing was sent:\n", what)
	for i, e := range errs {
		if i == 20 {
			fmt.Fprintf(w, "  (and %d more)\n", len(errs)-20)
			break
		}
		fmt.Fprintf(w, "  %v\n", e)
	}
}

// readEvalRows parses an --evaluate file: CSV with a header row (the
// feature columns in order, then label), or JSON lines
// {"features":[...],"label":"..."} (a first non-blank character '{').
// Every bad line is reported with its number; a label may be a JSON
// string or number (a regression's target, kept in its decimal text).
func readEvalRows(b []byte) ([][]float64, []string, error) {
	var rows [][]float64
	var labels []string
	var errs []error
	add := func(line int, row []float64, label string) {
		if len(rows) > 0 && len(row) != len(rows[0]) {
			errs = append(errs, fmt.Errorf("line %d: %d features, but the first row has %d", line, len(row), len(rows[0])))
			return
		}
		rows, labels = append(rows, row), append(labels, label)
	}
	if t := bytes.TrimLeft(b, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		for i, text := range bytes.Split(b, []byte("\n")) {
			line := i + 1
			text = bytes.TrimSpace(text)
			if len(text) == 0 {
				continue
			}
			row, label, err := evalJSONLine(text)
			if err != nil {
				errs = append(errs, fmt.Errorf("line %d: %v", line, err))
				continue
			}
			add(line, row, label)
		}
	} else {
		cr := csv.NewReader(bytes.NewReader(b))
		cr.FieldsPerRecord = -1
		cr.TrimLeadingSpace = true
		header, err := cr.Read()
		if err != nil {
			return nil, nil, fmt.Errorf("line 1: no CSV header (want the feature columns, then label): %v", err)
		}
		if len(header) < 2 || !strings.EqualFold(strings.TrimSpace(header[len(header)-1]), "label") {
			return nil, nil, fmt.Errorf("line 1: the header's last column is %q; want the feature columns in order, then a column named label", header[len(header)-1])
		}
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				// A quoting error (its message names the line): the
				// reader cannot find the next record reliably after it.
				errs = append(errs, err)
				break
			}
			line, _ := cr.FieldPos(0)
			if len(rec) != len(header) {
				errs = append(errs, fmt.Errorf("line %d: %d columns, want %d (%d features and label)", line, len(rec), len(header), len(header)-1))
				continue
			}
			row := make([]float64, len(rec)-1)
			bad := false
			for j := range row {
				v, err := parseFinite(rec[j])
				if err != nil {
					errs = append(errs, fmt.Errorf("line %d: column %s: %v", line, header[j], err))
					bad = true
					break
				}
				row[j] = v
			}
			label := strings.TrimSpace(rec[len(rec)-1])
			if !bad && label == "" {
				errs = append(errs, fmt.Errorf("line %d: empty label", line))
				bad = true
			}
			if !bad {
				add(line, row, label)
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if len(rows) == 0 {
		return nil, nil, errors.New("no labelled rows")
	}
	if len(rows) > schema.MaxPredictRows {
		return nil, nil, fmt.Errorf("%d rows, at most %d in one request", len(rows), schema.MaxPredictRows)
	}
	return rows, labels, nil
}

// evalJSONLine parses one line {"features":[...],"label":...}.
func evalJSONLine(text []byte) ([]float64, string, error) {
	var j struct {
		Features []float64       `json:"features"`
		Label    json.RawMessage `json:"label"`
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, "", fmt.Errorf("want {\"features\":[numbers],\"label\":\"...\"}: %v", err)
	}
	if dec.More() {
		return nil, "", errors.New("more than one JSON value on the line")
	}
	if len(j.Features) == 0 {
		return nil, "", errors.New("no features")
	}
	var label string
	switch {
	case len(j.Label) == 0 || string(j.Label) == "null":
		return nil, "", errors.New("no label")
	case j.Label[0] == '"':
		if err := json.Unmarshal(j.Label, &label); err != nil {
			return nil, "", fmt.Errorf("label: %v", err)
		}
	case j.Label[0] == '-' || (j.Label[0] >= '0' && j.Label[0] <= '9'):
		label = string(j.Label) // a regression's target, as written
	default:
		return nil, "", fmt.Errorf("label %s: want a string or a number", j.Label)
	}
	if strings.TrimSpace(label) == "" {
		return nil, "", errors.New("empty label")
	}
	return j.Features, label, nil
}

// readBatch parses --batch: JSON lines, one request each, as
// schema.DecodePredictRequest reads them; stream and release fill in
// those a line leaves out, a missing request_id is generated, and an id
// given twice is an error (it would be answered once).
func readBatch(b []byte, stream, release string) ([]schema.PredictRequest, error) {
	var reqs []schema.PredictRequest
	var errs []error
	seen := map[string]int{}
	for i, text := range bytes.Split(b, []byte("\n")) {
		line := i + 1
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(text, &obj); err != nil || obj == nil {
			errs = append(errs, fmt.Errorf("line %d: not a JSON object: %v", line, err))
			continue
		}
		fill := func(key, v string) {
			if _, ok := obj[key]; !ok && v != "" {
				obj[key], _ = json.Marshal(v)
			}
		}
		fill("stream", stream)
		fill("release", release)
		fill("request_id", newRequestID())
		full, err := json.Marshal(obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %v", line, err))
			continue
		}
		q, err := schema.DecodePredictRequest(full)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %v", line, err))
			continue
		}
		if prev, ok := seen[q.RequestID]; ok {
			errs = append(errs, fmt.Errorf("line %d: request_id %q repeats line %d's (an id is answered once)", line, q.RequestID, prev))
			continue
		}
		seen[q.RequestID] = line
		reqs = append(reqs, q)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(reqs) == 0 {
		return nil, errors.New("no requests")
	}
	return reqs, nil
}
