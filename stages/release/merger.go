// Package release is dpstream's second stage: it merges the partials of a
// window from every input partition, asks the accountant for budget, adds
// calibrated noise and publishes the release, ledger first (DESIGN
// invariants 1 and 3).
package release

import (
	"fmt"
	"sort"
	"time"

	"github.com/dpstream/dpstream/mechanism"
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
// overflow (more than mechanism.MaxSumEvents kept events in the window) is
// an error: the window is not released (see mechanism.Stats.Merge).
func (w Window) Merged(release string, bins int) (mechanism.Stats, error) {
	out := mechanism.Stats{}
	if bins > 0 {
		out.Bins = make([]int64, bins)
	}
	for _, p := range w.Parts {
		for _, rs := range p.Stats {
			if rs.Release != release {
				continue
			}
			st := mechanism.Stats{Count: rs.Count, SumUnits: rs.SumUnits, CenteredSumUnits: rs.CenteredSumUnits}
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
// on the order; see mechanism.DensityStats.Merge). A partial whose term
// array does not have m entries, or an int64 overflow, is an error and the
// window is not released.
func (w Window) MergedDensity(release string, terms int) (mechanism.DensityStats, error) {
	out := mechanism.DensityStats{Terms: make([]int64, terms)}
	for _, p := range w.Parts {
		for _, rs := range p.Stats {
			if rs.Release != release {
				continue
			}
			if len(rs.Terms) != terms {
				return out, fmt.Errorf("window %d partition %d release %s: partial has %d basis sums, want %d terms", w.Start, p.Partition, release, len(rs.Terms), terms)
			}
			if err := out.Merge(mechanism.DensityStats{Count: rs.Count, Terms: rs.Terms}); err != nil {
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
type Merger struct {
	streams map[string]*streamState
}

type streamState struct {
	partitions int32
	progress   map[int32]int64 // latest window start reported per partition
	lastOffset map[int32]int64 // partials-topic offset of that report
	pending    map[int64]*pendingWindow
}

type pendingWindow struct {
	start, end  int64
	parts       map[int32]schema.Partial
	firstSeen   time.Time
	firstOffset int64
}

// NewMerger returns an empty merger.
func NewMerger() *Merger { return &Merger{streams: map[string]*streamState{}} }

// Add records a partial read at offset of the partials topic and returns the
// windows it completed, oldest first.
func (m *Merger) Add(p schema.Partial, offset int64, now time.Time) []Window {
	st := m.streams[p.Stream]
	if st == nil {
		st = &streamState{progress: map[int32]int64{}, lastOffset: map[int32]int64{}, pending: map[int64]*pendingWindow{}}
		m.streams[p.Stream] = st
	}
	st.partitions = max(st.partitions, p.Partitions)
	if low, ok := st.low(); ok && p.WindowStart <= low {
		// Every partition has moved past this window, so it was completed
		// already: this is a replaying accumulator's repeat, and taking it
		// would complete the window a second time with this partial alone.
		return nil
	}
	pw := st.pending[p.WindowStart]
	if pw == nil {
		pw = &pendingWindow{start: p.WindowStart, end: p.WindowEnd, parts: map[int32]schema.Partial{}, firstSeen: now, firstOffset: offset}
		st.pending[p.WindowStart] = pw
	}
	if _, dup := pw.parts[p.Partition]; !dup {
		pw.parts[p.Partition] = p
	}
	if prev, ok := st.progress[p.Partition]; !ok || p.WindowStart >= prev {
		st.progress[p.Partition] = p.WindowStart
		st.lastOffset[p.Partition] = offset
	}
	return st.complete(p.Stream)
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

func (st *streamState) complete(stream string) []Window {
	low, ok := st.low()
	if !ok {
		return nil
	}
	var done []Window
	for start, pw := range st.pending {
		if start > low {
			continue
		}
		w := Window{Stream: stream, Start: pw.start, End: pw.end, FirstSeen: pw.firstSeen}
		for _, part := range pw.parts {
			w.Parts = append(w.Parts, part)
		}
		sort.Slice(w.Parts, func(i, j int) bool { return w.Parts[i].Partition < w.Parts[j].Partition })
		done = append(done, w)
		delete(st.pending, start)
	}
	sort.Slice(done, func(i, j int) bool { return done[i].Start < done[j].Start })
	return done
}

// CommitOffset is the partials-topic offset a restart must replay from to
// rebuild the merger: the first partial of every pending window and each
// partition's latest report. ok is false when nothing has been seen.
func (m *Merger) CommitOffset() (offset int64, ok bool) {
	for _, st := range m.streams {
		for _, pw := range st.pending {
			if !ok || pw.firstOffset < offset {
				offset, ok = pw.firstOffset, true
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
// yᵀy and row counts added exactly (mechanism.RegressionStats.Merge). A
// partial whose arrays do not have the release's dimension, or an int64
// overflow, is an error and the window is not released.
func (w Window) MergedRegression(release string, d int) (mechanism.RegressionStats, error) {
	out := mechanism.NewRegressionStats(d)
	for _, p := range w.Parts {
		for _, rs := range p.Stats {
			if rs.Release != release {
				continue
			}
			if len(rs.XtX) != d*(d+1)/2 || len(rs.Xty) != d {
				return out, fmt.Errorf("window %d partition %d release %s: partial has %d XᵀX and %d Xᵀy entries, want %d and %d",
					w.Start, p.Partition, release, len(rs.XtX), len(rs.Xty), d*(d+1)/2, d)
			}
			st := mechanism.RegressionStats{N: rs.Count, XtX: rs.XtX, Xty: rs.Xty, Yty: rs.Yty}
			if err := out.Merge(st); err != nil {
				return out, fmt.Errorf("window %d partition %d release %s: %w", w.Start, p.Partition, release, err)
			}
		}
	}
	return out, nil
}
