package accumulate

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// refQuantum is the quantum of a sum or mean release, computed
// independently of aggregate.Quantizer: the smallest power of two P with
// P ≥ X = max(|fl(lo − c)|, |fl(hi − c)|), found by doubling and halving,
// times 2^-30 (at least 2^-1074).
func refQuantum(r relSpec) float64 {
	c := refCenter(r)
	x := math.Max(math.Abs(r.Lo-c), math.Abs(r.Hi-c))
	p := 1.0
	for p < x && !math.IsInf(p, 1) {
		p *= 2
	}
	if math.IsInf(p, 1) {
		return 0x1p994 // P = 2^1024 is beyond float64; P·2^-30 is not
	}
	for p/2 >= x {
		p /= 2
	}
	// p·2^-30, without underflowing below the smallest float64.
	for range 30 {
		if p/2 == 0 || p == math.SmallestNonzeroFloat64 {
			break
		}
		p /= 2
	}
	return p
}

// refCenter is the value a release's values are centered on: 0 for a sum,
// aggregate.Midpoint for a mean (its documented center).
func refCenter(r relSpec) float64 {
	if r.Kind == "mean" {
		return aggregate.Midpoint(r.Lo, r.Hi)
	}
	return 0
}

// refUnits is the fixed-point units of value v of a sum or mean release,
// computed in exact rational arithmetic: ⌊fl(clamp(v) − c)/q + 1/2⌋.
func refUnits(r relSpec, v float64) int64 {
	x := new(big.Rat).SetFloat64(math.Min(math.Max(v, r.Lo), r.Hi) - refCenter(r))
	x.Quo(x, new(big.Rat).SetFloat64(refQuantum(r)))
	x.Add(x, big.NewRat(1, 2))
	// Euclidean division by the positive denominator is the floor.
	return new(big.Int).Div(x.Num(), x.Denom()).Int64()
}

// TestRefQuantum pins the reference against hand-worked quanta, so that
// agreeing with it means something.
func TestRefQuantum(t *testing.T) {
	for _, tc := range []struct {
		r    relSpec
		want float64
	}{
		{relSpec{Kind: "sum", Lo: 0, Hi: 10}, 0x1p-26},       // 10 ≤ 2^4
		{relSpec{Kind: "sum", Lo: -16, Hi: 1}, 0x1p-26},      // 16 = 2^4 exactly
		{relSpec{Kind: "mean", Lo: 0, Hi: 10}, 0x1p-27},      // centered in [−5, 5], 5 ≤ 2^3
		{relSpec{Kind: "sum", Lo: 0, Hi: 0.1}, 0x1p-33},      // 0.1 ≤ 2^-3
		{relSpec{Kind: "mean", Lo: 1000, Hi: 1001}, 0x1p-31}, // centered in [−0.5, 0.5]
		{relSpec{Kind: "sum", Lo: 0, Hi: 5e-324}, 5e-324},    // 2^-1074, not finer
		{relSpec{Kind: "sum", Lo: 0, Hi: 1.6e308}, 0x1p994},  // 1.6e308 > 2^1023
	} {
		if got := refQuantum(tc.r); got != tc.want {
			t.Errorf("refQuantum(%+v) = %v, want %v", tc.r, got, tc.want)
		}
		z, err := aggregate.NewQuantizer(aggregate.Kind(tc.r.Kind), tc.r.Lo, tc.r.Hi)
		if err != nil || z.Quantum() != tc.want {
			t.Errorf("mechanism quantum of %+v = %v (%v), want %v", tc.r, z.Quantum(), err, tc.want)
		}
	}
}

// exactStream has one sum and one mean release, each its own unit per
// event (L is large), so that every event is kept whatever the order.
func exactStream(lo, hi float64, n int) *Stream {
	return build(&Stream{Name: "x", Size: 1000, Grace: 0, IdleTimeout: time.Second, MaxEvents: n},
		relSpec{Name: "total", Kind: "sum", Field: "v", Lo: lo, Hi: hi},
		relSpec{Name: "avg", Kind: "mean", Field: "v", Lo: lo, Hi: hi},
	)
}

