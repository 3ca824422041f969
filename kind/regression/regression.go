// Package regression is the release kind regression: a differentially
// private linear regression of a target field on one to
// mregression.MaxFeatures feature fields, each clamped to its
// bounds and mapped to [−1, 1], by one of five methods (SPEC section 4.5):
//
//   - ssp: sufficient statistics perturbation with a fixed ridge λ (Dwork,
//     Talwar, Thakurta & Zhang 2014; Sheffet 2017);
//   - adassp: SSP with a ridge chosen from a private lower bound on
//     λ_min(XᵀX) (Wang 2018);
//   - ops: one posterior sample with a configured ridge (Dimitrakakis et
//     al. 2014; Wang, Fienberg & Smola 2015; per-instance DP as in Wang
//     2019);
//   - adaops: one posterior sample with the ridge and the temperature
//     chosen from private bounds (Wang 2018);
//   - pcls: private model selection by penalized constrained least squares
//     (Lei et al. 2018), then AdaSSP on the selected features.
//
// Guarantee: (ε, δ)-DP under add/remove of one privacy unit (all of its at
// most L rows in the window), for every method. Sensitivity: a scaled row
// has ‖x‖∞ ≤ 1, ‖x‖₂ ≤ √d (d columns, the intercept's included) and
// |y| ≤ 1, so by the triangle inequality a unit's rows move the upper
// triangle of XᵀX by at most L·√(d(d+1)/2) and Xᵀy by at most L·√d in L2,
// and λ_min(XᵀX) by at most L·d (Weyl's inequality); a pcls candidate's
// score moves by at most L·(1 + r)² (each row's squared residual is in
// [0, (1 + r)²] for ‖β‖₁ ≤ r). mregression.Calibrate and
// mregression.PCLSSpec give the proofs, the exact grid-rounded values and
// the zCDP composition. The charge is fixed by the configuration: for
// pcls the largest ρ of the fit over every candidate support size is
// charged, whichever support the data selects. Sources: as listed for
// each method, with the discrete Gaussian of Canonne, Kamath & Steinke
// (2020).
package regression

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/noise"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// Name is the kind's name in the configuration and in release records.
const Name = "regression"

func init() { kind.Register(Kind{}) }

// Kind is the regression kind.
type Kind struct{}

// Name returns "regression".
func (Kind) Name() string { return Name }

// Plan calibrates a regression release of st: a *Plan for methods ssp,
// adassp, ops and adaops, a *PCLSPlan for pcls.
func (Kind) Plan(st *config.Stream, cr config.Release) (kind.Plan, error) {
	r, err := ReleaseOf(cr)
	if err != nil {
		return nil, err
	}
	if r.Method == MethodPCLS {
		return planPCLS(st, r)
	}
	spec, err := Spec(st, r)
	if err != nil {
		return nil, err
	}
	rc, err := mregression.Calibrate(spec)
	if err != nil {
		return nil, err
	}
	return &Plan{base: base{Config: r, stream: st}, Cal: rc}, nil
}

// ReleaseOf returns a configured release of this kind with its own keys,
// or an error if r is not one.
func ReleaseOf(r config.Release) (Release, error) {
	c, ok := r.Params.(*Config)
	if !ok || c == nil {
		return Release{}, fmt.Errorf("release %q of kind %s: configuration of type %T, want *regression.Config", r.Name, r.Kind, r.Params)
	}
	return Release{Release: r, Config: c}, nil
}

// Scaling returns how a regression release's rows are scaled: its
// features' and target's bounds and the intercept column.
func Scaling(r Release) mregression.Scaling {
	return mregression.Scaling{FeatureBounds: r.FeatureBounds, Intercept: r.Intercept, TargetBounds: r.TargetBounds}
}

