package aggregate

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// ratFloor returns ⌊x⌋ of a rational (Euclidean division by the positive
// denominator).
func ratFloor(x *big.Rat) *big.Int {
	return new(big.Int).Div(x.Num(), x.Denom())
}

// refUnits is Quantizer.Units restated in exact rational arithmetic:
// ⌊fl(clamp(v) − c)/q + 1/2⌋.
func refUnits(z Quantizer, v float64) int64 {
	x := new(big.Rat).SetFloat64(math.Max(z.lo, math.Min(v, z.hi)) - z.center)
	x.Quo(x, new(big.Rat).SetFloat64(z.quantum))
	x.Add(x, big.NewRat(1, 2))
	return ratFloor(x).Int64()
}

func mustQuantizer(t *testing.T, kind Kind, lo, hi float64) Quantizer {
	t.Helper()
	z, err := NewQuantizer(kind, lo, hi)
	if err != nil {
		t.Fatalf("NewQuantizer(%s, %v, %v): %v", kind, lo, hi, err)
	}
	return z
}

// TestQuantizer checks quanta, centers and MaxUnits worked out by hand, and
// the units of chosen values: ties between two units go up (towards +∞),
// values outside the bounds are clamped.
func TestQuantizer(t *testing.T) {
	type unit struct {
		v    float64
		want int64
	}
	tests := []struct {
		name     string
		kind     Kind
		lo, hi   float64
		quantum  float64
		center   float64
		maxUnits int64
		units    []unit
	}{
		{"sum on [0, 1]: 1 = 2^0, units of 2^-30", KindSum, 0, 1, 0x1p-30, 0, 1 << 30, []unit{
			{0, 0}, {1, 1 << 30}, {2, 1 << 30}, {-1, 0},
			{0x1p-31, 1},                    // 1/2 unit: tie, up
			{0x1.8p-30, 2},                  // 3/2: tie, up
			{math.Nextafter(0x1p-31, 0), 0}, // just below the tie
			{1 - 0x1p-31, 1 << 30},          // 2^30 − 1/2: tie, up
		}},
		{"sum on [−10, 5]: 10 ≤ 2^4", KindSum, -10, 5, 0x1p-26, 0, 10 << 26, []unit{
			{-10, -10 << 26}, {5, 5 << 26}, {-11, -10 << 26},
			{-0x1p-27, 0},    // −1/2 unit: tie, up to 0
			{-0x1.8p-26, -1}, // −3/2: tie, up to −1
			{math.Nextafter(-0x1p-27, -1), -1},
		}},
		{"sum on [0, 0.1]: 0.1 ≤ 2^-3", KindSum, 0, 0.1, 0x1p-33, 0, 858993459, []unit{
			{0.1, 858993459},  // 0.1·2^33 = 858993459.2000000477
			{0.05, 429496730}, // 429496729.6000000238 rounds up
		}},
		{"mean on [0, 10]: centered in [−5, 5]", KindMean, 0, 10, 0x1p-27, 5, 5 << 27, []unit{
			{0, -5 << 27}, {10, 5 << 27}, {5, 0}, {7.5, 2.5 * (1 << 27)}, {5 - 0x1p-28, 0}, {5 - 0x1.8p-27, -1},
		}},
		{"mean on [1000, 1001]: resolution from the width, not the magnitude", KindMean, 1000, 1001, 0x1p-31, 1000.5, 1 << 30, []unit{
			{1000, -1 << 30}, {1001, 1 << 30}, {1000.75, 1 << 29},
		}},
		{"mean on [−1, 3]: center 1", KindMean, -1, 3, 0x1p-29, 1, 1 << 30, []unit{{-1, -1 << 30}, {3, 1 << 30}, {1, 0}}},
		{"sum on a subnormal range: the quantum is 2^-1074, not finer", KindSum, 0, 3 * 5e-324, 5e-324, 0, 3, []unit{
			{5e-324, 1}, {1, 3},
		}},
		{"sum near the float64 limit: 1.6e308 ≤ 2^1024", KindSum, 0, 1.6e308, 0x1p994, 0, 0, []unit{{0x1p1023, 1 << 29}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := mustQuantizer(t, tc.kind, tc.lo, tc.hi)
			if z.Quantum() != tc.quantum || z.Center() != tc.center {
				t.Errorf("quantum %v, center %v; want %v, %v", z.Quantum(), z.Center(), tc.quantum, tc.center)
			}
			if tc.maxUnits != 0 && z.MaxUnits() != tc.maxUnits {
				t.Errorf("MaxUnits %d, want %d", z.MaxUnits(), tc.maxUnits)
			}
			if z.MaxUnits() > 1<<QuantumBits || z.MaxUnits() < 1 {
				t.Errorf("MaxUnits %d outside [1, 2^30]", z.MaxUnits())
			}
			for _, u := range tc.units {
				got, err := z.Units(u.v)
				if err != nil || got != u.want {
					t.Errorf("Units(%v) = %d, %v; want %d", u.v, got, err, u.want)
				}
			}
		})
	}
}

func TestQuantizerErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   Kind
		lo, hi float64
	}{
		{"count", KindCount, 0, 1},
		{"histogram", KindHistogram, 0, 1},
		{"reversed", KindSum, 1, 0},
		{"empty", KindMean, 1, 1},
		{"NaN", KindSum, math.NaN(), 1},
		{"infinite", KindSum, 0, math.Inf(1)},
		{"width overflows", KindMean, -1e308, 1e308},
	} {
		if z, err := NewQuantizer(tc.kind, tc.lo, tc.hi); err == nil {
			t.Errorf("%s: NewQuantizer = %+v, want an error", tc.name, z)
		}
	}
	if k, err := (Quantizer{}).Units(1); err == nil {
		t.Errorf("zero Quantizer: Units(1) = %d, want an error", k)
	}
	z := mustQuantizer(t, KindSum, 0, 1)
	if k, err := z.Units(math.NaN()); err == nil {
		t.Errorf("Units(NaN) = %d, want an error", k)
	}
	for _, v := range []float64{math.Inf(1), math.Inf(-1)} {
		if k, err := z.Units(v); err != nil || (k != 0 && k != 1<<30) {
			t.Errorf("Units(%v) = %d, %v; want it clamped", v, k, err)
		}
	}
	s := Spec{Kind: KindMean, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 10, MaxContributions: 1}
	if z, err := s.Quantizer(); err != nil || z != mustQuantizer(t, KindMean, 0, 10) {
		t.Errorf("Spec.Quantizer = %+v, %v; want NewQuantizer's", z, err)
	}
}

// TestQuantizerExactAndMonotone checks, for bounds of many shapes and
// values at and around the bounds, the midpoint, unit ties and random
// points: Units equals the exact rational rounding, never exceeds MaxUnits
// (which a bound attains), and is non-decreasing in the value, the
// property the sensitivity proof rests on.
func TestQuantizerExactAndMonotone(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	bounds := [][2]float64{{0, 1}, {-1, 1}, {0, 0.1}, {-3.3, 12.3}, {1e9, 1e9 + 3}, {1.7e9, 1.7e9 + 100},
		{-1e-300, 1e-300}, {1, math.Nextafter(1, 2)}, {-7, -1}, {0.1, 0.7}, {-1e307, 1.6e308}, {1e308, 1.6e308}}
	for _, kind := range []Kind{KindSum, KindMean} {
		for _, b := range bounds {
			z := mustQuantizer(t, kind, b[0], b[1])
			q, c := z.Quantum(), z.Center()
			vals := []float64{b[0], b[1], math.Nextafter(b[0], b[1]), math.Nextafter(b[1], b[0]), c, b[0] - 1, b[1] + 1}
			for _, base := range []float64{b[0], b[1], c} {
				for _, d := range []float64{-1.5, -0.5, 0.5, 1.5} {
					x := base + d*q
					vals = append(vals, x, math.Nextafter(x, math.Inf(1)), math.Nextafter(x, math.Inf(-1)))
				}
			}
			for range 300 {
				vals = append(vals, b[0]+(b[1]-b[0])*r.Float64())
			}
			slices.Sort(vals)
			prev := int64(math.MinInt64)
			for _, v := range vals {
				got, err := z.Units(v)
				if err != nil {
					t.Fatal(err)
				}
				if want := refUnits(z, v); got != want {
					t.Errorf("%s [%v, %v]: Units(%v) = %d, exact %d", kind, b[0], b[1], v, got, want)
				}
				if got < prev {
					t.Errorf("%s [%v, %v]: Units(%v) = %d decreases from %d", kind, b[0], b[1], v, got, prev)
				}
				if noise.AbsInt64(got) > z.MaxUnits() {
					t.Errorf("%s [%v, %v]: |Units(%v)| = %d > MaxUnits %d", kind, b[0], b[1], v, got, z.MaxUnits())
				}
				prev = got
			}
			lo, _ := z.Units(b[0])
			hi, _ := z.Units(b[1])
			if max(noise.AbsInt64(lo), noise.AbsInt64(hi)) != z.MaxUnits() {
				t.Errorf("%s [%v, %v]: MaxUnits %d not attained at a bound (%d, %d)", kind, b[0], b[1], z.MaxUnits(), lo, hi)
			}
		}
	}
}

