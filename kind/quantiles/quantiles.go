// Package quantiles is the release kind quantiles: quantiles of a field's
// values kept in a window at configured ranks, each value clamped to
// [lo, hi], or with group_by the quantiles per key (Privacy on Beam's
// QuantilesPerKey, PipelineDP's PERCENTILE), by the tree method of Google's
// differential-privacy library (mechanism/quantile).
//
// Guarantee: ε-DP (laplace) or (ε, δ)-DP (gaussian) under add/remove of one
// privacy unit. The exact statistic is each key's histogram over the b^h
// leaves of a tree of branching b and height h on [lo, hi]; noise is added
// to the counts of the tree's nodes, and the quantiles are read from the
// noisy counts (post-processing). Sensitivity: a unit adds at most
// M = min(L, L0·c) counted events (M = L without group_by), each adding 1 to
// one node per level, so L1 = h·M and L2 = √(h·(⌊M/c⌋·c² + (M mod c)²))
// (quantile.Calibrate has the proof). The 95% interval is a bound on the
// rank error. With group_by, keys are public or selected privately
// (package grouped). Source: Google's differential-privacy library
// (QuantileTree), after Smith, Thakurta et al.'s hierarchical histograms.
package quantiles

import (
	"fmt"
	"strings"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/mechanism/quantile"
	"github.com/dpstream/dpstream/schema"
)

// Name is the kind's name in the configuration and in release records.
const Name = "quantiles"

func init() { kind.Register(Kind{}) }

// Kind is the quantiles kind.
type Kind struct{ grouped.Privacy }

// Name returns "quantiles".
func (Kind) Name() string { return Name }

// Config is a quantiles release's own keys.
type Config struct {
	grouped.Config
	// Ranks are the ranks released, each in [0, 1].
	Ranks []float64
	// Branching and Height shape the tree.
	Branching, Height int
}

// DefaultRanks are the ranks released when ranks is not set: the
// quartiles.
var DefaultRanks = []float64{0.25, 0.5, 0.75}

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "Quantiles of a numeric field over the kept events at `ranks`, each value clamped to `bounds`, by a noisy quantile tree; with `group_by`, per key."
}

// Fields are the value field, its bounds, the ranks, the tree and the
// group-by keys.
func (Kind) Fields() []config.Field {
	return append([]config.Field{
		keys.FieldDoc("whose quantiles are released (numbers)"), keys.BoundsDoc,
		{Key: "ranks", Type: "list of numbers", Default: "`[0.25, 0.5, 0.75]`", Doc: fmt.Sprintf("the ranks to release, each in [0, 1], at most %d (post-processing: more ranks cost nothing)", quantile.MaxRanks)},
		{Key: "branching", Type: "int", Default: "16", Doc: "the quantile tree's branching factor, ≥ 2"},
		{Key: "height", Type: "int", Default: "4", Doc: "the quantile tree's height, ≥ 1 (branching^height leaves on `bounds`, at most 2^24)"},
	}, grouped.Fields(false)...)
}

// Decode reads the keys into a *Config.
func (Kind) Decode(p *config.Params, r *config.Release) {
	v := keys.DecodeValue(p, Name)
	c := &Config{Ranks: DefaultRanks, Branching: 16, Height: 4}
	if g := grouped.Decode(p, Name, false); g != nil {
		c.Config = *g
	} else {
		c.Config = *grouped.Global(*v)
	}
	c.Value = *v
	if items, line, ok := p.List("ranks"); ok {
		if len(items) == 0 || len(items) > quantile.MaxRanks {
			p.Errorf(line, p.Path("ranks"), "must list 1 to %d ranks, got %d", quantile.MaxRanks, len(items))
		} else {
			c.Ranks = nil
			for i, it := range items {
				x, ok := it.Number()
				if !ok || !(x >= 0 && x <= 1) {
					p.Errorf(it.Line(), config.Index(p.Path("ranks"), i), "must be a number in [0, 1], got %s", it.Describe())
					continue
				}
				c.Ranks = append(c.Ranks, x)
			}
		}
	}
	if v, line, ok := p.Int("branching"); ok {
		if v < 2 {
			p.Errorf(line, p.Path("branching"), "must be at least 2, got %d", v)
		} else {
			c.Branching = v
		}
	}
	if v, line, ok := p.Int("height"); ok {
		if v < 1 {
			p.Errorf(line, p.Path("height"), "must be at least 1, got %d", v)
		} else {
			c.Height = v
		}
	}
	r.Params = c
}

// Plan calibrates a quantiles release of st.
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	c, err := keys.Params[Config](r)
	if err != nil {
		return nil, err
	}
	return grouped.NewPlan(st, r, &c.Config, grouped.Metric{Name: Name, Ranks: c.Ranks, Branching: c.Branching, Height: c.Height})
}

// Draws is true: every record of the kind is drawn as one.
func (Kind) Draws(schema.Release) bool { return true }

// Adopts nothing.
func (Kind) Adopts() kind.Shape { return kind.ShapeNone }

// SampleWidth is 1.
func (Kind) SampleWidth(schema.Release) int { return 1 }

// Render lists the quantiles: one line per key (the first keys, at most the
// chart's bar limit), or one line without group_by, each with the bound on
// its rank error.
func (Kind) Render(r schema.Release, o chart.Options) []string {
	if len(r.Quantiles) == 0 {
		if len(r.Keys) == 0 && len(r.Fields) > 0 {
			return []string{"no key selected in this window"}
		}
		return []string{o.Note("no quantiles in the release")}
	}
	head := make([]string, len(r.Ranks))
	for i, q := range r.Ranks {
		head[i] = "q" + chart.Num(q)
	}
	lines := []string{"ranks " + strings.Join(head, "  ") + "; ± the 95% bound on the rank error", ""}
	shown := min(len(r.Quantiles), o.BarLimit())
	for i := range shown {
		label := ""
		if i < len(r.Keys) {
			label = chart.Clean(r.Keys[i], chart.MaxName) + "  "
		}
		vals := make([]string, len(r.Quantiles[i]))
		for j, v := range r.Quantiles[i] {
			vals[j] = chart.Num(v)
		}
		line := label + strings.Join(vals, "  ")
		if i < len(r.Intervals95) {
			line += "  (rank ± " + chart.Num(r.Intervals95[i]) + ")"
		}
		lines = append(lines, line)
	}
	if shown < len(r.Quantiles) {
		lines = append(lines, fmt.Sprintf("… %d more keys", len(r.Quantiles)-shown))
	}
	return lines
}

// Line is the first list of quantiles (and the number of keys).
func (Kind) Line(r schema.Release) string {
	if len(r.Quantiles) == 0 {
		return fmt.Sprintf("%d keys", len(r.Keys))
	}
	vals := make([]string, len(r.Quantiles[0]))
	for j, v := range r.Quantiles[0] {
		vals[j] = chart.Num(v)
	}
	s := strings.Join(vals, " ")
	if len(r.Keys) > 0 {
		s = fmt.Sprintf("%d keys; %s: %s", len(r.Keys), chart.Clean(r.Keys[0], 16), s)
	}
	return s
}
