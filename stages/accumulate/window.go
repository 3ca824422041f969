// Package accumulate is dpstream's first stage: it decodes and validates a
// stream's events, bounds each privacy unit's contribution per window, and
// keeps the exact sufficient statistics of every release per tumbling
// event-time window and input partition. When a window closes on a
// partition it emits one Partial (also for empty windows) to the release
// stage.
//
// # The release schedule
//
// Which windows exist and when they close must not depend on event times,
// which producers choose (DESIGN section 5). A stream has a start
// (Stream.Start, recorded in the ledger or configured): a partition that
// never committed a watermark starts at it, so partials, empty ones
// included, are emitted only for windows from the start on, and events
// before it are rejected (Admit). An event may lead its record's clock by
// at most Stream.MaxSkew (else Admit rejects it as future and it moves
// nothing), and a watermark never passes that clock minus the grace
// period, in Add, Idle and Pace: no event can close a window before its end
// plus grace has passed on the wall clock, or make later honest events
// late. MaxGapWindows stays as a backstop against a watermark jump.
//
// Nor may input hold windows back: the release stage needs every input
// partition's partial of a window, so one partition whose watermark stands
// still holds every release of the stream. Idle alone cannot prevent that
// (it waits for a partition with no record for the idle timeout, caught
// up and with nothing in flight, and a producer can keep sending records
// that move nothing, or flood the partition). Pace can: once a partition
// has read the backlog it found at its assignment, a watermark that falls
// more than the idle timeout behind its best pace against the wall clock
// is advanced by the wall clock whatever arrives, so each window closes by
// its end + pace + idle timeout, about end + grace + idle timeout on a
// live partition (Pace states the bound exactly).
//
// # Determinism
//
// The window logic (this file) is pure and deterministic: given the same
// records in the same offset order and the same starting watermark it
// produces the same partials, which is what makes a restart exact
// (DESIGN invariant 2). The schedule's clock is the one exception, and it
// is kept small: Admit judges a record by RecordClock, the earlier of the
// wall clock and the record's Kafka timestamp, and Add caps the watermark
// by that same clock (Event.Clock). A replay processes the record later,
// but when the record's timestamp was not ahead of the process's wall
// clock at the first processing (a producer or broker clock no faster than
// this host's), the clock is the record's timestamp both times, and the
// replay makes every decision the first run made.
//
// The residual case is a record whose timestamp was ahead of the wall
// clock when first processed. Its clock was the wall clock then, and is a
// later one in a replay, so the replay may accept as in time an event the
// first run rejected as future, and let the watermark go further, closing
// a window earlier and making later records of it late. Such a replay's
// partial can differ from the first run's; the release stage uses the
// first partial it reads per window and partition, so what is released
// still comes from one run, and no window can close before its end plus
// grace on any process's wall clock. Idle and Pace, which follow the wall
// clock by design, never run during the replay of the backlog a partition
// finds at its assignment: Idle only on a caught-up partition, Pace only
// once that backlog has been read.
package accumulate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// NoWatermark is the watermark of a partition that has seen no event yet.
const NoWatermark = math.MinInt64

// Release is what the accumulate stage needs to know about one release:
// its name and its kind's exact statistic (kind.Plan.Statistic), which
// reads its values from Event.Values.
type Release struct {
	Name string
	Stat kind.Statistic
}

// Stream is the accumulate stage's view of one configured stream.
type Stream struct {
	Name        string
	Size        int64 // window size, ms
	Grace       int64 // ms
	IdleTimeout time.Duration
	MaxEvents   int // L: events kept per unit per window
	Releases    []Release
	// UnitContributions makes every partial carry each unit's own
	// contribution to each release (Partial.UnitContributions, layout
	// UnitNorms), for per-instance DP. Off, no statistic is asked to keep
	// per-unit contributions and partials carry none.
	UnitContributions bool
	// Start is the start of the stream's release schedule (unix ms, a
	// window boundary; ledger.StreamStarts): a partition with no committed
	// watermark starts there, and Admit rejects earlier events. 0 means
	// none (tests, and `dpstream simulate` before its first event): a
	// fresh partition then starts at its first event's window.
	Start int64
	// MaxSkew is how far an event time may lead its record's clock (ms,
	// see Admit); 0 means DefaultMaxSkew.
	MaxSkew int64
	// MaxWindows is k: in each horizon of Horizon windows a unit's events
	// are kept in at most k windows (horizon.go); 0 means no bound.
	MaxWindows int
	// Horizon is T, the windows of one horizon (the stream's continual
	// releases'), aligned to the Unix epoch; used only with MaxWindows.
	Horizon int64
}

