package testkit

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Pipeline is a pipeline configuration under construction. Each method
// sets one part and returns the Pipeline, so a test writes its config as
// one chain; YAML renders the file a user would write. A Pipeline is not
// safe for concurrent use: tests that run in parallel build their own
// (a function returning a fresh Pipeline, not a shared variable).
type Pipeline struct {
	brokers     []string
	security    *Security
	embedded    *Embedded
	group       string
	topics      Topics
	pdpStore    string
	metrics     string
	topicPrefix string
	releaseN    int
	streams     []*Stream
}

// NewPipeline starts a configuration with the given streams and metrics
// off (metrics: {addr: "off"}), as nearly every test wants: a test's
// pipeline must not bind the default metrics port.
func NewPipeline(streams ...*Stream) *Pipeline {
	return &Pipeline{metrics: "off", streams: streams}
}

// Streams adds streams after those already there.
func (p *Pipeline) Streams(s ...*Stream) *Pipeline {
	p.streams = append(p.streams, s...)
	return p
}

// Brokers sets the brokers list (a pipeline without one runs on its
// embedded broker).
func (p *Pipeline) Brokers(addrs ...string) *Pipeline {
	p.brokers = addrs
	return p
}

// Security sets the security section; the zero Security leaves it out.
func (p *Pipeline) Security(s Security) *Pipeline {
	p.security = &s
	return p
}

// Embedded sets the embedded broker's address and data directory; an
// empty one leaves its key out (the default applies).
func (p *Pipeline) Embedded(addr, dataDir string) *Pipeline {
	p.embedded = &Embedded{Addr: addr, DataDir: dataDir}
	return p
}

// Group sets the consumer group prefix.
func (p *Pipeline) Group(g string) *Pipeline {
	p.group = g
	return p
}

// Topics sets the internal topics; the empty ones keep their defaults.
func (p *Pipeline) Topics(t Topics) *Pipeline {
	p.topics = t
	return p
}

// PDPStore sets pdp_store, the release stage's on-disk pDP store.
func (p *Pipeline) PDPStore(dir string) *Pipeline {
	p.pdpStore = dir
	return p
}

// Metrics sets the metrics address; "" leaves the metrics section out, so
// the default address applies.
func (p *Pipeline) Metrics(addr string) *Pipeline {
	p.metrics = addr
	return p
}

// ReleasePartitions sets release_partitions, the partition count of the
// partials and ledger topics (0 leaves the key out: the default).
func (p *Pipeline) ReleasePartitions(n int) *Pipeline {
	p.releaseN = n
	return p
}

// TopicPrefix makes every stream's input topic render as prefix.topic
// (unchanged for ""): on a broker shared by many tests, each test's topics
// stay its own. The internal topics are not prefixed (see Topics).
func (p *Pipeline) TopicPrefix(prefix string) *Pipeline {
	p.topicPrefix = prefix
	return p
}

// Embedded is the embedded broker's section.
type Embedded struct {
	Addr, DataDir string
}

// Topics names the internal topics; an empty name keeps its default.
type Topics struct {
	Partials, Releases, Ledger, Accountant, PDP, DeadLetter string
}

// Security is the security section: TLS and SASL, each optional.
type Security struct {
	TLS  *TLS
	SASL *SASL
}

// TLS is security.tls; zero fields are left out.
type TLS struct {
	Enabled            bool
	CAFile             string
	CertFile, KeyFile  string
	ServerName         string
	InsecureSkipVerify bool
}

// SASL is security.sasl; empty fields are left out.
type SASL struct {
	Mechanism, Username, PasswordEnv, PasswordFile string
}