// windowPartial runs values, in the given order, through a fresh partition
// as one unit's events in window 0 and returns that window's partial.
func windowPartial(t *testing.T, s *Stream, values []float64) schema.Partial {
	t.Helper()
	p := NewPartition(s, 0, 1, NoWatermark)
	for i, v := range values {
		vals := make([]float64, len(s.Releases))
		for j := range vals {
			vals[j] = v
		}
		if out, c := mustAdd(t, p, Event{Offset: int64(i), Unit: "u", Time: 10, Values: vals}); out != Accepted || len(c) != 0 {
			t.Fatalf("event %d: outcome %v, %d partials", i, out, len(c))
		}
	}
	closed := p.Idle(time.Time{}, time.Second)
	if len(closed) != 1 || closed[0].WindowStart != 0 {
		t.Fatalf("closed windows %v, want [0]", starts(closed))
	}
	return closed[0]
}

// TestPartialSumsIndependentOfOrder is test (a) of the fixed-point design:
// whatever the order of the events, a window's SumUnits is exactly
// Σ ⌊clamp(v)/q + 1/2⌋ and CenteredSumUnits the centered analogue
// (refUnits). The values include both bounds, values outside them, exact
// ties between two units, and magnitudes far apart.
func TestPartialSumsIndependentOfOrder(t *testing.T) {
	for _, b := range []struct{ lo, hi float64 }{{0, 1}, {-3.3, 12.3}, {-1e12, 1e15}, {1e9, 1e9 + 3}} {
		s := exactStream(b.lo, b.hi, 1000)
		specs := specsOf(s)
		q := refQuantum(specs[0])
		qc := refQuantum(specs[1])
		mid := refCenter(specs[1])
		r := rand.New(rand.NewPCG(1, uint64(b.hi)))
		values := []float64{b.lo, b.hi, b.lo - 1, b.hi + 1, 7 * q / 2, -5 * q / 2, mid + 3*qc/2, mid - qc/2, math.Nextafter(b.hi, 0)}
		for range 200 {
			values = append(values, b.lo+(b.hi-b.lo)*r.Float64())
		}
		var wantSum, wantCentered int64
		for _, v := range values {
			wantSum += refUnits(specs[0], v)
			wantCentered += refUnits(specs[1], v)
		}
		var first schema.Partial
		for rep := range 20 {
			order := slices.Clone(values)
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			p := windowPartial(t, s, order)
			if got := p.Stats[0].SumUnits; got != wantSum {
				t.Fatalf("[%v, %v] order %d: SumUnits %d, want %d", b.lo, b.hi, rep, got, wantSum)
			}
			if got := p.Stats[1].CenteredSumUnits; got != wantCentered {
				t.Fatalf("[%v, %v] order %d: CenteredSumUnits %d, want %d", b.lo, b.hi, rep, got, wantCentered)
			}
			if rep == 0 {
				first = p
				continue
			}
			// Offsets are positional; everything else must be equal.
			p.FirstOffset, p.LastOffset = first.FirstOffset, first.LastOffset
			if d := diffPartial(p, first); d != "" {
				t.Fatalf("[%v, %v] order %d differs from order 0: %s", b.lo, b.hi, rep, d)
			}
		}
	}
}

