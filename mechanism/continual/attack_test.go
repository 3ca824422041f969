package continual

import "testing"

// TestAttackAutoBeyondBLTHorizon: method auto (the config's default) must
// choose among the methods that support the horizon. Auto returns the
// first NewPlan error instead, so every horizon above blt's limit of 8192
// (the config accepts up to 2^20) is refused with "blt supports a horizon
// up to 8192 windows … (use sqrt)" — also above sqrt's limit of 2^15,
// where that advice fails too — although tree and per_window serve it.
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackAutoBeyondBLTHorizon(t *testing.T) {
	for _, tc := range []struct{ horizon, k int }{{10000, 1}, {10000, 10000}, {1 << 16, 1}} {
		p, err := Auto(tc.horizon, tc.k, 1)
		if err != nil {
			t.Errorf("Auto(T=%d, k=%d): %v; want the best of the methods that support T", tc.horizon, tc.k, err)
			continue
		}
		if m := p.Method(); m == BLT || (m == Sqrt && tc.horizon > maxFactorHorizon) {
			t.Errorf("Auto(T=%d) chose %s beyond its limit", tc.horizon, m)
		}
	}
}
