// Package deploy holds no Go code, only tests of the deployment files. CI has
// no Docker engine or Kubernetes cluster to run them, so the tests parse every
// file with a real parser (go.yaml.in/yaml/v3, encoding/json) and check that
// the files agree with each other and with the code: the files, images and
// ports they reference exist, the metrics port is the same everywhere, the
// dashboard queries only metrics that internal/metrics defines, and the
// release stage has exactly one owner.
package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
)

// root is the repository root, relative to this package's directory (where
// go test runs).
const root = ".."

// dpstreamImage is the image name that docker-compose.yml builds and the
// Kubernetes manifests run.
const dpstreamImage = "dpstream:dev"

// composeFile is the part of docker-compose.yml that the tests check.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Profiles    []string          `yaml:"profiles"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Tmpfs       []string          `yaml:"tmpfs"`
	Ports       []string          `yaml:"ports"`
	// DependsOn is a list of names or a map from name to a condition.
	DependsOn   yaml.Node `yaml:"depends_on"`
	ReadOnly    bool      `yaml:"read_only"`
	CapDrop     []string  `yaml:"cap_drop"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// dependsOn returns the names of the services s depends on.
func (s composeService) dependsOn() ([]string, error) {
	n := s.DependsOn
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.SequenceNode:
		var names []string
		for _, c := range n.Content {
			names = append(names, c.Value)
		}
		return names, nil
	case yaml.MappingNode:
		var names []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			names = append(names, n.Content[i].Value)
		}
		return names, nil
	}
	return nil, fmt.Errorf("depends_on at line %d: want a list or a map", n.Line)
}

// mount is one bind mount of a compose service, host:container[:mode].
type mount struct{ host, container string }

func (s composeService) mounts() ([]mount, error) {
	var out []mount
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
			return nil, fmt.Errorf("volume %q: want host:/container[:mode]", v)
		}
		out = append(out, mount{host: parts[0], container: parts[1]})
	}
	return out, nil
}

// hostPathOf returns the repository path mounted at the container path p,
// either a mounted file or a file inside a mounted directory.
func (s composeService) hostPathOf(p string) (string, error) {
	ms, err := s.mounts()
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if p == m.container {
			return filepath.Join(root, m.host), nil
		}
		if rel, ok := strings.CutPrefix(p, m.container+"/"); ok {
			return filepath.Join(root, m.host, rel), nil
		}
	}
	return "", fmt.Errorf("%s is not mounted", p)
}

// containerPorts returns the container side of the published ports, in the
// short syntax [[ip:]host:]container[/protocol].
func (s composeService) containerPorts() ([]int, error) {
	var out []int
	for _, p := range s.Ports {
		c, _, _ := strings.Cut(p[strings.LastIndex(p, ":")+1:], "/")
		n, err := strconv.Atoi(c)
		if err != nil {
			return nil, fmt.Errorf("port %q: %w", p, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var c composeFile
	readYAML(t, filepath.Join(root, "docker-compose.yml"), &c)
	return c
}

// readYAML decodes the single YAML document in path into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// flagValue returns the value of flag name (given as -name, --name, -name=v
// or --name=v) in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		for _, f := range []string{"-" + name, "--" + name} {
			if a == f && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, f+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

// configFlag returns the config path given to a dpstream command by -c or
// --config.
func configFlag(args []string) (string, bool) {
	if v, ok := flagValue(args, "c"); ok {
		return v, true
	}
	return flagValue(args, "config")
}

// loadPipeline loads a pipeline file and calibrates every release, as
// `dpstream run` does before it starts.
func loadPipeline(t *testing.T, path string) *config.Config {
	t.Helper()
	c, err := config.Load(path)
	if err != nil {
		t.Fatalf("pipeline %s: %v", path, err)
	}
	if _, err := plan.Build(c); err != nil {
		t.Fatalf("pipeline %s: %v", path, err)
	}
	return c
}

// portOf returns the port of a host:port listen address.
func portOf(addr string) (int, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return 0, fmt.Errorf("address %q: %w", addr, err)
	}
	return n, nil
}

// reachableListen reports whether a listen address accepts connections from
// other containers or pods: not loopback-only.
func reachableListen(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(h)
	return h == "" || (ip != nil && ip.IsUnspecified())
}

// metricsListen returns the address a dpstream container serves /metrics
// on: for `run`, --metrics-addr or the mounted config's metrics.addr; for
// `demo`, --metrics-addr or its default (loopback).
func metricsListen(t *testing.T, svc composeService) string {
	t.Helper()
	if len(svc.Command) == 0 {
		t.Fatal("dpstream service without a command")
	}
	if v, ok := flagValue(svc.Command, "metrics-addr"); ok {
		return v
	}
	switch svc.Command[0] {
	case "run":
		p, ok := configFlag(svc.Command)
		if !ok {
			t.Fatalf("command %q has no -c", svc.Command)
		}
		host, err := svc.hostPathOf(p)
		if err != nil {
			t.Fatalf("config %s: %v", p, err)
		}
		return loadPipeline(t, host).Metrics.Addr
	case "demo":
		return "127.0.0.1:9464" // cmd/dpstream/demo.go's default
	}
	t.Fatalf("command %q: not run or demo", svc.Command)
	return ""
}

// dpstreamServices returns the compose services that run the dpstream image.
func dpstreamServices(c composeFile) []string {
	var out []string
	for name, s := range c.Services {
		if s.Image == dpstreamImage {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestComposeServicesAndProfiles(t *testing.T) {
	c := loadCompose(t)
	want := map[string][]string{ // service -> profiles
		"kafka":      {"run"},
		"dpstream":   {"run"},
		"demo":       {"demo"},
		"prometheus": nil,
		"grafana":    nil,
	}
	for name, profiles := range want {
		s, ok := c.Services[name]
		if !ok {
			t.Errorf("docker-compose.yml has no %s service", name)
			continue
		}
		if !slices.Equal(s.Profiles, profiles) {
			t.Errorf("%s: profiles %q, want %q", name, s.Profiles, profiles)
		}
	}
	for name, s := range c.Services {
		deps, err := s.dependsOn()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, d := range deps {
			ds, ok := c.Services[d]
			if !ok {
				t.Errorf("%s depends on %s, which is not a service", name, d)
				continue
			}
			// Compose refuses to start a service whose dependency is not
			// enabled: the dependency must be on in every profile that
			// turns the service on.
			if len(ds.Profiles) > 0 && (len(s.Profiles) == 0 || slices.ContainsFunc(s.Profiles, func(p string) bool { return !slices.Contains(ds.Profiles, p) })) {
				t.Errorf("%s (profiles %q) depends on %s (profiles %q), which some of its profiles do not start", name, s.Profiles, d, ds.Profiles)
			}
		}
	}
	if got := dpstreamServices(c); !slices.Equal(got, []string{"demo", "dpstream"}) {
		t.Errorf("services running %s: %q, want demo and dpstream", dpstreamImage, got)
	}
}

func TestComposeFilesExist(t *testing.T) {
	c := loadCompose(t)
	for name, s := range c.Services {
		if s.Build != nil {
			df := filepath.Join(root, s.Build.Context, s.Build.Dockerfile)
			if _, err := os.Stat(df); err != nil {
				t.Errorf("%s build: %v", name, err)
			}
			if s.Image != dpstreamImage {
				t.Errorf("%s builds image %q, want %q (the name the Kubernetes manifests run)", name, s.Image, dpstreamImage)
			}
		}
		ms, err := s.mounts()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, m := range ms {
			if !strings.HasPrefix(m.host, "./") {
				t.Errorf("%s: volume %s is not a path in the repository", name, m.host)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, m.host)); err != nil {
				t.Errorf("%s: volume %s: %v", name, m.host, err)
			}
		}
	}
}

func TestComposeHostPortsDistinct(t *testing.T) {
	// Distinct host ports let both profiles run at once.
	c := loadCompose(t)
	seen := map[string]string{}
	for name, s := range c.Services {
		for _, p := range s.Ports {
			parts := strings.Split(p, ":")
			if len(parts) < 2 {
				continue // no host port published
			}
			host := strings.Join(parts[:len(parts)-1], ":") // [ip:]host
			if other, dup := seen[host]; dup {
				t.Errorf("host port %s published by both %s and %s", host, other, name)
			}
			seen[host] = name
		}
	}
}

func TestComposeKafkaIsKRaft(t *testing.T) {
	k := loadCompose(t).Services["kafka"]
	if !strings.HasPrefix(k.Image, "apache/kafka:") {
		t.Errorf("kafka image %q, want apache/kafka", k.Image)
	}
	roles := strings.Split(k.Environment["KAFKA_PROCESS_ROLES"], ",")
	if !slices.Contains(roles, "broker") || !slices.Contains(roles, "controller") {
		t.Errorf("KAFKA_PROCESS_ROLES %q: want broker,controller (KRaft, no ZooKeeper)", k.Environment["KAFKA_PROCESS_ROLES"])
	}
	for key := range k.Environment {
		if strings.Contains(key, "ZOOKEEPER") {
			t.Errorf("%s: a KRaft broker needs no ZooKeeper", key)
		}
	}
	if k.Healthcheck == nil || len(k.Healthcheck.Test) == 0 {
		t.Error("kafka has no healthcheck, so dpstream cannot wait for it")
	}
}

// TestComposePipeline: the run service's pipeline is a valid, calibratable
// config whose brokers are listeners the Kafka service advertises.
func TestComposePipeline(t *testing.T) {
	c := loadCompose(t)
	dp := c.Services["dpstream"]
	if len(dp.Command) == 0 || dp.Command[0] != "run" {
		t.Fatalf("dpstream command %q: want run", dp.Command)
	}
	p, ok := configFlag(dp.Command)
	if !ok {
		t.Fatalf("dpstream command %q has no -c", dp.Command)
	}
	host, err := dp.hostPathOf(p)
	if err != nil {
		t.Fatalf("dpstream config %s: %v", p, err)
	}
	cfg := loadPipeline(t, host)
	if len(cfg.Brokers) == 0 {
		t.Fatal("the compose pipeline names no brokers: dpstream would start an embedded broker instead of using the kafka service")
	}
	advertised := strings.Split(c.Services["kafka"].Environment["KAFKA_ADVERTISED_LISTENERS"], ",")
	for _, b := range cfg.Brokers {
		if !slices.ContainsFunc(advertised, func(l string) bool { return strings.HasSuffix(l, "://"+b) }) {
			t.Errorf("pipeline broker %s is not among the kafka service's advertised listeners %q", b, advertised)
		}
	}
	deps, _ := dp.dependsOn()
	if !slices.Contains(deps, "kafka") {
		t.Error("dpstream does not depend on kafka")
	}
}

// TestComposeMetricsPorts: every dpstream container serves metrics on an
// address other containers can reach, on a port it publishes, and Prometheus
// scrapes exactly those containers on exactly that port.
func TestComposeMetricsPorts(t *testing.T) {
	c := loadCompose(t)
	var prom struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	ps := c.Services["prometheus"]
	promFile, err := ps.hostPathOf("/etc/prometheus/prometheus.yml")
	if err != nil {
		t.Fatalf("prometheus config: %v", err)
	}
	readYAML(t, promFile, &prom)
	targets := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, tg := range st.Targets {
				targets[tg] = true
			}
		}
	}
	for _, name := range dpstreamServices(c) {
		s := c.Services[name]
		addr := metricsListen(t, s)
		if !reachableListen(addr) {
			t.Errorf("%s serves metrics on %s, which Prometheus in another container cannot reach", name, addr)
			continue
		}
		port, err := portOf(addr)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		cp, err := s.containerPorts()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !slices.Contains(cp, port) {
			t.Errorf("%s serves metrics on port %d but publishes %q", name, port, s.Ports)
		}
		tg := net.JoinHostPort(name, strconv.Itoa(port))
		if !targets[tg] {
			t.Errorf("prometheus does not scrape %s", tg)
		}
		delete(targets, tg)
	}
	for tg := range targets {
		t.Errorf("prometheus scrapes %s, which is not a dpstream service's metrics address", tg)
	}
}

// TestComposeHardening: the dpstream containers run with a read-only root
// filesystem and no capabilities, like the Kubernetes pods.
func TestComposeHardening(t *testing.T) {
	c := loadCompose(t)
	for _, name := range dpstreamServices(c) {
		s := c.Services[name]
		if !s.ReadOnly {
			t.Errorf("%s: read_only is not set", name)
		}
		if !slices.Contains(s.CapDrop, "ALL") {
			t.Errorf("%s: cap_drop %q, want ALL", name, s.CapDrop)
		}
	}
	// The demo keeps its embedded broker's data in a temporary directory.
	if !slices.Contains(c.Services["demo"].Tmpfs, "/tmp") {
		t.Error("demo: read-only root without a tmpfs on /tmp, where the embedded broker keeps its data")
	}
}

// dockerfile is a parsed Dockerfile: its build stages in order, each a list
// of instructions.
type dockerfile struct{ stages [][]instruction }

type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

func parseDockerfile(b []byte) (dockerfile, error) {
	var d dockerfile
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if l, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(l + " ")
			continue
		}
		cur.WriteString(line)
		full := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			d.stages = append(d.stages, nil)
		}
		if len(d.stages) == 0 {
			if in.cmd == "ARG" {
				continue // ARG before the first FROM
			}
			return d, fmt.Errorf("%s before the first FROM", in.cmd)
		}
		d.stages[len(d.stages)-1] = append(d.stages[len(d.stages)-1], in)
	}
	if cur.Len() > 0 {
		return d, errors.New("the last line ends with a backslash")
	}
	return d, sc.Err()
}

// last returns the arguments of the last cmd instruction in stage s.
func (d dockerfile) last(s int, cmd string) (string, bool) {
	for i := len(d.stages[s]) - 1; i >= 0; i-- {
		if d.stages[s][i].cmd == cmd {
			return d.stages[s][i].args, true
		}
	}
	return "", false
}

func loadDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseDockerfile(b)
	if err != nil {
		t.Fatalf("deploy/Dockerfile: %v", err)
	}
	return d
}

// dockerUID returns the numeric uid the final stage runs as.
func dockerUID(t *testing.T, d dockerfile) int {
	t.Helper()
	fin := len(d.stages) - 1
	u, ok := d.last(fin, "USER")
	if !ok {
		t.Fatal("the final stage has no USER: the image would run as root")
	}
	uid, _, _ := strings.Cut(u, ":")
	n, err := strconv.Atoi(uid)
	if err != nil {
		t.Fatalf("USER %s: not numeric, so Kubernetes cannot verify runAsNonRoot", u)
	}
	return n
}

func TestDockerfile(t *testing.T) {
	d := loadDockerfile(t)
	if len(d.stages) < 2 {
		t.Fatalf("%d stages, want a multi-stage build", len(d.stages))
	}
	fin := len(d.stages) - 1
	from, _ := d.last(fin, "FROM")
	if !strings.Contains(from, "distroless/static") && from != "scratch" {
		t.Errorf("final image %q: want distroless/static or scratch", from)
	}
	var build strings.Builder
	for _, st := range d.stages[:fin] {
		for _, in := range st {
			if in.cmd == "RUN" {
				build.WriteString(in.args + "\n")
			}
		}
	}
	if !strings.Contains(build.String(), "CGO_ENABLED=0") || !strings.Contains(build.String(), "./cmd/dpstream") {
		t.Error("the build stage does not build ./cmd/dpstream with CGO_ENABLED=0 (a static binary)")
	}
	if uid := dockerUID(t, d); uid == 0 {
		t.Error("USER is root")
	}

	// The entrypoint is the binary the final stage copies in.
	var ep []string
	if a, ok := d.last(fin, "ENTRYPOINT"); !ok || json.Unmarshal([]byte(a), &ep) != nil || len(ep) == 0 {
		t.Fatalf("ENTRYPOINT %q: want an exec-form JSON array", a)
	}
	copied := false
	for _, in := range d.stages[fin] {
		if in.cmd == "COPY" && strings.HasPrefix(in.args, "--from=") && strings.HasSuffix(in.args, " "+ep[0]) {
			copied = true
		}
	}
	if !copied {
		t.Errorf("ENTRYPOINT %s is not copied from the build stage", ep[0])
	}

	// EXPOSE and CMD agree with the compose service that runs the image
	// with its default command's config path.
	dp := loadCompose(t).Services["dpstream"]
	port, err := portOf(metricsListen(t, dp))
	if err != nil {
		t.Fatal(err)
	}
	expose, _ := d.last(fin, "EXPOSE")
	if !slices.Contains(strings.Fields(expose), strconv.Itoa(port)) {
		t.Errorf("EXPOSE %q, want the metrics port %d", expose, port)
	}
	var cmd []string
	if a, ok := d.last(fin, "CMD"); !ok || json.Unmarshal([]byte(a), &cmd) != nil {
		t.Fatalf("CMD %q: want an exec-form JSON array", a)
	}
	if !slices.Equal(cmd, dp.Command) {
		t.Errorf("CMD %q differs from the compose dpstream command %q", cmd, dp.Command)
	}
}

// ignored reports whether a .dockerignore pattern list excludes the
// slash-separated path p. It follows Docker's rules for the patterns this
// repository uses: a leading "/" is dropped, "**" matches any number of
// directories, and a pattern that matches a directory excludes everything in
// it. Exceptions ("!") are refused rather than half-implemented.
func ignored(patterns []string, p string) (bool, error) {
	segs := strings.Split(p, "/")
	for _, pat := range patterns {
		if strings.HasPrefix(pat, "!") {
			return false, fmt.Errorf("pattern %q: exceptions are not supported by this check", pat)
		}
		ps := strings.Split(strings.TrimPrefix(pat, "/"), "/")
		for n := 1; n <= len(segs); n++ {
			ok, err := matchSegs(ps, segs[:n])
			if err != nil {
				return false, fmt.Errorf("pattern %q: %w", pat, err)
			}
			if ok {
				return true, nil
			}
		}
	}
	return false, nil
}

func matchSegs(pat, segs []string) (bool, error) {
	if len(pat) == 0 {
		return len(segs) == 0, nil
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if ok, err := matchSegs(pat[1:], segs[i:]); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	}
	if len(segs) == 0 {
		return false, nil
	}
	ok, err := filepath.Match(pat[0], segs[0])
	if err != nil || !ok {
		return false, err
	}
	return matchSegs(pat[1:], segs[1:])
}

func TestIgnoredMatcher(t *testing.T) {
	pats := []string{".git", "/dpstream", "**/.dpstream", "**/*.jsonl"}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".git/config", true},
		{"dpstream", true},
		{"cmd/dpstream/main.go", false}, // "/dpstream" is anchored at the root
		{".dpstream/kafka/00000.log", true},
		{"x/y/.dpstream/kafka/00000.log", true},
		{"events.jsonl", true},
		{"testdata/in/events.jsonl", true},
		{"go.mod", false},
		{"schema/trip.avsc", false},
	} {
		got, err := ignored(pats, tc.path)
		if err != nil || got != tc.want {
			t.Errorf("ignored(%q) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
	if _, err := ignored([]string{"!keep"}, "keep"); err == nil {
		t.Error("an exception pattern was accepted")
	}
}

// TestDockerignore: the build context keeps every file the build needs and
// leaves out the embedded broker's data (raw events).
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile.dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			pats = append(pats, l)
		}
	}
	for _, p := range []string{".dpstream/kafka/trips.events-0/00000000000000000000.log", ".git/HEAD"} {
		if ok, err := ignored(pats, p); err != nil || !ok {
			t.Errorf("%s is in the build context (%v)", p, err)
		}
	}
	needed := 0
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel == ".git" || rel == ".dpstream" {
				return filepath.SkipDir
			}
			return nil
		}
		// Go sources, embedded schemas and the module files are what
		// `go build ./cmd/dpstream` reads.
		if !(strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go")) && !strings.HasSuffix(rel, ".avsc") && rel != "go.mod" && rel != "go.sum" {
			return nil
		}
		needed++
		if ok, err := ignored(pats, rel); err != nil || ok {
			t.Errorf("%s is excluded from the build context (%v)", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if needed < 10 {
		t.Errorf("found only %d build inputs: the walk did not see the repository", needed)
	}
}
