package release

import (
	"errors"
	"fmt"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/accountant/books"
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
	streams map[string]*plan.Stream
	noise   noise.Sampler
	// decided is each release's high-water mark: the latest window start
	// decided (charged, refused or skipped), by stream and release. A
	// stream's windows are decided in the order of their starts (the
	// Merger completes a stream's windows in order and Due returns them
	// oldest first; see ReleaseWindow), so a window at or before the mark
	// was decided already, or can no longer be: it is never decided
	// again. A mark per release, not an id per window ever decided, keeps
	// the state (and the checkpoint) independent of history.
	decided map[runKey]int64
	// answeredIDs are the ids of the answers decided since the last
	// checkpoint (MarkCheckpoint): a request id sent twice in that time is
	// answered once. Requests are read in offset order and never decided
	// again below requestNext, so a restart never answers a request twice
	// whatever this set forgets.
	answeredIDs map[string]struct{}
	books       *books.Books // the accounts, per stream and budget period
	// states are the state each release of a Stateful plan keeps across
	// windows and restarts (kind.State), by stream and release name:
	// created when first needed (state), advanced by ReleaseWindow and
	// Answer, rebuilt by Restore and RestoreState.
	states map[runKey]kind.State
	// starts are the streams' schedule starts (SetStart), by which the
	// states place their windows (kind.StateContext).
	starts map[string]int64
	// recordBytes is the largest ledger record a release may need
	// (plan.MaxRecordBytes; tests lower it): a release whose ledger
	// records would be larger is split into chunks (chunkBytes).
	recordBytes int
	// requestNext is the requests topic's offset after the last request
	// answered in the ledger, rebuilt by Restore.
	requestNext int64
}

type runKey struct{ stream, release string }

// StatusSkipped is the status of a window a release's state skipped
// (kind.StatusSkipped): e.g. a continual release's window that arrived
// after a later window of its horizon was released, so that its data can
// no longer enter the running totals; nothing is charged or published of
// it.
const StatusSkipped = kind.StatusSkipped

// SetStart fixes the schedule start of stream (unix ms, window-aligned;
// ledger.StreamStarts) by which its releases' states place their windows
// (kind.StateContext: continual horizons align to it, as the accumulate
// stage aligns max_windows' horizons). Without one they use the Unix
// epoch. It must be called before any window of the stream is decided or
// restored; the stream's states are started anew.
func (r *Releaser) SetStart(stream string, start int64) {
	if r.starts == nil {
		r.starts = map[string]int64{}
	}
	r.starts[stream] = start
	for k := range r.states {
		if k.stream == stream {
			delete(r.states, k)
		}
	}
}

// state returns the state of a release whose plan is kind.Stateful,
// starting it when it has none yet; nil (and no error) for a release not
// configured or not Stateful.
func (r *Releaser) state(stream, release string) (kind.State, error) {
	k := runKey{stream, release}
	if st, ok := r.states[k]; ok {
		return st, nil
	}
	ps, ok := r.streams[stream]
	if !ok {
		return nil, nil
	}
	for _, pr := range ps.Releases {
		if pr.Config.Name != release {
			continue
		}
		sp, ok := pr.Kind.(kind.Stateful)
		if !ok {
			return nil, nil
		}
		st, err := sp.NewState(kind.StateContext{Start: r.starts[stream], Size: ps.Config.Window.Size.Milliseconds()})
		if err != nil {
			return nil, fmt.Errorf("release %s/%s: state: %w", stream, release, err)
		}
		r.states[k] = st
		return st, nil
	}
	return nil, nil
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
	r := &Releaser{streams: map[string]*plan.Stream{}, noise: sampler, recordBytes: plan.MaxRecordBytes, books: books.New(keptPeriods)}
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
	r.decided, r.answeredIDs = map[runKey]int64{}, map[string]struct{}{}
	r.books.Reset()
	r.states = map[runKey]kind.State{}
	r.requestNext = 0
}

