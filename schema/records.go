package schema

import (
	"fmt"

	"github.com/linkedin/goavro/v2"
)

// Partial is one accumulate instance's exact statistics of one stream window
// on one input partition (schema dpstream.Partial, topic dpstream.partials).
// It is emitted also for empty windows, so that the release stage can tell
// when every partition has closed the window. Its contents are exact, not
// private: it never leaves the internal topic.
type Partial struct {
	Stream      string         `json:"stream"`
	WindowStart int64          `json:"window_start"` // unix ms, inclusive
	WindowEnd   int64          `json:"window_end"`   // unix ms, exclusive
	Partition   int32          `json:"partition"`    // input partition
	Partitions  int32          `json:"partitions"`   // number of partitions of the input topic
	Events      int64          `json:"events"`       // events kept (after contribution bounding)
	Units       int64          `json:"units"`        // distinct privacy units with kept events
	Dropped     int64          `json:"dropped"`      // events dropped by contribution bounding
	FirstOffset int64          `json:"first_offset"` // -1 when the window is empty on this partition
	LastOffset  int64          `json:"last_offset"`  // -1 when empty
	Stats       []ReleaseStats `json:"stats"`
	// UnitContributions are the window's units' own contributions, for
	// per-instance DP; empty when UnitsTruncated.
	UnitContributions []UnitContribution `json:"unit_contributions,omitempty"`
	// UnitsTruncated is set when the window had too many units to carry
	// their contributions in one record.
	UnitsTruncated bool `json:"units_truncated,omitempty"`
	// Chunk and Chunks number the records a partition's partial of one
	// window was split into when it exceeded a Kafka record (Chunks 0: a
	// partial in one record). Every chunk repeats the window's fields.
	Chunk  int32 `json:"chunk,omitempty"`
	Chunks int32 `json:"chunks,omitempty"`
}

// UnitContribution is one privacy unit's own contribution to a window's
// statistics on one partition: per release (in the order of
// Partial.Stats), a short summary whose layout depends on the kind (see
// accumulate.UnitNorms).
type UnitContribution struct {
	Unit  string      `json:"unit"`
	Norms [][]float64 `json:"norms"`
}

// ReleaseStats is the sufficient statistics of one release within a Partial.
// Every statistic is an integer, so partials merge exactly and in any order.
// The sums are fixed-point: in units of the quantum of the release's
// aggregate.Quantizer, which its configured bounds fix (it is not carried
// here).
type ReleaseStats struct {
	Release string `json:"release"`
	Count   int64  `json:"count"`
	// SumUnits is a sum release's Σ Units(clamped v).
	SumUnits int64 `json:"sum_units"`
	// CenteredSumUnits is a mean release's Σ Units(clamped v), centered on
	// the midpoint of the bounds.
	CenteredSumUnits int64   `json:"centered_sum_units"`
	Bins             []int64 `json:"bins"` // empty unless histogram
	Clamped          int64   `json:"clamped"`
	// Terms are a density release's exact cosine-basis sums
	// K_j = Σ k_j(x), j = 1..m, in units of 2^-30 (see
	// density.Quantizer); empty unless density. Like Bins they
	// are integers, so partials merge exactly.
	Terms []int64 `json:"terms"`
	// XtX, Xty and Yty are a regression release's exact sufficient
	// statistics (regression.Stats, with N = Count): the upper
	// triangle of XᵀX, Xᵀy and yᵀy of the scaled rows in units of 2⁻³².
	XtX []int64 `json:"xtx,omitempty"`
	Xty []int64 `json:"xty,omitempty"`
	Yty int64   `json:"yty,omitempty"`
	// Groups are a per-key release's exact statistics, one per key, sorted
	// by key (and the one group, key "", of a global variance or
	// quantiles release); empty for other releases.
	Groups []GroupStats `json:"groups,omitempty"`
}

// GroupStats is one key's exact statistics within a ReleaseStats. Like
// every partial statistic they are integers, so partials merge exactly.
type GroupStats struct {
	Key   string `json:"key"`
	Units int64  `json:"units"` // distinct privacy units with kept events of the key
	Count int64  `json:"count"` // kept events of the key
	// Sums are the kind's fixed-point sums of the key, in its units.
	Sums []int64 `json:"sums,omitempty"`
	// Cells are the kind's sparse integer cells as (index, count) pairs,
	// sorted by index.
	Cells []int64 `json:"cells,omitempty"`
}

