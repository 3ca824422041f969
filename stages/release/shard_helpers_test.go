package release

import (
	"context"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
)

// The stage tests drive a Stage's shards directly, without a consumer
// group. Their rigs' partials and ledger topics have one partition unless
// a test says otherwise, so these helpers address partition 0's shard, or
// the shard of a window's stream.

// only returns the shard of partition 0, learning the topics' partition
// count first.
func (s *Stage) only() *shard {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.learnPartitions(ctx); err != nil {
		panic(err)
	}
	return s.shard(0)
}

// shardOf returns the shard of a stream.
func (s *Stage) shardOf(stream string) *shard {
	s.only()
	return s.shard(ledger.PartitionOf(stream, s.partitions))
}

func (s *Stage) takeOver(ctx context.Context) error { return s.only().takeOver(ctx) }

func (s *Stage) takeOverAs(ctx context.Context, epoch string) error {
	return s.only().takeOverAs(ctx, epoch)
}

// releaseWindow releases one window as a group of its own.
func (s *Stage) releaseWindow(ctx context.Context, w Window) error {
	return s.shardOf(w.Stream).releaseWindows(ctx, []Window{w})
}

func (s *Stage) serveQueries(ctx context.Context, log *slog.Logger) error {
	return s.only().serveQueries(ctx, log)
}

// answer answers one request, as a burst of one.
func (s *Stage) answer(ctx context.Context, m kafka.Message, log *slog.Logger) error {
	return s.only().answer(ctx, []kafka.Message{m}, log)
}

// closeAll releases every shard's ownership and the stage's writers (the
// tests' cleanup).
func (s *Stage) closeAll() {
	s.mu.Lock()
	shards := make([]*shard, 0, len(s.shards))
	for _, sh := range s.shards {
		shards = append(shards, sh)
	}
	s.mu.Unlock()
	for _, sh := range shards {
		sh.close()
	}
	_ = s.releases.Close()
	_ = s.accountantW.Close()
}
