// Package mechanism holds dpstream's differential-privacy mechanisms: the
// noise they add, the calibration of that noise from a release's
// configuration, and the releases themselves over one window. A newcomer's
// map, by release kind:
//
//   - count, sum, mean, histogram (one to three fields, optional per-cell
//     cap): Spec, Calibrate, Release (release.go; histogram.go for
//     AutoBins and CellCount; quantize.go for exact sums);
//   - orthogonal-series density: DensitySpec, CalibrateDensity,
//     ReleaseDensity, AutoTerms (density.go);
//   - randomized response: the producers' local mechanism
//     RandomizedResponse, Randomizer, Debias (rr.go) and the release that
//     adds central noise and debiases, RRSpec, CalibrateRR, ReleaseRR
//     (rr_release.go);
//   - synthetic samples drawn from a released histogram or density:
//     SampleHistogram, SampleDensity (synthetic.go);
//   - linear regression: exact sufficient statistics RegressionScaling,
//     RegressionStats (regression_stats.go); SSP, AdaSSP, OPS and AdaOPS,
//     RegressionSpec, CalibrateRegression, ReleaseRegression
//     (regression.go; OPSGamma in opsgamma.go); private model selection
//     by penalized constrained least squares (pcls.go);
//   - per-instance DP certificates: PDPGaussianRho, PDPLaplaceEpsilon,
//     PDPAccount, OPSPrivacyLoss, OPSLeaveOneOut, PDPSummary (pdp.go);
//   - the noise itself: Noise, NewNoise, Source (noise.go; exact samplers
//     in exact.go; discrete Gaussian calibration in discrete.go; the
//     granularity method in grid.go).
//
// # Privacy unit and neighbouring relation
//
// Every guarantee stated in this package is for the add/remove-one-unit
// relation of SPEC section 0: two windows are neighbours when one is the
// other plus or minus all of one privacy unit's events. The guarantees rely
// on two bounds that the accumulate stage enforces before any statistic
// reaches this package: each unit keeps at most L = Spec.MaxContributions
// events per window (chosen without looking at their values), and every
// value is clamped to [Spec.Lo, Spec.Hi]. Sensitivities are derived from
// those bounds only; nothing is assumed about producers.
//
// # Data independence
//
// Calibrate sees only a Spec (configuration), never data, so the noise scale
// and therefore the privacy charge the accountant records are fixed before
// the data is looked at (SPEC section 1). Release is the only function that
// touches data.
//
// # Secure noise
//
// All noise is exact discrete noise (SPEC section 2; DESIGN invariant 4):
// the discrete Laplace and the discrete Gaussian, sampled by the algorithms
// of Canonne, Kamath & Steinke 2020 ("The Discrete Gaussian for
// Differential Privacy", NeurIPS) with integer arithmetic only, from
// crypto/rand (CryptoSource) or, in tests, a seeded Source. Counts and bins
// get integer noise directly. Mironov (2012, "On significance of the least
// significant bits for differential privacy", CCS) showed that textbook
// floating-point samplers leak the true value through the low-order bits
// of the output; here every released number is an exact multiple of a
// power-of-two grid and none of its low-order bits depend on the data.
//
// # Exact sums
//
// Sums and means are not accumulated in floating point: the computed
// float64 sums of neighbouring windows can differ by more than the
// sensitivity the bounds give, and by an amount that depends on the order
// of summation (Casacuberta, Shoemate, Vadhan & Wagaman 2022, "Widespread
// Underestimation of Sensitivity in Differentially Private Libraries and
// How to Fix It", CCS). Instead each clamped value is quantized to an
// integer number of units of a power-of-two quantum fixed by the bounds
// (Quantizer), the integers are summed and merged exactly in int64 (Stats),
// and Release regrids the exact integer to a power-of-two output grid by
// an integer shift and adds grid × integer noise. The sensitivity Calibrate
// charges is the exact sensitivity of that released integer (see
// Calibrate). AddLaplace and AddGaussian remain for real-valued statistics
// computed in floating point, whose sensitivity must then account for the
// arithmetic that produced them.
//
// The package imports only the standard library and gonum, so it can be
// tested and reused without Kafka.
package mechanism
