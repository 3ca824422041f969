package schema

import "fmt"

// Ledger record types of a checkpoint (LedgerTypeHeader): the checkpoint
// record itself (dpstream.LedgerCheckpoint) and its parts 1..n-1
// (dpstream.LedgerChunk records whose ReleaseID is CheckpointPartID).
const (
	LedgerTypeCheckpoint     = "checkpoint"
	LedgerTypeCheckpointPart = "checkpoint_part"
	// CheckpointPartID is the ReleaseID of a checkpoint part's LedgerChunk
	// record: never a release id (names cannot be empty).
	CheckpointPartID = "/checkpoint"
)

// LedgerCheckpoint is the ledger record of a checkpoint (schema
// dpstream.LedgerCheckpoint): the state of one ledger partition as of
// offset Basis, in Parts parts; Payload is part 0. Package internal/ledger
// writes, validates and restores it.
type LedgerCheckpoint struct {
	Epoch      string `json:"epoch"`
	Owner      string `json:"owner"`
	At         int64  `json:"at"`
	Partition  int32  `json:"partition"`
	Partitions int32  `json:"partitions"`
	Basis      int64  `json:"basis"`
	Parts      int32  `json:"parts"`
	Digest     []byte `json:"digest"`
	Payload    []byte `json:"payload"`
}

// EncodeLedgerCheckpoint encodes c as binary Avro with schema
// dpstream.LedgerCheckpoint.
func EncodeLedgerCheckpoint(c LedgerCheckpoint) ([]byte, error) {
	cs, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(cs.ledgerCheckpoint, "LedgerCheckpoint", map[string]any{
		"epoch": c.Epoch, "owner": c.Owner, "at": c.At, "partition": c.Partition, "partitions": c.Partitions,
		"basis": c.Basis, "parts": c.Parts, "digest": nonNil(c.Digest), "payload": nonNil(c.Payload),
	})
}

// DecodeLedgerCheckpoint decodes binary Avro written by
// EncodeLedgerCheckpoint.
func DecodeLedgerCheckpoint(b []byte) (LedgerCheckpoint, error) {
	cs, err := codecs()
	if err != nil {
		return LedgerCheckpoint{}, err
	}
	r, err := decode(cs.ledgerCheckpoint, "LedgerCheckpoint", b)
	if err != nil {
		return LedgerCheckpoint{}, err
	}
	c := LedgerCheckpoint{Epoch: r.str("epoch"), Owner: r.str("owner"), At: r.millis("at"), Partition: r.int("partition"),
		Partitions: r.int("partitions"), Basis: r.long("basis"), Parts: r.int("parts"), Digest: r.bytes("digest"), Payload: r.bytes("payload")}
	if err := r.error(); err != nil {
		return LedgerCheckpoint{}, fmt.Errorf("schema: decode LedgerCheckpoint: %w", err)
	}
	return c, nil
}

// CheckpointState is what a checkpoint summarizes of the ledger partition
// before its basis (schema dpstream.CheckpointState). RESTRICTED like the
// ledger: Releaser holds pre-noise data.
type CheckpointState struct {
	Marker  LedgerEpoch    `json:"marker"`
	Starts  []StreamStart  `json:"starts"`
	Latest  []StreamLatest `json:"latest"`
	Witness []TopicOffset  `json:"witnesses"`
	// Releaser is the release stage's state (EncodeReleaserState).
	Releaser []byte `json:"releaser"`
}

// StreamLatest is a stream's latest window start with a valid charge.
type StreamLatest struct {
	Stream      string `json:"stream"`
	WindowStart int64  `json:"window_start"`
}

