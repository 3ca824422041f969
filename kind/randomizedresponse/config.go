package randomizedresponse

import (
	"fmt"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/mechanism/rr"
)

// MaxCategories is the most categories a release may have.
//
// Each category is a noisy count in the release, so the bound keeps the
// release small; it does not affect privacy (the L1 sensitivity of the
// counts does not depend on their number).
const MaxCategories = 1000

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return "The counts of a categorical field that producers randomized locally (k-ary randomized response), with central noise, debiased into estimates of the true counts (see [randomized response](#randomized-response))."
}

// Fields are the field, its categories, the producers' randomization and
// the cap.
func (Kind) Fields() []config.Field {
	return []config.Field{
		keys.FieldDoc("holding the reported category (a string)"),
		{Key: "categories", Type: "list of strings", Default: "required", Doc: fmt.Sprintf("the values the field can take, 2–%d, distinct, not blank; the producers must randomize over the same list", MaxCategories)},
		{Key: "p", Type: "number", Default: "—", Doc: "exactly one of `p` and `epsilon_local` required: the producers' randomization probability (a report is a uniform category with probability p), in (0, 1)"},
		{Key: "epsilon_local", Type: "number", Default: "—", Doc: "instead of `p`: the producers' local ε, > 0 and finite; p = k/(e^ε + k − 1) for k categories"},
		keys.MaxPerBinDoc("category (a binding cap biases the estimates)"),
	}
}

// Decode reads the keys of a randomized_response release: field,
// categories, and exactly one of p and epsilon_local, which describe how
// the producers randomized the field (rr.Randomizer). The release
// uses them to debias the counts; they do not change the central
// guarantee, whose noise is set by noise, epsilon and delta.
func (Kind) Decode(p *config.Params, rel *config.Release) {
	r := &Config{}
	rel.Params = r
	// In the order dpstream has always reported them (on a release
	// written on one line, the sort by line keeps it): field, max_per_bin,
	// categories, p and epsilon_local.
	keys.Field(p, &r.Field, Name, "", ": the string field that producers randomized")
	keys.MaxPerBin(p, &r.MaxPerBin)
	cats := categories(p)
	r.Categories = cats
	hasP, hasEps := p.Has("p"), p.Has("epsilon_local")
	switch {
	case hasP && hasEps:
		p.Errorf(p.KeyLine("epsilon_local"), p.Path("epsilon_local"), "cannot be given together with p (line %d): both describe the producers' randomization; give exactly one", p.KeyLine("p"))
	case !hasP && !hasEps:
		p.Errorf(p.Line(), p.Path("epsilon_local"), "required for kind randomized_response (or p instead): the local ε the producers randomized the field with; give exactly one of epsilon_local and p")
	}
	if v, line, ok := p.Number("p"); ok {
		switch {
		case !(v > 0 && v < 1): // also true for NaN
			p.Errorf(line, p.Path("p"), "must be in (0, 1), the probability that a producer reports a uniform category instead of the true one, got %s", config.FormatFloat(v))
		case !hasEps:
			r.RRProbability = v
		}
	}
	if v, line, ok := p.Number("epsilon_local"); ok {
		switch {
		case !config.Finite(v):
			p.Errorf(line, p.Path("epsilon_local"), "must be finite, got %s", config.FormatFloat(v))
			return
		case v <= 0:
			p.Errorf(line, p.Path("epsilon_local"), "must be > 0, got %s", config.FormatFloat(v))
			return
		}
		if len(cats) >= 2 {
			// The producers compute p from ε and k; refuse an ε for which
			// no float64 p exists rather than let them fail.
			if _, err := rr.ForEpsilon(len(cats), v); err != nil {
				p.Errorf(line, p.Path("epsilon_local"), "%s is too large for %d categories: no randomization probability reaches it (e^ε overflows above about 709); use a smaller epsilon_local", config.FormatFloat(v), len(cats))
				return
			}
		}
		if !hasP {
			r.LocalEpsilon = v
		}
	}
}

// KeyHint explains why a categorical field has no bounds, bins or fields.
func (Kind) KeyHint(key string) string {
	switch key {
	case "bins":
		return "its categories are its bins"
	case "bounds":
		return "its field is categorical: list its values in categories"
	case "fields":
		return "use field for its one field"
	}
	return ""
}

// categories reads the categories: 2 to MaxCategories distinct, non-blank
// strings. It returns nil after an error.
func categories(p *config.Params) []string {
	cpath := p.Path("categories")
	if !p.Has("categories") {
		p.Errorf(p.Line(), cpath, "required for kind randomized_response: the values its field can take, e.g. [walk, bike, bus, car] (2 to %d)", MaxCategories)
		return nil
	}
	items, line, ok := p.List("categories")
	if !ok {
		return nil
	}
	if len(items) < 2 || len(items) > MaxCategories {
		p.Errorf(line, cpath, "must list 2 to %d categories, got %d", MaxCategories, len(items))
		return nil
	}
	type seenAt struct{ index, line int }
	seen := map[string]seenAt{}
	out := make([]string, 0, len(items))
	ok = true
	for i, item := range items {
		ipath := config.Index(cpath, i)
		v, isScalar := item.Scalar()
		switch {
		case !isScalar:
			p.Errorf(item.Line(), ipath, "must be a string, got %s", item.Describe())
			ok = false
		case strings.TrimSpace(v) == "":
			p.Errorf(item.Line(), ipath, "must not be blank: a category is a value of the field")
			ok = false
		default:
			if first, dup := seen[v]; dup {
				p.Errorf(item.Line(), ipath, "%q is also categories[%d] (line %d); categories must be distinct", v, first.index, first.line)
				ok = false
				continue
			}
			seen[v] = seenAt{i, item.Line()}
			out = append(out, v)
		}
	}
	if !ok {
		return nil
	}
	return out
}
