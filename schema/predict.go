package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Statuses of a PredictResponse beyond a release's ok and
// budget_exhausted.
const (
	// PredictInvalid: the request is malformed; Reason says why.
	PredictInvalid = "invalid"
	// PredictNoModel: the release has not released a window yet.
	PredictNoModel = "no_model"
	// PredictUnknownRelease: no prediction release of that name.
	PredictUnknownRelease = "unknown_release"
)

// MaxRequestIDBytes is the longest request id a request may carry. The
// release stage answers nothing to a longer one: a response echoes its id
// twice (key and field), so an unbounded id would make a response that no
// record can hold.
const MaxRequestIDBytes = 256

// MaxPredictRows is the most rows a request may carry: a bound on the work
// one request makes the release stage do (an evaluation batch is also
// bounded by its release's configured size).
const MaxPredictRows = 10000

// PredictRequest is a query to a prediction release (schema
// dpstream.PredictRequest, topic dpstream.predict.requests). It is the
// querier's own input, public.
type PredictRequest struct {
	RequestID string      `json:"request_id"`
	Stream    string      `json:"stream"`
	Release   string      `json:"release"`
	Op        string      `json:"op"`
	Rows      [][]float64 `json:"rows"`
	Labels    []string    `json:"labels"`
}

// PredictResponse is the answer to a PredictRequest (schema
// dpstream.PredictResponse, topic dpstream.predict.responses, key: the
// request id).
type PredictResponse struct {
	RequestID   string  `json:"request_id"`
	Stream      string  `json:"stream"`
	Release     string  `json:"release"`
	Op          string  `json:"op"`
	Status      string  `json:"status"`
	Reason      string  `json:"reason,omitempty"`
	WindowStart int64   `json:"window_start"`
	Label       string  `json:"label,omitempty"`
	Value       float64 `json:"value"`
	Interval95  float64 `json:"interval95"`
	Epsilon     float64 `json:"epsilon"`
	Delta       float64 `json:"delta"`
	AnsweredAt  int64   `json:"answered_at"`
}

// EncodePredictRequest encodes q as binary Avro with schema
// dpstream.PredictRequest.
func EncodePredictRequest(q PredictRequest) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	op := q.Op
	if op == "" {
		op = "predict"
	}
	return encode(c.predictRequest, "PredictRequest", map[string]any{
		"request_id": q.RequestID, "stream": q.Stream, "release": q.Release, "op": op,
		"rows": doubleListsToNative(q.Rows), "labels": stringsToNative(q.Labels),
	})
}

// jsonRequest is a request written as JSON: the Avro record's fields, and
// features as a shorthand for rows with one row.
type jsonRequest struct {
	RequestID *string `json:"request_id"`
	Stream    string  `json:"stream"`
	Release   string  `json:"release"`
	Op        string  `json:"op"`
	// Pointers tell null from 0: Go decodes null into a number as 0.
	Rows     [][]*float64 `json:"rows"`
	Features []*float64   `json:"features"`
	Labels   []string     `json:"labels"`
}

// DecodePredictRequest decodes a request written as binary Avro
// (EncodePredictRequest) or as a JSON object (a value that begins with
// '{'), as kcat or any producer writes it. The returned request's
// RequestID is set whenever the value names one, even when err is not nil,
// so that a malformed request can still be answered with its reason.
func DecodePredictRequest(b []byte) (PredictRequest, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return decodeJSONRequest(t)
	}
	c, err := codecs()
	if err != nil {
		return PredictRequest{}, err
	}
	r, err := decode(c.predictRequest, "PredictRequest", b)
	if err != nil {
		return PredictRequest{}, err
	}
	q := PredictRequest{RequestID: r.str("request_id"), Stream: r.str("stream"), Release: r.str("release"),
		Op: r.str("op"), Rows: r.doubleLists("rows"), Labels: r.strings("labels")}
	if err := r.error(); err != nil {
		return PredictRequest{RequestID: q.RequestID}, fmt.Errorf("schema: decode PredictRequest: %w", err)
	}
	return q, checkRequest(q)
}