// Event is a decoded, validated event ready to be accumulated.
type Event struct {
	Offset int64
	Unit   string
	Time   int64 // event time, unix ms
	// Values holds the raw (unclamped, finite) value of each release's
	// fields: the first field of Stream.Releases[i] at index i (unused
	// when the release reads none, as a count), its further fields after
	// every release's (each release's Statistic knows where). A
	// categorical value is the reported category's index.
	Values []float64
	// Keys holds the value of each key field (kind.Field.Key) as a string,
	// at the field's index in Values; nil when the stream has no key
	// field.
	Keys []string
	// Clock is the clock the record was judged by (unix ms, RecordClock):
	// Add never moves the watermark past Clock minus the grace period, so
	// an event leading the wall clock cannot close windows early. 0 means
	// no clock (`dpstream simulate`, tests): no cap.
	Clock int64
}

// Outcome says what happened to one event.
type Outcome int

// Outcomes of Partition.Add.
const (
	Accepted Outcome = iota
	Late             // its window had already closed on this partition
	Dropped          // its unit already had MaxEvents events in the window, or MaxWindows windows in the horizon
)

// Partition is the window state of one input partition of one stream.
type Partition struct {
	s         *Stream
	err       error // a release without a statistic
	id, count int32
	wm        int64 // watermark: windows with end <= wm are closed
	// restored is the committed watermark the partition resumed from
	// (NoWatermark for a partition that never committed one).
	restored int64
	// closedBefore: windows with end <= closedBefore were emitted, and
	// acknowledged, before the commit this partition resumed from (see
	// Resume); a replay that closes them again emits nothing.
	closedBefore int64
	// assumeLimit: with MaxWindows, windows ending at or before it may
	// have been emitted by an earlier process, and every unit is taken to
	// have used them (AssumeUpTo; NoWatermark: none).
	assumeLimit int64
	maxEvent    int64 // highest event time seen (NoWatermark if none)
	windows     map[int64]*window
	nextOffset  int64 // offset after the last record processed (-1: none yet)
	// initWM is the watermark the partition started at (NewPartition).
	initWM int64
	// The schedule's backstop (Pace): pacing is set by the first Pace
	// call, at paceFrom (wall clock, unix ms); pace is the best lag (wall
	// clock minus watermark, ms) seen since, valid once paced.
	pacing, paced bool
	paceFrom      int64
	pace          int64

	// The fields below are used only while Stream.UnitContributions is
	// on (units.go).

	// unitBytes is unitBaseBytes(s), the estimated size of one unit's
	// contribution without its name or a row tail.
	unitBytes int
	// unitEventLimit is maxUnitEvents (tests lower it).
	unitEventLimit int

	// horizons are the window admissions per horizon, while
	// Stream.MaxWindows is set (horizon.go).
	horizons map[int64]*horizonState
}

type window struct {
	start       int64
	firstOffset int64
	lastOffset  int64
	wmAtFirst   int64 // watermark just before the first event: restart point
	perUnit     map[string]unitState
	// stats are the releases' statistics, indexed like Stream.Releases.
	stats   []kind.Accumulator
	events  int64
	dropped int64

	// unitBytes is the estimated size of the window's unit contributions
	// so far, without row tails (see newUnit).
	unitBytes int
	// unitsTruncated: the window carries no unit contributions.
	unitsTruncated bool
}

