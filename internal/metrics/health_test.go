package metrics

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// get fetches path from the server at addr and returns the status code and
// the trimmed body.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", path, err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func TestProbes(t *testing.T) {
	// Each case drives the state through calls, in order, and states what
	// the probes must answer afterwards. Readiness is 200 in Ready only;
	// liveness is 200 in every state, since restarting a draining or
	// starting process helps nothing.
	cases := []struct {
		name       string
		calls      []string // "ready" or "stopping"
		wantState  HealthState
		wantReadyz int
	}{
		{"new process is starting", nil, Starting, http.StatusServiceUnavailable},
		{"stages running", []string{"ready"}, Ready, http.StatusOK},
		{"ready twice", []string{"ready", "ready"}, Ready, http.StatusOK},
		{"shutdown began", []string{"ready", "stopping"}, Stopping, http.StatusServiceUnavailable},
		{"failed before ready", []string{"stopping"}, Stopping, http.StatusServiceUnavailable},
		{"stopping is final", []string{"ready", "stopping", "ready"}, Stopping, http.StatusServiceUnavailable},
		{"stopping twice", []string{"stopping", "stopping"}, Stopping, http.StatusServiceUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			addr, err := m.Serve(ctx, "127.0.0.1:0", nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range c.calls {
				switch call {
				case "ready":
					m.Health.SetReady()
				case "stopping":
					m.Health.SetStopping()
				default:
					t.Fatalf("unknown call %q", call)
				}
			}
			if got := m.Health.State(); got != c.wantState {
				t.Errorf("state %v, want %v", got, c.wantState)
			}
			code, body := get(t, addr.String(), "/readyz")
			if code != c.wantReadyz || body != c.wantState.String() {
				t.Errorf("/readyz: %d %q, want %d %q", code, body, c.wantReadyz, c.wantState.String())
			}
			if code, body := get(t, addr.String(), "/healthz"); code != http.StatusOK || body != "ok" {
				t.Errorf("/healthz: %d %q, want 200 \"ok\"", code, body)
			}
			// /metrics is served beside the probes.
			if code, body := get(t, addr.String(), "/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
				t.Errorf("/metrics: %d, Go metrics present: %v", code, strings.Contains(body, "go_goroutines"))
			}
		})
	}
}

func TestHealthNil(t *testing.T) {
	// Code without a metrics server may hold a nil *Health; it must be a
	// no-op, not a crash.
	var h *Health
	h.SetReady()
	h.SetStopping()
	if got := h.State(); got != Starting {
		t.Errorf("nil Health state %v, want Starting", got)
	}

	// A Metrics made without New has no Health: /readyz then says it is
	// not ready rather than failing.
	m := &Metrics{Registry: New().Registry}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, err := m.Serve(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, addr.String(), "/readyz"); code != http.StatusServiceUnavailable || body != "starting" {
		t.Errorf("/readyz without Health: %d %q, want 503 \"starting\"", code, body)
	}
}

func TestHealthStateString(t *testing.T) {
	for _, c := range []struct {
		s    HealthState
		want string
	}{{Starting, "starting"}, {Ready, "ready"}, {Stopping, "stopping"}, {HealthState(7), "HealthState(7)"}} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%d: %q, want %q", int32(c.s), got, c.want)
		}
	}
}

func TestServeStopsWithContext(t *testing.T) {
	m := New()
	ctx, cancel := context.WithCancel(t.Context())
	addr, err := m.Serve(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, addr.String(), "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d before cancel", code)
	}
	cancel()
	// The server shuts down asynchronously: poll until connections are
	// refused, for at most its 2s shutdown grace plus slack.
	deadline := time.Now().Add(5 * time.Second)
	c := &http.Client{Timeout: time.Second}
	for {
		resp, err := c.Get("http://" + addr.String() + "/healthz")
		if err != nil {
			return
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("metrics server still answering 5s after its context was cancelled")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServePortTaken(t *testing.T) {
	m := New()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, err := m.Serve(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New().Serve(ctx, addr.String(), nil); err == nil || !strings.Contains(err.Error(), "metrics listener on "+addr.String()) {
		t.Errorf("second Serve on %s: err %v, want a listener error naming the address", addr, err)
	}
}
