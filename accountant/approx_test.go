package accountant

import (
	"errors"
	"math"
	"testing"
)

// TestApproxDP checks basic composition of approx_dp charges with the RDP
// part: Spent(δ) = Epsilon(curve, δ − Σδ_i) + Σε_i, +Inf once Σδ_i ≥ δ,
// never the pure sum, and the filter refusing a charge whose δ does not fit.
func TestApproxDP(t *testing.T) {
	g := Mechanism{Kind: KindGaussian, Scale: 4, Sensitivity: 1}
	ap := Mechanism{Kind: KindApproxDP, Epsilon: 0.5, Delta: 1e-7}
	var a Account
	if err := a.Apply([]Mechanism{g, ap}); err != nil {
		t.Fatal(err)
	}
	gc, _ := g.Curve()
	want := Epsilon(gc, 1e-6-1e-7) + 0.5
	if got := a.Spent(1e-6); math.Abs(got-want) > 1e-12*want {
		t.Errorf("Spent = %v, want %v", got, want)
	}
	if got := a.Spent(1e-7); !math.IsInf(got, 1) {
		t.Errorf("Spent at delta = the approx delta: %v, want +Inf", got)
	}
	// Pure charges alone keep the pure sum; an approx charge ends that.
	var p Account
	lap := Mechanism{Kind: KindLaplace, Scale: 1, Sensitivity: 1}
	_ = p.Apply([]Mechanism{lap})
	if p.Spent(1e-6) != 1 {
		t.Fatalf("pure account spent %v", p.Spent(1e-6))
	}
	_ = p.Apply([]Mechanism{{Kind: KindApproxDP, Epsilon: 0.25, Delta: 1e-8, Count: 2}})
	lc, _ := lap.Curve()
	if got, want := p.Spent(1e-6), Epsilon(lc, 1e-6-2e-8)+0.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("after approx: Spent %v, want %v (Count applies to both ε and δ)", got, want)
	}
	// The filter: a budget whose δ the approx charges would use up refuses.
	var f Account
	ok, err := f.Try(Budget{Epsilon: 10, Delta: 1e-7}, []Mechanism{ap})
	if err != nil || ok {
		t.Errorf("Try with δ_i = δ_B: ok %v err %v, want refused", ok, err)
	}
	ok, err = f.Try(Budget{Epsilon: 0.6, Delta: 1e-6}, []Mechanism{ap})
	if err != nil || !ok {
		t.Errorf("Try within budget: ok %v err %v", ok, err)
	}
	if got, want := f.Spent(1e-6), 0.5; got != want {
		t.Errorf("approx only: Spent %v, want %v", got, want)
	}
	for _, bad := range []Mechanism{
		{Kind: KindApproxDP, Epsilon: 1},
		{Kind: KindApproxDP, Epsilon: 1, Delta: 1},
		{Kind: KindApproxDP, Epsilon: 0, Delta: 1e-6},
		{Kind: KindApproxDP, Epsilon: 1, Delta: 1e-6, Scale: 1},
		{Kind: KindGaussian, Scale: 1, Sensitivity: 1, Delta: 1e-6},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalidMechanism) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidMechanism", bad, err)
		}
	}
}
