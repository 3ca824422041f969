package release

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/schema"
)

// keyed gives a partial per-key groups for release "n", enough to need
// several chunks of chunkTestBytes.
func keyed(p schema.Partial, keys int) schema.Partial {
	p.Stats = append([]schema.ReleaseStats(nil), p.Stats...)
	for k := range keys {
		p.Stats[0].Groups = append(p.Stats[0].Groups, schema.GroupStats{Key: fmt.Sprintf("key-%03d", k), Units: int64(k), Count: p.Events + int64(k)})
	}
	return p
}

const chunkTestBytes = 300

// chunkedRecord is one record of a chunked partials topic: the record, and,
// if it is the record with which its partition's partial becomes complete
// (its last missing chunk, or a partial in one record), that partial.
type chunkedRecord struct {
	rec      schema.Partial
	complete *schema.Partial
}

// chunkedStream is partialStream with per-key partials, most of them split
// into chunks; a partition sometimes crashes in the middle of writing a
// partial's chunks (a random part of them reaches the topic) and writes
// them all again, as a replaying accumulator does. Partitions are
// interleaved at random, keeping each one's order, so chunks of different
// windows and partitions interleave.
func chunkedStream(t *testing.T, r *rand.Rand, partitions int32, windows int64) []chunkedRecord {
	t.Helper()
	logical := partialStream(r, partitions, windows)
	per := make([][]chunkedRecord, partitions)
	for _, p := range logical {
		p = keyed(p, r.IntN(40))
		chunks, err := schema.SplitPartial(p, chunkTestBytes)
		if err != nil {
			t.Fatal(err)
		}
		var recs []schema.Partial
		if len(chunks) > 1 && r.IntN(4) == 0 {
			for _, i := range r.Perm(len(chunks))[:r.IntN(len(chunks))] {
				recs = append(recs, chunks[i])
			}
		}
		recs = append(recs, chunks...)
		seen := map[int32]bool{}
		for _, c := range recs {
			rec := chunkedRecord{rec: c}
			if !seen[c.Chunk] {
				if seen[c.Chunk] = true; len(seen) == len(chunks) {
					rec.complete = &p
				}
			}
			per[p.Partition] = append(per[p.Partition], rec)
		}
	}
	var out []chunkedRecord
	idx := make([]int, partitions)
	for {
		var live []int32
		for p := range partitions {
			if idx[p] < len(per[p]) {
				live = append(live, p)
			}
		}
		if len(live) == 0 {
			return out
		}
		p := live[r.IntN(len(live))]
		out = append(out, per[p][idx[p]])
		idx[p]++
	}
}

// windowBytes describes completed windows by the bytes of their partials.
func windowBytes(t *testing.T, ws []Window) string {
	t.Helper()
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "window %d:", w.Start)
		for _, p := range w.Parts {
			enc, err := schema.EncodePartial(p)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, " %d:%x", p.Partition, enc)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestMergerChunks checks the merger on partials topics where partials come
// in chunks, interleaved with other windows' and partitions' records and
// repeated after a crash, against the merger fed with the same partials in
// one record at the record that completes each: both complete the same
// windows at the same place, with the same partials, byte for byte; no
// chunk is ever reported bad.
func TestMergerChunks(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 9))
		const partitions = 3
		recs := chunkedStream(t, r, partitions, 40)
		chunked, whole := NewMerger(), NewMerger()
		chunked.OnBadChunks(func(p schema.Partial, err error) {
			t.Fatalf("seed %d: chunk %d of window %d partition %d reported bad: %v", seed, p.Chunk, p.WindowStart, p.Partition, err)
		})
		split := 0
		for i, rec := range recs {
			if rec.rec.Chunks > 0 {
				split++
			}
			got := windowBytes(t, chunked.Add(rec.rec, int64(i), at(int64(i))))
			var want string
			if rec.complete != nil {
				want = windowBytes(t, whole.Add(*rec.complete, int64(i), at(int64(i))))
			}
			if got != want {
				t.Fatalf("seed %d record %d (window %d partition %d chunk %d of %d): completed\n%s\nwant\n%s",
					seed, i, rec.rec.WindowStart, rec.rec.Partition, rec.rec.Chunk, rec.rec.Chunks, got, want)
			}
		}
		if split == 0 {
			t.Fatalf("seed %d: no partial was split", seed)
		}
	}
}

