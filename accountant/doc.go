// Package accountant tracks the privacy loss of every stream with Rényi
// differential privacy (RDP) and enforces each stream's budget as a filter.
//
// # Model
//
// Every guarantee in this package is stated for the neighbouring relation
// dpstream uses everywhere (SPEC.md section 0): two inputs are neighbours when
// one is obtained from the other by adding or removing one privacy unit, that
// is, all of that unit's events. The one exception is k-ary randomized
// response, whose curve is for replace-one neighbours (see
// [RandomizedResponseCurve]).
//
// A mechanism M is (α, ε(α))-RDP (Mironov 2017, Def. 4) when, for all
// neighbours D, D', the Rényi divergence of order α between M(D) and M(D')
// is at most ε(α). A [Curve] holds ε(α) at each of the fixed [Orders].
// RDP composes additively (Mironov 2017, Prop. 1), so composing mechanisms
// is the element-wise sum of their curves ([Curve.Add], [Curve.Scale]).
// [Epsilon] and [Delta] convert a curve to (ε, δ)-DP with the bound of
// Canonne, Kamath & Steinke 2020 (Prop. 12), also Asoodeh et al. 2020
// (eq. 20), minimised over the orders.
//
// The reference implementation is Google's dp_accounting
// (python/dp_accounting in google/differential-privacy,
// rdp/rdp_privacy_accountant.py); the curves and conversions here reproduce
// its RdpAccountant with default orders, and the golden vectors in
// testdata/accounting.json come from it.
//
// # Ledger and budget
//
// The ledger stores each charge as a list of [Mechanism] values, which are
// enough to rebuild the curve. An [Account] is one stream's composed loss;
// [Account.Try] admits a charge only if the stream stays within its [Budget]
// afterwards (DESIGN.md section 6, invariant 3) and [Account.Apply] replays
// already-admitted charges when state is rebuilt from the ledger.
//
// This package imports only the standard library. It holds no global mutable
// state that the arithmetic depends on: [Orders] is a copy for callers, the
// computations use a private array.
package accountant
