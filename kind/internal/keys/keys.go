// Package keys reads the configuration keys that several release kinds
// share (field, bounds, expected_events, max_per_bin, samples), with their
// documentation, so that each rule and each message is written once. A
// kind lists the Field of each key it reads in its spec and calls the
// reader from its Decode.
package keys

import (
	"fmt"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
)

// MaxSamples is the most synthetic values a release may publish with
// samples: enough for exploratory use, and small enough that the release
// fits in one Kafka record (plan.MaxRecordBytes).
const MaxSamples = 100000

// FieldDoc documents `field` for a kind; what says what the field's values
// are.
func FieldDoc(what string) config.Field {
	return config.Field{Key: "field", Type: "field name", Default: "required",
		Doc: "the event field " + what + "; not the privacy unit"}
}

// Field reads field, the release's value field, and records that the
// release aggregates it. It is required unless alternative is given (a
// histogram's fields); hint ends the "required" message.
func Field(p *config.Params, dst *string, kind, alternative, hint string) {
	if v, line, ok := p.String("field"); ok {
		if strings.TrimSpace(v) == "" {
			p.Errorf(line, p.Path("field"), "must name the event field to aggregate")
			return
		}
		*dst = v
		p.Aggregate(v, line, p.Path("field"))
		return
	}
	if !p.Has("field") && (alternative == "" || !p.Has(alternative)) {
		p.Errorf(p.Line(), p.Path("field"), "required for kind %s%s", kind, hint)
	}
}

// BoundsDoc documents `bounds` for a kind whose one field is clamped.
var BoundsDoc = config.Field{Key: "bounds", Type: "`[lo, hi]`", Default: "required",
	Doc: "finite, `lo < hi`, `hi − lo` finite. Values are clamped into it"}

// Bounds reads bounds, the [lo, hi] the release's values are clamped to;
// it is required.
func Bounds(p *config.Params, dst *[2]float64, kind string) {
	if !p.Has("bounds") {
		p.Errorf(p.Line(), p.Path("bounds"), "required for kind %s: [lo, hi], the range values are clamped to", kind)
		return
	}
	if b, ok := p.Bounds("bounds"); ok {
		*dst = b
	}
}

// ExpectedEventsDoc documents expected_events; auto names the key it
// sizes (e.g. "`bins: auto`").
func ExpectedEventsDoc(auto string) config.Field {
	return config.Field{Key: "expected_events", Type: "int", Default: "—",
		Doc: "required with " + auto + ", allowed only there: the kept events per window you expect, ≥ 1, declared in advance (never read from the data, so the release's shape does not depend on it)"}
}

// ExpectedEvents reads expected_events, the declared number of kept events
// per window that `key: auto` sizes the release for (key is bins or
// terms, and auto whether it is set to auto); why says what it sizes.
func ExpectedEvents(p *config.Params, dst *int, key string, auto bool, why string) {
	epath := p.Path("expected_events")
	if !p.Has("expected_events") {
		// The shape of a release must not depend on the window's own data,
		// so auto needs a size declared in advance.
		if auto {
			p.Errorf(p.KeyLine(key), epath, "required with %s: auto: the expected number of kept events per window, declared in advance (the window's own count would make %s depend on the data)", key, why)
		}
		return
	}
	if !auto && p.Has(key) {
		p.Errorf(p.KeyLine("expected_events"), epath, "is only used with %s: auto (it sizes the %s)", key, sized(key))
		return
	}
	v, line, ok := p.Int("expected_events")
	if !ok {
		return
	}
	if v < 1 {
		p.Errorf(line, epath, "must be >= 1, got %d", v)
		return
	}
	*dst = v
}

func sized(key string) string {
	if key == "terms" {
		return "number of terms"
	}
	return key
}

// MaxPerBinDoc documents max_per_bin; cell names what is capped.
func MaxPerBinDoc(cell string) config.Field {
	return config.Field{Key: "max_per_bin", Type: "int", Default: "none (c = L)",
		Doc: "c, the most events of one unit counted in one " + cell + " per window, 1–`max_events_per_window`. It lowers the L2 sensitivity to at most √(L·c), so Gaussian noise; Laplace noise is unchanged"}
}

// MaxPerBin reads max_per_bin, the per-unit cap c on the events counted in
// one cell, which must be at most the stream's L.
func MaxPerBin(p *config.Params, dst *int) {
	if !p.Has("max_per_bin") {
		return
	}
	v, line, ok := p.Int("max_per_bin")
	if !ok {
		return
	}
	if v < 1 {
		p.Errorf(line, p.Path("max_per_bin"), "must be >= 1 (leave it out for no per-bin cap), got %d", v)
		return
	}
	*dst = v
	// A unit has at most L kept events in a window, so a cap above L caps
	// nothing; it is most likely a mistake about which of the two numbers
	// means what.
	if l := p.Stream.MaxEvents; l > 0 && v > l {
		p.Later(func() {
			p.Errorf(line, p.Path("max_per_bin"), "%d is more than contribution.max_events_per_window %d (line %d): a unit has at most %d kept events in a window, so the cap must be in 1..%d (or left out for none)",
				v, l, p.Stream.MaxEventsLine, l, l)
		})
	}
}

// SamplesDoc documents samples.
var SamplesDoc = config.Field{Key: "samples", Type: "int", Default: "`0`",
	Doc: fmt.Sprintf("synthetic values (rows) drawn from the private release and published with it, 0–%d; post-processing, no extra budget. They must fit in one Kafka record (see [synthetic samples](#synthetic-samples))", MaxSamples)}

// Samples reads samples, the number of synthetic values the release also
// publishes.
func Samples(p *config.Params, dst *int) {
	v, line, ok := p.Int("samples")
	if !ok {
		return
	}
	if v < 0 || v > MaxSamples {
		p.Errorf(line, p.Path("samples"), "must be in 0..%d (0 or absent: none), got %d", MaxSamples, v)
		return
	}
	*dst = v
}

// Value is the configuration of a release of one numeric field clamped to
// bounds: a sum's and a mean's keys.
type Value struct {
	// Field is the event field whose values the release aggregates.
	Field string
	// Bounds is the [lo, hi] values are clamped to (lo < hi, finite).
	Bounds [2]float64
}

// DecodeValue reads field and bounds, both required, into a Value.
func DecodeValue(p *config.Params, kind string) *Value {
	v := &Value{}
	Field(p, &v.Field, kind, "", "")
	Bounds(p, &v.Bounds, kind)
	return v
}

// Params returns r's kind configuration of type *T, or an error naming the
// type it holds: the kinds' Plan methods read their own configuration with
// it, which their Decode set.
func Params[T any](r config.Release) (*T, error) {
	c, ok := r.Params.(*T)
	if !ok || c == nil {
		var want *T
		return nil, fmt.Errorf("release %q of kind %s: configuration of type %T, want %T", r.Name, r.Kind, r.Params, want)
	}
	return c, nil
}
