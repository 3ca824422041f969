package accountant

import (
	"errors"
	"fmt"
	"math"
)

// budgetTolerance is the relative slack [Account.Try] allows above the budget
// epsilon. It absorbs floating-point rounding (summing curves in a different
// order, converting at the boundary) so that a charge sequence designed to
// use exactly the budget is not refused on its last charge; 1e-12 relative is
// thousands of ulps and far below any privacy-relevant difference.
const budgetTolerance = 1e-12

// ErrInvalidBudget is wrapped by every error that reports a malformed
// [Budget] or conversion delta; test for it with errors.Is.
var ErrInvalidBudget = errors.New("invalid budget")

// Budget is a stream's privacy budget (ε_B, δ_B): over its lifetime, or over
// one period, the stream may release only while its composed loss stays
// (ε_B, δ_B)-DP under add/remove-one-unit neighbours. Delta = 0 asks for pure
// DP, which only an account whose every charge was pure can satisfy.
type Budget struct{ Epsilon, Delta float64 }

// validate checks that b can be enforced: Epsilon finite and >= 0, Delta in
// [0, 1) (δ = 1 is vacuous).
func (b Budget) validate() error {
	if math.IsNaN(b.Epsilon) || b.Epsilon < 0 || math.IsInf(b.Epsilon, 1) {
		return fmt.Errorf("budget epsilon must be finite and >= 0, got %v: %w", b.Epsilon, ErrInvalidBudget)
	}
	if err := checkDelta(b.Delta); err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	return nil
}

func checkDelta(delta float64) error {
	if !(delta >= 0 && delta < 1) {
		return fmt.Errorf("delta must be in [0, 1), got %v: %w", delta, ErrInvalidBudget)
	}
	return nil
}

// Account is one stream's (or one stream-period's) composed privacy loss.
// The zero value is an empty account: nothing spent, and pure (its AllPure
// field reads false until the first charge, but an account with no charges
// and nothing spent is treated as pure).
//
// Two bounds are kept side by side and the smaller is reported: the RDP
// curve of everything charged (tight for Gaussian noise and for many
// compositions) and, while every charge was pure ε-DP, the plain sum of the
// pure epsilons (basic composition, tight for few pure charges and the only
// way to certify δ = 0). SPEC.md section 3.
//
// An Account is a value with no locking: callers serialise access (one
// goroutine per stream, or their own mutex).
type Account struct {
	Curve   Curve   // RDP curve of all accepted charges (nil = zero)
	Pure    float64 // sum of pure epsilons; a valid bound only while AllPure
	AllPure bool    // true while every charge so far was pure (an empty account is pure)
	// ApproxEpsilon and ApproxDelta are the sums of the approx_dp charges'
	// ε and δ, composed with the curve by basic composition (Spent).
	ApproxEpsilon, ApproxDelta float64
	Charges                    int // accepted charges
	Refused                    int // refused charges
}

// empty reports whether nothing has been charged to a, which makes it pure
// whatever its AllPure field says (the zero value).
func (a Account) empty() bool {
	if a.Charges != 0 || a.Pure != 0 || a.ApproxEpsilon != 0 || a.ApproxDelta != 0 {
		return false
	}
	for _, v := range a.Curve {
		if v != 0 {
			return false
		}
	}
	return true
}

// Spent returns the epsilon the account has spent at the given delta:
// min(Epsilon(Curve, delta), Pure if AllPure). Both are valid (ε, delta)-DP
// bounds for the composition of the accepted charges under add/remove-one-unit
// neighbours — the RDP conversion by Canonne, Kamath & Steinke 2020,
// Prop. 12, and the pure sum by basic composition (Dwork et al. 2006), an
// (ε, 0)-DP guarantee being also (ε, delta)-DP — so their minimum is. An empty
// account has spent 0. A negative or NaN delta, or a corrupt curve (wrong
// length, negative or NaN entries, e.g. from damaged stored state), gives
// +Inf, so a damaged account refuses everything rather than admitting it.
//
// With approx_dp charges (ε_i, δ_i) the RDP part is converted at
// delta − Σδ_i and Σε_i is added (basic composition, Dwork & Roth 2014,
// Thm. 3.16); if Σδ_i ≥ delta no ε is valid and Spent is +Inf.
func (a Account) Spent(delta float64) float64 {
	if math.IsNaN(delta) || delta < 0 || !a.Curve.wellFormed() {
		return math.Inf(1)
	}
	if a.ApproxDelta != 0 || a.ApproxEpsilon != 0 {
		if !(a.ApproxDelta >= 0 && a.ApproxEpsilon >= 0) || a.ApproxDelta >= delta {
			return math.Inf(1)
		}
		return Epsilon(a.Curve, delta-a.ApproxDelta) + a.ApproxEpsilon
	}
	eps := Epsilon(a.Curve, delta)
	if a.AllPure && a.Pure >= 0 { // a NaN or negative Pure is corrupt: ignore it
		eps = math.Min(eps, a.Pure)
	}
	return eps
}

// charge is the composed effect of one charge (a list of mechanisms).
type charge struct {
	curve                  Curve
	pure                   float64
	allPure                bool
	approxEps, approxDelta float64
}

