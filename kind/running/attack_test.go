package running_test

import (
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
)

// TestAttackSqrtStateUnbounded: a sqrt (or blt) run keeps every x_s and
// w_s of every coordinate (16 bytes per coordinate and window: Ĉx needs
// the whole history) and does O(t) work per coordinate at window t, so a
// horizon costs N·T·16 bytes of memory and N·T²/2 steps, replayed in full
// from the ledger at every restart. running.New bounds N (20 000) and
// mechanism/continual bounds T (2^15 for sqrt) separately, never their
// product: a 10 000-bin histogram over 2^15 windows is accepted, and its
// run grows to 5 GiB by the horizon's end, with a restart near the end
// replaying ~5·10^12 multiply-adds (hours) before the stage releases
// anything. plan.Build should refuse such a configuration (or say so in
// explain) rather than let the stage die of memory at some window.
//
// The review of issue 14 found this; the test now keeps it fixed (it
// failed before the fix).
func TestAttackSqrtStateUnbounded(t *testing.T) {
	src := strings.Replace(strings.Replace(head, "%s", "", 1), "privacy_unit: user", "privacy_unit: event", 1)
	src = strings.Replace(src, "max_events_per_window: 3", "max_events_per_window: 1", 1)
	src += "      - {name: r, kind: histogram, field: v, bounds: [0, 1], bins: 10000, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 32768, method: sqrt}}\n"
	cfg, err := config.Parse([]byte(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := plan.Build(cfg)
	if err != nil {
		return // refused: fine
	}
	rp := ps[0].Releases[0].Kind.(kind.Running)
	const n = 10000
	state := float64(n) * float64(rp.Horizon()) * 16
	if state > 1<<30 {
		t.Errorf("accepted a continual histogram of %d bins over %d windows with sqrt: its run holds %.1f GiB at the horizon's end and a restart there replays %.2g multiply-adds",
			n, rp.Horizon(), state/(1<<30), float64(n)*float64(rp.Horizon())*float64(rp.Horizon())/2)
	}
}
