// Package mechanism is the home of dpstream's differential-privacy
// mechanisms: the noise they add, the calibration of that noise from a
// release's configuration, and the releases themselves over one window. It
// holds no code; its subpackages each have one job. A newcomer's map:
//
//   - noise: the randomness (Source, CryptoSource, SeededSource), the exact
//     discrete Laplace and Gaussian samplers behind Sampler (New, SourceOf),
//     their calibration (DiscreteGaussianSigma, AnalyticGaussianSigma, the
//     zCDP conversion, the granularity method), and Component, one noise
//     addition of a release and what the accountant charges for it. Every
//     method below uses it.
//   - aggregate: count, sum, mean and histogram (one to three fields,
//     optional per-cell cap): Spec, Calibrate, Release (release.go;
//     histogram.go for AutoBins and CellCount; quantize.go for exact sums);
//     the variance release (CalibrateVariance, ReleaseVariance; variance.go)
//     and UnitBounds, a unit's per-key bounds L, L0, c (variance_bounds.go).
//   - quantile: quantiles by Google's tree method: Tree and Counts (the
//     exact sparse leaf histogram), Spec, Calibrate, Release, RankBound.
//   - density: the orthogonal-series density: Spec, Calibrate, Release,
//     AutoTerms.
//   - rr: randomized response: the producers' local mechanism (Mechanism,
//     Randomizer, Debias; local.go) and the release that adds central noise
//     and debiases (Spec, Calibrate, Release; release.go).
//   - synthetic: synthetic samples drawn from a released histogram or
//     density (Histogram, Density).
//   - regression: linear regression: exact sufficient statistics (Scaling,
//     Stats; stats.go); SSP, AdaSSP, OPS and AdaOPS (Spec, Calibrate,
//     Release; regression.go; OPSGamma in opsgamma.go); private model
//     selection by penalized constrained least squares (pcls.go).
//   - pdp: per-instance DP certificates: GaussianRho, LaplaceEpsilon,
//     Account, OPSPrivacyLoss, OPSLeaveOneOut, Summary.
//   - selection: private partition selection, which keys of a window a
//     per-key release may publish, from each key's distinct-unit count:
//     Laplace or Gaussian thresholding and the optimal mechanism of
//     Desfontaines et al. 2022 (Params, New, Selector: Keep, Noisy,
//     Probability, UnitsFor, Component).
//   - keyed: per-key counts, sums and means of a group_by release under a
//     unit's L0/L∞ bounds (Bounds, Spec, Calibrate, Calibration.Release).
//   - continual: running totals over windows by matrix factorization
//     (per_window, tree, sqrt, blt): NewPlan with the exact sensitivity
//     for units in at most k windows, Auto, and a Releaser whose state
//     can be saved and restored (not yet wired into a kind; issue 14).
//
// The dependencies run one way: noise depends on nothing else here;
// aggregate on noise; density, rr, synthetic, quantile and keyed on noise
// and aggregate (shared constants, the bin edges, the histogram path, the
// unit bounds, the quantizers); regression, pdp and selection on noise
// only; continual on nothing here (its callers supply the noise).
// internal/stattest holds the statistical test helpers their tests share.
//
// # Privacy unit and neighbouring relation
//
// Every guarantee stated in these packages is for the add/remove-one-unit
// relation of SPEC section 0: two windows are neighbours when one is the
// other plus or minus all of one privacy unit's events. The guarantees rely
// on two bounds that the accumulate stage enforces before any statistic
// reaches a mechanism: each unit keeps at most L = Spec.MaxContributions
// events per window (chosen without looking at their values), and every
// value is clamped to [Spec.Lo, Spec.Hi]. Sensitivities are derived from
// those bounds only; nothing is assumed about producers.
//
// # Data independence
//
// Each method's Calibrate sees only its Spec (configuration), never data,
// so the noise scale and therefore the privacy charge the accountant
// records are fixed before the data is looked at (SPEC section 1). Release
// is the only function that touches data.
//
// The packages import only the standard library and gonum, so they can be
// tested and reused without Kafka.
package mechanism
