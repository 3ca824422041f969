package rr

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file holds the randomized_response release kind (SPEC section 4.4):
// the central, user-level DP release of the counts of locally randomized
// reports, debiased into estimates of the true category counts. The noise
// path is the histogram's (aggregate.Calibrate, aggregate.Release); this file adds only the
// configuration that maps onto it and the post-processing.

// Spec is the configuration of a randomized_response release: producers
// randomize a categorical field with k-ary randomized response of parameter
// P before publishing (Mechanism), the accumulate stage counts the
// reported categories among each unit's kept events, and the release adds
// central noise to those k counts and debiases them. Like Spec it is the
// only input to calibration (never the data: SPEC section 1).
type Spec struct {
	// Noise is noise.Laplace (ε-DP) or noise.Gaussian ((ε, δ)-DP): the
	// central noise added to the report counts.
	Noise noise.Kind
	// Epsilon is the central ε, finite and > 0.
	Epsilon float64
	// Delta is the central δ: in (0, 1) for Gaussian noise, 0 for Laplace.
	Delta float64
	// Categories is k, the number of categories, in [2, MaxBins]. The
	// counts are indexed as the producers' categories (Randomizer.Categories).
	Categories int
	// P is the producers' randomized response parameter p, in (0, 1): the
	// probability that a report is a uniform category instead of the true
	// one. It must be the p the producers use; debiasing with another p
	// biases every estimate. p = 1 is rejected: such reports carry no
	// information to debias.
	P float64
	// MaxContributions is L, the most events (reports) one privacy unit
	// keeps per window (enforced upstream), at least 1.
	MaxContributions int
	// BinCap is c, the most reports of one privacy unit counted in one
	// category per window (enforced upstream), in 1..L; 0 means no cap. As
	// Spec.BinCap: it lowers the L2 sensitivity (Gaussian noise) and leaves
	// the L1 sensitivity at L. See Release for what a binding cap does to
	// the debiasing.
	BinCap int
}

// LocalEpsilon returns the local privacy loss of one report,
// ε_local = log((1 − p + p/k)/(p/k)), the guarantee each report has against
// anyone who sees it before the central release (see Mechanism for
// the proof: replace-one, per report). It does not validate s; for p
// outside (0, 1] or k < 2 the value is meaningless (NaN or ±Inf).
func (s Spec) LocalEpsilon() float64 {
	return rrEpsilon(s.Categories, s.P)
}

// validate reports the first problem with s, wrapped in ErrInvalidSpec. The
// noise, budget, L and cap are checked again by the histogram's validation
// in Calibrate; checking them here too names the release kind in the
// message.
func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: randomized_response: "+format, append([]any{noise.ErrInvalidSpec}, args...)...)
	}
	if msg := noise.CheckPrivacyParams(s.Noise, s.Epsilon, s.Delta); msg != "" {
		return bad("%s", msg)
	}
	if s.Categories < 2 || s.Categories > aggregate.MaxBins {
		return bad("categories k must be in [2, %d], got %d", aggregate.MaxBins, s.Categories)
	}
	if !(s.P > 0 && s.P < 1) { // also rejects NaN
		return bad("randomized response p must be in (0, 1), got %v (p = 1 reports carry no information)", s.P)
	}
	if e := s.LocalEpsilon(); math.IsInf(e, 0) || math.IsNaN(e) {
		// p/k underflows: the release would report an infinite local ε.
		return bad("randomized response p = %v is too small for %d categories (p/k underflows; the local epsilon is infinite)", s.P, s.Categories)
	}
	if s.MaxContributions < 1 {
		return bad("max contributions per window must be >= 1, got %d", s.MaxContributions)
	}
	if s.BinCap < 0 || s.BinCap > s.MaxContributions {
		return bad("per-category cap must be in [0, %d] (0: none; at most max contributions), got %d", s.MaxContributions, s.BinCap)
	}
	return nil
}

