package accumulate

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Reason is why an input record was rejected; it is the dead-letter
// record's reason header and the label of dpstream_events_rejected_total
// (late events are counted in dpstream_events_late_total instead).
type Reason string

// Rejection reasons.
const (
	ReasonTooLarge         Reason = "too_large"          // the value is longer than the stream's max_event_bytes
	ReasonUndecodable      Reason = "undecodable"        // the format's decoder failed
	ReasonBadFraming       Reason = "bad_framing"        // confluent-avro: no Confluent header (short, or magic byte not 0)
	ReasonWrongSchemaID    Reason = "wrong_schema_id"    // confluent-avro: framed with another schema id than schema_id
	ReasonMissingUnit      Reason = "missing_unit"       // no (or empty) privacy unit field
	ReasonMisrouted        Reason = "misrouted"          // unit hashes to another partition (key the record by the unit)
	ReasonMissingEventTime Reason = "missing_event_time" // no event-time field
	ReasonBadEventTime     Reason = "invalid_event_time" // event time not a timestamp
	ReasonMissingField     Reason = "missing_field"      // a release's field is absent or null
	ReasonInvalidValue     Reason = "invalid_value"      // a release's field is not a number
	ReasonNonFinite        Reason = "non_finite"         // NaN or ±Inf
	ReasonUnknownCategory  Reason = "unknown_category"   // a categorical field's value outside its categories
	ReasonLate             Reason = "late"               // its window already closed
	ReasonFuture           Reason = "future"             // event time more than the stream's max_skew ahead of the wall clock
	ReasonBeforeStart      Reason = "before_start"       // event time before the stream's start
)

// Rejection is an input record the stage cannot use, with its reason.
type Rejection struct {
	Reason Reason
	Detail string
}

func (r *Rejection) Error() string { return string(r.Reason) + ": " + r.Detail }

func reject(r Reason, format string, args ...any) *Rejection {
	return &Rejection{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Extractor turns a decoded record into an Event.
type Extractor struct {
	Unit string // privacy unit field
	// EventLevel makes every event its own privacy unit (privacy_unit:
	// event): Unit is ignored and the record's offset names the unit.
	EventLevel bool
	EventTime  string // event time field; "" uses the record timestamp
	// Fields are the fields whose values make up Event.Values, in order
	// ("" leaves a zero, for a release that reads no field).
	Fields []string
	// Categories, when not nil, is parallel to Fields: a non-nil map makes
	// its field categorical (kind.Field.Categories), whose value
	// must be a string (or Avro enum symbol) among the map's keys and is
	// stored as the mapped index.
	Categories []map[string]int
	// Keyed, when not nil, is parallel to Fields: a true entry makes its
	// field a grouping key (kind.Field.Key), whose value, a string or a
	// number, is stored in Event.Keys as KeyString renders it; the privacy
	// unit's field as a key is stored as Event.Unit, the unit's identity.
	Keyed []bool
}

// MaxKeyBytes is the longest key (the value of a group_by field) the
// stage accepts: a key is carried in partials and published in releases,
// so one producer must not make a key as large as its event.
const MaxKeyBytes = 256

// KeyString renders a key field's value as the key it names: strings as
// they are, numbers in canonical form (UnitString's: 7, 7.0 and a JSON
// 7e0 are one key; an Avro float, integral or in its shortest float32
// form, so 0.1 as a float is the key 0.1), an Avro enum symbol or a
// nullable branch as its string. It refuses NaN, infinities (a JSON
// number beyond float64 included) and keys that are not UTF-8: releases
// publish keys in JSON, where two such keys would print alike.
func KeyString(v any) (string, bool) {
	if u, ok := v.(map[string]any); ok && len(u) == 1 {
		for _, inner := range u {
			v = inner
		}
	}
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			v = i
		} else if f, err := n.Float64(); err == nil {
			v = f
		} else {
			return "", false
		}
	}
	if f, ok := toFloat(v); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return "", false
	}
	if f, ok := v.(float32); ok {
		if f != float32(math.Trunc(float64(f))) || math.Abs(float64(f)) >= 1<<63 {
			return strconv.FormatFloat(float64(f), 'g', -1, 32), true
		}
		v = float64(f)
	}
	var s string
	if c, ok := categoryName(v); ok {
		s = c
	} else if s, ok = UnitString(v); !ok {
		return "", false
	}
	return s, utf8.ValidString(s)
}

// Extract validates a decoded record. recordTime is the Kafka record
// timestamp, used when no event-time field is configured.
func (x *Extractor) Extract(m map[string]any, offset int64, recordTime time.Time) (Event, *Rejection) {
	ev := Event{Offset: offset}
	if x.EventLevel {
		ev.Unit = "@" + strconv.FormatInt(offset, 10)
		return x.extractRest(m, ev, recordTime)
	}
	u, ok := m[x.Unit]
	if !ok || u == nil {
		return ev, reject(ReasonMissingUnit, "field %q is missing", x.Unit)
	}
	unit, ok := UnitString(u)
	if !ok || unit == "" {
		return ev, reject(ReasonMissingUnit, "field %q is empty or not a scalar", x.Unit)
	}
	ev.Unit = unit
	return x.extractRest(m, ev, recordTime)
}

