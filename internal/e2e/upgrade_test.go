package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/kind/prediction"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/schema"
)

// The upgrade fixture: the topics a pipeline of commit 0e31a7c left behind
// (testdata/upgrade/v0e31a7c, recorded by TestRecordUpgradeFixture), for
// the tests of later versions that must read, checkpoint and continue a
// ledger written by it. TestUpgradeFixtureReads checks that the code of
// today reads the fixture back; it keeps passing as long as the format
// stays readable.

// upgradeFixtureDir is the fixture, frozen as written by commit 0e31a7c.
const upgradeFixtureDir = "../../testdata/upgrade/v0e31a7c"

// Files of the fixture besides the topic dump (testkit.ManifestFile and
// one file per topic).
const (
	upgradeConfigFile  = "pipeline.yaml"
	upgradeSummaryFile = "summary.json"
)

// upgradeSummary is what the recorder found on the topics it dumped,
// written to summary.json (and, in words, to the README): what a reader of
// the fixture must find in it.
type upgradeSummary struct {
	// Commit is the commit whose code wrote the fixture.
	Commit string `json:"commit"`
	// RecordBytes is pipeline.Options.RecordBytes of every run (a run over
	// these topics must use the same, or a replayed window would split
	// differently).
	RecordBytes int `json:"record_bytes"`
	// NoiseSeed is the seed of every run's noise (noise.SeededSource).
	NoiseSeed uint64 `json:"noise_seed"`
	// FirstRun is the clock (unix ms) at which the streams' starts were
	// recorded, and ClockEnd the pipelines' clock when the last one
	// stopped: a run continuing the fixture runs on a clock after it.
	FirstRun int64 `json:"first_run"`
	ClockEnd int64 `json:"clock_end"`
	// Lives are the pipeline runs, in order: each took over the release
	// stage (an epoch marker).
	Lives []string `json:"lives"`
	// Ledger counts the ledger's records (summarizeLedger).
	Ledger ledgerSummary `json:"ledger"`
	// Budget is each stream's latest budget state on the accountant topic
	// (the last record of its key), as a restart must rebuild it.
	Budget map[string]schema.BudgetState `json:"budget"`
	// Responses counts the responses topic's records by status.
	Responses map[string]int `json:"responses"`
	// Topics are the record counts of every dumped topic.
	Topics map[string]int `json:"topics"`
}

// ledgerSummary counts a ledger's records as ledger.Book interprets them.
type ledgerSummary struct {
	Records int `json:"records"`
	// Charges are the charge records; Valid those that count (Void the
	// others); Repeats the valid ones that repeat an earlier charge byte
	// for byte.
	Charges int `json:"charges"`
	Valid   int `json:"valid"`
	Void    int `json:"void"`
	Repeats int `json:"repeats"`
	// Chunks are the chunk records (chunks 1..n-1 of releases in
	// chunks), Epochs the epoch markers, Starts the stream starts.
	Chunks int `json:"chunks"`
	Epochs int `json:"epochs"`
	Starts int `json:"starts"`
	// LastEpoch is the latest marker's epoch (ledger.Book.Epoch).
	LastEpoch string                         `json:"last_epoch"`
	Streams   map[string]ledgerStreamSummary `json:"streams"`
}

// ledgerStreamSummary is one stream's part of the ledger: its valid
// charges (repeats left out) by status and kind.
type ledgerStreamSummary struct {
	// Start is the stream's first recorded start and StartSource how it
	// was chosen (schema.StartFrom*).
	Start       int64  `json:"start"`
	StartSource string `json:"start_source"`
	// Releases are the charges of windows' releases: OK of them released,
	// Refused refused for budget; InChunks released in chunks (matched
	// with their chunk records), Continual carrying a continual step log,
	// Models a prediction window's model state.
	Releases  int `json:"releases"`
	OK        int `json:"ok"`
	Refused   int `json:"refused"`
	InChunks  int `json:"in_chunks"`
	Continual int `json:"continual"`
	Models    int `json:"models"`
	// Answers are the charges of answers to queries.
	Answers int `json:"answers"`
	// Periods are the distinct budget periods charged; LatestCharged is
	// ledger.Book.LatestCharged.
	Periods       int   `json:"periods"`
	LatestCharged int64 `json:"latest_charged"`
}

