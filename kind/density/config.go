package density

import (
	"fmt"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/internal/keys"
	mdensity "github.com/dpstream/dpstream/mechanism/density"
)

// TermsAuto is the value of terms that chooses the number of terms from
// expected_events and smoothness (mdensity.AutoTerms).
const TermsAuto = "auto"

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "An orthogonal-series (cosine basis) estimate of a numeric field's density on `bounds`: noisy coefficients and the density on a grid, optionally with synthetic samples (see [density releases](#density-releases))."
}

// Fields are the field, its bounds, the terms, the grid and the samples.
func (Kind) Fields() []config.Field {
	return []config.Field{
		keys.FieldDoc("whose density is estimated (numbers)"),
		keys.BoundsDoc,
		{Key: "terms", Type: "int \\| `auto`", Default: "required", Doc: fmt.Sprintf("1–%d cosine terms, or `auto`", mdensity.MaxTerms)},
		keys.ExpectedEventsDoc("`terms: auto`"),
		{Key: "smoothness", Type: "number", Default: "`2`", Doc: "`terms: auto` only: the assumed smoothness γ > 0; auto uses m = ⌈expected_events^(1/(2γ+1))⌉ terms"},
		{Key: "grid_points", Type: "int", Default: fmt.Sprintf("`max(%d, terms + 1)`", mdensity.DefaultGridPoints), Doc: fmt.Sprintf("points the density is published at, `terms + 1`–%d", mdensity.MaxGridPoints)},
		keys.SamplesDoc,
	}
}

// Decode reads a density's keys: field, bounds, terms (an integer or
// auto), smoothness (terms: auto only), grid_points, expected_events
// (which terms: auto needs) and samples.
func (Kind) Decode(p *config.Params, rel *config.Release) {
	r := &Config{}
	rel.Params = r
	keys.Field(p, &r.Field, Name, "", "")
	keys.Bounds(p, &r.Bounds, Name)
	if v, ok := p.Value("terms"); ok {
		line := v.Line()
		if v.Is(TermsAuto) {
			r.TermsAuto = true
		} else if n, _, ok := p.Int("terms"); ok {
			if n < 1 || n > mdensity.MaxTerms {
				p.Errorf(line, p.Path("terms"), "must be in 1..%d or %s, got %d", mdensity.MaxTerms, TermsAuto, n)
			} else {
				r.Terms = n
			}
		}
	} else {
		p.Errorf(p.Line(), p.Path("terms"), "required for kind density: the number of cosine terms (1..%d), or %s with expected_events", mdensity.MaxTerms, TermsAuto)
	}
	if v, line, ok := p.Number("smoothness"); ok {
		switch {
		case !r.TermsAuto && p.Has("terms"):
			p.Errorf(line, p.Path("smoothness"), "is only used with terms: %s", TermsAuto)
		case !config.Finite(v) || v <= 0:
			p.Errorf(line, p.Path("smoothness"), "must be finite and > 0, got %s", config.FormatFloat(v))
		default:
			r.Smoothness = v
		}
	}
	if r.TermsAuto && r.Smoothness == 0 {
		r.Smoothness = mdensity.DefaultSmoothness
	}
	if v, line, ok := p.Int("grid_points"); ok {
		switch {
		case v < 2 || v > mdensity.MaxGridPoints:
			p.Errorf(line, p.Path("grid_points"), "must be in 2..%d, got %d", mdensity.MaxGridPoints, v)
		case r.Terms > 0 && v < r.Terms+1:
			// A coarser grid cannot represent the highest term.
			p.Errorf(line, p.Path("grid_points"), "must be at least terms + 1 = %d, got %d", r.Terms+1, v)
		default:
			r.GridPoints = v
		}
	}
	keys.ExpectedEvents(p, &r.ExpectedEvents, "terms", r.TermsAuto, "the number of terms")
	keys.Samples(p, &r.Samples)
}

// KeyHint points a histogram's fields to field.
func (Kind) KeyHint(key string) string {
	if key == "fields" {
		return "use field for its one field"
	}
	return ""
}