// setKL records in a ledger record the figures of the charge it holds,
// its receipt's: nil when the charge has none, 0 for a record without a
// charge (refused, skipped, a continual horizon's later window).
func setKL(lc *schema.LedgerCharge, rc books.Receipt) {
	kl, lin := 0.0, 0.0
	if len(lc.Charges) > 0 {
		if !rc.HasKL {
			lc.KL, lc.LinearKL = nil, nil
			return
		}
		kl, lin = rc.KL, rc.LinearKL
	}
	lc.KL, lc.LinearKL = &kl, &lin
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
	if lc.IsAnswer() {
		// A request id is answered once (since the last checkpoint: see
		// answeredIDs).
		_, dup = r.answeredIDs[lc.ReleaseID]
		r.answeredIDs[lc.ReleaseID] = struct{}{}
		r.requestNext = max(r.requestNext, lc.RequestOffset+1)
	} else {
		k := runKey{lc.Stream, lc.Release}
		hwm, ok := r.decided[k]
		dup = ok && lc.WindowStart <= hwm
		if !ok || lc.WindowStart > hwm {
			r.decided[k] = lc.WindowStart
		}
	}
	st, err := r.state(lc.Stream, lc.Release)
	if err != nil {
		return dup, fmt.Errorf("ledger charge %s: %w", lc.ReleaseID, err)
	}
	if !dup && st != nil {
		if err := st.Replay(lc); err != nil {
			return false, fmt.Errorf("ledger charge %s: %w", lc.ReleaseID, err)
		}
	}
	k := books.Key{Stream: lc.Stream, Period: lc.Period}
	r.books.Open(k)
	if lc.Status == StatusSkipped {
		return dup, nil
	}
	if lc.Status != StatusOK {
		r.books.Refuse(k)
		return dup, nil
	}
	// Every answer counts against the query budget too, as live (an
	// answer the ledger holds was within it when it was decided); a
	// duplicate answer only against the stream's, as its state does not
	// replay it either.
	answer := lc.IsAnswer() && !dup
	ms := mechanismsOf(lc.Charges)
	if dup && st != nil {
		// A second, different answer may cost more than its own charges
		// (e.g. a continual window's, which its horizon's charge covers
		// once): what its state says, an upper bound (DESIGN invariant 8).
		ms = append(ms, mechanismsOf(st.DuplicateCost(lc))...)
	}
	if len(ms) == 0 && !answer {
		return dup, nil
	}
	// The figures are recomputed from the charges rather than read from
	// the record: records written before they existed have none, and
	// this way a rebuilt state reports exactly what the live one did.
	if _, err := r.books.Apply(k, ms, answer); err != nil {
		return dup, fmt.Errorf("ledger charge %s: %w", lc.ReleaseID, err)
	}
	return dup, nil
}

// Decided reports whether a release id was decided: a window's release id
// (plan.ReleaseID) at or before its release's high-water mark, or the id
// of an answer decided since the last checkpoint (AnswerID). An id that
// parses as neither is not decided.
func (r *Releaser) Decided(id string) bool {
	if _, ok := r.answeredIDs[id]; ok {
		return true
	}
	stream, release, window, ok := plan.ParseReleaseID(id)
	if !ok {
		return false
	}
	hwm, ok := r.decided[runKey{stream, release}]
	return ok && window <= hwm
}

// Mark returns a release's high-water mark: the latest window start
// decided (ok false when none is).
func (r *Releaser) Mark(stream, release string) (int64, bool) {
	w, ok := r.decided[runKey{stream, release}]
	return w, ok
}

// AnsweredBefore reports whether the request at offset of the requests
// topic was decided: it is below RequestNext. A response on the responses
// topic to such a request needs no charge in the ledger read since a
// checkpoint.
func (r *Releaser) AnsweredBefore(offset int64) bool { return offset < r.requestNext }

