package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// metricDef is one metric that internal/metrics defines.
type metricDef struct {
	kind   string // Counter, Gauge, Histogram or Summary
	labels []string
}

// metricDefRE matches a metric definition in internal/metrics/metrics.go,
// e.g. prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x", ...},
// []string{"stream"}). The Help text holds no braces, so [^}]* spans it.
var metricDefRE = regexp.MustCompile(`prometheus\.New(Counter|Gauge|Histogram|Summary)(?:Vec)?\(prometheus\.\w+Opts\{Name:\s*"([^"]+)"[^}]*\}(?:,\s*\[\]string\{([^}]*)\})?`)

// definedMetrics reads the metric names, kinds and labels from the source of
// internal/metrics/metrics.go. Reading the source (rather than gathering a
// registry) sees every metric, including label vectors with no series yet.
func definedMetrics(t *testing.T) map[string]metricDef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "internal", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	defs := map[string]metricDef{}
	for _, m := range metricDefRE.FindAllStringSubmatch(src, -1) {
		var labels []string
		for _, l := range strings.Split(m[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), `"`); l != "" {
				labels = append(labels, l)
			}
		}
		defs[m[2]] = metricDef{kind: m[1], labels: labels}
	}
	// A definition written in another form would be missed silently;
	// every dpstream_ name in the file must have been matched.
	if n := strings.Count(src, `Name: "dpstream_`); n != len(defs) || n == 0 {
		t.Fatalf("metrics.go names %d dpstream_ metrics but %d definitions were recognised; update metricDefRE", n, len(defs))
	}
	return defs
}

// resolve maps a series name used in PromQL to the metric that defines it:
// the name itself, or a histogram's (summary's) _bucket, _sum and _count
// series.
func resolve(defs map[string]metricDef, name string) (string, bool) {
	if _, ok := defs[name]; ok {
		return name, true
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suf)
		if !ok {
			continue
		}
		d, ok := defs[base]
		if ok && (d.kind == "Histogram" || (d.kind == "Summary" && suf != "_bucket")) {
			return base, true
		}
	}
	return "", false
}

// metricRef is one metric selector in a PromQL expression: the series name
// and its label matchers (the text between the braces, "" without).
type metricRef struct {
	name     string
	matchers string
}

// promqlFuncs are the PromQL functions and aggregation operators the
// dashboard may call. A name outside the list is reported, so a misspelt
// function is not mistaken for a metric name.
var promqlFuncs = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`sum min max avg count group stddev stdvar topk bottomk quantile count_values
		rate irate increase delta idelta deriv predict_linear resets changes histogram_quantile
		abs ceil floor round sqrt exp ln log2 log10 clamp clamp_min clamp_max scalar vector time timestamp
		sort sort_desc label_replace label_join absent absent_over_time
		avg_over_time min_over_time max_over_time sum_over_time count_over_time last_over_time quantile_over_time`) {
		promqlFuncs[f] = true
	}
}

// aggregations are the aggregation operators, which may take their grouping
// clause before their argument: sum by (stream) (x).
var aggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "count": true, "group": true,
	"stddev": true, "stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true}

// hasWordAt reports whether the identifier w starts at s[j].
func hasWordAt(s string, j int, w string) bool {
	if !strings.HasPrefix(s[j:], w) {
		return false
	}
	k := j + len(w)
	return k == len(s) || !(s[k] == '_' || s[k] == ':' || (s[k]|0x20 >= 'a' && s[k]|0x20 <= 'z') || (s[k] >= '0' && s[k] <= '9'))
}

// promqlKeywords are identifiers that are neither functions nor metrics.
var promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true}

