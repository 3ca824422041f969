// Command dpstream runs a differential-privacy pipeline on Kafka: producers
// publish events keyed by a privacy unit, dpstream releases noisy
// statistics per event-time window and accounts for every release against
// each stream's privacy budget.
//
// Usage:
//
//	dpstream <command> [flags]
//
// Run `dpstream help` for the commands and `dpstream <command> --help` for
// each command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// exit codes
const (
	exitOK     = 0
	exitError  = 1 // runtime failure
	exitConfig = 2 // bad usage or configuration: nothing was started
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "run the pipeline stages described by a config file", cmdRun},
		{"demo", "run a self-contained demo: embedded broker, synthetic taxi trips, live releases", cmdDemo},
		{"produce", "publish JSON lines or CSV to a stream's topic in the stream's format", cmdProduce},
		{"tail", "print releases, accountant, ledger or dead-letter records as JSON lines", cmdTail},
		{"simulate", "run a stream's stages over a file of events, without Kafka, and print the releases", cmdSimulate},
		{"predict", "ask a prediction release over Kafka and print its private answer", cmdPredict},
		{"budget", "show each stream's privacy budget: charged, spent, remaining", cmdBudget},
		{"explain", "explain each release's sensitivity, noise, error and budget cost", cmdExplain},
		{"account", "privacy calculator: ε (or δ) of composed mechanisms by RDP, no pipeline needed", cmdAccount},
		{"bench", "measure end-to-end throughput on the embedded broker", cmdBench},
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `dpstream: differentially private statistics over Kafka streams.

Usage:
  dpstream <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Start here:
  dpstream demo                 # everything in one process, nothing to install
  dpstream explain -c pipeline.yaml
  dpstream run -c pipeline.yaml

Run 'dpstream <command> --help' for a command's flags.
`)
}

func main() {
	os.Exit(mainProcess(os.Args[1:], os.Stdout, os.Stderr))
}

// mainProcess is main without the exit: SIGINT and SIGTERM cancel the
// command's context, and the command's exit code is returned. Tests run
// it in a child process to see what a real process does with signals.
func mainProcess(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return dispatch(ctx, args, stdout, stderr)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitConfig
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help", "-help":
		if len(args) > 1 {
			return dispatch(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "dpstream: unknown command %q\n", name)
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	sort.Strings(names)
	fmt.Fprintf(stderr, "commands: %s (see 'dpstream help')\n", strings.Join(names, ", "))
	return exitConfig
}

// newFlags returns a flag set whose --help prints the description, usage
// line and flags to stdout.
func newFlags(name, usageLine, description string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: dpstream %s %s\n\n%s\n\nFlags:\n", name, usageLine, strings.TrimSpace(description))
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args for a command that takes no positional argument;
// it returns (exit code, done) where done means the caller should return
// the code (help printed or a usage error).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (int, bool) {
	_, code, done := parseArgs(fs, args, 0, stdout)
	return code, done
}

// parseArgs parses args for a command that takes at most maxArgs
// positional arguments, and returns them with (exit code, done) as
// parseFlags does.
//
// Flags and positional arguments may come in any order: Go's flag package
// stops at the first positional argument, which silently turned every flag
// after a stray word into one more ignored argument (`run other.yaml
// --brokers kafka:9092` ran ./pipeline.yaml on an embedded broker). Here
// parsing resumes after each positional argument, so every flag counts,
// and a positional argument beyond maxArgs is a usage error (exit 2) that
// names it. Everything after "--" is positional.
//
// flag.FlagSet.Parse prints the usage to its output itself on --help and on
// errors; it is silenced here so that help goes to stdout only, and usage
// errors to stderr only, each once.
func parseArgs(fs *flag.FlagSet, args []string, maxArgs int, stdout io.Writer) ([]string, int, bool) {
	stderr := fs.Output()
	fs.SetOutput(io.Discard)
	var positional []string
	var err error
	for rest := args; ; {
		if err = fs.Parse(rest); err != nil {
			break
		}
		left := fs.Args()
		if len(left) == 0 {
			break
		}
		if used := len(rest) - len(left); used > 0 && rest[used-1] == "--" {
			positional = append(positional, left...)
			break
		}
		positional = append(positional, left[0])
		rest = left[1:]
	}
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return nil, exitOK, true
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return nil, exitConfig, true
	}
	if len(positional) > maxArgs {
		arg := positional[maxArgs]
		fmt.Fprintf(stderr, "dpstream %s: unexpected argument %q%s\n", fs.Name(), arg, argHint(fs, arg))
		fmt.Fprintf(stderr, "Run 'dpstream %s --help' for its usage.\n", fs.Name())
		return nil, exitConfig, true
	}
	return positional, exitOK, false
}

// argHint suggests the flag an unexpected positional argument was probably
// meant for: a config file for -c, an input file for the flag that reads
// it. It returns "" when nothing fits.
func argHint(fs *flag.FlagSet, arg string) string {
	ext := strings.ToLower(filepath.Ext(arg))
	var flagName string
	switch {
	case ext == ".yaml" || ext == ".yml":
		flagName = "c"
	case ext == ".jsonl" || ext == ".json" || ext == ".csv":
		for _, f := range []string{"input", "file"} {
			if fs.Lookup(f) != nil {
				flagName = f
				break
			}
		}
	}
	if flagName == "" || fs.Lookup(flagName) == nil {
		return ""
	}
	dash := "--"
	if len(flagName) == 1 {
		dash = "-"
	}
	return fmt.Sprintf(" (did you mean %s%s %s?)", dash, flagName, arg)
}

// logFlags are the logging flags every long-running command has.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", l.format)
}
