package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dpstream/dpstream/schema"
)

// closedTruth is the exact statistics of an uninterrupted run (contribution
// bound 2, grace 200ms) over the given number of input partitions for every
// window that closes: all but the closing events' own window, which no
// later event closes.
func closedTruth(evs []map[string]any, partitions int) map[int64]truth {
	want, _ := truthWithLateness(evs, 2, partitions, 200)
	last := int64(-1 << 62)
	for w := range want {
		last = max(last, w)
	}
	delete(want, last)
	return want
}

// checkInvariants reads the topics of a run of the "trips" stream with
// releases n (count) and h (5-bin histogram) and returns every violation
// of DESIGN.md section 6, invariants 1 and 2: each release id charged once,
// every window in want charged, every published copy byte-identical to the
// ledger's payload and every charge published; every copy of a partial for
// one (window, input partition) identical, and the first copies (those the
// release stage merges) summing to want, the exact statistics of an
// uninterrupted single-instance run.
func checkInvariants(h *harness, want map[int64]truth) []string {
	var out []string
	// Invariant 1: charged once; every copy is the ledger's payload; every
	// window with events charged.
	payload := map[string][]byte{}
	for _, lc := range h.ledger() {
		if _, dup := payload[lc.ReleaseID]; dup {
			out = append(out, fmt.Sprintf("release %s is charged more than once in the ledger", lc.ReleaseID))
			continue
		}
		payload[lc.ReleaseID] = lc.Payload
	}
	for w := range want {
		for _, rel := range []string{"n", "h"} {
			if id := fmt.Sprintf("trips/%s/%d", rel, w); payload[id] == nil {
				out = append(out, fmt.Sprintf("release %s (a window with events) is not in the ledger", id))
			}
		}
	}
	copies := map[string]int{}
	for _, m := range h.ReadAll(h.cfg.Topics.Releases) {
		id := string(m.Key)
		copies[id]++
		p, ok := payload[id]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("release %s is on the releases topic (offset %d) without a ledger charge", id, m.Offset))
		case !bytes.Equal(p, m.Value):
			out = append(out, fmt.Sprintf("release %s: the copy at releases offset %d has bytes that differ from the ledger's payload", id, m.Offset))
		}
	}
	for id := range payload {
		if copies[id] == 0 {
			out = append(out, fmt.Sprintf("release %s is charged but never published", id))
		}
	}
	// Invariant 2: every copy of a partial is identical, and the first
	// copies (the ones the release stage merges) hold the exact statistics.
	first, repeats := readPartials(h)
	out = append(out, repeats...)
	firstP := make(map[partitionKey]schema.Partial, len(first))
	for k, f := range first {
		firstP[k] = f.p
	}
	got := sumPartials(firstP)
	for w, tr := range want {
		g := got[w]
		if g.count != tr.count || fmt.Sprint(g.bins) != fmt.Sprint(tr.bins) {
			out = append(out, fmt.Sprintf("window %d: statistics behind the release: count %d bins %v; uninterrupted run: count %d bins %v", w, g.count, g.bins, tr.count, tr.bins))
		}
	}
	for w, g := range got {
		if _, ok := want[w]; !ok && g.count != 0 {
			out = append(out, fmt.Sprintf("window %d: %d events counted in a window that has none", w, g.count))
		}
	}
	sort.Strings(out)
	return out
}

// partitionKey names one input partition's partial of one window.
type partitionKey struct {
	w int64
	p int32
}

// sumPartials merges the n and h statistics of partials over partitions.
func sumPartials(parts map[partitionKey]schema.Partial) map[int64]truth {
	got := map[int64]truth{}
	for k, p := range parts {
		g := got[k.w]
		if g.bins == nil {
			g.bins = make([]int64, 5)
		}
		for _, s := range p.Stats {
			switch s.Release {
			case "n":
				g.count += s.Count
			case "h":
				for j, c := range s.Bins {
					g.bins[j] += c
				}
			}
		}
		got[k.w] = g
	}
	return got
}

// partialDiff names the fields in which two partials differ.
func partialDiff(a, b schema.Partial) string {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var ma, mb map[string]any
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var d []string
	for k, va := range ma {
		if fmt.Sprint(va) != fmt.Sprint(mb[k]) {
			d = append(d, fmt.Sprintf("%s %v → %v", k, va, mb[k]))
		}
	}
	for k, vb := range mb {
		if _, ok := ma[k]; !ok {
			d = append(d, fmt.Sprintf("%s (absent) → %v", k, vb))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

// firstPartial is the first copy of one (window, input partition)'s
// partial on the partials topic: the one the release stage merges.
type firstPartial struct {
	b []byte
	p schema.Partial
}

// readPartials reads the partials topic and returns the first copy per
// (window, input partition), and a violation for each later copy that
// differs from it or any record that does not decode.
func readPartials(h *harness) (first map[partitionKey]firstPartial, violations []string) {
	first = map[partitionKey]firstPartial{}
	for _, m := range h.ReadAll(h.cfg.Topics.Partials) {
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			violations = append(violations, fmt.Sprintf("partial at offset %d does not decode: %v", m.Offset, err))
			continue
		}
		k := partitionKey{p.WindowStart, p.Partition}
		if f, ok := first[k]; !ok {
			first[k] = firstPartial{m.Value, p}
		} else if !bytes.Equal(f.b, m.Value) {
			violations = append(violations, fmt.Sprintf("window %d, input partition %d: a replayed partial (offset %d) differs from the first: %s", p.WindowStart, p.Partition, m.Offset, partialDiff(f.p, p)))
		}
	}
	return first, violations
}

// firstPartials returns the encoded first partial per (window, input
// partition) of a run whose partials checkInvariants checks.
func firstPartials(h *harness) map[partitionKey][]byte {
	first, _ := readPartials(h)
	out := make(map[partitionKey][]byte, len(first))
	for k, f := range first {
		out[k] = f.b
	}
	return out
}

// releaseIDs are the ids of both releases (n, h) of every window in want.
func releaseIDs(want map[int64]truth) map[string]bool {
	ids := map[string]bool{}
	for w := range want {
		for _, rel := range []string{"n", "h"} {
			ids[fmt.Sprintf("trips/%s/%d", rel, w)] = true
		}
	}
	return ids
}

// unreleased counts the ids not yet both charged in the ledger and
// published.
func unreleased(h *harness, ids map[string]bool) int {
	charged := map[string]bool{}
	for _, lc := range h.ledger() {
		charged[lc.ReleaseID] = true
	}
	published := map[string]bool{}
	for _, m := range h.ReadAll(h.cfg.Topics.Releases) {
		published[string(m.Key)] = true
	}
	n := 0
	for id := range ids {
		if !charged[id] || !published[id] {
			n++
		}
	}
	return n
}
