package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Known keys of each mapping, in the order the documentation presents them.
var (
	rootKeys         = []string{"brokers", "security", "embedded", "topics", "metrics", "group", "session_timeout", "pdp_store", "release_partitions", "streams"}
	embeddedKeys     = []string{"addr", "data_dir", "sync"}
	topicsKeys       = []string{"partials", "releases", "ledger", "accountant", "pdp", "deadletter", "requests", "responses"}
	metricsKeys      = []string{"addr", "pdp"}
	streamKeys       = []string{"name", "topic", "partitions", "format", "schema", "schema_id", "max_event_bytes", "privacy_unit", "event_time", "start", "window", "contribution", "budget", "releases", "pdp"}
	windowKeys       = []string{"size", "grace", "idle_timeout", "max_skew"}
	contributionKeys = []string{"max_events_per_window", "max_windows"}
	budgetKeys       = []string{"epsilon", "delta", "per", "queries"}

	formats = []string{FormatAvro, FormatConfluentAvro, FormatJSON}
	noises  = []string{NoiseLaplace, NoiseGaussian}
)

// streamMisplaced maps keys that users put directly on a stream to the
// section they belong in.
var streamMisplaced = map[string]string{
	"size": "window", "grace": "window", "idle_timeout": "window", "max_skew": "window",
	"max_events_per_window": "contribution", "max_windows": "contribution",
	"epsilon": "budget", "delta": "budget", "per": "budget",
}

// namePattern restricts stream and release names. Release ids and record
// keys are built as stream/release/window, and names are metric labels, so
// a name must not contain separators, spaces or control characters.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// topicPattern is Kafka's rule for topic names: at most 249 characters from
// [a-zA-Z0-9._-], and not "." or "..".
var topicPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// maxSchemaBytes bounds the size of a schema file read for checking. A real
// .avsc is a few kilobytes; the bound stops a wrong path (a log, a device)
// from being read into memory.
const maxSchemaBytes = 16 << 20

