package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/pdpstore"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/accumulate"
	"github.com/dpstream/dpstream/stages/release"
)

// Reasons for which simulate rejects a line before it would reach Kafka:
// `dpstream produce` refuses to publish such a line. The other reasons are
// the accumulate stage's (accumulate.Reason).
const (
	reasonNotAnEvent  = "not_an_event" // not a JSON object, or a malformed CSV row
	reasonUnencodable = "unencodable"  // does not fit the stream's format or schema
)

func cmdSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("simulate", "-c pipeline.yaml --input events.jsonl [flags]", `
Run one stream's pipeline over a file of events, in one process and without
Kafka, and print every release as a JSON line (the JSON of 'dpstream tail
releases'), in window order, then a summary on stderr. It runs the stages'
own code: each line is encoded in the stream's format as 'dpstream produce'
would, routed to the partition its privacy unit hashes to, decoded,
validated, bounded and accumulated per partition and window by the
accumulate stage's code, and the windows are merged, charged to the
stream's budget and released by the release stage's code. Use it to try a
configuration on sample data before deploying it.

Time: event time comes from the stream's event_time field. For a stream
that uses the record timestamp, --time-field names an input field to use
as each record's timestamp; without it every event is stamped with the
current time, as 'dpstream produce' would stamp it.

Partitions: events are spread over the stream's configured partitions
(--partitions overrides the count) by the murmur2 hash of the privacy unit,
as 'dpstream produce' keys them, in file order within each partition;
event-level streams go round-robin. Each partition has its own watermark,
as in the accumulate stage, so the partition count can change which events
are late; a unit's events all land on one partition, so contribution
bounding does not depend on it.

Schedule: the stream's windows start at its configured start, or else at
the window of the first event (in run, at the window holding the wall
clock when the pipeline first ran); earlier events are dead-lettered as
before_start, and every window from the start on is released, empty ones
included. As in run, an event more than window.max_skew ahead of the wall
clock is dead-lettered as future; but no watermark is held back by the
wall clock, since the file is replayed faster than time passes.

Windows close as the data's event time moves past them (each partition's
latest event time minus the grace period, exactly as in the accumulate
stage); idle timeouts are wall-clock behaviour and do not apply. With
--flush (the default) the end of the input counts as the stream going idle
until the last window with an event has closed, so every window up to it
is released; later, empty windows are not.

Continual releases (continual: {horizon, method}): each window's release
carries the running total since its horizon's start with its 95%
interval. --truth prints, next to each, the exact running total (the sum
of the windows' statistics the mechanism added noise to, which the
restricted ledger logs and production never publishes) as a JSON line
{"truth": …} on stderr; --plot draws, when a horizon ends (or the input
does), the running totals over its windows with their 95% band, and with
--truth the exact totals and how often the band covered them.

The noise comes from crypto/rand unless --seed is given: seeded noise makes
runs reproducible and is NOT private, so never publish such releases.
Nothing is written anywhere but stdout and stderr, and no budget is spent:
each run starts with the full budget.`, stdout, stderr)
	cfgPath := fs.String("c", "pipeline.yaml", "pipeline config file")
	fs.StringVar(cfgPath, "config", "pipeline.yaml", "same as -c")
	input := fs.String("input", "-", "input file of events; - reads stdin")
	format := fs.String("input-format", "auto", "input format: jsonl (one JSON object per line), csv (with a header row), or auto (csv for *.csv files)")
	stream := fs.String("stream", "", "stream to simulate (default: the config's only stream)")
	seed := fs.Uint64("seed", 0, "seed of the noise, for reproducible trials (0: crypto/rand); seeded noise is NOT private")
	flush := fs.Bool("flush", true, "at the end of input, close every window up to the last one with an event, as if the stream went idle, and release them")
	deadletter := fs.Bool("deadletter", false, "print every rejected or late record to stderr as a JSON line with its reason (the summary counts them by reason either way)")
	timeField := fs.String("time-field", "", "streams using the record timestamp: the input field to use as each record's timestamp (epoch ms or RFC 3339)")
	partitions := fs.Int("partitions", 0, "input partitions to simulate (0: the stream's configured partitions)")
	pdp := fs.Bool("pdp", false, "also print each window's per-instance DP summary to stderr as a JSON line {\"pdp\": …} (RESTRICTED in production: it depends on the data)")
	truth := fs.Bool("truth", false, "continual releases: also print each window's EXACT running total (the data; production never publishes it) to stderr as a JSON line {\"truth\": …}, and with --plot draw it")
	plot := fs.Bool("plot", false, "draw each release as a terminal chart (as 'tail --plot') instead of a JSON line")
	width := fs.Int("width", 0, "with --plot: chart width in columns (0: $COLUMNS or 80)")
	color := fs.Bool("color", true, "with --plot: colour when stdout is a terminal (NO_COLOR turns it off)")
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	if *partitions < 0 {
		fmt.Fprintf(stderr, "dpstream simulate: --partitions %d: want 0 (the configured count) or more\n", *partitions)
		return exitConfig
	}
	isCSV := *format == "csv" || (*format == "auto" && strings.HasSuffix(strings.ToLower(*input), ".csv"))
	if !isCSV && *format != "jsonl" && *format != "auto" {
		fmt.Fprintf(stderr, "dpstream simulate: --input-format %q: want jsonl, csv or auto\n", *format)
		return exitConfig
	}
	cfg, ps, ok := load(*cfgPath, stderr)
	if !ok {
		return exitConfig
	}
	st, err := pickStream(cfg, *stream)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream simulate:", err)
		return exitConfig
	}
	if *timeField != "" && !st.UsesRecordTimestamp() {
		fmt.Fprintf(stderr, "dpstream simulate: --time-field applies only to streams that use the record timestamp; stream %s takes its event time from field %q\n", st.Name, st.EventTime)
		return exitConfig
	}
	opts := simOptions{Stream: st.Name, Partitions: *partitions, TimeField: *timeField, Flush: *flush, DeadLetter: *deadletter, PDP: *pdp, Truth: *truth}
	opts.tap, _ = ctx.Value(simTapKey{}).(*simTap)
	if *plot {
		if *width < 0 || (*width > 0 && *width < chart.MinWidth) {
			fmt.Fprintf(stderr, "dpstream simulate: --width %d: want 0 (automatic) or at least %d\n", *width, chart.MinWidth)
			return exitConfig
		}
		opts.Plot = &chart.Options{Width: chart.Width(*width, os.Getenv), Color: *color && chart.IsTerminal(stdout, os.Getenv)}
	}
	if *seed != 0 {
		opts.Noise = noise.New(noise.SeededSource(*seed))
		fmt.Fprintf(stderr, "dpstream simulate: --seed %d: the noise is reproducible by anyone who knows the seed, so these releases are NOT private; use them only to try the configuration\n", *seed)
	}
	if *truth {
		fmt.Fprintln(stderr, "dpstream simulate: --truth prints the exact running totals of continual releases: they are the data itself, which production never publishes (only the restricted ledger logs each window's statistic)")
	}
	if st.UsesRecordTimestamp() && *timeField == "" {
		fmt.Fprintf(stderr, "dpstream simulate: stream %s uses the record timestamp and --time-field is not set: every event is stamped with the current time, as 'dpstream produce' would stamp it\n", st.Name)
	}
	sim, err := newSimulator(cfg, ps, opts)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream simulate:", err)
		return exitConfig
	}

	in, closeIn, err := openInput(*input, "input", stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream simulate:", err)
		return exitConfig
	}
	defer closeIn()
	// Unbuffered: each release is printed as soon as its window completes.
	err = sim.run(ctx, in, isCSV, stdout, stderr)
	sim.summary(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "dpstream simulate:", err)
		return exitError
	}
	return exitOK
}

