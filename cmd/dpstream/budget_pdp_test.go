package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// pdpTopic is the restricted pdp topic of the budget --pdp tests.
const pdpTopic = "cli.pdp"

// pdpCLI is a broker started by the test with an empty pdp topic, and a
// config that points the CLI at it.
type pdpCLI struct {
	*testkit.Cluster
	cfgPath string
}

// newPDPCLI starts an embedded broker, creates the pdp topic (compacted,
// one partition, as the pipeline does) and writes a config naming it.
func newPDPCLI(t *testing.T) *pdpCLI {
	t.Helper()
	dir := t.TempDir()
	b := testkit.StartBroker(t, testkit.DataDir(filepath.Join(dir, "kafka")))
	b.CreateTopics(kafkaio.TopicSpec{Name: pdpTopic, Partitions: 1, Compact: true})
	cfg := testkit.NewPipeline(testkit.NewStream("rides", "cli.rides").Partitions(1).Window(time.Second, 0, 0).MaxEvents(1).Budget(1, 1e-6).
		Releases(testkit.Count("n").Epsilon(0.5))).
		Brokers(b.Addr).Topics(testkit.Topics{PDP: pdpTopic})
	return &pdpCLI{Cluster: b, cfgPath: cfg.WriteFile(t, filepath.Join(dir, "pipeline.yaml"))}
}

// budget runs `budget -c cfg args...`.
func (c *pdpCLI) budget(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cliTimeout(t, 20*time.Second, append([]string{"budget", "-c", c.cfgPath}, args...)...)
}

// pdpSummaryMsg and pdpUnitMsg are records as the release stage writes
// them: key, Avro value and the type header.
func pdpSummaryMsg(t *testing.T, s schema.PDPSummary) kafka.Message {
	t.Helper()
	b, err := schema.EncodePDPSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	return kafka.Message{Key: []byte(schema.PDPSummaryKey(s.Stream, s.WindowStart)), Value: b,
		Headers: []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeSummary)}}}
}

func pdpUnitMsg(t *testing.T, u schema.PDPUnit) kafka.Message {
	t.Helper()
	b, err := schema.EncodePDPUnit(u)
	if err != nil {
		t.Fatal(err)
	}
	return kafka.Message{Key: []byte(schema.PDPUnitKey(u.Stream, u.Unit)), Value: b,
		Headers: []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeUnit)}}}
}

// TestBudgetPDPUsage: --top needs --pdp and a count ≥ 0; both are usage
// errors (exit 2) reported before any broker is contacted.
func TestBudgetPDPUsage(t *testing.T) {
	// Port 1 on loopback: nothing listens, so a command that tried the
	// broker would fail with exit 1, not 2.
	for _, args := range [][]string{
		{"budget", "--brokers", "127.0.0.1:1", "--top", "2"},
		{"budget", "--brokers", "127.0.0.1:1", "--pdp", "--top", "-1"},
	} {
		code, stdout, stderr := cliTimeout(t, 10*time.Second, args...)
		if code != exitConfig || stdout != "" || !strings.Contains(stderr, "--top needs --pdp") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout and the --top rule on stderr", args, code, stdout, stderr, exitConfig)
		}
	}
}