// parse decodes data into a Config with defaults applied, recording every
// error. It returns nil only when the file has no usable root mapping.
func (d *decoder) parse(data []byte) *Config {
	root := d.document(data)
	if root == nil {
		return nil
	}
	m := d.mappingOf(root, "", rootKeys, nil)
	if m == nil {
		return nil
	}
	c := &Config{
		Embedded: Embedded{Addr: DefaultEmbeddedAddr, DataDir: DefaultDataDir},
		Topics:   DefaultTopics(),
		Metrics:  Metrics{Addr: DefaultMetricsAddr},
		Group:    DefaultGroup,

		SessionTimeout:    DefaultSessionTimeout,
		PDPStore:          DefaultPDPStore,
		ReleasePartitions: DefaultReleasePartitions,
	}
	d.brokers(m, c)
	if v := m.value("security"); v != nil {
		b := resolve(m.value("brokers"))
		d.security(v, c, len(c.Brokers) > 0 || (b != nil && b.Kind == yaml.SequenceNode && len(b.Content) > 0))
	}
	if v := m.value("embedded"); v != nil {
		d.embedded(d.mappingOf(v, "embedded", embeddedKeys, nil), &c.Embedded)
	}
	topicLines := map[string]int{} // internal topic name -> line, for clashes with stream topics
	if v := m.value("topics"); v != nil {
		topicLines = d.topics(d.mappingOf(v, "topics", topicsKeys, nil), &c.Topics)
	}
	if v := m.value("metrics"); v != nil {
		d.metrics(d.mappingOf(v, "metrics", metricsKeys, nil), &c.Metrics)
	}
	if s, line, ok := d.str(m, "group"); ok {
		if strings.TrimSpace(s) == "" {
			d.errorf(line, "group", "must not be empty (leave it out for the default %q)", DefaultGroup)
		} else {
			c.Group = s
		}
	}
	if dur, line, ok := d.duration(m, "session_timeout"); ok {
		if dur < MinSessionTimeout || dur > MaxSessionTimeout {
			d.errorf(line, "session_timeout", "%s is outside %s..%s (the broker also bounds it: group.min.session.timeout.ms, 6s by default)", dur, MinSessionTimeout, MaxSessionTimeout)
		} else {
			c.SessionTimeout = dur
		}
	}
	if s, line, ok := d.str(m, "pdp_store"); ok {
		if strings.TrimSpace(s) == "" {
			d.errorf(line, "pdp_store", "must not be empty (leave it out for the default %q)", DefaultPDPStore)
		} else {
			c.PDPStore = s
		}
	}
	if n, line, ok := d.integer(m, "release_partitions"); ok {
		if n < 1 || n > MaxReleasePartitions {
			d.errorf(line, "release_partitions", "%d is outside 1..%d", n, MaxReleasePartitions)
		} else {
			c.ReleasePartitions = n
		}
	}
	d.require(m, "streams")
	items, line, ok := d.list(m, "streams")
	if ok && len(items) == 0 {
		d.errorf(line, "streams", "must declare at least one stream")
	}
	type seenAt struct {
		stream string
		line   int
	}
	names := map[string]seenAt{}
	topics := map[string]seenAt{}
	for i, item := range items {
		s, lines := d.stream(item, index("streams", i))
		if s == nil {
			continue
		}
		path := index("streams", i)
		if s.Name != "" {
			if first, dup := names[s.Name]; dup {
				d.errorf(lines.name, join(path, "name"), "duplicate stream name %q (first at line %d)", s.Name, first.line)
			} else {
				names[s.Name] = seenAt{s.Name, lines.name}
			}
		}
		if s.Topic != "" {
			// Two streams on one topic would count every event twice, once
			// per stream, each with its own budget: the events' owners would
			// lose more than either budget says.
			if first, dup := topics[s.Topic]; dup {
				d.errorf(lines.topic, join(path, "topic"), "topic %q is already the input of stream %q (line %d); each stream needs its own topic", s.Topic, first.stream, first.line)
			} else {
				topics[s.Topic] = seenAt{s.Name, lines.topic}
			}
			if key, internal := internalTopic(c.Topics, s.Topic); internal {
				msg := "topic %q is the internal topics.%s"
				if l, set := topicLines[key]; set {
					d.errorf(lines.topic, join(path, "topic"), msg+" (line %d); use another name", s.Topic, key, l)
				} else {
					d.errorf(lines.topic, join(path, "topic"), msg+" (a default); use another name", s.Topic, key)
				}
			}
		}
		c.Streams = append(c.Streams, *s)
	}
	return c
}

// brokers reads the broker list.
func (d *decoder) brokers(m *mapping, c *Config) {
	items, _, ok := d.list(m, "brokers")
	if !ok {
		return
	}
	for i, item := range items {
		path := index("brokers", i)
		r := resolve(item)
		if r == nil || r.Kind != yaml.ScalarNode || isNull(r) {
			d.errorf(item.Line, path, "must be a host:port string, got %s", describe(item))
			continue
		}
		if msg := checkHostPort(r.Value, false); msg != "" {
			d.errorf(item.Line, path, "%s", msg)
			continue
		}
		c.Brokers = append(c.Brokers, r.Value)
	}
}

// checkHostPort returns why addr is not host:port, or "". A listen address
// may leave the host out (":9464", every interface) and use port 0 (any
// free port); a broker address needs both.
func checkHostPort(addr string, listen bool) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strconv.Quote(addr) + " is not host:port (e.g. localhost:9092)"
	}
	if !listen && host == "" {
		return strconv.Quote(addr) + " has no host (e.g. localhost:9092)"
	}
	p, err := strconv.Atoi(port)
	lo := 1
	if listen {
		lo = 0
	}
	if err != nil || p < lo || p > 65535 {
		return strconv.Quote(addr) + " has an invalid port " + strconv.Quote(port)
	}
	return ""
}

