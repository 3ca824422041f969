package release

import (
	"errors"
	"fmt"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/capacity"
	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Releaser is the release stage's decisions without Kafka: for every
// complete window it asks the accountant for each release's budget, runs the
// mechanism (or refuses), and builds the release and its ledger charge. It
// holds the accountant's state: which release ids are charged, and one
// account per stream and budget period.
//
// The Kafka Stage makes each Outcome durable ledger-first; `dpstream
// simulate` prints them. Keeping this logic in one place is what lets the
// simulator run the code that production runs rather than a copy of it.
//
// A Releaser is not safe for concurrent use; the Stage serialises access
// with its mutex.
type Releaser struct {
	streams  map[string]*plan.Stream
	noise    noise.Sampler
	charged  map[string]schema.LedgerCharge  // by release id
	accounts map[acctKey]*accountant.Account // per stream and budget period
	// runs are the continual releases' current horizons (kind.Running),
	// by stream and release name: rebuilt from the ledger's step logs by
	// Restore, advanced by ReleaseWindow.
	runs map[runKey]*runState
	// starts are the streams' schedule starts (SetStart), to which the
	// continual releases' horizons are aligned.
	starts map[string]int64
	// recordBytes is the largest ledger record a release may need
	// (plan.MaxRecordBytes; tests lower it): a release whose ledger
	// records would be larger is split into chunks (chunkBytes).
	recordBytes int
	// kl holds each stream-period's capacity-bounded figures, composed
	// charge by charge as its account is (klFigures); reporting only.
	kl map[acctKey]*klSum
	// klCache memoises the figure of each mechanism: numerical figures
	// take milliseconds, and every window charges the same mechanisms.
	klCache map[accountant.Mechanism]klEntry
	// models are the prediction releases' current models (predict.go),
	// answered counts the answers given from each window's models, and
	// requestNext is the requests topic's offset after the last request
	// answered in the ledger; all rebuilt by Restore.
	models map[modelKey]*currentModel
	// queryAccounts hold each stream-period's answers alone, against the
	// stream's budget.queries.
	queryAccounts map[acctKey]*accountant.Account
	answered      map[answeredKey]int
	requestNext   int64
}

// klSum is a stream-period's composed figures: the sums of its charges'
// unrestricted and linear-adversary KL (capacity.ComposeNonAdaptive), over
// the charges that have them, and how many charges have none.
type klSum struct {
	kl, linear float64
	without    int64
}

// klEntry is one mechanism's memoised figure: ok false when it has none.
type klEntry struct {
	p  capacity.Pair
	ok bool
}

type acctKey struct {
	stream string
	period int64
}

type runKey struct{ stream, release string }

// runState is one continual release's current horizon: whether its charge
// was made (charged, in budget period period) or refused (refused, and then
// every window of the horizon is refused), and the run with the steps
// released so far.
type runState struct {
	horizon          int64
	charged, refused bool
	period           int64
	run              kind.Run
	// charges are the horizon's charge as recorded (the ledger's), which
	// a duplicate answer for one of its windows is charged again.
	charges []schema.NoiseComponent
}

// Statuses of a continual release beyond ok and budget_exhausted.
const (
	// StatusSkipped: a continual release's window that arrived after a
	// later window of its horizon was released, so its data can no longer
	// enter the running totals; nothing is charged or published of it.
	StatusSkipped = "skipped"
)

// SetStart aligns the continual releases' horizons of stream to its
// schedule start (unix ms, window-aligned; ledger.StreamStarts), as the
// accumulate stage aligns max_windows' horizons. Without one they are
// aligned to the Unix epoch. It must be called before any window of the
// stream is decided or restored.
func (r *Releaser) SetStart(stream string, start int64) {
	if r.starts == nil {
		r.starts = map[string]int64{}
	}
	r.starts[stream] = start
}

// horizonStep places a window of a continual release: horizon ⌊w/T⌋ and
// step w mod T of window index w = (start − stream start)/size: the
// horizons are aligned to the stream's start (SetStart).
func (r *Releaser) horizonStep(ps *plan.Stream, rp kind.Running, start int64) (int64, int) {
	size := ps.Config.Window.Size.Milliseconds()
	start -= r.starts[ps.Config.Name]
	w := start / size
	if start%size != 0 && start < 0 {
		w--
	}
	t := int64(rp.Horizon())
	h := w / t
	if w%t != 0 && w < 0 {
		h--
	}
	return h, int(w - h*t)
}

// runFor returns the run state of a continual release for horizon h,
// starting a new one when the release's current run is of an earlier
// horizon; nil (and no error) when its current run is of a later one: a
// window of a horizon that has ended can no longer be released.
func (r *Releaser) runFor(stream string, pr plan.Release, rp kind.Running, h int64) (*runState, error) {
	k := runKey{stream, pr.Config.Name}
	rs := r.runs[k]
	if rs != nil && rs.horizon == h {
		return rs, nil
	}
	if rs != nil && rs.horizon > h {
		return nil, nil
	}
	run, err := rp.NewRun()
	if err != nil {
		return nil, err
	}
	rs = &runState{horizon: h, run: run}
	r.runs[k] = rs
	return rs, nil
}

// restoreRun applies a continual release's ledger charge to its run: the
// horizon's charge or refusal, and the step log. Only charges made for
// this run's mechanism count (kind.Running.Factor, recorded in
// ContinualFactor): an ordinary release's charge of the same name (before
// the release became continual, or a version without continual fields)
// never stands in for the horizon's charge. A continual charge made under
// another factor (the configuration changed mid-horizon: its bounds,
// noise, method, bins or keys) ends the run: the next window starts a new
// one, charged anew, whose earlier steps count as empty. A log of this
// factor that does not continue the run leaves the horizon refused.
func (r *Releaser) restoreRun(lc schema.LedgerCharge) {
	ps, ok := r.streams[lc.Stream]
	if !ok {
		return
	}
	for _, pr := range ps.Releases {
		rp, ok := pr.Kind.(kind.Running)
		if !ok || pr.Config.Name != lc.Release {
			continue
		}
		if lc.ContinualFactor == "" {
			return // not a continual charge
		}
		h, _ := r.horizonStep(ps, rp, lc.WindowStart)
		rs, err := r.runFor(lc.Stream, pr, rp, h)
		if err != nil || rs == nil {
			return
		}
		if lc.ContinualFactor != rp.Factor() {
			// Another configuration's run: this one starts afresh.
			run, err := rp.NewRun()
			if err != nil {
				return
			}
			*rs = runState{horizon: h, run: run}
			return
		}
		switch {
		case lc.Status == StatusBudgetExhausted:
			rs.refused = true
		case lc.Status == StatusOK:
			if len(lc.Charges) > 0 {
				rs.charged, rs.period, rs.charges = true, lc.Period, lc.Charges
			}
			if len(lc.ContinualX) > 0 {
				l := kind.Log{First: int(lc.ContinualFirst), X: lc.ContinualX, Z: lc.ContinualZ, Factor: lc.ContinualFactor}
				if err := rs.run.Replay(l); err != nil {
					rs.refused = true
				}
			}
		}
	}
}

// Outcome is one release decided for a window: the public release and the
// ledger charge that must be made durable before the release is published
// (DESIGN invariant 1).
type Outcome struct {
	// Release is the release as published (status ok or budget_exhausted).
	Release schema.Release
	// Charge is the ledger record; Charge.Payload is the encoded Release,
	// the exact bytes to publish on the releases topic.
	Charge schema.LedgerCharge
	// Ledger is the encoded Charge, the ledger record's value.
	Ledger []byte
	// Chunks are, for a release too large for one ledger record, its
	// encoded chunks (schema.SplitRelease), chunk 0 first: chunk 0 is
	// Charge.Payload, and chunks 1..n-1 go to the ledger as chunk records
	// before the charge (package internal/ledger). Nil for a release in
	// one record. Release is the whole release either way.
	Chunks [][]byte

	// fit is what the release computed from the data that its
	// per-instance DP certificates need (kind.Plan.Release; e.g. a
	// regression's ridge and exact statistics); nil for most kinds and for
	// refused releases. It depends on the data, so it is never published,
	// encoded or logged (DESIGN invariant 6).
	fit kind.Fit
}

// NewReleaser returns a Releaser for the given calibrated streams with no
// charges yet. A nil sampler means crypto/rand noise (noise.New).
func NewReleaser(streams []plan.Stream, sampler noise.Sampler) *Releaser {
	if sampler == nil {
		sampler = noise.New(noise.CryptoSource())
	}
	r := &Releaser{streams: map[string]*plan.Stream{}, noise: sampler, recordBytes: plan.MaxRecordBytes}
	for i := range streams {
		r.streams[streams[i].Config.Name] = &streams[i]
	}
	r.Reset()
	return r
}

// Stream returns the calibrated stream of that name.
func (r *Releaser) Stream(name string) (*plan.Stream, bool) {
	ps, ok := r.streams[name]
	return ps, ok
}

// Reset forgets every charge, before the state is rebuilt from the ledger
// with Restore.
func (r *Releaser) Reset() {
	r.charged = map[string]schema.LedgerCharge{}
	r.accounts = map[acctKey]*accountant.Account{}
	r.runs = map[runKey]*runState{}
	r.kl = map[acctKey]*klSum{}
	r.models, r.answered, r.requestNext = map[modelKey]*currentModel{}, map[answeredKey]int{}, 0
	r.queryAccounts = map[acctKey]*accountant.Account{}
	if r.klCache == nil {
		r.klCache = map[accountant.Mechanism]klEntry{}
	}
}

// klFigures returns a charge's unrestricted KL and its capacity-bounded KL
// against linear adversaries (accountant/capacity, class linear, KL): the
// sums over its mechanisms, by non-adaptive composition (the mechanisms'
// noise draws are independent, and none depends on another's output).
// ok is false when a mechanism has no figure: a kind without an
// additive-noise law (approx_dp, exponential, zcdp, randomized_response,
// pure: capacity.ErrUnsupported) or one whose figure cannot be computed
// (a discrete kind whose recorded sensitivity is not an integer: the
// figure of a discrete law is computed on the integer lattice of the
// recorded units). An empty charge has the figures 0. The figures are
// reported, never charged, so a mechanism without one is not an error.
func (r *Releaser) klFigures(ms []accountant.Mechanism) (p capacity.Pair, ok bool) {
	for _, m := range ms {
		e, hit := r.klCache[m]
		if !hit {
			f, err := capacity.Figures(m, capacity.Linear, capacity.KL())
			e = klEntry{p: f, ok: err == nil}
			r.klCache[m] = e
		}
		if !e.ok {
			return capacity.Pair{}, false
		}
		p.Restricted = capacity.ComposeNonAdaptive(p.Restricted, e.p.Restricted)
		p.Unrestricted += e.p.Unrestricted
	}
	return p, true
}

// setKL records a charge's figures in its ledger record (nil when it has
// none).
func (r *Releaser) setKL(lc *schema.LedgerCharge) {
	lc.KL, lc.LinearKL = nil, nil
	if p, ok := r.klFigures(mechanismsOf(lc.Charges)); ok {
		kl, lin := p.Unrestricted, p.Restricted
		lc.KL, lc.LinearKL = &kl, &lin
	}
}

// addKL composes one charge applied to a stream-period's account into its
// figures, as the account composes its curve: called exactly where a
// charge is accepted (ReleaseWindow) or applied (Restore), so that a
// rebuilt state reports the same figures as the live one.
func (r *Releaser) addKL(k acctKey, ms []accountant.Mechanism) {
	s := r.kl[k]
	if s == nil {
		s = &klSum{}
		r.kl[k] = s
	}
	p, ok := r.klFigures(ms)
	if !ok {
		s.without++
		return
	}
	s.kl += p.Unrestricted
	s.linear = capacity.ComposeNonAdaptive(s.linear, p.Restricted)
}

// Restore applies one valid ledger charge (see package internal/ledger) to
// the accountant state: an ok charge is added to its stream-period account
// without consulting the budget (the filter accepted it when it was made), a
// refused one is counted. A charge for a release id that is already charged
// is applied all the same and reported with dup: the fencing protocol never
// writes two valid charges for one id, so a second one can only come from a
// ledger written by an older version or a bug, and both answers may have
// been published, each spending budget (the defensive rule of DESIGN
// invariant 8). The caller skips a duplicate whose payload is identical to
// the first (ledger.Entry.Identical: one answer, written twice). The first
// charge stays the one Charged returns.
func (r *Releaser) Restore(lc schema.LedgerCharge) (dup bool, err error) {
	if _, dup = r.charged[lc.ReleaseID]; !dup {
		r.charged[lc.ReleaseID] = withoutPayload(lc)
		r.restoreRun(lc)
		if err := r.restoreModel(lc); err != nil {
			return false, fmt.Errorf("ledger charge %s: %w", lc.ReleaseID, err)
		}
	}
	if lc.IsAnswer() {
		r.requestNext = max(r.requestNext, lc.RequestOffset+1)
	}
	acct := r.account(lc.Stream, lc.Period)
	if lc.Status == StatusSkipped {
		return dup, nil
	}
	if lc.Status != StatusOK {
		acct.Refused++
		return dup, nil
	}
	if len(lc.Charges) == 0 {
		// A continual release's window after its horizon's first: the
		// horizon's charge covers it — once. A second, different answer
		// for it publishes the window's row again with fresh noise, which
		// no charge covers: it is charged the horizon's charge again (an
		// upper bound), as a duplicate of any release is (DESIGN
		// invariant 8).
		if dup && len(lc.ContinualX) > 0 {
			if ms := r.horizonCharge(lc); len(ms) > 0 {
				if err := acct.Apply(ms); err != nil {
					return dup, fmt.Errorf("ledger charge %s: %w", lc.ReleaseID, err)
				}
				r.addKL(acctKey{lc.Stream, lc.Period}, ms)
			}
		}
		return dup, nil
	}
	ms := mechanismsOf(lc.Charges)
	if err := acct.Apply(ms); err != nil {
		return dup, fmt.Errorf("ledger charge %s: %w", lc.ReleaseID, err)
	}
	// The figures are recomputed from the charges rather than read from
	// the record: records written before they existed have none, and
	// this way a rebuilt state reports exactly what the live one did.
	r.addKL(acctKey{lc.Stream, lc.Period}, ms)
	return dup, nil
}

// horizonCharge returns the charge of the horizon a continual window's
// charge lc belongs to: as the ledger recorded it, or the release's
// configured one when the horizon's first charge is not known.
func (r *Releaser) horizonCharge(lc schema.LedgerCharge) []accountant.Mechanism {
	if rs := r.runs[runKey{lc.Stream, lc.Release}]; rs != nil && len(rs.charges) > 0 {
		return mechanismsOf(rs.charges)
	}
	if ps, ok := r.streams[lc.Stream]; ok {
		for _, pr := range ps.Releases {
			if pr.Config.Name == lc.Release {
				return pr.Mechanisms
			}
		}
	}
	return nil
}

// withoutPayload returns lc without its payload (nor a continual step
// log, which Restore has applied). The releaser keeps a
// charge for every release id ever charged, to release each once and
// rebuild the accounts; the payload (the release itself, up to a record's
// size for a release in chunks) is republished from the ledger, never from
// memory, so keeping it would only make memory grow with every release.
func withoutPayload(lc schema.LedgerCharge) schema.LedgerCharge {
	lc.Payload, lc.ContinualX, lc.ContinualZ, lc.ContinualFactor, lc.Model = nil, nil, nil, "", nil
	return lc
}

// Charged returns the ledger charge recorded for a release id, without its
// payload (which only the ledger keeps).
func (r *Releaser) Charged(id string) (schema.LedgerCharge, bool) {
	lc, ok := r.charged[id]
	return lc, ok
}

// LatestPeriod returns the latest budget period of the stream that has an
// account (0 if none).
func (r *Releaser) LatestPeriod(stream string) int64 {
	var p int64
	for k := range r.accounts {
		if k.stream == stream && k.period > p {
			p = k.period
		}
	}
	return p
}

// State returns the budget state of a stream's period, stamped with now.
// ok is false for a stream not in the configuration.
func (r *Releaser) State(stream string, period int64, now time.Time) (schema.BudgetState, bool) {
	ps, ok := r.streams[stream]
	if !ok {
		return schema.BudgetState{}, false
	}
	acct := r.account(stream, period)
	spent := acct.Spent(ps.Budget.Delta)
	st := schema.BudgetState{
		Stream: stream, Period: period, ReleasesCharged: int64(acct.Charges), ReleasesRefused: int64(acct.Refused),
		EpsilonSpent: spent, Delta: ps.Budget.Delta, EpsilonBudget: ps.Budget.Epsilon,
		EpsilonRemaining: max(ps.Budget.Epsilon-spent, 0), UpdatedAt: now.UnixMilli(),
	}
	if acct.AllPure {
		p := acct.Pure
		st.PureEpsilon = &p
	}
	if s := r.kl[acctKey{stream, period}]; s != nil {
		st.KL, st.LinearKL, st.ReleasesWithoutKL = s.kl, s.linear, s.without
	}
	return st, true
}

func (r *Releaser) account(stream string, period int64) *accountant.Account {
	k := acctKey{stream, period}
	a := r.accounts[k]
	if a == nil {
		a = &accountant.Account{AllPure: true}
		r.accounts[k] = a
	}
	return a
}

func mechanismsOf(cs []schema.NoiseComponent) []accountant.Mechanism {
	out := make([]accountant.Mechanism, len(cs))
	for i, c := range cs {
		switch c.Mechanism {
		case accountant.KindApproxDP:
			// No noise scale: the component is (ε, δ)-DP as a whole.
			out[i] = accountant.Mechanism{Kind: c.Mechanism, Epsilon: c.Epsilon, Delta: c.Delta}
			continue
		case accountant.KindExponential, accountant.KindZCDP:
			// ε0 of the exponential mechanism; ρ of a zCDP charge.
			out[i] = accountant.Mechanism{Kind: c.Mechanism, Epsilon: c.Epsilon}
			continue
		}
		out[i] = accountant.Mechanism{Kind: c.Mechanism, Scale: c.Scale, Sensitivity: c.Sensitivity}
	}
	return out
}

// ReleaseWindow decides every configured release of a complete window that
// is not charged yet, in configuration order, and returns the outcomes to
// make durable, in that order. For each release it merges the window's
// exact statistics, offers the release's fixed charge to the account of the
// window's budget period, and either runs the mechanism (status ok, with the
// charge's noise components and RDP curve in the ledger record) or refuses
// (status budget_exhausted: no data, nothing charged). now stamps the
// release (published_at) and the charge.
//
// The budget is a filter (DESIGN invariant 3): whether a charge is accepted
// depends only on the configuration and earlier charges, never on the data,
// so trying it reveals nothing; see accountant.Account.Try for the
// guarantee. The released values carry the guarantee of their kind's
// mechanism (kind.Plan.Release).
//
// ReleaseWindow records each outcome as charged when it decides it, so the
// caller must make every returned outcome durable before acting on it and,
// if it cannot, rebuild the state (Reset, then Restore from the ledger)
// before deciding anything else. On an error it returns, with the error,
// the outcomes decided before it: they are charged and must be written all
// the same; the release that failed and the ones after it are not.
func (r *Releaser) ReleaseWindow(w Window, now time.Time) ([]Outcome, error) {
	ps, ok := r.streams[w.Stream]
	if !ok {
		return nil, fmt.Errorf("window %d of stream %q: the stream is not in the configuration", w.Start, w.Stream)
	}
	period := ps.Period(w.Start)
	acct := r.account(w.Stream, period)
	var out []Outcome
	for _, pr := range ps.Releases {
		id := plan.ReleaseID(w.Stream, pr.Config.Name, w.Start)
		if _, done := r.charged[id]; done {
			continue
		}
		o, err := r.decide(ps, pr, acct, w, id, period, now)
		if err != nil {
			return out, err
		}
		r.charged[id] = withoutPayload(o.Charge)
		out = append(out, o)
	}
	return out, nil
}

// decide charges (or refuses) one release of a window and builds its
// outcome.
func (r *Releaser) decide(ps *plan.Stream, pr plan.Release, acct *accountant.Account, w Window, id string, period int64, now time.Time) (Outcome, error) {
	// Merge before asking for budget: a window whose statistics cannot
	// be merged is not released, and must not be charged.
	merged, err := pr.Kind.Merge(w.ReleaseParts(pr.Config.Name))
	if err != nil {
		var pe *kind.PartError
		if errors.As(err, &pe) {
			return Outcome{}, fmt.Errorf("window %d partition %d release %s: %w", w.Start, pe.Partition, pr.Config.Name, pe.Err)
		}
		return Outcome{}, fmt.Errorf("window %d release %s: %w", w.Start, pr.Config.Name, err)
	}
	rel := schema.Release{
		ReleaseID: id, Stream: w.Stream, Release: pr.Config.Name, Kind: pr.Config.Kind,
		WindowStart: w.Start, WindowEnd: w.End, Epsilon: pr.Config.Epsilon, Delta: pr.Config.Delta,
		Noise: pr.Noise, EpsilonBudget: ps.Budget.Epsilon, PublishedAt: now.UnixMilli(),
	}
	lc := schema.LedgerCharge{ReleaseID: id, Stream: w.Stream, Release: pr.Config.Name, WindowStart: w.Start, Period: period, At: rel.PublishedAt}
	if rp, ok := pr.Kind.(kind.Running); ok {
		return r.decideRunning(ps, pr, rp, acct, merged, rel, lc)
	}
	// Budget is a filter (invariant 3): the charge depends only on the
	// configuration, so trying it reveals nothing about the data. A
	// release without a charge (a prediction release's window: its
	// answers are charged) costs nothing and is never refused.
	ok := true
	if len(pr.Mechanisms) > 0 {
		if ok, err = acct.Try(ps.Budget, pr.Mechanisms); err != nil {
			return Outcome{}, fmt.Errorf("accountant: %s: %w", id, err)
		}
	}
	var fit kind.Fit
	if ok {
		if fit, err = pr.Kind.Release(merged, r.noise, &rel); err != nil {
			return Outcome{}, fmt.Errorf("mechanism: %s: %w", id, err)
		}
		rel.Status = StatusOK
		lc.Status = StatusOK
		if pp, isPredictor := pr.Kind.(kind.Predictor); isPredictor {
			// The window's models: kept in its ledger charge (never
			// published), and the release's current ones from now on.
			if lc.Model, err = pp.ModelState(merged); err != nil {
				return Outcome{}, fmt.Errorf("mechanism: %s: model state: %w", id, err)
			}
			m, err := pp.Model(lc.Model)
			if err != nil {
				return Outcome{}, fmt.Errorf("mechanism: %s: models: %w", id, err)
			}
			r.setModel(w.Stream, pr.Config.Name, w.Start, period, m)
		}
		lc.Charges = pr.Noise
		if lc.RDP, err = chargeCurve(pr); err != nil {
			return Outcome{}, fmt.Errorf("accountant: %s: %w", id, err)
		}
		r.addKL(acctKey{lc.Stream, lc.Period}, mechanismsOf(lc.Charges))
	} else {
		rel.Status = StatusBudgetExhausted
		lc.Status = StatusBudgetExhausted
	}
	rel.EpsilonSpent = acct.Spent(ps.Budget.Delta)
	return r.outcome(rel, lc, fit)
}

// chargeCurve is the RDP curve of one charge of pr.
func chargeCurve(pr plan.Release) ([]float64, error) {
	curve := accountant.ZeroCurve()
	for _, m := range pr.Mechanisms {
		c, err := m.Curve()
		if err != nil {
			return nil, err
		}
		curve = curve.Add(c)
	}
	return curve, nil
}

// decideRunning decides one window of a continual release (kind.Running):
// the horizon's charge is tried at its first decided window, and the
// horizon's later windows charge nothing and continue its run, or are
// refused with it. The run steps with the window's exact statistic and
// fresh noise, and the step log goes into the ledger charge (with the
// whole budget logic, the same filter as every release: whether a window
// is charged depends on the configuration and earlier charges only).
func (r *Releaser) decideRunning(ps *plan.Stream, pr plan.Release, rp kind.Running, acct *accountant.Account,
	merged kind.Merged, rel schema.Release, lc schema.LedgerCharge) (Outcome, error) {
	id := rel.ReleaseID
	h, step := r.horizonStep(ps, rp, rel.WindowStart)
	rs, err := r.runFor(rel.Stream, pr, rp, h)
	if err != nil {
		return Outcome{}, fmt.Errorf("continual: %s: %w", id, err)
	}
	rel.Horizon, rel.HorizonWindow = int32(rp.Horizon()), int32(step+1)
	switch {
	case rs == nil || step < rs.run.Steps():
		rel.Status, lc.Status = StatusSkipped, StatusSkipped
	case rs.refused:
		// The horizon's charge was refused: so is each of its windows,
		// counted as Restore counts them.
		acct.Refused++
		rel.Status, lc.Status = StatusBudgetExhausted, StatusBudgetExhausted
		lc.ContinualFactor = rp.Factor()
	default:
		// The horizon is charged at its first window in each budget
		// period it spans: a period's account must hold every
		// mechanism that touches its windows' data.
		if !rs.charged || rs.period != lc.Period {
			ok, err := acct.Try(ps.Budget, pr.Mechanisms)
			if err != nil {
				return Outcome{}, fmt.Errorf("accountant: %s: %w", id, err)
			}
			if !ok {
				rs.refused = true
				rel.Status, lc.Status = StatusBudgetExhausted, StatusBudgetExhausted
				lc.ContinualFactor = rp.Factor()
				break
			}
			rs.charged, rs.period, rs.charges = true, lc.Period, pr.Noise
			lc.Charges = pr.Noise
			if lc.RDP, err = chargeCurve(pr); err != nil {
				return Outcome{}, fmt.Errorf("accountant: %s: %w", id, err)
			}
			r.addKL(acctKey{lc.Stream, lc.Period}, mechanismsOf(lc.Charges))
		} else {
			// Charged at the horizon's first window: nothing more
			// (an ok charge without charges; Restore applies none).
			lc.RDP = accountant.ZeroCurve()
		}
		l, err := rs.run.Release(merged, step, r.noise, &rel)
		if err != nil {
			return Outcome{}, fmt.Errorf("mechanism: %s: %w", id, err)
		}
		lc.ContinualFirst, lc.ContinualX, lc.ContinualZ, lc.ContinualFactor = int32(l.First), l.X, l.Z, l.Factor
		rel.Status, lc.Status = StatusOK, StatusOK
	}
	rel.EpsilonSpent = acct.Spent(ps.Budget.Delta)
	return r.outcome(rel, lc, nil)
}

// outcome encodes a decided release and its ledger charge, in chunks when
// the release is too large for one ledger record.
func (r *Releaser) outcome(rel schema.Release, lc schema.LedgerCharge, fit kind.Fit) (Outcome, error) {
	id := rel.ReleaseID
	payload, err := schema.EncodeRelease(rel)
	if err != nil {
		return Outcome{}, fmt.Errorf("encode release %s: %w", id, err)
	}
	// Every record says what its charge gives a linear adversary (0 for
	// an empty charge), before its size is measured.
	r.setKL(&lc)
	var chunks [][]byte
	if limit, err := r.chunkBytes(lc); err != nil {
		return Outcome{}, err
	} else if len(payload) > limit {
		if chunks, err = encodeChunks(rel, limit); err != nil {
			return Outcome{}, err
		}
		payload = chunks[0]
	}
	lc.Payload = payload
	lb, err := schema.EncodeLedgerCharge(lc)
	if err != nil {
		return Outcome{}, fmt.Errorf("encode ledger charge %s: %w", id, err)
	}
	return Outcome{Release: rel, Charge: lc, Ledger: lb, Chunks: chunks, fit: fit}, nil
}

// chunkBytes is the largest release payload (a whole release, or a chunk)
// whose ledger records, a charge like lc or a chunk record, fit in
// recordBytes.
func (r *Releaser) chunkBytes(lc schema.LedgerCharge) (int, error) {
	n, err := schema.LedgerPayloadLimit(lc, r.recordBytes)
	if err != nil {
		return 0, fmt.Errorf("ledger records of %s: %w", lc.ReleaseID, err)
	}
	return n, nil
}

// encodeChunks splits rel into chunks whose payloads are at most limit
// bytes (schema.SplitRelease) and encodes them.
func encodeChunks(rel schema.Release, limit int) ([][]byte, error) {
	parts, err := schema.SplitRelease(rel, limit)
	if err != nil {
		return nil, fmt.Errorf("release %s does not fit in Kafka records: %w", rel.ReleaseID, err)
	}
	if len(parts) < 2 {
		return nil, fmt.Errorf("release %s: larger than %d bytes, yet not split", rel.ReleaseID, limit)
	}
	out := make([][]byte, len(parts))
	for i, p := range parts {
		if out[i], err = schema.EncodeRelease(p); err != nil {
			return nil, fmt.Errorf("encode chunk %d of release %s: %w", i, rel.ReleaseID, err)
		}
	}
	return out, nil
}
