package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
)

// The simulated stream: windows of 1s from simBase, at most simL events per
// unit and window, a count, a sum and a 5-bin histogram of v on [0, 10],
// each with ε = 1 of discrete Laplace noise.
const (
	simBase    = int64(1_750_000_000_000) // window-aligned, in the past
	simWindows = 4
	simUnits   = 20
	simL       = 3
	simBins    = 5
	simHi      = 10.0
)

// simConfig returns a config of simStream.
func simConfig(partitions int, unit, eventTime string, budget float64, releases ...*testkit.Release) *testkit.Pipeline {
	return testkit.NewPipeline(simStream(partitions, unit, eventTime, budget, releases...))
}

// simStream is the simulated stream. eventTime is the event_time setting;
// releases replace the three default releases when given.
func simStream(partitions int, unit, eventTime string, budget float64, releases ...*testkit.Release) *testkit.Stream {
	if len(releases) == 0 {
		releases = []*testkit.Release{
			testkit.Count("n").Epsilon(1),
			testkit.Sum("s", "v", 0, simHi).Epsilon(1),
			testkit.Histogram("h", "v", 0, simHi, simBins).Epsilon(1),
		}
	}
	return testkit.NewStream("rides", "rides.events").Partitions(partitions).PrivacyUnit(unit).EventTime(eventTime).
		Window(time.Second, 0, 0).MaxEvents(simL).Budget(budget, 1e-6).Releases(releases...)
}

// simTruth is what the stages must compute for one window, worked out here
// from the generated events without any dpstream code.
type simTruth struct {
	count int64
	sum   float64
	bins  [simBins]int64
}

// simInput is a generated input file and what is known about it.
type simInput struct {
	lines   []string
	truth   [simWindows]simTruth
	read    int
	kept    int
	dropped int
	late    int
	reasons map[string]int // rejections other than late
	badLine map[int]string // 1-based line number of each bad or late line → reason
}

// genEvents writes the events of every window in time order: unit u has
// 1 + (u+w) mod 5 events in window w, so some units exceed simL and lose
// their latest events; values run over 0..12, so some are clamped to 10.
// With bad lines, lines of every rejection reason are mixed into window 0
// and one late event for window 0 ends the file. eventLevel makes every
// event its own unit (nothing is dropped).
func genEvents(bad, eventLevel bool) simInput {
	in := simInput{reasons: map[string]int{}, badLine: map[int]string{}}
	add := func(line, reason string) {
		in.lines = append(in.lines, line)
		in.read++
		if reason != "" {
			in.badLine[len(in.lines)] = reason
		}
	}
	for w := int64(0); w < simWindows; w++ {
		type ev struct {
			unit int
			t    int64
			v    int
		}
		var evs []ev
		for u := range simUnits {
			for j := range 1 + (u+int(w))%5 {
				evs = append(evs, ev{u, simBase + w*1000 + int64((u*37+j*101)%1000), (u*7 + j*5 + int(w)) % 13})
			}
		}
		slices.SortStableFunc(evs, func(a, b ev) int { return int(a.t - b.t) })
		seen := map[int]int{}
		for i, e := range evs {
			add(fmt.Sprintf(`{"user":"u%d","ts":%d,"v":%d}`, e.unit, e.t, e.v), "")
			seen[e.unit]++
			if !eventLevel && seen[e.unit] > simL {
				in.dropped++ // contribution bound: the unit's first simL events are kept
			} else {
				in.kept++
				tr := &in.truth[w]
				v := math.Min(float64(e.v), simHi)
				tr.count++
				tr.sum += v
				tr.bins[min(int(v/(simHi/simBins)), simBins-1)]++
			}
			if bad && w == 0 && i == 5 {
				for _, b := range []struct{ line, reason string }{
					{`not json`, reasonNotAnEvent},
					{`[1, 2]`, reasonNotAnEvent},
					{fmt.Sprintf(`{"ts":%d,"v":1}`, simBase+100), "missing_unit"},
					{`{"user":"u1","v":1}`, "missing_event_time"},
					{fmt.Sprintf(`{"user":"u1","ts":%d,"v":"abc"}`, simBase+100), "invalid_value"},
					{fmt.Sprintf(`{"user":"u1","ts":%d}`, simBase+100), "missing_field"},
					{`{"user":"u1","ts":7258118400000,"v":1}`, "future"}, // year 2200: beyond window.max_skew
					{fmt.Sprintf(`{"user":"u1","ts":%d,"v":{"a":1}}`, simBase+100), reasonUnencodable},
				} {
					if eventLevel && b.reason == "missing_unit" {
						continue // there is no unit field to miss
					}
					add(b.line, b.reason)
					in.reasons[b.reason]++
				}
			}
		}
	}
	if bad {
		// u0 has events in every window, so its partition's watermark is
		// past window 0 by now.
		add(fmt.Sprintf(`{"user":"u0","ts":%d,"v":1}`, simBase+500), "late")
		in.late++
	}
	return in
}

