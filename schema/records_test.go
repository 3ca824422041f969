package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/linkedin/goavro/v2"
)

func ptr(x float64) *float64 { return &x }

func samplePartial() Partial {
	return Partial{
		Stream: "trips", WindowStart: 1714550400000, WindowEnd: 1714554000000,
		Partition: 3, Partitions: 12, Events: 1234, Units: 400, Dropped: 17,
		FirstOffset: 1000, LastOffset: 2250,
		Stats: []ReleaseStats{
			{Release: "fare_hist", Count: 1234, SumUnits: 25000 << 21, CenteredSumUnits: -49039 << 21, Bins: []int64{0, 5, 100, 7}, Clamped: 3, Terms: []int64{}},
			{Release: "fare_mean", Count: 1234, SumUnits: 0, CenteredSumUnits: 5 << 27, Bins: []int64{}, Clamped: 0, Terms: []int64{}},
			{Release: "km_density", Count: 1234, Bins: []int64{}, Clamped: 2, Terms: []int64{1518500250 * 1234, -7, 0, math.MinInt64 + 1}},
		},
	}
}

func sampleRelease() Release {
	return Release{
		ReleaseID: "trips/fare_hist/1714550400000", Stream: "trips", Release: "fare_hist", Kind: "histogram",
		WindowStart: 1714550400000, WindowEnd: 1714554000000, Status: "ok", Epsilon: 0.3, Delta: 0,
		Noise: []NoiseComponent{
			{Purpose: "bins", Mechanism: "laplace", Sensitivity: 8, Scale: 26.666666666666668, Epsilon: 0.3},
			{Purpose: "count", Mechanism: "gaussian", Sensitivity: 4, Scale: 10.5, Epsilon: 0.1, Delta: 1e-9},
		},
		Value: ptr(1240.5), Interval95: ptr(3.5),
		NoisyCounts:   []float64{1.5, -2, 100.25},
		Probabilities: []float64{0.2, 0, 0.8},
		Densities:     []float64{0.04, 0, 0.16},
		Edges:         []float64{0, 5, 10, 15},
		Coefficients:  []float64{0.5, -1.25},
		EpsilonSpent:  2.75, EpsilonBudget: 8, PublishedAt: 1714554120123,
	}
}

func sampleLedgerCharge() LedgerCharge {
	return LedgerCharge{
		ReleaseID: "trips/fare_hist/1714550400000", Stream: "trips", Release: "fare_hist",
		WindowStart: 1714550400000, Period: 4, Status: "ok",
		Charges: []NoiseComponent{{Purpose: "bins", Mechanism: "laplace", Sensitivity: 8, Scale: 26.7, Epsilon: 0.3}},
		RDP:     []float64{0.01, 0.02, math.Inf(1)},
		Payload: []byte{0, 1, 2, 0xff, 0x80},
		At:      1714554120123,
		// A continual histogram's log of two steps of two bins.
		ContinualFirst: 3, ContinualX: []int64{0, 0, 7, -2}, ContinualZ: []int64{1 << 40, -5, 0, 3}, ContinualFactor: "tree/4",
		KL: ptr(0.08), LinearKL: ptr(0.04),
		State: []byte{1, 0, 0xff},
	}
}

func sampleBudgetState() BudgetState {
	return BudgetState{
		Stream: "trips", Period: 4, ReleasesCharged: 30, ReleasesRefused: 2,
		EpsilonSpent: 2.75, PureEpsilon: ptr(2.75), Delta: 1e-7, EpsilonBudget: 8,
		EpsilonRemaining: 5.25, UpdatedAt: 1714554120123,
		KL: 0.5, LinearKL: 0.25, ReleasesWithoutKL: 3,
	}
}

