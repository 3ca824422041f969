package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// flightDelaysSHA256 is the SHA-256 of
// testdata/flightdelays/flightdelays.csv.gz, as in its README.md; extract.py
// reproduces it byte for byte.
const flightDelaysSHA256 = "d68abf895ca607e6957694acf70d25e409da435a6fc2500b1fcc93d55bf2ecd0"

// TestFlightDelaysFile: the file is the one README.md describes (its
// bytes), and the loader reads all of it into the values README.md states,
// so a changed file or a loader that drops, shifts or misparses rows fails
// here rather than in the prediction tests' numbers.
func TestFlightDelaysFile(t *testing.T) {
	path, err := Path(FlightDelaysFile)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != flightDelaysSHA256 {
		t.Errorf("%s: SHA-256 %x, want %s (update README.md if the file was regenerated on purpose)", path, sum, flightDelaysSHA256)
	}
	fs, err := FlightDelays()
	if err != nil {
		t.Fatal(err)
	}
	planes, carriers, origins := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var dep, arr, dist, late int64
	minArr, maxArr := fs[0].ArrDelay, fs[0].ArrDelay
	for _, f := range fs {
		planes[f.Plane], carriers[f.Carrier], origins[f.Origin] = true, true, true
		dep += f.DepDelay
		arr += f.ArrDelay
		dist += f.Distance
		if f.ArrDelay > 15 {
			late++
		}
		minArr, maxArr = min(minArr, f.ArrDelay), max(maxArr, f.ArrDelay)
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"rows", int64(len(fs)), 327346},
		{"planes", int64(len(planes)), 4037},
		{"carriers", int64(len(carriers)), 16},
		{"origins", int64(len(origins)), 3},
		{"sum of departure delays (minutes)", dep, 4109880},
		{"sum of arrival delays (minutes)", arr, 2257174},
		{"sum of distances (miles)", dist, 343180156},
		{"late flights (arrival delay > 15)", late, 77630},
		{"smallest arrival delay", minArr, -86},
		{"largest arrival delay", maxArr, 1272},
		{"first month", int64(fs[0].Month), 1},
		{"last month", int64(fs[len(fs)-1].Month), 9}, // the source orders months 1, 10, 11, 12, 2, …, 9
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}
