package accumulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	mdensity "github.com/dpstream/dpstream/mechanism/density"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// contribCase is one stream of the unit-contribution tests. Event.Values
// has nvals entries, uniform in [−3, 13] (the bounds are mostly [0, 10],
// so values are often clamped), except the indices in cats, which hold a
// category index in [0, cats[i]).
type contribCase struct {
	name  string
	s     *Stream
	nvals int
	cats  map[int]int
}

// contribStream is a stream with 1 s windows and a grace long enough that
// no event of the tests is late: windows close only when the test idles
// the partition.
func contribStream(l int, rels ...relSpec) *Stream {
	return build(&Stream{Name: "c", Size: 1000, Grace: 10_000, IdleTimeout: time.Second, MaxEvents: l, UnitContributions: true}, rels...)
}

var (
	regScaling2 = mregression.Scaling{FeatureBounds: [][2]float64{{0, 10}, {-1, 1}}, Intercept: true, TargetBounds: [2]float64{0, 10}}
	regScaling3 = mregression.Scaling{FeatureBounds: [][2]float64{{0, 10}, {2, 8}, {-3, 13}}, TargetBounds: [2]float64{-2, 12}}
)

// contribCases has a stream per kind (with the variants that change the
// bookkeeping: caps below, at and above L, several fields, regression
// rows stored or folded) and one with every kind at once.
func contribCases() []contribCase {
	all := contribStream(4,
		relSpec{Name: "n", Kind: "count"},
		relSpec{Name: "total", Kind: "sum", Field: "v", Lo: -3, Hi: 12},
		relSpec{Name: "avg", Kind: "mean", Field: "v", Lo: 0, Hi: 10},
		relSpec{Name: "hist", Kind: "histogram", Field: "v", Lo: 0, Hi: 10, Bins: 5, BinCap: 2},
		relSpec{Name: "mode", Kind: "randomized_response", Field: "m", Categories: 3, BinCap: 1},
		relSpec{Name: "dens", Kind: "density", Field: "v", Lo: 0, Hi: 10, Terms: 5},
		relSpec{Name: "fit", Kind: "regression", Field: "y", Regression: &regFields{Scaling: regScaling2, Features: []int{7, 8}}},
	)
	return []contribCase{
		{"count", contribStream(3, relSpec{Name: "n", Kind: "count"}), 1, nil},
		{"sum", contribStream(4, relSpec{Name: "total", Kind: "sum", Field: "v", Lo: -3, Hi: 12}), 1, nil},
		{"sum of a narrow range", contribStream(2, relSpec{Name: "total", Kind: "sum", Field: "v", Lo: 0.25, Hi: 0.75}), 1, nil},
		{"mean", contribStream(3, relSpec{Name: "avg", Kind: "mean", Field: "v", Lo: 0, Hi: 10}), 1, nil},
		{"histogram, cap below L", contribStream(5, relSpec{Name: "h", Kind: "histogram", Field: "v", Lo: 0, Hi: 10, Bins: 5, BinCap: 2}), 1, nil},
		{"histogram, no cap", contribStream(4, relSpec{Name: "h", Kind: "histogram", Field: "v", Lo: 0, Hi: 10, Bins: 5}), 1, nil},
		{"histogram, cap at L", contribStream(3, relSpec{Name: "h", Kind: "histogram", Field: "v", Lo: 0, Hi: 10, Bins: 5, BinCap: 3}), 1, nil},
		{"histogram over two fields", contribStream(4, relSpec{Name: "h", Kind: "histogram", Field: "v", Lo: 0, Hi: 8, Bins: 2, BinCap: 2,
			More: []moreField{{Axis: aggregate.Axis{Lo: 0, Hi: 4, Bins: 4}, Value: 1}}}), 2, nil},
		{"randomized_response, cap 1", contribStream(4, relSpec{Name: "m", Kind: "randomized_response", Field: "m", Categories: 4, BinCap: 1}), 1, map[int]int{0: 4}},
		{"randomized_response, no cap", contribStream(3, relSpec{Name: "m", Kind: "randomized_response", Field: "m", Categories: 2}), 1, map[int]int{0: 2}},
		{"density", contribStream(3, relSpec{Name: "d", Kind: "density", Field: "v", Lo: 0, Hi: 10, Terms: 6}), 1, nil},
		{"regression with intercept", contribStream(3, relSpec{Name: "r", Kind: "regression", Field: "y",
			Regression: &regFields{Scaling: regScaling2, Features: []int{1, 2}}}), 3, nil},
		{"regression, L = 1", contribStream(1, relSpec{Name: "r", Kind: "regression", Field: "y",
			Regression: &regFields{Scaling: regScaling3, Features: []int{1, 2, 3}}}), 4, nil},
		{"regression, many rows", contribStream(12, relSpec{Name: "r", Kind: "regression", Field: "y",
			Regression: &regFields{Scaling: regScaling3, Features: []int{3, 2, 1}}}), 4, nil},
		{"every kind", all, 9, map[int]int{4: 3}},
	}
}