// TopicOffset is an offset of one partition of a topic.
type TopicOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// EncodeCheckpointState encodes s as binary Avro with schema
// dpstream.CheckpointState.
func EncodeCheckpointState(s CheckpointState) ([]byte, error) {
	cs, err := codecs()
	if err != nil {
		return nil, err
	}
	starts := make([]any, len(s.Starts))
	for i, x := range s.Starts {
		starts[i] = map[string]any{"stream": x.Stream, "start": x.Start, "source": x.Source, "at": x.At}
	}
	latest := make([]any, len(s.Latest))
	for i, x := range s.Latest {
		latest[i] = map[string]any{"stream": x.Stream, "window_start": x.WindowStart}
	}
	wit := make([]any, len(s.Witness))
	for i, x := range s.Witness {
		wit[i] = map[string]any{"topic": x.Topic, "partition": x.Partition, "offset": x.Offset}
	}
	return encode(cs.checkpointState, "CheckpointState", map[string]any{
		"marker":    map[string]any{"epoch": s.Marker.Epoch, "owner": s.Marker.Owner, "at": s.Marker.At},
		"starts":    starts,
		"latest":    latest,
		"witnesses": wit,
		"releaser":  nonNil(s.Releaser),
	})
}

// DecodeCheckpointState decodes binary Avro written by
// EncodeCheckpointState.
func DecodeCheckpointState(b []byte) (CheckpointState, error) {
	cs, err := codecs()
	if err != nil {
		return CheckpointState{}, err
	}
	r, err := decode(cs.checkpointState, "CheckpointState", b)
	if err != nil {
		return CheckpointState{}, err
	}
	var s CheckpointState
	if m := r.record("marker"); m != nil {
		s.Marker = LedgerEpoch{Epoch: m.str("epoch"), Owner: m.str("owner"), At: m.millis("at")}
	}
	for _, x := range r.records("starts") {
		s.Starts = append(s.Starts, StreamStart{Stream: x.str("stream"), Start: x.millis("start"), Source: x.str("source"), At: x.millis("at")})
	}
	for _, x := range r.records("latest") {
		s.Latest = append(s.Latest, StreamLatest{Stream: x.str("stream"), WindowStart: x.long("window_start")})
	}
	for _, x := range r.records("witnesses") {
		s.Witness = append(s.Witness, TopicOffset{Topic: x.str("topic"), Partition: x.int("partition"), Offset: x.long("offset")})
	}
	s.Releaser = r.bytes("releaser")
	if err := r.error(); err != nil {
		return CheckpointState{}, fmt.Errorf("schema: decode CheckpointState: %w", err)
	}
	return s, nil
}

// ReleaserState is the release stage's decisions so far for the streams of
// one ledger partition (schema dpstream.ReleaserState), as a checkpoint
// keeps them. RESTRICTED: run logs and model states are pre-noise data.
type ReleaserState struct {
	RequestNext int64         `json:"request_next"`
	Streams     []StreamBooks `json:"streams"`
}

// StreamBooks is one stream's part of a ReleaserState.
type StreamBooks struct {
	Stream   string          `json:"stream"`
	Accounts []PeriodAccount `json:"accounts"`
	Releases []ReleaseBooks  `json:"releases"`
}

// AccountState is an accountant.Account's fields.
type AccountState struct {
	Curve         []float64 `json:"curve"`
	Pure          float64   `json:"pure"`
	AllPure       bool      `json:"all_pure"`
	ApproxEpsilon float64   `json:"approx_epsilon"`
	ApproxDelta   float64   `json:"approx_delta"`
	Charges       int64     `json:"charges"`
	Refused       int64     `json:"refused"`
}

// PeriodAccount is a stream's account of one budget period, the account of
// its answers alone (Queries, nil when none), and its capacity-bounded
// figures.
type PeriodAccount struct {
	Period    int64         `json:"period"`
	Account   AccountState  `json:"account"`
	Queries   *AccountState `json:"queries,omitempty"`
	KL        float64       `json:"kl"`
	LinearKL  float64       `json:"linear_kl"`
	WithoutKL int64         `json:"without_kl"`
}

