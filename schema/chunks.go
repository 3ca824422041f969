package schema

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/linkedin/goavro/v2"
)

// This file splits records too large for one Kafka record into chunks and
// joins them again, for the per-key statistics of partials
// (ReleaseStats.Groups) and releases (Release.Keys and the arrays aligned
// with them). It knows no release kind: it divides whatever a kind put in
// those fields.
//
// Guarantees, for both records:
//
//   - A record that fits is returned as it is, alone (Chunks 0): its bytes
//     are those it always had.
//   - Otherwise every chunk is a valid record of at most maxBytes bytes,
//     Chunk and Chunks set (Chunks at least 2). Chunk 0 keeps every field
//     of the record but a slice of the divided arrays; the later chunks
//     repeat the record's identity (the window for a partial, the release
//     id, status and budget fields for a release) and carry only their
//     slice. The slices are contiguous and in order, so keys sorted in the
//     record are sorted across the chunks and no key is in two chunks.
//   - Splitting is deterministic: equal records give equal chunks, so a
//     record split again after a restart gives byte-identical chunks.
//   - Join(Split(r)) encodes to the bytes of r. Join checks the chunks
//     against each other (one record, every chunk once, keys in order) and
//     says what is wrong rather than joining a mixture.
//
// Sizes are computed from the Avro encoding itself (zig-zag varints,
// length-prefixed strings, arrays in blocks of at most goavro.MaxBlockCount
// items), so the chunks are filled exactly, without encoding each one to
// measure it.

// MaxRecordBytes is the largest record value dpstream writes to its own
// topics (a partial, a release, a ledger record). Kafka brokers refuse
// larger messages by default (message.max.bytes ≈ 1 MiB, batch overhead
// included); records whose per-key statistics would exceed it are written
// as chunks (SplitPartial, SplitRelease).
const MaxRecordBytes = 900_000

// chunkFieldsRoom is the room kept for the chunk and chunks fields: a
// skeleton is measured with both 0 (one byte each) and an int takes at
// most five.
const chunkFieldsRoom = 8

// SplitPartial divides a partial larger than maxBytes (Avro-encoded) into
// chunks of at most maxBytes: the groups of each release's statistics
// (ReleaseStats.Groups) and the unit contributions are divided, in order,
// between the chunks. Every chunk repeats the window fields (stream,
// window_start, window_end, partition, partitions); chunk 0 keeps the
// partial's other fields and each ReleaseStats' other fields, and the later
// chunks carry each release's name with zero counts and empty vectors
// (events, units and dropped 0, first_offset and last_offset -1). A
// partial that fits is returned alone, unchanged. An error names what
// cannot be split: a single group or unit contribution, or the fields that
// are not divided, larger than a chunk.
func SplitPartial(p Partial, maxBytes int) ([]Partial, error) {
	if p.Chunk != 0 || p.Chunks != 0 {
		return nil, fmt.Errorf("schema: split partial: it is already chunk %d of %d", p.Chunk, p.Chunks)
	}
	for _, rs := range p.Stats {
		if err := sortedGroups(rs.Groups, rs.Release); err != nil {
			return nil, fmt.Errorf("schema: split partial: %w", err)
		}
	}
	head := p
	head.Stats = make([]ReleaseStats, len(p.Stats))
	for i, rs := range p.Stats {
		rs.Groups = nil
		head.Stats[i] = rs
	}
	head.UnitContributions = nil
	b0, err := EncodePartial(head)
	if err != nil {
		return nil, err
	}
	// Items: every release's groups in order, then the unit contributions;
	// array i < len(Stats) is Stats[i].Groups, the last the contributions.
	var items []chunkItem
	for i, rs := range p.Stats {
		for _, g := range rs.Groups {
			items = append(items, chunkItem{arrays: 1, first: i, size: groupLen(g)})
		}
	}
	for _, u := range p.UnitContributions {
		items = append(items, chunkItem{arrays: 1, first: len(p.Stats), size: unitLen(u)})
	}
	if total(len(b0), items, len(p.Stats)+1) <= maxBytes {
		return []Partial{p}, nil
	}
	b1, err := EncodePartial(laterPartial(p))
	if err != nil {
		return nil, err
	}
	what := func(j int) string {
		for _, rs := range p.Stats {
			if j < len(rs.Groups) {
				return fmt.Sprintf("group %q of release %s", short(rs.Groups[j].Key), rs.Release)
			}
			j -= len(rs.Groups)
		}
		return fmt.Sprintf("the contribution of unit %q", short(p.UnitContributions[j].Unit))
	}
	cuts, err := pack(items, len(p.Stats)+1, len(b0), len(b1), maxBytes, what)
	if err != nil {
		return nil, fmt.Errorf("schema: split partial of stream %s window %d partition %d: %w", p.Stream, p.WindowStart, p.Partition, err)
	}
	n := len(cuts) - 1
	out := make([]Partial, n)
	for k := range n {
		c := laterPartial(p)
		if k == 0 {
			c = head
			c.Stats = slices.Clone(head.Stats)
		}
		c.Chunk, c.Chunks = int32(k), int32(n)
		for i := range c.Stats {
			c.Stats[i].Groups = p.Stats[i].Groups[cuts[k][i]:cuts[k+1][i]]
		}
		u := len(p.Stats)
		c.UnitContributions = p.UnitContributions[cuts[k][u]:cuts[k+1][u]]
		out[k] = c
	}
	return out, nil
}

