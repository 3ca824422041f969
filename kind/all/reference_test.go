package all_test

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	_ "github.com/dpstream/dpstream/kind/all"
)

var update = flag.Bool("update", false, "rewrite README.md's release reference from the kinds' specs")

// Markers around the generated part of README.md's configuration
// reference.
const (
	beginMarker = "<!-- BEGIN release keys: generated from the kinds' specs (config.ReleaseReference); edit the specs, then run go test ./kind/all -run TestReadmeReleaseReference -update -->\n"
	endMarker   = "<!-- END release keys -->\n"
)

// TestReadmeReleaseReference keeps README.md's reference of release keys
// equal to what the registered kinds' specs document, so that the docs
// cannot drift from the code: a key a kind reads, its type, default and
// rules are written once, in the kind's package.
func TestReadmeReleaseReference(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	i := strings.Index(readme, beginMarker)
	j := strings.Index(readme, endMarker)
	if i < 0 || j < i {
		t.Fatalf("README.md has no generated release reference between %q and %q", beginMarker, endMarker)
	}
	want := config.ReleaseReference()
	got := readme[i+len(beginMarker) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(readme[:i+len(beginMarker)]+want+readme[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's release reference differs from the kinds' specs; run go test ./kind/all -run TestReadmeReleaseReference -update\n%s", firstDiff(got, want))
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(g) || k < len(w); k++ {
		var gl, wl string
		if k < len(g) {
			gl = g[k]
		}
		if k < len(w) {
			wl = w[k]
		}
		if gl != wl {
			return "line " + strconv.Itoa(k+1) + ":\n  README: " + gl + "\n  specs:  " + wl
		}
	}
	return ""
}
