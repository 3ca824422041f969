package release

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/plan"
	"github.com/dpstream/dpstream/schema"
)

// recoverPDP brings the per-unit per-instance accounts and the set of
// summarized windows up to date with the pdp topic: the store reads only
// the records it has not read yet (all of them the first time, or when
// its file was lost), in batches, so neither the time nor the memory of a
// restart grows with what it had read before.
func (s *Stage) recoverPDP(ctx context.Context) error {
	if s.cfg.PDPTopic == "" {
		return nil
	}
	s.pdpMu.Lock()
	defer s.pdpMu.Unlock()
	n, err := s.pdp.CatchUp(ctx, kafkaPDPSource{conn: s.cfg.Conn, topic: s.cfg.PDPTopic}, s.cfg.Log)
	if err != nil {
		return fmt.Errorf("catch up per-instance accounts with %s: %w", s.cfg.PDPTopic, err)
	}
	s.pdpUnread = 0
	if n > 0 {
		s.cfg.Log.Info("per-instance accounts caught up with the pdp topic", "records", n)
	}
	return nil
}

// pdpCatchUpEvery is how many records writePDP lets accumulate on the pdp
// topic, unread by the store, before it catches up: the store applies its
// own records when they are acknowledged, but remembers the offsets it
// has read only by reading, and the next Recover reads again what it has
// not. This bounds that re-read.
const pdpCatchUpEvery = 50000

// pdpType returns a pdp record's type header.
func pdpType(m kafka.Message) string {
	for _, h := range m.Headers {
		if h.Key == schema.PDPTypeHeader {
			return string(h.Value)
		}
	}
	return ""
}

// writePDP computes a window's per-instance DP from its decided outcomes
// and writes the changed unit accounts and the window's summary to the
// pdp topic, before any ledger record of the window, and then applies
// them to the store: a crash after the topic write and before the ledger
// replays the window, whose summary the store then knows (from the
// commit, or read back by Recover's catch-up) and whose units are not
// charged twice (PreparePDP is idempotent per unit and window). A
// failure here stops the window before anything is charged.
func (s *Stage) writePDP(ctx context.Context, ps *plan.Stream, w Window, outcomes []Outcome) error {
	if s.pdpW == nil || !ps.Config.PDP {
		return nil
	}
	s.pdpMu.Lock()
	defer s.pdpMu.Unlock()
	key := schema.PDPSummaryKey(w.Stream, w.Start)
	done, err := s.pdp.Summarized(key)
	if err != nil {
		return fmt.Errorf("per-instance DP of window %d: %w", w.Start, err)
	}
	if done {
		return nil
	}
	upd, err := PreparePDP(s.pdp, ps, w, outcomes, s.cfg.Now())
	if err != nil {
		return fmt.Errorf("per-instance DP of window %d: %w", w.Start, err)
	}
	sum := upd.Summary
	msgs, err := pdpMessages(upd)
	if err != nil {
		return err
	}
	if err := s.pdpW.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("write per-instance DP of window %d: %w", w.Start, err)
	}
	// Only now: the store never holds what the topic may not.
	if err := s.pdp.Commit(upd); err != nil {
		return fmt.Errorf("per-instance DP of window %d is on %s but not in the store (the next start reads it back): %w", w.Start, s.cfg.PDPTopic, err)
	}
	if s.pdpUnread += len(msgs); s.pdpUnread >= pdpCatchUpEvery {
		if _, err := s.pdp.CatchUp(ctx, kafkaPDPSource{conn: s.cfg.Conn, topic: s.cfg.PDPTopic}, s.cfg.Log); err != nil {
			s.cfg.Log.Warn("could not catch the per-instance DP store up with the pdp topic; the next start will", "err", err)
		} else {
			s.pdpUnread = 0
		}
	}
	for _, r := range sum.Releases {
		if r.Status != StatusOK {
			continue
		}
		for q, v := range map[string]float64{"p50": r.P50, "p90": r.P90, "p99": r.P99, "max": r.Max} {
			s.cfg.Metrics.PDPEpsilon.WithLabelValues(w.Stream, r.Release, q).Set(v)
		}
	}
	for q, v := range map[string]float64{"p50": sum.CumulativeP50, "p90": sum.CumulativeP90, "p99": sum.CumulativeP99, "max": sum.CumulativeMax} {
		s.cfg.Metrics.PDPCumulative.WithLabelValues(w.Stream, q).Set(v)
	}
	for _, r := range sum.Releases {
		if r.Status == StatusUnavailable {
			s.cfg.Log.Warn("per-instance DP unavailable for a window (too many units for one partial record); the units' cumulative accounts omit it",
				"stream", w.Stream, "window", w.Start)
			break
		}
	}
	return nil
}
