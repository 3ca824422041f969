package e2e

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// continualOf makes r a continual release over horizons of horizon
// windows with the given method. testkit renders flat release settings
// only, so the setting is a marker that newHarness expands
// (expandContinual) into continual: {horizon, method}.
func continualOf(r *testkit.Release, horizon int, method string) *testkit.Release {
	return r.Set("continual", fmt.Sprintf("continual-%d-%s", horizon, method))
}

var continualMarker = regexp.MustCompile(`continual: continual-(\d+)-([a-z_]+)`)

// expandContinual turns continualOf's markers in a rendered configuration
// into continual mappings.
func expandContinual(yaml string) string {
	return continualMarker.ReplaceAllString(yaml, "continual: {horizon: $1, method: $2}")
}

// continualHorizon is the horizon of the e2e tests' continual releases:
// the restart test's 11 windows span a whole horizon and the start of the
// next, the crash test's 24 three horizons. The tests' windows start at
// base, window index base/1000, which must be a horizon's step 0.
const continualHorizon = 8

// continualRestartConfig is an event-level stream (every event its own
// privacy unit, so a unit is in one window and the factorizations beat
// per-window noise) with three continual releases: n, a count with method
// auto (which picks sqrt there), b, a count with blt, and h, a 5-bin
// histogram with the binary tree.
func continualRestartConfig() *testkit.Pipeline {
	gauss := func(r *testkit.Release) *testkit.Release {
		return r.Noise("gaussian").Epsilon(0.5).Delta(1e-7)
	}
	return testkit.NewPipeline(testkit.NewStream("trips", "events").Partitions(4).PrivacyUnit("event").MaxEvents(1).
		Window(time.Second, 200*time.Millisecond, 10*time.Minute).Budget(1000, 1e-6).Releases(
		continualOf(gauss(testkit.Count("n")), continualHorizon, "auto"),
		continualOf(gauss(testkit.Count("b")), continualHorizon, "blt"),
		continualOf(gauss(testkit.Histogram("h", "v", 0, 10, 5)), continualHorizon, "tree")))
}

// continualTolerance is how many 95% half-widths a running total may be
// from the exact running total: 4 half-widths are 7.84σ, exceeded with
// probability 2Φ(−7.84) ≈ 4.5e-15 per value (the running noise is a sum of
// discrete Gaussians, close to normal); over the few hundred values of a
// test the false-failure rate is below 1e-12.
const continualTolerance = 4