// YAML renders the configuration file.
func (p *Pipeline) YAML() string {
	var b strings.Builder
	if len(p.brokers) > 0 {
		fmt.Fprintf(&b, "brokers: %s\n", scalar(p.brokers))
	}
	if s := p.security; s != nil && (s.TLS != nil || s.SASL != nil) {
		b.WriteString("security:\n")
		if s.TLS != nil {
			fmt.Fprintf(&b, "  tls: %s\n", flow(set(
				kv{"enabled", s.TLS.Enabled}, kv{"ca_file", s.TLS.CAFile}, kv{"cert_file", s.TLS.CertFile},
				kv{"key_file", s.TLS.KeyFile}, kv{"server_name", s.TLS.ServerName},
				kv{"insecure_skip_verify", s.TLS.InsecureSkipVerify})...))
		}
		if s.SASL != nil {
			fmt.Fprintf(&b, "  sasl: %s\n", flow(set(kv{"mechanism", s.SASL.Mechanism}, kv{"username", s.SASL.Username},
				kv{"password_env", s.SASL.PasswordEnv}, kv{"password_file", s.SASL.PasswordFile})...))
		}
	}
	if e := p.embedded; e != nil {
		fmt.Fprintf(&b, "embedded: %s\n", flow(set(kv{"addr", e.Addr}, kv{"data_dir", e.DataDir})...))
	}
	if p.group != "" {
		fmt.Fprintf(&b, "group: %s\n", scalar(p.group))
	}
	if t := p.topics; t != (Topics{}) {
		fmt.Fprintf(&b, "topics: %s\n", flow(set(kv{"partials", t.Partials}, kv{"releases", t.Releases}, kv{"ledger", t.Ledger},
			kv{"accountant", t.Accountant}, kv{"pdp", t.PDP}, kv{"deadletter", t.DeadLetter})...))
	}
	if p.pdpStore != "" {
		fmt.Fprintf(&b, "pdp_store: %s\n", scalar(p.pdpStore))
	}
	if p.releaseN != 0 {
		fmt.Fprintf(&b, "release_partitions: %d\n", p.releaseN)
	}
	b.WriteString("streams:\n")
	for _, s := range p.streams {
		s.render(&b, p.topicPrefix)
	}
	if p.metrics != "" {
		fmt.Fprintf(&b, "metrics: {addr: %s}\n", scalar(p.metrics))
	}
	return b.String()
}

// WriteFile writes the configuration to path and returns path.
func (p *Pipeline) WriteFile(t testing.TB, path string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(p.YAML()), 0o644); err != nil {
		t.Fatalf("write config: %v", err)
	}
	return path
}

// Stream is one stream of a Pipeline under construction.
type Stream struct {
	name, topic   string
	partitions    int
	format        string
	schema        string
	schemaID      int // < 0: left out
	maxEventBytes int
	privacyUnit   string
	eventTime     string
	start         time.Time
	window        [4]time.Duration // size, grace, idle_timeout, max_skew
	maxEvents     int
	epsilon       float64
	delta         float64
	per           time.Duration
	pdp           *bool
	releases      []*Release
}

// NewStream starts a stream with what most tests use: JSON events of
// privacy unit "user" with their event time in "ts", windows of 1s with no
// grace and an idle timeout of 1s, at most 2 events per unit and window,
// and a budget of ε = 10, δ = 1e-6. The partition count is left to the
// default.
func NewStream(name, topic string) *Stream {
	return &Stream{name: name, topic: topic, format: "json", schemaID: -1, privacyUnit: "user", eventTime: "ts",
		window: [4]time.Duration{time.Second, 0, time.Second, 0}, maxEvents: 2, epsilon: 10, delta: 1e-6}
}

// Partitions sets the input topic's partition count (0: the default).
func (s *Stream) Partitions(n int) *Stream {
	s.partitions = n
	return s
}

// Avro makes the stream's format avro with the schema file at path
// (relative paths are relative to the config file).
func (s *Stream) Avro(path string) *Stream {
	s.format, s.schema = "avro", path
	return s
}

// ConfluentAvro makes the stream's format confluent-avro with the schema
// file at path and the schema registry id id.
func (s *Stream) ConfluentAvro(path string, id int) *Stream {
	s.format, s.schema, s.schemaID = "confluent-avro", path, id
	return s
}