// simOptions configure a simulator.
type simOptions struct {
	Stream     string // the stream to simulate (required)
	Partitions int    // partitions to simulate; 0: the stream's configured count
	TimeField  string // record-timestamp streams: the field holding the record time
	Flush      bool   // release every window up to the last one with an event at the end of input
	DeadLetter bool   // print rejected records as JSON lines
	// Plot, when set, draws each release as a terminal chart (as
	// `tail --plot`) instead of printing its JSON line.
	Plot *chart.Options
	// PDP prints each released window's per-instance DP summary (the
	// record the release stage writes to the restricted pdp topic) to
	// stderr as a JSON line.
	PDP bool
	// Truth prints, next to each continual release, its exact running
	// total (simExact) on stderr as a JSON line, and with Plot draws it
	// in the running-total charts.
	Truth bool
	// Noise draws the release noise (default crypto/rand).
	Noise noise.Sampler
	// Now is the wall clock (default time.Now): the accumulate stage's
	// future-time check (window.max_skew), and the record timestamp of a
	// record-timestamp stream without a TimeField.
	Now func() time.Time
	// tap, when set, sees every record the simulated release stage would
	// write besides the releases; see simTap. Only tests set it.
	tap *simTap
}

// simTap lets a test see what the simulated release stage would write to
// the ledger and pdp topics, which simulate otherwise never prints: the
// golden test (golden_test.go) pins their bytes, so that a refactor cannot
// change a ledger record or a per-unit pDP record unnoticed. A test hands
// one to cmdSimulate in its context, under simTapKey; production never
// does, and then nothing changes.
type simTap struct {
	// Outcome is called with every release outcome, in release order:
	// its Ledger is the ledger record's value (with the encoded release
	// as its payload).
	Outcome func(release.Outcome)
	// Units is called with each released window's changed per-unit pDP
	// records (with PDP).
	Units func([]schema.PDPUnit)
}

