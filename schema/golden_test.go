package schema

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// updateGolden rewrites the golden files of TestGolden from the current
// code: go test ./schema -run TestGolden -update
//
// The goldens pin the wire format of every record type for issue 12 (one
// release kind, one package): they were recorded BEFORE any kind moved.
// NEVER run -update to make a diff go away during that refactor: a diff
// means a record's bytes changed, which breaks every reader of the topics
// and every ledger already written. Update them only for a deliberate,
// reviewed, compatible schema change, in its own commit that says why.
var updateGolden = flag.Bool("update", false, "rewrite the golden files (never to paper over a diff; see golden_test.go)")

// goldenDir holds one hex dump (hex.Dump) per record.
const goldenDir = "testdata/golden"

func f64(v float64) *float64 { return &v }

// goldenNoise is a noise list with every field set.
var goldenNoise = []NoiseComponent{
	{Purpose: "count", Mechanism: "discrete_laplace", Sensitivity: 3, Scale: 6.5, Epsilon: 0.5, Delta: 0},
	{Purpose: "centered_sum", Mechanism: "discrete_gaussian", Sensitivity: 1.0 / 3, Scale: 12.75, Epsilon: 0.25, Delta: 1e-7},
}

// goldenRelease returns a release of kind with the common fields set.
func goldenRelease(kind, name string) Release {
	return Release{
		ReleaseID: "golden/" + name + "/1699999980000", Stream: "golden", Release: name, Kind: kind,
		WindowStart: 1699999980000, WindowEnd: 1700000040000, Status: "ok", Epsilon: 0.75, Delta: 1e-7,
		Noise: goldenNoise, EpsilonSpent: 2.125, EpsilonBudget: 10, PublishedAt: 1700000040000,
	}
}

// goldenRecord is one fixed value of a record type with its encoder and
// decoder.
type goldenRecord struct {
	name   string
	value  any
	encode func() ([]byte, error)
	decode func([]byte) (any, error)
}