// MaxEventBytes sets max_event_bytes (0: the default).
func (s *Stream) MaxEventBytes(n int) *Stream {
	s.maxEventBytes = n
	return s
}

// PrivacyUnit sets the field that names the privacy unit.
func (s *Stream) PrivacyUnit(field string) *Stream {
	s.privacyUnit = field
	return s
}

// EventTime sets the event time field; "" leaves the key out (events then
// carry their record timestamp).
func (s *Stream) EventTime(field string) *Stream {
	s.eventTime = field
	return s
}

// Start sets the stream's start (the zero time leaves it out).
func (s *Stream) Start(t time.Time) *Stream {
	s.start = t
	return s
}

// Window sets the window size, grace and idle timeout. A zero grace or
// idle timeout leaves its key out, so the default applies (no grace, an
// idle timeout of 30s).
func (s *Stream) Window(size, grace, idle time.Duration) *Stream {
	s.window[0], s.window[1], s.window[2] = size, grace, idle
	return s
}

// MaxSkew sets the window's max_skew (0: the default).
func (s *Stream) MaxSkew(d time.Duration) *Stream {
	s.window[3] = d
	return s
}

// MaxEvents sets the contribution bound max_events_per_window.
func (s *Stream) MaxEvents(n int) *Stream {
	s.maxEvents = n
	return s
}

// Budget sets the stream's privacy budget.
func (s *Stream) Budget(epsilon, delta float64) *Stream {
	s.epsilon, s.delta = epsilon, delta
	return s
}

// BudgetPer sets the budget's period (budget.per; 0 leaves the key out:
// the budget covers the stream's lifetime).
func (s *Stream) BudgetPer(d time.Duration) *Stream {
	s.per = d
	return s
}

// PDP turns the stream's per-instance DP certificates on or off (unset:
// the default, on).
func (s *Stream) PDP(on bool) *Stream {
	s.pdp = &on
	return s
}

// Releases adds releases after those already there.
func (s *Stream) Releases(r ...*Release) *Stream {
	s.releases = append(s.releases, r...)
	return s
}

func (s *Stream) render(b *strings.Builder, topicPrefix string) {
	topic := s.topic
	if topicPrefix != "" {
		topic = topicPrefix + "." + topic
	}
	line := func(key string, v any) { fmt.Fprintf(b, "    %s: %s\n", key, scalar(v)) }
	fmt.Fprintf(b, "  - name: %s\n", scalar(s.name))
	line("topic", topic)
	if s.partitions != 0 {
		line("partitions", s.partitions)
	}
	line("format", s.format)
	if s.schema != "" {
		line("schema", s.schema)
	}
	if s.schemaID >= 0 {
		line("schema_id", s.schemaID)
	}
	if s.maxEventBytes != 0 {
		line("max_event_bytes", s.maxEventBytes)
	}
	line("privacy_unit", s.privacyUnit)
	if s.eventTime != "" {
		line("event_time", s.eventTime)
	}
	if !s.start.IsZero() {
		line("start", s.start)
	}
	w := []kv{{"size", s.window[0]}}
	for i, key := range []string{"", "grace", "idle_timeout", "max_skew"} {
		if i > 0 && s.window[i] != 0 {
			w = append(w, kv{key, s.window[i]})
		}
	}
	line("window", raw(flow(w...)))
	line("contribution", raw(flow(kv{"max_events_per_window", s.maxEvents})))
	budget := []kv{{"epsilon", s.epsilon}, {"delta", s.delta}}
	if s.per != 0 {
		budget = append(budget, kv{"per", s.per})
	}
	line("budget", raw(flow(budget...)))
	if s.pdp != nil {
		line("pdp", *s.pdp)
	}
	b.WriteString("    releases:\n")
	for _, r := range s.releases {
		fmt.Fprintf(b, "      - %s\n", flow(r.fields...))
	}
}

// Release is one release of a Stream under construction, made by the
// constructor of its kind (Count, Sum, Histogram, ...). Its methods add
// the optional settings; Set adds any other key. Keys render in the order
// they were set.
type Release struct {
	fields []kv
}