// contribEvents returns n events of c in offset order over windows 0, 1000
// and 2000, from units u00..u23 with a skew: low-numbered units have many
// events (beyond L), high-numbered ones often a single one.
func contribEvents(seed uint64, n int, c contribCase) []Event {
	r := rand.New(rand.NewPCG(seed, 0xc0de))
	evs := make([]Event, n)
	for i := range evs {
		vals := make([]float64, c.nvals)
		for j := range vals {
			if k, ok := c.cats[j]; ok {
				vals[j] = float64(r.IntN(k))
			} else {
				vals[j] = -3 + 16*r.Float64()
			}
		}
		evs[i] = Event{Offset: int64(i), Unit: fmt.Sprintf("u%02d", r.IntN(r.IntN(24)+1)), Time: r.Int64N(3000), Values: vals}
	}
	return evs
}

// runContrib adds evs to a fresh partition of s and idles it until every
// window has closed; it returns the partials of the windows with events.
func runContrib(t *testing.T, s *Stream, evs []Event) []schema.Partial {
	t.Helper()
	p := NewPartition(s, 0, 1, NoWatermark)
	var out []schema.Partial
	for _, e := range evs {
		_, c := mustAdd(t, p, e)
		out = append(out, c...)
	}
	out = append(out, p.Idle(time.Time{}, time.Duration(s.Grace+3*s.Size)*time.Millisecond)...)
	if p.OpenWindows() != 0 {
		t.Fatalf("%d windows still open", p.OpenWindows())
	}
	return slices.DeleteFunc(out, func(p schema.Partial) bool { return p.Events == 0 })
}

// refUnit is one unit's kept events in a window and its expected norms.
type refUnit struct {
	kept  int
	norms [][]float64
}

// refStats counts what the reference model saw, so that a test can insist
// that its events exercised every path.
type refStats struct {
	dropped, capped, oneRow, manyRows int
}

