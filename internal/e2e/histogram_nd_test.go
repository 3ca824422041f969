package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/kind/histogram"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// histogramNDConfig has a 2-D histogram with a per-cell cap and discrete
// Gaussian noise (the L2 path: Δ2 = sqrt(⌊L/c⌋c² + (L mod c)²) = sqrt(3)
// for L = 3, c = 1) with synthetic samples, and a 3-D histogram whose bins
// are sized by bins: auto from expected_events, with discrete Laplace noise.
// All bin widths are powers of two (2, 2 and, for the auto shape of 4 bins
// per field, 2, 2, 0.5), so the test's own cell formula is exact.
func histogramNDConfig() *testkit.Pipeline {
	return testkit.NewPipeline(testkit.NewStream("pts", "events").Partitions(4).MaxEvents(3).Budget(50, 1e-6).Releases(
		testkit.HistogramND("xy", testkit.NewAxis("x", 0, 8, 4), testkit.NewAxis("y", -3, 3, 3)).
			MaxPerBin(1).Noise("gaussian").Epsilon(2).Delta(1e-7).Samples(20),
		testkit.HistogramND("xyz", testkit.NewAxis("x", 0, 8, 0), testkit.NewAxis("y", -4, 4, 0), testkit.NewAxis("z", 0, 2, 0)).
			AutoBins(500).Noise("laplace").Epsilon(1)))
}

// ndAxis is one field of a histogram as the test sees it.
type ndAxis struct {
	field  string
	lo, hi float64
	bins   int
}

// cellOf is the test's own cell formula: clamp each field to its bounds,
// take bin ⌊(v − lo)/w⌋ with w = (hi − lo)/bins (hi itself in the last
// bin), and combine row-major with the last field fastest. It is exact for
// these tests because every value is a multiple of 1/4 and every width a
// power of two, so (v − lo)/w is computed without rounding.
func cellOf(axes []ndAxis, ev map[string]any) int {
	cell := 0
	for _, a := range axes {
		v := math.Min(math.Max(ev[a.field].(float64), a.lo), a.hi)
		w := (a.hi - a.lo) / float64(a.bins)
		j := min(int(math.Floor((v-a.lo)/w)), a.bins-1)
		cell = cell*a.bins + j
	}
	return cell
}

// genNDEvents makes nWindows windows of perWindow events from nUnits units,
// in window order. Values are multiples of 1/4, partly outside every
// release's bounds (x in [-1, 9], y in [-4, 4], z in [-0.5, 2.5]), so
// clamping is exercised. Half of a unit's events repeat the unit's own
// "home" point, so units often have several events in one cell and the
// per-cell cap binds.
func genNDEvents(seed uint64, nWindows, perWindow, nUnits int) []map[string]any {
	rng := rand.New(rand.NewPCG(seed, 2))
	point := func() [3]float64 {
		return [3]float64{float64(rng.IntN(41))/4 - 1, float64(rng.IntN(33))/4 - 4, float64(rng.IntN(13))/4 - 0.5}
	}
	home := make([][3]float64, nUnits)
	for i := range home {
		home[i] = point()
	}
	var out []map[string]any
	for w := 0; w < nWindows; w++ {
		for i := 0; i < perWindow; i++ {
			u := rng.IntN(nUnits)
			p := point()
			if rng.IntN(2) == 0 {
				p = home[u]
			}
			out = append(out, map[string]any{
				"user": fmt.Sprintf("u%d", u),
				"ts":   base + int64(w)*1000 + rng.Int64N(1000),
				"x":    p[0], "y": p[1], "z": p[2],
			})
		}
	}
	return out
}

// ndTruth returns, per window start, the exact cell counts of a histogram
// after contribution bounding: the first L events of each unit in each
// window, in produce order (which is offset order on the unit's
// partition), and of those at most c per unit and cell (c = 0: no cap).
func ndTruth(evs []map[string]any, axes []ndAxis, L, c int) map[int64][]int64 {
	cells := 1
	for _, a := range axes {
		cells *= a.bins
	}
	out := map[int64][]int64{}
	perCell := map[string]int{}
	for _, ev := range keptEvents(evs, L) {
		w := windowOf(ev)
		if out[w] == nil {
			out[w] = make([]int64, cells)
		}
		cell := cellOf(axes, ev)
		if c > 0 {
			kc := fmt.Sprintf("%d/%s/%d", w, ev["user"], cell)
			if perCell[kc] >= c {
				continue
			}
			perCell[kc]++
		}
		out[w][cell]++
	}
	return out
}