// TestBudgetPDP drives `dpstream budget --pdp` against pdp records written
// here, as the release stage writes them:
//
//   - an empty pdp topic says that there are no summaries yet;
//   - the table starts with the RESTRICTED banner and shows, per stream,
//     only the latest window's summary: one row per release with its
//     quantiles, worst-case ε and the worst/median ratio dp_epsilon/p50
//     (— for a release that is not ok), and the cumulative row;
//   - --top 2 lists the two units with the largest cumulative ε, largest
//     first, each unit at its latest record (the one compaction keeps);
//   - --json prints one decodable summary per stream, equal to the latest
//     one written, then with --top the units;
//   - an undecodable record is reported on stderr and skipped.
func TestBudgetPDP(t *testing.T) {
	c := newPDPCLI(t)

	code, stdout, stderr := c.budget(t, "--pdp")
	if code != exitOK || !strings.Contains(stdout, "no per-instance DP summaries yet") {
		t.Fatalf("empty pdp topic: exit %d, stdout %q, stderr %q; want 0 and no summaries yet", code, stdout, stderr)
	}

	const w0, w1 = int64(1_750_000_000_000), int64(1_750_000_001_000)
	old := schema.PDPSummary{Stream: "rides", WindowStart: w0, WindowEnd: w0 + 1000, Delta: 1e-6,
		Releases: []schema.PDPRelease{
			{Release: "n", Status: "ok", Units: 7, P50: 0.25, P90: 0.5, P99: 0.5, Max: 0.5, DPEpsilon: 0.5},
		}, CumulativeUnits: 7, CumulativeP50: 0.25, CumulativeP90: 0.5, CumulativeP99: 0.5, CumulativeMax: 0.5, PublishedAt: w0 + 5000}
	latest := schema.PDPSummary{Stream: "rides", WindowStart: w1, WindowEnd: w1 + 1000, Delta: 1e-6,
		Releases: []schema.PDPRelease{
			{Release: "n", Status: "ok", Units: 41, P50: 0.125, P90: 0.375, P99: 0.5, Max: 0.5, DPEpsilon: 0.5},
			{Release: "h", Status: "ok", Units: 41, P50: 0.0625, P90: 0.3, P99: 0.7, Max: 0.75, DPEpsilon: 0.8},
			{Release: "late", Status: "budget_exhausted", Units: 41},
		}, CumulativeUnits: 52, CumulativeP50: 0.4, CumulativeP90: 1.1, CumulativeP99: 1.7, CumulativeMax: 1.8, PublishedAt: w1 + 5000}
	walks := schema.PDPSummary{Stream: "walks", WindowStart: w0, WindowEnd: w0 + 1000, Delta: 1e-5,
		Releases: []schema.PDPRelease{
			{Release: "m", Status: "ok", Units: 3, P50: 0.2, P90: 0.4, P99: 0.4, Max: 0.4, DPEpsilon: 1},
		}, CumulativeUnits: 3, CumulativeP50: 0.2, CumulativeP90: 1.2, CumulativeP99: 1.2, CumulativeMax: 1.2, PublishedAt: w0 + 6000}
	unit := func(stream, u string, eps float64, charges, window int64) schema.PDPUnit {
		return schema.PDPUnit{Stream: stream, Unit: u, PureEpsilon: eps, Charges: charges, LastWindow: window, Epsilon: eps, Delta: 1e-6, UpdatedAt: window + 5000}
	}
	// Unit b's first record (0.3) is superseded by its second (1.8): the
	// ranking must use the latest, which puts b first; c (1.5) is second
	// and z (1.2, another stream) third.
	c.Produce(pdpTopic,
		pdpUnitMsg(t, unit("rides", "a", 0.5, 1, w0)),
		pdpUnitMsg(t, unit("rides", "b", 0.3, 1, w0)),
		pdpSummaryMsg(t, old),
		pdpUnitMsg(t, unit("walks", "z", 1.2, 3, w0)),
		pdpSummaryMsg(t, walks),
		pdpUnitMsg(t, unit("rides", "b", 1.8, 4, w1)),
		pdpUnitMsg(t, unit("rides", "c", 1.5, 3, w1)),
		kafka.Message{Key: []byte("summary/rides/0"), Value: []byte("not avro"),
			Headers: []kafka.Header{{Key: schema.PDPTypeHeader, Value: []byte(schema.PDPTypeSummary)}}},
		pdpSummaryMsg(t, latest),
	)

	t.Run("table", func(t *testing.T) {
		code, stdout, stderr := c.budget(t, "--pdp")
		if code != exitOK {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		if !strings.Contains(stderr, "skipping undecodable pdp summary") {
			t.Errorf("the undecodable record is not reported; stderr:\n%s", stderr)
		}
		lines := strings.Split(stdout, "\n")
		if !strings.HasPrefix(lines[0], "RESTRICTED") {
			t.Errorf("first line %q, want the RESTRICTED banner", lines[0])
		}
		for _, s := range []schema.PDPSummary{latest, walks} {
			block := pdpStreamBlock(t, stdout, s.Stream)
			if !strings.Contains(block[0], time.UnixMilli(s.WindowStart).UTC().Format("2006-01-02 15:04:05")) {
				t.Errorf("stream %s: header %q does not name window %d", s.Stream, block[0], s.WindowStart)
			}
			if !strings.Contains(block[1], "WORST/MEDIAN") {
				t.Errorf("stream %s: table header %q has no WORST/MEDIAN column", s.Stream, block[1])
			}
			rows := map[string][]string{}
			for _, l := range block[2:] {
				if f := strings.Fields(l); len(f) > 0 {
					rows[f[0]] = f
				}
			}
			if len(rows) != len(s.Releases)+1 {
				t.Errorf("stream %s: rows %v, want one per release of the latest window and the cumulative row", s.Stream, rows)
			}
			for _, r := range s.Releases {
				f := rows[r.Release]
				// RELEASE STATUS UNITS p50 p90 p99 MAX WORST-CASE ε WORST/MEDIAN
				if len(f) != 9 || f[1] != r.Status || f[2] != strconv.FormatInt(r.Units, 10) {
					t.Errorf("stream %s release %s: row %q, want status %s, units %d and 9 columns", s.Stream, r.Release, f, r.Status, r.Units)
					continue
				}
				for i, want := range []float64{r.P50, r.P90, r.P99, r.Max, r.DPEpsilon} {
					pdpCheckNum(t, fmt.Sprintf("%s/%s column %d", s.Stream, r.Release, 3+i), f[3+i], want)
				}
				if r.Status != "ok" {
					if f[8] != "—" {
						t.Errorf("stream %s release %s (%s): ratio %q, want —", s.Stream, r.Release, r.Status, f[8])
					}
					continue
				}
				pdpCheckNum(t, fmt.Sprintf("%s/%s worst/median", s.Stream, r.Release), f[8], r.DPEpsilon/r.P50)
			}
			f := rows["cumulative"]
			if len(f) != 6 || f[1] != strconv.FormatInt(s.CumulativeUnits, 10) {
				t.Errorf("stream %s: cumulative row %q, want units %d and 4 quantiles", s.Stream, f, s.CumulativeUnits)
				continue
			}
			for i, want := range []float64{s.CumulativeP50, s.CumulativeP90, s.CumulativeP99, s.CumulativeMax} {
				pdpCheckNum(t, fmt.Sprintf("%s cumulative column %d", s.Stream, 2+i), f[2+i], want)
			}
		}
		if strings.Contains(stdout, "largest cumulative") {
			t.Errorf("units listed without --top:\n%s", stdout)
		}
	})

	t.Run("top", func(t *testing.T) {
		code, stdout, stderr := c.budget(t, "--pdp", "--top", "2")
		if code != exitOK {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		_, after, ok := strings.Cut(stdout, "units with the largest cumulative per-instance ε:")
		if !ok {
			t.Fatalf("no unit list:\n%s", stdout)
		}
		var got [][]string
		for _, l := range strings.Split(after, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] != "STREAM" {
				got = append(got, f)
			}
		}
		want := [][]string{{"rides", "b", "1.8", "4"}, {"rides", "c", "1.5", "3"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("top 2 rows %q, want %q (largest ε first, latest record per unit)", got, want)
		}
	})

	t.Run("json", func(t *testing.T) {
		for _, tc := range []struct {
			args  []string
			units []schema.PDPUnit
		}{
			{[]string{"--pdp", "--json"}, nil},
			{[]string{"--pdp", "--json", "--top", "2"}, []schema.PDPUnit{unit("rides", "b", 1.8, 4, w1), unit("rides", "c", 1.5, 3, w1)}},
		} {
			code, stdout, stderr := c.budget(t, tc.args...)
			if code != exitOK {
				t.Fatalf("%v: exit %d; stderr:\n%s", tc.args, code, stderr)
			}
			var lines []string
			sc := bufio.NewScanner(strings.NewReader(stdout))
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			wantSums := []schema.PDPSummary{latest, walks} // by stream name
			if len(lines) != len(wantSums)+len(tc.units) {
				t.Fatalf("%v: %d lines, want %d summaries and %d units:\n%s", tc.args, len(lines), len(wantSums), len(tc.units), stdout)
			}
			for i, want := range wantSums {
				var got schema.PDPSummary
				dec := json.NewDecoder(strings.NewReader(lines[i]))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&got); err != nil {
					t.Errorf("%v: line %d is not a summary: %v: %s", tc.args, i, err, lines[i])
				} else if !reflect.DeepEqual(got, want) {
					t.Errorf("%v: line %d is %+v, want the latest summary of %s %+v", tc.args, i, got, want.Stream, want)
				}
			}
			for i, want := range tc.units {
				var got schema.PDPUnit
				dec := json.NewDecoder(strings.NewReader(lines[len(wantSums)+i]))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&got); err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("%v: unit line %d is %+v (%v), want %+v", tc.args, i, got, err, want)
				}
			}
		}
	})
}

