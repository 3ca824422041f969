package grouped

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/quantile"
	"github.com/dpstream/dpstream/schema"
)

// Statistic is the exact per-key statistic of one window: for every key,
// the distinct units, the events counted and (for a sum or a mean) the
// fixed-point sum of their clamped values, (for a variance) their centered
// sum and centered sum of squares, or (for quantiles) their sparse leaf
// histogram. It bounds each unit's
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
	// keys; −1: every event has the key "", a release without group_by)
	// and the value field (in its values; −1 for a count).
	KeyAt, ValueAt int
	// MaxKeys and PerKey are L0 and c.
	MaxKeys, PerKey int
	// Quantizer turns a value into its fixed-point units (sum, mean).
	Quantizer aggregate.Quantizer
	// Variance, when set, keeps a variance's two sums per key (its
	// Units) in place of Quantizer's one.
	Variance *aggregate.VarianceQuantizer
	// Tree, when set, keeps each key's leaf histogram (quantiles) in place
	// of sums.
	Tree *quantile.Tree
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
	if s.ValueAt >= 0 && s.Tree == nil && s.Variance == nil {
		n += 2
	}
	return kind.Norms{Head: n}
}

type group struct {
	units, count int64
	sums         [2]int64      // the sums in use (Statistic.sums)
	cells        map[int]int64 // leaf → events (quantiles)
}

// sums is the number of sums a group keeps.
func (s *Statistic) sums() int {
	switch {
	case s.ValueAt < 0 || s.Tree != nil:
		return 0
	case s.Variance != nil:
		return 2
	}
	return 1
}

// unitKeys are one unit's counted keys in a window and its events counted
// in each.
type unitKeys struct {
	keys   []string
	counts []int
	sums   []int64 // the unit's Σ units per key (its first sum)
}

type window struct {
	s       *Statistic
	groups  map[string]*group
	units   []unitKeys // by unit index
	events  int64      // events counted
	clamped int64
	// k and leaf are the units (its sums') and the leaf of the value Check
	// accepted last, for Add.
	k    [2]int64
	leaf int
}

// key returns the event's key.
func (s *Statistic) key(keys []string) string {
	if s.KeyAt < 0 {
		return ""
	}
	return keys[s.KeyAt]
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
	w.k, w.leaf = [2]int64{}, 0
	if s.ValueAt < 0 {
		return nil
	}
	if s.ValueAt >= len(values) {
		return errors.New("value missing")
	}
	v := values[s.ValueAt]
	var err error
	switch {
	case s.Tree != nil:
		w.leaf, err = s.Tree.Leaf(v)
		return err
	case s.Variance != nil:
		w.k[0], w.k[1], err = s.Variance.Units(v)
	default:
		w.k[0], err = s.Quantizer.Units(v)
	}
	if err != nil {
		return err
	}
	if g := w.groups[s.key(keys)]; g != nil {
		for i := range s.sums() {
			if _, ok := add(g.sums[i], w.k[i]); !ok {
				return fmt.Errorf("the exact sums of key %q overflow int64 (%d + %d units) after %d events; "+
					"sums are exact up to %d events per key and window: use shorter windows or more partitions",
					s.key(keys), g.sums[i], w.k[i], g.count, int64(aggregate.MaxSumEvents))
			}
		}
	}
	return nil
}

// Add counts the event in its key unless its unit already counts MaxKeys
// other keys, or PerKey events in this one.
func (w *window) Add(values []float64, keys []string, unit int, _ bool) error {
	s := w.s
	key := s.key(keys)
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
	u.sums[j] += w.k[0] // cannot overflow: kind.MaxUnitEvents events of at most 2^30 units
	g := w.groups[key]
	if g == nil {
		g = &group{}
		w.groups[key] = g
	}
	if u.counts[j] == 1 {
		g.units++
	}
	g.count++
	for i := range s.sums() {
		g.sums[i] += w.k[i] // Check refused an overflow
	}
	if s.Tree != nil {
		if g.cells == nil {
			g.cells = map[int]int64{}
		}
		g.cells[w.leaf]++
	}
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
		if n := w.s.sums(); n > 0 {
			rs.Groups[i].Sums = slices.Clone(g.sums[:n])
		}
		if len(g.cells) > 0 {
			leaves := make([]int, 0, len(g.cells))
			for l := range g.cells {
				leaves = append(leaves, l)
			}
			slices.Sort(leaves)
			cells := make([]int64, 0, 2*len(leaves))
			for _, l := range leaves {
				cells = append(cells, int64(l), g.cells[l])
			}
			rs.Groups[i].Cells = cells
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
	if w.s.ValueAt >= 0 && w.s.Tree == nil && w.s.Variance == nil {
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

// Merge adds the partials' groups key by key, exactly (cells leaf by
// leaf). A partial whose groups are not sorted by distinct keys, whose
// counts are impossible (negative, fewer events than units), whose sums
// have another length than sums, or whose cells are not (index, count)
// pairs sorted by index with counts ≥ 1 adding up to the key's events (or
// are present when cells is false), is refused, as is a total that
// overflows int64.
func Merge(parts []kind.Part, sums int, cells bool) (Merged, error) {
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
			case !cells && len(g.Cells) != 0:
				return nil, bad("%d cells, want none", len(g.Cells))
			case cells:
				if err := checkCells(g.Cells, g.Count); err != nil {
					return nil, bad("%v", err)
				}
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
			g.Sums, g.Cells = slices.Clone(g.Sums), slices.Clone(g.Cells)
			out = append(out, g)
			continue
		}
		last := &out[len(out)-1]
		if cells {
			var err error
			if last.Cells, err = mergeCells(last.Cells, g.Cells); err != nil {
				return nil, fmt.Errorf("key %q: %w", g.Key, err)
			}
		}
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

// checkCells checks that cells are (index, count) pairs with indices
// non-negative and increasing, counts ≥ 1, adding up to count.
func checkCells(cells []int64, count int64) error {
	if len(cells)%2 != 0 {
		return fmt.Errorf("%d cell entries, not (index, count) pairs", len(cells))
	}
	var total int64
	for i := 0; i < len(cells); i += 2 {
		switch {
		case cells[i] < 0 || (i > 0 && cells[i] <= cells[i-2]):
			return fmt.Errorf("cell index %d not increasing", cells[i])
		case cells[i+1] < 1:
			return fmt.Errorf("cell %d has count %d", cells[i], cells[i+1])
		}
		var ok bool
		if total, ok = add(total, cells[i+1]); !ok {
			return errors.New("cell counts overflow int64")
		}
	}
	if total != count {
		return fmt.Errorf("cells hold %d events, the key %d", total, count)
	}
	return nil
}

// mergeCells adds two sorted (index, count) lists.
func mergeCells(a, b []int64) ([]int64, error) {
	out := make([]int64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i], a[i+1])
			i += 2
		case i >= len(a) || b[j] < a[i]:
			out = append(out, b[j], b[j+1])
			j += 2
		default:
			n, ok := add(a[i+1], b[j+1])
			if !ok {
				return nil, errors.New("merged cell count overflows int64")
			}
			out = append(out, a[i], n)
			i, j = i+2, j+2
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
