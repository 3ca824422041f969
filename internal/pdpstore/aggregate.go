package pdpstore

import (
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"slices"

	"github.com/dpstream/dpstream/schema"
)

// The histogram of a stream's cumulative ε, from which a window summary's
// cumulative quantiles are read (see the package doc, "Per-window work").

const (
	// pdpHistBits is how many mantissa bits of a cumulative ε the
	// histogram's bucket keeps: 2^7 buckets per power of two.
	pdpHistBits  = 7
	pdpHistShift = 52 - pdpHistBits
)

// QuantileError is the relative error of the cumulative quantiles of a
// window summary (CumulativeP50, P90, P99), which are read off a
// histogram of the units' ε with 2^7 buckets per power of two: each
// reported q̂ is the upper edge of the bucket that holds the exact
// nearest-rank quantile q, capped at the exact maximum, so
//
//	q ≤ q̂ ≤ q·(1 + QuantileError)   (q̂ = q when q = 0 or q is a bucket edge)
//
// for every q ≥ 2^-1022. A reported quantile is therefore never below the
// exact one: it stays a valid upper bound on the ε of the units it
// describes. CumulativeMax and CumulativeUnits are exact.
const QuantileError = 1.0 / (1 << pdpHistBits)

// histKey returns the histogram bucket of a cumulative ε ≥ 0: bucket 0
// holds exactly 0, and bucket k ≥ 1 the ε in (histEdge(k−1), histEdge(k)].
// For positive floats the bit pattern orders like the value, so keeping
// the sign, the exponent and the top pdpHistBits mantissa bits of ε − 1ulp
// gives buckets of relative width at most 2^-pdpHistBits; +Inf (an
// account whose δ budget is used up) has a bucket of its own whose edge
// is +Inf.
func histKey(eps float64) uint32 {
	if !(eps > 0) {
		return 0
	}
	return uint32((math.Float64bits(eps)-1)>>pdpHistShift) + 1
}

// histEdge is the upper edge of bucket k: the largest ε it holds.
func histEdge(k uint32) float64 { return math.Float64frombits(uint64(k) << pdpHistShift) }

// pdpAggregate is what a stream's window summary reports about all of its
// units: their number, the largest ε, and the histogram of their ε, all at
// one δ.
type pdpAggregate struct {
	delta float64 // the δ every ε counted here is at
	units int64
	max   float64 // the largest ε ever counted (an account never shrinks)
	hist  map[uint32]int64
}

func newAggregate(delta float64) *pdpAggregate {
	return &pdpAggregate{delta: delta, hist: map[uint32]int64{}}
}

// epsilonOf returns the ε at a.delta of a unit record: its own when it was
// written at that δ, else recomputed from its account (a valid bound at
// a.delta, without the record's cap). It depends only on the record and
// a.delta, so the bucket a unit was counted in can always be found again.
func (a *pdpAggregate) epsilonOf(u schema.PDPUnit) float64 {
	if u.Delta == a.delta {
		return u.Epsilon
	}
	return AccountOf(u).Epsilon(a.delta)
}

// add counts n more (or, n < 0, fewer) units with ε eps.
func (a *pdpAggregate) add(eps float64, n int64) {
	k := histKey(eps)
	if a.hist[k] += n; a.hist[k] == 0 {
		delete(a.hist, k)
	}
	a.units += n
	if n > 0 && eps > a.max {
		a.max = eps
	}
}

// quantiles returns the nearest-rank p50, p90 and p99 (pdp.Summary's
// definition) read off the histogram, each the upper edge of its bucket
// capped at the maximum (see QuantileError), and the maximum; all 0
// without units.
func (a *pdpAggregate) quantiles() (p50, p90, p99, max float64) {
	if a.units <= 0 {
		return 0, 0, 0, 0
	}
	keys := slices.Sorted(maps.Keys(a.hist))
	out := [3]float64{}
	var seen int64
	i := 0
	for qi, p := range [3]int64{50, 90, 99} {
		rank := (p*a.units + 99) / 100 // ⌈p·n/100⌉ ≥ 1
		for i < len(keys) && seen+a.hist[keys[i]] < rank {
			seen += a.hist[keys[i]]
			i++
		}
		if i == len(keys) { // cannot happen while units = Σ hist
			out[qi] = a.max
			continue
		}
		out[qi] = math.Min(histEdge(keys[i]), a.max)
	}
	return out[0], out[1], out[2], a.max
}

// clone returns a deep copy.
func (a *pdpAggregate) clone() *pdpAggregate {
	c := *a
	c.hist = maps.Clone(a.hist)
	return &c
}

const pdpAggregateVersion = 1

// encode: version, δ, units, max, buckets, then (key, count) per bucket.
func (a *pdpAggregate) encode() []byte {
	b := make([]byte, 0, 1+8*3+4+12*len(a.hist))
	b = append(b, pdpAggregateVersion)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(a.delta))
	b = binary.BigEndian.AppendUint64(b, uint64(a.units))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(a.max))
	b = binary.BigEndian.AppendUint32(b, uint32(len(a.hist)))
	for _, k := range slices.Sorted(maps.Keys(a.hist)) {
		b = binary.BigEndian.AppendUint32(b, k)
		b = binary.BigEndian.AppendUint64(b, uint64(a.hist[k]))
	}
	return b
}

func decodeAggregate(b []byte) (*pdpAggregate, error) {
	if len(b) < 29 || b[0] != pdpAggregateVersion {
		return nil, errors.New("pdp store: malformed stream aggregate")
	}
	a := &pdpAggregate{delta: math.Float64frombits(binary.BigEndian.Uint64(b[1:])),
		units: int64(binary.BigEndian.Uint64(b[9:])), max: math.Float64frombits(binary.BigEndian.Uint64(b[17:]))}
	n := int(binary.BigEndian.Uint32(b[25:]))
	b = b[29:]
	if len(b) != 12*n {
		return nil, errors.New("pdp store: malformed stream aggregate")
	}
	a.hist = make(map[uint32]int64, n)
	for i := range n {
		a.hist[binary.BigEndian.Uint32(b[12*i:])] = int64(binary.BigEndian.Uint64(b[12*i+4:]))
	}
	return a, nil
}