// pdpStreamBlock returns the lines of one stream's block of the --pdp
// table: its header line, the table header, then the rows up to the next
// blank line.
func pdpStreamBlock(t *testing.T, stdout, stream string) []string {
	t.Helper()
	lines := strings.Split(stdout, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "stream "+stream+",") {
			end := i + 1
			for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
				end++
			}
			if end-i < 3 {
				t.Fatalf("stream %s: block %q has no rows", stream, lines[i:end])
			}
			return lines[i:end]
		}
	}
	t.Fatalf("no block for stream %s:\n%s", stream, stdout)
	return nil
}

// pdpCheckNum checks a printed number against want to the 4 significant
// digits the table prints (%.4g; the ratio has 3, %.3g, so the allowance is
// half a unit in its last place: 5e-3 relative).
func pdpCheckNum(t *testing.T, what, got string, want float64) {
	t.Helper()
	v, err := strconv.ParseFloat(got, 64)
	if err != nil || math.Abs(v-want) > 5e-3*math.Abs(want) {
		t.Errorf("%s: printed %q, want %v", what, got, want)
	}
}

// TestBudgetLatestState: of a stream's budget states, budget shows the one
// reflecting the most of the ledger (release.LedgerOffsetHeader), not the
// last written: a release instance that lost ownership may write an older
// state after the new owner's.
func TestBudgetLatestState(t *testing.T) {
	c := newPDPCLI(t)
	const topic = "dpstream.accountant"
	c.CreateTopics(kafkaio.TopicSpec{Name: topic, Partitions: 1, Compact: true})
	state := func(charged, ledgerOffset int64) kafka.Message {
		b, err := schema.EncodeBudgetState(schema.BudgetState{Stream: "rides", ReleasesCharged: charged, EpsilonBudget: 1, Delta: 1e-6})
		if err != nil {
			t.Fatal(err)
		}
		return kafka.Message{Key: []byte("rides"), Value: b,
			Headers: []kafka.Header{{Key: release.LedgerOffsetHeader, Value: []byte(strconv.FormatInt(ledgerOffset, 10))}}}
	}
	// The new owner's state (6 charges, ledger offset 40), then the stale
	// one of the fenced owner (2 charges, offset 12), written last.
	c.Produce(topic, state(6, 40), state(2, 12))
	code, out, errOut := c.budget(t, "--json")
	if code != exitOK {
		t.Fatalf("budget: exit %d: %s", code, errOut)
	}
	var st schema.BudgetState
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &st); err != nil {
		t.Fatalf("budget --json printed %q: %v", out, err)
	}
	if st.ReleasesCharged != 6 {
		t.Errorf("budget shows %d charges, want the newer state's 6 (not the stale one written last)", st.ReleasesCharged)
	}
}
