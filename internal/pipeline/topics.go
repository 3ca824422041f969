package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/internal/kafkaio"
	"github.com/dpstream/dpstream/kind"
)

// DefaultTopicCheckInterval is how often a running pipeline checks that its
// topics still exist (Options.TopicCheckInterval's default).
const DefaultTopicCheckInterval = 3 * time.Second

// MissingTopicError reports a topic the pipeline needs that the cluster no
// longer has: deleted while dpstream was running. The pipeline stops with
// it rather than retrying forever (a deleted input topic would otherwise
// leave the stage waiting for records that never come) or carrying on
// without it, as Kafka Streams stops with MissingSourceTopicException.
type MissingTopicError struct {
	Topic string
	// Role says what the topic is for, e.g. "the input topic of stream trips".
	Role string
	// Fix says what the operator should do.
	Fix string
}

func (e *MissingTopicError) Error() string {
	return fmt.Sprintf("topic %s (%s) does not exist any more: it was deleted while dpstream was running; %s", e.Topic, e.Role, e.Fix)
}

// topicRole is what a topic is for and how to recover from its deletion.
type topicRole struct{ role, fix string }

// watchedTopics returns the topics the selected stages use, with their
// roles.
func watchedTopics(c *config.Config, st Stages) map[string]topicRole {
	t := c.Topics
	out := map[string]topicRole{}
	if st.Accumulate {
		for _, s := range c.Streams {
			out[s.Topic] = topicRole{
				role: "the input topic of stream " + s.Name,
				fix: fmt.Sprintf("dpstream cannot read the stream without it: recreate it with %d partitions and restart "+
					"(offsets committed on the old topic may lie beyond the new one's end: reset consumer group %s's offsets for it), "+
					"or remove stream %s from the configuration", s.Partitions, c.Group+"-accumulate", s.Name),
			}
		}
		out[t.DeadLetter] = topicRole{"the dead-letter topic", "restart dpstream to recreate it; the dead letters it held are lost"}
	}
	out[t.Partials] = topicRole{"the partials topic between the accumulate and release stages",
		"restart dpstream to recreate it; the partials it held are lost, so windows closed but not yet released will not be released " +
			"(their input offsets were already committed)"}
	if st.Release {
		out[t.Ledger] = topicRole{"the privacy-budget ledger",
			"it is the only record of the budget already spent: restore it from a backup or mirror before restarting. " +
				"A restart recreates it empty and then refuses to release while the releases topic holds releases the ledger lacks, " +
				"because an empty ledger would start the budget over"}
		out[t.Releases] = topicRole{"the releases topic", "restart dpstream: it recreates the topic and republishes every release from the ledger, verbatim"}
		out[t.Accountant] = topicRole{"the budget-state topic", "restart dpstream: it recreates the topic and republishes each stream's budget state from the ledger"}
		if kind.ConfigAnswersQueries(c) {
			out[t.Requests] = topicRole{"the queries to prediction releases", "restart dpstream to recreate it; queries not yet answered are lost, and their senders get no answer"}
			out[t.Responses] = topicRole{"the answers to queries", "restart dpstream to recreate it and republish every answer with noise from the ledger, verbatim"}
		}
		out[t.PDP] = topicRole{"the restricted per-instance DP topic",
			"restart dpstream to recreate it; the per-unit accounts it held are lost, so cumulative per-instance losses restart from zero"}
	}
	return out
}

// missingTopicErrors checks once which of the topics are missing. A failed
// request returns nil: it says nothing about the topics.
func missingTopicErrors(ctx context.Context, conn *kafkaio.Connection, topics map[string]topicRole) []error {
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names) // a deterministic order for the errors
	missing, err := conn.MissingTopics(ctx, names)
	if err != nil {
		return nil
	}
	var out []error
	for _, n := range missing {
		out = append(out, &MissingTopicError{Topic: n, Role: topics[n].role, Fix: topics[n].fix})
	}
	return out
}

// watchTopics checks every interval that the topics exist, until ctx is
// done (it then returns nil). A topic must be missing at two checks in a
// row before it counts as deleted: a broker that has just created a topic
// may not list it at once.
func watchTopics(ctx context.Context, conn *kafkaio.Connection, topics map[string]topicRole, interval time.Duration, log *slog.Logger) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	seenMissing := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, max(interval, 5*time.Second))
		errs := missingTopicErrors(cctx, conn, topics)
		cancel()
		var deleted []error
		now := map[string]bool{}
		for _, err := range errs {
			var mt *MissingTopicError
			if errors.As(err, &mt) {
				now[mt.Topic] = true
				if seenMissing[mt.Topic] {
					deleted = append(deleted, err)
				} else {
					log.Warn("topic not found; checking again", "topic", mt.Topic)
				}
			}
		}
		seenMissing = now
		if len(deleted) > 0 && ctx.Err() == nil {
			return errors.Join(deleted...)
		}
	}
}
