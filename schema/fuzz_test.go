package schema

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// The fuzz targets run as ordinary tests on their seed corpus; run them for
// real with, for example, go test -fuzz=FuzzDecodeAvro ./schema/.

// FuzzDecodeAvro feeds arbitrary bytes to the Avro decoders of a schema with
// every supported field shape, plain and Confluent-framed. Nothing may panic,
// and whatever decodes must re-encode to bytes that decode to the same event.
func FuzzDecodeAvro(f *testing.F) {
	all := mustDecoderF(f, FormatAvro, allKinds, 0)
	allEnc := mustEncoderF(f, FormatAvro, allKinds, 0)
	cf := mustDecoderF(f, FormatConfluentAvro, allKinds, 0)
	cfEnc := mustEncoderF(f, FormatConfluentAvro, allKinds, 0)
	valid := cat(avBool(true), avLong(-7), avLong(1<<40), avFloat(1.5), avDouble(-2.25), avString("é"), avLong(-1500),
		cat(avLong(1), avDouble(0.5)), avLong(1), avLong(0), avString("z"))
	f.Add(valid)
	f.Add(valid[:len(valid)-3])
	f.Add(confluent(3, valid))
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 3})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add(cat(avBool(false), avLong(math.MaxInt32), avLong(math.MinInt64), avFloat(float32(math.NaN())), avDouble(math.Inf(-1)),
		avString(""), avLong(math.MaxInt64), avLong(0), avLong(0), avLong(1), avString("x"), avString("")))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range []struct {
			dec Decoder
			enc Encoder
		}{{all, allEnc}, {cf, cfEnc}} {
			event, err := c.dec.Decode(b)
			if err != nil {
				continue
			}
			again, err := c.enc.Encode(event)
			if err != nil {
				t.Fatalf("%x decoded to %v, which does not encode: %v", b, event, err)
			}
			event2, err := c.dec.Decode(again)
			if err != nil {
				t.Fatalf("re-encoded %x does not decode: %v", again, err)
			}
			if !sameEvent(event, event2) {
				t.Fatalf("decode(encode(decode)) = %v, want %v", event2, event)
			}
		}
	})
}

// FuzzDecodeJSON feeds arbitrary bytes to the JSON decoder. Nothing may
// panic; a decoded event is flat, holds only the documented types, and
// survives the JSON encoder and decoder unchanged.
func FuzzDecodeJSON(f *testing.F) {
	dec := mustDecoderF(f, FormatJSON, "", 0)
	enc := mustEncoderF(f, FormatJSON, "", 0)
	for _, s := range []string{
		`{"rider_id": "r1", "fare": 12.5, "n": 3, "ok": true, "gone": null}`,
		`{"i": -9223372036854775808, "big": 9223372036854775808, "e": 1e3, "tiny": 1e-400}`,
		`{"fare": NaN}`, `{"fare": 1e400}`, `[1, 2]`, `{"a": {"b": 1}}`, `{"a": 1} {"a": 2}`, `{"a": "\ud800"}`,
		``, `null`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		event, err := dec.Decode(b)
		if err != nil {
			return
		}
		for k, v := range event {
			switch x := v.(type) {
			case nil, bool, string, int64:
			case float64:
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("field %q: non-finite %v", k, x)
				}
			default:
				t.Fatalf("field %q: unexpected type %T", k, v)
			}
		}
		out, err := enc.Encode(event)
		if err != nil {
			t.Fatalf("%q decoded to %v, which does not encode: %v", b, event, err)
		}
		event2, err := dec.Decode(out)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", out, err)
		}
		if !sameJSONEvent(event, event2) {
			t.Fatalf("decode(encode(decode(%q))) = %v, want %v", b, event2, event)
		}
	})
}

// FuzzDecodePartial feeds arbitrary bytes to DecodePartial. Nothing may
// panic, and whatever decodes must be canonical: encoding it and decoding
// again gives the same Partial, and encoding that gives the same bytes.
func FuzzDecodePartial(f *testing.F) {
	extremeUnits := Partial{Stream: "s", Stats: []ReleaseStats{
		{Release: "sum", Count: 3, SumUnits: math.MaxInt64, CenteredSumUnits: math.MinInt64, Bins: []int64{}},
		{Release: "mean", Count: 1, SumUnits: -1, CenteredSumUnits: 1 << 30, Bins: []int64{}},
		{Release: "density", Count: 2, Bins: []int64{}, Terms: []int64{math.MaxInt64, math.MinInt64, 0}},
	}}
	for _, p := range []Partial{samplePartial(), {}, {Stream: "s", FirstOffset: -1, LastOffset: -1}, extremeUnits} {
		b, err := EncodePartial(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add(cat(avString(""), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(0), avLong(math.MaxInt32)))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePartial(b)
		if err != nil {
			return
		}
		enc, err := EncodePartial(p)
		if err != nil {
			t.Fatalf("%x decoded to %+v, which does not encode: %v", b, p, err)
		}
		p2, err := DecodePartial(enc)
		if err != nil {
			t.Fatalf("re-encoded %x does not decode: %v", enc, err)
		}
		if !sameFloatsDeepEqual(p, p2) {
			t.Fatalf("decode(encode(decode)) = %+v, want %+v", p2, p)
		}
		enc2, err := EncodePartial(p2)
		if err != nil || string(enc2) != string(enc) {
			t.Fatalf("encoding is not stable: %x vs %x (%v)", enc2, enc, err)
		}
	})
}

