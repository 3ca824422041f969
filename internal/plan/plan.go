// Package plan turns a validated configuration into what the stages run:
// every release's calibration (sensitivity, noise, scale), the mechanisms
// the accountant charges for it, and the budget arithmetic that `explain`
// prints. Calibration depends only on the configuration, never on data, so
// every charge is fixed before any event arrives (SPEC 1).
package plan

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/mechanism/rr"
	"github.com/dpstream/dpstream/schema"
)

// Release is one configured release, calibrated.
type Release struct {
	Config config.Release
	// Cal is the calibration of count, sum, mean and histogram releases;
	// zero for a density release, whose calibration is Density.
	Cal aggregate.Calibration
	// Density is a density release's calibration, with the number of
	// terms and grid points resolved (Density.Spec.Terms,
	// Density.Spec.GridPoints); nil for every other kind.
	Density *density.Calibration
	// RR is a randomized_response release's calibration (the central noise
	// on its category counts, and the producers' p); nil for other kinds.
	RR *rr.Calibration
	// Regression is a regression release's calibration (methods ssp,
	// adassp, ops, adaops); nil for other kinds.
	Regression *regression.Calibration
	// PCLS is a regression with method pcls: private model selection,
	// then AdaSSP on the selected features; nil otherwise.
	PCLS       *PCLSPlan
	Mechanisms []accountant.Mechanism  // what the accountant charges per window
	Noise      []schema.NoiseComponent // the same, as recorded in releases and the ledger
	Cost       float64                 // epsilon of one window's charge alone, at the stream's delta
}

// Stream is one configured stream with its calibrated releases.
type Stream struct {
	Config   *config.Stream
	Budget   accountant.Budget
	Per      time.Duration // budget period (0: lifetime)
	Releases []Release
	// PerWindow is the epsilon (at the budget's delta) one window of all
	// releases costs; Windows is how many windows of all releases the
	// budget (or one budget period) accepts, capped at 1e6.
	PerWindow float64
	Windows   int
}

