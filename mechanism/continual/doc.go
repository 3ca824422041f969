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
// releases C·x + z with z Gaussian, i.i.d. σ per coordinate, and publishes
// B·(C·x + z) = A·x + B·z, pure post-processing. So
//
//   - privacy: releasing C·x + z with ‖C·(x − x')‖₂ ≤ Δ for neighbours is
//     the Gaussian mechanism: ρ = Δ²/(2σ²)-zCDP for the whole horizon
//     (Bun & Steinke 2016, Prop. 1.6), whatever T;
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
//     with r_0 = 1, r_j = Σ_i ω_i·λ_i^{j−1}, so the correlated noise
//     (C⁻¹z)_t = z_t + Σ_i ω_i·b_i needs only d buffers
//     b_i ← λ_i·b_i + z_t; B = A·C⁻¹. Its d = 3 parameters are fitted for
//     the horizon by Nelder–Mead on Δ²·max_t ‖B_t‖² at k = 1
//     (deterministic, data-independent; within 0.3% of sqrt at T = 1024).
//     C = (C⁻¹)⁻¹ is again Toeplitz (its generating function is rational)
//     and Δ is computed from its exact coefficients, so a poor fit costs
//     accuracy, never privacy. The fit is not the paper's optimizer.
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
// contribution to the pattern is at most its k largest entries. An upper
// bound is a valid sensitivity (it overstates the noise, never the
// privacy); Plan reports whether its value is exact, and the greedy lower
// bound, so the slack is visible.
//
// # Noise and arithmetic
//
// The core is float64. For per_window and tree, C is a 0/1 matrix, so C·x
// is an integer vector and integer discrete Gaussian noise
// (noise.Sampler.DiscreteGaussian) gives the same ρ-zCDP (Canonne, Kamath
// & Steinke 2020, Thm. 4); the released totals are then sums of integers,
// exact in float64 up to 2^53. For sqrt and blt, C·x is irrational: discrete
// Gaussian noise on it would NOT be private (C·x + z with integer z and a
// non-integer shift between neighbours has disjoint supports — and B·(C·x+z)
// is an invertible image of it), so they need continuous Gaussian noise,
// and a production release must treat the floating-point arithmetic
// (granularity, as noise/grid.go does) before it ships; Plan.IntegerFactor
// tells the two cases apart.
package continual
