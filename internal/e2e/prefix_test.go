package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// TestTopicPrefix checks the per-test prefix used on an external broker:
// subtest names with characters Kafka rejects in topic names (the "=" of
// "L=1", "/", "_", ".", spaces) become "-", the stamp keeps reruns apart, and
// the result stays a legal topic name even for very long test names. The
// expected strings are written by hand from the rule.
func TestTopicPrefix(t *testing.T) {
	legal := regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)
	tests := []struct {
		name  string
		stamp int64
		want  string
	}{
		{"TestEndToEnd", 42, "testendtoend-42"},
		{"TestEndToEndRegression/L=1", 7, "testendtoendregression-l-1-7"},
		{"TestX/a_b.c d", 1, "testx-a-b-c-d-1"},
		{"TestÄ", 3, "test---3"}, // Ä is two bytes in UTF-8, each replaced
		{strings.Repeat("a", 300), 5, strings.Repeat("a", 150) + "-5"},
	}
	for _, tc := range tests {
		got := topicPrefix(tc.name, tc.stamp)
		if got != tc.want {
			t.Errorf("topicPrefix(%q, %d) = %q, want %q", tc.name, tc.stamp, got, tc.want)
		}
		// The harness appends "." and an internal topic's name, e.g.
		// dpstream.accountant: the result must still be a legal topic.
		if topic := got + ".dpstream.accountant"; !legal.MatchString(topic) {
			t.Errorf("topicPrefix(%q): %q is not a legal Kafka topic name", tc.name, topic)
		}
	}
}