// simTapKey is the context key of a *simTap for cmdSimulate.
type simTapKey struct{}

// simulator runs one stream's accumulate and release logic over a sequence
// of events: the stages' own types (accumulate.Input and Partition,
// release.Merger and Releaser), with the Kafka plumbing replaced by direct
// calls.
type simulator struct {
	opts simOptions
	in   accumulate.Input
	ps   *plan.Stream
	enc  schema.Encoder
	unit string // the privacy unit field; "" for event-level streams
	// parts are the partitions' window state, created once the stream's
	// start is known (startAt): from the config, or at the first event.
	parts  []*accumulate.Partition
	offset []int64 // next offset per partition
	merger *release.Merger
	rel    *release.Releaser
	pdp    *pdpstore.Store
	// pdpOut holds the pDP summaries of windows released since the last
	// emit (with PDP).
	pdpOut []schema.PDPSummary

	// continual are the stream's continual releases by name, for --truth
	// and the running-total charts of --plot (simContinual).
	continual map[string]*simContinual

	partialOffset int64 // position in the (simulated) partials topic
	nextRR        int   // round-robin partition of unkeyed (event-level) records
	stats         simStats
}

// simStats is what the summary reports.
type simStats struct {
	Read     int            // input events (non-empty lines or rows)
	Accepted int            // kept by contribution bounding
	Dropped  int            // over the per-unit, per-window bound
	Late     int            // their window had closed on their partition
	Rejected map[string]int // by reason
	Windows  int            // windows released
	OK       int            // releases with status ok
	Refused  int            // releases with status budget_exhausted
}

func (s simStats) rejected() int {
	n := 0
	for _, c := range s.Rejected {
		n += c
	}
	return n
}

