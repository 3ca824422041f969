// Package plan turns a validated configuration into what the stages run:
// every release's calibration (sensitivity, noise, scale), the mechanisms
// the accountant charges for it, and the budget arithmetic that `explain`
// prints. Calibration depends only on the configuration, never on data, so
// every charge is fixed before any event arrives (SPEC 1).
package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind"
	// The built-in kinds: every program that plans a pipeline has them.
	_ "github.com/dpstream/dpstream/kind/all"
	"github.com/dpstream/dpstream/schema"
)

// Release is one configured release, calibrated by its kind (package
// kind): the plan its kind built and the charge of one window.
type Release struct {
	Config config.Release
	// Kind is the release's calibrated plan, built by the kind the
	// configuration names.
	Kind       kind.Plan
	Mechanisms []accountant.Mechanism  // what the accountant charges per window
	Noise      []schema.NoiseComponent // the same, as recorded in releases and the ledger
	Cost       float64                 // epsilon of one window's charge alone, at the stream's delta
}

// Stream is one configured stream with its calibrated releases.
type Stream struct {
	Config   *config.Stream
	Budget   accountant.Budget
	Per      time.Duration // budget period (0: lifetime)
	Releases []Release
	// PerWindow is the epsilon (at the budget's delta) one window of all
	// releases costs; Windows is how many windows of all releases the
	// budget (or one budget period) accepts, capped at 1e6.
	PerWindow float64
	Windows   int
}