func internalRecords() []goldenRecord {
	var out []goldenRecord
	partial := func(name string, p Partial) {
		out = append(out, goldenRecord{"partial_" + name, p,
			func() ([]byte, error) { return EncodePartial(p) },
			func(b []byte) (any, error) { return DecodePartial(b) }})
	}
	release := func(r Release) {
		out = append(out, goldenRecord{"release_" + r.Release, r,
			func() ([]byte, error) { return EncodeRelease(r) },
			func(b []byte) (any, error) { return DecodeRelease(b) }})
	}

	// A Partial with the statistics of every kind's shape (in the order
	// of a stream's releases) and every kind's per-unit norms layout.
	partial("every_kind", Partial{
		Stream: "golden", WindowStart: 1699999980000, WindowEnd: 1700000040000, Partition: 2, Partitions: 3,
		Events: 17, Units: 5, Dropped: 4, FirstOffset: 120, LastOffset: 161,
		Stats: []ReleaseStats{
			{Release: "count", Count: 17, Bins: []int64{}, Terms: []int64{}},
			{Release: "sum", Count: 17, SumUnits: 1 << 40, Clamped: 2, Bins: []int64{}, Terms: []int64{}},
			{Release: "mean", Count: 17, CenteredSumUnits: -(1 << 35) - 7, Clamped: 1, Bins: []int64{}, Terms: []int64{}},
			{Release: "histogram", Count: 17, Bins: []int64{3, 0, 5, 9, 0, 0}, Clamped: 3, Terms: []int64{}},
			{Release: "density", Count: 17, Bins: []int64{}, Terms: []int64{1 << 31, -(1 << 30) + 5, 77, 0}, Clamped: 1},
			{Release: "randomized_response", Count: 17, Bins: []int64{8, 4, 3, 2}, Terms: []int64{}},
			{Release: "regression", Count: 17, Bins: []int64{}, Terms: []int64{},
				XtX: []int64{17 << 32, 3 << 30, -5 << 28, 9 << 32, 1 << 20, 4 << 32}, Xty: []int64{2 << 32, -(7 << 29), 123456789}, Yty: 11 << 32},
		},
		UnitContributions: []UnitContribution{
			{Unit: "u01", Norms: [][]float64{{3}, {7.5}, {2, 1.25}, {3, 3}, {3, 2.5, 1.75}, {3, 3}, {3, 1.5, 2.25}}},
			{Unit: "u02", Norms: [][]float64{{1}, {0}, {1, 0.5}, {1, 1}, {1, 0.125, 0.375}, {1, 1}, {1, 0.5, 0.75, -0.25, 0.5, 1}}},
		},
	})
	partial("empty", Partial{
		Stream: "golden", WindowStart: 1700000040000, WindowEnd: 1700000100000, Partition: 0, Partitions: 3,
		FirstOffset: -1, LastOffset: -1, Stats: []ReleaseStats{},
	})
	partial("units_truncated", Partial{
		Stream: "golden", WindowStart: 1700000100000, WindowEnd: 1700000160000, Partition: 1, Partitions: 3,
		Events: 100000, Units: 90000, FirstOffset: 7, LastOffset: 100006,
		Stats:          []ReleaseStats{{Release: "count", Count: 100000, Bins: []int64{}, Terms: []int64{}}},
		UnitsTruncated: true,
	})

	// A Release of every kind's shape, and a refusal.
	count := goldenRelease("count", "count")
	count.Noise = goldenNoise[:1]
	count.Value, count.Interval95 = f64(41), f64(20.5)
	release(count)
	sum := goldenRelease("sum", "sum")
	sum.Value, sum.Interval95 = f64(-1234.5678), f64(1e-3)
	release(sum)
	mean := goldenRelease("mean", "mean")
	mean.Value, mean.Interval95 = f64(5.0/3), f64(0.25)
	release(mean)
	hist := goldenRelease("histogram", "histogram")
	hist.Noise = goldenNoise[1:]
	hist.NoisyCounts = []float64{12, -3, 40, 0}
	hist.Probabilities = []float64{12.0 / 52, 0, 40.0 / 52, 0}
	hist.Densities = []float64{0.046153846, 0, 0.153846153, 0}
	hist.Edges = []float64{0, 2.5, 5, 7.5, 10}
	hist.Fields = []string{"x"}
	hist.Shape = []int64{4}
	hist.Samples = []float64{1.25, 6.0625, 9.999}
	release(hist)
	hist2 := goldenRelease("histogram", "histogram2")
	hist2.NoisyCounts = []float64{1, 2, 3, 4, 5, 6}
	hist2.Probabilities = []float64{1.0 / 21, 2.0 / 21, 3.0 / 21, 4.0 / 21, 5.0 / 21, 6.0 / 21}
	hist2.Densities = []float64{0.01, 0.02, 0.03, 0.04, 0.05, 0.06}
	hist2.Edges = []float64{0, 5, 10, 0, 10, 20, 40}
	hist2.Fields = []string{"x", "y"}
	hist2.Shape = []int64{2, 3}
	hist2.Samples = []float64{1, 15, 7.5, 33}
	release(hist2)
	dens := goldenRelease("density", "density")
	dens.Densities = []float64{0.2, 0.15, 0, 0.05}
	dens.Edges = []float64{0, 1, 2, 3}
	dens.Coefficients = []float64{0.61, -0.2, 0.033}
	dens.Samples = []float64{0.5, 2.25}
	release(dens)
	rr := goldenRelease("randomized_response", "randomized_response")
	rr.NoisyCounts = []float64{50, 30, 21, -2}
	rr.DebiasedCounts = []float64{61.5, 31.25, 17, -10.75}
	rr.StdErrors = []float64{9.5, 8.25, 7.125, 7}
	rr.Probabilities = []float64{0.62, 0.3, 0.08, 0}
	rr.Interval95 = f64(13)
	rr.Categories = []string{"card", "app", "cash", "voucher"}
	rr.Fields = []string{"cat"}
	rr.LocalEpsilon = f64(2)
	release(rr)
	reg := goldenRelease("regression", "regression")
	reg.Method = "adaops"
	reg.Coefficients = []float64{0.51, -0.0123}
	reg.StdErrors = []float64{0.2, 0.001}
	reg.Fields = []string{"a", "b"}
	reg.Intercept, reg.Ridge = f64(2.05), f64(13.5)
	release(reg)
	pcls := goldenRelease("regression", "pcls")
	pcls.Method = "pcls"
	pcls.Coefficients = []float64{0.49, 0, -0.38}
	pcls.StdErrors = []float64{0.1, 0, 0.2}
	pcls.Fields = []string{"a", "b", "c"}
	pcls.Selected = []string{"a", "c"}
	pcls.Intercept, pcls.Ridge = f64(-1.5), f64(0)
	release(pcls)
	refused := goldenRelease("histogram", "refused")
	refused.Status = "budget_exhausted"
	release(refused)

	okPayload, err := EncodeRelease(count)
	if err != nil {
		panic(err)
	}
	refusedPayload, err := EncodeRelease(refused)
	if err != nil {
		panic(err)
	}
	charges := map[string]LedgerCharge{
		"ok": {ReleaseID: count.ReleaseID, Stream: "golden", Release: "count", WindowStart: count.WindowStart, Period: 3,
			Status: "ok", Charges: goldenNoise, RDP: []float64{0.001, 0.5, 1.0 / 3, 12.75, 1e300}, Payload: okPayload, At: 1700000040001,
			KL: f64(0.0625), LinearKL: f64(0.03125)},
		"refused": {ReleaseID: refused.ReleaseID, Stream: "golden", Release: "refused", WindowStart: refused.WindowStart,
			Status: "budget_exhausted", Charges: []NoiseComponent{}, RDP: []float64{}, Payload: refusedPayload, At: 1700000040002,
			KL: f64(0), LinearKL: f64(0)},
	}
	for _, name := range []string{"ok", "refused"} {
		lc := charges[name]
		out = append(out, goldenRecord{"ledger_charge_" + name, lc,
			func() ([]byte, error) { return EncodeLedgerCharge(lc) },
			func(b []byte) (any, error) { return DecodeLedgerCharge(b) }})
	}

	for _, bs := range []struct {
		name string
		s    BudgetState
	}{
		{"pure", BudgetState{Stream: "golden", Period: 4, ReleasesCharged: 12, ReleasesRefused: 0, EpsilonSpent: 3,
			PureEpsilon: f64(3), Delta: 1e-5, EpsilonBudget: 10, EpsilonRemaining: 7, UpdatedAt: 1700000040003,
			KL: 0.25, LinearKL: 0.125}},
		{"rdp", BudgetState{Stream: "golden", Period: 0, ReleasesCharged: 40, ReleasesRefused: 9, EpsilonSpent: 9.875,
			Delta: 1e-5, EpsilonBudget: 10, EpsilonRemaining: 0.125, UpdatedAt: 1700000040004,
			KL: 1.5, LinearKL: 0.75, ReleasesWithoutKL: 3}},
	} {
		out = append(out, goldenRecord{"budget_state_" + bs.name, bs.s,
			func() ([]byte, error) { return EncodeBudgetState(bs.s) },
			func(b []byte) (any, error) { return DecodeBudgetState(b) }})
	}

	unit := PDPUnit{Stream: "golden", Unit: "u01", GaussianRho: 0.0125, PureRho: 0.5, PureEpsilon: 1.25, ApproxEpsilon: 0.5,
		ApproxDelta: 2e-8, Charges: 17, LastWindow: 1699999980000, Epsilon: 2.875, Delta: 1e-5, UpdatedAt: 1700000040005}
	out = append(out, goldenRecord{"pdp_unit", unit,
		func() ([]byte, error) { return EncodePDPUnit(unit) },
		func(b []byte) (any, error) { return DecodePDPUnit(b) }})
	summary := PDPSummary{Stream: "golden", WindowStart: 1699999980000, WindowEnd: 1700000040000, Delta: 1e-5,
		Releases: []PDPRelease{
			{Release: "count", Status: "ok", Units: 5, P50: 0.25, P90: 0.5, P99: 0.5, Max: 0.5, DPEpsilon: 0.5},
			{Release: "ops", Status: "ok", Units: 5, P50: 0.1, P90: 0.3, P99: 0.35, Max: 0.375, DPEpsilon: 1, LipschitzSigma: 0.8125},
			{Release: "refused", Status: "budget_exhausted"},
			{Release: "big", Status: "unavailable", DPEpsilon: 0.25},
		},
		CumulativeUnits: 30, CumulativeP50: 1.5, CumulativeP90: 2.25, CumulativeP99: 2.75, CumulativeMax: 3, PublishedAt: 1700000040000}
	out = append(out, goldenRecord{"pdp_summary", summary,
		func() ([]byte, error) { return EncodePDPSummary(summary) },
		func(b []byte) (any, error) { return DecodePDPSummary(b) }})

	epoch := LedgerEpoch{Epoch: "5f0c1d2e3a4b", Owner: "host-1 pid 4242 member dpstream-release-7", At: 1700000040006}
	out = append(out, goldenRecord{"ledger_epoch", epoch,
		func() ([]byte, error) { return EncodeLedgerEpoch(epoch) },
		func(b []byte) (any, error) { return DecodeLedgerEpoch(b) }})
	for _, ss := range []StreamStart{
		{Stream: "golden", Start: 1699999980000, Source: StartFromConfig, At: 1700000040007},
		{Stream: "golden", Start: 1699999920000, Source: StartFromFirstRun, At: 1700000040008},
	} {
		out = append(out, goldenRecord{"stream_start_" + ss.Source, ss,
			func() ([]byte, error) { return EncodeStreamStart(ss) },
			func(b []byte) (any, error) { return DecodeStreamStart(b) }})
	}
	chunk := LedgerChunk{ReleaseID: "golden/zones/1699999980000", Stream: "golden", Epoch: "5f0c1d2e3a4b", Chunk: 1, Chunks: 3,
		Digest: bytes.Repeat([]byte{0x5a}, 32), Payload: []byte("chunk 1 of a release"), At: 1700000040009}
	out = append(out, goldenRecord{"ledger_chunk", chunk,
		func() ([]byte, error) { return EncodeLedgerChunk(chunk) },
		func(b []byte) (any, error) { return DecodeLedgerChunk(b) }})
	return out
}

