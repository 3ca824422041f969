// Package capacity computes capacity-bounded differential privacy figures:
// restricted divergences between the output laws of an additive-noise
// mechanism on neighbouring inputs, against adversaries restricted to a
// function class (Chaudhuri, Imola & Machanavajjhala, "Capacity Bounded
// Differential Privacy", NeurIPS 2019, arXiv:1907.02159).
//
// It is DP maths only: no Kafka, configuration or stages. The rest of
// dpstream reports these figures beside the unrestricted ones; the budget
// the accountant enforces stays the unrestricted one.
//
// # Guarantee, and what it is not
//
// For a convex f with f(1) = 0, D_f(P‖Q) = sup_h E_P[h] − E_Q[f*(h)] over all
// measurable h (f* the convex conjugate). The restricted divergence takes
// the supremum over h in a class H only: D_f^H ≤ D_f. KL has f = x log x,
// f*(y) = e^{y−1}; optimising the constant of h leaves
//
//	KL^H(P‖Q) = sup_{h ∈ H} E_P[h] − log E_Q[e^h].
//
// Rényi of order α > 1 is R_α = log(1 + (α−1)D_{f_α})/(α−1) with
// f_α = (x^α − 1)/(α−1), and R^H_α is the same map applied to D^H_{f_α}. For
// a class that is a vector space containing the constants (all here) this
// equals log G/(α−1) with G = sup_h E_P[h] − (α−1)α^{−β}E_Q[h₊^β],
// β = α/(α−1) (the conjugate of x^α), and optimising the scale of h gives
//
//	R^H_α(P‖Q) = sup_{u ∈ H} β log E_P[u] − log E_Q[u₊^β] = −log min{E_Q[u₊^β] : u ∈ H, E_P[u] = 1}.
//
// (Over all u this is Hölder duality and returns R_α.) As α → 1, f_α → x log x
// and R^H_α → KL^H (checked in the tests for linear and poly2; for poly3 the
// limit is KL^poly2 = KL^poly3, see (4)).
//
// A figure ε against class H means: no adversary that scores the output
// with a function in H separates the two neighbouring output laws by more
// than ε in that divergence. It does NOT mean:
//   - post-processing invariance beyond the class: an adversary g∘M with M a
//     release transformation is covered only if g∘M is in H (linear maps
//     keep a linear adversary linear; nothing else here is closed);
//   - adaptive composition: only the non-adaptive composition of
//     [ComposeNonAdaptive] holds;
//   - anything about adversaries outside H: the unrestricted figure is the
//     guarantee against everyone, and it is what the budget enforces.
//
// Neighbouring relation: that of the charge (add/remove one unit, the
// mechanism's sensitivity being the largest change of its true value). The
// classes are invariant under x ↦ s − x, so the figure is the same in both
// directions of the pair, and under x ↦ x/scale, so continuous noise depends
// on sensitivity/scale only.
//
// # The table: closed form or numerical
//
// ε = Δ/b (Laplace), Δ/σ (Gaussian); discrete kinds on the integers with
// integer shift n.
//
//	noise             class     KL                          Rényi α > 1
//	laplace           linear    closed form (1)             closed form (3) if ε ≥ β, else numerical
//	laplace           poly2/3   numerical; poly3 = poly2 (4) numerical
//	gaussian          any       closed form ε²/2 (2)        numerical
//	discrete laplace  linear    closed form (5)             numerical
//	discrete laplace  poly2/3   numerical; poly3 = poly2     numerical
//	discrete gaussian any       numerical; poly3 = poly2     numerical
//
// (1) sup_a aε − log E[e^{aZ}], E[e^{aZ}] = 1/(1−a²) for Z ~ Lap(1), |a| < 1:
// the maximiser solves ε = 2a/(1−a²), a = (√(1+ε²) − 1)/ε, value
// √(1+ε²) − 1 − log((1+√(1+ε²))/2) ≈ ε²/4 for small ε, against the
// unrestricted ε + e^{−ε} − 1 ≈ ε²/2. At ε = 1: 0.225987 vs 0.367879.
//
// (2) The log-likelihood ratio of N(μ,σ²) to N(0,σ²) is linear in x, so the
// optimal h of the unrestricted KL is in every class: equal to the
// unrestricted Δ²/(2σ²).
//
// (3) With u = x − s, s ≥ 0: E_Q[(Z−s)₊^β] = Γ(β+1)e^{−s}/2, so the objective
// is β log(ε − s) + s − log(Γ(β+1)/2), stationary at s = ε − β. When ε > β
// that point lies inside the region where the formula holds, so it is a
// stationary point of the concave problem (see below), hence global:
// R = ε − β + β log β − log(Γ(β+1)/2).
//
// (4) A cubic term makes E_Q[e^h] infinite for every noise law here (tails
// e^{−|x|/b} or e^{−x²/(2σ²)}), so those adversaries score −∞: KL against
// poly3 equals KL against poly2, for every kind. The same holds for a
// positive quadratic coefficient under Laplace noise.
//
// (5) The two-sided geometric law P(k) ∝ r^{|k|}, r = e^{−1/b}, has MGF
// M(a) = (1−r)²/((1−re^a)(1−re^{−a})), |a| < 1/b. M'/M = n is, with
// y = e^a, r(n+1)y² − n(1+r²)y + r(n−1) = 0, whose larger root is the
// maximiser; the figure is a·n − log M(a). The continuous Laplace result
// does not carry over (at b = 1, n = 1: 0.240229 vs 0.225987), just as the
// unrestricted Laplace curve does not (see accountant.Mechanism).
//
// Unrestricted references (for "restricted ≤ unrestricted"): Laplace
// KL ε + e^{−ε} − 1 and Rényi (1/(α−1))log(α/(2α−1)e^{(α−1)ε} +
// (α−1)/(2α−1)e^{−αε}) (Mironov 2017); Gaussian ε²/2 and αε²/2; discrete
// kinds by summation.
//
// # Numerical method and its error
//
// Both objectives are concave maximisations in the adversary's
// coefficients: for KL, E_P[h] is linear and log E_Q[e^h] convex in the
// coefficients; for Rényi, E_Q[u₊^β] is convex in u (β > 1) and the
// constraint E_P[u] = 1 is affine (the constant is eliminated). So every
// local optimum is the global one and the optimiser cannot be trapped.
// E_P of a polynomial is exact (moments of the shifted noise); E_Q is a
// quadrature of the continuous density (adaptive Gauss–Kronrod 7/15,
// relative tolerance 1e−13, on the cells of a grid fine near 0 and
// geometric outward, split at the roots of u where u₊^β is not smooth) or a
// sum over the integers. Cells more than e^{−60} below the peak are
// dropped, but only beyond a proved bound after which the integrand
// decreases: for u of degree d with roots inside radius r,
// u₊^β e^{−|x|/b} decreases beyond r + (βd + 1)b. (Without that bound a
// far bump of u₊^β at |x| ≈ βd·b is missed and a cubic adversary looks
// stronger than it is; the α → 1 test catches exactly that.) The maximiser
// is Nelder–Mead with restarts, then one Newton step from central-difference
// derivatives.
//
// Error: any coefficient vector gives a lower bound on the supremum, so a
// numerical figure is below the true one by the optimisation gap plus the
// quadrature error. The gap is estimated by the Newton decrement
// ½gᵀ(−H)⁻¹g at the returned point ([Result.ErrEst], which adds 1e−10 for
// quadrature); it is exact for a quadratic and the objectives are smooth
// and concave near the optimum. The estimate is validated by the tests:
// every closed form is recovered by the optimiser to 1e−6 (observed
// agreement ~1e−12).
//
// # Discrete noise
//
// Computed directly, not carried over: the same variational problems with
// E_Q a sum over the integers (discrete Laplace normaliser (1+r)/(1−r);
// discrete Gaussian normaliser and variance by summation), the shift an
// integer number of grid steps. Non-integral sensitivities are rejected.
//
// # Sources
//
// Chaudhuri, Imola & Machanavajjhala 2019 (definitions, Theorem 4
// composition, Theorem 5 matrix mechanism, Figure 1); J. Imola's blog posts
// on the paper (statement of the composition theorem with the Minkowski-sum
// class); Nguyen, Wainwright & Jordan 2010 (variational form of f-divergences);
// Mironov 2017 (Rényi DP, unrestricted curves); SPEC.md section 5 (the linear
// KL derivation, re-derived above).
package capacity
