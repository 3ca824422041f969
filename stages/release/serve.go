package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/internal/ledger"
	"github.com/dpstream/dpstream/schema"
)

// serveQueries answers the requests topic's queries (partition 0) while
// this instance owns the stage, until ctx is done (nil) or an answer
// cannot be made durable (its error; ErrFenced when another instance took
// over). It reads from the offset after the last request that was
// responded to: the later of the ledger's last answer (Releaser.RequestNext)
// and the responses topic's last response of any status (respondedNext,
// read by takeOver), so that a request told no_model, invalid or
// budget_exhausted is not decided again after a restart, when a model or
// budget may since have come and it would be answered, and charged, a
// second time. No offset is committed: the ledger and the responses topic
// are where a restart reads on from. Only the responses published after
// takeOver read the responses topic (by an owner that lost the stage
// meanwhile) can be decided again.
//
// A requests topic that ends before that offset was deleted and recreated
// (or truncated): it is read from its start, since reading past its end
// would wait for requests that never come and then skip the new topic's
// first ones. A request id answered before is not answered again
// (Releaser.Answer).
func (s *Stage) serveQueries(ctx context.Context, log *slog.Logger) error {
	s.mu.Lock()
	from := max(s.rel.RequestNext(), s.respondedNext)
	s.mu.Unlock()
	if from > 0 {
		ends, err := s.cfg.Conn.EndOffsets(ctx, s.cfg.RequestsTopic)
		switch end, ok := ends[0]; {
		case err != nil:
			log.Warn("could not read the requests topic's end; reading on from the last request responded to", "topic", s.cfg.RequestsTopic, "offset", from, "err", err)
		case ok && end < from:
			log.Warn("the requests topic ends before the last request responded to: it was recreated or truncated; reading it from its start (a request id answered before is not answered again)",
				"topic", s.cfg.RequestsTopic, "end", end, "responded_up_to", from)
			from = 0
		}
	}
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
	if s.ahead {
		return errors.New("a window's release failed: its models may not be durable, so no query is answered until the stage recovers")
	}
	a, err := s.rel.Answer(q, derr, m.Offset, s.cfg.Now())
	if err != nil {
		return err
	}
	if a.Duplicate {
		log.Info("request already answered: its answer is on the responses topic", "request_id", q.RequestID, "offset", m.Offset)
		return nil
	}
	pub := response(a.Response.RequestID, a.Payload, m.Offset)
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

// RequestOffsetHeader, on a record of the responses topic, is the offset
// of the request it responds to on the requests topic (partition 0), in
// decimal. The requests are responded to in order, so the highest one on
// the responses topic says where a restarted stage reads on from
// (serveQueries).
const RequestOffsetHeader = "dpstream-request-offset"

// response returns the responses-topic record of a response to the
// request at offset of the requests topic.
func response(requestID string, payload []byte, offset int64) kafka.Message {
	return kafka.Message{Key: []byte(requestID), Value: payload,
		Headers: []kafka.Header{{Key: RequestOffsetHeader, Value: []byte(strconv.FormatInt(offset, 10))}}}
}

// requestOffset reads a response record's RequestOffsetHeader: ok false
// for a record without it (or with a malformed one).
func requestOffset(m kafka.Message) (int64, bool) {
	for _, h := range m.Headers {
		if h.Key == RequestOffsetHeader {
			v, err := strconv.ParseInt(string(h.Value), 10, 64)
			return v, err == nil && v >= 0
		}
	}
	return 0, false
}