// LatestPeriod returns the latest budget period of the stream that has an
// account (0 if none).
func (r *Releaser) LatestPeriod(stream string) int64 {
	p, _ := r.books.Latest(stream)
	return max(p, 0)
}

// State returns the budget state of a stream's period, stamped with now.
// ok is false for a stream not in the configuration.
func (r *Releaser) State(stream string, period int64, now time.Time) (schema.BudgetState, bool) {
	ps, ok := r.streams[stream]
	if !ok {
		return schema.BudgetState{}, false
	}
	s := r.books.Summary(books.Key{Stream: stream, Period: period}, ps.Budget.Delta)
	st := schema.BudgetState{
		Stream: stream, Period: period, ReleasesCharged: s.Charges, ReleasesRefused: s.Refused,
		EpsilonSpent: s.Spent, Delta: ps.Budget.Delta, EpsilonBudget: ps.Budget.Epsilon,
		EpsilonRemaining: max(ps.Budget.Epsilon-s.Spent, 0), UpdatedAt: now.UnixMilli(),
		KL: s.KL, LinearKL: s.LinearKL, ReleasesWithoutKL: s.WithoutKL,
	}
	if s.AllPure {
		st.PureEpsilon = &s.Pure
	}
	return st, true
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
// charge's noise components in the ledger record) or refuses
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
	bk := books.Key{Stream: w.Stream, Period: period}
	r.books.Open(bk)
	var out []Outcome
	for _, pr := range ps.Releases {
		id := plan.ReleaseID(w.Stream, pr.Config.Name, w.Start)
		k := runKey{w.Stream, pr.Config.Name}
		if hwm, ok := r.decided[k]; ok && w.Start <= hwm {
			// Decided already (a replayed window), or a window older
			// than one decided: never decided again.
			continue
		}
		o, err := r.decide(ps, pr, bk, w, id, period, now)
		if err != nil {
			return out, err
		}
		r.decided[k] = w.Start
		out = append(out, o)
	}
	return out, nil
}

// decide charges (or refuses) one release of a window and builds its
// outcome.
func (r *Releaser) decide(ps *plan.Stream, pr plan.Release, k books.Key, w Window, id string, period int64, now time.Time) (Outcome, error) {
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
	st, err := r.state(w.Stream, pr.Config.Name)
	if err != nil {
		return Outcome{}, err
	}
	if st != nil {
		return r.decideState(ps, st, k, w, merged, rel, lc)
	}
	// Budget is a filter (invariant 3): the charge depends only on the
	// configuration, so trying it reveals nothing about the data. A
	// release without a charge (a prediction release's window: its
	// answers are charged) costs nothing and is never refused.
	ok, rc := true, books.Receipt{}
	if len(pr.Mechanisms) > 0 {
		if rc, err = r.books.Charge(k, ps.Budget, pr.Mechanisms); err != nil {
			return Outcome{}, fmt.Errorf("accountant: %s: %w", id, err)
		}
		ok = rc.Allowed
	}
	var fit kind.Fit
	if ok {
		if fit, err = pr.Kind.Release(merged, r.noise, &rel); err != nil {
			return Outcome{}, fmt.Errorf("mechanism: %s: %w", id, err)
		}
		rel.Status = StatusOK
		lc.Status = StatusOK
		// The ledger records the mechanisms' parameters, from which the
		// curve is recomputed on a restore, not the 156-value curve.
		lc.Charges = pr.Noise
	} else {
		rel.Status = StatusBudgetExhausted
		lc.Status = StatusBudgetExhausted
	}
	rel.EpsilonSpent = r.books.Spent(k, ps.Budget.Delta)
	return r.outcome(rel, lc, fit, rc)
}