// NewRelease is a release of any kind, its settings given with Set: for a
// kind without a constructor here (a new kind, or a toy one in a test).
func NewRelease(name, kind string) *Release { return newRelease(name, kind) }

func newRelease(name, kind string, fields ...kv) *Release {
	return &Release{fields: append([]kv{{"name", name}, {"kind", kind}}, fields...)}
}

// Count is a count release.
func Count(name string) *Release { return newRelease(name, "count") }

// Sum is a sum of field clamped to [lo, hi].
func Sum(name, field string, lo, hi float64) *Release {
	return newRelease(name, "sum", kv{"field", field}, kv{"bounds", []float64{lo, hi}})
}

// Mean is a mean of field clamped to [lo, hi].
func Mean(name, field string, lo, hi float64) *Release {
	return newRelease(name, "mean", kv{"field", field}, kv{"bounds", []float64{lo, hi}})
}

// Histogram is a histogram of field over [lo, hi] in bins bins (0: left
// out, for AutoBins).
func Histogram(name, field string, lo, hi float64, bins int) *Release {
	r := newRelease(name, "histogram", kv{"field", field}, kv{"bounds", []float64{lo, hi}})
	if bins != 0 {
		r.Set("bins", bins)
	}
	return r
}

// Axis is one field of a multi-field histogram: its bounds and bin count.
type Axis struct {
	Field  string
	Lo, Hi float64
	Bins   int
}

// NewAxis is an Axis.
func NewAxis(field string, lo, hi float64, bins int) Axis { return Axis{field, lo, hi, bins} }

// HistogramND is a histogram over several fields (fields, bounds and bins
// as lists). With every axis' Bins 0 the bins key is left out, for
// AutoBins.
func HistogramND(name string, axes ...Axis) *Release {
	fields := make([]string, len(axes))
	bounds := make([][2]float64, len(axes))
	bins := make([]int, len(axes))
	binned := false
	for i, a := range axes {
		fields[i], bounds[i], bins[i] = a.Field, [2]float64{a.Lo, a.Hi}, a.Bins
		binned = binned || a.Bins != 0
	}
	r := newRelease(name, "histogram", kv{"fields", fields}, kv{"bounds", bounds})
	if binned {
		r.Set("bins", bins)
	}
	return r
}

// Density is a density estimate of field on [lo, hi] with terms basis
// terms.
func Density(name, field string, lo, hi float64, terms int) *Release {
	return newRelease(name, "density", kv{"field", field}, kv{"bounds", []float64{lo, hi}}, kv{"terms", terms})
}

// RandomizedResponse is a randomized_response release of field over
// categories.
func RandomizedResponse(name, field string, categories ...string) *Release {
	return newRelease(name, "randomized_response", kv{"field", field}, kv{"categories", categories})
}

// Variable is a regression's feature or target: a field and its bounds.
type Variable struct {
	Field  string
	Lo, Hi float64
}

// Var is a Variable.
func Var(field string, lo, hi float64) Variable { return Variable{field, lo, hi} }

// Regression is a regression of target on features with method (ssp,
// adassp, ops, adaops or pcls).
func Regression(name, method string, target Variable, features ...Variable) *Release {
	return newRelease(name, "regression", kv{"method", method}, kv{"features", features}, kv{"target", target})
}

// Set sets key to value, in place if the key is already set, else after
// the keys set so far. value is a string, int, float64, bool, duration, a
// slice of strings, ints or float64s, [][2]float64 (bounds), Variable or
// []Variable; any other type panics when the YAML is rendered, the first
// time the test runs (a mistake in the test, not an input).
func (r *Release) Set(key string, value any) *Release {
	for i := range r.fields {
		if r.fields[i].key == key {
			r.fields[i].value = value
			return r
		}
	}
	r.fields = append(r.fields, kv{key, value})
	return r
}

// Noise sets the noise (laplace or gaussian).
func (r *Release) Noise(n string) *Release { return r.Set("noise", n) }

