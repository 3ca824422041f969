package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// tripBytes is a Trip written from the Avro specification.
func tripBytes(rider string, tsMillis int64, fare float64) []byte {
	return cat(avString(rider), avString("trip-1"), avLong(tsMillis), avDouble(fare), avDouble(3.25), avDouble(12.5), avString("north"))
}

func tripMap(rider string, tsMillis int64, fare float64) map[string]any {
	return map[string]any{
		"rider_id": rider, "trip_id": "trip-1", "ts": time.UnixMilli(tsMillis).UTC(),
		"fare": fare, "km": 3.25, "minutes": 12.5, "zone": "north",
	}
}

// confluent frames an Avro body in Confluent's wire format.
func confluent(id uint32, body []byte) []byte {
	return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, body...)
}

// allKinds is a flat schema with one field of every supported shape.
const allKinds = `{"type": "record", "name": "All", "namespace": "t", "fields": [
	{"name": "b", "type": "boolean"},
	{"name": "i", "type": "int"},
	{"name": "l", "type": {"type": "long"}},
	{"name": "f", "type": "float"},
	{"name": "d", "type": "double"},
	{"name": "s", "type": "string"},
	{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
	{"name": "od", "type": ["null", "double"]},
	{"name": "ots", "type": [{"type": "long", "logicalType": "timestamp-millis"}, "null"]},
	{"name": "os", "type": ["null", "string"], "default": null},
	{"name": "zone", "type": "string", "default": "none"}
]}`

