// Package kind is the seam between dpstream's stages and its release kinds.
//
// A release kind (count, sum, mean, histogram, density,
// randomized_response, regression) is one package under kind/ that a
// newcomer can read top to bottom: its configuration keys with their
// documentation and checks (config.KindSpec, part of Kind), its
// calibration from the configuration alone and the charges the accountant
// records (Plan), the exact statistic the accumulate stage keeps per
// window and partition (Statistic, Accumulator), how partials merge and
// the mechanism turns them into the published fields (Plan.Merge,
// Plan.Release), its per-instance DP rules (Plan.PDP), how a published
// release is drawn in a terminal (Renderer) and, for a release that keeps
// state across windows and restarts (continual running totals, prediction
// models), that state: the one capability Stateful, whose State decides the
// release's windows, makes what they need durable and rebuilds itself on a
// restart (state.go). Each kind package registers
// itself once, from an init function, and the stages, the plan, the
// configuration, the CLI and the schema know kinds only through these
// interfaces and the registry, in the manner of database/sql/driver and
// image.RegisterFormat: a blank import of kind/all links every kind in.
// ARCHITECTURE.md walks through adding a kind.
//
// A kind's guarantees are those of the mechanisms it runs (package
// mechanism and its subpackages), under the add/remove-one-privacy-unit
// relation of SPEC section 0: the accumulate stage keeps at most L events
// of a unit per window, chosen by their order alone, before any event
// reaches a kind's statistic, which clamps each value to its configured
// bounds; and a kind's charges depend on the configuration alone (SPEC
// section 1), so the accountant can record them before any data is looked
// at. Nothing under kind/ imports Kafka.
package kind