// refNorms is an independent statement of UnitNorms: for every window and
// unit, the first L events by offset are kept; then, per release, from
// those events alone: k; |Σ refUnits(v)|·refQuantum (exact rational
// quantization, exact_test.go); the cells by refBin, with at most BinCap
// events of the unit counted per cell; the density sums from the
// quantizer's per-event units; and G, b and the single row from the
// scaled rows, as plain d×d sums in float64 (exact: the scaled values are
// multiples of 2^-16 in [−1, 1], so products and their short sums are
// exact).
func refNorms(t *testing.T, s *Stream, evs []Event) (map[int64]map[string]refUnit, refStats) {
	t.Helper()
	var rs refStats
	kept := map[int64]map[string][]Event{}
	for _, e := range evs {
		w := s.WindowStart(e.Time)
		if kept[w] == nil {
			kept[w] = map[string][]Event{}
		}
		if len(kept[w][e.Unit]) == s.MaxEvents {
			rs.dropped++
			continue
		}
		kept[w][e.Unit] = append(kept[w][e.Unit], e)
	}
	out := map[int64]map[string]refUnit{}
	for w, units := range kept {
		out[w] = map[string]refUnit{}
		for u, es := range units {
			k := float64(len(es))
			norms := make([][]float64, len(s.Releases))
			for i, r := range specsOf(s) {
				switch r.Kind {
				case "count":
					norms[i] = []float64{k}
				case "sum", "mean":
					var units int64
					for _, e := range es {
						units += refUnits(r, e.Values[i])
					}
					v := math.Abs(float64(units) * refQuantum(r))
					if r.Kind == "sum" {
						norms[i] = []float64{v}
					} else {
						norms[i] = []float64{k, v}
					}
				case "histogram", "randomized_response":
					cells := map[int]int{}
					for _, e := range es {
						var cell int
						if r.Kind == "randomized_response" {
							cell = int(e.Values[i])
						} else {
							cell = refBin(e.Values[i], r.Lo, r.Hi, r.Bins)
							for _, f := range r.More {
								cell = cell*f.Axis.Bins + refBin(e.Values[f.Value], f.Axis.Lo, f.Axis.Hi, f.Axis.Bins)
							}
						}
						if r.BinCap > 0 && cells[cell] == r.BinCap {
							rs.capped++
							continue
						}
						cells[cell]++
					}
					var l1, sq int
					for _, n := range cells {
						l1 += n
						sq += n * n
					}
					norms[i] = []float64{float64(l1), math.Sqrt(float64(sq))}
				case "density":
					z, err := mdensity.NewQuantizer(r.Lo, r.Hi, r.Terms)
					if err != nil {
						t.Fatal(err)
					}
					sums := make([]int64, r.Terms)
					dst := make([]int64, r.Terms)
					for _, e := range es {
						if err := z.Units(e.Values[i], dst); err != nil {
							t.Fatal(err)
						}
						for j := range dst {
							sums[j] += dst[j]
						}
					}
					var l1, l2 float64
					for _, v := range sums {
						l1 += math.Abs(float64(v) * z.Quantum())
						l2 += float64(v) * z.Quantum() * float64(v) * z.Quantum()
					}
					norms[i] = []float64{k, l1, math.Sqrt(l2)}
				case "regression":
					sc := r.Regression.Scaling
					d := sc.Dim()
					g := make([][]float64, d)
					for a := range g {
						g[a] = make([]float64, d)
					}
					b := make([]float64, d)
					var row []float64
					for _, e := range es {
						x := make([]float64, len(r.Regression.Features))
						for j, f := range r.Regression.Features {
							x[j] = e.Values[f]
						}
						xu, yu, _, err := sc.Row(x, e.Values[i])
						if err != nil {
							t.Fatal(err)
						}
						xs := make([]float64, d)
						for j := range xu {
							xs[j] = float64(xu[j]) * mregression.Quantum
						}
						y := float64(yu) * mregression.Quantum
						for a := range d {
							for c := range d {
								g[a][c] += xs[a] * xs[c]
							}
							b[a] += xs[a] * y
						}
						row = append(xs, y)
					}
					var upper, frob, bb float64
					for a := range d {
						for c := range d {
							frob += g[a][c] * g[a][c]
							if c >= a {
								upper += g[a][c] * g[a][c]
							}
						}
						bb += b[a] * b[a]
					}
					norms[i] = []float64{math.Sqrt(upper), math.Sqrt(bb), math.Sqrt(frob)}
					if len(es) == 1 {
						norms[i] = append(norms[i], row...)
						rs.oneRow++
					} else {
						rs.manyRows++
					}
				}
			}
			out[w][u] = refUnit{kept: len(es), norms: norms}
		}
	}
	return out, rs
}

// normsClose compares UnitNorms entry by entry: exactly for the kinds whose
// entries are integers, quantized sums or square roots of integers
// (computed the same way here), and to a relative 1e-12 for density and
// regression norms, which add squares in another order than the reference
// (a handful of float64 additions: relative error below 1e-15).
func normsClose(kind string, got, want []float64) bool {
	if len(got) != len(want) {
		return false
	}
	for j := range want {
		g, w := got[j], want[j]
		tol := 0.0
		if (kind == "density" || kind == "regression") && j < 3 {
			tol = 1e-12 * math.Max(math.Abs(g), math.Abs(w))
		}
		if !(math.Abs(g-w) <= tol) {
			return false
		}
	}
	return true
}

