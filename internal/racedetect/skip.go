package racedetect

import "testing"

// SkipStatistical skips a long single-goroutine statistical test under the
// race detector; .ci/run runs it without -race (see the package comment).
func SkipStatistical(t testing.TB) {
	t.Helper()
	if Enabled {
		t.Skip("a long single-goroutine statistical test: skipped under -race, which has nothing to find in it; .ci/run runs it without -race")
	}
}