import (
	"fmt"
	"sort"
	"sync"

	"github.com/dpstream/dpstream/accountant"
	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Kind is one release kind. Its methods see the configuration only, never
// data: what depends on data is in the Plan it returns.
type Kind interface {
	// KindSpec is the kind's configuration: its name (the value of `kind:`
	// and of the kind field of its release records), its keys with their
	// documentation, and how to decode them.
	config.KindSpec
	// Plan calibrates one configured release of stream st: the noise it
	// will add and what the accountant charges for one window of it. The
	// configuration has been validated (config.Load); an error here is a
	// calibration that cannot be met (e.g. an ε too small for its δ), and
	// is reported against the release's line.
	Plan(st *config.Stream, r config.Release) (Plan, error)
}

// Plan is one calibrated release: everything the stages do with a release
// of its kind that depends on more than the configuration.
type Plan interface {
	// Charges are what one window of the release costs: the noise
	// additions (or whole mechanisms) the accountant composes, in the
	// order they are recorded in the release and its ledger charge. They
	// depend on the configuration alone.
	Charges() []Charge
	// Widest fills rel's data fields with values as long (in Avro bytes)
	// as a release of this plan can ever publish, so that a configuration
	// whose records could not be written to Kafka is refused before
	// anything runs (plan.MaxRecordBytes).
	Widest(rel *schema.Release)
	// Merge adds exactly the window's partial statistics of this release,
	// one per input partition that reported it, in partition order. An
	// error (a partial of the wrong shape, an int64 overflow) means the
	// window cannot be released, and must not be charged; Part.Partition
	// names the partial at fault.
	Merge(parts []Part) (Merged, error)
	// Release runs the mechanism on merged statistics (from Merge) with
	// noise, and fills rel's data fields (everything but the identity,
	// status and budget fields the release stage sets). Synthetic samples
	// and other post-processing draw their randomness from noise's
	// source. It returns what the release's per-instance DP certificates
	// need of the data (nil for kinds that need nothing beyond the
	// partials' unit contributions); that value is data-dependent and is
	// never published, encoded or logged (DESIGN invariant 6).
	Release(m Merged, sampler noise.Sampler, rel *schema.Release) (Fit, error)

	// Fields are the event fields the release reads, its own first (the
	// field that names the release's value: a histogram's first field, a
	// regression's target); none for a count. The accumulate stage puts
	// the first field's value at the release's own index among an event's
	// values and the others after every release's, and tells Statistic
	// where.
	Fields() []Field
	// Statistic returns the release's exact statistic for events whose
	// value of Fields()[j] is at index at[j] of the event's values. An
	// error is a shape the statistic cannot hold (configuration validation
	// and calibration reject those before).
	Statistic(at []int) (Statistic, error)
	// Norms is the layout of the release's per-unit contributions, the
	// same as its Statistic's: the release stage reads them with it.
	Norms() Norms
	// PDP returns the release's charges, in the order of Charges, as
	// per-instance DP charges a unit for them (an error for a charge the
	// kind has no per-instance rule for).
	PDP() ([]PDPComponent, error)

	// Components are the calibrated noise additions of the release, with
	// their expected errors, in the order of Charges; empty for a release
	// whose charge is not a list of noise additions (pcls).
	Components() []noise.Component
	// Describe says what the release computes, for `dpstream explain`
	// (e.g. "histogram 15 bins on [0, 30]").
	Describe() string
	// Accuracy says how far a released value is expected to be from the
	// exact one, for `dpstream explain` (e.g. "2.1 per bin").
	Accuracy() string
	// Notes are warnings about settings whose effect explain's table
	// cannot show, one line each (none for most releases).
	Notes() []string
}

// Merged is a window's merged exact statistics of one release, as its
// kind's Merge returns them and its Release reads them; only that kind
// looks inside.
type Merged any

// Fit is what a release computed from the data that its per-instance DP
// certificates need (see Plan.Release); only its kind looks inside, and
// the release stage uses it through PDPFit when it implements that.
type Fit any

// Part is one input partition's partial statistics of one release.
type Part struct {
	Partition int32
	Stats     schema.ReleaseStats
}

// PartError is an error of Merge in one partition's partial.
type PartError struct {
	Partition int32
	Err       error
}

// Error names the partition and the error.
func (e *PartError) Error() string { return fmt.Sprintf("partition %d: %v", e.Partition, e.Err) }

// Unwrap returns the error in the partial, for errors.Is and errors.As.
func (e *PartError) Unwrap() error { return e.Err }

// Charge is one entry of a release's charge: the mechanism the accountant
// composes and the same, as recorded in releases and the ledger (from
// which the accountant's state is rebuilt on recovery, so the two must
// describe the same curve).
type Charge struct {
	Mechanism accountant.Mechanism
	Noise     schema.NoiseComponent
}

// ComponentCharges maps calibrated noise components to charges. Every
// component is one discrete Laplace or discrete Gaussian noise addition,
// charged by its (Scale, Sensitivity); for a vector of sums with discrete
// Gaussian noise the accountant's discrete_gaussian curve is
// ρ = Sensitivity²/(2·Scale²) with the vector's L2 sensitivity, which is
// exactly the zCDP ρ its calibration composes over the independent
// coordinates, so the same mapping, and the ledger's NoiseComponent (which
// keeps Scale and Sensitivity), rebuild the charge on recovery. A component
// proved (ε, δ)-DP as a whole (noise.ApproxDP, e.g. OPS's
// posterior sample) is composed by basic composition.
func ComponentCharges(comps []noise.Component) []Charge {
	out := make([]Charge, 0, len(comps))
	for _, c := range comps {
		if c.Noise == noise.ApproxDP {
			out = append(out, Charge{
				Mechanism: accountant.Mechanism{Kind: accountant.KindApproxDP, Epsilon: c.Epsilon, Delta: c.Delta},
				Noise:     schema.NoiseComponent{Purpose: c.Purpose, Mechanism: string(c.Noise), Epsilon: c.Epsilon, Delta: c.Delta},
			})
			continue
		}
		out = append(out, Charge{
			Mechanism: accountant.Mechanism{Kind: string(c.Noise), Scale: c.Scale, Sensitivity: c.Sensitivity},
			Noise:     schema.NoiseComponent{Purpose: c.Purpose, Mechanism: string(c.Noise), Sensitivity: c.Sensitivity, Scale: c.Scale, Epsilon: c.Epsilon, Delta: c.Delta},
		})
	}
	return out
}

// Wide returns n zeros: Avro encodes every double in 8 bytes, so a slice of
// n doubles is as wide as any (for Plan.Widest).
func Wide(n int) []float64 { return make([]float64, n) }

var (
	mu    sync.RWMutex
	kinds = map[string]Kind{}
)

// Register makes a kind available by its name. It is meant to be called
// from the init function of the kind's package; registering two kinds of
// one name, or an empty name, is a programming error and panics.
func Register(k Kind) {
	mu.Lock()
	defer mu.Unlock()
	name := k.Name()
	if name == "" {
		panic("kind: Register of a kind without a name")
	}
	if _, dup := kinds[name]; dup {
		panic("kind: Register called twice for kind " + name)
	}
	kinds[name] = k
	config.RegisterKind(k)
}

// Lookup returns the registered kind of that name.
func Lookup(name string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Names returns the names of the registered kinds, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
