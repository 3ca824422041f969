package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	_ "github.com/dpstream/dpstream/kind/all"
	"github.com/dpstream/dpstream/kind/histogram"
	"github.com/dpstream/dpstream/kind/sum"
)

// testdataDir holds the sample and the broken configs.
const testdataDir = "../../testdata/config"

// want is one expected error: its line, its field path, and a fragment of
// its message.
type want struct {
	line  int
	field string
	msg   string
}

// checkErrors asserts that err holds exactly the wanted errors (in any order
// within a line), that every one is an *Error naming path, and that they are
// sorted by line.
func checkErrors(t *testing.T, err error, path string, wants []want) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %d", len(wants))
	}
	got := config.Errors(err)
	if len(got) == 0 {
		t.Fatalf("error %v contains no *Error", err)
	}
	for i, e := range got {
		if e.Path != path {
			t.Errorf("error %d: Path = %q, want %q", i, e.Path, path)
		}
		if i > 0 && got[i-1].Line > e.Line {
			t.Errorf("errors not sorted by line: %d before %d", got[i-1].Line, e.Line)
		}
	}
	used := make([]bool, len(got))
	for _, w := range wants {
		found := false
		for i, e := range got {
			if !used[i] && e.Line == w.line && e.Field == w.field && strings.Contains(e.Msg, w.msg) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing error: line %d, field %q, message containing %q", w.line, w.field, w.msg)
		}
	}
	for i, e := range got {
		if !used[i] {
			t.Errorf("unexpected error: line %d, field %q: %s", e.Line, e.Field, e.Msg)
		}
	}
}

