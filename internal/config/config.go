// Package config loads and checks a dpstream pipeline file (pipeline.yaml).
//
// The file declares the Kafka connection, the internal topics and, for every
// stream, its privacy unit, windows, contribution bounds, budget and releases
// (DESIGN.md section 4). Everything that decides a privacy guarantee is read
// here, so the whole file is checked before anything runs: unknown keys,
// missing required fields, values of the wrong type or out of range, and
// inconsistent combinations are all reported together, each with the line it
// is on. The one check left to others is whether a release can ever fit its
// stream's budget, which needs the accountant; Release.Line and Budget.Line
// let that check name the line too.
//
// The file is decoded into a yaml.Node tree first, rather than straight into
// the structs, so that every error, including one found only after combining
// several fields, can point at a line.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Defaults applied by Parse to fields the file leaves out.
const (
	// DefaultGroup is the consumer group prefix.
	DefaultGroup = "dpstream"
	// DefaultSessionTimeout is the consumer groups' session timeout.
	DefaultSessionTimeout = 10 * time.Second
	// MinSessionTimeout and MaxSessionTimeout bound session_timeout. The
	// broker bounds it too (group.min.session.timeout.ms and
	// group.max.session.timeout.ms, 6s and 30m by default on Apache Kafka).
	MinSessionTimeout = time.Second
	MaxSessionTimeout = 30 * time.Minute
	// DefaultEmbeddedAddr is where the embedded broker listens. Loopback
	// only: an embedded broker is for one machine, and exposing it on every
	// interface would publish raw, identifying events to the network.
	DefaultEmbeddedAddr = "127.0.0.1:9092"
	// DefaultDataDir is where the embedded broker keeps its data, relative
	// to the working directory.
	DefaultDataDir = ".dpstream/kafka"
	// DefaultMetricsAddr is where Prometheus metrics and the probes are
	// served. Loopback only: several metrics are exact counts of the input
	// (see the README's Metrics section), as confidential as the input
	// itself, and the endpoint has no authentication. Serving them to the
	// network takes an explicit metrics.addr (and a network policy).
	DefaultMetricsAddr = "127.0.0.1:9464"
	// DefaultPDPStore is the directory of the release stage's on-disk
	// store of per-unit pDP accounts, relative to the working directory.
	DefaultPDPStore = ".dpstream/pdp"
	// DefaultReleasePartitions is the partition count of the partials and
	// ledger topics that dpstream creates (release_partitions): how many
	// release instances can share the streams.
	DefaultReleasePartitions = 4
	// MaxReleasePartitions bounds release_partitions.
	MaxReleasePartitions = 256
	// DefaultPartitions is the partition count of an input topic that
	// dpstream has to create.
	DefaultPartitions = 4
	// DefaultMaxEventBytes is a stream's max_event_bytes when not given:
	// Kafka's default max.message.bytes, so a record that a default topic
	// accepts is not refused by dpstream.
	DefaultMaxEventBytes = 1 << 20
	// MaxEventBytesLimit bounds max_event_bytes. It stays below the 16 MiB
	// the accumulate stage fetches at a time (kafkaio.FetchMaxBytes), so a
	// record the limit admits always fits in one fetch.
	MaxEventBytesLimit = 15 << 20
	// DefaultIdleTimeout is how long a partition may be silent before
	// wall-clock time advances its watermark.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxSkew is how far an event time may lead the wall clock
	// (window.max_skew) when not given: more than producers' clocks
	// plausibly drift, little enough that a stamped-ahead event cannot keep
	// a window open for long.
	DefaultMaxSkew = time.Minute
)

// MetricsOff is the Metrics.Addr value that disables the metrics endpoint in
// the file; Parse stores it as "", so code only has to test for "".
const MetricsOff = "off"

// Record formats of an input topic (Stream.Format).
const (
	// FormatAvro is Avro binary encoding with the stream's schema.
	FormatAvro = "avro"
	// FormatConfluentAvro is the Confluent wire format: a zero magic byte,
	// a 4-byte big-endian schema id, then Avro binary.
	FormatConfluentAvro = "confluent-avro"
	// FormatJSON is one JSON object per record.
	FormatJSON = "json"
)

// Noise distributions (Release.Noise).
const (
	// NoiseLaplace is (discrete) Laplace noise: pure ε-DP.
	NoiseLaplace = "laplace"
	// NoiseGaussian is (discrete) Gaussian noise: (ε, δ)-DP.
	NoiseGaussian = "gaussian"
)