// NewPartition returns the state of partition id (of count) starting at
// watermark wm (NoWatermark for a partition never seen before), or at the
// stream's start if that is later: a partition never starts before it, so
// it emits partials only for windows from the start on. A release without
// a statistic (which pipeline.Inputs never builds) makes every Add fail.
func NewPartition(s *Stream, id, count int32, wm int64) *Partition {
	start := wm
	if s.Start != 0 && start < s.Start {
		start = s.Start
	}
	p := &Partition{s: s, id: id, count: count, wm: start, initWM: start, restored: wm, closedBefore: wm, assumeLimit: NoWatermark, maxEvent: NoWatermark, windows: map[int64]*window{}, nextOffset: -1}
	if s.MaxWindows > 0 {
		p.horizons = map[int64]*horizonState{}
		if s.Horizon < 1 && p.err == nil {
			p.err = fmt.Errorf("stream %s: max_windows %d without a horizon", s.Name, s.MaxWindows)
		}
	}
	if s.UnitContributions {
		p.unitBytes = unitBaseBytes(s)
		p.unitEventLimit = maxUnitEvents
	}
	for _, r := range s.Releases {
		if r.Stat == nil && p.err == nil {
			p.err = fmt.Errorf("stream %s release %s: no statistic", s.Name, r.Name)
		}
	}
	return p
}

// newWindow returns the empty state of window start, whose first event
// comes at offset (not yet in p.windows).
func (p *Partition) newWindow(start, offset int64) *window {
	w := &window{start: start, firstOffset: offset, wmAtFirst: p.wm, perUnit: map[string]unitState{},
		stats: make([]kind.Accumulator, len(p.s.Releases))}
	for i, r := range p.s.Releases {
		w.stats[i] = r.Stat.NewWindow()
	}
	return w
}

// Watermark returns the partition's watermark (NoWatermark if unknown).
func (p *Partition) Watermark() int64 { return p.wm }

// MaxEventTime returns the highest event time the partition has
// accumulated (kept or dropped, not late), or NoWatermark if none: with
// Idle it tells how long a partition must be idle to close a given window.
func (p *Partition) MaxEventTime() int64 { return p.maxEvent }

// OpenWindows returns the number of open windows.
func (p *Partition) OpenWindows() int { return len(p.windows) }

// WindowStart returns the start of the window holding event time t.
func (s *Stream) WindowStart(t int64) int64 { return floorDiv(t, s.Size) * s.Size }

// Add accumulates one event (records must come in offset order) and returns
// what happened to it and the partials of the windows that the event's time
// closed, in window order. Each release's statistic (kind.Accumulator)
// adds the kept event: values outside a release's bounds are clamped and
// counted in the partial's Clamped, and sums are exact int64 sums of
// fixed-point units, so a partial does not depend on the order of its
// events beyond which ones contribution bounding keeps. With
// Stream.UnitContributions each statistic also keeps each unit's own
// contribution (exact, in the same units) for the partial's
// UnitContributions.
//
// Add returns an error, and changes nothing, when a release's statistic
// refuses the event (kind.Accumulator.Check): it would overflow a window's
// int64 sum, or has a value the statistic cannot take (a NaN, which the
// Extractor never produces). An overflow needs more kept events in one
// window on one partition than the statistic is exact for (e.g.
// aggregate.MaxSumEvents, 2^33 − 1, for a sum). No value can stand in for
// the true sum then: saturating, wrapping or dropping events (which would
// let one unit's events displace another's) would release a statistic
// whose sensitivity differs from the calibrated one. The caller must stop
// instead (the stage fails and logs the error), and the window needs a
// shorter size or more partitions. With an error the Outcome is
// meaningless and no partial is returned.
func (p *Partition) Add(ev Event) (Outcome, []schema.Partial, error) {
	if p.err != nil {
		return Accepted, nil, p.err
	}
	start := p.s.WindowStart(ev.Time)
	if p.wm != NoWatermark && start+p.s.Size <= p.wm {
		p.nextOffset = ev.Offset + 1
		return Late, nil, nil
	}
	w := p.windows[start]
	opened := w == nil
	var us unitState
	if !opened {
		us = w.perUnit[ev.Unit]
	}
	// Contribution bounding: keep the first L events of a unit by offset.
	// Which events are kept depends only on their order, never on their
	// values (SPEC 0).
	keep := opened || us.kept < p.s.MaxEvents
	// And in at most MaxWindows windows of a horizon, the first ones by
	// offset (horizon.go).
	var (
		newWindow bool
		hs        *horizonState
		at        int32
	)
	if keep && p.s.MaxWindows > 0 && !p.suppressed(start) {
		keep, newWindow, hs, at = p.admitWindow(ev.Unit, start)
	}
	if opened {
		w = p.newWindow(start, ev.Offset)
	}
	if keep {
		// Every release checks the event before any adds it, so a failing
		// event leaves the window as it was (and a new one unopened).
		for i, st := range w.stats {
			if err := st.Check(ev.Values, ev.Keys); err != nil {
				return Accepted, nil, fmt.Errorf("window %d: event at offset %d: release %s: %w", start, ev.Offset, p.s.Releases[i].Name, err)
			}
		}
	}
	p.nextOffset = ev.Offset + 1
	if opened {
		p.windows[start] = w
	}
	w.lastOffset = ev.Offset
	out := Accepted
	if !keep {
		w.dropped++
		out = Dropped
	} else {
		if newWindow {
			p.admit(ev.Unit, start, hs, at)
		}
		if us.kept == 0 {
			// A unit seen for the first time: its index in the window.
			us.index = len(w.perUnit)
		}
		contrib := false // keep the unit's contribution
		if p.s.UnitContributions && !w.unitsTruncated {
			switch {
			case us.kept >= p.unitEventLimit:
				// Beyond it a unit's exact summaries could overflow
				// (maxUnitEvents): carry none rather than wrong ones.
				w.truncateUnits()
			case us.kept == 0:
				p.newUnit(w, ev.Unit)
			}
			contrib = !w.unitsTruncated
		}
		us.kept++
		w.perUnit[ev.Unit] = us
		w.events++
		for i, st := range w.stats {
			// Check has accepted the event, so this cannot fail.
			if err := st.Add(ev.Values, ev.Keys, us.index, contrib); err != nil {
				return Accepted, nil, fmt.Errorf("window %d: event at offset %d: release %s: %w", start, ev.Offset, p.s.Releases[i].Name, err)
			}
		}
	}
	if ev.Time > p.maxEvent {
		p.maxEvent = ev.Time
	}
	wm := satSub(p.maxEvent, p.s.Grace)
	if ev.Clock != 0 {
		// The schedule's cap: no event closes a window before its end plus
		// grace has passed on the record's clock (see the package comment).
		wm = min(wm, satSub(ev.Clock, p.s.Grace))
	}
	return out, p.advance(wm), nil
}