// ReleaseBooks is one release's part of a ReleaserState: its high-water
// mark (Decided, nil when no window was decided) and, for a release whose
// kind keeps state across windows and restarts (kind.Stateful), that
// state in the kind's own encoding (State, kind.State.Encode; nil when it
// keeps none).
//
// Run and Model are LEGACY: checkpoints of schema v1 (written before State
// existed) hold a continual release's horizon or a prediction release's
// models there. They are still decoded, and the kinds read them
// (kind.State.Decode), but nothing writes them any more.
type ReleaseBooks struct {
	Release string      `json:"release"`
	Decided *int64      `json:"decided,omitempty"`
	Run     *RunState   `json:"run,omitempty"`
	Model   *ModelState `json:"model,omitempty"`
	State   []byte      `json:"state,omitempty"`
}

// RunState is LEGACY (checkpoints of schema v1): a continual release's
// current horizon, its charge (or refusal) and the step logs of its
// windows so far, from which the run is replayed.
type RunState struct {
	Horizon int64            `json:"horizon"`
	Charged bool             `json:"charged"`
	Refused bool             `json:"refused"`
	Period  int64            `json:"period"`
	Charges []NoiseComponent `json:"charges"`
	Logs    []RunLog         `json:"logs"`
}

// RunLog is LEGACY (checkpoints of schema v1): one window's step log of a
// continual release, PRE-NOISE DATA.
type RunLog struct {
	First  int32   `json:"first"`
	X      []int64 `json:"x"`
	Z      []int64 `json:"z"`
	Factor string  `json:"factor"`
}

// ModelState is LEGACY (checkpoints of schema v1): a prediction release's
// current models, the window that trained them, its budget period, the
// model state and the answers given from them.
type ModelState struct {
	Window   int64   `json:"window"`
	Period   int64   `json:"period"`
	State    []int64 `json:"state"`
	Answered int64   `json:"answered"`
}

func accountToNative(a AccountState) map[string]any {
	return map[string]any{"curve": doublesToNative(a.Curve), "pure": a.Pure, "all_pure": a.AllPure,
		"approx_epsilon": a.ApproxEpsilon, "approx_delta": a.ApproxDelta, "charges": a.Charges, "refused": a.Refused}
}

func accountFromNative(r *nativeRecord) AccountState {
	return AccountState{Curve: r.doubles("curve"), Pure: r.double("pure"), AllPure: r.boolean("all_pure"),
		ApproxEpsilon: r.double("approx_epsilon"), ApproxDelta: r.double("approx_delta"), Charges: r.long("charges"), Refused: r.long("refused")}
}

// EncodeReleaserState encodes s as binary Avro with schema
// dpstream.ReleaserState.
func EncodeReleaserState(s ReleaserState) ([]byte, error) {
	cs, err := codecs()
	if err != nil {
		return nil, err
	}
	return encode(cs.releaserState, "ReleaserState", releaserStateToNative(s))
}

// releaserStateToNative is s as goavro's native map (the legacy v1 codec
// reads the same map, without the state fields).
func releaserStateToNative(s ReleaserState) map[string]any {
	streams := make([]any, len(s.Streams))
	for i, st := range s.Streams {
		accts := make([]any, len(st.Accounts))
		for j, a := range st.Accounts {
			var q any
			if a.Queries != nil {
				q = map[string]any{"dpstream.AccountState": accountToNative(*a.Queries)}
			}
			accts[j] = map[string]any{"period": a.Period, "account": accountToNative(a.Account), "queries": q,
				"kl": a.KL, "linear_kl": a.LinearKL, "without_kl": a.WithoutKL}
		}
		rels := make([]any, len(st.Releases))
		for j, rb := range st.Releases {
			m := map[string]any{"release": rb.Release, "decided": nil, "run": nil, "model": nil, "state": nonNil(rb.State)}
			if rb.Decided != nil {
				m["decided"] = map[string]any{"long": *rb.Decided}
			}
			if r := rb.Run; r != nil {
				logs := make([]any, len(r.Logs))
				for k, l := range r.Logs {
					logs[k] = map[string]any{"first": l.First, "x": longsToNative(l.X), "z": longsToNative(l.Z), "factor": l.Factor}
				}
				m["run"] = map[string]any{"dpstream.RunState": map[string]any{"horizon": r.Horizon, "charged": r.Charged, "refused": r.Refused,
					"period": r.Period, "charges": noiseToNative(r.Charges), "logs": logs}}
			}
			if md := rb.Model; md != nil {
				m["model"] = map[string]any{"dpstream.ModelState": map[string]any{"window": md.Window, "period": md.Period,
					"state": longsToNative(md.State), "answered": md.Answered}}
			}
			rels[j] = m
		}
		streams[i] = map[string]any{"stream": st.Stream, "accounts": accts, "releases": rels}
	}
	return map[string]any{"request_next": s.RequestNext, "streams": streams}
}

