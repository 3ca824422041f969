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