// Skip records that the record at offset was consumed without reaching a
// window (rejected input), so the commit position can move past it.
func (p *Partition) Skip(offset int64) { p.nextOffset = offset + 1 }

// Idle advances the watermark of a partition that has had no records for at
// least the stream's idle timeout: event time is taken to have moved on
// with the wall clock since the last event (idleFor after it), so windows
// close when a stream goes quiet. A partition that never saw an event
// follows the wall clock itself: from the stream's start, it reports every
// window up to now, empty. In every case the watermark stays at or below
// now minus the grace period, so no window closes before its end plus
// grace on the wall clock. A zero now means there is no wall clock (tests
// and `dpstream simulate` pass event time instead): no cap, and a
// partition that never saw an event and never committed a watermark does
// not move. It returns the partials of the windows that closed.
func (p *Partition) Idle(now time.Time, idleFor time.Duration) []schema.Partial {
	if idleFor < p.s.IdleTimeout {
		return nil
	}
	var wm int64
	switch {
	case p.maxEvent != NoWatermark:
		wm = satSub(p.maxEvent+idleFor.Milliseconds(), p.s.Grace)
	case p.restored != NoWatermark:
		// Restarted and nothing read since: resume from the committed
		// watermark (a fixed base, so repeated calls do not compound).
		wm = p.restored + idleFor.Milliseconds()
	case now.IsZero():
		return nil
	default:
		wm = now.UnixMilli() - p.s.Grace
	}
	if !now.IsZero() {
		wm = min(wm, now.UnixMilli()-p.s.Grace)
	}
	return p.advance(wm)
}