// roundTrip encodes v with the package's encoder for its type and decodes the
// bytes back.
func roundTrip(v any) (any, []byte, error) {
	switch x := v.(type) {
	case Partial:
		b, err := EncodePartial(x)
		if err != nil {
			return nil, nil, err
		}
		got, err := DecodePartial(b)
		return got, b, err
	case Release:
		b, err := EncodeRelease(x)
		if err != nil {
			return nil, nil, err
		}
		got, err := DecodeRelease(b)
		return got, b, err
	case LedgerCharge:
		b, err := EncodeLedgerCharge(x)
		if err != nil {
			return nil, nil, err
		}
		got, err := DecodeLedgerCharge(b)
		return got, b, err
	case BudgetState:
		b, err := EncodeBudgetState(x)
		if err != nil {
			return nil, nil, err
		}
		got, err := DecodeBudgetState(b)
		return got, b, err
	case LedgerEpoch:
		b, err := EncodeLedgerEpoch(x)
		if err != nil {
			return nil, nil, err
		}
		got, err := DecodeLedgerEpoch(b)
		return got, b, err
	case StreamStart:
		b, err := EncodeStreamStart(x)
		if err != nil {
			return nil, nil, err
		}
		got, err := DecodeStreamStart(b)
		return got, b, err
	case LedgerChunk:
		b, err := EncodeLedgerChunk(x)
		if err != nil {
			return nil, nil, err
		}
		got, err := DecodeLedgerChunk(b)
		return got, b, err
	}
	return nil, nil, fmt.Errorf("no codec for %T", v)
}

// decodeAs decodes b as the record type of like.
// legacyChargeBytes returns the lengths of lc's encodings as versions 1
// (without the continual fields) and 2 (without the capacity-bounded
// figures) wrote them: where a prefix of a charge is a whole older one.
func legacyChargeBytes(t *testing.T, lc LedgerCharge) (v1, v2, v3, v4 int) {
	t.Helper()
	lc.State = nil
	b, err := EncodeLedgerCharge(lc)
	if err != nil {
		t.Fatal(err)
	}
	v4 = len(b) - 1 // one zero byte: state ""
	lc.Model, lc.RequestID, lc.RequestOffset = nil, "", 0
	if b, err = EncodeLedgerCharge(lc); err != nil {
		t.Fatal(err)
	}
	v3 = len(b) - 1 - 3 // three zero bytes: model [], request_id "", request_offset 0
	lc.KL, lc.LinearKL = nil, nil
	if b, err = EncodeLedgerCharge(lc); err != nil {
		t.Fatal(err)
	}
	v2 = len(b) - 1 - 3 - 2 // and two null unions: kl, linear_kl
	lc.ContinualFirst, lc.ContinualX, lc.ContinualZ, lc.ContinualFactor = 0, nil, nil, ""
	if b, err = EncodeLedgerCharge(lc); err != nil {
		t.Fatal(err)
	}
	return len(b) - 1 - 3 - 2 - 4, v2, v3, v4 // and four zero bytes: 0, [], [], ""
}

// legacyStateBytes returns the length of s's encoding as version 1 wrote
// it, without the capacity-bounded figures.
func legacyStateBytes(t *testing.T, s BudgetState) int {
	t.Helper()
	b, err := EncodeBudgetState(s)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) - 8 - 8 - len(avLong(s.ReleasesWithoutKL))
}

func decodeAs(like any, b []byte) (any, error) {
	switch like.(type) {
	case Partial:
		return DecodePartial(b)
	case Release:
		return DecodeRelease(b)
	case LedgerCharge:
		return DecodeLedgerCharge(b)
	case BudgetState:
		return DecodeBudgetState(b)
	case LedgerEpoch:
		return DecodeLedgerEpoch(b)
	case StreamStart:
		return DecodeStreamStart(b)
	case LedgerChunk:
		return DecodeLedgerChunk(b)
	}
	return nil, fmt.Errorf("no codec for %T", like)
}

