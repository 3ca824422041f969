// Package books keeps a release stage's privacy books: per stream and
// budget period ([Key]), the account its releases and answers are charged
// to (an [accountant.Account], the budget filter), the account of its
// answers alone (held against the stream's query share), and the
// capacity-bounded KL figures of its charges (package accountant/capacity:
// linear adversaries, KL), beside a cache of each mechanism's figures.
//
// # Guarantee
//
// The budget is a filter (SPEC.md section 1, DESIGN.md invariant 3): every
// charge is fixed by the configuration, never by the data, and whether it
// is accepted depends only on the charges before it. The charges accepted
// are therefore a data-independent sequence, whose non-adaptive
// composition the filter has checked to be within budget: the composition
// of every charge a period's account accepted is (ε_B, δ_B)-DP under
// add/remove one privacy unit ([accountant.Account.Try] states and proves
// it). This package makes no decision of its own: [Books.Charge] is one
// Try; [Books.ChargeAnswer] is a Try of the stream's budget and one of the
// query share (or, without a share, an Apply to the answers' account),
// committed together; [Books.Apply] adds a charge the filter accepted
// earlier (a ledger record) without consulting the budget, and must never
// be used for a new charge. The KL figures are reported, never charged:
// no decision reads them.
//
// # Receipts
//
// A charge is answered by one call, which returns a [Receipt]: whether it
// was allowed, the account's spent ε and curve after it, and the charge's
// own KL figures, which go into its ledger record. One call, because the
// budget decision and the books it changes are one fact: a charge is never
// accepted without its figures being composed into its period's (nor
// composed without being accepted), and an answer's charge is never left
// in one account after being rolled back from the other. The figures a
// receipt reports are the ones composed into the books, and a restore
// (Apply) composes the same figures from the ledger's charges, so a
// ledger record, the live budget state and a rebuilt one cannot disagree.
//
// The package imports only the accountant and its capacity figures: no
// Kafka, record schema or stage. Checkpoints are plain structs
// ([PeriodState], [AccountState]) that the caller maps to its records.
// [Books] is not safe for concurrent use.
package books
