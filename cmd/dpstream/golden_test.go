package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// updateGolden rewrites the golden files of TestGolden from the current
// code: go test ./cmd/dpstream -run TestGolden -update
//
// The goldens are the "nothing changes for users" gate of issue 12 (one
// release kind, one package): they were recorded BEFORE any kind moved.
// NEVER run -update to make a diff go away during that refactor: a diff
// means a user-visible byte changed, and the refactor is wrong. Update
// them only for a deliberate, reviewed change of behaviour, in its own
// commit that says why.
var updateGolden = flag.Bool("update", false, "rewrite the golden files (never to paper over a diff; see golden_test.go)")

// goldenDir holds the golden configs, their inputs (written once by
// gen.go, committed) and, under out/, the recorded outputs.
const goldenDir = "testdata/golden"

// goldenSeed seeds every golden run's noise.
const goldenSeed = "7"

// goldenCases are the golden configs and the input each runs on. Every
// *.yaml in goldenDir must be listed (TestGolden checks), so that a config
// cannot be added and silently skipped.
var goldenCases = []struct {
	config, input string
}{
	{"basic_laplace", "events.jsonl"},  // count, sum, mean, histogram; Laplace
	{"basic_gaussian", "events.jsonl"}, // count, sum, mean, capped histogram; Gaussian
	{"histograms", "events.jsonl"},     // 1-3 fields, bin lists, auto bins, caps, samples
	{"density", "events.jsonl"},        // fixed and auto terms, both noises, samples
	{"rr", "events.jsonl"},             // randomized response with p and epsilon_local, cap
	{"regression", "events.jsonl"},     // ssp, adassp, ops, adaops, pcls (exponential); L = 3
	{"regression_l1", "sparse.jsonl"},  // every method with one row per unit; pcls noisy_min
	{"budget", "events.jsonl"},         // budget_exhausted; pdp: false
	{"period", "events.jsonl"},         // budget.per renews the budget; refusals in a period
	{"event_level", "events.jsonl"},    // privacy_unit: event
	{"avro", "events.jsonl"},           // confluent-avro input, inline schema
	{"grouped", "events.jsonl"},        // group_by: public and selected keys, count_units, select_keys, variance, quantiles
}

// TestGolden runs `dpstream simulate` (cmdSimulate, in-process) on every
// golden config with a fixed seed and --pdp, and again with --plot, plus
// `dpstream explain`, and compares byte for byte what a user sees and what
// the release stage would write with the recorded goldens:
//
//   - <config>.stdout: the releases, as JSON lines;
//   - <config>.stderr: the pDP summaries ({"pdp": …} lines) and the summary;
//   - <config>.plot: the --plot --color=false --width 100 renderings;
//   - <config>.ledger: every ledger record (release.Outcome.Ledger, whose
//     payload is the release's Avro encoding), hex, one per line;
//   - <config>.pdpunits: every per-unit pDP record (schema.PDPUnit) the
//     release stage would write, Avro in hex, one per line;
//   - <config>.explain: `dpstream explain` of the config.
func TestGolden(t *testing.T) {
	listed := map[string]bool{}
	for _, tc := range goldenCases {
		listed[tc.config+".yaml"] = true
	}
	configs, err := filepath.Glob(filepath.Join(goldenDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range configs {
		if !listed[filepath.Base(c)] {
			t.Errorf("%s is not in goldenCases: list it with its input", c)
		}
	}
	for _, tc := range goldenCases {
		t.Run(tc.config, func(t *testing.T) {
			cfg := filepath.Join(goldenDir, tc.config+".yaml")
			in := filepath.Join(goldenDir, tc.input)
			base := filepath.Join(goldenDir, "out", tc.config)

			var ledger, units bytes.Buffer
			tap := &simTap{
				Outcome: func(o release.Outcome) {
					fmt.Fprintf(&ledger, "%s %s %s\n", o.Release.ReleaseID, o.Release.Status, hex.EncodeToString(o.Ledger))
				},
				Units: func(us []schema.PDPUnit) {
					for _, u := range us {
						b, err := schema.EncodePDPUnit(u)
						if err != nil {
							t.Errorf("encode pdp unit %s: %v", u.Unit, err)
							return
						}
						fmt.Fprintf(&units, "%s %s\n", schema.PDPUnitKey(u.Stream, u.Unit), hex.EncodeToString(b))
					}
				},
			}
			ctx := context.WithValue(t.Context(), simTapKey{}, tap)
			var stdout, stderr bytes.Buffer
			if code := cmdSimulate(ctx, []string{"-c", cfg, "--input", in, "--seed", goldenSeed, "--pdp"}, &stdout, &stderr); code != exitOK {
				t.Fatalf("simulate: exit %d; stderr:\n%s", code, stderr.String())
			}
			if ledger.Len() == 0 {
				t.Fatal("the tap saw no ledger record")
			}
			checkGolden(t, base+".stdout", stdout.Bytes())
			checkGolden(t, base+".stderr", stderr.Bytes())
			checkGolden(t, base+".ledger", ledger.Bytes())
			checkGolden(t, base+".pdpunits", units.Bytes())

			// The ledger payloads are the releases on stdout: check that
			// the tap saw exactly what was printed.
			rels := strings.Count(stdout.String(), "\n")
			if n := strings.Count(ledger.String(), "\n"); n != rels {
				t.Errorf("%d ledger records for %d releases", n, rels)
			}

			var plot, plotErr bytes.Buffer
			if code := cmdSimulate(t.Context(), []string{"-c", cfg, "--input", in, "--seed", goldenSeed, "--plot", "--color=false", "--width", "100"}, &plot, &plotErr); code != exitOK {
				t.Fatalf("simulate --plot: exit %d; stderr:\n%s", code, plotErr.String())
			}
			checkGolden(t, base+".plot", plot.Bytes())

			var explain, explainErr bytes.Buffer
			if code := cmdExplain(t.Context(), []string{"-c", cfg}, &explain, &explainErr); code != exitOK {
				t.Fatalf("explain: exit %d; stderr:\n%s", code, explainErr.String())
			}
			checkGolden(t, base+".explain", explain.Bytes())
		})
	}
}

// checkGolden compares got with the golden file path byte for byte (or,
// with -update, rewrites it). On a difference it reports the first
// differing line of each, so that the failure says what changed.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden: %v (record it with -update, only if it is new)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	t.Errorf("%s: output differs from the golden file (%d bytes, want %d): a user-visible byte changed\n%s",
		path, len(got), len(want), firstDiff(string(got), string(want)))
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl == wl {
			continue
		}
		col := 0
		for col < min(len(gl), len(wl)) && gl[col] == wl[col] {
			col++
		}
		return fmt.Sprintf("line %d, byte %d:\n got: %s\nwant: %s", i+1, col+1, clip(gl, col), clip(wl, col))
	}
	return "(same lines; line endings differ)"
}

// clip shows up to 160 bytes of a line around column col.
func clip(s string, col int) string {
	lo := max(0, col-60)
	hi := min(len(s), lo+160)
	out := s[lo:hi]
	if lo > 0 {
		out = "…" + out
	}
	if hi < len(s) {
		out += "…"
	}
	return out
}
