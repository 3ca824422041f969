// Package histogram is the release kind histogram: the counts of a
// window's kept events in the equal-width cells of one to three fields
// (aggregate.MaxHistogramDims), each field clamped to its [lo, hi], plus
// independent discrete noise per cell; optionally with a per-unit cap c on
// the events counted in one cell (max_per_bin), and synthetic samples drawn
// from the released histogram.
//
// Guarantee: ε-DP (laplace) or (ε, δ)-DP (gaussian) under add/remove of one
// privacy unit. Sensitivity: each kept event is in exactly one cell, so a
// unit's at most L kept events change the cell counts by k_j ≥ 0 with
// Σ_j k_j ≤ L: at most L in L1, and in L2 at most L without a cap (all in
// one cell) or, with a cap c (k_j ≤ c), sqrt(⌊L/c⌋·c² + (L mod c)²) ≤
// sqrt(L·c), the largest Σ_j k_j² on that polytope (SPEC section 0). The
// shape (bins per field, or bins: auto from the declared expected_events)
// is fixed by the configuration, never the data. Samples are
// post-processing of the release. Source: the private histogram of
// Wasserman & Zhou (2010), section 5 (SPEC section 4.2; they use
// replace-one neighbours, which doubles Δ1), with the exact samplers of
// mechanism/noise; see aggregate.Calibrate and synthetic.Histogram.
package histogram

import (
	"fmt"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/basic"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/kind/running"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/mechanism/synthetic"
	"github.com/dpstream/dpstream/schema"
)

// Name is the kind's name in the configuration and in release records.
const Name = "histogram"

func init() { kind.Register(Kind{}) }

// Kind is the histogram kind.
type Kind struct{}

// Name returns "histogram".
func (Kind) Name() string { return Name }

// Plan calibrates a histogram release of st, with its bins resolved
// (Bins).
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	c, err := keys.Params[Config](r)
	if err != nil {
		return nil, err
	}
	hr := Release{Release: r, Config: c}
	p, err := basic.New(basic.Release{Release: r, Value: keys.Value{Field: c.Field, Bounds: c.Bounds}}, Spec(st, hr))
	if err != nil {
		return nil, err
	}
	if r.Continual != nil {
		return running.New(st, r, &Plan{Plan: p, Config: hr})
	}
	return &Plan{Plan: p, Config: hr}, nil
}

// TotalsShape is the histogram's bins (kind.Totals).
func (p *Plan) TotalsShape() kind.TotalsShape { return p.HistogramTotals() }

// TotalsOf returns the window's bins.
func (p *Plan) TotalsOf(m kind.Merged) ([]int64, error) {
	return basic.BinsOf(m, p.Cal.Spec.Cells())
}

// FillTotals publishes the increments as noisy_counts, the running totals
// per bin, and the fields, shape and edges; probabilities and densities
// are those of the running totals (negative ones counted as 0), the
// distribution of the horizon so far.
func (p *Plan) FillTotals(rel *schema.Release, inc, inc95, tot, tot95 []float64) {
	rel.NoisyCounts, rel.RunningTotals, rel.RunningIntervals95 = inc, tot, tot95
	c := p.Config
	rel.Fields = c.Fields
	if len(rel.Fields) == 0 {
		rel.Fields = []string{c.Field}
	}
	volume := 1.0
	for _, a := range p.Axes() {
		rel.Shape = append(rel.Shape, int64(a.Bins))
		volume *= (a.Hi - a.Lo) / float64(a.Bins)
		for j := 0; j <= a.Bins; j++ {
			rel.Edges = append(rel.Edges, aggregate.BinEdge(a.Lo, a.Hi, a.Bins, j))
		}
	}
	total := 0.0
	for _, v := range tot {
		total += max(v, 0)
	}
	rel.Probabilities, rel.Densities = make([]float64, len(tot)), make([]float64, len(tot))
	for j, v := range tot {
		if total > 0 {
			rel.Probabilities[j] = max(v, 0) / total
			rel.Densities[j] = rel.Probabilities[j] / volume
		}
	}
}

// Config is a histogram's own keys, as Decode reads them.
type Config struct {
	// Field is the first field (given as field, or as fields[0]).
	Field string
	// Fields are the fields, 1 to aggregate.MaxHistogramDims, distinct;
	// always filled (also for one field, given as field or fields), with
	// Fields[0] == Field.
	Fields []string
	// Bounds is AxisBounds[0].
	Bounds [2]float64
	// AxisBounds are the [lo, hi] of each of Fields, in the same order.
	AxisBounds [][2]float64
	// Bins is AxisBins[0]; 0 with BinsAuto.
	Bins int
	// AxisBins are the bins of each of Fields, whose product (the number
	// of cells) is at most MaxBins; nil with BinsAuto.
	AxisBins []int
	// BinsAuto is set by `bins: auto`: the plan sizes the bins with
	// aggregate.AutoBins(ExpectedEvents, len(Fields), MaxBins). It reads
	// the declared size, never the data, so the shape of the release (and
	// its noise) is data-independent. Requires ExpectedEvents.
	BinsAuto bool
	// ExpectedEvents is the declared number of kept events per window
	// that bins: auto sizes the bins for.
	ExpectedEvents int
	// MaxPerBin is c, the most events of one unit counted in one cell per
	// window, in 1..L; 0 means no cap (c = L). A cap lowers the L2
	// sensitivity of the counts to at most sqrt(L·c) (SPEC section 0), so
	// it lowers Gaussian noise; Laplace noise (L1, = L) is unchanged.
	MaxPerBin int
	// Samples is how many synthetic rows the release also publishes, drawn
	// from the private release, 0..keys.MaxSamples.
	Samples int
}

