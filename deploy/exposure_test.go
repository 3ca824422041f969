package deploy

import (
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dpstream/dpstream/internal/config"
)

// These tests check that the deployment files keep dpstream's metrics
// confidential: most are exact counts of the input (internal/metrics
// Classes), so they leave loopback only where Prometheus must scrape them
// across a network, by an explicit bind that says why, and then only
// towards Prometheus.

// keyComment returns the comments attached to the key at path in the YAML
// document doc (above the key, or after it or its value on its line), and
// whether the key exists.
func keyComment(doc *yaml.Node, path ...string) (string, bool) {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	var key *yaml.Node
	for _, p := range path {
		if n.Kind != yaml.MappingNode {
			return "", false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				key, next = n.Content[i], n.Content[i+1]
			}
		}
		if next == nil {
			return "", false
		}
		n = next
	}
	return key.HeadComment + "\n" + key.LineComment + "\n" + n.LineComment, true
}

// parseNode parses one YAML document into a node tree, comments kept.
func parseNode(t *testing.T, what string, b []byte) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return &n
}

// checkExplicitBind checks that a config serving metrics beyond loopback
// says so in its metrics key, with a comment that names who needs it.
func checkExplicitBind(t *testing.T, what string, text []byte, cfg *config.Config, needs string) {
	t.Helper()
	if !reachableListen(cfg.Metrics.Addr) {
		return
	}
	comment, ok := keyComment(parseNode(t, what, text), "metrics")
	switch {
	case !ok:
		t.Errorf("%s: metrics served on %s without a metrics key: a bind beyond loopback must be explicit", what, cfg.Metrics.Addr)
	case !strings.Contains(comment, needs):
		t.Errorf("%s: metrics.addr %s: its comment must say why it leaves loopback (mention %s); got %q", what, cfg.Metrics.Addr, needs, strings.TrimSpace(comment))
	}
	if cfg.Metrics.PDP {
		t.Errorf("%s: metrics.pdp serves the restricted per-instance DP gauges across the network", what)
	}
}

// TestComposeHostPortsLoopback: every port compose publishes is bound to
// the host's loopback. A bare "9464:9464" (or "9464") publishes on every
// interface of the host: Kafka's raw events, and the exact counts in
// dpstream's, Prometheus' and Grafana's ports, would reach the network.
func TestComposeHostPortsLoopback(t *testing.T) {
	c := loadCompose(t)
	for name, s := range c.Services {
		for _, p := range s.Ports {
			parts := strings.Split(p, ":")
			if len(parts) != 3 {
				t.Errorf("%s publishes %q: want 127.0.0.1:HOST:CONTAINER (loopback only)", name, p)
				continue
			}
			ip, err := netip.ParseAddr(strings.Trim(parts[0], "[]"))
			if err != nil || !ip.IsLoopback() {
				t.Errorf("%s publishes %q on %s: want the host's loopback only", name, p, parts[0])
			}
		}
	}
}

// TestComposeMetricsBindExplicit: a dpstream container whose metrics
// Prometheus scrapes across the compose network binds them beyond loopback
// explicitly, with a comment saying why: the run pipeline in its metrics
// key, the demo on its command line.
func TestComposeMetricsBindExplicit(t *testing.T) {
	c := loadCompose(t)
	composeText, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := parseNode(t, "docker-compose.yml", composeText)
	for _, name := range dpstreamServices(c) {
		s := c.Services[name]
		if !reachableListen(metricsListen(t, s)) {
			continue
		}
		if _, ok := flagValue(s.Command, "metrics-addr"); ok {
			comment, _ := keyComment(doc, "services", name, "command")
			if !strings.Contains(comment, "Prometheus") {
				t.Errorf("%s: --metrics-addr leaves loopback without a comment on its command saying why (mention Prometheus)", name)
			}
			continue
		}
		p, _ := configFlag(s.Command)
		host, err := s.hostPathOf(p)
		if err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		checkExplicitBind(t, host, text, loadPipeline(t, host), "Prometheus")
	}
}

