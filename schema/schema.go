// Package schema owns every Avro schema of dpstream and every Avro encode and
// decode: the internal records exchanged between stages (Partial, Release,
// LedgerCharge, BudgetState), the decoders and encoders of stream input
// topics (Avro, Confluent-framed Avro, JSON) and the demo input schema
// (Trip). It is the only package that imports goavro, so that the limits
// that make decoding untrusted bytes safe are set, and tested, in one place.
//
// The .avsc files are embedded and returned by [Schemas]; nested records
// (ReleaseStats, NoiseComponent) are defined inline, so every file is a
// standalone schema that other Avro tools (kcat, Java consumers) can use.
//
// # Internal records
//
//   - The wire format is plain binary Avro of the record, with no framing
//     (no magic byte, no schema id): the topics are internal and the schemas
//     ship with the binary.
//   - Encoding is deterministic: fields are written in schema order and the
//     records contain no Avro maps, so equal structs give equal bytes. The
//     release stage relies on this to republish a ledger payload verbatim.
//   - Decoding rejects bytes left after the record, so that a record of
//     another type, or a corrupted one, is an error and not a partial read.
//   - A decoded slice field without omitempty in its JSON tag is never nil
//     (an empty array decodes to an empty slice, so `dpstream tail` prints []
//     rather than null); slice fields with omitempty decode to nil when empty.
//     Both forms encode to the same bytes.
//   - Decoded []byte values are copies and never alias the input buffer,
//     which Kafka clients may reuse.
//   - Timestamps are int64 unix milliseconds in Go and Avro longs with
//     logicalType timestamp-millis on the wire, so Avro tools show them as
//     times.
//
// # Decoding limits
//
// goavro pre-allocates an array of the length announced by a block header
// before it reads any item, and by default accepts lengths up to 2^31-1:
// five bytes of garbage then ask for a 32 GiB allocation, a fatal runtime
// error that recover cannot catch. Importing this package therefore sets
// goavro.MaxBlockCount to 65536; at 16 bytes per pre-allocated item a hostile
// header then costs at most 1 MiB before decoding fails on the missing
// items. Only the internal records contain arrays (input schemas must be
// flat records, see [NewDecoder]), and goavro's encoder splits longer arrays
// into several blocks, so no record that dpstream writes is affected.
package schema

import (
	"embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/linkedin/goavro/v2"
)

// maxBlockCount is the largest item count accepted in one Avro array block;
// see the package documentation.
const maxBlockCount = 1 << 16

func init() {
	// Set before any codec is used: package initialisation completes before
	// any caller can reach a decoder, so there is no data race with goavro's
	// readers of this variable.
	goavro.MaxBlockCount = maxBlockCount
}

//go:embed *.avsc
var avscFiles embed.FS

// Record names (Avro full names) of the embedded schemas, as used by Schemas.
const (
	NamePartial          = "dpstream.Partial"
	NameRelease          = "dpstream.Release"
	NameLedgerCharge     = "dpstream.LedgerCharge"
	NameBudgetState      = "dpstream.BudgetState"
	NamePDPUnit          = "dpstream.PDPUnit"
	NamePDPSummary       = "dpstream.PDPSummary"
	NameLedgerEpoch      = "dpstream.LedgerEpoch"
	NameStreamStart      = "dpstream.StreamStart"
	NameLedgerChunk      = "dpstream.LedgerChunk"
	NamePredictRequest   = "dpstream.PredictRequest"
	NamePredictResponse  = "dpstream.PredictResponse"
	NameLedgerCheckpoint = "dpstream.LedgerCheckpoint"
	NameCheckpointState  = "dpstream.CheckpointState"
	NameReleaserState    = "dpstream.ReleaserState"
	NameTrip             = "dpstream.demo.Trip"
)

// schemaFiles maps each record full name to its embedded file. Nested records
// (ReleaseStats, NoiseComponent) are defined inline so that every file is a
// standalone schema that other Avro tools can use as is.
var schemaFiles = map[string]string{
	NamePartial:          "partial.avsc",
	NameRelease:          "release.avsc",
	NameLedgerCharge:     "ledger_charge.avsc",
	NameBudgetState:      "budget_state.avsc",
	NamePDPUnit:          "pdp_unit.avsc",
	NamePDPSummary:       "pdp_summary.avsc",
	NameLedgerEpoch:      "ledger_epoch.avsc",
	NameStreamStart:      "ledger_start.avsc",
	NameLedgerChunk:      "ledger_chunk.avsc",
	NamePredictRequest:   "predict_request.avsc",
	NamePredictResponse:  "predict_response.avsc",
	NameLedgerCheckpoint: "ledger_checkpoint.avsc",
	NameCheckpointState:  "checkpoint_state.avsc",
	NameReleaserState:    "releaser_state.avsc",
	NameTrip:             "trip.avsc",
}