// histogramSpec returns the histogram Spec whose noise the release uses: k
// unit-width bins on [0, k], one per category, with the same noise, budget,
// L and per-cell cap.
func (s Spec) histogramSpec() aggregate.Spec {
	return aggregate.Spec{
		Kind:             aggregate.KindHistogram,
		Noise:            s.Noise,
		Epsilon:          s.Epsilon,
		Delta:            s.Delta,
		Lo:               0,
		Hi:               float64(s.Categories),
		Bins:             s.Categories,
		MaxContributions: s.MaxContributions,
		BinCap:           s.BinCap,
	}
}

// Calibration is an Spec together with the noise that makes its release
// private. Build it with Calibrate: Release refuses one whose
// Components are not sufficient for its Spec.
type Calibration struct {
	Spec Spec
	// Components are what the accountant charges: exactly those of the
	// equivalent histogram calibration (one PurposeBins component, one
	// independent draw per category at the same Scale). Each maps to
	// accountant.Mechanism{Kind: string(c.Noise), Scale: c.Scale,
	// Sensitivity: c.Sensitivity}. The producers' local randomization is
	// not among them: it is a separate, local guarantee (see Release).
	Components []noise.Component

	// hist is the histogram Calibration the components came from; Release
	// releases through it, with Spec and Components taken from the fields
	// above so that what is drawn is what is charged.
	hist aggregate.Calibration
}

// Calibrate validates s and derives the central noise of a
// randomized_response release. It reads the spec only, never data, so the
// charge is data-independent.
//
// The noise is the histogram's (Calibrate) on k cells, one per category:
// the spec maps to Spec{Kind: KindHistogram, Lo: 0, Hi: k, Bins: k} with the
// same noise, ε, δ, L and per-cell cap c, and Calibrate returns that
// calibration's components unchanged, so the accountant charges a
// randomized_response release exactly as the equivalent histogram.
//
// Central guarantee: Release with the result is ε-DP (noise.Laplace) or
// (ε, δ)-DP (noise.Gaussian) under add/remove of one privacy unit, that is
// all of its reports in the window (SPEC section 0), given that the
// accumulate stage keeps at most L of a unit's events, chosen without
// looking at their values, and counts at most c of them in one category.
// Sensitivity, as for the histogram: the unit changes the report counts by
// k_j ≥ 0 with Σk_j ≤ L and k_j ≤ c, so Δ1 = L and
// Δ2 = sqrt(⌊L/c⌋·c² + (L mod c)²) ≤ sqrt(L·c) (Δ2 = L without a cap; a
// convex Σk_j² is largest at a vertex of that polytope). The reports are a
// per-unit randomization of the true categories, independent across
// units, so the guarantee for neighbouring report sets is also one for
// neighbouring sets of true categories (averaging the bound over the other
// units' coins preserves it).
//
// Local randomization is no substitute: randomized response hides which
// category a report names (replace-one), not whether a unit reported, and
// the number of reports, hence N̂ and every count, grows with each
// participant. That is why the release needs central noise at all.
//
// Sources: Wasserman & Zhou 2010 ("A statistical framework for differential
// privacy", JASA) for the histogram; Dwork, McSherry, Nissim & Smith 2006
// and Canonne, Kamath & Steinke 2020 for the (discrete) noise; Warner 1965
// and Kairouz, Bonawitz & Ramage 2016 for the randomized response itself.
//
// Errors wrap ErrInvalidSpec and name the offending field.
func Calibrate(s Spec) (Calibration, error) {
	if err := s.validate(); err != nil {
		return Calibration{}, err
	}
	h, err := aggregate.Calibrate(s.histogramSpec())
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate randomized_response release: %w", err)
	}
	// The exported Components and the ones inside hist are separate
	// slices, so editing one cannot silently change the other.
	comps := append([]noise.Component(nil), h.Components...)
	return Calibration{Spec: s, Components: comps, hist: h}, nil
}