// Build calibrates every release of every stream. Errors name the file,
// line and field, like config errors; a release whose single charge
// already exceeds its stream's budget is such an error.
func Build(c *config.Config) ([]Stream, error) {
	var out []Stream
	var errs []error
	for si := range c.Streams {
		st := &c.Streams[si]
		ps := Stream{Config: st, Budget: accountant.Budget{Epsilon: st.Budget.Epsilon, Delta: st.Budget.Delta}, Per: st.Budget.Per}
		var all []accountant.Mechanism
		for ri, r := range st.Releases {
			pr, err := calibrate(st, r)
			field := fmt.Sprintf("streams[%d].releases[%d]", si, ri)
			if err != nil {
				errs = append(errs, &config.Error{Path: c.Path, Line: r.Line, Field: field, Msg: err.Error()})
				continue
			}
			if pr.Cost > ps.Budget.Epsilon*(1+1e-12) {
				errs = append(errs, &config.Error{Path: c.Path, Line: r.Line, Field: field + ".epsilon",
					Msg: fmt.Sprintf("release %q can never fit the stream budget: one window costs ε=%.4g at δ=%g (by RDP composition), the budget is ε=%g; lower this release's epsilon or raise budget.epsilon", r.Name, pr.Cost, ps.Budget.Delta, ps.Budget.Epsilon)})
				continue
			}
			ps.Releases = append(ps.Releases, pr)
			all = append(all, pr.Mechanisms...)
		}
		if len(all) > 0 {
			ps.PerWindow, _ = accountant.Cost(all, ps.Budget.Delta)
			ps.Windows = WindowsUntilExhausted(all, ps.Budget)
		}
		out = append(out, ps)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func calibrate(st *config.Stream, r config.Release) (Release, error) {
	var pr Release
	var comps []noise.Component
	switch r.Kind {
	case config.KindDensity:
		dc, err := density.Calibrate(DensitySpec(st, r))
		if err != nil {
			return Release{}, err
		}
		pr = Release{Config: r, Density: &dc}
		comps = dc.Components
	case config.KindRegression:
		if r.Method == config.MethodPCLS {
			pp, err := planPCLS(st, r)
			if err != nil {
				return Release{}, err
			}
			pr = Release{Config: r, PCLS: pp}
			sel, err := pp.Select.Charge()
			if err != nil {
				return Release{}, err
			}
			pr.Mechanisms = []accountant.Mechanism{
				{Kind: accountant.KindExponential, Epsilon: sel.Epsilon},
				{Kind: accountant.KindZCDP, Epsilon: pp.Rho},
			}
			pr.Noise = []schema.NoiseComponent{
				{Purpose: sel.Purpose, Mechanism: accountant.KindExponential, Epsilon: sel.Epsilon},
				{Purpose: PurposePCLSFit, Mechanism: accountant.KindZCDP, Epsilon: pp.Rho, Delta: pp.Fit.Delta},
			}
			return finish(st, pr)
		}
		spec, err := RegressionSpec(st, r)
		if err != nil {
			return Release{}, err
		}
		rc, err := regression.Calibrate(spec)
		if err != nil {
			return Release{}, err
		}
		pr = Release{Config: r, Regression: &rc}
		comps = rc.Components
	case config.KindRandomizedResponse:
		spec, err := RRSpec(st, r)
		if err != nil {
			return Release{}, err
		}
		rc, err := rr.Calibrate(spec)
		if err != nil {
			return Release{}, err
		}
		pr = Release{Config: r, RR: &rc}
		comps = rc.Components
	default:
		spec := Spec(st, r)
		cal, err := aggregate.Calibrate(spec)
		if err != nil {
			return Release{}, err
		}
		pr = Release{Config: r, Cal: cal}
		comps = cal.Components
	}
	// Every component is one discrete Laplace or discrete Gaussian noise
	// addition, charged by its (Scale, Sensitivity). For a density's
	// vector of basis sums with discrete Gaussian noise the accountant's
	// discrete_gaussian curve is ρ = Sensitivity²/(2·Scale²) with the
	// vector's L2 sensitivity, which is exactly the zCDP ρ that
	// CalibrateDensity composes over the independent coordinates; so the
	// same mapping, and the ledger's NoiseComponent (which keeps Scale and
	// Sensitivity), rebuild the charge on recovery.
	for _, c := range comps {
		if c.Noise == noise.ApproxDP {
			// Proved (ε, δ)-DP as a whole (e.g. OPS's posterior sample):
			// composed by basic composition.
			pr.Mechanisms = append(pr.Mechanisms, accountant.Mechanism{Kind: accountant.KindApproxDP, Epsilon: c.Epsilon, Delta: c.Delta})
			pr.Noise = append(pr.Noise, schema.NoiseComponent{Purpose: c.Purpose, Mechanism: string(c.Noise), Epsilon: c.Epsilon, Delta: c.Delta})
			continue
		}
		pr.Mechanisms = append(pr.Mechanisms, accountant.Mechanism{Kind: string(c.Noise), Scale: c.Scale, Sensitivity: c.Sensitivity})
		pr.Noise = append(pr.Noise, schema.NoiseComponent{Purpose: c.Purpose, Mechanism: string(c.Noise), Sensitivity: c.Sensitivity, Scale: c.Scale, Epsilon: c.Epsilon, Delta: c.Delta})
	}
	return finish(st, pr)
}

// finish validates pr's charges and sets its cost, and checks its record
// size.
func finish(st *config.Stream, pr Release) (Release, error) {
	for _, m := range pr.Mechanisms {
		if err := m.Validate(); err != nil {
			return Release{}, fmt.Errorf("calibration produced an invalid mechanism: %w", err)
		}
	}
	var err error
	pr.Cost, err = accountant.Cost(pr.Mechanisms, st.Budget.Delta)
	if err != nil {
		return Release{}, err
	}
	if err := checkRecordSize(st, pr); err != nil {
		return Release{}, err
	}
	return pr, nil
}

// MaxRecordBytes is the largest ledger record (which carries the release
// record whole) a release may need. Kafka brokers refuse larger messages
// by default (message.max.bytes ≈ 1 MiB, batch overhead included), and a
// refused ledger write stops the release stage; so a configuration whose
// records could not be written is refused before anything runs.
const MaxRecordBytes = 900_000

// checkRecordSize encodes a release and its ledger charge with arrays as
// long as pr's can ever be (Avro doubles and longs in an array take at most
// 9 bytes; values are filled with the widest encodings) and refuses
// releases whose ledger record would exceed MaxRecordBytes.
func checkRecordSize(st *config.Stream, pr Release) error {
	c := pr.Config
	wide := func(n int) []float64 { return make([]float64, n) } // doubles are always 8 bytes
	rel := schema.Release{
		ReleaseID: ReleaseID(st.Name, c.Name, math.MinInt64), Stream: st.Name, Release: c.Name, Kind: c.Kind,
		Status: "budget_exhausted", Noise: pr.Noise, Fields: c.Fields, Categories: c.Categories,
		WindowStart: math.MinInt64, WindowEnd: math.MinInt64, PublishedAt: math.MinInt64,
	}
	one := 1.0
	rel.Value, rel.Interval95, rel.LocalEpsilon = &one, &one, &one
	switch {
	case pr.Density != nil:
		g := pr.Density.Spec.GridPoints
		rel.Edges, rel.Densities, rel.Coefficients = wide(g), wide(g), wide(pr.Density.Spec.Terms)
		rel.Samples = wide(c.Samples)
	case pr.RR != nil:
		k := pr.RR.Spec.Categories
		rel.NoisyCounts, rel.DebiasedCounts, rel.StdErrors, rel.Probabilities = wide(k), wide(k), wide(k), wide(k)
	case pr.Regression != nil || pr.PCLS != nil:
		d := len(c.Features)
		rel.Coefficients, rel.StdErrors = wide(d), wide(d)
		rel.Method, rel.Intercept, rel.Ridge = c.Method, &one, &one
		rel.Fields, rel.Selected = c.Features, c.Features
	case c.Kind == config.KindHistogram:
		axes := pr.Cal.Spec.HistogramAxes()
		cells := pr.Cal.Spec.Cells()
		rel.NoisyCounts, rel.Probabilities, rel.Densities = wide(cells), wide(cells), wide(cells)
		for _, a := range axes {
			rel.Edges = append(rel.Edges, wide(a.Bins+1)...)
			rel.Shape = append(rel.Shape, math.MaxInt64)
		}
		rel.Samples = wide(c.Samples * len(axes))
	}
	payload, err := schema.EncodeRelease(rel)
	if err != nil {
		return fmt.Errorf("release record: %w", err)
	}
	lc := schema.LedgerCharge{ReleaseID: rel.ReleaseID, Stream: st.Name, Release: c.Name, WindowStart: math.MinInt64,
		Period: math.MinInt64, Status: "budget_exhausted", Charges: pr.Noise, RDP: wide(len(accountant.Orders)),
		Payload: payload, At: math.MinInt64}
	b, err := schema.EncodeLedgerCharge(lc)
	if err != nil {
		return fmt.Errorf("ledger record: %w", err)
	}
	if len(b) > MaxRecordBytes {
		return fmt.Errorf("its records would be up to %d bytes, more than the %d that fit in a Kafka message with default broker limits; lower samples, grid_points or the number of bins", len(b), MaxRecordBytes)
	}
	return nil
}

// Spec returns the mechanism spec of a count, sum, mean or histogram
// release of st, with a histogram's bins resolved (HistogramBins).
func Spec(st *config.Stream, r config.Release) aggregate.Spec {
	spec := aggregate.Spec{
		Kind: aggregate.Kind(r.Kind), Noise: noise.Kind(r.Noise),
		Epsilon: r.Epsilon, Delta: r.Delta, Lo: r.Bounds[0], Hi: r.Bounds[1], Bins: r.Bins,
		MaxContributions: st.Contribution.MaxEventsPerWindow,
	}
	if r.Kind == config.KindHistogram {
		bins := HistogramBins(r)
		if len(bins) > 0 {
			spec.Bins = bins[0]
		}
		for i := 1; i < len(bins) && i < len(r.AxisBounds); i++ {
			spec.Axes[i-1] = aggregate.Axis{Lo: r.AxisBounds[i][0], Hi: r.AxisBounds[i][1], Bins: bins[i]}
		}
		spec.BinCap = r.MaxPerBin
	}
	return spec
}

// HistogramBins returns the bins per field of a histogram release: the
// configured ones, or with `bins: auto` aggregate.AutoBins(expected_events,
// fields, config.MaxBins). Like DensityTerms it reads the declared size,
// never the data, so the histogram's shape is data-independent.
func HistogramBins(r config.Release) []int {
	d := max(len(r.Fields), 1)
	if r.BinsAuto {
		return aggregate.AutoBins(float64(r.ExpectedEvents), d, config.MaxBins)
	}
	if len(r.AxisBins) > 0 {
		return r.AxisBins
	}
	return []int{r.Bins}
}

// Cells returns the number of cells of a histogram release or categories
// of a randomized_response release: the length of the count vector the
// accumulate stage keeps for it (0 for other kinds).
func (r *Release) Cells() int {
	switch {
	case r.RR != nil:
		return r.RR.Spec.Categories
	case r.Config.Kind == config.KindHistogram:
		return r.Cal.Spec.Cells()
	}
	return 0
}

// RegressionDim returns the number of scaled columns of a regression
// release (features plus the intercept), 0 for other kinds.
func (r *Release) RegressionDim() int {
	switch {
	case r.Regression != nil:
		return r.Regression.Spec.Scaling.Dim()
	case r.PCLS != nil:
		return r.PCLS.Fit.Scaling.Dim()
	}
	return 0
}

// RegressionScaling returns how a regression release's rows are scaled:
// its features' and target's bounds and the intercept column.
func RegressionScaling(r config.Release) regression.Scaling {
	return regression.Scaling{FeatureBounds: r.FeatureBounds, Intercept: r.Intercept, TargetBounds: r.TargetBounds}
}

// RegressionSpec returns the mechanism spec of a regression release of st
// for methods ssp, adassp, ops and adaops (pcls is planned by planPCLS).
func RegressionSpec(st *config.Stream, r config.Release) (regression.Spec, error) {
	s := regression.Spec{
		Method: regression.Method(r.Method), Epsilon: r.Epsilon, Delta: r.Delta,
		Scaling: RegressionScaling(r), MaxContributions: st.Contribution.MaxEventsPerWindow,
	}
	switch r.Method {
	case config.MethodSSP, config.MethodOPS:
		s.Lambda = r.Lambda
	case config.MethodAdaSSP, config.MethodAdaOPS:
		s.Rho = r.Rho
	default:
		return s, fmt.Errorf("unknown regression method %q", r.Method)
	}
	return s, nil
}

// PurposePCLSFit is the Purpose of a pcls release's second charge: the
// AdaSSP fit on the selected features, charged as ρ-zCDP (the ledger's
// NoiseComponent holds ρ in Epsilon).
const PurposePCLSFit = "coefficients"

// PCLSPlan is a pcls regression's plan: the selection step and the AdaSSP
// fit that follows on the selected features.
type PCLSPlan struct {
	// Select is the model-selection step, with SelectionShare·ε.
	Select regression.PCLSSpec
	// Fit is AdaSSP on every feature with the rest of ε and all of δ; the
	// release restricts its scaling to the selected features
	// (PCLSSpec.Restrict) and calibrates that.
	Fit regression.Spec
	// Rho is the largest total zCDP ρ of Fit restricted to any candidate
	// support: what is charged. Which support runs depends on the data,
	// but every one is at most Rho-zCDP, so the adaptive composition of
	// the (pure) selection and any fit is covered by charging the
	// selection's ε and Rho (Bun & Steinke 2016, adaptive composition of
	// zCDP; pure ε-DP ⇒ ε²/2-zCDP is not needed: the accountant composes
	// the exponential curve and the zCDP curve directly).
	Rho float64
}

// planPCLS builds a pcls release's plan. Every candidate support size is
// calibrated once (the fit's noise depends on the number of columns only),
// so the charge is fixed by the configuration.
func planPCLS(st *config.Stream, r config.Release) (*PCLSPlan, error) {
	sc := RegressionScaling(r)
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
	sel := regression.PCLSSpec{
		Epsilon: r.Epsilon * share, Selection: r.Selection, Radius: r.Radius, Penalty: r.Penalty,
		MaxSupport: r.MaxSupport, Supports: supports, Scaling: sc, MaxContributions: st.Contribution.MaxEventsPerWindow,
	}
	fit := regression.Spec{
		Method: regression.MethodAdaSSP, Epsilon: r.Epsilon * (1 - share), Delta: r.Delta, Scaling: sc,
		MaxContributions: st.Contribution.MaxEventsPerWindow, Rho: r.Rho,
	}
	cands, err := regression.CandidateSupports(sel)
	if err != nil {
		return nil, err
	}
	pp := &PCLSPlan{Select: sel, Fit: fit}
	done := map[int]bool{}
	for _, m := range cands {
		if done[len(m)] {
			continue
		}
		done[len(m)] = true
		_, rsc, err := sel.Restrict(regression.NewStats(sc.Dim()), m)
		if err != nil {
			return nil, err
		}
		f := fit
		f.Scaling = rsc
		c, err := regression.Calibrate(f)
		if err != nil {
			return nil, fmt.Errorf("fit on %d features: %w", len(m), err)
		}
		pp.Rho = max(pp.Rho, c.Rho)
	}
	return pp, nil
}

// RRSpec returns the mechanism spec of a randomized_response release of
// st: the producers' p as configured, or derived from epsilon_local by
// p = k/(e^ε + k − 1) (rr.ForEpsilon).
func RRSpec(st *config.Stream, r config.Release) (rr.Spec, error) {
	k := len(r.Categories)
	p := r.RRProbability
	if p == 0 {
		mech, err := rr.ForEpsilon(k, r.LocalEpsilon)
		if err != nil {
			return rr.Spec{}, fmt.Errorf("epsilon_local: %w", err)
		}
		p = mech.P()
	}
	return rr.Spec{
		Noise: noise.Kind(r.Noise), Epsilon: r.Epsilon, Delta: r.Delta,
		Categories: k, P: p, MaxContributions: st.Contribution.MaxEventsPerWindow, BinCap: r.MaxPerBin,
	}, nil
}

// DensityTerms returns the number of cosine terms of a density release:
// the configured terms, or with `terms: auto`
// density.AutoTerms(expected_events, smoothness, MaxDensityTerms). It
// reads the configuration only (the declared window size, never the data),
// so the terms, and with them the noise, are data-independent.
func DensityTerms(r config.Release) int {
	if r.TermsAuto {
		return density.AutoTerms(float64(r.ExpectedEvents), r.Smoothness, density.MaxTerms)
	}
	return r.Terms
}

// DensitySpec returns the mechanism spec of a density release of st, with
// the terms resolved (DensityTerms) and the grid defaulted to
// max(density.DefaultGridPoints, terms + 1).
func DensitySpec(st *config.Stream, r config.Release) density.Spec {
	m := DensityTerms(r)
	g := r.GridPoints
	if g == 0 {
		g = max(density.DefaultGridPoints, m+1)
	}
	return density.Spec{
		Noise: noise.Kind(r.Noise), Epsilon: r.Epsilon, Delta: r.Delta,
		Lo: r.Bounds[0], Hi: r.Bounds[1], Terms: m,
		MaxContributions: st.Contribution.MaxEventsPerWindow, GridPoints: g,
	}
}

// WindowsUntilExhausted counts how many windows, each charging ms, the
// budget accepts (capped at 1e6).
func WindowsUntilExhausted(ms []accountant.Mechanism, b accountant.Budget) int {
	const limit = 1_000_000
	// Exponential then binary search over k-fold compositions: the spent
	// epsilon is monotone in k.
	fits := func(k int) bool {
		scaled := make([]accountant.Mechanism, len(ms))
		for i, m := range ms {
			m.Count = k
			scaled[i] = m
		}
		e, err := accountant.Cost(scaled, b.Delta)
		return err == nil && e <= b.Epsilon*(1+1e-12)
	}
	if !fits(1) {
		return 0
	}
	lo, hi := 1, 2
	for hi <= limit && fits(hi) {
		lo, hi = hi, hi*2
	}
	if hi > limit {
		if fits(limit) {
			return limit
		}
		hi = limit
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// ReleaseID is the id of a release of one window: stream/release/window
// start in unix ms (DESIGN invariant 1).
func ReleaseID(stream, release string, windowStart int64) string {
	return fmt.Sprintf("%s/%s/%d", stream, release, windowStart)
}

// Period is the budget period a window belongs to (0 for lifetime budgets).
func (s *Stream) Period(windowStart int64) int64 {
	if s.Per <= 0 {
		return 0
	}
	per := s.Per.Milliseconds()
	q := windowStart / per
	if windowStart%per != 0 && windowStart < 0 {
		q--
	}
	return q
}