// TestContinualRestart runs continual releases across a clean restart
// (pipeline and, on the embedded broker, broker stopped after windows 0..3
// of the first horizon, in the middle of window 4) until the horizon is
// over and the next has begun (windows 0..10, horizon 8). It checks that
// the restart continued every run exactly (checkContinual: every window
// charged and published once, the steps' logs chain across the restart,
// and replaying them through a fresh run of the configured plan
// reproduces every published running total and increment bit for bit;
// one charge per horizon; the next horizon starts from zero), and that
// the running totals are the truth plus noise of the stated size.
func TestContinualRestart(t *testing.T) {
	if w := base / 1000; w%continualHorizon != 0 {
		t.Fatalf("test setup: window %d (base) is step %d of its horizon, want 0", w, w%continualHorizon)
	}
	h := newHarness(t, continualRestartConfig())
	names := releaseNames(h)
	for _, pr := range h.plan[0].Releases {
		rp, ok := pr.Kind.(kind.Running)
		if !ok || rp.Horizon() != continualHorizon {
			t.Fatalf("test setup: release %s is not continual over %d windows", pr.Config.Name, continualHorizon)
		}
		t.Logf("release %s: %s", pr.Config.Name, pr.Kind.Describe())
		// At event level auto must pick a factorization, not per-window
		// noise.
		if m, ok := pr.Kind.(interface{ Method() string }); pr.Config.Name == "n" && (!ok || m.Method() != "sqrt" && m.Method() != "blt") {
			t.Errorf("release n: method auto at event level is not sqrt or blt: %s", pr.Kind.Describe())
		}
	}
	const windows, perWindow = 11, 100
	evs := append(genEvents(21, windows, perWindow, 1000), closers(windows, 4)...)
	// Event-level: no bound per unit; no event is late (each partition's
	// events come in window order).
	want, late := truthWithLateness(evs, math.MaxInt, 4, 200)
	if late != 0 {
		t.Fatalf("test setup: %d late events", late)
	}
	cut := 4*perWindow + perWindow/2
	topic := h.cfg.Streams[0].Topic
	released := func(n int) func() bool {
		return func() bool {
			rs := h.releases()
			for _, name := range names {
				if len(releasedWindows(rs, name)) < n {
					return false
				}
			}
			return true
		}
	}

	in := h.start("first", pipeline.Stages{Accumulate: true, Release: true}, nil)
	h.ProduceJSON(topic, evs[:cut], "user")
	waitFor(t, 60*time.Second, "windows 0..3 released", released(4), in)
	in.stop()
	before := len(h.ledger())
	h.Restart()

	h.ProduceJSON(topic, evs[cut:], "user")
	in2 := h.start("second", pipeline.Stages{Accumulate: true, Release: true}, nil)
	waitFor(t, 90*time.Second, "windows 0..10 released", released(windows), in2)
	in2.stop()

	ms := h.ReadAll(h.cfg.Topics.Ledger)
	answers, violations := readAnswers(ms)
	pubs := h.ReadAll(h.cfg.Topics.Releases)
	violations = append(violations, checkPublished(answers, pubs)...)
	copies := map[string]int{}
	for _, m := range pubs {
		copies[string(m.Key)]++
	}
	for id, n := range copies {
		if n != 1 {
			violations = append(violations, fmt.Sprintf("release %s published %d times after a clean restart, want once", id, n))
		}
	}
	series, bad := checkContinual(h.plan, ms)
	violations = append(violations, bad...)
	violations = append(violations, continualAccuracy(series, want)...)
	for _, v := range violations {
		t.Error(v)
	}
	if before == 0 || before >= len(h.ledger()) {
		t.Errorf("the first life charged %d of the %d releases: the restart was not mid-run", before, len(h.ledger()))
	}
	t.Logf("restart after %d of %d charges", before, len(h.ledger()))
	for _, name := range names {
		s := series["trips/"+name]
		if len(s) != windows {
			t.Errorf("release %s: %d windows released ok, want %d", name, len(s), windows)
			continue
		}
		// The next horizon starts from zero (checkContinual replays it
		// on a fresh run): its first window's increment is its total.
		if nh := s[continualHorizon]; nh.horizon != s[0].horizon+1 || nh.step != 0 {
			t.Errorf("release %s: window %d is step %d of horizon %d, want step 0 of horizon %d", name, nh.rel.WindowStart, nh.step, nh.horizon, s[0].horizon+1)
		}
		// Each window published once and in order, the first life's
		// windows before the second's.
		for i, cw := range s {
			if w := base + int64(i)*1000; cw.rel.WindowStart != w {
				t.Errorf("release %s: window %d is the ledger's %dth, want window %d", name, cw.rel.WindowStart, i+1, w)
			}
		}
		t.Logf("release %s: running totals %s", name, continualSummary(s))
	}
}

// continualWindow is one window of a continual release as the ledger
// counts it, replayed: its horizon and step, and the published release
// (the ledger's payload, which checkPublished ties to the releases topic).
type continualWindow struct {
	horizon int64
	step    int
	rel     schema.Release
}

// continualRun is one horizon of one continual release being replayed.
type continualRun struct {
	// replay gets every log through Run.Replay, as the release stage's
	// Restore does; rerun gets them through Run.Release with the logged
	// exact statistic and noise (logNoise): the same deterministic
	// arithmetic, which fills the release (kind.Run exposes no totals).
	replay, rerun kind.Run
	prev          *schema.Release
	charged       []int64 // windows whose charge carries the horizon's charges
	broken        bool    // a log did not continue the run: later ones are not checked
}