// DecodeReleaserState decodes binary Avro written by EncodeReleaserState,
// or by a version before the kinds' state was appended to ReleaseBooks
// (schema/legacy/releaser_state_v1.avsc), whose releases then have no
// State and may have the legacy Run and Model.
func DecodeReleaserState(b []byte) (ReleaserState, error) {
	cs, err := codecs()
	if err != nil {
		return ReleaserState{}, err
	}
	// As for ledger charges: a v1 state fails to decode with v2 (its
	// releases lack the state field, and a v2 state has bytes left over
	// under v1), so the newest schema that reads it exactly is its own.
	version := 2
	r, err := decode(cs.releaserState, "ReleaserState", b)
	if err != nil {
		r1, err1 := decode(cs.releaserStateV1, "ReleaserState", b)
		if err1 != nil {
			return ReleaserState{}, err
		}
		r, version = r1, 1
	}
	s := ReleaserState{RequestNext: r.long("request_next")}
	for _, st := range r.records("streams") {
		sb := StreamBooks{Stream: st.str("stream")}
		for _, a := range st.records("accounts") {
			pa := PeriodAccount{Period: a.long("period"), KL: a.double("kl"), LinearKL: a.double("linear_kl"), WithoutKL: a.long("without_kl")}
			if ar := a.record("account"); ar != nil {
				pa.Account = accountFromNative(ar)
			}
			if q := a.union("queries", "dpstream.AccountState"); q != nil {
				qa := accountFromNative(q)
				pa.Queries = &qa
			}
			sb.Accounts = append(sb.Accounts, pa)
		}
		for _, rb := range st.records("releases") {
			x := ReleaseBooks{Release: rb.str("release")}
			if d, ok := rb.optLong("decided"); ok {
				x.Decided = &d
			}
			if run := rb.union("run", "dpstream.RunState"); run != nil {
				rs := &RunState{Horizon: run.long("horizon"), Charged: run.boolean("charged"), Refused: run.boolean("refused"),
					Period: run.long("period"), Charges: run.noise("charges")}
				for _, l := range run.records("logs") {
					rs.Logs = append(rs.Logs, RunLog{First: l.int("first"), X: l.longs("x"), Z: l.longs("z"), Factor: l.str("factor")})
				}
				x.Run = rs
			}
			if md := rb.union("model", "dpstream.ModelState"); md != nil {
				x.Model = &ModelState{Window: md.long("window"), Period: md.long("period"), State: md.longs("state"), Answered: md.long("answered")}
			}
			if version >= 2 {
				if x.State = rb.bytes("state"); len(x.State) == 0 {
					x.State = nil
				}
			}
			sb.Releases = append(sb.Releases, x)
		}
		s.Streams = append(s.Streams, sb)
	}
	if err := r.error(); err != nil {
		return ReleaserState{}, fmt.Errorf("schema: decode ReleaserState: %w", err)
	}
	return s, nil
}
