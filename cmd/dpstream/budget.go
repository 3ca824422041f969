package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/schema"
)

func cmdBudget(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("budget", "[-c pipeline.yaml] [flags]", `
Show each stream's privacy budget from the accountant topic: releases
charged and refused, ε spent at the stream's δ (RDP composition, or plain
composition when every charge was pure and that is smaller), the budget and
what remains.`, stdout, stderr)
	var c connFlags
	c.register(fs, false)
	asJSON := fs.Bool("json", false, "print the latest state of each stream as JSON lines instead of a table")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	cfg, ok := loadForClient(c.config, flagSet(fs, "c", "config"), stderr)
	if !ok {
		return exitConfig
	}
	brokers, _, _ := brokersFor(cfg, c, false, nil)
	latest := map[string]schema.BudgetState{}
	err := kafkaio.ReadAll(ctx, brokers, cfg.Topics.Accountant, func(m kafka.Message) error {
		st, err := schema.DecodeBudgetState(m.Value)
		if err != nil {
			fmt.Fprintf(stderr, "dpstream budget: skipping undecodable record at offset %d: %v\n", m.Offset, err)
			return nil
		}
		latest[st.Stream] = st
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "dpstream budget: %v (is the pipeline running? brokers: %v)\n", err, brokers)
		return exitError
	}
	if len(latest) == 0 {
		fmt.Fprintln(stdout, "no budget state yet: no stream has released anything")
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
	fmt.Fprintln(tw, "STREAM\tPERIOD\tCHARGED\tREFUSED\tε_SPENT\tδ\tε_BUDGET\tε_REMAINING")
	for _, n := range names {
		s := latest[n]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.4f\t%g\t%g\t%.4f\n", s.Stream, s.Period, s.ReleasesCharged, s.ReleasesRefused, s.EpsilonSpent, s.Delta, s.EpsilonBudget, s.EpsilonRemaining)
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
