package testkit

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	// The release kinds are the product's: what registers them with the
	// config package for planning registers them for these tests too.
	_ "github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// TestPipelineYAML checks the builder against configurations written by
// hand: each built configuration parses (config.Parse, as the product reads
// a file) to exactly the Config of its hand-written twin, so a test that
// moves from its YAML text to the builder keeps its meaning. Together the
// cases use every method of Pipeline, Stream and Release.
func TestPipelineYAML(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trip.avsc"), []byte(schema.TripSchema()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 6, 15, 15, 6, 40, 0, time.UTC)
	cases := []struct {
		name  string
		built *Pipeline
		hand  string
	}{
		{
			name: "defaults",
			built: NewPipeline(NewStream("trips", "trips.events").Releases(
				Count("n").Epsilon(0.5))),
			hand: `streams:
  - name: trips
    topic: trips.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s, grace: 0s, idle_timeout: 1s}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 10, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 0.5}
metrics: {addr: "off"}
`,
		},
		{
			name: "every simple kind, prefixed topics, embedded broker",
			built: NewPipeline(NewStream("trips", "events").Partitions(4).MaxEvents(3).Budget(3.2, 1e-5).
				Window(2*time.Second, 500*time.Millisecond, 10*time.Minute).MaxSkew(time.Second).Start(start).
				Releases(
					Count("n").Noise("laplace").Epsilon(0.5),
					NewRelease("s", "sum").Set("field", "v").Set("bounds", []float64{0, 10}).Epsilon(1),
					Mean("m", "v", -1, 1).Noise("gaussian").Epsilon(1).Delta(1e-7),
					Histogram("h", "v", 0, 10, 5).MaxPerBin(1).Epsilon(0.5),
					Density("d", "v", 0, 10, 6).GridPoints(65).Samples(3).Noise("gaussian").Epsilon(2).Delta(1e-7),
				)).TopicPrefix("t").Embedded("127.0.0.1:0", filepath.Join(dir, "kafka")).PDPStore(filepath.Join(dir, "pdp")),
			hand: `streams:
  - name: trips
    topic: t.events
    partitions: 4
    format: json
    privacy_unit: user
    event_time: ts
    start: 2025-06-15T15:06:40Z
    window: {size: 2s, grace: 500ms, idle_timeout: 10m, max_skew: 1s}
    contribution: {max_events_per_window: 3}
    budget: {epsilon: 3.2, delta: 1e-5}
    releases:
      - {name: n, kind: count, noise: laplace, epsilon: 0.5}
      - {name: s, kind: sum, field: v, bounds: [0, 10], epsilon: 1}
      - {name: m, kind: mean, field: v, bounds: [-1, 1], noise: gaussian, epsilon: 1, delta: 1e-7}
      - {name: h, kind: histogram, field: v, bounds: [0, 10], bins: 5, max_per_bin: 1, epsilon: 0.5}
      - {name: d, kind: density, field: v, bounds: [0, 10], terms: 6, grid_points: 65, samples: 3, noise: gaussian, epsilon: 2, delta: 1e-7}
embedded: {addr: "127.0.0.1:0", data_dir: ` + filepath.Join(dir, "kafka") + `}
pdp_store: ` + filepath.Join(dir, "pdp") + `
metrics: {addr: "off"}
`,
		},
		{
			name: "multi-field histograms and randomized response",
			built: NewPipeline(NewStream("pts", "pts.events").MaxEvents(3).Budget(50, 1e-6).Releases(
				HistogramND("xy", NewAxis("x", 0, 8, 4), NewAxis("y", -3, 3, 3)).MaxPerBin(1).Noise("gaussian").Epsilon(2).Delta(1e-7).Samples(20),
				HistogramND("xyz", NewAxis("x", 0, 8, 0), NewAxis("y", -4, 4, 0), NewAxis("z", 0, 2, 0)).AutoBins(500).Epsilon(1),
				Histogram("ha", "x", 0, 1, 0).AutoBins(100).Epsilon(1),
				RandomizedResponse("m", "mode", "bus", "car", "bike", "walk").EpsilonLocal(2).MaxPerBin(1).Epsilon(1),
				RandomizedResponse("p", "mode", "walk", "bike").P(0.5).Epsilon(1),
			)).Metrics(""),
			hand: `streams:
  - name: pts
    topic: pts.events
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s, idle_timeout: 1s}
    contribution: {max_events_per_window: 3}
    budget: {epsilon: 50, delta: 1e-6}
    releases:
      - {name: xy, kind: histogram, fields: [x, y], bounds: [[0, 8], [-3, 3]], bins: [4, 3], max_per_bin: 1, noise: gaussian, epsilon: 2, delta: 1e-7, samples: 20}
      - {name: xyz, kind: histogram, fields: [x, y, z], bounds: [[0, 8], [-4, 4], [0, 2]], bins: auto, expected_events: 500, epsilon: 1}
      - {name: ha, kind: histogram, field: x, bounds: [0, 1], bins: auto, expected_events: 100, epsilon: 1}
      - {name: m, kind: randomized_response, field: mode, categories: [bus, car, bike, walk], epsilon_local: 2, max_per_bin: 1, epsilon: 1}
      - {name: p, kind: randomized_response, field: mode, categories: [walk, bike], p: 0.5, epsilon: 1}
`,
		},
		{
			name: "regressions, other unit, no event time, window size only, budget period",
			built: NewPipeline(NewStream("cars", "cars.events").PrivacyUnit("car").EventTime("").Window(time.Hour, 0, 0).
				MaxEvents(1).Budget(20, 1e-5).BudgetPer(2*time.Hour).PDP(false).Releases(
				Regression("fit", "adassp", Var("mpg", 0, 47), Var("hp", 0, 210), Var("weight", 1500, 4500)).Intercept(false).Epsilon(1).Delta(1e-6),
				Regression("ops", "ops", Var("mpg", 5, 50), Var("hp", 0, 250)).Lambda(50).Epsilon(1).Delta(1e-6),
				Regression("sel", "pcls", Var("mpg", 5, 50), Var("hp", 0, 250), Var("wt", 1, 6)).
					Set("radius", 1.5).Set("penalty", 3).Set("max_support", 2).Epsilon(2).Delta(1e-6),
			)),
			hand: `streams:
  - name: cars
    topic: cars.events
    format: json
    privacy_unit: car
    window: {size: 1h}
    contribution: {max_events_per_window: 1}
    budget: {epsilon: 20, delta: 1e-5, per: 2h}
    pdp: false
    releases:
      - {name: fit, kind: regression, method: adassp, intercept: false, features: [{field: hp, bounds: [0, 210]}, {field: weight, bounds: [1500, 4500]}], target: {field: mpg, bounds: [0, 47]}, epsilon: 1, delta: 1e-6}
      - {name: ops, kind: regression, method: ops, lambda: 50, features: [{field: hp, bounds: [0, 250]}], target: {field: mpg, bounds: [5, 50]}, epsilon: 1, delta: 1e-6}
      - {name: sel, kind: regression, method: pcls, features: [{field: hp, bounds: [0, 250]}, {field: wt, bounds: [1, 6]}], target: {field: mpg, bounds: [5, 50]}, radius: 1.5, penalty: 3, max_support: 2, epsilon: 2, delta: 1e-6}
metrics: {addr: "off"}
`,
		},
		{
			name: "avro streams, brokers, security, group and topics",
			built: NewPipeline(
				NewStream("js", "js").Partitions(1).Window(time.Second, 500*time.Millisecond, time.Second).MaxEvents(100).Budget(100, 1e-6).
					Releases(Count("n").Epsilon(1)),
				NewStream("av", "av").Partitions(1).Avro("trip.avsc").PrivacyUnit("rider_id").MaxEventBytes(4096).
					Releases(Sum("fare_sum", "fare", 0, 120).Epsilon(1)),
			).Streams(NewStream("cf", "cf").ConfluentAvro(filepath.Join(dir, "trip.avsc"), 3).PrivacyUnit("rider_id").
				Releases(Mean("km_mean", "km", 0, 40).Epsilon(1))).
				Brokers("kafka-1:9093", "kafka-2:9093").Group("g").
				Topics(Topics{Partials: "g.partials", Releases: "g.releases", Ledger: "g.ledger", Accountant: "g.accountant", PDP: "g.pdp", DeadLetter: "g.deadletter"}).
				Security(Security{TLS: &TLS{Enabled: true, ServerName: "kafka"}, SASL: &SASL{Mechanism: "SCRAM-SHA-256", Username: "dpstream", PasswordEnv: "PW"}}),
			hand: `brokers: [kafka-1:9093, kafka-2:9093]
security:
  tls:
    enabled: true
    server_name: kafka
  sasl:
    mechanism: SCRAM-SHA-256
    username: dpstream
    password_env: PW
group: g
topics:
  partials: g.partials
  releases: g.releases
  ledger: g.ledger
  accountant: g.accountant
  pdp: g.pdp
  deadletter: g.deadletter
streams:
  - name: js
    topic: js
    partitions: 1
    format: json
    privacy_unit: user
    event_time: ts
    window: {size: 1s, grace: 500ms, idle_timeout: 1s}
    contribution: {max_events_per_window: 100}
    budget: {epsilon: 100, delta: 1e-6}
    releases:
      - {name: n, kind: count, epsilon: 1}
  - name: av
    topic: av
    partitions: 1
    format: avro
    schema: ` + filepath.Join(dir, "trip.avsc") + `
    max_event_bytes: 4096
    privacy_unit: rider_id
    event_time: ts
    window: {size: 1s, grace: 0s, idle_timeout: 1s}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 10, delta: 1e-6}
    releases:
      - {name: fare_sum, kind: sum, field: fare, bounds: [0, 120], epsilon: 1}
  - name: cf
    topic: cf
    format: confluent-avro
    schema: trip.avsc
    schema_id: 3
    privacy_unit: rider_id
    event_time: ts
    window: {size: 1s, grace: 0s, idle_timeout: 1s}
    contribution: {max_events_per_window: 2}
    budget: {epsilon: 10, delta: 1e-6}
    releases:
      - {name: km_mean, kind: mean, field: km, bounds: [0, 40], epsilon: 1}
metrics: {addr: "off"}
`,
		},
	}
	path := filepath.Join(dir, "pipeline.yaml")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := c.built.YAML()
			got, err := config.Parse([]byte(text), path)
			if err != nil {
				t.Fatalf("built config does not parse: %v\n%s", err, text)
			}
			want, err := config.Parse([]byte(c.hand), path)
			if err != nil {
				t.Fatalf("hand-written config does not parse: %v", err)
			}
			// The lines differ with the layout; what the file says may not.
			zeroLines(reflect.ValueOf(got))
			zeroLines(reflect.ValueOf(want))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("built config parses to\n%+v\nthe hand-written one to\n%+v\nbuilt text:\n%s", got, want, text)
			}
		})
	}
}