// embedded reads the embedded broker settings.
func (d *decoder) embedded(m *mapping, e *Embedded) {
	if m == nil {
		return
	}
	if s, line, ok := d.str(m, "addr"); ok {
		if msg := checkHostPort(s, true); msg != "" {
			d.errorf(line, "embedded.addr", "%s", msg)
		} else {
			e.Addr = s
		}
	}
	if s, line, ok := d.str(m, "data_dir"); ok {
		if strings.TrimSpace(s) == "" {
			d.errorf(line, "embedded.data_dir", "must not be empty (leave it out for the default %q)", DefaultDataDir)
		} else {
			e.DataDir = s
		}
	}
	if v, ok := d.boolean(m, "sync"); ok {
		e.NoSync = !v
	}
}

// topics reads the internal topic names and checks that they are distinct.
// It returns the line of each name given in the file, by yaml key.
func (d *decoder) topics(m *mapping, t *Topics) map[string]int {
	lines := map[string]int{}
	if m == nil {
		return lines
	}
	fields := topicFields(t)
	for _, key := range topicsKeys {
		s, line, ok := d.str(m, key)
		if !ok {
			continue
		}
		if msg := checkTopic(s); msg != "" {
			d.errorf(line, "topics."+key, "%s", msg)
			continue
		}
		*fields[key] = s
		lines[key] = line
	}
	// Each internal topic carries one kind of record with its own audience
	// (public releases, restricted pDP certificates, ...); sharing a topic
	// would mix them, so names must differ.
	firstKey := map[string]string{}
	for _, key := range topicsKeys {
		name := *fields[key]
		if other, dup := firstKey[name]; dup {
			// Report on the key the user wrote; the other may be a default.
			at, also := key, other
			if lines[key] == 0 {
				at, also = other, key
			}
			d.errorf(lines[at], "topics."+at, "%q is also topics.%s; every internal topic needs its own name", name, also)
			continue
		}
		firstKey[name] = key
	}
	return lines
}

// topicFields maps yaml keys to the fields of t.
func topicFields(t *Topics) map[string]*string {
	return map[string]*string{
		"partials": &t.Partials, "releases": &t.Releases, "ledger": &t.Ledger,
		"accountant": &t.Accountant, "pdp": &t.PDP, "deadletter": &t.DeadLetter,
		"requests": &t.Requests, "responses": &t.Responses,
	}
}

// internalTopic reports whether name is one of the internal topics, and which.
func internalTopic(t Topics, name string) (string, bool) {
	fields := topicFields(&t)
	for _, key := range topicsKeys {
		if *fields[key] == name {
			return key, true
		}
	}
	return "", false
}

// checkTopic returns why name is not a valid Kafka topic name, or "".
func checkTopic(name string) string {
	if !topicPattern.MatchString(name) || name == "." || name == ".." {
		return strconv.Quote(name) + " is not a valid Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -, not \".\" or \"..\")"
	}
	return ""
}

// metrics reads the metrics endpoint. "off" and "" disable it and are both
// stored as "".
func (d *decoder) metrics(m *mapping, out *Metrics) {
	if m == nil {
		return
	}
	if pdp, ok := d.boolean(m, "pdp"); ok {
		out.PDP = pdp
	}
	s, line, ok := d.str(m, "addr")
	if !ok {
		return
	}
	if s == "" || s == MetricsOff {
		out.Addr = ""
		return
	}
	if msg := checkHostPort(s, true); msg != "" {
		d.errorf(line, "metrics.addr", "%s (or off to disable metrics)", msg)
		return
	}
	out.Addr = s
}

// streamLines holds the lines of stream fields that cross-stream checks
// report on.
type streamLines struct{ name, topic int }

