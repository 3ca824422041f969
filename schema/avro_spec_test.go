package schema

import (
	"encoding/binary"
	"math"
)

// Helpers that write Avro binary straight from the specification
// (https://avro.apache.org/docs/1.11.1/specification/#binary-encoding), not
// through goavro, so that tests compare the package's bytes with an
// independent encoding.

// avLong writes an int or long: zig-zag, then base-128 varint, low group first.
func avLong(n int64) []byte {
	return binary.AppendUvarint(nil, uint64(n<<1)^uint64(n>>63))
}

// avString writes a string or bytes: length as a long, then the bytes.
func avString(s string) []byte { return append(avLong(int64(len(s))), s...) }

// avDouble writes a double: 8 bytes, IEEE 754 little-endian.
func avDouble(f float64) []byte {
	return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))
}

// avFloat writes a float: 4 bytes, IEEE 754 little-endian.
func avFloat(f float32) []byte {
	return binary.LittleEndian.AppendUint32(nil, math.Float32bits(f))
}

// avBool writes a boolean as one byte.
func avBool(b bool) []byte {
	if b {
		return []byte{1}
	}
	return []byte{0}
}

// avArray writes one block holding every item, then the 0 terminator; an
// empty array is the terminator alone.
func avArray(items ...[]byte) []byte {
	if len(items) == 0 {
		return []byte{0}
	}
	out := avLong(int64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return append(out, 0)
}

// cat concatenates encoded parts, which is how a record is written.
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
