package accountant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// The binary form of an [Account] (format version 1), big-endian:
//
//	offset  size          field
//	0       4             magic "DPAC"
//	4       1             format version (1)
//	5       2             number of orders (NumOrders)
//	7       8·NumOrders   Curve, IEEE 754 bits
//	…       8             Pure
//	…       1             flags: bit 0 AllPure, other bits 0
//	…       8, 8          ApproxEpsilon, ApproxDelta
//	…       8, 8          Charges, Refused (non-negative)
//	…       4             CRC-32C (Castagnoli) of everything before it
//
// The order count ties the curve to the orders it was composed at: a
// checkpoint from a build with other orders is refused rather than read
// against the wrong orders. The checksum catches damage that would still
// decode to plausible numbers (a flipped mantissa bit), so that a checkpoint
// is either the account that was written or an error.
const (
	accountMagic   = "DPAC"
	accountVersion = 1
	accountLen     = 4 + 1 + 2 + 8*numOrders + 8 + 1 + 8 + 8 + 8 + 8 + 4
)

// ErrCorruptAccount is wrapped by every error of [Account.UnmarshalBinary]
// (and of [Account.MarshalBinary] for an account that is not sound).
var ErrCorruptAccount = errors.New("corrupt account")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes a for a checkpoint (the format above; it implements
// encoding.BinaryMarshaler). The encoding is exact: [Account.UnmarshalBinary]
// gives back a bit-identical account, so the restored account's Spent is the
// original's and the filter's guarantee carries over. An account that is not
// sound — a negative or NaN curve entry, Pure, ApproxEpsilon or ApproxDelta,
// or negative counters — is an error rather than a checkpoint that would
// refuse to load.
func (a Account) MarshalBinary() ([]byte, error) {
	if err := a.validateStored(); err != nil {
		return nil, fmt.Errorf("accountant: marshal account: %w", err)
	}
	b := make([]byte, 0, accountLen)
	b = append(b, accountMagic...)
	b = append(b, accountVersion)
	b = binary.BigEndian.AppendUint16(b, numOrders)
	for _, v := range a.Curve {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	}
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(a.Pure))
	var flags byte
	if a.AllPure {
		flags = 1
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(a.ApproxEpsilon))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(a.ApproxDelta))
	b = binary.BigEndian.AppendUint64(b, uint64(a.Charges))
	b = binary.BigEndian.AppendUint64(b, uint64(a.Refused))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return b, nil
}

// UnmarshalBinary decodes an account written by [Account.MarshalBinary]
// into a (it implements encoding.BinaryUnmarshaler). Anything but an intact
// encoding of a sound account — the wrong length, magic, version or order
// count, a checksum mismatch, unknown flag bits, a negative or NaN value,
// counters out of range — is an error wrapping [ErrCorruptAccount], and a is
// left unchanged: a damaged checkpoint never becomes a silently wrong
// account (which could under-count the privacy spent).
func (a *Account) UnmarshalBinary(data []byte) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("accountant: unmarshal account: %s: %w", fmt.Sprintf(format, args...), ErrCorruptAccount)
	}
	if len(data) < 7 {
		return fail("%d bytes, too short for a header", len(data))
	}
	if string(data[:4]) != accountMagic {
		return fail("bad magic %q", data[:4])
	}
	if v := data[4]; v != accountVersion {
		return fail("format version %d, want %d", v, accountVersion)
	}
	if n := binary.BigEndian.Uint16(data[5:7]); n != numOrders {
		return fail("%d orders, want %d", n, numOrders)
	}
	if len(data) != accountLen {
		return fail("%d bytes, want %d", len(data), accountLen)
	}
	body, sum := data[:accountLen-4], binary.BigEndian.Uint32(data[accountLen-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return fail("checksum %08x, stored %08x", got, sum)
	}
	p := body[7:]
	f64 := func() float64 {
		v := math.Float64frombits(binary.BigEndian.Uint64(p))
		p = p[8:]
		return v
	}
	u64 := func() uint64 {
		v := binary.BigEndian.Uint64(p)
		p = p[8:]
		return v
	}
	var next Account
	for i := range next.Curve {
		next.Curve[i] = f64()
	}
	next.Pure = f64()
	flags := p[0]
	p = p[1:]
	if flags&^1 != 0 {
		return fail("unknown flags %#x", flags)
	}
	next.AllPure = flags&1 != 0
	next.ApproxEpsilon, next.ApproxDelta = f64(), f64()
	charges, refused := u64(), u64()
	if charges > math.MaxInt || refused > math.MaxInt {
		return fail("counters %d, %d out of range", charges, refused)
	}
	next.Charges, next.Refused = int(charges), int(refused)
	if err := next.validateStored(); err != nil {
		return fail("%v", err)
	}
	*a = next
	return nil
}

// validateStored reports whether a is sound enough to be stored and
// restored: every curve entry and Pure, ApproxEpsilon, ApproxDelta >= 0 and
// not NaN (+Inf, no guarantee, is sound), counters >= 0.
func (a *Account) validateStored() error {
	for i, v := range a.Curve {
		if !(v >= 0) {
			return fmt.Errorf("curve at order %v is %v: %w", orders[i], v, ErrCorruptAccount)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"pure epsilon", a.Pure}, {"approx epsilon", a.ApproxEpsilon}, {"approx delta", a.ApproxDelta}} {
		if !(f.v >= 0) {
			return fmt.Errorf("%s is %v: %w", f.name, f.v, ErrCorruptAccount)
		}
	}
	if a.Charges < 0 || a.Refused < 0 {
		return fmt.Errorf("counters %d, %d are negative: %w", a.Charges, a.Refused, ErrCorruptAccount)
	}
	return nil
}
