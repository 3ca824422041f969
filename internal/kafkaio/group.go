package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// Assignment is one topic partition handed to this group member for one
// generation, with its committed position.
type Assignment struct {
	Topic     string
	Partition int
	// Offset is the committed offset, or kafka.FirstOffset when the group has
	// none for this partition.
	Offset int64
	// Metadata is the string committed with Offset ("" when none). The
	// accumulate stage keeps its watermark there so a restart replays into
	// exactly the state it had (DESIGN invariant 2).
	Metadata string
	// Commit commits offset (the next record to read) with metadata for this
	// partition in the current generation.
	Commit func(ctx context.Context, offset int64, metadata string) error
}

// GroupConfig configures RunGroup.
type GroupConfig struct {
	// Conn is the connection (brokers, TLS, SASL) to use. It is required:
	// there is no plaintext default, so a caller that forgets it fails
	// rather than silently connecting without the configured security.
	Conn    *Connection
	GroupID string
	Topics  []string
	Log     *slog.Logger
	// HeartbeatInterval defaults to 1s, or a third of SessionTimeout if
	// that is shorter; SessionTimeout to 10s.
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	// OnGeneration, if set, is called with each generation's assignment
	// (partitions by topic, possibly none) before its handlers start: the
	// release stage's readiness is about the partitions it was given.
	OnGeneration func(assigned map[string][]int)
}

// PartitionHandler processes one assigned partition until ctx is done (the
// generation ended or the group is shutting down). A non-nil error other
// than ctx's stops the whole group: handlers retry transient errors
// themselves.
type PartitionHandler func(ctx context.Context, a Assignment) error

// RunGroup joins the consumer group and runs handler for every partition
// assigned to this member, generation after generation, until ctx is done.
// It returns nil on cancellation.
func RunGroup(ctx context.Context, cfg GroupConfig, handler PartitionHandler) error {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	st := cfg.SessionTimeout
	if st <= 0 {
		st = 10 * time.Second
	}
	hb := cfg.HeartbeatInterval
	if hb <= 0 {
		hb = min(time.Second, st/3)
	}
	conn := cfg.Conn
	if conn == nil || len(conn.Brokers) == 0 {
		return fmt.Errorf("consumer group %s: no connection (brokers) given", cfg.GroupID)
	}
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                     cfg.GroupID,
		Brokers:                conn.Brokers,
		Dialer:                 conn.dialer,
		Topics:                 cfg.Topics,
		HeartbeatInterval:      hb,
		SessionTimeout:         st,
		RebalanceTimeout:       st,
		JoinGroupBackoff:       500 * time.Millisecond,
		WatchPartitionChanges:  true,
		PartitionWatchInterval: 5 * time.Second,
		StartOffset:            kafka.FirstOffset,
	})
	if err != nil {
		return fmt.Errorf("consumer group %s: %w", cfg.GroupID, err)
	}
	defer cg.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		fatalMu sync.Mutex
		fatal   error
	)
	client := conn.Client()
	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				fatalMu.Lock()
				defer fatalMu.Unlock()
				return fatal
			}
			if errors.Is(err, kafka.InvalidSessionTimeout) {
				// Retrying cannot help: the broker refuses the value.
				return fmt.Errorf("consumer group %s: the broker refuses session timeout %s (it allows group.min.session.timeout.ms..group.max.session.timeout.ms, 6s..30m by default): change session_timeout: %w", cfg.GroupID, st, err)
			}
			log.Warn("consumer group: join failed, retrying", "group", cfg.GroupID, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		req := &kafka.OffsetFetchRequest{GroupID: cfg.GroupID, Topics: map[string][]int{}}
		for topic, as := range gen.Assignments {
			for _, a := range as {
				req.Topics[topic] = append(req.Topics[topic], a.ID)
			}
		}
		committed := map[string]map[int]kafka.OffsetFetchPartition{}
		if len(req.Topics) > 0 {
			resp, err := fetchOffsets(ctx, client, req, log)
			if err != nil {
				if ctx.Err() != nil {
					continue // Next returns the cancellation
				}
				return fmt.Errorf("consumer group %s: fetch committed offsets: %w", cfg.GroupID, err)
			}
			for topic, ps := range resp.Topics {
				committed[topic] = map[int]kafka.OffsetFetchPartition{}
				for _, p := range ps {
					committed[topic][p.Partition] = p
				}
			}
		}
		log.Info("consumer group: generation started", "group", cfg.GroupID, "generation", gen.ID, "member", gen.MemberID, "assigned", countAssigned(gen))
		if cfg.OnGeneration != nil {
			assigned := map[string][]int{}
			for topic, as := range gen.Assignments {
				for _, a := range as {
					assigned[topic] = append(assigned[topic], a.ID)
				}
			}
			cfg.OnGeneration(assigned)
		}
		for topic, as := range gen.Assignments {
			for _, a := range as {
				asg := Assignment{Topic: topic, Partition: a.ID, Offset: kafka.FirstOffset}
				if c, ok := committed[topic][a.ID]; ok && c.Error == nil && c.CommittedOffset >= 0 {
					asg.Offset = c.CommittedOffset
					asg.Metadata = c.Metadata
				}
				genID, member, topic, part := gen.ID, gen.MemberID, topic, a.ID
				asg.Commit = func(ctx context.Context, offset int64, metadata string) error {
					resp, err := client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
						GroupID:      cfg.GroupID,
						GenerationID: int(genID),
						MemberID:     member,
						Topics:       map[string][]kafka.OffsetCommit{topic: {{Partition: part, Offset: offset, Metadata: metadata}}},
					})
					if err != nil {
						return fmt.Errorf("commit %s[%d]@%d: %w", topic, part, offset, err)
					}
					for _, p := range resp.Topics[topic] {
						if p.Error != nil {
							return fmt.Errorf("commit %s[%d]@%d: %w", topic, part, offset, p.Error)
						}
					}
					return nil
				}
				gen.Start(func(gctx context.Context) {
					err := handler(gctx, asg)
					if err != nil && gctx.Err() == nil && ctx.Err() == nil {
						log.Error("partition handler failed; stopping", "topic", asg.Topic, "partition", asg.Partition, "err", err)
						fatalMu.Lock()
						if fatal == nil {
							fatal = err
						}
						fatalMu.Unlock()
						cancel()
					}
				})
			}
		}
	}
}

func countAssigned(gen *kafka.Generation) int {
	n := 0
	for _, as := range gen.Assignments {
		n += len(as)
	}
	return n
}

// fetchOffsets fetches committed offsets, retrying for about 30s: right
// after a broker restart pooled connections fail once before reconnecting.
func fetchOffsets(ctx context.Context, client *kafka.Client, req *kafka.OffsetFetchRequest, log *slog.Logger) (*kafka.OffsetFetchResponse, error) {
	backoff := 100 * time.Millisecond
	var lastErr error
	for attempt := 0; attempt < 15; attempt++ {
		resp, err := client.OffsetFetch(ctx, req)
		if err == nil && resp.Error != nil {
			err = resp.Error
		}
		if err == nil {
			return resp, nil
		}
		lastErr = err
		log.Debug("offset fetch failed; retrying", "group", req.GroupID, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 3*time.Second)
	}
	return nil, lastErr
}
