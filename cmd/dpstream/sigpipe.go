package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifySIGPIPE subscribes to SIGPIPE until the returned func is called.
// While subscribed, a write to a closed pipe on stdout fails with EPIPE
// instead of killing the process (the Go runtime's default for fd 1 and 2,
// which skips every deferred cleanup), so the writer can stop the command
// normally. The signals themselves carry nothing more and are dropped.
func notifySIGPIPE() (stop func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGPIPE)
	return func() { signal.Stop(c) }
}
