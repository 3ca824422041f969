// Package density is the orthogonal-series density release of SPEC section
// 4.3: noisy cosine-series coefficients of one clamped field over one
// window, post-processed into a proper density on a grid (Spec, Calibrate,
// Release, AutoTerms). Basis sums are exact fixed-point integers like the
// sums of package aggregate, and the noise is package noise's exact
// discrete noise; Calibrate states the guarantee (ε-DP or (ε, δ)-DP under
// add/remove of one privacy unit).
//
// Sources: Wasserman & Zhou 2010 ("A statistical framework for differential
// privacy", JASA, §5); Efromovich 1999 ("Nonparametric Curve Estimation",
// Springer, ch. 3). See density.go.
package density