// Pace is the release schedule's backstop against input that holds a
// partition back. The stage calls it on every tick once the partition has
// read the backlog it found at its assignment (partitionWorker.due).
//
// Idle closes the windows of a quiet partition, and only of one that has
// had no record for the idle timeout, is caught up and has nothing in
// flight: that is what keeps a consumer that is replaying, or behind, from
// closing windows before it has read their events. But records need not
// move the watermark. A producer sending a steady trickle of records that
// are rejected (undecodable, misrouted, before_start, future) or late, or
// of accepted events whose Kafka timestamps hold their clock, the
// watermark's cap, in the past, or of events that creep forward a
// millisecond at a time, or a flood that always keeps records in flight,
// would keep Idle from ever running while the watermark stood still. The
// partition's windows would never close, and the release stage, which
// needs every partition's partial, would release nothing of the stream.
//
// So Pace looks at no record, only at how the watermark keeps up with the
// wall clock. The partition's lag is now minus its watermark; its pace is
// the smallest lag seen since the first call, its best. A watermark that
// stays within the idle timeout of its best pace is left alone; one that
// falls further behind is advanced to now − pace − idle timeout, and never
// past now − grace. Input can lower the pace (by moving the watermark
// forward, which makes the partition more current), never raise it: no
// trickle, flood, held-back clock or slow creep can hold a window back.
// (Counting the time since the watermark last moved would not do: an
// event a millisecond ahead of the last resets that, every time.) A
// partition with no pace of its own (it resumed from no committed
// watermark and its watermark has not moved) takes the wall clock's,
// grace, once the idle timeout has passed since the first call without
// one, as Idle makes a quiet partition that never saw an event follow the
// wall clock.
//
// The bound: every window [s, e) is closed by the first call at or after
// e + P + idle timeout, P the pace then, and, while the partition has no
// pace of its own, by the first call at or after max(e + grace, first
// call) + idle timeout. P never grows. It is at most the lag at the first
// call (a resumed partition starts with the lag of its committed
// watermark, time stopped included, as Idle's restored base does), or, on
// a partition that had no pace, at the first call after its watermark
// moved. On a live partition whose watermark has once been level with its
// events (an honest producer's, or Idle following the wall clock) P is
// grace plus the time from an event to the next call, so its windows close
// within about grace + idle timeout of their end on the wall clock,
// whatever is sent after that. None closes before its end plus grace (the
// cap).
//
// What it costs honest input: a consumer that falls more than the idle
// timeout behind its own best pace while records keep coming (an overload,
// a flood) closes windows by the clock, and the events it reads later for
// them are late. A replay is unaffected: Pace only starts once the backlog
// found at the assignment has been read, and a consumer that reads a
// backlog faster than real time sets a new best pace all along. Like Idle,
// Pace follows the wall clock, so a replay may decide differently from the
// run it repeats: the commit point records the watermark Pace reached
// (CommitPoint), and the release stage uses the first partial of each
// window and partition. A zero now (no wall clock) does nothing. It
// returns the partials of the windows that closed.
func (p *Partition) Pace(now time.Time) []schema.Partial {
	if now.IsZero() {
		return nil
	}
	t := now.UnixMilli()
	if !p.pacing {
		p.pacing, p.paceFrom = true, t
	}
	idle := p.s.IdleTimeout.Milliseconds()
	switch {
	case p.restored != NoWatermark || p.wm != p.initWM:
		if lag := lagOf(t, p.wm); !p.paced || lag < p.pace {
			p.pace, p.paced = lag, true
		}
	case !p.paced && t-p.paceFrom >= idle:
		p.pace, p.paced = p.s.Grace, true
	}
	if !p.paced {
		return nil
	}
	return p.advance(min(satSub(satSub(t, p.pace), idle), t-p.s.Grace))
}

// lagOf is how far watermark wm is behind wall clock t (ms), at least 0
// (a watermark ahead of this host's clock, from another process's commit
// or a start in the future, is level with it) and without overflow.
func lagOf(t, wm int64) int64 {
	if wm >= t {
		return 0
	}
	if wm < 0 && t > math.MaxInt64+wm {
		return math.MaxInt64
	}
	return t - wm
}

