package e2e

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpstream/dpstream/internal/pipeline"
	"github.com/dpstream/dpstream/internal/testkit"
	"github.com/dpstream/dpstream/mechanism/noise"
	"github.com/dpstream/dpstream/schema"
	"github.com/dpstream/dpstream/stages/release"
)

// The chunked end-to-end test: a per-key release with 10⁴ keys per window,
// too large for one Kafka record, through the whole pipeline on the broker
// under test (the embedded one, or Apache Kafka with -tags integration).
//
// Sizes: a key here is 200 bytes (under the 256 a key may have), so a
// partial's group takes about 205 bytes and a release's key with its value
// and interval about 218. Each window has 10,000 keys with one event each
// over 2 input partitions: each partition's partial holds about 5,000
// groups, about 1 MB, and the release lists 12,000 public keys, about 2.6
// MB; both exceed schema.MaxRecordBytes (900,000), so both are written in
// chunks, with 20,000 events in all.
const (
	chunkKeys     = 12_000 // public keys of the release
	chunkWindows  = 2      // windows with events
	chunkPadBytes = 189    // "zone-%05d-" is 11 bytes
)

// chunkZone is public key i; the keys sort in index order.
func chunkZone(i int) string {
	return fmt.Sprintf("zone-%05d-", i) + strings.Repeat("x", chunkPadBytes)
}

// chunkHasEvents says whether key i has an event in every window: 5 in 6
// keys do, the others are released as noise only.
func chunkHasEvents(i int) bool { return i%6 != 5 }

// chunkValue is the value of key i's one event in window w, an integer in
// [0, 100]: the keys' sums spread over the whole range, so a value
// released under another key's name would be far from its truth.
func chunkValue(i, w int) float64 { return float64((i*37 + w*11) % 101) }

// chunkConfig is a sum of v in [0, 100] per zone over the public keys
// (Laplace noise, ε = 20: a unit has one event, so the sensitivity is 100
// and the noise scale 5), on a 2-partition stream whose units keep one
// event per window; windows close by event time only.
func chunkConfig() *testkit.Pipeline {
	keys := make([]string, chunkKeys)
	for i := range keys {
		keys[i] = chunkZone(i)
	}
	return testkit.NewPipeline(testkit.NewStream("zones", "events").Partitions(2).
		Window(time.Second, 200*time.Millisecond, 10*time.Minute).MaxEvents(1).Budget(1000, 1e-6).Releases(
		testkit.Sum("fare", "v", 0, 100).Set("group_by", "zone").Set("keys", keys).Noise("laplace").Epsilon(20)))
}

// chunkEvents are one event per key with events per window, each from a
// unit of its own, then one closing event per partition in window
// chunkWindows.
func chunkEvents() []map[string]any {
	var out []map[string]any
	for w := range chunkWindows {
		for i := range chunkKeys {
			if !chunkHasEvents(i) {
				continue
			}
			out = append(out, map[string]any{"user": fmt.Sprintf("u%05d-%d", i, w), "ts": base + int64(w)*1000 + int64(i*7919%1000),
				"v": chunkValue(i, w), "zone": chunkZone(i)})
		}
	}
	for _, ev := range closers(chunkWindows, 2) {
		ev["zone"] = chunkZone(0)
		out = append(out, ev)
	}
	return out
}

