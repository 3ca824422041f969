package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
)

// k8sObject is the part of a Kubernetes object common to every kind; Spec is
// decoded per kind.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec yaml.Node         `yaml:"spec"`
	Data map[string]string `yaml:"data"`
	file string
}

type deploymentSpec struct {
	Replicas *int `yaml:"replicas"`
	Strategy struct {
		Type string `yaml:"type"`
	} `yaml:"strategy"`
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec podSpec `yaml:"spec"`
	} `yaml:"template"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot   *bool  `yaml:"runAsNonRoot"`
		RunAsUser      *int64 `yaml:"runAsUser"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
		RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
		RunAsUser                *int64 `yaml:"runAsUser"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		// Port is a number or the name of a container port.
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type serviceSpec struct {
	Selector map[string]string `yaml:"selector"`
	Ports    []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	} `yaml:"ports"`
}

type serviceMonitorSpec struct {
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Endpoints []struct {
		Port string `yaml:"port"`
		Path string `yaml:"path"`
	} `yaml:"endpoints"`
}

const k8sDir = "deploy/k8s"

// loadManifests decodes every YAML document in deploy/k8s and its
// subdirectories.
func loadManifests(t *testing.T) []k8sObject {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(root, k8sDir), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []k8sObject
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" || o.APIVersion == "" || o.Metadata.Name == "" {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name", f)
			}
			o.file, _ = filepath.Rel(root, f)
			out = append(out, o)
		}
	}
	if len(files) == 0 || len(out) == 0 {
		t.Fatalf("no manifests in %s", k8sDir)
	}
	return out
}

func decodeSpec[T any](t *testing.T, o k8sObject) T {
	t.Helper()
	var s T
	if err := o.Spec.Decode(&s); err != nil {
		t.Fatalf("%s %s/%s: spec: %v", o.file, o.Kind, o.Metadata.Name, err)
	}
	return s
}

// show formats an optional field of a manifest.
func show[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// subset reports whether every label of sel is in labels with the same value.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// stageDeployment is one dpstream Deployment with the stage its args select.
type stageDeployment struct {
	obj   k8sObject
	spec  deploymentSpec
	stage string
}

// k8sSetup is the decoded manifests the tests share.
type k8sSetup struct {
	objs        []k8sObject
	configMap   k8sObject
	pipeline    *config.Config
	deployments map[string]stageDeployment // by --stages value
}

func loadK8s(t *testing.T) k8sSetup {
	t.Helper()
	s := k8sSetup{objs: loadManifests(t), deployments: map[string]stageDeployment{}}
	var cms []k8sObject
	for _, o := range s.objs {
		switch o.Kind {
		case "ConfigMap":
			cms = append(cms, o)
		case "Deployment":
			spec := decodeSpec[deploymentSpec](t, o)
			if len(spec.Template.Spec.Containers) != 1 {
				t.Fatalf("%s: %d containers, want 1", o.Metadata.Name, len(spec.Template.Spec.Containers))
			}
			stage, ok := flagValue(spec.Template.Spec.Containers[0].Args, "stages")
			if !ok {
				t.Fatalf("%s: no --stages: it would run both stages, and a scaled Deployment would run several release stages", o.Metadata.Name)
			}
			if _, dup := s.deployments[stage]; dup {
				t.Fatalf("two Deployments run --stages %s", stage)
			}
			s.deployments[stage] = stageDeployment{obj: o, spec: spec, stage: stage}
		}
	}
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps, want 1 with the pipeline", len(cms))
	}
	s.configMap = cms[0]
	if len(s.configMap.Data) != 1 {
		t.Fatalf("ConfigMap %s: %d keys, want only the pipeline", s.configMap.Metadata.Name, len(s.configMap.Data))
	}
	for key, text := range s.configMap.Data {
		c, err := config.Parse([]byte(text), s.configMap.file+":"+key)
		if err != nil {
			t.Fatalf("ConfigMap pipeline: %v", err)
		}
		if _, err := plan.Build(c); err != nil {
			t.Fatalf("ConfigMap pipeline: %v", err)
		}
		s.pipeline = c
	}
	if got := slices.Sorted(maps.Keys(s.deployments)); !slices.Equal(got, []string{"accumulate", "release"}) {
		t.Fatalf("Deployments run stages %q, want one accumulate and one release Deployment", got)
	}
	return s
}

// k8sMetricsPort returns the port the ConfigMap's pipeline serves metrics on.
func k8sMetricsPort(t *testing.T) int {
	t.Helper()
	c := loadK8s(t).pipeline
	if !c.Metrics.Enabled() || !reachableListen(c.Metrics.Addr) {
		t.Fatalf("ConfigMap pipeline metrics.addr %q: want an address probes and Prometheus can reach", c.Metrics.Addr)
	}
	p, err := portOf(c.Metrics.Addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestK8sNamespace(t *testing.T) {
	objs := loadManifests(t)
	ns := ""
	for _, o := range objs {
		if o.Kind == "Namespace" {
			ns = o.Metadata.Name
			// The pods below are written to pass the restricted profile;
			// enforcing it keeps them that way.
			if o.Metadata.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("Namespace %s does not enforce the restricted pod security standard", ns)
			}
		}
	}
	if ns == "" {
		t.Fatal("no Namespace")
	}
	for _, o := range objs {
		if o.Kind != "Namespace" && o.Metadata.Namespace != ns {
			t.Errorf("%s %s is in namespace %q, want %q", o.Kind, o.Metadata.Name, o.Metadata.Namespace, ns)
		}
	}
}

// TestK8sPipeline: the ConfigMap's pipeline names brokers. Without them each
// pod would start its own loopback-only embedded broker and write its data
// to the read-only root filesystem.
func TestK8sPipeline(t *testing.T) {
	s := loadK8s(t)
	if len(s.pipeline.Brokers) == 0 {
		t.Error("the ConfigMap pipeline names no brokers")
	}
}

func TestK8sStages(t *testing.T) {
	s := loadK8s(t)
	rel := s.deployments["release"]
	// Each partials partition's streams are owned by one release pod at a
	// time (fenced per ledger partition), so pods beyond the partitions
	// would stand idle; an update must not overlap two versions.
	relParts := s.pipeline.ReleasePartitions
	if relParts == 0 {
		relParts = config.DefaultReleasePartitions
	}
	if r := rel.spec.Replicas; r == nil || *r < 1 || *r > relParts {
		t.Errorf("release Deployment: replicas %s, want 1 to %d (release_partitions)", show(r), relParts)
	}
	if rel.spec.Strategy.Type != "Recreate" {
		t.Errorf("release Deployment: strategy %q, want Recreate so an update never runs release pods of two versions together", rel.spec.Strategy.Type)
	}
	acc := s.deployments["accumulate"]
	partitions := 0
	for _, st := range s.pipeline.Streams {
		partitions += st.Partitions
	}
	// Replicas beyond the input partitions would stand idle.
	if r := acc.spec.Replicas; r == nil || *r < 1 || *r > partitions {
		t.Errorf("accumulate Deployment: replicas %s, want 1 to %d (the input partitions)", show(r), partitions)
	}

	// The two Deployments must not select each other's pods, or their
	// ReplicaSets would fight over them.
	if subset(acc.spec.Selector.MatchLabels, rel.spec.Template.Metadata.Labels) || subset(rel.spec.Selector.MatchLabels, acc.spec.Template.Metadata.Labels) {
		t.Error("the accumulate and release selectors overlap")
	}
	for _, d := range s.deployments {
		if !subset(d.spec.Selector.MatchLabels, d.spec.Template.Metadata.Labels) {
			t.Errorf("%s: selector %v does not match its pod labels %v", d.obj.Metadata.Name, d.spec.Selector.MatchLabels, d.spec.Template.Metadata.Labels)
		}
	}
}

// TestK8sContainers: each container runs the compose-built image with the
// ConfigMap's pipeline at the path it passes to -c, serves metrics on the
// pipeline's port, is probed on endpoints the metrics server has, requests
// resources and runs as the image's non-root user with a read-only root.
func TestK8sContainers(t *testing.T) {
	s := loadK8s(t)
	port := k8sMetricsPort(t)
	uid := dockerUID(t, loadDockerfile(t))
	served := servedPaths(t)
	for stage, d := range s.deployments {
		pod := d.spec.Template.Spec
		c := pod.Containers[0]
		name := d.obj.Metadata.Name
		if c.Image != dpstreamImage {
			t.Errorf("%s: image %q, want %q (docker-compose.yml and deploy/Dockerfile)", name, c.Image, dpstreamImage)
		}
		if len(c.Command) > 0 {
			t.Errorf("%s: command %q replaces the image's dpstream entrypoint", name, c.Command)
		}
		if len(c.Args) == 0 || c.Args[0] != "run" {
			t.Errorf("%s: args %q, want run", name, c.Args)
		}
		if stage != "accumulate" && stage != "release" {
			t.Errorf("%s: --stages %s, want accumulate or release", name, stage)
		}

		// -c names the ConfigMap's key where it is mounted.
		cfgPath, ok := configFlag(c.Args)
		if !ok {
			t.Errorf("%s: args %q have no -c", name, c.Args)
		} else if err := mountsConfigMap(pod, c, s.configMap, cfgPath); err != nil {
			t.Errorf("%s: -c %s: %v", name, cfgPath, err)
		}

		metricsPortName := ""
		for _, p := range c.Ports {
			if p.ContainerPort == port {
				metricsPortName = p.Name
			}
		}
		if metricsPortName == "" {
			t.Errorf("%s: no containerPort %d (the pipeline's metrics port)", name, port)
		}
		for kind, want := range map[string]string{"liveness": "/healthz", "readiness": "/readyz"} {
			pr := c.LivenessProbe
			if kind == "readiness" {
				pr = c.ReadinessProbe
			}
			if pr == nil || pr.HTTPGet == nil {
				t.Errorf("%s: no HTTP %s probe", name, kind)
				continue
			}
			if pr.HTTPGet.Path != want {
				t.Errorf("%s: %s probe on %s, want %s", name, kind, pr.HTTPGet.Path, want)
			}
			if !served[pr.HTTPGet.Path] {
				t.Errorf("%s: %s probe path %s is not served by internal/metrics", name, kind, pr.HTTPGet.Path)
			}
			if pp := pr.HTTPGet.Port; pp != strconv.Itoa(port) && (pp != metricsPortName || pp == "") {
				t.Errorf("%s: %s probe on port %q, want %d or its name", name, kind, pp, port)
			}
		}
		for _, r := range []string{"cpu", "memory"} {
			if c.Resources.Requests[r] == "" {
				t.Errorf("%s: no %s request", name, r)
			}
		}

		sc, psc := c.SecurityContext, pod.SecurityContext
		nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
		if !nonRoot {
			t.Errorf("%s: runAsNonRoot is not set", name)
		}
		user := psc.RunAsUser
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
		if user == nil || *user == 0 || *user != int64(uid) {
			t.Errorf("%s: runAsUser %s, want the image's USER %d", name, show(user), uid)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: readOnlyRootFilesystem is not true", name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation is not false", name)
		}
		if !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: capabilities.drop %q, want ALL", name, sc.Capabilities.Drop)
		}
		if psc.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s: seccompProfile %q, want RuntimeDefault", name, psc.SeccompProfile.Type)
		}
		if pod.TerminationGracePeriodSeconds == nil {
			t.Errorf("%s: terminationGracePeriodSeconds is not set", name)
		}
	}
	// The release stage finishes a window it has started releasing (up to
	// 30 s, stages/release) before it exits: give it longer than that.
	if g := s.deployments["release"].spec.Template.Spec.TerminationGracePeriodSeconds; g != nil && *g <= 30 {
		t.Errorf("release: terminationGracePeriodSeconds %d, want more than 30", *g)
	}
}

// mountsConfigMap checks that path, in container c, is a key of ConfigMap cm
// mounted through a volume of pod.
func mountsConfigMap(pod podSpec, c container, cm k8sObject, p string) error {
	for _, vm := range c.VolumeMounts {
		key, ok := strings.CutPrefix(p, strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != vm.Name {
				continue
			}
			if v.ConfigMap == nil || v.ConfigMap.Name != cm.Metadata.Name {
				return fmt.Errorf("volume %s is not ConfigMap %s", v.Name, cm.Metadata.Name)
			}
			if _, ok := cm.Data[key]; !ok {
				return fmt.Errorf("ConfigMap %s has no key %s", cm.Metadata.Name, key)
			}
			return nil
		}
		return fmt.Errorf("volumeMount %s names no volume", vm.Name)
	}
	return fmt.Errorf("no volumeMount contains %s", p)
}

// handleRE matches a handler registration on a ServeMux, with or without a
// method in the pattern: mux.HandleFunc("GET /healthz", ...).
var handleRE = regexp.MustCompile(`\.Handle(?:Func)?\(\s*"(?:[A-Z]+ )?(/[^"]*)"`)