// PrivacyUnitEvent is the Stream.PrivacyUnit value that makes every event its
// own privacy unit (event-level privacy, SPEC.md section 0). It protects
// single events, not people, and is much weaker than a person-level unit when
// people contribute many events.
const PrivacyUnitEvent = "event"

// EventTimeRecordTimestamp is the Stream.EventTime value that selects the
// Kafka record timestamp, as does "".
const EventTimeRecordTimestamp = "record_timestamp"

// Config is a parsed, defaulted and validated pipeline file.
type Config struct {
	Path     string   `yaml:"-"` // file it was loaded from
	Brokers  []string // Kafka bootstrap brokers, host:port; empty: embedded broker
	Security Security // TLS and SASL for every broker connection; zero = plaintext (brokers only)
	Embedded Embedded // embedded broker settings, used when Brokers is empty
	Topics   Topics   // internal topic names
	Metrics  Metrics  // Prometheus endpoint
	Group    string   // consumer group prefix, default "dpstream"
	// SessionTimeout is both consumer groups' session timeout: how long a
	// member that died without leaving keeps its partitions (default
	// DefaultSessionTimeout).
	SessionTimeout time.Duration
	// PDPStore (yaml pdp_store, default DefaultPDPStore) is the directory
	// where the release stage keeps every unit's cumulative per-instance
	// DP account on disk, a cache of the pdp topic, so that its memory
	// does not grow with the number of units. RESTRICTED like the pdp
	// topic: it holds the same data-dependent values.
	PDPStore string
	// ReleasePartitions (yaml release_partitions, default
	// DefaultReleasePartitions) is the partition count of the partials
	// and ledger topics when dpstream creates them: the streams are
	// sharded by it, each partition's streams owned by one release
	// instance at a time, so it bounds how many release instances share
	// the work. Topics that exist keep their partition count (the two
	// must agree).
	ReleasePartitions int
	Streams           []Stream // at least one, names and topics unique
	// Warnings are settings that are valid but weaken security, such as
	// security.tls.insecure_skip_verify: true, each with its line. They do
	// not stop Parse; callers should log them at startup.
	Warnings []*Error `yaml:"-"`
}

// Embedded configures the embedded Kafka-protocol broker that runs when no
// brokers are configured.
type Embedded struct {
	Addr    string // host:port to listen on, default "127.0.0.1:9092"
	DataDir string // yaml data_dir, default ".dpstream/kafka" (relative to the working dir)
	// NoSync (yaml sync: false) lets the broker acknowledge writes before
	// they are fsynced (kafkaio.NoSync); by default every write is synced.
	NoSync bool
}

// Topics names the internal topics. The names are distinct from each other
// and from every stream's input topic, because each topic has one meaning:
// for example, writing ledger records to the public releases topic would
// publish data that is not meant to be public.
type Topics struct {
	Partials   string // partial statistics, accumulate → release; default dpstream.partials
	Releases   string // public private releases; default dpstream.releases
	Ledger     string // append-only budget charges with release payloads; default dpstream.ledger
	Accountant string // latest budget state per stream (compacted); default dpstream.accountant
	PDP        string // restricted per-instance DP certificates; default dpstream.pdp
	DeadLetter string // rejected input with the reason; default dpstream.deadletter
	// Requests and Responses are the query path of prediction releases:
	// queries in (public: the queriers' own input), private answers out.
	// Defaults dpstream.predict.requests and dpstream.predict.responses;
	// created only when some release answers queries.
	Requests  string
	Responses string
}

// DefaultTopics returns the default internal topic names.
func DefaultTopics() Topics {
	return Topics{
		Partials:   "dpstream.partials",
		Releases:   "dpstream.releases",
		Ledger:     "dpstream.ledger",
		Accountant: "dpstream.accountant",
		PDP:        "dpstream.pdp",
		DeadLetter: "dpstream.deadletter",
		Requests:   "dpstream.predict.requests",
		Responses:  "dpstream.predict.responses",
	}
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Addr is the host:port to serve /metrics on, default
	// DefaultMetricsAddr (loopback only). The file
	// disables the endpoint with addr: off or addr: ""; both are stored as "".
	Addr string
	// PDP (yaml pdp, default false) also serves the restricted
	// per-instance DP gauges (dpstream_pdp_*). They depend on the data like
	// the pdp topic, so they are off unless asked for.
	PDP bool
}

