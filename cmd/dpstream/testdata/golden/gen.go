//go:build ignore

// gen writes the golden test's input events (events.jsonl and
// sparse.jsonl). It was run once; its output is committed and the test
// reads only the committed files, so changing this program changes
// nothing until its output is committed again (with new goldens).
//
//	go run gen.go
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
)

// base is a minute-aligned time in the past (2023-11-14 22:13 UTC).
const base = int64(1_699_999_980_000)

var cats = []string{"card", "app", "cash", "voucher"}

func main() {
	if err := write("events.jsonl", events(rand.New(rand.NewPCG(12, 1)), 30, 6, 70, true)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := write("sparse.jsonl", events(rand.New(rand.NewPCG(12, 2)), 80, 4, 45, false)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// events returns nWin one-minute windows of about perWin events each from
// nUnits units (a few of them heavy, with many events per window), with
// values partly outside the configs' bounds; with bad, also lines that
// are rejected (not JSON, no unit, a non-numeric value, an unknown
// category), late or before the start.
func events(r *rand.Rand, nUnits, nWin, perWin int, bad bool) []string {
	type ev struct {
		t    int64
		line string
	}
	var evs []ev
	for w := 0; w < nWin; w++ {
		n := perWin - 10 + r.IntN(21)
		for i := 0; i < n; i++ {
			u := r.IntN(nUnits)
			if r.Float64() < 0.3 {
				u = r.IntN(4) // heavy units
			}
			t := base + int64(w)*60_000 + r.Int64N(60_000)
			a := -1.5 + 5*r.Float64()    // bounds [-1, 3]
			b := 100 * r.Float64() * 1.1 // bounds [0, 100]
			c := r.NormFloat64()         // bounds [-2, 2]
			y := 2 + 0.5*a + 0.03*b - 0.4*c + 0.3*r.NormFloat64()
			x := math.Round((-1+14*r.Float64()*r.Float64()+float64(w)/2)*1000) / 1000 // bounds [0, 10]
			cat := cats[min(int(r.ExpFloat64()*1.2), 3)]
			m := map[string]any{
				"user": fmt.Sprintf("u%02d", u), "ts": t, "x": x,
				"y":   math.Round((20+8*r.NormFloat64())*100) / 100, // bounds [0, 40]
				"z":   r.IntN(12),                                   // bounds [0, 10]
				"cat": cat, "a": round(a), "b": round(b), "c": round(c), "t": round(y),
			}
			j, err := json.Marshal(m)
			if err != nil {
				panic(err)
			}
			evs = append(evs, ev{t, string(j)})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	lines := make([]string, 0, len(evs)+8)
	for i, e := range evs {
		lines = append(lines, e.line)
		if !bad {
			continue
		}
		switch i {
		case 5:
			lines = append(lines, fmt.Sprintf(`{"user":"u01","ts":%d,"x":1,"y":1,"z":1,"cat":"card","a":0,"b":0,"c":0,"t":0}`, base-30_000)) // before the start
		case 40:
			lines = append(lines, `not json`)
		case 80:
			lines = append(lines, fmt.Sprintf(`{"ts":%d,"x":1,"y":1,"z":1,"cat":"card","a":0,"b":0,"c":0,"t":0}`, e.t)) // no unit
		case 120:
			lines = append(lines, fmt.Sprintf(`{"user":"u05","ts":%d,"x":"abc","y":1,"z":1,"cat":"card","a":0,"b":0,"c":0,"t":0}`, e.t))
		case 160:
			lines = append(lines, fmt.Sprintf(`{"user":"u06","ts":%d,"x":2,"y":1,"z":1,"cat":"bitcoin","a":0,"b":0,"c":0,"t":0}`, e.t))
		case 250, 330:
			lines = append(lines, fmt.Sprintf(`{"user":"u07","ts":%d,"x":3,"y":1,"z":1,"cat":"app","a":0,"b":0,"c":0,"t":0}`, base+10_000)) // late
		}
	}
	return lines
}

func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }

func write(name string, lines []string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
	return f.Close()
}