// stream decodes one stream. It returns nil when the item is not a mapping.
func (d *decoder) stream(n *yaml.Node, path string) (*Stream, streamLines) {
	var lines streamLines
	m := d.mappingOf(n, path, streamKeys, streamMisplaced)
	if m == nil {
		return nil, lines
	}
	s := &Stream{
		Partitions:    DefaultPartitions,
		MaxEventBytes: DefaultMaxEventBytes,
		Window:        Window{IdleTimeout: DefaultIdleTimeout, MaxSkew: DefaultMaxSkew},
		PDP:           true,
		Line:          m.line,
	}
	d.require(m, "name", "topic", "format", "privacy_unit", "window", "contribution", "budget", "releases")

	if v, line, ok := d.str(m, "name"); ok {
		if !namePattern.MatchString(v) {
			d.errorf(line, join(path, "name"), "%q is not a valid name (1 to 128 of a-z A-Z 0-9 . _ -, starting with a letter or digit)", v)
		} else {
			s.Name, lines.name = v, line
		}
	}
	if v, line, ok := d.str(m, "topic"); ok {
		if msg := checkTopic(v); msg != "" {
			d.errorf(line, join(path, "topic"), "%s", msg)
		} else {
			s.Topic, lines.topic = v, line
		}
	}
	if v, ok := d.boolean(m, "pdp"); ok {
		s.PDP = v
	}
	if v, line, ok := d.integer(m, "partitions"); ok {
		if v < 1 {
			d.errorf(line, join(path, "partitions"), "must be >= 1, got %d", v)
		} else {
			s.Partitions = v
		}
	}
	if v, line, ok := d.integer(m, "max_event_bytes"); ok {
		if v < 1 || v > MaxEventBytesLimit {
			d.errorf(line, join(path, "max_event_bytes"), "must be in 1..%d (15 MiB), got %d; larger records are dead-lettered as too_large", MaxEventBytesLimit, v)
		} else {
			s.MaxEventBytes = v
		}
	}
	d.format(m, path, s)
	unitLine := 0
	if v, line, ok := d.str(m, "privacy_unit"); ok {
		if strings.TrimSpace(v) == "" {
			d.errorf(line, join(path, "privacy_unit"), "must name the field that identifies the person to protect (or be %q for event-level privacy)", PrivacyUnitEvent)
		} else {
			s.PrivacyUnit, unitLine = v, line
		}
	}
	if v, _, ok := d.str(m, "event_time"); ok {
		s.EventTime = v
	}
	if v, line, ok := d.str(m, "start"); ok {
		s.Start = d.start(v, line, join(path, "start"))
	}
	sizeLine := 0
	if v := m.value("window"); v != nil {
		sizeLine = d.window(d.mappingOf(v, join(path, "window"), windowKeys, nil), &s.Window)
	}
	maxEventsLine, maxWindowsLine := 0, 0
	if v := m.value("contribution"); v != nil {
		maxEventsLine, maxWindowsLine = d.contribution(d.mappingOf(v, join(path, "contribution"), contributionKeys, nil), &s.Contribution)
	}
	if v := m.value("budget"); v != nil {
		d.budget(d.mappingOf(v, join(path, "budget"), budgetKeys, nil), &s.Budget, s.Window.Size, sizeLine)
	}
	items, line, ok := d.list(m, "releases")
	if ok && len(items) == 0 {
		d.errorf(line, join(path, "releases"), "must declare at least one release")
	}
	names := map[string]int{}
	for i, item := range items {
		rpath := index(join(path, "releases"), i)
		r, rl := d.release(item, rpath, StreamContext{MaxEvents: s.Contribution.MaxEventsPerWindow, MaxEventsLine: maxEventsLine})
		if r == nil {
			continue
		}
		if r.Name != "" {
			if first, dup := names[r.Name]; dup {
				d.errorf(rl.name, join(rpath, "name"), "duplicate release name %q in stream (first at line %d)", r.Name, first)
			} else {
				names[r.Name] = rl.name
			}
		}
		// The privacy unit identifies a person; releasing statistics of
		// that identifier is never what the user meant and would publish
		// (noisy) facts about the identifiers themselves. With event-level
		// privacy there is no identifier field, so a field named "event"
		// is an ordinary value.
		if s.PrivacyUnit != "" && s.PrivacyUnit != PrivacyUnitEvent {
			for _, f := range rl.aggregates {
				if f.name == s.PrivacyUnit {
					d.errorf(f.line, f.path, "%q is the stream's privacy unit (line %d); a release cannot aggregate the identifier it protects", f.name, unitLine)
				}
			}
		}
		for _, check := range rl.later {
			check()
		}
		s.Releases = append(s.Releases, *r)
	}
	if maxWindowsLine != 0 {
		d.maxWindows(s, maxWindowsLine, path)
	}
	return s, lines
}

