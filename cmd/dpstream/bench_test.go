package main

import (
	"context"
	"encoding/json"
	"fmt"
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
	for _, pdp := range []bool{true, false} {
		t.Run(fmt.Sprintf("pdp=%t", pdp), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := runBench(ctx, t.TempDir(), 45000, 2, pdp, io.Discard)
			if err != nil {
				t.Fatalf("bench: %v", err)
			}
			if res.n != 45000 || res.pipe <= 0 || res.bare <= 0 || res.batch <= 0 || res.franz <= 0 {
				t.Errorf("result %+v", res)
			}
			// --pdp off must turn the bookkeeping off (nothing on the pdp
			// topic), or comparing on with off measures nothing.
			if got := res.pdpRecords > 0; got != pdp {
				t.Errorf("--pdp %t: %d records on the pdp topic", pdp, res.pdpRecords)
			}
			// --json: the runs map holds each run's events/s under the
			// names scripts read.
			b, err := json.Marshal(res.json())
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Runs map[string]struct {
					EventsPerS float64 `json:"events_per_s"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"dpstream", "kafka-go", "kafka-go-batch", "franz-go"} {
				if r, ok := out.Runs[name]; !ok || !(r.EventsPerS > 0) {
					t.Errorf("--json runs[%q] = %+v, %v; want events_per_s > 0 (%s)", name, r, ok, b)
				}
			}
		})
	}
}
