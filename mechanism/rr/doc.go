// Package rr is k-ary randomized response (SPEC section 4.4): the local
// mechanism a producer applies to one person's category before the report
// leaves the producer (Mechanism, Randomizer: ε-local DP under replace-one,
// with an exact coin from package noise; local.go), the debiasing of report
// counts (Debias), and the randomized_response release (Spec, Calibrate,
// Release; release.go): central, user-level DP noise added to the counts of
// reports along the histogram path of package aggregate, then debiased.
package rr
