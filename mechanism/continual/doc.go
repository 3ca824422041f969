// Package continual is the mathematics of continual observation: releasing
// the running totals S_t = x_0 + … + x_t of a stream of per-window integer
// statistics x_0 … x_{T−1} (counts) under one privacy guarantee for the
// whole horizon of T windows, with error that grows polylogarithmically in
// T rather than linearly (issue 14). It holds no Kafka, config or stage
// code; the kinds build on it.
//
// # Factorization view
//
// The running totals are A·x with A the T×T lower-triangular matrix of
// ones. Every method here is a factorization A = B·C: the mechanism
// releases C·x + z, and publishes B·(C·x + z) = A·x + B·z, pure
// post-processing. For sqrt and blt the C actually used is a fixed-point
// Ĉ and B is B̂ = A·Ĉ⁻¹ (see "Noise and arithmetic"); every formula below
// holds for (Ĉ, B̂), and the accessors report Ĉ's Δ and B̂'s norms. So
//
//   - privacy: releasing C·x + z with ‖C·(x − x')‖₂ ≤ Δ for neighbours,
//     z discrete Gaussian of scale σ on a lattice containing C·x, is
//     ρ = Δ²/(2σ²)-zCDP for the whole horizon, whatever T;
//   - error: the released total at t is unbiased with variance
//     σ²·‖B_t‖² (B_t the t-th row of B), so the worst window has variance
//     σ²·max_t ‖B_t‖² = Δ²·max_t ‖B_t‖²/(2ρ) at fixed ρ.
//
// The methods (Method):
//
//   - per_window: C = I, B = A. Independent noise per window, summed. Max
//     variance σ²·T.
//
//   - tree: the binary tree (Dwork, Naor, Pitassi & Rothblum 2010; Chan,
//     Shi & Song 2011). C has one row per dyadic block [m·2^h, (m+1)·2^h)
//     that some prefix uses — m even and the block inside [0, T) (the right
//     child of a pair is never needed, its parent replaces it) — and B_t
//     sums the blocks of the binary decomposition of t+1, so
//     ‖B_t‖² = popcount(t+1). Honaker's estimator is not implemented.
//
//   - sqrt: C = B = A^{1/2} (Henzinger, Upadhyay & Upadhyay 2023, "Almost
//     Tight Error Bounds on Differentially Private Continual Counting",
//     SODA), the lower-triangular Toeplitz matrix with the coefficients of
//     (1 − x)^{−1/2}: c_j = binom(2j, j)/4^j (c_0 = 1, c_j = c_{j−1}·(2j−1)/(2j)).
//     ‖B_t‖² = Σ_{m≤t} c_m² and the squared column norms of C are both
//     at most Σ_{m<T} c_m² ≤ 1 + (1 + ln T)/π (Wallis: c_m² ≤ 1/(πm)),
//     about 1 + ln T/π, so at k = 1 the max variance is about
//     (1 + ln T/π)²/(2ρ) (3.27² / (2ρ) at T = 1024).
//
//   - blt: buffered linear Toeplitz (Dvijotham, McMahan, Pillutla, Steinke
//     & Thakurta 2024, "Efficient and Near-Optimal Noise Generation for
//     Streaming Differential Privacy"). C⁻¹ is lower-triangular Toeplitz
//     with r_0 = 1, r_j = Σ_i ω_i·λ_i^{j−1} (d buffers), B = A·C⁻¹. Its
//     d = 3 parameters are fitted for the horizon by Nelder–Mead on
//     Δ²·max_t ‖B_t‖² at k = 1 (deterministic, data-independent; within
//     0.3% of sqrt at T = 1024). C = (C⁻¹)⁻¹ is again Toeplitz (its
//     generating function is rational); its coefficients are rounded to
//     the fixed-point Ĉ like sqrt's, and Δ̂ is computed from Ĉ, so a poor
//     fit costs accuracy, never privacy. The fit is not the paper's
//     optimizer, and the paper's O(d) streaming does not apply here (see
//     Releaser).
//
// # Neighbouring relation and sensitivity
//
// Neighbours differ by adding or removing one unit. A unit contributes
// d_j ∈ [0, L] to window j, in at most k windows of the horizon (the
// participation pattern P = supp d, |P| ≤ k); removing it contributes −d.
// Sensitivity is Δ = sup ‖C·d‖₂ over such d.
//
// Claim: for a factor C with nonnegative entries (per_window, tree, sqrt;
// blt's fitted C is checked to be nonnegative when k > 1),
// Δ² = L²·max_{|P| = min(k,T)} Σ_{i,j∈P} G_ij with G = CᵀC.
// Proof sketch: G ≥ 0 entrywise, so ‖C·d‖² = dᵀGd = Σ_ij G_ij d_i d_j is
// nondecreasing in every d_j ≥ 0 (the sign of −d does not change the
// norm): the sup over d with support P is at d = L·1_P, and enlarging P
// only adds nonnegative terms, so the largest allowed |P| is optimal. □
//
// Special cases: k = 1 gives Δ = L·max_j ‖C e_j‖ (the largest column
// norm); k ≥ T gives Δ = L·‖C·1‖. For 1 < k < T the maximum is a densest-k
// subgraph problem on G; Plan solves it exactly by enumeration when there
// are at most maxEnumerate patterns, and otherwise uses the upper bound
// Σ_{i,j∈P} G_ij ≤ Σ_{i∈P} top_k(G_i) ≤ (sum of the k largest top_k(G_i)),
// where top_k(G_i) is the sum of the k largest entries of row i: each row's
// contribution to the pattern is at most its k largest entries. Beyond a
// horizon of maxGramHorizon windows, where G is not formed, per_window's
// pattern sum is k exactly (G = I) and the others use
// min(k²·max_j ‖C e_j‖², ‖C·1‖²): G_ij ≤ ‖C e_i‖·‖C e_j‖ (Cauchy–Schwarz)
// and monotonicity in P. An upper
// bound is a valid sensitivity (it overstates the noise, never the
// privacy); Plan reports whether its value is exact, and the greedy lower
// bound, so the slack is visible.
//
// # Noise and arithmetic
//
// Guarantee: for every method, the sequence of released integers
// w_0 … w_{T−1} (and so every published total, a function of w alone) is
// ρ = Δ̂²/(2σ²)-zCDP for the whole horizon under the neighbouring
// relation above (add or remove one unit: at most k windows, at most L in
// each), with exact integer noise and no floating point between the data
// and the release.
//
// Lattice. per_window and tree have a 0/1 factor, so C·x is an integer
// vector and the lattice step is γ = 1. The factors of sqrt and blt are
// irrational (c_j = binom(2j, j)/4^j; blt's C = Q/P), and so is C·x;
// integer noise on an irrational shift is not private (C·x + z and
// C·x' + z, z integer, have disjoint supports when C·(x − x') ∉ ℤ^T — and
// a float computation of C·x + z is not even a function of the output,
// which leaks through its rounding). So those methods use Ĉ with
// Toeplitz coefficients ĉ_j·γ, ĉ_j = round(c_j·2^F) integers, γ = 2^−F,
// F = fixedBits = 24 (see its comment for the quality and range
// trade-off: the worst window's variance moves by under 1e-8 relative at
// T = 1024). Then Ĉx/γ = (Σ_s ĉ_{t−s}·x_s)_t is an exact integer vector,
// computed in 128-bit arithmetic, which holds it for every int64 x at
// every allowed T (below 2^104), so no data, however large, makes a
// window unreleasable. The mechanism releases w = Ĉx/γ + z, z_t ~
// N_Z(0, (σ/γ)²) i.i.d. (noise.Sampler.DiscreteGaussian at
// Plan.LatticeScale(σ)); in real units γw = Ĉx + γz, discrete Gaussian
// noise of scale σ on the lattice γℤ.
//
// Sensitivity (proof sketch). Neighbours shift w by Ĉd/γ, an integer
// vector, with ‖Ĉd‖₂ ≤ Δ̂: Δ̂ is computed by the claim of the previous
// section applied to Ĉ itself (its Gram matrix, from the integer ĉ, whose
// entries and column norms are exact in float64 because Σĉ² < 2^53; the
// pattern sums' rounding is covered by an upward margin, so the float Δ̂
// is never below the exact one; nonnegativity, needed for k > 1, is
// checked on the integers ĉ). The discrete Gaussian N_Z(μ, s²) against
// N_Z(μ + n, s²), n an integer, has Rényi divergence n²/(2s²) of every
// order (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for
// Differential Privacy", Thm. 4: the normalizers agree because the shift
// is on the lattice); the T coordinates are independent, so the
// divergences add (Bun & Steinke 2016, Lemma 2.3):
// Σ_t (Ĉd)_t²/(2σ²) ≤ Δ̂²/(2σ²) = ρ. B̂·w is post-processing.
//
// Published totals. per_window: Σ_{s≤t} w_s; tree: the sum of the w of the
// blocks of the binary decomposition of t+1 (exact 128-bit integers,
// correctly rounded to float64: exact below 2^53). sqrt and blt:
// γ·(B̂w)_t with B̂ = A·Ĉ⁻¹, Ĉ⁻¹ by Toeplitz series inversion in float64
// (each product forced to round, so no FMA fusion makes it
// platform-dependent), applied to float64(w_s), each correctly rounded
// from the exact w_s. This float arithmetic acts on w only — the rounding
// of w is a deterministic function of w — so it is post-processing: it
// affects accuracy (relative rounding of order t·2^−53 on terms of w's
// size), never privacy. Totals are unbiased, E[γB̂w] = A·x, because
// B̂Ĉ = A up to that rounding.
//
// The factorizations are those of Henzinger, Upadhyay & Upadhyay 2023
// (sqrt) and Dvijotham, McMahan, Pillutla, Steinke & Thakurta 2024 (BLT);
// their O(d)-state BLT streaming applies to float noise generation and
// does not survive exact data arithmetic (see Releaser).
//
// Replay. Releaser.Next(x_t, z_t) is deterministic: the release stage
// logs each window's (x_t, z_t) and resumes after a crash by replaying the
// log into a fresh releaser (see Releaser for the ordering that keeps
// every published total and every draw unique). Plan.Fingerprint names
// the factor the log was made under.
package continual