// TestFloatOrderDependenceIsGone is regression test (c): these values give
// float64 sums that depend on the order of summation (checked first, so
// the test shows the problem it guards against), but identical partials in
// every order.
func TestFloatOrderDependenceIsGone(t *testing.T) {
	values := []float64{0.1, 0.2, 0.3, 0.7, 0.01, 0.9, 1e-9, 0.33, 0.6}
	s := exactStream(0, 1, len(values))
	r := rand.New(rand.NewPCG(7, 7))
	floatSums := map[float64]bool{}
	var first schema.Partial
	for rep := range 50 {
		order := slices.Clone(values)
		if rep > 0 {
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		// What the float64 accumulator did: sum in offset order.
		f := 0.0
		for _, v := range order {
			f += v
		}
		floatSums[f] = true
		p := windowPartial(t, s, order)
		if rep == 0 {
			first = p
			continue
		}
		p.FirstOffset, p.LastOffset = first.FirstOffset, first.LastOffset
		if d := diffPartial(p, first); d != "" {
			t.Fatalf("order %d: partial differs from the first order's: %s", rep, d)
		}
	}
	if len(floatSums) < 2 {
		t.Fatalf("test setup: the float64 sums are the same in every order (%v); the values do not show the problem", floatSums)
	}
}

// TestRefusedEventChangesNothing: an event that a release's statistic
// refuses (kind.Accumulator.Check: a sum that would overflow int64, a NaN
// value, which the extractor never produces) is an error, and is added to
// no release, so the partition and its partials are exactly those of a run
// without it. A spy release after testStream's refuses a marker value
// that every kind accepts; the kinds refuse NaN themselves (each kind's
// tests cover its overflow checks). An event refused as the first of its
// window does not open the window.
func TestRefusedEventChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value float64
	}{
		{"the spy refuses", 7.5},
		{"NaN value", math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(withBad bool) (*Partition, *spyLog, []schema.Partial) {
				s := testStream()
				log := &spyLog{}
				s.Releases = append(s.Releases, Release{Name: "spy", Stat: spyStat{at: 1, refuse: 7.5, log: log}})
				p := NewPartition(s, 0, 1, NoWatermark)
				mustAdd(t, p, ev(0, "a", 100, 5))
				if withBad {
					open := p.OpenWindows()
					wm, next := p.wm, p.nextOffset
					for _, bad := range []Event{ev(1, "b", 200, tc.value), ev(1, "b", 1200, tc.value)} {
						_, closed, err := p.Add(bad)
						if err == nil {
							t.Fatal("Add succeeded, want an error")
						}
						if closed != nil || p.wm != wm || p.nextOffset != next || p.OpenWindows() != open {
							t.Errorf("a failed Add changed the partition: %v", err)
						}
					}
				}
				mustAdd(t, p, ev(2, "a", 300, 3))
				return p, log, p.Idle(time.Time{}, time.Hour)
			}
			_, goodLog, want := run(false)
			_, badLog, got := run(true)
			if goodLog.adds != badLog.adds {
				t.Errorf("the spy added %d events with the refused one, %d without", badLog.adds, goodLog.adds)
			}
			checkAgainst(t, tc.name, got, want)
		})
	}
}

// zeroNoise is a noise.Sampler that always draws 0, so Release returns
// the regridded exact statistic G·K_G.
type zeroNoise struct{}

func (zeroNoise) DiscreteLaplace(float64) (int64, error)  { return 0, nil }
func (zeroNoise) DiscreteGaussian(float64) (int64, error) { return 0, nil }