// TestRoundShift compares the integer regridding with exact rational
// rounding ⌊k/2^j + 1/2⌋, for every shift up to past the width of int64
// and values including the int64 extremes and exact ties.
func TestRoundShift(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ks := []int64{0, 1, -1, 2, -2, 3, -3, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, 1 << 62, -1 << 62}
	for range 200 {
		ks = append(ks, int64(r.Uint64()), r.Int64N(1<<20)-1<<19)
	}
	for j := uint(0); j <= 70; j++ {
		// Exact ties ±(m + 1/2)·2^j where representable.
		if j >= 1 && j < 62 {
			ks = append(ks, 5<<j+1<<(j-1), -(5<<j + 1<<(j-1)))
		}
		for _, k := range ks {
			x := new(big.Rat).SetFrac(big.NewInt(k), new(big.Int).Lsh(big.NewInt(1), j))
			x.Add(x, big.NewRat(1, 2))
			if got, want := noise.RoundShift(k, j), ratFloor(x); !want.IsInt64() || got != want.Int64() {
				t.Fatalf("roundShift(%d, %d) = %d, want %v", k, j, got, want)
			}
		}
	}
}

func TestUnitSteps(t *testing.T) {
	for _, tc := range []struct {
		l        int
		maxUnits int64
		j        int
		want     int64
		ok       bool
	}{
		{2, 1, 0, 2, true},
		{3, 5, 1, 8, true}, // ⌈15/2⌉
		{4, 5, 2, 5, true}, // 20/4 exactly
		{4, 5, 3, 3, true}, // ⌈20/8⌉
		{1, 1 << 30, 40, 1, true},
		{1 << 23, 1 << 30, 0, 1 << 53, true},
		{1<<23 + 1, 1 << 30, 0, 0, false},         // above 2^53
		{math.MaxInt, 1 << 30, 40, 1 << 53, true}, // ⌈2^53 − 2^-10⌉
		{math.MaxInt, 1 << 30, 39, 0, false},
		{math.MaxInt, 1 << 30, 50, 1 << 43, true},
	} {
		got, ok := noise.UnitSteps(tc.l, tc.maxUnits, tc.j)
		if got != tc.want || ok != tc.ok {
			t.Errorf("unitSteps(%d, %d, %d) = %d, %v; want %d, %v", tc.l, tc.maxUnits, tc.j, got, ok, tc.want, tc.ok)
		}
	}
}

// zeroNoise draws 0, so that a release returns its exact (regridded)
// statistic.
type zeroNoise struct{}

func (zeroNoise) DiscreteLaplace(float64) (int64, error)  { return 0, nil }
func (zeroNoise) DiscreteGaussian(float64) (int64, error) { return 0, nil }

// neighbourSpecs are sum and mean specs on the quantum grid and on grids
// of 2^k quanta, with both noises. The name says which.
func neighbourSpecs() []struct {
	name string
	spec Spec
} {
	var out []struct {
		name string
		spec Spec
	}
	for _, nk := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		delta := 0.0
		if nk == noise.Gaussian {
			delta = 1e-6
		}
		for _, k := range []Kind{KindSum, KindMean} {
			for _, b := range [][2]float64{{-1, 2.5}, {0.1, 0.7}, {-3, 10}} {
				for _, eps := range []float64{1, 1.0 / 2048} {
					grid := "grid = quantum"
					if eps < 1 {
						grid = "coarser grid"
					}
					out = append(out, struct {
						name string
						spec Spec
					}{string(k) + "/" + string(nk) + "/" + grid,
						Spec{Kind: k, Noise: nk, Epsilon: eps, Delta: delta, Lo: b[0], Hi: b[1], MaxContributions: 3}})
				}
			}
		}
	}
	return out
}

