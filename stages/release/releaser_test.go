package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	kdensity "github.com/dpstream/dpstream/kind/density"
	"github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// zeroNoise draws 0 every time: with it a release shows the exact merged
// statistic, so the tests can compare it with the truth. It exists only to
// test the plumbing around the mechanisms; it is no privacy mechanism.
type zeroNoise struct{}

func (zeroNoise) DiscreteLaplace(float64) (int64, error)  { return 0, nil }
func (zeroNoise) DiscreteGaussian(float64) (int64, error) { return 0, nil }

// testPlan calibrates a one-stream config: stream "s" with window 1s, at
// most 4 events per unit and window, budget ε=budget at δ=1e-6, and a
// count "n" and a 3-bin histogram "h" on [0, 3], each with ε=1 of
// discrete Laplace noise.
func testPlan(t testing.TB, budget float64) []plan.Stream {
	t.Helper()
	yaml := fmt.Sprintf(`streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: %g, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 1}
      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, epsilon: 1}
`, budget)
	return mustPlan(t, yaml)
}

// window w of stream s from partials of partitions 0..len(counts)-1, where
// partition p reported counts[p] events, all in the histogram's first bin
// (the partials of merger_test.go's part).
func window(w int64, counts ...int64) Window {
	win := Window{Stream: "s", Start: w * win, End: (w + 1) * win}
	for p, c := range counts {
		win.Parts = append(win.Parts, part("s", w, int32(p), int32(len(counts)), c))
	}
	return win
}

