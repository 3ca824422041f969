package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// loadForClient loads the config for commands that only connect to Kafka.
// Without -c and without a pipeline.yaml in the working directory it uses
// the defaults (embedded broker address, default topic names).
func loadForClient(path string, explicit bool, stderr io.Writer) (*config.Config, bool) {
	cfg, err := config.Load(path)
	if err == nil {
		return cfg, true
	}
	if !explicit && isNotExist(err) {
		return &config.Config{Embedded: config.Embedded{Addr: config.DefaultEmbeddedAddr}, Topics: config.DefaultTopics(), Group: config.DefaultGroup}, true
	}
	printConfigError(stderr, err)
	return nil, false
}

func cmdTail(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tail", "releases|accountant|ledger|deadletter|requests|responses [flags]", `
Decode the records of one of dpstream's topics and print them as JSON
lines: releases (the public private releases), accountant (budget state per
stream), ledger (every charge with its release payload), deadletter
(rejected input with the reason), or the query path of prediction
releases: requests (the queries, Avro or JSON as sent) and responses (their
private answers; see dpstream predict). Without --follow it prints what is there
and exits. With --plot, releases are drawn as terminal charts instead.

A release too large for one Kafka record (a per-key release with many keys)
is published as chunks with the same release_id; tail buffers them and
prints the release once, as one line, when all its chunks have arrived (a
release whose chunks are still arriving when tail stops is not printed).
--chunks prints the chunks as they are instead.`, stdout, stderr)
	var c connFlags
	c.register(fs, false)
	follow := fs.Bool("follow", false, "keep printing new records until interrupted")
	fs.BoolVar(follow, "f", false, "same as --follow")
	topicFlag := fs.String("topic", "", "read this topic instead of the configured one")
	plot := fs.Bool("plot", false, "releases only: draw each release as a terminal chart (histogram bars, a heatmap for two fields, marginals for three, density curve, category bars for randomized_response, a coefficient table for regression, or value ± interval) instead of JSON")
	width := fs.Int("width", 0, "with --plot: chart width in columns (0: $COLUMNS, else 80)")
	color := fs.Bool("color", false, "with --plot: color the chart when stdout is a terminal (NO_COLOR disables)")
	rawChunks := fs.Bool("chunks", false, "releases only: print each chunk of a release published in chunks as it is (chunk and chunks set), instead of the release joined once all its chunks arrived")
	pos, code, done := parseArgs(fs, args, 1, stdout)
	if done {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "dpstream tail: which topic? releases, accountant, ledger or deadletter (or requests, responses: the query path of prediction releases)")
		return exitConfig
	}
	what := pos[0]
	if *plot && what != "releases" {
		fmt.Fprintf(stderr, "dpstream tail: --plot draws releases only, not %s\n", what)
		return exitConfig
	}
	if *rawChunks && what != "releases" {
		fmt.Fprintf(stderr, "dpstream tail: --chunks applies to releases only, not %s\n", what)
		return exitConfig
	}
	if *width < 0 || (*width > 0 && *width < chart.MinWidth) {
		fmt.Fprintf(stderr, "dpstream tail: --width %d: want 0 (automatic) or at least %d\n", *width, chart.MinWidth)
		return exitConfig
	}
	plotOpts := chart.Options{Width: chart.Width(*width, os.Getenv), Color: *color && chart.IsTerminal(stdout, os.Getenv)}
	cfg, ok := loadForClient(c.config, flagSet(fs, "c", "config"), stderr)
	if !ok {
		return exitConfig
	}
	var topic string
	var decode func(kafka.Message) (any, error)
	switch what {
	case "releases":
		topic = cfg.Topics.Releases
		decode = func(m kafka.Message) (any, error) { return schema.DecodeRelease(m.Value) }
		if !*rawChunks {
			decode = releaseJoiner()
		}
	case "accountant":
		topic = cfg.Topics.Accountant
		decode = func(m kafka.Message) (any, error) { return schema.DecodeBudgetState(m.Value) }
	case "ledger":
		topic = cfg.Topics.Ledger
		decode = ledgerDecoder(func(msg string) { fmt.Fprintf(stderr, "dpstream tail: %s\n", msg) })
	case "deadletter":
		topic = cfg.Topics.DeadLetter
		decode = decodeDeadLetter
	case "requests":
		topic = cfg.Topics.Requests
		decode = decodeRequest
	case "responses":
		topic = cfg.Topics.Responses
		decode = func(m kafka.Message) (any, error) { return schema.DecodePredictResponse(m.Value) }
	default:
		fmt.Fprintf(stderr, "dpstream tail: unknown topic kind %q (want releases, accountant, ledger, deadletter, requests or responses)\n", what)
		return exitConfig
	}
	if *topicFlag != "" {
		topic = *topicFlag
	}
	conn, closeConn, code := clientConn(ctx, "tail", cfg, c, " (is the pipeline running?)", stderr)
	if code != exitOK {
		return code
	}
	defer closeConn()
	enc := json.NewEncoder(stdout)
	print := func(m kafka.Message) error {
		v, err := decode(m)
		if err != nil {
			fmt.Fprintf(stderr, "dpstream tail: %s[%d]@%d: %v\n", m.Topic, m.Partition, m.Offset, err)
			return nil
		}
		if v == nil {
			return nil // a chunk of a release not complete yet
		}
		if rel, isRelease := v.(schema.Release); isRelease && *plot {
			return plotRelease(stdout, rel, plotOpts)
		}
		return enc.Encode(v)
	}
	var err error
	if *follow {
		err = conn.Follow(ctx, topic, kafka.FirstOffset, print)
	} else {
		err = conn.ReadAll(ctx, topic, print)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "dpstream tail: %v (is the pipeline running? brokers: %v)\n", err, conn.Brokers)
		return exitError
	}
	return exitOK
}

// releaseJoiner returns a decoder of releases-topic records that joins the
// chunks of a release published in chunks (schema.JoinRelease): it returns
// nil for a chunk until every chunk of its release has arrived (repeated
// chunks are ignored), then the joined release, once per release id. A
// release in one record is returned as it is. Only the chunks of releases
// still incomplete are kept, and the ids of those completed.
func releaseJoiner() func(kafka.Message) (any, error) {
	pending := map[string]map[int32]schema.Release{}
	done := map[string]bool{}
	return func(m kafka.Message) (any, error) {
		r, err := schema.DecodeRelease(m.Value)
		if err != nil || r.Chunks == 0 {
			return r, err
		}
		id := r.ReleaseID
		if done[id] {
			return nil, nil // a copy of a chunk of a release printed already
		}
		if pending[id] == nil {
			pending[id] = map[int32]schema.Release{}
		}
		if _, dup := pending[id][r.Chunk]; !dup {
			pending[id][r.Chunk] = r
		}
		if int32(len(pending[id])) < r.Chunks {
			return nil, nil
		}
		chunks := make([]schema.Release, 0, len(pending[id]))
		for _, c := range pending[id] {
			chunks = append(chunks, c)
		}
		delete(pending, id)
		done[id] = true
		joined, err := schema.JoinRelease(chunks)
		if err != nil {
			return nil, err
		}
		return joined, nil
	}
}

// ledgerJSON shows a ledger charge with its payload decoded, and whether it
// counts (see package internal/ledger).
type ledgerJSON struct {
	Type string `json:"type"` // charge
	schema.LedgerCharge
	// Payload is the decoded payload: the release (schema.Release), or
	// for the answer to a query (request_id set) the response
	// (schema.PredictResponse).
	Payload any `json:"payload"`
	// Epoch is the epoch of the release instance that wrote the charge;
	// Valid is false for a void charge (written after another instance
	// took ownership: never published, not counted) and Duplicate is set
	// on a second valid charge of one release id with another payload.
	Epoch     string `json:"epoch"`
	Valid     bool   `json:"valid"`
	Duplicate bool   `json:"duplicate,omitempty"`
	// StateBytes is, for a release whose kind keeps state across windows
	// (a continual release's step log, a prediction release's model
	// state), how many bytes of it the charge holds; the state itself
	// (the window's exact statistics) is data and is never printed.
	StateBytes int `json:"state_bytes,omitempty"`
	// ContinualLogged and ModelValues are the same for the legacy fields
	// of charges written before the state existed: how many values a
	// continual step log (continual_x) or a model state (model) holds.
	ContinualLogged int `json:"continual_logged,omitempty"`
	ModelValues     int `json:"model_values,omitempty"`
	// Chunks is, for a valid charge of a release in chunks, the number of
	// chunks (the payload is chunk 0; the others are the chunk records the
	// ledger ties to the charge).
	Chunks int `json:"chunks,omitempty"`
}

// ledgerChunkJSON shows a chunk record with its payload decoded.
type ledgerChunkJSON struct {
	Type   string `json:"type"` // chunk
	Offset int64  `json:"offset"`
	schema.LedgerChunk
	Digest  string         `json:"digest"` // hex
	Payload schema.Release `json:"payload"`
}

// ledgerMarkerJSON shows an epoch marker or a stream start.
// ledgerCheckpointJSON is how `tail ledger` prints a checkpoint (on the
// record that completes it) or one of its parts.
type ledgerCheckpointJSON struct {
	Type      string `json:"type"` // checkpoint | checkpoint_part
	Offset    int64  `json:"offset"`
	Partition int    `json:"partition"`
	Epoch     string `json:"epoch"`
	Owner     string `json:"owner,omitempty"`
	At        int64  `json:"at,omitempty"`
	Basis     int64  `json:"basis,omitempty"`
	Parts     int32  `json:"parts,omitempty"`
	// Valid: written by the owner of the time; Usable: the ledger may
	// be trimmed to it; Restored: the partition starts with it.
	Valid    bool   `json:"valid,omitempty"`
	Usable   bool   `json:"usable,omitempty"`
	Restored bool   `json:"restored,omitempty"`
	Streams  int    `json:"streams,omitempty"`
	Error    string `json:"error,omitempty"`
}

type ledgerMarkerJSON struct {
	Type   string `json:"type"` // epoch | stream_start
	Offset int64  `json:"offset"`
	*schema.LedgerEpoch
	*schema.StreamStart
	// First is set on a stream's first start, the one that counts.
	First bool `json:"first,omitempty"`
}

// ledgerDecoder returns a decoder of ledger records read from the first
// one on, in order: whether a charge counts depends on the epoch markers
// before it.
//
// A partition trimmed to a checkpoint while it is read (the reader jumps to
// the new log start) is read on from there with a new Book, and warn is
// told which records were trimmed away unread: without it, every record
// after the jump would be refused as out of order. (tail shows the ledger;
// the release stage itself treats such a jump as being fenced.)
func ledgerDecoder(warn func(string)) func(kafka.Message) (any, error) {
	// One Book per partition: each is a log of its own.
	books := map[int]*ledger.Book{}
	return func(m kafka.Message) (any, error) {
		book := books[m.Partition]
		if book == nil {
			book = &ledger.Book{}
			books[m.Partition] = book
		}
		e, err := book.Apply(m)
		if errors.Is(err, ledger.ErrGap) {
			if warn != nil {
				warn(fmt.Sprintf("ledger partition %d was trimmed to a checkpoint while read (%v); reading on from offset %d", m.Partition, err, m.Offset))
			}
			book = &ledger.Book{}
			books[m.Partition] = book
			e, err = book.Apply(m)
		}
		if err != nil {
			return nil, err
		}
		switch e.Type {
		case schema.LedgerTypeCheckpoint, schema.LedgerTypeCheckpointPart:
			// The state itself is RESTRICTED (continual logs, model
			// states): only what it is, where and whether it counts.
			if e.Checkpoint == nil {
				return ledgerCheckpointJSON{Type: e.Type, Offset: e.Offset, Partition: m.Partition, Epoch: e.Epoch}, nil
			}
			cp := e.Checkpoint
			out := ledgerCheckpointJSON{Type: schema.LedgerTypeCheckpoint, Offset: cp.Offset, Partition: m.Partition, Epoch: cp.Record.Epoch,
				Owner: cp.Record.Owner, At: cp.Record.At, Basis: cp.Record.Basis, Parts: cp.Record.Parts, Valid: cp.Valid, Usable: cp.Usable,
				Restored: cp.Restored, Streams: len(cp.State.Starts)}
			if cp.Err != nil {
				out.Error = cp.Err.Error()
			}
			return out, nil
		case schema.LedgerTypeEpoch:
			return ledgerMarkerJSON{Type: e.Type, Offset: e.Offset, LedgerEpoch: &e.Marker}, nil
		case schema.LedgerTypeStart:
			return ledgerMarkerJSON{Type: e.Type, Offset: e.Offset, StreamStart: &e.Start, First: e.FirstStart}, nil
		case schema.LedgerTypeChunk:
			rel, err := schema.DecodeRelease(e.Chunk.Payload)
			if err != nil {
				return nil, fmt.Errorf("chunk payload: %w", err)
			}
			return ledgerChunkJSON{Type: e.Type, Offset: e.Offset, LedgerChunk: e.Chunk, Digest: hex.EncodeToString(e.Chunk.Digest), Payload: rel}, nil
		}
		var payload any
		if e.Charge.IsAnswer() {
			a, err := schema.DecodePredictResponse(e.Charge.Payload)
			if err != nil {
				return nil, fmt.Errorf("payload: %w", err)
			}
			payload = a
		} else {
			rel, err := schema.DecodeRelease(e.Charge.Payload)
			if err != nil {
				return nil, fmt.Errorf("payload: %w", err)
			}
			payload = rel
		}
		out := ledgerJSON{Type: e.Type, LedgerCharge: e.Charge, Payload: payload, Epoch: e.Epoch, Valid: e.Valid,
			Duplicate: e.Duplicate && !e.Identical, StateBytes: len(e.Charge.State),
			ContinualLogged: len(e.Charge.ContinualX), ModelValues: len(e.Charge.Model)}
		out.ContinualX, out.ContinualZ, out.Model, out.State = nil, nil, nil, nil
		if e.Chunks != nil {
			out.Chunks = len(e.Chunks) + 1
		}
		return out, nil
	}
}

type deadLetterJSON struct {
	Reason    string `json:"reason"`
	Detail    string `json:"detail"`
	Stream    string `json:"stream"`
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	Encoding  string `json:"value_encoding"` // utf8 or base64
	// OriginalBytes is the length of a value the dead letter left out
	// (too large to keep); 0 when the dead letter holds the value.
	OriginalBytes int `json:"original_bytes,omitempty"`
}

func decodeDeadLetter(m kafka.Message) (any, error) {
	d := deadLetterJSON{Key: string(m.Key), Encoding: "utf8"}
	for _, h := range m.Headers {
		v := string(h.Value)
		switch h.Key {
		case "dpstream.reason":
			d.Reason = v
		case "dpstream.detail":
			d.Detail = v
		case "dpstream.stream":
			d.Stream = v
		case "dpstream.topic":
			d.Topic = v
		case "dpstream.partition":
			d.Partition, _ = strconv.Atoi(v)
		case "dpstream.offset":
			d.Offset, _ = strconv.ParseInt(v, 10, 64)
		case "dpstream.original_bytes":
			d.OriginalBytes, _ = strconv.Atoi(v)
		}
	}
	if utf8.Valid(m.Value) {
		d.Value = string(m.Value)
	} else {
		d.Value, d.Encoding = base64.StdEncoding.EncodeToString(m.Value), "base64"
	}
	return d, nil
}

// requestJSON shows a request record as the release stage reads it, and,
// when it does not decode or is malformed, why (the stage answers such a
// request with status invalid and that reason).
type requestJSON struct {
	schema.PredictRequest
	Invalid string `json:"invalid,omitempty"`
}

// decodeRequest decodes a requests-topic record, Avro or JSON: a request
// the stage would refuse is still printed, with its reason, since what a
// querier sent is what tail is for.
func decodeRequest(m kafka.Message) (any, error) {
	q, err := schema.DecodePredictRequest(m.Value)
	if err != nil {
		if q.RequestID == "" {
			return nil, err
		}
		return requestJSON{PredictRequest: q, Invalid: err.Error()}, nil
	}
	return requestJSON{PredictRequest: q}, nil
}

func isNotExist(err error) bool {
	for _, e := range config.Errors(err) {
		if errors.Is(e, fs.ErrNotExist) {
			return true
		}
	}
	return errors.Is(err, fs.ErrNotExist)
}
