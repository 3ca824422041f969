package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// budgetKL formats a state's composed capacity-bounded figures: the KL
// against linear adversaries and, in parentheses, the unrestricted KL of
// the same charges, with the number of charged releases they leave out
// (whose charge has no additive-noise figure). A state written before the
// figures existed reads 0 (0).
func budgetKL(s schema.BudgetState) string {
	out := fmt.Sprintf("%.4g (%.4g)", s.LinearKL, s.KL)
	if s.ReleasesWithoutKL > 0 {
		out += fmt.Sprintf(", %d releases without", s.ReleasesWithoutKL)
	}
	return out
}

func cmdBudget(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("budget", "[-c pipeline.yaml] [flags]", `
Show each stream's privacy budget from the accountant topic: releases
charged and refused, ε spent at the stream's δ (RDP composition, or plain
composition when every charge was pure and that is smaller), the budget and
what remains, and the capacity-bounded figure: the KL of the charges so
far against linear adversaries beside their unrestricted KL (non-adaptive
composition; see the README, "dpstream account").

With --pdp it shows the per-instance DP view from the RESTRICTED pdp topic
instead: for each stream's latest window, the distribution over units of
each release's per-instance ε beside its worst-case ε, and the distribution
of the units' cumulative per-instance ε (with --top N, the N units that have
lost the most). Per-instance losses depend on the data: show them to
operators only.`, stdout, stderr)
	var c connFlags
	c.register(fs, false)
	asJSON := fs.Bool("json", false, "print the latest state of each stream as JSON lines instead of a table")
	pdp := fs.Bool("pdp", false, "show per-instance DP (restricted pdp topic) instead of the budget")
	top := fs.Int("top", 0, "with --pdp: also list the N units with the largest cumulative per-instance ε")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if *top < 0 || (*top > 0 && !*pdp) {
		fmt.Fprintln(stderr, "dpstream budget: --top needs --pdp and a count >= 0")
		return exitConfig
	}
	cfg, ok := loadForClient(c.config, flagSet(fs, "c", "config"), stderr)
	if !ok {
		return exitConfig
	}
	conn, closeConn, code := clientConn(ctx, "budget", cfg, c, " (is the pipeline running?)", stderr)
	if code != exitOK {
		return code
	}
	defer closeConn()
	if *pdp {
		return budgetPDP(ctx, conn, cfg.Topics.PDP, *asJSON, *top, stdout, stderr)
	}
	// The latest state per stream is the one reflecting the most of the
	// ledger (release.StateOffset), not the last written: a release
	// instance that lost ownership may write an older state late.
	latest := map[string]schema.BudgetState{}
	offsets := map[string]int64{}
	err := conn.ReadAll(ctx, cfg.Topics.Accountant, func(m kafka.Message) error {
		st, err := schema.DecodeBudgetState(m.Value)
		if err != nil {
			fmt.Fprintf(stderr, "dpstream budget: skipping undecodable record at offset %d: %v\n", m.Offset, err)
			return nil
		}
		off := release.StateOffset(m)
		if prev, ok := offsets[st.Stream]; !ok || off >= prev {
			latest[st.Stream], offsets[st.Stream] = st, off
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "dpstream budget: %v (is the pipeline running? brokers: %v)\n", err, conn.Brokers)
		return exitError
	}
	if len(latest) == 0 {
		// With --json, stdout stays valid (empty) JSON lines.
		out := stdout
		if *asJSON {
			out = stderr
		}
		fmt.Fprintln(out, "no budget state yet: no stream has released anything")
		return exitOK
	}
	names := make([]string, 0, len(latest))
	for n := range latest {
		names = append(names, n)
	}
	sort.Strings(names)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, n := range names {
			if err := enc.Encode(latest[n]); err != nil {
				return exitError
			}
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tPERIOD\tCHARGED\tREFUSED\tε_SPENT\tδ\tε_BUDGET\tε_REMAINING\tKL_LINEAR (ANY)")
	for _, n := range names {
		s := latest[n]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.4f\t%g\t%g\t%.4f\t%s\n", s.Stream, s.Period, s.ReleasesCharged, s.ReleasesRefused, s.EpsilonSpent, s.Delta, s.EpsilonBudget, s.EpsilonRemaining, budgetKL(s))
	}
	tw.Flush()
	return exitOK
}

// flagSet reports whether any of the named flags was given.
func flagSet(fs *flag.FlagSet, names ...string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				set = true
			}
		}
	})
	return set
}

