package main

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestBenchMeasuresThePipeline runs a small bench: every event must reach
// the pipeline's windows (none dead-lettered as before the stream's start
// or ahead of the clock, which made the bench time the schedule's idle
// timeout instead of the pipeline) and every window but the last must be
// released.
func TestBenchMeasuresThePipeline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runBench(ctx, t.TempDir(), 45000, 2, io.Discard)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	if res.n != 45000 || res.pipe <= 0 || res.bare <= 0 {
		t.Errorf("result %+v", res)
	}
}
