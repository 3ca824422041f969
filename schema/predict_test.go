package schema

import (
	"reflect"
	"strings"
	"testing"
)

func TestPredictRequestRoundTrip(t *testing.T) {
	q := PredictRequest{RequestID: "r1", Stream: "s", Release: "p", Op: "evaluate",
		Rows: [][]float64{{1, 2}, {3, -4.5}}, Labels: []string{"a", "b"}}
	b, err := EncodePredictRequest(q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePredictRequest(b)
	if err != nil || !reflect.DeepEqual(got, q) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, q)
	}
	a := PredictResponse{RequestID: "r1", Stream: "s", Release: "p", Op: "predict", Status: "ok",
		WindowStart: 60000, Label: "late", Value: 1.5, Interval95: 0.25, Epsilon: 1, AnsweredAt: 61000}
	if b, err = EncodePredictResponse(a); err != nil {
		t.Fatal(err)
	}
	if got, err := DecodePredictResponse(b); err != nil || got != a {
		t.Fatalf("response round trip: %+v, %v; want %+v", got, err, a)
	}
}

// TestPredictRequestJSON reads requests as a producer writes them with
// kcat, and names what is wrong with a bad one while keeping its id, so
// that it can be answered.
func TestPredictRequestJSON(t *testing.T) {
	got, err := DecodePredictRequest([]byte(` {"request_id":"q","stream":"s","release":"p","features":[1,2]}`))
	want := PredictRequest{RequestID: "q", Stream: "s", Release: "p", Op: "predict", Rows: [][]float64{{1, 2}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	for _, tc := range []struct{ in, id, err string }{
		{`{"request_id":"q","stream":"s","release":"p"}`, "q", "no rows"},
		{`{"request_id":"q","stream":"s","release":"p","features":[1],"rows":[[1]]}`, "q", "both features and rows"},
		{`{"request_id":"q","stream":"s","release":"p","featurs":[1]}`, "", "unknown field"},
		{`{"stream":"s","release":"p","features":[1]}`, "", "no request_id"},
		{`{"request_id":"","stream":"s","release":"p","features":[1]}`, "", "empty request_id"},
		{`{"request_id":"q","release":"p","features":[1]}`, "q", "stream and release"},
		{`{"request_id":"q","stream":"s","release":"p","features":[1]} {}`, "q", "more than one"},
		{`{"request_id":"q","stream":"s","release":"p","features":["x"]}`, "q", "cannot unmarshal"},
		// JSON null is no number: Go decodes it into a float64 as 0, which
		// would answer (and charge) a question the querier did not ask.
		{`{"request_id":"q","stream":"s","release":"p","features":[1,null]}`, "q", "null"},
		{`{"request_id":"q","stream":"s","release":"p","rows":[[1,2],[null,2]]}`, "q", "null"},
		{`{"request_id":"q","stream":"s","release":"p","rows":[[1,2],null]}`, "q", "null"},
	} {
		got, err := DecodePredictRequest([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
		}
		if got.RequestID != tc.id && !(tc.id == "" && tc.err == "unknown field") {
			t.Errorf("%s: request id %q, want %q", tc.in, got.RequestID, tc.id)
		}
	}
	if _, err := DecodePredictRequest([]byte{1, 2, 3}); err == nil {
		t.Error("garbage decoded")
	}
}
