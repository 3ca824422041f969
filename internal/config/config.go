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

// Release kinds (Release.Kind).
const (
	KindCount     = "count"
	KindSum       = "sum"
	KindMean      = "mean"
	KindHistogram = "histogram"
	// KindDensity is an orthogonal-series (cosine basis) density estimate
	// of one field on its bounds (SPEC section 4.3).
	KindDensity = "density"
	// KindRandomizedResponse counts the categories of a field that
	// producers have already randomized with k-ary randomized response
	// (rr.Randomizer), adds central noise to the counts as for a
	// histogram over the categories, and debiases them (SPEC section 4.4).
	// The central noise is needed because local randomization hides a
	// unit's category, not whether the unit reported at all.
	KindRandomizedResponse = "randomized_response"
	// KindRegression is a differentially private linear regression of a
	// target field on one or more feature fields, fitted on every window
	// with the method of Release.Method (SPEC section 4.5).
	KindRegression = "regression"
)

// TermsAuto is the value of a density release's terms that chooses the
// number of cosine terms from the release's expected_events and smoothness
// (density.AutoTerms); Release.TermsAuto records it.
const TermsAuto = "auto"

// BinsAuto is the value of a histogram release's bins that chooses the bins
// of every field from the release's expected_events
// (aggregate.AutoBins); Release.BinsAuto records it.
const BinsAuto = "auto"

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

// MaxBins is the largest number of histogram bins a release may have. It
// bounds the memory and the size of a release; it does not affect privacy
// (the L1 sensitivity of a histogram does not depend on the number of bins).
const MaxBins = 10000

// MaxSamples is the most synthetic values (rows) a histogram or density
// release may publish per window (Release.Samples). Samples are drawn from
// the already private release, so they cost no budget; the bound keeps the
// size of a release record reasonable.
const MaxSamples = 100000

// MaxCategories is the most categories a randomized_response release may
// have (Release.Categories). Each category is a noisy count in the release,
// so the bound keeps the release small; it does not affect privacy (the L1
// sensitivity of the counts does not depend on their number).
const MaxCategories = 1000

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
	Streams  []Stream // at least one, names and topics unique
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
}

// Budget is a stream's privacy budget (ε_B, δ_B): the accountant refuses any
// release whose charge would push the stream's composed loss past it.
type Budget struct {
	Epsilon float64       // > 0, finite
	Delta   float64       // in (0, 1)
	Per     time.Duration // budget period, a multiple of Window.Size; 0 = over the stream's lifetime
	Line    int           // line of the budget mapping, for errors found by the accountant
}

