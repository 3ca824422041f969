package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
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

// checkInvariants reads the topics of a run of the "trips" stream (the
// releases n, a count, and h, a 5-bin histogram, and in the crash test's
// configuration z, a count per zone over public keys whose release is in
// chunks) and returns every violation of DESIGN.md section 6, invariants 1
// and 2: each release id charged once, every window in want charged, every
// published record byte-identical to the ledger's payload of its chunk
// (checkPublished) and every chunk of every charge published, each joined
// release whole with each public key once (joinAnswers); every copy of a
// partial (chunk) for one (window, input partition) identical, and the
// first copies (those the release stage merges) summing to want, the exact
// statistics of an uninterrupted single-instance run. For the continual
// releases (the crash configuration's cn and ch) it adds checkContinual's
// violations, and continualAccuracy's against want.
func checkInvariants(h *harness, want map[int64]truth) []string {
	// Invariant 1: charged once; every copy is the ledger's payload; every
	// window with events charged.
	ledgerRecords := h.fullLedger()
	answers, out := readAnswers(ledgerRecords)
	names := releaseNames(h)
	for w := range want {
		for _, rel := range names {
			if id := fmt.Sprintf("trips/%s/%d", rel, w); answers[id] == nil {
				out = append(out, fmt.Sprintf("release %s (a window with events) is not in the ledger", id))
			}
		}
	}
	if slices.Contains(names, crashZoneRelease) {
		// The crash configuration's z is meant to be in chunks in every
		// window; if it were not, the chunk checks would check nothing.
		for w := range want {
			if a := answers[fmt.Sprintf("trips/%s/%d", crashZoneRelease, w)]; a != nil && len(a.chunks) < 2 {
				out = append(out, fmt.Sprintf("test setup: release trips/%s/%d is in one record, not in chunks", crashZoneRelease, w))
			}
		}
	}
	out = append(out, checkPublished(answers, h.ReadAll(h.cfg.Topics.Releases))...)
	_, bad := joinAnswers(answers, publicKeys(h))
	out = append(out, bad...)
	// Continual releases: every restart continued the runs exactly (the
	// step logs chain and replay to every published running total, one
	// charge per horizon), and the totals are the truth plus noise of the
	// stated size.
	series, bad := checkContinual(h.plan, ledgerRecords)
	out = append(out, bad...)
	out = append(out, continualAccuracy(series, want)...)
	// Invariant 2: every copy of a partial is identical, and the first
	// copies (the ones the release stage merges) hold the exact statistics.
	first, repeats := readPartials(h)
	out = append(out, repeats...)
	firstP := make(map[partitionKey]schema.Partial, len(first))
	for k, f := range first {
		firstP[k] = f.p
	}
	got := sumPartials(firstP)
	perZone := slices.Contains(names, crashZoneRelease)
	for w, tr := range want {
		g := got[w]
		if g.count != tr.count || fmt.Sprint(g.bins) != fmt.Sprint(tr.bins) {
			out = append(out, fmt.Sprintf("window %d: statistics behind the release: count %d bins %v; uninterrupted run: count %d bins %v", w, g.count, g.bins, tr.count, tr.bins))
		}
		if perZone && !maps.Equal(g.zones, tr.zones) {
			out = append(out, fmt.Sprintf("window %d: counts per zone behind release %s: %d zones, %d events; uninterrupted run: %d zones, %d events (%s)",
				w, crashZoneRelease, len(g.zones), sumValues(g.zones), len(tr.zones), sumValues(tr.zones), zoneDiff(g.zones, tr.zones)))
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

// releaseNames are the names of the releases of the harness's first
// stream, in configuration order.
func releaseNames(h *harness) []string {
	var out []string
	for _, r := range h.plan[0].Releases {
		out = append(out, r.Config.Name)
	}
	return out
}

// publicKeys returns, by release name, the public keys of the harness's
// per-key releases that have them (kind.Plan.Widest fills them in).
func publicKeys(h *harness) map[string][]string {
	out := map[string][]string{}
	for _, ps := range h.plan {
		for _, r := range ps.Releases {
			var rel schema.Release
			r.Kind.Widest(&rel)
			if len(rel.Fields) > 0 && len(rel.Keys) > 0 {
				out[r.Config.Name] = rel.Keys
			}
		}
	}
	return out
}

// ledgerAnswer is the counted answer of one release id in the ledger: the
// payloads of its chunks in order (chunk 0 is the charge's payload, the
// others the chunk records ledger.Book matched with it; a release in one
// record has one).
type ledgerAnswer struct {
	chunks [][]byte
	offset int64 // of the charge
}

// readAnswers applies the ledger's records in order (ledger.Book, as every
// rebuild of the budget does) and returns the counted answer of each
// release id: its first valid charge, with the chunks matched with it. It
// reports a record that does not apply, a second valid charge of an id
// with another answer (a byte-identical repeat is a retried write), and a
// valid charge whose payload is chunk 0 of a release in chunks that the
// ledger holds no matched chunks of (it is counted but could never be
// published whole).
func readAnswers(ms []kafka.Message) (map[string]*ledgerAnswer, []string) {
	var out []string
	answers := map[string]*ledgerAnswer{}
	book := ledgerBooks{}
	for _, m := range ms {
		e, err := book.Apply(m)
		if err != nil {
			return answers, append(out, fmt.Sprintf("ledger: %v", err))
		}
		if e.Type != schema.LedgerTypeCharge || !e.Valid || e.Identical {
			continue
		}
		id := e.Charge.ReleaseID
		if e.Duplicate {
			out = append(out, fmt.Sprintf("release %s is charged more than once in the ledger", id))
			continue
		}
		if e.Chunks == nil {
			if r, err := schema.DecodeRelease(e.Charge.Payload); err == nil && r.Chunks > 1 {
				out = append(out, fmt.Sprintf("release %s: its charge (ledger offset %d) is chunk 0 of %d, and the ledger holds no chunk records matched with it", id, e.Offset, r.Chunks))
			}
		}
		answers[id] = &ledgerAnswer{chunks: append([][]byte{e.Charge.Payload}, e.Chunks...), offset: e.Offset}
	}
	return answers, out
}

// checkPublished checks the releases topic against the ledger's answers:
// every record's release id is charged, the record is byte-identical to
// the answer's payload of its chunk (the ChunkHeader's index, or for a
// record without the header the index its value carries, 0 for a release
// in one record), and every chunk of every answer is published at least
// once. So a chunk of another attempt (a recomputed release, a fenced
// instance's answer, a mixture of attempts) or a lost chunk is reported.
func checkPublished(answers map[string]*ledgerAnswer, ms []kafka.Message) []string {
	var out []string
	copies := map[string]map[int]int{}
	for _, m := range ms {
		id := string(m.Key)
		a, ok := answers[id]
		if !ok {
			out = append(out, fmt.Sprintf("release %s is on the releases topic (offset %d) without a ledger charge", id, m.Offset))
			continue
		}
		i, n, err := publishedChunk(m)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("release %s: the record at releases offset %d: %v", id, m.Offset, err))
			continue
		case n != len(a.chunks):
			out = append(out, fmt.Sprintf("release %s: the record at releases offset %d is chunk %d of %d, but the ledger's answer is in %d (so it differs from the ledger's payload)", id, m.Offset, i, n, len(a.chunks)))
			continue
		case !bytes.Equal(a.chunks[i], m.Value):
			what := "the ledger's payload"
			if n > 1 {
				what = fmt.Sprintf("the ledger's payload of that chunk (%s)", map[bool]string{true: "the charge's", false: "its matched chunk record"}[i == 0])
			}
			out = append(out, fmt.Sprintf("release %s: the copy of chunk %d of %d at releases offset %d has bytes that differ from %s", id, i, n, m.Offset, what))
			continue
		}
		if copies[id] == nil {
			copies[id] = map[int]int{}
		}
		copies[id][i]++
	}
	for id, a := range answers {
		switch {
		case len(copies[id]) == 0:
			out = append(out, fmt.Sprintf("release %s is charged but never published", id))
		case len(copies[id]) < len(a.chunks):
			for i := range a.chunks {
				if copies[id][i] == 0 {
					out = append(out, fmt.Sprintf("release %s: chunk %d of %d is charged but never published", id, i, len(a.chunks)))
				}
			}
		}
	}
	return out
}

// publishedChunk returns which chunk of its release a releases-topic record
// is, and of how many (1 for a release in one record): from its
// ChunkHeader, or, without the header, from its value.
func publishedChunk(m kafka.Message) (i, n int, err error) {
	for _, hd := range m.Headers {
		if hd.Key != release.ChunkHeader {
			continue
		}
		if _, err := fmt.Sscanf(string(hd.Value), "%d/%d", &i, &n); err != nil || i < 0 || i >= n || n < 2 {
			return 0, 0, fmt.Errorf("malformed %s header %q", release.ChunkHeader, hd.Value)
		}
		return i, n, nil
	}
	r, err := schema.DecodeRelease(m.Value)
	if err != nil {
		return 0, 0, fmt.Errorf("does not decode: %w", err)
	}
	if r.Chunks < 2 {
		return 0, 1, nil
	}
	return int(r.Chunk), int(r.Chunks), nil
}

// joinAnswers decodes each answer and joins its chunks (schema.JoinRelease:
// one release, every chunk once, keys sorted across them with none twice),
// and checks that each release of status ok with public keys (by release
// name) publishes exactly those keys, each once. It returns the joined
// releases by id. (checkPublished has checked that the releases topic
// holds exactly these chunks, so these are what a consumer joins.)
func joinAnswers(answers map[string]*ledgerAnswer, public map[string][]string) (map[string]schema.Release, []string) {
	var out []string
	joined := make(map[string]schema.Release, len(answers))
	for id, a := range answers {
		parts := make([]schema.Release, len(a.chunks))
		ok := true
		for i, c := range a.chunks {
			r, err := schema.DecodeRelease(c)
			if err != nil {
				out = append(out, fmt.Sprintf("release %s: chunk %d of %d in the ledger does not decode: %v", id, i, len(a.chunks), err))
				ok = false
				break
			}
			parts[i] = r
		}
		if !ok {
			continue
		}
		r, err := schema.JoinRelease(parts)
		if err != nil {
			out = append(out, fmt.Sprintf("release %s: its %d chunks do not join: %v", id, len(a.chunks), err))
			continue
		}
		joined[id] = r
		keys, isPublic := public[r.Release]
		if !isPublic || r.Status != release.StatusOK {
			continue
		}
		if !slices.Equal(r.Keys, keys) {
			out = append(out, fmt.Sprintf("release %s (%d chunks) publishes %d keys, not its %d public keys each once (%s)", id, len(a.chunks), len(r.Keys), len(keys), keysDiff(r.Keys, keys)))
		}
	}
	return joined, out
}

// keysDiff describes how the keys got differ from want (both sorted, want
// without repeats): the first key missing, repeated or extra.
func keysDiff(got, want []string) string {
	seen := map[string]int{}
	for _, k := range got {
		seen[k]++
	}
	for _, k := range want {
		switch seen[k] {
		case 0:
			return fmt.Sprintf("%q missing", k)
		case 1:
		default:
			return fmt.Sprintf("%q %d times", k, seen[k])
		}
		delete(seen, k)
	}
	for k := range seen {
		return fmt.Sprintf("%q not a public key", k)
	}
	return "out of order"
}

// partitionKey names one chunk of one input partition's partial of one
// window (chunk 0 for a partial in one record).
type partitionKey struct {
	w     int64
	p     int32
	chunk int32
}

// sumPartials merges the n and h statistics of partials over partitions,
// and the counts per zone of release z (crashZoneRelease). The partials may
// be chunks: chunk 0 carries the counts and bins, every chunk a slice of
// the groups.
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
			case crashZoneRelease:
				for _, gr := range s.Groups {
					if g.zones == nil {
						g.zones = map[string]int64{}
					}
					g.zones[gr.Key] += gr.Count
				}
			}
		}
		got[k.w] = g
	}
	return got
}

