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

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/density"
	"github.com/dpstream/dpstream/mechanism/regression"
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

// Merged returns the window's exact statistics for one release: the
// partials' integer statistics (counts, bins and fixed-point sums) added
// exactly, which makes the result independent of the order of the
// partials; they are added in partition order all the same. An int64
// overflow (more than aggregate.MaxSumEvents kept events in the window) is
// an error: the window is not released (see aggregate.Stats.Merge).
func (w Window) Merged(release string, bins int) (aggregate.Stats, error) {
	out := aggregate.Stats{}
	if bins > 0 {
		out.Bins = make([]int64, bins)
	}
	for _, p := range w.Parts {
		for _, rs := range p.Stats {
			if rs.Release != release {
				continue
			}
			st := aggregate.Stats{Count: rs.Count, SumUnits: rs.SumUnits, CenteredSumUnits: rs.CenteredSumUnits}
			if bins > 0 {
				st.Bins = rs.Bins
			}
			if err := out.Merge(st); err != nil {
				return out, fmt.Errorf("window %d partition %d release %s: %w", w.Start, p.Partition, release, err)
			}
		}
	}
	return out, nil
}

// MergedDensity returns the window's exact statistics for one density
// release with m = terms cosine terms: the partials' counts and integer
// basis sums added exactly, in partition order (the result does not depend
// on the order; see density.Stats.Merge). A partial whose term
// array does not have m entries, or an int64 overflow, is an error and the
// window is not released.
func (w Window) MergedDensity(release string, terms int) (density.Stats, error) {
	out := density.Stats{Terms: make([]int64, terms)}
	for _, p := range w.Parts {
		for _, rs := range p.Stats {
			if rs.Release != release {
				continue
			}
			if len(rs.Terms) != terms {
				return out, fmt.Errorf("window %d partition %d release %s: partial has %d basis sums, want %d terms", w.Start, p.Partition, release, len(rs.Terms), terms)
			}
			if err := out.Merge(density.Stats{Count: rs.Count, Terms: rs.Terms}); err != nil {
				return out, fmt.Errorf("window %d partition %d release %s: %w", w.Start, p.Partition, release, err)
			}
		}
	}
	return out, nil
}

// Merger collects partials and reports windows as they complete. A window is
// complete when every partition of the input topic has reported it or a
// later window (partitions close windows in order, so a later report means
// the partition is done with it). The first partial for a (window,
// partition) wins; repeats, which a replaying accumulator produces, are
// ignored. Merger is not safe for concurrent use.
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
	held      map[int64]heldWindow
	scheduled bool
	schedule  Schedule
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
		st = &streamState{progress: map[int32]int64{}, lastOffset: map[int32]int64{}, pending: map[int64]*pendingWindow{}, held: map[int64]heldWindow{}}
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
		}
	}
	st.complete(p.Stream)
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

// MergedRegression returns the window's exact regression statistics for
// one regression release with d scaled columns: the partials' XᵀX, Xᵀy,
// yᵀy and row counts added exactly (regression.Stats.Merge). A
// partial whose arrays do not have the release's dimension, or an int64
// overflow, is an error and the window is not released.
func (w Window) MergedRegression(release string, d int) (regression.Stats, error) {
	out := regression.NewStats(d)
	for _, p := range w.Parts {
		for _, rs := range p.Stats {
			if rs.Release != release {
				continue
			}
			if len(rs.XtX) != d*(d+1)/2 || len(rs.Xty) != d {
				return out, fmt.Errorf("window %d partition %d release %s: partial has %d XᵀX and %d Xᵀy entries, want %d and %d",
					w.Start, p.Partition, release, len(rs.XtX), len(rs.Xty), d*(d+1)/2, d)
			}
			st := regression.Stats{N: rs.Count, XtX: rs.XtX, Xty: rs.Xty, Yty: rs.Yty}
			if err := out.Merge(st); err != nil {
				return out, fmt.Errorf("window %d partition %d release %s: %w", w.Start, p.Partition, release, err)
			}
		}
	}
	return out, nil
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