// newSimulator builds the stage objects for one stream of a loaded and
// calibrated configuration.
func newSimulator(cfg *config.Config, ps []plan.Stream, opts simOptions) (*simulator, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	inputs, err := pipeline.Inputs(cfg, ps)
	if err != nil {
		return nil, err
	}
	s := &simulator{opts: opts, merger: release.NewMerger(), stats: simStats{Rejected: map[string]int{}}}
	for i := range inputs {
		if inputs[i].Stream.Name == opts.Stream {
			s.in, s.ps = inputs[i], &ps[i]
		}
	}
	if s.ps == nil {
		return nil, fmt.Errorf("no stream %q in the config", opts.Stream)
	}
	st := s.ps.Config
	// The simulator alone decides when a partition is idle (at the end of
	// the input, see flushAll); the configured idle timeout is a wall-clock
	// duration that means nothing here. The copy leaves the plan untouched.
	stream := *s.in.Stream
	stream.IdleTimeout = 0
	s.in.Stream = &stream
	if opts.TimeField != "" && !st.UsesRecordTimestamp() {
		return nil, fmt.Errorf("stream %s: a time field applies only to streams that use the record timestamp", st.Name)
	}
	schemaText, err := st.AvroSchema()
	if err != nil {
		return nil, err
	}
	if s.enc, err = schema.NewEncoder(st.Format, schemaText, st.SchemaID); err != nil {
		return nil, fmt.Errorf("stream %s: %w", st.Name, err)
	}
	if st.PrivacyUnit != config.PrivacyUnitEvent {
		s.unit = st.PrivacyUnit
	}
	n := opts.Partitions
	if n <= 0 {
		n = max(st.Partitions, 1)
	}
	s.parts, s.offset = make([]*accumulate.Partition, n), make([]int64, n)
	s.rel = release.NewReleaser([]plan.Stream{*s.ps}, opts.Noise)
	if !st.Start.IsZero() {
		s.startAt(ledger.Align(st.Start.UnixMilli(), st.Window.Size))
	}
	s.continual = newSimContinual(s.ps)
	s.pdp = pdpstore.NewMemory()
	return s, nil
}

// startAt fixes the stream's start, as run's ledger.StreamStarts does
// (the configured start, or here the window of the first event), and
// creates the partitions there: each reports every window from the start
// on, empty ones included, and the merger never releases an earlier one.
func (s *simulator) startAt(start int64) {
	s.in.Stream.Start = start
	for p := range s.parts {
		s.parts[p] = accumulate.NewPartition(s.in.Stream, int32(p), int32(len(s.parts)), accumulate.NoWatermark)
	}
	s.merger.SetSchedule(s.in.Stream.Name, release.Schedule{Start: start, Grace: s.in.Stream.Grace})
	s.rel.SetStart(s.in.Stream.Name, start)
}

// run reads every event of in, feeds it through the stages, writes each
// release to out as a JSON line and, with --deadletter, each rejected
// record to dl; with Flush it then closes the remaining windows.
func (s *simulator) run(ctx context.Context, in io.Reader, isCSV bool, out, dl io.Writer) error {
	enc := json.NewEncoder(out)
	var dlEnc *json.Encoder
	if s.opts.DeadLetter {
		dlEnc = json.NewEncoder(dl)
	}
	pdpEnc := json.NewEncoder(dl)
	emit := func(rels []schema.Release) error {
		for _, sum := range s.pdpOut {
			if err := pdpEnc.Encode(struct {
				PDP schema.PDPSummary `json:"pdp"`
			}{sum}); err != nil {
				return fmt.Errorf("write pdp summary: %w", err)
			}
		}
		s.pdpOut = s.pdpOut[:0]
		for _, r := range rels {
			if err := s.emitRelease(r, enc, out, pdpEnc); err != nil {
				return err
			}
		}
		return nil
	}
	err := readEvents(in, isCSV, func(line int, raw string, ev map[string]any, perr error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.stats.Read++
		rels, d, err := s.event(ev, perr)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if d != nil && dlEnc != nil {
			d.Line, d.Value = line, raw
			if err := dlEnc.Encode(d); err != nil {
				return fmt.Errorf("write dead letter: %w", err)
			}
		}
		return emit(rels)
	})
	if err != nil {
		return err
	}
	if s.opts.Flush {
		rels, ferr := s.flushAll()
		if eerr := emit(rels); ferr == nil {
			ferr = eerr
		}
		if ferr != nil {
			return ferr
		}
	}
	return s.plotHorizons(out, "")
}

