// Package grouped is what the per-key release kinds share: the group_by
// configuration (the key field, the contribution bounds max_keys and
// max_per_key, public keys or private key selection), the exact per-key
// statistic the accumulate stage keeps, the merge of its partials, the
// choice of the released keys, and the chart of the top keys. Each kind
// (count, sum, mean and count_units with group_by, select_keys) supplies
// what it computes per key (a Metric); the guarantee of a per-key release
// is that of its key selection (mechanism/selection) composed with that of
// its per-key values (mechanism/keyed), both documented there.
package grouped

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/mechanism/selection"
)

// MaxKeyBytes is the longest key (accumulate.MaxKeyBytes): a public key
// longer than any event's could never be reported.
const MaxKeyBytes = 256

// MaxPublicKeys is the most public keys a release may list.
const MaxPublicKeys = 1 << 20

// Config is the group-by part of a release's configuration, with the
// release's own field and bounds for the kinds that aggregate a value.
type Config struct {
	// Value is the aggregated field and its bounds (sum, mean); zero for
	// the kinds that count.
	Value keys.Value
	// GroupBy is the key field.
	GroupBy string
	// MaxKeys is L0, the most keys one unit contributes to per window (its
	// first, by offset).
	MaxKeys int
	// PerKey is c, the most events of one unit counted in one key per
	// window (its first there, by offset); 0 means L.
	PerKey int
	// Keys are the public keys, sorted and unique; nil when the keys are
	// selected privately.
	Keys []string
	// Selection is the private key selection when Keys is nil.
	Selection Selection
}

// Selection is how a release without public keys selects them: the method
// and the share of the release's ε and δ it spends.
type Selection struct {
	Method         selection.Method
	Epsilon, Delta float64
}

// Group returns c: a kind's configuration that embeds a Config (as
// quantiles' does) has it too, which is how Privacy finds it.
func (c *Config) Group() *Config { return c }

// Privacy gives a per-key kind, which embeds it, its DecodePrivacy: the
// privacy keys of a release by DecodePrivacy, the group-by configuration
// being the release's Params (a *Config, or a type embedding one; none, or
// one without group_by, for the common rules).
type Privacy struct{}

// DecodePrivacy reads noise, epsilon and delta (see DecodePrivacy).
func (Privacy) DecodePrivacy(p *config.Params, r *config.Release) {
	var c *Config
	if g, ok := r.Params.(interface{ Group() *Config }); ok {
		if c = g.Group(); c != nil && c.GroupBy == "" {
			c = nil
		}
	}
	DecodePrivacy(p, r, c)
}

// DecodeValue reads field and bounds (both required) and the group-by keys
// of a kind that aggregates a value: r.Params is a *Config with group_by,
// and without it a *keys.Value, or with global a Global *Config (a kind
// whose statistic is always per key).
func DecodeValue(p *config.Params, r *config.Release, kind string, global bool) {
	v := keys.DecodeValue(p, kind)
	c := Decode(p, kind, false)
	switch {
	case c != nil:
		c.Value = *v
		r.Params = c
	case global:
		r.Params = Global(*v)
	default:
		r.Params = v
	}
}

// Public reports whether the release's keys are public (no selection).
func (c *Config) Public() bool { return c.Keys != nil }

var (
	groupByDoc = config.Field{Key: "group_by", Type: "field name", Default: "—",
		Doc: "release one value per key of this event field (strings as they are, numbers in canonical form); not the privacy unit"}
	maxKeysDoc = config.Field{Key: "max_keys", Type: "int", Default: "1",
		Doc: "with `group_by`: L0, the most keys one privacy unit contributes to per window (its first keys by offset; its events in other keys are not counted)"}
	maxPerKeyDoc = config.Field{Key: "max_per_key", Type: "int", Default: "`max_events_per_window`",
		Doc: "with `group_by`: the most events of one unit counted in one key per window (its first there by offset), 1 to `max_events_per_window`"}
	keysDoc = config.Field{Key: "keys", Type: "list of strings", Default: "—",
		Doc: "with `group_by`: the public keys to release, every window, whether or not they occur (absent ones are released as noise only; keys not listed are not released); without it keys are selected privately"}
	selectionDoc = config.Field{Key: "selection", Type: "mapping", Default: "`{method: auto}`",
		Doc: "with `group_by` and no `keys`: `method` (`auto`, `laplace`, `gaussian` or `optimal`), and the share of the release's `epsilon` and `delta` that key selection spends (default half the ε, and all the δ with laplace noise or half of it with gaussian)"}
)

// Fields are the group-by keys, as a kind's spec lists them; required says
// group_by is required (select_keys).
func Fields(required bool) []config.Field {
	g := groupByDoc
	if required {
		g.Default = "required"
	}
	return []config.Field{g, maxKeysDoc, maxPerKeyDoc, keysDoc, selectionDoc}
}