// maxWindows checks contribution.max_windows (at line) of stream s (at
// path) against the
// stream's releases. The bound is per horizon, and the horizon is that of
// the stream's continual releases (kind/running): so the stream must have
// one, all of them must share its horizon (the accumulate stage enforces
// one horizon per stream, and a release whose horizon differed would get
// a participation bound that holds over another span of windows), and the
// stream must have units that can be in several windows (with
// privacy_unit: event every unit is one event, in one window, already).
// A non-continual release beside them is fine: the bound only drops more
// events, and every other release's sensitivity holds per window whatever
// is dropped.
func (d *decoder) maxWindows(s *Stream, line int, path string) {
	field := join(join(path, "contribution"), "max_windows")
	if s.PrivacyUnit == PrivacyUnitEvent {
		d.errorf(line, field, "is not used with privacy_unit: %s (every unit is one event, in one window)", PrivacyUnitEvent)
		return
	}
	first := -1
	for i, r := range s.Releases {
		if r.Continual == nil {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if f := s.Releases[first]; r.Continual.Horizon != f.Continual.Horizon {
			d.errorf(r.Continual.Line, join(join(index(join(path, "releases"), i), "continual"), "horizon"),
				"is %d windows, release %s's (line %d) is %d: contribution.max_windows (line %d) bounds the windows a unit joins in one horizon, so every continual release of the stream must have the same horizon",
				r.Continual.Horizon, f.Name, f.Continual.Line, f.Continual.Horizon, line)
		}
	}
	if first < 0 {
		d.errorf(line, field, "is only used with continual releases (a release with continual: {horizon: T}); the stream has none")
	}
}

// format reads format, schema and schema_id, which depend on each other.
func (d *decoder) format(m *mapping, path string, s *Stream) {
	format, formatLine, formatOK := d.str(m, "format")
	if formatOK && !contains(formats, format) {
		d.errorf(formatLine, join(path, "format"), "%q is not one of %s%s", format, strings.Join(formats, ", "), didYouMean(format, formats))
		formatOK = false
	}
	if formatOK {
		s.Format = format
	}
	avro := format == FormatAvro || format == FormatConfluentAvro

	if v := m.value("schema"); v != nil && resolve(v).Kind == yaml.MappingNode {
		// The schema itself, written inline: JSON is YAML, so an .avsc
		// pasted under the key parses as this mapping, and so does the
		// same schema in block style.
		switch text, msg := inlineSchema(v); {
		case formatOK && !avro:
			d.errorf(v.Line, join(path, "schema"), "is only used with format avro or confluent-avro, not %s", format)
		case msg != "":
			d.errorf(v.Line, join(path, "schema"), "%s", msg)
		default:
			s.SchemaJSON = text
		}
	} else if schema, line, ok := d.str(m, "schema"); ok {
		switch {
		case formatOK && !avro:
			d.errorf(line, join(path, "schema"), "is only used with format avro or confluent-avro, not %s", format)
		case strings.TrimSpace(schema) == "":
			d.errorf(line, join(path, "schema"), "must be the path of an .avsc file, or the schema itself as a mapping")
		default:
			resolved := schema
			if !filepath.IsAbs(resolved) {
				resolved = filepath.Join(d.dir, resolved)
			}
			if msg := checkSchemaFile(resolved); msg != "" {
				d.errorf(line, join(path, "schema"), "%s", msg)
			} else {
				s.Schema = resolved
			}
		}
	} else if formatOK && avro && !m.has("schema") {
		d.errorf(formatLine, join(path, "schema"), "required with format %s: the path of the .avsc file, relative to the config file, or the schema itself as a mapping", format)
	}

	if id, line, ok := d.integer(m, "schema_id"); ok {
		switch {
		case formatOK && format != FormatConfluentAvro:
			d.errorf(line, join(path, "schema_id"), "is only used with format confluent-avro, not %s", format)
		case id < 0 || id > math.MaxInt32:
			d.errorf(line, join(path, "schema_id"), "must be a schema registry id in 0..%d (0 accepts any), got %d", math.MaxInt32, id)
		default:
			s.SchemaID = id
		}
	}
}

// inlineSchema returns the JSON text of an Avro schema written inline as a
// YAML mapping, or why it cannot be one. Like a schema file, it is only
// checked to be JSON here; the schema package parses the Avro.
func inlineSchema(n *yaml.Node) (string, string) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", "inline schema: " + err.Error()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", "inline schema is not expressible as JSON (an Avro schema is JSON): " + err.Error()
	}
	if len(b) > maxSchemaBytes {
		return "", "inline schema is larger than 16 MiB"
	}
	return string(b), ""
}

