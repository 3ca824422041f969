// Package selectkeys is the release kind select_keys: the set of keys of a
// group_by field that occur in a window, selected privately, with no value
// per key. It is what a downstream system needs to learn which keys exist
// (cities, merchants) before it asks per-key questions with public keys.
//
// Guarantee: (ε, δ)-DP for the published key set under add/remove of one
// privacy unit, all of ε and δ spent by the selection of
// mechanism/selection (its doc has each method's proof): a unit counts in
// at most max_keys keys (its first, by offset), so it changes the
// distinct-unit count of at most that many keys by one, and a key reported
// by that unit alone is released with probability at most δ in total.
// Source: Desfontaines, Voss, Gipson & Mandayam (2022), "Differentially
// private partition selection", PoPETs; Korolova et al. (2009) for
// thresholding; Google's differential-privacy library.
package selectkeys

import (
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/internal/grouped"
	"github.com/dpstream/dpstream/kind/internal/keys"
)

// Name is the kind's name in the configuration and in release records.
const Name = "select_keys"

func init() { kind.Register(Kind{}) }

// Kind is the select_keys kind; it draws its releases as the list of keys.
type Kind struct{ grouped.KeysRenderer }

// Name returns "select_keys".
func (Kind) Name() string { return Name }

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "The keys of `group_by` that occur in the window, selected privately (a key is published only if enough distinct units report it); no values."
}

// Fields are group_by (required), max_keys and selection's method.
func (Kind) Fields() []config.Field {
	var out []config.Field
	for _, f := range grouped.Fields(true) {
		if f.Key != "max_per_key" && f.Key != "keys" {
			out = append(out, f)
		}
	}
	return out
}

// Decode reads the group-by keys into a *grouped.Config.
func (Kind) Decode(p *config.Params, r *config.Release) {
	if c := grouped.Decode(p, Name, true); c != nil {
		r.Params = c
	}
}

// DecodePrivacy reads epsilon and delta, both the selection's.
func (Kind) DecodePrivacy(p *config.Params, r *config.Release) {
	c, _ := r.Params.(*grouped.Config)
	grouped.SelectionOnly(p, r, c)
}

// Plan calibrates the selection.
func (Kind) Plan(st *config.Stream, r config.Release) (kind.Plan, error) {
	c, err := keys.Params[grouped.Config](r)
	if err != nil {
		return nil, err
	}
	return grouped.NewPlan(st, r, c, grouped.Metric{Name: Name})
}
