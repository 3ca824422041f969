// Package selection is private partition selection (SPEC section 6):
// deciding which keys of a window a per-key release may publish when the
// keys are not public, from each key's exact number n of distinct privacy
// units. Three methods are offered (Method): thresholding a discrete
// Laplace or discrete Gaussian noisy count (threshold.go), and the optimal
// mechanism of Desfontaines, Voss, Gipson & Mandayam 2022 (optimal.go);
// Auto picks among them from the configuration. New calibrates a Selector
// from Params alone (selection.go); Keep decides one key, Noisy also
// returns the noisy count of the thresholding methods, and Probability,
// UnitsFor, Threshold and Describe say what the calibration means for
// explain. Component is what the accountant charges: one noise.ApproxDP
// mechanism, (ε, δ)-DP as a whole, composed by basic composition.
//
// # Neighbouring relation and sensitivity
//
// Neighbours add or remove one privacy unit (all of its events in the
// window; package mechanism). The accumulate stage keeps each unit in at
// most L0 = MaxKeys keys per window, chosen without looking at values, so
// adding a unit raises n by exactly 1 on at most L0 keys: a set A of keys
// already present and a set B of keys it creates (n = 1), |A| + |B| ≤ L0.
// Keys absent from a window have n = 0 and are never released: a key is
// only ever looked at because some unit holds it, which is why no pure
// ε-DP selection can release a key held by one unit, and why every method
// has a δ.
//
// # The thresholding argument
//
// For the thresholding methods the output is the set of keys with
// n + Z ≥ τ together with their noisy counts n + Z, the Z independent. Let
// D be the smaller window and D′ = D plus the unit, M_T(·) the output
// restricted to D's keys, and E the event that no key of B is released
// (independent of M_T, P[not E] = 1 − (1 − p₁)^{|B|} ≤ |B|·p₁ with
// p₁ = P[Z ≥ τ − 1]). M_T is a post-processing of the noisy counts of D's
// keys, which move by 1 on |A| keys, so it is (ε, δ_N)-DP (δ_N = 0 for the
// discrete Laplace at t = L0/ε ≥ |A|/ε; the discrete Gaussian's δ_noise(|A|)).
// For every set S of outputs, S_T its outputs without keys of B:
//
//	P[M(D′) ∈ S] ≤ P[E]·P[M_T(D′) ∈ S_T] + P[not E]
//	             ≤ e^ε·P[M(D) ∈ S] + δ_N + P[not E],
//
// and, since P[M(D′) ∈ S] ≥ P[E]·P[M_T(D′) ∈ S_T] and
// P[M(D) ∈ S] ≤ min(1, e^ε·P[M_T(D′) ∈ S_T] + δ_N),
//
//	P[M(D) ∈ S] − e^ε·P[M(D′) ∈ S] ≤ max_x min(1, x + δ_N) − P[E]·x ≤ δ_N + P[not E].
//
// So the selection, noisy counts included, is (ε, δ_N + |B|·p₁)-DP, and
// the δ calibrated is the maximum over |A| = k of δ_N(k) + (L0 − k)·p₁:
// L0·p₁ for the discrete Laplace, and for the discrete Gaussian at most
// max(δ_N(1), p₁) when L0 = 1 (see Gaussian).
//
// # Reusing the noisy count
//
// The noisy count n + Z of a released key is part of the output the
// guarantee covers, so a count_units release that publishes it spends
// nothing beyond the selection's charge (Noisy). It is biased upwards for
// keys near τ: a key is released only when its noise carried it over.
//
// # Exactness
//
// The noise is exact discrete noise (package noise), compared with an
// integer threshold; the optimal method's coin is an exact Bernoulli of
// the float64 π(n), and those float64 values are checked against the
// (ε, δ) inequalities with rigorous rounding margins (checkPi). Tail
// probabilities are exact closed forms (discrete Laplace) or sums with
// bounded truncation (discrete Gaussian), raised by a relative 1e-10 where
// they are compared with a δ.
//
// # Cost
//
// A Selector holds a few numbers, plus for Optimal the table of π up to the
// n where it reaches 1: about (2/ε′)·ln(1 + ε′/(2δ′)) float64 values with
// ε′ = ε/L0 and δ′ = δ/L0 (24 values at ε = 1, δ = 1e-5, L0 = 1; 2166 at
// L0 = 100; at most 2^20, 8 MiB, beyond which New refuses). Keep costs one noise
// draw or one coin; calibration takes well under a second (the Gaussian
// tries 11 splits when L0 > 1).
package selection
