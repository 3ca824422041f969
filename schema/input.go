package schema

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/linkedin/goavro/v2"
)

// Format of a stream's input topic, as written in the configuration.
const (
	// FormatAvro is plain binary Avro of one record per Kafka value, with the
	// schema given in the configuration.
	FormatAvro = "avro"
	// FormatConfluentAvro is Confluent's wire format: a 0x00 magic byte, a
	// 4-byte big-endian schema registry id, then binary Avro. dpstream does
	// not contact a registry: the schema comes from the configuration and the
	// id, when configured, is only checked.
	FormatConfluentAvro = "confluent-avro"
	// FormatJSON is one JSON object per Kafka value.
	FormatJSON = "json"
)

// confluentMagic is the first byte of Confluent's wire format.
const confluentMagic = 0x00

// confluentHeaderLen is the magic byte plus the 4-byte schema id.
const confluentHeaderLen = 5

// Decoder turns one Kafka record value into a flat event map.
//
// Values in the map are plain Go values, never goavro's union wrappers:
// nil (Avro null, JSON null), bool, string, int32 (Avro int), int64 (Avro
// long, integral JSON numbers), float32 (Avro float), float64 (Avro double,
// other JSON numbers) and time.Time in UTC (Avro long with logicalType
// timestamp-millis). Decoders are safe for concurrent use. Errors are short
// and start with the format name ("avro: decode: ...", "json: not an
// object"); they name fields but do not repeat field values, though a JSON
// syntax error quotes the offending character.
type Decoder interface {
	Decode(value []byte) (map[string]any, error)
}

// Encoder turns one event, as decoded from a JSON line by encoding/json with
// UseNumber, into a stream's wire format; `dpstream produce` uses it.
// Encoders are safe for concurrent use.
type Encoder interface {
	Encode(event map[string]any) ([]byte, error)
}

// NewDecoder returns the decoder of one input format.
//
// For the Avro formats schemaText is required and must be a flat record:
// every field a boolean, int, long, float, double, string or long with
// logicalType timestamp-millis, or a union of "null" and one of these (other
// logical types, enums, arrays, maps, nested records and other unions are
// refused, so that a stream is never configured with fields the pipeline
// cannot read). For confluent-avro, a schemaID other than 0 makes a record
// framed with any other id an error; 0 accepts every id (the record must
// still decode with schemaText). For json, schemaText may be empty; when
// given it is validated the same way but not used, because JSON events are
// decoded without a schema:
//
//   - the value must be exactly one JSON object, possibly surrounded by
//     white space;
//   - a number is an int64 when its literal is an integer that fits in
//     int64 ("12", "-3"), otherwise a float64 ("1.5", "1e3", and integers
//     beyond int64, which lose precision); a number beyond float64's range is
//     an error;
//   - nested objects and arrays are errors naming the field, so that the map
//     stays flat;
//   - for duplicate keys the last one wins, and invalid UTF-8 in strings is
//     replaced by U+FFFD (encoding/json's rules).
func NewDecoder(format, schemaText string, schemaID int) (Decoder, error) {
	switch format {
	case FormatAvro, FormatConfluentAvro:
		if err := checkSchemaID(format, schemaID); err != nil {
			return nil, err
		}
		a, err := newAvroCodec(format, schemaText)
		if err != nil {
			return nil, err
		}
		if format == FormatAvro {
			return a, nil
		}
		return &confluentDecoder{avro: a, schemaID: schemaID}, nil
	case FormatJSON:
		if err := checkJSONSchema(schemaText, schemaID); err != nil {
			return nil, err
		}
		return jsonDecoder{}, nil
	default:
		return nil, unknownFormat(format)
	}
}

