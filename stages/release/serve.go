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

// serveQueries answers the requests topic's queries (partition 0) to the
// shard's streams while this instance owns them, until ctx is done (nil)
// or an answer cannot be made durable (its error; ErrFenced when another
// instance took over). Every shard reads every request and answers those
// whose stream belongs to its partition (ledger.PartitionOf; a request
// naming no configured stream is answered by the partition its name
// hashes to), so each request is answered by one owner. It reads from the
// offset after the last request of its streams that was responded to: the
// later of the ledger's last answer (Releaser.RequestNext) and the
// responses topic's last response of any status (respondedNext, read by
// takeOver), so that a request told no_model, invalid or budget_exhausted
// is not decided again after a restart, when a model or budget may since
// have come and it would be answered, and charged, a second time. No
// offset is committed: the ledger and the responses topic are where a
// restart reads on from. Only the responses published after takeOver read
// the responses topic (by an owner that lost the stage meanwhile) can be
// decided again.
//
// A burst of requests is answered as one group commit: every answer's
// charge appended in one write, read back in one read, and every response
// published in one write.
//
// A requests topic that ends before that offset was deleted and recreated
// (or truncated): it is read from its start, since reading past its end
// would wait for requests that never come and then skip the new topic's
// first ones. A request id answered before is not answered again
// (Releaser.Answer).
func (sh *shard) serveQueries(ctx context.Context, log *slog.Logger) error {
	s := sh.s
	sh.mu.Lock()
	from := max(sh.rel.RequestNext(), sh.respondedNext)
	sh.mu.Unlock()
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
		burst := []kafka.Message{m}
		for len(burst) < maxAnswers {
			fctx, cancel := context.WithTimeout(ctx, drainWait)
			m, err := r.FetchMessage(fctx)
			cancel()
			if err != nil {
				break
			}
			burst = append(burst, m)
		}
		if err := sh.answer(ctx, burst, log); err != nil {
			return err
		}
	}
}

// maxAnswers bounds the requests answered in one group commit.
const maxAnswers = 1024

// request is one request of a burst as answer decides it.
type request struct {
	m   kafka.Message
	q   schema.PredictRequest
	err error
}

// answer decides a burst of requests and makes their responses durable:
// the answers with noise ledger first (appended in one write, read back
// with no newer owner's marker before them, published), as releases are;
// the responses without noise published with them, in request order.
func (sh *shard) answer(ctx context.Context, burst []kafka.Message, log *slog.Logger) (err error) {
	s := sh.s
	var reqs []request
	for _, m := range burst {
		q, derr := schema.DecodePredictRequest(m.Value)
		if !sh.owns(q.Stream) {
			continue // another partition's streams: its owner answers
		}
		if derr != nil && q.RequestID == "" {
			// Nothing to answer to: no one can be told.
			log.Warn("skipping a request without a request id", "offset", m.Offset, "err", clip(derr.Error(), maxReason))
			continue
		}
		if len(q.RequestID) > schema.MaxRequestIDBytes {
			// No querier's id: a response echoes it twice, and must fit
			// in a record.
			log.Warn("skipping a request whose request id is too long to answer", "offset", m.Offset,
				"request_id_bytes", len(q.RequestID), "max", schema.MaxRequestIDBytes, "request_id_prefix", clip(q.RequestID, 64))
			continue
		}
		reqs = append(reqs, request{m: m, q: q, err: derr})
	}
	if len(reqs) == 0 {
		return nil
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// As a group of windows: answers that have started finish, so a clean
	// stop leaves nothing for a takeover.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if sh.epoch == "" {
		return fmt.Errorf("%w: this instance does not own the streams of partition %d", ErrFenced, sh.p)
	}
	if sh.ahead {
		return errors.New("a release failed: its models may not be durable, so no query is answered until the stage recovers")
	}
	defer func() {
		if err != nil {
			sh.ahead = true
		}
	}()
	var pubs, charges []kafka.Message
	var charged []Answer
	want := map[string]confirmWant{}
	periods := map[string]int64{}
	for _, rq := range reqs {
		a, err := sh.rel.Answer(rq.q, rq.err, rq.m.Offset, s.cfg.Now())
		if err != nil {
			// Answers decided before it are charged: nothing of them is
			// published, and the takeover after this failure republishes
			// what reached the ledger (nothing yet: they are all lost,
			// uncharged, and decided again).
			return err
		}
		if a.Duplicate {
			log.Info("request already answered: its answer is on the responses topic", "request_id", rq.q.RequestID, "offset", rq.m.Offset)
			continue
		}
		pub := response(a.Response.RequestID, a.Payload, rq.m.Offset)
		pubs = append(pubs, pub)
		if a.Charge == nil {
			log.Info("request not answered", "request_id", a.Response.RequestID, "status", a.Response.Status, "reason", a.Response.Reason)
			continue
		}
		s.failpoint(FailpointAnswerBeforeLedger, pub)
		charges = append(charges, ledger.ChargeMessage(a.Charge.Stream, a.Ledger, sh.epoch))
		charged = append(charged, a)
		want[a.Charge.ReleaseID] = confirmWant{}
		periods[a.Charge.Stream] = max(periods[a.Charge.Stream], a.Charge.Period)
	}
	if len(charges) > 0 {
		if err := sh.ledger.WriteMessages(ctx, charges...); err != nil {
			return fmt.Errorf("append %d answers to the ledger: %w (nothing was published; the requests are answered after a restart)", len(charges), err)
		}
		sh.sinceCheckpoint += len(charges)
		for _, a := range charged {
			s.failpoint(FailpointAnswerLedgerAppended, response(a.Response.RequestID, a.Payload, a.Charge.RequestOffset))
		}
		if err := sh.confirm(ctx, want); err != nil {
			return err
		}
	}
	if len(pubs) > 0 {
		if err := s.responses.WriteMessages(ctx, pubs...); err != nil {
			return fmt.Errorf("publish %d responses: %w (the answers are in the ledger and will be republished at start)", len(pubs), err)
		}
	}
	for _, a := range charged {
		s.failpoint(FailpointAnswerPublished, response(a.Response.RequestID, a.Payload, a.Charge.RequestOffset))
		s.cfg.Metrics.Releases.WithLabelValues(a.Charge.Stream, a.Charge.Release, "answer").Inc()
	}
	return sh.publishStates(ctx, periods)
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