// advance moves the watermark to wm (never backwards) and closes every
// window whose end it passed, emitting a partial for each window between
// the old and the new watermark, empty ones included, so the release stage
// can tell a quiet partition from a slow one.
func (p *Partition) advance(wm int64) []schema.Partial {
	if wm <= p.wm {
		return nil
	}
	old := p.wm
	p.wm = wm
	if len(p.horizons) > 0 {
		p.dropHorizons()
	}
	size := p.s.Size
	// Windows [s, s+size) with s+size <= wm are closed.
	firstOpen := floorDiv(wm, size) * size
	var from int64
	if old == NoWatermark {
		// Fresh partition: nothing before its earliest open window.
		from = firstOpen
		for s := range p.windows {
			from = min(from, s)
		}
	} else {
		from = floorDiv(old, size) * size
	}
	var out []schema.Partial
	if n := (firstOpen - from) / size; n > MaxGapWindows {
		// A jump this large comes from an implausible event time; emitting
		// an empty partial for every window in between would flood the
		// release stage. Close the open windows and the last MaxGapWindows
		// windows only: the release stage counts a partition as done with a
		// window once it reports a later one, so skipped windows stay
		// correct (empty on this partition).
		var keep []int64
		for s := range p.windows {
			if s < firstOpen-MaxGapWindows*size {
				keep = append(keep, s)
			}
		}
		sort.Slice(keep, func(i, j int) bool { return keep[i] < keep[j] })
		for _, s := range keep {
			out = p.closeInto(out, s)
		}
		from = firstOpen - MaxGapWindows*size
	}
	for s := from; s < firstOpen; s += size {
		out = p.closeInto(out, s)
	}
	return out
}

// closeInto closes window start and appends its partial to out, unless the
// window was emitted before the commit this partition resumed from: a
// replay rebuilds such a window only from the records after the commit
// point, and emitting that would put a second, different partial for it
// on the partials topic.
func (p *Partition) closeInto(out []schema.Partial, start int64) []schema.Partial {
	if p.closedBefore != NoWatermark && start+p.s.Size <= p.closedBefore {
		delete(p.windows, start)
		return out
	}
	return append(out, p.close(start))
}

// MaxGapWindows caps the empty partials one watermark move emits.
const MaxGapWindows = 10000

// close removes window start (which may have no state: an empty window)
// and returns its partial, with the units' contributions (kind.UnitNorms,
// sorted by unit) when Stream.UnitContributions is on.
func (p *Partition) close(start int64) schema.Partial {
	part := schema.Partial{
		Stream: p.s.Name, WindowStart: start, WindowEnd: start + p.s.Size,
		Partition: p.id, Partitions: p.count, FirstOffset: -1, LastOffset: -1,
		Stats: make([]schema.ReleaseStats, len(p.s.Releases)),
	}
	w := p.windows[start]
	for i, r := range p.s.Releases {
		rs := schema.ReleaseStats{Release: r.Name, Bins: []int64{}, Terms: []int64{}}
		if w != nil {
			w.stats[i].Stats(&rs)
		} else if r.Stat != nil {
			// An empty window still reports vectors of the configured
			// length, so the release stage always merges the right shape.
			r.Stat.NewWindow().Stats(&rs)
		}
		part.Stats[i] = rs
	}
	if w != nil {
		part.Events, part.Dropped, part.Units = w.events, w.dropped, int64(len(w.perUnit))
		part.FirstOffset, part.LastOffset = w.firstOffset, w.lastOffset
		if p.s.UnitContributions {
			us, truncated, err := p.unitContributions(w)
			if err != nil {
				// An internal inconsistency: carry no contributions
				// rather than wrong ones (the release stage then reports
				// pDP as unavailable for the window).
				us, truncated = nil, true
			}
			part.UnitContributions, part.UnitsTruncated = us, truncated
		}
		delete(p.windows, start)
	}
	return part
}

// CommitPoint is where a restart must resume so that it rebuilds exactly
// the open windows: the first offset of the oldest open window with the
// watermark just before it, or, with no open window, the next offset and
// the current watermark. The metadata (EncodeResume) also carries the
// current watermark: the windows it closed were emitted before the commit
// (the caller flushes first), so the replay must not emit them again. ok
// is false before any record was processed.
func (p *Partition) CommitPoint() (offset int64, metadata string, ok bool) {
	if len(p.windows) == 0 {
		if p.nextOffset < 0 {
			return 0, "", false
		}
		wm := p.wm
		if p.maxEvent == NoWatermark && p.wm == max(p.restored, p.s.Start) {
			// Nothing moved the watermark from where the partition started
			// (its records were rejected or late): commit what it resumed
			// from, not the stream's start, so that a restart still follows
			// the wall clock from the start (Idle) rather than advancing
			// from the start by idle time, which would hold every window
			// back by the time since the start.
			wm = p.restored
		}
		return p.nextOffset, EncodeResume(Resume{Watermark: wm, Closed: p.wm}), true
	}
	starts := make([]int64, 0, len(p.windows))
	for s := range p.windows {
		starts = append(starts, s)
	}
	sort.Slice(starts, func(i, j int) bool { return p.windows[starts[i]].firstOffset < p.windows[starts[j]].firstOffset })
	w := p.windows[starts[0]]
	return w.firstOffset, EncodeResume(Resume{Watermark: w.wmAtFirst, Closed: max(p.wm, p.closedBefore)}), true
}

