package release

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// serveQueries answers the requests topic's queries (partition 0) while
// this instance owns the stage, from the offset after the last request the
// ledger holds an answer to (Releaser.RequestNext), until ctx is done (nil)
// or an answer cannot be made durable (its error; ErrFenced when another
// instance took over). No offset is committed: the ledger is where a
// restart reads on from, so the answers with noise and the offsets they
// cover are made durable by one write. Requests after the last one
// answered with noise are read again after a restart; their responses
// have no noise and come out the same.
func (s *Stage) serveQueries(ctx context.Context, log *slog.Logger) error {
	s.mu.Lock()
	from := s.rel.RequestNext()
	s.mu.Unlock()
	if from == 0 {
		from = kafka.FirstOffset
	}
	r, err := s.cfg.Conn.NewPartitionReader(s.cfg.RequestsTopic, 0, from)
	if err != nil {
		return fmt.Errorf("requests %s: %w", s.cfg.RequestsTopic, err)
	}
	defer r.Close()
	log = log.With("topic", s.cfg.RequestsTopic)
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read requests %s: %w", s.cfg.RequestsTopic, err)
		}
		if err := s.answer(ctx, m, log); err != nil {
			return err
		}
	}
}

// answer decides one request and makes its response durable: an answer
// with noise ledger first (append, read back with no newer owner's marker
// before it, publish), as a release is; a response without noise is
// published as it is.
func (s *Stage) answer(ctx context.Context, m kafka.Message, log *slog.Logger) error {
	q, derr := schema.DecodePredictRequest(m.Value)
	if derr != nil && q.RequestID == "" {
		// Nothing to answer to: no one can be told.
		log.Warn("skipping a request without a request id", "offset", m.Offset, "err", clip(derr.Error(), maxReason))
		return nil
	}
	if len(q.RequestID) > schema.MaxRequestIDBytes {
		// No querier's id: a response echoes it twice, and must fit in a
		// record.
		log.Warn("skipping a request whose request id is too long to answer", "offset", m.Offset,
			"request_id_bytes", len(q.RequestID), "max", schema.MaxRequestIDBytes, "request_id_prefix", clip(q.RequestID, 64))
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// As a window's release: an answer that has started finishes, so a
	// clean stop leaves nothing for Recover.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if s.epoch == "" {
		return fmt.Errorf("%w: this instance does not own the release stage", ErrFenced)
	}
	a, err := s.rel.Answer(q, derr, m.Offset, s.cfg.Now())
	if err != nil {
		return err
	}
	if a.Duplicate {
		log.Info("request already answered: its answer is on the responses topic", "request_id", q.RequestID, "offset", m.Offset)
		return nil
	}
	pub := kafka.Message{Key: []byte(a.Response.RequestID), Value: a.Payload}
	if a.Charge != nil {
		id := a.Charge.ReleaseID
		s.failpoint(FailpointAnswerBeforeLedger, pub)
		ps := s.streams[a.Charge.Stream]
		if err := s.ledger.WriteMessages(ctx, ledger.ChargeMessage(a.Charge.Stream, a.Ledger, s.epoch)); err != nil {
			return fmt.Errorf("append %s to the ledger: %w (nothing was published; the request is answered after a restart)", id, err)
		}
		s.failpoint(FailpointAnswerLedgerAppended, pub)
		if err := s.confirm(ctx, id, 0, [32]byte{}); err != nil {
			return err
		}
		if err := s.responses.WriteMessages(ctx, pub); err != nil {
			return fmt.Errorf("publish the answer to %s: %w (it is in the ledger and will be republished at start)", id, err)
		}
		s.failpoint(FailpointAnswerPublished, pub)
		s.cfg.Metrics.Releases.WithLabelValues(a.Charge.Stream, a.Charge.Release, "answer").Inc()
		return s.publishState(ctx, ps, a.Charge.Period)
	}
	if err := s.responses.WriteMessages(ctx, pub); err != nil {
		return fmt.Errorf("publish the response to %s: %w", a.Response.RequestID, err)
	}
	log.Info("request not answered", "request_id", a.Response.RequestID, "status", a.Response.Status, "reason", a.Response.Reason)
	return nil
}