// NoiseComponent is one noise addition of a release: what the accountant
// charges.
type NoiseComponent struct {
	Purpose     string  `json:"purpose"`   // what the noise is added to, named by the release's kind: "count", "bins", "basis_sums", "xtx", …
	Mechanism   string  `json:"mechanism"` // an accountant mechanism: "discrete_laplace", "discrete_gaussian", "approx_dp", "exponential", "zcdp", …
	Sensitivity float64 `json:"sensitivity"`
	Scale       float64 `json:"scale"`
	Epsilon     float64 `json:"epsilon"`
	Delta       float64 `json:"delta"`
}

// Release is a public private release of one window, or a refusal (Status
// "budget_exhausted", no data) (schema dpstream.Release, topic
// dpstream.releases).
type Release struct {
	ReleaseID     string           `json:"release_id"` // "<stream>/<release>/<window_start ms>"
	Stream        string           `json:"stream"`
	Release       string           `json:"release"`
	Kind          string           `json:"kind"` // count | sum | mean | histogram | density | randomized_response
	WindowStart   int64            `json:"window_start"`
	WindowEnd     int64            `json:"window_end"`
	Status        string           `json:"status"`  // "ok" | "budget_exhausted"
	Epsilon       float64          `json:"epsilon"` // the release's configured epsilon
	Delta         float64          `json:"delta"`
	Noise         []NoiseComponent `json:"noise"`
	Value         *float64         `json:"value,omitempty"` // avro ["null","double"]
	Interval95    *float64         `json:"interval95,omitempty"`
	NoisyCounts   []float64        `json:"noisy_counts,omitempty"`
	Probabilities []float64        `json:"probabilities,omitempty"`
	Densities     []float64        `json:"densities,omitempty"`
	Edges         []float64        `json:"edges,omitempty"`
	// Coefficients are a density release's noisy cosine-series
	// coefficients β̃_j, j = 1..m; Edges then holds the evaluation grid and
	// Densities the density values on it.
	Coefficients []float64 `json:"coefficients,omitempty"`
	// Fields are the fields a histogram is taken over (in the order of
	// Shape and Edges), or a randomized_response release's field.
	Fields []string `json:"fields,omitempty"`
	// Shape is a histogram's bins per field; the cells of NoisyCounts,
	// Probabilities and Densities are row-major, the last field fastest,
	// and Edges holds each field's Shape[i]+1 edges in turn.
	Shape []int64 `json:"shape,omitempty"`
	// Categories are a randomized_response release's category names, in
	// the order of NoisyCounts (noisy report counts), DebiasedCounts,
	// StdErrors and Probabilities (debiased frequencies on the simplex).
	Categories     []string  `json:"categories,omitempty"`
	DebiasedCounts []float64 `json:"debiased_counts,omitempty"`
	StdErrors      []float64 `json:"std_errors,omitempty"`
	// LocalEpsilon is the producers' local ε per report
	// (randomized_response).
	LocalEpsilon *float64 `json:"local_epsilon,omitempty"`
	// Method, Intercept and Ridge describe a regression release: its
	// method, the intercept on the original scale (Coefficients then holds
	// one coefficient per feature, in the order of Fields, and StdErrors
	// their noise-only standard errors) and the ridge λ used on the
	// scaled problem.
	Method    string   `json:"method,omitempty"`
	Intercept *float64 `json:"intercept,omitempty"`
	Ridge     *float64 `json:"ridge,omitempty"`
	// Selected are the features of the model a pcls regression selected
	// privately; the others' Coefficients are 0.
	Selected []string `json:"selected,omitempty"`
	// Samples are synthetic values drawn from the released histogram or
	// density (post-processing): row-major, len(Fields) values per sample
	// for a histogram, one for a density.
	Samples []float64 `json:"samples,omitempty"`
	// Keys are a per-key release's released keys, sorted (or a
	// select_keys release's selected keys); Values, Intervals95 and
	// Quantiles are aligned with them.
	Keys        []string  `json:"keys,omitempty"`
	Values      []float64 `json:"values,omitempty"`
	Intervals95 []float64 `json:"intervals95,omitempty"`
	// Ranks are a quantiles release's ranks, and Quantiles its released
	// quantiles at those ranks, one list per key (one list in all without
	// group_by).
	Ranks     []float64   `json:"ranks,omitempty"`
	Quantiles [][]float64 `json:"quantiles,omitempty"`
	// Chunk and Chunks number the records of a release too large for one
	// Kafka record (Chunks 0: a release in one record); each chunk carries
	// a slice of Keys and of the arrays aligned with them.
	Chunk  int32 `json:"chunk,omitempty"`
	Chunks int32 `json:"chunks,omitempty"`
	// Horizon and HorizonWindow place a continual release (kind/running):
	// its charge covers Horizon windows, and this is window HorizonWindow
	// (1-based) of them. RunningTotal (count, sum) or RunningTotals (one
	// per histogram bin) are the running totals since the horizon's first
	// window, with their 95% half-widths; the release's usual value fields
	// hold the increments over the previous window's totals.
	Horizon            int32     `json:"horizon,omitempty"`
	HorizonWindow      int32     `json:"horizon_window,omitempty"`
	RunningTotal       *float64  `json:"running_total,omitempty"`
	RunningInterval95  *float64  `json:"running_interval95,omitempty"`
	RunningTotals      []float64 `json:"running_totals,omitempty"`
	RunningIntervals95 []float64 `json:"running_intervals95,omitempty"`
	EpsilonSpent       float64   `json:"epsilon_spent"` // stream's epsilon spent at its delta after this release
	EpsilonBudget      float64   `json:"epsilon_budget"`
	PublishedAt        int64     `json:"published_at"` // unix ms when computed
}