// summarizeLedger counts a ledger's records in offset order.
func summarizeLedger(ms []kafka.Message) (ledgerSummary, error) {
	s := ledgerSummary{Streams: map[string]ledgerStreamSummary{}}
	periods := map[string]map[int64]bool{}
	var book ledger.Book
	for _, m := range ms {
		e, err := book.Apply(m)
		if err != nil {
			return s, err
		}
		s.Records++
		switch e.Type {
		case schema.LedgerTypeEpoch:
			s.Epochs++
		case schema.LedgerTypeStart:
			s.Starts++
			if e.FirstStart {
				st := s.Streams[e.Start.Stream]
				st.Start, st.StartSource = e.Start.Start, e.Start.Source
				s.Streams[e.Start.Stream] = st
			}
		case schema.LedgerTypeChunk:
			s.Chunks++
		case schema.LedgerTypeCharge:
			s.Charges++
			switch {
			case !e.Valid:
				s.Void++
				continue
			case e.Identical:
				s.Valid++
				s.Repeats++
				continue
			}
			s.Valid++
			lc := e.Charge
			st := s.Streams[lc.Stream]
			if lc.IsAnswer() {
				st.Answers++
			} else {
				st.Releases++
				switch lc.Status {
				case "ok":
					st.OK++
				case "budget_exhausted":
					st.Refused++
				}
				if e.Chunks != nil {
					st.InChunks++
				}
				// The kinds' state, as LedgerCharge.State holds it
				// or as the fixture's version wrote it.
				if len(running.LegacyCharge(lc).ContinualX) > 0 {
					st.Continual++
				}
				if len(prediction.LegacyCharge(lc).Model) > 0 {
					st.Models++
				}
			}
			if periods[lc.Stream] == nil {
				periods[lc.Stream] = map[int64]bool{}
			}
			if len(lc.Charges) > 0 {
				periods[lc.Stream][lc.Period] = true
			}
			st.Periods = len(periods[lc.Stream])
			s.Streams[lc.Stream] = st
		}
	}
	s.LastEpoch = book.Epoch()
	for name, st := range s.Streams {
		st.LatestCharged, _ = book.LatestCharged(name)
		s.Streams[name] = st
	}
	return s, nil
}

// latestBudgetStates returns each stream's last budget state on an
// accountant topic's records.
func latestBudgetStates(ms []kafka.Message) (map[string]schema.BudgetState, error) {
	out := map[string]schema.BudgetState{}
	for _, m := range ms {
		if m.Value == nil {
			delete(out, string(m.Key))
			continue
		}
		st, err := schema.DecodeBudgetState(m.Value)
		if err != nil {
			return nil, fmt.Errorf("budget state at offset %d: %w", m.Offset, err)
		}
		out[string(m.Key)] = st
	}
	return out, nil
}

// jsonOf is v as JSON, for messages (pointers shown as what they point at).
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// readUpgradeFixture reads the fixture's summary and configuration (its
// pdp_store in a directory of the test's own).
func readUpgradeFixture(t *testing.T, dir string) (upgradeSummary, *config.Config, []plan.Stream) {
	t.Helper()
	var sum upgradeSummary
	b, err := os.ReadFile(filepath.Join(dir, upgradeSummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("%s: %v", upgradeSummaryFile, err)
	}
	path := filepath.Join(dir, upgradeConfigFile)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(text, path)
	if err != nil {
		t.Fatalf("the fixture's configuration: %v", err)
	}
	cfg.PDPStore = filepath.Join(t.TempDir(), "pdp")
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatalf("the fixture's configuration: %v", err)
	}
	return sum, cfg, ps
}

