package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/metrics"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// recordUpgradeFixture runs TestRecordUpgradeFixture:
//
//	go test ./internal/e2e -run TestRecordUpgradeFixture -record-upgrade-fixture
//
// The fixture is FROZEN as written by the code of commit 0e31a7c: it is
// what a ledger written by that version looks like, for the tests of later
// versions that must read, checkpoint and continue it. Do not regenerate it
// with later code — later code writes a newer format, and the fixture would
// then test nothing. The recorder refuses to write over an existing
// fixture directory; a fixture of a later version goes to a directory of
// its own (testdata/upgrade/v<commit>), with upgradeFixtureCommit changed.
var recordUpgradeFixture = flag.Bool("record-upgrade-fixture", false,
	"record the upgrade fixture into "+upgradeFixtureDir+" (frozen: never regenerate it with later code)")

// upgradeFixtureOut is where TestRecordUpgradeFixture writes: the fixture
// by default; another directory to try the recorder without touching it.
var upgradeFixtureOut = flag.String("upgrade-fixture-out", upgradeFixtureDir, "the directory TestRecordUpgradeFixture writes (it must not exist)")

// upgradeFixtureCommit is the commit whose code the recorder runs.
const upgradeFixtureCommit = "0e31a7c"

const (
	// upgradeRecordBytes is the record limit of every run: z's release of
	// upgradeZones public keys (about 23 bytes each) takes 3 chunks.
	upgradeRecordBytes = 4000
	upgradeZones       = 400
	upgradeNoiseSeed   = 20250615
	// upgradeWindows are the windows with events: the first life gets
	// 0..2, the second 3..5; closers open window 6 (never released).
	upgradeWindows = 6
)

// upgradeConfig is the fixture's configuration: three streams over 1s
// windows (grace 200ms, idle timeout 10m: windows close by event time,
// with closers), so every release the fixture needs is in the ledger.
//
//   - trips (2 partitions, start recorded at the first run): z, a count
//     per zone over upgradeZones public keys, in chunks at
//     upgradeRecordBytes; n, a count; h, a 5-bin histogram; cn, a
//     continual count (Gaussian, square-root factorization, horizon 4, so
//     windows 0..3 are one horizon and 4..5 begin the next). Per-instance
//     DP on (the pdp topic).
//   - pred (2 partitions, start recorded at the first run): cls, a
//     classifier of late (no, yes) on x1 and x2 from 5 shards, ε = 1 per
//     answer, at most 4 answers per window's models. pdp off.
//   - tiny (1 partition, start configured): c, a count with ε = 1 under
//     a budget of ε = 2.5 per 3s. Budget periods count from the unix
//     epoch (period = window start / 3s), so windows 0–1, 2–4 and 5 fall
//     in three periods, and window 4, the third charge of its period, is
//     refused (budget_exhausted).
func upgradeConfig() *testkit.Pipeline {
	window := func(s *testkit.Stream) *testkit.Stream {
		return s.Window(time.Second, 200*time.Millisecond, 10*time.Minute)
	}
	zones := make([]string, upgradeZones)
	for i := range zones {
		zones[i] = upgradeZone(i)
	}
	feats := []testkit.Variable{testkit.Var("x1", -1, 1), testkit.Var("x2", 0, 10)}
	return testkit.NewPipeline(
		window(testkit.NewStream("trips", "trips.events").Partitions(2)).MaxEvents(2).Budget(1000, 1e-6).Releases(
			testkit.Count("z").Set("group_by", "zone").Set("keys", zones).Epsilon(0.5),
			testkit.Count("n").Epsilon(0.5),
			testkit.Histogram("h", "v", 0, 10, 5).Epsilon(0.5),
			testkit.Count("cn").Noise("gaussian").Epsilon(0.5).Delta(1e-7).YAML("continual", "{horizon: 4, method: sqrt}")),
		window(testkit.NewStream("pred", "pred.events").Partitions(2)).MaxEvents(2).Budget(1000, 1e-3).PDP(false).Releases(
			testkit.NewRelease("cls", "prediction").Set("features", feats).YAML("label", "{field: late, classes: [no, yes]}").
				Set("shards", 5).Set("key", "upgrade-fixture-secret-key").Set("max_queries", 4).Epsilon(1)),
		window(testkit.NewStream("tiny", "tiny.events").Partitions(1)).Start(time.UnixMilli(base).UTC()).MaxEvents(1).
			Budget(2.5, 1e-6).BudgetPer(3*time.Second).Releases(testkit.Count("c").Epsilon(1)),
	)
}

