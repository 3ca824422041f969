package kind

import (
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
)

// Totals is implemented by the plans of kinds whose window statistic is a
// vector of integers that running totals make sense of (count, sum,
// histogram): package kind/running builds a continual release on it.
type Totals interface {
	Plan
	// TotalsShape describes the vector; it depends on the configuration
	// alone.
	TotalsShape() TotalsShape
	// TotalsOf returns the window's exact vector, from the kind's merged
	// statistics (Merge), in TotalsShape().N coordinates.
	TotalsOf(m Merged) ([]int64, error)
	// FillTotals fills rel's data fields for a continual release: the
	// increments over the previous window's running totals and the
	// running totals, each with its 95% half-widths, all in the vector's
	// integer units (the kind scales them by its unit), and whatever
	// public fields the kind's releases carry (a histogram's edges).
	FillTotals(rel *schema.Release, increments, incIntervals, totals, totIntervals []float64)
}

// TotalsShape describes the integer vector of a Totals plan.
type TotalsShape struct {
	// N is the number of coordinates (1 for a count or sum).
	N int
	// L2 is the vector's L2 sensitivity in one window, in its integer
	// units: the most one unit's events of one window move it (a count's
	// L; a histogram's L2 over bins).
	L2 float64
	// Unit is the value of one integer unit (1 for counts; a sum's grid
	// step), for describing errors in the values' units.
	Unit float64
	// Layout names what each coordinate is (the kind, its bounds, bins
	// or keys, its grid): a run is resumed only under the same layout, so
	// that a configuration changed mid-horizon never adds one bin's or
	// key's counts to another's.
	Layout string
}

// PurposeContinual is the purpose of a continual release's one charge per
// horizon (a zCDP charge; kind/running).
const PurposeContinual = "continual"

// Running is implemented by plans whose release continues across windows
// (a continual release, package kind/running), for what reads their
// configuration (explain, plan.ReleaseWindows, simulate) and for audits:
// the release stage never names it. Package kind/running's plans are
// kind.Stateful, and their State keeps a Run per horizon, charges the
// plan's Charges once per horizon and budget period (at the horizon's
// first released window in each period it spans), and makes each window's
// step log durable with its ledger charge (LedgerCharge.State) so that a
// restart resumes the run exactly.
type Running interface {
	Plan
	// Horizon is T, the number of windows one charge covers. Horizons are
	// aligned to the stream's schedule start (the Unix epoch without one):
	// window w (its start minus the stream's, divided by the window size)
	// is step w mod T of horizon ⌊w/T⌋.
	Horizon() int
	// NewRun starts the state of one horizon, at step 0.
	NewRun() (Run, error)
	// Factor identifies the run's mechanism: the factorization, the noise
	// σ, the sensitivity and participation bound it was calibrated for,
	// and the coordinates' layout. A step log (Log.Factor) is replayed,
	// and a horizon's charge counts for a run, only under the same Factor:
	// a configuration changed mid-horizon starts a new run with a new
	// charge rather than continuing the old one's totals with noise
	// calibrated for other bounds.
	Factor() string
}

// Run is one horizon of a continual release. It is not safe for
// concurrent use.
type Run interface {
	// Steps is the number of the horizon's windows processed so far (the
	// next step).
	Steps() int
	// Release processes step (>= Steps(); the steps before it had no data
	// and are processed with zeros, unpublished), drawing noise from
	// sampler, and fills rel. It returns the log of the steps it took,
	// which must be made durable with the release (kind/running's State
	// writes it in the ledger charge's State). On an error the run is
	// unchanged.
	Release(m Merged, step int, sampler noise.Sampler, rel *schema.Release) (Log, error)
	// Replay applies a durable log, as Release returned it, without
	// drawing noise: the run continues exactly where the logged release
	// left it. On an error (a log that does not continue this run, or
	// made under another factorization) the run is unchanged.
	Replay(Log) error
}

// Log is what a continual release's window makes durable of its steps:
// steps First, First+1, … of the horizon, with each step's exact statistic
// X (PRE-NOISE DATA) and noise Z, step-major over the coordinates, and the
// fingerprint of the factorization that drew them.
type Log struct {
	First  int
	X, Z   []int64
	Factor string
}