// TestMergerChunksRestartFromCommitOffset: a merger rebuilt by replaying a
// chunked partials topic from CommitOffset completes exactly the windows
// the merger that never stopped completes (the commit offset never falls
// after the first chunk of a partial still incomplete).
func TestMergerChunksRestartFromCommitOffset(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		recs := chunkedStream(t, r, 3, 25)
		for k := 0; k <= len(recs); k++ {
			orig := NewMerger()
			before := map[int64]bool{}
			for i, rec := range recs[:k] {
				for _, w := range orig.Add(rec.rec, int64(i), at(int64(i))) {
					before[w.Start] = true
				}
			}
			off, ok := orig.CommitOffset()
			if !ok {
				off = 0
			}
			fresh := NewMerger()
			for i := int(off); i < k; i++ {
				for _, w := range fresh.Add(recs[i].rec, int64(i), at(int64(i))) {
					if !before[w.Start] {
						t.Fatalf("seed %d cut %d (commit %d): replay completed window %d, not complete before the cut", seed, k, off, w.Start)
					}
				}
			}
			for i := k; i < len(recs); i++ {
				a := windowBytes(t, orig.Add(recs[i].rec, int64(i), at(int64(i))))
				b := windowBytes(t, fresh.Add(recs[i].rec, int64(i), at(int64(i))))
				if a != b {
					t.Fatalf("seed %d cut %d (commit %d) record %d: restarted merger completed\n%s\nuninterrupted\n%s", seed, k, off, i, b, a)
				}
			}
		}
	}
}

// TestMergerBadChunks: chunks that cannot be one partial's are dropped and
// reported, and never complete a window; a partial whose chunks stopped
// arriving does not hold the commit offset once its window is complete
// without it.
func TestMergerBadChunks(t *testing.T) {
	p0 := keyed(part("s", 0, 0, 2, 5), 60)
	chunks, err := schema.SplitPartial(p0, chunkTestBytes)
	if err != nil || len(chunks) < 3 {
		t.Fatalf("%d chunks, %v", len(chunks), err)
	}
	recount := chunks[1]
	recount.Chunks++
	outOfRange := chunks[1]
	outOfRange.Chunk = outOfRange.Chunks
	swapped := append([]schema.Partial(nil), chunks...)
	swapped[1].Chunk, swapped[2].Chunk = swapped[2].Chunk, swapped[1].Chunk
	for _, tc := range []struct {
		name string
		recs []schema.Partial
		want string
	}{
		{"a chunk count that disagrees", append([]schema.Partial{chunks[0], recount}, chunks[1:]...), "its first chunk read said"},
		{"an index out of range", append([]schema.Partial{outOfRange}, chunks...), "is not a chunk"},
		{"chunks that do not join", swapped, "not sorted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMerger()
			var bad []string
			m.OnBadChunks(func(p schema.Partial, err error) { bad = append(bad, err.Error()) })
			var completed []Window
			for i, p := range tc.recs {
				completed = append(completed, m.Add(p, int64(i), at(int64(i)))...)
			}
			completed = append(completed, m.Add(part("s", 0, 1, 2, 3), 99, at(99))...)
			if len(bad) == 0 || !strings.Contains(strings.Join(bad, "\n"), tc.want) {
				t.Fatalf("reported %q, want an error containing %q", bad, tc.want)
			}
			for _, w := range completed {
				for _, p := range w.Parts {
					if p.Partition == 0 && (len(p.Stats[0].Groups) != 60 || p.Events != 5) {
						t.Fatalf("window completed with a partial joined from bad chunks: %+v", p)
					}
				}
			}
		})
	}

	// Partition 0 wrote chunk 0 of window 0 only, then window 1 (a lost
	// record); partition 1 moves past both: window 0 completes without
	// partition 0's partial, the chunk is reported, and the commit offset
	// moves on.
	m := NewMerger()
	var bad []string
	m.OnBadChunks(func(p schema.Partial, err error) { bad = append(bad, err.Error()) })
	m.Add(chunks[0], 0, at(0))
	m.Add(part("s", 1, 0, 2, 1), 1, at(1))
	ws := m.Add(part("s", 2, 1, 2, 1), 2, at(2))
	if got := summarize(t, ws); !equalDone(got, []done{{start: 1 * win, parts: []int32{0}, count: 1}}) {
		t.Errorf("completed %v, want window 1 with partition 0's partial (window 0 had no complete partial)", got)
	}
	if len(bad) != 1 || !strings.Contains(bad[0], "only 1 of the") {
		t.Errorf("reported %q, want the incomplete partial", bad)
	}
	if off, ok := m.CommitOffset(); !ok || off != 1 {
		t.Errorf("commit offset %d, %v; want 1 (the stale chunk at 0 no longer holds it)", off, ok)
	}
}