// TestUpgradeFixtureReads loads the upgrade fixture into an embedded
// broker and checks that today's code reads it as it was written:
//
//   - the ledger reads (ledger.ReadBook) to its end, with the recorded
//     epoch, the streams' recorded starts and latest charged windows, and
//     the counts of every record type, charge status, chunk, continual
//     log, model and answer of the summary;
//   - the release stage takes the fixture over (pipeline.Run with the
//     release stage, on the fixture's configuration and a clock after its
//     last run) without ErrLedgerLost or any other error, and the budget
//     state it rebuilds from the ledger and publishes for each stream is
//     the one the accountant topic recorded (its time aside);
//   - it republishes nothing: the fixture's releases and answers were all
//     published.
func TestUpgradeFixtureReads(t *testing.T) {
	dir := upgradeFixtureDir
	sum, cfg, ps := readUpgradeFixture(t, dir)
	c := testkit.StartBroker(t)
	man := c.Load(dir)
	for _, tp := range man.Topics {
		if want, ok := sum.Topics[tp.Name]; !ok || want != tp.Records {
			t.Errorf("topic %s: %d records loaded, the summary says %d", tp.Name, tp.Records, want)
		}
	}
	if len(man.Topics) != len(sum.Topics) {
		t.Errorf("%d topics loaded, the summary has %d", len(man.Topics), len(sum.Topics))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	book, err := ledger.ReadBook(ctx, c.Conn, cfg.Topics.Ledger)
	if err != nil {
		t.Fatalf("ledger.ReadBook on the fixture: %v", err)
	}
	if got := book.Next(); got != int64(sum.Ledger.Records) {
		t.Errorf("ledger read to offset %d, want %d", got, sum.Ledger.Records)
	}
	if book.Epoch() != sum.Ledger.LastEpoch || book.Void() != sum.Ledger.Void {
		t.Errorf("ledger epoch %s with %d void charges, want %s and %d", book.Epoch(), book.Void(), sum.Ledger.LastEpoch, sum.Ledger.Void)
	}
	for _, s := range cfg.Streams {
		want := sum.Ledger.Streams[s.Name]
		st, ok := book.Start(s.Name)
		if !ok || st.Start != want.Start || st.Source != want.StartSource {
			t.Errorf("stream %s: start %+v (recorded: %v), want %d from %s", s.Name, st, ok, want.Start, want.StartSource)
		}
		if w, ok := book.LatestCharged(s.Name); !ok || w != want.LatestCharged {
			t.Errorf("stream %s: latest charged window %d (%v), want %d", s.Name, w, ok, want.LatestCharged)
		}
	}
	got, err := summarizeLedger(c.ReadAll(cfg.Topics.Ledger))
	if err != nil {
		t.Fatalf("the fixture's ledger: %v", err)
	}
	if !reflect.DeepEqual(got, sum.Ledger) {
		t.Errorf("the fixture's ledger reads as\n%s\nthe summary says\n%s", jsonOf(got), jsonOf(sum.Ledger))
	}
	states, err := latestBudgetStates(c.ReadAll(cfg.Topics.Accountant))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(states, sum.Budget) {
		t.Errorf("the accountant topic's latest states\n%s\nthe summary's\n%s", jsonOf(states), jsonOf(sum.Budget))
	}

	// Take the release stage over, as an upgraded release instance would.
	before := map[string]int{}
	for _, topic := range []string{cfg.Topics.Accountant, cfg.Topics.Releases, cfg.Topics.Responses} {
		before[topic] = len(c.ReadAll(topic))
	}
	t0 := time.Now()
	clock := func() time.Time { return time.UnixMilli(sum.ClockEnd).Add(time.Since(t0)) }
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(rctx, pipeline.Options{Config: cfg, Plan: ps, Conn: c.Conn, Stages: pipeline.Stages{Release: true},
			Log: testLogger(t), Now: clock, RecordBytes: sum.RecordBytes, InstanceName: "upgrade-check"})
	}()
	var rebuilt map[string]schema.BudgetState
	testkit.WaitFor(t, 60*time.Second, "the release stage's rebuilt budget state of every stream", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the release stage stopped on the fixture: %v", err)
		default:
		}
		ms := c.ReadAll(cfg.Topics.Accountant)
		if len(ms) <= before[cfg.Topics.Accountant] {
			return false
		}
		rebuilt, err = latestBudgetStates(ms[before[cfg.Topics.Accountant]:])
		if err != nil {
			t.Fatal(err)
		}
		return len(rebuilt) == len(cfg.Streams)
	})
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the release stage on the fixture: %v", err)
	}
	for _, s := range cfg.Streams {
		got, want := rebuilt[s.Name], sum.Budget[s.Name]
		got.UpdatedAt, want.UpdatedAt = 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("stream %s: the release stage rebuilt the budget state\n%s\nthe fixture's accountant topic recorded\n%s", s.Name, jsonOf(got), jsonOf(want))
		}
	}
	for _, topic := range []string{cfg.Topics.Releases, cfg.Topics.Responses} {
		if n := len(c.ReadAll(topic)); n != before[topic] {
			t.Errorf("topic %s: %d records after the takeover, %d before: the release stage republished what the fixture holds", topic, n, before[topic])
		}
	}
}