func TestBadConfigs(t *testing.T) {
	tests := []struct {
		file  string
		wants []want
	}{
		{"bad_unknown_field.yaml", []want{
			{11, "streams[0].releases[0].epsilon", "required field is missing"},
			{15, "streams[0].releases[0]", `unknown field "epsilom" (did you mean "epsilon"?)`},
		}},
		{"bad_misplaced.yaml", []want{
			{3, "streams[0].contribution", "required field is missing"},
			{8, "streams[0]", `unknown field "max_events_per_window" (it belongs under "contribution")`},
		}},
		{"bad_bounds.yaml", []want{
			{11, "streams[0].releases[0].bounds", "reversed: lo 120 > hi 0; write [0, 120]"},
			{12, "streams[0].releases[1].bounds", "lo and hi are equal (5)"},
			{13, "streams[0].releases[2].bounds", "must be finite, got +Inf"},
			{14, "streams[0].releases[3].bounds", "got 1 items"},
			{15, "streams[0].releases[4].bounds", "too wide"},
			{16, "streams[0].releases[5].bounds", `item 2 is string "ten"`},
		}},
		{"bad_epsilon.yaml", []want{
			{10, "streams[0].budget.epsilon", "must be > 0, got 0"},
			{13, "streams[0].releases[0].epsilon", "must be > 0, got -1"},
			{14, "streams[0].releases[1].epsilon", "must be > 0, got 0"},
			{15, "streams[0].releases[2].epsilon", "must be finite, got +Inf"},
			{16, "streams[0].releases[3].epsilon", "must be finite, got NaN"},
			{17, "streams[0].releases[4].epsilon", `must be a number, got string "0.5"`},
		}},
		{"bad_delta.yaml", []want{
			{9, "streams[0].budget.delta", "must be in (0, 1), got 1"},
			{11, "streams[0].releases[0].delta", "must be in (0, 1), got 0"},
			{12, "streams[0].releases[1].delta", "required with noise gaussian"},
			{13, "streams[0].releases[2].delta", "must be in (0, 1), got -1e-09"},
			{14, "streams[0].releases[3].delta", "must be 0 or absent with noise laplace"},
			{15, "streams[0].releases[4].delta", "must be 0 or absent with noise laplace"},
		}},
		{"bad_duration.yaml", []want{
			{8, "streams[0].window.size", `"1 hour" is not a duration (use e.g. 1h, 90s)`},
			{9, "streams[0].window.grace", "must be >= 0, got -1m0s"},
			{10, "streams[0].window.idle_timeout", "must be > 0, got 0s"},
			{12, "streams[0].budget.per", `"1d" is not a duration (there is no day unit: use e.g. 24h)`},
			{19, "streams[1].window.size", "must be a whole number of milliseconds, got 1.5ms"},
		}},
		{"bad_schedule.yaml", []want{
			{6, "streams[0].start", `"yesterday" is not an RFC 3339 timestamp (e.g. 2025-06-01T00:00:00Z)`},
			{7, "streams[0].window.max_skew", "must be at least 1ms, got 0s"},
			{15, "streams[1].start", "1969-12-31T23:00:00Z is not after 1970-01-01T00:00:00Z"},
			{16, "streams[1].window.max_skew", `"1 minute" is not a duration (use e.g. 1h, 90s)`},
			{17, "streams[1]", `unknown field "max_skew" (it belongs under "window")`},
		}},
		{"bad_per.yaml", []want{
			{9, "streams[0].budget.per", "1h30m0s is not a multiple of window.size 1h0m0s (line 7)"},
		}},
		{"bad_missing.yaml", []want{
			{3, "streams[0].topic", "required field is missing"},
			{3, "streams[0].format", "required field is missing"},
			{3, "streams[0].privacy_unit", "required field is missing"},
			{3, "streams[0].contribution", "required field is missing"},
			{4, "streams[0].window.size", "required field is missing"},
			{5, "streams[0].budget.epsilon", "required field is missing"},
			{5, "streams[0].budget.delta", "required field is missing"},
			{8, "streams[0].releases[0].epsilon", "required field is missing"},
			{8, "streams[0].releases[0].field", "required for kind histogram"},
			{8, "streams[0].releases[0].bounds", "required for kind histogram"},
			{8, "streams[0].releases[0].bins", "required for kind histogram"},
		}},
		{"bad_duplicates.yaml", []want{
			{12, "streams[0].releases[1].name", `duplicate release name "n" in stream (first at line 11)`},
			{13, "streams[1].name", `duplicate stream name "trips" (first at line 3)`},
			{14, "streams[1].topic", `topic "trips.events" is already the input of stream "trips" (line 4)`},
			{23, "streams[2].topic", `topic "dpstream.ledger" is the internal topics.ledger (a default)`},
		}},
		{"bad_topics.yaml", []want{
			{4, "topics.ledger", `"dpstream.out" is also topics.releases`},
			{5, "topics.pdp", `"bad topic" is not a valid Kafka topic name`},
			{8, "streams[0].topic", `topic "dpstream.out" is the internal topics.releases (line 3)`},
		}},
		{"bad_format.yaml", []want{
			{6, "streams[0].format", `"avor" is not one of avro, confluent-avro, json (did you mean "avro"?)`},
			{16, "streams[1].schema", "required with format avro"},
			{21, "streams[2].schema", "is only used with format avro or confluent-avro, not json"},
			{26, "streams[3].schema", `no_such_file.avsc" does not exist`},
			{31, "streams[4].schema_id", "is only used with format confluent-avro, not json"},
			{36, "streams[5].schema", `pipeline.yaml" is not valid JSON`},
			{37, "streams[5].schema_id", "must be a schema registry id in 0..2147483647 (0 accepts any), got -1"},
		}},
		{"bad_unit_field.yaml", []want{
			{13, "streams[0].releases[0].field", `"rider_id" is the stream's privacy unit (line 6)`},
		}},
		{"bad_kind_fields.yaml", []want{
			{11, "streams[0].releases[0].field", "is only used with kind density, histogram, mean, quantiles, randomized_response, sum or variance, not count (a count has no value field)"},
			{11, "streams[0].releases[0].bounds", "is only used with kind density, histogram, mean, quantiles, sum or variance, not count (a count has no values to bound)"},
			{11, "streams[0].releases[0].bins", "is only used with kind histogram, not count"},
			{12, "streams[0].releases[1].bins", "is only used with kind histogram, not sum"},
			{13, "streams[0].releases[2].kind", `"histgram" is not one of count, count_units, density, histogram, mean, prediction, quantiles, randomized_response, regression, select_keys, sum, variance (did you mean "histogram"?)`},
			{14, "streams[0].releases[3].bins", "must be in 1..10000, got 0"},
			{15, "streams[0].releases[4].bins", "must be in 1..10000, got 10001"},
			{16, "streams[0].releases[5].noise", `"gausian" is not one of laplace, gaussian (did you mean "gaussian"?)`},
			{17, "streams[0].releases[6].name", `"bad name" is not a valid name`},
		}},
		{"bad_density.yaml", []want{
			{11, "streams[0].releases[0].terms", "required for kind density: the number of cosine terms (1..1024), or auto with expected_events"},
			{12, "streams[0].releases[1].terms", "must be in 1..1024 or auto, got 0"},
			{13, "streams[0].releases[2].terms", "must be in 1..1024 or auto, got 1025"},
			{14, "streams[0].releases[3].terms", `must be an integer, got string "many"`},
			{15, "streams[0].releases[4].expected_events", "required with terms: auto: the expected number of kept events per window, declared in advance"},
			{16, "streams[0].releases[5].expected_events", "must be >= 1, got 0"},
			{16, "streams[0].releases[5].smoothness", "must be finite and > 0, got -1"},
			{17, "streams[0].releases[6].expected_events", "is only used with terms: auto"},
			{18, "streams[0].releases[7].smoothness", "is only used with terms: auto"},
			{19, "streams[0].releases[8].grid_points", "must be at least terms + 1 = 9, got 8"},
			{20, "streams[0].releases[9].grid_points", "must be in 2..65536, got 70000"},
			{21, "streams[0].releases[10].terms", "is only used with kind density, not histogram"},
			{22, "streams[0].releases[11].grid_points", "is only used with kind density, not count"},
			{23, "streams[0].releases[12].field", "required for kind density"},
		}},
		{"bad_histogram_nd.yaml", []want{
			{11, "streams[0].releases[0].fields", "cannot be given together with field (line 11): use field for one field, or fields for 1 to 3"},
			{12, "streams[0].releases[1].fields", "must list 1 to 3 fields, got 4: every field multiplies the number of cells"},
			{13, "streams[0].releases[2].fields[1]", `"lon" is also fields[0]; the fields must be distinct`},
			{14, "streams[0].releases[3].fields", "must list 1 to 3 fields, got 0"},
			{15, "streams[0].releases[4].bounds", "is one [lo, hi], but the histogram has 2 fields: give one [lo, hi] per field, in the order of fields, e.g. [[lo1, hi1], [lo2, hi2]]"},
			{16, "streams[0].releases[5].bounds", "has 1 [lo, hi] for 2 fields: give one [lo, hi] per field, in the order of fields"},
			{17, "streams[0].releases[6].bounds[1]", "reversed: lo 5 > hi 2; write [2, 5]"},
			{18, "streams[0].releases[7].bounds[1]", "must be [lo, hi], two numbers; got 7"},
			{19, "streams[0].releases[8].bins", "has 3 entries for 2 fields: give one per field, in the order of fields, or one integer for every field"},
			{20, "streams[0].releases[9].bins[1]", "must be in 1..10000, got 0"},
			{21, "streams[0].releases[10].bins[1]", `must be an integer, got string "x"`},
			{22, "streams[0].releases[11].bins", "200 bins on each of 2 fields make 40000 cells, more than 10000; use fewer bins"},
			{23, "streams[0].releases[12].bins", "[30, 400, 2] make 24000 cells (the product of the bins of the fields), more than 10000; use fewer bins"},
			{24, "streams[0].releases[13].expected_events", "required with bins: auto: the expected number of kept events per window, declared in advance (the window's own count would make the bins, and so the shape of the release, depend on the data)"},
			{25, "streams[0].releases[14].expected_events", "is only used with bins: auto (it sizes the bins)"},
			{26, "streams[0].releases[15].expected_events", "must be >= 1, got 0"},
			{27, "streams[0].releases[16].bins", `must be an integer (the bins of every field), a list of integers (one per field) or auto, got string "many"`},
			{28, "streams[0].releases[17].fields[1]", `"rider_id" is the stream's privacy unit (line 6)`},
			{29, "streams[0].releases[18].field", "required for kind sum"},
			{29, "streams[0].releases[18].fields", "is only used with kind histogram, not sum (use field for its one field)"},
			{30, "streams[0].releases[19].bounds", "required for kind histogram: [lo, hi], the range values are clamped to (one [lo, hi] per field: [[lo1, hi1], [lo2, hi2]])"},
			{31, "streams[0].releases[20].bins", "must not be an empty list: give one integer per field, one integer for every field, or auto"},
			{32, "streams[0].releases[21].expected_events", "is only used with kind density or histogram, not mean"},
			{33, "streams[0].releases[22].fields[1]", "must name the event field to bin"},
			{34, "streams[0].releases[23].fields", `must be a list, got string "lon"`},
		}},
		{"bad_randomized_response.yaml", []want{
			{11, "streams[0].releases[0].categories", "required for kind randomized_response: the values its field can take, e.g. [walk, bike, bus, car] (2 to 1000)"},
			{11, "streams[0].releases[0].epsilon_local", "required for kind randomized_response (or p instead): the local ε the producers randomized the field with; give exactly one of epsilon_local and p"},
			{12, "streams[0].releases[1].epsilon_local", "cannot be given together with p (line 12): both describe the producers' randomization; give exactly one"},
			{13, "streams[0].releases[2].categories", "must list 2 to 1000 categories, got 1"},
			{14, "streams[0].releases[3].categories[2]", `"walk" is also categories[0] (line 14); categories must be distinct`},
			{15, "streams[0].releases[4].categories[1]", "must not be blank: a category is a value of the field"},
			{15, "streams[0].releases[4].categories[2]", "must be a string, got null"},
			{16, "streams[0].releases[5].p", "must be in (0, 1), the probability that a producer reports a uniform category instead of the true one, got 1"},
			{17, "streams[0].releases[6].p", "must be in (0, 1), the probability that a producer reports a uniform category instead of the true one, got 0"},
			{18, "streams[0].releases[7].epsilon_local", "must be > 0, got 0"},
			{19, "streams[0].releases[8].epsilon_local", "must be finite, got +Inf"},
			{20, "streams[0].releases[9].epsilon_local", "800 is too large for 2 categories: no randomization probability reaches it (e^ε overflows above about 709); use a smaller epsilon_local"},
			{21, "streams[0].releases[10].bounds", "is only used with kind density, histogram, mean, quantiles, sum or variance, not randomized_response (its field is categorical: list its values in categories)"},
			{21, "streams[0].releases[10].bins", "is only used with kind histogram, not randomized_response (its categories are its bins)"},
			{22, "streams[0].releases[11].field", "required for kind randomized_response: the string field that producers randomized"},
			{23, "streams[0].releases[12].field", `"rider_id" is the stream's privacy unit (line 6)`},
			{24, "streams[0].releases[13].categories", `must be a list, got string "walk"`},
			{25, "streams[0].releases[14].categories", "is only used with kind randomized_response, not sum"},
			{25, "streams[0].releases[14].p", "is only used with kind randomized_response, not sum"},
			{25, "streams[0].releases[14].epsilon_local", "is only used with kind randomized_response, not sum"},
			{26, "streams[0].releases[15].kind", `"randomised_response" is not one of count, count_units, density, histogram, mean, prediction, quantiles, randomized_response, regression, select_keys, sum, variance (did you mean "randomized_response"?)`},
			{27, "streams[0].releases[16].p", `must be a number, got string "high"`},
		}},
		{"bad_regression.yaml", []want{
			{11, "streams[0].releases[0].method", "required for kind regression: one of ssp, adassp, ops, adaops, pcls"},
			{12, "streams[0].releases[1].method", `"ols" is not one of ssp, adassp, ops, adaops, pcls`},
			{13, "streams[0].releases[2].noise", "must not be given for kind regression: its method fixes the noise (Gaussian noise on the sufficient statistics for ssp, adassp and pcls, a Gaussian posterior sample for ops and adaops), and every method is (ε, δ)-DP"},
			{14, "streams[0].releases[3].delta", "required for kind regression: a value in (0, 1); every method is (ε, δ)-DP"},
			{15, "streams[0].releases[4].field", "is only used with kind density, histogram, mean, quantiles, randomized_response, sum or variance, not regression (name the field to predict in target and the fields to fit on in features, each with its bounds)"},
			{15, "streams[0].releases[4].bounds", "is only used with kind density, histogram, mean, quantiles, sum or variance, not regression (each feature and the target have their own: {field: name, bounds: [lo, hi]})"},
			{16, "streams[0].releases[5].features", "must list 1 to 64 features, got 0"},
			{17, "streams[0].releases[6].features[1].field", `"hp" is also features[0].field (line 17); the features must be distinct`},
			{18, "streams[0].releases[7].features[0].bounds", "reversed: lo 250 > hi 0; write [0, 250]"},
			{18, "streams[0].releases[7].target.field", `"hp" is also features[0].field (line 18); the target cannot be a feature, or the fit would predict it from itself`},
			{19, "streams[0].releases[8].features[0].field", `"owner_id" is the stream's privacy unit (line 6); a release cannot aggregate the identifier it protects`},
			{20, "streams[0].releases[9].lambda", "is only used with method ssp or ops, not adassp (it chooses λ from a private lower bound on λ_min(XᵀX))"},
			{21, "streams[0].releases[10].lambda", "must be > 0 with method ops"},
			{21, "streams[0].releases[10].rho", "is only used with method adassp, adaops or pcls, not ops (its λ is given, not chosen from a private bound)"},
			{22, "streams[0].releases[11].rho", "must be in (0, 1), the probability that the private lower bound on λ_min(XᵀX) fails, got 0"},
			{22, "streams[0].releases[11].radius", "is only used with method pcls, not adaops"},
			{23, "streams[0].releases[12].radius", "required for method pcls: r > 0"},
			{23, "streams[0].releases[12].max_support", "must be in 1..2 (the number of features), got 3"},
			{24, "streams[0].releases[13].supports[2]", "is the same model as supports[1] (line 24); each candidate must be listed once"},
			{24, "streams[0].releases[13].supports[3][0]", `"weight" is not one of the features (hp, wt)`},
			{25, "streams[0].releases[14].selection", `"noisymin" is not one of exponential, noisy_min (did you mean "noisy_min"?)`},
			{25, "streams[0].releases[14].radius", "must be finite and > 0, got -2"},
			{25, "streams[0].releases[14].selection_share", "must be in (0, 1), the share of epsilon spent on selecting the model (the rest releases its coefficients), got 0"},
			{26, "streams[0].releases[15].intercept", "must be true or false, got 1"},
			{27, "streams[0].releases[16].method", "is only used with kind regression, not sum"},
			{27, "streams[0].releases[16].features", "is only used with kind prediction or regression, not sum"},
			{28, "streams[0].releases[17].kind", `"regresion" is not one of count, count_units, density, histogram, mean, prediction, quantiles, randomized_response, regression, select_keys, sum, variance (did you mean "regression"?)`},
		}},
		{"bad_per_bin_samples.yaml", []want{
			{12, "streams[0].releases[0].max_per_bin", "5 is more than contribution.max_events_per_window 4 (line 9): a unit has at most 4 kept events in a window, so the cap must be in 1..4 (or left out for none)"},
			{13, "streams[0].releases[1].max_per_bin", "must be >= 1 (leave it out for no per-bin cap), got 0"},
			{14, "streams[0].releases[2].max_per_bin", "is only used with kind histogram or randomized_response, not count"},
			{14, "streams[0].releases[2].samples", "is only used with kind density or histogram, not count"},
			{15, "streams[0].releases[3].samples", "must be in 0..100000 (0 or absent: none), got 100001"},
			{16, "streams[0].releases[4].max_per_bin", "is only used with kind histogram or randomized_response, not density"},
			{16, "streams[0].releases[4].samples", "must be in 0..100000 (0 or absent: none), got -1"},
			{17, "streams[0].releases[5].max_per_bin", "9 is more than contribution.max_events_per_window 4 (line 9)"},
			{17, "streams[0].releases[5].samples", "is only used with kind density or histogram, not randomized_response"},
			{18, "streams[0].releases[6].max_per_bin", "must be an integer, got 1.5"},
			{18, "streams[0].releases[6].samples", `must be an integer, got string "lots"`},
		}},
		{"bad_types.yaml", []want{
			{2, "brokers", `must be a list, got string "localhost:9092"`},
			{3, "group", "must be a string, got a list"},
			{7, "streams[0].partitions", `must be an integer, got string "many"`},
			{10, "streams[0].window", `must be a mapping (key: value), got string "1h"`},
			{11, "streams[0].contribution.max_events_per_window", "must be an integer, got 2.5"},
		}},
		{"bad_syntax.yaml", []want{
			{4, "", "invalid YAML: mapping values are not allowed"},
		}},
		{"bad_duplicate_key.yaml", []want{
			{12, "streams[0].budget.epsilon", "repeated key (first at line 10)"},
		}},
		{"bad_connection.yaml", []want{
			{2, "brokers[1]", `"kafka-2" is not host:port`},
			{2, "brokers[2]", `":9092" has no host`},
			{2, "streams", "required field is missing"},
			{3, "embedded.addr", `"localhost" is not host:port`},
			{3, "embedded.data_dir", "must not be empty"},
			{3, "embedded.sync", `must be true or false, got string "maybe"`},
			{4, "metrics.addr", `"9464" is not host:port`},
			{5, "group", "must not be empty"},
			{6, "", `unknown field "stream" (did you mean "streams"?)`},
		}},
		{"bad_empty.yaml", []want{
			{0, "", "the file is empty"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(testdataDir, tt.file)
			cfg, err := config.Load(path)
			if cfg != nil {
				t.Errorf("Load returned a Config along with errors")
			}
			checkErrors(t, err, path, tt.wants)
		})
	}
}

// TestAllBadFilesTested makes sure no bad_*.yaml is left without a table
// entry (it would then never be checked).
func TestAllBadFilesTested(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdataDir, "bad_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("glob: %v, %d files", err, len(files))
	}
	src, err := os.ReadFile("config_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.Contains(string(src), `{"`+filepath.Base(f)+`", []want{`) {
			t.Errorf("%s has no entry in TestBadConfigs", filepath.Base(f))
		}
	}
}

