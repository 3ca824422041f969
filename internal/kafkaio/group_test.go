package kafkaio

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunGroupRefusedSessionTimeout: a session timeout the broker refuses
// (the embedded broker allows 1s and more) stops RunGroup with an error
// that names the setting, instead of retrying the join forever.
func TestRunGroupRefusedSessionTimeout(t *testing.T) {
	b, err := StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Conn().EnsureTopics(ctx, []TopicSpec{{Name: "in", Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	err = RunGroup(ctx, GroupConfig{Conn: b.Conn(), GroupID: "g", Topics: []string{"in"}, SessionTimeout: 500 * time.Millisecond},
		func(ctx context.Context, a Assignment) error { <-ctx.Done(); return nil })
	if ctx.Err() != nil {
		t.Fatalf("RunGroup still joining after 20s; want it to give up on the refused session timeout")
	}
	if err == nil || !strings.Contains(err.Error(), "refuses session timeout 500ms") || !strings.Contains(err.Error(), "session_timeout") {
		t.Fatalf("RunGroup = %v, want an error naming the refused session timeout and the session_timeout setting", err)
	}
}