// recordCases lists values for the round-trip tests. want is the decoded
// value when it differs from in: slice fields without omitempty decode to
// empty, non-nil slices (documented on the Decode functions).
var recordCases = []struct {
	name string
	in   any
	want any
}{
	{name: "partial/full", in: samplePartial()},
	{name: "ledger epoch", in: LedgerEpoch{Epoch: "5f0c2a9e3b7d4e11", Owner: "host-1 pid 42 member dpstream-release-1", At: 1_750_000_000_123}},
	{name: "stream start", in: StreamStart{Stream: "trips", Start: 1_750_000_000_000, Source: StartFromFirstRun, At: 1_750_000_004_567}},
	{name: "ledger chunk", in: LedgerChunk{ReleaseID: "trips/zones/1750000000000", Stream: "trips", Epoch: "5f0c2a9e3b7d4e11", Chunk: 2, Chunks: 3,
		Digest: bytes.Repeat([]byte{0xab}, 32), Payload: []byte{1, 2, 3}, At: 1_750_000_004_568}},
	{name: "partial/empty window", in: Partial{Stream: "trips", WindowStart: 0, WindowEnd: 3600000, Partition: 0, Partitions: 1, FirstOffset: -1, LastOffset: -1, Stats: []ReleaseStats{}}},
	{
		name: "partial/nil slices",
		in:   Partial{Stream: "s", FirstOffset: -1, LastOffset: -1, Stats: []ReleaseStats{{Release: "r"}}},
		want: Partial{Stream: "s", FirstOffset: -1, LastOffset: -1, Stats: []ReleaseStats{{Release: "r", Bins: []int64{}, Terms: []int64{}}}},
	},
	{name: "partial/zero", in: Partial{}, want: Partial{Stats: []ReleaseStats{}}},
	{
		name: "partial/extremes",
		in: Partial{
			Stream: "ünïcødé/ストリーム", WindowStart: math.MinInt64, WindowEnd: math.MaxInt64,
			Partition: math.MaxInt32, Partitions: math.MinInt32, Events: math.MaxInt64, Units: math.MinInt64,
			Dropped: -1, FirstOffset: math.MaxInt64, LastOffset: math.MinInt64,
			Stats: []ReleaseStats{
				{Release: "", Count: -1, SumUnits: math.MaxInt64, CenteredSumUnits: math.MinInt64, Bins: []int64{math.MinInt64, math.MaxInt64}, Clamped: math.MaxInt64, Terms: []int64{math.MaxInt64, math.MinInt64}},
				{Release: "r", SumUnits: math.MinInt64, CenteredSumUnits: math.MaxInt64, Bins: []int64{}, Terms: []int64{}},
			},
		},
	},
	{name: "release/full", in: sampleRelease()},
	{
		name: "release/refused: nil optionals and slices",
		in: Release{ReleaseID: "trips/fare_mean/0", Stream: "trips", Release: "fare_mean", Kind: "mean",
			Status: "budget_exhausted", Epsilon: 0.3, EpsilonSpent: 8, EpsilonBudget: 8, PublishedAt: 1},
		want: Release{ReleaseID: "trips/fare_mean/0", Stream: "trips", Release: "fare_mean", Kind: "mean",
			Status: "budget_exhausted", Epsilon: 0.3, EpsilonSpent: 8, EpsilonBudget: 8, PublishedAt: 1,
			Noise: []NoiseComponent{}},
	},
	{
		name: "release/empty omitempty slices decode to nil",
		in:   Release{Noise: []NoiseComponent{}, NoisyCounts: []float64{}, Probabilities: []float64{}, Densities: []float64{}, Edges: []float64{}, Coefficients: []float64{}, Value: ptr(0)},
		want: Release{Noise: []NoiseComponent{}, Value: ptr(0)},
	},
	{name: "release/scalar", in: Release{ReleaseID: "a/b/1", Kind: "count", Status: "ok", Noise: []NoiseComponent{{Purpose: "count", Mechanism: "discrete_laplace", Sensitivity: 4, Scale: 13.3, Epsilon: 0.3}}, Value: ptr(-12.5), Interval95: ptr(39.9)}},
	{name: "ledger/full", in: sampleLedgerCharge()},
	{
		name: "ledger/refused: nil slices",
		in:   LedgerCharge{ReleaseID: "x/y/0", Status: "budget_exhausted"},
		want: LedgerCharge{ReleaseID: "x/y/0", Status: "budget_exhausted", Charges: []NoiseComponent{}, RDP: []float64{}, Payload: []byte{}},
	},
	{name: "ledger/empty slices", in: LedgerCharge{Charges: []NoiseComponent{}, RDP: []float64{}, Payload: []byte{}}},
	{name: "budget/full", in: sampleBudgetState()},
	{name: "budget/not pure", in: BudgetState{Stream: "trips", EpsilonSpent: 1.5, Delta: 1e-7, EpsilonBudget: 8, EpsilonRemaining: 6.5}},
	{name: "budget/zero", in: BudgetState{}},
}

