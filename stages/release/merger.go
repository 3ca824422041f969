// Package release is dpstream's second stage: it merges the partials of a
// window from every input partition, asks the accountant for budget, adds
// calibrated noise and publishes the release, ledger first (DESIGN
// invariants 1 and 3).
package release

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// Window is a window whose partials every input partition has reported.
type Window struct {
	Stream     string
	Start, End int64
	// Parts holds one partial per partition that had one, in partition
	// order; partitions that moved past the window without reporting it
	// were empty there.
	Parts     []schema.Partial
	FirstSeen time.Time
}

// ReleaseParts returns the window's partial statistics of one release, one per
// partition that reported it, in partition order: what the release's kind
// merges (kind.Plan.Merge).
func (w Window) ReleaseParts(release string) []kind.Part {
	var out []kind.Part
	for _, p := range w.Parts {
		for _, rs := range p.Stats {
			if rs.Release == release {
				out = append(out, kind.Part{Partition: p.Partition, Stats: rs})
			}
		}
	}
	return out
}

// Merger collects partials and reports windows as they complete. A window is
// complete when every partition of the input topic has reported it or a
// later window (partitions close windows in order, so a later report means
// the partition is done with it). The first partial for a (window,
// partition) wins; repeats, which a replaying accumulator produces, are
// ignored. Merger is not safe for concurrent use.
//
// A partial too large for one record arrives as chunks (schema.SplitPartial),
// possibly interleaved with other partitions' and windows' records: it
// counts as reported only once every chunk has arrived, and is then joined
// (schema.JoinPartial) and taken like a partial in one record, at the
// offset of its first chunk (so a restart replays all its chunks). A
// repeated chunk is ignored; chunks that do not join (another copy's, a
// count that disagrees) are dropped and reported to the OnBadChunks hook.
//
// With a stream's Schedule set, the merger also enforces the release
// schedule itself, as defence in depth: the release stage owns the budget,
// so it must keep the schedule even against an accumulator that does not
// (an older version, a bug, or a process whose clock runs ahead). A window
// that starts before the stream's start is never completed (its partials
// are dropped and reported to the OnBeforeStart hook), and a complete
// window is held until the merger's clock has passed its end plus the
// grace period (Due).
type Merger struct {
	streams   map[string]*streamState
	schedules map[string]Schedule
	// onBeforeStart is called with each partial dropped because its
	// window starts before its stream's start.
	onBeforeStart func(schema.Partial)
	// onBadChunks is called with each chunk dropped because it does not
	// join with the others of its partial, and why.
	onBadChunks func(schema.Partial, error)
}

// Schedule is what the merger enforces of a stream's release schedule.
type Schedule struct {
	// Start is the stream's start (unix ms, ledger.StreamStarts): windows
	// starting before it are never released. 0 means none.
	Start int64
	// Grace is the stream's grace period (ms): a complete window is
	// released only once the clock has passed its end plus Grace, the
	// earliest an accumulator keeping the schedule closes it.
	Grace int64
}

type streamState struct {
	partitions int32
	progress   map[int32]int64 // latest window start reported per partition
	lastOffset map[int32]int64 // partials-topic offset of that report
	pending    map[int64]*pendingWindow
	// held are the complete windows not yet due (Merger.Due), with the
	// offset of their first partial: until they are released, a restart
	// must replay from there.
	held map[int64]heldWindow
	// chunks are the partials arriving in chunks, by window and partition,
	// until every chunk has arrived.
	chunks    map[chunkKey]*chunkGroup
	scheduled bool
	schedule  Schedule
}

type chunkKey struct {
	window    int64
	partition int32
}

// chunkGroup is the chunks of one partial seen so far, and the offset of
// the first: a restart must replay from there to see them all again.
type chunkGroup struct {
	n           int32
	parts       map[int32]schema.Partial
	firstOffset int64
}

type pendingWindow struct {
	start, end  int64
	parts       map[int32]schema.Partial
	firstSeen   time.Time
	firstOffset int64
}

type heldWindow struct {
	w           Window
	firstOffset int64
}

// NewMerger returns an empty merger, enforcing no schedule.
func NewMerger() *Merger {
	return &Merger{streams: map[string]*streamState{}, schedules: map[string]Schedule{}}
}

// SetSchedule makes the merger enforce a stream's release schedule (see
// Merger); call it before the stream's first partial.
func (m *Merger) SetSchedule(stream string, sc Schedule) {
	m.schedules[stream] = sc
	if st := m.streams[stream]; st != nil {
		st.scheduled, st.schedule = true, sc
	}
}

// OnBeforeStart sets the function called with each partial dropped because
// its window starts before its stream's start (nil: none).
func (m *Merger) OnBeforeStart(f func(schema.Partial)) { m.onBeforeStart = f }

// OnBadChunks sets the function called with each chunk of a partial that is
// dropped because it does not join with the others (nil: none). An
// accumulator that keeps its commit protocol never writes one: each copy of
// a partial is split into the same chunks.
func (m *Merger) OnBadChunks(f func(schema.Partial, error)) { m.onBadChunks = f }