// noiseTail returns the smallest integer k with P(|Z| ≥ k) ≤ alpha, for Z
// the integer noise of a released count with the given component: the
// discrete Laplace P(z) ∝ e^{−|z|/t} or the discrete Gaussian
// P(z) ∝ e^{−z²/(2σ²)} (Canonne, Kamath & Steinke 2020), with t or σ its
// Scale (counts have granularity 1). The Laplace tail is in closed form,
// P(|Z| ≥ k) = 2e^{−k/t}/(1 + e^{−1/t}) for k ≥ 1; the Gaussian one is
// summed from the probability mass function.
func noiseTail(t *testing.T, comp schema.NoiseComponent, alpha float64) float64 {
	t.Helper()
	s := comp.Scale
	switch comp.Mechanism {
	case string(noise.DiscreteLaplace):
		return math.Ceil(s * math.Log(2/(alpha*(1+math.Exp(-1/s)))))
	case string(noise.DiscreteGaussian):
		top := int(math.Ceil(50*s)) + 2 // e^{−1250} beyond: nothing left
		mass := make([]float64, top+1)
		for y := range mass {
			mass[y] = math.Exp(-float64(y*y) / (2 * s * s))
		}
		norm := mass[0]
		for _, m := range mass[1:] {
			norm += 2 * m
		}
		tail := 0.0 // P(|Z| ≥ k), built from the top down
		for k := top; k >= 1; k-- {
			tail += 2 * mass[k] / norm
			if tail > alpha {
				return float64(k + 1)
			}
		}
		return 1
	}
	t.Fatalf("no tail bound for noise %q", comp.Mechanism)
	return 0
}

// mergedBins adds up the bins of release name in the partials of one
// window, in partition order (the counts are integers, so any order gives
// the same sum).
func mergedBins(t *testing.T, parts map[int32]schema.Partial, name string, cells int) []int64 {
	t.Helper()
	var ps []int32
	for p := range parts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	got := make([]int64, cells)
	for _, p := range ps {
		for _, s := range parts[p].Stats {
			if s.Release != name {
				continue
			}
			if len(s.Bins) != cells {
				t.Fatalf("release %s partition %d: %d bins, want %d", name, p, len(s.Bins), cells)
			}
			for j, c := range s.Bins {
				got[j] += c
			}
		}
	}
	return got
}