// LedgerCharge is the commit point of a release: the charge and the full
// release payload (schema dpstream.LedgerCharge, topic dpstream.ledger).
// After a crash the payload is republished verbatim, never recomputed.
type LedgerCharge struct {
	ReleaseID   string           `json:"release_id"`
	Stream      string           `json:"stream"`
	Release     string           `json:"release"`
	WindowStart int64            `json:"window_start"`
	Period      int64            `json:"period"`  // budget period index (0 for lifetime budgets)
	Status      string           `json:"status"`  // ok | budget_exhausted (refused: nothing charged)
	Charges     []NoiseComponent `json:"charges"` // empty when refused
	RDP         []float64        `json:"rdp"`     // written empty; older ledgers held the charge's RDP curve here, ignored when read (the curve is recomputed from Charges)
	Payload     []byte           `json:"payload"` // Avro-encoded Release, republished verbatim
	At          int64            `json:"at"`
	// ContinualFirst, ContinualX, ContinualZ and ContinualFactor are
	// LEGACY: ledgers written before State existed (schema v2 to v4) hold
	// a continual release's step log here (steps ContinualFirst up to the
	// window's own, n coordinates each, step-major: each step's exact
	// statistic X — PRE-NOISE DATA — and its noise Z, made under the
	// factorization ContinualFactor). They are still decoded, and package
	// kind/running reads them when it replays such a charge
	// (kind.State.Replay); nothing writes them any more.
	ContinualFirst  int32   `json:"continual_first,omitempty"`
	ContinualX      []int64 `json:"continual_x,omitempty"`
	ContinualZ      []int64 `json:"continual_z,omitempty"`
	ContinualFactor string  `json:"continual_factor,omitempty"`
	// KL is the charge's unrestricted KL divergence between the release's
	// output laws on neighbouring inputs, and LinearKL its capacity-bounded
	// KL against linear adversaries (accountant/capacity), each the sum
	// over the charge's noise components: what a restricted adversary can
	// learn, reported beside what anyone can. Both nil when a component has
	// no additive-noise law (approx_dp, exponential, zcdp,
	// randomized_response) or no figure (a discrete component whose
	// recorded sensitivity is not an integer), and in records written
	// before the fields existed; 0 for an empty charge. Reporting only: the
	// accountant charges Charges.
	KL       *float64 `json:"kl,omitempty"`
	LinearKL *float64 `json:"linear_kl,omitempty"`
	// Model is LEGACY: ledgers of schema v4 hold a prediction release's
	// model state for its window here (PRE-NOISE DATA). Still decoded, and
	// read by package kind/prediction when it replays such a charge;
	// nothing writes it any more.
	Model []int64 `json:"model,omitempty"`
	// RequestID, for the answer to a prediction query, is the request it
	// answers: Payload is then a PredictResponse, republished to the
	// responses topic, never to the releases topic. RequestOffset is the
	// request's offset on the requests topic, meaningful only with a
	// RequestID.
	RequestID     string `json:"request_id,omitempty"`
	RequestOffset int64  `json:"request_offset,omitempty"`
	// State is, for a release whose kind keeps state across windows and
	// restarts (kind.Stateful: a continual release's step log, a
	// prediction release's model state), what the window's decision made
	// durable of it, in the kind's own encoding (kind.State.Window's
	// Decision.State): a restart replays it (kind.State.Replay) rather
	// than drawing anything again. PRE-NOISE DATA, never published: the
	// ledger is as sensitive as the partials topic. Empty for other
	// releases and answers. Written since schema v5; it replaces the
	// legacy Continual* and Model fields.
	State []byte `json:"state,omitempty"`
}