// laterPartial is the part of p that every chunk after the first repeats:
// the window fields and each release's name.
func laterPartial(p Partial) Partial {
	c := Partial{Stream: p.Stream, WindowStart: p.WindowStart, WindowEnd: p.WindowEnd, Partition: p.Partition,
		Partitions: p.Partitions, FirstOffset: -1, LastOffset: -1, Stats: make([]ReleaseStats, len(p.Stats))}
	for i, rs := range p.Stats {
		c.Stats[i] = ReleaseStats{Release: rs.Release}
	}
	return c
}

// JoinPartial joins the chunks of one partition's partial of one window, in
// any order, into the partial that SplitPartial divided. It checks that
// they are one record's chunks: the same window, partition and chunk count,
// every chunk from 0 to Chunks-1 exactly once, the later chunks carrying
// nothing but their groups and contributions, the same releases in every
// chunk, and each release's groups sorted by key across the chunks (so no
// key is in two chunks). A single partial in one record (Chunks 0) is
// returned as it is.
func JoinPartial(chunks []Partial) (Partial, error) {
	if len(chunks) == 0 {
		return Partial{}, errors.New("schema: join partial: no chunks")
	}
	if len(chunks) == 1 && chunks[0].Chunks == 0 && chunks[0].Chunk == 0 {
		return chunks[0], nil
	}
	by, err := orderChunks(len(chunks), func(i int) (int32, int32) { return chunks[i].Chunk, chunks[i].Chunks })
	if err != nil {
		return Partial{}, fmt.Errorf("schema: join partial of stream %s window %d partition %d: %w", chunks[0].Stream, chunks[0].WindowStart, chunks[0].Partition, err)
	}
	c0 := chunks[by[0]]
	want, err := EncodePartial(laterPartial(c0))
	if err != nil {
		return Partial{}, err
	}
	out := c0
	out.Chunk, out.Chunks = 0, 0
	out.Stats = slices.Clone(c0.Stats)
	out.UnitContributions = slices.Clone(c0.UnitContributions)
	for k := 1; k < len(by); k++ {
		c := chunks[by[k]]
		rest := c
		rest.Chunk, rest.Chunks = 0, 0
		rest.UnitContributions = nil
		rest.Stats = slices.Clone(c.Stats)
		for i := range rest.Stats {
			rest.Stats[i].Groups = nil
		}
		got, err := EncodePartial(rest)
		if err != nil {
			return Partial{}, err
		}
		if !bytes.Equal(got, want) {
			return Partial{}, fmt.Errorf("schema: join partial of stream %s window %d partition %d: chunk %d is not a later chunk of chunk 0's partial "+
				"(another window, partition or set of releases, or fields other than groups and unit contributions set)", c0.Stream, c0.WindowStart, c0.Partition, k)
		}
		for i := range out.Stats {
			out.Stats[i].Groups = append(slices.Clip(out.Stats[i].Groups), c.Stats[i].Groups...)
		}
		out.UnitContributions = append(out.UnitContributions, c.UnitContributions...)
	}
	for _, rs := range out.Stats {
		if err := sortedGroups(rs.Groups, rs.Release); err != nil {
			return Partial{}, fmt.Errorf("schema: join partial of stream %s window %d partition %d: %w", c0.Stream, c0.WindowStart, c0.Partition, err)
		}
	}
	return out, nil
}