// TestEndToEndHistogramND runs histograms over two and three fields through
// the whole pipeline on the real Kafka protocol and checks what they
// publish against truth computed here from the produced events: the exact
// cell counts behind each release (merged partials), the shape and edges,
// the normalization of probabilities and densities, the noisy counts
// against the noise's tail bound, the synthetic samples, and the capped
// Gaussian histogram's L2 sensitivity in the ledger.
func TestEndToEndHistogramND(t *testing.T) {
	h := newHarness(t, histogramNDConfig())
	const windows, L, c, samples = 3, 3, 1, 20
	const expected = 500
	evs := genNDEvents(31, windows, 240, 50)

	autoBins := aggregate.AutoBins(expected, 3, histogram.MaxBins)
	if len(autoBins) != 3 {
		t.Fatalf("AutoBins(%d, 3, %d) = %v, want 3 fields", expected, histogram.MaxBins, autoBins)
	}
	type spec struct {
		name    string
		axes    []ndAxis
		binCap  int
		noise   string
		epsilon float64
		volume  float64 // product of the bin widths
	}
	specs := []spec{
		{name: "xy", axes: []ndAxis{{"x", 0, 8, 4}, {"y", -3, 3, 3}}, binCap: c, noise: string(noise.DiscreteGaussian), epsilon: 2},
		{name: "xyz", axes: []ndAxis{{"x", 0, 8, autoBins[0]}, {"y", -4, 4, autoBins[1]}, {"z", 0, 2, autoBins[2]}}, noise: string(noise.DiscreteLaplace), epsilon: 1},
	}
	truth := map[string]map[int64][]int64{}
	for i := range specs {
		specs[i].volume = 1
		for _, a := range specs[i].axes {
			w := (a.hi - a.lo) / float64(a.bins)
			if frac, _ := math.Frexp(w); frac != 0.5 {
				t.Fatalf("%s: field %s has bin width %v; cellOf is exact only for powers of two", specs[i].name, a.field, w)
			}
			specs[i].volume *= w
		}
		truth[specs[i].name] = ndTruth(evs, specs[i].axes, L, specs[i].binCap)
	}
	// The cap must bind somewhere, or the capped path would go untested.
	uncapped := ndTruth(evs, specs[0].axes, L, 0)
	binds := false
	for w, cells := range uncapped {
		binds = binds || !slices.Equal(cells, truth["xy"][w])
	}
	if !binds {
		t.Fatal("test data: the per-cell cap never binds; make units repeat cells")
	}

	sampler := noise.New(noise.SeededSource(13))
	acc := h.start("acc", pipeline.Stages{Accumulate: true}, nil)
	rel := h.start("rel", pipeline.Stages{Release: true}, sampler)
	h.ProduceJSON(h.cfg.Streams[0].Topic, evs, "user")
	waitFor(t, 90*time.Second, "histogram releases of all data windows", func() bool {
		rs := h.releases()
		return len(releasedWindows(rs, "xy")) >= windows && len(releasedWindows(rs, "xyz")) >= windows
	}, acc, rel)
	// Let a duplicate release, if the stage made one, reach the topic.
	time.Sleep(time.Second)
	rel.stop()

	byID := h.uniqueReleases()
	ledger := map[string]schema.LedgerCharge{}
	for _, lc := range h.ledger() {
		ledger[lc.ReleaseID] = lc
	}
	parts := h.partials()["pts"]

	for w := 0; w < windows; w++ {
		start := base + int64(w)*1000
		for _, sp := range specs {
			id := fmt.Sprintf("pts/%s/%d", sp.name, start)
			r, ok := byID[id]
			if !ok {
				t.Fatalf("missing release %s", id)
			}
			if r.Status != "ok" || r.Kind != "histogram" {
				t.Errorf("%s: status %s kind %s, want ok histogram", id, r.Status, r.Kind)
				continue
			}
			cells := 1
			var fields []string
			var shape []int64
			nEdges := 0
			for _, a := range sp.axes {
				cells *= a.bins
				fields = append(fields, a.field)
				shape = append(shape, int64(a.bins))
				nEdges += a.bins + 1
			}
			if !slices.Equal(r.Fields, fields) || !slices.Equal(r.Shape, shape) {
				t.Errorf("%s: fields %v shape %v, want %v %v", id, r.Fields, r.Shape, fields, shape)
			}
			if len(r.Edges) != nEdges || len(r.NoisyCounts) != cells || len(r.Probabilities) != cells || len(r.Densities) != cells {
				t.Fatalf("%s: %d edges, %d counts, %d probabilities, %d densities; want %d edges and %d cells",
					id, len(r.Edges), len(r.NoisyCounts), len(r.Probabilities), len(r.Densities), nEdges, cells)
			}
			// Each field's edges in turn; with power-of-two widths they
			// are exactly lo + j·w.
			off := 0
			for _, a := range sp.axes {
				wd := (a.hi - a.lo) / float64(a.bins)
				for j := 0; j <= a.bins; j++ {
					if want := a.lo + float64(j)*wd; r.Edges[off+j] != want {
						t.Errorf("%s: field %s edge %d = %v, want %v", id, a.field, j, r.Edges[off+j], want)
					}
				}
				off += a.bins + 1
			}

			// Exact statistics: the merged partials equal the truth.
			tr := truth[sp.name][start]
			if got := mergedBins(t, parts[start], sp.name, cells); !slices.Equal(got, tr) {
				t.Errorf("%s: merged partial cells %v, truth %v", id, got, tr)
			}

			// Post-processing: probabilities on the simplex, densities
			// integrating to 1 over cells of equal volume.
			psum, dsum := 0.0, 0.0
			for j, p := range r.Probabilities {
				if !(p >= 0) {
					t.Errorf("%s cell %d: probability %v < 0", id, j, p)
				}
				psum += p
				dsum += r.Densities[j] * sp.volume
			}
			if math.Abs(psum-1) > 1e-9 || math.Abs(dsum-1) > 1e-9 {
				t.Errorf("%s: probabilities sum to %.15f and densities × cell volume %v to %.15f, want 1", id, psum, sp.volume, dsum)
			}

			// Noise: one component of the configured kind, and every noisy
			// count within its tail bound. Bonferroni over the cells: all
			// cells of one release lie within the bound with probability at
			// least 99.9%, so over random seeds this check fails for one of
			// the 6 releases at most 0.6% of the time (it is deterministic
			// with seed 13).
			if len(r.Noise) != 1 || r.Noise[0].Mechanism != sp.noise || r.Noise[0].Purpose != aggregate.PurposeBins {
				t.Fatalf("%s: noise %+v, want one %s bins component", id, r.Noise, sp.noise)
			}
			bound := noiseTail(t, r.Noise[0], 0.001/float64(cells))
			for j, d := range r.NoisyCounts {
				if d != math.Trunc(d) || math.Abs(d-float64(tr[j])) >= bound {
					t.Errorf("%s cell %d: noisy count %v vs truth %d: not an integer within the 99.9%% (Bonferroni) bound %v",
						id, j, d, tr[j], bound)
				}
			}

			// Ledger: the charge is the release's noise; its sensitivity is
			// L (Laplace, L1) or, for the capped Gaussian, the L2
			// sensitivity sqrt(⌊L/c⌋c² + (L mod c)²) = sqrt(3) rounded up
			// to the next float64, so the accountant never undercharges.
			lc, ok := ledger[id]
			if !ok || lc.Status != "ok" || len(lc.Charges) != 1 || lc.Charges[0] != r.Noise[0] {
				t.Errorf("%s: ledger charge %+v, want status ok with the release's noise %+v", id, lc, r.Noise)
				continue
			}
			s := lc.Charges[0].Sensitivity
			if sp.binCap > 0 {
				l2sq := float64((L/sp.binCap)*sp.binCap*sp.binCap + (L%sp.binCap)*(L%sp.binCap))
				if l2sq != 3 || !(s*s >= l2sq) || !(math.Nextafter(s, 0)*math.Nextafter(s, 0) < l2sq) {
					t.Errorf("%s: charged L2 sensitivity %v, want sqrt(%v) = %v rounded up to a float64", id, s, l2sq, math.Sqrt(l2sq))
				}
			} else if s != L || lc.Charges[0].Scale != L/sp.epsilon {
				t.Errorf("%s: charged sensitivity %v scale %v, want L1 = L = %d and t = L/ε = %v", id, s, lc.Charges[0].Scale, L, L/sp.epsilon)
			}

			// Synthetic samples: only the capped 2-D release asks for them.
			if sp.name != "xy" {
				if len(r.Samples) != 0 {
					t.Errorf("%s: %d samples, none configured", id, len(r.Samples))
				}
				continue
			}
			d := len(sp.axes)
			if len(r.Samples) != samples*d {
				t.Fatalf("%s: %d sample values, want %d·%d", id, len(r.Samples), samples, d)
			}
			for i := 0; i < samples; i++ {
				pt := r.Samples[i*d : (i+1)*d]
				for a, ax := range sp.axes {
					if !(pt[a] >= ax.lo && pt[a] <= ax.hi) {
						t.Errorf("%s sample %d: %s = %v outside [%v, %v]", id, i, ax.field, pt[a], ax.lo, ax.hi)
					}
				}
				if !inPositiveCell(sp.axes, r.Probabilities, pt) {
					t.Errorf("%s sample %d: %v lies in no cell of positive probability", id, i, pt)
				}
			}
		}
	}
}

// inPositiveCell reports whether pt lies in the closed box of some cell
// with positive probability: samples are drawn only from such cells. A
// coordinate on an inner edge belongs to both neighbouring bins.
func inPositiveCell(axes []ndAxis, probs []float64, pt []float64) bool {
	cands := []int{0} // row-major cell index prefixes containing pt so far
	for a, ax := range axes {
		w := (ax.hi - ax.lo) / float64(ax.bins)
		var next []int
		for _, c := range cands {
			for j := 0; j < ax.bins; j++ {
				if lo, hi := ax.lo+float64(j)*w, ax.lo+float64(j+1)*w; pt[a] >= lo && pt[a] <= hi {
					next = append(next, c*ax.bins+j)
				}
			}
		}
		cands = next
	}
	for _, c := range cands {
		if probs[c] > 0 {
			return true
		}
	}
	return false
}