// IsAnswer reports whether the charge is the answer to a prediction query
// rather than a release.
func (l LedgerCharge) IsAnswer() bool { return l.RequestID != "" }

// BudgetState is the latest accountant state of a stream (schema
// dpstream.BudgetState, compacted topic dpstream.accountant, key = stream).
type BudgetState struct {
	Stream           string   `json:"stream"`
	Period           int64    `json:"period"`
	ReleasesCharged  int64    `json:"releases_charged"`
	ReleasesRefused  int64    `json:"releases_refused"`
	EpsilonSpent     float64  `json:"epsilon_spent"`
	PureEpsilon      *float64 `json:"pure_epsilon,omitempty"` // set while every charge was pure
	Delta            float64  `json:"delta"`
	EpsilonBudget    float64  `json:"epsilon_budget"`
	EpsilonRemaining float64  `json:"epsilon_remaining"`
	UpdatedAt        int64    `json:"updated_at"`
	// KL and LinearKL are the period's composed figures so far: the sums
	// of the KL and LinearKL of its charges that have them (non-adaptive
	// composition, which dpstream's releases satisfy: independent noise,
	// no release's mechanism depending on another's output).
	// ReleasesWithoutKL counts the charged releases left out, whose charge
	// has no figure: when it is non-zero the figures describe only the
	// others. 0 in records written before the fields existed.
	KL                float64 `json:"kl"`
	LinearKL          float64 `json:"linear_kl"`
	ReleasesWithoutKL int64   `json:"releases_without_kl"`
}

// EncodePartial encodes p as binary Avro with schema dpstream.Partial.
func EncodePartial(p Partial) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	stats := make([]any, len(p.Stats))
	for i, s := range p.Stats {
		stats[i] = map[string]any{
			"release":            s.Release,
			"count":              s.Count,
			"sum_units":          s.SumUnits,
			"centered_sum_units": s.CenteredSumUnits,
			"bins":               longsToNative(s.Bins),
			"clamped":            s.Clamped,
			"terms":              longsToNative(s.Terms),
			"xtx":                longsToNative(s.XtX),
			"xty":                longsToNative(s.Xty),
			"yty":                s.Yty,
			"groups":             groupsToNative(s.Groups),
		}
	}
	return encode(c.partial, "Partial", map[string]any{
		"stream":             p.Stream,
		"window_start":       p.WindowStart,
		"window_end":         p.WindowEnd,
		"partition":          p.Partition,
		"partitions":         p.Partitions,
		"events":             p.Events,
		"units":              p.Units,
		"dropped":            p.Dropped,
		"first_offset":       p.FirstOffset,
		"last_offset":        p.LastOffset,
		"stats":              stats,
		"unit_contributions": unitsToNative(p.UnitContributions),
		"units_truncated":    p.UnitsTruncated,
		"chunk":              p.Chunk,
		"chunks":             p.Chunks,
	})
}