// sortedGroups checks that groups are sorted by key with no key twice.
func sortedGroups(gs []GroupStats, release string) error {
	for j := 1; j < len(gs); j++ {
		if gs[j-1].Key >= gs[j].Key {
			return fmt.Errorf("groups of release %s are not sorted by key with each key once (%q before %q)", release, short(gs[j-1].Key), short(gs[j].Key))
		}
	}
	return nil
}

// SplitRelease divides a release larger than maxBytes (Avro-encoded) into
// chunks of at most maxBytes: Keys, and every one of Values, Intervals95,
// Quantiles, RunningTotals and RunningIntervals95 whose length is
// len(Keys) (an Intervals95 of another
// length, one value shared by every key, is not divided), are divided in
// order between the chunks. Every chunk is a valid release with the same
// identity, status and budget fields (release_id, stream, release, kind,
// window, status, epsilon, delta, noise, epsilon_spent, epsilon_budget,
// published_at); chunk 0 keeps the release's other fields, and the later
// chunks carry only their keys and the aligned arrays' slices. Keys must be
// sorted, each once. A release that fits is returned alone, unchanged. An
// error names what cannot be split: a single key (with its aligned
// values) or the fields that are not divided larger than a chunk.
func SplitRelease(r Release, maxBytes int) ([]Release, error) {
	return splitRelease(r, maxBytes, true)
}

// CheckSplitRelease reports whether a release of r's size can be written in
// chunks of at most maxBytes: the error SplitRelease would return, but for
// the order of the keys (for sizing a release whose keys are
// placeholders, as kind.Plan.Widest fills them).
func CheckSplitRelease(r Release, maxBytes int) error {
	_, err := splitRelease(r, maxBytes, false)
	return err
}

func splitRelease(r Release, maxBytes int, sorted bool) ([]Release, error) {
	if r.Chunk != 0 || r.Chunks != 0 {
		return nil, fmt.Errorf("schema: split release %s: it is already chunk %d of %d", r.ReleaseID, r.Chunk, r.Chunks)
	}
	if err := sortedKeys(r.Keys); sorted && err != nil {
		return nil, fmt.Errorf("schema: split release %s: %w", r.ReleaseID, err)
	}
	al := alignedWith(r)
	head := r
	head.Keys = nil
	if al.values {
		head.Values = nil
	}
	if al.intervals {
		head.Intervals95 = nil
	}
	if al.quantiles {
		head.Quantiles = nil
	}
	if al.totals {
		head.RunningTotals = nil
	}
	if al.totals95 {
		head.RunningIntervals95 = nil
	}
	b0, err := EncodeRelease(head)
	if err != nil {
		return nil, err
	}
	arrays := al.arrays()
	items := make([]chunkItem, len(r.Keys))
	for j, k := range r.Keys {
		n := stringLen(k)
		if al.values {
			n += 8
		}
		if al.intervals {
			n += 8
		}
		if al.quantiles {
			n += doublesLen(len(r.Quantiles[j]))
		}
		if al.totals {
			n += 8
		}
		if al.totals95 {
			n += 8
		}
		items[j] = chunkItem{arrays: arrays, size: n}
	}
	if total(len(b0), items, arrays) <= maxBytes {
		return []Release{r}, nil
	}
	b1, err := EncodeRelease(releaseIdentity(r))
	if err != nil {
		return nil, err
	}
	what := func(j int) string { return fmt.Sprintf("key %q", short(r.Keys[j])) }
	cuts, err := pack(items, arrays, len(b0), len(b1), maxBytes, what)
	if err != nil {
		return nil, fmt.Errorf("schema: split release %s: %w", r.ReleaseID, err)
	}
	n := len(cuts) - 1
	out := make([]Release, n)
	for k := range n {
		c := releaseIdentity(r)
		if k == 0 {
			c = head
		}
		lo, hi := cuts[k][0], cuts[k+1][0]
		c.Chunk, c.Chunks = int32(k), int32(n)
		c.Keys = r.Keys[lo:hi]
		if al.values {
			c.Values = r.Values[lo:hi]
		}
		if al.intervals {
			c.Intervals95 = r.Intervals95[lo:hi]
		}
		if al.quantiles {
			c.Quantiles = r.Quantiles[lo:hi]
		}
		if al.totals {
			c.RunningTotals = r.RunningTotals[lo:hi]
		}
		if al.totals95 {
			c.RunningIntervals95 = r.RunningIntervals95[lo:hi]
		}
		out[k] = c
	}
	return out, nil
}