func TestNewDecoderAndEncoderErrors(t *testing.T) {
	field := func(name, typ string) string {
		return `{"type":"record","name":"R","fields":[{"name":"ok","type":"long"},{"name":"` + name + `","type":` + typ + `}]}`
	}
	tests := []struct {
		name, format, schema string
		id                   int
		want                 string // substring of the error
	}{
		{"unknown format", "protobuf", TripSchema(), 0, `unknown input format "protobuf"`},
		{"avro without schema", FormatAvro, "", 0, "avro: schema: schema is empty"},
		{"confluent without schema", FormatConfluentAvro, "  ", 0, "confluent-avro: schema: schema is empty"},
		{"schema not JSON", FormatAvro, "{", 0, "not valid JSON"},
		{"schema not a record", FormatAvro, `"long"`, 0, "top-level type must be a record"},
		{"record without fields", FormatAvro, `{"type":"record","name":"R","fields":[]}`, 0, "record has no fields"},
		{"array field", FormatAvro, field("tags", `{"type":"array","items":"string"}`), 0, `field "tags": type "array"`},
		{"nested record", FormatAvro, field("addr", `{"type":"record","name":"A","fields":[]}`), 0, `field "addr": type "record"`},
		{"enum", FormatAvro, field("zone", `{"type":"enum","name":"Z","symbols":["a"]}`), 0, `field "zone": type "enum"`},
		{"bytes", FormatAvro, field("raw", `"bytes"`), 0, `field "raw": type "bytes"`},
		{"named type reference", FormatAvro, field("x", `"t.Other"`), 0, `field "x": type "t.Other"`},
		{"union of three", FormatAvro, field("u", `["null","long","string"]`), 0, `field "u": union of 3 types`},
		{"union without null", FormatAvro, field("u", `["long","string"]`), 0, `field "u": union without exactly one "null"`},
		{"union of nulls", FormatAvro, field("u", `["null","null"]`), 0, `field "u": union without exactly one "null"`},
		{"date", FormatAvro, field("day", `{"type":"int","logicalType":"date"}`), 0, `field "day": logicalType date`},
		{"decimal", FormatAvro, field("amount", `{"type":"bytes","logicalType":"decimal"}`), 0, `field "amount": type "bytes"`},
		{"timestamp on int", FormatAvro, field("ts", `{"type":"int","logicalType":"timestamp-millis"}`), 0, `field "ts": logicalType timestamp-millis needs type long`},
		{"duplicate field", FormatAvro, field("ok", `"long"`), 0, `field "ok": defined twice`},
		{"bad default (goavro)", FormatAvro, field("d", `{"type":"double"}, "default": "x"`), 0, "avro: schema:"},
		{"schema id on avro", FormatAvro, TripSchema(), 3, "avro: a schema id applies only to confluent-avro"},
		{"schema id on json", FormatJSON, "", 3, "json: a schema id applies only to confluent-avro"},
		{"negative schema id", FormatConfluentAvro, TripSchema(), -1, "schema id -1 out of range"},
		{"schema id beyond int32", FormatConfluentAvro, TripSchema(), math.MaxInt32 + 1, "out of range"},
		{"invalid schema for json", FormatJSON, field("tags", `{"type":"array","items":"string"}`), 0, `json: schema: field "tags"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder(tc.format, tc.schema, tc.id)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewDecoder: (%v, %v), want error containing %q", d, err, tc.want)
			}
			e, err := NewEncoder(tc.format, tc.schema, tc.id)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewEncoder: (%v, %v), want error containing %q", e, err, tc.want)
			}
		})
	}
}

func TestNewDecoderAccepts(t *testing.T) {
	tests := []struct{ name, format, schema string }{
		{"trip avro", FormatAvro, TripSchema()},
		{"trip confluent", FormatConfluentAvro, TripSchema()},
		{"every kind", FormatAvro, allKinds},
		{"json without schema", FormatJSON, ""},
		{"json with schema", FormatJSON, TripSchema()},
		{"timestamp-millis only", FormatAvro, `{"type":"record","name":"R","fields":[{"name":"x","type":{"type":"long","logicalType":"timestamp-millis"}}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewDecoder(tc.format, tc.schema, 0); err != nil {
				t.Errorf("NewDecoder: %v", err)
			}
			if _, err := NewEncoder(tc.format, tc.schema, 0); err != nil {
				t.Errorf("NewEncoder: %v", err)
			}
		})
	}
}

func mustDecoder(t *testing.T, format, schema string, id int) Decoder {
	t.Helper()
	d, err := NewDecoder(format, schema, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustEncoder(t *testing.T, format, schema string, id int) Encoder {
	t.Helper()
	e, err := NewEncoder(format, schema, id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAvroDecoder(t *testing.T) {
	trip := mustDecoder(t, FormatAvro, TripSchema(), 0)
	all := mustDecoder(t, FormatAvro, allKinds, 0)
	allBody := func(od, ots, os []byte) []byte {
		return cat(avBool(true), avLong(-7), avLong(1<<40), avFloat(1.5), avDouble(-2.25), avString("é"), avLong(-1500),
			od, ots, os, avString("z"))
	}
	allWant := func(od, ots, os any) map[string]any {
		return map[string]any{"b": true, "i": int32(-7), "l": int64(1 << 40), "f": float32(1.5), "d": -2.25, "s": "é",
			"ts": time.Date(1969, 12, 31, 23, 59, 58, 500e6, time.UTC), "od": od, "ots": ots, "os": os, "zone": "z"}
	}
	tests := []struct {
		name string
		dec  Decoder
		in   []byte
		want map[string]any
		err  string
	}{
		{name: "trip", dec: trip, in: tripBytes("rider-9", 1714550400123, 18.75), want: tripMap("rider-9", 1714550400123, 18.75)},
		{name: "every kind, unions set", dec: all,
			in:   allBody(cat(avLong(1), avDouble(0.5)), cat(avLong(0), avLong(86400000)), cat(avLong(1), avString("x"))),
			want: allWant(0.5, time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC), "x")},
		{name: "every kind, unions null", dec: all,
			in:   allBody(avLong(0), avLong(1), avLong(0)),
			want: allWant(nil, nil, nil)},
		{name: "empty", dec: trip, in: nil, err: "avro: decode: "},
		{name: "truncated double", dec: trip, in: tripBytes("r", 1, 2)[:20], err: "avro: decode: "},
		{name: "trailing bytes", dec: trip, in: append(tripBytes("r", 1, 2), 0, 0), err: "avro: decode: 2 trailing bytes after the record"},
		{name: "garbage", dec: trip, in: []byte("this is not avro at all"), err: "avro: decode: "},
		{name: "JSON given to avro", dec: trip, in: []byte(`{"rider_id":"r"}`), err: "avro: decode: "},
		{name: "bad union index", dec: all, in: allBody(avLong(2), avLong(1), avLong(0)), err: "avro: decode: "},
		{name: "bad boolean", dec: all, in: append([]byte{7}, allBody(avLong(0), avLong(1), avLong(0))[1:]...), err: "avro: decode: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.dec.Decode(tc.in)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("Decode = (%v, %v), want error starting %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Decode =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
	t.Run("every proper prefix", func(t *testing.T) {
		b := tripBytes("rider-9", 1714550400123, 18.75)
		for n := range len(b) {
			if _, err := trip.Decode(b[:n]); err == nil {
				t.Fatalf("prefix of %d/%d bytes decoded", n, len(b))
			}
		}
	})
}

func TestConfluentDecoder(t *testing.T) {
	body := tripBytes("rider-1", 1000, 5)
	want := tripMap("rider-1", 1000, 5)
	pinned := mustDecoder(t, FormatConfluentAvro, TripSchema(), 3)
	anyID := mustDecoder(t, FormatConfluentAvro, TripSchema(), 0)
	tests := []struct {
		name string
		dec  Decoder
		in   []byte
		err  string // exact error, or prefix when it ends with ": "
		is   error  // the sentinel the error wraps, if any
	}{
		{name: "pinned id", dec: pinned, in: confluent(3, body)},
		{name: "any id", dec: anyID, in: confluent(0xfffffffe, body)},
		{name: "wrong schema id", dec: pinned, in: confluent(7, body), err: "confluent-avro: schema id 7, expected 3: ", is: ErrSchemaID},
		{name: "wrong magic", dec: pinned, in: append([]byte{0x7b}, confluent(3, body)[1:]...), err: "confluent-avro: magic byte 0x7b, want 0x00: ", is: ErrFraming},
		{name: "JSON given to confluent", dec: anyID, in: []byte(`{"rider_id": "r"}`), err: "confluent-avro: magic byte 0x7b, want 0x00: ", is: ErrFraming},
		{name: "shorter than header", dec: anyID, in: []byte{0, 0, 0, 3}, err: "confluent-avro: record shorter than 5 bytes (4): ", is: ErrFraming},
		{name: "empty", dec: anyID, in: nil, err: "confluent-avro: record shorter than 5 bytes (0): ", is: ErrFraming},
		{name: "header only", dec: pinned, in: confluent(3, nil), err: "confluent-avro: decode: "},
		{name: "truncated body", dec: pinned, in: confluent(3, body[:len(body)-1]), err: "confluent-avro: decode: "},
		{name: "trailing bytes", dec: pinned, in: confluent(3, append(body, 1)), err: "confluent-avro: decode: 1 trailing bytes after the record"},
		{name: "plain avro without header", dec: anyID, in: body, err: "confluent-avro: magic byte 0x0e, want 0x00: ", is: ErrFraming},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.dec.Decode(tc.in)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "":
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("Decode =\n%#v\nwant\n%#v", got, want)
				}
			case err == nil:
				t.Fatalf("Decode = %v, want error %q", got, tc.err)
			case strings.HasSuffix(tc.err, ": ") && !strings.HasPrefix(err.Error(), tc.err),
				!strings.HasSuffix(tc.err, ": ") && err.Error() != tc.err:
				t.Fatalf("error %q, want %q", err, tc.err)
			}
			for _, sentinel := range []error{ErrFraming, ErrSchemaID} {
				if got := errors.Is(err, sentinel); got != (sentinel == tc.is) {
					t.Errorf("errors.Is(%q, %v) = %v, want %v", err, sentinel, got, !got)
				}
			}
		})
	}
}

func TestJSONDecoder(t *testing.T) {
	dec := mustDecoder(t, FormatJSON, "", 0)
	tests := []struct {
		name string
		in   string
		want map[string]any
		err  string // exact error, or prefix when it ends with ": "
	}{
		{name: "flat object", in: `{"rider_id": "r1", "fare": 12.5, "n": 3, "ok": true, "gone": null, "ts": "2024-05-01T08:00:00Z"}`,
			want: map[string]any{"rider_id": "r1", "fare": 12.5, "n": int64(3), "ok": true, "gone": nil, "ts": "2024-05-01T08:00:00Z"}},
		{name: "surrounding white space", in: " \n{\"a\": -0}\r\n\t", want: map[string]any{"a": int64(0)}},
		{name: "empty object", in: `{}`, want: map[string]any{}},
		{name: "number forms", in: `{"i": -9223372036854775808, "big": 9223372036854775808, "e": 1e3, "frac": 2.0, "tiny": 1e-400}`,
			want: map[string]any{"i": int64(math.MinInt64), "big": 9223372036854775808.0, "e": 1000.0, "frac": 2.0, "tiny": 0.0}},
		{name: "duplicate key: last wins", in: `{"a": 1, "a": 2}`, want: map[string]any{"a": int64(2)}},
		{name: "array", in: `[{"a": 1}]`, err: "json: not an object"},
		{name: "null", in: `null`, err: "json: not an object"},
		{name: "string", in: `"x"`, err: "json: not an object"},
		{name: "number", in: `42`, err: "json: not an object"},
		{name: "NaN literal", in: `{"fare": NaN}`, err: "json: "},
		{name: "Infinity literal", in: `{"fare": Infinity}`, err: "json: "},
		{name: "number beyond float64", in: `{"fare": 1e400}`, err: `json: field "fare": number out of float64 range`},
		{name: "nested object", in: `{"a": 1, "meta": {"x": 1}}`, err: `json: field "meta": object values are not supported (events must be flat)`},
		{name: "nested array", in: `{"tags": ["a"]}`, err: `json: field "tags": array values are not supported (events must be flat)`},
		{name: "two objects", in: `{"a": 1} {"a": 2}`, err: "json: data after the object"},
		{name: "trailing garbage", in: `{"a": 1} x`, err: "json: data after the object"},
		{name: "truncated", in: `{"a": 1`, err: "json: "},
		{name: "empty", in: ``, err: "json: empty record"},
		{name: "white space only", in: " \n", err: "json: empty record"},
		{name: "avro bytes", in: string(tripBytes("r", 1, 2)), err: "json: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dec.Decode([]byte(tc.in))
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "":
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Decode =\n%#v\nwant\n%#v", got, tc.want)
				}
			case err == nil:
				t.Fatalf("Decode = %v, want error %q", got, tc.err)
			case strings.HasSuffix(tc.err, ": ") && !strings.HasPrefix(err.Error(), tc.err),
				!strings.HasSuffix(tc.err, ": ") && err.Error() != tc.err:
				t.Fatalf("error %q, want %q", err, tc.err)
			}
		})
	}
}

