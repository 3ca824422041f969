package accountant

import (
	"encoding"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"
)

var (
	_ encoding.BinaryMarshaler   = Account{}
	_ encoding.BinaryUnmarshaler = (*Account)(nil)
)

// sameBits reports whether a and b are the same account bit for bit (a
// restored checkpoint must be exactly the account written, −0 included).
func sameBits(a, b *Account) bool {
	for i := range a.Curve {
		if math.Float64bits(a.Curve[i]) != math.Float64bits(b.Curve[i]) {
			return false
		}
	}
	for _, p := range [][2]float64{{a.Pure, b.Pure}, {a.ApproxEpsilon, b.ApproxEpsilon}, {a.ApproxDelta, b.ApproxDelta}} {
		if math.Float64bits(p[0]) != math.Float64bits(p[1]) {
			return false
		}
	}
	return a.AllPure == b.AllPure && a.Charges == b.Charges && a.Refused == b.Refused
}

// marshalCases are accounts of every shape a stream can reach.
func marshalCases(t *testing.T) map[string]Account {
	t.Helper()
	build := func(charges ...[]Mechanism) Account {
		a := Account{AllPure: true}
		for _, ms := range charges {
			if _, err := a.Try(Budget{Epsilon: 20, Delta: 1e-6}, ms); err != nil { // refusals count too
				t.Fatal(err)
			}
		}
		return a
	}
	lap := []Mechanism{{Kind: KindLaplace, Scale: 1, Sensitivity: 1}} // ε = 1: the 21st and later are refused
	gauss := []Mechanism{{Kind: KindGaussian, Scale: 2, Sensitivity: 1, Count: 3}}
	approx := []Mechanism{{Kind: KindApproxDP, Epsilon: 0.5, Delta: 1e-8}}
	refusals := build(lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap, lap)
	if refusals.Refused == 0 {
		t.Fatalf("the refusals case refused nothing")
	}
	inf := Account{Charges: 1, Refused: 2}
	inf.Curve[10] = math.Inf(1)
	inf.Curve[11] = math.Copysign(0, -1)
	return map[string]Account{
		"zero":      {},
		"empty":     {AllPure: true},
		"pure":      build(lap, lap, lap),
		"gaussian":  build(gauss, lap, gauss),
		"approx":    build(approx, gauss),
		"refusals":  refusals,
		"inf entry": inf,
		"huge":      {Pure: math.MaxFloat64, Charges: math.MaxInt, Refused: math.MaxInt, ApproxDelta: 3},
	}
}

func TestAccountMarshalRoundTrip(t *testing.T) {
	for name, a := range marshalCases(t) {
		t.Run(name, func(t *testing.T) {
			b, err := a.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != accountLen {
				t.Fatalf("%d bytes, want %d", len(b), accountLen)
			}
			var got Account
			got.Charges = 99 // overwritten completely
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if !sameBits(&got, &a) {
				t.Fatalf("round trip gave %+v, want %+v", got, a)
			}
			if s, want := got.Spent(1e-6), a.Spent(1e-6); s != want && !(math.IsNaN(s) && math.IsNaN(want)) {
				t.Errorf("restored Spent %v, original %v", s, want)
			}
			again, err := got.MarshalBinary()
			if err != nil || string(again) != string(b) {
				t.Errorf("re-encoding differs (err %v)", err)
			}
		})
	}
}

// TestAccountUnmarshalRejectsDamage: every truncation, every single-bit
// flip, trailing bytes and well-checksummed but invalid contents are errors
// wrapping ErrCorruptAccount, and leave the target account unchanged.
func TestAccountUnmarshalRejectsDamage(t *testing.T) {
	src := marshalCases(t)["gaussian"]
	good, err := src.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	target := marshalCases(t)["pure"]
	before := target
	reject := func(what string, b []byte) {
		t.Helper()
		err := target.UnmarshalBinary(b)
		if !errors.Is(err, ErrCorruptAccount) {
			t.Fatalf("%s: error %v, want ErrCorruptAccount", what, err)
		}
		if !sameBits(&target, &before) {
			t.Fatalf("%s: the target account changed", what)
		}
	}
	for n := range len(good) {
		reject("truncated", good[:n])
	}
	reject("trailing byte", append(append([]byte(nil), good...), 0))
	reject("nil", nil)
	for i := range good {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[i] ^= 1 << bit
			reject("bit flip", b)
		}
	}

	// Contents that pass the checksum but are not a sound account.
	resum := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[accountLen-4:], crc32.Checksum(b[:accountLen-4], castagnoli))
		return b
	}
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return resum(b)
	}
	putF := func(off int, v float64) func([]byte) {
		return func(b []byte) { binary.BigEndian.PutUint64(b[off:], math.Float64bits(v)) }
	}
	curveOff := 7
	pureOff := curveOff + 8*numOrders
	flagsOff := pureOff + 8
	approxOff := flagsOff + 1
	countersOff := approxOff + 16
	for name, b := range map[string][]byte{
		"magic":               edit(func(b []byte) { b[0] = 'X' }),
		"version":             edit(func(b []byte) { b[4] = 2 }),
		"order count":         edit(func(b []byte) { binary.BigEndian.PutUint16(b[5:], numOrders-1) }),
		"NaN curve entry":     edit(putF(curveOff+8*20, math.NaN())),
		"negative curve":      edit(putF(curveOff, -1e-9)),
		"-Inf curve":          edit(putF(curveOff+8*155, math.Inf(-1))),
		"NaN pure":            edit(putF(pureOff, math.NaN())),
		"negative pure":       edit(putF(pureOff, -1)),
		"unknown flag":        edit(func(b []byte) { b[flagsOff] |= 2 }),
		"NaN approx epsilon":  edit(putF(approxOff, math.NaN())),
		"negative approx δ":   edit(putF(approxOff+8, -1e-7)),
		"charges out of int":  edit(func(b []byte) { binary.BigEndian.PutUint64(b[countersOff:], 1<<63) }),
		"refused out of int":  edit(func(b []byte) { binary.BigEndian.PutUint64(b[countersOff+8:], math.MaxUint64) }),
		"order count, longer": append(edit(func(b []byte) { binary.BigEndian.PutUint16(b[5:], numOrders+1) }), make([]byte, 8)...),
	} {
		reject(name, b)
	}
	// The edits themselves are sound: the same bytes with a valid field
	// decode (so each case above is refused for its field, not by accident).
	if err := target.UnmarshalBinary(edit(putF(curveOff+8*20, 0.25))); err != nil {
		t.Fatalf("a sound edit is refused: %v", err)
	}
}

// TestAccountMarshalRejectsCorruptAccount: a corrupt account is not written.
func TestAccountMarshalRejectsCorruptAccount(t *testing.T) {
	nan := Account{}
	nan.Curve[3] = math.NaN()
	for name, a := range map[string]Account{
		"NaN curve":        nan,
		"NaN pure":         {Pure: math.NaN(), AllPure: true},
		"negative approx":  {ApproxEpsilon: -1},
		"negative charges": {Charges: -1},
	} {
		if _, err := a.MarshalBinary(); !errors.Is(err, ErrCorruptAccount) {
			t.Errorf("%s: MarshalBinary error %v, want ErrCorruptAccount", name, err)
		}
	}
}
