package kind

import (
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// This file is the one seam of the state a release keeps across windows
// and restarts (a continual release's horizon and running totals,
// kind/running; a prediction release's current models, kind/prediction).
// The release stage knows such a release only as a Stateful plan and its
// State: it asks the State to decide each window, records what the State
// makes durable in the window's ledger charge (LedgerCharge.State) and its
// encoding in each checkpoint (ReleaseBooks.State), and gives both back to
// the State on a restart. The stage never looks inside; a kind with restart
// state touches nothing outside its own package.

// Statuses of a window's release (schema.Release.Status and
// LedgerCharge.Status) that a State decides.
const (
	// StatusOK: released; its charges (if any) are in its ledger charge.
	StatusOK = "ok"
	// StatusBudgetExhausted: refused, nothing published of the data.
	StatusBudgetExhausted = "budget_exhausted"
	// StatusSkipped: a window that can no longer be released (e.g. a
	// continual release's window that arrived after a later window of its
	// horizon was released); nothing is charged, refused or published of
	// it.
	StatusSkipped = "skipped"
)

// Stateful is implemented by the plans of releases that keep state across
// windows and restarts. It is the one capability through which the release
// stage reaches that state.
type Stateful interface {
	Plan
	// NewState returns the release's state before any window: what a
	// restart starts from before it replays the ledger (State.Replay) or
	// restores a checkpoint (State.Decode).
	NewState(c StateContext) (State, error)
}

// StateContext is what a State is placed by: the stream's schedule.
type StateContext struct {
	// Start is the stream's schedule start (unix ms, window-aligned; the
	// Unix epoch without one), to which, e.g., continual horizons align.
	Start int64
	// Size is the stream's window size in ms.
	Size int64
}

// StateWindow is the window a State decides.
type StateWindow struct {
	// Start and End are the window's bounds (unix ms).
	Start, End int64
	// Period is the window's budget period (0 for a lifetime budget): the
	// account Budget charges.
	Period int64
}

// Budget is the stage's accountant for one window of one release.
type Budget interface {
	// Charge offers charges to the account of the window's budget period:
	// true when the budget holds them, and then they are applied (and the
	// stage records them in the window's ledger charge, in order); false
	// when it refuses them, counted as a refusal. An error is the
	// accountant's (a malformed charge), and stops the decision.
	Charge(charges []Charge) (bool, error)
	// Refuse counts a refusal in the window's account without offering a
	// charge (a window of a horizon whose charge was refused).
	Refuse()
}

// Decision is what a State decided of one window.
type Decision struct {
	// Status is StatusOK, StatusBudgetExhausted or StatusSkipped. Only an
	// ok decision may have had Budget accept charges. (The charges are
	// those Budget accepted: the stage records them itself, so that the
	// ledger holds exactly what the account applied.)
	Status string
	// State is what the window made durable of the State (nil for none):
	// the stage writes it in the window's ledger charge
	// (LedgerCharge.State), which is durable before the release is
	// published, and a restart gives it back to State.Replay. It is the
	// kind's own encoding, and may hold PRE-NOISE DATA: it is never
	// published.
	State []byte
	// Fit is what the release's per-instance DP certificates need of the
	// data (Plan.Release's; nil for most kinds).
	Fit Fit
}

// State is a Stateful release's state across windows and restarts. The
// release stage calls it for its release only, one call at a time.
//
// Guarantees the kind promises:
//
//   - The budget filter (DESIGN invariant 3): in Window, whether Budget is
//     asked for a charge, which charges, and whether a refusal is counted
//     depend on the configuration and on the State as earlier windows,
//     charges and refusals left it — never on the window's data. Window
//     calls Budget.Charge before it looks at any data-dependent value of m,
//     and draws noise only after the budget accepted what covers it.
//   - Live equals rebuilt: a State that replays the ledger charges of its
//     release (Replay, in ledger order), or decodes a checkpoint of a State
//     (Decode) and replays the charges after it, decides every later
//     window, and encodes, exactly as the State that made them.
//   - Noise is drawn once: Replay and Decode never draw noise, and what a
//     window's release depends on is in its Decision.State, durable before
//     it is published.
type State interface {
	// Window decides one window of the release from its merged statistics
	// m (Plan.Merge's): it asks b for the window's charges (if any), draws
	// noise from sampler, fills rel's data fields (the stage sets the
	// identity, status and budget fields) and returns its Decision. On an
	// error nothing of the window is published; charges b accepted stay
	// applied (the stage stops and rebuilds its books from the ledger).
	Window(w StateWindow, m Merged, b Budget, sampler noise.Sampler, rel *schema.Release) (Decision, error)
	// Replay applies one valid, non-duplicate ledger charge of the
	// release, in ledger order: a window's (with the Decision.State that
	// Window made, or the legacy fields an older version wrote:
	// LedgerCharge.ContinualFirst/X/Z/Factor and Model), or an answer's
	// (LedgerCharge.IsAnswer). A charge the State cannot use — made under
	// another configuration, or by another kind of release of the same
	// name — is dropped as the live State would have dropped it; an error
	// is a failure of the kind itself and stops the restore.
	Replay(lc schema.LedgerCharge) error
	// DuplicateCost is what a second, different valid charge lc of a
	// window already decided costs beyond its own recorded charges
	// (DESIGN invariant 8: both answers may have been published): nil for
	// most releases; for a continual window charged by its horizon, the
	// horizon's charge again.
	DuplicateCost(lc schema.LedgerCharge) []schema.NoiseComponent
	// Encode returns the State for a checkpoint (ReleaseBooks.State; nil
	// when it holds nothing worth keeping). May hold PRE-NOISE DATA.
	Encode() ([]byte, error)
	// Decode replaces the State with a checkpoint's: rb.State as Encode
	// returned it, or the legacy rb.Run or rb.Model that checkpoints
	// written before ReleaseBooks.State hold. A state of another
	// configuration or kind is dropped (the State stays as NewState made
	// it); an error is a state the kind cannot read exactly, and fails the
	// restore (a checkpoint's state decides budget).
	Decode(rb schema.ReleaseBooks) error
}

// Answerer is the query seam: the State of a release whose windows train
// models that answer queries (kind/prediction) implements it, and the
// release stage reaches it only through that State (a type assertion on
// the State that Stateful.NewState returned), never through the Plan.
// The stage keeps what every query shares — the request ids answered, the
// requests topic's offset, the accounts — and the State what the models
// decide: the query's validity, which window's models answer, the
// release's limit on answers per window, the answer's charges and its
// noise. It is separate from State because only some States answer
// queries, and it is the one seam beside Stateful that the stage names.
type Answerer interface {
	// Answer decides one query q from the release's current models: it
	// checks q against the configuration (QueryInvalid), finds the models
	// that answer (QueryNoModel when none), refuses past the release's
	// limit (StatusBudgetExhausted with a Reason), asks b for the answer's
	// charges — fixed by the configuration and q.Op — and only then draws
	// the answer's noise and counts the answer against the limit. Whether a
	// query is answered depends on the configuration, the request and
	// earlier answers and charges only (the budget filter).
	Answer(q Query, b QueryBudget, sampler noise.Sampler) (QueryDecision, error)
}

// Query statuses of QueryDecision beyond StatusOK and
// StatusBudgetExhausted.
const (
	QueryInvalid = schema.PredictInvalid
	QueryNoModel = schema.PredictNoModel
)

// QueryBudget is the stage's accountant for one query.
type QueryBudget interface {
	// Charge offers an answer's charges to the stream's account of budget
	// period (the answering models' window's period), and to its query
	// share: true when both hold them, and then they are applied; false
	// (and nothing is applied or counted) when either refuses.
	Charge(period int64, charges []Charge) (bool, error)
}

// QueryDecision is what a State decided of one query.
type QueryDecision struct {
	// Status is StatusOK, QueryInvalid, QueryNoModel or
	// StatusBudgetExhausted.
	Status string
	// Reason says why a query was not answered; empty when QueryBudget
	// refused it (the stage says which budget).
	Reason string
	// Window and Period are the answering models' window start and its
	// budget period (0 without models). (The charges of an ok answer are
	// those QueryBudget accepted: the stage records them itself.)
	Window, Period int64
	// Answer is the private answer (ok only).
	Answer Answer
}
