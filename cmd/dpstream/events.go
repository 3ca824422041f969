package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// openInput opens the event input of produce and simulate: a file, or
// stdin for "-" (with a hint when stdin is a terminal). close releases it.
func openInput(path, flagName string, stderr io.Writer) (in io.Reader, close func(), err error) {
	if path == "-" {
		if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintf(stderr, "reading events from stdin, one JSON object per line (Ctrl-D ends; --%s reads a file)\n", flagName)
		}
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// readEvents reads JSON lines (one object per line; blank lines skipped)
// or CSV with a header row, and calls fn for each event with its line
// number, its text, and the event or the reason it is not one. Numbers are
// json.Number, as 'dpstream produce' reads them; in CSV an empty field is
// absent and a numeric one a number. fn's error stops the reading.
func readEvents(in io.Reader, isCSV bool, fn func(line int, raw string, ev map[string]any, perr error) error) error {
	if isCSV {
		return readCSVEvents(in, fn)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber()
		var ev map[string]any
		var perr error
		if err := dec.Decode(&ev); err != nil {
			perr = fmt.Errorf("not a JSON object: %v", err)
		} else if ev == nil {
			perr = errors.New("not a JSON object")
		} else if dec.More() {
			perr = errors.New("more than one JSON value on the line")
		}
		if err := fn(line, string(text), ev, perr); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read input at line %d: %w", line+1, err)
	}
	return nil
}

func readCSVEvents(in io.Reader, fn func(line int, raw string, ev map[string]any, perr error) error) error {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("csv header: %w", err)
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var line int
		var pe *csv.ParseError
		switch {
		case errors.As(err, &pe):
			line = pe.StartLine // a malformed row: the reader goes on after it
		case err != nil:
			return fmt.Errorf("read input: %w", err)
		default:
			line, _ = r.FieldPos(0)
		}
		raw := strings.Join(rec, ",")
		var ev map[string]any
		var perr error
		switch {
		case err != nil:
			perr = err
		case len(rec) != len(header):
			perr = fmt.Errorf("%d fields, the header has %d", len(rec), len(header))
		default:
			ev = map[string]any{}
			for i, h := range header {
				v := strings.TrimSpace(rec[i])
				if v == "" {
					continue // absent
				}
				if _, err := strconv.ParseFloat(v, 64); err == nil && !strings.EqualFold(v, "nan") && !strings.Contains(strings.ToLower(v), "inf") {
					ev[h] = json.Number(v)
				} else {
					ev[h] = v
				}
			}
		}
		if err := fn(line, raw, ev, perr); err != nil {
			return err
		}
	}
}