// servedPaths returns the HTTP paths that internal/metrics registers: the
// string literals starting with "/" passed to a mux's Handle or HandleFunc.
func servedPaths(t *testing.T) map[string]bool {
	t.Helper()
	dir := filepath.Join(root, "internal", "metrics")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range handleRE.FindAllSubmatch(b, -1) {
			out[path.Clean(string(m[1]))] = true
		}
	}
	if !out["/metrics"] {
		t.Fatalf("found no handler for /metrics in %s: servedPaths cannot read the source", dir)
	}
	return out
}

// TestK8sServices: every Deployment has a metrics Service that selects its
// pods (and only its pods) and targets its metrics port, and the optional
// ServiceMonitor scrapes those Services' metrics port.
func TestK8sServices(t *testing.T) {
	s := loadK8s(t)
	port := k8sMetricsPort(t)
	covered := map[string]bool{}
	var services []k8sObject
	for _, o := range s.objs {
		if o.Kind != "Service" {
			continue
		}
		services = append(services, o)
		spec := decodeSpec[serviceSpec](t, o)
		var matched []stageDeployment
		for _, d := range s.deployments {
			if subset(spec.Selector, d.spec.Template.Metadata.Labels) {
				matched = append(matched, d)
			}
		}
		if len(matched) != 1 {
			t.Errorf("Service %s selects the pods of %d Deployments, want 1", o.Metadata.Name, len(matched))
			continue
		}
		d := matched[0]
		covered[d.stage] = true
		for _, p := range spec.Ports {
			ok := false
			for _, cp := range d.spec.Template.Spec.Containers[0].Ports {
				if (p.TargetPort == cp.Name || p.TargetPort == strconv.Itoa(cp.ContainerPort)) && cp.ContainerPort == port {
					ok = true
				}
			}
			if !ok || p.Name != "metrics" {
				t.Errorf("Service %s port %s: targetPort %q is not %s's metrics port %d named metrics", o.Metadata.Name, p.Name, p.TargetPort, d.obj.Metadata.Name, port)
			}
		}
	}
	for stage := range s.deployments {
		if !covered[stage] {
			t.Errorf("the %s Deployment has no metrics Service", stage)
		}
	}
	for _, o := range s.objs {
		if o.Kind != "ServiceMonitor" {
			continue
		}
		spec := decodeSpec[serviceMonitorSpec](t, o)
		for _, svc := range services {
			if !subset(spec.Selector.MatchLabels, svc.Metadata.Labels) {
				t.Errorf("ServiceMonitor %s does not select Service %s", o.Metadata.Name, svc.Metadata.Name)
			}
		}
		for _, e := range spec.Endpoints {
			if e.Port != "metrics" || (e.Path != "" && e.Path != "/metrics") {
				t.Errorf("ServiceMonitor %s endpoint port %q path %q, want metrics and /metrics", o.Metadata.Name, e.Port, e.Path)
			}
		}
	}
}

// TestMetricsPortEverywhere: one metrics port across the image, compose,
// Prometheus and Kubernetes, so the same dashboard and probes work in both.
func TestMetricsPortEverywhere(t *testing.T) {
	want := k8sMetricsPort(t)
	c := loadCompose(t)
	for _, name := range dpstreamServices(c) {
		if p, err := portOf(metricsListen(t, c.Services[name])); err != nil || p != want {
			t.Errorf("compose %s serves metrics on port %d (%v), Kubernetes on %d", name, p, err, want)
		}
	}
	d := loadDockerfile(t)
	expose, _ := d.last(len(d.stages)-1, "EXPOSE")
	if expose != strconv.Itoa(want) {
		t.Errorf("Dockerfile EXPOSE %q, want %d", expose, want)
	}
}
