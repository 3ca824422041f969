package config_test

import (
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
)

// TestStreamPDP checks the stream key pdp: true by default, false when
// asked, and an error naming the line for anything but true or false.
func TestStreamPDP(t *testing.T) {
	tests := []struct {
		name, line string
		want       bool
		err        string
	}{
		{"default", "", true, ""},
		{"off", "    pdp: false\n", false, ""},
		{"on", "    pdp: true\n", true, ""},
		{"yes is not a boolean", "    pdp: yes\n", false, "p.yaml:9: streams[0].pdp: must be true or false, got string \"yes\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(minimal, "    releases:\n", tc.line+"    releases:\n", 1)
			cfg, err := config.Parse([]byte(src), "p.yaml")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Streams[0].PDP != tc.want {
				t.Errorf("PDP = %v, want %v", cfg.Streams[0].PDP, tc.want)
			}
		})
	}
}