// Enabled reports whether the metrics endpoint should be served.
func (m Metrics) Enabled() bool { return m.Addr != "" && m.Addr != MetricsOff }

// AvroSchema returns the text of the stream's Avro schema: the inline one,
// or the contents of the schema file; "" for a json stream. The file is
// read here, at use, as Parse only checked it.
func (s *Stream) AvroSchema() (string, error) {
	if s.SchemaJSON != "" {
		return s.SchemaJSON, nil
	}
	if s.Schema == "" {
		return "", nil
	}
	b, err := os.ReadFile(s.Schema)
	if err != nil {
		return "", fmt.Errorf("stream %s: schema: %w", s.Name, err)
	}
	return string(b), nil
}

// Stream is one input topic and everything released from it.
type Stream struct {
	Name       string
	Topic      string
	Partitions int    // partitions to create the input topic with when it does not exist; default 4
	Format     string // avro | confluent-avro | json
	Schema     string // path to .avsc (avro formats only), resolved against the config file's dir; "" when inline
	// SchemaJSON is the Avro schema as JSON when the config writes it
	// inline (yaml schema: a mapping rather than a path), so that a config
	// carries everything it needs: `dpstream demo --print-config` prints
	// one that runs from any directory. Use AvroSchema to read either.
	SchemaJSON string
	SchemaID   int // yaml schema_id: confluent-avro expected id, 0 = accept any
	// MaxEventBytes (yaml max_event_bytes, default DefaultMaxEventBytes) is
	// the largest record value the stream accepts; a larger one is
	// dead-lettered as too_large without its value, so that neither its
	// decoding nor its dead letter can stop the stream.
	MaxEventBytes int
	PrivacyUnit   string // yaml privacy_unit: field naming the unit, or "event"
	EventTime     string // yaml event_time: field name; "" or "record_timestamp" = Kafka record timestamp
	// Start (yaml start, an RFC 3339 timestamp) is where the stream's
	// release schedule begins; it is aligned down to a window boundary
	// when used. Zero (absent) lets the first run record the window
	// holding the wall clock in the ledger (ledger.StreamStarts). Windows
	// before it are never released, and events before it are
	// dead-lettered as before_start: no event time can make the pipeline
	// charge windows of the past. An operator sets it to release a
	// backfill.
	Start        time.Time
	Window       Window
	Contribution Contribution
	Budget       Budget
	Releases     []Release // at least one, names unique within the stream
	// PDP turns per-instance DP certificates on (yaml pdp, default true):
	// the accumulate stage sends each unit's contribution with the
	// partials and the release stage writes per-unit accounts and window
	// summaries to the restricted pdp topic. Off saves that work (about a
	// third of end-to-end throughput in `dpstream bench`); the releases and
	// their guarantee are the same either way.
	PDP  bool
	Line int // line of the stream's mapping in the file
}

// UsesRecordTimestamp reports whether the stream's event time is the Kafka
// record timestamp rather than a field of the event.
func (s *Stream) UsesRecordTimestamp() bool {
	return s.EventTime == "" || s.EventTime == EventTimeRecordTimestamp
}

// Window configures tumbling event-time windows [start, start+Size), aligned
// to the Unix epoch (DESIGN.md section 5).
type Window struct {
	// Size is the window length, > 0 and a whole number of milliseconds
	// (Kafka timestamps have millisecond resolution).
	Size time.Duration
	// Grace is how far behind the highest event time seen the watermark
	// stays, >= 0, default 0.
	Grace time.Duration
	// IdleTimeout is how long a partition may be silent before wall-clock
	// time advances its watermark, > 0, default 30s.
	IdleTimeout time.Duration
	// MaxSkew (yaml max_skew) is how far an event time may lead the wall
	// clock, > 0, default DefaultMaxSkew. A later event is dead-lettered
	// as future and moves nothing: event times come from producers, and
	// one stamped far ahead must not close windows or hide other events.
	MaxSkew time.Duration
}

// Contribution holds the per-unit contribution bounds that the accumulate
// stage enforces and that every release's sensitivity is derived from
// (SPEC.md section 0).
type Contribution struct {
	// MaxEventsPerWindow is L: at most this many events of one privacy unit
	// are used per window (the first L by offset), >= 1.
	MaxEventsPerWindow int
	// MaxWindows (yaml max_windows) is k: in each horizon of the stream's
	// continual releases (Stream.Horizon, aligned to the stream's start) a
	// unit's events are kept in at most k windows, the first k it joins by
	// offset on its partition; 0 (absent) means no bound. Only a stream
	// whose continual releases share one horizon may set it.
	MaxWindows int
}