func (in simInput) jsonl() string { return strings.Join(in.lines, "\n") + "\n" }

// csv renders the (clean) events as CSV with a header.
func (in simInput) csv(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("user,ts,v\n")
	for _, l := range in.lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("csv of a bad line %q", l)
		}
		fmt.Fprintf(&b, "%s,%.0f,%v\n", m["user"], m["ts"], m["v"])
	}
	return b.String()
}

// zeroNoise draws 0 every time, so a release shows the exact statistic the
// stages merged. It exists to test the plumbing only.
type zeroNoise struct{}

func (zeroNoise) DiscreteLaplace(float64) (int64, error)  { return 0, nil }
func (zeroNoise) DiscreteGaussian(float64) (int64, error) { return 0, nil }

// simulateExact runs the simulator with zero noise and returns the
// releases, the stderr and the stats.
func simulateExact(t *testing.T, p *testkit.Pipeline, in string, opts simOptions) ([]schema.Release, string, simStats) {
	t.Helper()
	cfg, err := config.Parse([]byte(p.YAML()), "sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Stream, opts.Noise = "rides", zeroNoise{}
	sim, err := newSimulator(cfg, ps, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := sim.run(t.Context(), strings.NewReader(in), false, &out, &errOut); err != nil {
		t.Fatalf("run: %v", err)
	}
	sim.summary(&errOut)
	return decodeReleases(t, out.String()), errOut.String(), sim.stats
}

// decodeReleases decodes JSON lines strictly as schema.Release and checks
// that each line is exactly encoding/json's rendering of it, the JSON
// 'dpstream tail releases' prints.
func decodeReleases(t *testing.T, stdout string) []schema.Release {
	t.Helper()
	var out []schema.Release
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var r schema.Release
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line is not a schema.Release: %v: %s", err, sc.Text())
		}
		again, err := json.Marshal(r)
		if err != nil || string(again) != sc.Text() {
			t.Errorf("line is not the encoding/json of its release:\n%s\n%s", sc.Text(), again)
		}
		out = append(out, r)
	}
	return out
}

// checkOrder checks that the releases are every window's releases, in
// window order and configuration order within a window.
func checkOrder(t *testing.T, rels []schema.Release, windows int, names []string) {
	t.Helper()
	if len(rels) != windows*len(names) {
		t.Fatalf("%d releases, want %d windows × %d releases", len(rels), windows, len(names))
	}
	for i, r := range rels {
		ws := simBase + int64(i/len(names))*1000
		if r.WindowStart != ws || r.WindowEnd != ws+1000 || r.Release != names[i%len(names)] || r.ReleaseID != plan.ReleaseID("rides", r.Release, ws) {
			t.Errorf("release %d is %s [%d, %d), want %s of window %d", i, r.ReleaseID, r.WindowStart, r.WindowEnd, names[i%len(names)], ws)
		}
	}
}

