package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// fieldKind is the type of one field of a flat input record.
type fieldKind int

const (
	kindBoolean fieldKind = iota
	kindInt
	kindLong
	kindFloat
	kindDouble
	kindString
	kindTimestampMillis
)

// avroName is the name goavro gives the type, which is also the key of a
// non-null union value in goavro's native form.
func (k fieldKind) avroName() string {
	switch k {
	case kindBoolean:
		return "boolean"
	case kindInt:
		return "int"
	case kindLong:
		return "long"
	case kindFloat:
		return "float"
	case kindDouble:
		return "double"
	case kindString:
		return "string"
	default:
		return "long.timestamp-millis"
	}
}

// describe names the kind in error messages.
func (k fieldKind) describe() string {
	if k == kindTimestampMillis {
		return "timestamp-millis"
	}
	return k.avroName()
}

var primitiveKinds = map[string]fieldKind{
	"boolean": kindBoolean,
	"int":     kindInt,
	"long":    kindLong,
	"float":   kindFloat,
	"double":  kindDouble,
	"string":  kindString,
}

// flatField is one field of a flat input record.
type flatField struct {
	name       string
	kind       fieldKind
	nullable   bool // union of "null" and kind, in either order
	hasDefault bool // the schema gives a default, which goavro writes when the field is absent
}

// errUnsupported explains the subset of Avro accepted for input records.
var errUnsupported = errors.New(`input records must be flat: fields of type boolean, int, long, float, double, string, ` +
	`long with logicalType timestamp-millis, or a union of "null" and one of these`)

// parseFlatSchema checks that text is an Avro record schema of the flat
// subset and returns its fields in schema order.
//
// The subset is what the pipeline can use (every value is a scalar that a
// release can read by field name) and what the encoder can coerce from JSON.
// Checking it here, before goavro sees the schema, also keeps schema shapes
// on which goavro's codec builder type-asserts without checking (a decimal
// without precision, for one) away from goavro.
func parseFlatSchema(text string) ([]flatField, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("schema is empty")
	}
	var top any
	if err := json.Unmarshal([]byte(text), &top); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	rec, ok := top.(map[string]any)
	if !ok || rec["type"] != "record" {
		return nil, errors.New(`top-level type must be a record`)
	}
	list, ok := rec["fields"].([]any)
	if !ok {
		return nil, errors.New(`record has no "fields" list`)
	}
	if len(list) == 0 {
		return nil, errors.New("record has no fields")
	}
	fields := make([]flatField, 0, len(list))
	seen := make(map[string]bool, len(list))
	for i, item := range list {
		fm, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("field %d: not a JSON object", i+1)
		}
		name, ok := fm["name"].(string)
		if !ok || name == "" {
			return nil, fmt.Errorf("field %d: missing name", i+1)
		}
		if seen[name] {
			return nil, fmt.Errorf("field %q: defined twice", name)
		}
		seen[name] = true
		kind, nullable, err := parseFieldType(fm["type"])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", name, err)
		}
		_, hasDefault := fm["default"]
		fields = append(fields, flatField{name: name, kind: kind, nullable: nullable, hasDefault: hasDefault})
	}
	return fields, nil
}

// parseFieldType parses a field's "type" value.
func parseFieldType(t any) (kind fieldKind, nullable bool, err error) {
	union, ok := t.([]any)
	if !ok {
		kind, err = parseScalarType(t)
		return kind, false, err
	}
	if len(union) != 2 {
		return 0, false, fmt.Errorf("union of %d types: %w", len(union), errUnsupported)
	}
	other := -1
	for i, member := range union {
		if member != "null" {
			other = i
		}
	}
	if other < 0 || union[1-other] != "null" {
		return 0, false, fmt.Errorf(`union without exactly one "null": %w`, errUnsupported)
	}
	kind, err = parseScalarType(union[other])
	return kind, true, err
}

// parseScalarType parses a non-union type: a primitive name, or an object
// {"type": primitive, "logicalType": "timestamp-millis"}.
func parseScalarType(t any) (fieldKind, error) {
	switch v := t.(type) {
	case string:
		if k, ok := primitiveKinds[v]; ok {
			return k, nil
		}
		return 0, fmt.Errorf("type %q: %w", v, errUnsupported)
	case map[string]any:
		base, ok := v["type"].(string)
		if !ok {
			return 0, fmt.Errorf("nested type: %w", errUnsupported)
		}
		k, ok := primitiveKinds[base]
		if !ok {
			return 0, fmt.Errorf("type %q: %w", base, errUnsupported)
		}
		lt, has := v["logicalType"]
		if !has {
			return k, nil
		}
		if lt != "timestamp-millis" {
			return 0, fmt.Errorf("logicalType %v: %w", lt, errUnsupported)
		}
		if k != kindLong {
			return 0, fmt.Errorf("logicalType timestamp-millis needs type long, not %s", base)
		}
		return kindTimestampMillis, nil
	default:
		return 0, fmt.Errorf("type %v: %w", t, errUnsupported)
	}
}
