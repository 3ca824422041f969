package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/rr"
	"github.com/dpstream/dpstream/schema"
)

// rrConfig has two randomized_response releases of the same field, both
// with discrete Laplace central noise: m without a per-category cap (its
// debiased counts are unbiased for the true counts) and mc with
// max_per_bin: 1 (its exact counts exercise the cap). The producers
// randomize with epsilon_local 2.
func rrConfig() *testkit.Pipeline {
	modes := []string{"bus", "car", "bike", "walk"}
	return testkit.NewPipeline(testkit.NewStream("modes", "modes").Partitions(4).Budget(20, 1e-6).Releases(
		testkit.RandomizedResponse("m", "mode", modes...).EpsilonLocal(2).Noise("laplace").Epsilon(1),
		testkit.RandomizedResponse("mc", "mode", modes...).EpsilonLocal(2).MaxPerBin(1).Noise("laplace").Epsilon(0.5)))
}

// rrEvent is one produced record with what the test knows about it: the
// true (pre-randomization) category of a valid report, or the dead-letter
// reason of a bad one.
type rrEvent struct {
	unit     string
	ts       int64
	trueCat  int // index into the categories; -1 for a bad record
	reported int // index of the randomized report; -1 for a bad record
	reason   string
	value    []byte
}

// TestEndToEndRandomizedResponse randomizes a categorical field at the
// producer with the Go helper (rr.NewCategoryRandomizer), runs it
// through the whole pipeline on the real Kafka protocol, and checks: bad
// categories are dead-lettered and not counted; the exact counts behind
// each release are the reported categories of the kept events; the
// release's local ε, debiasing and simplex projection; the debiased counts
// against the TRUE category counts within their standard errors; and the
// budget spent, composed by hand.
func TestEndToEndRandomizedResponse(t *testing.T) {
	h := newHarness(t, rrConfig())
	const windows, perWindow, units, L = 2, 3000, 1200, 2
	const epsLocal = 2.0
	categories := []string{"bus", "car", "bike", "walk"}
	k := len(categories)

	// The producer helper, seeded so the test is deterministic (production
	// producers pass nil for crypto randomness).
	rz, err := rr.NewCategoryRandomizer(categories, epsLocal, noise.SeededSource(41))
	if err != nil {
		t.Fatal(err)
	}
	// p of k-ary randomized response at ε_local: ε = log((1−p+p/k)/(p/k))
	// solves to p = k/(e^ε + k − 1) (SPEC section 4.4).
	p := float64(k) / (math.Exp(epsLocal) + float64(k) - 1)
	if got := rz.Mechanism().P(); math.Abs(got-p) > 1e-12*p {
		t.Fatalf("randomizer p = %v, want k/(e^ε + k − 1) = %v", got, p)
	}
	pk := p / float64(k)
	wantLocal := math.Log((1 - p + pk) / pk)
	if math.Abs(wantLocal-epsLocal) > 1e-9 {
		t.Fatalf("local ε of p = %v is %v, want %v", p, wantLocal, epsLocal)
	}

	// True categories: each unit has a favourite (skewed towards bus) that
	// it reports 70% of the time, otherwise a uniform one. The skew makes
	// the raw report counts far from the true counts, so the accuracy
	// check below can tell debiased counts from undebiased ones.
	rng := rand.New(rand.NewPCG(43, 3))
	weights := []float64{0.55, 0.25, 0.15, 0.05}
	favourite := make([]int, units)
	for i := range favourite {
		u, acc := rng.Float64(), 0.0
		for c, w := range weights {
			acc += w
			if u < acc || c == k-1 {
				favourite[i] = c
				break
			}
		}
	}
	js := func(v map[string]any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var evs []rrEvent
	for w := 0; w < windows; w++ {
		ws := base + int64(w)*1000
		// Bad records first in the window, from units that report again
		// later: counted, they would also take those units' L slots.
		for i := 0; i < 3; i++ {
			u := fmt.Sprintf("u%d", 7*i+w)
			ts := ws + int64(i)
			evs = append(evs,
				rrEvent{unit: u, ts: ts, trueCat: -1, reported: -1, reason: "unknown_category",
					value: js(map[string]any{"user": u, "ts": ts, "mode": "train"})})
		}
		u := fmt.Sprintf("u%d", 100+w)
		evs = append(evs, rrEvent{unit: u, ts: ws + 3, trueCat: -1, reported: -1, reason: "invalid_value",
			value: js(map[string]any{"user": u, "ts": ws + 3, "mode": 3})})
		for i := 0; i < perWindow; i++ {
			ui := rng.IntN(units)
			if i < 200 { // make sure the units with bad records report too
				ui = []int{0, 7, 14, 100}[i%4] + w
			}
			tc := favourite[ui]
			if rng.Float64() >= 0.7 {
				tc = rng.IntN(k)
			}
			name, err := rz.Randomize(categories[tc])
			if err != nil {
				t.Fatal(err)
			}
			rep := slices.Index(categories, name)
			unit, ts := fmt.Sprintf("u%d", ui), ws+10+rng.Int64N(990)
			evs = append(evs, rrEvent{unit: unit, ts: ts, trueCat: tc, reported: rep,
				value: js(map[string]any{"user": unit, "ts": ts, "mode": name})})
		}
	}

	// The truth: the first L valid events per unit and window in produce
	// order (offset order on the unit's partition); bad records never reach
	// a window. reported counts the randomized reports (what the partials
	// hold), capped at one per unit and category for mc; trueCounts the
	// true categories of the same kept events.
	reported := map[int64][]int64{}
	capped := map[int64][]int64{}
	trueCounts := map[int64][]int64{}
	kept := map[int64]int64{}
	wantDLQ := map[string]int{}
	perUnit := map[string]int{}
	perCat := map[string]bool{}
	for _, ev := range evs {
		if ev.reason != "" {
			wantDLQ[ev.reason]++
			continue
		}
		w := ev.ts / 1000 * 1000
		key := fmt.Sprintf("%d/%s", w, ev.unit)
		if perUnit[key] >= L {
			continue
		}
		perUnit[key]++
		if reported[w] == nil {
			reported[w], capped[w], trueCounts[w] = make([]int64, k), make([]int64, k), make([]int64, k)
		}
		kept[w]++
		reported[w][ev.reported]++
		trueCounts[w][ev.trueCat]++
		if ck := fmt.Sprintf("%s/%d", key, ev.reported); !perCat[ck] {
			perCat[ck] = true
			capped[w][ev.reported]++
		}
	}
	for w := range reported {
		if slices.Equal(reported[w], capped[w]) {
			t.Fatalf("test data: the per-category cap never binds in window %d", w)
		}
	}

	sampler := noise.New(noise.SeededSource(47))
	acc := h.start("acc", pipeline.Stages{Accumulate: true}, nil)
	rel := h.start("rel", pipeline.Stages{Release: true}, sampler)
	wr := h.Conn.NewWriter(h.cfg.Streams[0].Topic)
	msgs := make([]kafka.Message, len(evs))
	for i, ev := range evs {
		msgs[i] = kafka.Message{Key: []byte(ev.unit), Value: ev.value}
	}
	h.Write(wr, msgs...)
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	nBad := 0
	for _, n := range wantDLQ {
		nBad += n
	}
	waitFor(t, 90*time.Second, "randomized_response releases of all data windows and the dead letters", func() bool {
		rs := h.releases()
		return len(releasedWindows(rs, "m")) >= windows && len(releasedWindows(rs, "mc")) >= windows &&
			len(h.ReadAll(h.cfg.Topics.DeadLetter)) >= nBad
	}, acc, rel)
	// Let a duplicate release, if the stage made one, reach the topic.
	time.Sleep(time.Second)
	rel.stop()

	// Dead letters: exactly the bad records, with their reasons.
	bad := map[string]string{}
	for _, ev := range evs {
		if ev.reason != "" {
			bad[string(ev.value)] = ev.reason
		}
	}
	gotDLQ := map[string]int{}
	for _, m := range h.ReadAll(h.cfg.Topics.DeadLetter) {
		reason := ""
		for _, hd := range m.Headers {
			if hd.Key == "dpstream.reason" {
				reason = string(hd.Value)
			}
		}
		if want, ok := bad[string(m.Value)]; !ok || want != reason {
			t.Errorf("dead letter %q with reason %q: want one of the bad records with its reason (%q)", m.Value, reason, want)
		}
		gotDLQ[reason]++
	}
	if fmt.Sprint(gotDLQ) != fmt.Sprint(wantDLQ) {
		t.Errorf("dead letters by reason %v, want %v", gotDLQ, wantDLQ)
	}

	byID := h.uniqueReleases()
	ledger := map[string]schema.LedgerCharge{}
	for _, lc := range h.ledger() {
		ledger[lc.ReleaseID] = lc
	}
	parts := h.partials()["modes"]

	// Budget: every charge is a discrete Laplace of ε0 = Δ1/t, charged
	// with the generic pure-ε RDP curve (as in TestEndToEnd). The release
	// stage charges windows in order and a window's releases in
	// configuration order; after the data's windows, idle partitions close
	// empty windows, which are released and charged too. After each
	// release, the spent ε must be the hand composition (spentAfter) of
	// the charges up to it in that order.
	const delta = 1e-6
	releaseEps := map[string]float64{"m": 1, "mc": 0.5}
	all := slices.Collect(maps.Values(byID))
	slices.SortFunc(all, func(a, b schema.Release) int {
		if c := cmp.Compare(a.WindowStart, b.WindowStart); c != 0 {
			return c
		}
		return cmp.Compare(a.Release, b.Release) // "m" before "mc", the configuration order
	})
	var order []float64
	for i, r := range all {
		if r.Status != "ok" {
			t.Errorf("%s: status %s, want ok (the budget allows every window)", r.ReleaseID, r.Status)
		}
		order = append(order, releaseEps[r.Release])
		if want := spentAfter(order, delta); math.Abs(r.EpsilonSpent-want) > 1e-9 {
			t.Errorf("%s (charge %d): epsilon spent %.12f, composed by hand %.12f", r.ReleaseID, i+1, r.EpsilonSpent, want)
		}
	}

	for w := 0; w < windows; w++ {
		start := base + int64(w)*1000
		if n := accumulatedIn(parts[start]); n != kept[start] {
			t.Errorf("window %d: partials hold %d kept events, want %d (bad records must not take a unit's slots)", w, n, kept[start])
		}
		for _, name := range []string{"m", "mc"} {
			id := fmt.Sprintf("modes/%s/%d", name, start)
			r, ok := byID[id]
			if !ok {
				t.Fatalf("missing release %s", id)
			}
			if r.Status != "ok" || r.Kind != "randomized_response" {
				t.Errorf("%s: status %s kind %s, want ok randomized_response", id, r.Status, r.Kind)
				continue
			}
			if !slices.Equal(r.Fields, []string{"mode"}) || !slices.Equal(r.Categories, categories) {
				t.Errorf("%s: fields %v categories %v, want [mode] %v", id, r.Fields, r.Categories, categories)
			}
			if len(r.NoisyCounts) != k || len(r.DebiasedCounts) != k || len(r.StdErrors) != k || len(r.Probabilities) != k {
				t.Fatalf("%s: %d noisy, %d debiased, %d std errors, %d probabilities; want %d each",
					id, len(r.NoisyCounts), len(r.DebiasedCounts), len(r.StdErrors), len(r.Probabilities), k)
			}

			// Exact statistics: the merged partials count the reported
			// categories of the kept events (capped for mc).
			want := reported[start]
			if name == "mc" {
				want = capped[start]
			}
			got := mergedBins(t, parts[start], name, k)
			if !slices.Equal(got, want) {
				t.Errorf("%s: merged partial counts %v, want the reported counts %v", id, got, want)
			}

			// Central noise: discrete Laplace with t = Δ1/ε, Δ1 = L (a cap
			// does not lower the L1 sensitivity). Every noisy count is
			// within the 99.9% bound, Bonferroni over the 4 categories: over
			// random seeds the 4 releases fail this together at most 0.4%
			// of the time (deterministic with seed 47).
			comp := schema.NoiseComponent{Purpose: aggregate.PurposeBins, Mechanism: string(noise.DiscreteLaplace),
				Sensitivity: L, Scale: L / releaseEps[name], Epsilon: releaseEps[name]}
			if len(r.Noise) != 1 || r.Noise[0] != comp {
				t.Fatalf("%s: noise %+v, want %+v", id, r.Noise, comp)
			}
			if lc, ok := ledger[id]; !ok || lc.Status != "ok" || len(lc.Charges) != 1 || lc.Charges[0] != comp {
				t.Errorf("%s: ledger charge %+v, want status ok charging %+v", id, lc, comp)
			}
			bound := noiseTail(t, comp, 0.001/float64(k))
			for j, d := range r.NoisyCounts {
				if d != math.Trunc(d) || math.Abs(d-float64(got[j])) >= bound {
					t.Errorf("%s %s: noisy count %v vs exact %d: not an integer within the 99.9%% bound %v", id, categories[j], d, got[j], bound)
				}
			}

			// Local ε: the producers' ε_local for the configured epsilon_local.
			if r.LocalEpsilon == nil || math.Abs(*r.LocalEpsilon-wantLocal) > 1e-9 {
				t.Errorf("%s: local ε %v, want log((1−p+p/k)/(p/k)) = %v", id, r.LocalEpsilon, wantLocal)
			}

			// Debiasing is post-processing of the noisy counts:
			// T̂_c = (D_c − (p/k)·N̂)/(1 − p) with N̂ = Σ D_c, so Σ T̂ = N̂;
			// the probabilities are on the simplex.
			nHat, tSum, pSum := 0.0, 0.0, 0.0
			for _, d := range r.NoisyCounts {
				nHat += d
			}
			for j, d := range r.NoisyCounts {
				tHat := (d - pk*nHat) / (1 - p)
				if math.Abs(r.DebiasedCounts[j]-tHat) > 1e-9*math.Max(1, math.Abs(tHat)) {
					t.Errorf("%s %s: debiased %v, want (D − (p/k)N̂)/(1 − p) = %v", id, categories[j], r.DebiasedCounts[j], tHat)
				}
				tSum += r.DebiasedCounts[j]
				if !(r.Probabilities[j] >= 0) {
					t.Errorf("%s %s: probability %v < 0", id, categories[j], r.Probabilities[j])
				}
				pSum += r.Probabilities[j]
				if !(r.StdErrors[j] > 0) || math.IsInf(r.StdErrors[j], 0) {
					t.Errorf("%s %s: standard error %v, want finite and > 0", id, categories[j], r.StdErrors[j])
				}
			}
			if math.Abs(tSum-nHat) > 1e-6*math.Max(1, math.Abs(nHat)) {
				t.Errorf("%s: debiased counts sum to %v, noisy counts to %v", id, tSum, nHat)
			}
			if math.Abs(pSum-1) > 1e-9 {
				t.Errorf("%s: probabilities sum to %.15f, want 1", id, pSum)
			}

			// Accuracy against the TRUE categories of the kept events, for
			// the uncapped release (a binding cap biases the debiasing).
			// T̂_c is unbiased with standard deviation StdErr_c and, with
			// about 2000 reports per window, close to normal: |T̂ − T| ≥
			// 4·StdErr has probability about 6.3e-5 per count, so the 8
			// counts fail together about 0.05% of the time over random
			// seeds (deterministic with seeds 41, 43 and 47).
			if name == "m" {
				discriminates := false
				for j, tc := range trueCounts[start] {
					if d := math.Abs(r.DebiasedCounts[j] - float64(tc)); d >= 4*r.StdErrors[j] {
						t.Errorf("%s %s: debiased %.1f vs true %d: |error| %.1f beyond 4 standard errors (%.1f)",
							id, categories[j], r.DebiasedCounts[j], tc, d, 4*r.StdErrors[j])
					}
					discriminates = discriminates || math.Abs(float64(got[j]-tc)) >= 4*r.StdErrors[j]
				}
				if !discriminates {
					t.Errorf("test data: the raw report counts %v are within 4 standard errors of the truth %v; the accuracy check cannot detect a missing debiasing", got, trueCounts[start])
				}
			}
		}
	}

	// Accountant topic: the latest state equals the hand composition, and
	// every charge being pure, the plain sum is kept too.
	last := h.lastBudgetState("modes")
	pure := 0.0
	for _, e := range order {
		pure += e
	}
	if want := spentAfter(order, delta); last.ReleasesCharged != int64(len(order)) || last.ReleasesRefused != 0 || math.Abs(last.EpsilonSpent-want) > 1e-9 {
		t.Errorf("accountant: charged %d refused %d spent %.12f; by hand %d, 0 and %.12f",
			last.ReleasesCharged, last.ReleasesRefused, last.EpsilonSpent, len(order), want)
	}
	if last.PureEpsilon == nil || math.Abs(*last.PureEpsilon-pure) > 1e-12 {
		got := math.NaN()
		if last.PureEpsilon != nil {
			got = *last.PureEpsilon
		}
		t.Errorf("accountant pure ε %v, want the sum %v", got, pure)
	}
}

// spentAfter composes pure charges of the given ε by hand, as the
// accountant must: the sum of their generic pure-ε RDP curves converted to
// ε at delta, or the plain sum of the ε if smaller (basic composition).
func spentAfter(eps []float64, delta float64) float64 {
	c, pure := accountant.ZeroCurve(), 0.0
	for _, e := range eps {
		c, pure = c.Add(accountant.PureCurve(e)), pure+e
	}
	return math.Min(accountant.Epsilon(c, delta), pure)
}

// accumulatedIn counts the kept events in one window's partials.
func accumulatedIn(parts map[int32]schema.Partial) int64 {
	var n int64
	for _, p := range parts {
		n += p.Events
	}
	return n
}