// TestEndToEndChunked runs a per-key release of 12,000 public keys, 10,000
// of them with events, in two windows through an accumulate and a release
// instance, and checks on the topics:
//
//   - the partials are in chunks, each at most schema.MaxRecordBytes; the
//     chunks of each (window, input partition) join (schema.JoinPartial),
//     and the joined partials hold every key with events once, with its
//     exact units and count;
//   - each window's release is charged once and is in chunks, each at most
//     schema.MaxRecordBytes; every chunk is published exactly once,
//     byte-identical to the ledger's payload of that chunk (the charge's
//     for chunk 0, the chunk record ledger.Book matched with the charge for
//     the others); the chunks join (schema.JoinRelease) into one result
//     per release id that holds each public key exactly once
//     (checkPublished and joinAnswers, the crash test's checks);
//   - the released values are the exact sums plus noise of the stated
//     scale: for every key |value − truth| ≤ 8 × its 95% interval, and at
//     least 93% of the keys within their interval. With Laplace noise
//     P(|X| > k·interval) ≈ 20^−k, so the first fails by chance with
//     probability about 24,000 · 20^−8 ≈ 1e-6; the second needs at most 93%
//     of 12,000 keys within a 95% interval, a binomial deviation of 9
//     standard deviations (Chernoff: < 1e-16). A value released under
//     another key's name (chunks joined out of order, keys and values
//     misaligned) is off by 33 on average, three times the interval, and
//     fails the second.
func TestEndToEndChunked(t *testing.T) {
	h := newHarness(t, chunkConfig())
	evs := chunkEvents()
	acc := h.start("acc", pipeline.Stages{Accumulate: true}, nil)
	rel := h.start("rel", pipeline.Stages{Release: true}, noise.New(noise.SeededSource(13)))
	h.ProduceJSON(h.cfg.Streams[0].Topic, evs, "user")
	ids := map[string]bool{}
	for w := range chunkWindows {
		ids[fmt.Sprintf("zones/fare/%d", base+int64(w)*1000)] = true
	}
	waitFor(t, 180*time.Second, "both windows' releases charged and published whole", func() bool { return unreleased(h, ids) == 0 }, acc, rel)
	acc.stop()
	rel.stop()

	// The truth: each key with events has one unit and one event of value
	// chunkValue per window.
	truthOf := func(w, i int) (units, sum float64) {
		if !chunkHasEvents(i) {
			return 0, 0
		}
		return 1, chunkValue(i, w)
	}

	// Partials: in chunks, and joined, the exact statistics.
	type wp struct {
		w int64
		p int32
	}
	parts := map[wp]map[int32]schema.Partial{}
	chunked := map[int64]int{}
	for _, m := range h.ReadAll(h.cfg.Topics.Partials) {
		if len(m.Value) > schema.MaxRecordBytes {
			t.Errorf("partial at offset %d is %d bytes, more than %d", m.Offset, len(m.Value), schema.MaxRecordBytes)
		}
		p, err := schema.DecodePartial(m.Value)
		if err != nil {
			t.Fatalf("partial at offset %d: %v", m.Offset, err)
		}
		k := wp{p.WindowStart, p.Partition}
		if parts[k] == nil {
			parts[k] = map[int32]schema.Partial{}
		}
		if _, dup := parts[k][p.Chunk]; !dup {
			parts[k][p.Chunk] = p
			if p.Chunk == 0 && p.Chunks >= 2 {
				chunked[p.WindowStart]++
			}
		}
	}
	for w := range chunkWindows {
		start := base + int64(w)*1000
		if chunked[start] == 0 {
			t.Errorf("window %d: no partial is in chunks; the test would not exercise chunked partials", w)
		}
		got := map[string][2]int64{} // key → units, count
		for p := range int32(2) {
			cs := parts[wp{start, p}]
			var list []schema.Partial
			for _, c := range cs {
				list = append(list, c)
			}
			if len(list) == 0 {
				t.Errorf("window %d: no partial of input partition %d", w, p)
				continue
			}
			joined, err := schema.JoinPartial(list)
			if err != nil {
				t.Errorf("window %d partition %d: %v", w, p, err)
				continue
			}
			for _, rs := range joined.Stats {
				for _, g := range rs.Groups {
					if _, dup := got[g.Key]; dup {
						// A unit's events are on one partition: a key
						// with one unit is in one partition's partial.
						t.Errorf("window %d: key %.16s… in the partials of two partitions", w, g.Key)
					}
					got[g.Key] = [2]int64{g.Units, g.Count}
				}
			}
		}
		wrong := 0
		for i := range chunkKeys {
			units, _ := truthOf(w, i)
			g, ok := got[chunkZone(i)]
			if ok != (units > 0) || g != [2]int64{int64(units), int64(units)} {
				wrong++
			}
		}
		if wrong > 0 || len(got) != chunkKeys*5/6 {
			t.Errorf("window %d: the joined partials hold %d keys, %d of the %d public keys with wrong units or counts (want %d keys with one unit and one event each)",
				w, len(got), wrong, chunkKeys, chunkKeys*5/6)
		}
		t.Logf("window %d: %d of 2 partitions' partials in chunks, %d keys", w, chunked[start], len(got))
	}

	// Releases: one result per id, in chunks, each chunk published once
	// and byte-identical to the ledger's.
	answers, violations := readAnswers(h.ReadAll(h.cfg.Topics.Ledger))
	published := h.ReadAll(h.cfg.Topics.Releases)
	violations = append(violations, checkPublished(answers, published)...)
	joined, bad := joinAnswers(answers, publicKeys(h))
	violations = append(violations, bad...)
	for _, v := range violations {
		t.Error(v)
	}
	copies := map[string]int{}
	for _, m := range published {
		i, n, err := publishedChunk(m)
		if err != nil {
			t.Fatalf("release record at offset %d: %v", m.Offset, err)
		}
		if len(m.Value) > schema.MaxRecordBytes {
			t.Errorf("release record at offset %d is %d bytes, more than %d", m.Offset, len(m.Value), schema.MaxRecordBytes)
		}
		copies[fmt.Sprintf("%s %d/%d", m.Key, i, n)]++
	}
	for c, n := range copies {
		if n != 1 {
			t.Errorf("%s published %d times in a run without a crash", c, n)
		}
	}
	for w := range chunkWindows {
		id := fmt.Sprintf("zones/fare/%d", base+int64(w)*1000)
		a, r := answers[id], joined[id]
		if a == nil || r.ReleaseID == "" {
			t.Errorf("%s: no release to check", id)
			continue
		}
		if len(a.chunks) < 2 {
			t.Errorf("%s is in one record: the test would not exercise chunked releases", id)
		}
		if r.Status != release.StatusOK || len(r.Values) != chunkKeys || len(r.Intervals95) != chunkKeys {
			t.Errorf("%s: status %s, %d values and %d intervals for %d keys", id, r.Status, len(r.Values), len(r.Intervals95), len(r.Keys))
			continue
		}
		within := 0
		for i := range chunkKeys {
			_, sum := truthOf(w, i)
			d, iv := math.Abs(r.Values[i]-sum), r.Intervals95[i]
			if d <= iv {
				within++
			}
			if d > 8*iv {
				t.Errorf("%s key %d: value %g, exact sum %g: off by more than 8 × its 95%% interval %g", id, i, r.Values[i], sum, iv)
			}
		}
		frac := float64(within) / chunkKeys
		if frac < 0.93 {
			t.Errorf("%s: %.3f of the keys' values within their 95%% interval of the exact sum, want at least 0.93", id, frac)
		}
		t.Logf("%s: %d chunks (%d keys, %.3f of the values within their 95%% interval, %g)", id, len(a.chunks), len(r.Keys), frac, r.Intervals95[0])
	}
}
