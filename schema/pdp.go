package schema

import "fmt"

// PDPUnit is one privacy unit's cumulative per-instance DP loss on one
// stream (schema dpstream.PDPUnit, topic dpstream.pdp, compacted, key
// PDPUnitKey). RESTRICTED: it depends on the unit's data.
type PDPUnit struct {
	Stream        string  `json:"stream"`
	Unit          string  `json:"unit"`
	GaussianRho   float64 `json:"gaussian_rho"`
	PureRho       float64 `json:"pure_rho"`
	PureEpsilon   float64 `json:"pure_epsilon"`
	ApproxEpsilon float64 `json:"approx_epsilon"`
	ApproxDelta   float64 `json:"approx_delta"`
	Charges       int64   `json:"charges"`
	LastWindow    int64   `json:"last_window"` // unix ms: windows at or before it are never applied again
	Epsilon       float64 `json:"epsilon"`     // cumulative per-instance ε at Delta
	Delta         float64 `json:"delta"`
	UpdatedAt     int64   `json:"updated_at"`
}

// PDPSummary is one stream window's per-instance DP summary (schema
// dpstream.PDPSummary, topic dpstream.pdp, key PDPSummaryKey).
// RESTRICTED: it depends on the data.
type PDPSummary struct {
	Stream          string       `json:"stream"`
	WindowStart     int64        `json:"window_start"`
	WindowEnd       int64        `json:"window_end"`
	Delta           float64      `json:"delta"`
	Releases        []PDPRelease `json:"releases"`
	CumulativeUnits int64        `json:"cumulative_units"`
	CumulativeP50   float64      `json:"cumulative_p50"`
	CumulativeP90   float64      `json:"cumulative_p90"`
	CumulativeP99   float64      `json:"cumulative_p99"`
	CumulativeMax   float64      `json:"cumulative_max"`
	PublishedAt     int64        `json:"published_at"`
}

// PDPRelease is one release's per-instance ε distribution over the units
// of a window, beside its worst-case DP ε.
type PDPRelease struct {
	Release   string  `json:"release"`
	Status    string  `json:"status"` // ok | budget_exhausted | unavailable
	Units     int64   `json:"units"`
	P50       float64 `json:"p50"`
	P90       float64 `json:"p90"`
	P99       float64 `json:"p99"`
	Max       float64 `json:"max"`
	DPEpsilon float64 `json:"dp_epsilon"`
	// LipschitzSigma is σ_ℓ of an OPS/AdaOPS release's log Lipschitz
	// bound (which the per-instance losses are measured against; it
	// depends on the released λ_min bound); 0 for other releases.
	LipschitzSigma float64 `json:"lipschitz_sigma,omitempty"`
}

// PDPUnitKey is the dpstream.pdp key of a unit's cumulative record.
func PDPUnitKey(stream, unit string) string { return "unit/" + stream + "/" + unit }

// PDPSummaryKey is the dpstream.pdp key of a window's summary.
func PDPSummaryKey(stream string, windowStart int64) string {
	return fmt.Sprintf("summary/%s/%d", stream, windowStart)
}

// PDPTypeHeader is the record header that says which schema a dpstream.pdp
// record has: PDPTypeUnit or PDPTypeSummary.
const (
	PDPTypeHeader  = "dpstream-type"
	PDPTypeUnit    = "pdp_unit"
	PDPTypeSummary = "pdp_summary"
)

// EncodePDPUnit encodes u as binary Avro with schema dpstream.PDPUnit.
func EncodePDPUnit(u PDPUnit) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(c.pdpUnit, "PDPUnit", map[string]any{
		"stream": u.Stream, "unit": u.Unit, "gaussian_rho": u.GaussianRho, "pure_rho": u.PureRho,
		"pure_epsilon": u.PureEpsilon, "approx_epsilon": u.ApproxEpsilon, "approx_delta": u.ApproxDelta,
		"charges": u.Charges, "last_window": u.LastWindow, "epsilon": u.Epsilon, "delta": u.Delta,
		"updated_at": u.UpdatedAt,
	})
}

// DecodePDPUnit decodes binary Avro written by EncodePDPUnit.
func DecodePDPUnit(b []byte) (PDPUnit, error) {
	c, err := codecs()
	if err != nil {
		return PDPUnit{}, err
	}
	r, err := decode(c.pdpUnit, "PDPUnit", b)
	if err != nil {
		return PDPUnit{}, err
	}
	u := PDPUnit{
		Stream: r.str("stream"), Unit: r.str("unit"), GaussianRho: r.double("gaussian_rho"), PureRho: r.double("pure_rho"),
		PureEpsilon: r.double("pure_epsilon"), ApproxEpsilon: r.double("approx_epsilon"), ApproxDelta: r.double("approx_delta"),
		Charges: r.long("charges"), LastWindow: r.millis("last_window"), Epsilon: r.double("epsilon"), Delta: r.double("delta"),
		UpdatedAt: r.millis("updated_at"),
	}
	if err := r.error(); err != nil {
		return PDPUnit{}, fmt.Errorf("schema: decode PDPUnit: %w", err)
	}
	return u, nil
}

// EncodePDPSummary encodes s as binary Avro with schema dpstream.PDPSummary.
func EncodePDPSummary(s PDPSummary) ([]byte, error) {
	c, err := codecs()
	if err != nil {
		return nil, err
	}
	rels := make([]any, len(s.Releases))
	for i, r := range s.Releases {
		rels[i] = map[string]any{"release": r.Release, "status": r.Status, "units": r.Units, "p50": r.P50,
			"p90": r.P90, "p99": r.P99, "max": r.Max, "dp_epsilon": r.DPEpsilon, "lipschitz_sigma": r.LipschitzSigma}
	}
	return encode(c.pdpSummary, "PDPSummary", map[string]any{
		"stream": s.Stream, "window_start": s.WindowStart, "window_end": s.WindowEnd, "delta": s.Delta,
		"releases": rels, "cumulative_units": s.CumulativeUnits, "cumulative_p50": s.CumulativeP50,
		"cumulative_p90": s.CumulativeP90, "cumulative_p99": s.CumulativeP99, "cumulative_max": s.CumulativeMax,
		"published_at": s.PublishedAt,
	})
}

// DecodePDPSummary decodes binary Avro written by EncodePDPSummary.
func DecodePDPSummary(b []byte) (PDPSummary, error) {
	c, err := codecs()
	if err != nil {
		return PDPSummary{}, err
	}
	r, err := decode(c.pdpSummary, "PDPSummary", b)
	if err != nil {
		return PDPSummary{}, err
	}
	s := PDPSummary{
		Stream: r.str("stream"), WindowStart: r.millis("window_start"), WindowEnd: r.millis("window_end"),
		Delta: r.double("delta"), CumulativeUnits: r.long("cumulative_units"), CumulativeP50: r.double("cumulative_p50"),
		CumulativeP90: r.double("cumulative_p90"), CumulativeP99: r.double("cumulative_p99"),
		CumulativeMax: r.double("cumulative_max"), PublishedAt: r.millis("published_at"),
	}
	for _, x := range r.records("releases") {
		s.Releases = append(s.Releases, PDPRelease{Release: x.str("release"), Status: x.str("status"), Units: x.long("units"),
			P50: x.double("p50"), P90: x.double("p90"), P99: x.double("p99"), Max: x.double("max"), DPEpsilon: x.double("dp_epsilon"),
			LipschitzSigma: x.double("lipschitz_sigma")})
	}
	if err := r.error(); err != nil {
		return PDPSummary{}, fmt.Errorf("schema: decode PDPSummary: %w", err)
	}
	return s, nil
}