func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range recordCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == nil {
				want = tc.in
			}
			got, b, err := roundTrip(tc.in)
			if err != nil {
				t.Fatalf("round trip: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded\n%#v\nwant\n%#v", got, want)
			}
			// Both representations of "empty" encode identically, so the
			// distinction made on decode cannot change what is on the wire.
			again, _, err := roundTrip(got)
			if err != nil {
				t.Fatalf("second round trip: %v", err)
			}
			if !reflect.DeepEqual(again, want) {
				t.Fatalf("second round trip changed the value:\n%#v", again)
			}
			if len(b) == 0 {
				t.Fatal("empty encoding")
			}
		})
	}
}

// TestRecordDeterministic checks that equal structs give equal bytes, also
// through a decode, which is what lets the release stage republish a ledger
// payload verbatim and compare it with a recomputed one.
func TestRecordDeterministic(t *testing.T) {
	for _, tc := range recordCases {
		t.Run(tc.name, func(t *testing.T) {
			var first []byte
			for i := range 20 {
				_, b, err := roundTrip(tc.in)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = b
				} else if !bytes.Equal(b, first) {
					t.Fatalf("encoding %d differs:\n%x\n%x", i, b, first)
				}
			}
			decoded, err := decodeAs(tc.in, first)
			if err != nil {
				t.Fatal(err)
			}
			_, b, err := roundTrip(decoded)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, first) {
				t.Fatalf("re-encoding the decoded value differs:\n%x\n%x", b, first)
			}
		})
	}
}