// TestSimulateExact: with zero noise every release equals the truth worked
// out from the generated events, whatever the partitioning; the summary
// counts every event once.
func TestSimulateExact(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partitions int
		eventLevel bool
	}{
		{"one partition", 1, false},
		{"three partitions", 3, false},
		// More partitions than units: empty partitions must not hold back
		// the windows at the end of the input.
		{"empty partitions", 32, false},
		{"event-level privacy", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unit := "user"
			if tc.eventLevel {
				unit = "event"
			}
			in := genEvents(true, tc.eventLevel)
			rels, stderr, st := simulateExact(t, simConfig(tc.partitions, unit, "ts", 100), in.jsonl(), simOptions{Flush: true})
			checkOrder(t, rels, simWindows, []string{"n", "s", "h"})
			for _, r := range rels {
				tr := in.truth[(r.WindowStart-simBase)/1000]
				if r.Status != "ok" || r.PublishedAt != r.WindowEnd {
					t.Errorf("%s: status %s published at %d, want ok at the window's end + grace %d", r.ReleaseID, r.Status, r.PublishedAt, r.WindowEnd)
				}
				switch r.Release {
				case "n":
					if r.Value == nil || *r.Value != float64(tr.count) {
						t.Errorf("%s: count %v, want %d", r.ReleaseID, r.Value, tr.count)
					}
				case "s":
					// Zero noise leaves only the rounding to the output
					// grid, which the interval includes.
					if r.Value == nil || r.Interval95 == nil || math.Abs(*r.Value-tr.sum) > *r.Interval95 {
						t.Errorf("%s: sum %v ± %v, want %v", r.ReleaseID, r.Value, r.Interval95, tr.sum)
					}
				case "h":
					for j, c := range tr.bins {
						if j >= len(r.NoisyCounts) || r.NoisyCounts[j] != float64(c) {
							t.Errorf("%s: bins %v, want %v", r.ReleaseID, r.NoisyCounts, tr.bins)
							break
						}
					}
				}
			}
			want := simStats{Read: in.read, Accepted: in.kept, Dropped: in.dropped, Late: in.late, Rejected: in.reasons,
				Windows: simWindows, OK: simWindows * 3}
			if fmt.Sprint(st) != fmt.Sprint(want) {
				t.Errorf("stats %+v, want %+v", st, want)
			}
			if st.Read != st.Accepted+st.Dropped+st.Late+st.rejected() {
				t.Errorf("stats %+v do not add up to the events read", st)
			}
			if tc.eventLevel && st.Dropped != 0 {
				t.Errorf("event-level stream dropped %d events", st.Dropped)
			}
			checkSummary(t, stderr, map[string]int{"events read": in.read, "accepted": in.kept, "dropped": in.dropped,
				"late": in.late, "rejected": st.rejected(), "windows released": simWindows, "releases ok": 3 * simWindows, "budget_exhausted": 0})
		})
	}
}

// checkSummary checks the "name  value" rows of the summary.
func checkSummary(t *testing.T, stderr string, want map[string]int) {
	t.Helper()
	for name, v := range want {
		m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + ` +(\d+)`).FindStringSubmatch(stderr)
		if m == nil {
			t.Errorf("summary has no row %q:\n%s", name, stderr)
			continue
		}
		if got, _ := strconv.Atoi(m[1]); got != v {
			t.Errorf("summary %s = %d, want %d:\n%s", name, got, v, stderr)
		}
	}
}

// writeSim writes a config (none when nil) and an input file to a
// temporary directory.
func writeSim(t *testing.T, cfg *testkit.Pipeline, input, inputName string) (cfgPath, inputPath string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath, inputPath = filepath.Join(dir, "pipeline.yaml"), filepath.Join(dir, inputName)
	if cfg != nil {
		cfg.WriteFile(t, cfgPath)
	}
	writeFile(t, inputPath, input)
	return cfgPath, inputPath
}

// simulateCLI runs `dpstream simulate` and fails on a non-zero exit.
func simulateCLI(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := cli(t.Context(), append([]string{"simulate"}, args...)...)
	if code != exitOK {
		t.Fatalf("simulate %v: exit %d; stderr:\n%s", args, code, stderr)
	}
	return stdout, stderr
}

// simulateSeeded runs simulate with --seed seed twice and with seed+1,
// failing unless the first two print the same and the third differs (the
// seed is used, and is all that varies); it returns the first run's
// output.
func simulateSeeded(t *testing.T, cfgPath, inPath string, seed int) (stdout, stderr string) {
	t.Helper()
	run := func(seed int) (string, string) {
		return simulateCLI(t, "-c", cfgPath, "--input", inPath, "--seed", strconv.Itoa(seed))
	}
	stdout, stderr = run(seed)
	again, _ := run(seed)
	other, _ := run(seed + 1)
	if stdout != again {
		t.Errorf("two runs with --seed %d differ:\n%s\n---\n%s", seed, stdout, again)
	}
	if stdout == other {
		t.Errorf("--seed %d and --seed %d print the same releases: the seed is not used", seed, seed+1)
	}
	return stdout, stderr
}