// checkContinual checks the continual releases (kind.Running) of the
// planned streams against a ledger (its records in order, applied with
// ledger.Book; the first valid charge of each release id counts, as for
// the release stage's Restore, and readAnswers reports any other). For
// each release and horizon, in ledger order, every window's charge must
// be ok and its step log must continue the horizon's run: it starts at
// the step after the previous log's last (a fresh run, at step 0, for the
// horizon's first), runs up to the window's own step (the steps between
// are windows without data, logged with exact statistic 0), is made under
// the plan's factorization, and Run.Replay accepts it. Replaying the logs
// through a fresh run reproduces the published release bit for bit:
// running totals and their intervals, increments, horizon and step; each
// increment is the published total minus the horizon's previous published
// one (0 before its first). Exactly one window per horizon, its first,
// carries the horizon's charges. A restart that lost a run's state (a fresh run
// mid-horizon), drew a published window's noise again or re-noised the
// replayed steps publishes totals that this replay does not reproduce, or
// logs that do not chain (TestContinualChecksCatch).
//
// It returns the windows that passed, by "stream/release", in ledger
// order.
func checkContinual(streams []plan.Stream, ms []kafka.Message) (map[string][]continualWindow, []string) {
	type runKey struct {
		id      string // stream/release
		horizon int64
	}
	var (
		out     []string
		book    = ledgerBooks{}
		counted = map[string]bool{}
		runs    = map[runKey]*continualRun{}
		order   []runKey
		series  = map[string][]continualWindow{}
	)
	byName := map[string]plan.Release{}
	sizes := map[string]int64{}
	for _, ps := range streams {
		sizes[ps.Config.Name] = ps.Config.Window.Size.Milliseconds()
		for _, pr := range ps.Releases {
			byName[ps.Config.Name+"/"+pr.Config.Name] = pr
		}
	}
	for _, m := range ms {
		e, err := book.Apply(m)
		if err != nil {
			return series, append(out, fmt.Sprintf("ledger: %v", err))
		}
		if e.Type != schema.LedgerTypeCharge || !e.Valid || e.Identical || counted[e.Charge.ReleaseID] {
			continue
		}
		// The step log, from LedgerCharge.State or the legacy fields.
		lc := running.LegacyCharge(e.Charge)
		counted[lc.ReleaseID] = true
		name := lc.Stream + "/" + lc.Release
		pr, ok := byName[name]
		rp, running := pr.Kind.(kind.Running)
		if !ok || !running {
			if len(lc.ContinualX) > 0 || len(lc.ContinualZ) > 0 {
				out = append(out, fmt.Sprintf("release %s is not continual, yet its charge carries a step log", lc.ReleaseID))
			}
			continue
		}
		tp, ok := pr.Kind.(kind.Totals)
		if !ok {
			out = append(out, fmt.Sprintf("release %s: continual plan %T has no totals", lc.ReleaseID, pr.Kind))
			continue
		}
		n := tp.TotalsShape().N
		T := rp.Horizon()
		w := floorDiv(lc.WindowStart, sizes[lc.Stream])
		hz := floorDiv(w, int64(T))
		step := int(w - hz*int64(T))
		k := runKey{name, hz}
		run := runs[k]
		if run == nil {
			run = &continualRun{}
			if run.replay, err = rp.NewRun(); err == nil {
				run.rerun, err = rp.NewRun()
			}
			if err != nil {
				return series, append(out, fmt.Sprintf("release %s: new run: %v", lc.ReleaseID, err))
			}
			runs[k] = run
			order = append(order, k)
		}
		if lc.Status != release.StatusOK {
			out = append(out, fmt.Sprintf("release %s (horizon %d, window %d of %d): status %s, want ok", lc.ReleaseID, hz, step+1, T, lc.Status))
			continue
		}
		if len(lc.Charges) > 0 {
			run.charged = append(run.charged, lc.WindowStart)
		}
		if run.broken {
			continue
		}
		pub, err := schema.DecodeRelease(lc.Payload)
		if err != nil || pub.Chunks > 1 {
			out = append(out, fmt.Sprintf("release %s: the ledger's payload does not decode into one release (%v, %d chunks)", lc.ReleaseID, err, pub.Chunks))
			continue
		}
		l := kind.Log{First: int(lc.ContinualFirst), X: lc.ContinualX, Z: lc.ContinualZ, Factor: lc.ContinualFactor}
		fail := func(format string, args ...any) {
			out = append(out, fmt.Sprintf("release %s (horizon %d, window %d of %d): ", lc.ReleaseID, hz, step+1, T)+fmt.Sprintf(format, args...))
		}
		if len(l.X) == 0 || len(l.X)%n != 0 || len(l.Z) != len(l.X) {
			fail("step log of %d statistics and %d noise values for %d coordinates", len(l.X), len(l.Z), n)
			run.broken = true
			continue
		}
		if last := l.First + len(l.X)/n - 1; l.First != run.replay.Steps() || last != step {
			fail("its step log covers steps %d..%d; the run is at step %d (the previous log's last + 1) and the window is step %d: the log does not continue the run", l.First, last, run.replay.Steps(), step)
			run.broken = true
			continue
		}
		if err := run.replay.Replay(l); err != nil {
			fail("Run.Replay refuses its step log: %v", err)
			run.broken = true
			continue
		}
		var got schema.Release
		if err := rerun(tp, run.rerun, l, step, &got); err != nil {
			fail("%v", err)
			run.broken = true
			continue
		}
		if run.rerun.Steps() != run.replay.Steps() {
			fail("replayed to step %d, re-released to step %d", run.replay.Steps(), run.rerun.Steps())
		}
		if g, p := continualView(got), continualView(pub); g != p {
			fail("the published running totals are not what its step log gives after the earlier ones:\n\tpublished %s\n\treplayed  %s", p, g)
		}
		if pub.Horizon != int32(T) || pub.HorizonWindow != int32(step+1) {
			fail("published as window %d of %d", pub.HorizonWindow, pub.Horizon)
		}
		// The increment is the running total minus the previous published
		// window's of the horizon (0 before its first): windows without
		// data in between publish nothing, and their steps are part of
		// this window's.
		if d := incrementDiff(pub, run.prev); d != "" {
			fail("%s", d)
		}
		run.prev = &pub
		series[name] = append(series[name], continualWindow{horizon: hz, step: step, rel: pub})
	}
	for _, k := range order {
		r := runs[k]
		if len(r.charged) != 1 {
			out = append(out, fmt.Sprintf("release %s, horizon %d: charged at %d windows %v, want once, at the horizon's first decided window", k.id, k.horizon, len(r.charged), r.charged))
		}
	}
	for _, s := range series {
		// The charge is the first decided window's.
		for i, cw := range s {
			if i > 0 && s[i-1].horizon == cw.horizon {
				continue
			}
			if k := (runKey{cw.rel.Stream + "/" + cw.rel.Release, cw.horizon}); len(runs[k].charged) == 1 && runs[k].charged[0] != cw.rel.WindowStart {
				out = append(out, fmt.Sprintf("release %s, horizon %d: charged at window %d, not at its first decided window %d", k.id, k.horizon, runs[k].charged[0], cw.rel.WindowStart))
			}
		}
	}
	return series, out
}