// NewEncoder returns the encoder of one input format; its arguments are those
// of NewDecoder, and a record it writes decodes with the matching decoder.
//
// For the Avro formats each value is coerced to its field's type:
//
//   - int, long: an integral number (json.Number or any Go integer or float
//     with an integral value) within the type's range;
//   - float, double: any number; a finite value beyond float32's range is an
//     error for float;
//   - string: a string; boolean: a bool (no conversion between them and
//     numbers);
//   - timestamp-millis: unix milliseconds as an integral number, an RFC 3339
//     string ("2024-05-01T08:00:00Z"; fractions of a millisecond are rounded
//     down) or a time.Time;
//   - a nullable field accepts nil, and is null when absent.
//
// An absent field is written with the schema's default when it has one; any
// other absent field, and any key that the schema does not declare, is an
// error naming the field. Errors name the field and the types involved but
// never quote the value, so that they are safe to log. confluent-avro
// prefixes the Avro bytes with the magic byte and schemaID.
//
// For json the event is written with encoding/json (keys sorted, so the
// output is deterministic); nested objects and arrays, and NaN or infinite
// numbers, are errors naming the field.
func NewEncoder(format, schemaText string, schemaID int) (Encoder, error) {
	switch format {
	case FormatAvro, FormatConfluentAvro:
		if err := checkSchemaID(format, schemaID); err != nil {
			return nil, err
		}
		a, err := newAvroCodec(format, schemaText)
		if err != nil {
			return nil, err
		}
		if format == FormatAvro {
			return a, nil
		}
		return &confluentEncoder{avro: a, schemaID: uint32(schemaID)}, nil
	case FormatJSON:
		if err := checkJSONSchema(schemaText, schemaID); err != nil {
			return nil, err
		}
		return jsonEncoder{}, nil
	default:
		return nil, unknownFormat(format)
	}
}

func unknownFormat(format string) error {
	return fmt.Errorf("unknown input format %q (want %s, %s or %s)", format, FormatAvro, FormatConfluentAvro, FormatJSON)
}

// checkSchemaID accepts the ids a Confluent registry can hand out; the id
// only means something for confluent-avro.
func checkSchemaID(format string, schemaID int) error {
	if format != FormatConfluentAvro {
		if schemaID != 0 {
			return fmt.Errorf("%s: a schema id applies only to %s", format, FormatConfluentAvro)
		}
		return nil
	}
	if schemaID < 0 || schemaID > math.MaxInt32 {
		return fmt.Errorf("%s: schema id %d out of range [0, %d]", format, schemaID, math.MaxInt32)
	}
	return nil
}

func checkJSONSchema(schemaText string, schemaID int) error {
	if err := checkSchemaID(FormatJSON, schemaID); err != nil {
		return err
	}
	if schemaText == "" {
		return nil
	}
	if _, err := parseFlatSchema(schemaText); err != nil {
		return fmt.Errorf("%s: schema: %w", FormatJSON, err)
	}
	return nil
}

// avroCodec is the decoder and encoder of plain binary Avro for one flat
// record schema.
type avroCodec struct {
	prefix string // format name for error messages
	codec  *goavro.Codec
	fields []flatField
	byName map[string]bool
}

func newAvroCodec(format, schemaText string) (*avroCodec, error) {
	fields, err := parseFlatSchema(schemaText)
	if err != nil {
		return nil, fmt.Errorf("%s: schema: %w", format, err)
	}
	codec, err := goavro.NewCodec(schemaText)
	if err != nil {
		return nil, fmt.Errorf("%s: schema: %w", format, err)
	}
	byName := make(map[string]bool, len(fields))
	for _, f := range fields {
		byName[f.name] = true
	}
	return &avroCodec{prefix: format, codec: codec, fields: fields, byName: byName}, nil
}

