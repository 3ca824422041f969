package accumulate

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestExtract covers every rejection reason and every accepted
// representation of the unit, the event time and the values.
func TestExtract(t *testing.T) {
	recordTime := time.UnixMilli(1714550400999)
	x := &Extractor{Unit: "rider", EventTime: "ts", Fields: []string{"", "fare", "km"}} // "" is a count release
	ok := func(extra map[string]any) map[string]any {
		m := map[string]any{"rider": "r1", "ts": int64(1714550400000), "fare": 12.5, "km": int64(3)}
		for k, v := range extra {
			if v == deleteField {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	for _, tc := range []struct {
		name       string
		x          *Extractor
		m          map[string]any
		wantReason Reason // "" when accepted
		wantUnit   string
		wantTime   int64
		wantValues []float64
	}{
		{name: "accepted", m: ok(nil), wantUnit: "r1", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},

		// Privacy unit.
		{name: "missing unit", m: ok(map[string]any{"rider": deleteField}), wantReason: ReasonMissingUnit},
		{name: "null unit", m: ok(map[string]any{"rider": nil}), wantReason: ReasonMissingUnit},
		{name: "empty unit", m: ok(map[string]any{"rider": ""}), wantReason: ReasonMissingUnit},
		{name: "empty bytes unit", m: ok(map[string]any{"rider": []byte{}}), wantReason: ReasonMissingUnit},
		{name: "bool unit", m: ok(map[string]any{"rider": true}), wantReason: ReasonMissingUnit},
		{name: "int64 unit", m: ok(map[string]any{"rider": int64(-42)}), wantUnit: "-42", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "int32 unit", m: ok(map[string]any{"rider": int32(7)}), wantUnit: "7", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "int unit", m: ok(map[string]any{"rider": 99}), wantUnit: "99", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		// JSON numbers arrive as float64 when they are not int64 literals;
		// an integral one must name the same unit as its integer form.
		{name: "integral float unit", m: ok(map[string]any{"rider": 42.0}), wantUnit: "42", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "large integral float unit", m: ok(map[string]any{"rider": 9007199254740991.0}), wantUnit: "9007199254740991", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "fractional float unit", m: ok(map[string]any{"rider": 1.5}), wantUnit: "1.5", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "json.Number unit", m: ok(map[string]any{"rider": json.Number("123")}), wantUnit: "123", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "bytes unit", m: ok(map[string]any{"rider": []byte("r9")}), wantUnit: "r9", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},

		// Event time.
		{name: "missing event time", m: ok(map[string]any{"ts": deleteField}), wantReason: ReasonMissingEventTime},
		{name: "null event time", m: ok(map[string]any{"ts": nil}), wantReason: ReasonMissingEventTime},
		{name: "unparsable event time", m: ok(map[string]any{"ts": "yesterday"}), wantReason: ReasonBadEventTime},
		{name: "date without time", m: ok(map[string]any{"ts": "2024-05-01"}), wantReason: ReasonBadEventTime},
		{name: "bool event time", m: ok(map[string]any{"ts": true}), wantReason: ReasonBadEventTime},
		{name: "NaN event time", m: ok(map[string]any{"ts": math.NaN()}), wantReason: ReasonBadEventTime},
		{name: "infinite event time", m: ok(map[string]any{"ts": math.Inf(1)}), wantReason: ReasonBadEventTime},
		{name: "float event time beyond 1e15 ms", m: ok(map[string]any{"ts": 2e15}), wantReason: ReasonBadEventTime},
		{name: "RFC 3339 UTC", m: ok(map[string]any{"ts": "2024-05-01T08:00:00Z"}), wantUnit: "r1", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "RFC 3339 with offset", m: ok(map[string]any{"ts": "2024-05-01T10:00:00+02:00"}), wantUnit: "r1", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "RFC 3339 sub-millisecond fraction truncates", m: ok(map[string]any{"ts": "2024-05-01T08:00:00.123987Z"}), wantUnit: "r1", wantTime: 1714550400123, wantValues: []float64{0, 12.5, 3}},
		{name: "epoch ms int32", m: ok(map[string]any{"ts": int32(86400000)}), wantUnit: "r1", wantTime: 86400000, wantValues: []float64{0, 12.5, 3}},
		{name: "epoch ms int", m: ok(map[string]any{"ts": 1714550400001}), wantUnit: "r1", wantTime: 1714550400001, wantValues: []float64{0, 12.5, 3}},
		{name: "epoch ms negative", m: ok(map[string]any{"ts": int64(-1)}), wantUnit: "r1", wantTime: -1, wantValues: []float64{0, 12.5, 3}},
		{name: "epoch ms float floors", m: ok(map[string]any{"ts": 1714550400000.9}), wantUnit: "r1", wantTime: 1714550400000, wantValues: []float64{0, 12.5, 3}},
		{name: "epoch ms negative float floors", m: ok(map[string]any{"ts": -1.5}), wantUnit: "r1", wantTime: -2, wantValues: []float64{0, 12.5, 3}},
		{name: "time.Time (Avro timestamp-millis)", m: ok(map[string]any{"ts": time.Date(2024, 5, 1, 8, 0, 0, 5e6, time.UTC)}), wantUnit: "r1", wantTime: 1714550400005, wantValues: []float64{0, 12.5, 3}},
		{name: "record timestamp when no event-time field",
			x: &Extractor{Unit: "rider", Fields: []string{"", "fare", "km"}},
			m: ok(map[string]any{"ts": "not even looked at"}), wantUnit: "r1", wantTime: 1714550400999, wantValues: []float64{0, 12.5, 3}},

		// Values.
		{name: "missing field", m: ok(map[string]any{"km": deleteField}), wantReason: ReasonMissingField},
		{name: "null field", m: ok(map[string]any{"fare": nil}), wantReason: ReasonMissingField},
		{name: "string field", m: ok(map[string]any{"fare": "12.5"}), wantReason: ReasonInvalidValue},
		{name: "bool field", m: ok(map[string]any{"fare": false}), wantReason: ReasonInvalidValue},
		{name: "bad json.Number field", m: ok(map[string]any{"fare": json.Number("twelve")}), wantReason: ReasonInvalidValue},
		{name: "NaN field", m: ok(map[string]any{"fare": math.NaN()}), wantReason: ReasonNonFinite},
		{name: "+Inf field", m: ok(map[string]any{"km": math.Inf(1)}), wantReason: ReasonNonFinite},
		{name: "-Inf field", m: ok(map[string]any{"km": math.Inf(-1)}), wantReason: ReasonNonFinite},
		{name: "float32 +Inf field", m: ok(map[string]any{"km": float32(math.Inf(1))}), wantReason: ReasonNonFinite},
		{name: "numeric kinds", m: ok(map[string]any{"fare": float32(0.5), "km": int32(-4)}), wantUnit: "r1", wantTime: 1714550400000, wantValues: []float64{0, 0.5, -4}},
		{name: "int and json.Number fields", m: ok(map[string]any{"fare": 8, "km": json.Number("2.25")}), wantUnit: "r1", wantTime: 1714550400000, wantValues: []float64{0, 8, 2.25}},
		{name: "out-of-bounds values pass (clamping is the window's job)", m: ok(map[string]any{"fare": -1e300}), wantUnit: "r1", wantTime: 1714550400000, wantValues: []float64{0, -1e300, 3}},

		// Order of checks: the unit first, then the time, then the fields.
		{name: "unit checked before time", m: ok(map[string]any{"rider": "", "ts": "bad", "fare": nil}), wantReason: ReasonMissingUnit},
		{name: "time checked before fields", m: ok(map[string]any{"ts": "bad", "fare": nil}), wantReason: ReasonBadEventTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xx := x
			if tc.x != nil {
				xx = tc.x
			}
			ev, rej := xx.Extract(tc.m, 77, recordTime)
			if tc.wantReason != "" {
				if rej == nil {
					t.Fatalf("accepted (%+v), want rejection %q", ev, tc.wantReason)
				}
				if rej.Reason != tc.wantReason {
					t.Fatalf("reason %q (%s), want %q", rej.Reason, rej.Detail, tc.wantReason)
				}
				if rej.Detail == "" || !strings.HasPrefix(rej.Error(), string(tc.wantReason)+": ") {
					t.Errorf("Error() = %q, want %q followed by a detail", rej.Error(), tc.wantReason)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %v", rej)
			}
			if ev.Offset != 77 || ev.Unit != tc.wantUnit || ev.Time != tc.wantTime || !slices.Equal(ev.Values, tc.wantValues) {
				t.Errorf("got {Offset %d Unit %q Time %d Values %v}, want {77 %q %d %v}",
					ev.Offset, ev.Unit, ev.Time, ev.Values, tc.wantUnit, tc.wantTime, tc.wantValues)
			}
		})
	}
}

// deleteField marks a field that the test case removes from the record.
var deleteField = &struct{ name string }{"delete"}

// TestExtractDetailNamesField: the detail names the offending field, so
// that an operator reading the dead-letter topic can fix the producer.
func TestExtractDetailNamesField(t *testing.T) {
	x := &Extractor{Unit: "rider", EventTime: "ts", Fields: []string{"fare", "km"}}
	for _, tc := range []struct {
		m     map[string]any
		field string
	}{
		{map[string]any{"ts": int64(0), "fare": 1.0, "km": 1.0}, "rider"},
		{map[string]any{"rider": "a", "fare": 1.0, "km": 1.0}, "ts"},
		{map[string]any{"rider": "a", "ts": "soon", "fare": 1.0, "km": 1.0}, "ts"},
		{map[string]any{"rider": "a", "ts": int64(0), "fare": 1.0}, "km"},
		{map[string]any{"rider": "a", "ts": int64(0), "fare": "x", "km": 1.0}, "fare"},
		{map[string]any{"rider": "a", "ts": int64(0), "fare": 1.0, "km": math.NaN()}, "km"},
	} {
		_, rej := x.Extract(tc.m, 0, time.Time{})
		if rej == nil {
			t.Errorf("%v: accepted, want a rejection naming %q", tc.m, tc.field)
			continue
		}
		if !strings.Contains(rej.Detail, `"`+tc.field+`"`) {
			t.Errorf("%v: detail %q does not name field %q", tc.m, rej.Detail, tc.field)
		}
	}
}

// TestExtractKeys covers key fields (kind.Field.Key): every accepted
// representation gives one canonical key, and what cannot be a key is
// rejected with its reason.
func TestExtractKeys(t *testing.T) {
	x := &Extractor{Unit: "rider", EventTime: "ts", Fields: []string{"fare", "zone"}, Keyed: []bool{false, true}}
	base := func(zone any) map[string]any {
		return map[string]any{"rider": "r1", "ts": int64(1714550400000), "fare": 12.5, "zone": zone}
	}
	for _, tc := range []struct {
		name   string
		zone   any
		want   string
		reason Reason
	}{
		{"string", "midtown", "midtown", ""},
		{"empty string", "", "", ""},
		{"integer", int64(7), "7", ""},
		{"integral float is the integer's key", 7.0, "7", ""},
		{"json number", json.Number("7e0"), "7", ""},
		{"json integer", json.Number("7"), "7", ""},
		{"fraction", 2.5, "2.5", ""},
		{"avro nullable string", map[string]any{"string": "soho"}, "soho", ""},
		{"avro nullable long", map[string]any{"long": int64(12)}, "12", ""},
		{"bytes", []byte("b"), "b", ""},
		{"avro float, integral", float32(7), "7", ""},
		{"avro float, fraction in its shortest form", float32(0.1), "0.1", ""},
		{"avro nullable float", map[string]any{"float": float32(2.5)}, "2.5", ""},
		{"avro float NaN", float32(math.NaN()), "", ReasonInvalidValue},
		{"json number beyond float64", json.Number("1e400"), "", ReasonInvalidValue},
		{"not UTF-8", "a\xffb", "", ReasonInvalidValue},
		{"avro bytes not UTF-8", []byte{0xfe, 0xff}, "", ReasonInvalidValue},
		{"missing", nil, "", ReasonMissingField},
		{"NaN", math.NaN(), "", ReasonInvalidValue},
		{"infinity", math.Inf(1), "", ReasonInvalidValue},
		{"boolean", true, "", ReasonInvalidValue},
		{"too long", strings.Repeat("k", MaxKeyBytes+1), "", ReasonInvalidValue},
		{"longest", strings.Repeat("k", MaxKeyBytes), strings.Repeat("k", MaxKeyBytes), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, rej := x.Extract(base(tc.zone), 3, time.Time{})
			if tc.reason != "" {
				if rej == nil || rej.Reason != tc.reason {
					t.Fatalf("rejection %v, want reason %s", rej, tc.reason)
				}
				return
			}
			if rej != nil {
				t.Fatal(rej)
			}
			if len(ev.Keys) != 2 || ev.Keys[1] != tc.want || ev.Keys[0] != "" || ev.Values[0] != 12.5 || ev.Values[1] != 0 {
				t.Fatalf("keys %q values %v, want key %q at 1", ev.Keys, ev.Values, tc.want)
			}
		})
	}
	// A stream without key fields allocates no keys.
	y := &Extractor{Unit: "rider", EventTime: "ts", Fields: []string{"fare"}}
	if ev, rej := y.Extract(base("z"), 1, time.Time{}); rej != nil || ev.Keys != nil {
		t.Fatalf("keys %v (%v), want nil", ev.Keys, rej)
	}
}

// TestExtractUnitKey: a release that reads the privacy unit's field as a
// key (the prediction kind shards by it) gets the unit's identity exactly
// as the stage names the unit — two events of one unit always carry one
// key, so their rows reach one shard — and no event the stage accepts
// without that release is rejected for it (a long or non-UTF-8 unit id).
func TestExtractUnitKey(t *testing.T) {
	x := &Extractor{Unit: "rider", EventTime: "ts", Fields: []string{"fare", "rider"}, Keyed: []bool{false, true}}
	for _, tc := range []struct {
		name string
		unit any
	}{
		{"string", "r1"},
		{"integer", int64(7)},
		{"integral float", 7.0},
		{"json number in exponent form", json.Number("1e3")},
		{"json number with a trailing zero", json.Number("0.10")},
		{"json negative zero", json.Number("-0")},
		{"json integer beyond int64", json.Number("12345678901234567890")},
		{"longer than a group key", strings.Repeat("u", MaxKeyBytes+1)},
		{"bytes, not UTF-8", []byte{0xfe, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, rej := x.Extract(map[string]any{"rider": tc.unit, "ts": int64(1714550400000), "fare": 1.5}, 3, time.Time{})
			if rej != nil {
				t.Fatal(rej)
			}
			if len(ev.Keys) != 2 || ev.Keys[1] != ev.Unit {
				t.Fatalf("unit %q has key %q: one unit's events could carry two keys", ev.Unit, ev.Keys)
			}
		})
	}
}
