package accumulate

// # Windows per horizon
//
// With Stream.MaxWindows = k (config contribution.max_windows) the stage
// also bounds the number of windows a unit joins in each horizon of
// Stream.Horizon = T windows (the horizon of the stream's continual
// releases, aligned to the stream's start: window index
// w = (start − Stream.Start)/size, horizon ⌊w/T⌋), which is what the continual releases' sensitivity
// assumes (kind/running: a unit in at most k windows of a horizon, at most
// L events in each).
//
// The rule, on each input partition: an event of unit u in window w of
// horizon h that the L bound would keep is kept if w is already among u's
// admitted windows of h, or if u has fewer than k of them (w is then
// admitted); otherwise it is dropped and counted like the L drops
// (Partial.Dropped, Outcome Dropped). So u's events are kept in the first
// k distinct windows of h in which it has an event that reaches a window
// (not late), in offset order: the rule "first L events by offset" one
// level up. Which windows are kept depends on the order of the records,
// never on their values.
//
// Why |P| ≤ k per horizon for every unit, whatever the producers do. A
// unit's events are all on one partition (Admit rejects the others as
// misrouted), so one partition's state sees every event of u that can
// reach any window. A window's partial contains u only if some event of u
// was kept in it, and that admitted the window into u's set for the
// window's horizon, which never holds more than k windows while the state
// lives (it is dropped only once the watermark has passed the horizon's
// end: every window of it is closed, and later events of it are late).
// Event times, keys and partitions chosen by a producer only choose which
// windows are admitted, never how many.
//
// Across restarts and rebalances. A partition resumes from its commit
// point (CommitPoint: the first offset of its oldest open window), so the
// admissions made by events of windows closed before the commit are not
// replayed. NewPartitionResumed therefore takes every unit to have used
// every window of the current horizon that closed before the commit (n of
// them: those before the window holding the commit's closed mark; the
// horizons before it are over, and the replay's events in them are late
// or fall in windows it does not emit), and the replay admits nothing for
// the windows it rebuilds but does not emit (suppressed). Why that keeps
// |P| ≤ k: let S be u's windows among the n closed ones (those partials
// were released) and A1 the windows the first run admitted u to after the
// commit point, |S ∪ A1| ≤ k. Every event of a window open at the commit
// is at or after the commit offset, so the replay sees all of them, in
// the same order; its count for u starts at n ≥ |S| and, by induction over
// the events, stays at least the first run's while the windows it admits
// stay among A1 (an event the replay admits a window for, the first run
// admitted too, or had already). The partials released for the horizon
// (the first of each window and partition, from either run) hold u only in
// S ∪ A1. The cost is utility only: after a restart in a horizon's n-th
// window a unit gets at most k − n new windows of it (none once n ≥ k), and
// the partition logs it (runner.go) and counts the windows assumed in
// dpstream_unit_windows_assumed_total.
//
// The induction assumes the replay accepts the events the first run
// accepted, which a record whose timestamp led the first run's wall clock
// breaks: Admit judges an event by the earlier of the wall clock and its
// record timestamp, so a later replay may accept what the first run
// rejected as future (window.go's package comment) and admit a window the
// first run did not — then, with its count full, skip one the first run
// admitted and released. AssumeUpTo closes that: at the resume it also
// takes every unit to have used every window of the horizons up to now
// that any process could have emitted before the restart — those whose
// end plus grace is at most now plus MaxSkew (no window closes before its
// end plus grace on the wall clock of the process that closes it, and the
// processes' clocks are assumed to agree within MaxSkew). Let W be those
// windows of a horizon, n = |W| the count assumed: the first run's
// released partials hold u only in windows of W, at most n of them, and
// every window outside W that holds u is one the replay admitted while
// its count, which started at n, was below k: at most k − n. So u is in
// at most k windows of the horizon whatever the replay accepts. The cost
// is utility only, and only when the restart comes while windows that
// could have closed are still open (a stream whose event times lag the
// wall clock).
//
// Memory: one entry per unit with a kept event in a live horizon (the
// current one, and the next near its boundary), dropped with the horizon;
// TestMemoryPerHorizonUnit measures it.

// horizonState is the window admissions of one horizon on one partition.
type horizonState struct {
	// units maps a unit to its admitted windows, as offsets from the
	// horizon's first window (< T ≤ 2^20), in order of admission.
	units map[string][]int32
	// assumed is the number of windows every unit is taken to have used
	// already (the fail-safe: windows whose admissions are unknown).
	assumed int
}

// horizonOf returns the horizon of window start and the window's offset
// in it. Horizons are aligned to the stream's start (Start; the Unix
// epoch without one), as the release stage aligns them
// (stages/release.horizonStep): horizon h holds windows
// [Start + h·T·size, Start + (h+1)·T·size).
func (s *Stream) horizonOf(start int64) (h int64, at int32) {
	w := floorDiv(start-s.Start, s.Size)
	h = floorDiv(w, s.Horizon)
	return h, int32(w - h*s.Horizon)
}

// horizonStart returns the start (unix ms) of horizon h: its first
// window's start.
func (s *Stream) horizonStart(h int64) int64 { return s.Start + h*s.Horizon*s.Size }