// compose validates ms and composes them into one charge.
func compose(ms []Mechanism) (charge, error) {
	if len(ms) == 0 {
		return charge{}, fmt.Errorf("charge has no mechanisms: %w", ErrInvalidMechanism)
	}
	ch := charge{curve: ZeroCurve(), allPure: true}
	for i, m := range ms {
		c, err := m.Curve()
		if err != nil {
			return charge{}, fmt.Errorf("charge mechanism %d: %w", i, err)
		}
		ch.curve = ch.curve.Add(c)
		if m.Kind == KindApproxDP {
			n := float64(m.count())
			ch.approxEps += n * m.Epsilon
			ch.approxDelta += n * m.Delta
			ch.allPure = false
			continue
		}
		if eps, ok := m.PureEpsilon(); ok {
			ch.pure += eps
		} else {
			ch.allPure = false
		}
	}
	return ch, nil
}

// with returns a after adding ch, without touching the counters.
func (a Account) with(ch charge) (Account, error) {
	if !a.Curve.wellFormed() {
		return a, fmt.Errorf("account curve is corrupt (%d orders, want %d, all entries >= 0)", len(a.Curve), numOrders)
	}
	if math.IsNaN(a.Pure) || a.Pure < 0 {
		return a, fmt.Errorf("account pure epsilon is corrupt: %v", a.Pure)
	}
	wasPure := a.AllPure || a.empty()
	next := a
	next.Curve = a.Curve.Add(ch.curve)
	next.Pure = a.Pure + ch.pure
	next.AllPure = wasPure && ch.allPure
	next.ApproxEpsilon = a.ApproxEpsilon + ch.approxEps
	next.ApproxDelta = a.ApproxDelta + ch.approxDelta
	return next, nil
}

// Try offers one charge — the mechanisms of one release, composed — to the
// account's budget filter. If the account would still be within b after the
// charge, that is Spent(b.Delta) <= b.Epsilon·(1 + 1e-12) (the slack absorbs
// rounding only), the charge is applied, Charges is incremented and Try
// returns true. Otherwise the account is unchanged except that Refused is
// incremented, and Try returns false: the release must be published as
// budget_exhausted with no data (DESIGN.md section 6, invariant 3).
// An invalid budget or mechanism is an error and changes nothing.
//
// Guarantee: the composition of all accepted charges is
// (b.Epsilon, b.Delta)-DP under add/remove one privacy unit. Why stopping is
// sound: every charge is fixed by configuration (noise scale, bounds, count)
// and never by data (SPEC.md section 1), and whether a charge is accepted
// depends only on earlier charges, never on any data or noisy output. The set
// of mechanisms that actually run is therefore a fixed, data-independent
// sequence, so the ordinary (non-adaptive) composition of their RDP curves
// (Mironov 2017, Prop. 1) and its conversion apply to exactly that set, and
// the filter has checked that this bound is within budget. A refused charge
// runs nothing and costs nothing, so later, smaller charges may still be
// accepted. (With data-dependent charges this argument would fail and a
// privacy filter in the sense of Rogers et al. 2016 / Feldman & Zrnic 2021
// would be needed.)
func (a *Account) Try(b Budget, ms []Mechanism) (ok bool, err error) {
	if err := b.validate(); err != nil {
		return false, fmt.Errorf("accountant: try charge: %w", err)
	}
	ch, err := compose(ms)
	if err != nil {
		return false, fmt.Errorf("accountant: try charge: %w", err)
	}
	next, err := a.with(ch)
	if err != nil {
		return false, fmt.Errorf("accountant: try charge: %w", err)
	}
	if spent := next.Spent(b.Delta); spent <= b.Epsilon+budgetTolerance*b.Epsilon {
		next.Charges++
		*a = next
		return true, nil
	}
	a.Refused++
	return false, nil
}

// Apply adds one charge to the account without consulting any budget. It is
// for rebuilding state from the ledger, whose records are charges that the
// filter already accepted; using it for new releases would bypass the budget.
// It increments Charges. An invalid mechanism, or an account whose curve is
// malformed, is an error and changes nothing.
func (a *Account) Apply(ms []Mechanism) error {
	ch, err := compose(ms)
	if err != nil {
		return fmt.Errorf("accountant: apply charge: %w", err)
	}
	next, err := a.with(ch)
	if err != nil {
		return fmt.Errorf("accountant: apply charge: %w", err)
	}
	next.Charges++
	*a = next
	return nil
}

// Cost returns the epsilon, at the given delta, of one charge alone: the
// Spent of an empty account after applying ms. Configuration uses it to
// reject a release that could never fit its stream's budget (Cost > budget
// epsilon). The guarantee is that of [Account.Spent]. It is an error if ms
// is empty or invalid or delta is not in [0, 1).
func Cost(ms []Mechanism, delta float64) (float64, error) {
	if err := checkDelta(delta); err != nil {
		return 0, fmt.Errorf("accountant: cost: %w", err)
	}
	var a Account
	if err := a.Apply(ms); err != nil {
		return 0, fmt.Errorf("accountant: cost: %w", err)
	}
	return a.Spent(delta), nil
}