// Result is a released randomized_response window. NoisyCounts are the
// only noisy statistic; every other field is post-processing of them and
// of the public spec.
type Result struct {
	// NoisyCounts are D_c = O_c + Z_c: the observed report counts plus the
	// central noise, integers, unclamped and unbiased for the report
	// counts (as the histogram's NoisyCounts).
	NoisyCounts []float64
	// Debiased are T̂_c = (D_c − (p/k)·N̂)/(1 − p) with N̂ = Σ_c D_c:
	// unbiased estimates of the true category counts among the kept
	// events. They sum to N̂ and can be negative or above N̂.
	Debiased []float64
	// Frequencies are T̂/N̂ projected onto the probability simplex (the
	// nearest probability vector in L2; see DebiasProjected): non-negative
	// and summing to 1, but biased near 0 and 1. Uniform when N̂ ≤ 0.
	Frequencies []float64
	// StdErr is the estimated standard error of each Debiased count,
	// covering the randomized response and the central noise (see
	// Release).
	StdErr []float64
	// Interval95 is the noise-only 95% half-width of each NoisyCounts entry:
	// D_c ± Interval95 covers O_c with probability at least 0.95 over the
	// central noise (as the histogram's Interval95). It does not cover the
	// randomized response error; use StdErr for the Debiased counts.
	Interval95 float64
	// LocalEpsilon is the producers' per-report local ε (Spec.LocalEpsilon).
	LocalEpsilon float64
}

