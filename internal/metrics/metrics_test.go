package metrics

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// descNameRE reads the metric name out of a prometheus.Desc's String.
var descNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

// definedNames returns the name of every metric field of m, registered or
// not, read from the collectors themselves.
func definedNames(t *testing.T, m *Metrics) []string {
	t.Helper()
	var names []string
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Name == "Registry" {
			continue
		}
		c, ok := v.Field(i).Interface().(prometheus.Collector)
		if !ok {
			continue
		}
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			mm := descNameRE.FindStringSubmatch(d.String())
			if mm == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			names = append(names, mm[1])
		}
	}
	slices.Sort(names)
	return names
}

// servedNames returns the dpstream_ metrics m's registry exports, after a
// value was set in every vector (an untouched vector exports nothing).
func servedNames(t *testing.T, m *Metrics) []string {
	t.Helper()
	m.PDPEpsilon.WithLabelValues("s", "r", "p50").Set(1)
	m.PDPCumulative.WithLabelValues("s", "max").Set(2)
	m.Consumed.WithLabelValues("s").Inc()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "dpstream_") {
			names = append(names, mf.GetName())
		}
	}
	return names
}

// TestClasses: every metric is classified, and nothing else is.
func TestClasses(t *testing.T) {
	names := definedNames(t, New())
	if len(names) == 0 {
		t.Fatal("no metrics found")
	}
	for _, n := range names {
		if _, ok := Classes[n]; !ok {
			t.Errorf("metric %s has no Class: add it to Classes and to the README's metrics table", n)
		}
	}
	for n := range Classes {
		if !slices.Contains(names, n) {
			t.Errorf("Classes names %s, which New does not define", n)
		}
	}
}

// TestPDPGaugesOffByDefault: the restricted per-instance DP gauges are set
// but not served until EnablePDP, and every other metric is served
// without it.
func TestPDPGaugesOffByDefault(t *testing.T) {
	m := New()
	served := servedNames(t, m)
	for _, n := range served {
		if Classes[n] == Restricted {
			t.Errorf("%s (restricted) is served without EnablePDP", n)
		}
	}
	if !slices.Contains(served, "dpstream_events_consumed_total") {
		t.Errorf("served %v: the ordinary metrics are missing", served)
	}
	m.EnablePDP()
	m.EnablePDP() // a second call does nothing (no double registration)
	served = servedNames(t, m)
	for _, n := range []string{"dpstream_pdp_epsilon", "dpstream_pdp_cumulative_epsilon"} {
		if !slices.Contains(served, n) {
			t.Errorf("%s is not served after EnablePDP (served: %v)", n, served)
		}
	}
}

// readmeMetricRE matches a row of the README's metrics table:
// | `name` | type | labels | class | meaning |
var readmeMetricRE = regexp.MustCompile("(?m)^\\| `(dpstream_[a-z_]+)` \\|[^|]*\\|[^|]*\\| ([a-z]+) \\|")

// TestREADMEClasses: the README's metrics table lists every metric with
// its Class, so what operators read is what the code says.
func TestREADMEClasses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := readmeMetricRE.FindAllStringSubmatch(string(b), -1)
	seen := map[string]bool{}
	for _, r := range rows {
		name, class := r[1], Class(r[2])
		seen[name] = true
		if want, ok := Classes[name]; !ok {
			t.Errorf("README lists %s, which is not a metric", name)
		} else if class != want {
			t.Errorf("README says %s is %s, Classes says %s", name, class, want)
		}
	}
	for n := range Classes {
		if !seen[n] {
			t.Errorf("README's metrics table lacks %s (or its class column)", n)
		}
	}
}