// extractRest reads the event time and the releases' fields.
func (x *Extractor) extractRest(m map[string]any, ev Event, recordTime time.Time) (Event, *Rejection) {
	if x.EventTime == "" {
		ev.Time = recordTime.UnixMilli()
	} else {
		t, ok := m[x.EventTime]
		if !ok || t == nil {
			return ev, reject(ReasonMissingEventTime, "field %q is missing", x.EventTime)
		}
		ms, err := toMillis(t)
		if err != nil {
			return ev, reject(ReasonBadEventTime, "field %q: %v", x.EventTime, err)
		}
		ev.Time = ms
	}
	ev.Values = make([]float64, len(x.Fields))
	if x.Keyed != nil {
		ev.Keys = make([]string, len(x.Fields))
	}
	for i, f := range x.Fields {
		if f == "" {
			continue
		}
		v, ok := m[f]
		if !ok || v == nil {
			return ev, reject(ReasonMissingField, "field %q is missing", f)
		}
		if i < len(x.Keyed) && x.Keyed[i] && !x.EventLevel && f == x.Unit {
			// The privacy unit read as a key (the prediction kind shards
			// by it): the unit's identity itself, so that every event of
			// a unit carries one key (KeyString's canonical form could
			// split a unit the stage counts as one), and never a reason
			// to refuse an event the stage accepts as a unit. A key is
			// never a group: config refuses to aggregate the unit.
			ev.Keys[i] = ev.Unit
			continue
		}
		if i < len(x.Keyed) && x.Keyed[i] {
			key, ok := KeyString(v)
			if !ok {
				return ev, reject(ReasonInvalidValue, "field %q: %v is not a key (UTF-8 text or a finite number)", f, v)
			}
			if len(key) > MaxKeyBytes {
				return ev, reject(ReasonInvalidValue, "field %q: a key of %d bytes is longer than the %d a key may have", f, len(key), MaxKeyBytes)
			}
			ev.Keys[i] = key
			continue
		}
		if i < len(x.Categories) && x.Categories[i] != nil {
			name, ok := categoryName(v)
			if !ok {
				return ev, reject(ReasonInvalidValue, "field %q: %v is not a category name (a string)", f, v)
			}
			idx, ok := x.Categories[i][name]
			if !ok {
				return ev, reject(ReasonUnknownCategory, "field %q: %q is not one of the configured categories", f, name)
			}
			ev.Values[i] = float64(idx)
			continue
		}
		fv, ok := toFloat(v)
		if !ok {
			return ev, reject(ReasonInvalidValue, "field %q: %v is not a number", f, v)
		}
		if math.IsNaN(fv) || math.IsInf(fv, 0) {
			return ev, reject(ReasonNonFinite, "field %q is %v", f, fv)
		}
		ev.Values[i] = fv
	}
	return ev, nil
}

// categoryName returns the category a decoded value names: a string, or
// an Avro enum or a single-branch union holding one (goavro decodes a
// nullable string as map[string]any{"string": v}).
func categoryName(v any) (string, bool) {
	switch c := v.(type) {
	case string:
		return c, true
	case []byte:
		return string(c), true
	case map[string]any:
		if len(c) == 1 {
			for _, inner := range c {
				if s, ok := inner.(string); ok {
					return s, true
				}
			}
		}
	}
	return "", false
}

// UnitString renders a privacy-unit value as the string that identifies
// the unit (and that producers should use as the record key): strings as
// they are, integral numbers in decimal, other numbers in shortest form.
func UnitString(v any) (string, bool) {
	switch u := v.(type) {
	case string:
		return u, true
	case int64:
		return strconv.FormatInt(u, 10), true
	case int32:
		return strconv.FormatInt(int64(u), 10), true
	case int:
		return strconv.Itoa(u), true
	case float64:
		// Integral floats render like integers, so 7 and 7.0 (or a JSON
		// 1e3 and 1000) are the same unit: otherwise one person could be
		// two units and escape the contribution bound.
		if u == math.Trunc(u) && math.Abs(u) < 1<<63 {
			return strconv.FormatInt(int64(u), 10), true
		}
		return strconv.FormatFloat(u, 'g', -1, 64), true
	case json.Number:
		return u.String(), true
	case []byte:
		return string(u), true
	}
	return "", false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// toMillis accepts a time.Time, epoch milliseconds (integer or float), or an
// RFC 3339 string.
// Times beyond ±maxMillis (about year ±33658) are rejected: window
// arithmetic near the int64 limits would overflow.
func toMillis(v any) (int64, error) {
	var ms int64
	switch t := v.(type) {
	case time.Time:
		ms = t.UnixMilli()
	case int64:
		ms = t
	case int32:
		ms = int64(t)
	case int:
		ms = int64(t)
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) || math.Abs(t) > maxMillis {
			return 0, fmt.Errorf("%v is not epoch milliseconds", t)
		}
		ms = int64(math.Floor(t))
	case string:
		tt, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return 0, fmt.Errorf("%q is not an RFC 3339 time or epoch milliseconds", t)
		}
		ms = tt.UnixMilli()
	default:
		return 0, fmt.Errorf("%v (%T) is not a timestamp", v, v)
	}
	if ms > maxMillis || ms < -maxMillis {
		return 0, fmt.Errorf("%d ms is outside the supported range ±%d", ms, int64(maxMillis))
	}
	return ms, nil
}

const maxMillis = 1e15