// Spec returns the mechanism spec of a regression release of st for
// methods ssp, adassp, ops and adaops (pcls is planned by planPCLS).
func Spec(st *config.Stream, r Release) (mregression.Spec, error) {
	s := mregression.Spec{
		Method: mregression.Method(r.Method), Epsilon: r.Epsilon, Delta: r.Delta,
		Scaling: Scaling(r), MaxContributions: st.Contribution.MaxEventsPerWindow,
	}
	switch r.Method {
	case MethodSSP, MethodOPS:
		s.Lambda = r.Lambda
	case MethodAdaSSP, MethodAdaOPS:
		s.Rho = r.Rho
	default:
		return s, fmt.Errorf("unknown regression method %q", r.Method)
	}
	return s, nil
}

// base is what both plans share: the configuration, the merge of the
// exact statistics and the description.
type base struct {
	Config Release
	stream *config.Stream
}

// Dim returns the number of scaled columns (features plus the intercept).
func (b base) Dim() int { return Scaling(b.Config).Dim() }

// Widest sizes one coefficient and standard error per feature, the
// selected features and the scalars.
func (b base) Widest(rel *schema.Release) {
	c := b.Config
	d := len(c.Features)
	one := 1.0
	rel.Coefficients, rel.StdErrors = kind.Wide(d), kind.Wide(d)
	rel.Method, rel.Intercept, rel.Ridge = c.Method, &one, &one
	rel.Fields, rel.Selected = c.Features, c.Features
}

// Merge adds the partials' XᵀX, Xᵀy, yᵀy and row counts exactly
// (mregression.Stats.Merge). A partial whose arrays do not have
// the release's dimension, or an int64 overflow, is an error and the
// window is not released.
func (b base) Merge(parts []kind.Part) (kind.Merged, error) {
	d := b.Dim()
	out := mregression.NewStats(d)
	for _, pt := range parts {
		rs := pt.Stats
		if len(rs.XtX) != d*(d+1)/2 || len(rs.Xty) != d {
			return out, &kind.PartError{Partition: pt.Partition, Err: fmt.Errorf("partial has %d XᵀX and %d Xᵀy entries, want %d and %d",
				len(rs.XtX), len(rs.Xty), d*(d+1)/2, d)}
		}
		st := mregression.Stats{N: rs.Count, XtX: rs.XtX, Xty: rs.Xty, Yty: rs.Yty}
		if err := out.Merge(st); err != nil {
			return out, &kind.PartError{Partition: pt.Partition, Err: err}
		}
	}
	return out, nil
}

// Describe names the method, the target and the features.
func (b base) Describe() string {
	c := b.Config
	icpt := ""
	if c.Intercept {
		icpt = " + intercept"
	}
	return fmt.Sprintf("regression (%s) of %s on %s%s", c.Method, c.Target, strings.Join(c.Features, ", "), icpt)
}

// Accuracy points to the release's own standard errors: the error of a
// coefficient depends on the data's XᵀX.
func (base) Accuracy() string { return "see std_errors" }

func stats(m kind.Merged) (mregression.Stats, error) {
	st, ok := m.(mregression.Stats)
	if !ok {
		return st, fmt.Errorf("regression release: merged statistics of type %T", m)
	}
	return st, nil
}

// Plan is a calibrated regression with method ssp, adassp, ops or adaops.
type Plan struct {
	base
	Cal mregression.Calibration
}

// Charges returns the method's charges (mregression.Calibration).
func (p *Plan) Charges() []kind.Charge { return kind.ComponentCharges(p.Cal.Components) }

// Components returns the method's noise additions.
func (p *Plan) Components() []noise.Component { return p.Cal.Components }

// Fit is what a regression release (ssp, adassp, ops, adaops) computed
// that the per-instance loss of its posterior sample depends on: the ridge
// λ and the inverse temperature γ the release actually used (γ is 0 for
// ssp and adassp) and the merged exact statistics it ran on. OPS outputs
// θ̃ ~ N(θ̂, (γA)⁻¹) with A = XᵀX + λI, so the exact per-row loss needs all
// three (pdp.OPSPrivacyLoss, pdp.OPSLeaveOneOut).
type Fit struct {
	Lambda, Gamma float64
	// LipSigma is σ_ℓ of the released log Lipschitz bound (OPS, AdaOPS).
	LipSigma float64
	Stats    mregression.Stats
}

