// Package deploy holds no Go code: only tests that the deployment files
// (there is no Docker engine in CI to run them) parse and point at files and
// configurations that exist.
package deploy

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/plan"
)

func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image   string   `yaml:"image"`
			Command []string `yaml:"command"`
			Build   *struct {
				Context    string `yaml:"context"`
				Dockerfile string `yaml:"dockerfile"`
			} `yaml:"build"`
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, name := range []string{"kafka", "dpstream", "prometheus"} {
		if _, ok := compose.Services[name]; !ok {
			t.Errorf("docker-compose.yml has no %s service", name)
		}
	}
	dp := compose.Services["dpstream"]
	if dp.Build == nil {
		t.Fatal("dpstream service has no build section")
	}
	if _, err := os.Stat(filepath.Join("..", dp.Build.Context, dp.Build.Dockerfile)); err != nil {
		t.Errorf("dpstream build: %v", err)
	}
	for _, svc := range compose.Services {
		for _, v := range svc.Volumes {
			host := filepath.Join("..", v[:indexColon(v)])
			if _, err := os.Stat(host); err != nil {
				t.Errorf("volume %s: %v", v, err)
			}
		}
	}
}

func indexColon(s string) int {
	for i, c := range s {
		if c == ':' {
			return i
		}
	}
	return len(s)
}

// TestComposePipeline: the pipeline the compose file mounts is a valid,
// calibratable configuration.
func TestComposePipeline(t *testing.T) {
	c, err := config.Load("pipeline.compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Build(c); err != nil {
		t.Fatal(err)
	}
	if len(c.Brokers) == 0 {
		t.Error("the compose pipeline must name the compose broker")
	}
}
