package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/pipeline"
)

// TestKcatInterop checks that a plain Kafka client talks to dpstream: kcat
// (librdkafka) produces JSON events to the broker, and reads the releases
// back. It is skipped when kcat is not installed (.ci/run installs it).
func TestKcatInterop(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (apt-get install kcat); skipping the interop test")
	}
	h := newHarness(t, e2eConfig())
	in := h.start("kcat", pipeline.Stages{Accumulate: true, Release: true}, nil)
	evs := genEvents(3, 3, 50, 20)
	var input bytes.Buffer
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(&input, "%s|%s\n", ev["user"], b)
	}
	broker := strings.Join(h.Brokers, ",")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// murmur2_random is the Java client's partitioner, the one dpstream
	// checks units against (librdkafka's default is crc32-based).
	produce := exec.CommandContext(ctx, kcat, "-b", broker, "-P", "-t", h.cfg.Streams[0].Topic, "-K", "|",
		"-X", "topic.partitioner=murmur2_random")
	produce.Stdin = &input
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat produce: %v\n%s", err, out)
	}
	waitFor(t, 60*time.Second, "releases of the kcat-produced windows", func() bool {
		return len(releasedWindows(h.releases(), "h")) >= 2
	}, in)
	if n := len(h.ReadAll(h.cfg.Topics.DeadLetter)); n != 0 {
		t.Errorf("%d kcat-produced events were dead-lettered (misrouted?), want 0", n)
	}
	consume := exec.CommandContext(ctx, kcat, "-b", broker, "-C", "-t", h.cfg.Topics.Releases, "-o", "beginning", "-e", "-q", "-f", "%k\n")
	consume.Stderr = os.Stderr
	out, err := consume.Output()
	if err != nil {
		t.Fatalf("kcat consume: %v", err)
	}
	keys := strings.Fields(string(out))
	want := map[string]bool{fmt.Sprintf("trips/h/%d", base): false, fmt.Sprintf("trips/n/%d", base+1000): false}
	for _, k := range keys {
		if _, ok := want[k]; ok {
			want[k] = true
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("kcat did not read release %s from %s; it read %v", k, h.cfg.Topics.Releases, keys)
		}
	}
}
