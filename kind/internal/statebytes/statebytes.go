// Package statebytes is the small binary encoding the kinds' states use
// for what they make durable (kind.Decision.State, kind.State.Encode):
// a tag naming the kind and its format version, then varints, strings and
// integer slices, in a fixed order. It is deterministic (equal values give
// equal bytes) and compact (a continual log's values are mostly small),
// and a reader never allocates more than its input's length allows.
package statebytes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Writer appends values to a buffer.
type Writer struct{ b []byte }

// New starts an encoding with its tag.
func New(tag string) *Writer {
	w := &Writer{}
	w.String(tag)
	return w
}

// Bytes returns the encoding.
func (w *Writer) Bytes() []byte { return w.b }

// Int appends a signed integer (zig-zag varint).
func (w *Writer) Int(v int64) { w.b = binary.AppendVarint(w.b, v) }

// Bool appends a boolean.
func (w *Writer) Bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// Float appends a float64 (its bits).
func (w *Writer) Float(v float64) { w.b = binary.AppendUvarint(w.b, math.Float64bits(v)) }

// String appends a length-prefixed string.
func (w *Writer) String(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

// Ints appends a length-prefixed slice of signed integers.
func (w *Writer) Ints(xs []int64) {
	w.b = binary.AppendUvarint(w.b, uint64(len(xs)))
	for _, x := range xs {
		w.Int(x)
	}
}

// Len appends a count (of the records that follow).
func (w *Writer) Len(n int) { w.b = binary.AppendUvarint(w.b, uint64(n)) }

// Reader reads values in the order a Writer appended them; the first
// error sticks (Err).
type Reader struct {
	b   []byte
	err error
}

// ErrTag is returned by Open for bytes that do not begin with the tag:
// another kind's state, or none.
var ErrTag = errors.New("statebytes: another tag")

// Open begins reading b, which must start with tag.
func Open(b []byte, tag string) (*Reader, error) {
	r := &Reader{b: b}
	if t := r.String(); r.err != nil || t != tag {
		return nil, ErrTag
	}
	return r, nil
}

// HasTag reports whether b starts with tag.
func HasTag(b []byte, tag string) bool {
	_, err := Open(b, tag)
	return err == nil
}

func (r *Reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("statebytes: malformed %s", what)
	}
}

func (r *Reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Int reads a signed integer.
func (r *Reader) Int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("integer")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Bool reads a boolean.
func (r *Reader) Bool() bool {
	if r.err != nil {
		return false
	}
	if len(r.b) == 0 || r.b[0] > 1 {
		r.fail("boolean")
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

// Float reads a float64.
func (r *Reader) Float() float64 { return math.Float64frombits(r.uvarint("float")) }

// String reads a string.
func (r *Reader) String() string {
	n := r.uvarint("string length")
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.fail("string")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// Ints reads a slice of signed integers (nil when empty).
func (r *Reader) Ints() []int64 {
	n := r.Len()
	if r.err != nil || n == 0 {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = r.Int()
	}
	if r.err != nil {
		return nil
	}
	return out
}

// Len reads a count; it is at most the bytes left (every value takes at
// least one), so a hostile count cannot ask for a large allocation.
func (r *Reader) Len() int {
	n := r.uvarint("count")
	if r.err == nil && n > uint64(len(r.b)) {
		r.fail("count")
		return 0
	}
	return int(n)
}

// Close reports the first error, or bytes left over after the last value.
func (r *Reader) Close() error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("statebytes: %d bytes after the state", len(r.b))
	}
	return r.err
}