func groupsToNative(gs []GroupStats) []any {
	out := make([]any, len(gs))
	for i, g := range gs {
		out[i] = map[string]any{
			"key":   g.Key,
			"units": g.Units,
			"count": g.Count,
			"sums":  longsToNative(g.Sums),
			"cells": longsToNative(g.Cells),
		}
	}
	return out
}

func unitsToNative(us []UnitContribution) []any {
	out := make([]any, len(us))
	for i, u := range us {
		norms := make([]any, len(u.Norms))
		for j, n := range u.Norms {
			norms[j] = doublesToNative(n)
		}
		out[i] = map[string]any{"unit": u.Unit, "norms": norms}
	}
	return out
}

// DecodePartial decodes binary Avro written by EncodePartial; the package
// documentation lists how empty slices and trailing bytes are treated.
func DecodePartial(b []byte) (Partial, error) {
	c, err := codecs()
	if err != nil {
		return Partial{}, err
	}
	r, err := decode(c.partial, "Partial", b)
	if err != nil {
		return Partial{}, err
	}
	p := Partial{
		Stream:      r.str("stream"),
		WindowStart: r.millis("window_start"),
		WindowEnd:   r.millis("window_end"),
		Partition:   r.int("partition"),
		Partitions:  r.int("partitions"),
		Events:      r.long("events"),
		Units:       r.long("units"),
		Dropped:     r.long("dropped"),
		FirstOffset: r.long("first_offset"),
		LastOffset:  r.long("last_offset"),
	}
	items := r.records("stats")
	p.Stats = make([]ReleaseStats, len(items))
	for i, item := range items {
		p.Stats[i] = ReleaseStats{
			Release:          item.str("release"),
			Count:            item.long("count"),
			SumUnits:         item.long("sum_units"),
			CenteredSumUnits: item.long("centered_sum_units"),
			Bins:             nonNil(item.longs("bins")),
			Clamped:          item.long("clamped"),
			Terms:            nonNil(item.longs("terms")),
			XtX:              item.longs("xtx"),
			Xty:              item.longs("xty"),
			Yty:              item.long("yty"),
		}
		for _, g := range item.records("groups") {
			p.Stats[i].Groups = append(p.Stats[i].Groups, GroupStats{
				Key:   g.str("key"),
				Units: g.long("units"),
				Count: g.long("count"),
				Sums:  g.longs("sums"),
				Cells: g.longs("cells"),
			})
		}
	}
	for _, u := range r.records("unit_contributions") {
		uc := UnitContribution{Unit: u.str("unit")}
		for _, n := range u.array("norms") {
			xs, ok := n.([]any)
			if !ok {
				u.fail("norms[]", "[]any", n)
				break
			}
			vs := make([]float64, len(xs))
			for k, x := range xs {
				f, ok := x.(float64)
				if !ok {
					u.fail("norms[][]", "float64", x)
				}
				vs[k] = f
			}
			uc.Norms = append(uc.Norms, vs)
		}
		p.UnitContributions = append(p.UnitContributions, uc)
	}
	p.UnitsTruncated = r.boolean("units_truncated")
	p.Chunk = r.int("chunk")
	p.Chunks = r.int("chunks")
	if err := r.error(); err != nil {
		return Partial{}, fmt.Errorf("schema: decode Partial: %w", err)
	}
	return p, nil
}