// rerun re-releases a logged window on run with the log's last exact
// statistic and its noise, filling rel; the log it returns must be the
// logged one (so the steps between were logged as windows without data).
func rerun(tp kind.Totals, run kind.Run, l kind.Log, step int, rel *schema.Release) error {
	n := tp.TotalsShape().N
	x := l.X[len(l.X)-n:]
	m := aggregate.Stats{Bins: x}
	if n == 1 {
		m = aggregate.Stats{Count: x[0]}
	}
	if got, err := tp.TotalsOf(m); err != nil || !slices.Equal(got, x) {
		return fmt.Errorf("cannot rebuild the merged statistics of a %T from %v (%v, %v)", tp, x, got, err)
	}
	ln := &logNoise{z: l.Z}
	got, err := run.Release(m, step, ln, rel)
	switch {
	case err != nil:
		return fmt.Errorf("re-releasing its step log: %w", err)
	case ln.next != len(l.Z):
		return fmt.Errorf("re-releasing its step log drew %d noise values, the log has %d", ln.next, len(l.Z))
	case got.First != l.First || got.Factor != l.Factor || !slices.Equal(got.X, l.X) || !slices.Equal(got.Z, l.Z):
		return fmt.Errorf("its step log (first %d, x %v) is not the one a window with these data logs (first %d, x %v): a step without data has a nonzero statistic", l.First, l.X, got.First, got.X)
	}
	return nil
}