// networkPolicySpec is the part of a NetworkPolicy the tests check.
type networkPolicySpec struct {
	PodSelector labelSelector `yaml:"podSelector"`
	PolicyTypes []string      `yaml:"policyTypes"`
	Ingress     []struct {
		// From is nil when absent: every source.
		From []struct {
			PodSelector       *labelSelector `yaml:"podSelector"`
			NamespaceSelector *labelSelector `yaml:"namespaceSelector"`
			IPBlock           *yaml.Node     `yaml:"ipBlock"`
		} `yaml:"from"`
		Ports []struct {
			Protocol string `yaml:"protocol"`
			Port     string `yaml:"port"`
		} `yaml:"ports"`
	} `yaml:"ingress"`
}

type labelSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []yaml.Node       `yaml:"matchExpressions"`
}

// selects reports whether sel selects a pod with labels (the empty
// selector selects every pod).
func (sel labelSelector) selects(labels map[string]string) bool {
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// specific reports whether sel names at least one label and uses only
// matchLabels, which these tests can evaluate.
func (sel *labelSelector) specific() bool {
	return sel != nil && len(sel.MatchLabels) > 0 && len(sel.MatchExpressions) == 0
}

// TestK8sMetricsNetworkPolicy: the pods serve metrics on every interface
// (the probes and Prometheus use the pod IP), so a NetworkPolicy must
// select every dpstream pod and admit connections only from Prometheus
// pods, named by label, and only to the metrics port. NetworkPolicies add
// up: every policy that selects dpstream pods is checked, so none can open
// them wider.
func TestK8sMetricsNetworkPolicy(t *testing.T) {
	s := loadK8s(t)
	port := k8sMetricsPort(t)
	var policies []k8sObject
	for _, o := range s.objs {
		if o.Kind == "NetworkPolicy" {
			policies = append(policies, o)
		}
	}
	for stage, d := range s.deployments {
		labels := d.spec.Template.Metadata.Labels
		covered := false
		for _, o := range policies {
			spec := decodeSpec[networkPolicySpec](t, o)
			if len(spec.PodSelector.MatchExpressions) > 0 {
				t.Fatalf("NetworkPolicy %s: podSelector.matchExpressions: this test cannot evaluate them", o.Metadata.Name)
			}
			if o.Metadata.Namespace != d.obj.Metadata.Namespace || !spec.PodSelector.selects(labels) {
				continue
			}
			ingress := false
			for _, pt := range spec.PolicyTypes {
				ingress = ingress || pt == "Ingress"
			}
			if !ingress {
				t.Errorf("NetworkPolicy %s selects the %s pods but does not restrict Ingress", o.Metadata.Name, stage)
				continue
			}
			covered = true
			for i, r := range spec.Ingress {
				if len(r.From) == 0 {
					t.Errorf("NetworkPolicy %s ingress[%d] admits every source", o.Metadata.Name, i)
				}
				for j, p := range r.From {
					if p.IPBlock != nil || !p.PodSelector.specific() || (p.NamespaceSelector != nil && !p.NamespaceSelector.specific()) {
						t.Errorf("NetworkPolicy %s ingress[%d].from[%d]: want Prometheus pods named by podSelector.matchLabels (and namespaceSelector.matchLabels), not an ipBlock or an open selector", o.Metadata.Name, i, j)
					}
				}
				if len(r.Ports) == 0 {
					t.Errorf("NetworkPolicy %s ingress[%d] admits every port", o.Metadata.Name, i)
				}
				for _, p := range r.Ports {
					if (p.Port != "metrics" && p.Port != strconv.Itoa(port)) || (p.Protocol != "" && p.Protocol != "TCP") {
						t.Errorf("NetworkPolicy %s ingress[%d] admits port %s/%s, want only the metrics port (metrics or %d, TCP)", o.Metadata.Name, i, p.Port, p.Protocol, port)
					}
				}
			}
		}
		if !covered {
			t.Errorf("no NetworkPolicy restricts ingress to the %s pods, whose metrics listen on every interface", stage)
		}
	}
}

// TestK8sMetricsBindExplicit: the ConfigMap's pipeline binds metrics
// beyond loopback explicitly, with a comment that points at the
// NetworkPolicy.
func TestK8sMetricsBindExplicit(t *testing.T) {
	s := loadK8s(t)
	for key, text := range s.configMap.Data {
		checkExplicitBind(t, s.configMap.file+":"+key, []byte(text), s.pipeline, "NetworkPolicy")
	}
}
