// Package pdp computes per-instance differential privacy (pDP)
// certificates (SPEC section 4.6; Wang 2019, "Per-instance differential
// privacy"): how much privacy one particular unit loses in one particular
// data set, for the Gaussian, Laplace and OPS mechanisms (GaussianRho,
// LaplaceEpsilon, OPSPrivacyLoss, OPSLeaveOneOut), composed per unit by
// Account and summarized by Summary. A certificate is not a DP guarantee
// and is confidential (DESIGN invariant 6); see pdp.go.
package pdp