// groupKeys are the keys that only make sense with group_by.
var groupKeys = []string{"max_keys", "max_per_key", "keys", "selection"}

// Decode reads the group-by keys of a release of kind. It returns nil when
// the release has no group_by (and reports the keys that need one), or
// when group_by is required and missing (reported).
func Decode(p *config.Params, kind string, required bool) *Config {
	if !p.Has("group_by") {
		if required {
			p.Errorf(p.Line(), p.Path("group_by"), "required for kind %s: the event field whose keys are selected", kind)
		}
		for _, k := range groupKeys {
			if p.Has(k) {
				p.Errorf(p.KeyLine(k), p.Path(k), "is only used with group_by")
			}
		}
		return nil
	}
	c := &Config{MaxKeys: 1}
	if v, line, ok := p.String("group_by"); ok {
		if strings.TrimSpace(v) == "" {
			p.Errorf(line, p.Path("group_by"), "must name the event field whose values are the keys")
		} else {
			c.GroupBy = v
			p.Aggregate(v, line, p.Path("group_by"))
		}
	}
	if v, line, ok := p.Int("max_keys"); ok {
		if v < 1 {
			p.Errorf(line, p.Path("max_keys"), "must be at least 1, got %d", v)
		} else {
			c.MaxKeys = v
		}
	}
	if v, line, ok := p.Int("max_per_key"); ok {
		if v < 1 {
			p.Errorf(line, p.Path("max_per_key"), "must be at least 1, got %d", v)
		} else {
			c.PerKey = v
			p.Later(func() {
				if l := p.Stream.MaxEvents; l > 0 && v > l {
					p.Errorf(line, p.Path("max_per_key"), "is %d, more than contribution.max_events_per_window %d (line %d): a unit never has more events in one key than it keeps", v, l, p.Stream.MaxEventsLine)
				}
			})
		}
	}
	if p.Has("keys") {
		c.Keys = publicKeys(p)
		if p.Has("selection") {
			p.Errorf(p.KeyLine("selection"), p.Path("selection"), "is not used with keys: public keys need no selection")
		}
	} else {
		c.Selection = decodeSelection(p)
	}
	return c
}

