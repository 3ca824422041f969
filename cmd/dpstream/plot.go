package main

// Terminal charts of releases for 'dpstream tail releases --plot' and
// 'dpstream simulate --plot'.
//
// Everything here is post-processing of published releases: it reads only
// what a release already carries and never touches data or noise, so it
// has no privacy cost. A release's chart is its kind's (kind.Renderer,
// drawn with package chart); this file adds the header line, refusals and
// the line on synthetic samples, and falls back to a release's shape for a
// kind this build does not know. It is written to survive any record,
// including hand-made or corrupted ones.

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// plotRelease writes r as a header line, its chart or value, and a blank
// line. It never fails on the release's contents; the error is w's.
func plotRelease(w io.Writer, r schema.Release, o chart.Options) error {
	lines := append([]string{o.Paint(chart.Bold, plotHeader(r))}, plotBody(r, o)...)
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n\n")
	if err != nil {
		return fmt.Errorf("write plot of %s: %w", r.ReleaseID, err)
	}
	return nil
}

// plotHeader is the first line of every plotted release: which release,
// its window in UTC, its status and the stream's budget after it.
func plotHeader(r schema.Release) string {
	start, end := time.UnixMilli(r.WindowStart).UTC(), time.UnixMilli(r.WindowEnd).UTC()
	endLayout := "2006-01-02 15:04:05"
	if start.Format(time.DateOnly) == end.Format(time.DateOnly) {
		endLayout = "15:04:05"
	}
	kind := r.Kind
	if kind == "" {
		kind = "?"
	}
	status := r.Status
	if status == "" {
		status = "?"
	}
	return fmt.Sprintf("%s/%s (%s)  %s–%s UTC  %s  ε spent %s of %s",
		r.Stream, r.Release, kind, start.Format("2006-01-02 15:04:05"), end.Format(endLayout),
		status, chart.Epsilon(r.EpsilonSpent), chart.Epsilon(r.EpsilonBudget))
}

// plotBody is everything after the header: a refusal, or the chart the
// release's kind draws of it (kind.RendererFor, which draws a release of
// an unknown kind, or one that does not have its kind's shape, by the
// data it carries), and then a line on the synthetic samples, if the
// release has any.
func plotBody(r schema.Release, o chart.Options) []string {
	switch r.Status {
	case "ok":
	case "budget_exhausted":
		return []string{o.Note("refused: the stream's budget is exhausted; nothing was released for this window")}
	default:
		return []string{o.Note(fmt.Sprintf("status %q: not plotted", r.Status))}
	}
	var lines []string
	if rd, ok := kind.RendererFor(r); ok {
		lines = rd.Render(r, o)
	} else {
		lines = []string{o.Note(fmt.Sprintf("kind %q: nothing to plot in the release", r.Kind))}
	}
	return append(lines, plotSamples(r, o)...)
}

// plotSamples is the line on a release's synthetic samples: how many,
// not the values, which are draws from the chart above it and would only
// repeat it noisily. A sample has as many values as the release's kind
// says (kind.Renderer.SampleWidth, e.g. one per field); a release of a
// kind without a renderer has one value per sample.
func plotSamples(r schema.Release, o chart.Options) []string {
	if len(r.Samples) == 0 {
		return nil
	}
	d := 1
	if rd, ok := kind.RendererOf(r.Kind); ok {
		d = max(rd.SampleWidth(r), 1)
	}
	if len(r.Samples)%d != 0 {
		return []string{o.Note(fmt.Sprintf("%d synthetic values do not make whole samples of %d fields: not counted", len(r.Samples), d))}
	}
	k := len(r.Samples) / d
	noun := "samples"
	if k == 1 {
		noun = "sample"
	}
	return []string{fmt.Sprintf("%d synthetic %s (drawn from this release; not plotted)", k, noun)}
}

// runningSeries is one horizon of a continual release as 'simulate --plot'
// draws it at the horizon's end (plotRunning): the released running totals
// of its windows with their 95% half-widths and, with --truth, the exact
// running totals. A histogram's series is the total over its bins.
type runningSeries struct {
	Stream, Release, Kind string
	Horizon               int   // T, windows per horizon
	HorizonStart          int64 // start of the horizon's first window (ms)
	Size                  int64 // window size (ms)
	Bins                  int   // coordinates of the running totals
	// Steps (1-based horizon windows), Starts (window starts), Totals,
	// Halves and Truth (NaN where unknown) have one value per released
	// window.
	Steps          []int
	Starts         []int64
	Totals, Halves []float64
	Truth          []float64
	hasTruth       bool
}