// TestReleaserExact checks, with zero noise, that each release carries the
// window's exact merged statistics, and that the ledger record and payload
// describe the same release.
func TestReleaserExact(t *testing.T) {
	ps := testPlan(t, 100)
	r := NewReleaser(ps, zeroNoise{})
	now := time.UnixMilli(123456)
	counts := []int64{3, 0, 5}
	var total int64
	for _, c := range counts {
		total += c
	}
	outs, err := r.ReleaseWindow(window(7, counts...), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 {
		t.Fatalf("%d outcomes, want one per release (2)", len(outs))
	}
	for i, o := range outs {
		rel := o.Release
		want := []string{"n", "h"}[i]
		if rel.Release != want || rel.ReleaseID != plan.ReleaseID("s", want, 7*win) || rel.Status != StatusOK {
			t.Errorf("outcome %d: %s (%s) status %s, want release %s ok in configuration order", i, rel.Release, rel.ReleaseID, rel.Status, want)
		}
		if rel.WindowStart != 7*win || rel.WindowEnd != 8*win || rel.PublishedAt != now.UnixMilli() || o.Charge.At != now.UnixMilli() {
			t.Errorf("%s: window [%d, %d) published %d at %d, want [%d, %d) at %d", rel.ReleaseID, rel.WindowStart, rel.WindowEnd, rel.PublishedAt, o.Charge.At, 7*win, 8*win, now.UnixMilli())
		}
		switch rel.Release {
		case "n":
			if rel.Value == nil || *rel.Value != float64(total) {
				t.Errorf("count %v, want the exact merged count %d", rel.Value, total)
			}
		case "h":
			if want := []float64{float64(total), 0, 0}; !slices.Equal(rel.NoisyCounts, want) {
				t.Errorf("histogram %v, want the exact merged bins %v", rel.NoisyCounts, want)
			}
		}
		// The ledger record: the charge of an ok release and its payload.
		lc := o.Charge
		if lc.ReleaseID != rel.ReleaseID || lc.Status != StatusOK || lc.Period != 0 || lc.WindowStart != 7*win {
			t.Errorf("%s: ledger charge %+v does not match the release", rel.ReleaseID, lc)
		}
		if len(lc.Charges) != 1 || lc.Charges[0].Mechanism != "discrete_laplace" || len(lc.RDP) != 0 {
			t.Errorf("%s: ledger charges %v, RDP curve of %d orders; want one discrete Laplace charge and no curve (it is recomputed from the charge)", rel.ReleaseID, lc.Charges, len(lc.RDP))
		}
		dec, err := schema.DecodeLedgerCharge(o.Ledger)
		if err != nil || dec.ReleaseID != lc.ReleaseID || !bytes.Equal(dec.Payload, lc.Payload) {
			t.Errorf("%s: encoded ledger record decodes to %+v (%v)", rel.ReleaseID, dec, err)
		}
		payload, err := schema.DecodeRelease(lc.Payload)
		if err != nil {
			t.Fatalf("%s: payload: %v", rel.ReleaseID, err)
		}
		if a, b := jsonOf(t, payload), jsonOf(t, rel); a != b {
			t.Errorf("%s: payload decodes to\n%s\nwant the outcome's release\n%s", rel.ReleaseID, a, b)
		}
	}
	// Basic composition: two pure ε=1 releases spent ε ≤ 2, and the
	// charge of the first alone is at most 1.
	if e := outs[0].Release.EpsilonSpent; e <= 0 || e > 1+1e-9 {
		t.Errorf("ε spent after the first release %v, want in (0, 1]", e)
	}
	if e := outs[1].Release.EpsilonSpent; e <= outs[0].Release.EpsilonSpent || e > 2+1e-9 {
		t.Errorf("ε spent after the second release %v, want in (%v, 2]", e, outs[0].Release.EpsilonSpent)
	}
	st, ok := r.State("s", 0, now)
	if !ok || st.ReleasesCharged != 2 || st.ReleasesRefused != 0 || st.EpsilonSpent != outs[1].Release.EpsilonSpent || st.EpsilonBudget != 100 {
		t.Errorf("state %+v (ok %v), want 2 charged, ε spent %v of 100", st, ok, outs[1].Release.EpsilonSpent)
	}
	if _, ok := r.State("nope", 0, now); ok {
		t.Error("State of an unknown stream: ok")
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReleaserBudget: with a budget of ε=2.5, the pure ε=1 count fits in
// two windows only. Any valid accounting of three ε=1 discrete Laplace
// releases at δ=1e-6 exceeds 2.5 (their privacy loss is 3 with probability
// far above 1e-6), so the third window and every later one is refused.
func TestReleaserBudget(t *testing.T) {
	ps := testPlan(t, 2.5)
	// Keep the count only, so each window charges ε=1.
	ps[0].Releases = ps[0].Releases[:1]
	r := NewReleaser(ps, noise.New(noise.SeededSource(1)))
	var spent float64
	for w := int64(0); w < 5; w++ {
		outs, err := r.ReleaseWindow(window(w, 2, 2), time.UnixMilli(w))
		if err != nil || len(outs) != 1 {
			t.Fatalf("window %d: %d outcomes, %v", w, len(outs), err)
		}
		rel, lc := outs[0].Release, outs[0].Charge
		if w < 2 {
			if rel.Status != StatusOK || rel.Value == nil {
				t.Errorf("window %d: status %s value %v, want ok with a value", w, rel.Status, rel.Value)
			}
			spent = rel.EpsilonSpent
			continue
		}
		if rel.Status != StatusBudgetExhausted || lc.Status != StatusBudgetExhausted {
			t.Errorf("window %d: status %s (ledger %s), want %s", w, rel.Status, lc.Status, StatusBudgetExhausted)
		}
		if rel.Value != nil || rel.Interval95 != nil || rel.NoisyCounts != nil || len(lc.Charges) != 0 || lc.RDP != nil {
			t.Errorf("window %d: refused release carries data or charges: %+v / %+v", w, rel, lc)
		}
		if rel.EpsilonSpent != spent {
			t.Errorf("window %d: ε spent %v after a refusal, want unchanged %v", w, rel.EpsilonSpent, spent)
		}
	}
	st, _ := r.State("s", 0, time.Time{})
	if st.ReleasesCharged != 2 || st.ReleasesRefused != 3 || st.EpsilonSpent > 2.5 {
		t.Errorf("state %+v, want 2 charged, 3 refused, within ε=2.5", st)
	}
}

// TestReleaserRestore: a window is released once; a Releaser rebuilt from
// the ledger records (as Recover does) skips it and has the same state.
func TestReleaserRestore(t *testing.T) {
	ps := testPlan(t, 100)
	r := NewReleaser(ps, zeroNoise{})
	var ledger []schema.LedgerCharge
	for w := int64(0); w < 3; w++ {
		outs, err := r.ReleaseWindow(window(w, 1, 2), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			ledger = append(ledger, o.Charge)
		}
	}
	if outs, err := r.ReleaseWindow(window(1, 9, 9), time.Time{}); err != nil || len(outs) != 0 {
		t.Errorf("releasing window 1 again: %d outcomes, %v; want none (already charged)", len(outs), err)
	}
	want, _ := r.State("s", 0, time.Time{})

	r2 := NewReleaser(ps, zeroNoise{})
	for _, lc := range ledger {
		if dup, err := r2.Restore(lc); dup || err != nil {
			t.Fatalf("Restore %s: dup %v, %v", lc.ReleaseID, dup, err)
		}
	}
	got, _ := r2.State("s", 0, time.Time{})
	if got.ReleasesCharged != want.ReleasesCharged || math.Abs(got.EpsilonSpent-want.EpsilonSpent) > 1e-12 {
		t.Errorf("restored state %+v, want %+v", got, want)
	}
	// A second valid charge for one id is counted again (defensive
	// accounting).
	second := ledger[0]
	second.Payload, second.At = []byte("another answer"), ledger[0].At+1
	if dup, err := r2.Restore(second); !dup || err != nil {
		t.Errorf("Restore of a duplicate: dup %v, %v; want dup", dup, err)
	}
	again, _ := r2.State("s", 0, time.Time{})
	if again.ReleasesCharged != want.ReleasesCharged+1 || !(again.EpsilonSpent > want.EpsilonSpent) {
		t.Errorf("after a duplicate charge: %+v; want one more charge than %+v and more ε spent", again, want)
	}
	for w := int64(0); w < 3; w++ {
		if outs, _ := r2.ReleaseWindow(window(w, 1, 2), time.Time{}); len(outs) != 0 {
			t.Errorf("restored releaser released window %d again", w)
		}
	}
	for _, id := range []string{plan.ReleaseID("s", "h", 2*win), plan.ReleaseID("s", "h", win), plan.ReleaseID("s", "n", 0)} {
		if !r2.Decided(id) {
			t.Errorf("Decided(%s) after the restore: false", id)
		}
	}
	for _, id := range []string{plan.ReleaseID("s", "h", 3*win), plan.ReleaseID("t", "h", 0), "s/h", "s/h/x", AnswerID("s", "h", "q1")} {
		if r2.Decided(id) {
			t.Errorf("Decided(%s) after the restore: true", id)
		}
	}
	// A refused charge restores as a refusal.
	r2.Reset()
	if _, err := r2.Restore(schema.LedgerCharge{ReleaseID: "s/n/0", Stream: "s", Status: StatusBudgetExhausted}); err != nil {
		t.Fatal(err)
	}
	if st, _ := r2.State("s", 0, time.Time{}); st.ReleasesCharged != 0 || st.ReleasesRefused != 1 || st.EpsilonSpent != 0 {
		t.Errorf("after Reset and a refusal: %+v", st)
	}
}

// TestReleaserErrors: a window of an unknown stream is an error, and a
// release that cannot be merged fails after the earlier releases of the
// window, which are returned (they are charged) while it is not.
func TestReleaserErrors(t *testing.T) {
	ps := testPlan(t, 100)
	r := NewReleaser(ps, zeroNoise{})
	if outs, err := r.ReleaseWindow(Window{Stream: "other"}, time.Time{}); err == nil || len(outs) != 0 {
		t.Errorf("unknown stream: %d outcomes, err %v; want an error", len(outs), err)
	}
	w := window(0, 1, 1)
	w.Parts[1].Stats[1].Bins = []int64{1, 0} // 2 bins where the histogram has 3
	outs, err := r.ReleaseWindow(w, time.Time{})
	if err == nil {
		t.Fatal("a partial with the wrong number of bins was released")
	}
	if len(outs) != 1 || outs[0].Release.Release != "n" {
		t.Fatalf("%d outcomes before the failure, want the count's", len(outs))
	}
	if !r.Decided(plan.ReleaseID("s", "n", 0)) {
		t.Error("the count released before the failure is not charged")
	}
	if r.Decided(plan.ReleaseID("s", "h", 0)) {
		t.Error("the failed histogram is charged")
	}
}

// TestReleaserDensity releases a density window with zero noise, for both
// noise kinds, and checks the plumbing: the release carries one coefficient
// per term, each the window's mean of √2·cos(πju) up to the documented
// rounding (at most G/2 per merged sum, G the basis sums' grid, and the
// quantum q/2 per event, all divided by n), the grid with its density,
// which is non-negative and integrates to 1, and no value; and a releaser
// restored from the ledger charges exactly what the original one charged
// (for Gaussian noise the vector's zCDP charge is rebuilt from the ledger's
// scale and sensitivity).
func TestReleaserDensity(t *testing.T) {
	for _, noiseKind := range []string{"laplace", "gaussian"} {
		t.Run(noiseKind, func(t *testing.T) {
			delta := ""
			if noiseKind == "gaussian" {
				delta = ", delta: 1e-7"
			}
			cfg, err := config.Parse([]byte(fmt.Sprintf(`streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    window: {size: 1s}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 100, delta: 1e-6}
    releases:
      - {name: d, kind: density, field: v, bounds: [0, 2], terms: 5, grid_points: 41, noise: %s, epsilon: 1%s}
`, noiseKind, delta)), "test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ps, err := plan.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			pr := ps[0].Releases[0]
			dp, ok := pr.Kind.(*kdensity.Plan)
			if !ok || dp.Cal.Spec.Terms != 5 || dp.Cal.Spec.GridPoints != 41 {
				t.Fatalf("plan: density plan %+v", pr.Kind)
			}
			z, err := density.NewQuantizer(0, 2, 5)
			if err != nil {
				t.Fatal(err)
			}
			// Two partitions' partials of the values below, in units.
			values := [][]float64{{0.1, 0.5, 1.9, 2.5}, {-1, 0.7, 1.2}}
			w := Window{Stream: "s", Start: 0, End: win}
			var n int
			exact := make([]float64, 5) // Σ √2·cos(πj·u) over the clamped values
			for p, vs := range values {
				st := z.NewStats()
				for _, v := range vs {
					if err := z.Add(&st, v); err != nil {
						t.Fatal(err)
					}
					u := math.Min(math.Max(v, 0), 2) / 2
					for j := range exact {
						exact[j] += math.Sqrt2 * math.Cos(math.Pi*float64(j+1)*u)
					}
					n++
				}
				w.Parts = append(w.Parts, schema.Partial{Stream: "s", WindowEnd: win, Partition: int32(p), Partitions: 2,
					Stats: []schema.ReleaseStats{{Release: "d", Count: st.Count, Bins: []int64{}, Terms: st.Terms}}})
			}
			r := NewReleaser(ps, zeroNoise{})
			outs, err := r.ReleaseWindow(w, time.Time{})
			if err != nil || len(outs) != 1 {
				t.Fatalf("ReleaseWindow: %d outcomes, %v", len(outs), err)
			}
			rel := outs[0].Release
			if rel.Status != StatusOK || rel.Kind != "density" || rel.Value != nil || len(rel.Coefficients) != 5 {
				t.Fatalf("release %+v: want ok, kind density, no value and 5 coefficients", rel)
			}
			g := pr.Kind.Components()[1].Granularity
			tol := (g/2+z.Quantum()/2*float64(n))/float64(n) + 1e-12
			for j, b := range rel.Coefficients {
				if want := exact[j] / float64(n); math.Abs(b-want) > tol {
					t.Errorf("coefficient %d = %.12g, want %.12g ± %.3g", j+1, b, want, tol)
				}
			}
			if len(rel.Edges) != 41 || len(rel.Densities) != 41 || rel.Edges[0] != 0 || rel.Edges[40] != 2 {
				t.Fatalf("grid %v densities %v", rel.Edges, rel.Densities)
			}
			integral := 0.0
			for k := 1; k < 41; k++ {
				if rel.Densities[k] < 0 {
					t.Errorf("density %v < 0 at %v", rel.Densities[k], rel.Edges[k])
				}
				integral += (rel.Edges[k] - rel.Edges[k-1]) * (rel.Densities[k] + rel.Densities[k-1]) / 2
			}
			if math.Abs(integral-1) > 1e-9 {
				t.Errorf("density integrates to %.15f, want 1", integral)
			}
			decoded, err := schema.DecodeRelease(outs[0].Charge.Payload)
			if err != nil || !slices.Equal(decoded.Coefficients, rel.Coefficients) {
				t.Errorf("ledger payload coefficients %v (%v), want %v", decoded.Coefficients, err, rel.Coefficients)
			}

			want, _ := r.State("s", 0, time.Time{})
			r2 := NewReleaser(ps, zeroNoise{})
			if dup, err := r2.Restore(outs[0].Charge); dup || err != nil {
				t.Fatalf("Restore: dup %v, %v", dup, err)
			}
			got, _ := r2.State("s", 0, time.Time{})
			if want.EpsilonSpent <= 0 || got.EpsilonSpent != want.EpsilonSpent || got.ReleasesCharged != 1 {
				t.Errorf("restored state %+v, want %+v", got, want)
			}
			if !slices.Equal(mechanismsOf(outs[0].Charge.Charges), pr.Mechanisms) {
				t.Errorf("ledger charges rebuild %+v, want %+v", mechanismsOf(outs[0].Charge.Charges), pr.Mechanisms)
			}

			// A partial with the wrong number of term sums is not released.
			bad := w
			bad.Start, bad.End = win, 2*win
			bad.Parts = []schema.Partial{{Stream: "s", WindowStart: win, WindowEnd: 2 * win, Partitions: 1,
				Stats: []schema.ReleaseStats{{Release: "d", Count: 1, Bins: []int64{}, Terms: []int64{1, 2}}}}}
			if outs, err := r.ReleaseWindow(bad, time.Time{}); err == nil || len(outs) != 0 {
				t.Errorf("window with 2 of 5 term sums: %d outcomes, %v; want an error", len(outs), err)
			}
		})
	}
}