// Release fits the model and publishes its coefficients, standard errors,
// intercept and ridge; it returns the *Fit for per-instance DP.
func (p *Plan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	st, err := stats(m)
	if err != nil {
		return nil, err
	}
	res, err := mregression.Release(p.Cal, st, sampler)
	if err != nil {
		return nil, err
	}
	c := p.Config
	icpt, ridge := res.Intercept, res.Lambda
	rel.Fields, rel.Method = c.Features, c.Method
	rel.Coefficients, rel.StdErrors, rel.Intercept, rel.Ridge = res.Coefficients, res.StdErr, &icpt, &ridge
	return &Fit{Lambda: res.Lambda, Gamma: res.Gamma, LipSigma: res.LipschitzSigma, Stats: st}, nil
}

// Notes warns, for a posterior sample (ops, adaops), about the δ it uses
// up and when its per-instance loss can be exact.
func (p *Plan) Notes() []string {
	c := p.Config
	if c.Method != MethodOPS && c.Method != MethodAdaOPS {
		return nil
	}
	var approx float64
	for _, ch := range p.Charges() {
		approx += ch.Mechanism.Delta
	}
	out := []string{fmt.Sprintf("%s's posterior sample is (ε, δ)-DP as a whole and uses δ=%.3g of the stream's δ=%g per window (basic composition), which caps the windows whatever ε is.",
		c.Name, approx, p.stream.Budget.Delta)}
	if l := p.stream.Contribution.MaxEventsPerWindow; l != 1 {
		out = append(out, fmt.Sprintf("%s's per-instance DP certificate is exact only with max_events_per_window: 1 (one row per unit); with %d rows per unit it reports the worst case for the posterior sample.", c.Name, l))
	}
	return out
}

// PurposePCLSFit is the Purpose of a pcls release's second charge: the
// AdaSSP fit on the selected features, charged as ρ-zCDP (the ledger's
// NoiseComponent holds ρ in Epsilon).
const PurposePCLSFit = "coefficients"

// PCLSPlan is a pcls regression's plan: the selection step and the AdaSSP
// fit that follows on the selected features.
type PCLSPlan struct {
	base
	// Select is the model-selection step, with SelectionShare·ε.
	Select mregression.PCLSSpec
	// Fit is AdaSSP on every feature with the rest of ε and all of δ; the
	// release restricts its scaling to the selected features
	// (PCLSSpec.Restrict) and calibrates that.
	Fit mregression.Spec
	// Rho is the largest total zCDP ρ of Fit restricted to any candidate
	// support: what is charged. Which support runs depends on the data,
	// but every one is at most Rho-zCDP, so the adaptive composition of
	// the (pure) selection and any fit is covered by charging the
	// selection's ε and Rho (Bun & Steinke 2016, adaptive composition of
	// zCDP; pure ε-DP ⇒ ε²/2-zCDP is not needed: the accountant composes
	// the exponential curve and the zCDP curve directly).
	Rho float64
	// charges are the selection's and the fit's.
	charges []kind.Charge
}

