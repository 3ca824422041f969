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
// An Account is a plain value: copying it (saved := *acct) takes an
// independent snapshot, which later charges to either copy do not affect.
// That is why Curve is an array and not a slice. It has no locking: callers
// serialise access (one goroutine per stream, or their own mutex).
// [Account.MarshalBinary] serialises it for checkpoints.
type Account struct {
	// Curve is the RDP curve of all accepted charges, Curve[i] at Orders[i]
	// (the zero array is the zero curve); Curve[:] is it as a [Curve].
	Curve   [NumOrders]float64
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
func (a *Account) empty() bool {
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

// curveWellFormed reports whether every entry of c is >= 0 (not NaN), as
// every curve this package builds is; anything else is corrupt state.
func curveWellFormed(c *[numOrders]float64) bool {
	for _, v := range c {
		if !(v >= 0) {
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
// account has spent 0. A negative or NaN delta, or a corrupt curve (negative
// or NaN entries, e.g. from damaged stored state), gives +Inf, so a damaged
// account refuses everything rather than admitting it.
//
// With approx_dp charges (ε_i, δ_i) the RDP part is converted at
// delta − Σδ_i and Σε_i is added (basic composition, Dwork & Roth 2014,
// Thm. 3.16); if Σδ_i ≥ delta no ε is valid and Spent is +Inf.
//
// The conversion is [Epsilon]'s, evaluated without a logarithm per order for
// recently used deltas (see the package documentation); the value is the
// same.
func (a Account) Spent(delta float64) float64 { return a.spent(delta) }

// spent is Spent without copying the account.
func (a *Account) spent(delta float64) float64 {
	return spentOf(&a.Curve, a.Pure, a.AllPure, a.ApproxEpsilon, a.ApproxDelta, delta)
}

// spentOf is Spent of the account with these fields.
func spentOf(c *[numOrders]float64, pure float64, allPure bool, approxEps, approxDelta, delta float64) float64 {
	if math.IsNaN(delta) || delta < 0 || !curveWellFormed(c) {
		return math.Inf(1)
	}
	return spentWellFormed(c, pure, allPure, approxEps, approxDelta, delta)
}

// spentWellFormed is spentOf for a delta that is not NaN or negative and a
// curve known to be well formed.
func spentWellFormed(c *[numOrders]float64, pure float64, allPure bool, approxEps, approxDelta, delta float64) float64 {
	if approxDelta != 0 || approxEps != 0 {
		if !(approxDelta >= 0 && approxEps >= 0) || approxDelta >= delta {
			return math.Inf(1)
		}
		return epsilonOf(c, delta-approxDelta) + approxEps
	}
	eps := epsilonOf(c, delta)
	if allPure && pure >= 0 { // a NaN or negative Pure is corrupt: ignore it
		eps = math.Min(eps, pure)
	}
	return eps
}

// charge is the composed effect of one charge (a list of mechanisms): the
// cached entries of its mechanisms, whose curves are summed where the sum is
// used (sumInto), and its scalar totals.
type charge struct {
	// The entries in the order of the mechanisms: small[:n], or more when
	// there are more than len(small) (a slice into small itself would make
	// the charge escape to the heap).
	small                  [4]*mechEntry
	n                      int
	more                   []*mechEntry
	wellFormed             bool // every entry's curve is well formed
	pure                   float64
	allPure                bool
	approxEps, approxDelta float64
}

// compose validates ms and composes them into ch. Each mechanism's
// contribution comes from the mechanism cache, so composing up to
// len(ch.small) mechanisms seen before computes no curve and allocates
// nothing.
func compose(ms []Mechanism, ch *charge) error {
	if len(ms) == 0 {
		return fmt.Errorf("charge has no mechanisms: %w", ErrInvalidMechanism)
	}
	ch.n, ch.more = 0, nil
	ch.wellFormed, ch.pure, ch.allPure, ch.approxEps, ch.approxDelta = true, 0, true, 0, 0
	for i, m := range ms {
		e, err := lookup(m)
		if err != nil {
			return fmt.Errorf("charge mechanism %d: %w", i, err)
		}
		switch {
		case ch.more != nil:
			ch.more = append(ch.more, e)
		case ch.n < len(ch.small):
			ch.small[ch.n] = e
		default:
			ch.more = append(append(make([]*mechEntry, 0, len(ms)), ch.small[:]...), e)
		}
		ch.n++
		ch.wellFormed = ch.wellFormed && e.wellFormed
		if e.approx {
			ch.approxEps += e.approxEps
			ch.approxDelta += e.approxDelta
			ch.allPure = false
			continue
		}
		if e.pureOK {
			ch.pure += e.pure
		} else {
			ch.allPure = false
		}
	}
	return nil
}

// sumInto sets dst[i] = base[i] + (c1[i] + c2[i] + … + cn[i]), the
// charge's curves summed left to right and then added to base, the order in
// which composing and adding always summed them (so the floating-point
// results are those of Curve.Add). dst may be base. It reports whether every
// base[i] was well formed (>= 0, not NaN), checked in the same pass.
func (ch *charge) sumInto(dst, base *[numOrders]float64) bool {
	ok := true
	es := ch.more
	if es == nil {
		es = ch.small[:ch.n]
	}
	switch len(es) {
	case 1:
		c := &es[0].curve
		for i, v := range base {
			if !(v >= 0) {
				ok = false
			}
			dst[i] = v + c[i]
		}
	case 2:
		c1, c2 := &es[0].curve, &es[1].curve
		for i, v := range base {
			if !(v >= 0) {
				ok = false
			}
			dst[i] = v + (c1[i] + c2[i])
		}
	case 3:
		c1, c2, c3 := &es[0].curve, &es[1].curve, &es[2].curve
		for i, v := range base {
			if !(v >= 0) {
				ok = false
			}
			dst[i] = v + (c1[i] + c2[i] + c3[i])
		}
	default:
		for i, v := range base {
			if !(v >= 0) {
				ok = false
			}
			s := es[0].curve[i]
			for _, e := range es[1:] {
				s += e.curve[i]
			}
			dst[i] = v + s
		}
	}
	return ok
}

// checkPure reports whether a's pure epsilon is sound enough to be charged.
func (a *Account) checkPure() error {
	if math.IsNaN(a.Pure) || a.Pure < 0 {
		return fmt.Errorf("account pure epsilon is corrupt: %v", a.Pure)
	}
	return nil
}

// errCorruptCurve reports an account curve that is not well formed.
var errCorruptCurve = errors.New("account curve is corrupt (an entry is negative or NaN)")

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
	var ch charge
	if err := compose(ms, &ch); err != nil {
		return false, fmt.Errorf("accountant: try charge: %w", err)
	}
	// The prospective account, without copying a: its curve is summed into
	// next (checking a's curve in the same pass) and committed only if the
	// filter accepts. A sum of well-formed curves is well formed (>= 0 plus
	// >= 0 rounds to >= 0, and nothing is NaN), so then the conversion need
	// not check next again.
	var next [numOrders]float64
	if !ch.sumInto(&next, &a.Curve) {
		return false, fmt.Errorf("accountant: try charge: %w", errCorruptCurve)
	}
	if err := a.checkPure(); err != nil {
		return false, fmt.Errorf("accountant: try charge: %w", err)
	}
	pure, approxEps, approxDelta := a.Pure+ch.pure, a.ApproxEpsilon+ch.approxEps, a.ApproxDelta+ch.approxDelta
	allPure := (a.AllPure || a.empty()) && ch.allPure
	var spent float64
	if ch.wellFormed {
		spent = spentWellFormed(&next, pure, allPure, approxEps, approxDelta, b.Delta)
	} else {
		spent = spentOf(&next, pure, allPure, approxEps, approxDelta, b.Delta)
	}
	if spent <= b.Epsilon+budgetTolerance*b.Epsilon {
		a.Curve = next
		a.Pure, a.AllPure, a.ApproxEpsilon, a.ApproxDelta = pure, allPure, approxEps, approxDelta
		a.Charges++
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
	var ch charge
	if err := compose(ms, &ch); err != nil {
		return fmt.Errorf("accountant: apply charge: %w", err)
	}
	// Check before adding in place, so that an error changes nothing.
	if !curveWellFormed(&a.Curve) {
		return fmt.Errorf("accountant: apply charge: %w", errCorruptCurve)
	}
	if err := a.checkPure(); err != nil {
		return fmt.Errorf("accountant: apply charge: %w", err)
	}
	a.AllPure = (a.AllPure || a.empty()) && ch.allPure // before anything is added
	ch.sumInto(&a.Curve, &a.Curve)
	a.Pure += ch.pure
	a.ApproxEpsilon += ch.approxEps
	a.ApproxDelta += ch.approxDelta
	a.Charges++
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
