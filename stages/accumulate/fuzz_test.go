package accumulate

import (
	"math"
	"testing"
	"time"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// FuzzAdmitAndAdd feeds arbitrary record values through the whole
// accumulate path of a stream with one release of every kind: decoding,
// extraction, the partition and future checks (Admit), then windowing,
// contribution bounding and the exact statistics (Partition.Add). Nothing
// may panic; an admitted event has only finite values and a valid category
// index, and Add accepts every admitted event (an error would stop the
// stage on valid input). Run it for real with
// go test -fuzz=FuzzAdmitAndAdd ./stages/accumulate/.
func FuzzAdmitAndAdd(f *testing.F) {
	dec, err := schema.NewDecoder(schema.FormatJSON, "", 0)
	if err != nil {
		f.Fatal(err)
	}
	sc := mregression.Scaling{FeatureBounds: [][2]float64{{0, 10}}, Intercept: true, TargetBounds: [2]float64{-5, 5}}
	s := build(&Stream{Name: "s", Size: 1000, Grace: 100, IdleTimeout: time.Minute, MaxEvents: 2, UnitContributions: true, Start: 1000},
		relSpec{Name: "n", Kind: "count"},
		relSpec{Name: "sum", Kind: "sum", Field: "v", Lo: -1, Hi: 1},
		relSpec{Name: "avg", Kind: "mean", Field: "v", Lo: -1, Hi: 1},
		relSpec{Name: "h", Kind: "histogram", Field: "v", Lo: -1, Hi: 1, Bins: 3, BinCap: 1,
			More: []moreField{{Axis: aggregate.Axis{Lo: 0, Hi: 10, Bins: 2}, Value: 7}}},
		relSpec{Name: "d", Kind: "density", Field: "v", Lo: -1, Hi: 1, Terms: 3},
		relSpec{Name: "rr", Kind: "randomized_response", Field: "c", Categories: 2},
		relSpec{Name: "fit", Kind: "regression", Field: "y", Regression: &regFields{Scaling: sc, Features: []int{7}}},
	)
	x := &Extractor{Unit: "u", EventTime: "ts", Fields: []string{"", "v", "v", "v", "v", "c", "y", "w"},
		Categories: []map[string]int{nil, nil, nil, nil, nil, {"a": 0, "b": 1}, nil, nil}}
	in := &Input{Stream: s, Decoder: dec, Extractor: x}
	for _, seed := range []string{
		`{"u":"p1","ts":1500,"v":0.5,"c":"a","y":1,"w":3}`,
		`{"u":"p2","ts":2500,"v":-7,"c":"b","y":99,"w":-1}`,
		`{"u":7,"ts":"2026-01-01T00:00:00Z","v":1e308,"c":"a","y":1,"w":3}`,
		`{"u":"p1","ts":1500,"v":"NaN","c":"z","y":1,"w":3}`,
		`{"u":"","ts":-1,"v":0}`, `[]`, `{`, ``, `{"u":"p","ts":1e30,"v":1,"c":"a","y":1,"w":1}`,
	} {
		f.Add([]byte(seed), int64(3))
	}
	now := time.UnixMilli(1_000_000)
	f.Fuzz(func(t *testing.T, value []byte, offset int64) {
		p := NewPartition(s, 0, 1, NoWatermark)
		for i := range 3 {
			r := Record{Value: value, Offset: offset + int64(i), Time: now, Partition: 0, Partitions: 1}
			ev, rej := in.Admit(r, now)
			if rej != nil {
				if rej.Reason == "" {
					t.Fatalf("rejection without a reason: %+v", rej)
				}
				continue
			}
			for j, v := range ev.Values {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("admitted value %d is %v", j, v)
				}
			}
			if c := ev.Values[5]; c != 0 && c != 1 {
				t.Fatalf("admitted category index %v", c)
			}
			if _, _, err := p.Add(ev); err != nil {
				t.Fatalf("Add refused an admitted event %+v: %v", ev, err)
			}
		}
		p.advance(math.MaxInt64 / 2)
	})
}

// FuzzDecodeResume feeds arbitrary offset-commit metadata (another tool may
// have committed for the group) to DecodeResume: it never panics, an
// error always comes with NoWatermark (a fresh start, never a made-up
// watermark), and accepted metadata describes a Resume that CommitPoint
// could have written (Closed not before Watermark) and that survives an
// encode/decode round trip.
func FuzzDecodeResume(f *testing.F) {
	for _, md := range []string{"", "dpstream/v1 wm=none", "dpstream/v1 wm=5", "dpstream/v1 wm=5 closed=9",
		"dpstream/v1 wm=none closed=none", "dpstream/v1 wm=-3 closed=-3", "dpstream/v1 wm=5 closed=4", "kafka-streams"} {
		f.Add(md)
	}
	f.Fuzz(func(t *testing.T, md string) {
		r, err := DecodeResume(md)
		if err != nil {
			if r.Watermark != NoWatermark || r.Closed != NoWatermark {
				t.Fatalf("DecodeResume(%q) failed (%v) but returned %+v", md, err, r)
			}
			return
		}
		if r.Closed < r.Watermark {
			t.Fatalf("DecodeResume(%q) = %+v: closed before the watermark", md, r)
		}
		back, err := DecodeResume(EncodeResume(r))
		if err != nil || back != r {
			t.Fatalf("round trip of %+v (from %q): %+v, %v", r, md, back, err)
		}
	})
}
