package release

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// TestCheckLedgerComplete: Recover refuses (ErrLedgerLost, naming both
// topics and a lost id) when the releases topic holds a release the ledger
// has no charge for, which only a deleted or truncated ledger explains;
// releases all charged, or not published yet, are fine.
func TestCheckLedgerComplete(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ledger    []string // release ids charged in the ledger (refused, so no budget curve is needed)
		published []string // release ids on the releases topic
		lost      string   // a lost id the error names; "" for no error
	}{
		{name: "empty topics"},
		{name: "every release charged", ledger: []string{"s/n/1", "s/n/2"}, published: []string{"s/n/1", "s/n/2"}},
		{name: "charged, not yet published", ledger: []string{"s/n/1", "s/n/2"}, published: []string{"s/n/1"}},
		{name: "ledger recreated empty", published: []string{"s/n/2", "s/n/1"}, lost: "s/n/1"},
		// A ledger that lost its tail. (One that lost its head lost its
		// checkpoint: the ledger package refuses it, see ledger.ErrNoCheckpoint;
		// the windows a release decided before its high-water mark count as
		// decided here.)
		{name: "ledger truncated", ledger: []string{"s/n/1"}, published: []string{"s/n/1", "s/n/2"}, lost: "s/n/2"},
		{name: "before the high-water mark", ledger: []string{"s/n/2"}, published: []string{"s/n/1", "s/n/2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &shard{s: &Stage{cfg: Config{LedgerTopic: "the.ledger", ReleasesTopic: "the.releases"}}, n: 1, rel: NewReleaser(nil, nil)}
			for _, id := range tc.ledger {
				stream, rel, w, _ := plan.ParseReleaseID(id)
				if _, err := s.rel.Restore(schema.LedgerCharge{ReleaseID: id, Stream: stream, Release: rel, WindowStart: w, Status: StatusBudgetExhausted}); err != nil {
					t.Fatal(err)
				}
			}
			published := map[string]bool{}
			for _, id := range tc.published {
				published[id] = true
			}
			err := s.checkLedgerComplete(published)
			if tc.lost == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrLedgerLost) {
				t.Fatalf("error %v, want ErrLedgerLost", err)
			}
			for _, want := range []string{"the.ledger", "the.releases", tc.lost, "restore the ledger"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}