// Epsilon sets the release's ε.
func (r *Release) Epsilon(e float64) *Release { return r.Set("epsilon", e) }

// Delta sets the release's δ.
func (r *Release) Delta(d float64) *Release { return r.Set("delta", d) }

// MaxPerBin sets the per-unit cap per histogram cell or category.
func (r *Release) MaxPerBin(n int) *Release { return r.Set("max_per_bin", n) }

// Samples sets the number of synthetic rows of a multi-field histogram.
func (r *Release) Samples(n int) *Release { return r.Set("samples", n) }

// AutoBins sets bins: auto, with the expected number of events per window
// the bin count is chosen for.
func (r *Release) AutoBins(expectedEvents int) *Release {
	return r.Set("bins", raw("auto")).Set("expected_events", expectedEvents)
}

// GridPoints sets a density's grid points.
func (r *Release) GridPoints(n int) *Release { return r.Set("grid_points", n) }

// EpsilonLocal sets a randomized response's local ε.
func (r *Release) EpsilonLocal(e float64) *Release { return r.Set("epsilon_local", e) }

// P sets a randomized response's probability of a truthful answer.
func (r *Release) P(p float64) *Release { return r.Set("p", p) }

// Intercept sets whether a regression fits an intercept.
func (r *Release) Intercept(on bool) *Release { return r.Set("intercept", on) }

// Lambda sets a regression's ridge λ.
func (r *Release) Lambda(l float64) *Release { return r.Set("lambda", l) }

// kv is one key and value of a mapping, rendered in order.
type kv struct {
	key   string
	value any
}

// raw is YAML text rendered as it is.
type raw string

// YAML sets key to a value given as YAML flow text, rendered as it is (a
// mapping such as `{field: late, classes: [no, yes]}`), for keys whose
// value no other type renders.
func (r *Release) YAML(key, flowText string) *Release { return r.Set(key, raw(flowText)) }

// flow renders a flow mapping.
func flow(fields ...kv) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.key + ": " + scalar(f.value)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// set keeps the fields whose value is set: not the empty string, not
// false. A section's unset fields are left out, so their defaults apply.
func set(fields ...kv) []kv {
	out := fields[:0:0]
	for _, f := range fields {
		if f.value != "" && f.value != false {
			out = append(out, f)
		}
	}
	return out
}

// plain matches the strings that YAML reads back as the same string
// without quotes.
var plain = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./-]*$`)

// yamlWords are plain words that YAML readers (1.1 ones too) take for
// booleans or null.
var yamlWords = map[string]bool{"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true, "null": true}

// scalar renders a value in flow style.
func scalar(v any) string {
	switch x := v.(type) {
	case raw:
		return string(x)
	case string:
		if plain.MatchString(x) && !yamlWords[strings.ToLower(x)] {
			return x
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return number(x)
	case time.Duration:
		// 10m and 1h, not 10m0s and 1h0m0s.
		s := x.String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case Variable:
		return flow(kv{"field", x.Field}, kv{"bounds", []float64{x.Lo, x.Hi}})
	case [2]float64:
		return scalar(x[:])
	case []string:
		return list(x)
	case []int:
		return list(x)
	case []float64:
		return list(x)
	case [][2]float64:
		return list(x)
	case []Variable:
		return list(x)
	default:
		panic(fmt.Sprintf("testkit: no YAML rendering for %T", v))
	}
}

func list[T any](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = scalar(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// number renders a float as YAML reads it back exactly: the shortest
// decimal form, with a short exponent (1e-6, not 1e-06).
func number(x float64) string {
	switch {
	case math.IsNaN(x):
		return ".nan"
	case math.IsInf(x, 1):
		return ".inf"
	case math.IsInf(x, -1):
		return "-.inf"
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if i := strings.IndexByte(s, 'e'); i >= 0 {
		mant, exp := s[:i], s[i+1:]
		sign := ""
		if exp[0] == '-' {
			sign = "-"
		}
		exp = strings.TrimLeft(exp[1:], "0")
		s = mant + "e" + sign + exp
	}
	return s
}