// TestRecordWireFormat compares the encoder's bytes with bytes written from
// the Avro specification, field by field in schema order; this pins the
// schemas' field order and types, which other Avro readers depend on.
func TestRecordWireFormat(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want []byte
	}{
		{
			name: "budget state",
			in:   sampleBudgetState(),
			want: cat(avString("trips"), avLong(4), avLong(30), avLong(2), avDouble(2.75),
				avLong(1), avDouble(2.75), // union index 1: double
				avDouble(1e-7), avDouble(8), avDouble(5.25), avLong(1714554120123),
				avDouble(0.5), avDouble(0.25), avLong(3)), // kl, linear_kl, releases_without_kl
		},
		{
			name: "budget state, pure epsilon null",
			in:   BudgetState{Stream: "s", EpsilonRemaining: -1},
			want: cat(avString("s"), avLong(0), avLong(0), avLong(0), avDouble(0),
				avLong(0), // union index 0: null, no value
				avDouble(0), avDouble(0), avDouble(-1), avLong(0),
				avDouble(0), avDouble(0), avLong(0)), // kl, linear_kl, releases_without_kl
		},
		{
			name: "partial",
			in: Partial{Stream: "t", WindowStart: 3600000, WindowEnd: 7200000, Partition: 2, Partitions: 3,
				Events: 5, Units: 4, Dropped: 1, FirstOffset: -1, LastOffset: -1,
				Stats: []ReleaseStats{{Release: "h", Count: 5, SumUnits: 3 << 29, CenteredSumUnits: -1 << 29, Bins: []int64{2, -3}, Clamped: 1, Terms: []int64{7},
					XtX: []int64{1 << 40, -2}, Xty: []int64{3}, Yty: 9,
					Groups: []GroupStats{{Key: "k", Units: 2, Count: 3, Sums: []int64{-4}, Cells: []int64{5, 6}}}}},
				UnitContributions: []UnitContribution{{Unit: "u1", Norms: [][]float64{{2}, {}}}}, UnitsTruncated: true,
				Chunk: 1, Chunks: 2},
			want: cat(avString("t"), avLong(3600000), avLong(7200000), avLong(2), avLong(3),
				avLong(5), avLong(4), avLong(1), avLong(-1), avLong(-1),
				avArray(cat(avString("h"), avLong(5), avLong(3<<29), avLong(-1<<29), avArray(avLong(2), avLong(-3)), avLong(1), avArray(avLong(7)),
					avArray(avLong(1<<40), avLong(-2)), avArray(avLong(3)), avLong(9),
					avArray(cat(avString("k"), avLong(2), avLong(3), avArray(avLong(-4)), avArray(avLong(5), avLong(6)))))), // groups
				avArray(cat(avString("u1"), avArray(avArray(avDouble(2)), avArray()))), // unit_contributions
				avBool(true),          // units_truncated
				avLong(1), avLong(2)), // chunk, chunks
		},
		{
			name: "release",
			in: Release{ReleaseID: "t/c/0", Stream: "t", Release: "c", Kind: "count", WindowStart: 0, WindowEnd: 60000,
				Status: "ok", Epsilon: 0.5, Delta: 0,
				Noise: []NoiseComponent{{Purpose: "count", Mechanism: "laplace", Sensitivity: 1, Scale: 2, Epsilon: 0.5}},
				Value: ptr(10.5), Edges: []float64{1}, Coefficients: []float64{-2},
				Fields: []string{"x", "y"}, Shape: []int64{3}, Categories: []string{"a"}, DebiasedCounts: []float64{-1.5},
				StdErrors: []float64{2}, LocalEpsilon: ptr(1.25), Method: "ssp", Intercept: ptr(-3.0), Selected: []string{"hp"}, Samples: []float64{0.25},
				Keys: []string{"k1", "k2"}, Values: []float64{3, 4}, Intervals95: []float64{0.5}, Ranks: []float64{0.75},
				Quantiles: [][]float64{{1}, {}}, Chunk: 3, Chunks: 4,
				Horizon: 24, HorizonWindow: 5, RunningTotal: ptr(12.5), RunningTotals: []float64{1.5},
				EpsilonSpent: 0.5, EpsilonBudget: 1, PublishedAt: 61000},
			want: cat(avString("t/c/0"), avString("t"), avString("c"), avString("count"), avLong(0), avLong(60000),
				avString("ok"), avDouble(0.5), avDouble(0),
				avArray(cat(avString("count"), avString("laplace"), avDouble(1), avDouble(2), avDouble(0.5), avDouble(0))),
				avLong(1), avDouble(10.5), // value: union index 1
				avLong(0), // interval95: null
				avArray(), avArray(), avArray(), avArray(avDouble(1)), avArray(avDouble(-2)),
				avArray(avString("x"), avString("y")), avArray(avLong(3)), avArray(avString("a")), avArray(avDouble(-1.5)),
				avArray(avDouble(2)), avLong(1), avDouble(1.25),
				avString("ssp"), avLong(1), avDouble(-3), avLong(0), // method, intercept, ridge: null
				avArray(avString("hp")), // selected
				avArray(avDouble(0.25)),
				avArray(avString("k1"), avString("k2")), avArray(avDouble(3), avDouble(4)), avArray(avDouble(0.5)), // keys, values, intervals95
				avArray(avDouble(0.75)), avArray(avArray(avDouble(1)), avArray()), // ranks, quantiles
				avLong(3), avLong(4), // chunk, chunks
				avLong(24), avLong(5), // horizon, horizon_window
				avLong(1), avDouble(12.5), avLong(0), // running_total, running_interval95: null
				avArray(avDouble(1.5)), avArray(), // running_totals, running_intervals95
				avDouble(0.5), avDouble(1), avLong(61000)),
		},
		{
			name: "ledger charge",
			in: LedgerCharge{ReleaseID: "t/c/0", Stream: "t", Release: "c", WindowStart: 0, Period: 0, Status: "budget_exhausted",
				RDP: []float64{0.25}, Payload: []byte{9, 8}, At: 5, ContinualFirst: 2, ContinualX: []int64{3}, ContinualZ: []int64{-4}, ContinualFactor: "f",
				LinearKL: ptr(0.125), Model: []int64{7}, RequestID: "q", RequestOffset: 9, State: []byte{5, 6}},
			want: cat(avString("t/c/0"), avString("t"), avString("c"), avLong(0), avLong(0), avString("budget_exhausted"),
				avArray(), avArray(avDouble(0.25)), avString("\x09\x08"), avLong(5),
				avLong(2), avArray(avLong(3)), avArray(avLong(-4)), avString("f"), // continual_first, _x, _z, _factor
				avLong(0),                  // kl: null
				avLong(1), avDouble(0.125), // linear_kl: union index 1
				avArray(avLong(7)), avString("q"), avLong(9), // model, request_id, request_offset
				avString("\x05\x06")), // state
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, got, err := roundTrip(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("encoded\n%x\nwant\n%x", got, tc.want)
			}
		})
	}
}