// goldenInputSchema is a flat input schema with every field type the
// input codecs accept.
const goldenInputSchema = `{"type": "record", "name": "Ev", "fields": [
  {"name": "user", "type": "string"},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "ok", "type": "boolean"},
  {"name": "n", "type": "int"},
  {"name": "big", "type": "long"},
  {"name": "f", "type": "float"},
  {"name": "x", "type": "double"},
  {"name": "opt", "type": ["null", "double"]},
  {"name": "optn", "type": ["null", "string"], "default": null}
]}`

// inputRecords are input events in every format, as `dpstream produce`
// encodes them (the event as read from a JSON line with UseNumber), and
// the map each decodes to.
func inputRecords() []struct {
	name, format, schema string
	id                   int
	event, decoded       map[string]any
} {
	ev := map[string]any{
		"user": "u01", "ts": json.Number("1699999980123"), "ok": true, "n": json.Number("-7"),
		"big": json.Number("9007199254740993"), "f": json.Number("1.5"), "x": json.Number("-0.1"), "opt": json.Number("2.25"),
	}
	avroDecoded := map[string]any{
		"user": "u01", "ts": time.UnixMilli(1699999980123).UTC(), "ok": true, "n": int32(-7),
		"big": int64(9007199254740993), "f": float32(1.5), "x": -0.1, "opt": 2.25, "optn": nil,
	}
	jsonDecoded := map[string]any{
		"user": "u01", "ts": int64(1699999980123), "ok": true, "n": int64(-7),
		"big": int64(9007199254740993), "f": 1.5, "x": -0.1, "opt": 2.25,
	}
	trip := map[string]any{
		"rider_id": "r-42", "trip_id": "t-1001", "ts": "2023-11-14T22:13:00.5Z", "fare": json.Number("12.5"),
		"km": json.Number("3.75"), "minutes": json.Number("11"), "zone": "north",
	}
	tripDecoded := map[string]any{
		"rider_id": "r-42", "trip_id": "t-1001", "ts": time.UnixMilli(1699999980500).UTC(), "fare": 12.5,
		"km": 3.75, "minutes": 11.0, "zone": "north",
	}
	return []struct {
		name, format, schema string
		id                   int
		event, decoded       map[string]any
	}{
		{"input_avro", FormatAvro, goldenInputSchema, 0, ev, avroDecoded},
		{"input_confluent_avro", FormatConfluentAvro, goldenInputSchema, 42, ev, avroDecoded},
		{"input_json", FormatJSON, "", 0, ev, jsonDecoded},
		{"input_trip_avro", FormatAvro, TripSchema(), 0, trip, tripDecoded},
	}
}