// groupingKeywords take a parenthesised list of label names.
var groupingKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// promqlMetrics returns the metric selectors of a PromQL expression, which
// may hold Grafana variables ($stream, $__rate_interval). It is a lexer, not
// a full parser: identifiers followed by "(" are functions, identifiers after
// by/without/on/ignoring/group_left/group_right are labels, and what is
// inside braces, brackets and strings is skipped. That is enough to find
// every metric name, and it refuses what it cannot classify (unknown
// functions, selectors without a metric name) rather than guess.
func promqlMetrics(expr string) ([]metricRef, error) {
	var out []metricRef
	i, n := 0, len(expr)
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	isIdent := func(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
	skipSpace := func(j int) int {
		for j < n && (expr[j] == ' ' || expr[j] == '\t' || expr[j] == '\n') {
			j++
		}
		return j
	}
	// closing returns the index after the delimiter that closes the one at
	// j, skipping quoted strings.
	closing := func(j int, open, close byte) (int, error) {
		depth := 0
		for k := j; k < n; k++ {
			switch c := expr[k]; c {
			case '"', '\'', '`':
				end := strings.IndexByte(expr[k+1:], c)
				if end < 0 {
					return 0, fmt.Errorf("unterminated string at %d", k)
				}
				k += end + 1
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					return k + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unclosed %q at %d", open, j)
	}
	for i < n {
		c := expr[i]
		switch {
		case c == '{':
			return nil, fmt.Errorf("selector without a metric name at %d", i)
		case c == '[':
			end, err := closing(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '"' || c == '\'' || c == '`':
			end := strings.IndexByte(expr[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			i += end + 2
		case c == '$': // a Grafana variable outside brackets
			i++
			for i < n && isIdent(expr[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.': // number or duration
			for i < n && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < n && isIdent(expr[i]) {
				i++
			}
			id := expr[start:i]
			j := skipSpace(i)
			switch {
			case groupingKeywords[id]:
				if j < n && expr[j] == '(' {
					end, err := closing(j, '(', ')')
					if err != nil {
						return nil, err
					}
					i = end
				}
			case aggregations[id] && (hasWordAt(expr, j, "by") || hasWordAt(expr, j, "without")):
				// sum by (stream) (...): the grouping comes before the
				// parenthesis; the next iteration skips it.
			case j < n && expr[j] == '(':
				if !promqlFuncs[id] {
					return nil, fmt.Errorf("unknown function %s", id)
				}
			case promqlKeywords[id]:
			default:
				ref := metricRef{name: id}
				if j < n && expr[j] == '{' {
					end, err := closing(j, '{', '}')
					if err != nil {
						return nil, err
					}
					ref.matchers = expr[j+1 : end-1]
					i = end
				}
				out = append(out, ref)
			}
		default:
			i++
		}
	}
	return out, nil
}

func TestPromqlMetrics(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		want    []metricRef
		wantErr bool
	}{
		{expr: `sum by (stream) (rate(dpstream_a_total{stream=~"$stream"}[$__rate_interval]))`,
			want: []metricRef{{"dpstream_a_total", `stream=~"$stream"`}}},
		{expr: `histogram_quantile(0.99, sum by (stream, le) (rate(x_bucket{stream=~"$stream"}[5m])))`,
			want: []metricRef{{"x_bucket", `stream=~"$stream"`}}},
		{expr: `60 * sum(rate(a[1m])) without (instance) / on (stream) group_left (release) b offset 5m`,
			want: []metricRef{{"a", ""}, {"b", ""}}},
		{expr: `sum(increase(a{status="budget_exhausted", s=~"{x}"}[$__range])) > bool 0 and c`,
			want: []metricRef{{"a", `status="budget_exhausted", s=~"{x}"`}, {"c", ""}}},
		{expr: `max by(topic,partition)(lag{topic=~"$topic"})`,
			want: []metricRef{{"lag", `topic=~"$topic"`}}},
		{expr: `rat(a[5m])`, wantErr: true},
		{expr: `sum({__name__=~"dpstream_.+"})`, wantErr: true},
		{expr: `rate(a{stream="x"[5m])`, wantErr: true},
		{expr: `a{stream="x}`, wantErr: true},
	} {
		got, err := promqlMetrics(tc.expr)
		if (err != nil) != tc.wantErr {
			t.Errorf("promqlMetrics(%q): error %v, want error %v", tc.expr, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !slices.Equal(got, tc.want) {
			t.Errorf("promqlMetrics(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

func TestDefinedMetrics(t *testing.T) {
	defs := definedMetrics(t)
	// A few definitions checked by hand against metrics.go, so the regular
	// expression is known to read kinds and labels correctly.
	for name, want := range map[string]metricDef{
		"dpstream_events_consumed_total":   {"Counter", []string{"stream"}},
		"dpstream_consumer_lag":            {"Gauge", []string{"topic", "partition"}},
		"dpstream_release_latency_seconds": {"Histogram", []string{"stream"}},
		"dpstream_pdp_epsilon":             {"Gauge", []string{"stream", "release", "quantile"}},
	} {
		got, ok := defs[name]
		if !ok || got.kind != want.kind || !slices.Equal(got.labels, want.labels) {
			t.Errorf("%s: got %v (found %v), want %v", name, got, ok, want)
		}
	}
	for _, tc := range []struct {
		name, base string
		ok         bool
	}{
		{"dpstream_release_latency_seconds_bucket", "dpstream_release_latency_seconds", true},
		{"dpstream_release_latency_seconds_count", "dpstream_release_latency_seconds", true},
		{"dpstream_events_consumed_total", "dpstream_events_consumed_total", true},
		{"dpstream_events_consumed_total_bucket", "", false}, // a counter has no buckets
		{"dpstream_events_consumed", "", false},
	} {
		base, ok := resolve(defs, tc.name)
		if base != tc.base || ok != tc.ok {
			t.Errorf("resolve(%s) = %q, %v; want %q, %v", tc.name, base, ok, tc.base, tc.ok)
		}
	}
}
