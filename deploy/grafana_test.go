package deploy

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// grafanaDatasources is a Grafana datasource provisioning file.
type grafanaDatasources struct {
	APIVersion  int `yaml:"apiVersion"`
	Datasources []struct {
		Name     string `yaml:"name"`
		UID      string `yaml:"uid"`
		Type     string `yaml:"type"`
		URL      string `yaml:"url"`
		JSONData struct {
			TimeInterval string `yaml:"timeInterval"`
		} `yaml:"jsonData"`
	} `yaml:"datasources"`
}

// grafanaProviders is a Grafana dashboard provider provisioning file.
type grafanaProviders struct {
	APIVersion int `yaml:"apiVersion"`
	Providers  []struct {
		Name    string `yaml:"name"`
		Type    string `yaml:"type"`
		Options struct {
			Path string `yaml:"path"`
		} `yaml:"options"`
	} `yaml:"providers"`
}

// dashboard is the part of a Grafana dashboard JSON that the tests check.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string     `json:"name"`
			Type       string     `json:"type"`
			Datasource datasource `json:"datasource"`
			Query      struct {
				Query string `json:"query"`
			} `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Collapsed  bool       `json:"collapsed"`
	Datasource datasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource datasource `json:"datasource"`
	} `json:"targets"`
	// Panels holds the panels of a collapsed row.
	Panels []panel `json:"panels"`
}

// placed is a panel with the row it sits under ("" above the first row).
type placed struct {
	panel
	row          string
	rowCollapsed bool
}

// allPanels flattens the dashboard: a row's panels follow it, either nested
// in the row (collapsed) or as the top-level panels after it (expanded).
func allPanels(d dashboard) []placed {
	var out []placed
	row, collapsed := "", false
	for _, p := range d.Panels {
		if p.Type == "row" {
			row, collapsed = p.Title, p.Collapsed
			out = append(out, placed{panel: p})
			for _, c := range p.Panels {
				out = append(out, placed{panel: c, row: row, rowCollapsed: collapsed})
			}
			continue
		}
		out = append(out, placed{panel: p, row: row, rowCollapsed: collapsed})
	}
	return out
}

const dashboardPath = "deploy/grafana/dashboards/dpstream.json"

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, dashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// grafanaMounts returns the repository paths compose mounts at Grafana's
// provisioning directory, and the container path of the dashboards
// directory.
func grafanaMounts(t *testing.T) (provisioning, dashboardsAt string) {
	t.Helper()
	g := loadCompose(t).Services["grafana"]
	ms, err := g.mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if filepath.Clean(m.host) == filepath.Dir(dashboardPath) {
			dashboardsAt = m.container
		}
		// Grafana's default provisioning directory.
		if m.container == "/etc/grafana/provisioning" {
			provisioning = filepath.Join(root, m.host)
		}
	}
	if provisioning == "" || dashboardsAt == "" {
		t.Fatalf("grafana mounts %q: want the provisioning directory at /etc/grafana/provisioning and %s", g.Volumes, filepath.Dir(dashboardPath))
	}
	return provisioning, dashboardsAt
}

// TestGrafanaProvisioning: the datasource points at the compose Prometheus
// and matches its scrape interval; the dashboard provider loads the directory
// where compose mounts the dashboard.
func TestGrafanaProvisioning(t *testing.T) {
	prov, dashboardsAt := grafanaMounts(t)
	var ds grafanaDatasources
	readYAML(t, filepath.Join(prov, "datasources", "prometheus.yml"), &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 {
		t.Fatalf("datasources: apiVersion %d, %d datasources; want 1 and 1", ds.APIVersion, len(ds.Datasources))
	}
	src := ds.Datasources[0]
	if src.Type != "prometheus" || src.UID == "" {
		t.Errorf("datasource type %q uid %q: want prometheus with a uid", src.Type, src.UID)
	}
	u, err := url.Parse(src.URL)
	if err != nil {
		t.Fatalf("datasource url: %v", err)
	}
	c := loadCompose(t)
	ps, ok := c.Services[u.Hostname()]
	if !ok || !strings.HasPrefix(ps.Image, "prom/prometheus:") {
		t.Errorf("datasource url %s: %s is not the compose Prometheus service", src.URL, u.Hostname())
	}
	port, _ := strconv.Atoi(u.Port())
	if cp, err := ps.containerPorts(); err != nil || !slices.Contains(cp, port) {
		t.Errorf("datasource url %s: Prometheus publishes container ports %v (%v)", src.URL, cp, err)
	}
	var prom struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
	}
	promFile, err := ps.hostPathOf("/etc/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	readYAML(t, promFile, &prom)
	if src.JSONData.TimeInterval != prom.Global.ScrapeInterval {
		t.Errorf("datasource timeInterval %q, Prometheus scrape_interval %q: $__rate_interval needs them equal", src.JSONData.TimeInterval, prom.Global.ScrapeInterval)
	}

	var pv grafanaProviders
	readYAML(t, filepath.Join(prov, "dashboards", "dpstream.yml"), &pv)
	if pv.APIVersion != 1 || len(pv.Providers) != 1 {
		t.Fatalf("dashboard providers: apiVersion %d, %d providers; want 1 and 1", pv.APIVersion, len(pv.Providers))
	}
	if p := pv.Providers[0]; p.Type != "file" || p.Options.Path != dashboardsAt {
		t.Errorf("dashboard provider type %q path %q; want file and %s, where compose mounts the dashboards", p.Type, p.Options.Path, dashboardsAt)
	}

	// Every panel and target uses the provisioned datasource.
	d := loadDashboard(t)
	for _, p := range allPanels(d) {
		if p.Type == "row" {
			continue
		}
		if p.Datasource != (datasource{Type: src.Type, UID: src.UID}) {
			t.Errorf("panel %q: datasource %v, want uid %s", p.Title, p.Datasource, src.UID)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != (datasource{Type: src.Type, UID: src.UID}) {
				t.Errorf("panel %q target %s: datasource %v, want uid %s", p.Title, tg.RefID, tg.Datasource, src.UID)
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && v.Datasource != (datasource{Type: src.Type, UID: src.UID}) {
			t.Errorf("variable %s: datasource %v, want uid %s", v.Name, v.Datasource, src.UID)
		}
	}
}

// TestDashboardLayout: panel ids are unique, panels fit Grafana's 24-column
// grid, and every panel queries something.
func TestDashboardLayout(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a uid and a title")
	}
	ids := map[int]string{}
	for _, p := range allPanels(d) {
		if prev, dup := ids[p.ID]; dup || p.ID <= 0 {
			t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s: empty expr", p.Title, tg.RefID)
			}
		}
	}
}

// labelValuesRE matches a Grafana variable query label_values(metric, label).
var labelValuesRE = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// TestDashboardMetrics: every query names metrics that internal/metrics
// defines, every defined metric is on the dashboard, the panels are per
// stream (or per input topic for the lag, which has no stream label), and the
// per-instance DP gauges appear only in RESTRICTED panels of a collapsed
// RESTRICTED row.
func TestDashboardMetrics(t *testing.T) {
	defs := definedMetrics(t)
	d := loadDashboard(t)
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		m := labelValuesRE.FindStringSubmatch(v.Query.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, v.Query.Query)
			continue
		}
		def, ok := defs[m[1]]
		if !ok || !slices.Contains(def.labels, m[2]) {
			t.Errorf("variable %s: %s has no label %s in internal/metrics", v.Name, m[1], m[2])
		}
	}
	varRE := regexp.MustCompile(`\$(\w+)`)
	shown := map[string]bool{}
	for _, p := range allPanels(d) {
		for _, tg := range p.Targets {
			for _, v := range varRE.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.HasPrefix(v[1], "__") && !vars[v[1]] {
					t.Errorf("panel %q: $%s is not a dashboard variable", p.Title, v[1])
				}
			}
			refs, err := promqlMetrics(tg.Expr)
			if err != nil {
				t.Errorf("panel %q target %s: %v", p.Title, tg.RefID, err)
				continue
			}
			if len(refs) == 0 {
				t.Errorf("panel %q target %s queries no metric", p.Title, tg.RefID)
			}
			for _, r := range refs {
				base, ok := resolve(defs, r.name)
				if !ok {
					t.Errorf("panel %q: %s is not defined in internal/metrics/metrics.go", p.Title, r.name)
					continue
				}
				shown[base] = true
				labels := defs[base].labels
				switch {
				case slices.Contains(labels, "stream") && !strings.Contains(r.matchers, `stream=~"$stream"`):
					t.Errorf("panel %q: %s is not filtered by the stream variable", p.Title, r.name)
				case !slices.Contains(labels, "stream") && slices.Contains(labels, "topic") && !strings.Contains(r.matchers, `topic=~"$topic"`):
					t.Errorf("panel %q: %s is not filtered by the topic variable", p.Title, r.name)
				}
				if strings.HasPrefix(base, "dpstream_pdp_") &&
					(!strings.Contains(p.Title, "RESTRICTED") || !strings.Contains(p.row, "RESTRICTED") || !p.rowCollapsed) {
					t.Errorf("panel %q (row %q, collapsed %v) shows the restricted %s: it must be titled RESTRICTED, in a collapsed RESTRICTED row",
						p.Title, p.row, p.rowCollapsed, base)
				}
			}
		}
	}
	for name := range defs {
		if !shown[name] {
			t.Errorf("%s (internal/metrics) is on no dashboard panel", name)
		}
	}
}