// logNoise is a noise sampler that returns a step log's noise values in
// order.
type logNoise struct {
	z    []int64
	next int
}

func (s *logNoise) DiscreteGaussian(float64) (int64, error) {
	if s.next >= len(s.z) {
		return 0, errors.New("the step log has no more noise values")
	}
	s.next++
	return s.z[s.next-1], nil
}

func (s *logNoise) DiscreteLaplace(float64) (int64, error) {
	return 0, errors.New("a continual release draws no Laplace noise")
}

// continualView renders the fields of a release that a continual run
// fills, each float in its shortest exact form (equal strings: equal
// bits).
func continualView(r schema.Release) string {
	p := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	return fmt.Sprintf("window %d/%d value %s ±%s total %s ±%s counts %v totals %v ±%v",
		r.HorizonWindow, r.Horizon, p(r.Value), p(r.Interval95), p(r.RunningTotal), p(r.RunningInterval95), r.NoisyCounts, r.RunningTotals, r.RunningIntervals95)
}

// incrementDiff says how a release's increments differ from its running
// totals minus prev's (nil prev: zeros), computed as the run computes
// them; "" when they agree bit for bit.
func incrementDiff(r schema.Release, prev *schema.Release) string {
	tot, inc := continualTotals(r)
	var last []float64
	if prev != nil {
		last, _ = continualTotals(*prev)
	}
	if len(inc) != len(tot) || last != nil && len(last) != len(tot) {
		return fmt.Sprintf("%d increments, %d running totals, %d before", len(inc), len(tot), len(last))
	}
	for i := range tot {
		want, before := tot[i], 0.0
		if last != nil {
			want, before = tot[i]-last[i], last[i]
		}
		if math.Float64bits(inc[i]) != math.Float64bits(want) {
			return fmt.Sprintf("increment %d is %v, want the running total %v minus the previous %v", i, inc[i], tot[i], before)
		}
	}
	return ""
}

// continualTotals returns a continual release's running totals and
// increments (one for a count or sum, one per bin for a histogram).
func continualTotals(r schema.Release) (totals, increments []float64) {
	if r.RunningTotal != nil {
		totals = []float64{*r.RunningTotal}
		if r.Value != nil {
			increments = []float64{*r.Value}
		}
		return totals, increments
	}
	return r.RunningTotals, r.NoisyCounts
}