// planPCLS builds a pcls release's plan. Every candidate support size is
// calibrated once (the fit's noise depends on the number of columns only),
// so the charge is fixed by the configuration.
func planPCLS(st *config.Stream, r Release) (*PCLSPlan, error) {
	sc := Scaling(r)
	idx := map[string]int{}
	for i, f := range r.Features {
		idx[f] = i
	}
	var supports [][]int
	for _, s := range r.Supports {
		var m []int
		for _, f := range s {
			m = append(m, idx[f])
		}
		supports = append(supports, m)
	}
	share := r.SelectionShare
	sel := mregression.PCLSSpec{
		Epsilon: r.Epsilon * share, Selection: r.Selection, Radius: r.Radius, Penalty: r.Penalty,
		MaxSupport: r.MaxSupport, Supports: supports, Scaling: sc, MaxContributions: st.Contribution.MaxEventsPerWindow,
	}
	fit := mregression.Spec{
		Method: mregression.MethodAdaSSP, Epsilon: r.Epsilon * (1 - share), Delta: r.Delta, Scaling: sc,
		MaxContributions: st.Contribution.MaxEventsPerWindow, Rho: r.Rho,
	}
	cands, err := mregression.CandidateSupports(sel)
	if err != nil {
		return nil, err
	}
	pp := &PCLSPlan{base: base{Config: r, stream: st}, Select: sel, Fit: fit}
	done := map[int]bool{}
	for _, m := range cands {
		if done[len(m)] {
			continue
		}
		done[len(m)] = true
		_, rsc, err := sel.Restrict(mregression.NewStats(sc.Dim()), m)
		if err != nil {
			return nil, err
		}
		f := fit
		f.Scaling = rsc
		c, err := mregression.Calibrate(f)
		if err != nil {
			return nil, fmt.Errorf("fit on %d features: %w", len(m), err)
		}
		pp.Rho = max(pp.Rho, c.Rho)
	}
	selc, err := sel.Charge()
	if err != nil {
		return nil, err
	}
	pp.charges = []kind.Charge{
		{Mechanism: accountant.Mechanism{Kind: accountant.KindExponential, Epsilon: selc.Epsilon},
			Noise: schema.NoiseComponent{Purpose: selc.Purpose, Mechanism: accountant.KindExponential, Epsilon: selc.Epsilon}},
		{Mechanism: accountant.Mechanism{Kind: accountant.KindZCDP, Epsilon: pp.Rho},
			Noise: schema.NoiseComponent{Purpose: PurposePCLSFit, Mechanism: accountant.KindZCDP, Epsilon: pp.Rho, Delta: pp.Fit.Delta}},
	}
	return pp, nil
}

// Charges are the selection's ε (exponential mechanism) and the fit's ρ
// (zCDP).
func (p *PCLSPlan) Charges() []kind.Charge { return p.charges }

// Components is empty: a pcls charge is not a list of noise additions.
func (p *PCLSPlan) Components() []noise.Component { return nil }

// Release selects a model privately and fits it with AdaSSP on the
// selected features (SPEC 4.5, PCLS). The fit's calibration is that of
// the selected support's size, whose ρ the plan has bounded (Rho) and
// charged. It returns no Fit: pcls has no per-instance certificate.
func (p *PCLSPlan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	st, err := stats(m)
	if err != nil {
		return nil, err
	}
	c := p.Config
	support, _, err := mregression.SelectSupport(p.Select, st, noise.SourceOf(sampler))
	if err != nil {
		return nil, fmt.Errorf("model selection: %w", err)
	}
	sub, sc, err := p.Select.Restrict(st, support)
	if err != nil {
		return nil, fmt.Errorf("model selection: %w", err)
	}
	spec := p.Fit
	spec.Scaling = sc
	cal, err := mregression.Calibrate(spec)
	if err != nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	if cal.Rho > p.Rho*(1+1e-12) {
		return nil, fmt.Errorf("fit: rho %v exceeds the charged %v", cal.Rho, p.Rho)
	}
	res, err := mregression.Release(cal, sub, sampler)
	if err != nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	coef, se := make([]float64, len(c.Features)), make([]float64, len(c.Features))
	for i, f := range slices.Sorted(slices.Values(support)) {
		coef[f] = res.Coefficients[i]
		if res.StdErr != nil {
			se[f] = res.StdErr[i]
		}
		rel.Selected = append(rel.Selected, c.Features[f])
	}
	icpt, ridge := res.Intercept, res.Lambda
	rel.Fields, rel.Method = c.Features, c.Method
	rel.Coefficients, rel.StdErrors, rel.Intercept, rel.Ridge = coef, se, &icpt, &ridge
	return nil, nil
}

// Notes warns that model selection's utility is sensitive to radius and
// penalty (Lei et al. 2018 found it depends strongly on both).
func (p *PCLSPlan) Notes() []string {
	c := p.Config
	return []string{fmt.Sprintf("%s selects a model privately (pcls, radius %g, penalty %g): its utility is sensitive to both; try several values on sample data with 'dpstream simulate' before deploying.",
		c.Name, c.Radius, c.Penalty)}
}