// Schemas returns the text of every embedded .avsc file keyed by the Avro full
// name of its record ("dpstream.Partial", ..., "dpstream.demo.Trip"), for the
// README and for tools. The map is a fresh copy on every call.
func Schemas() map[string]string {
	out := make(map[string]string, len(schemaFiles))
	for name, file := range schemaFiles {
		b, err := avscFiles.ReadFile(file)
		if err != nil {
			// Unreachable: schemaFiles only names files that the embed
			// pattern matched at build time (checked by the tests).
			continue
		}
		out[name] = string(b)
	}
	return out
}

// TripSchema returns the text of schema/trip.avsc, the demo input schema
// (record dpstream.demo.Trip).
func TripSchema() string {
	return Schemas()[NameTrip]
}

// internalCodecs holds the goavro codecs of the internal records.
type internalCodecs struct {
	partial, release, ledgerCharge, budgetState, pdpUnit, pdpSummary *goavro.Codec
	ledgerEpoch, streamStart, ledgerChunk                            *goavro.Codec
	predictRequest, predictResponse                                  *goavro.Codec
	ledgerCheckpoint, checkpointState, releaserState                 *goavro.Codec
	// ledgerChargeV1 … ledgerChargeV4 decode charges written before the
	// continual fields, the capacity-bounded figures, the prediction
	// fields and the kinds' state were appended; budgetStateV1 states
	// written before the figures; releaserStateV1 checkpoints written
	// before the kinds' state (DecodeLedgerCharge, DecodeBudgetState,
	// DecodeReleaserState).
	ledgerChargeV1, ledgerChargeV2, ledgerChargeV3, ledgerChargeV4, budgetStateV1 *goavro.Codec
	releaserStateV1                                                               *goavro.Codec
}

// The frozen schemas of older record versions (schema/legacy): fields are
// only ever appended, and a record is decoded with the newest schema that
// reads it exactly.
var (
	//go:embed legacy/ledger_charge_v1.avsc
	ledgerChargeV1 string
	//go:embed legacy/ledger_charge_v2.avsc
	ledgerChargeV2 string
	//go:embed legacy/ledger_charge_v3.avsc
	ledgerChargeV3 string
	//go:embed legacy/ledger_charge_v4.avsc
	ledgerChargeV4 string
	//go:embed legacy/budget_state_v1.avsc
	budgetStateV1 string
	//go:embed legacy/releaser_state_v1.avsc
	releaserStateV1 string
)

// codecs builds the internal codecs once. An error can only come from an
// invalid embedded schema, a build defect that every test catches; it is
// returned by each Encode/Decode call rather than panicking at start-up.
var codecs = sync.OnceValues(func() (*internalCodecs, error) {
	var c internalCodecs
	for _, x := range []struct {
		name string
		dst  **goavro.Codec
	}{
		{NamePartial, &c.partial},
		{NameRelease, &c.release},
		{NameLedgerCharge, &c.ledgerCharge},
		{NameBudgetState, &c.budgetState},
		{NamePDPUnit, &c.pdpUnit},
		{NamePDPSummary, &c.pdpSummary},
		{NameLedgerEpoch, &c.ledgerEpoch},
		{NameStreamStart, &c.streamStart},
		{NameLedgerChunk, &c.ledgerChunk},
		{NamePredictRequest, &c.predictRequest},
		{NamePredictResponse, &c.predictResponse},
		{NameLedgerCheckpoint, &c.ledgerCheckpoint},
		{NameCheckpointState, &c.checkpointState},
		{NameReleaserState, &c.releaserState},
	} {
		text, err := avscFiles.ReadFile(schemaFiles[x.name])
		if err != nil {
			return nil, fmt.Errorf("schema: read %s: %w", x.name, err)
		}
		if !json.Valid(text) {
			return nil, fmt.Errorf("schema: %s: invalid JSON", x.name)
		}
		codec, err := goavro.NewCodec(string(text))
		if err != nil {
			return nil, fmt.Errorf("schema: build codec %s: %w", x.name, err)
		}
		*x.dst = codec
	}
	for _, x := range []struct {
		file, text string
		dst        **goavro.Codec
	}{
		{"ledger_charge_v1.avsc", ledgerChargeV1, &c.ledgerChargeV1},
		{"ledger_charge_v2.avsc", ledgerChargeV2, &c.ledgerChargeV2},
		{"ledger_charge_v3.avsc", ledgerChargeV3, &c.ledgerChargeV3},
		{"ledger_charge_v4.avsc", ledgerChargeV4, &c.ledgerChargeV4},
		{"budget_state_v1.avsc", budgetStateV1, &c.budgetStateV1},
		{"releaser_state_v1.avsc", releaserStateV1, &c.releaserStateV1},
	} {
		codec, err := goavro.NewCodec(x.text)
		if err != nil {
			return nil, fmt.Errorf("schema: build codec of legacy/%s: %w", x.file, err)
		}
		*x.dst = codec
	}
	return &c, nil
})
