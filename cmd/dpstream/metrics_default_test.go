package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/testkit"
)

// listeningRE reads the address the metrics server bound from run's log.
var listeningRE = regexp.MustCompile(`msg="metrics listening" url=http://(\S+)/metrics`)

// TestRunMetricsLoopbackByDefault: with no metrics key in the config and
// no --metrics-addr, run serves /metrics on loopback only, since most
// metrics are exact counts of the input. It checks the
// address run actually bound (from its log), and that the port does not
// answer on the machine's other addresses. Before, the default was :9464,
// every interface.
func TestRunMetricsLoopbackByDefault(t *testing.T) {
	dir := t.TempDir()
	// The working directory is where the default pdp_store (and any
	// other relative default) lives: a directory of the test's own, not
	// the package's source directory.
	t.Chdir(t.TempDir())
	// No metrics section: the default address is what is tested.
	cfgPath := testkit.NewPipeline(ridesStream("rides.events").Partitions(1).EventTime("").Window(time.Second, 0, 0)).
		Embedded(freeAddr(t), filepath.Join(dir, "kafka")).Metrics("").WriteFile(t, filepath.Join(dir, "pipeline.yaml"))
	runCtx, stopRun := context.WithCancel(t.Context())
	r := startRun(runCtx, newFakeProcess(0).env(), "-c", cfgPath)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stopRun()
			r.wait(t, 30*time.Second)
		}
	})

	var bound string
	deadline := time.Now().Add(30 * time.Second)
	for bound == "" {
		if m := listeningRE.FindStringSubmatch(r.stderr.String()); m != nil {
			bound = m[1]
			break
		}
		select {
		case code := <-r.done:
			stopped = true
			// The default port is fixed, so something else on this
			// machine may hold it; the address run tried is then in its
			// error, and must be the loopback one all the same.
			if code == exitError && strings.Contains(r.stderr.String(), "metrics listener on 127.0.0.1:9464:") {
				t.Logf("the default metrics port is taken on this machine; run tried the loopback address:\n%s", r.stderr.String())
				return
			}
			t.Fatalf("run exited %d before it served metrics; stderr:\n%s", code, r.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("run did not log its metrics address within 30s; stderr:\n%s", r.stderr.String())
		}
	}
	ap, err := netip.ParseAddrPort(bound)
	if err != nil {
		t.Fatalf("metrics address %q: %v", bound, err)
	}
	if !ap.Addr().IsLoopback() || ap.Port() != 9464 {
		t.Fatalf("metrics served on %s by default, want loopback port 9464", bound)
	}

	// The port does not answer on the machine's other addresses.
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		other := net.JoinHostPort(ipn.IP.String(), "9464")
		if c, err := net.DialTimeout("tcp", other, 2*time.Second); err == nil {
			c.Close()
			t.Errorf("metrics port answers on %s, a non-loopback address", other)
		}
	}

	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + bound + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	if !strings.Contains(string(body), "dpstream_") {
		t.Errorf("/metrics serves no dpstream_ metric:\n%s", body)
	}
	stopRun()
	stopped = true
	if code := r.wait(t, 30*time.Second); code != exitOK {
		t.Errorf("run exited %d, want 0; stderr:\n%s", code, r.stderr.String())
	}
}