// TestSimulateSeeded runs the command as a user would, with real noise from
// a seed: runs are reproducible, every release decodes, and the noisy
// values lie near the truth.
func TestSimulateSeeded(t *testing.T) {
	in := genEvents(true, false)
	cfgPath, inPath := writeSim(t, simConfig(3, "user", "ts", 100), in.jsonl(), "events.jsonl")
	stdout, stderr := simulateSeeded(t, cfgPath, inPath, 42)
	if !strings.Contains(stderr, "NOT private") {
		t.Errorf("a seeded run does not warn that its noise is not private:\n%s", stderr)
	}
	rels := decodeReleases(t, stdout)
	checkOrder(t, rels, simWindows, []string{"n", "s", "h"})
	// Hand calibration: count and histogram have Δ1 = L = 3 (one unit's ≤ 3
	// events each add 1), so discrete Laplace t = Δ1/ε = 3. Its tail is
	// P(|Z| ≥ k) = 2e^{-k/t}/(1+e^{-1/t}) < 2e^{-k/t}, so k = ⌈t·ln 2000⌉
	// bounds one value with probability ≥ 99.9%. Over the 4 counts and 20
	// bins checked here, a correct implementation fails for at most 2.4%
	// of seeds; with seed 42 the outcome is fixed.
	const tScale = float64(simL) / 1
	k := math.Ceil(tScale * math.Log(2000))
	for _, r := range rels {
		tr := in.truth[(r.WindowStart-simBase)/1000]
		if r.Status != "ok" {
			t.Errorf("%s: status %s, want ok", r.ReleaseID, r.Status)
			continue
		}
		switch r.Release {
		case "n", "h":
			if len(r.Noise) != 1 || r.Noise[0].Mechanism != "discrete_laplace" || r.Noise[0].Scale != tScale {
				t.Errorf("%s: noise %+v, want discrete Laplace t = %g", r.ReleaseID, r.Noise, tScale)
			}
		}
		switch r.Release {
		case "n":
			if r.Value == nil || math.Abs(*r.Value-float64(tr.count)) >= k {
				t.Errorf("%s: count %v, want within %g of %d", r.ReleaseID, r.Value, k, tr.count)
			}
		case "h":
			if len(r.NoisyCounts) != simBins {
				t.Fatalf("%s: %d bins, want %d", r.ReleaseID, len(r.NoisyCounts), simBins)
			}
			for j, c := range tr.bins {
				if math.Abs(r.NoisyCounts[j]-float64(c)) >= k {
					t.Errorf("%s: bin %d = %v, want within %g of %d", r.ReleaseID, j, r.NoisyCounts[j], k, c)
				}
			}
		}
	}
	reasons := map[string]int{"late": in.late}
	for r, n := range in.reasons {
		reasons["  "+r] = n
	}
	checkSummary(t, stderr, reasons)
	checkSummary(t, stderr, map[string]int{"events read": in.read, "windows released": simWindows, "releases ok": 3 * simWindows})
}

// TestSimulateBudget: with ε = 2.5 for the stream and a count of ε = 1 per
// window, the first two windows are released and the others refused: any
// valid accounting of three ε = 1 discrete Laplace releases at δ = 1e-6
// exceeds 2.5 (their privacy loss is 3 with probability far above 1e-6).
func TestSimulateBudget(t *testing.T) {
	in := genEvents(false, false)
	cfgPath, inPath := writeSim(t, simConfig(3, "user", "ts", 2.5, testkit.Count("n").Epsilon(1)), in.jsonl(), "events.jsonl")
	stdout, stderr := simulateCLI(t, "-c", cfgPath, "--input", inPath, "--seed", "7")
	rels := decodeReleases(t, stdout)
	checkOrder(t, rels, simWindows, []string{"n"})
	for i, r := range rels {
		want := "ok"
		if i >= 2 {
			want = "budget_exhausted"
		}
		if r.Status != want || (r.Value != nil) != (want == "ok") {
			t.Errorf("%s: status %s value %v, want %s", r.ReleaseID, r.Status, r.Value, want)
		}
		if r.EpsilonSpent > 2.5 || r.EpsilonBudget != 2.5 {
			t.Errorf("%s: ε spent %v of %v, want within 2.5", r.ReleaseID, r.EpsilonSpent, r.EpsilonBudget)
		}
	}
	checkSummary(t, stderr, map[string]int{"releases ok": 2, "budget_exhausted": simWindows - 2})
	if !regexp.MustCompile(`(?m)^  epsilon spent +2 +of ε=2.5`).MatchString(stderr) {
		t.Errorf("summary does not show ε=2 spent of 2.5 (basic composition of two ε=1 releases):\n%s", stderr)
	}
}