// TestUnitNormsAgainstReference checks every unit's UnitNorms in every
// window, for every kind, against refNorms, and that units are sorted and
// the regression row is there exactly when the unit has one row.
func TestUnitNormsAgainstReference(t *testing.T) {
	for _, c := range contribCases() {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 3; seed++ {
				evs := contribEvents(seed, 400, c)
				want, rs := refNorms(t, c.s, evs)
				got := runContrib(t, c.s, evs)
				if len(got) != len(want) {
					t.Fatalf("seed %d: %d windows with events, want %d", seed, len(got), len(want))
				}
				for _, p := range got {
					w := want[p.WindowStart]
					if p.UnitsTruncated || len(p.UnitContributions) != len(w) || p.Units != int64(len(w)) {
						t.Fatalf("seed %d window %d: truncated %v, %d contributions (%d units), want %d",
							seed, p.WindowStart, p.UnitsTruncated, len(p.UnitContributions), p.Units, len(w))
					}
					for k, uc := range p.UnitContributions {
						if k > 0 && p.UnitContributions[k-1].Unit >= uc.Unit {
							t.Errorf("seed %d window %d: unit %q after %q: not sorted", seed, p.WindowStart, uc.Unit, p.UnitContributions[k-1].Unit)
						}
						ru, ok := w[uc.Unit]
						wn := ru.norms
						if !ok || len(uc.Norms) != len(c.s.Releases) {
							t.Fatalf("seed %d window %d: unit %q: %d norms, want %d (known unit: %v)", seed, p.WindowStart, uc.Unit, len(uc.Norms), len(c.s.Releases), ok)
						}
						for i, r := range specsOf(c.s) {
							if !normsClose(r.Kind, uc.Norms[i], wn[i]) {
								t.Errorf("seed %d window %d unit %s release %s: norms %v, want %v", seed, p.WindowStart, uc.Unit, r.Name, uc.Norms[i], wn[i])
							}
							if r.Kind == "regression" {
								if _, has := UnitNorms(uc.Norms[i]).Row(c.s.Releases[i].Stat.Norms()); has != (ru.kept == 1) {
									t.Errorf("seed %d window %d unit %s: row present %v with %d kept rows", seed, p.WindowStart, uc.Unit, has, ru.kept)
								}
							}
						}
					}
				}
				// The events must exercise the paths the case is about.
				if rs.dropped == 0 {
					t.Errorf("seed %d: no event dropped by L", seed)
				}
				for _, r := range specsOf(c.s) {
					if r.BinCap > 0 && r.BinCap < c.s.MaxEvents && rs.capped == 0 {
						t.Errorf("seed %d: the cap of %s removed nothing", seed, r.Name)
					}
					if r.Kind == "regression" && (rs.oneRow == 0 || (c.s.MaxEvents > 1 && rs.manyRows == 0)) {
						t.Errorf("seed %d: %d units with one row, %d with several", seed, rs.oneRow, rs.manyRows)
					}
				}
			}
		})
	}
}