// budgetPDP prints the per-instance DP view of the pdp topic: the latest
// summary per stream and, with top > 0, the units with the largest
// cumulative per-instance ε.
func budgetPDP(ctx context.Context, conn *kafkaio.Connection, topic string, asJSON bool, top int, stdout, stderr io.Writer) int {
	latest := map[string]schema.PDPSummary{}
	units := map[string]schema.PDPUnit{} // by key: the latest record wins, as compaction keeps it
	err := conn.ReadAll(ctx, topic, func(m kafka.Message) error {
		typ := ""
		for _, h := range m.Headers {
			if h.Key == schema.PDPTypeHeader {
				typ = string(h.Value)
			}
		}
		switch typ {
		case schema.PDPTypeSummary:
			s, err := schema.DecodePDPSummary(m.Value)
			if err != nil {
				fmt.Fprintf(stderr, "dpstream budget: skipping undecodable pdp summary at offset %d: %v\n", m.Offset, err)
				return nil
			}
			if cur, ok := latest[s.Stream]; !ok || s.WindowStart >= cur.WindowStart {
				latest[s.Stream] = s
			}
		case schema.PDPTypeUnit:
			if top == 0 {
				return nil
			}
			u, err := schema.DecodePDPUnit(m.Value)
			if err != nil {
				fmt.Fprintf(stderr, "dpstream budget: skipping undecodable pdp unit record at offset %d: %v\n", m.Offset, err)
				return nil
			}
			units[string(m.Key)] = u
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "dpstream budget: %v (is the pipeline running? brokers: %v)\n", err, conn.Brokers)
		return exitError
	}
	if len(latest) == 0 {
		out := stdout
		if asJSON {
			out = stderr
		}
		fmt.Fprintln(out, "no per-instance DP summaries yet: no window has been released")
		return exitOK
	}
	names := make([]string, 0, len(latest))
	for n := range latest {
		names = append(names, n)
	}
	sort.Strings(names)
	ranked := make([]schema.PDPUnit, 0, len(units))
	for _, u := range units {
		ranked = append(ranked, u)
	}
	sort.Slice(ranked, func(i, j int) bool {
		if ranked[i].Epsilon != ranked[j].Epsilon {
			return ranked[i].Epsilon > ranked[j].Epsilon
		}
		return ranked[i].Stream+"/"+ranked[i].Unit < ranked[j].Stream+"/"+ranked[j].Unit
	})
	if asJSON {
		enc := json.NewEncoder(stdout)
		for _, n := range names {
			if err := enc.Encode(latest[n]); err != nil {
				return exitError
			}
		}
		for i := 0; i < len(ranked) && i < top; i++ {
			if err := enc.Encode(ranked[i]); err != nil {
				return exitError
			}
		}
		return exitOK
	}
	fmt.Fprintln(stdout, "RESTRICTED: per-instance losses depend on the data; do not publish them.")
	for _, n := range names {
		s := latest[n]
		fmt.Fprintf(stdout, "\nstream %s, window %s–%s, ε at δ=%g\n", s.Stream,
			time.UnixMilli(s.WindowStart).UTC().Format("2006-01-02 15:04:05"), time.UnixMilli(s.WindowEnd).UTC().Format("15:04:05"), s.Delta)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  RELEASE\tSTATUS\tUNITS\tp50\tp90\tp99\tMAX\tWORST-CASE ε\tWORST/MEDIAN")
		for _, r := range s.Releases {
			ratio := "—"
			if r.Status == "ok" && r.P50 > 0 {
				ratio = fmt.Sprintf("%.3g", r.DPEpsilon/r.P50)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%s\n", r.Release, r.Status, r.Units, r.P50, r.P90, r.P99, r.Max, r.DPEpsilon, ratio)
		}
		fmt.Fprintf(tw, "  cumulative\t\t%d\t%.4g\t%.4g\t%.4g\t%.4g\t\t\n", s.CumulativeUnits, s.CumulativeP50, s.CumulativeP90, s.CumulativeP99, s.CumulativeMax)
		tw.Flush()
	}
	if top > 0 {
		fmt.Fprintf(stdout, "\nunits with the largest cumulative per-instance ε:\n")
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  STREAM\tUNIT\tε\tCHARGES")
		for i := 0; i < len(ranked) && i < top; i++ {
			u := ranked[i]
			fmt.Fprintf(tw, "  %s\t%s\t%.4g\t%d\n", u.Stream, u.Unit, u.Epsilon, u.Charges)
		}
		tw.Flush()
	}
	return exitOK
}
