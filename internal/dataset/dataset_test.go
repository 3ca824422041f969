package dataset

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// flightsSHA256 is the SHA-256 of testdata/flights/flights.csv.gz, as in
// testdata/flights/README.md; extract.py reproduces it byte for byte.
const flightsSHA256 = "e88e49f65df3e755bd76a4c554109cf6b530f53a7ef725c8b1183131c14a0b1b"

// TestFlightsFile: the file in the repository is the one README.md
// describes (its bytes), and the loader reads all of it into the values
// README.md states, so a changed file or a loader that drops, shifts or
// misparses rows fails here rather than in a utility test's numbers.
func TestFlightsFile(t *testing.T) {
	path, err := Path(FlightsFile)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != flightsSHA256 {
		t.Errorf("%s: SHA-256 %x, want %s (update README.md if the file was regenerated on purpose)", path, sum, flightsSHA256)
	}
	fs, err := Flights()
	if err != nil {
		t.Fatal(err)
	}

	planes, dests, origins := map[string]bool{}, map[string]map[string]bool{}, map[string]int{}
	var distance, delay, late int64
	sorted := true
	for i, f := range fs {
		planes[f.Plane] = true
		if dests[f.Dest] == nil {
			dests[f.Dest] = map[string]bool{}
		}
		dests[f.Dest][f.Plane] = true
		origins[f.Origin]++
		distance += f.Distance
		if f.Arrived {
			delay += f.ArrDelay
		} else {
			late++
		}
		if i > 0 && f.TimeMs < fs[i-1].TimeMs {
			sorted = false
		}
	}
	units := make([]int, 0, len(dests))
	for _, ps := range dests {
		units = append(units, len(ps))
	}
	sort.Ints(units)

	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"rows", int64(len(fs)), 334264},
		{"planes", int64(len(planes)), 4043},
		{"destinations", int64(len(dests)), 104},
		{"origins", int64(len(origins)), 3},
		{"flights from EWR", int64(origins["EWR"]), 120229},
		{"flights without an arrival delay", late, 6918},
		{"sum of distances (miles)", distance, 348433440},
		{"sum of arrival delays (minutes)", delay, 2257174},
		{"first departure (ms)", fs[0].TimeMs, 1357035300000},
		{"last departure (ms)", fs[len(fs)-1].TimeMs, 1388552340000},
		{"planes to BOS (the most)", int64(len(dests["BOS"])), 1307},
		{"planes to LEX (the fewest)", int64(len(dests["LEX"])), 1},
		{"median planes per destination", int64(units[len(units)/2]), 310},
		{"destinations with at most 20 planes", int64(sort.SearchInts(units, 21)), 9},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	if !sorted {
		t.Error("rows are not sorted by scheduled departure")
	}
	if first := fs[0]; first != (Flight{Plane: "N14228", Origin: "EWR", Dest: "IAH", TimeMs: 1357035300000, Distance: 1400, ArrDelay: 11, Arrived: true}) {
		t.Errorf("first row %+v, want UA 1545 EWR→IAH of 2013-01-01 05:15 EST", first)
	}

	// Flights hands out a copy: a test that sorts its rows does not
	// reorder another's.
	fs[0].Plane = "changed"
	again, err := Flights()
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Plane != "N14228" {
		t.Errorf("a caller's change reached the next caller: first plane %q", again[0].Plane)
	}
}

// TestReadFlightsRejects: a malformed file is an error naming the line,
// never a panic or silently shifted columns.
func TestReadFlightsRejects(t *testing.T) {
	const head = "time_ms,plane,origin,dest,distance,arr_delay\n"
	for _, c := range []struct {
		name, text, want string
	}{
		{"reordered header", "plane,time_ms,origin,dest,distance,arr_delay\n", "header"},
		{"empty file", "", "header"},
		{"short row", head + "1,N1,EWR,BOS,187\n", "line 2"},
		{"bad time", head + "x,N1,EWR,BOS,187,3\n", "line 2: time_ms"},
		{"bad distance", head + "1,N1,EWR,BOS,far,3\n", "line 2: distance"},
		{"bad delay", head + "1,N1,EWR,BOS,187,3.5\n", "line 2: arr_delay"},
		{"no plane", head + "1,,EWR,BOS,187,3\n", "line 2: empty plane"},
		{"bad third line", head + "1,N1,EWR,BOS,187,3\n2,N1,EWR,BOS,187,x\n", "line 3: arr_delay"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			if _, err := zw.Write([]byte(c.text)); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			_, err := readFlights(&b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := readFlights(strings.NewReader("not gzip")); err == nil {
		t.Error("a file that is not gzip loaded without an error")
	}
}

// TestPath: the root is found from this file's compile-time name, and
// without it (as under -trimpath, where the name is module-relative) by
// walking up from the working directory to this module's go.mod; a file
// that is not there, or a directory outside the repository, is an error.
func TestPath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	_, self, _, _ := runtime.Caller(0)
	outside := t.TempDir()
	for _, c := range []struct {
		name, file, wd, rel string
		ok                  bool
	}{
		{"compile-time name", self, outside, FlightsFile, true},
		{"trimpath name", "github.com/dpstream/dpstream/internal/dataset/dataset.go", wd, FlightsFile, true},
		{"no name", "", wd, FlightsFile, true},
		{"moved source", filepath.Join(outside, "a", "b", "dataset.go"), wd, FlightsFile, true},
		{"missing file", self, wd, "testdata/no-such-file", false},
		{"outside the repository", "", outside, FlightsFile, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := findPath(c.file, c.wd, c.rel)
			if !c.ok {
				if err == nil {
					t.Errorf("findPath = %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(got); err != nil || !strings.HasSuffix(filepath.ToSlash(got), "/"+c.rel) {
				t.Errorf("findPath = %q (%v), want the repository's %s", got, err, c.rel)
			}
		})
	}
}
