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
// An Account is a plain value (its curve is an array), so copying it takes a
// snapshot; [Account.MarshalBinary] and [Account.UnmarshalBinary] serialise
// it exactly, with a version, the order count and a checksum, for
// checkpoints.
//
// # Speed, and why it changes no result
//
// A release stage charges the same few mechanisms over and over, so the hot
// path (Try, Apply, Spent) is incremental and allocation-free, and computes
// nothing that an earlier charge already computed:
//
//   - Mechanism cache. Each valid [Mechanism] (a comparable struct, its own
//     key) maps to its composed contribution: its curve for Count
//     applications, its pure ε, its approx_dp ε and δ — the very values
//     [Mechanism.Curve] and [Mechanism.PureEpsilon] return, computed once by
//     the same code. The cache is bounded (sharded copy-on-write tables, a
//     full shard starts afresh), safe for concurrent use (lookups are one
//     atomic load), and its entries are never written after publication nor
//     handed out ([Mechanism.Curve] returns a copy). Equal mechanisms have
//     equal curves (== on floats differs from bit equality only for ±0, which
//     only unused, zero fields can hold), so a hit is exactly a recomputation.
//   - Incremental composition. An account keeps its composed curve and sums;
//     a charge adds its mechanisms' cached curves, summed left to right and
//     then added to the account's, the same additions in the same order as
//     before the cache ([Curve.Add]), so every account is bit-identical to
//     recomposing its history.
//   - Table-driven conversion. In the CKS bound
//     r + log1p(−1/α) − log(δ·α)/(α−1), the second term depends on the order
//     only and the third on the order and δ: both are precomputed (the third
//     per δ, for a few recent deltas), and the sum is evaluated as
//     (r + t1) − t2, the same two roundings as the formula, so the result is
//     bit-identical. The Bretagnolle–Huber test δ² + expm1(−r) > 0 is
//     skipped only where it is provably false: r > 4·(−log(1−δ²)) leaves a
//     margin a million times the rounding error while 1 − δ² > 1e-9 (beyond
//     that it is always evaluated). TestEpsilonFastMatchesReference and
//     TestAccountMatchesReference check all this against the previous code
//     on random inputs, and the golden vectors still pass unchanged.
//
// This package imports only the standard library. Its only global mutable
// state is the two caches above, which hold values computed from the
// arguments alone and so cannot change a result; [Orders] is a copy for
// callers, the computations use a private array.
package accountant