// TestSimulateDeadLetter: --deadletter prints every rejected or late record
// with its reason, line and text.
func TestSimulateDeadLetter(t *testing.T) {
	in := genEvents(true, false)
	cfgPath, inPath := writeSim(t, simConfig(3, "user", "ts", 100), in.jsonl(), "events.jsonl")
	_, stderr := simulateCLI(t, "-c", cfgPath, "--input", inPath, "--seed", "1", "--deadletter")
	got := map[int]string{}
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var d simDeadLetter
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("dead letter %q: %v", l, err)
		}
		got[d.Line] = d.Reason
		if d.Line < 1 || d.Line > len(in.lines) || d.Value != in.lines[d.Line-1] || d.Stream != "rides" || d.Detail == "" {
			t.Errorf("dead letter %+v does not quote its line", d)
		}
		// Records that reached a partition say where.
		reached := d.Reason != reasonNotAnEvent && d.Reason != reasonUnencodable && d.Reason != "missing_unit"
		if reached != (d.Partition != nil && d.Offset != nil) {
			t.Errorf("dead letter %+v: partition/offset present %v, want %v", d, d.Partition != nil, reached)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(in.badLine) {
		t.Errorf("dead letters by line %v, want %v", got, in.badLine)
	}
}

// TestSimulateInputs: CSV input, and a record-timestamp stream given the
// time by --time-field, release exactly what the JSON-lines input with an
// event-time field does (same seed, same noise draws).
func TestSimulateInputs(t *testing.T) {
	in := genEvents(false, false)
	cfgPath, inPath := writeSim(t, simConfig(3, "user", "ts", 100), in.jsonl(), "events.jsonl")
	want, _ := simulateCLI(t, "-c", cfgPath, "--input", inPath, "--seed", "5")

	_, csvPath := writeSim(t, nil, in.csv(t), "events.csv")
	gotCSV, _ := simulateCLI(t, "-c", cfgPath, "--input", csvPath, "--seed", "5")
	if gotCSV != want {
		t.Errorf("CSV input releases differ from JSON lines:\n%s\n---\n%s", gotCSV, want)
	}

	rtPath, _ := writeSim(t, simConfig(3, "user", "record_timestamp", 100), "", "unused")
	gotRT, stderr := simulateCLI(t, "-c", rtPath, "--input", inPath, "--seed", "5", "--time-field", "ts")
	if gotRT != want {
		t.Errorf("record-timestamp stream with --time-field ts differs from event_time ts:\n%s\n---\n%s", gotRT, want)
	}
	if strings.Contains(stderr, "current time") {
		t.Errorf("--time-field given, yet stderr says the current time is used:\n%s", stderr)
	}
}

// TestSimulateNoFlush: without --flush only the windows that the data
// closes on every partition are released: all but the last (every
// partition has events in every window).
func TestSimulateNoFlush(t *testing.T) {
	in := genEvents(false, false)
	cfgPath, inPath := writeSim(t, simConfig(3, "user", "ts", 100), in.jsonl(), "events.jsonl")
	stdout, stderr := simulateCLI(t, "-c", cfgPath, "--input", inPath, "--seed", "5", "--flush=false")
	checkOrder(t, decodeReleases(t, stdout), simWindows-1, []string{"n", "s", "h"})
	if !strings.Contains(stderr, "--flush releases them") {
		t.Errorf("summary does not say that open windows were not released:\n%s", stderr)
	}
}

func TestSimulateUsageErrors(t *testing.T) {
	in := genEvents(false, false)
	cfgPath, inPath := writeSim(t, simConfig(3, "user", "ts", 100), in.jsonl(), "events.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"time field with an event-time stream", []string{"-c", cfgPath, "--input", inPath, "--time-field", "ts"}, "--time-field applies only"},
		{"bad input format", []string{"-c", cfgPath, "--input", inPath, "--input-format", "xml"}, `--input-format "xml"`},
		{"missing input", []string{"-c", cfgPath, "--input", filepath.Join(t.TempDir(), "none.jsonl")}, "no such file"},
		{"unknown stream", []string{"-c", cfgPath, "--input", inPath, "--stream", "trips"}, `no stream "trips"`},
		{"negative partitions", []string{"-c", cfgPath, "--input", inPath, "--partitions", "-1"}, "--partitions -1"},
		{"positional argument", []string{"-c", cfgPath, inPath}, "unexpected argument"},
		{"bad config", []string{"-c", filepath.Join(configDir, "bad_epsilon.yaml"), "--input", inPath}, "nothing was started"},
		{"bad flag", []string{"--no-such-flag"}, "not defined: -no-such-flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t.Context(), append([]string{"simulate"}, tc.args...)...)
			if code != exitConfig || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", code, stdout, stderr, exitConfig, tc.want)
			}
		})
	}
}