// TestNeighbourSensitivityEndToEnd is test (b) through the accumulate
// stage: for a window D and its neighbour D' with one more unit, whose L
// events take adversarial values (bounds, one ulp inside, beyond them,
// exact ties between units, the midpoint) at adversarial offsets, the
// released sums with zero noise differ by at most the calibrated
// Sensitivity, and the worst case found reaches it (the sensitivity is
// exact, not merely a bound). Both a grid equal to the quantum and a
// coarser one are covered.
func TestNeighbourSensitivityEndToEnd(t *testing.T) {
	const L = 2
	for _, tc := range []struct {
		name    string
		kind    string
		lo, hi  float64
		epsilon float64
	}{
		{"sum, grid = quantum", "sum", -1, 2.5, 1},
		{"sum, grid 2^k quanta", "sum", -1, 2.5, 1.0 / 4096},
		{"mean, grid = quantum", "mean", 0.1, 0.7, 1},
		{"mean, grid 2^k quanta", "mean", -3, 10, 1.0 / 8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := aggregate.Spec{Kind: aggregate.Kind(tc.kind), Noise: noise.Laplace, Epsilon: tc.epsilon,
				Lo: tc.lo, Hi: tc.hi, MaxContributions: L}
			cal, err := aggregate.Calibrate(spec)
			if err != nil {
				t.Fatal(err)
			}
			comp := cal.Components[len(cal.Components)-1]
			coarse := comp.Granularity > comp.Quantum
			if coarse != (tc.epsilon < 1) {
				t.Fatalf("test setup: grid %v, quantum %v", comp.Granularity, comp.Quantum)
			}
			s := build(&Stream{Name: "x", Size: 1000, Grace: 0, IdleTimeout: time.Second, MaxEvents: L},
				relSpec{Name: "r", Kind: tc.kind, Field: "v", Lo: tc.lo, Hi: tc.hi})
			q, mid := comp.Quantum, refCenter(specsOf(s)[0])
			adversarial := []float64{tc.lo, tc.hi, math.Nextafter(tc.lo, tc.hi), math.Nextafter(tc.hi, tc.lo),
				tc.lo - 1, tc.hi + 1, mid, mid + q/2, mid - q/2, mid + 3*q/2, tc.hi - q/2, tc.lo + q/2}
			// regrid is K_G = ⌊K·q/G + 1/2⌋ in exact rational arithmetic,
			// the integer Release adds noise to.
			regrid := func(k int64) int64 {
				x := new(big.Rat).Mul(new(big.Rat).SetInt64(k), new(big.Rat).SetFloat64(q/comp.Granularity))
				x.Add(x, big.NewRat(1, 2))
				return new(big.Int).Div(x.Num(), x.Denom()).Int64()
			}
			// released returns the window's exact integer statistic
			// regridded, on the value scale; for a sum it checks that
			// Release with zero noise publishes exactly that.
			released := func(values []float64, units []string) float64 {
				p := NewPartition(s, 0, 1, NoWatermark)
				for i, v := range values {
					mustAdd(t, p, Event{Offset: int64(i), Unit: units[i], Time: 10, Values: []float64{v}})
				}
				closed := p.Idle(time.Time{}, time.Second)
				rs := closed[0].Stats[0]
				k := rs.SumUnits
				if tc.kind == "mean" {
					k = rs.CenteredSumUnits
				}
				v := comp.Granularity * float64(regrid(k))
				if tc.kind == "sum" {
					res, err := aggregate.Release(cal, aggregate.Stats{Count: rs.Count, SumUnits: rs.SumUnits}, zeroNoise{})
					if err != nil {
						t.Fatal(err)
					}
					if *res.Value != v {
						t.Fatalf("Release with zero noise published %v, want G·K_G = %v", *res.Value, v)
					}
				}
				return v
			}
			r := rand.New(rand.NewPCG(3, 3))
			worst := 0.0
			for base := range 64 {
				// D: a few other units with random values, and one whose
				// value steps through 64 quanta, so that the base sum takes
				// every residue modulo a grid of up to 64 quanta.
				var values []float64
				var units []string
				for i := range 1 + base%5 {
					values = append(values, tc.lo+(tc.hi-tc.lo)*r.Float64())
					units = append(units, string(rune('a'+i)))
				}
				values = append(values, mid+float64(base)*q)
				units = append(units, "z")
				for _, a := range adversarial {
					for _, b := range adversarial {
						at := r.IntN(len(values) + 1)
						v2 := slices.Insert(slices.Clone(values), at, a, b)
						u2 := slices.Insert(slices.Clone(units), at, "new", "new")
						d := math.Abs(released(v2, u2) - released(values, units))
						worst = math.Max(worst, d)
						if d > comp.Sensitivity {
							t.Fatalf("neighbours differ by %v > sensitivity %v (unit values %v, %v)", d, comp.Sensitivity, a, b)
						}
					}
				}
			}
			if r := comp.Granularity / q; r > 64 {
				t.Fatalf("test setup: grid of %v quanta, the base sums do not cover its residues", r)
			}
			if worst != comp.Sensitivity {
				t.Errorf("worst neighbour difference %v, want the sensitivity %v to be reached", worst, comp.Sensitivity)
			}
		})
	}
}