// Decode decodes one binary Avro record; bytes left after it are an error.
func (a *avroCodec) Decode(value []byte) (map[string]any, error) {
	native, rest, err := a.codec.NativeFromBinary(value)
	if err != nil {
		return nil, fmt.Errorf("%s: decode: %w", a.prefix, err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%s: decode: %d trailing bytes after the record", a.prefix, len(rest))
	}
	rec, ok := native.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: decode: goavro returned %T, want a record", a.prefix, native)
	}
	out := make(map[string]any, len(a.fields))
	for _, f := range a.fields {
		v := rec[f.name]
		if f.nullable && v != nil {
			// goavro wraps a non-null union value as {"<type name>": value}.
			u, ok := v.(map[string]any)
			if !ok || len(u) != 1 {
				return nil, fmt.Errorf("%s: decode: field %q: goavro returned %T, want a union value", a.prefix, f.name, v)
			}
			v = u[f.kind.avroName()]
		}
		if !(f.nullable && v == nil) && !hasKind(v, f.kind) {
			return nil, fmt.Errorf("%s: decode: field %q: goavro returned %T, want %s", a.prefix, f.name, v, f.kind.describe())
		}
		out[f.name] = v
	}
	return out, nil
}

// hasKind reports whether v has the Go type that goavro uses for kind.
func hasKind(v any, kind fieldKind) bool {
	switch kind {
	case kindBoolean:
		_, ok := v.(bool)
		return ok
	case kindInt:
		_, ok := v.(int32)
		return ok
	case kindLong:
		_, ok := v.(int64)
		return ok
	case kindFloat:
		_, ok := v.(float32)
		return ok
	case kindDouble:
		_, ok := v.(float64)
		return ok
	case kindString:
		_, ok := v.(string)
		return ok
	default:
		_, ok := v.(time.Time)
		return ok
	}
}

// Encode coerces event to the schema and encodes it as binary Avro.
func (a *avroCodec) Encode(event map[string]any) ([]byte, error) {
	var unknown []string
	for k := range event {
		if !a.byName[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown) // map order is random; errors must not be
		return nil, fmt.Errorf("%s: field %q: not in the schema", a.prefix, unknown[0])
	}
	native := make(map[string]any, len(a.fields))
	for _, f := range a.fields {
		v, present := event[f.name]
		switch {
		case !present && f.hasDefault:
			continue // goavro writes the schema's default
		case v == nil && f.nullable:
			native[f.name] = nil
			continue
		case !present:
			return nil, fmt.Errorf("%s: field %q: missing", a.prefix, f.name)
		case v == nil:
			return nil, fmt.Errorf("%s: field %q: null, but the field's type %s is not nullable", a.prefix, f.name, f.kind.describe())
		}
		cv, err := coerce(v, f.kind)
		if err != nil {
			return nil, fmt.Errorf("%s: field %q: %w", a.prefix, f.name, err)
		}
		if f.nullable {
			cv = map[string]any{f.kind.avroName(): cv}
		}
		native[f.name] = cv
	}
	b, err := a.codec.BinaryFromNative(nil, native)
	if err != nil {
		return nil, fmt.Errorf("%s: encode: %w", a.prefix, err)
	}
	return b, nil
}

// confluentDecoder checks Confluent's framing and decodes the Avro body.
type confluentDecoder struct {
	avro     *avroCodec
	schemaID int // 0: any id
}

// Decode checks the magic byte and schema id, then decodes the body.
// Framing errors wrap ErrFraming and a wrong id wraps ErrSchemaID, so the
// accumulate stage can dead-letter them under their own reasons.
func (d *confluentDecoder) Decode(value []byte) (map[string]any, error) {
	if len(value) < confluentHeaderLen {
		return nil, &wireError{kind: ErrFraming, msg: fmt.Sprintf("%s: record shorter than %d bytes (%d): the Confluent header is a magic byte 0x00 and a 4-byte schema id; is the producer using a Confluent Avro serializer?", FormatConfluentAvro, confluentHeaderLen, len(value))}
	}
	if value[0] != confluentMagic {
		return nil, &wireError{kind: ErrFraming, msg: fmt.Sprintf("%s: magic byte 0x%02x, want 0x%02x: not Confluent wire format; if the producer writes plain Avro or JSON, set the stream's format to %s or %s", FormatConfluentAvro, value[0], confluentMagic, FormatAvro, FormatJSON)}
	}
	id := binary.BigEndian.Uint32(value[1:confluentHeaderLen])
	if d.schemaID != 0 && id != uint32(d.schemaID) {
		return nil, &wireError{kind: ErrSchemaID, msg: fmt.Sprintf("%s: schema id %d, expected %d: the producer uses another schema version; produce with id %d, or set the stream's schema and schema_id to version %d (schema_id 0 accepts any id)", FormatConfluentAvro, id, d.schemaID, d.schemaID, id)}
	}
	return d.avro.Decode(value[confluentHeaderLen:])
}