func sumValues(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// zoneDiff names the first zones (in order) whose counts differ.
func zoneDiff(got, want map[string]int64) string {
	var d []string
	for _, z := range slices.Sorted(maps.Keys(want)) {
		if got[z] != want[z] {
			d = append(d, fmt.Sprintf("%s %d, want %d", z, got[z], want[z]))
		}
	}
	for _, z := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[z]; !ok {
			d = append(d, fmt.Sprintf("%s %d, want none", z, got[z]))
		}
	}
	if len(d) > 5 {
		d = append(d[:5], "…")
	}
	return strings.Join(d, "; ")
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
// (window, input partition, chunk), and a violation for each later copy that
// differs from it or any record that does not decode.
func readPartials(h *harness) (first map[partitionKey]firstPartial, violations []string) {
	first = map[partitionKey]firstPartial{}
	for _, m := range h.ReadAll(h.cfg.Topics.Partials) {
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			violations = append(violations, fmt.Sprintf("partial at offset %d does not decode: %v", m.Offset, err))
			continue
		}
		k := partitionKey{p.WindowStart, p.Partition, p.Chunk}
		if f, ok := first[k]; !ok {
			first[k] = firstPartial{m.Value, p}
		} else if !bytes.Equal(f.b, m.Value) {
			violations = append(violations, fmt.Sprintf("window %d, input partition %d: a replayed partial (offset %d) differs from the first: %s", p.WindowStart, p.Partition, m.Offset, partialDiff(f.p, p)))
		}
	}
	return first, violations
}

