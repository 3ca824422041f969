// Package noise is the noise every dpstream mechanism adds, and its
// calibration: the randomness Source (CryptoSource in production,
// SeededSource in tests), the exact samplers behind Sampler, the (ε, δ)
// and zCDP calibration of the discrete Laplace and Gaussian
// (discrete.go, calibrate.go), the granularity method for real-valued
// statistics (grid.go), fixed-point grid arithmetic (fixed.go), and
// Component, one calibrated noise addition of a release: what the
// accountant charges (component.go). The guarantees are stated for the
// add/remove-one-unit relation (see package mechanism).
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
// AddLaplace and AddGaussian remain for real-valued statistics computed in
// floating point, whose sensitivity must then account for the arithmetic
// that produced them.
package noise