// Build calibrates every release of every stream. Errors name the file,
// line and field, like config errors; a release whose single charge
// already exceeds its stream's budget is such an error.
func Build(c *config.Config) ([]Stream, error) {
	var out []Stream
	var errs []error
	for si := range c.Streams {
		st := &c.Streams[si]
		ps := Stream{Config: st, Budget: accountant.Budget{Epsilon: st.Budget.Epsilon, Delta: st.Budget.Delta}, Per: st.Budget.Per}
		var all []accountant.Mechanism
		for ri, r := range st.Releases {
			pr, err := calibrate(st, r)
			field := fmt.Sprintf("streams[%d].releases[%d]", si, ri)
			if err != nil {
				errs = append(errs, &config.Error{Path: c.Path, Line: r.Line, Field: field, Msg: err.Error()})
				continue
			}
			if pr.Cost > ps.Budget.Epsilon*(1+1e-12) {
				errs = append(errs, &config.Error{Path: c.Path, Line: r.Line, Field: field + ".epsilon",
					Msg: fmt.Sprintf("release %q can never fit the stream budget: one window costs ε=%.4g at δ=%g (by RDP composition), the budget is ε=%g; lower this release's epsilon or raise budget.epsilon", r.Name, pr.Cost, ps.Budget.Delta, ps.Budget.Epsilon)})
				continue
			}
			ps.Releases = append(ps.Releases, pr)
			all = append(all, pr.Mechanisms...)
		}
		if len(all) > 0 {
			ps.PerWindow, _ = accountant.Cost(all, ps.Budget.Delta)
			ps.Windows = ReleaseWindows(ps.Releases, ps.Budget)
		}
		out = append(out, ps)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func calibrate(st *config.Stream, r config.Release) (Release, error) {
	k, ok := kind.Lookup(r.Kind)
	if !ok {
		return Release{}, fmt.Errorf("unknown release kind %q (registered: %s)", r.Kind, strings.Join(kind.Names(), ", "))
	}
	kp, err := k.Plan(st, r)
	if err != nil {
		return Release{}, err
	}
	pr := Release{Config: r, Kind: kp}
	for _, c := range kp.Charges() {
		pr.Mechanisms = append(pr.Mechanisms, c.Mechanism)
		pr.Noise = append(pr.Noise, c.Noise)
	}
	return finish(st, pr)
}

// finish validates pr's charges and sets its cost, and checks its record
// size.
func finish(st *config.Stream, pr Release) (Release, error) {
	for _, m := range pr.Mechanisms {
		if err := m.Validate(); err != nil {
			return Release{}, fmt.Errorf("calibration produced an invalid mechanism: %w", err)
		}
	}
	// A release whose windows are not charged (kind prediction: only its
	// answers are) costs nothing per window.
	if len(pr.Mechanisms) > 0 {
		var err error
		pr.Cost, err = accountant.Cost(pr.Mechanisms, st.Budget.Delta)
		if err != nil {
			return Release{}, err
		}
	}
	if err := checkRecordSize(st, pr); err != nil {
		return Release{}, err
	}
	return pr, nil
}

// MaxRecordBytes is the largest ledger record (which carries the release
// record, or one chunk of it) a release may need. Kafka brokers refuse
// larger messages by default (message.max.bytes ≈ 1 MiB, batch overhead
// included), and a refused ledger write stops the release stage; so a
// configuration whose records could not be written is refused before
// anything runs. A per-key release larger than this is written as chunks
// (schema.SplitRelease), each in a record of at most this size.
const MaxRecordBytes = schema.MaxRecordBytes

// checkRecordSize encodes a release and its ledger charge with arrays as
// long as pr's can ever be (Avro doubles and longs in an array take at most
// 9 bytes; values are filled with the widest encodings) and refuses
// releases whose ledger record would exceed MaxRecordBytes, unless the
// release stage would split it into chunks that each fit: a release whose
// keys and the arrays aligned with them (Release.Keys, schema.SplitRelease)
// make it too large is fine, one whose other fields, or a single key, do
// not fit in a record is refused.
func checkRecordSize(st *config.Stream, pr Release) error {
	c := pr.Config
	wide := func(n int) []float64 { return make([]float64, n) } // doubles are always 8 bytes
	rel := schema.Release{
		ReleaseID: ReleaseID(st.Name, c.Name, math.MinInt64), Stream: st.Name, Release: c.Name, Kind: c.Kind,
		Status: "budget_exhausted", Noise: pr.Noise,
		WindowStart: math.MinInt64, WindowEnd: math.MinInt64, PublishedAt: math.MinInt64,
	}
	one := 1.0
	rel.Value, rel.Interval95, rel.LocalEpsilon = &one, &one, &one
	pr.Kind.Widest(&rel)
	payload, err := schema.EncodeRelease(rel)
	if err != nil {
		return fmt.Errorf("release record: %w", err)
	}
	lc := schema.LedgerCharge{ReleaseID: rel.ReleaseID, Stream: st.Name, Release: c.Name, WindowStart: math.MinInt64,
		Period: math.MinInt64, Status: "budget_exhausted", Charges: pr.Noise, RDP: wide(len(accountant.Orders)),
		Payload: payload, At: math.MinInt64, KL: &one, LinearKL: &one} // the figures at their widest
	b, err := schema.EncodeLedgerCharge(lc)
	if err != nil {
		return fmt.Errorf("ledger record: %w", err)
	}
	if len(b) <= MaxRecordBytes {
		return nil
	}
	if len(rel.Keys) > 0 {
		limit, err := schema.LedgerPayloadLimit(lc, MaxRecordBytes)
		if err != nil {
			return fmt.Errorf("ledger record: %w", err)
		}
		err = schema.CheckSplitRelease(rel, limit)
		if err == nil {
			return nil // written as chunks that each fit
		}
		return fmt.Errorf("its records would be up to %d bytes, more than the %d that fit in a Kafka message with default broker limits, and cannot be split by key: %w; lower samples, grid_points or the number of bins, or shorten the keys", len(b), MaxRecordBytes, err)
	}
	return fmt.Errorf("its records would be up to %d bytes, more than the %d that fit in a Kafka message with default broker limits; lower samples, grid_points or the number of bins", len(b), MaxRecordBytes)
}

// WindowsUntilExhausted counts how many windows, each charging ms, the
// budget accepts (capped at 1e6).
func WindowsUntilExhausted(ms []accountant.Mechanism, b accountant.Budget) int {
	return windowsUntil(func(k int) []accountant.Mechanism {
		scaled := make([]accountant.Mechanism, len(ms))
		for i, m := range ms {
			m.Count = k
			scaled[i] = m
		}
		return scaled
	}, b)
}

// ReleaseWindows counts how many consecutive windows of releases rs the
// budget accepts (capped at 1e6). A continual release (kind.Running)
// charges once per horizon of T windows: k windows touch at most
// 1 + ⌈(k−1)/T⌉ horizons (k starting at a horizon's last window), each
// charged once; every other release charges every window.
func ReleaseWindows(rs []Release, b accountant.Budget) int {
	return windowsUntil(func(k int) []accountant.Mechanism {
		var out []accountant.Mechanism
		for _, r := range rs {
			n := k
			if rp, ok := r.Kind.(kind.Running); ok {
				t := rp.Horizon()
				n = 1 + (k-1+t-1)/t
			}
			for _, m := range r.Mechanisms {
				m.Count = n
				out = append(out, m)
			}
		}
		return out
	}, b)
}

// AnswersUntil is how many answers, each charged q (a prediction
// release's kind.Predictor.QueryCharges), the budget b pays for alone,
// capped at 1e6: queries spend the stream's budget beside its releases.
func AnswersUntil(q []accountant.Mechanism, b accountant.Budget) int {
	if len(q) == 0 {
		return 0
	}
	return windowsUntil(func(k int) []accountant.Mechanism {
		out := make([]accountant.Mechanism, len(q))
		for i, m := range q {
			m.Count = k
			out[i] = m
		}
		return out
	}, b)
}

// windowsUntil is the largest k ≤ 1e6 whose charges (of k windows) fit b,
// or 0.
func windowsUntil(charges func(k int) []accountant.Mechanism, b accountant.Budget) int {
	const limit = 1_000_000
	// Exponential then binary search over k-fold compositions: the spent
	// epsilon is monotone in k.
	fits := func(k int) bool {
		ms := charges(k)
		if len(ms) == 0 {
			return true // releases without a charge (prediction windows) cost nothing
		}
		e, err := accountant.Cost(ms, b.Delta)
		return err == nil && e <= b.Epsilon*(1+1e-12)
	}
	if !fits(1) {
		return 0
	}
	lo, hi := 1, 2
	for hi <= limit && fits(hi) {
		lo, hi = hi, hi*2
	}
	if hi > limit {
		if fits(limit) {
			return limit
		}
		hi = limit
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// ReleaseID is the id of a release of one window: stream/release/window
// start in unix ms (DESIGN invariant 1).
func ReleaseID(stream, release string, windowStart int64) string {
	return fmt.Sprintf("%s/%s/%d", stream, release, windowStart)
}

// ParseReleaseID splits a window's release id (ReleaseID) into its stream,
// release and window start. Names never contain "/" (the configuration
// refuses them), so an id of any other shape — an answer's id
// (stream/release/query/request), a key written by another tool — is not
// a window's release id: ok is false.
func ParseReleaseID(id string) (stream, release string, windowStart int64, ok bool) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", 0, false
	}
	w, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return "", "", 0, false
	}
	return parts[0], parts[1], w, true
}

// Period is the budget period a window belongs to (0 for lifetime budgets).
func (s *Stream) Period(windowStart int64) int64 {
	if s.Per <= 0 {
		return 0
	}
	per := s.Per.Milliseconds()
	q := windowStart / per
	if windowStart%per != 0 && windowStart < 0 {
		q--
	}
	return q
}