func upgradeZone(i int) string { return fmt.Sprintf("z%03d", i) }

// upgradeZoneOf is the zone of every event of a unit.
func upgradeZoneOf(unit string) string {
	h := fnv.New32a()
	h.Write([]byte(unit))
	return upgradeZone(int(h.Sum32() % upgradeZones))
}

// upgradeEvents returns each stream's events of windows [from, to), then
// one closer per input partition in window to: trips 60 events a window
// from 30 units, pred 1 to 3 events of each of 40 units, tiny 8 from 4.
func upgradeEvents(from, to int) map[string][]map[string]any {
	rng := rand.New(rand.NewPCG(uint64(from), 7))
	ts := func(w int) int64 { return base + int64(w)*1000 + rng.Int64N(1000) }
	pred := func(unit string, at int64) map[string]any {
		x1, x2 := rng.Float64()*2.4-1.2, rng.Float64()*10
		late := "no"
		if x1+0.2*x2-1+rng.NormFloat64()*0.3 > 0 {
			late = "yes"
		}
		return map[string]any{"user": unit, "ts": at, "x1": math.Round(x1*1000) / 1000, "x2": math.Round(x2*1000) / 1000, "late": late}
	}
	out := map[string][]map[string]any{}
	for w := from; w < to; w++ {
		for range 60 {
			u := fmt.Sprintf("u%d", rng.IntN(30))
			out["trips"] = append(out["trips"], map[string]any{"user": u, "ts": ts(w), "v": math.Round((rng.Float64()*14-2)*100) / 100, "zone": upgradeZoneOf(u)})
		}
		for i := range 40 {
			for k := 1 + rng.IntN(3); k > 0; k-- {
				out["pred"] = append(out["pred"], pred(fmt.Sprintf("p%d", i), ts(w)))
			}
		}
		for range 8 {
			out["tiny"] = append(out["tiny"], map[string]any{"user": fmt.Sprintf("t%d", rng.IntN(4)), "ts": ts(w)})
		}
	}
	at := base + int64(to)*1000 + 500
	for _, ev := range closers(int64(to), 2) {
		ev["zone"] = upgradeZoneOf(ev["user"].(string))
		out["trips"] = append(out["trips"], ev)
		out["pred"] = append(out["pred"], pred(ev["user"].(string), at))
	}
	out["tiny"] = append(out["tiny"], map[string]any{"user": "closer", "ts": at})
	return out
}

// upgradeLife is one run of the recorder's pipeline.
type upgradeLife struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (l *upgradeLife) stop(t *testing.T) {
	t.Helper()
	l.cancel()
	<-l.done
	if l.err != nil && !errors.Is(l.err, context.Canceled) {
		t.Fatalf("pipeline: %v", l.err)
	}
}

func (l *upgradeLife) check(t *testing.T) {
	t.Helper()
	select {
	case <-l.done:
		t.Fatalf("pipeline stopped: %v", l.err)
	default:
	}
}