// ErrFraming is wrapped by the confluent-avro decoder's errors for a value
// that is not in Confluent's wire format: shorter than its 5-byte header, or
// with a magic byte other than 0x00.
var ErrFraming = errors.New("not Confluent wire format")

// ErrSchemaID is wrapped by the confluent-avro decoder's error for a value
// framed with a schema id other than the configured one.
var ErrSchemaID = errors.New("unexpected schema id")

// wireError is a Confluent framing error: its own message, and one of
// ErrFraming and ErrSchemaID for errors.Is.
type wireError struct {
	kind error
	msg  string
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.kind }

// confluentEncoder writes Confluent's framing before the Avro body.
type confluentEncoder struct {
	avro     *avroCodec
	schemaID uint32
}

// Encode encodes event and prefixes the magic byte and schema id.
func (e *confluentEncoder) Encode(event map[string]any) ([]byte, error) {
	body, err := e.avro.Encode(event)
	if err != nil {
		return nil, err
	}
	out := make([]byte, confluentHeaderLen, confluentHeaderLen+len(body))
	out[0] = confluentMagic
	binary.BigEndian.PutUint32(out[1:], e.schemaID)
	return append(out, body...), nil
}

// jsonDecoder decodes one JSON object per value, without a schema.
type jsonDecoder struct{}

// Decode decodes value as one flat JSON object.
func (jsonDecoder) Decode(value []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("json: empty record")
		}
		return nil, fmt.Errorf("json: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("json: not an object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("json: data after the object")
	}
	for k, x := range obj {
		switch n := x.(type) {
		case nil, bool, string:
		case json.Number:
			conv, err := jsonNumber(n)
			if err != nil {
				return nil, fmt.Errorf("json: field %q: %w", k, err)
			}
			obj[k] = conv
		default:
			return nil, fmt.Errorf("json: field %q: %s values are not supported (events must be flat)", k, typeName(x))
		}
	}
	return obj, nil
}

// jsonNumber converts a JSON number literal: int64 for integer literals that
// fit, float64 otherwise.
func jsonNumber(n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return nil, errors.New("number out of float64 range")
	}
	return f, nil
}

// jsonEncoder writes an event as one JSON object.
type jsonEncoder struct{}

// Encode writes event with encoding/json after checking that it is flat.
func (jsonEncoder) Encode(event map[string]any) ([]byte, error) {
	if event == nil {
		return nil, errors.New("json: event is nil")
	}
	keys := make([]string, 0, len(event))
	for k := range event {
		keys = append(keys, k)
	}
	slices.Sort(keys) // check in a fixed order so that errors are deterministic
	for _, k := range keys {
		switch x := event[k].(type) {
		case nil, bool, string, json.Number, time.Time,
			int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("json: field %q: NaN and infinities are not representable", k)
			}
		case float32:
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("json: field %q: NaN and infinities are not representable", k)
			}
		default:
			return nil, fmt.Errorf("json: field %q: %s values are not supported (events must be flat)", k, typeName(x))
		}
	}
	b, err := json.Marshal(event)
	if err != nil {
		return nil, fmt.Errorf("json: encode: %w", err)
	}
	return b, nil
}
