package grouped

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/schema"
)

// Statistic is the exact per-key statistic of one window: for every key,
// the distinct units, the events counted and (for a sum or a mean) the
// fixed-point sum of their clamped values. It bounds each unit's
// contribution by the unit's own events in offset order alone: the first
// MaxKeys distinct keys of its kept events, and in each its first PerKey
// events; its other events are not counted by this release (they may be
// by others). Removing a unit therefore changes no other unit's counted
// events (the neighbouring relation of mechanism/keyed).
//
// Memory per window: one map entry per open key (the key, three int64s
// and the map's overhead, about 100 bytes beside the key's own bytes) and
// per unit its counted keys (at most MaxKeys).
type Statistic struct {
	// KeyAt and ValueAt are the indices of the key field (in the event's
	// keys) and the value field (in its values; −1 for a count).
	KeyAt, ValueAt int
	// MaxKeys and PerKey are L0 and c.
	MaxKeys, PerKey int
	// Quantizer turns a value into its fixed-point units (sum, mean).
	Quantizer aggregate.Quantizer
	// Lo and Hi are the value's bounds, for the clamped count.
	Lo, Hi float64
	// Counted says the per-unit norms include the unit's counted events
	// (count, count_units, mean; not a sum's).
	Counted bool
}

// NewWindow returns the empty statistic of a window.
func (s *Statistic) NewWindow() kind.Accumulator {
	return &window{s: s, groups: map[string]*group{}}
}

// Norms is the layout of a unit's contribution (kind.UnitNorms): with
// e_j the unit's counted events in key j and s_j its sum there (value
// scale, centered for a mean), [Σ_j e_j, √Σ_j e_j²] when Counted, then
// [Σ_j |s_j|, √Σ_j s_j²] for a sum or a mean. Adding or removing the unit
// changes exactly those keys' statistics by exactly those amounts (its
// counted events are decided by its own events alone), so they are its
// per-instance L1 and L2 sensitivities (before rounding to a noise grid,
// which kind.GridSlack adds).
func (s *Statistic) Norms() kind.Norms {
	n := 0
	if s.Counted {
		n += 2
	}
	if s.ValueAt >= 0 {
		n += 2
	}
	return kind.Norms{Head: n}
}

type group struct{ units, count, sum int64 }

// unitKeys are one unit's counted keys in a window and its events counted
// in each.
type unitKeys struct {
	keys   []string
	counts []int
	sums   []int64 // the unit's Σ units per key (sum, mean)
}

type window struct {
	s       *Statistic
	groups  map[string]*group
	units   []unitKeys // by unit index
	events  int64      // events counted
	clamped int64
	// k is the units of the value Check accepted last, for Add.
	k int64
}

// Check quantizes the value and refuses an event whose key's exact sum
// would overflow int64 (which needs more than aggregate.MaxSumEvents
// events in one key of one window). It refuses a missing key, which the
// stage's extractor never produces.
func (w *window) Check(values []float64, keys []string) error {
	s := w.s
	if s.KeyAt >= len(keys) {
		return errors.New("key missing")
	}
	w.k = 0
	if s.ValueAt < 0 {
		return nil
	}
	if s.ValueAt >= len(values) {
		return errors.New("value missing")
	}
	k, err := s.Quantizer.Units(values[s.ValueAt])
	if err != nil {
		return err
	}
	if g := w.groups[keys[s.KeyAt]]; g != nil {
		if next := g.sum + k; (k > 0 && next < g.sum) || (k < 0 && next > g.sum) {
			return fmt.Errorf("the exact sum of key %q overflows int64 (%d + %d units) after %d events; "+
				"sums are exact up to %d events per key and window: use shorter windows or more partitions",
				keys[s.KeyAt], g.sum, k, g.count, int64(aggregate.MaxSumEvents))
		}
	}
	w.k = k
	return nil
}

// Add counts the event in its key unless its unit already counts MaxKeys
// other keys, or PerKey events in this one.
func (w *window) Add(values []float64, keys []string, unit int, _ bool) error {
	s := w.s
	key := keys[s.KeyAt]
	for len(w.units) <= unit {
		w.units = append(w.units, unitKeys{})
	}
	u := &w.units[unit]
	j := slices.Index(u.keys, key)
	if j < 0 {
		if len(u.keys) >= s.MaxKeys {
			return nil
		}
		u.keys = append(u.keys, key)
		u.counts = append(u.counts, 0)
		u.sums = append(u.sums, 0)
		j = len(u.keys) - 1
	}
	if u.counts[j] >= s.PerKey {
		return nil
	}
	u.counts[j]++
	u.sums[j] += w.k // cannot overflow: kind.MaxUnitEvents events of at most 2^30 units
	g := w.groups[key]
	if g == nil {
		g = &group{}
		w.groups[key] = g
	}
	if u.counts[j] == 1 {
		g.units++
	}
	g.count++
	g.sum += w.k
	w.events++
	if s.ValueAt >= 0 {
		if v := values[s.ValueAt]; v < s.Lo || v > s.Hi {
			w.clamped++
		}
	}
	return nil
}