func TestSimulateHelp(t *testing.T) {
	code, stdout, _ := cli(t.Context(), "simulate", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"c", "config", "input", "input-format", "stream", "seed", "flush", "deadletter", "time-field", "partitions", "truth", "plot", "pdp"} {
		if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(f) + `\b`).MatchString(stdout) {
			t.Errorf("usage does not document -%s:\n%s", f, stdout)
		}
	}
}

// The generated input must exercise what the tests claim: every partition
// of three holds some unit, and units beyond the bound exist.
func TestSimulateInputCoverage(t *testing.T) {
	in := genEvents(true, false)
	if in.dropped == 0 || in.late != 1 || len(in.reasons) != 7 {
		t.Errorf("generated input: %d dropped, %d late, reasons %v", in.dropped, in.late, in.reasons)
	}
	parts := map[int]bool{}
	for u := range simUnits {
		parts[kafkaio.PartitionFor([]byte(fmt.Sprintf("u%d", u)), 3)] = true
	}
	if len(parts) != 3 {
		t.Errorf("units cover partitions %v of 3", parts)
	}
	if _, err := os.Stat(filepath.Join(configDir, "bad_epsilon.yaml")); err != nil {
		t.Errorf("test config missing: %v", err)
	}
}

// TestSimulatePlot checks that --plot draws the same releases as charts:
// a two-field heatmap, a randomized_response bar chart and the samples
// line, with the JSON lines replaced, and that the charts follow the seed.
func TestSimulatePlot(t *testing.T) {
	cfg := testkit.NewPipeline(testkit.NewStream("s", "s.events").Window(time.Minute, 0, 0).MaxEvents(1).Releases(
		testkit.HistogramND("xy", testkit.NewAxis("x", 0, 1, 3), testkit.NewAxis("y", 0, 2, 4)).Samples(2).Epsilon(1),
		testkit.RandomizedResponse("mode", "mode", "walk", "bike").P(0.5).Epsilon(1))).Metrics("")
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, `{"user":"u%d","ts":%d,"x":%g,"y":%g,"mode":%q}`+"\n", i, 1700000000000+int64(i), float64(i%10)/10, float64(i%7)/4, []string{"walk", "bike"}[i%3%2])
	}
	cfgPath, inPath := writeSim(t, cfg, b.String(), "events.jsonl")
	stdout, _ := simulateCLI(t, "-c", cfgPath, "--input", inPath, "--seed", "5", "--plot", "--width", "60")
	for _, want := range []string{"s/xy (histogram)", "3 × 4 bins over x × y", "rows: x, columns: y",
		"2 synthetic samples", "s/mode (randomized_response)", "walk │", "bike │", "local ε = "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--plot output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, `"release_id"`) {
		t.Errorf("--plot still printed JSON:\n%s", stdout)
	}
	again, _ := simulateCLI(t, "-c", cfgPath, "--input", inPath, "--seed", "5", "--plot", "--width", "60")
	if again != stdout {
		t.Error("two seeded --plot runs differ")
	}
	if code, _, stderr := cli(t.Context(), "simulate", "-c", cfgPath, "--input", inPath, "--plot", "--width", "3"); code != exitConfig || !strings.Contains(stderr, "--width 3") {
		t.Errorf("--width 3: exit %d, stderr %q; want a config error naming the flag", code, stderr)
	}
}