// Release computes the randomized_response release described by c from
// the window's report counts (counts[j] = the number of kept reports naming
// category j, each unit's reports capped at L and at c per category),
// adding central noise from n.
//
// # Guarantees
//
// Central: ε-DP or (ε, δ)-DP under add/remove of one privacy unit (all of
// its reports in the window), as Calibrate states: counts are released
// by Release on the equivalent histogram (Stats{Bins: counts}), so the
// noise, its checks and its sensitivity (Δ1 = L; Δ2 = L, or
// sqrt(⌊L/c⌋·c² + (L mod c)²) with cap c: a unit's reports move the counts
// by k_j ≥ 0, Σk_j ≤ L, k_j ≤ c) are the histogram's, and everything after
// the noise is post-processing.
//
// Local: each report was already ε_local-DP when it left its producer, with
// ε_local = log((1 − p + p/k)/(p/k)) (LocalEpsilon), against anyone who sees
// raw reports (the pipeline, the message broker), under replace-one: a
// report's true category replaced by any other (Mechanism has the
// likelihood-ratio proof). A unit with several reports of the same value
// spends ε_local per report (basic composition). Local randomized response
// does not hide participation: the number of reports reveals who reported,
// which only the central noise protects.
//
// # Estimator
//
// Let T_c be the number of kept events whose true category is c and
// n = Σ_c T_c the number of kept reports (randomization does not change
// it). Each report names its true category with probability
// 1 − p + p/k and any other with p/k, independently, so
//
//	E[O_c | T] = (1 − p + p/k)·T_c + (p/k)·(n − T_c) = (1 − p)·T_c + (p/k)·n.
//
// The central noise has mean 0, so E[D_c] = E[O_c] and E[N̂] = n (Σ_c O_c = n
// exactly). T̂_c = (D_c − (p/k)·N̂)/(1 − p) is linear in D, hence
// E[T̂_c] = ((1 − p)·T_c + (p/k)·n − (p/k)·n)/(1 − p) = T_c: unbiased, over
// the producers' coins and the central noise, for the counts among the
// kept events (Warner 1965; Kairouz, Bonawitz & Ramage 2016; Wang, Blocki,
// Li & Jha 2017). This needs the producers' p and k to be the spec's, and
// the per-category cap not to bind: a cap drops reports because of their
// reported category, which removes counts from the categories that are
// reported most and biases T̂ towards uniform.
//
// # Standard error
//
// T̂_c = (O_c − (p/k)·n)/(1 − p) + (Z_c − (p/k)·Σ_j Z_j)/(1 − p), and the
// two parts are independent, so Var(T̂_c) is the sum of:
//
// Randomized response: O_c is a sum of n independent Bernoulli indicators,
// with success probability a = 1 − p + p/k for the T_c reports whose true
// category is c and b = p/k for the others, so
// Var(O_c) = T_c·a(1 − a) + (n − T_c)·b(1 − b) = n·b(1 − b) + T_c·p(1 − p)(1 − 2/k)
// (using a(1 − a) − b(1 − b) = (a − b)(1 − a − b) = (1 − p)·p(1 − 2/k)).
// It is linear in T_c and n, so substituting the unbiased T̂_c and N̂ gives
// an unbiased estimate; T̂_c is clipped to [0, max(N̂, 0)] (where the true
// T_c lies) so that the estimate cannot go negative. Divided by (1 − p)².
// This is the variance for the window's fixed set of reporters, which is
// what the counts describe; the multinomial n·π̂_c(1 − π̂_c) of Debias
// (sampling reporters from a population) exceeds it by
// Σ_i (π_i − π̄)² ≥ 0, about 36% for k = 4, p = 1/2 and a category with
// half of the events, and would overstate the error here.
//
// Central noise: the Z_j are independent with variance v each (the exact
// variance of the component's discrete Laplace or discrete Gaussian), and
// (1 − p)·(noise part) = (1 − p/k)·Z_c − (p/k)·Σ_{j≠c} Z_j, so its variance
// is ((1 − p/k)² + (k − 1)(p/k)²)·v/(1 − p)².
//
// StdErr_c is the square root of the sum. Its square is unbiased for
// Var(T̂_c) up to the clipping.
//
// It returns an error, and releases nothing, for a nil n, a calibration
// that does not fit its spec (the histogram's checkCalibration: a
// hand-built or edited calibration must still carry at least the noise the
// spec requires), counts of the wrong length or negative, a failed noise
// draw or an overflowing noisy count.
func Release(c Calibration, counts []int64, n noise.Sampler) (Result, error) {
	if n == nil {
		return Result{}, errors.New("release randomized_response: nil noise")
	}
	sp := c.Spec
	if err := sp.validate(); err != nil {
		return Result{}, fmt.Errorf("release randomized_response: %w", err)
	}
	k := sp.Categories
	if len(counts) != k {
		return Result{}, fmt.Errorf("release randomized_response: got %d counts for k = %d categories", len(counts), k)
	}
	for j, x := range counts {
		if x < 0 {
			return Result{}, fmt.Errorf("release randomized_response: negative count %d for category %d", x, j)
		}
	}
	// Release through the histogram with this calibration's own Spec and
	// Components: if they are still what Calibrate derived, its fast path
	// applies; otherwise checkCalibration re-derives and checks them.
	hc := c.hist
	hc.Spec = sp.histogramSpec()
	hc.Components = c.Components
	hr, err := aggregate.Release(hc, aggregate.Stats{Bins: counts}, n)
	if err != nil {
		return Result{}, fmt.Errorf("release randomized_response: %w", err)
	}
	comp := hc.Components[0] // Release has checked that there is exactly one

	p, kf := sp.P, float64(k)
	pk, q := p/kf, 1-p
	nHat := 0.0
	for _, d := range hr.NoisyCounts {
		nHat += d
	}
	nPos := math.Max(nHat, 0)
	// Per-report Bernoulli variances: b(1 − b) for every report and an
	// extra p(1 − p)(1 − 2/k) for each whose true category is c.
	base := nPos * pk * (1 - pk)
	extra := p * q * (1 - 2/kf)
	noiseVar := ((1-pk)*(1-pk) + (kf-1)*pk*pk) * noise.Variance(comp)

	buf := make([]float64, 3*k)
	r := Result{
		NoisyCounts:  hr.NoisyCounts,
		Debiased:     buf[0:k:k],
		StdErr:       buf[2*k : 3*k : 3*k],
		Interval95:   hr.Interval95,
		LocalEpsilon: sp.LocalEpsilon(),
	}
	freq := buf[k : 2*k : 2*k]
	for j, d := range hr.NoisyCounts {
		t := (d - pk*nHat) / q
		r.Debiased[j] = t
		rrVar := base + clamp(t, 0, nPos)*extra
		r.StdErr[j] = math.Sqrt(rrVar+noiseVar) / q
		freq[j] = t / nHat
	}
	if nHat > 0 {
		r.Frequencies = rrProjectSimplex(freq)
	} else {
		for j := range freq {
			freq[j] = 1 / kf
		}
		r.Frequencies = freq
	}
	return r, nil
}

// clamp limits x to [lo, hi].
func clamp(x, lo, hi float64) float64 {
	return math.Max(lo, math.Min(x, hi))
}