// decideState decides one window of a release that keeps state across
// windows (kind.Stateful): its State decides, asking the window's budget
// (windowBudget) for what it charges, and what it makes durable goes into
// the ledger charge (LedgerCharge.State), with exactly the charges the
// budget accepted.
func (r *Releaser) decideState(ps *plan.Stream, st kind.State, k books.Key, w Window,
	merged kind.Merged, rel schema.Release, lc schema.LedgerCharge) (Outcome, error) {
	id := rel.ReleaseID
	b := &windowBudget{r: r, budget: ps.Budget, key: k}
	d, err := st.Window(kind.StateWindow{Start: w.Start, End: w.End, Period: lc.Period}, merged, b, r.noise, &rel)
	if err != nil {
		if b.err != nil {
			return Outcome{}, fmt.Errorf("accountant: %s: %w", id, b.err)
		}
		return Outcome{}, fmt.Errorf("mechanism: %s: %w", id, err)
	}
	switch d.Status {
	case StatusOK:
	case StatusBudgetExhausted, StatusSkipped:
		if len(b.accepted) > 0 {
			// Applied to the account but not released: the ledger
			// could not rebuild the account. A kind's bug.
			return Outcome{}, fmt.Errorf("mechanism: %s: status %s after the budget accepted its charges", id, d.Status)
		}
	default:
		return Outcome{}, fmt.Errorf("mechanism: %s: status %q", id, d.Status)
	}
	rel.Status, lc.Status = d.Status, d.Status
	lc.Charges, lc.State = b.accepted, d.State
	rel.EpsilonSpent = r.books.Spent(k, ps.Budget.Delta)
	return r.outcome(rel, lc, d.Fit, b.rc)
}

// windowBudget is kind.Budget for one window of one release: the one place
// a kind's state reaches the accounting. A charge is offered to the
// window's stream-period books (books.Books.Charge: the filter, counting a
// refusal, and the figures composed when accepted), and what was accepted
// recorded for the ledger charge.
type windowBudget struct {
	r        *Releaser
	budget   accountant.Budget
	key      books.Key
	accepted []schema.NoiseComponent
	// rc is the window's receipt, for its ledger record's figures: those
	// of every accepted charge, composed (HasKL when each has them), as
	// they are of the record's charges; the zero receipt when none was
	// accepted (the figures of an empty charge are 0).
	rc      books.Receipt
	charged bool
	err     error
}

func (b *windowBudget) Charge(cs []kind.Charge) (bool, error) {
	ms := make([]accountant.Mechanism, len(cs))
	for i, c := range cs {
		ms[i] = c.Mechanism
	}
	rc, err := b.r.books.Charge(b.key, b.budget, ms)
	if err != nil {
		b.err = err
		return false, err
	}
	if !rc.Allowed {
		return false, nil
	}
	noise := make([]schema.NoiseComponent, len(cs))
	for i, c := range cs {
		noise[i] = c.Noise
	}
	b.accepted = append(b.accepted, noise...)
	if !b.charged {
		b.rc, b.charged = rc, true
		return true, nil
	}
	kl, lin, has := b.rc.KL+rc.KL, capacity.ComposeNonAdaptive(b.rc.LinearKL, rc.LinearKL), b.rc.HasKL && rc.HasKL
	b.rc = rc
	b.rc.KL, b.rc.LinearKL, b.rc.HasKL = kl, lin, has
	return true, nil
}

func (b *windowBudget) Refuse() { b.r.books.Refuse(b.key) }

// outcome encodes a decided release and its ledger charge, in chunks when
// the release is too large for one ledger record.
func (r *Releaser) outcome(rel schema.Release, lc schema.LedgerCharge, fit kind.Fit, rc books.Receipt) (Outcome, error) {
	id := rel.ReleaseID
	payload, err := schema.EncodeRelease(rel)
	if err != nil {
		return Outcome{}, fmt.Errorf("encode release %s: %w", id, err)
	}
	// Every record says what its charge gives a linear adversary (0 for
	// an empty charge), before its size is measured: its receipt's.
	setKL(&lc, rc)
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