// Stats writes the groups, sorted by key; Count is the events counted.
func (w *window) Stats(rs *schema.ReleaseStats) {
	rs.Count, rs.Clamped = w.events, w.clamped
	keys := make([]string, 0, len(w.groups))
	for k := range w.groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	rs.Groups = make([]schema.GroupStats, len(keys))
	for i, k := range keys {
		g := w.groups[k]
		rs.Groups[i] = schema.GroupStats{Key: k, Units: g.units, Count: g.count}
		if w.s.ValueAt >= 0 {
			rs.Groups[i].Sums = []int64{g.sum}
		}
	}
}

// AppendNorms appends unit's contribution (layout Norms).
func (w *window) AppendNorms(buf []float64, unit, _ int) ([]float64, error) {
	// A unit's first event always counts (it has no key yet), so every
	// unit added has a key.
	if unit < 0 || unit >= len(w.units) || len(w.units[unit].keys) == 0 {
		return nil, fmt.Errorf("no contribution of unit %d", unit)
	}
	u := w.units[unit]
	if w.s.Counted {
		var l1, sq float64
		for _, c := range u.counts {
			l1 += float64(c)
			sq += float64(c) * float64(c)
		}
		buf = append(buf, l1, math.Sqrt(sq))
	}
	if w.s.ValueAt >= 0 {
		q := w.s.Quantizer.Quantum()
		var l1, sq float64
		for _, k := range u.sums {
			v := float64(k) * q
			l1 += math.Abs(v)
			sq += v * v
		}
		buf = append(buf, l1, math.Sqrt(sq))
	}
	return buf, nil
}

// DropUnits keeps the units' keys: they bound contributions, which the
// release needs whether or not the window carries per-unit norms.
func (w *window) DropUnits() {}

// Merged is a window's merged groups, sorted by key.
type Merged []schema.GroupStats

// Merge adds the partials' groups key by key, exactly. A partial whose
// groups are not sorted by distinct keys, whose counts are impossible
// (negative, fewer events than units), or whose sums have another length
// than sums, is refused, as is a total that overflows int64.
func Merge(parts []kind.Part, sums int) (Merged, error) {
	n := 0
	for _, p := range parts {
		gs := p.Stats.Groups
		for i, g := range gs {
			bad := func(format string, args ...any) error {
				return &kind.PartError{Partition: p.Partition, Err: fmt.Errorf("group %d (%q): "+format, append([]any{i, g.Key}, args...)...)}
			}
			switch {
			case i > 0 && strings.Compare(gs[i-1].Key, g.Key) >= 0:
				return nil, bad("keys not sorted and distinct (after %q)", gs[i-1].Key)
			case g.Units < 1 || g.Count < g.Units:
				return nil, bad("%d units and %d events", g.Units, g.Count)
			case len(g.Sums) != sums:
				return nil, bad("%d sums, want %d", len(g.Sums), sums)
			case len(g.Cells) != 0:
				return nil, bad("%d cells, want none", len(g.Cells))
			}
		}
		n += len(gs)
	}
	all := make([]schema.GroupStats, 0, n)
	for _, p := range parts {
		all = append(all, p.Stats.Groups...)
	}
	slices.SortStableFunc(all, func(a, b schema.GroupStats) int { return strings.Compare(a.Key, b.Key) })
	out := Merged(make([]schema.GroupStats, 0, len(all)))
	for _, g := range all {
		if len(out) == 0 || out[len(out)-1].Key != g.Key {
			g.Sums = slices.Clone(g.Sums)
			out = append(out, g)
			continue
		}
		last := &out[len(out)-1]
		var ok1, ok2 bool
		last.Units, ok1 = add(last.Units, g.Units)
		last.Count, ok2 = add(last.Count, g.Count)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("key %q: the merged counts overflow int64", g.Key)
		}
		for i := range last.Sums {
			var ok bool
			if last.Sums[i], ok = add(last.Sums[i], g.Sums[i]); !ok {
				return nil, fmt.Errorf("key %q: the merged sum overflows int64", g.Key)
			}
		}
	}
	return out, nil
}

func add(a, b int64) (int64, bool) {
	r := a + b
	if (b > 0 && r < a) || (b < 0 && r > a) {
		return 0, false
	}
	return r, true
}

// Find returns the group of key in m, and false when no unit reported it.
func (m Merged) Find(key string) (schema.GroupStats, bool) {
	i, ok := slices.BinarySearchFunc(m, key, func(g schema.GroupStats, k string) int { return strings.Compare(g.Key, k) })
	if !ok {
		return schema.GroupStats{Key: key}, false
	}
	return m[i], true
}
