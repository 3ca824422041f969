package schema

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"testing"
)

// TestCheckpointRoundTrip: every checkpoint record decodes to what was
// encoded, optional parts absent or present, and trailing or truncated
// bytes are errors.
func TestCheckpointRoundTrip(t *testing.T) {
	d := int64(3000)
	rs := ReleaserState{RequestNext: 17, Streams: []StreamBooks{
		{Stream: "a", Accounts: []PeriodAccount{
			{Period: 0, Account: AccountState{Curve: []float64{0.1, math.Inf(1)}, Pure: 2, AllPure: true, Charges: 2, Refused: 1}, KL: 0.5, LinearKL: 0.25, WithoutKL: 1},
			{Period: 1, Account: AccountState{ApproxEpsilon: 0.1, ApproxDelta: 1e-9}, Queries: &AccountState{Curve: []float64{1}, Charges: 3}},
		}, Releases: []ReleaseBooks{
			{Release: "n", Decided: &d},
			{Release: "c", Decided: &d, Run: &RunState{Horizon: 4, Charged: true, Period: 1,
				Charges: []NoiseComponent{{Purpose: "continual", Mechanism: "zcdp", Epsilon: 0.5}},
				Logs:    []RunLog{{First: 0, X: []int64{1, 2}, Z: []int64{-3, 4}, Factor: "f"}, {First: 2, X: []int64{5}, Z: []int64{6}, Factor: "f"}}}},
			{Release: "p", Model: &ModelState{Window: 2000, Period: 0, State: []int64{1, -2, 3}, Answered: 9}},
			{Release: "k", Decided: &d, State: []byte{1, 2, 0}},
			{Release: "none"},
		}},
		{Stream: "b"},
	}}
	b, err := EncodeReleaserState(rs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeReleaserState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rs) {
		t.Errorf("ReleaserState round trip:\n got %+v\nwant %+v", got, rs)
	}
	if _, err := DecodeReleaserState(append(b, 0)); err == nil {
		t.Error("a ReleaserState with a trailing byte decoded")
	}
	if _, err := DecodeReleaserState(b[:len(b)/2]); err == nil {
		t.Error("a truncated ReleaserState decoded")
	}

	// A state written by v1 (before ReleaseBooks.State): its legacy run
	// and model decode, and it has no State.
	codecs, err := codecs()
	if err != nil {
		t.Fatal(err)
	}
	v1 := rs
	v1.Streams = append([]StreamBooks(nil), rs.Streams...)
	v1.Streams[0].Releases = slices.DeleteFunc(slices.Clone(rs.Streams[0].Releases), func(rb ReleaseBooks) bool { return rb.State != nil })
	b1, err := encode(codecs.releaserStateV1, "ReleaserState", releaserStateToNative(v1))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(b1, b) {
		t.Fatal("v1 and v2 encode alike")
	}
	if got, err := DecodeReleaserState(b1); err != nil || !reflect.DeepEqual(got, v1) {
		t.Errorf("a v1 ReleaserState decodes to\n %+v, %v\nwant %+v", got, err, v1)
	}
	if _, err := DecodeReleaserState(append(b1, 0)); err == nil {
		t.Error("a v1 ReleaserState with a trailing byte decoded")
	}

	cs := CheckpointState{Marker: LedgerEpoch{Epoch: "e1", Owner: "o", At: 5},
		Starts:   []StreamStart{{Stream: "a", Start: 1000, Source: StartFromConfig, At: 7}},
		Latest:   []StreamLatest{{Stream: "a", WindowStart: 3000}},
		Witness:  []TopicOffset{{Topic: "releases", Partition: 0, Offset: 42}},
		Releaser: b}
	cb, err := EncodeCheckpointState(cs)
	if err != nil {
		t.Fatal(err)
	}
	gotCS, err := DecodeCheckpointState(cb)
	if err != nil || !reflect.DeepEqual(gotCS, cs) {
		t.Errorf("CheckpointState round trip: %+v, %v", gotCS, err)
	}
	lc := LedgerCheckpoint{Epoch: "e1", Owner: "o", At: 9, Partition: 2, Partitions: 6, Basis: 123, Parts: 3, Digest: []byte{1, 2}, Payload: cb[:10]}
	lb, err := EncodeLedgerCheckpoint(lc)
	if err != nil {
		t.Fatal(err)
	}
	gotLC, err := DecodeLedgerCheckpoint(lb)
	if err != nil || !reflect.DeepEqual(gotLC, lc) {
		t.Errorf("LedgerCheckpoint round trip: %+v, %v", gotLC, err)
	}
	if _, err := DecodeLedgerCheckpoint(cb); err == nil {
		t.Error("a CheckpointState decoded as a LedgerCheckpoint")
	}
}