// aligned says which of a release's arrays are aligned with its keys.
type aligned struct{ values, intervals, quantiles, totals, totals95 bool }

func alignedWith(r Release) aligned {
	n := len(r.Keys)
	return aligned{values: n > 0 && len(r.Values) == n, intervals: n > 0 && len(r.Intervals95) == n, quantiles: n > 0 && len(r.Quantiles) == n,
		totals: n > 0 && len(r.RunningTotals) == n, totals95: n > 0 && len(r.RunningIntervals95) == n}
}

// arrays is the number of arrays divided: the keys and the aligned ones.
func (a aligned) arrays() int {
	n := 1
	for _, b := range []bool{a.values, a.intervals, a.quantiles, a.totals, a.totals95} {
		if b {
			n++
		}
	}
	return n
}

// releaseIdentity is the part of r that every chunk after the first
// repeats: its identity, status and budget fields.
func releaseIdentity(r Release) Release {
	return Release{ReleaseID: r.ReleaseID, Stream: r.Stream, Release: r.Release, Kind: r.Kind,
		WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Status: r.Status, Epsilon: r.Epsilon, Delta: r.Delta,
		Noise: r.Noise, EpsilonSpent: r.EpsilonSpent, EpsilonBudget: r.EpsilonBudget, PublishedAt: r.PublishedAt}
}

