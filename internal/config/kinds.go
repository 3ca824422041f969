package config

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// This file is the configuration's side of the release-kind registry: the
// keys every release has (name, kind, noise, epsilon, delta) are read
// here, and each kind's own keys by its KindSpec, which package kind
// registers (kind.Register) for every release kind it links in. The
// configuration knows kinds only through these specs: which keys a kind
// reads, their documentation (README's reference is generated from it,
// ReleaseReference), and how to decode and check them.

// Field documents one configuration key of a release: a row of the
// configuration reference.
type Field struct {
	// Key is the YAML key.
	Key string
	// Type is the value's type as the reference shows it, e.g.
	// "int, list of ints, or `auto`".
	Type string
	// Default is the value when the key is absent ("required" for a
	// required key, "—" when absent means "not set").
	Default string
	// Doc states the rules and what the key does, in Markdown.
	Doc string
}

// KindSpec is what the configuration knows of a release kind.
type KindSpec interface {
	// Name is the kind's value of `kind:`.
	Name() string
	// Doc is a one-line description of the kind for the reference.
	Doc() string
	// Fields are the keys the kind reads beyond the common ones (name,
	// kind, epsilon, and noise and delta unless it decodes them itself),
	// in the order the reference lists them.
	Fields() []Field
	// Decode reads the kind's keys of one release into r, reporting every
	// mistake through p (never stopping at the first). Keys the kind does
	// not list in Fields have been reported already.
	Decode(p *Params, r *Release)
}

// PrivacyDecoder is implemented by a KindSpec that reads the noise and
// delta keys itself (e.g. a kind whose method fixes its noise); other
// kinds get the common rules (DecodeNoise). DecodePrivacy reads epsilon
// with Params.Epsilon where its errors belong among its own (the common
// rules read noise, epsilon, delta, in that order); epsilon is read after
// DecodePrivacy returns if it has not been.
type PrivacyDecoder interface {
	DecodePrivacy(p *Params, r *Release)
}

// KeyHinter is implemented by a KindSpec that explains, for a key of
// another kind given to a release of its own, why the key does not apply
// (e.g. a count's "a count has no value field"). The hint is appended to
// the error in parentheses.
type KeyHinter interface {
	KeyHint(key string) string
}

var (
	specsMu sync.RWMutex
	specs   []KindSpec // in registration order
)

// RegisterKind makes a release kind's configuration known. It is called by
// kind.Register, once per kind; a second spec of one name is a programming
// error and panics.
func RegisterKind(s KindSpec) {
	specsMu.Lock()
	defer specsMu.Unlock()
	for _, o := range specs {
		if o.Name() == s.Name() {
			panic("config: RegisterKind called twice for kind " + s.Name())
		}
	}
	specs = append(specs, s)
}

