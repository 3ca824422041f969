package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/chart/charttest"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/dataset"
	"github.com/dpstream/dpstream/internal/plan"
)

// truthLines decodes the {"truth": …} lines of simulate's stderr, by
// release id.
func truthLines(t *testing.T, stderr string) map[string]simExact {
	t.Helper()
	out := map[string]simExact{}
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), `{"truth":`) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var line struct {
			Truth simExact `json:"truth"`
		}
		if err := dec.Decode(&line); err != nil {
			t.Fatalf("truth line %q: %v", sc.Text(), err)
		}
		if _, dup := out[line.Truth.ReleaseID]; dup {
			t.Fatalf("two truth lines for %s", line.Truth.ReleaseID)
		}
		out[line.Truth.ReleaseID] = line.Truth
	}
	return out
}

// TestSimulateTruthKinds: with zero noise, the --truth line of every
// continual release (count, sum, histogram) equals its released running
// total, and both equal the running totals worked out here from the
// generated events, restarting at each horizon (horizons of 3 windows from
// the stream's start, the first event's window: the 4 windows are steps
// 0, 1, 2 of one horizon and 0 of the next); a release that is not
// continual gets no truth line.
func TestSimulateTruthKinds(t *testing.T) {
	cfg := simConfig(2, "event", "ts", 100).Metrics("")
	yaml := cfg.YAML()
	i := strings.Index(yaml, "    releases:")
	if i < 0 {
		t.Fatalf("no releases in:\n%s", yaml)
	}
	yaml = yaml[:i] + `    releases:
      - {name: n, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 3, method: tree}}
      - {name: s, kind: sum, field: v, bounds: [0, 10], noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 3, method: sqrt}}
      - {name: h, kind: histogram, field: v, bounds: [0, 10], bins: 5, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 3, method: blt}}
      - {name: plain, kind: count, epsilon: 1}
`
	c, err := config.Parse([]byte(yaml), "sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(c)
	if err != nil {
		t.Fatal(err)
	}
	in := genEvents(false, true)
	sim, err := newSimulator(c, ps, simOptions{Stream: "rides", Partitions: 2, Flush: true, Truth: true, Noise: zeroNoise{}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := sim.run(t.Context(), strings.NewReader(in.jsonl()), false, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	rels, truths := decodeReleases(t, out.String()), truthLines(t, errOut.String())
	checkOrder(t, rels, simWindows, []string{"n", "s", "h", "plain"})
	var count, sum float64
	var bins [simBins]float64
	for _, r := range rels {
		w := (r.WindowStart - simBase) / 1000
		if w == 3 && r.Release == "n" { // the fourth window starts a horizon
			count, sum, bins = 0, 0, [simBins]float64{}
		}
		if r.Release == "n" {
			tr := in.truth[w]
			count, sum = count+float64(tr.count), sum+tr.sum
			for b := range bins {
				bins[b] += float64(tr.bins[b])
			}
		}
		got, ok := truths[r.ReleaseID]
		if r.Release == "plain" {
			if ok {
				t.Errorf("%s: a truth line for a release that is not continual", r.ReleaseID)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s: no truth line", r.ReleaseID)
		}
		switch r.Release {
		case "n", "s":
			want := count
			if r.Release == "s" {
				want = sum
			}
			// The sum's truth is on its grid: within half a grid step per
			// window of the exact sum.
			if got.RunningTotal == nil || got.RunningTotals != nil || *got.RunningTotal != *r.RunningTotal || math.Abs(*got.RunningTotal-want) > 0.01 {
				t.Errorf("%s: truth %+v, released %v, want both %v", r.ReleaseID, got, *r.RunningTotal, want)
			}
		case "h":
			if got.RunningTotal != nil || len(got.RunningTotals) != simBins {
				t.Fatalf("%s: truth %+v, want %d bins", r.ReleaseID, got, simBins)
			}
			for b := range bins {
				if got.RunningTotals[b] != bins[b] || r.RunningTotals[b] != bins[b] {
					t.Errorf("%s bin %d: truth %v, released %v, want %v", r.ReleaseID, b, got.RunningTotals[b], r.RunningTotals[b], bins[b])
				}
			}
		}
	}
	if len(truths) != 3*simWindows {
		t.Errorf("%d truth lines, want %d", len(truths), 3*simWindows)
	}
}

// flightsCSV writes the flights data set (testdata/flights) uncompressed,
// as `gunzip -c` would, for simulate --input.
func flightsCSV(t *testing.T) string {
	t.Helper()
	src, err := dataset.Path(dataset.FlightsFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flights.csv")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// flightsRunning returns the exact running count of departures of each
// UTC day (by window start), restarting at each horizon of 365 daily
// windows from the stream's start, 2013-01-01, worked out from the data
// set.
func flightsRunning(t *testing.T) map[int64]float64 {
	t.Helper()
	fl, err := dataset.Flights()
	if err != nil {
		t.Fatal(err)
	}
	const day = 86_400_000
	perDay := map[int64]int64{}
	first, last := int64(math.MaxInt64), int64(0)
	for _, f := range fl {
		d := f.TimeMs / day
		perDay[d]++
		first, last = min(first, d), max(last, d)
	}
	out := map[int64]float64{}
	var run int64
	for d := first; d <= last; d++ {
		if (d-first)%365 == 0 {
			run = 0
		}
		run += perDay[d]
		out[d*day] = float64(run)
	}
	return out
}

// TestSimulateFlightsContinual runs simulate on a real time series, the
// 2013 departures from New York (testdata/flights), with the continual
// daily count of testdata/config/flights_continual.yaml (horizon 365,
// auto, which picks sqrt), as the README shows it: every day of 2013 is
// released once, --truth prints the exact running count (checked against
// the data set), the 95% intervals cover it, and the running totals' error
// is far below per-window summation's at the same ε and δ.
//
// One run holds 16 replicates of each method: the file's release (sqrt)
// and 15 copies, and 16 copies with method per_window, each drawing its
// own noise, so one pass over the 334,264 events measures 16 independent
// replicates (the test raises the budget to pay for them).
//
// False failures, measured by running the same mechanisms over the same
// daily counts for 4,000 seeds per method (250 groups of 16): a
// replicate's running-total errors are strongly correlated across windows,
// so one replicate's covered fraction varies a lot (median 96.5%, 11% of
// seeds below 90%); pooled over 16 replicates it ranged from 90.3% to 97.2%
// (1st percentile 91.3%), never below 90% (≤ 1.2% by the rule of three;
// about 5 standard deviations below the mean). The largest over windows of
// the root-mean-square error over the 16 replicates is 4.6 times smaller
// with sqrt than with per_window at the median (1st percentile 3.0, least
// 2.7; the 95% half-widths' ratio at the worst window, which explain
// prints, is 170/26.1 = 6.5); the test asserts 2. The mean over replicates
// of the largest |error| is 2.9 times smaller (least 2.2): sqrt's error
// stays near its worst in every window, so its maximum over 366 windows
// is some 2.7 σ, while per_window's grows with the window; the test
// asserts 1.5. With --seed 14 the run is fixed.
func TestSimulateFlightsContinual(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the 334,264 flights")
	}
	base, err := os.ReadFile(filepath.Join(configDir, "flights_continual.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(base)
	const budget = "      epsilon: 4\n"
	if strings.Count(text, budget) != 1 || !strings.HasSuffix(text, "          method: auto\n") {
		t.Fatalf("testdata/config/flights_continual.yaml changed shape: want one %q and the continual count last", budget)
	}
	const replicates = 16
	var b strings.Builder
	b.WriteString(strings.Replace(text, budget, "      epsilon: 100\n", 1))
	sqrtNames, pwNames := []string{"departures"}, []string(nil)
	for i := 2; i <= replicates; i++ {
		sqrtNames = append(sqrtNames, fmt.Sprintf("sqrt_%d", i))
	}
	for i := 1; i <= replicates; i++ {
		pwNames = append(pwNames, fmt.Sprintf("per_window_%d", i))
	}
	for _, names := range [][]string{sqrtNames[1:], pwNames} {
		for _, n := range names {
			method := strings.TrimRightFunc(n, func(r rune) bool { return r == '_' || r >= '0' && r <= '9' })
			fmt.Fprintf(&b, "      - {name: %s, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 365, method: %s}}\n", n, method)
		}
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "flights.yaml")
	writeFile(t, cfgPath, b.String())

	// auto picks sqrt for the file's release.
	c, err := config.Parse(base, "flights_continual.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(c)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := ps[0].Releases[0].Kind.(interface{ Method() string }); !ok || m.Method() != "sqrt" {
		t.Fatalf("auto chose %v, want sqrt", ps[0].Releases[0].Kind)
	}

	csvPath := flightsCSV(t)
	exact := flightsRunning(t)
	stdout, stderr := simulateCLI(t, "-c", cfgPath, "--input", csvPath, "--input-format", "csv", "--seed", "14", "--truth")
	rels, truths := decodeReleases(t, stdout), truthLines(t, stderr)
	checkSummary(t, stderr, map[string]int{"events read": 334264, "accepted": 334264, "late": 0, "rejected": 0, "budget_exhausted": 0})

	// Every day of 2013 once (and 2014-01-01 UTC, which holds the last
	// evening of 2013 in New York), for every release.
	const day = 86_400_000
	start := time.Date(2013, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	days := map[string][]int64{}
	type point struct{ err, half float64 }
	series := map[string][]point{}
	for _, r := range rels {
		days[r.Release] = append(days[r.Release], r.WindowStart)
		if r.Status != "ok" || r.RunningTotal == nil || r.RunningInterval95 == nil {
			t.Fatalf("%s: status %s, running total %v", r.ReleaseID, r.Status, r.RunningTotal)
		}
		want, ok := exact[r.WindowStart]
		got := truths[r.ReleaseID]
		if !ok || got.RunningTotal == nil || *got.RunningTotal != want {
			t.Fatalf("%s: truth %+v, want the exact running count %v", r.ReleaseID, got, want)
		}
		series[r.Release] = append(series[r.Release], point{*r.RunningTotal - want, *r.RunningInterval95})
	}
	for _, name := range append(append([]string(nil), sqrtNames...), pwNames...) {
		ws := days[name]
		if len(ws) != 366 {
			t.Fatalf("%s: %d windows released, want the 365 days of 2013 and 2014-01-01", name, len(ws))
		}
		for i, w := range ws {
			if w != start+int64(i)*day {
				t.Fatalf("%s: release %d is of window %s, want %s", name, i, time.UnixMilli(w).UTC(), time.UnixMilli(start+int64(i)*day).UTC())
			}
		}
	}

	// Coverage (sqrt, pooled over the replicates), the worst window's
	// RMS error and the mean largest |error| of each method.
	measure := func(names []string) (covered float64, worstRMS float64, meanMax float64, half float64) {
		sq := make([]float64, 366)
		in := 0
		for _, n := range names {
			worst := 0.0
			for i, p := range series[n] {
				sq[i] += p.err * p.err
				worst = math.Max(worst, math.Abs(p.err))
				if math.Abs(p.err) <= p.half {
					in++
				}
				half = math.Max(half, p.half)
			}
			meanMax += worst / float64(len(names))
		}
		for _, s := range sq {
			worstRMS = math.Max(worstRMS, math.Sqrt(s/float64(len(names))))
		}
		return float64(in) / float64(366*len(names)), worstRMS, meanMax, half
	}
	cov, rmsSqrt, maxSqrt, halfSqrt := measure(sqrtNames)
	covPW, rmsPW, maxPW, halfPW := measure(pwNames)
	t.Logf("sqrt: covered %.1f%%, worst-window RMS error %.1f, mean largest |error| %.1f, widest 95%% half-width %.1f", 100*cov, rmsSqrt, maxSqrt, halfSqrt)
	t.Logf("per_window: covered %.1f%%, worst-window RMS error %.1f, mean largest |error| %.1f, widest 95%% half-width %.1f", 100*covPW, rmsPW, maxPW, halfPW)
	if cov < 0.90 {
		t.Errorf("sqrt's 95%% intervals covered the exact running count in %.1f%% of %d windows, want ≥ 90%%", 100*cov, 366*replicates)
	}
	if rmsPW < 2*rmsSqrt || maxPW < 1.5*maxSqrt {
		t.Errorf("per_window's worst-window RMS error %.1f and mean largest |error| %.1f; want ≥ 2 and 1.5 times sqrt's %.1f and %.1f", rmsPW, maxPW, rmsSqrt, maxSqrt)
	}

	// --plot --truth with the file itself: the running totals of both
	// horizons with their band and the exact totals.
	plotOut, _ := simulateCLI(t, "-c", filepath.Join(configDir, "flights_continual.yaml"), "--input", csvPath, "--input-format", "csv", "--seed", "14", "--truth", "--plot", "--width", "80")
	for _, want := range []string{
		"flights/departures (count)  running total, horizon windows 1–365 of 365  2013-01-01 – 2013-12-31 UTC",
		"flights/departures (count)  running total, horizon windows 1–1 of 365  2014-01-01 – 2014-01-01 UTC",
		"exact − released", "exact total inside the 95% interval in ", " of 365 windows", " of 1 windows",
	} {
		if !strings.Contains(plotOut, want) {
			t.Errorf("--plot --truth output lacks %q", want)
		}
	}
	i := strings.Index(plotOut, "horizon windows 1–365")
	if i < 0 {
		t.FailNow()
	}
	chunk := strings.Split(plotOut[i:], "\n\n")[0]
	lines := strings.Split(chunk, "\n")
	var panels [][]string
	for j, l := range lines {
		if strings.Contains(l, " └") {
			from := j - 10
			panels = append(panels, lines[from:j+2])
		}
	}
	if len(panels) != 2 {
		t.Fatalf("%d charts in the horizon's plot, want 2:\n%s", len(panels), chunk)
	}
	for k, p := range panels {
		d := charttest.ParseBand(t, p)
		marks := map[rune]int{}
		for _, row := range d.Cells {
			for _, ch := range row {
				marks[ch]++
			}
		}
		if marks['░'] == 0 || marks['×']+marks['⊕'] == 0 || marks['•']+marks['⊕'] == 0 {
			t.Errorf("chart %d lacks the band, the released or the exact totals:\n%s", k, strings.Join(p, "\n"))
		}
	}
}