// simDeadLetter is a rejected record as --deadletter prints it: the fields
// of 'dpstream tail deadletter' that exist without Kafka, and the line.
type simDeadLetter struct {
	Line      int    `json:"line"`
	Reason    string `json:"reason"`
	Detail    string `json:"detail"`
	Stream    string `json:"stream"`
	Partition *int   `json:"partition,omitempty"` // absent: rejected before reaching a partition
	Offset    *int64 `json:"offset,omitempty"`
	Value     string `json:"value"` // the input line (CSV: the row's fields, comma-separated)
}

// event passes one input event through the pipeline: produce's keying and
// encoding, the accumulate stage's Admit and Partition.Add, and the
// release of every window that completes. perr is the input parser's error
// for a line that is not an event. It returns the releases made, and the
// dead letter if the event was rejected or late.
func (s *simulator) event(ev map[string]any, perr error) ([]schema.Release, *simDeadLetter, error) {
	if perr != nil {
		return nil, s.reject(reasonNotAnEvent, perr.Error(), -1, 0), nil
	}
	// Keying, as 'dpstream produce' does it: by the unit, murmur2.
	var p int
	if s.unit != "" {
		key, ok := ev[s.unit]
		if !ok || key == nil || fmt.Sprint(key) == "" {
			return nil, s.reject(string(accumulate.ReasonMissingUnit), fmt.Sprintf("field %q is missing or empty", s.unit), -1, 0), nil
		}
		p = kafkaio.PartitionFor([]byte(unitKey(key)), len(s.parts))
	} else {
		p = s.nextRR
		s.nextRR = (s.nextRR + 1) % len(s.parts)
	}
	now := s.opts.Now()
	recordTime := now
	if s.opts.TimeField != "" {
		t, rej := s.recordTime(ev)
		if rej != nil {
			return nil, s.reject(string(rej.Reason), rej.Detail, -1, 0), nil
		}
		recordTime = t
	}
	value, err := s.encode(ev)
	if err != nil {
		return nil, s.reject(reasonUnencodable, err.Error(), -1, 0), nil
	}
	off := s.offset[p]
	s.offset[p]++
	e, rej := s.in.Admit(accumulate.Record{Value: value, Offset: off, Time: recordTime, Partition: p, Partitions: len(s.parts)}, now)
	if rej != nil {
		if part := s.parts[p]; part != nil {
			part.Skip(off)
		}
		return nil, s.reject(string(rej.Reason), rej.Detail, p, off), nil
	}
	if s.in.Stream.Start == 0 {
		s.startAt(s.in.Stream.WindowStart(e.Time))
	}
	// No wall-clock cap on the watermark: the file is replayed as fast as
	// it is read, so a cap would hold windows back only because the
	// simulation runs ahead of time, not because of the data.
	e.Clock = 0
	part := s.parts[p]
	outcome, closed, err := part.Add(e)
	if err != nil {
		return nil, nil, fmt.Errorf("accumulate partition %d offset %d: %w", p, off, err)
	}
	var d *simDeadLetter
	switch outcome {
	case accumulate.Accepted:
		s.stats.Accepted++
	case accumulate.Dropped:
		s.stats.Dropped++
	case accumulate.Late:
		s.stats.Late++
		rej := part.LateRejection(e)
		d = s.deadLetter(string(rej.Reason), rej.Detail, p, off)
	}
	rels, err := s.partials(closed)
	return rels, d, err
}

// reject counts a rejection and returns its dead letter; p < 0 means the
// record never reached a partition.
func (s *simulator) reject(reason, detail string, p int, off int64) *simDeadLetter {
	s.stats.Rejected[reason]++
	return s.deadLetter(reason, detail, p, off)
}

func (s *simulator) deadLetter(reason, detail string, p int, off int64) *simDeadLetter {
	d := &simDeadLetter{Reason: reason, Detail: detail, Stream: s.opts.Stream}
	if p >= 0 {
		d.Partition, d.Offset = &p, &off
	}
	return d
}