func TestExampleParses(t *testing.T) {
	cfg, err := config.Parse([]byte(config.Example()), "pipeline.yaml")
	if err != nil {
		t.Fatalf("Example does not parse: %v", err)
	}
	s, ok := cfg.Stream("trips")
	if !ok {
		t.Fatal("Example has no stream named trips")
	}
	if s.Format != config.FormatJSON {
		t.Errorf("trips format = %q, want json", s.Format)
	}
	var gotKinds []string
	for _, r := range s.Releases {
		gotKinds = append(gotKinds, r.Kind)
	}
	for _, k := range []string{"count", "sum", "mean", "histogram", "density"} {
		if !slices.Contains(gotKinds, k) {
			t.Errorf("Example has no %s release (kinds %v)", k, gotKinds)
		}
	}
}

// TestExampleMatchesTestdata keeps the sample file that the README points to
// identical to Example().
func TestExampleMatchesTestdata(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testdataDir, "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != config.Example() {
		t.Errorf("testdata/config/pipeline.yaml differs from Example(); copy Example() into it")
	}
}

// TestExampleExplainsEveryField checks that every key the parser knows
// appears in the sample, either set or in a comment, so that new fields do
// not go undocumented.
func TestExampleExplainsEveryField(t *testing.T) {
	ex := config.Example()
	all := [][]string{config.RootKeys, config.EmbeddedKeys, config.TopicsKeys, config.MetricsKeys, config.StreamKeys, config.WindowKeys, config.ContributionKeys, config.BudgetKeys, config.ReleaseKeys()}
	for _, keys := range all {
		for _, k := range keys {
			if documentedOutsideExample[k] {
				continue
			}
			mentioned := exampleMentions(ex, k)
			switch {
			case notYetInExample[k] && mentioned:
				// The list must shrink as the sample catches up, or it
				// would hide the next key that goes undocumented.
				t.Errorf("Example now explains %q; remove it from notYetInExample", k)
			case !notYetInExample[k] && !mentioned:
				t.Errorf("Example does not mention field %q", k)
			}
		}
	}
	// Every line of the sample that sets a value should be near a comment:
	// count the comment lines as a coarse check that it is commented.
	var comments int
	for _, line := range strings.Split(ex, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			comments++
		}
	}
	if comments < 60 {
		t.Errorf("Example has only %d comment lines", comments)
	}
}