// continualAccuracy checks the running totals of the continual count and
// histogram releases of the "trips" stream against the exact running
// totals of want (the windows' exact statistics, from the horizon's first
// window; a window not in want has none): within continualTolerance 95%
// half-widths, and not all exact (the noise is real).
func continualAccuracy(series map[string][]continualWindow, want map[int64]truth) []string {
	var out []string
	exact, values := 0, 0
	for _, name := range slices.Sorted(maps.Keys(series)) {
		for _, cw := range series[name] {
			tot, _ := continualTotals(cw.rel)
			half := cw.rel.RunningIntervals95
			if cw.rel.RunningInterval95 != nil {
				half = []float64{*cw.rel.RunningInterval95}
			}
			run := make([]float64, len(tot))
			for w := cw.rel.WindowStart - int64(cw.step)*1000; w <= cw.rel.WindowStart; w += 1000 {
				tr := want[w]
				if cw.rel.RunningTotal != nil {
					run[0] += float64(tr.count)
					continue
				}
				for j := range run {
					if j < len(tr.bins) {
						run[j] += float64(tr.bins[j])
					}
				}
			}
			if len(tot) == 0 || len(half) != len(tot) {
				out = append(out, fmt.Sprintf("release %s: %d running totals and %d intervals", cw.rel.ReleaseID, len(tot), len(half)))
				continue
			}
			for j := range tot {
				values++
				if tot[j] == run[j] {
					exact++
				}
				if !(half[j] > 0) || math.Abs(tot[j]-run[j]) > continualTolerance*half[j] {
					out = append(out, fmt.Sprintf("release %s: running total %d is %v, the exact one %v: more than %d × its 95%% half-width %v away", cw.rel.ReleaseID, j, tot[j], run[j], continualTolerance, half[j]))
				}
			}
		}
	}
	if values > 0 && exact == values {
		out = append(out, fmt.Sprintf("all %d running totals are exact: no noise", values))
	}
	return out
}