// recordTime reads the --time-field of an input event with the accumulate
// stage's own event-time rules (epoch ms or RFC 3339; missing and invalid
// times are rejected with its reasons).
func (s *simulator) recordTime(ev map[string]any) (time.Time, *accumulate.Rejection) {
	v := ev[s.opts.TimeField]
	if n, ok := v.(json.Number); ok {
		// The decoders hand the extractor integers as int64 and other
		// numbers as float64; do the same for the raw line.
		if i, err := n.Int64(); err == nil {
			v = i
		} else if f, err := n.Float64(); err == nil {
			v = f
		}
	}
	x := accumulate.Extractor{EventLevel: true, EventTime: s.opts.TimeField}
	m := map[string]any{}
	if _, ok := ev[s.opts.TimeField]; ok {
		m[s.opts.TimeField] = v
	}
	e, rej := x.Extract(m, 0, time.Time{})
	if rej != nil {
		return time.Time{}, rej
	}
	return time.UnixMilli(e.Time), nil
}

// encode writes an event in the stream's format. With a time field, the
// field stays in the value when the format accepts it (JSON, or an Avro
// schema that declares it) and is left out otherwise: it stands for the
// record timestamp, which is not part of the value.
func (s *simulator) encode(ev map[string]any) ([]byte, error) {
	b, err := s.enc.Encode(ev)
	if err == nil || s.opts.TimeField == "" {
		return b, err
	}
	if _, has := ev[s.opts.TimeField]; !has {
		return nil, err
	}
	rest := make(map[string]any, len(ev))
	for k, v := range ev {
		if k != s.opts.TimeField {
			rest[k] = v
		}
	}
	if b, err2 := s.enc.Encode(rest); err2 == nil {
		return b, nil
	}
	return nil, err
}

// partials hands closed windows' partials to the merger, as the partials
// topic would, and releases every window that completes.
func (s *simulator) partials(closed []schema.Partial) ([]schema.Release, error) {
	var out []schema.Release
	for _, p := range closed {
		// The simulated clock: a window can close, at the earliest, when
		// the latest event time reaches its end plus the grace period.
		at := time.UnixMilli(p.WindowEnd + s.in.Stream.Grace)
		ws := s.merger.Add(p, s.partialOffset, at)
		s.partialOffset++
		for _, w := range ws {
			outs, err := s.rel.ReleaseWindow(w, time.UnixMilli(w.End+s.in.Stream.Grace))
			if tap := s.opts.tap; tap != nil && tap.Outcome != nil {
				for _, o := range outs {
					tap.Outcome(o)
				}
			}
			if err == nil && s.opts.PDP && len(outs) > 0 {
				sum, units, perr := release.PDPWindow(s.pdp, s.ps, w, outs, time.UnixMilli(w.End+s.in.Stream.Grace))
				if perr != nil {
					return out, fmt.Errorf("per-instance DP of window %d: %w", w.Start, perr)
				}
				s.pdpOut = append(s.pdpOut, sum)
				if tap := s.opts.tap; tap != nil && tap.Units != nil {
					tap.Units(units)
				}
			}
			for _, o := range outs {
				s.exact(w, o)
				out = append(out, o.Release)
				if o.Release.Status == release.StatusOK {
					s.stats.OK++
				} else {
					s.stats.Refused++
				}
			}
			if err != nil {
				return out, fmt.Errorf("release window %d: %w", w.Start, err)
			}
			s.stats.Windows++
		}
	}
	return out, nil
}

