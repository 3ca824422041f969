// Package quantile is the quantile release: differentially private
// quantiles of one clamped field over one window, per key (group_by) or
// for the whole window, by the tree method of Google's differential-privacy
// library (QuantileTree; go/dpagg/quantiles.go). The exact side is Tree,
// which maps a value to one of b^h equal-width leaves of [Lo, Hi], and
// Counts, a key's sparse leaf histogram of int64 counts that partials carry
// and merge by addition; the release side is Spec, Calibrate (the noise,
// its sensitivity from the unit's bounds L, L0 and c, with proof sketch,
// and the noise.Component the accountant charges) and Release (noisy node
// counts drawn lazily, a top-down search per rank, interpolation in the
// leaf, non-decreasing outputs, and a stated rank error bound, RankBound).
// Calibrate states the guarantee (ε-DP with Laplace noise, (ε, δ)-DP with
// Gaussian noise, under add/remove of one privacy unit; see package
// mechanism).
//
// Sources: Google's differential-privacy library, "Differentially Private
// Quantile Trees" (common_docs) and go/dpagg/quantiles.go; the exact
// discrete noise of Canonne, Kamath & Steinke 2020 (package noise). The
// error bound is derived in Release's documentation.
package quantile