// Add records a partial read at offset of the partials topic (Record) and
// returns the windows due at now (Due), oldest first. Without schedules a
// window is due as soon as it is complete, so Add returns the windows the
// partial completed.
func (m *Merger) Add(p schema.Partial, offset int64, now time.Time) []Window {
	m.Record(p, offset, now)
	return m.Due(now)
}

// Record records a partial read at offset of the partials topic; the
// windows it completes wait for Due. now is when the partial was read (a
// window's FirstSeen).
func (m *Merger) Record(p schema.Partial, offset int64, now time.Time) {
	st := m.streams[p.Stream]
	if st == nil {
		st = &streamState{progress: map[int32]int64{}, lastOffset: map[int32]int64{}, pending: map[int64]*pendingWindow{},
			held: map[int64]heldWindow{}, chunks: map[chunkKey]*chunkGroup{}}
		st.schedule, st.scheduled = m.schedules[p.Stream]
		m.streams[p.Stream] = st
	}
	st.partitions = max(st.partitions, p.Partitions)
	if low, ok := st.low(); ok && p.WindowStart <= low {
		// Every partition has moved past this window, so it was completed
		// already: this is a replaying accumulator's repeat, and taking it
		// would complete the window a second time with this partial alone.
		return
	}
	if p.Chunks != 0 || p.Chunk != 0 {
		if pw := st.pending[p.WindowStart]; pw != nil {
			if _, dup := pw.parts[p.Partition]; dup {
				return // a repeat of a partial already joined
			}
		}
		joined, first, ok := m.chunk(st, p, offset)
		if !ok {
			return
		}
		p, offset = joined, first
	}
	if prev, ok := st.progress[p.Partition]; !ok || p.WindowStart >= prev {
		st.progress[p.Partition] = p.WindowStart
		st.lastOffset[p.Partition] = offset
	}
	if st.scheduled && st.schedule.Start != 0 && p.WindowStart < st.schedule.Start {
		// Before the stream's start: never released or charged. The report
		// still counts as the partition's progress.
		if m.onBeforeStart != nil {
			m.onBeforeStart(p)
		}
	} else {
		pw := st.pending[p.WindowStart]
		if pw == nil {
			pw = &pendingWindow{start: p.WindowStart, end: p.WindowEnd, parts: map[int32]schema.Partial{}, firstSeen: now, firstOffset: offset}
			st.pending[p.WindowStart] = pw
		}
		if _, dup := pw.parts[p.Partition]; !dup {
			pw.parts[p.Partition] = p
			// A partial in chunks counts from its first chunk's offset,
			// which may precede the window's first partial's.
			pw.firstOffset = min(pw.firstOffset, offset)
		}
	}
	st.complete(p.Stream)
	m.dropStaleChunks(st)
}

// chunk adds a chunk of a partial read at offset; when it completes the
// partial it returns the joined partial and the offset of its first chunk.
func (m *Merger) chunk(st *streamState, p schema.Partial, offset int64) (joined schema.Partial, first int64, ok bool) {
	if p.Chunks < 2 || p.Chunk < 0 || p.Chunk >= p.Chunks {
		m.badChunk(p, fmt.Errorf("chunk %d of %d is not a chunk", p.Chunk, p.Chunks))
		return schema.Partial{}, 0, false
	}
	k := chunkKey{p.WindowStart, p.Partition}
	g := st.chunks[k]
	if g == nil {
		g = &chunkGroup{n: p.Chunks, parts: map[int32]schema.Partial{}, firstOffset: offset}
		st.chunks[k] = g
	}
	if p.Chunks != g.n {
		m.badChunk(p, fmt.Errorf("chunk %d says the partial has %d chunks, its first chunk read said %d", p.Chunk, p.Chunks, g.n))
		return schema.Partial{}, 0, false
	}
	if _, dup := g.parts[p.Chunk]; dup {
		return schema.Partial{}, 0, false // a repeat: the first copy counts
	}
	g.parts[p.Chunk] = p
	g.firstOffset = min(g.firstOffset, offset)
	if int32(len(g.parts)) < g.n {
		return schema.Partial{}, 0, false
	}
	delete(st.chunks, k)
	parts := make([]schema.Partial, 0, g.n)
	for i := range g.n {
		parts = append(parts, g.parts[i])
	}
	joined, err := schema.JoinPartial(parts)
	if err != nil {
		m.badChunk(p, err)
		return schema.Partial{}, 0, false
	}
	return joined, g.firstOffset, true
}

// dropStaleChunks drops the chunks of partials whose window every partition
// has moved past: the window was completed without them, and keeping them
// would hold the commit offset back forever.
func (m *Merger) dropStaleChunks(st *streamState) {
	low, ok := st.low()
	if !ok {
		return
	}
	for k, g := range st.chunks {
		if k.window > low {
			continue
		}
		delete(st.chunks, k)
		for _, p := range g.parts {
			m.badChunk(p, fmt.Errorf("only %d of the %d chunks of the partial arrived before the window was complete without it", len(g.parts), g.n))
			break
		}
	}
}