// flushAll treats the end of the input as every partition going idle until
// the last window holding an event has closed everywhere, with the stage's
// own Partition.Idle: a partition with events is idle for as long as it
// takes its watermark (its latest event time plus the idle time, minus the
// grace period) to reach that window's end. A partition that never had an
// event follows the clock instead, as it follows the wall clock in a
// deployment: from the stream's start it reports every window up to the
// same end, empty. Later, empty windows are not released.
func (s *simulator) flushAll() ([]schema.Release, error) {
	last := int64(accumulate.NoWatermark)
	for _, p := range s.parts {
		if p != nil {
			last = max(last, p.MaxEventTime())
		}
	}
	if last == accumulate.NoWatermark {
		return nil, nil // no event reached a window
	}
	size, grace := s.in.Stream.Size, s.in.Stream.Grace
	end := s.in.Stream.WindowStart(last) + size
	var out []schema.Release
	for _, p := range s.parts {
		var idle time.Duration
		if m := p.MaxEventTime(); m != accumulate.NoWatermark {
			idle = time.Duration(end-m+grace) * time.Millisecond
		}
		rels, err := s.partials(p.Idle(time.UnixMilli(end+grace), idle))
		out = append(out, rels...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// summary prints what happened on stderr.
func (s *simulator) summary(w io.Writer) {
	st := s.stats
	ps := s.ps
	fmt.Fprintf(w, "simulate: stream %s, %d partition(s), window %s, ≤ %d events per unit per window\n",
		ps.Config.Name, len(s.parts), ps.Config.Window.Size, ps.Config.Contribution.MaxEventsPerWindow)
	type line struct{ name, value, note string }
	var rows []line
	row := func(name string, v any, note string) { rows = append(rows, line{name, fmt.Sprint(v), note}) }
	row("events read", st.Read, "")
	row("accepted", st.Accepted, "")
	row("dropped", st.Dropped, fmt.Sprintf("over %d events of a unit in a window", ps.Config.Contribution.MaxEventsPerWindow))
	row("late", st.Late, "their window had closed")
	row("rejected", st.rejected(), "")
	reasons := make([]string, 0, len(st.Rejected))
	for r := range st.Rejected {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		row("  "+r, st.Rejected[r], "")
	}
	row("windows released", st.Windows, "")
	row("releases ok", st.OK, "")
	row("budget_exhausted", st.Refused, "releases refused by the budget")
	if state, ok := s.rel.State(ps.Config.Name, s.rel.LatestPeriod(ps.Config.Name), time.Now()); ok {
		note := fmt.Sprintf("of ε=%g at δ=%g", state.EpsilonBudget, state.Delta)
		if ps.Per > 0 {
			note += fmt.Sprintf(", in the budget period (%s) of the last window", ps.Per)
		}
		row("epsilon spent", strconv.FormatFloat(state.EpsilonSpent, 'g', 6, 64), note)
	}
	nw, vw := 0, 0
	for _, r := range rows {
		nw, vw = max(nw, utf8.RuneCountInString(r.name)), max(vw, len(r.value))
	}
	for _, r := range rows {
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %-*s  %*s  %s", nw, r.name, vw, r.value, r.note), " "))
	}
	open := s.merger.Pending() + s.merger.Held()
	for _, p := range s.parts {
		if p != nil {
			open += p.OpenWindows()
		}
	}
	if !s.opts.Flush && open > 0 {
		fmt.Fprintln(w, "  windows still open at the end of the input were not released (--flush releases them)")
	}
}

// simContinual is what simulate keeps of one continual release
// (kind.Running) for --truth and the running-total charts of --plot: the
// exact running totals of its current horizon, summed from the exact
// statistics of its released windows, and the horizon's released points.
type simContinual struct {
	tp   kind.Totals
	n    int     // coordinates: 1 for a count or sum, the bins of a histogram
	unit float64 // the value of one integer unit of the statistic
	// sums are the exact running totals of the current horizon (which
	// starts at start) in the statistic's integer units: every released
	// window's x since the horizon's step 0 (windows without data add 0).
	sums  []int64
	start int64
	// truth holds, by release id, the exact running totals of releases not
	// yet emitted.
	truth map[string][]float64
	// horizon is the chart of the current horizon (--plot).
	horizon *runningSeries
}

// newSimContinual finds the continual releases of a stream.
func newSimContinual(ps *plan.Stream) map[string]*simContinual {
	out := map[string]*simContinual{}
	for _, pr := range ps.Releases {
		if _, ok := pr.Kind.(kind.Running); !ok {
			continue
		}
		tp, ok := pr.Kind.(kind.Totals)
		if !ok {
			continue
		}
		shape := tp.TotalsShape()
		out[pr.Config.Name] = &simContinual{tp: tp, n: shape.N, unit: shape.Unit, sums: make([]int64, shape.N), truth: map[string][]float64{}}
	}
	return out
}

// exact adds a released window's exact statistic (the kind's TotalsOf of
// the window's merged partials: for a sum, the clamped values on the
// sum's grid, which the noise is added to) to its continual release's
// exact running totals, restarted at each horizon, and keeps them for the
// release's emit.
func (s *simulator) exact(w release.Window, o release.Outcome) {
	c := s.continual[o.Release.Release]
	if c == nil || !s.opts.Truth || o.Release.Status != release.StatusOK || o.Release.HorizonWindow < 1 {
		return
	}
	m, err := c.tp.Merge(w.ReleaseParts(o.Release.Release))
	if err != nil {
		return
	}
	x, err := c.tp.TotalsOf(m)
	if err != nil || len(x) != c.n {
		return
	}
	if start := o.Release.WindowStart - int64(o.Release.HorizonWindow-1)*s.in.Stream.Size; start != c.start {
		clear(c.sums)
		c.start = start
	}
	for i, v := range x {
		c.sums[i] += v
	}
	t := make([]float64, c.n)
	for i, v := range c.sums {
		t[i] = float64(v) * c.unit
	}
	c.truth[o.Release.ReleaseID] = t
}

// simExact is the --truth line of a continual release: its exact running
// total (count, sum) or totals (one per histogram bin), as of its window.
// It is the data itself: production never publishes it.
type simExact struct {
	ReleaseID     string    `json:"release_id"`
	RunningTotal  *float64  `json:"running_total,omitempty"`
	RunningTotals []float64 `json:"running_totals,omitempty"`
}

// emitRelease prints one release: its JSON line, or with --plot its chart,
// first drawing the running totals of a continual release's horizon that
// this release ends; then, with --truth, its exact running total on
// stderr.
func (s *simulator) emitRelease(r schema.Release, enc *json.Encoder, out io.Writer, errEnc *json.Encoder) error {
	c := s.continual[r.Release]
	var truth []float64
	if c != nil {
		truth = c.truth[r.ReleaseID]
		delete(c.truth, r.ReleaseID)
	}
	if s.opts.Plot != nil {
		if c != nil && r.Status == release.StatusOK && r.HorizonWindow > 0 {
			start := r.WindowStart - int64(r.HorizonWindow-1)*s.in.Stream.Size
			if c.horizon != nil && c.horizon.HorizonStart != start {
				if err := s.plotHorizons(out, r.Release); err != nil {
					return err
				}
			}
			if c.horizon == nil {
				c.horizon = &runningSeries{Release: r.Release, Kind: r.Kind, Stream: r.Stream, Horizon: int(r.Horizon), HorizonStart: start, Size: s.in.Stream.Size, Bins: c.n}
			}
			c.horizon.add(r, truth)
		}
		if err := plotRelease(out, r, *s.opts.Plot); err != nil {
			return fmt.Errorf("plot release %s: %w", r.ReleaseID, err)
		}
	} else if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write release %s: %w", r.ReleaseID, err)
	}
	if !s.opts.Truth || truth == nil {
		return nil
	}
	line := simExact{ReleaseID: r.ReleaseID}
	if r.RunningTotal != nil && len(truth) == 1 {
		line.RunningTotal = &truth[0]
	} else {
		line.RunningTotals = truth
	}
	if err := errEnc.Encode(struct {
		Truth simExact `json:"truth"`
	}{line}); err != nil {
		return fmt.Errorf("write truth of %s: %w", r.ReleaseID, err)
	}
	return nil
}

// plotHorizons draws, with --plot, the running totals of the current
// horizon of the continual release named only, or of every continual
// release of the stream when only is "" (at the end of the input), in the
// stream's configured order, and forgets them.
func (s *simulator) plotHorizons(out io.Writer, only string) error {
	if s.opts.Plot == nil {
		return nil
	}
	for _, pr := range s.ps.Releases {
		c := s.continual[pr.Config.Name]
		if c == nil || c.horizon == nil || (only != "" && only != pr.Config.Name) {
			continue
		}
		if err := plotRunning(out, *c.horizon, *s.opts.Plot, s.opts.Truth); err != nil {
			return err
		}
		c.horizon = nil
	}
	return nil
}
