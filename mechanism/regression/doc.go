// Package regression is private linear regression (SPEC section 4.5): the
// exact sufficient statistics of a window (Scaling, Stats; stats.go);
// sufficient statistics perturbation (SSP), AdaSSP, one posterior sample
// (OPS) and AdaOPS (Spec, Calibrate, Release; regression.go, with OPSGamma
// in opsgamma.go); and private model selection by penalized constrained
// least squares (PCLSSpec, SelectSupport; pcls.go). Each file states its
// guarantees, proofs and sources (Wang 2018 for AdaSSP and AdaOPS; Lei et
// al. 2018 for PCLS; Canonne, Kamath & Steinke 2020 for the discrete
// Gaussian), under add/remove of one privacy unit.
package regression