// EncodeRelease encodes r as binary Avro with schema dpstream.Release.
func EncodeRelease(r Release) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(c.release, "Release", map[string]any{
		"release_id":          r.ReleaseID,
		"stream":              r.Stream,
		"release":             r.Release,
		"kind":                r.Kind,
		"window_start":        r.WindowStart,
		"window_end":          r.WindowEnd,
		"status":              r.Status,
		"epsilon":             r.Epsilon,
		"delta":               r.Delta,
		"noise":               noiseToNative(r.Noise),
		"value":               optDoubleToNative(r.Value),
		"interval95":          optDoubleToNative(r.Interval95),
		"noisy_counts":        doublesToNative(r.NoisyCounts),
		"probabilities":       doublesToNative(r.Probabilities),
		"densities":           doublesToNative(r.Densities),
		"edges":               doublesToNative(r.Edges),
		"coefficients":        doublesToNative(r.Coefficients),
		"fields":              stringsToNative(r.Fields),
		"shape":               longsToNative(r.Shape),
		"categories":          stringsToNative(r.Categories),
		"debiased_counts":     doublesToNative(r.DebiasedCounts),
		"std_errors":          doublesToNative(r.StdErrors),
		"local_epsilon":       optDoubleToNative(r.LocalEpsilon),
		"method":              r.Method,
		"intercept":           optDoubleToNative(r.Intercept),
		"ridge":               optDoubleToNative(r.Ridge),
		"selected":            stringsToNative(r.Selected),
		"samples":             doublesToNative(r.Samples),
		"keys":                stringsToNative(r.Keys),
		"values":              doublesToNative(r.Values),
		"intervals95":         doublesToNative(r.Intervals95),
		"ranks":               doublesToNative(r.Ranks),
		"quantiles":           doubleListsToNative(r.Quantiles),
		"chunk":               r.Chunk,
		"chunks":              r.Chunks,
		"horizon":             r.Horizon,
		"horizon_window":      r.HorizonWindow,
		"running_total":       optDoubleToNative(r.RunningTotal),
		"running_interval95":  optDoubleToNative(r.RunningInterval95),
		"running_totals":      doublesToNative(r.RunningTotals),
		"running_intervals95": doublesToNative(r.RunningIntervals95),
		"epsilon_spent":       r.EpsilonSpent,
		"epsilon_budget":      r.EpsilonBudget,
		"published_at":        r.PublishedAt,
	})
}

// DecodeRelease decodes binary Avro written by EncodeRelease; the package
// documentation lists how empty slices and trailing bytes are treated.
func DecodeRelease(b []byte) (Release, error) {
	c, err := codecs()
	if err != nil {
		return Release{}, err
	}
	r, err := decode(c.release, "Release", b)
	if err != nil {
		return Release{}, err
	}
	rel := Release{
		ReleaseID:          r.str("release_id"),
		Stream:             r.str("stream"),
		Release:            r.str("release"),
		Kind:               r.str("kind"),
		WindowStart:        r.millis("window_start"),
		WindowEnd:          r.millis("window_end"),
		Status:             r.str("status"),
		Epsilon:            r.double("epsilon"),
		Delta:              r.double("delta"),
		Noise:              nonNil(r.noise("noise")),
		Value:              r.optDouble("value"),
		Interval95:         r.optDouble("interval95"),
		NoisyCounts:        r.doubles("noisy_counts"),
		Probabilities:      r.doubles("probabilities"),
		Densities:          r.doubles("densities"),
		Edges:              r.doubles("edges"),
		Coefficients:       r.doubles("coefficients"),
		Fields:             r.strings("fields"),
		Shape:              r.longs("shape"),
		Categories:         r.strings("categories"),
		DebiasedCounts:     r.doubles("debiased_counts"),
		StdErrors:          r.doubles("std_errors"),
		LocalEpsilon:       r.optDouble("local_epsilon"),
		Method:             r.str("method"),
		Intercept:          r.optDouble("intercept"),
		Ridge:              r.optDouble("ridge"),
		Selected:           r.strings("selected"),
		Samples:            r.doubles("samples"),
		Keys:               r.strings("keys"),
		Values:             r.doubles("values"),
		Intervals95:        r.doubles("intervals95"),
		Ranks:              r.doubles("ranks"),
		Quantiles:          r.doubleLists("quantiles"),
		Chunk:              r.int("chunk"),
		Chunks:             r.int("chunks"),
		Horizon:            r.int("horizon"),
		HorizonWindow:      r.int("horizon_window"),
		RunningTotal:       r.optDouble("running_total"),
		RunningInterval95:  r.optDouble("running_interval95"),
		RunningTotals:      r.doubles("running_totals"),
		RunningIntervals95: r.doubles("running_intervals95"),
		EpsilonSpent:       r.double("epsilon_spent"),
		EpsilonBudget:      r.double("epsilon_budget"),
		PublishedAt:        r.millis("published_at"),
	}
	if err := r.error(); err != nil {
		return Release{}, fmt.Errorf("schema: decode Release: %w", err)
	}
	return rel, nil
}