// firstPartials returns the encoded first partial (chunk) per (window,
// input partition, chunk) of a run whose partials checkInvariants checks.
func firstPartials(h *harness) map[partitionKey][]byte {
	first, _ := readPartials(h)
	out := make(map[partitionKey][]byte, len(first))
	for k, f := range first {
		out[k] = f.b
	}
	return out
}

// releaseIDs are the ids of the releases of the harness's first stream
// ("trips") in every window in want.
func releaseIDs(h *harness, want map[int64]truth) map[string]bool {
	ids := map[string]bool{}
	for w := range want {
		for _, rel := range releaseNames(h) {
			ids[fmt.Sprintf("trips/%s/%d", rel, w)] = true
		}
	}
	return ids
}

// unreleased counts the ids not yet both charged in the ledger and
// published whole (publishedIDs).
func unreleased(h *harness, ids map[string]bool) int {
	charged := map[string]bool{}
	for _, lc := range h.ledger() {
		charged[lc.ReleaseID] = true
	}
	published := publishedIDs(h.ReadAll(h.cfg.Topics.Releases))
	n := 0
	for id := range ids {
		if !charged[id] || !published[id] {
			n++
		}
	}
	return n
}

// publishedIDs returns the release ids of which a releases topic holds a
// record without the ChunkHeader (a release in one record) or every chunk
// (by the header: the release stage publishes every chunk with it).
func publishedIDs(ms []kafka.Message) map[string]bool {
	whole := map[string]bool{}
	chunks := map[string]map[[2]int]bool{} // id → {index, count}
	for _, m := range ms {
		id := string(m.Key)
		header := false
		for _, hd := range m.Headers {
			var i, n int
			if hd.Key != release.ChunkHeader {
				continue
			}
			header = true
			if _, err := fmt.Sscanf(string(hd.Value), "%d/%d", &i, &n); err == nil && i >= 0 && i < n {
				if chunks[id] == nil {
					chunks[id] = map[[2]int]bool{}
				}
				chunks[id][[2]int{i, n}] = true
			}
		}
		if !header {
			whole[id] = true
		}
	}
	for id, seen := range chunks {
		counts := map[int]int{}
		for c := range seen {
			counts[c[1]]++
		}
		for n, have := range counts {
			if have == n {
				whole[id] = true
			}
		}
	}
	return whole
}
