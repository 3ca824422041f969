package release

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// TestReleaserCheckpoint: a Releaser restored from its checkpointed books
// (EncodeState, through the Avro record, then RestoreState) decides every
// later window and answer byte for byte as the Releaser that never
// stopped, and as one rebuilt from every ledger charge: plain releases up
// to and past the budget, a continual release checkpointed mid-horizon
// (its run replayed from the kept step logs), and a prediction release
// with answers counted against its max_queries.
func TestReleaserCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ps      func(t *testing.T) []plan.Stream
		answers bool
	}{
		{"plain, budget exhausted", func(t *testing.T) []plan.Stream { return testPlan(t, 13) }, false},
		{"continual sqrt mid-horizon", func(t *testing.T) []plan.Stream { return continualPlan(t, 4, "sqrt", 100) }, false},
		{"continual tree", func(t *testing.T) []plan.Stream { return continualPlan(t, 3, "tree", 100) }, false},
		{"prediction", func(t *testing.T) []plan.Stream { return predictPlan(t, 30, 2) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.ps(t)
			const stop, end = 5, 10
			// step decides window w (and, for prediction, two queries
			// after it) and returns every ledger record made.
			step := func(r *Releaser, w int64) (records [][]byte, charges []schema.LedgerCharge) {
				t.Helper()
				ask := func(id string, offset int64) {
					a, err := r.Answer(query(id, 1, 2), nil, offset, time.UnixMilli(w))
					if err != nil {
						t.Fatal(err)
					}
					records = append(records, append([]byte(a.Response.Status+":"), a.Payload...))
					if a.Charge != nil {
						records = append(records, a.Ledger)
						charges = append(charges, *a.Charge)
					}
				}
				if tc.answers && w > 0 {
					// A third query of the previous window's models,
					// past its max_queries of 2 (also after a restore).
					ask(fmt.Sprintf("late%d", w), 3*w)
				}
				outs, err := r.ReleaseWindow(window(w, w+1, 2*w), time.UnixMilli(0))
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					records = append(records, o.Ledger)
					lc, err := schema.DecodeLedgerCharge(o.Ledger)
					if err != nil {
						t.Fatal(err)
					}
					charges = append(charges, lc)
				}
				if tc.answers {
					ask(fmt.Sprintf("q%d-0", w), 3*w+1)
					ask(fmt.Sprintf("q%d-1", w), 3*w+2)
				}
				return records, charges
			}
			var straight [][]byte
			r := NewReleaser(ps, noise.New(noise.SeededSource(7)))
			for w := int64(0); w < end; w++ {
				recs, _ := step(r, w)
				straight = append(straight, recs...)
			}
			wantState, _ := r.State("s", 0, time.UnixMilli(0))

			src := noise.New(noise.SeededSource(7))
			before := NewReleaser(ps, src)
			var got [][]byte
			var ledger []schema.LedgerCharge
			for w := int64(0); w < stop; w++ {
				recs, lcs := step(before, w)
				got, ledger = append(got, recs...), append(ledger, lcs...)
			}
			books, err := before.EncodeState()
			if err != nil {
				t.Fatal(err)
			}
			b, err := schema.EncodeReleaserState(books)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := schema.DecodeReleaserState(b)
			if err != nil {
				t.Fatal(err)
			}
			fromCheckpoint := NewReleaser(ps, src)
			if err := fromCheckpoint.RestoreState(dec); err != nil {
				t.Fatal(err)
			}
			for w := int64(stop); w < end; w++ {
				recs, _ := step(fromCheckpoint, w)
				got = append(got, recs...)
			}
			if len(got) != len(straight) {
				t.Fatalf("%d records after a checkpoint, %d straight", len(got), len(straight))
			}
			for i := range got {
				if !bytes.Equal(got[i], straight[i]) {
					t.Errorf("record %d differs after a restore from the checkpoint", i)
				}
			}
			gotState, _ := fromCheckpoint.State("s", 0, time.UnixMilli(0))
			if a, b := jsonOf(t, gotState), jsonOf(t, wantState); a != b {
				t.Errorf("budget state after the checkpoint %s, straight %s", a, b)
			}
			// Nothing before the checkpoint is decided again.
			for w := int64(0); w < stop; w++ {
				if outs, _ := fromCheckpoint.ReleaseWindow(window(w, 1), time.UnixMilli(0)); len(outs) != 0 {
					t.Errorf("window %d decided again after the restore", w)
				}
			}
			// And a rebuild from the ledger charges alone agrees with the
			// checkpoint's books.
			rebuilt := NewReleaser(ps, zeroNoise{})
			for _, lc := range ledger {
				if _, err := rebuilt.Restore(lc); err != nil {
					t.Fatal(err)
				}
			}
			rb, err := rebuilt.EncodeState()
			if err != nil {
				t.Fatal(err)
			}
			if a, b := jsonOf(t, rb), jsonOf(t, books); a != b {
				t.Errorf("books rebuilt from the ledger\n%s\ndiffer from the checkpoint's\n%s", a, b)
			}
		})
	}
}

// TestReleaserCheckpointRefusesCorruptAccounts: a checkpoint whose account
// is malformed (a curve of the wrong length, a negative or NaN entry) is an
// error, never a budget rebuilt wrong.
func TestReleaserCheckpointRefusesCorruptAccounts(t *testing.T) {
	ps := testPlan(t, 100)
	r := NewReleaser(ps, zeroNoise{})
	if _, err := r.ReleaseWindow(window(0, 1), time.UnixMilli(0)); err != nil {
		t.Fatal(err)
	}
	books, err := r.EncodeState()
	if err != nil {
		t.Fatal(err)
	}
	for name, corrupt := range map[string]func(*schema.AccountState){
		"short curve":    func(a *schema.AccountState) { a.Curve = a.Curve[:3] },
		"negative entry": func(a *schema.AccountState) { a.Curve[7] = -1 },
		"NaN pure":       func(a *schema.AccountState) { a.Pure = nanValue() },
		"negative count": func(a *schema.AccountState) { a.Charges = -2 },
	} {
		t.Run(name, func(t *testing.T) {
			st, _ := schema.DecodeReleaserState(mustEncode(t, books))
			corrupt(&st.Streams[0].Accounts[0].Account)
			if err := NewReleaser(ps, zeroNoise{}).RestoreState(st); err == nil {
				t.Error("a corrupt account was restored")
			}
		})
	}
}

func mustEncode(t *testing.T, s schema.ReleaserState) []byte {
	t.Helper()
	b, err := schema.EncodeReleaserState(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func nanValue() float64 { var z float64; return z / z }