// exampleMentions reports whether the sample explains key: written as
// "key:" or listed as "#   key  description" in the release legend.
func exampleMentions(ex, key string) bool {
	re := regexp.MustCompile(`(?m)(^|[\s{#-])` + regexp.QuoteMeta(key) + `(:|\s{2,})`)
	return re.MatchString(ex)
}

// notYetInExample are release keys added after the sample was written. The
// sample (Example and testdata/config/pipeline.yaml) is being extended in
// a separate change, which will explain them there; until then each must
// be documented in README.md's configuration reference, which
// TestNotYetInExampleDocumented checks. TestExampleExplainsEveryField
// fails once the sample mentions one of them, so the list cannot go stale.
var notYetInExample = map[string]bool{
	"fields": true, "max_per_bin": true, "samples": true,
	"categories": true, "p": true, "epsilon_local": true,
	"method": true, "features": true, "target": true, "intercept": true,
	"lambda": true, "rho": true, "selection": true, "radius": true,
	"penalty": true, "max_support": true, "supports": true, "selection_share": true,
	"continual": true,
	"label":     true, "shards": true, "key": true, "max_queries": true, "evaluate": true,
}

// documentedOutsideExample are keys the sample deliberately leaves out:
// the security section (TLS, SASL) only applies with brokers, and the
// sample runs the embedded broker, with which security is an error. They
// are documented in README.md's security section instead.
var documentedOutsideExample = map[string]bool{"security": true}