// TestDensityNormsNearCosines ties the density entries to their meaning
// rather than to the quantizer: s_j is Σ √2·cos(πj·u) over the unit's kept
// values to within q/2 per value plus the cosine's error (below 1e-12), so
// ‖s‖₁ and ‖s‖₂ computed from the cosines lie within m·k·(q/2 + 1e-12)
// and √m·k·(q/2 + 1e-12) of the reported ones.
func TestDensityNormsNearCosines(t *testing.T) {
	const m = 7
	s := contribStream(3, relSpec{Name: "d", Kind: "density", Field: "v", Lo: -3, Hi: 13, Terms: m})
	evs := contribEvents(9, 300, contribCase{nvals: 1})
	byUnit := map[int64]map[string][]float64{}
	for _, e := range evs {
		w := s.WindowStart(e.Time)
		if byUnit[w] == nil {
			byUnit[w] = map[string][]float64{}
		}
		if len(byUnit[w][e.Unit]) < s.MaxEvents {
			byUnit[w][e.Unit] = append(byUnit[w][e.Unit], e.Values[0])
		}
	}
	checked := 0
	for _, p := range runContrib(t, s, evs) {
		for _, uc := range p.UnitContributions {
			vs := byUnit[p.WindowStart][uc.Unit]
			var l1, l2 float64
			for j := 1; j <= m; j++ {
				var sj float64
				for _, v := range vs {
					sj += math.Sqrt2 * math.Cos(math.Pi*float64(j)*(v+3)/16)
				}
				l1 += math.Abs(sj)
				l2 += sj * sj
			}
			k := float64(len(vs))
			e := k * (0x1p-31 + 1e-12)
			n := uc.Norms[0]
			// Density norms are [k, ‖s‖₁, ‖s‖₂] (kind/density).
			if n[0] != k || math.Abs(n[1]-l1) > m*e || math.Abs(n[2]-math.Sqrt(l2)) > math.Sqrt(m)*e {
				t.Errorf("window %d unit %s: %v, want about [%v %v %v]", p.WindowStart, uc.Unit, n, k, l1, math.Sqrt(l2))
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d units checked", checked)
	}
}

// sizeEstimate is the brief's size rule, restated independently: the
// array of units (10 bytes), and per unit its name (length + 10), its
// array of norms (10) and per release an array (10) of doubles (8 each).
func sizeEstimate(us []schema.UnitContribution) int {
	n := 10
	for _, u := range us {
		n += len(u.Unit) + 10 + 10
		for _, v := range u.Norms {
			n += 10 + 8*len(v)
		}
	}
	return n
}

// manyUnits returns n events, unit i with name i zero-padded to nameLen
// digits and rows events (all in window 0), regression values at 1, 2.
func manyUnits(n, nameLen, rows int) []Event {
	var evs []Event
	for i := range n {
		for range rows {
			evs = append(evs, Event{Offset: int64(len(evs)), Unit: fmt.Sprintf("%0*d", nameLen, i), Time: 10, Values: []float64{1, 2}})
		}
	}
	return evs
}

// TestUnitContributionsTruncation: a window whose contributions fit under
// MaxUnitContributionBytes by the size rule carries them all; one unit
// more, or a regression row per unit more, and it carries none and says
// so. The estimate bounds the actual Avro encoding from above.
func TestUnitContributionsTruncation(t *testing.T) {
	count := contribStream(1, relSpec{Name: "n", Kind: "count"})
	reg := contribStream(2, relSpec{Name: "r", Kind: "regression", Field: "y", Regression: &regFields{
		Scaling:  mregression.Scaling{FeatureBounds: [][2]float64{{0, 10}}, TargetBounds: [2]float64{0, 10}},
		Features: []int{1}}})
	// Count: 90 + 10 + 10 + (10 + 8) = 128 bytes per unit: 4687 units
	// take 10 + 4687·128 = 599,946 bytes, 4688 take 600,074.
	// Regression (d = 1): 46 + 10 + 10 + (10 + 3·8) = 100 bytes per unit
	// with several rows, 116 with one (x, y added): 5999 units take
	// 599,910 bytes without rows, 695,894 with; 5172 units with one row
	// take 599,962 bytes, 5173 take 600,078 (decided at close: without
	// the rows they are far below the limit).
	tests := []struct {
		name           string
		s              *Stream
		units, nameLen int
		rows           int
		truncated      bool
	}{
		{"count, at the limit", count, 4687, 90, 1, false},
		{"count, one unit more", count, 4688, 90, 1, true},
		{"count, far beyond", count, 20_000, 90, 1, true},
		{"regression, two rows per unit", reg, 5999, 46, 2, false},
		{"regression, one row per unit adds the rows", reg, 5999, 46, 1, true},
		{"regression, one row per unit, at the limit", reg, 5172, 46, 1, false},
		{"regression, one row per unit, one unit more", reg, 5173, 46, 1, true},
		{"small window", count, 3, 2, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runContrib(t, tc.s, manyUnits(tc.units, tc.nameLen, tc.rows))
			if len(got) != 1 {
				t.Fatalf("%d partials with events, want 1", len(got))
			}
			p := got[0]
			if p.Units != int64(tc.units) {
				t.Fatalf("%d units, want %d", p.Units, tc.units)
			}
			if p.UnitsTruncated != tc.truncated {
				t.Fatalf("UnitsTruncated = %v, want %v", p.UnitsTruncated, tc.truncated)
			}
			if tc.truncated {
				if p.UnitContributions != nil {
					t.Fatalf("truncated partial carries %d contributions", len(p.UnitContributions))
				}
				return
			}
			if len(p.UnitContributions) != tc.units {
				t.Fatalf("%d contributions, want %d", len(p.UnitContributions), tc.units)
			}
			est := sizeEstimate(p.UnitContributions)
			if est > MaxUnitContributionBytes {
				t.Fatalf("carried contributions of estimated size %d > %d", est, MaxUnitContributionBytes)
			}
			with, err := schema.EncodePartial(p)
			if err != nil {
				t.Fatal(err)
			}
			bare := p
			bare.UnitContributions = nil
			without, err := schema.EncodePartial(bare)
			if err != nil {
				t.Fatal(err)
			}
			// The estimate must bound the encoding from above, and, for
			// the long names that make a window large, not by so much
			// that it wastes most of the room (Avro needs at least half).
			if actual := len(with) - len(without); actual > est || (tc.nameLen >= 40 && 2*actual < est) {
				t.Errorf("contributions encode to %d bytes, estimate %d", actual, est)
			}
			if len(with) >= 1_000_000 {
				t.Errorf("partial encodes to %d bytes, not below 1 MB", len(with))
			}
		})
	}
}

// TestTruncationFreesAccumulators: once the units' size without row tails
// exceeds the limit, the window drops every unit's contribution at once
// (each statistic's DropUnits, so memory stays bounded) and asks for none
// after, while still counting units.
func TestTruncationFreesAccumulators(t *testing.T) {
	// The spy's contribution has one entry, as a count's: the sizes of
	// TestUnitContributionsTruncation's count stream hold.
	s := contribStream(1)
	log := &spyLog{}
	s.Releases = []Release{{Name: "n", Stat: spyStat{log: log}}}
	p := NewPartition(s, 0, 1, NoWatermark)
	evs := manyUnits(4688, 90, 1)
	for i, e := range evs {
		mustAdd(t, p, e)
		if i == 4686 && (log.drops != 0 || log.contribAdds != 4687) {
			t.Fatalf("after 4687 units: %d drops, %d adds with contributions; want 0 and 4687", log.drops, log.contribAdds)
		}
	}
	w := p.windows[0]
	if w == nil || !w.unitsTruncated || len(w.perUnit) != 4688 {
		t.Fatalf("window open %v, truncated %v, %d units; want truncated with 4688", w != nil, w != nil && w.unitsTruncated, len(w.perUnit))
	}
	if log.drops != 1 || log.contribAdds != 4687 || log.adds != 4688 {
		t.Fatalf("%d drops, %d of %d adds with contributions; want 1 drop and 4687 of 4688", log.drops, log.contribAdds, log.adds)
	}
	for u, st := range w.perUnit {
		if st.kept != 1 {
			t.Fatalf("unit %s: kept %d, want 1", u, st.kept)
		}
	}
}

// TestUnitEventLimit: a unit with more kept events than its exact
// summaries allow (lowered here from maxUnitEvents) makes its window carry
// no contributions, without an error and without touching other windows.
func TestUnitEventLimit(t *testing.T) {
	s := contribStream(5, relSpec{Name: "n", Kind: "count"}, relSpec{Name: "total", Kind: "sum", Field: "v", Lo: 0, Hi: 10})
	p := NewPartition(s, 0, 1, NoWatermark)
	p.unitEventLimit = 2
	for i, e := range []struct {
		unit string
		t    int64
	}{{"a", 10}, {"a", 20}, {"b", 30}, {"a", 40}, {"a", 1010}, {"a", 1020}} {
		mustAdd(t, p, Event{Offset: int64(i), Unit: e.unit, Time: e.t, Values: []float64{0, 1}})
	}
	closed := p.Idle(time.Time{}, 20*time.Second)
	var got []schema.Partial
	for _, c := range closed {
		if c.Events > 0 {
			got = append(got, c)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d windows with events, want 2", len(got))
	}
	if !got[0].UnitsTruncated || got[0].UnitContributions != nil || got[0].Events != 4 || got[0].Stats[1].SumUnits == 0 {
		t.Errorf("window 0 (unit a has 3 kept events): %+v, want truncated, statistics intact", got[0])
	}
	if got[1].UnitsTruncated || len(got[1].UnitContributions) != 1 || got[1].UnitContributions[0].Norms[0][0] != 2 {
		t.Errorf("window 1000: %+v, want unit a with 2 events", got[1])
	}
}

// TestUnitContributionsDeterministic: the same events in the same order
// give byte-identical partials (map iteration order must not leak).
func TestUnitContributionsDeterministic(t *testing.T) {
	for _, c := range contribCases() {
		evs := contribEvents(5, 300, c)
		a, b := runContrib(t, c.s, evs), runContrib(t, c.s, evs)
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%s: %d and %d partials", c.name, len(a), len(b))
		}
		for i := range a {
			ea, err := schema.EncodePartial(a[i])
			if err != nil {
				t.Fatal(err)
			}
			eb, err := schema.EncodePartial(b[i])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ea, eb) || len(a[i].UnitContributions) == 0 {
				t.Errorf("%s: window %d: partials differ (or carry no contributions)", c.name, a[i].WindowStart)
			}
		}
	}
}