// TestRecordDecodeErrors feeds broken bytes to every decoder.
func TestRecordDecodeErrors(t *testing.T) {
	valid := map[string][]byte{}
	for _, v := range []any{samplePartial(), sampleRelease(), sampleLedgerCharge(), sampleBudgetState()} {
		_, b, err := roundTrip(v)
		if err != nil {
			t.Fatal(err)
		}
		valid[fmt.Sprintf("%T", v)] = b
	}
	likes := map[string]any{
		"schema.Partial": Partial{}, "schema.Release": Release{},
		"schema.LedgerCharge": LedgerCharge{}, "schema.BudgetState": BudgetState{},
	}
	for typ, b := range valid {
		like := likes[typ]
		t.Run(typ+"/every proper prefix", func(t *testing.T) {
			// Decoding is a deterministic walk over the fields, so a prefix
			// of a valid record always runs out of bytes.
			for n := 0; n < len(b); n++ {
				got, err := decodeAs(like, b[:n])
				v1, v2, v3, v4 := legacyChargeBytes(t, sampleLedgerCharge())
				if lc, ok := got.(LedgerCharge); ok && err == nil && lc.State == nil && (n == v4 || lc.Model == nil && lc.RequestID == "" &&
					(n == v3 || (lc.KL == nil && lc.LinearKL == nil && (n == v2 || (n == v1 && lc.ContinualX == nil))))) {
					// A charge cut where the continual fields, the
					// capacity-bounded figures or the prediction
					// fields begin is a charge written before they
					// existed, and decodes as one (schema/legacy).
					continue
				}
				if s, ok := got.(BudgetState); ok && err == nil && s.KL == 0 && s.LinearKL == 0 && s.ReleasesWithoutKL == 0 &&
					n == legacyStateBytes(t, sampleBudgetState()) {
					continue // likewise a state written before the figures
				}
				if err == nil {
					t.Fatalf("prefix of %d/%d bytes decoded without error", n, len(b))
				}
			}
		})
		t.Run(typ+"/trailing byte", func(t *testing.T) {
			_, err := decodeAs(like, append(append([]byte{}, b...), 0))
			if err == nil || !strings.Contains(err.Error(), "1 trailing bytes") {
				t.Fatalf("err = %v, want trailing bytes error", err)
			}
		})
	}
	// Header layouts reaching the first array of each record, with the
	// largest block count goavro would accept by default (2^31-1). Without
	// the package's MaxBlockCount, the first one asks the runtime for 32 GiB
	// and kills the process.
	huge := avLong(math.MaxInt32)
	tests := []struct {
		name string
		like any
		in   []byte
	}{
		{"partial stats block count 2^31-1", Partial{}, cat(avString(""), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), huge)},
		{"partial bins block count 2^31-1", Partial{}, cat(avString(""), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0),
			avLong(1), avString("r"), avLong(0), avLong(0), avLong(0), huge)},
		{"release noise block count 2^31-1", Release{}, cat(avString(""), avString(""), avString(""), avString(""), avLong(0), avLong(0), avString(""), avDouble(0), avDouble(0), huge)},
		{"ledger rdp block count 2^31-1", LedgerCharge{}, cat(avString(""), avString(""), avString(""), avLong(0), avLong(0), avString(""), avArray(), huge)},
		{"ledger payload longer than the record", LedgerCharge{}, cat(avString(""), avString(""), avString(""), avLong(0), avLong(0), avString(""), avArray(), avArray(), avLong(math.MaxInt64))},
		{"negative string length", BudgetState{}, avLong(-5)},
		{"union index out of range", BudgetState{}, cat(avString(""), avLong(0), avLong(0), avLong(0), avDouble(0), avLong(2))},
		{"negative union index", BudgetState{}, cat(avString(""), avLong(0), avLong(0), avLong(0), avDouble(0), avLong(-1))},
		{"overlong varint", BudgetState{}, bytes.Repeat([]byte{0xff}, 32)},
		{"empty", Release{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeAs(tc.like, tc.in); err == nil {
				t.Fatal("decoded without error")
			}
		})
	}
}

