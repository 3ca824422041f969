package schema

import (
	"fmt"
	"time"
)

// nativeRecord reads typed fields out of a record decoded by goavro. goavro
// only returns values of the schema's types, so the checks below never fail
// for the embedded schemas; they exist so that a goavro change becomes an
// error instead of a panic. The first failure is kept and reported by error.
type nativeRecord struct {
	m     map[string]any
	path  string // record path for error messages, e.g. "Partial.stats[2]"
	first *error // first mismatch, shared with nested records
}

func newNativeRecord(m map[string]any, path string) *nativeRecord {
	return &nativeRecord{m: m, path: path, first: new(error)}
}

func (r *nativeRecord) fail(field, want string, got any) {
	if *r.first == nil {
		*r.first = fmt.Errorf("field %s.%s: goavro returned %T, want %s", r.path, field, got, want)
	}
}

// error returns the first type mismatch met while reading r or its nested
// records.
func (r *nativeRecord) error() error { return *r.first }

func (r *nativeRecord) str(field string) string {
	v, ok := r.m[field].(string)
	if !ok {
		r.fail(field, "string", r.m[field])
	}
	return v
}

func (r *nativeRecord) long(field string) int64 {
	v, ok := r.m[field].(int64)
	if !ok {
		r.fail(field, "int64", r.m[field])
	}
	return v
}

func (r *nativeRecord) int(field string) int32 {
	v, ok := r.m[field].(int32)
	if !ok {
		r.fail(field, "int32", r.m[field])
	}
	return v
}

func (r *nativeRecord) double(field string) float64 {
	v, ok := r.m[field].(float64)
	if !ok {
		r.fail(field, "float64", r.m[field])
	}
	return v
}

// millis reads a timestamp-millis field, which goavro decodes to time.Time.
// UnixMilli is exact here: goavro built the time from a whole number of
// milliseconds that fits in int64.
func (r *nativeRecord) millis(field string) int64 {
	v, ok := r.m[field].(time.Time)
	if !ok {
		r.fail(field, "time.Time", r.m[field])
		return 0
	}
	return v.UnixMilli()
}

// optDouble reads a ["null","double"] union: nil, or {"double": x}.
func (r *nativeRecord) optDouble(field string) *float64 {
	switch v := r.m[field].(type) {
	case nil:
		return nil
	case map[string]any:
		x, ok := v["double"].(float64)
		if ok && len(v) == 1 {
			return &x
		}
	}
	r.fail(field, `nil or {"double": float64}`, r.m[field])
	return nil
}

// bytes reads a bytes field as a copy, so that the result never aliases the
// decoded buffer.
func (r *nativeRecord) bytes(field string) []byte {
	v, ok := r.m[field].([]byte)
	if !ok {
		r.fail(field, "[]byte", r.m[field])
		return []byte{}
	}
	return append([]byte{}, v...)
}

func (r *nativeRecord) array(field string) []any {
	v, ok := r.m[field].([]any)
	if !ok {
		r.fail(field, "[]any", r.m[field])
	}
	return v
}

// doubles reads an array of double; an empty array gives nil.
func (r *nativeRecord) doubles(field string) []float64 {
	items := r.array(field)
	if len(items) == 0 {
		return nil
	}
	out := make([]float64, len(items))
	for i, item := range items {
		x, ok := item.(float64)
		if !ok {
			r.fail(fmt.Sprintf("%s[%d]", field, i), "float64", item)
		}
		out[i] = x
	}
	return out
}

// strings reads an array of string; an empty array gives nil.
func (r *nativeRecord) strings(field string) []string {
	items := r.array(field)
	if len(items) == 0 {
		return nil
	}
	out := make([]string, len(items))
	for i, item := range items {
		x, ok := item.(string)
		if !ok {
			r.fail(fmt.Sprintf("%s[%d]", field, i), "string", item)
		}
		out[i] = x
	}
	return out
}

// longs reads an array of long; an empty array gives nil.
func (r *nativeRecord) longs(field string) []int64 {
	items := r.array(field)
	if len(items) == 0 {
		return nil
	}
	out := make([]int64, len(items))
	for i, item := range items {
		x, ok := item.(int64)
		if !ok {
			r.fail(fmt.Sprintf("%s[%d]", field, i), "int64", item)
		}
		out[i] = x
	}
	return out
}

// doubleLists reads an array of arrays of double; an empty outer array
// gives nil, an empty inner one an empty (non-nil) slice.
func (r *nativeRecord) doubleLists(field string) [][]float64 {
	items := r.array(field)
	if len(items) == 0 {
		return nil
	}
	out := make([][]float64, len(items))
	for i, item := range items {
		xs, ok := item.([]any)
		if !ok {
			r.fail(fmt.Sprintf("%s[%d]", field, i), "[]any", item)
			return out
		}
		out[i] = make([]float64, len(xs))
		for j, x := range xs {
			f, ok := x.(float64)
			if !ok {
				r.fail(fmt.Sprintf("%s[%d][%d]", field, i, j), "float64", x)
			}
			out[i][j] = f
		}
	}
	return out
}

// records reads an array of records; nested readers report into r's error.
func (r *nativeRecord) records(field string) []*nativeRecord {
	items := r.array(field)
	out := make([]*nativeRecord, len(items))
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			r.fail(fmt.Sprintf("%s[%d]", field, i), "map[string]any", item)
		}
		out[i] = &nativeRecord{m: m, path: fmt.Sprintf("%s.%s[%d]", r.path, field, i), first: r.first}
	}
	return out
}

// noise reads an array of dpstream.NoiseComponent; an empty array gives nil.
func (r *nativeRecord) noise(field string) []NoiseComponent {
	items := r.records(field)
	if len(items) == 0 {
		return nil
	}
	out := make([]NoiseComponent, len(items))
	for i, n := range items {
		out[i] = NoiseComponent{
			Purpose:     n.str("purpose"),
			Mechanism:   n.str("mechanism"),
			Sensitivity: n.double("sensitivity"),
			Scale:       n.double("scale"),
			Epsilon:     n.double("epsilon"),
			Delta:       n.double("delta"),
		}
	}
	return out
}

// boolean reads a boolean field.
func (r *nativeRecord) boolean(field string) bool {
	v, ok := r.m[field].(bool)
	if !ok {
		r.fail(field, "bool", r.m[field])
	}
	return v
}

// record reads a nested record field; nil (with the error recorded) when it
// is not one.
func (r *nativeRecord) record(field string) *nativeRecord {
	m, ok := r.m[field].(map[string]any)
	if !ok {
		r.fail(field, "map[string]any", r.m[field])
		return nil
	}
	return &nativeRecord{m: m, path: r.path + "." + field, first: r.first}
}

// union reads a ["null", name] union of a record: nil for null.
func (r *nativeRecord) union(field, name string) *nativeRecord {
	switch v := r.m[field].(type) {
	case nil:
		return nil
	case map[string]any:
		if m, ok := v[name].(map[string]any); ok && len(v) == 1 {
			return &nativeRecord{m: m, path: r.path + "." + field, first: r.first}
		}
	}
	r.fail(field, "nil or {"+name+": record}", r.m[field])
	return nil
}

// optLong reads a ["null","long"] union: ok false for null.
func (r *nativeRecord) optLong(field string) (int64, bool) {
	switch v := r.m[field].(type) {
	case nil:
		return 0, false
	case map[string]any:
		if x, ok := v["long"].(int64); ok && len(v) == 1 {
			return x, true
		}
	}
	r.fail(field, `nil or {"long": int64}`, r.m[field])
	return 0, false
}