// Release is one private statistic computed on every window of a stream.
type Release struct {
	Name string
	Kind string // count | sum | mean | histogram | density | randomized_response | regression
	// Field is the value field, for every kind but count; for a histogram
	// over several fields it is the first of Fields, and for a regression
	// it is Target (the file gives it as target, never as field).
	Field string
	// Bounds is the [lo, hi] values are clamped to (lo < hi, finite), for
	// every kind but count and randomized_response; for a histogram it is
	// AxisBounds[0], and for a regression TargetBounds.
	Bounds [2]float64
	// Bins is the number of equal-width bins over Bounds of a histogram,
	// 1..MaxBins, AxisBins[0] for a histogram over several fields; 0 with
	// BinsAuto and for other kinds.
	Bins int
	// Fields are the fields of a histogram, one to
	// aggregate.MaxHistogramDims, distinct; always filled for kind
	// histogram (also for one field, given as field or fields), with
	// Fields[0] == Field. nil for other kinds.
	Fields []string
	// AxisBounds are the [lo, hi] of each of Fields, in the same order;
	// AxisBounds[0] == Bounds. nil for other kinds.
	AxisBounds [][2]float64
	// AxisBins are the bins of each of Fields (AxisBins[0] == Bins), whose
	// product (the number of cells) is at most MaxBins; nil with BinsAuto
	// and for other kinds.
	AxisBins []int
	// BinsAuto is set by `bins: auto`: the plan sizes the bins with
	// aggregate.AutoBins(ExpectedEvents, len(Fields), MaxBins). It reads
	// the declared size, never the data, so the shape of the release (and
	// its noise) is data-independent. Requires ExpectedEvents; Bins is 0.
	BinsAuto bool
	// MaxPerBin is c, the most events of one privacy unit counted in one
	// histogram cell (or one randomized_response category) per window
	// (yaml max_per_bin), in 1..Contribution.MaxEventsPerWindow; 0 means
	// no cap (c = L). Histogram and randomized_response only. A cap lowers
	// the L2 sensitivity of the counts to at most sqrt(L·c) (SPEC section
	// 0), so it lowers Gaussian noise; Laplace noise (L1, = L) is unchanged.
	MaxPerBin int
	// Samples is how many synthetic values (rows) a histogram or density
	// release also publishes, drawn from the private release (yaml
	// samples), 0..MaxSamples; 0 means none. Histogram and density only.
	Samples int
	// Categories are the categories of a randomized_response release's
	// field, 2..MaxCategories, distinct, non-blank, in the order the
	// release reports them. nil for other kinds.
	Categories []string
	// RRProbability is p of the producers' k-ary randomized response
	// (yaml p): the probability that a report is a uniform category
	// instead of the true one, in (0, 1); 0 when LocalEpsilon is given
	// instead. Exactly one of the two is set for randomized_response.
	RRProbability float64
	// LocalEpsilon is the producers' local ε (yaml epsilon_local), > 0 and
	// finite; 0 when RRProbability is given instead.
	LocalEpsilon float64
	// Terms is a density release's number m of cosine terms, in
	// 1..density.MaxTerms; 0 with TermsAuto.
	Terms int
	// TermsAuto is set by `terms: auto`: m is chosen by
	// density.AutoTerms(ExpectedEvents, Smoothness, ...) when the
	// pipeline is planned. It reads the declared size, never the data, so
	// the number of terms (and the noise) is data-independent.
	TermsAuto bool
	// ExpectedEvents is the declared number of kept events per window that
	// `terms: auto` sizes m for, or `bins: auto` sizes the bins for (yaml
	// expected_events, >= 1); required with either and not allowed
	// otherwise.
	ExpectedEvents int
	// Smoothness is the Sobolev smoothness γ > 0 that `terms: auto`
	// assumes, default density.DefaultSmoothness (2); only with terms: auto.
	Smoothness float64
	// GridPoints is the number of points a density is evaluated on (yaml
	// grid_points), in [Terms + 1, density.MaxGridPoints]; 0 means
	// the default, max(density.DefaultGridPoints, m + 1), which
	// the plan resolves once m is known.
	GridPoints int

	// Method is a regression's method (yaml method): ssp, adassp, ops,
	// adaops or pcls (the Method constants, SPEC section 4.5). "" for
	// other kinds.
	Method string
	// Features are a regression's feature fields, in the order of its
	// coefficients: 1 to regression.MaxFeatures distinct names,
	// none the privacy unit or the target (yaml features[].field). nil for
	// other kinds.
	Features []string
	// FeatureBounds are the [lo, hi] of each of Features (yaml
	// features[].bounds), in the same order and with the rules of Bounds:
	// each feature is clamped to them and mapped to [−1, 1], which is what
	// bounds every method's sensitivity (regression.Scaling).
	FeatureBounds [][2]float64
	// Target is a regression's predicted field (yaml target.field), not a
	// feature and not the privacy unit; Field holds it too.
	Target string
	// TargetBounds are the [lo, hi] the target is clamped to and mapped to
	// [−1, 1] from (yaml target.bounds); Bounds holds them too.
	TargetBounds [2]float64
	// Intercept adds a constant column after the features (yaml
	// intercept), default true. It counts in d_eff = len(Features) + 1,
	// so it raises B_x = √d_eff and with it the noise.
	Intercept bool
	// Lambda is the ridge λ ≥ 0 of methods ssp and ops (yaml lambda):
	// default 0 for ssp; ops requires λ > 0. The posterior sample's
	// privacy needs λ + λ_min(XᵀX) above a floor fixed by ε, δ and the
	// dimension (regression.OPSGamma's h); ops releases a private lower
	// bound on λ_min and raises λ to the floor when the bound falls short,
	// so the ridge it reports can exceed this one. 0 for other methods,
	// which choose λ from the data privately.
	Lambda float64
	// Rho is ρ of methods adassp, adaops and pcls (yaml rho), in (0, 1),
	// default DefaultRho: the failure probability of the private lower
	// bound on λ_min(XᵀX) from which AdaSSP chooses its ridge λ
	// (Wang 2018, Algorithm 2). That choice is post-processing of a
	// private release, so ρ trades accuracy and never privacy; for
	// adaops the bound that the posterior sample's guarantee rests on
	// must fail with a probability counted in Delta instead (Wang's
	// adaops.m shifts it by log(6/δ)), and ρ may only enter the choice
	// of λ. 0 for ssp and ops.
	Rho float64
	// Selection is how method pcls picks a candidate model (yaml
	// selection): SelectionExponential (default) or SelectionNoisyMin;
	// both are ε-DP with the score sensitivity of SPEC section 4.5. ""
	// for other methods.
	Selection string
	// Radius is r > 0 of method pcls (yaml radius): the ℓ1 radius of the
	// coefficients on the scaled problem (features and target in
	// [−1, 1]). It sets the sensitivity of a candidate's score under
	// add/remove of one privacy unit to L·(1 + r)² (SPEC section 4.5,
	// derived): with ‖β‖₁ ≤ r and ‖x‖∞, |y| ≤ 1 each row's squared
	// residual lies in [0, (1 + r)²], and a unit's at most L rows move the
	// constrained minimum by at most L times that. So a larger r means a
	// noisier choice of model; Lei et al. (2018) find the utility
	// sensitive to it. 0 for other methods.
	Radius float64
	// Penalty is pen ≥ 0 of method pcls (yaml penalty), added to a
	// candidate model's score per selected feature. 0 for other methods.
	Penalty float64
	// MaxSupport makes the candidates of method pcls every subset of
	// Features of 1 to MaxSupport features (yaml max_support), in
	// 1..len(Features), with at most MaxRegressionCandidates subsets in
	// all. 0 when Supports is given instead, and for other methods.
	MaxSupport int
	// Supports are the candidate models of method pcls when listed (yaml
	// supports): each a non-empty set of names from Features, in the
	// order given, no two the same set, at most MaxRegressionCandidates.
	// nil when MaxSupport is given instead, and for other methods.
	Supports [][]string
	// SelectionShare is the share of Epsilon that method pcls spends on
	// selecting a model (yaml selection_share), in (0, 1), default
	// DefaultSelectionShare; the rest, with all of Delta, releases the
	// selected model's coefficients with AdaSSP. 0 for other methods.
	SelectionShare float64

	// Noise is laplace or gaussian (default laplace) for every kind but
	// regression, where it is "": each regression method fixes its own
	// noise (Gaussian noise on statistics, or a Gaussian posterior sample).
	Noise   string
	Epsilon float64 // > 0, finite
	Delta   float64 // gaussian and regression: in (0, 1); laplace: 0
	Line    int     // line of the release's mapping, for errors found by the accountant
}

// Mid returns the midpoint of the release's bounds, computed as lo/2 + hi/2
// so that it cannot overflow; it is 0 for a count, which has no bounds. It
// is for display: the stages center with aggregate.Midpoint and the
// mechanism's quantizer, and sum releases are not centered (see
// aggregate.Calibrate).
//
// Mean releases accumulate v − Mid() rather than v and add
// Mid()·ñ back with the noisy count ñ (SPEC.md section 0). This lowers the
// sensitivity without changing the guarantee, which is ε-DP (Laplace) or
// (ε, δ)-DP (Gaussian) under add/remove of one privacy unit, i.e. all of a
// unit's events in the window. Sensitivity sketch: each value is clamped to
// [lo, hi], so |v − mid| ≤ (hi − lo)/2, and a unit has at most L events in a
// window, so adding or removing it moves the centred sum by at most
// L·(hi − lo)/2, against L·max(|lo|, |hi|) for the raw sum. Source: the
// clamped-sum sensitivity of Dwork & Roth, "The Algorithmic Foundations of
// Differential Privacy" (2014), section 3.3, with centring as in SPEC.md.
func (r Release) Mid() float64 {
	return r.Bounds[0]/2 + r.Bounds[1]/2
}

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