// TestNotYetInExampleDocumented checks that every key the sample does not
// explain yet is a real release key with a row in README.md's release
// table, so that no key is undocumented meanwhile.
func TestNotYetInExampleDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for k := range notYetInExample {
		if !slices.Contains(config.ReleaseKeys(), k) {
			t.Errorf("notYetInExample lists %q, which is not a release key", k)
		}
		if !strings.Contains(string(readme), "| `"+k+"` |") {
			t.Errorf("README.md has no configuration reference row for %q", k)
		}
	}
}

// minimal is the smallest valid config; tests add lines to it.
const minimal = `streams:
  - name: trips
    topic: trips.events
    format: json
    privacy_unit: rider_id
    window: {size: 1h}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 8, delta: 1e-7}
    releases:
      - {name: n, kind: count, epsilon: 0.5}
`

func TestDefaults(t *testing.T) {
	cfg, err := config.Parse([]byte(minimal), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The expected values are the defaults written in the package brief.
	checks := []struct {
		name      string
		got, want any
	}{
		{"Path", cfg.Path, "p.yaml"},
		{"Brokers", len(cfg.Brokers), 0},
		{"Embedded.Addr", cfg.Embedded.Addr, "127.0.0.1:9092"},
		{"Embedded.DataDir", cfg.Embedded.DataDir, ".dpstream/kafka"},
		{"Embedded.NoSync", cfg.Embedded.NoSync, false},
		{"Topics", cfg.Topics, config.Topics{
			Partials: "dpstream.partials", Releases: "dpstream.releases", Ledger: "dpstream.ledger",
			Accountant: "dpstream.accountant", PDP: "dpstream.pdp", DeadLetter: "dpstream.deadletter",
			Requests: "dpstream.predict.requests", Responses: "dpstream.predict.responses",
		}},
		// Loopback: exact counters must not reach the network by default.
		{"Metrics.Addr", cfg.Metrics.Addr, "127.0.0.1:9464"},
		{"Metrics.Enabled", cfg.Metrics.Enabled(), true},
		{"Group", cfg.Group, "dpstream"},
		{"SessionTimeout", cfg.SessionTimeout, 10 * time.Second},
		{"Streams", len(cfg.Streams), 1},
		{"Partitions", cfg.Streams[0].Partitions, 4},
		{"Grace", cfg.Streams[0].Window.Grace, time.Duration(0)},
		{"IdleTimeout", cfg.Streams[0].Window.IdleTimeout, 30 * time.Second},
		{"MaxSkew", cfg.Streams[0].Window.MaxSkew, time.Minute},
		{"Start", cfg.Streams[0].Start.IsZero(), true},
		{"MaxEventBytes", cfg.Streams[0].MaxEventBytes, 1 << 20},
		{"Budget.Per", cfg.Streams[0].Budget.Per, time.Duration(0)},
		{"Noise", cfg.Streams[0].Releases[0].Noise, "laplace"},
		{"Delta", cfg.Streams[0].Releases[0].Delta, 0.0},
		{"UsesRecordTimestamp", cfg.Streams[0].UsesRecordTimestamp(), true},
		{"Stream.Line", cfg.Streams[0].Line, 2},
		{"Budget.Line", cfg.Streams[0].Budget.Line, 8},
		{"Release.Line", cfg.Streams[0].Releases[0].Line, 10},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestValuesRead(t *testing.T) {
	src := `brokers: [kafka-1:9092, "[::1]:9093"]
embedded: {addr: "127.0.0.1:0", data_dir: /var/lib/dpstream, sync: false}
topics: {partials: p, releases: r, ledger: l, accountant: a, pdp: x, deadletter: d, requests: q, responses: s}
metrics: {addr: "127.0.0.1:9000"}
group: team-a
streams:
  - name: trips.v2
    topic: trips-v2
    partitions: 12
    format: json
    privacy_unit: event
    event_time: record_timestamp
    start: 2025-06-01T02:07:30.5+02:00
    window: {size: 15m, grace: 1m30s, idle_timeout: 1m, max_skew: 5s}
    contribution: {max_events_per_window: 1}
    budget: {epsilon: 2.5, delta: 1e-9, per: 24h}
    releases:
      - {name: h, kind: histogram, field: fare, bounds: [-10, 30.5], bins: 7, noise: gaussian, epsilon: 0.25, delta: 1e-10}
`
	cfg, err := config.Parse([]byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Streams[0]
	r := s.Releases[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"Path", cfg.Path, ""},
		{"Brokers", strings.Join(cfg.Brokers, ","), "kafka-1:9092,[::1]:9093"},
		{"Embedded", cfg.Embedded, config.Embedded{Addr: "127.0.0.1:0", DataDir: "/var/lib/dpstream", NoSync: true}},
		{"Topics", cfg.Topics, config.Topics{Partials: "p", Releases: "r", Ledger: "l", Accountant: "a", PDP: "x", DeadLetter: "d", Requests: "q", Responses: "s"}},
		{"Metrics", cfg.Metrics.Addr, "127.0.0.1:9000"},
		{"Group", cfg.Group, "team-a"},
		{"Name", s.Name, "trips.v2"},
		{"Topic", s.Topic, "trips-v2"},
		{"Partitions", s.Partitions, 12},
		{"PrivacyUnit", s.PrivacyUnit, config.PrivacyUnitEvent},
		{"UsesRecordTimestamp", s.UsesRecordTimestamp(), true},
		{"Window", s.Window, config.Window{Size: 15 * time.Minute, Grace: 90 * time.Second, IdleTimeout: time.Minute, MaxSkew: 5 * time.Second}},
		// Kept as written, in UTC; the ledger aligns it to a window (00:00).
		{"Start", s.Start, time.Date(2025, 6, 1, 0, 7, 30, 500e6, time.UTC)},
		{"Contribution", s.Contribution.MaxEventsPerWindow, 1},
		{"Budget.Epsilon", s.Budget.Epsilon, 2.5},
		{"Budget.Delta", s.Budget.Delta, 1e-9},
		{"Budget.Per", s.Budget.Per, 24 * time.Hour},
		{"Release.Kind", r.Kind, "histogram"},
		{"Release.Field", r.Params.(*histogram.Config).Field, "fare"},
		{"Release.Bounds", r.Params.(*histogram.Config).Bounds, [2]float64{-10, 30.5}},
		{"Release.Bins", r.Params.(*histogram.Config).Bins, 7},
		{"Release.Noise", r.Noise, "gaussian"},
		{"Release.Epsilon", r.Epsilon, 0.25},
		{"Release.Delta", r.Delta, 1e-10},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestMetricsAddr(t *testing.T) {
	tests := []struct {
		line    string
		addr    string
		enabled bool
		pdp     bool
	}{
		{"", "127.0.0.1:9464", true, false},
		{"metrics: {addr: \":9464\"}\n", ":9464", true, false}, // every interface, only when asked
		{"metrics: {addr: off}\n", "", false, false},
		{"metrics: {addr: \"\"}\n", "", false, false},
		{"metrics: {addr: \"localhost:9100\"}\n", "localhost:9100", true, false},
		{"metrics:\n  addr:\n", "127.0.0.1:9464", true, false}, // null counts as absent
		{"metrics: {pdp: true}\n", "127.0.0.1:9464", true, true},
		{"metrics: {addr: \"0.0.0.0:9464\", pdp: false}\n", "0.0.0.0:9464", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.line+minimal), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Metrics.Addr != tt.addr || cfg.Metrics.Enabled() != tt.enabled || cfg.Metrics.PDP != tt.pdp {
				t.Errorf("Addr %q Enabled %v PDP %v, want %q %v %v", cfg.Metrics.Addr, cfg.Metrics.Enabled(), cfg.Metrics.PDP, tt.addr, tt.enabled, tt.pdp)
			}
		})
	}
	_, err := config.Parse([]byte("metrics: {pdp: yes}\n"+minimal), "p.yaml")
	checkErrors(t, err, "p.yaml", []want{{1, "metrics.pdp", `must be true or false, got string "yes"`}})
}

// TestSchemaResolved loads a config from another directory and checks that
// the schema path is resolved against the config's directory, not the
// working directory.
func TestSchemaResolved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(filepath.Join(dir, "schemas"), 0o755); err != nil {
		t.Fatal(err)
	}
	avsc := `{"type": "record", "name": "Trip", "fields": [{"name": "rider_id", "type": "string"}]}`
	if err := os.WriteFile(filepath.Join(dir, "schemas", "trip.avsc"), []byte(avsc), 0o644); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "schemas", "trip.avsc")
	tests := []struct {
		name, format, schema, extra string
		wantID                      int
	}{
		{"avro relative", "avro", "schemas/trip.avsc", "", 0},
		{"confluent with id", "confluent-avro", "./schemas/../schemas/trip.avsc", "    schema_id: 7\n", 7},
		{"absolute", "avro", abs, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(minimal, "format: json\n",
				"format: "+tt.format+"\n    schema: "+tt.schema+"\n"+tt.extra, 1)
			cfgPath := filepath.Join(dir, "pipeline.yaml")
			if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Streams[0]
			if s.Schema != abs {
				t.Errorf("Schema = %q, want %q", s.Schema, abs)
			}
			if s.SchemaID != tt.wantID {
				t.Errorf("SchemaID = %d, want %d", s.SchemaID, tt.wantID)
			}
		})
	}
}