// TestSimulateRegressionCars runs `simulate` with an AdaSSP regression of
// mpg on weight and model year over testdata/cars.json (converted to JSON
// lines here, one unit per car, all in one window; the 8 cars without mpg
// are left out, so the release and the test fit the same 398 rows, all
// inside the configured bounds, so nothing is clamped). The released
// coefficients and intercept must have the signs of ordinary least squares
// on the same rows, computed here with gonum (weight −, year +, intercept
// −), and a run must be reproducible from its seed.
//
// False failures: weight and year are nearly uncorrelated on these data
// (λ_min of the scaled XᵀX is 54), so at ε = 8 the noise is small next to
// both coefficients. Over seeds 1..1000 no released sign differed from
// OLS and the smallest |coefficient|/StdErr was 3.7, so a correct
// implementation fails this check for fewer than 0.3% of seeds (the
// rule-of-three 95% bound on 0 in 1000); with --seed 3 it is fixed.
// (Horsepower and weight, correlated 0.86, would flip the weaker sign for
// about 1% of seeds even at ε = 16.)
func TestSimulateRegressionCars(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cars.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cars []struct {
		MPG    *float64 `json:"Miles_per_Gallon"`
		Weight *float64 `json:"Weight_in_lbs"`
		Year   string   `json:"Year"`
	}
	if err := json.Unmarshal(b, &cars); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	var xs, ys []float64 // design rows (weight, year, 1) and mpg
	for i, c := range cars {
		if c.MPG == nil || c.Weight == nil {
			continue
		}
		year, err := strconv.Atoi(strings.SplitN(c.Year, "-", 2)[0])
		if err != nil {
			t.Fatalf("car %d: year %q: %v", i, c.Year, err)
		}
		w, y := *c.Weight, *c.MPG
		if w < 1500 || w > 5500 || year < 1969 || year > 1983 || y < 5 || y > 50 {
			t.Fatalf("car %d (weight %v, year %d, mpg %v) is outside the configured bounds: it would be clamped", i, w, year, y)
		}
		fmt.Fprintf(&lines, `{"car":%d,"ts":%d,"weight":%v,"year":%d,"mpg":%v}`+"\n", i, 1_700_000_000_000+int64(i), w, year, y)
		xs = append(xs, w, float64(year), 1)
		ys = append(ys, y)
	}
	n := len(ys)
	if n != 398 {
		t.Fatalf("%d cars with weight and mpg, want the 398 of testdata/cars.json", n)
	}
	var ols mat.VecDense
	if err := ols.SolveVec(mat.NewDense(n, 3, xs), mat.NewVecDense(n, ys)); err != nil {
		t.Fatalf("OLS: %v", err)
	}
	want := ols.RawVector().Data // weight, year, intercept
	if !(want[0] < 0 && want[1] > 0 && want[2] < 0) {
		t.Fatalf("OLS on the cars is %v; the test expects weight −, year +, intercept −", want)
	}

	cfg := testkit.NewPipeline(carsStream(10).Releases(
		testkit.Regression("mpg", "adassp", testkit.Var("mpg", 5, 50), testkit.Var("weight", 1500, 5500), testkit.Var("year", 1969, 1983)).
			Epsilon(8).Delta(1e-6))).Metrics("")
	cfgPath, inPath := writeSim(t, cfg, lines.String(), "cars.jsonl")
	stdout, stderr := simulateSeeded(t, cfgPath, inPath, 3)
	checkSummary(t, stderr, map[string]int{"events read": n, "accepted": n, "rejected": 0, "releases ok": 1})
	rels := decodeReleases(t, stdout)
	if len(rels) != 1 {
		t.Fatalf("%d releases, want 1 (one window):\n%s", len(rels), stdout)
	}
	r := rels[0]
	if r.Status != "ok" || r.Kind != "regression" || r.Method != "adassp" || !slices.Equal(r.Fields, []string{"weight", "year"}) {
		t.Fatalf("release %+v, want an ok adassp regression on [weight year]", r)
	}
	if len(r.Coefficients) != 2 || len(r.StdErrors) != 2 || r.Intercept == nil || r.Ridge == nil {
		t.Fatalf("release has %d coefficients, %d standard errors, intercept %v, ridge %v; want 2, 2 and both", len(r.Coefficients), len(r.StdErrors), r.Intercept, r.Ridge)
	}
	got := []float64{r.Coefficients[0], r.Coefficients[1], *r.Intercept}
	for j, name := range []string{"weight", "year", "intercept"} {
		if math.Signbit(got[j]) != math.Signbit(want[j]) || got[j] == 0 {
			t.Errorf("%s: released %v, OLS %v: signs differ", name, got[j], want[j])
		}
	}
}

// carsStream is a stream of one car a window (1h) with budget ε and
// δ = 1e-5, for the regressions on testdata/cars.json.
func carsStream(epsilon float64) *testkit.Stream {
	return testkit.NewStream("cars", "cars.events").PrivacyUnit("car").Window(time.Hour, 0, 0).MaxEvents(1).Budget(epsilon, 1e-5)
}