// TestRestartIsExactWithUnitContributions is TestRestartIsExact with
// UnitContributions on: for every cut point, the first run's partials and
// the replay's from CommitPoint, first wins, are exactly the uninterrupted
// run's, contributions included (diffPartial compares them bit for bit).
// One seed per profile, another than TestRestartIsExact's, keeps the
// package fast under -race.
func TestRestartIsExactWithUnitContributions(t *testing.T) {
	const id, count = 3, 8
	for _, pr := range profiles {
		s := pr.stream()
		s.UnitContributions = true
		for _, seed := range []uint64{3} {
			recs := randomRecords(seed, 200, s, pr)
			want := feed(t, NewPartition(s, id, count, NoWatermark), recs)
			carried := 0
			for _, p := range want {
				carried += len(p.UnitContributions)
			}
			if carried < 20 {
				t.Fatalf("%s seed %d: only %d unit contributions in the uninterrupted run", pr.name, seed, carried)
			}
			for k := 0; k <= len(recs); k++ {
				first := NewPartition(s, id, count, NoWatermark)
				got := feed(t, first, recs[:k])
				checkRestart(t, fmt.Sprintf("%s seed %d cut %d", pr.name, seed, k), s, first, got, recs, k, want)
			}
		}
	}
}

// TestUnitContributionsOff: with the flag off a partition asks no
// statistic for per-unit contributions, partials carry none, and
// everything else is exactly what it is with the flag on.
func TestUnitContributionsOff(t *testing.T) {
	for _, c := range contribCases() {
		off := *c.s
		off.UnitContributions = false
		evs := contribEvents(4, 300, c)
		// The stage asks no statistic to keep contributions (what each
		// kind then keeps is its own tests' business).
		spied := off
		log := &spyLog{}
		spied.Releases = append(slices.Clone(off.Releases), Release{Name: "spy", Stat: spyStat{log: log}})
		p := NewPartition(&spied, 0, 1, NoWatermark)
		for _, e := range evs {
			mustAdd(t, p, e)
		}
		if log.adds == 0 || log.contribAdds != 0 {
			t.Fatalf("%s: %d of %d adds with contributions with the flag off", c.name, log.contribAdds, log.adds)
		}
		gotOff, gotOn := runContrib(t, &off, evs), runContrib(t, c.s, evs)
		if len(gotOff) != len(gotOn) || len(gotOff) == 0 {
			t.Fatalf("%s: %d partials off, %d on", c.name, len(gotOff), len(gotOn))
		}
		for i := range gotOff {
			if gotOff[i].UnitContributions != nil || gotOff[i].UnitsTruncated {
				t.Errorf("%s: window %d carries contributions with the flag off", c.name, gotOff[i].WindowStart)
			}
			stripped := gotOn[i]
			stripped.UnitContributions = nil
			if !reflect.DeepEqual(stripped, gotOff[i]) {
				t.Errorf("%s: window %d: partial with the flag on differs beyond its contributions:\n%+v\n%+v", c.name, gotOff[i].WindowStart, stripped, gotOff[i])
			}
		}
	}
}
