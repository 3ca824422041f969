package kafkaio

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
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

// heldPartitions is what a test member's handlers hold right now.
type heldPartitions struct {
	mu   sync.Mutex
	held map[int]bool
}

func (h *heldPartitions) handler(ctx context.Context, a Assignment) error {
	h.mu.Lock()
	h.held[a.Partition] = true
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	delete(h.held, a.Partition)
	h.mu.Unlock()
	return nil
}

func (h *heldPartitions) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// waitHeld waits until the member holds n partitions or ctx ends.
func (h *heldPartitions) waitHeld(ctx context.Context, n int) bool {
	for h.count() != n {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// waitFewer waits until the member holds fewer than n partitions or ctx
// ends.
func (h *heldPartitions) waitFewer(ctx context.Context, n int) bool {
	for h.count() >= n {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// zombieJoin joins group as a new member the way a process killed during
// its first join does: it sends a JoinGroup (v2, kafka-go's version, with
// kafka-go's "range" protocol) on a fresh connection and closes the
// connection before the answer. The coordinator parks the join until
// the rebalance completes, then cannot deliver the answer.
func zombieJoin(t *testing.T, addr, group, topic string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	meta.UserData = []byte{}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 2
	req.Group = group
	req.SessionTimeoutMillis = 1000
	req.RebalanceTimeoutMillis = 1000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	// The request header (v1: api key, version, correlation id, client
	// id), then the body; v2 is not a flexible version.
	clientID := "zombie"
	msg := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Version))
	msg = binary.BigEndian.AppendUint32(msg, 1)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(clientID)))
	msg = append(msg, clientID...)
	msg = req.AppendTo(msg)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
	if _, err := c.Write(append(frame, msg...)); err != nil {
		t.Fatal(err)
	}
}

// TestRunGroupSurvivesDeadJoiner: a member whose process dies while its
// first JoinGroup is parked at the coordinator must not keep partitions
// after its session timeout. kfake starts a member's session timer only
// when it delivers the member's JoinGroup answer; when the connection is
// already closed (about one time in two: its reply picks at random
// between the open response queue and the closed connection) the member
// stays in the group with its share of the partitions and no session
// timer, and the survivor, holding the rest, is never asked to rejoin.
// The embedded broker's session reaper removes such members. Rounds are
// repeated until the reaper has had to remove two dead members, so the
// test keeps exercising the bug; without the reaper the first such round
// fails.
func TestRunGroupSurvivesDeadJoiner(t *testing.T) {
	b, err := StartEmbedded("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const parts = 4
	if err := b.Conn().EnsureTopics(ctx, []TopicSpec{{Name: "in", Partitions: parts}}); err != nil {
		t.Fatal(err)
	}
	h := &heldPartitions{held: map[int]bool{}}
	done := make(chan error, 1)
	gctx, stop := context.WithCancel(ctx)
	go func() {
		done <- RunGroup(gctx, GroupConfig{Conn: b.Conn(), GroupID: "g", Topics: []string{"in"}, SessionTimeout: time.Second}, h.handler)
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("RunGroup: %v", err)
		}
	}()
	members := func() string {
		info := b.cluster.GroupInfo("g")
		if info == nil {
			return "no group"
		}
		var ms []string
		for _, m := range info.Members {
			ms = append(ms, fmt.Sprintf("%s %v", m.MemberID, m.Assignment))
		}
		return fmt.Sprintf("%s generation %d, members: %s", info.State, info.Epoch, strings.Join(ms, "; "))
	}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	ok := h.waitHeld(wctx, parts)
	wcancel()
	if !ok {
		t.Fatalf("the only member holds %d of %d partitions after 60s (%s)", h.count(), parts, members())
	}
	const rounds, wantRemoved = 40, 2
	round := 1
	for ; round <= rounds && b.reaper.removedCount() < wantRemoved; round++ {
		zombieJoin(t, b.Addr(), "g", "in")
		// The survivor is asked to rejoin (its handlers stop)...
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		ok := h.waitFewer(wctx, parts)
		wcancel()
		if !ok {
			t.Fatalf("round %d: the member kept all partitions for 60s after another joined (%s)", round, members())
		}
		// ...and gets all partitions back once the dead member's session
		// has expired.
		wctx, wcancel = context.WithTimeout(ctx, 60*time.Second)
		ok = h.waitHeld(wctx, parts)
		wcancel()
		if !ok {
			t.Fatalf("round %d: the surviving member holds %d of %d partitions 60s after a joining member died with a 1s session timeout (%s)", round, h.count(), parts, members())
		}
	}
	if n := b.reaper.removedCount(); n < wantRemoved {
		t.Fatalf("in %d rounds the broker left only %d dead members in the group (want %d): the test no longer exercises kfake's missing session timer; has kfake fixed it?", rounds, n, wantRemoved)
	}
	t.Logf("%d rounds; the reaper removed %d dead members", round-1, b.reaper.removedCount())
}