// TestRecordUpgradeFixture records the upgrade fixture (see
// recordUpgradeFixture): today's pipeline over upgradeConfig on an
// embedded broker, in three lives, each taking the release stage over
// (an epoch marker):
//
//  1. the streams' starts are recorded at the first run (trips and pred
//     from the clock, tiny from its configuration); a query before any
//     model (no_model); windows 0..2; five queries (four answered, the
//     fifth over max_queries);
//  2. windows 3..5 (z in chunks in every window, tiny's third window of
//     each budget period refused, cn's second horizon begun); two
//     queries;
//  3. two queries.
//
// It then dumps every topic of the configuration and the consumer groups'
// offsets (testkit.DumpTopics), and writes the configuration, the summary
// and the README.
func TestRecordUpgradeFixture(t *testing.T) {
	if !*recordUpgradeFixture {
		t.Skip("records the frozen upgrade fixture; run only with -record-upgrade-fixture, and never with code later than commit " + upgradeFixtureCommit)
	}
	dir := *upgradeFixtureOut
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("%s exists: the upgrade fixture is frozen as commit %s wrote it; it is not regenerated (write elsewhere with -upgrade-fixture-out)", dir, upgradeFixtureCommit)
	}
	yaml := upgradeConfig().YAML()
	cfg, err := config.Parse([]byte(yaml), upgradeConfigFile)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	cfg.PDPStore = filepath.Join(t.TempDir(), "pdp")
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := testkit.StartBroker(t)
	c.CreateTopics(pipeline.Topics(cfg)...)
	log := testLogger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The first run is at base: the streams without a configured start
	// start at base's window. The lives then run on the e2e clock, a
	// minute ahead of the events, so no window waits for the clock.
	if _, err := pipeline.StreamStarts(ctx, c.Conn, cfg, time.UnixMilli(base), log); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	clock := func() time.Time { return time.UnixMilli(base).Add(testClockLead + time.Since(t0)) }
	var lives []string
	start := func(name string) *upgradeLife {
		lives = append(lives, name)
		lctx, lcancel := context.WithCancel(context.Background())
		l := &upgradeLife{cancel: lcancel, done: make(chan struct{})}
		go func() {
			defer close(l.done)
			l.err = pipeline.Run(lctx, pipeline.Options{Config: cfg, Plan: ps, Conn: c.Conn,
				Stages: pipeline.Stages{Accumulate: true, Release: true}, Metrics: metrics.New(), Log: log,
				Noise: noise.New(noise.SeededSource(upgradeNoiseSeed)), InstanceName: name, Now: clock,
				RecordBytes: upgradeRecordBytes})
		}()
		t.Cleanup(func() { lcancel(); <-l.done })
		return l
	}
	produce := func(evs map[string][]map[string]any) {
		for _, s := range cfg.Streams {
			c.ProduceJSON(s.Topic, evs[s.Name], "user")
		}
	}
	// released waits until every release of every stream is charged and
	// published (every chunk) for windows [from, to).
	released := func(l *upgradeLife, from, to int) {
		t.Helper()
		ids := map[string]bool{}
		for _, s := range ps {
			for _, r := range s.Releases {
				for w := from; w < to; w++ {
					ids[fmt.Sprintf("%s/%s/%d", s.Config.Name, r.Config.Name, base+int64(w)*1000)] = true
				}
			}
		}
		testkit.WaitFor(t, 120*time.Second, fmt.Sprintf("windows %d..%d released", from, to-1), func() bool {
			l.check(t)
			charged := map[string]bool{}
			for _, lc := range c.Ledger(cfg.Topics.Ledger) {
				charged[lc.ReleaseID] = true
			}
			published := publishedIDs(c.ReadAll(cfg.Topics.Releases))
			for id := range ids {
				if !charged[id] || !published[id] {
					return false
				}
			}
			return true
		})
	}
	rng := rand.New(rand.NewPCG(11, 13))
	// ask sends n queries to cls and waits for a response to each.
	ask := func(l *upgradeLife, life string, n int) {
		t.Helper()
		var msgs []kafka.Message
		want := map[string]bool{}
		for i := range n {
			id := fmt.Sprintf("%s-q%d", life, i)
			want[id] = true
			b, err := schema.EncodePredictRequest(schema.PredictRequest{RequestID: id, Stream: "pred", Release: "cls",
				Rows: [][]float64{{math.Round((rng.Float64()*2-1)*1000) / 1000, math.Round(rng.Float64()*10*1000) / 1000}}})
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, kafka.Message{Key: []byte(id), Value: b})
		}
		c.Produce(cfg.Topics.Requests, msgs...)
		testkit.WaitFor(t, 60*time.Second, fmt.Sprintf("responses to %s's queries", life), func() bool {
			l.check(t)
			got := 0
			for _, m := range c.ReadAll(cfg.Topics.Responses) {
				if want[string(m.Key)] {
					got++
				}
			}
			return got >= n
		})
	}

	l1 := start("life1")
	ask(l1, "life1-early", 1)
	produce(upgradeEvents(0, 3))
	released(l1, 0, 3)
	ask(l1, "life1", 5)
	l1.stop(t)

	l2 := start("life2")
	produce(upgradeEvents(3, upgradeWindows))
	released(l2, 3, upgradeWindows)
	ask(l2, "life2", 2)
	l2.stop(t)

	l3 := start("life3")
	ask(l3, "life3", 2)
	l3.stop(t)
	clockEnd := clock().UnixMilli()

	// What the fixture must hold, checked before it is written.
	sum := upgradeSummary{Commit: upgradeFixtureCommit, RecordBytes: upgradeRecordBytes, NoiseSeed: upgradeNoiseSeed,
		FirstRun: base, ClockEnd: clockEnd, Lives: lives, Responses: map[string]int{}, Topics: map[string]int{}}
	if sum.Ledger, err = summarizeLedger(c.ReadAll(cfg.Topics.Ledger)); err != nil {
		t.Fatal(err)
	}
	if sum.Budget, err = latestBudgetStates(c.ReadAll(cfg.Topics.Accountant)); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.ReadAll(cfg.Topics.Responses) {
		a, err := schema.DecodePredictResponse(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		sum.Responses[a.Status]++
	}
	// Every chunk record belongs to a charge it was matched with.
	matched := 0
	var book ledger.Book
	for _, m := range c.ReadAll(cfg.Topics.Ledger) {
		e, err := book.Apply(m)
		if err != nil {
			t.Fatal(err)
		}
		matched += len(e.Chunks)
	}
	l := sum.Ledger
	trips, pred, tiny := l.Streams["trips"], l.Streams["pred"], l.Streams["tiny"]
	for _, bad := range []struct {
		bad  bool
		what string
	}{
		{l.Epochs < len(lives), fmt.Sprintf("%d epoch markers, want one per life (%d)", l.Epochs, len(lives))},
		{l.Starts != 3 || trips.StartSource != schema.StartFromFirstRun || tiny.StartSource != schema.StartFromConfig, fmt.Sprintf("starts %d: %+v", l.Starts, l.Streams)},
		{l.Chunks == 0 || trips.InChunks != upgradeWindows, fmt.Sprintf("%d chunk records, %d of trips' releases in chunks, want z's %d", l.Chunks, trips.InChunks, upgradeWindows)},
		{trips.Continual != upgradeWindows, fmt.Sprintf("%d continual logs, want cn's %d", trips.Continual, upgradeWindows)},
		{trips.OK != 4*upgradeWindows, fmt.Sprintf("trips: %d ok releases, want %d", trips.OK, 4*upgradeWindows)},
		{tiny.Refused != 1 || tiny.OK != upgradeWindows-1 || tiny.Periods != 3, fmt.Sprintf("tiny: %d ok and %d refused in %d periods, want window 4 refused of three periods", tiny.OK, tiny.Refused, tiny.Periods)},
		{matched != l.Chunks, fmt.Sprintf("%d chunk records, %d matched with their charges", l.Chunks, matched)},
		{l.Void != 0 || l.Repeats != 0, fmt.Sprintf("%d void and %d repeated charges: a life did not stop cleanly", l.Void, l.Repeats)},
		{pred.Models != upgradeWindows || pred.Answers < 6, fmt.Sprintf("pred: %d models and %d answers, want %d and at least 6", pred.Models, pred.Answers, upgradeWindows)},
		{sum.Responses["ok"] != pred.Answers || len(sum.Responses) < 2, fmt.Sprintf("responses %v, %d answers charged", sum.Responses, pred.Answers)},
	} {
		if bad.bad {
			t.Errorf("the recorded pipeline does not exercise the ledger as the fixture needs: %s", bad.what)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	accGroup, relGroup := pipeline.Groups(cfg)
	man, err := testkit.DumpTopics(ctx, c.Conn, dir, pipeline.Topics(cfg), []string{accGroup, relGroup})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range man.Topics {
		sum.Topics[tp.Name] = tp.Records
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{upgradeSummaryFile: append(b, '\n'), upgradeConfigFile: []byte(yaml)}
	readme, err := upgradeReadme(sum, man, cfg)
	if err != nil {
		t.Fatal(err)
	}
	files["README.md"] = readme
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			total += fi.Size()
		}
	}
	t.Logf("wrote %s: %d files, %d bytes; ledger %+v", dir, len(entries), total, sum.Ledger)
}

// upgradeReadme renders the fixture's README from its summary.
func upgradeReadme(sum upgradeSummary, man testkit.Manifest, cfg *config.Config) ([]byte, error) {
	type topicRow struct {
		Name, Role string
		Partitions int
		Records    int
		Settings   string
	}
	roles := map[string]string{
		cfg.Topics.Ledger:     "the ledger: charges, chunk records, epoch markers, stream starts",
		cfg.Topics.Releases:   "the published releases (z's in chunks, with the dpstream-chunk header)",
		cfg.Topics.Accountant: "each stream's budget state (key: stream; header dpstream-ledger-offset)",
		cfg.Topics.PDP:        "per-instance DP records of trips (RESTRICTED in production)",
		cfg.Topics.Requests:   "queries to pred/cls",
		cfg.Topics.Responses:  "responses to the queries (header dpstream-request-offset)",
		cfg.Topics.Partials:   "the accumulate stage's partials (z's in chunks)",
		cfg.Topics.DeadLetter: "rejected events",
	}
	for _, s := range cfg.Streams {
		roles[s.Topic] = "the input events of stream " + s.Name
	}
	var rows []topicRow
	for _, tp := range man.Topics {
		var set []string
		if tp.Compact {
			set = append(set, "compacted")
		}
		if tp.Forever {
			set = append(set, "retention -1")
		}
		rows = append(rows, topicRow{Name: tp.Name, Role: roles[tp.Name], Partitions: tp.Partitions, Records: tp.Records, Settings: strings.Join(set, ", ")})
	}
	var statuses []string
	for st := range sum.Responses {
		statuses = append(statuses, st)
	}
	sort.Strings(statuses)
	var streams []string
	for name := range sum.Ledger.Streams {
		streams = append(streams, name)
	}
	sort.Strings(streams)
	tmpl := template.Must(template.New("readme").Funcs(template.FuncMap{
		"time":   func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") },
		"stream": func(name string) ledgerStreamSummary { return sum.Ledger.Streams[name] },
		"budget": func(name string) schema.BudgetState { return sum.Budget[name] },
	}).Parse(upgradeReadmeText))
	var buf bytes.Buffer
	err := tmpl.Execute(&buf, map[string]any{"Sum": sum, "Man": man, "Topics": rows, "Streams": streams, "Groups": man.Groups, "Statuses": statuses,
		"Windows": upgradeWindows, "Zones": upgradeZones})
	return buf.Bytes(), err
}

const upgradeReadmeText = `# Upgrade fixture: a ledger written by commit {{.Sum.Commit}}

**Frozen.** These files are the topics that dpstream's pipeline at commit
{{.Sum.Commit}} left on its broker, for the tests of later versions that must
read, checkpoint and continue a ledger written by it (issue 22). They were
written once by ` + "`go test ./internal/e2e -run TestRecordUpgradeFixture -record-upgrade-fixture`" + `
(internal/e2e/upgrade_record_test.go) on the code of {{.Sum.Commit}}, and must
never be regenerated by later code: later code writes a newer format, and
the fixture would then test nothing. A later version's fixture goes to a
directory of its own.

` + "`internal/e2e/upgrade_test.go`" + ` (TestUpgradeFixtureReads) checks that today's
code reads it back: the ledger's counts below, and the budget state the
release stage rebuilds from it, stream by stream.

## Using it

` + "```go" + `
c := testkit.StartBroker(t)
man := c.Load("../../testdata/upgrade/v{{.Sum.Commit}}") // testkit.LoadTopics
` + "```" + `

creates every topic below with its partition count and settings and
produces its records at their recorded offsets (with keys, values,
headers and timestamps), then commits the consumer groups' offsets: the
broker then holds what the pipeline left, as after a clean stop. Run the
pipeline on ` + "`pipeline.yaml`" + ` (parse it with ` + "`config.Parse`" + `; set
` + "`pdp_store`" + ` to a directory of the test's own), with
` + "`pipeline.Options.RecordBytes`" + ` = {{.Sum.RecordBytes}} as every recorded run had, and
a clock after ` + "`clock_end`" + ` ({{time .Sum.ClockEnd}}). To continue the streams,
produce events of windows {{.Windows}} and later (window {{.Windows}} holds one closer
event per input partition already) and then closers in a later window:
windows close by event time (grace 200ms, idle timeout 10m).
` + "`summary.json`" + ` holds the counts below for a test to compare with.

## What was run

Three streams of 1s windows from {{time .Sum.FirstRun}} (unix ms {{.Sum.FirstRun}}),
every run with noise from ` + "`noise.SeededSource({{.Sum.NoiseSeed}})`" + ` and
RecordBytes {{.Sum.RecordBytes}}, in {{len .Sum.Lives}} lives ({{range $i, $l := .Sum.Lives}}{{if $i}}, {{end}}{{$l}}{{end}}) of
accumulate and release stages, each taking the release stage over (an
epoch marker). The streams' starts were recorded at a first run at
{{time .Sum.FirstRun}}; the lives ran on a clock a minute ahead of the events.

- **trips** (2 partitions): ` + "`z`" + `, a count per zone over {{.Zones}} public keys,
  released in chunks in every window; ` + "`n`" + `, a count; ` + "`h`" + `, a 5-bin
  histogram; ` + "`cn`" + `, a continual count (Gaussian, ` + "`{horizon: 4, method: sqrt}`" + `:
  windows 0..3 are one horizon, 4..5 begin the next). Per-instance DP on.
- **pred** (2 partitions): ` + "`cls`" + `, a prediction release (classifier of
  ` + "`late`" + ` on x1 and x2, 5 shards, ε = 1 per answer, ` + "`max_queries: 4`" + `).
- **tiny** (1 partition, start configured): ` + "`c`" + `, a count (ε = 1) under a
  budget of ε = 2.5 per 3s. Budget periods count from the unix epoch
  (period = window start / 3s), so windows 0–1, 2–4 and 5 fall in three
  periods, and window 4, the third charge of its period, is refused
  (budget_exhausted).

life1: a query before any model (answered no_model); windows 0..2; five
queries (the fifth refused, budget_exhausted: over max_queries). life2:
windows 3..5; two queries. life3: two queries. Every life stopped cleanly:
the ledger has no void charge, no repeated charge and no chunks without
their charge.

## The ledger

{{with .Sum.Ledger}}{{.Records}} records: {{.Charges}} charges ({{.Valid}} valid, {{.Void}} void, {{.Repeats}} repeats),
{{.Chunks}} chunk records, {{.Epochs}} epoch markers (the last: ` + "`{{.LastEpoch}}`" + `), {{.Starts}} stream
starts.{{end}}

| stream | start (source) | releases | ok | refused | in chunks | continual logs | models | answers | periods | latest charged |
|---|---|---|---|---|---|---|---|---|---|---|
{{range $name := .Streams}}{{with stream $name}}| {{$name}} | {{time .Start}} ({{.StartSource}}) | {{.Releases}} | {{.OK}} | {{.Refused}} | {{.InChunks}} | {{.Continual}} | {{.Models}} | {{.Answers}} | {{.Periods}} | {{time .LatestCharged}} |
{{end}}{{end}}
Each stream's latest budget state (accountant topic):

| stream | period | charged | refused | ε spent | ε budget |
|---|---|---|---|---|---|
{{range .Streams}}{{with budget .}}| {{.Stream}} | {{.Period}} | {{.ReleasesCharged}} | {{.ReleasesRefused}} | {{printf "%.6g" .EpsilonSpent}} | {{.EpsilonBudget}} |
{{end}}{{end}}
Responses by status: {{range $i, $k := .Statuses}}{{if $i}}, {{end}}{{$k}} {{index $.Sum.Responses $k}}{{end}}.

## The topics

| topic | holds | partitions | records | settings |
|---|---|---|---|---|
{{range .Topics}}| ` + "`{{.Name}}`" + ` | {{.Role}} | {{.Partitions}} | {{.Records}} | {{.Settings}} |
{{end}}
Committed consumer-group offsets (` + "`manifest.json`" + `):
{{range .Groups}}
- ` + "`{{.Group}}`" + ` on ` + "`{{.Topic}}`" + `[{{.Partition}}]: {{.Offset}}{{if .Metadata}} (with metadata){{end}}{{end}}

## Files

- ` + "`manifest.json`" + `: the topics (partitions, settings, file, record count)
  and the groups' offsets, as ` + "`testkit.LoadTopics`" + ` reads them;
- ` + "`<topic>.jsonl`" + `: one record per line, JSON: partition, offset, key,
  value (base64; null for none), headers (key, base64 value), timestamp
  (unix ms), partition by partition in offset order;
- ` + "`pipeline.yaml`" + `: the configuration of every run;
- ` + "`summary.json`" + `: the counts above.
`