// TestNeighbourSensitivityBruteForce is test (b): for every sum and mean
// spec, base statistics K covering every residue modulo the output grid
// (and large magnitudes), and every multiset of at most L values for the
// added unit drawn from adversarial values (the bounds, one ulp inside,
// beyond them, the midpoint, and exact ties between two units around
// each), the released integer statistics of neighbours (Release's own
// regridding, zero noise) differ by at most the calibrated Sensitivity,
// which some neighbour pair attains: the sensitivity is exact.
func TestNeighbourSensitivityBruteForce(t *testing.T) {
	for _, nc := range neighbourSpecs() {
		t.Run(nc.name, func(t *testing.T) {
			c := mustCalibrate(t, nc.spec)
			comp := c.Components[len(c.Components)-1]
			z, err := nc.spec.Quantizer()
			if err != nil {
				t.Fatal(err)
			}
			q, g := comp.Quantum, comp.Granularity
			if coarse := strings.HasSuffix(nc.name, "coarser grid"); coarse != (g > q) {
				t.Fatalf("test setup: grid %v, quantum %v", g, q)
			}
			lo, hi, mid := nc.spec.Lo, nc.spec.Hi, z.Center()
			vals := []float64{lo, hi, math.Nextafter(lo, hi), math.Nextafter(hi, lo), lo - 1, hi + 1, mid}
			for _, base := range []float64{lo, hi, mid} {
				for _, d := range []float64{-1.5, -0.5, 0.5, 1.5} {
					vals = append(vals, base+d*q)
				}
			}
			units := map[int64]bool{}
			for _, v := range vals {
				k, err := z.Units(v)
				if err != nil {
					t.Fatal(err)
				}
				units[k] = true
			}
			// Sums of at most L = 3 of those units: the added unit's effect.
			var deltas []int64
			ks := slices.Sorted(func(yield func(int64) bool) {
				for k := range units {
					if !yield(k) {
						return
					}
				}
			})
			for i, a := range ks {
				deltas = append(deltas, a)
				for j := i; j < len(ks); j++ {
					deltas = append(deltas, a+ks[j])
					for l := j; l < len(ks); l++ {
						deltas = append(deltas, a+ks[j]+ks[l])
					}
				}
			}
			r := int64(g / q)
			var bases []int64
			// Released values stay below 2^53 grid steps, where the float64
			// output is the exact integer times G (above, it is rounded:
			// post-processing, but it would blur this comparison).
			for _, around := range []int64{0, 12345 << 20, -(1 << 50), 1 << 51, -(1 << 51)} {
				for i := range 2 * r {
					bases = append(bases, around+i)
				}
			}
			release := func(k int64) float64 {
				v, err := noise.AddToUnits(zeroNoise{}, comp, k)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			worst := 0.0
			for _, base := range bases {
				v0 := release(base)
				for _, d := range deltas {
					diff := math.Abs(release(base+d) - v0)
					if diff > comp.Sensitivity {
						t.Fatalf("K = %d, K' = K + %d: released values differ by %v > sensitivity %v", base, d, diff, comp.Sensitivity)
					}
					worst = math.Max(worst, diff)
				}
			}
			if worst != comp.Sensitivity {
				t.Errorf("worst neighbour difference %v, calibrated sensitivity %v: not exact", worst, comp.Sensitivity)
			}
			if c.Spec.Kind == KindSum {
				// Release itself publishes the same regridded value.
				res, err := Release(c, Stats{SumUnits: bases[3]}, zeroNoise{})
				if err != nil || *res.Value != release(bases[3]) {
					t.Errorf("Release(K = %d) = %v, %v; want %v", bases[3], res.Value, err, release(bases[3]))
				}
			}
		})
	}
}

// TestFloatSumSensitivityViolationIsGone is regression test (c) for the
// sensitivity itself (Casacuberta et al. 2022): with values in [0, 1] and
// L = 1, the float64 sums the old accumulator computed (in offset order)
// of a window and of its neighbour without one unit differ by more than
// L·max(|Lo|, |Hi|) = 1, because removing the unit's 1 changes how every
// later tiny value rounds. The exact integer sums of the same windows
// differ by that unit's units only, within the calibrated sensitivity.
func TestFloatSumSensitivityViolationIsGone(t *testing.T) {
	const n = 1 << 16
	tiny := 0x1p-53 + 0x1p-70 // just above half an ulp of 1: rounds up to a full ulp after 1
	withUnit := append([]float64{1}, slices.Repeat([]float64{tiny}, n)...)
	without := withUnit[1:]
	floatSum := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s
	}
	if d := floatSum(withUnit) - floatSum(without); !(d > 1) {
		t.Fatalf("test setup: float64 neighbour difference %v does not exceed L·M = 1", d)
	}
	spec := Spec{Kind: KindSum, Noise: noise.Laplace, Epsilon: 1, Lo: 0, Hi: 1, MaxContributions: 1}
	c := mustCalibrate(t, spec)
	z, _ := spec.Quantizer()
	unitSum := func(xs []float64) int64 {
		var s int64
		for _, x := range xs {
			k, err := z.Units(x)
			if err != nil {
				t.Fatal(err)
			}
			s += k
		}
		return s
	}
	k1, k0 := unitSum(withUnit), unitSum(without)
	if d := k1 - k0; d < 0 || d > z.MaxUnits() {
		t.Errorf("integer neighbour difference %d units, want within [0, %d]", d, z.MaxUnits())
	}
	a, err := Release(c, Stats{SumUnits: k1}, zeroNoise{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Release(c, Stats{SumUnits: k0}, zeroNoise{})
	if err != nil {
		t.Fatal(err)
	}
	if d := *a.Value - *b.Value; d > c.Components[0].Sensitivity {
		t.Errorf("released neighbours differ by %v > sensitivity %v", d, c.Components[0].Sensitivity)
	}
}

// recordingNoise wraps a Noise and records every draw.
type recordingNoise struct {
	n     noise.Sampler
	draws []int64
}

func (r *recordingNoise) DiscreteLaplace(t float64) (int64, error) {
	z, err := r.n.DiscreteLaplace(t)
	r.draws = append(r.draws, z)
	return z, err
}

func (r *recordingNoise) DiscreteGaussian(s float64) (int64, error) {
	z, err := r.n.DiscreteGaussian(s)
	r.draws = append(r.draws, z)
	return z, err
}

// TestSumOutputsOnGrid is test (d): every released sum is G·(K_G + Z) for
// the exact regridded K_G and the drawn Z, so an integer multiple of the
// grid G, for G = q and G > q, both noises, and statistics beyond 2^53
// (where the float64 result is a rounding of the exact noisy integer, still
// on the grid).
func TestSumOutputsOnGrid(t *testing.T) {
	for _, nc := range neighbourSpecs() {
		if nc.spec.Kind != KindSum {
			continue
		}
		t.Run(nc.name, func(t *testing.T) {
			c := mustCalibrate(t, nc.spec)
			comp := c.Components[0]
			g, q := comp.Granularity, comp.Quantum
			j := uint(math.Round(math.Log2(g / q)))
			rec := &recordingNoise{n: noise.New(noise.SeededSource(21))}
			for _, k := range []int64{0, 1, -1, 12345, -987654321, 1<<53 + 7, -(1<<60 + 3), math.MaxInt64, math.MinInt64} {
				for range 20 {
					rec.draws = rec.draws[:0]
					res, err := Release(c, Stats{SumUnits: k}, rec)
					if err != nil {
						t.Fatal(err)
					}
					v := *res.Value
					if steps := v / g; steps != math.Trunc(steps) {
						t.Fatalf("K = %d: value %v is not a multiple of the grid %v", k, v, g)
					}
					// The exact noisy integer, rounded to float64 once.
					kg := new(big.Int).Rsh(new(big.Int).Add(big.NewInt(k), new(big.Int).Rsh(new(big.Int).Lsh(big.NewInt(1), j), 1)), j)
					if j == 0 {
						kg = big.NewInt(k)
					}
					want, _ := new(big.Float).SetInt(kg.Add(kg, big.NewInt(rec.draws[0]))).Float64()
					if v != want*g {
						t.Fatalf("K = %d, Z = %d: value %v, want G·(K_G + Z) = %v", k, rec.draws[0], v, want*g)
					}
				}
			}
		})
	}
}
