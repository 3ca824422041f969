// Package aggregate holds the count, sum, mean and histogram releases (one
// to three fields, optional per-cell cap) of SPEC sections 4.1 and 4.2:
// Spec, Calibrate and Release (release.go), the histogram's bins and cells
// (histogram.go), the exact fixed-point sums (quantize.go), and the
// variance release with its per-key unit bounds (variance.go,
// variance_bounds.go; CalibrateVariance states its guarantee). Calibrate
// states each kind's guarantee (ε-DP with Laplace noise, (ε, δ)-DP with
// Gaussian noise, under add/remove of one privacy unit; see package
// mechanism) and Release its post-processing.
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
// Calibrate).
package aggregate