// zeroLines sets every field named Line under v to zero: the line numbers
// a parsed Config keeps for its error messages.
func zeroLines(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			zeroLines(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			zeroLines(v.Index(i))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); v.Type().Field(i).Name == "Line" && f.CanSet() && f.CanInt() {
				f.SetInt(0)
			} else if v.Type().Field(i).IsExported() {
				zeroLines(f)
			}
		}
	}
}

// TestPipelineWriteFile: WriteFile writes what YAML renders, and the file
// loads as the product loads a config.
func TestPipelineWriteFile(t *testing.T) {
	p := NewPipeline(NewStream("rides", "rides.events").Releases(Count("n").Epsilon(0.5))).Embedded("127.0.0.1:0", "")
	path := p.WriteFile(t, filepath.Join(t.TempDir(), "pipeline.yaml"))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != p.YAML() {
		t.Errorf("file holds\n%s\nYAML renders\n%s", b, p.YAML())
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// metrics: {addr: "off"} parses to no address: nothing is served.
	if cfg.Embedded.Addr != "127.0.0.1:0" || cfg.Embedded.DataDir != config.DefaultDataDir || cfg.Metrics.Addr != "" {
		t.Errorf("loaded embedded %+v, metrics %+v", cfg.Embedded, cfg.Metrics)
	}
}

// TestScalar: the values that need quotes get them, numbers render short
// and exactly.
func TestScalar(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"user", "user"},
		{"off", `"off"`},
		{"y", "y"},
		{"127.0.0.1:0", `"127.0.0.1:0"`},
		{"/tmp/x/kafka", "/tmp/x/kafka"},
		{"a b", `"a b"`},
		{"", `""`},
		{1e-6, "1e-6"},
		{10 * time.Minute, "10m"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{"n", "n"},
		{1e21, "1e21"},
		{3.2, "3.2"},
		{-0.25, "-0.25"},
		{1.0 / 3, "0.3333333333333333"},
		{500 * time.Millisecond, "500ms"},
		{[][2]float64{{0, 8}, {-3, 3}}, "[[0, 8], [-3, 3]]"},
		{Var("y", -10, 6), "{field: y, bounds: [-10, 6]}"},
	} {
		if got := scalar(c.v); got != c.want {
			t.Errorf("scalar(%#v) = %s, want %s", c.v, got, c.want)
		}
	}
}
