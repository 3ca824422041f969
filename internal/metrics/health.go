package metrics

import (
	"fmt"
	"net/http"
	"sync/atomic"
)

// HealthState is where a dpstream process is in its life: starting, ready
// (its stages run) or stopping. It only moves forward.
type HealthState int32

// The health states, in the only order a process goes through them.
const (
	// Starting: the process is up but its stages are not running yet
	// (connecting to the brokers, creating topics).
	Starting HealthState = iota
	// Ready: the stages are running against reachable brokers.
	Ready
	// Stopping: shutdown began (a signal, or a stage failed); the process
	// is draining and will not become ready again.
	Stopping
)

// String returns the state's name as /readyz prints it.
func (s HealthState) String() string {
	switch s {
	case Starting:
		return "starting"
	case Ready:
		return "ready"
	case Stopping:
		return "stopping"
	}
	return fmt.Sprintf("HealthState(%d)", int32(s))
}

// Health is the process state behind /healthz and /readyz. The pipeline
// moves it to Ready once its stages run and to Stopping when shutdown
// begins; the HTTP handlers only read it. The zero value is Starting, and
// it is safe for concurrent use. Methods on a nil *Health do nothing and
// report Starting, so code that runs without a metrics server need not
// check.
type Health struct {
	state atomic.Int32
	// checks are further conditions of readiness (AddReadyCheck).
	checks atomic.Pointer[[]func() error]
}

// AddReadyCheck adds a condition of readiness: in the Ready state,
// /readyz answers 200 only while every check returns nil, and 503 with
// the first error otherwise (the release stage is ready only once every
// stream it owns is rebuilt and releasing).
func (h *Health) AddReadyCheck(check func() error) {
	if h == nil {
		return
	}
	for {
		old := h.checks.Load()
		var next []func() error
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, check)
		if h.checks.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Ready returns nil when the process is ready to be routed to: in the
// Ready state with every ready check passing. Otherwise the error says why.
func (h *Health) Ready() error {
	st := h.State()
	if st != Ready {
		return fmt.Errorf("%s", st)
	}
	if cs := h.checks.Load(); cs != nil {
		for _, c := range *cs {
			if err := c(); err != nil {
				return err
			}
		}
	}
	return nil
}

// State returns the current state.
func (h *Health) State() HealthState {
	if h == nil {
		return Starting
	}
	return HealthState(h.state.Load())
}

// SetReady marks the stages running. It does nothing once shutdown began:
// a draining process must not be routed to again, so Stopping is final.
func (h *Health) SetReady() {
	if h == nil {
		return
	}
	h.state.CompareAndSwap(int32(Starting), int32(Ready))
}

// SetStopping marks that shutdown began. It is final and idempotent.
func (h *Health) SetStopping() {
	if h == nil {
		return
	}
	h.state.Store(int32(Stopping))
}

// healthz answers liveness probes: 200 "ok" whenever the process can serve
// HTTP at all, also while it starts and while it drains. It deliberately
// does not depend on Kafka: an orchestrator restarts a process whose
// liveness fails, and restarting dpstream does not fix a broker outage; it
// only turns a drain into a crash.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

// readyz answers readiness probes: 200 with body "ready" only in the Ready
// state with every ready check passing (AddReadyCheck), 503 with the
// state's name ("starting" or "stopping") or the failing check's error
// otherwise. Going to 503 as soon as shutdown begins lets Kubernetes take
// the pod out of its Service endpoints while the stages drain.
func (h *Health) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.Ready(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, Ready)
}