// EncodeLedgerCharge encodes l as binary Avro with schema
// dpstream.LedgerCharge. The payload is copied into the record byte for byte.
func EncodeLedgerCharge(l LedgerCharge) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(c.ledgerCharge, "LedgerCharge", map[string]any{
		"release_id":       l.ReleaseID,
		"stream":           l.Stream,
		"release":          l.Release,
		"window_start":     l.WindowStart,
		"period":           l.Period,
		"status":           l.Status,
		"charges":          noiseToNative(l.Charges),
		"rdp":              doublesToNative(l.RDP),
		"payload":          l.Payload,
		"at":               l.At,
		"continual_first":  l.ContinualFirst,
		"continual_x":      longsToNative(l.ContinualX),
		"continual_z":      longsToNative(l.ContinualZ),
		"continual_factor": l.ContinualFactor,
		"kl":               optDoubleToNative(l.KL),
		"linear_kl":        optDoubleToNative(l.LinearKL),
		"model":            longsToNative(l.Model),
		"request_id":       l.RequestID,
		"request_offset":   l.RequestOffset,
		"state":            nonNil(l.State),
	})
}

// DecodeLedgerCharge decodes binary Avro written by EncodeLedgerCharge; the package
// documentation lists how empty slices and trailing bytes are treated.
func DecodeLedgerCharge(b []byte) (LedgerCharge, error) {
	c, err := codecs()
	if err != nil {
		return LedgerCharge{}, err
	}
	// Fields are only ever appended, so a charge written by an older
	// version ends where the newer fields begin: it fails to decode with
	// every newer schema for lack of them (trailing bytes are an error,
	// so a newer record never decodes with an older schema either), and
	// decodes exactly with its own. Try the schemas newest first: v5 (the
	// kinds' state), v4 (schema/legacy/ledger_charge_v4.avsc, the
	// prediction fields), v3 (schema/legacy/ledger_charge_v3.avsc, the
	// capacity-bounded figures), v2 (schema/legacy/ledger_charge_v2.avsc,
	// the continual fields), v1 (schema/legacy/ledger_charge_v1.avsc).
	version := 5
	r, err := decode(c.ledgerCharge, "LedgerCharge", b)
	if err != nil {
		for _, old := range []struct {
			codec   *goavro.Codec
			version int
		}{{c.ledgerChargeV4, 4}, {c.ledgerChargeV3, 3}, {c.ledgerChargeV2, 2}, {c.ledgerChargeV1, 1}} {
			if r1, err1 := decode(old.codec, "LedgerCharge", b); err1 == nil {
				r, version, err = r1, old.version, nil
				break
			}
		}
		if err != nil {
			return LedgerCharge{}, err
		}
	}
	l := LedgerCharge{
		ReleaseID:   r.str("release_id"),
		Stream:      r.str("stream"),
		Release:     r.str("release"),
		WindowStart: r.millis("window_start"),
		Period:      r.long("period"),
		Status:      r.str("status"),
		Charges:     nonNil(r.noise("charges")),
		RDP:         nonNil(r.doubles("rdp")),
		Payload:     r.bytes("payload"),
		At:          r.millis("at"),
	}
	if version >= 2 {
		l.ContinualFirst, l.ContinualX, l.ContinualZ = r.int("continual_first"), r.longs("continual_x"), r.longs("continual_z")
		l.ContinualFactor = r.str("continual_factor")
	}
	if version >= 3 {
		l.KL, l.LinearKL = r.optDouble("kl"), r.optDouble("linear_kl")
	}
	if version >= 4 {
		l.Model, l.RequestID, l.RequestOffset = r.longs("model"), r.str("request_id"), r.long("request_offset")
	}
	if version >= 5 {
		if l.State = r.bytes("state"); len(l.State) == 0 {
			l.State = nil
		}
	}
	if err := r.error(); err != nil {
		return LedgerCharge{}, fmt.Errorf("schema: decode LedgerCharge: %w", err)
	}
	return l, nil
}