// TestRecordCorruptBytes decodes valid encodings with a few bytes overwritten
// at random (seeded, so the test is deterministic), with every decoder. Many
// inputs are errors; whatever decodes must be canonical: decode, encode,
// decode gives the same value.
func TestRecordCorruptBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	samples := []any{samplePartial(), sampleRelease(), sampleLedgerCharge(), sampleBudgetState()}
	const trials = 20000
	decoded := 0
	for i := range trials {
		like := samples[i%len(samples)]
		_, b, err := roundTrip(like)
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		v, err := decodeAs(like, b)
		if err != nil {
			continue
		}
		decoded++
		again, _, err := roundTrip(v)
		if err != nil {
			t.Fatalf("%x decoded as %T but does not re-encode: %v", b, like, err)
		}
		if !sameFloatsDeepEqual(v, again) {
			t.Fatalf("%x: decode(encode(decode)) = %#v, want %#v", b, again, v)
		}
	}
	// With this seed a good share of corruptions hit value bytes (doubles,
	// string contents) and still decode; a zero here would mean the check
	// above never ran.
	if decoded == 0 {
		t.Fatal("no corrupted input decoded; the canonical-form check did not run")
	}
	t.Logf("%d of %d corrupted inputs decoded", decoded, trials)
}

// sameFloatsDeepEqual is reflect.DeepEqual except that floats compare by bit
// pattern, so that the NaNs which corrupted bytes produce equal themselves.
func sameFloatsDeepEqual(a, b any) bool {
	return equalValues(reflect.ValueOf(a), reflect.ValueOf(b))
}