// JoinRelease joins the chunks of one release, in any order, into the
// release that SplitRelease divided. It checks that they are one release's
// chunks: the same release id, identity, status and budget fields and chunk
// count, every chunk from 0 to Chunks-1 exactly once, the later chunks
// carrying at least one key and nothing but keys and arrays aligned with
// them (each of Values, Intervals95 and Quantiles is either aligned in
// every chunk or empty in every later one), and the keys sorted across the
// chunks (so no key is in two chunks). A release in one record (Chunks 0)
// is returned as it is.
func JoinRelease(chunks []Release) (Release, error) {
	if len(chunks) == 0 {
		return Release{}, errors.New("schema: join release: no chunks")
	}
	if len(chunks) == 1 && chunks[0].Chunks == 0 && chunks[0].Chunk == 0 {
		return chunks[0], nil
	}
	fail := func(format string, args ...any) (Release, error) {
		return Release{}, fmt.Errorf("schema: join release %s: %s", chunks[0].ReleaseID, fmt.Sprintf(format, args...))
	}
	by, err := orderChunks(len(chunks), func(i int) (int32, int32) { return chunks[i].Chunk, chunks[i].Chunks })
	if err != nil {
		return fail("%v", err)
	}
	c0 := chunks[by[0]]
	want, err := EncodeRelease(releaseIdentity(c0))
	if err != nil {
		return Release{}, err
	}
	// An array is divided if every later chunk has one entry per key, and
	// kept whole in chunk 0 if every later chunk has none.
	var al aligned
	for _, f := range []struct {
		name    string
		divided *bool
		len     func(Release) int
	}{
		{"values", &al.values, func(r Release) int { return len(r.Values) }},
		{"intervals95", &al.intervals, func(r Release) int { return len(r.Intervals95) }},
		{"quantiles", &al.quantiles, func(r Release) int { return len(r.Quantiles) }},
		{"running_totals", &al.totals, func(r Release) int { return len(r.RunningTotals) }},
		{"running_intervals95", &al.totals95, func(r Release) int { return len(r.RunningIntervals95) }},
	} {
		divided, whole := true, true
		for _, i := range by[1:] {
			c := chunks[i]
			divided = divided && f.len(c) == len(c.Keys)
			whole = whole && f.len(c) == 0
		}
		switch {
		case divided && f.len(c0) == len(c0.Keys):
			*f.divided = true
		case !whole:
			return fail("the %s of chunks 0 to %d are neither each aligned with their keys nor empty after chunk 0", f.name, len(by)-1)
		}
	}
	out := c0
	out.Chunk, out.Chunks = 0, 0
	out.Keys = slices.Clone(c0.Keys)
	if al.values {
		out.Values = slices.Clone(c0.Values)
	}
	if al.intervals {
		out.Intervals95 = slices.Clone(c0.Intervals95)
	}
	if al.quantiles {
		out.Quantiles = slices.Clone(c0.Quantiles)
	}
	if al.totals {
		out.RunningTotals = slices.Clone(c0.RunningTotals)
	}
	if al.totals95 {
		out.RunningIntervals95 = slices.Clone(c0.RunningIntervals95)
	}
	for k := 1; k < len(by); k++ {
		c := chunks[by[k]]
		if len(c.Keys) == 0 {
			return fail("chunk %d has no keys", k)
		}
		rest := c
		rest.Chunk, rest.Chunks = 0, 0
		rest.Keys, rest.Values, rest.Intervals95, rest.Quantiles, rest.RunningTotals, rest.RunningIntervals95 = nil, nil, nil, nil, nil, nil
		got, err := EncodeRelease(rest)
		if err != nil {
			return Release{}, err
		}
		if !bytes.Equal(got, want) {
			return fail("chunk %d is not a later chunk of chunk 0's release (other identity, status or budget fields, or fields other than keys and the arrays aligned with them set)", k)
		}
		out.Keys = append(out.Keys, c.Keys...)
		if al.values {
			out.Values = append(out.Values, c.Values...)
		}
		if al.intervals {
			out.Intervals95 = append(out.Intervals95, c.Intervals95...)
		}
		if al.quantiles {
			out.Quantiles = append(out.Quantiles, c.Quantiles...)
		}
		if al.totals {
			out.RunningTotals = append(out.RunningTotals, c.RunningTotals...)
		}
		if al.totals95 {
			out.RunningIntervals95 = append(out.RunningIntervals95, c.RunningIntervals95...)
		}
	}
	if err := sortedKeys(out.Keys); err != nil {
		return fail("%v", err)
	}
	return out, nil
}

// sortedKeys checks that keys are sorted with no key twice.
func sortedKeys(keys []string) error {
	for j := 1; j < len(keys); j++ {
		if keys[j-1] >= keys[j] {
			return fmt.Errorf("keys are not sorted with each key once (%q before %q)", short(keys[j-1]), short(keys[j]))
		}
	}
	return nil
}

// short returns s, or its first 40 bytes and "..." if it is longer: keys
// in error messages.
func short(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "..."
}

// orderChunks checks that n records, whose chunk index and count get
// returns, are chunks 0 to count-1 of one record, each once, and returns
// their positions in chunk order.
func orderChunks(n int, get func(i int) (chunk, chunks int32)) ([]int, error) {
	_, count := get(0)
	if count < 2 {
		return nil, fmt.Errorf("chunk count %d: a record in chunks has at least 2 (0 for a record in one piece, which is joined alone)", count)
	}
	by := make([]int, count)
	for i := range by {
		by[i] = -1
	}
	for i := range n {
		c, cs := get(i)
		if cs != count {
			return nil, fmt.Errorf("chunk count mismatch: one chunk says %d, another %d", count, cs)
		}
		if c < 0 || c >= count {
			return nil, fmt.Errorf("chunk %d of %d is out of range", c, count)
		}
		if by[c] >= 0 {
			return nil, fmt.Errorf("chunk %d of %d appears twice", c, count)
		}
		by[c] = i
	}
	for c, i := range by {
		if i < 0 {
			return nil, fmt.Errorf("chunk %d of %d is missing (have %d)", c, count, n)
		}
	}
	return by, nil
}

// chunkItem is one indivisible item to place in a chunk: its encoded size,
// and the arrays it adds one entry to (arrays consecutive arrays from
// first: a partial's group adds to its release's groups; a release's key
// to the keys and every aligned array).
type chunkItem struct {
	first, arrays int
	size          int
}

