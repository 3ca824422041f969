// Package mechanism holds dpstream's differential-privacy mechanisms: the
// noise they add, the calibration of that noise from a release's
// configuration, and the releases themselves (counts, sums, means and
// histograms over one window).
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
// get integer noise directly. Real-valued statistics (sums) use the
// granularity method: rounded to a power-of-two grid g, plus g times
// integer noise, so every released number is an exact multiple of g and
// none of its low-order bits depend on the data. Mironov (2012, "On
// significance of the least significant bits for differential privacy",
// CCS) showed that textbook floating-point samplers leak the true value
// through exactly those bits.
//
// The package imports only the standard library and gonum, so it can be
// tested and reused without Kafka.
package mechanism
