package count

import "github.com/dpstream/dpstream/internal/config"

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "The number of kept events in the window (after contribution bounding), with discrete Laplace or Gaussian noise of sensitivity L."
}

// Fields: a count has no keys of its own.
func (Kind) Fields() []config.Field { return nil }

// Decode has nothing to read.
func (Kind) Decode(*config.Params, *config.Release) {}

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
