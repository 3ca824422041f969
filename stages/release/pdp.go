package release

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/pdpstore"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/pdp"
	"github.com/dpstream/dpstream/schema"
)

// This file turns the per-unit contributions that the accumulate stage
// attaches to a window's partials (schema.Partial.UnitContributions) into
// per-instance DP (pDP) certificates (SPEC section 4.6): for each release
// of the window, the distribution over the window's units of their own
// per-instance ε_u, and for each unit its cumulative per-instance loss
// over the stream's releases so far.
//
// What pDP means. A release is (ε, δ)-DP: for every data set and every
// unit, its output with and without that unit is (ε, δ)-indistinguishable.
// The pDP of unit u at the actual data set D is the same indistinguish-
// ability for the one pair (D, D ± u), where D ± u removes (or adds) all of
// u's events: the add/remove-one-unit relation of SPEC section 0, fixed to
// one pair. A unit that contributed little (one event of a small value)
// loses far less than the worst case the noise was calibrated for (Wang
// 2019, "Per-instance differential privacy", Journal of Privacy and
// Confidentiality 9(1); SPEC seed 000). A pDP certificate is not a DP
// guarantee: it is a function of the data, so publishing it would itself
// leak u's contribution.
//
// Confidentiality (DESIGN invariant 6). Everything computed here depends on
// the data: the records go only to the restricted dpstream.pdp topic, to
// the release stage's on-disk cache of it (pdpstore.Open: a 0700 directory,
// 0600 files) and to operators, never into a public release, and no public
// release depends on them (the noise and the charges are fixed by
// configuration; nothing here feeds back into them).
//
// Choices, each of which keeps every reported ε a valid upper bound:
//   - every per-instance norm is capped at the component's worst-case
//     sensitivity, which bounds the true shift of every unit whose events
//     the accumulate stage bounded, so the cap removes only slack (a unit
//     split over several partitions, which upstream routing excludes,
//     could exceed it; then the release's DP guarantee would fail as well);
//   - the rounding of a statistic to its noise grid is added to the unit's
//     norm (one grid step per coordinate the unit moves), as the
//     calibration adds it to the worst case;
//   - components whose per-instance sensitivity is not computed (those a
//     kind names no norm for, e.g. a pcls release's selection and fit, and
//     a posterior sample for a unit with several rows) are charged at their
//     worst case;
//   - a unit found in several partials of one window has its norms added
//     (the triangle inequality), never combined in quadrature;
//   - a release's per-unit ε is the smaller of the unit's composed
//     per-instance ε and the release's worst-case ε (plan.Release.Cost),
//     two valid bounds at the stream's δ;
//   - the summary's quantiles of the cumulative ε over all of a stream's
//     units are read off a histogram and rounded up to their bucket's
//     upper edge (at most pdpstore.QuantileError above the exact quantile,
//     never below it), and a unit restored at another δ is counted at
//     the window's δ by recomputing its account's ε there.
//
// Windows without per-unit data. When the accumulate stage could not carry
// a window's contributions (some partial has UnitsTruncated), no release of
// that window gets per-unit losses (status "unavailable") and NO unit's
// cumulative account is charged for that window: the cumulative per-unit ε
// then understates the truth by that window's releases. The summary says
// so with the status; operators must read a stream with unavailable windows
// as having incomplete cumulative accounts.

// StatusUnavailable is the pDP status of a release whose per-unit losses
// could not be computed: the window's partials carried no per-unit
// contributions (UnitsTruncated), or the release's outcome was not given to
// PreparePDP. Its units are not charged for it.
const StatusUnavailable = "unavailable"

// PDPWindow computes the per-instance DP of one window with PreparePDP
// and applies it to st with Commit; see PreparePDP. The release stage
// calls the two apart, to write the records to the pdp topic in between.
func PDPWindow(st *pdpstore.Store, ps *plan.Stream, w Window, outcomes []Outcome, now time.Time) (schema.PDPSummary, []schema.PDPUnit, error) {
	u, err := PreparePDP(st, ps, w, outcomes, now)
	if err != nil {
		return schema.PDPSummary{}, nil, err
	}
	if err := st.Commit(u); err != nil {
		return schema.PDPSummary{}, nil, err
	}
	return u.Summary, u.Units, nil
}