// TestGolden encodes one fixed, fully populated value of every record type
// (and input events in every format) and compares the bytes with the
// committed hex dumps in testdata/golden, then decodes them back and
// compares with the value.
func TestGolden(t *testing.T) {
	seen := map[string]bool{}
	check := func(t *testing.T, name string, got []byte) {
		t.Helper()
		seen[name+".hex"] = true
		path := filepath.Join(goldenDir, name+".hex")
		dump := hex.Dump(got)
		if *updateGolden {
			if err := os.MkdirAll(goldenDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(dump), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read golden: %v (record it with -update, only if it is new)", err)
		}
		if dump != string(want) {
			t.Errorf("%s: the encoding changed (%d bytes); got:\n%s\nwant:\n%s", path, len(got), dump, want)
		}
	}
	for _, rec := range internalRecords() {
		t.Run(rec.name, func(t *testing.T) {
			b, err := rec.encode()
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			check(t, rec.name, b)
			back, err := rec.decode(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(back, rec.value) {
				t.Errorf("decoded value differs:\n got %+v\nwant %+v", back, rec.value)
			}
		})
	}
	for _, in := range inputRecords() {
		t.Run(in.name, func(t *testing.T) {
			enc, err := NewEncoder(in.format, in.schema, in.id)
			if err != nil {
				t.Fatal(err)
			}
			b, err := enc.Encode(in.event)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			check(t, in.name, b)
			dec, err := NewDecoder(in.format, in.schema, in.id)
			if err != nil {
				t.Fatal(err)
			}
			back, err := dec.Decode(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(back, in.decoded) {
				t.Errorf("decoded event differs:\n got %s\nwant %s", describe(back), describe(in.decoded))
			}
		})
	}
	if *updateGolden || t.Failed() {
		return
	}
	// Every golden file is checked: a record dropped from the test must
	// not leave its golden behind unnoticed.
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.hex"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s: no record of the test writes it", f)
		}
	}
}