func equalValues(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() || a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValues(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalValues(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValues(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
}

func TestPayloadDoesNotAliasInput(t *testing.T) {
	_, b, err := roundTrip(sampleLedgerCharge())
	if err != nil {
		t.Fatal(err)
	}
	l, err := DecodeLedgerCharge(b)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte{}, l.Payload...)
	for i := range b {
		b[i] = 0xAA // a Kafka client reusing its buffer
	}
	if !bytes.Equal(l.Payload, want) {
		t.Fatalf("payload changed with the input buffer: %x, want %x", l.Payload, want)
	}
}

// TestLongArrays checks arrays longer than one block: goavro's encoder splits
// them at MaxBlockCount items, and the decoder accepts the blocks.
func TestLongArrays(t *testing.T) {
	if goavro.MaxBlockCount != maxBlockCount {
		t.Fatalf("goavro.MaxBlockCount = %d, want %d", goavro.MaxBlockCount, maxBlockCount)
	}
	bins := make([]int64, 2*maxBlockCount+7)
	for i := range bins {
		bins[i] = int64(i) - 5
	}
	p := Partial{Stream: "s", Stats: []ReleaseStats{{Release: "h", Bins: bins, Terms: bins}}}
	got, _, err := roundTrip(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatal("long bins and terms arrays did not round-trip")
	}
}

// TestConcurrentUse runs encoders and decoders from several goroutines, for
// the race detector (codecs are built lazily on first use).
func TestConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tc := range recordCases {
				if _, _, err := roundTrip(tc.in); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSchemas(t *testing.T) {
	got := Schemas()
	want := map[string]string{
		NamePartial: "partial.avsc", NameRelease: "release.avsc", NameLedgerCharge: "ledger_charge.avsc",
		NameBudgetState: "budget_state.avsc", NamePDPUnit: "pdp_unit.avsc", NamePDPSummary: "pdp_summary.avsc", NameTrip: "trip.avsc",
		NameLedgerEpoch: "ledger_epoch.avsc", NameStreamStart: "ledger_start.avsc", NameLedgerChunk: "ledger_chunk.avsc",
		NamePredictRequest: "predict_request.avsc", NamePredictResponse: "predict_response.avsc",
		NameLedgerCheckpoint: "ledger_checkpoint.avsc", NameCheckpointState: "checkpoint_state.avsc", NameReleaserState: "releaser_state.avsc",
	}
	if len(got) != len(want) {
		t.Fatalf("Schemas() has %d entries, want %d", len(got), len(want))
	}
	for name, file := range want {
		text, ok := got[name]
		if !ok {
			t.Fatalf("Schemas() lacks %s", name)
		}
		raw, err := avscFiles.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if text != string(raw) {
			t.Errorf("%s: text differs from %s", name, file)
		}
		var s struct {
			Type, Name, Namespace string
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if s.Type != "record" || s.Namespace+"."+s.Name != name {
			t.Errorf("%s declares %s %s.%s, want record %s", file, s.Type, s.Namespace, s.Name, name)
		}
		if _, err := goavro.NewCodec(text); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Every embedded file is reachable through Schemas.
	files, err := fs.Glob(avscFiles, "*.avsc")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Errorf("embedded files %v, want one per record of %v", files, want)
	}
	if TripSchema() != got[NameTrip] {
		t.Error("TripSchema() differs from Schemas()[NameTrip]")
	}
	// Mutating the returned map must not affect later calls.
	got[NamePartial] = "changed"
	if Schemas()[NamePartial] == "changed" {
		t.Error("Schemas() returns shared state")
	}
}

// avroFields returns the field list of the record named name inside schema
// text, searching nested record definitions too.
func avroFields(t *testing.T, text, name string) []any {
	t.Helper()
	var root any
	if err := json.Unmarshal([]byte(text), &root); err != nil {
		t.Fatal(err)
	}
	var found []any
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "record" && x["name"] == name {
				found = x["fields"].([]any)
				return
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(root)
	if found == nil {
		t.Fatalf("record %s not found", name)
	}
	return found
}

// TestSchemaMatchesStructs checks that every struct's JSON field names are
// its Avro record's field names, in the same order, so that `tail` output
// and Avro tooling agree; and that NoiseComponent, defined inline in two
// files, is the same record in both.
func TestSchemaMatchesStructs(t *testing.T) {
	s := Schemas()
	tests := []struct {
		schema, record string
		typ            reflect.Type
	}{
		{NamePartial, "Partial", reflect.TypeFor[Partial]()},
		{NamePartial, "ReleaseStats", reflect.TypeFor[ReleaseStats]()},
		{NameRelease, "Release", reflect.TypeFor[Release]()},
		{NameRelease, "NoiseComponent", reflect.TypeFor[NoiseComponent]()},
		{NameLedgerCharge, "LedgerCharge", reflect.TypeFor[LedgerCharge]()},
		{NameLedgerCharge, "NoiseComponent", reflect.TypeFor[NoiseComponent]()},
		{NameBudgetState, "BudgetState", reflect.TypeFor[BudgetState]()},
	}
	for _, tc := range tests {
		t.Run(tc.schema+"/"+tc.record, func(t *testing.T) {
			fields := avroFields(t, s[tc.schema], tc.record)
			if len(fields) != tc.typ.NumField() {
				t.Fatalf("%d Avro fields, %d struct fields", len(fields), tc.typ.NumField())
			}
			for i, f := range fields {
				avroName := f.(map[string]any)["name"]
				jsonName, _, _ := strings.Cut(tc.typ.Field(i).Tag.Get("json"), ",")
				if avroName != jsonName {
					t.Errorf("field %d: Avro %v, JSON %s", i, avroName, jsonName)
				}
			}
		})
	}
	a := avroFields(t, s[NameRelease], "NoiseComponent")
	b := avroFields(t, s[NameLedgerCharge], "NoiseComponent")
	if !reflect.DeepEqual(a, b) {
		t.Error("NoiseComponent differs between release.avsc and ledger_charge.avsc")
	}
}
