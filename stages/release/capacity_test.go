package release

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/capacity"
	"github.com/dpstream/dpstream/schema"
)

// wantKL is the figures a charge's ledger record must carry: the sums of
// capacity.Figures (linear class, KL) over its components, or ok false when
// a component has none.
func wantKL(t *testing.T, cs []schema.NoiseComponent) (kl, lin float64, ok bool) {
	t.Helper()
	for _, m := range mechanismsOf(cs) {
		p, err := capacity.Figures(m, capacity.Linear, capacity.KL())
		if err != nil {
			return 0, 0, false
		}
		kl += p.Unrestricted
		lin += p.Restricted
	}
	return kl, lin, true
}

// TestLedgerKLFigures runs windows of configurations whose charges are of
// every kind a live plan makes (discrete Laplace, discrete Gaussian, and a
// continual release's zCDP charge, which has no additive-noise figure)
// and checks (1) that each ledger record carries capacity.Figure's linear
// KL and the unrestricted KL of its charge, nil for the zCDP charge and 0
// for empty charges (refused, a continual window after the horizon's
// first), also after encoding; (2) that the stream's state composes them
// (the sum, and the count of charges without); (3) that a releaser rebuilt
// from the encoded ledger reports the same state as the live one.
func TestLedgerKLFigures(t *testing.T) {
	head := `streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: %g, delta: 1e-6}
    releases:
`
	for _, tc := range []struct {
		name     string
		budget   float64
		releases string
		without  int64 // charged releases without a figure, in the end
		refused  bool  // some releases are refused
	}{
		{name: "laplace", budget: 100, releases: `      - {name: n, kind: count, epsilon: 1}
      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, epsilon: 0.5}
`},
		{name: "gaussian", budget: 100, releases: `      - {name: n, kind: count, noise: gaussian, epsilon: 1, delta: 1e-7}
      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, noise: gaussian, epsilon: 0.5, delta: 1e-7}
`},
		{name: "refused", budget: 3.5, refused: true, releases: `      - {name: n, kind: count, epsilon: 1}
      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, epsilon: 0.5}
`},
		{name: "continual zcdp beside laplace", budget: 100, without: 2, releases: `      - {name: n, kind: count, noise: gaussian, epsilon: 1, delta: 1e-6, continual: {horizon: 3, method: tree}}
      - {name: h, kind: histogram, field: v, bounds: [0, 3], bins: 3, epsilon: 0.5}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := mustPlan(t, fmt.Sprintf(head, tc.budget)+tc.releases)
			live := NewReleaser(ps, zeroNoise{})
			live.SetStart("s", 0)
			now := time.UnixMilli(99000)
			var ledger [][]byte
			var sumKL, sumLin float64
			var without, refused int64
			for w := int64(0); w < 5; w++ {
				outs, err := live.ReleaseWindow(window(w, 2, 1), now)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					lc := o.Charge
					kl, lin, ok := wantKL(t, lc.Charges)
					dec, err := schema.DecodeLedgerCharge(o.Ledger)
					if err != nil {
						t.Fatalf("%s: %v", lc.ReleaseID, err)
					}
					for _, got := range []schema.LedgerCharge{lc, dec} {
						switch {
						case !ok:
							if got.KL != nil || got.LinearKL != nil {
								t.Errorf("%s (%v): figures %v, %v; want none", lc.ReleaseID, lc.Charges, got.KL, got.LinearKL)
							}
						case got.KL == nil || got.LinearKL == nil:
							t.Errorf("%s (%v): no figures, want kl %g, linear %g", lc.ReleaseID, lc.Charges, kl, lin)
						case *got.KL != kl || *got.LinearKL != lin:
							t.Errorf("%s (%v): kl %g, linear %g; want %g, %g", lc.ReleaseID, lc.Charges, *got.KL, *got.LinearKL, kl, lin)
						}
					}
					if len(lc.Charges) == 0 && (lc.KL == nil || *lc.KL != 0 || *lc.LinearKL != 0) {
						t.Errorf("%s (status %s): an empty charge has figures %v, %v; want 0, 0", lc.ReleaseID, lc.Status, lc.KL, lc.LinearKL)
					}
					// Below the unrestricted figure, up to the optimiser's
					// error estimate, which a numerical figure includes
					// (the Gaussian's linear figure equals it exactly).
					if len(lc.Charges) > 0 && ok && !(*lc.LinearKL > 0 && *lc.LinearKL <= *lc.KL+1e-9) {
						t.Errorf("%s: linear %g not in (0, kl %g]", lc.ReleaseID, *lc.LinearKL, *lc.KL)
					}
					switch {
					case lc.Status == StatusBudgetExhausted:
						refused++
					case len(lc.Charges) == 0:
					case ok:
						sumKL += kl
						sumLin += lin
					default:
						without++
					}
					ledger = append(ledger, o.Ledger)
				}
			}
			st, _ := live.State("s", 0, now)
			if st.ReleasesWithoutKL != tc.without || without != tc.without {
				t.Errorf("releases without kl: state %d, counted %d; want %d", st.ReleasesWithoutKL, without, tc.without)
			}
			if (refused > 0) != tc.refused || st.ReleasesRefused != refused {
				t.Errorf("refused: state %d, counted %d; want some: %v", st.ReleasesRefused, refused, tc.refused)
			}
			if math.Abs(st.KL-sumKL) > 1e-12 || math.Abs(st.LinearKL-sumLin) > 1e-12 || st.KL == 0 {
				t.Errorf("state kl %g, linear %g; want the sums of the charges' %g, %g", st.KL, st.LinearKL, sumKL, sumLin)
			}
			t.Logf("%s: %d charged, %d refused; kl %.6g, linear kl %.6g, %d without", tc.name, st.ReleasesCharged, st.ReleasesRefused, st.KL, st.LinearKL, st.ReleasesWithoutKL)

			rebuilt := NewReleaser(ps, zeroNoise{})
			rebuilt.SetStart("s", 0)
			for _, b := range ledger {
				lc, err := schema.DecodeLedgerCharge(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := rebuilt.Restore(lc); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := rebuilt.State("s", 0, now)
			if got != stateNoPure(st, got) {
				t.Errorf("rebuilt state\n%+v\nwant the live\n%+v", got, st)
			}
		})
	}
}

// stateNoPure returns want with PureEpsilon taken from got when the two
// point at equal values, so that states compare with ==.
func stateNoPure(want, got schema.BudgetState) schema.BudgetState {
	if want.PureEpsilon != nil && got.PureEpsilon != nil && *want.PureEpsilon == *got.PureEpsilon {
		want.PureEpsilon = got.PureEpsilon
	}
	return want
}

// TestRestoreKLEveryKind restores ledger charges of every mechanism kind a
// ledger may hold, written without figures (as versions before them did),
// and checks the state's figures: capacity.Figure's linear KL and the
// unrestricted KL for the additive-noise kinds, none (counted in
// releases_without_kl) for the others, and for a discrete component whose
// sensitivity is not an integer on its recorded lattice.
func TestRestoreKLEveryKind(t *testing.T) {
	ps := testPlan(t, 100)
	for _, tc := range []struct {
		name string
		c    schema.NoiseComponent
		ok   bool
	}{
		{"laplace", schema.NoiseComponent{Purpose: "count", Mechanism: accountant.KindLaplace, Sensitivity: 1, Scale: 2}, true},
		{"gaussian", schema.NoiseComponent{Purpose: "sum", Mechanism: accountant.KindGaussian, Sensitivity: 2, Scale: 3}, true},
		{"discrete laplace", schema.NoiseComponent{Purpose: "bins", Mechanism: accountant.KindDiscreteLaplace, Sensitivity: 3, Scale: 6}, true},
		{"discrete gaussian", schema.NoiseComponent{Purpose: "count", Mechanism: accountant.KindDiscreteGaussian, Sensitivity: 2, Scale: 5}, true},
		{"discrete laplace, fractional sensitivity", schema.NoiseComponent{Purpose: "sum", Mechanism: accountant.KindDiscreteLaplace, Sensitivity: 1.5, Scale: 6}, false},
		{"approx_dp", schema.NoiseComponent{Purpose: "key_selection", Mechanism: accountant.KindApproxDP, Epsilon: 0.5, Delta: 1e-7}, false},
		{"exponential", schema.NoiseComponent{Purpose: "selection", Mechanism: accountant.KindExponential, Epsilon: 0.5}, false},
		{"zcdp", schema.NoiseComponent{Purpose: "continual", Mechanism: accountant.KindZCDP, Epsilon: 0.05}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReleaser(ps, nil)
			lc := schema.LedgerCharge{ReleaseID: "s/n/0", Stream: "s", Release: "n", Status: StatusOK,
				Charges: []schema.NoiseComponent{tc.c, tc.c}} // two components compose
			if _, err := r.Restore(lc); err != nil {
				t.Fatal(err)
			}
			st, _ := r.State("s", 0, time.UnixMilli(0))
			if !tc.ok {
				if st.ReleasesWithoutKL != 1 || st.KL != 0 || st.LinearKL != 0 {
					t.Errorf("state %+v, want no figures and one release without", st)
				}
				return
			}
			m := mechanismsOf([]schema.NoiseComponent{tc.c})[0]
			f, err := capacity.Figure(m, capacity.Linear, capacity.KL())
			if err != nil {
				t.Fatal(err)
			}
			u, err := capacity.Unrestricted(m.Kind, m.Scale, m.Sensitivity, capacity.KL())
			if err != nil {
				t.Fatal(err)
			}
			if st.ReleasesWithoutKL != 0 || st.LinearKL != 2*f || st.KL != 2*u {
				t.Errorf("state linear %g, kl %g, %d without; want 2×%g, 2×%g, 0", st.LinearKL, st.KL, st.ReleasesWithoutKL, f, u)
			}
			t.Logf("%s: per component linear KL %.6g, unrestricted %.6g", tc.name, f, u)
		})
	}
}