// describe prints a decoded event with the Go type of each value.
func describe(m map[string]any) string {
	var b bytes.Buffer
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%#v ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

// TestLegacyLedgerCharge decodes charges written by older versions: before
// the continual fields existed (testdata/legacy_ledger_charge_v1.hex) and
// before the capacity-bounded figures (legacy_ledger_charge_v2.hex), before
// the prediction fields (v3) and before the kinds' state (v4), each
// the golden of ledger_charge_ok at that time. A ledger written by an older
// version must stay readable, or an upgrade would lose the accountant's
// state; the figures of an old charge are absent (nil), not 0.
func TestLegacyLedgerCharge(t *testing.T) {
	var want LedgerCharge
	for _, rec := range internalRecords() {
		if rec.name == "ledger_charge_ok" {
			want = rec.value.(LedgerCharge)
		}
	}
	for _, file := range []string{"legacy_ledger_charge_v1.hex", "legacy_ledger_charge_v2.hex", "legacy_ledger_charge_v3.hex", "legacy_ledger_charge_v4.hex"} {
		t.Run(file, func(t *testing.T) {
			dump, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			b := unhexDump(t, string(dump))
			got, err := DecodeLedgerCharge(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got.ReleaseID != want.ReleaseID || got.Status != want.Status || !reflect.DeepEqual(got.Charges, want.Charges) ||
				!reflect.DeepEqual(got.RDP, want.RDP) || got.At != want.At {
				t.Errorf("decoded as %+v, want the fields of %+v", got, want)
			}
			if got.ContinualFirst != 0 || len(got.ContinualX) != 0 || len(got.ContinualZ) != 0 {
				t.Errorf("has a continual log: %d %v %v", got.ContinualFirst, got.ContinualX, got.ContinualZ)
			}
			if got.State != nil {
				t.Errorf("has a kind's state %x, want none", got.State)
			}
			if file != "legacy_ledger_charge_v3.hex" && file != "legacy_ledger_charge_v4.hex" && (got.KL != nil || got.LinearKL != nil) {
				t.Errorf("has capacity-bounded figures %v %v, want none", got.KL, got.LinearKL)
			}
			if got.Model != nil || got.RequestID != "" || got.RequestOffset != 0 {
				t.Errorf("has prediction fields %v %q %d, want none", got.Model, got.RequestID, got.RequestOffset)
			}
			// A legacy charge with a byte cut off is still an error.
			if _, err := DecodeLedgerCharge(b[:len(b)-1]); err == nil {
				t.Error("a truncated charge decoded")
			}
		})
	}
}

// TestLegacyBudgetState decodes a state written before the
// capacity-bounded figures existed (testdata/legacy_budget_state_v1.hex,
// the golden of budget_state_pure at that time): the accountant topic is
// compacted and read at start (release.Stage's lost-ledger check), so an
// upgraded instance must read the old states, with the figures 0.
func TestLegacyBudgetState(t *testing.T) {
	var want BudgetState
	for _, rec := range internalRecords() {
		if rec.name == "budget_state_pure" {
			want = rec.value.(BudgetState)
		}
	}
	want.KL, want.LinearKL, want.ReleasesWithoutKL = 0, 0, 0
	dump, err := os.ReadFile(filepath.Join("testdata", "legacy_budget_state_v1.hex"))
	if err != nil {
		t.Fatal(err)
	}
	b := unhexDump(t, string(dump))
	got, err := DecodeBudgetState(b)
	if err != nil {
		t.Fatalf("decode a v1 state: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("v1 state decoded as %+v, want %+v", got, want)
	}
	if _, err := DecodeBudgetState(b[:len(b)-1]); err == nil {
		t.Error("a truncated v1 state decoded")
	}
}

// unhexDump parses the output of hex.Dump back into bytes.
func unhexDump(t *testing.T, dump string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(dump, "\n") {
		if len(line) < 10 {
			continue
		}
		hexPart, _, _ := strings.Cut(line[10:], "|")
		for _, f := range strings.Fields(hexPart) {
			v, err := hex.DecodeString(f)
			if err != nil || len(v) != 1 {
				t.Fatalf("bad hex dump byte %q", f)
			}
			out = append(out, v...)
		}
	}
	return out
}
