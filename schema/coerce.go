package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// coerce converts v to the Go type that goavro writes for kind.
func coerce(v any, kind fieldKind) (any, error) {
	switch kind {
	case kindBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case kindString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case kindInt:
		n, err := toInt64(v, kind)
		if err != nil {
			return nil, err
		}
		if n < math.MinInt32 || n > math.MaxInt32 {
			return nil, errors.New("number out of int range")
		}
		return int32(n), nil
	case kindLong:
		return toInt64(v, kind)
	case kindFloat:
		if f, ok := v.(float32); ok {
			// Returned as is: a round trip through float64 would quiet a
			// signalling NaN and change the bits a decoder produced.
			return f, nil
		}
		x, err := toFloat64(v, kind)
		if err != nil {
			return nil, err
		}
		f := float32(x)
		if math.IsInf(float64(f), 0) && !math.IsInf(x, 0) {
			return nil, errors.New("number out of float range")
		}
		return f, nil
	case kindDouble:
		return toFloat64(v, kind)
	case kindTimestampMillis:
		switch t := v.(type) {
		case time.Time:
			return t.UnixMilli(), nil
		case string:
			parsed, err := time.Parse(time.RFC3339Nano, t)
			if err != nil {
				return nil, errors.New("string is not an RFC 3339 timestamp")
			}
			return parsed.UnixMilli(), nil
		}
		return toInt64(v, kind)
	}
	return nil, fmt.Errorf("want %s, got %s", kind.describe(), typeName(v))
}

// toInt64 converts an integral number to int64.
func toInt64(v any, kind fieldKind) (int64, error) {
	switch n := v.(type) {
	case json.Number:
		i, err := parseIntegral(string(n))
		switch {
		case errors.Is(err, errFraction):
			return 0, fmt.Errorf("want %s, got a number with a fraction", kind.describe())
		case errors.Is(err, errRange):
			return 0, fmt.Errorf("number out of %s range", kind.describe())
		case err != nil:
			return 0, fmt.Errorf("want %s, got an invalid number", kind.describe())
		}
		return i, nil
	case int:
		return int64(n), nil
	case int8:
		return int64(n), nil
	case int16:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint:
		return uintToInt64(uint64(n), kind)
	case uint8:
		return int64(n), nil
	case uint16:
		return int64(n), nil
	case uint32:
		return int64(n), nil
	case uint64:
		return uintToInt64(n, kind)
	case float32:
		return floatToInt64(float64(n), kind)
	case float64:
		return floatToInt64(n, kind)
	}
	return 0, fmt.Errorf("want %s, got %s", kind.describe(), typeName(v))
}

var (
	errFraction = errors.New("number has a fraction")
	errRange    = errors.New("number out of int64 range")
	errSyntax   = errors.New("invalid number")
)

// parseIntegral parses a decimal number literal ("12", "-3", "1.20e1") and
// returns its value when it is an integer in int64's range. It works on the
// digits rather than through float64, so that "9007199254740993.5" is a
// fraction and "-9223372036854775809" is out of range, where float64 rounding
// would accept both.
func parseIntegral(s string) (int64, error) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return i, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, errRange
	}
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimPrefix(s, "-")
	mant, expText, hasExp := body, "", false
	if k := strings.IndexAny(body, "eE"); k >= 0 {
		mant, expText, hasExp = body[:k], body[k+1:], true
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return 0, errSyntax
	}
	exp := 0
	if hasExp {
		exp, err = strconv.Atoi(expText)
		switch {
		case errors.Is(err, strconv.ErrRange) && strings.HasPrefix(expText, "-"):
			exp = math.MinInt32 // the digits are bounded by the input length, so any far-off exponent acts alike
		case errors.Is(err, strconv.ErrRange):
			exp = math.MaxInt32
		case err != nil:
			return 0, errSyntax
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return 0, nil
	}
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if exp < 0 {
		return 0, errFraction
	}
	if len(digits)+exp > 19 { // int64 has at most 19 digits
		return 0, errRange
	}
	text := digits + strings.Repeat("0", exp)
	if neg {
		text = "-" + text
	}
	i, err = strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, errRange
	}
	return i, nil
}

// isJSONNumber reports whether s is a number literal of the JSON grammar.
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || ('0' <= s[0] && s[0] <= '9')) && json.Valid([]byte(s))
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func uintToInt64(n uint64, kind fieldKind) (int64, error) {
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("number out of %s range", kind.describe())
	}
	return int64(n), nil
}

// floatToInt64 accepts floats with an integral value in int64's range
// (2^63 itself is a float64 but not an int64).
func floatToInt64(f float64, kind fieldKind) (int64, error) {
	if math.IsNaN(f) {
		return 0, fmt.Errorf("want %s, got NaN", kind.describe())
	}
	if f != math.Trunc(f) { // ±Inf pass here and fail the range check
		return 0, fmt.Errorf("want %s, got a number with a fraction", kind.describe())
	}
	if f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("number out of %s range", kind.describe())
	}
	return int64(f), nil
}

// toFloat64 converts any number to float64. Integers beyond 2^53 are rounded
// to the nearest float64, as every Avro implementation does for double.
func toFloat64(v any, kind fieldKind) (float64, error) {
	switch n := v.(type) {
	case json.Number:
		// strconv also reads "NaN", "Inf" and hex floats, which are not JSON
		// numbers and which encoding/json never produces.
		if !isJSONNumber(string(n)) {
			return 0, fmt.Errorf("want %s, got an invalid number", kind.describe())
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, fmt.Errorf("want %s, got an invalid or out of range number", kind.describe())
		}
		return f, nil
	case float64:
		return n, nil
	case float32:
		return float64(n), nil
	case int:
		return float64(n), nil
	case int8:
		return float64(n), nil
	case int16:
		return float64(n), nil
	case int32:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case uint:
		return float64(n), nil
	case uint8:
		return float64(n), nil
	case uint16:
		return float64(n), nil
	case uint32:
		return float64(n), nil
	case uint64:
		return float64(n), nil
	}
	return 0, fmt.Errorf("want %s, got %s", kind.describe(), typeName(v))
}

// typeName names v's type in JSON terms where it has one.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case time.Time:
		return "time"
	default:
		return fmt.Sprintf("%T", v)
	}
}