// add appends a release of the horizon, with its exact running totals if
// known (nil otherwise). A histogram's point is the total over its bins,
// with the half-width of a sum of independent noises (each bin's running
// total has its own noise): the root of the sum of the squared ones.
func (s *runningSeries) add(r schema.Release, truth []float64) {
	total, half := math.NaN(), math.NaN()
	switch {
	case r.RunningTotal != nil && r.RunningInterval95 != nil:
		total, half = *r.RunningTotal, *r.RunningInterval95
	case len(r.RunningTotals) > 0 && len(r.RunningIntervals95) == len(r.RunningTotals):
		total, half = 0, 0
		for i, v := range r.RunningTotals {
			total += v
			half += r.RunningIntervals95[i] * r.RunningIntervals95[i]
		}
		half = math.Sqrt(half)
	}
	exact := math.NaN()
	if truth != nil {
		exact = 0
		for _, v := range truth {
			exact += v
		}
		s.hasTruth = true
	}
	s.Steps, s.Starts = append(s.Steps, int(r.HorizonWindow)), append(s.Starts, r.WindowStart)
	s.Totals, s.Halves, s.Truth = append(s.Totals, total), append(s.Halves, half), append(s.Truth, exact)
}

// plotRunning writes the running totals of one horizon of a continual
// release: a header, the totals with their 95% band (and the exact totals
// with --truth), then the band around the released totals at a scale that
// shows it, with the exact totals' deviation from them, and a line on the
// band's width and, with --truth, how often it held the exact total and
// the largest error. Like every chart here it is post-processing of the
// releases; the exact totals are the data (simulate --truth only).
func plotRunning(w io.Writer, s runningSeries, o chart.Options, withTruth bool) error {
	n := len(s.Totals)
	if n == 0 {
		return nil
	}
	layout := "2006-01-02 15:04"
	if s.Size%(24*3600*1000) == 0 {
		layout = time.DateOnly
	}
	day := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(layout) }
	what := "running total"
	if s.Bins > 1 {
		what = fmt.Sprintf("running total over the %d bins", s.Bins)
	}
	header := fmt.Sprintf("%s/%s (%s)  %s, horizon windows %d–%d of %d  %s – %s UTC",
		chart.Clean(s.Stream, chart.MaxName), chart.Clean(s.Release, chart.MaxName), chart.Clean(s.Kind, chart.MaxName),
		what, s.Steps[0], s.Steps[n-1], s.Horizon, day(s.Starts[0]), day(s.Starts[n-1]))
	first, last := day(s.Starts[0]), day(s.Starts[n-1])
	truth := withTruth && s.hasTruth
	lo, hi := make([]float64, n), make([]float64, n)
	zero, dev, bLo, bHi := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		lo[i], hi[i] = s.Totals[i]-s.Halves[i], s.Totals[i]+s.Halves[i]
		bLo[i], bHi[i] = -s.Halves[i], s.Halves[i]
		dev[i] = s.Truth[i] - s.Totals[i]
	}
	top := chart.BandSeries{Lo: lo, Hi: hi, Mid: s.Totals, First: first, Last: last}
	errs := chart.BandSeries{Lo: bLo, Hi: bHi, Mid: zero, First: first, Last: last}
	legend, errLegend := "released running total (•) and its 95% interval (░)", "the 95% interval around the released total (•, at 0)"
	if truth {
		top.Truth, errs.Truth = s.Truth, dev
		legend += ", exact (× where it leaves the •'s row, ⊕ on it)"
		errLegend = "exact − released (×; ⊕ in the released total's row) against " + errLegend
	}
	lines := []string{o.Paint(chart.Bold, header), legend}
	lines = append(lines, chart.Band(top, o)...)
	lines = append(lines, errLegend)
	lines = append(lines, chart.Band(errs, o)...)
	minH, maxH := math.Inf(1), math.Inf(-1)
	for _, h := range s.Halves {
		if chart.Finite(h) {
			minH, maxH = math.Min(minH, h), math.Max(maxH, h)
		}
	}
	if minH <= maxH {
		lines = append(lines, fmt.Sprintf("95%% interval ±%s … ±%s", chart.Num(round3(minH)), chart.Num(round3(maxH))))
	}
	if truth {
		in, known, worst, at := 0, 0, -1.0, 0
		for i := range n {
			if !chart.Finite(dev[i]) || !chart.Finite(s.Halves[i]) {
				continue
			}
			known++
			if math.Abs(dev[i]) <= s.Halves[i] {
				in++
			}
			if e := math.Abs(dev[i]); e > worst {
				worst, at = e, i
			}
		}
		if known > 0 {
			lines = append(lines, fmt.Sprintf("exact total inside the 95%% interval in %d of %d windows (%s); largest |released − exact| %s (%s)",
				in, known, chart.Percent(float64(in)/float64(known)), chart.Num(round3(worst)), day(s.Starts[at])))
		}
	}
	if _, err := io.WriteString(w, strings.Join(lines, "\n")+"\n\n"); err != nil {
		return fmt.Errorf("write running totals of %s: %w", s.Release, err)
	}
	return nil
}

// round3 rounds x to three significant digits, for the summary lines.
func round3(x float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	if err != nil {
		return x
	}
	return v
}