// PreparePDP computes the per-instance DP of one released window of
// stream ps and the update of the units' cumulative accounts in st,
// without changing st (st.Commit applies it; pdpstore.Store.Prepare
// gives the snapshot it reads, and keeps the histogram the cumulative
// part of the summary is read from).
//
// For every configured release, in configuration order, the summary holds
// the distribution (pdp.Summary: nearest-rank p50, p90, p99 and
// max) over the window's units of each unit's per-instance ε_u at the
// stream's budget δ, beside the release's worst-case ε at that δ
// (plan.Release.Cost) as DPEpsilon. Status:
//   - "ok": the release was charged and the losses are computed;
//   - "budget_exhausted": the release was refused; it published nothing,
//     so every unit's loss is 0 and nothing is charged (DPEpsilon 0);
//   - "unavailable" (StatusUnavailable): the window carries no per-unit
//     contributions (a partial has UnitsTruncated; Units is then 0), or no
//     outcome was given for the release. Nothing is charged for it, so the
//     cumulative accounts omit it: they understate those units' true
//     cumulative loss by it.
//
// Units is the number of units with events in the window (0 when it is
// truncated, since they are unknown). The quantiles are 0 when there are
// no units or the status is not ok: read Status, not the numbers.
// DPEpsilon is Cost for ok and unavailable releases (for a missing outcome
// it is not known whether the release was charged) and 0 for refused ones.
//
// Per-unit loss of one release. Each of the release's noise components
// charges the unit (pdp.Account; guarantee and composition there):
//   - discrete Gaussian with scale σ: ρ_u = n²/(2σ²) (AddGaussian(n, σ));
//   - discrete Laplace with scale b: ε0 = n/b (AddPure);
//   - approx_dp (the OPS posterior sample): (ε_z, δ_c) (AddApprox);
//   - exponential (pcls selection): its ε0 (AddPure); zcdp (pcls fit):
//     its ρ, as AddGaussian(1, 1/√(2ρ));
//
// where n is the unit's per-instance sensitivity in the component's units
// (its Sensitivity's): the entry of the unit's contribution that the
// release's kind names for the component (kind.Plan.PDP; the layout and
// what each entry is are the kind's Statistic's, kind.UnitNorms), or the
// component's worst case when it names none. n is capped at the
// component's Sensitivity and is 0 for a unit that does not move the
// statistic.
//
// Sensitivity, per instance, with proof sketch. Neighbouring relation:
// add or remove unit u (all its events in the window). Adding or removing
// u changes each exact statistic by exactly u's own contribution c_u
// (contribution bounding is per unit; see kind.UnitNorms), so the noise
// sees a shift of norm ‖c_u‖ in place of the worst case Δ: this is the
// per-instance sensitivity of Wang 2019, and the component's charge
// follows from the mechanism's guarantee with Δ replaced by it
// (pdp.GaussianRho, PDPLaplaceEpsilon). A statistic released on
// a grid coarser than its unit is rounded to the grid before the noise,
// which can add one grid step per coordinate the unit moves: the kind says
// how much (PDPComponent.Slack, kind.GridSlack), and it is added to every
// non-zero n. A unit with n = 0 moves no coordinate, and is not charged.
//
// Single rows. A release whose fit depends on the data in a way its
// norms cannot bound tightly (a regression's released λ_min bound,
// Lipschitz bound and OPS posterior sample) computes, for a unit whose
// contribution carries its single row, the unit's exact change or loss
// from the window's fit (kind.PDPFit; the kind documents each). A unit
// with several rows, a unit seen in several partials, or an outcome
// without its fit (an outcome rebuilt from the ledger) gets the norm's
// bound or the component's worst case.
//
// The release's ε_u is then pdp.Account.Epsilon(δ) of those charges alone,
// or Cost if smaller (both are valid (ε, δ) statements for the pair at the
// stream's δ). The cumulative account adds the charges of every charged
// release to the unit's stream account (the per-unit RDP curve of SPEC
// section 4.6; pdp.Account gives the composition argument), and a unit with
// no events in a window pays nothing for it.
//
// Idempotency. Each unit's record carries LastWindow: a unit whose record
// has LastWindow ≥ w.Start has had this window applied already and is not
// charged again, nor is its record returned again. Windows of a stream
// must therefore be applied in order of their start (as the release stage
// completes them): a window older than a unit's LastWindow that was never
// applied would be skipped for that unit.
//
// It returns the summary and the records of the units whose accounts it
// changes, sorted by unit, stamped with now. The summary's cumulative part
// describes all the stream's units after the update, at δ: their number
// and largest ε exactly, and the p50, p90 and p99 of their ε from the
// stream's histogram, from above within pdpstore.QuantileError. It reads
// only the accounts of the window's units, and the histogram (all
// accounts only when the stream's δ changed, to recount it). On an error
// (contributions or outcomes that do not fit the plan, an OPS fit that
// cannot be evaluated, a store that cannot be read) it returns no update.
func PreparePDP(st *pdpstore.Store, ps *plan.Stream, w Window, outcomes []Outcome, now time.Time) (*pdpstore.Update, error) {
	if ps == nil || ps.Config == nil {
		return nil, fmt.Errorf("pdp window %d of stream %q: no stream plan", w.Start, w.Stream)
	}
	if ps.Config.Name != w.Stream {
		return nil, fmt.Errorf("pdp window %d: window of stream %q given the plan of stream %q", w.Start, w.Stream, ps.Config.Name)
	}
	delta := ps.Budget.Delta
	if !(delta > 0 && delta < 1) {
		return nil, fmt.Errorf("pdp window %d of stream %q: budget delta %v is not in (0, 1)", w.Start, w.Stream, delta)
	}
	byRelease, err := outcomesByRelease(ps, w, outcomes)
	if err != nil {
		return nil, fmt.Errorf("pdp window %d of stream %q: %w", w.Start, w.Stream, err)
	}
	truncated := slices.ContainsFunc(w.Parts, func(p schema.Partial) bool { return p.UnitsTruncated })
	var units []string
	var contribs map[string][]*unitContribution
	if !truncated {
		if units, contribs, err = windowContributions(ps, w); err != nil {
			return nil, fmt.Errorf("pdp window %d of stream %q: %w", w.Start, w.Stream, err)
		}
	}

	sum := schema.PDPSummary{Stream: w.Stream, WindowStart: w.Start, WindowEnd: w.End, Delta: delta, PublishedAt: now.UnixMilli()}
	charges := map[string][]pdpCharge{} // per unit, over the window's ok releases
	charged := false                    // some release of the window is charged to the units
	for ri := range ps.Releases {
		pr := &ps.Releases[ri]
		o, have := byRelease[pr.Config.Name]
		rel := schema.PDPRelease{Release: pr.Config.Name}
		switch {
		case have && o.Release.Status == StatusBudgetExhausted:
			// Refused: nothing published, nothing charged, every loss 0.
			rel.Status = StatusBudgetExhausted
			rel.Units = int64(len(units))
		case !have || truncated:
			rel.Status, rel.DPEpsilon = StatusUnavailable, pr.Cost
			rel.Units = int64(len(units))
		default:
			rel.Status, rel.DPEpsilon, rel.Units = StatusOK, pr.Cost, int64(len(units))
			eps, err := releaseLosses(pr, ri, o.fit, units, contribs, delta, charges)
			if err != nil {
				return nil, fmt.Errorf("pdp window %d of stream %q release %s: %w", w.Start, w.Stream, pr.Config.Name, err)
			}
			if len(eps) > 0 {
				rel.P50, rel.P90, rel.P99, rel.Max = pdp.Summary(eps)
			}
			if f, ok := o.fit.(kind.PDPFit); ok {
				f.Summarize(&rel)
			}
			charged = true
		}
		sum.Releases = append(sum.Releases, rel)
	}

	// The cumulative update, built aside in the store's snapshot: Commit
	// applies it.
	memo := map[pdp.Account]float64{}
	// The stream's DP guarantee holds for every unit, so a unit's
	// cumulative ε is also at most what the accountant has spent over the
	// stream's lifetime. The per-unit account composes by zCDP and plain
	// sums, which is looser than the accountant's RDP composition over many
	// windows, so without this cap a unit at the worst case in every window
	// would be certified above the DP bound. Only lifetime budgets have one
	// account covering every window; periodic budgets are not capped.
	capEps := math.Inf(1)
	if ps.Per <= 0 {
		for _, o := range outcomes {
			if o.Release.EpsilonSpent > 0 && (math.IsInf(capEps, 1) || o.Release.EpsilonSpent > capEps) {
				capEps = o.Release.EpsilonSpent
			}
		}
	}
	return st.Prepare(sum, func(d *pdpstore.Draft) error {
		if !charged {
			return nil
		}
		for _, u := range units {
			err := d.Change(u, func(rec schema.PDPUnit, seen bool) (schema.PDPUnit, bool, error) {
				if seen && rec.LastWindow >= w.Start {
					return rec, false, nil // applied already (idempotent replay)
				}
				acct := pdpstore.AccountOf(rec)
				for _, c := range charges[u] {
					if err := c.apply(&acct); err != nil {
						return rec, false, fmt.Errorf("pdp window %d of stream %q unit %q: %w", w.Start, w.Stream, u, err)
					}
				}
				rec = pdpstore.RecordOf(acct, w.Stream, u)
				rec.LastWindow, rec.Delta, rec.UpdatedAt = w.Start, delta, now.UnixMilli()
				rec.Epsilon = math.Min(pdpstore.CachedEpsilon(memo, acct, delta), capEps)
				return rec, true, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// outcomesByRelease indexes the outcomes of window w by release name,
// checking that each belongs to w and to a configured release of ps, is
// given once, and has a known status.
func outcomesByRelease(ps *plan.Stream, w Window, outcomes []Outcome) (map[string]*Outcome, error) {
	known := map[string]bool{}
	for _, pr := range ps.Releases {
		known[pr.Config.Name] = true
	}
	out := map[string]*Outcome{}
	for i := range outcomes {
		o := &outcomes[i]
		r := o.Release
		switch {
		case r.Stream != w.Stream || r.WindowStart != w.Start:
			return nil, fmt.Errorf("outcome %s is of stream %q window %d", r.ReleaseID, r.Stream, r.WindowStart)
		case !known[r.Release]:
			return nil, fmt.Errorf("outcome %s: release %q is not in the configuration", r.ReleaseID, r.Release)
		case out[r.Release] != nil:
			return nil, fmt.Errorf("outcome %s given twice", r.ReleaseID)
		case r.Status != StatusOK && r.Status != StatusBudgetExhausted:
			return nil, fmt.Errorf("outcome %s has status %q", r.ReleaseID, r.Status)
		}
		out[r.Release] = o
	}
	return out, nil
}

// unitContribution is one unit's contribution to one release over a
// window: its norms (kind.UnitNorms, without the row) and, when the unit
// has exactly one event of a kind with rows and appears in one partial
// only, that row.
type unitContribution struct {
	norms []float64
	row   []float64 // x_1..x_d, y on the scaled value scale; nil if none
}

// windowContributions collects the units of window w (sorted) and each
// unit's contribution per release of ps (indexed like ps.Releases; nil
// where the unit has none). A partial's UnitContributions[k].Norms[i]
// belongs to the release named by its Stats[i]; releases not in the plan
// are ignored, as Window.Merged ignores them. A unit found in several
// partials (the accumulate stage routes each unit to one partition, so
// only a bug or a repartitioning does this) has its norms added, which
// bounds the norm of the summed contribution by the triangle inequality
// (combining L2 norms in quadrature would not: two equal contributions
// add to twice the norm, not √2 times), and its row dropped.
func windowContributions(ps *plan.Stream, w Window) ([]string, map[string][]*unitContribution, error) {
	index := map[string]int{}
	for i, pr := range ps.Releases {
		index[pr.Config.Name] = i
	}
	byUnit := map[string][]*unitContribution{}
	for _, p := range w.Parts {
		for _, uc := range p.UnitContributions {
			if len(uc.Norms) != len(p.Stats) {
				return nil, nil, fmt.Errorf("partition %d unit %q: %d norm vectors for %d releases", p.Partition, uc.Unit, len(uc.Norms), len(p.Stats))
			}
			cs, seen := byUnit[uc.Unit]
			if !seen {
				cs = make([]*unitContribution, len(ps.Releases))
				byUnit[uc.Unit] = cs
			}
			for k, norms := range uc.Norms {
				ri, ok := index[p.Stats[k].Release]
				if !ok {
					continue
				}
				c, err := parseNorms(&ps.Releases[ri], norms)
				if err != nil {
					return nil, nil, fmt.Errorf("partition %d unit %q release %s: %w", p.Partition, uc.Unit, p.Stats[k].Release, err)
				}
				if prev := cs[ri]; prev != nil {
					for j := range prev.norms {
						prev.norms[j] += c.norms[j]
					}
					prev.row = nil
					continue
				}
				cs[ri] = c
			}
		}
	}
	units := make([]string, 0, len(byUnit))
	for u := range byUnit {
		units = append(units, u)
	}
	slices.Sort(units)
	return units, byUnit, nil
}

// parseNorms checks one norm vector against the release's layout
// (kind.Plan.Norms: norms finite and >= 0, a row finite) and copies it.
func parseNorms(pr *plan.Release, v []float64) (*unitContribution, error) {
	l := pr.Kind.Norms()
	head, row := l.Head, l.Row
	if len(v) != head && (row == 0 || len(v) != head+row) {
		if row > 0 {
			return nil, fmt.Errorf("%d norms, want %d, or %d with the unit's single row", len(v), head, head+row)
		}
		return nil, fmt.Errorf("%d norms, want %d", len(v), head)
	}
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) || (j < head && x < 0) {
			return nil, fmt.Errorf("norm %d is %v, want finite and >= 0 (row values finite)", j, x)
		}
	}
	c := &unitContribution{norms: slices.Clone(v[:head])}
	if len(v) > head {
		c.row = slices.Clone(v[head:])
	}
	return c, nil
}

// chargeKind is which pdp.Account method a pdpCharge calls.
type chargeKind uint8

const (
	chargeGaussian chargeKind = iota + 1 // AddGaussian(x = l2, y = sigma)
	chargePure                           // AddPure(x = eps0)
	chargeApprox                         // AddApprox(x = eps, y = delta)
)

// pdpCharge is one component's per-instance charge to one unit.
type pdpCharge struct {
	kind chargeKind
	x, y float64
}

// apply adds the charge to a.
func (c pdpCharge) apply(a *pdp.Account) error {
	switch c.kind {
	case chargeGaussian:
		return a.AddGaussian(c.x, c.y)
	case chargePure:
		return a.AddPure(c.x)
	case chargeApprox:
		return a.AddApprox(c.x, c.y)
	}
	return fmt.Errorf("pdp charge of unknown kind %d", c.kind)
}

// pdpComponents returns the components of a release for per-instance DP,
// in charge order (kind.Plan.PDP). Every component the accountant charges
// appears: an unknown purpose or noise is an error rather than an
// uncharged loss, and so is a norm the release's layout does not have.
func pdpComponents(pr *plan.Release) ([]kind.PDPComponent, error) {
	comps, err := pr.Kind.PDP()
	if err != nil {
		return nil, err
	}
	head := pr.Kind.Norms().Head
	for _, c := range comps {
		switch c.Noise {
		case string(noise.DiscreteGaussian), string(noise.DiscreteLaplace):
			if c.Norm >= head {
				return nil, fmt.Errorf("component %s reads norm %d of %d", c.Purpose, c.Norm, head)
			}
		case string(noise.ApproxDP), accountant.KindExponential, accountant.KindZCDP:
			if c.Norm >= 0 {
				return nil, fmt.Errorf("component %s has noise %q", c.Purpose, c.Noise)
			}
		default:
			return nil, fmt.Errorf("component %s has noise %q", c.Purpose, c.Noise)
		}
	}
	return comps, nil
}

// unitCharges returns one unit's charges for one release with components
// comps; c is the unit's contribution to it and rl the release's exact
// evaluator for units with one row (nil: none, e.g. an outcome rebuilt
// from the ledger; its components are then charged at their worst case).
//
// c is nil for a unit of the window whose partial carried no statistics
// for this release: it did not move them, so the data-dependent components
// charge it nothing. Worst-case components charge every unit of the window
// all the same, since their per-instance loss is not computed.
func unitCharges(comps []kind.PDPComponent, c *unitContribution, rl kind.PDPRowLosses) ([]pdpCharge, error) {
	out := make([]pdpCharge, 0, len(comps))
	single := rl != nil && c != nil && c.row != nil // a unit with one row, and a fit
	for ci, pc := range comps {
		if pc.Exact == kind.ExactGaussian && single {
			x, y, ok, err := rl.Row(ci, c.row)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, pdpCharge{kind: chargeGaussian, x: x, y: y})
				continue
			}
		}
		switch pc.Noise {
		case accountant.KindExponential:
			out = append(out, pdpCharge{kind: chargePure, x: pc.Epsilon})
		case accountant.KindZCDP:
			// ρ-zCDP is exactly the Gaussian charge of sensitivity 1 and
			// σ = 1/√(2ρ).
			out = append(out, pdpCharge{kind: chargeGaussian, x: 1, y: 1 / math.Sqrt(2*pc.Epsilon)})
		case string(noise.ApproxDP):
			eps := pc.Epsilon
			if pc.Exact == kind.ExactLoss && single {
				x, _, ok, err := rl.Row(ci, c.row)
				if err != nil {
					return nil, err
				}
				if ok {
					eps = x
				}
			}
			out = append(out, pdpCharge{kind: chargeApprox, x: eps, y: pc.Delta})
		default:
			n := pc.Sensitivity // worst case
			if pc.Norm >= 0 {
				n = 0
				if c != nil {
					n = c.norms[pc.Norm]
				}
				if pc.Exact == kind.ExactNorm && single && n > 0 {
					exact, _, ok, err := rl.Row(ci, c.row)
					if err != nil {
						return nil, err
					}
					if ok {
						n = math.Min(n, exact)
					}
				}
				if n > 0 {
					n = math.Min(n+pc.Slack, pc.Sensitivity)
				}
			}
			if pc.Noise == string(noise.DiscreteGaussian) {
				out = append(out, pdpCharge{kind: chargeGaussian, x: n, y: pc.Scale})
			} else {
				out = append(out, pdpCharge{kind: chargePure, x: n / pc.Scale})
			}
		}
	}
	return out, nil
}

// maxMemo is the longest charge list releaseLosses memoizes; every
// release kind has at most three components.
const maxMemo = 4

// chargeKey is a memo key for a release's charge list: units with the same
// charges have the same per-instance ε.
type chargeKey struct {
	n  int
	cs [maxMemo]pdpCharge
}

// releaseLosses computes the per-unit ε of one charged release (index ri
// of ps.Releases) for every unit of the window, at delta, capped at
// pr.Cost, and appends each unit's charges to charges. Units with the same
// charges share one computation (pdp.Account.Epsilon is a search).
func releaseLosses(pr *plan.Release, ri int, kfit kind.Fit, units []string, contribs map[string][]*unitContribution,
	delta float64, charges map[string][]pdpCharge) ([]float64, error) {
	comps, err := pdpComponents(pr)
	if err != nil {
		return nil, err
	}
	var rl kind.PDPRowLosses
	if f, ok := kfit.(kind.PDPFit); ok {
		if rl, err = f.RowLosses(comps); err != nil {
			return nil, err
		}
	}
	memo := map[chargeKey]float64{}
	eps := make([]float64, 0, len(units))
	for _, u := range units {
		cs, err := unitCharges(comps, contribs[u][ri], rl)
		if err != nil {
			return nil, fmt.Errorf("unit %q: %w", u, err)
		}
		key, memoOK := chargeKey{n: len(cs)}, len(cs) <= maxMemo
		if memoOK {
			copy(key.cs[:], cs)
			if e, ok := memo[key]; ok {
				eps = append(eps, e)
				charges[u] = append(charges[u], cs...)
				continue
			}
		}
		var a pdp.Account
		for _, c := range cs {
			if err := c.apply(&a); err != nil {
				return nil, fmt.Errorf("unit %q: %w", u, err)
			}
		}
		e := math.Min(a.Epsilon(delta), pr.Cost)
		if math.IsNaN(e) {
			return nil, fmt.Errorf("unit %q: per-instance epsilon is NaN", u)
		}
		if memoOK {
			memo[key] = e
		}
		eps = append(eps, e)
		charges[u] = append(charges[u], cs...)
	}
	return eps, nil
}
