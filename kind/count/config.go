package count

import (
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/internal/grouped"
)

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "The number of kept events in the window (after contribution bounding), with discrete Laplace or Gaussian noise of sensitivity L; with `group_by`, the number per key."
}

// Fields are the group-by keys: a count has no others.
func (Kind) Fields() []config.Field {
	return append(grouped.Fields(false), config.ContinualField)
}

// Decode reads the group-by keys, if any, into a *grouped.Config.
func (Kind) Decode(p *config.Params, r *config.Release) {
	if c := grouped.Decode(p, Name, false); c != nil {
		r.Params = c
	}
	p.Continual(r)
}

// KeyHint explains why a count takes no value field or bounds.
func (Kind) KeyHint(key string) string {
	switch key {
	case "field":
		return "a count has no value field"
	case "bounds":
		return "a count has no values to bound"
	}
	return ""
}

// GroupConfig is the configuration of a release with group_by, of this
// kind or any other per-key kind (sum, mean, count_units, select_keys):
// the key field, the contribution bounds, the public keys or the key
// selection, and the value field of a sum or a mean.
type GroupConfig = grouped.Config