func (m *Merger) badChunk(p schema.Partial, err error) {
	if m.onBadChunks != nil {
		m.onBadChunks(p, err)
	}
}

// Due removes and returns the complete windows whose end plus their
// stream's grace period is at or before now (every complete window of a
// stream without a schedule), oldest first.
func (m *Merger) Due(now time.Time) []Window {
	var out []Window
	t := now.UnixMilli()
	for _, st := range m.streams {
		for start, h := range st.held {
			if st.scheduled && h.w.End+st.schedule.Grace > t {
				continue
			}
			out = append(out, h.w)
			delete(st.held, start)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Stream < out[j].Stream
	})
	return out
}

// low returns the latest window that every partition has reported or moved
// past; ok is false while some partition has reported nothing.
func (st *streamState) low() (low int64, ok bool) {
	if int32(len(st.progress)) < st.partitions {
		return 0, false
	}
	for p := int32(0); p < st.partitions; p++ {
		v, seen := st.progress[p]
		if !seen {
			return 0, false
		}
		if p == 0 || v < low {
			low = v
		}
	}
	return low, true
}

// complete moves the pending windows that every partition has reached to
// held.
func (st *streamState) complete(stream string) {
	low, ok := st.low()
	if !ok {
		return
	}
	for start, pw := range st.pending {
		if start > low {
			continue
		}
		w := Window{Stream: stream, Start: pw.start, End: pw.end, FirstSeen: pw.firstSeen}
		for _, part := range pw.parts {
			w.Parts = append(w.Parts, part)
		}
		sort.Slice(w.Parts, func(i, j int) bool { return w.Parts[i].Partition < w.Parts[j].Partition })
		st.held[start] = heldWindow{w: w, firstOffset: pw.firstOffset}
		delete(st.pending, start)
	}
}

// CommitOffset is the partials-topic offset a restart must replay from to
// rebuild the merger: the first partial of every pending or held window and
// each partition's latest report. ok is false when nothing has been seen.
func (m *Merger) CommitOffset() (offset int64, ok bool) {
	for _, st := range m.streams {
		for _, pw := range st.pending {
			if !ok || pw.firstOffset < offset {
				offset, ok = pw.firstOffset, true
			}
		}
		for _, h := range st.held {
			if !ok || h.firstOffset < offset {
				offset, ok = h.firstOffset, true
			}
		}
		for _, o := range st.lastOffset {
			if !ok || o < offset {
				offset, ok = o, true
			}
		}
		for _, g := range st.chunks {
			if !ok || g.firstOffset < offset {
				offset, ok = g.firstOffset, true
			}
		}
	}
	return offset, ok
}

// Held returns the number of complete windows waiting to be due.
func (m *Merger) Held() int {
	n := 0
	for _, st := range m.streams {
		n += len(st.held)
	}
	return n
}

// Pending returns the number of windows waiting for partitions.
func (m *Merger) Pending() int {
	n := 0
	for _, st := range m.streams {
		n += len(st.pending)
	}
	return n
}

// newMerger returns the merger of a partials partition's handler: it
// enforces each configured stream's schedule (Config.Starts and the
// stream's grace period), and counts and logs every partial it drops for
// a window before its stream's start. Such a partial means an accumulator
// that does not keep the schedule; the window is never charged.
func (s *Stage) newMerger(log *slog.Logger) *Merger {
	m := NewMerger()
	for name, ps := range s.streams {
		m.SetSchedule(name, Schedule{Start: s.cfg.Starts[name], Grace: ps.Config.Window.Grace.Milliseconds()})
	}
	var (
		dropped int
		lastLog time.Time
	)
	m.OnBadChunks(func(p schema.Partial, err error) {
		log.Error("dropping a chunk of a partial that does not join with the others (an accumulator that broke its commit protocol, or a partials topic that lost records)",
			"stream", p.Stream, "window_start", time.UnixMilli(p.WindowStart).UTC().Format(time.RFC3339), "partition", p.Partition,
			"chunk", p.Chunk, "chunks", p.Chunks, "err", err)
	})
	m.OnBeforeStart(func(p schema.Partial) {
		s.cfg.Metrics.PartialsBeforeStart.WithLabelValues(p.Stream).Inc()
		dropped++
		if now := s.cfg.Now(); now.Sub(lastLog) >= 10*time.Second {
			log.Warn("partials of windows before their stream's start dropped: these windows are never released or charged (an accumulator that does not keep the release schedule: an older version?)",
				"stream", p.Stream, "window_start", time.UnixMilli(p.WindowStart).UTC().Format(time.RFC3339),
				"stream_start", time.UnixMilli(s.cfg.Starts[p.Stream]).UTC().Format(time.RFC3339), "partition", p.Partition, "count", dropped)
			dropped, lastLog = 0, now
		}
	})
	return m
}