// continualSummary renders a release's running totals (the first
// coordinate of a histogram's) with their half-widths.
func continualSummary(s []continualWindow) string {
	var b []byte
	for _, cw := range s {
		tot, _ := continualTotals(cw.rel)
		half := cw.rel.RunningIntervals95
		if cw.rel.RunningInterval95 != nil {
			half = []float64{*cw.rel.RunningInterval95}
		}
		if len(tot) > 0 && len(half) > 0 {
			b = fmt.Appendf(b, " %d:%.0f±%.0f", cw.rel.HorizonWindow, tot[0], half[0])
		}
	}
	return string(b)
}

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// TestContinualChecksCatch feeds checkContinual ledgers made by hand from
// the release stage's own Releaser (windows of 1s from the epoch; horizons
// of continualHorizon windows), without a broker: a restart that restores
// the runs from the ledger passes, and each way a restart can break a
// continual release is reported.
func TestContinualChecksCatch(t *testing.T) {
	ps := continualTestPlan(t)
	a := continualDecide(t, release.NewReleaser(ps, seededNoise(1)), 0, 1, 2, 3)
	restoredFrom := func(seed uint64, charges []schema.LedgerCharge) *release.Releaser {
		r := release.NewReleaser(ps, seededNoise(seed))
		for _, lc := range charges {
			if _, err := r.Restore(lc); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	// The protocol: a restart after window 3 rebuilds the runs from the
	// ledger and goes on, past a window without data (6) into the next
	// horizon (8, 9).
	good := continualDecide(t, restoredFrom(2, a), 4, 5, 7, 8, 9)
	// A restart that lost the runs' state: a fresh run mid-horizon (and
	// the horizon charged again).
	fresh := continualDecide(t, release.NewReleaser(ps, seededNoise(2)), 4, 5)
	// A restart that did not read window 3's charges and decided it again
	// with fresh noise: its copy of window 3 is a second charge (not
	// counted), and window 4 continues the run with the new noise.
	redrawn := continualDecide(t, restoredFrom(2, a[:len(a)-3]), 3, 4, 5)
	// A restart that replays the exact statistics but draws the noise of
	// the replayed steps again (re-noising window 2).
	renoised := slices.Clone(a)
	for i := range renoised {
		if renoised[i].WindowStart == 2000 {
			renoised[i].ContinualZ = slices.Clone(renoised[i].ContinualZ)
			for j := range renoised[i].ContinualZ {
				renoised[i].ContinualZ[j] += 3
			}
		}
	}
	renoisedNext := continualDecide(t, restoredFrom(2, renoised), 4, 5)

	edit := func(charges []schema.LedgerCharge, id string, f func(*schema.LedgerCharge)) []schema.LedgerCharge {
		out := slices.Clone(charges)
		found := false
		for i := range out {
			if out[i].ReleaseID == id {
				f(&out[i])
				found = true
			}
		}
		if !found {
			t.Fatalf("test setup: no charge %s", id)
		}
		return out
	}
	without := func(charges []schema.LedgerCharge, id string) []schema.LedgerCharge {
		return slices.DeleteFunc(slices.Clone(charges), func(lc schema.LedgerCharge) bool { return lc.ReleaseID == id })
	}
	republish := func(lc *schema.LedgerCharge, f func(*schema.Release)) {
		r, err := schema.DecodeRelease(lc.Payload)
		if err != nil {
			t.Fatal(err)
		}
		f(&r)
		if lc.Payload, err = schema.EncodeRelease(r); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name  string
		lives [][]schema.LedgerCharge
		want  []string // a substring of the violations, each; none: no violation
	}{
		{"one life", [][]schema.LedgerCharge{a}, nil},
		{"a restart that restores the runs and continues", [][]schema.LedgerCharge{a, good}, nil},
		{"a restart with a fresh run mid-horizon", [][]schema.LedgerCharge{a, fresh},
			// A fresh run mid-horizon skips its earlier steps as public
			// zeros and logs only its own: its totals restart (they are
			// not what the horizon's logs give) and it charges again.
			[]string{"trips/n/4000 (horizon 0, window 5 of 8): the published running totals are not what its step log gives", "trips/h/4000", "release trips/b, horizon 0: charged at 2 windows"}},
		{"a restart that draws a published window's noise again", [][]schema.LedgerCharge{a, redrawn},
			[]string{"trips/n/4000 (horizon 0, window 5 of 8): the published running totals are not what its step log gives", "trips/h/4000 (horizon 0, window 5 of 8): the published"}},
		{"a restart that re-noises the replayed steps", [][]schema.LedgerCharge{a, renoisedNext},
			[]string{"trips/b/4000 (horizon 0, window 5 of 8): the published running totals are not what its step log gives"}},
		{"a published total that is not the log's", [][]schema.LedgerCharge{edit(a, "trips/n/2000", func(lc *schema.LedgerCharge) {
			republish(lc, func(r *schema.Release) { *r.RunningTotal++ })
		})}, []string{"trips/n/2000 (horizon 0, window 3 of 8): the published running totals"}},
		{"an increment that is not the difference of the totals", [][]schema.LedgerCharge{edit(a, "trips/h/2000", func(lc *schema.LedgerCharge) {
			republish(lc, func(r *schema.Release) { r.NoisyCounts[1] += 0.5 })
		})}, []string{"trips/h/2000 (horizon 0, window 3 of 8): increment 1 is"}},
		{"a lost step log", [][]schema.LedgerCharge{without(a, "trips/b/2000"), good},
			[]string{"trips/b/3000 (horizon 0, window 4 of 8): its step log covers steps 3..3; the run is at step 2"}},
		{"a gap step with data", [][]schema.LedgerCharge{a, edit(good, "trips/n/7000", func(lc *schema.LedgerCharge) {
			lc.ContinualX = append([]int64{1}, lc.ContinualX[1:]...)
		})},
			[]string{"trips/n/7000 (horizon 0, window 8 of 8): its step log (first 6, x [1"}},
		{"a log of another factorization", [][]schema.LedgerCharge{edit(a, "trips/b/1000", func(lc *schema.LedgerCharge) { lc.ContinualFactor = "0123456789abcdef" })},
			[]string{"trips/b/1000 (horizon 0, window 2 of 8): Run.Replay refuses its step log"}},
		{"a horizon charged twice", [][]schema.LedgerCharge{edit(a, "trips/h/2000", func(lc *schema.LedgerCharge) { lc.Charges = a[2].Charges })},
			[]string{"release trips/h, horizon 0: charged at 2 windows [0 2000]"}},
		{"a horizon charged at a later window", [][]schema.LedgerCharge{a, edit(edit(good, "trips/n/8000", func(lc *schema.LedgerCharge) {
			lc.Charges = nil
		}), "trips/n/9000", func(lc *schema.LedgerCharge) { lc.Charges = a[0].Charges })},
			[]string{"release trips/n, horizon 1: charged at window 9000, not at its first decided window 8000"}},
		{"a skipped window", [][]schema.LedgerCharge{edit(a, "trips/n/3000", func(lc *schema.LedgerCharge) { lc.Status = release.StatusSkipped })},
			[]string{"trips/n/3000 (horizon 0, window 4 of 8): status skipped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms []kafka.Message
			for i, life := range tc.lives {
				ms = append(ms, continualLedger(t, fmt.Sprintf("E%d", i), life)...)
			}
			for i := range ms {
				ms[i].Offset = int64(i)
			}
			_, got := readAnswers(ms)
			_, bad := checkContinual(ps, ms)
			got = append(got, bad...)
			t.Logf("violations: %q", got)
			if len(tc.want) == 0 && len(got) > 0 {
				t.Fatalf("violations in a run that follows the protocol: %q", got)
			}
			for _, w := range tc.want {
				found := false
				for _, v := range got {
					found = found || strings.Contains(v, w)
				}
				if !found {
					t.Errorf("no violation says %q; got %q", w, got)
				}
			}
		})
	}
}

// continualTestPlan plans continualRestartConfig with windows from the
// epoch (no stream start).
func continualTestPlan(t *testing.T) []plan.Stream {
	t.Helper()
	cfg, err := config.Parse([]byte(expandContinual(continualRestartConfig().YAML())), "pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// continualDecide decides the given windows (1s from the epoch; window w
// has 10+w events, with values in the histogram's bins 0 and 2) with r,
// and returns the ledger charges, decoded as a restart reads them, with
// their step logs in the legacy fields (running.LegacyCharge: the checks
// below edit them there, and a restart reads them as it reads a ledger
// written before LedgerCharge.State).
func continualDecide(t *testing.T, r *release.Releaser, windows ...int64) []schema.LedgerCharge {
	t.Helper()
	var out []schema.LedgerCharge
	for _, w := range windows {
		c := 10 + w
		win := release.Window{Stream: "trips", Start: w * 1000, End: (w + 1) * 1000, Parts: []schema.Partial{{
			Stream: "trips", WindowStart: w * 1000, WindowEnd: (w + 1) * 1000, Partition: 0, Partitions: 1,
			Events: c, FirstOffset: -1, LastOffset: -1,
			Stats: []schema.ReleaseStats{
				{Release: "n", Count: c, Bins: []int64{}},
				{Release: "b", Count: c, Bins: []int64{}},
				{Release: "h", Count: c, Bins: []int64{c - 4, 0, 4, 0, 0}},
			},
		}}}
		outs, err := r.ReleaseWindow(win, time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			lc, err := schema.DecodeLedgerCharge(o.Ledger)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, running.LegacyCharge(lc))
		}
	}
	return out
}

// continualLedger is the ledger records of one life, owner of epoch: its
// marker, then its charges.
func continualLedger(t *testing.T, epoch string, charges []schema.LedgerCharge) []kafka.Message {
	t.Helper()
	marker, err := ledger.EpochMessage(schema.LedgerEpoch{Epoch: epoch, Owner: "test", At: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := []kafka.Message{marker}
	for _, lc := range charges {
		b, err := schema.EncodeLedgerCharge(lc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ledger.ChargeMessage(lc.Stream, b, epoch))
	}
	return out
}

// seededNoise is the noise of seed.
func seededNoise(seed uint64) noise.Sampler { return noise.New(noise.SeededSource(seed)) }