// checkSchemaFile returns why the schema file cannot be used, or "".
// Parsing the Avro schema itself is the schema package's job; here we only
// make sure the file is there, readable and JSON, so that a wrong path is
// reported with the line that holds it.
func checkSchemaFile(path string) string {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "schema file " + strconv.Quote(path) + " does not exist (relative paths are resolved from the config file's directory)"
	case err != nil:
		return "cannot read schema file " + strconv.Quote(path) + ": " + causeOf(err)
	case !info.Mode().IsRegular():
		return "schema file " + strconv.Quote(path) + " is not a regular file"
	case info.Size() > maxSchemaBytes:
		return "schema file " + strconv.Quote(path) + " is larger than 16 MiB; is it really an .avsc?"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "cannot read schema file " + strconv.Quote(path) + ": " + causeOf(err)
	}
	if !json.Valid(data) {
		return "schema file " + strconv.Quote(path) + " is not valid JSON (an .avsc file is JSON)"
	}
	return ""
}

// causeOf strips the path prefix from a file-system error, which the
// message already names.
func causeOf(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// window reads the window settings and returns the line of size (0 if
// missing or invalid), for the budget period check.
func (d *decoder) window(m *mapping, w *Window) int {
	if m == nil {
		return 0
	}
	d.require(m, "size")
	sizeLine := 0
	if v, line, ok := d.duration(m, "size"); ok {
		switch {
		case v <= 0:
			d.errorf(line, join(m.path, "size"), "must be > 0, got %s", v)
		case v%time.Millisecond != 0:
			// Event times are Kafka timestamps in milliseconds, so window
			// boundaries must fall on whole milliseconds.
			d.errorf(line, join(m.path, "size"), "must be a whole number of milliseconds, got %s", v)
		default:
			w.Size, sizeLine = v, line
		}
	}
	if v, line, ok := d.duration(m, "grace"); ok {
		if v < 0 {
			d.errorf(line, join(m.path, "grace"), "must be >= 0, got %s", v)
		} else {
			w.Grace = v
		}
	}
	if v, line, ok := d.duration(m, "idle_timeout"); ok {
		if v <= 0 {
			d.errorf(line, join(m.path, "idle_timeout"), "must be > 0, got %s", v)
		} else {
			w.IdleTimeout = v
		}
	}
	if v, line, ok := d.duration(m, "max_skew"); ok {
		if v < time.Millisecond {
			d.errorf(line, join(m.path, "max_skew"), "must be at least 1ms, got %s (event times have millisecond resolution; producers' clocks drift, so allow some)", v)
		} else {
			w.MaxSkew = v
		}
	}
	return sizeLine
}

// start parses a stream's start, an RFC 3339 timestamp (fractional
// seconds allowed); it returns the zero time, after recording an error,
// when the text is not one or is not after the Unix epoch.
func (d *decoder) start(v string, line int, path string) time.Time {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
	if err != nil {
		d.errorf(line, path, "%q is not an RFC 3339 timestamp (e.g. 2025-06-01T00:00:00Z)", v)
		return time.Time{}
	}
	if t.UnixMilli() <= 0 {
		d.errorf(line, path, "%s is not after 1970-01-01T00:00:00Z", v)
		return time.Time{}
	}
	return t.UTC()
}

// contribution reads the contribution bounds and returns the lines of
// max_events_per_window, for the releases' max_per_bin check, and of
// max_windows, for the check against the continual releases (each 0 if
// missing or invalid).
func (d *decoder) contribution(m *mapping, c *Contribution) (maxEventsLine, maxWindowsLine int) {
	if m == nil {
		return 0, 0
	}
	d.require(m, "max_events_per_window")
	if v, line, ok := d.integer(m, "max_events_per_window"); ok {
		if v < 1 {
			d.errorf(line, join(m.path, "max_events_per_window"), "must be >= 1, got %d", v)
		} else {
			c.MaxEventsPerWindow = v
			maxEventsLine = line
		}
	}
	if v, line, ok := d.integer(m, "max_windows"); ok {
		if v < 1 || v > maxContinualHorizon {
			d.errorf(line, join(m.path, "max_windows"), "must be in [1, %d] windows, got %d", maxContinualHorizon, v)
		} else {
			c.MaxWindows = v
			maxWindowsLine = line
		}
	}
	return maxEventsLine, maxWindowsLine
}

// budget reads the stream budget. size is the window size (0 if unknown)
// for the period check.
func (d *decoder) budget(m *mapping, b *Budget, size time.Duration, sizeLine int) {
	if m == nil {
		return
	}
	b.Line = m.line
	d.require(m, "epsilon", "delta")
	if v, ok := d.epsilon(m); ok {
		b.Epsilon = v
	}
	if v, ok := d.delta(m); ok {
		b.Delta = v
	}
	if v, line, ok := d.duration(m, "per"); ok {
		switch {
		case v < 0:
			d.errorf(line, join(m.path, "per"), "must be >= 0 (0 or absent: the budget covers the stream's lifetime), got %s", v)
		case v > 0 && size > 0 && v%size != 0:
			// Each window must fall inside one budget period, or one
			// window's release could be charged to a period it only
			// partly belongs to.
			d.errorf(line, join(m.path, "per"), "%s is not a multiple of window.size %s (line %d)", v, size, sizeLine)
		default:
			b.Per = v
		}
	}
	if v, line, ok := d.number(m, "queries"); ok {
		switch {
		case !(v > 0) || math.IsInf(v, 0):
			d.errorf(line, join(m.path, "queries"), "must be a finite ε > 0 (absent: answers are limited by the budget alone), got %v", v)
		case b.Epsilon > 0 && v > b.Epsilon:
			d.errorf(line, join(m.path, "queries"), "%v is more than the budget's epsilon %v: it is the share of the budget that answers to queries may spend", v, b.Epsilon)
		default:
			b.Queries = v
		}
	}
}

// epsilon reads a positive, finite epsilon.
func (d *decoder) epsilon(m *mapping) (float64, bool) {
	v, line, ok := d.number(m, "epsilon")
	if !ok {
		return 0, false
	}
	switch {
	case !finite(v):
		d.errorf(line, join(m.path, "epsilon"), "must be finite, got %s", fmtFloat(v))
		return 0, false
	case v <= 0:
		d.errorf(line, join(m.path, "epsilon"), "must be > 0, got %s", fmtFloat(v))
		return 0, false
	}
	return v, true
}

// delta reads a delta in the open interval (0, 1).
func (d *decoder) delta(m *mapping) (float64, bool) {
	v, line, ok := d.number(m, "delta")
	if !ok {
		return 0, false
	}
	if !(v > 0 && v < 1) { // also false for NaN
		d.errorf(line, join(m.path, "delta"), "must be in (0, 1), got %s", fmtFloat(v))
		return 0, false
	}
	return v, true
}

// releaseLines holds what the stream's checks need of a release: the line
// of its name, the event fields it aggregates and its kind's checks
// against the stream (Params.Later), run after those.
type releaseLines struct {
	name       int
	aggregates []fieldRef
	later      []func()
}

// fieldRef is an event field a release aggregates, where the file names it.
type fieldRef struct {
	name string
	line int
	path string
}

// release decodes one release and returns it with the lines its stream's
// checks need. It returns nil when the item is not a mapping. The keys
// every release has are read here; a known kind's own keys by its
// KindSpec (kindRelease).
func (d *decoder) release(n *yaml.Node, path string, sc StreamContext) (*Release, releaseLines) {
	var lines releaseLines
	m := d.mappingOf(n, path, releaseKeys(), nil)
	if m == nil {
		return nil, lines
	}
	r := &Release{Noise: NoiseLaplace, Line: m.line}
	d.require(m, "name", "kind", "epsilon")

	if v, line, ok := d.str(m, "name"); ok {
		if !namePattern.MatchString(v) {
			d.errorf(line, join(path, "name"), "%q is not a valid name (1 to 128 of a-z A-Z 0-9 . _ -, starting with a letter or digit)", v)
		} else {
			r.Name, lines.name = v, line
		}
	}
	// epsilon is read with noise and delta, after the kind's own keys
	// (DecodeNoise, Params.Epsilon), so that on a release written on one
	// line its errors come in the order they always have.
	p := &Params{d: d, m: m, Stream: sc}
	kind, kindLine, kindOK := d.str(m, "kind")
	spec, known := kindSpec(kind)
	switch {
	case kindOK && !known:
		names := kindNames()
		d.errorf(kindLine, join(path, "kind"), "%q is not one of %s%s", kind, strings.Join(names, ", "), didYouMean(kind, names))
	case known:
		r.Kind = kind
		d.kindRelease(p, spec, r)
		lines.aggregates, lines.later = p.aggregates, p.later
		return r, lines
	}
	// Without a known kind no kind's keys can be checked; the common
	// privacy keys still are, so that their mistakes show in this run.
	p.DecodeNoise(r)
	return r, lines
}

// boundsPair checks the items of one [lo, hi] list on line, reporting
// errors for path: lo < hi, both finite, and hi − lo finite (so that
// widths and midpoints computed from them are finite too).
func (d *decoder) boundsPair(items []*yaml.Node, line int, path string) ([2]float64, bool) {
	var b [2]float64
	if len(items) != 2 {
		d.errorf(line, path, "must be [lo, hi], two numbers; got %d items", len(items))
		return b, false
	}
	for i, item := range items {
		f, ok := numberOf(resolve(item))
		if !ok {
			d.errorf(item.Line, path, "must be [lo, hi], two numbers; item %d is %s", i+1, describe(item))
			return b, false
		}
		if !finite(f) {
			d.errorf(item.Line, path, "must be finite, got %s", fmtFloat(f))
			return b, false
		}
		b[i] = f
	}
	switch {
	case b[0] == b[1]:
		d.errorf(line, path, "lo and hi are equal (%s); need lo < hi", fmtFloat(b[0]))
		return b, false
	case b[0] > b[1]:
		d.errorf(line, path, "reversed: lo %s > hi %s; write [%s, %s]", fmtFloat(b[0]), fmtFloat(b[1]), fmtFloat(b[1]), fmtFloat(b[0]))
		return b, false
	case !finite(b[1] - b[0]):
		d.errorf(line, path, "range [%s, %s] is too wide to compute with", fmtFloat(b[0]), fmtFloat(b[1]))
		return b, false
	}
	return b, true
}