func mustDecoderF(f *testing.F, format, schema string, id int) Decoder {
	d, err := NewDecoder(format, schema, id)
	if err != nil {
		f.Fatal(err)
	}
	return d
}

func mustEncoderF(f *testing.F, format, schema string, id int) Encoder {
	e, err := NewEncoder(format, schema, id)
	if err != nil {
		f.Fatal(err)
	}
	return e
}

// sameEvent compares decoded Avro events; floats compare by bit pattern so
// that NaN equals itself.
func sameEvent(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			return false
		}
		switch xv := x.(type) {
		case float64:
			yv, ok := y.(float64)
			if !ok || math.Float64bits(xv) != math.Float64bits(yv) {
				return false
			}
		case float32:
			yv, ok := y.(float32)
			if !ok || math.Float32bits(xv) != math.Float32bits(yv) {
				return false
			}
		case time.Time:
			yv, ok := y.(time.Time)
			if !ok || !xv.Equal(yv) || yv.Location() != time.UTC {
				return false
			}
		default:
			if !reflect.DeepEqual(x, y) {
				return false
			}
		}
	}
	return true
}

// sameJSONEvent compares decoded JSON events. A float64 may come back as an
// int64 of the same value, because the encoder writes 1e20 as
// 100000000000000000000 and 2.0 as 2; every other value must come back
// unchanged.
func sameJSONEvent(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			return false
		}
		if xf, isFloat := x.(float64); isFloat {
			if yi, isInt := y.(int64); isInt && float64(yi) == xf {
				continue
			}
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// FuzzDecodeOutputRecords feeds arbitrary bytes to the decoders of the
// records the release stage writes and operators' tools read (Release,
// LedgerCharge, BudgetState, PDPUnit, PDPSummary). Nothing may panic, and
// whatever decodes must survive encoding and decoding again unchanged.
func FuzzDecodeOutputRecords(f *testing.F) {
	add := func(b []byte, err error) {
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	add(EncodeRelease(sampleRelease()))
	add(EncodeLedgerCharge(LedgerCharge{ReleaseID: "s/r/0", Stream: "s", Release: "r", Status: "ok", RDP: []float64{0.5}, Payload: []byte{1, 2}}))
	add(EncodeBudgetState(sampleBudgetState()))
	add(EncodePDPUnit(PDPUnit{Stream: "s", Unit: "u", GaussianRho: 0.5, Charges: 2, LastWindow: 1000, Epsilon: 1, Delta: 1e-6}))
	add(EncodePDPSummary(PDPSummary{Stream: "s", Releases: []PDPRelease{{Release: "r", Status: "ok", Units: 3, P50: 0.1}}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip := func(name string, decode func([]byte) (any, error), encode func(any) ([]byte, error)) {
			v, err := decode(b)
			if err != nil {
				return
			}
			enc, err := encode(v)
			if err != nil {
				t.Fatalf("%s: %x decoded to %+v, which does not encode: %v", name, b, v, err)
			}
			v2, err := decode(enc)
			if err != nil {
				t.Fatalf("%s: re-encoded %x does not decode: %v", name, enc, err)
			}
			if !sameFloatsDeepEqual(v, v2) {
				t.Fatalf("%s: decode(encode(decode)) = %+v, want %+v", name, v2, v)
			}
		}
		roundTrip("Release", func(b []byte) (any, error) { return DecodeRelease(b) }, func(v any) ([]byte, error) { return EncodeRelease(v.(Release)) })
		roundTrip("LedgerCharge", func(b []byte) (any, error) { return DecodeLedgerCharge(b) }, func(v any) ([]byte, error) { return EncodeLedgerCharge(v.(LedgerCharge)) })
		roundTrip("BudgetState", func(b []byte) (any, error) { return DecodeBudgetState(b) }, func(v any) ([]byte, error) { return EncodeBudgetState(v.(BudgetState)) })
		roundTrip("PDPUnit", func(b []byte) (any, error) { return DecodePDPUnit(b) }, func(v any) ([]byte, error) { return EncodePDPUnit(v.(PDPUnit)) })
		roundTrip("PDPSummary", func(b []byte) (any, error) { return DecodePDPSummary(b) }, func(v any) ([]byte, error) { return EncodePDPSummary(v.(PDPSummary)) })
	})
}