// KindSpecs returns the registered kinds' specs, sorted by name.
func KindSpecs() []KindSpec {
	specsMu.RLock()
	out := slices.Clone(specs)
	specsMu.RUnlock()
	slices.SortFunc(out, func(a, b KindSpec) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

func kindSpec(name string) (KindSpec, bool) {
	for _, s := range KindSpecs() {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// kindNames returns the registered kinds' names, sorted.
func kindNames() []string {
	var out []string
	for _, s := range KindSpecs() {
		out = append(out, s.Name())
	}
	return out
}

// commonReleaseFields are the keys every release has.
var commonReleaseFields = []Field{
	{Key: "name", Type: "string", Default: "required", Doc: "same characters as a stream name; unique within the stream"},
	{Key: "kind", Type: "a registered kind", Default: "required", Doc: "what the release computes; one of the kinds below"},
	{Key: "noise", Type: "`laplace` \\| `gaussian`", Default: "`laplace`", Doc: "Laplace is pure ε-DP; Gaussian is (ε, δ)-DP and composes better over many releases. A kind may fix its own noise (see its table)"},
	{Key: "epsilon", Type: "number", Default: "required", Doc: "> 0, finite: this release's cost per window. `explain` and `run` refuse a release whose single window already exceeds the stream's budget"},
	{Key: "delta", Type: "number", Default: "`0`", Doc: "with `gaussian`: required, in (0, 1). With `laplace`: absent or 0"},
}

// releaseKeys returns every key a release may have: the common ones and
// every registered kind's, each once, for the unknown-key check.
func releaseKeys() []string {
	keys := []string{"name", "kind"}
	for _, s := range KindSpecs() {
		for _, f := range s.Fields() {
			if !slices.Contains(keys, f.Key) {
				keys = append(keys, f.Key)
			}
		}
	}
	for _, k := range []string{"noise", "epsilon", "delta"} {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// keyOwners returns the kinds that read key, sorted.
func keyOwners(key string) []string {
	var out []string
	for _, s := range KindSpecs() {
		if slices.ContainsFunc(s.Fields(), func(f Field) bool { return f.Key == key }) {
			out = append(out, s.Name())
		}
	}
	return out
}

// orList joins names as "a", "a or b", "a, b or c".
func orList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// StreamContext is what a kind may check its keys against: the stream's
// settings that are read before its releases.
type StreamContext struct {
	// MaxEvents is L, contribution.max_events_per_window (0 when missing
	// or invalid, which is reported elsewhere), and MaxEventsLine its line.
	MaxEvents, MaxEventsLine int
}

// Params is one release's mapping as its kind decodes it (KindSpec.Decode):
// typed readers of its keys, each recording a `file:line: field: message`
// error when the value is wrong, and the stream's context.
type Params struct {
	d *decoder
	m *mapping
	// Stream holds the stream's settings a kind's checks may need.
	Stream StreamContext
	// aggregates are the event fields the release aggregates (Aggregate).
	aggregates []fieldRef
	// epsilonRead is set once epsilon has been read (Epsilon).
	epsilonRead bool
	// later are the checks against the stream (Later).
	later []func()
}

// Path returns the field path of one of the release's keys, e.g.
// "streams[0].releases[1].bins", for errors.
func (p *Params) Path(key string) string { return join(p.m.path, key) }

// Line returns the line of the release's mapping, where errors about a
// missing key are reported.
func (p *Params) Line() int { return p.m.line }

// KeyLine returns the line of key's value, or 0 when the key is absent.
func (p *Params) KeyLine(key string) int {
	if v, ok := p.m.values[key]; ok && v != nil {
		return v.Line
	}
	return 0
}

// Has reports whether key is present with a non-null value.
func (p *Params) Has(key string) bool { return p.m.has(key) }

// Errorf records an error at line for field (a full path: Path, Index).
func (p *Params) Errorf(line int, field, format string, args ...any) {
	p.d.errorf(line, field, format, args...)
}

// Require records a "required field is missing" error for each absent key.
func (p *Params) Require(keys ...string) { p.d.require(p.m, keys...) }

// String reads a string key (any scalar is accepted as its text) and
// returns it with its line; ok is false when absent or wrong.
func (p *Params) String(key string) (string, int, bool) { return p.d.str(p.m, key) }

// Int reads an integer key.
func (p *Params) Int(key string) (int, int, bool) { return p.d.integer(p.m, key) }

// Number reads a number key; infinities and NaN are returned for the
// caller to reject with context.
func (p *Params) Number(key string) (float64, int, bool) { return p.d.number(p.m, key) }

// Bool reads a true/false key.
func (p *Params) Bool(key string) (bool, bool) { return p.d.boolean(p.m, key) }

// Value returns key's value, ok false when absent or null.
func (p *Params) Value(key string) (Node, bool) {
	v := p.m.value(key)
	return Node{v}, v != nil
}

// List returns the items of a list key and the key's line; ok is false
// when absent or (after recording an error) not a list.
func (p *Params) List(key string) ([]Node, int, bool) {
	items, line, ok := p.d.list(p.m, key)
	return nodes(items), line, ok
}

// Bounds reads [lo, hi] with lo < hi, both finite, and hi − lo finite.
func (p *Params) Bounds(key string) ([2]float64, bool) {
	items, line, ok := p.d.list(p.m, key)
	if !ok {
		return [2]float64{}, false
	}
	return p.d.boundsPair(items, line, p.Path(key))
}

// BoundsPair checks the items of one [lo, hi] list on line, reporting
// errors for field.
func (p *Params) BoundsPair(items []Node, line int, field string) ([2]float64, bool) {
	raw := make([]*yaml.Node, len(items))
	for i, it := range items {
		raw[i] = it.n
	}
	return p.d.boundsPair(raw, line, field)
}

// Mapping decodes n as a nested mapping of the release whose keys must
// be among known (every other key is reported), at field path; ok is false
// (after recording an error) when n is not a mapping.
func (p *Params) Mapping(n Node, field string, known []string) (*Params, bool) {
	m := p.d.mappingOf(n.n, field, known, nil)
	if m == nil {
		return nil, false
	}
	return &Params{d: p.d, m: m, Stream: p.Stream}, true
}

// ContinualField documents the continual key, for the kinds that read it
// (Params.Continual).
var ContinualField = Field{Key: "continual", Type: "mapping", Default: "none",
	Doc: "running totals: `{horizon: T, method: auto}`. Each window then also publishes `running_total` (one per bin for a histogram) since the first window of its horizon of T windows (horizons follow one another from the stream's `start`), and the value is its increment. `epsilon` and `delta` cover the whole horizon, charged at its first released window (and again at its first window in each later `budget.per` period it spans); noise must be `gaussian`. `method`: `auto` (smallest expected error), `per_window`, `tree`, `sqrt` or `blt`"}

var continualKeys = []string{"method", "horizon"}

// maxContinualHorizon bounds continual.horizon; a method may allow less
// (kind/running reports it).
const maxContinualHorizon = 1 << 20

// Continual reads the release's continual mapping into r.Continual, if
// present: horizon is required, an integer in [1, 2^20]; method one of
// ContinualMethods (default auto).
func (p *Params) Continual(r *Release) {
	n, ok := p.Value("continual")
	if !ok {
		return
	}
	cp, ok := p.Mapping(n, p.Path("continual"), continualKeys)
	if !ok {
		return
	}
	c := &Continual{Method: ContinualAuto, Line: cp.Line()}
	valid := true
	cp.Require("horizon")
	if v, line, ok := cp.Int("horizon"); ok {
		if v < 1 || v > maxContinualHorizon {
			cp.Errorf(line, cp.Path("horizon"), "must be in [1, %d] windows, got %d", maxContinualHorizon, v)
			valid = false
		}
		c.Horizon = v
	} else {
		valid = false
	}
	if v, line, ok := cp.String("method"); ok {
		if !contains(ContinualMethods, v) {
			cp.Errorf(line, cp.Path("method"), "%q is not one of %s%s", v, strings.Join(ContinualMethods, ", "), didYouMean(v, ContinualMethods))
			valid = false
		}
		c.Method = v
	}
	if valid {
		r.Continual = c
	}
}

// Aggregate records that the release aggregates the event field name,
// given at line for field: the stream checks that no release aggregates
// its privacy unit.
func (p *Params) Aggregate(name string, line int, field string) {
	p.aggregates = append(p.aggregates, fieldRef{name, line, field})
}

// Later runs check after the release's every key has been read and the
// stream has checked the event fields it aggregates: for a check of a key
// against the stream's settings (Stream), whose error the file has always
// reported after the release's own, even on the same line.
func (p *Params) Later(check func()) { p.later = append(p.later, check) }

// DecodeNoise reads noise, epsilon (Epsilon) and delta, in that order, by
// the common rules: noise is laplace (default, pure ε-DP: delta absent or
// 0) or gaussian (delta required, in (0, 1)).
func (p *Params) DecodeNoise(r *Release) {
	d, m := p.d, p.m
	noise, noiseLine, noiseOK := d.str(m, "noise")
	if noiseOK && !contains(noises, noise) {
		d.errorf(noiseLine, p.Path("noise"), "%q is not one of %s%s", noise, strings.Join(noises, ", "), didYouMean(noise, noises))
		noiseOK = false
	}
	if noiseOK {
		r.Noise = noise
	}
	p.Epsilon(r)
	noiseKnown := noiseOK || !m.has("noise")
	switch {
	case noiseKnown && r.Noise == NoiseGaussian:
		if !m.has("delta") {
			d.errorf(m.line, p.Path("delta"), "required with noise gaussian: a value in (0, 1)")
		} else if v, ok := d.delta(m); ok {
			r.Delta = v
		}
	case noiseKnown && r.Noise == NoiseLaplace:
		// Laplace noise is pure ε-DP; a delta here would suggest a
		// guarantee the mechanism does not use, and would be charged for
		// nothing.
		if v, line, ok := d.number(m, "delta"); ok && v != 0 {
			d.errorf(line, p.Path("delta"), "must be 0 or absent with noise laplace (pure ε-DP); use noise: gaussian for (ε, δ)-DP, got %s", fmtFloat(v))
		}
	}
}

// Epsilon reads epsilon, the release's ε per window (> 0, finite), into
// r, once: its errors are reported where it is first called, which for
// the common rules is between noise and delta (DecodeNoise). A missing
// epsilon has been reported with the release's other required keys.
func (p *Params) Epsilon(r *Release) {
	if p.epsilonRead {
		return
	}
	p.epsilonRead = true
	if v, ok := p.d.epsilon(p.m); ok {
		r.Epsilon = v
	}
}

// Delta reads a delta in the open interval (0, 1).
func (p *Params) Delta() (float64, bool) { return p.d.delta(p.m) }

// Node is one YAML value of a release's configuration, for keys whose
// values are lists or mappings.
type Node struct{ n *yaml.Node }

func nodes(items []*yaml.Node) []Node {
	out := make([]Node, len(items))
	for i, it := range items {
		out[i] = Node{it}
	}
	return out
}

// Line is the node's line (0 for an absent node).
func (n Node) Line() int {
	if n.n == nil {
		return 0
	}
	return n.n.Line
}

// IsNull reports whether the node is absent or null.
func (n Node) IsNull() bool { return isNull(n.n) }

// Describe names the node's kind for "must be X, got Y" messages.
func (n Node) Describe() string { return describe(n.n) }

// Scalar returns a non-null scalar's text.
func (n Node) Scalar() (string, bool) {
	r := resolve(n.n)
	if r == nil || r.Kind != yaml.ScalarNode || isNull(r) {
		return "", false
	}
	return r.Value, true
}

// Is reports whether the node is the plain string s (e.g. `auto`), not a
// number or a quoted-looking value of another type.
func (n Node) Is(s string) bool {
	r := resolve(n.n)
	return r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() == "!!str" && r.Value == s
}

// IsMapping reports whether the node is a mapping.
func (n Node) IsMapping() bool {
	r := resolve(n.n)
	return r != nil && r.Kind == yaml.MappingNode
}

// IsScalar reports whether the node is a scalar (null included).
func (n Node) IsScalar() bool {
	r := resolve(n.n)
	return r != nil && r.Kind == yaml.ScalarNode
}

// Int returns an integer scalar's value.
func (n Node) Int() (int, bool) { return intOf(resolve(n.n)) }

// Number returns an int or float scalar's value.
func (n Node) Number() (float64, bool) { return numberOf(resolve(n.n)) }

// Items returns a list's items; ok is false when the node is not a list.
func (n Node) Items() ([]Node, bool) {
	r := resolve(n.n)
	if r == nil || r.Kind != yaml.SequenceNode {
		return nil, false
	}
	return nodes(r.Content), true
}

// Index appends a list index to a field path: Index("a.b", 2) is "a.b[2]".
func Index(path string, i int) string { return index(path, i) }

// Join appends a key to a field path: Join("a", "b") is "a.b".
func Join(path, key string) string { return join(path, key) }

// FormatFloat prints a float the way a user would have written it.
func FormatFloat(f float64) string { return fmtFloat(f) }

// Finite reports whether f is neither infinite nor NaN.
func Finite(f float64) bool { return finite(f) }

// DidYouMean returns ` (did you mean "x"?)` when got is a plausible typo
// of one of candidates, or "".
func DidYouMean(got string, candidates []string) string { return didYouMean(got, candidates) }

// FormatInts prints a list of integers as YAML would: [30, 400, 2].
func FormatInts(v []int) string { return fmtInts(v) }

// kindRelease decodes the keys of a release of a known kind: a key of
// another kind is reported (with the kinds that read it and the kind's
// hint), then the kind reads its own, then noise, epsilon and delta by the
// common rules unless the kind reads them itself.
func (d *decoder) kindRelease(p *Params, spec KindSpec, r *Release) {
	own := map[string]bool{"name": true, "kind": true, "noise": true, "epsilon": true, "delta": true}
	for _, f := range spec.Fields() {
		own[f.Key] = true
	}
	for _, key := range releaseKeys() {
		if own[key] || !p.m.has(key) {
			continue
		}
		hint := ""
		if h, ok := spec.(KeyHinter); ok {
			if s := h.KeyHint(key); s != "" {
				hint = " (" + s + ")"
			}
		}
		d.errorf(p.m.values[key].Line, p.Path(key), "is only used with kind %s, not %s%s", orList(keyOwners(key)), spec.Name(), hint)
	}
	spec.Decode(p, r)
	if pd, ok := spec.(PrivacyDecoder); ok {
		pd.DecodePrivacy(p, r)
		p.Epsilon(r)
		return
	}
	p.DecodeNoise(r)
}

// ReleaseReference returns the configuration reference of releases, in
// Markdown: the common keys, then one table per registered kind, generated
// from the specs (README.md holds a copy, which a test keeps equal).
func ReleaseReference() string {
	var b strings.Builder
	table := func(fields []Field) {
		b.WriteString("| key | type | default | rules |\n|---|---|---|---|\n")
		for _, f := range fields {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Key, f.Type, f.Default, f.Doc)
		}
	}
	b.WriteString("Every release has these keys:\n\n")
	common := slices.Clone(commonReleaseFields)
	var names []string
	for _, s := range KindSpecs() {
		names = append(names, "`"+s.Name()+"`")
	}
	common[1].Type = strings.Join(names, " \\| ")
	table(common)
	for _, s := range KindSpecs() {
		fmt.Fprintf(&b, "\n#### `kind: %s`\n\n%s\n", s.Name(), s.Doc())
		if _, own := s.(PrivacyDecoder); own {
			b.WriteString("It reads `noise` and `delta` by its own rules (in its table).\n")
		}
		if fs := s.Fields(); len(fs) > 0 {
			b.WriteString("\n")
			table(fs)
		} else {
			b.WriteString("\nIt has no keys of its own.\n")
		}
	}
	return b.String()
}
