package e2e

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// densityConfig has one density release with discrete Gaussian noise, so
// the end-to-end path covers the zCDP-calibrated vector charge.
func densityConfig() *testkit.Pipeline {
	return testkit.NewPipeline(testkit.NewStream("trips", "events").Partitions(4).Budget(50, 1e-6).Releases(
		testkit.Density("d", "v", 0, 10, 6).GridPoints(65).Noise("gaussian").Epsilon(2).Delta(1e-7)))
}

// TestEndToEndDensity runs a density release through the whole pipeline on
// the real Kafka protocol and checks what it publishes: a non-negative
// density on the grid that integrates to 1 (trapezoid rule, which is exact
// for the published piecewise-linear density), one coefficient per term,
// and merged partial basis sums equal to the exact sums computed here with
// the same density.Quantizer over the kept events.
func TestEndToEndDensity(t *testing.T) {
	h := newHarness(t, densityConfig())
	const windows, L, terms = 3, 2, 6
	evs := genEvents(23, windows, 150, 60)

	// The truth: the first L events per unit and window, in produce order.
	z, err := density.NewQuantizer(0, 10, terms)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]*density.Stats{}
	for _, ev := range keptEvents(evs, L) {
		w := windowOf(ev)
		if want[w] == nil {
			st := z.NewStats()
			want[w] = &st
		}
		if err := z.Add(want[w], ev["v"].(float64)); err != nil {
			t.Fatal(err)
		}
	}

	sampler := noise.New(noise.SeededSource(5))
	acc := h.start("acc", pipeline.Stages{Accumulate: true}, nil)
	rel := h.start("rel", pipeline.Stages{Release: true}, sampler)
	h.ProduceJSON(h.cfg.Streams[0].Topic, evs, "user")
	waitFor(t, 90*time.Second, "density releases of all data windows", func() bool {
		return len(releasedWindows(h.releases(), "d")) >= windows
	}, acc, rel)
	rel.stop()

	byID := map[string]schema.Release{}
	for _, r := range h.releases() {
		byID[r.ReleaseID] = r
	}
	parts := h.partials()["trips"]
	for w := 0; w < windows; w++ {
		start := base + int64(w)*1000
		id := fmt.Sprintf("trips/d/%d", start)
		r, ok := byID[id]
		if !ok {
			t.Fatalf("missing release %s", id)
		}
		if r.Status != "ok" || r.Kind != "density" || r.Value != nil {
			t.Errorf("%s: status %s kind %s value %v, want ok density and no value", id, r.Status, r.Kind, r.Value)
			continue
		}
		if len(r.Coefficients) != terms {
			t.Errorf("%s: %d coefficients, want %d", id, len(r.Coefficients), terms)
		}
		if len(r.Edges) != 65 || len(r.Densities) != 65 || r.Edges[0] != 0 || r.Edges[64] != 10 {
			t.Fatalf("%s: grid of %d points [%v..], %d densities; want 65 points on [0, 10]", id, len(r.Edges), r.Edges[:min(1, len(r.Edges))], len(r.Densities))
		}
		integral := 0.0
		for k, d := range r.Densities {
			if !(d >= 0) || math.IsInf(d, 0) {
				t.Errorf("%s: density %v at grid point %d is not finite and non-negative", id, d, k)
			}
			if k > 0 {
				integral += (r.Edges[k] - r.Edges[k-1]) * (d + r.Densities[k-1]) / 2
			}
		}
		if math.Abs(integral-1) > 1e-9 {
			t.Errorf("%s: density integrates to %.15f, want 1", id, integral)
		}
		if len(r.Noise) != 2 || r.Noise[0].Mechanism != "discrete_gaussian" || r.Noise[1].Purpose != density.PurposeBasisSums {
			t.Errorf("%s: noise %+v, want discrete Gaussian count and basis sums", id, r.Noise)
		}

		// Merge the partials in partition order, as the release stage does.
		var ps []int32
		for p := range parts[start] {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		got := density.Stats{}
		for _, p := range ps {
			for _, s := range parts[start][p].Stats {
				if s.Release != "d" {
					continue
				}
				if len(s.Terms) != terms {
					t.Errorf("%s partition %d: %d term sums, want %d", id, p, len(s.Terms), terms)
					continue
				}
				if err := got.Merge(density.Stats{Count: s.Count, Terms: s.Terms}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if tr := want[start]; got.Count != tr.Count || !slices.Equal(got.Terms, tr.Terms) {
			t.Errorf("%s: merged partials count %d terms %v, truth %d %v", id, got.Count, got.Terms, tr.Count, tr.Terms)
		}
	}
}