// TestSimulatePDPCars measures per-instance DP against DP on real data
// (testdata/cars.json: mpg from horsepower and weight, one row per car)
// through the real stage code, with simulate --pdp: for OPS and AdaOPS
// (with an intercept, ordinary bounds) and for AdaSSP on centered bounds
// without an intercept column, the worst-case ε is at least 10 times the
// median car's per-instance ε (SPEC 4.6; the seed reports orders of
// magnitude). AdaSSP's per-instance losses depend only on the data and
// the configured noise; OPS's also on the released λ_min and Lipschitz
// bounds, fixed here by --seed 1 (other seeds give 16–26, see the issue
// note).
func TestSimulatePDPCars(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cars.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cars []map[string]any
	if err := json.Unmarshal(b, &cars); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	n := 0
	for i, c := range cars {
		hp, ok1 := c["Horsepower"].(float64)
		wt, ok2 := c["Weight_in_lbs"].(float64)
		mpg, ok3 := c["Miles_per_Gallon"].(float64)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		fmt.Fprintf(&in, `{"car":%d,"ts":%d,"hp":%g,"weight":%g,"mpg":%g}`+"\n", i, 1700000000000+int64(i), hp, wt, mpg)
		n++
	}
	mpg, hp, weight := testkit.Var("mpg", 5, 50), testkit.Var("hp", 0, 250), testkit.Var("weight", 1500, 5500)
	cfg := testkit.NewPipeline(carsStream(20).Releases(
		testkit.Regression("fit", "adassp", testkit.Var("mpg", 0, 47), testkit.Var("hp", 0, 210), testkit.Var("weight", 1500, 4500)).
			Intercept(false).Epsilon(1).Delta(1e-6),
		testkit.Regression("ops", "ops", mpg, hp, weight).Lambda(50).Epsilon(1).Delta(1e-6),
		testkit.Regression("adaops", "adaops", mpg, hp, weight).Epsilon(1).Delta(1e-6))).Metrics("")
	cfgPath, inPath := writeSim(t, cfg, in.String(), "cars.jsonl")
	code, _, stderr := cli(t.Context(), "simulate", "-c", cfgPath, "--input", inPath, "--seed", "1", "--pdp")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum schema.PDPSummary
	found := false
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, `{"pdp":`) {
			continue
		}
		var rec struct {
			PDP schema.PDPSummary `json:"pdp"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		sum, found = rec.PDP, true
	}
	if !found || len(sum.Releases) != 3 {
		t.Fatalf("no pdp summary of the three releases on stderr:\n%s", stderr)
	}
	for _, r := range sum.Releases {
		if r.Status != "ok" || r.Units != int64(n) {
			t.Fatalf("summary %+v, want ok over %d cars", r, n)
		}
		if !(r.P50 > 0 && r.Max <= r.DPEpsilon) {
			t.Fatalf("quantiles %+v out of order", r)
		}
		ratio := r.DPEpsilon / r.P50
		t.Logf("cars %s: worst-case ε %.4g, per-car ε p50 %.4g p90 %.4g max %.4g: ratio %.3g", r.Release, r.DPEpsilon, r.P50, r.P90, r.Max, ratio)
		if ratio < 10 {
			t.Errorf("%s: worst-case / median per-instance ε = %.3g, want at least 10", r.Release, ratio)
		}
	}
}

// TestSimulateSchedule: simulate keeps run's release schedule. The stream
// starts at its configured start, or else at the first event's window;
// earlier events are dead-lettered as before_start, and every window from
// the start to the last event's is released, empty ones included.
func TestSimulateSchedule(t *testing.T) {
	ev := func(u int, ts int64) string { return fmt.Sprintf(`{"user":"u%d","ts":%d,"v":1}`, u, ts) }
	lines := []string{ev(1, simBase+2500), ev(2, simBase+1500), ev(3, simBase+4200), ev(4, simBase-86_400_000), ev(5, simBase+2600)}
	for _, tc := range []struct {
		name        string
		start       time.Time // streams[].start; zero for none
		windows     []int64
		beforeStart int
	}{
		{name: "the first event's window", windows: []int64{2, 3, 4}, beforeStart: 2},
		{name: "configured, before the data", start: time.UnixMilli(simBase + 400), windows: []int64{0, 1, 2, 3, 4}, beforeStart: 1},
		{name: "configured, within the data", start: time.UnixMilli(simBase + 4000), windows: []int64{4}, beforeStart: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testkit.NewPipeline(simStream(3, "user", "ts", 100).Start(tc.start))
			rels, _, st := simulateExact(t, cfg, strings.Join(lines, "\n")+"\n", simOptions{Flush: true})
			var got []int64
			for _, r := range rels {
				if w := (r.WindowStart - simBase) / 1000; len(got) == 0 || got[len(got)-1] != w {
					got = append(got, w)
				}
			}
			if !slices.Equal(got, tc.windows) {
				t.Errorf("windows released %v, want %v", got, tc.windows)
			}
			if n := st.Rejected["before_start"]; n != tc.beforeStart {
				t.Errorf("%d events dead-lettered as before_start (%v), want %d", n, st.Rejected, tc.beforeStart)
			}
		})
	}
}