// horizonEnd returns the end (unix ms) of horizon h: its last window's end.
func (s *Stream) horizonEnd(h int64) int64 { return s.horizonStart(h + 1) }

// admitWindow reports whether unit u may have an event kept in window
// start: the window is among u's admitted windows of its horizon, or u
// has fewer than MaxWindows. It changes nothing; admit records a new
// window once the event is kept. hs is the horizon's state (nil when it
// has none yet).
func (p *Partition) admitWindow(unit string, start int64) (ok, isNew bool, hs *horizonState, at int32) {
	h, at := p.s.horizonOf(start)
	hs = p.horizons[h]
	if hs == nil {
		return p.s.MaxWindows > 0 && p.assumedIn(h) < p.s.MaxWindows, true, nil, at
	}
	ws := hs.units[unit]
	// The unit's latest window first: a unit's events mostly fall in one
	// window at a time.
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i] == at {
			return true, false, hs, at
		}
	}
	return len(ws)+hs.assumed < p.s.MaxWindows, true, hs, at
}

// admit records window start (offset at in its horizon, state hs or nil)
// among unit's admitted windows.
func (p *Partition) admit(unit string, start int64, hs *horizonState, at int32) {
	if hs == nil {
		h, _ := p.s.horizonOf(start)
		hs = &horizonState{units: map[string][]int32{}, assumed: p.assumedIn(h)}
		p.horizons[h] = hs
	}
	hs.units[unit] = append(hs.units[unit], at)
}

// suppressed reports whether window start was emitted before the commit
// this partition resumed from (closeInto emits nothing for it). Its
// admissions are covered by the horizon's restored or assumed windows, so
// events replayed into it admit nothing: counting them again would only
// drop more.
func (p *Partition) suppressed(start int64) bool {
	return p.closedBefore != NoWatermark && start+p.s.Size <= p.closedBefore
}

// AssumedWindows returns the number of windows every unit is taken to
// have used in the horizon holding time t (the fail-safe; 0 when its
// admissions are all known).
func (p *Partition) AssumedWindows(t int64) int {
	if p.s.MaxWindows <= 0 || p.s.Horizon < 1 || t == NoWatermark {
		return 0
	}
	h, _ := p.s.horizonOf(p.s.WindowStart(t))
	if hs := p.horizons[h]; hs != nil {
		return hs.assumed
	}
	return 0
}

// dropHorizons forgets the horizons the watermark has passed the end of:
// all their windows are closed, so no event can be kept in them.
func (p *Partition) dropHorizons() {
	for h := range p.horizons {
		if p.s.horizonEnd(h) <= p.wm {
			delete(p.horizons, h)
		}
	}
}

// AssumeUpTo applies the fail-safe for every window that any process
// could have emitted by wall-clock time now (unix ms): in every horizon,
// whenever its state is made, every unit is taken to have used the
// horizon's windows whose end plus grace is at most now plus MaxSkew (see
// the comment at the top of this file). A partition calls it once, when it
// is assigned, whether or not it resumes from a commit: a process that
// died before its first commit may have emitted partials too. It returns
// the windows assumed in the horizon of now (for the log).
func (p *Partition) AssumeUpTo(now int64) int {
	if p.s.MaxWindows <= 0 || p.s.Horizon < 1 {
		return 0
	}
	skew := p.s.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew.Milliseconds()
	}
	p.assumeLimit = max(p.assumeLimit, now+skew-p.s.Grace)
	for h, hs := range p.horizons {
		hs.assumed = max(hs.assumed, p.assumedIn(h))
	}
	h, _ := p.s.horizonOf(p.s.WindowStart(now))
	return p.assumedIn(h)
}

// assumedIn is the number of windows of horizon h that every unit is
// taken to have used under AssumeUpTo: those ending at or before its
// limit (at most MaxWindows: more changes nothing).
func (p *Partition) assumedIn(h int64) int {
	if p.assumeLimit == NoWatermark {
		return 0
	}
	n := floorDiv(p.assumeLimit-p.s.horizonStart(h), p.s.Size)
	return int(min(max(n, 0), p.s.Horizon, int64(p.s.MaxWindows)))
}

// AssumeUsed is the fail-safe of a partition that cannot restore the
// admissions of windows of the horizon holding window start: every unit
// is taken to have used n windows of it already (at most MaxWindows, the
// default when n < 0), so it gets at most MaxWindows − n more, and none
// when n ≥ MaxWindows. It only ever lowers what is admitted afterwards.
func (p *Partition) AssumeUsed(start int64, n int) {
	if p.s.MaxWindows <= 0 || p.s.Horizon < 1 {
		return
	}
	if n < 0 || n > p.s.MaxWindows {
		n = p.s.MaxWindows
	}
	h, _ := p.s.horizonOf(start)
	hs := p.horizons[h]
	if hs == nil {
		hs = &horizonState{units: map[string][]int32{}, assumed: p.assumedIn(h)}
		p.horizons[h] = hs
	}
	hs.assumed = max(hs.assumed, n)
}
