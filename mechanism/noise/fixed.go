package noise

import (
	"math"
	"math/big"
)

// Log2Exact returns j with x = 2^j for a power of two x (Frexp gives
// x = 0.5·2^(j+1)).
func Log2Exact(x float64) int {
	_, exp := math.Frexp(x)
	return exp - 1
}

// AbsInt64 returns |k| for k > math.MinInt64.
func AbsInt64(k int64) int64 {
	if k < 0 {
		return -k
	}
	return k
}

// RoundShift returns ⌊k/2^j + 1/2⌋ exactly (ties up, like Units), for any
// int64 k and j ≥ 0: ⌊k/2^j⌋ is the arithmetic shift, and the fraction is
// at least 1/2 exactly when bit j−1 of k (two's complement) is set. Go
// defines shifts by 64 or more (the sign fills every bit), so this holds
// for every j.
func RoundShift(k int64, j uint) int64 {
	if j == 0 {
		return k
	}
	return (k >> j) + ((k >> (j - 1)) & 1)
}

// UnitSteps returns ⌈L·maxUnits/2^j⌉, the sensitivity in grid steps of an
// integer statistic with per-event sensitivity maxUnits after regridding by
// 2^j (see Calibrate), exactly, and false when it exceeds MaxGridSteps.
func UnitSteps(l int, maxUnits int64, j int) (int64, bool) {
	d := new(big.Int).Mul(big.NewInt(int64(l)), big.NewInt(maxUnits))
	if j > 0 {
		d.Add(d, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(j)), big.NewInt(1)))
		d.Rsh(d, uint(j))
	}
	if !d.IsInt64() || d.Int64() > MaxGridSteps {
		return 0, false
	}
	return d.Int64(), true
}
