package regression

import (
	"testing"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
)

const pdpConfig = `
streams:
  - name: s
    topic: s.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1m}
    contribution: {max_events_per_window: 1}
    budget: {epsilon: 100, delta: 1e-5}
    releases:
      - {name: adassp, kind: regression, method: adassp, features: [{field: a, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-7}
      - {name: ops, kind: regression, method: ops, lambda: 1, features: [{field: a, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, epsilon: 1, delta: 1e-7}
      - {name: pcls, kind: regression, method: pcls, radius: 1, penalty: 2, max_support: 1, features: [{field: a, bounds: [0, 1]}, {field: b, bounds: [0, 1]}], target: {field: y, bounds: [0, 1]}, epsilon: 2, delta: 1e-7}
`

// TestPDPRules pins which norm bounds which of a regression's charges and
// which a fit makes exact for a unit with one row: XᵀX by ‖upper(G)‖₂,
// Xᵀy by ‖b‖₂, λ_min by ‖G‖_F or its exact change (plus one step of its
// grid), the Lipschitz bound (worst case or exact, against the fit's σ)
// and the posterior sample (worst case or exact loss); a pcls release's
// selection and fit at their worst case.
func TestPDPRules(t *testing.T) {
	c, err := config.Parse([]byte(pdpConfig), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &c.Streams[0]
	want := map[string]map[string]kind.PDPComponent{
		"adassp": {
			mregression.PurposeGram:      {Norm: 0},
			mregression.PurposeXty:       {Norm: 1},
			mregression.PurposeLambdaMin: {Norm: 2, Exact: kind.ExactNorm},
		},
		"ops": {
			mregression.PurposeLambdaMin:       {Norm: 2, Exact: kind.ExactNorm},
			mregression.PurposeLipschitz:       {Norm: -1, Exact: kind.ExactGaussian},
			mregression.PurposePosteriorSample: {Norm: -1, Exact: kind.ExactLoss},
		},
		"pcls": {mregression.PurposeModelSelection: {Norm: -1}, PurposePCLSFit: {Norm: -1}},
	}
	for _, r := range st.Releases {
		p, err := Kind{}.Plan(st, r)
		if err != nil {
			t.Fatal(err)
		}
		comps, err := p.PDP()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, pc := range comps {
			w, ok := want[r.Name][pc.Purpose]
			if !ok || pc.Norm != w.Norm || pc.Exact != w.Exact {
				t.Errorf("%s %s: norm %d exact %d, want %+v (known %v)", r.Name, pc.Purpose, pc.Norm, pc.Exact, w, ok)
			}
			seen[pc.Purpose] = true
			switch {
			case r.Name == "pcls":
				if pc.Noise != accountant.KindExponential && pc.Noise != accountant.KindZCDP {
					t.Errorf("pcls %s: noise %s", pc.Purpose, pc.Noise)
				}
			case pc.Purpose == mregression.PurposeLambdaMin:
				if g := p.Components()[i].Granularity; pc.Slack != g || g <= 0 {
					t.Errorf("%s lambda_min: slack %v, want the grid %v", r.Name, pc.Slack, g)
				}
			case pc.Purpose == mregression.PurposePosteriorSample:
				if pc.Noise != string(noise.ApproxDP) {
					t.Errorf("%s posterior sample: noise %s", r.Name, pc.Noise)
				}
			}
		}
		if len(seen) != len(want[r.Name]) || len(comps) != len(p.Charges()) {
			t.Errorf("%s: components %v, want %v", r.Name, seen, want[r.Name])
		}
	}
	// A release without a fit (an outcome rebuilt from the ledger) or a
	// fit without a posterior sample has nothing exact for it.
	var none *Fit
	if rl, err := none.RowLosses(nil); rl != nil || err != nil {
		t.Errorf("nil fit: %v, %v", rl, err)
	}
	rl, err := (&Fit{Stats: mregression.NewStats(1)}).RowLosses([]kind.PDPComponent{{Exact: kind.ExactLoss}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := rl.Row(0, []float64{0.5, 0.5}); ok || err != nil {
		t.Errorf("a fit without γ gave an exact posterior loss (%v)", err)
	}
}