// Resume is a partition's restart state, kept in the metadata of its
// committed offset.
type Resume struct {
	// Watermark is the watermark just before the committed offset's
	// record: replaying from there with it remakes every decision (late or
	// not, which windows close when) the original run made.
	Watermark int64
	// Closed is the watermark when the commit was made: every window
	// ending at or before it was emitted and acknowledged before the
	// commit. The replay rebuilds some of them from part of their records
	// only (their first records precede the committed offset), so it must
	// not emit them again.
	Closed int64
}

// EncodeResume renders r as offset-commit metadata:
// "dpstream/v1 wm=<watermark> closed=<closed>".
func EncodeResume(r Resume) string {
	return EncodeWatermark(r.Watermark) + " closed=" + strings.TrimPrefix(EncodeWatermark(r.Closed), wmPrefix)
}

// DecodeResume parses offset-commit metadata written by EncodeResume, or by
// EncodeWatermark (older commits, before Closed existed: Closed is then the
// watermark, which suppresses nothing a replay would emit). Metadata not
// written by dpstream, or none, gives NoWatermark.
func DecodeResume(md string) (Resume, error) {
	wmPart, closedPart, hasClosed := strings.Cut(md, " closed=")
	wm, err := DecodeWatermark(wmPart)
	if err != nil {
		return Resume{Watermark: NoWatermark, Closed: NoWatermark}, err
	}
	if !hasClosed {
		return Resume{Watermark: wm, Closed: wm}, nil
	}
	closed, err := DecodeWatermark(wmPrefix + closedPart)
	if err != nil || closed < wm {
		return Resume{Watermark: NoWatermark, Closed: NoWatermark}, fmt.Errorf("offset metadata %q: bad closed mark (want a watermark at or after wm)", md)
	}
	return Resume{Watermark: wm, Closed: closed}, nil
}

// NewPartitionResumed is NewPartition for a partition resuming from
// committed metadata r (DecodeResume).
//
// With Stream.MaxWindows the windows of the current horizon closed before
// the commit are not replayed, nor are their admissions (horizon.go): the
// partition takes every unit to have used each of them (AssumeUsed, the
// fail-safe; AssumedWindows tells how many).
func NewPartitionResumed(s *Stream, id, count int32, r Resume) *Partition {
	p := NewPartition(s, id, count, r.Watermark)
	p.closedBefore = r.Closed
	if s.MaxWindows > 0 && s.Horizon > 0 && r.Closed != NoWatermark {
		// The window holding the closed mark is the first one not closed;
		// the windows of its horizon before it were.
		open := s.WindowStart(r.Closed)
		h, at := s.horizonOf(open)
		if at > 0 {
			p.AssumeUsed(s.horizonStart(h), int(at))
		}
	}
	return p
}

const wmPrefix = "dpstream/v1 wm="

// EncodeWatermark renders a watermark as offset-commit metadata.
func EncodeWatermark(wm int64) string {
	if wm == NoWatermark {
		return wmPrefix + "none"
	}
	return wmPrefix + strconv.FormatInt(wm, 10)
}

// DecodeWatermark parses offset-commit metadata written by EncodeWatermark;
// anything else (another tool's commit, or none) means NoWatermark.
func DecodeWatermark(md string) (int64, error) {
	if md == "" {
		return NoWatermark, nil
	}
	rest, ok := strings.CutPrefix(md, wmPrefix)
	if !ok {
		return NoWatermark, fmt.Errorf("offset metadata %q was not written by dpstream", md)
	}
	if rest == "none" {
		return NoWatermark, nil
	}
	wm, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return NoWatermark, fmt.Errorf("offset metadata %q: %w", md, err)
	}
	return wm, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// satSub is a - b without wrapping below NoWatermark.
func satSub(a, b int64) int64 {
	if a == NoWatermark || a < math.MinInt64+b {
		return NoWatermark
	}
	return a - b
}