// TestSchemaInline: a stream's schema may be the Avro schema itself, as a
// mapping in JSON or block YAML, instead of a path; the config then
// carries everything it needs (demo --print-config relies on it).
func TestSchemaInline(t *testing.T) {
	const wantJSON = `{"fields":[{"name":"rider_id","type":"string"},{"name":"ts","type":{"logicalType":"timestamp-millis","type":"long"}}],"name":"Trip","type":"record"}`
	tests := []struct {
		name, schema string
	}{
		{"json", `
      {
        "type": "record", "name": "Trip",
        "fields": [
          {"name": "rider_id", "type": "string"},
          {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}
        ]
      }`},
		{"block yaml", `
      type: record
      name: Trip
      fields:
        - {name: rider_id, type: string}
        - name: ts
          type: {type: long, logicalType: timestamp-millis}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(minimal, "format: json\n", "format: avro\n    schema:"+tt.schema+"\n", 1)
			// No file is read: the directory does not even exist.
			cfg, err := config.Parse([]byte(src), filepath.Join(t.TempDir(), "nowhere", "p.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Streams[0]
			if s.Schema != "" || s.SchemaJSON != wantJSON {
				t.Errorf("Schema %q, SchemaJSON %s; want no path and %s", s.Schema, s.SchemaJSON, wantJSON)
			}
			if text, err := s.AvroSchema(); err != nil || text != wantJSON {
				t.Errorf("AvroSchema() = %s, %v; want the inline schema", text, err)
			}
		})
	}

	// AvroSchema reads a schema file at use, and is empty for json.
	dir := t.TempDir()
	avsc := `{"type": "record", "name": "T", "fields": []}`
	if err := os.WriteFile(filepath.Join(dir, "t.avsc"), []byte(avsc), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(strings.Replace(minimal, "format: json\n", "format: avro\n    schema: t.avsc\n", 1)), filepath.Join(dir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if text, err := cfg.Streams[0].AvroSchema(); err != nil || text != avsc {
		t.Errorf("AvroSchema() of a file = %q, %v; want its contents", text, err)
	}
	cfg, err = config.Parse([]byte(minimal), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if text, err := cfg.Streams[0].AvroSchema(); err != nil || text != "" {
		t.Errorf("AvroSchema() of a json stream = %q, %v; want \"\"", text, err)
	}

	// An inline schema on a json stream is an error like a path is.
	_, err = config.Parse([]byte(strings.Replace(minimal, "format: json\n", "format: json\n    schema: {type: record, name: T, fields: []}\n", 1)), "p.yaml")
	checkErrors(t, err, "p.yaml", []want{{5, "streams[0].schema", "is only used with format avro or confluent-avro, not json"}})
}

func TestSchemaNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "trip.avsc"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(minimal, "format: json\n", "format: avro\n    schema: trip.avsc\n", 1)
	_, err := config.Parse([]byte(src), filepath.Join(dir, "p.yaml"))
	checkErrors(t, err, filepath.Join(dir, "p.yaml"), []want{{5, "streams[0].schema", "is not a regular file"}})
}

func TestInlineErrors(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		wants []want
	}{
		{"empty input", "", []want{{0, "", "the file is empty"}}},
		{"null document", "~\n", []want{{0, "", "the file is empty"}}},
		{"root is a list", "- a\n- b\n", []want{{1, "", "must be a mapping (key: value), got a list"}}},
		{"two documents", minimal + "---\n" + minimal, []want{{11, "", "more than one YAML document"}}},
		{"no streams", "streams: []\n", []want{{1, "streams", "must declare at least one stream"}}},
		{"stream not a mapping", "streams: [trips]\n", []want{{1, "streams[0]", `must be a mapping (key: value), got string "trips"`}}},
		{"no releases", strings.Replace(minimal, "    releases:\n      - {name: n, kind: count, epsilon: 0.5}\n", "    releases: []\n", 1),
			[]want{{9, "streams[0].releases", "must declare at least one release"}}},
		{"zero partitions", strings.Replace(minimal, "format: json", "format: json\n    partitions: 0", 1),
			[]want{{5, "streams[0].partitions", "must be >= 1, got 0"}}},
		{"zero contribution", strings.Replace(minimal, "max_events_per_window: 4", "max_events_per_window: 0", 1),
			[]want{{7, "streams[0].contribution.max_events_per_window", "must be >= 1, got 0"}}},
		{"negative per", strings.Replace(minimal, "delta: 1e-7}", "delta: 1e-7, per: -1h}", 1),
			[]want{{8, "streams[0].budget.per", "must be >= 0"}}},
		{"query budget above the budget", strings.Replace(minimal, "delta: 1e-7}", "delta: 1e-7, queries: 100}", 1),
			[]want{{8, "streams[0].budget.queries", "more than the budget's epsilon"}}},
		{"zero query budget", strings.Replace(minimal, "delta: 1e-7}", "delta: 1e-7, queries: 0}", 1),
			[]want{{8, "streams[0].budget.queries", "must be a finite ε > 0"}}},
		{"empty privacy unit", strings.Replace(minimal, "privacy_unit: rider_id", `privacy_unit: ""`, 1),
			[]want{{5, "streams[0].privacy_unit", "must name the field"}}},
		{"bad stream name", strings.Replace(minimal, "name: trips", "name: a/b", 1),
			[]want{{2, "streams[0].name", `"a/b" is not a valid name`}}},
		{"complex key", "? [a, b]\n: c\n" + minimal, []want{{1, "", "keys must be plain names, got a list"}}},
		{"merge of a scalar", strings.Replace(minimal, "window: {size: 1h}", "window: {<<: 5, size: 1h}", 1),
			[]want{{6, "streams[0].window", `"<<" merges mappings only, got 5`}}},
		{"internal topic equal to another's default", "topics: {partials: dpstream.ledger}\n" + minimal,
			[]want{{1, "topics.partials", `"dpstream.ledger" is also topics.ledger`}}},
		{"unknown key without suggestion", "zzzz: 1\n" + minimal, []want{{1, "", `unknown field "zzzz"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.src), "p.yaml")
			checkErrors(t, err, "p.yaml", tt.wants)
			if tt.name == "unknown key without suggestion" && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("suggested a key for an unrelated name: %v", err)
			}
		})
	}
}

