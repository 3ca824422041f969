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
// # Interim floating-point noise
//
// The samplers behind Noise are, for now, textbook floating-point Laplace
// and Gaussian samplers. Mironov (2012, "On significance of the least
// significant bits for differential privacy", CCS) showed that the set of
// doubles such samplers can reach depends on the true value, which can leak
// it. They will be replaced, behind the same Noise interface, by exact
// discrete samplers (discrete Laplace, and the discrete Gaussian of Canonne,
// Kamath & Steinke 2020) with the granularity method of SPEC section 2.
// Until then dpstream does not yet meet DESIGN invariant 4 ("noise is
// secure"); the randomness itself already comes from crypto/rand.
//
// The package imports only the standard library and gonum, so it can be
// tested and reused without Kafka.
package mechanism
