package running_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// budget is a kind.Budget that accepts the first `accept` charges and
// records what it accepted, as the release stage's does.
type budget struct {
	accept   int
	accepted []schema.NoiseComponent
	refused  int
}

func (b *budget) Charge(cs []kind.Charge) (bool, error) {
	if b.accept == 0 {
		b.refused++
		return false, nil
	}
	b.accept--
	for _, c := range cs {
		b.accepted = append(b.accepted, c.Noise)
	}
	return true, nil
}

func (b *budget) Refuse() { b.refused++ }

// TestStateLiveEqualsRebuilt: a continual release's State rebuilt from
// its ledger charges (as Window made them, or in the legacy fields older
// versions wrote) or from its checkpoint (Encode's, or the legacy
// ReleaseBooks.Run) encodes as the live one and decides the next window
// identically, without drawing any noise in the rebuild.
func TestStateLiveEqualsRebuilt(t *testing.T) {
	src := strings.Replace(head, "%s", "", 1) + "      - {name: n, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 8, method: sqrt}}\n"
	cfg, err := config.Parse([]byte(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0].Releases[0].Kind.(kind.Stateful)
	const size = 3600_000
	ctx := kind.StateContext{Start: 2 * size, Size: size} // window 2 is step 0
	newState := func() kind.State {
		st, err := p.NewState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	decide := func(st kind.State, w int64, seed uint64) (kind.Decision, schema.Release, schema.LedgerCharge) {
		m, err := p.Merge([]kind.Part{{Stats: schema.ReleaseStats{Release: "n", Count: 3 + w, Bins: []int64{}}}})
		if err != nil {
			t.Fatal(err)
		}
		b := &budget{accept: 1}
		var rel schema.Release
		d, err := st.Window(kind.StateWindow{Start: w * size, End: (w + 1) * size}, m, b, noise.New(noise.SeededSource(seed)), &rel)
		if err != nil {
			t.Fatal(err)
		}
		lc := schema.LedgerCharge{ReleaseID: plan.ReleaseID("s", "n", w*size), Stream: "s", Release: "n", WindowStart: w * size,
			Status: d.Status, Charges: b.accepted, State: d.State}
		return d, rel, lc
	}
	live := newState()
	var ledger []schema.LedgerCharge
	// Windows 3 and 4, a window without data (5), 6; then 4 again (late:
	// skipped); window 1 is the previous horizon's (skipped).
	for i, w := range []int64{3, 4, 6, 4, 1} {
		d, _, lc := decide(live, w, uint64(i+1))
		want := kind.StatusOK
		if i >= 3 {
			want = kind.StatusSkipped
		}
		if d.Status != want || (i == 0) != (len(lc.Charges) == 1) {
			t.Fatalf("window %d: %s with charges %v; want %s, charged at the horizon's first window only", w, d.Status, lc.Charges, want)
		}
		ledger = append(ledger, lc)
	}
	enc, err := live.Encode()
	if err != nil || len(enc) == 0 {
		t.Fatalf("Encode: %x, %v", enc, err)
	}
	legacyLedger := make([]schema.LedgerCharge, len(ledger))
	for i, lc := range ledger {
		if legacyLedger[i] = running.LegacyCharge(lc); lc.State != nil && legacyLedger[i].State != nil {
			t.Fatalf("charge %d: LegacyCharge kept the state", i)
		}
	}
	rebuilt := map[string]kind.State{}
	for name, charges := range map[string][]schema.LedgerCharge{"ledger": ledger, "legacy ledger": legacyLedger} {
		st := newState()
		for _, lc := range charges {
			if err := st.Replay(lc); err != nil {
				t.Fatal(err)
			}
		}
		rebuilt[name] = st
	}
	for name, rb := range map[string]schema.ReleaseBooks{"checkpoint": {Release: "n", State: enc}, "legacy checkpoint": {Release: "n", Run: running.LegacyRun(live)}} {
		st := newState()
		if err := st.Decode(rb); err != nil {
			t.Fatal(err)
		}
		rebuilt[name] = st
	}
	d, rel, _ := decide(live, 9, 99)
	for name, st := range rebuilt {
		if got, err := st.Encode(); err != nil || !bytes.Equal(got, enc) {
			t.Errorf("%s: rebuilt state encodes as %x (%v), live %x", name, got, err, enc)
		}
		d2, rel2, _ := decide(st, 9, 99)
		if !bytes.Equal(d2.State, d.State) || d2.Status != d.Status || !reflect.DeepEqual(rel2, rel) {
			t.Errorf("%s: the next window decides %s %+v, live %s %+v", name, d2.Status, rel2, d.Status, rel)
		}
	}
	// A duplicate of a window charged by its horizon costs the horizon's
	// charge again; one of the charging window costs only its own.
	if c := live.DuplicateCost(ledger[1]); len(c) != 1 || c[0].Purpose != running.Purpose {
		t.Errorf("a duplicate of window 4 costs %v, want the horizon's charge", c)
	}
	if c := live.DuplicateCost(ledger[0]); c != nil {
		t.Errorf("a duplicate of window 3 costs %v beyond its own charges", c)
	}
	// Another kind's state under the release's name is dropped.
	st := newState()
	if err := st.Decode(schema.ReleaseBooks{Release: "n", State: []byte("\x05other")}); err != nil {
		t.Fatal(err)
	}
	if err := st.Replay(schema.LedgerCharge{Release: "n", Status: kind.StatusOK, State: []byte("\x05other")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Encode(); got != nil {
		t.Errorf("a foreign state was taken: %x", got)
	}
}
