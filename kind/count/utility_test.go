package count_test

import (
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/dataset"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// flightsConfig counts NYC's 2013 departures per destination airport in
// 30-day windows, the plane being the privacy unit: a plane keeps its first
// 10 flights of a window and counts in its first destination only
// (max_keys 1). Key selection (optimal, ε = 1, δ = 1e-6) and the counts
// (discrete Laplace, ε = 1, so t = L'/ε = 10) split the release's ε = 2.
const flightsConfig = `
streams:
  - name: flights
    topic: flights
    format: json
    privacy_unit: plane
    event_time: time_ms
    window: {size: 720h}
    contribution: {max_events_per_window: 10}
    budget: {epsilon: 1000, delta: 1e-3}
    releases:
      - {name: per_dest, kind: count, group_by: dest, max_keys: 1, max_per_key: 10, selection: {method: optimal, epsilon: 1}, epsilon: 2, delta: 1e-6}
`

// window is one window's exact per-key statistics.
type window struct {
	start  int64
	merged grouped.Merged
}

// flightWindows runs the flights through the release's statistic as the
// accumulate stage would on one partition: in time order, a plane's first
// L events of a window kept, its units numbered by first appearance.
func flightWindows(t *testing.T, p *grouped.Plan, size int64) []window {
	t.Helper()
	flights, err := dataset.Flights()
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Statistic([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		acc   kind.Accumulator
		units map[string][2]int // plane → index, kept
	}
	open := map[int64]*state{}
	for _, f := range flights {
		start := f.TimeMs / size * size
		w := open[start]
		if w == nil {
			w = &state{acc: st.NewWindow(), units: map[string][2]int{}}
			open[start] = w
		}
		u, seen := w.units[f.Plane]
		if !seen {
			u[0] = len(w.units)
		}
		if u[1] >= p.L {
			continue
		}
		u[1]++
		w.units[f.Plane] = u
		vals, keys := []float64{0}, []string{f.Dest}
		if err := w.acc.Check(vals, keys); err != nil {
			t.Fatal(err)
		}
		if err := w.acc.Add(vals, keys, u[0], false); err != nil {
			t.Fatal(err)
		}
	}
	var out []window
	for start, w := range open {
		rs := schema.ReleaseStats{Release: "per_dest"}
		w.acc.Stats(&rs)
		m, err := p.Merge([]kind.Part{{Partition: 0, Stats: rs}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, window{start, m.(grouped.Merged)})
	}
	slices.SortFunc(out, func(a, b window) int { return int(a.start - b.start) })
	return out
}

// dlapCDF is P(|Z| ≤ m) for the discrete Laplace of scale t:
// 1 − 2q^{m+1}/(1+q), q = e^{−1/t}.
func dlapCDF(t float64, m int64) float64 {
	if m < 0 {
		return 0
	}
	q := math.Exp(-1 / t)
	return 1 - 2*math.Pow(q, float64(m+1))/(1+q)
}

// TestFlightsUtility is the utility of a per-key count with private key
// selection on real, heavy-tailed data (testdata/flights: 104 destinations,
// from 1 to 264 planes per destination and window). Over 40 seeds and the
// 13 windows it checks:
//
//   - every key with at least 10× the selection's threshold in units is
//     released with probability ≥ 0.99 (with the optimal mechanism it is
//     certain from about twice the threshold);
//   - the released counts' errors follow the discrete Laplace of scale 10
//     exactly: the fraction of |error| at or below its theoretical median is
//     within 5 standard errors of its exact probability (each check fails
//     falsely with probability below 1e-6), and likewise the fraction of
//     relative errors |error|/count at or below the theoretical median
//     relative error of the released keys (the selection's noise is
//     independent of the counts', so the released keys' errors are the
//     noise's).
//
// It logs the threshold, the release rates and the median relative error
// measured against the theory.
func TestFlightsUtility(t *testing.T) {
	c, err := config.Parse([]byte(flightsConfig), "flights.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(c)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0].Releases[0].Kind.(*grouped.Plan)
	size := c.Streams[0].Window.Size.Milliseconds()
	windows := flightWindows(t, p, size)
	tau := p.Selector.Threshold()
	scale := p.Cal.Components[0].Scale
	if scale != 10 {
		t.Fatalf("count noise scale %v, want 10 (L' = 10, ε = 1)", scale)
	}

	const seeds = 40
	var big, bigReleased, small, smallReleased int
	var absErr []int64
	var relErr, trueCounts []float64
	for seed := range seeds {
		sampler := noise.New(noise.SeededSource(uint64(1000 + seed)))
		for _, w := range windows {
			var rel schema.Release
			if _, err := p.Release(w.merged, sampler, &rel); err != nil {
				t.Fatal(err)
			}
			released := map[string]float64{}
			for i, k := range rel.Keys {
				released[k] = rel.Values[i]
			}
			for _, g := range w.merged {
				v, ok := released[g.Key]
				switch {
				case float64(g.Units) >= 10*tau:
					big++
					if ok {
						bigReleased++
					}
				case float64(g.Units) < tau:
					small++
					if ok {
						smallReleased++
					}
				}
				if ok {
					e := int64(math.Abs(v - float64(g.Count)))
					absErr = append(absErr, e)
					relErr = append(relErr, float64(e)/float64(g.Count))
					trueCounts = append(trueCounts, float64(g.Count))
				}
			}
		}
	}
	if big < 20*seeds/10 {
		t.Fatalf("only %d (key, window, seed) samples with ≥ 10× the threshold %v units: the test says little", big, tau)
	}
	rate := float64(bigReleased) / float64(big)
	t.Logf("threshold %.0f units; keys with ≥ %.0f units released %d/%d (%.4f); keys below the threshold %d/%d",
		tau, 10*tau, bigReleased, big, rate, smallReleased, small)
	if rate < 0.99 {
		t.Errorf("keys with at least 10× the threshold released with frequency %v < 0.99", rate)
	}

	// The absolute errors against the discrete Laplace of scale 10.
	n := float64(len(absErr))
	var med int64
	for dlapCDF(scale, med) < 0.5 {
		med++
	}
	check := func(what string, got, want, sd float64) {
		t.Helper()
		if math.Abs(got-want) > 5*sd {
			t.Errorf("%s: fraction %v, theory %v ± %v (5 sd)", what, got, want, 5*sd)
		}
	}
	atMed := 0.0
	for _, e := range absErr {
		if e <= med {
			atMed++
		}
	}
	fm := dlapCDF(scale, med)
	check("|error| ≤ its theoretical median", atMed/n, fm, math.Sqrt(fm*(1-fm)/n))

	// The theoretical median relative error of the released keys: the x
	// with Σ_i P(|Z| ≤ x·n_i) = N/2, by bisection.
	expected := func(x float64) (mean, sd float64) {
		var s, v float64
		for _, c := range trueCounts {
			f := dlapCDF(scale, int64(math.Floor(x*c)))
			s += f
			v += f * (1 - f)
		}
		return s / n, math.Sqrt(v) / n
	}
	lo, hi := 0.0, 10.0
	for range 60 {
		mid := (lo + hi) / 2
		if m, _ := expected(mid); m < 0.5 {
			lo = mid
		} else {
			hi = mid
		}
	}
	theory := hi
	within := 0.0
	for _, r := range relErr {
		if r <= theory {
			within++
		}
	}
	want, sd := expected(theory)
	check("relative error ≤ its theoretical median", within/n, want, sd)
	sorted := slices.Clone(relErr)
	sort.Float64s(sorted)
	t.Logf("released counts (%d samples): median |error| %d events in theory (P = %.3f), measured fraction at or below it %.3f; median relative error measured %.4f, theory %.4f",
		len(absErr), med, fm, atMed/n, sorted[len(sorted)/2], theory)
}
