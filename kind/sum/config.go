package sum

import (
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/kind/internal/keys"
)

// Fields are the value field and its bounds.
func (Kind) Fields() []config.Field {
	return append([]config.Field{keys.FieldDoc("whose values are summed (numbers; a numeric string is `invalid_value`)"), keys.BoundsDoc}, append(grouped.Fields(false), config.ContinualField)...)
}

// Decode reads field and bounds, both required, into a *keys.Value, or
// with group_by into a *grouped.Config.
func (Kind) Decode(p *config.Params, r *config.Release) {
	grouped.DecodeValue(p, r, Name, false)
	p.Continual(r)
}

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "The sum of a numeric field over the kept events, each value clamped to `bounds`, with discrete noise of sensitivity L·max(|lo|, |hi|)."
}

// KeyHint points a histogram's fields to field.
func (Kind) KeyHint(key string) string {
	if key == "fields" {
		return "use field for its one field"
	}
	return ""
}

// Config is the kind's own keys: its field and bounds.
type Config = keys.Value