// EncodeBudgetState encodes s as binary Avro with schema dpstream.BudgetState.
func EncodeBudgetState(s BudgetState) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(c.budgetState, "BudgetState", map[string]any{
		"stream":              s.Stream,
		"period":              s.Period,
		"releases_charged":    s.ReleasesCharged,
		"releases_refused":    s.ReleasesRefused,
		"epsilon_spent":       s.EpsilonSpent,
		"pure_epsilon":        optDoubleToNative(s.PureEpsilon),
		"delta":               s.Delta,
		"epsilon_budget":      s.EpsilonBudget,
		"epsilon_remaining":   s.EpsilonRemaining,
		"updated_at":          s.UpdatedAt,
		"kl":                  s.KL,
		"linear_kl":           s.LinearKL,
		"releases_without_kl": s.ReleasesWithoutKL,
	})
}

// DecodeBudgetState decodes binary Avro written by EncodeBudgetState; the package
// documentation lists how empty slices and trailing bytes are treated.
func DecodeBudgetState(b []byte) (BudgetState, error) {
	c, err := codecs()
	if err != nil {
		return BudgetState{}, err
	}
	// As for charges (DecodeLedgerCharge): a state written before the
	// capacity-bounded figures were appended decodes with its own schema
	// (schema/legacy/budget_state_v1.avsc), with the figures 0. The
	// accountant topic is compacted and read at start (the lost-ledger
	// check), so its old records must stay readable after an upgrade.
	legacy := false
	r, err := decode(c.budgetState, "BudgetState", b)
	if err != nil {
		r1, err1 := decode(c.budgetStateV1, "BudgetState", b)
		if err1 != nil {
			return BudgetState{}, err
		}
		r, legacy = r1, true
	}
	s := BudgetState{
		Stream:           r.str("stream"),
		Period:           r.long("period"),
		ReleasesCharged:  r.long("releases_charged"),
		ReleasesRefused:  r.long("releases_refused"),
		EpsilonSpent:     r.double("epsilon_spent"),
		PureEpsilon:      r.optDouble("pure_epsilon"),
		Delta:            r.double("delta"),
		EpsilonBudget:    r.double("epsilon_budget"),
		EpsilonRemaining: r.double("epsilon_remaining"),
		UpdatedAt:        r.millis("updated_at"),
	}
	if !legacy {
		s.KL, s.LinearKL, s.ReleasesWithoutKL = r.double("kl"), r.double("linear_kl"), r.long("releases_without_kl")
	}
	if err := r.error(); err != nil {
		return BudgetState{}, fmt.Errorf("schema: decode BudgetState: %w", err)
	}
	return s, nil
}

// encode runs the goavro encoder; record names the record type in errors.
func encode(codec *goavro.Codec, record string, native map[string]any) ([]byte, error) {
	b, err := codec.BinaryFromNative(nil, native)
	if err != nil {
		return nil, fmt.Errorf("schema: encode %s: %w", record, err)
	}
	return b, nil
}

// decode runs the goavro decoder and rejects trailing bytes.
func decode(codec *goavro.Codec, record string, b []byte) (*nativeRecord, error) {
	native, rest, err := codec.NativeFromBinary(b)
	if err != nil {
		return nil, fmt.Errorf("schema: decode %s: %w", record, err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("schema: decode %s: %d trailing bytes after the record", record, len(rest))
	}
	m, ok := native.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema: decode %s: goavro returned %T, want a record", record, native)
	}
	return newNativeRecord(m, record), nil
}

func longsToNative(xs []int64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func stringsToNative(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func doublesToNative(xs []float64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func doubleListsToNative(xs [][]float64) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = doublesToNative(x)
	}
	return out
}

func noiseToNative(ns []NoiseComponent) []any {
	out := make([]any, len(ns))
	for i, n := range ns {
		out[i] = map[string]any{
			"purpose":     n.Purpose,
			"mechanism":   n.Mechanism,
			"sensitivity": n.Sensitivity,
			"scale":       n.Scale,
			"epsilon":     n.Epsilon,
			"delta":       n.Delta,
		}
	}
	return out
}

// optDoubleToNative maps a *float64 to goavro's form of the union
// ["null","double"].
func optDoubleToNative(x *float64) any {
	if x == nil {
		return nil
	}
	return map[string]any{"double": *x}
}

// nonNil returns xs, or an empty slice when xs is nil.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