// total is the encoded size of a record whose skeleton (every divided
// array empty) takes base bytes, with every item in it.
func total(base int, items []chunkItem, arrays int) int {
	counts := make([]int, arrays)
	n := base
	for _, it := range items {
		for a := it.first; a < it.first+it.arrays; a++ {
			counts[a]++
		}
		n += it.size
	}
	for _, c := range counts {
		n += arrayOverhead(c) - arrayOverhead(0)
	}
	return n
}

// pack places items, in order, into chunks of at most maxBytes, where the
// first chunk's skeleton takes base0 bytes and every later one's base
// bytes (both measured with chunk and chunks 0). It returns the cut
// points: cuts[k][a] is the index in array a of chunk k's first entry, and
// cuts[len(cuts)-1] each array's length. what names item j in errors.
func pack(items []chunkItem, arrays, base0, base, maxBytes int, what func(j int) string) ([][]int, error) {
	limit := maxBytes - chunkFieldsRoom
	if base0 > limit {
		return nil, fmt.Errorf("its fields other than the divided arrays take %d bytes, more than a chunk of %d holds", base0+chunkFieldsRoom, maxBytes)
	}
	counts := make([]int, arrays) // entries of each array in the current chunk
	placed := make([]int, arrays) // entries of each array in every chunk so far
	cuts := [][]int{slices.Clone(placed)}
	size, inChunk := base0, 0
	grow := func(it chunkItem) int {
		d := it.size
		for a := it.first; a < it.first+it.arrays; a++ {
			d += arrayOverhead(counts[a]+1) - arrayOverhead(counts[a])
		}
		return d
	}
	for j, it := range items {
		d := grow(it)
		if size+d > limit {
			if inChunk == 0 && len(cuts) > 1 {
				return nil, fmt.Errorf("%s takes %d bytes, more than a chunk of %d holds beside the fields every chunk repeats (%d)", what(j), d, maxBytes, base+chunkFieldsRoom)
			}
			cuts = append(cuts, slices.Clone(placed))
			clear(counts)
			size, inChunk = base, 0
			if d = grow(it); size+d > limit {
				return nil, fmt.Errorf("%s takes %d bytes, more than a chunk of %d holds beside the fields every chunk repeats (%d)", what(j), d, maxBytes, base+chunkFieldsRoom)
			}
		}
		size += d
		inChunk++
		for a := it.first; a < it.first+it.arrays; a++ {
			counts[a]++
			placed[a]++
		}
	}
	cuts = append(cuts, placed)
	if len(cuts)-1 > math.MaxInt32 {
		return nil, errors.New("too many chunks")
	}
	return cuts, nil
}

// Avro sizes (see the Avro specification, "Binary Encoding").

// varintLen is the length of u as a base-128 varint.
func varintLen(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// longLen is the encoded length of an Avro long or int (zig-zag varint).
func longLen(v int64) int { return varintLen(uint64(v<<1) ^ uint64(v>>63)) }

// stringLen is the encoded length of an Avro string (or bytes).
func stringLen(s string) int { return longLen(int64(len(s))) + len(s) }

// arrayOverhead is the encoded length of an array of n items without the
// items: a count before every block of at most goavro.MaxBlockCount items
// (as goavro writes them) and the terminating zero count.
func arrayOverhead(n int) int {
	if n == 0 {
		return 1
	}
	b := int(goavro.MaxBlockCount)
	o := (n/b)*longLen(int64(b)) + 1
	if r := n % b; r > 0 {
		o += longLen(int64(r))
	}
	return o
}

func longsLen(xs []int64) int {
	n := arrayOverhead(len(xs))
	for _, x := range xs {
		n += longLen(x)
	}
	return n
}

func doublesLen(n int) int { return arrayOverhead(n) + 8*n }

// groupLen is the encoded length of one GroupStats.
func groupLen(g GroupStats) int {
	return stringLen(g.Key) + longLen(g.Units) + longLen(g.Count) + longsLen(g.Sums) + longsLen(g.Cells)
}

// unitLen is the encoded length of one UnitContribution.
func unitLen(u UnitContribution) int {
	n := stringLen(u.Unit) + arrayOverhead(len(u.Norms))
	for _, v := range u.Norms {
		n += doublesLen(len(v))
	}
	return n
}