// Release is a histogram release: the keys every release has and its own.
type Release struct {
	config.Release
	*Config
}

// Spec returns the mechanism spec of a histogram release of st, with its
// bins resolved (Bins) and its per-cell cap.
func Spec(st *config.Stream, r Release) aggregate.Spec {
	spec := basic.Spec(aggregate.KindHistogram, st, basic.Release{Release: r.Release, Value: keys.Value{Field: r.Field, Bounds: r.Bounds}})
	bins := Bins(r)
	if len(bins) > 0 {
		spec.Bins = bins[0]
	}
	for i := 1; i < len(bins) && i < len(r.AxisBounds); i++ {
		spec.Axes[i-1] = aggregate.Axis{Lo: r.AxisBounds[i][0], Hi: r.AxisBounds[i][1], Bins: bins[i]}
	}
	spec.BinCap = r.MaxPerBin
	return spec
}

// Bins returns the bins per field of a histogram release: the configured
// ones, or with `bins: auto` aggregate.AutoBins(expected_events, fields,
// MaxBins). It reads the declared size, never the data, so the
// histogram's shape is data-independent.
func Bins(r Release) []int {
	d := max(len(r.Fields), 1)
	if r.BinsAuto {
		return aggregate.AutoBins(float64(r.ExpectedEvents), d, MaxBins)
	}
	if len(r.AxisBins) > 0 {
		return r.AxisBins
	}
	return []int{r.Bins}
}

// Plan is a calibrated histogram release.
type Plan struct {
	*basic.Plan
	// Config is the release's configuration (it shadows the basic plan's
	// view of its first field).
	Config Release
}

// Axes returns the histogram's fields in order, with their resolved bins:
// the shape its cells are laid out in (row-major, last field fastest).
func (p *Plan) Axes() []aggregate.Axis { return p.Cal.Spec.HistogramAxes() }

// Widest sizes the cells, every field's edges and shape, and the samples.
func (p *Plan) Widest(rel *schema.Release) {
	axes := p.Axes()
	cells := p.Cal.Spec.Cells()
	rel.NoisyCounts, rel.Probabilities, rel.Densities = kind.Wide(cells), kind.Wide(cells), kind.Wide(cells)
	for _, a := range axes {
		rel.Edges = append(rel.Edges, kind.Wide(a.Bins+1)...)
		rel.Shape = append(rel.Shape, 1<<63-1)
	}
	rel.Samples = kind.Wide(p.Config.Samples * len(axes))
	rel.Fields = p.Config.Fields
}

// Release releases the noisy cells, then publishes the fields, the shape
// and the synthetic samples (drawn from the released probabilities only,
// with randomness from the noise's source: post-processing).
func (p *Plan) Release(m kind.Merged, sampler noise.Sampler, rel *schema.Release) (kind.Fit, error) {
	res, err := p.ReleaseStats(m, sampler, rel)
	if err != nil {
		return nil, err
	}
	c := p.Config
	rel.Fields = c.Fields
	if len(rel.Fields) == 0 {
		rel.Fields = []string{c.Field}
	}
	for _, m := range res.Shape {
		rel.Shape = append(rel.Shape, int64(m))
	}
	if c.Samples > 0 {
		if rel.Samples, err = synthetic.Histogram(noise.SourceOf(sampler), res.Probabilities, res.AxisEdges, c.Samples); err != nil {
			return nil, fmt.Errorf("synthetic samples: %w", err)
		}
	}
	return nil, nil
}

// Describe lists the fields with their bins and bounds, and the cap.
func (p *Plan) Describe() string {
	axes := p.Axes()
	if len(axes) == 0 {
		return p.Plan.Describe()
	}
	c := p.Config
	fields := c.Fields
	if len(fields) != len(axes) {
		fields = []string{c.Field}
	}
	var parts []string
	for i, a := range axes {
		name := ""
		if i < len(fields) && len(axes) > 1 {
			name = fields[i] + " "
		}
		parts = append(parts, fmt.Sprintf("%s%d bins on [%g, %g]", name, a.Bins, a.Lo, a.Hi))
	}
	auto, capped := "", ""
	if c.BinsAuto {
		auto = " (auto)"
	}
	if c.MaxPerBin > 0 {
		capped = fmt.Sprintf(", ≤ %d per unit per cell", c.MaxPerBin)
	}
	return "histogram " + strings.Join(parts, " × ") + auto + capped
}

// Accuracy is each cell's expected absolute error.
func (p *Plan) Accuracy() string { return fmt.Sprintf("%.3g per bin", p.Cal.ExpectedAbsError) }
