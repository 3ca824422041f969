package kafkaio

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionReaper removes consumer-group members that the embedded broker
// keeps although their sessions have expired.
//
// kfake (groups.go, group.reply and group.completeRebalance) starts a
// member's session timer only when it hands the member's JoinGroup or
// SyncGroup answer to a live connection, and a member that joins for the
// first time has no timer before that (group.addMemberAndRebalance). A
// process killed while its first JoinGroup is parked at the coordinator
// therefore stays a member when the rebalance completes: it gets its
// share of the partitions, never syncs or heartbeats, and never expires.
// When a live member leads that generation its SyncGroup makes the group
// Stable, and the live members, which heartbeat fine, are never asked to
// rejoin: the dead member's partitions are processed by nobody, for good.
// (Apache Kafka schedules every member's session expiry when a join
// completes, delivered or not.) The crash test hit this as a final life
// that held 2 of 4 partitions forever.
//
// The reaper notes every JoinGroup, SyncGroup and Heartbeat a member
// sends, and every half second looks at the Stable groups: a member not
// heard from for twice the longest session timeout asked for in the group,
// counted from when the group became Stable at its generation, is removed
// with a LeaveGroup on its behalf. That triggers the rebalance its session
// expiry would have. A live member heartbeats several times per session
// timeout, and one that stays silent for a whole session is expired by
// the broker itself first, so the reaper removes only members the broker
// has forgotten to time.
type sessionReaper struct {
	cluster   *kfake.Cluster
	client    *kafka.Client
	transport *kafka.Transport // the client's own, closed with the reaper
	log       *slog.Logger

	mu      sync.Mutex
	groups  map[string]*reapedGroup
	removed int // members removed so far

	cancel context.CancelFunc
	done   chan struct{}
}

// reapedGroup is what the reaper knows of one group.
type reapedGroup struct {
	// session is the longest session timeout a member asked for.
	session time.Duration
	// heard is when each member last sent a group request.
	heard map[string]time.Time
	// epoch is the generation the group was last seen Stable at, since
	// stableSince (zero while it is not Stable).
	epoch       int32
	stableSince time.Time
}

// reapInterval is how often the reaper looks at the groups.
const reapInterval = 500 * time.Millisecond

// startSessionReaper registers the reaper's request observers on c and
// starts it; addr is c's listen address (the reaper sends its LeaveGroup
// requests there like any client).
func startSessionReaper(c *kfake.Cluster, addr string, log *slog.Logger) *sessionReaper {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := &kafka.Transport{}
	r := &sessionReaper{
		cluster:   c,
		client:    &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: tr},
		transport: tr,
		log:       log,
		groups:    map[string]*reapedGroup{},
		cancel:    cancel,
		done:      make(chan struct{}),
	}
	// Observers: they return "not handled", so the broker then handles
	// the request as usual (and keeps the observer for the next one).
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if j, ok := req.(*kmsg.JoinGroupRequest); ok {
			r.heard(j.Group, j.MemberID, time.Duration(j.SessionTimeoutMillis)*time.Millisecond)
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.SyncGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if s, ok := req.(*kmsg.SyncGroupRequest); ok {
			r.heard(s.Group, s.MemberID, 0)
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if h, ok := req.(*kmsg.HeartbeatRequest); ok {
			r.heard(h.Group, h.MemberID, 0)
		}
		return nil, nil, false
	})
	go r.run(ctx)
	return r
}

// heard records a request from member (empty for a first join) of group.
func (r *sessionReaper) heard(group, member string, session time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groups[group]
	if g == nil {
		g = &reapedGroup{heard: map[string]time.Time{}}
		r.groups[group] = g
	}
	g.session = max(g.session, session)
	if member != "" {
		g.heard[member] = time.Now()
	}
}

// close stops the reaper.
func (r *sessionReaper) close() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
	r.transport.CloseIdleConnections()
}

func (r *sessionReaper) run(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for group, members := range r.expired(time.Now()) {
			for _, m := range members {
				if err := r.remove(ctx, group, m); err != nil && ctx.Err() == nil {
					r.log.Warn("embedded broker: could not remove an expired group member", "group", group, "member", m, "err", err)
				}
			}
		}
	}
}

// expired returns, per group, the members of Stable groups not heard from
// for twice the group's session timeout.
func (r *sessionReaper) expired(now time.Time) map[string][]string {
	r.mu.Lock()
	names := make([]string, 0, len(r.groups))
	for name := range r.groups {
		names = append(names, name)
	}
	r.mu.Unlock()
	out := map[string][]string{}
	for _, name := range names {
		// Outside r.mu: GroupInfo runs on the broker's loop, which may be
		// waiting for an observer that waits for r.mu.
		info := r.cluster.GroupInfo(name)
		r.mu.Lock()
		g := r.groups[name]
		switch {
		case info == nil:
			delete(r.groups, name)
		case info.State != "Stable" || g.session <= 0:
			g.stableSince = time.Time{}
		default:
			if g.stableSince.IsZero() || g.epoch != info.Epoch {
				g.epoch, g.stableSince = info.Epoch, now
			}
			live := map[string]bool{}
			for _, m := range info.Members {
				live[m.MemberID] = true
				last := g.heard[m.MemberID]
				if last.Before(g.stableSince) {
					last = g.stableSince
				}
				if now.Sub(last) > 2*g.session {
					out[name] = append(out[name], m.MemberID)
					delete(g.heard, m.MemberID)
				}
			}
			for m := range g.heard {
				if !live[m] {
					delete(g.heard, m)
				}
			}
		}
		r.mu.Unlock()
	}
	return out
}

// remove makes member leave group, as its expired session would have.
func (r *sessionReaper) remove(ctx context.Context, group, member string) error {
	resp, err := r.client.LeaveGroup(ctx, &kafka.LeaveGroupRequest{GroupID: group, Members: []kafka.LeaveGroupRequestMember{{ID: member}}})
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	if err == nil {
		for _, m := range resp.Members {
			if m.Error != nil {
				err = m.Error
			}
		}
	}
	if err != nil {
		return fmt.Errorf("leave group %s for member %s: %w", group, member, err)
	}
	r.log.Warn("embedded broker: removed a group member that stopped heartbeating without the broker expiring it", "group", group, "member", member)
	r.mu.Lock()
	r.removed++
	r.mu.Unlock()
	return nil
}

// removedCount is how many members the reaper has removed.
func (r *sessionReaper) removedCount() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed
}