// Horizon returns the horizon T shared by the stream's continual releases
// (0 when it has none): the span of windows over which
// Contribution.MaxWindows holds. A parsed configuration with MaxWindows
// set has exactly one.
func (s *Stream) Horizon() int {
	for _, r := range s.Releases {
		if r.Continual != nil {
			return r.Continual.Horizon
		}
	}
	return 0
}

// Budget is a stream's privacy budget (ε_B, δ_B): the accountant refuses any
// release whose charge would push the stream's composed loss past it.
type Budget struct {
	Epsilon float64       // > 0, finite
	Delta   float64       // in (0, 1)
	Per     time.Duration // budget period, a multiple of Window.Size; 0 = over the stream's lifetime
	// Queries (yaml queries), when > 0, is the share of Epsilon that the
	// answers of the stream's prediction releases may spend in one budget
	// period (by RDP composition of the answers alone, at Delta): queries
	// are then refused before they can starve the releases. 0: answers
	// are limited by the stream's budget only.
	Queries float64
	Line    int // line of the budget mapping, for errors found by the accountant
}

// Release is one configured release: the keys every release has, and the
// keys of its kind as the kind decoded them (Params; see KindSpec).
type Release struct {
	Name string
	// Kind is the release kind's name (a registered KindSpec).
	Kind string
	// Params is the release's own configuration, of the type its kind's
	// Decode sets (e.g. *histogram.Config); only the kind reads it.
	Params any
	// Noise is laplace or gaussian (default laplace), or "" for a kind
	// whose method fixes its noise (PrivacyDecoder).
	Noise   string
	Epsilon float64 // > 0, finite
	Delta   float64 // gaussian: in (0, 1); laplace: 0
	Line    int     // line of the release's mapping, for errors found by the accountant
	// Continual, when set, makes the release continual: running totals
	// over a horizon of windows under one charge (kind/running). Only the
	// kinds that list ContinualField read it.
	Continual *Continual
}

// Continual is a release's `continual:` mapping: the running totals of a
// count, sum or histogram over horizons of Horizon windows, aligned to
// the stream's start, each charged once per budget period it spans
// (package kind/running).
type Continual struct {
	// Method is the factorization: auto (default: the smallest expected
	// error), per_window, tree, sqrt or blt.
	Method string
	// Horizon is T, the number of windows one charge covers, >= 1.
	Horizon int
	// Line is the line of the mapping, for errors found by calibration.
	Line int
}

// Continual methods (mechanism/continual).
const (
	ContinualAuto      = "auto"
	ContinualPerWindow = "per_window"
	ContinualTree      = "tree"
	ContinualSqrt      = "sqrt"
	ContinualBLT       = "blt"
)

// ContinualMethods lists the values of continual.method.
var ContinualMethods = []string{ContinualAuto, ContinualPerWindow, ContinualTree, ContinualSqrt, ContinualBLT}

// Stream returns the stream with the given name.
func (c *Config) Stream(name string) (*Stream, bool) {
	for i := range c.Streams {
		if c.Streams[i].Name == name {
			return &c.Streams[i], true
		}
	}
	return nil, false
}

// Load reads the file at path, parses it, applies defaults and validates it
// (see Parse). Schema paths are resolved against the file's directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// The path is already in the error's prefix; keep just the cause.
			msg = pe.Err.Error()
		}
		return nil, &Error{Path: path, Msg: "cannot read config: " + msg, err: err}
	}
	return Parse(data, path)
}

// Parse parses the YAML in data, applies defaults and validates the result.
// path names the file in errors and in Config.Path, and schema paths are
// resolved against its directory ("" means the working directory).
//
// Parse reads the schema files the config names, to check that they exist
// and are JSON; it does not otherwise touch the file system or the network.
//
// Every problem found is reported, sorted by line: the error is a single
// *Error, or an errors.Join of them (see Errors). On error the Config is nil.
func Parse(data []byte, path string) (*Config, error) {
	d := newDecoder(path)
	cfg := d.parse(data)
	if err := d.err(); err != nil {
		return nil, err
	}
	if cfg == nil {
		// Unreachable: parse returns nil only after recording an error.
		return nil, &Error{Path: path, Msg: fmt.Sprintf("internal error: no configuration decoded from %d bytes", len(data))}
	}
	cfg.Path = path
	cfg.Warnings = d.warns
	return cfg, nil
}