// jsonEvent decodes a JSON line the way `dpstream produce` does.
func jsonEvent(t *testing.T, line string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAvroEncoder encodes JSON events and checks the bytes against bytes
// written from the Avro specification.
func TestAvroEncoder(t *testing.T) {
	trip := mustEncoder(t, FormatAvro, TripSchema(), 0)
	all := mustEncoder(t, FormatAvro, allKinds, 0)
	allLine := func(od, ots, extra string) string {
		return `{"b": true, "i": -7, "l": 1099511627776, "f": 1.5, "d": -2.25, "s": "é", "ts": -1500` + od + ots + extra + `}`
	}
	allBytes := func(od, ots, os, zone []byte) []byte {
		return cat(avBool(true), avLong(-7), avLong(1<<40), avFloat(1.5), avDouble(-2.25), avString("é"), avLong(-1500), od, ots, os, zone)
	}
	tests := []struct {
		name  string
		enc   Encoder
		event map[string]any
		want  []byte
	}{
		{name: "trip, ts as number",
			enc:   trip,
			event: jsonEvent(t, `{"rider_id": "rider-9", "trip_id": "trip-1", "ts": 1714550400123, "fare": 18.75, "km": 3.25, "minutes": 12.5, "zone": "north"}`),
			want:  tripBytes("rider-9", 1714550400123, 18.75)},
		{name: "trip, ts as RFC 3339, integral fare",
			enc:   trip,
			event: jsonEvent(t, `{"rider_id": "r", "trip_id": "trip-1", "ts": "2024-05-01T10:00:00.1239+02:00", "fare": 18, "km": 3.25, "minutes": 12.5, "zone": "north"}`),
			want:  tripBytes("r", 1714550400123, 18)},
		{name: "trip, Go values",
			enc:   trip,
			event: map[string]any{"rider_id": "r", "trip_id": "trip-1", "ts": time.UnixMilli(-5), "fare": float32(0.5), "km": 3.25, "minutes": int64(12), "zone": "north"},
			want:  cat(avString("r"), avString("trip-1"), avLong(-5), avDouble(0.5), avDouble(3.25), avDouble(12), avString("north"))},
		{name: "unions set, defaults used",
			enc:   all,
			event: jsonEvent(t, allLine(`, "od": 0.5`, `, "ots": "1970-01-02T00:00:00Z"`, "")),
			want:  allBytes(cat(avLong(1), avDouble(0.5)), cat(avLong(0), avLong(86400000)), avLong(0), avString("none"))},
		{name: "unions null or absent, defaults overridden",
			enc:   all,
			event: jsonEvent(t, allLine(`, "od": null`, "", `, "os": "x", "zone": "z"`)),
			want:  allBytes(avLong(0), avLong(1), cat(avLong(1), avString("x")), avString("z"))},
		{name: "integral numbers written as floats or exponents",
			enc:   all,
			event: jsonEvent(t, `{"b": false, "i": 2.0, "l": 1.5e3, "f": 0, "d": 1, "s": "", "ts": 1e3}`),
			want:  cat(avBool(false), avLong(2), avLong(1500), avFloat(0), avDouble(1), avString(""), avLong(1000), avLong(0), avLong(1), avLong(0), avString("none"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.enc.Encode(tc.event)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("Encode =\n%x\nwant\n%x", got, tc.want)
			}
		})
	}
}

func TestEncoderErrorsNameTheField(t *testing.T) {
	trip := mustEncoder(t, FormatAvro, TripSchema(), 0)
	all := mustEncoder(t, FormatConfluentAvro, allKinds, 9)
	js := mustEncoder(t, FormatJSON, "", 0)
	base := `"b": true, "i": 1, "l": 1, "f": 1, "d": 1, "s": "", "ts": 1`
	tests := []struct {
		name  string
		enc   Encoder
		event map[string]any
		want  string
	}{
		{"missing required", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": 1, "fare": 1, "km": 1, "zone": "z"}`), `avro: field "minutes": missing`},
		{"unknown field", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": 1, "fare": 1, "km": 1, "minutes": 1, "zone": "z", "fair": 2}`), `avro: field "fair": not in the schema`},
		{"string for double", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": 1, "fare": "12.5", "km": 1, "minutes": 1, "zone": "z"}`), `avro: field "fare": want double, got string`},
		{"number for string", trip, jsonEvent(t, `{"rider_id": 42, "trip_id": "t", "ts": 1, "fare": 1, "km": 1, "minutes": 1, "zone": "z"}`), `avro: field "rider_id": want string, got number`},
		{"null for required", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": 1, "fare": 1, "km": 1, "minutes": 1, "zone": null}`), `avro: field "zone": null, but the field's type string is not nullable`},
		{"bad timestamp string", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": "yesterday", "fare": 1, "km": 1, "minutes": 1, "zone": "z"}`), `avro: field "ts": string is not an RFC 3339 timestamp`},
		{"fractional timestamp", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": 1.5, "fare": 1, "km": 1, "minutes": 1, "zone": "z"}`), `avro: field "ts": want timestamp-millis, got a number with a fraction`},
		{"boolean for timestamp", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": true, "fare": 1, "km": 1, "minutes": 1, "zone": "z"}`), `avro: field "ts": want timestamp-millis, got boolean`},
		{"object for double", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": 1, "fare": {"v": 1}, "km": 1, "minutes": 1, "zone": "z"}`), `avro: field "fare": want double, got object`},
		{"double beyond float64", trip, jsonEvent(t, `{"rider_id": "r", "trip_id": "t", "ts": 1, "fare": 1e999, "km": 1, "minutes": 1, "zone": "z"}`), `avro: field "fare": want double, got an invalid or out of range number`},
		{"int overflow", all, jsonEvent(t, `{`+base+`, "i": 2147483648}`), `confluent-avro: field "i": number out of int range`},
		{"long overflow", all, jsonEvent(t, `{`+base+`, "l": 9223372036854775808}`), `confluent-avro: field "l": number out of long range`},
		{"long overflow in exponent form", all, jsonEvent(t, `{`+base+`, "l": 1e19}`), `confluent-avro: field "l": number out of long range`},
		{"long with fraction", all, jsonEvent(t, `{`+base+`, "l": 9007199254740993.5}`), `confluent-avro: field "l": want long, got a number with a fraction`},
		{"long from Go NaN", all, map[string]any{"b": true, "i": 1, "l": math.NaN(), "f": 1, "d": 1, "s": "", "ts": 1}, `confluent-avro: field "l": want long, got NaN`},
		{"long from huge uint64", all, map[string]any{"b": true, "i": 1, "l": uint64(math.MaxUint64), "f": 1, "d": 1, "s": "", "ts": 1}, `confluent-avro: field "l": number out of long range`},
		{"float overflow", all, jsonEvent(t, `{`+base+`, "f": 1e39}`), `confluent-avro: field "f": number out of float range`},
		{"string for boolean", all, jsonEvent(t, `{`+base+`, "b": "true"}`), `confluent-avro: field "b": want boolean, got string`},
		{"number for nullable string", all, jsonEvent(t, `{`+base+`, "os": 5}`), `confluent-avro: field "os": want string, got number`},
		{"unknown fields reported in sorted order", all, jsonEvent(t, `{`+base+`, "zz": 1, "aa": 2}`), `confluent-avro: field "aa": not in the schema`},
		{"json nested object", js, jsonEvent(t, `{"a": 1, "meta": {"x": 1}}`), `json: field "meta": object values are not supported (events must be flat)`},
		{"json nested array", js, map[string]any{"tags": []any{"a"}}, `json: field "tags": array values are not supported (events must be flat)`},
		{"json Go slice", js, map[string]any{"tags": []string{"a"}}, `json: field "tags": []string values are not supported (events must be flat)`},
		{"json NaN", js, map[string]any{"fare": math.NaN()}, `json: field "fare": NaN and infinities are not representable`},
		{"json infinity", js, map[string]any{"fare": float32(math.Inf(-1))}, `json: field "fare": NaN and infinities are not representable`},
		{"json invalid number", js, map[string]any{"fare": json.Number("12abc")}, `json: encode: `},
		{"json nil event", js, nil, `json: event is nil`},
		{"NaN as json.Number for double", trip, map[string]any{"rider_id": "r", "trip_id": "t", "ts": 1, "fare": json.Number("NaN"), "km": 1, "minutes": 1, "zone": "z"}, `avro: field "fare": want double, got an invalid number`},
		{"hex float as json.Number", trip, map[string]any{"rider_id": "r", "trip_id": "t", "ts": 1, "fare": 1, "km": json.Number("0x1p3"), "minutes": 1, "zone": "z"}, `avro: field "km": want double, got an invalid number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.enc.Encode(tc.event)
			if err == nil {
				t.Fatalf("Encode = %x, want error %q", got, tc.want)
			}
			if msg := err.Error(); msg != tc.want && !(strings.HasSuffix(tc.want, ": ") && strings.HasPrefix(msg, tc.want)) {
				t.Fatalf("error %q, want %q", msg, tc.want)
			}
		})
	}
}

// TestEncoderErrorsDoNotQuoteValues guards the promise that encoder errors
// are safe to log: they name fields and types, never the event's values.
func TestEncoderErrorsDoNotQuoteValues(t *testing.T) {
	trip := mustEncoder(t, FormatAvro, TripSchema(), 0)
	secret := "rider-secret-7734"
	for _, ev := range []map[string]any{
		{"rider_id": secret, "trip_id": "t", "ts": secret, "fare": 1, "km": 1, "minutes": 1, "zone": "z"},
		{"rider_id": secret, "trip_id": "t", "ts": 1, "fare": secret, "km": 1, "minutes": 1, "zone": "z"},
		{"rider_id": secret, "trip_id": "t", "ts": 1, "fare": json.Number("77341.5"), "km": 1, "minutes": 1, "zone": 77341},
	} {
		_, err := trip.Encode(ev)
		if err == nil {
			t.Fatal("want an error")
		}
		if strings.Contains(err.Error(), "7734") {
			t.Fatalf("error quotes a value: %v", err)
		}
	}
}

// TestEncodeDecodeRoundTrip encodes events with every format and decodes them
// with the matching decoder.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	line := `{"rider_id": "rider-9", "trip_id": "trip-1", "ts": "2024-05-01T08:00:00.123Z", "fare": 18.75, "km": 3.25, "minutes": 12.5, "zone": "north"}`
	tests := []struct {
		format string
		id     int
		want   map[string]any
	}{
		{FormatAvro, 0, tripMap("rider-9", 1714550400123, 18.75)},
		{FormatConfluentAvro, 42, tripMap("rider-9", 1714550400123, 18.75)},
		{FormatJSON, 0, map[string]any{"rider_id": "rider-9", "trip_id": "trip-1", "ts": "2024-05-01T08:00:00.123Z",
			"fare": 18.75, "km": 3.25, "minutes": 12.5, "zone": "north"}},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			enc := mustEncoder(t, tc.format, TripSchema(), tc.id)
			dec := mustDecoder(t, tc.format, TripSchema(), tc.id)
			b, err := enc.Encode(jsonEvent(t, line))
			if err != nil {
				t.Fatal(err)
			}
			again, err := enc.Encode(jsonEvent(t, line))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, again) {
				t.Fatalf("encoding is not deterministic:\n%x\n%x", b, again)
			}
			got, err := dec.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

func TestConfluentEncoderFraming(t *testing.T) {
	enc := mustEncoder(t, FormatConfluentAvro, TripSchema(), 0x01020304)
	ev := jsonEvent(t, `{"rider_id": "r", "trip_id": "trip-1", "ts": 7, "fare": 2, "km": 3.25, "minutes": 12.5, "zone": "north"}`)
	got, err := enc.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := confluent(0x01020304, tripBytes("r", 7, 2))
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode =\n%x\nwant\n%x", got, want)
	}
}

func TestJSONEncoder(t *testing.T) {
	enc := mustEncoder(t, FormatJSON, "", 0)
	ev := map[string]any{"z": json.Number("1.50"), "a": "x", "n": nil, "b": true, "i": int64(-3), "f": 0.25,
		"t": time.Date(2024, 5, 1, 8, 0, 0, 123e6, time.UTC)}
	got, err := enc.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json sorts keys and writes json.Number literally.
	want := `{"a":"x","b":true,"f":0.25,"i":-3,"n":null,"t":"2024-05-01T08:00:00.123Z","z":1.50}`
	if string(got) != want {
		t.Fatalf("Encode = %s, want %s", got, want)
	}
}

func TestParseIntegral(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  error
	}{
		{"0", 0, nil},
		{"-0", 0, nil},
		{"12", 12, nil},
		{"-9223372036854775808", math.MinInt64, nil},
		{"9223372036854775807", math.MaxInt64, nil},
		{"9223372036854775808", 0, errRange},
		{"-9223372036854775809", 0, errRange},
		{"1e3", 1000, nil},
		{"1E+3", 1000, nil},
		{"1.20e1", 12, nil},
		{"-1.5e1", -15, nil},
		{"2.000", 2, nil},
		{"0.0e5", 0, nil},
		{"0e-999999999999999999999", 0, nil},
		{"1500e-3", 0, errFraction},
		{"1200e-2", 12, nil},
		{"9.223372036854775807e18", math.MaxInt64, nil},
		{"9.223372036854775808e18", 0, errRange},
		{"-9.223372036854775808e18", math.MinInt64, nil},
		{"1e19", 0, errRange},
		{"1e999999999999999999999", 0, errRange},
		{"1e-999999999999999999999", 0, errFraction},
		{"1.5", 0, errFraction},
		{"9007199254740993.5", 0, errFraction},
		{"00012", 12, nil},
		{"", 0, errSyntax},
		{"-", 0, errSyntax},
		{"1.2.3", 0, errSyntax},
		{"1e", 0, errSyntax},
		{"0x10", 0, errSyntax},
		{".5", 0, errSyntax},
		{"NaN", 0, errSyntax},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseIntegral(tc.in)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("parseIntegral(%q) error %v, want %v", tc.in, err, tc.err)
			}
			if err == nil && got != tc.want {
				t.Fatalf("parseIntegral(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}