func decodeJSONRequest(b []byte) (PredictRequest, error) {
	var j jsonRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&j)
	var q PredictRequest
	if j.RequestID != nil {
		q.RequestID = *j.RequestID
	}
	if err != nil {
		return q, fmt.Errorf("schema: decode PredictRequest from JSON: %w", err)
	}
	if j.RequestID == nil {
		return q, fmt.Errorf("schema: decode PredictRequest from JSON: no request_id")
	}
	if dec.More() {
		return q, fmt.Errorf("schema: decode PredictRequest from JSON: more than one value")
	}
	q.Stream, q.Release, q.Op, q.Labels = j.Stream, j.Release, j.Op, j.Labels
	if q.Op == "" {
		q.Op = "predict"
	}
	rows := j.Rows
	if j.Features != nil {
		if j.Rows != nil {
			return q, fmt.Errorf("schema: PredictRequest: both features and rows; give one")
		}
		rows = [][]*float64{j.Features}
	}
	if rows != nil {
		q.Rows = make([][]float64, len(rows))
	}
	for i, row := range rows {
		if row == nil {
			return q, fmt.Errorf("schema: PredictRequest: rows[%d] is null, want an array of numbers", i)
		}
		q.Rows[i] = make([]float64, len(row))
		for k, v := range row {
			if v == nil {
				return q, fmt.Errorf("schema: PredictRequest: rows[%d][%d] is null, want a number", i, k)
			}
			q.Rows[i][k] = *v
		}
	}
	return q, checkRequest(q)
}

// checkRequest checks what every request needs, whatever its release.
func checkRequest(q PredictRequest) error {
	switch {
	case q.RequestID == "":
		return fmt.Errorf("schema: PredictRequest: empty request_id")
	case len(q.RequestID) > MaxRequestIDBytes:
		return fmt.Errorf("schema: PredictRequest: request_id of %d bytes, at most %d", len(q.RequestID), MaxRequestIDBytes)
	case q.Stream == "" || q.Release == "":
		return fmt.Errorf("schema: PredictRequest: stream and release are required")
	case len(q.Rows) == 0:
		return fmt.Errorf("schema: PredictRequest: no rows (give features, or rows)")
	case len(q.Rows) > MaxPredictRows:
		return fmt.Errorf("schema: PredictRequest: %d rows, at most %d", len(q.Rows), MaxPredictRows)
	}
	for i, row := range q.Rows {
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("schema: PredictRequest: rows[%d][%d] is %v, want a finite number", i, j, v)
			}
		}
	}
	return nil
}

// EncodePredictResponse encodes a as binary Avro with schema
// dpstream.PredictResponse.
func EncodePredictResponse(a PredictResponse) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(c.predictResponse, "PredictResponse", map[string]any{
		"request_id": a.RequestID, "stream": a.Stream, "release": a.Release, "op": a.Op,
		"status": a.Status, "reason": a.Reason, "window_start": a.WindowStart,
		"label": a.Label, "value": a.Value, "interval95": a.Interval95,
		"epsilon": a.Epsilon, "delta": a.Delta, "answered_at": a.AnsweredAt,
	})
}

// DecodePredictResponse decodes binary Avro written by
// EncodePredictResponse.
func DecodePredictResponse(b []byte) (PredictResponse, error) {
	c, err := codecs()
	if err != nil {
		return PredictResponse{}, err
	}
	r, err := decode(c.predictResponse, "PredictResponse", b)
	if err != nil {
		return PredictResponse{}, err
	}
	a := PredictResponse{RequestID: r.str("request_id"), Stream: r.str("stream"), Release: r.str("release"),
		Op: r.str("op"), Status: r.str("status"), Reason: r.str("reason"), WindowStart: r.millis("window_start"),
		Label: r.str("label"), Value: r.double("value"), Interval95: r.double("interval95"),
		Epsilon: r.double("epsilon"), Delta: r.double("delta"), AnsweredAt: r.millis("answered_at")}
	if err := r.error(); err != nil {
		return PredictResponse{}, fmt.Errorf("schema: decode PredictResponse: %w", err)
	}
	return a, nil
}