// TestAnchorsAndMerges checks that YAML anchors and merge keys work as YAML
// users expect: explicit keys override merged ones, and a self-referencing
// merge terminates.
func TestAnchorsAndMerges(t *testing.T) {
	src := `streams:
  - &base
    name: a
    topic: a.events
    format: json
    privacy_unit: rider_id
    window: &w {size: 1h, grace: 1m}
    contribution: {max_events_per_window: 4}
    budget: {epsilon: 8, delta: 1e-7}
    releases:
      - {name: n, kind: count, epsilon: 0.5}
  - <<: *base
    name: b
    topic: b.events
    window: {<<: *w, size: 2h}
`
	cfg, err := config.Parse([]byte(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, ok := cfg.Stream("b")
	if !ok {
		t.Fatal("stream b missing")
	}
	if b.Topic != "b.events" || b.PrivacyUnit != "rider_id" || b.Window.Size != 2*time.Hour || b.Window.Grace != time.Minute {
		t.Errorf("merged stream b = %+v", *b)
	}
	if b.Line != 12 {
		t.Errorf("b.Line = %d, want 12", b.Line)
	}
	// A mapping that merges itself must not loop; its own keys still apply.
	cyc := strings.Replace(minimal, "window: {size: 1h}", "window: &c {size: 1h, <<: *c}", 1)
	cfg, err = config.Parse([]byte(cyc), "p.yaml")
	if err != nil {
		t.Fatalf("self-merge: %v", err)
	}
	if got := cfg.Streams[0].Window.Size; got != time.Hour {
		t.Errorf("self-merge: window size %v, want 1h", got)
	}
	// A stream whose releases list contains the stream itself must end in
	// errors, not recursion.
	rec := "streams:\n  - &x {releases: [*x]}\n"
	_, err = config.Parse([]byte(rec), "p.yaml")
	checkErrors(t, err, "p.yaml", []want{
		{2, "streams[0].name", "required"}, {2, "streams[0].topic", "required"},
		{2, "streams[0].format", "required"}, {2, "streams[0].privacy_unit", "required"},
		{2, "streams[0].window", "required"}, {2, "streams[0].contribution", "required"},
		{2, "streams[0].budget", "required"},
		{2, "streams[0].releases[0]", `unknown field "releases"`},
		{2, "streams[0].releases[0].name", "required"}, {2, "streams[0].releases[0].kind", "required"},
		{2, "streams[0].releases[0].epsilon", "required"},
	})
}

func TestEventLevelUnit(t *testing.T) {
	// With privacy_unit: event there is no identifier field, so a value
	// field that happens to be called "event" is allowed.
	src := strings.Replace(minimal, "privacy_unit: rider_id", "privacy_unit: event", 1)
	src = strings.Replace(src, "{name: n, kind: count, epsilon: 0.5}", "{name: n, kind: sum, field: event, bounds: [0, 1], epsilon: 0.5}", 1)
	cfg, err := config.Parse([]byte(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Streams[0].Releases[0].Params.(*sum.Config).Field; got != "event" {
		t.Errorf("Field = %q, want event", got)
	}
}

func TestUsesRecordTimestamp(t *testing.T) {
	tests := []struct {
		eventTime string
		want      bool
	}{
		{"", true},
		{"record_timestamp", true},
		{"ts", false},
	}
	for _, tt := range tests {
		s := config.Stream{EventTime: tt.eventTime}
		if got := s.UsesRecordTimestamp(); got != tt.want {
			t.Errorf("UsesRecordTimestamp(%q) = %v, want %v", tt.eventTime, got, tt.want)
		}
	}
}

func TestStreamLookup(t *testing.T) {
	cfg, err := config.Parse([]byte(minimal), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, ok := cfg.Stream("trips")
	if !ok || s != &cfg.Streams[0] {
		t.Errorf("Stream(trips) = %p, %v; want pointer to Streams[0]", s, ok)
	}
	if s, ok := cfg.Stream("nope"); ok || s != nil {
		t.Errorf("Stream(nope) = %v, %v; want nil, false", s, ok)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.yaml")
	_, err := config.Load(path)
	var e *config.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
	if e.Path != path || e.Line != 0 || !strings.Contains(e.Msg, "cannot read config") {
		t.Errorf("error = %+v", e)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(err, fs.ErrNotExist) = false for %v", err)
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		e    config.Error
		want string
	}{
		{config.Error{Path: "pipeline.yaml", Line: 14, Field: "streams[0].releases[1].epsilon", Msg: "must be > 0, got -1"},
			"pipeline.yaml:14: streams[0].releases[1].epsilon: must be > 0, got -1"},
		{config.Error{Path: "pipeline.yaml", Msg: "the file is empty"}, "pipeline.yaml: the file is empty"},
		{config.Error{Line: 3, Field: "group", Msg: "bad"}, "line 3: group: bad"},
		{config.Error{Field: "group", Msg: "bad"}, "group: bad"},
		{config.Error{Path: "p.yaml", Line: 2, Msg: "invalid YAML"}, "p.yaml:2: invalid YAML"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorsHelper(t *testing.T) {
	a, b := &config.Error{Msg: "a"}, &config.Error{Msg: "b"}
	tests := []struct {
		name string
		err  error
		want []*config.Error
	}{
		{"nil", nil, nil},
		{"single", a, []*config.Error{a}},
		{"joined", errors.Join(a, b), []*config.Error{a, b}},
		{"nested", errors.Join(errors.Join(a), b), []*config.Error{a, b}},
		{"other", errors.New("x"), nil},
	}
	for _, tt := range tests {
		if got := config.Errors(tt.err); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Errors = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"epsilon", "delta", "per", "name"}
	tests := []struct {
		got, want string
		ok        bool
	}{
		{"epsilom", "epsilon", true},
		{"Epsilon", "epsilon", true},
		{"epslion", "epsilon", true}, // transposition: 2 edits
		{"delat", "delta", true},
		{"nme", "name", true},
		{"pr", "per", true},
		{"x", "", false},
		{"budget", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := config.Suggest(tt.got, known)
		if got != tt.want || ok != tt.ok {
			t.Errorf("config.Suggest(%q) = %q, %v; want %q, %v", tt.got, got, ok, tt.want, tt.ok)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{"epsilom", "epsilon", 1},
		{"flaw", "lawn", 2},
		{"héllo", "hello", 1}, // runes, not bytes
	}
	for _, tt := range tests {
		if got := config.EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("config.EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestMaxEventBytes checks max_event_bytes' range: at least one byte, at
// most 15 MiB, below the accumulate stage's 16 MiB fetch size.
func TestMaxEventBytes(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
		err   string
	}{
		{value: "1", want: 1},
		{value: "4194304", want: 4 << 20},
		{value: "15728640", want: 15 << 20},
		{value: "0", err: "streams[0].max_event_bytes: must be in 1..15728640 (15 MiB), got 0"},
		{value: "15728641", err: "streams[0].max_event_bytes: must be in 1..15728640 (15 MiB), got 15728641"},
		{value: "1MB", err: "streams[0].max_event_bytes"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			src := strings.Replace(minimal, "format: json\n", "format: json\n    max_event_bytes: "+tc.value+"\n", 1)
			cfg, err := config.Parse([]byte(src), "p.yaml")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Streams[0].MaxEventBytes; got != tc.want {
				t.Errorf("MaxEventBytes = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSessionTimeout(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		err   string
	}{
		{value: "1s", want: time.Second},
		{value: "45s", want: 45 * time.Second},
		{value: "30m", want: 30 * time.Minute},
		{value: "999ms", err: "p.yaml:1: session_timeout: 999ms is outside 1s..30m0s"},
		{value: "31m", err: "p.yaml:1: session_timeout: 31m0s is outside 1s..30m0s"},
		{value: "10", err: "p.yaml:1: session_timeout: \"10\" is not a duration"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			cfg, err := config.Parse([]byte("session_timeout: "+tc.value+"\n"+minimal), "p.yaml")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.SessionTimeout != tc.want {
				t.Errorf("SessionTimeout = %v, want %v", cfg.SessionTimeout, tc.want)
			}
		})
	}
}