// publicKeys reads keys: a non-empty list of distinct scalars, each a key
// as the accumulate stage renders it (numbers in canonical form).
func publicKeys(p *config.Params) []string {
	items, line, ok := p.List("keys")
	if !ok {
		return []string{}
	}
	if len(items) == 0 {
		p.Errorf(line, p.Path("keys"), "must list at least one key (or leave keys out to select them privately)")
		return []string{}
	}
	if len(items) > MaxPublicKeys {
		p.Errorf(line, p.Path("keys"), "lists %d keys, more than the %d a release may have", len(items), MaxPublicKeys)
		return []string{}
	}
	out := make([]string, 0, len(items))
	seen := map[string]int{}
	for i, it := range items {
		field := config.Index(p.Path("keys"), i)
		s, ok := it.Scalar()
		if !ok {
			p.Errorf(it.Line(), field, "must be a key (a string or a number), got %s", it.Describe())
			continue
		}
		if f, isNum := it.Number(); isNum {
			s = canonicalNumber(f, s)
		}
		if len(s) > MaxKeyBytes {
			p.Errorf(it.Line(), field, "is %d bytes long, more than the %d a key may have", len(s), MaxKeyBytes)
			continue
		}
		if prev, dup := seen[s]; dup {
			p.Errorf(it.Line(), field, "%q is listed twice (also on line %d)", s, prev)
			continue
		}
		seen[s] = it.Line()
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// canonicalNumber renders a numeric YAML key as the accumulate stage
// renders a numeric event value: integral numbers in decimal, others in
// shortest form (accumulate.KeyString). An integer written as one is read
// from its text, exactly: through float64 an identifier above 2^53 would
// lose digits and never match the events' int64 key.
func canonicalNumber(f float64, text string) string {
	if i, err := strconv.ParseInt(text, 0, 64); err == nil && float64(i) == f {
		return strconv.FormatInt(i, 10)
	}
	if f == math.Trunc(f) && f > -1<<63 && f < 1<<63 {
		return strconv.FormatInt(int64(f), 10)
	}
	if !config.Finite(f) {
		return text
	}
	return config.FormatFloat(f)
}

var selectionKeys = []string{"method", "epsilon", "delta"}

// decodeSelection reads selection's method; its epsilon and delta are
// checked against the release's by DecodePrivacy.
func decodeSelection(p *config.Params) Selection {
	s := Selection{Method: selection.Auto}
	n, ok := p.Value("selection")
	if !ok {
		return s
	}
	sp, ok := p.Mapping(n, p.Path("selection"), selectionKeys)
	if !ok {
		return s
	}
	if v, line, ok := sp.String("method"); ok {
		methods := []selection.Method{selection.Auto, selection.Laplace, selection.Gaussian, selection.Optimal}
		if !slices.Contains(methods, selection.Method(v)) {
			names := make([]string, len(methods))
			for i, m := range methods {
				names[i] = string(m)
			}
			sp.Errorf(line, sp.Path("method"), "%q is not one of %s%s", v, strings.Join(names, ", "), config.DidYouMean(v, names))
		} else {
			s.Method = selection.Method(v)
		}
	}
	if v, line, ok := sp.Number("epsilon"); ok {
		if !(v > 0) || !config.Finite(v) {
			sp.Errorf(line, sp.Path("epsilon"), "must be finite and > 0, got %s", config.FormatFloat(v))
		} else {
			s.Epsilon = v
		}
	}
	if v, line, ok := sp.Number("delta"); ok {
		if !(v > 0 && v < 1) {
			sp.Errorf(line, sp.Path("delta"), "must be in (0, 1), got %s", config.FormatFloat(v))
		} else {
			s.Delta = v
		}
	}
	return s
}

// DecodePrivacy reads noise, epsilon and delta of a release with group_by
// c (nil: without). With public keys or without group_by the common rules
// apply (config.Params.DecodeNoise). With private key selection delta is
// required whatever the noise: selection is (ε, δ)-DP. The selection's
// share defaults to half of ε and, with laplace noise, all of δ (the
// values are then pure ε-DP), with gaussian noise half of it; the shares
// must leave the values some of each.
func DecodePrivacy(p *config.Params, r *config.Release, c *Config) {
	if c == nil || c.Public() {
		p.DecodeNoise(r)
		return
	}
	noise, line, ok := p.String("noise")
	switch {
	case !ok:
		if p.Has("noise") {
			ok = false
		} else {
			r.Noise, ok = config.NoiseLaplace, true
		}
	case noise != config.NoiseLaplace && noise != config.NoiseGaussian:
		p.Errorf(line, p.Path("noise"), "%q is not one of laplace, gaussian", noise)
		ok = false
	default:
		r.Noise = noise
	}
	p.Epsilon(r)
	if !p.Has("delta") {
		p.Errorf(p.Line(), p.Path("delta"), "required with group_by and no keys: a value in (0, 1), the δ of private key selection")
		return
	}
	d, dok := p.Delta()
	if !dok {
		return
	}
	r.Delta = d
	if !ok || r.Epsilon == 0 {
		return
	}
	s := &c.Selection
	sline := p.KeyLine("selection")
	if s.Epsilon == 0 {
		s.Epsilon = r.Epsilon / 2
	} else if s.Epsilon >= r.Epsilon {
		p.Errorf(sline, p.Path("selection")+".epsilon", "is %s, not less than the release's epsilon %s: the values need a share of it", config.FormatFloat(s.Epsilon), config.FormatFloat(r.Epsilon))
	}
	gaussian := r.Noise == config.NoiseGaussian
	switch {
	case s.Delta == 0 && gaussian:
		s.Delta = d / 2
	case s.Delta == 0:
		s.Delta = d
	case gaussian && s.Delta >= d:
		p.Errorf(sline, p.Path("selection")+".delta", "is %s, not less than the release's delta %s: gaussian noise needs a share of it", config.FormatFloat(s.Delta), config.FormatFloat(d))
	case !gaussian && s.Delta != d:
		p.Errorf(sline, p.Path("selection")+".delta", "is %s, but with laplace noise the values are pure ε-DP and selection spends all of delta %s: leave it out", config.FormatFloat(s.Delta), config.FormatFloat(d))
	}
}

// SelectionOnly reads the privacy keys of a release whose whole budget
// selects keys (select_keys): epsilon and delta, both required, no noise.
func SelectionOnly(p *config.Params, r *config.Release, c *Config) {
	if p.Has("noise") {
		p.Errorf(p.KeyLine("noise"), p.Path("noise"), "is not used with kind select_keys: the selection's method (selection.method) decides its noise")
	}
	p.Epsilon(r)
	if !p.Has("delta") {
		p.Errorf(p.Line(), p.Path("delta"), "required for kind select_keys: a value in (0, 1), the δ of private key selection")
	} else if v, ok := p.Delta(); ok {
		r.Delta = v
	}
	if c == nil {
		return
	}
	if c.Public() {
		p.Errorf(p.KeyLine("keys"), p.Path("keys"), "is not used with kind select_keys: it selects keys privately")
	}
	if c.Selection.Epsilon != 0 || c.Selection.Delta != 0 {
		p.Errorf(p.KeyLine("selection"), p.Path("selection"), "takes only method with kind select_keys: selection spends the release's whole epsilon and delta")
	}
	c.Selection.Epsilon, c.Selection.Delta = r.Epsilon, r.Delta
}
