package regression

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/internal/chart/charttest"
	"github.com/dpstream/dpstream/schema"
)

// regRelease is a regression release as the release stage publishes it.
func regRelease(fields []string, coef, se []float64, icpt, ridge *float64, method string) schema.Release {
	return schema.Release{ReleaseID: "cars/fit/0", Stream: "cars", Release: "fit", Kind: Name, Status: "ok",
		WindowEnd: 3_600_000, Fields: fields, Coefficients: coef, StdErrors: se, Intercept: icpt, Ridge: ridge, Method: method}
}

func ptr(v float64) *float64 { return &v }

// regRow is one parsed row of a regression table: label, coefficient and
// the "± x" half-width (empty when absent), and where the coefficient
// ends, so that the column's alignment can be checked.
type regRow struct {
	label, coef, pm string
	coefEnd         int // cells up to the coefficient's last character
}

// parseRegRows parses the rows of a regression table between the column
// header ("feature  coefficient …") and the footer ("method …").
func parseRegRows(t *testing.T, lines []string) (header regRow, rows []regRow) {
	t.Helper()
	in := false
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "feature "):
			in = true
		case strings.HasPrefix(line, "method "):
			in = false
			continue
		}
		if !in {
			continue
		}
		// Columns are separated by two spaces; a label has none.
		parts := strings.SplitN(line, "  ", 2)
		if len(parts) != 2 {
			t.Fatalf("table row %q has no columns", line)
		}
		rest := strings.TrimLeft(parts[1], " ")
		r := regRow{label: strings.TrimRight(parts[0], " ")}
		coef, pm, _ := strings.Cut(rest, "  ")
		r.coef, r.pm = coef, pm
		r.coefEnd = charttest.Cells(line) - charttest.Cells(rest) + charttest.Cells(coef)
		if strings.HasPrefix(line, "feature ") {
			header = r
			continue
		}
		rows = append(rows, r)
	}
	return header, rows
}

// parseNum parses a number the table printed (chart.Num: NaN, ±Inf or
// decimal).
func parseNum(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// sameNum reports whether printed agrees with want to chart.Num's six
// significant digits (a relative 5e-6 covers the rounding), or both are
// the same non-finite value.
func sameNum(printed, want float64) bool {
	if !chart.Finite(want) {
		return printed == want || (math.IsNaN(printed) && math.IsNaN(want))
	}
	return math.Abs(printed-want) <= 5e-6*math.Abs(want)
}

// TestRender draws well-formed regression releases and checks the
// table against the release: one row per feature in order, labelled by
// its name, with the coefficient and 1.96 standard errors (to six
// significant digits), the intercept row, the coefficient column
// right-aligned, the footer with method and ridge, no yellow note, and
// every line within the width. The ± strings of the first case are worked
// out by hand.
func TestRender(t *testing.T) {
	cases := []struct {
		name    string
		r       schema.Release
		wantPM  []string // hand-computed "± 1.96·SE" strings, or nil
		subhead string
	}{
		{"with standard errors", regRelease([]string{"hp", "weight"}, []float64{-0.0371682, -0.00335466}, []float64{0.5, 0.0125}, ptr(37.9472), ptr(80.5), "adassp"),
			[]string{"± 0.98", "± 0.0245"}, "2 features; coefficient ± 1.96 standard errors of the privacy noise (not of sampling)"},
		{"one feature, large values", regRelease([]string{"displacement"}, []float64{123456.5}, []float64{1000}, ptr(-2.5e-7), ptr(0), "adaops"),
			[]string{"± 1960"}, "1 feature; coefficient ± 1.96 standard errors"},
		// The noisy system was singular: the release has no standard
		// errors, which is not malformed.
		{"without standard errors", regRelease([]string{"a", "b", "c"}, []float64{1, -2, 3.25}, nil, ptr(0.5), ptr(1), "ssp"),
			nil, "3 features; coefficients (no standard errors in the release)"},
	}
	for _, tc := range cases {
		for _, w := range []int{40, 80, 200} {
			t.Run(tc.name+"/"+strconv.Itoa(w), func(t *testing.T) {
				lines := Kind{}.Render(tc.r, chart.Options{Width: w})
				colored := Kind{}.Render(tc.r, chart.Options{Width: w, Color: true})
				if strings.Contains(strings.Join(colored, "\n"), chart.Yellow) {
					t.Errorf("a well-formed release got a yellow note:\n%s", strings.Join(lines, "\n"))
				}
				if !strings.HasPrefix(lines[0], tc.subhead) {
					t.Errorf("subheader %q, want it to start with %q", lines[0], tc.subhead)
				}
				header, rows := parseRegRows(t, lines)
				n := len(tc.r.Coefficients)
				if len(rows) != n+1 {
					t.Fatalf("%d rows, want %d features and the intercept:\n%s", len(rows), n, strings.Join(lines, "\n"))
				}
				if header.coef != "coefficient" || (tc.r.StdErrors != nil) != (header.pm == "± 1.96·SE") {
					t.Errorf("column header %+v", header)
				}
				for i, row := range rows[:n] {
					if row.label != tc.r.Fields[i] {
						t.Errorf("row %d label %q, want %q (features in order)", i, row.label, tc.r.Fields[i])
					}
					if c := parseNum(t, row.coef); !sameNum(c, tc.r.Coefficients[i]) {
						t.Errorf("row %d coefficient %q, want %v", i, row.coef, tc.r.Coefficients[i])
					}
					switch {
					case tc.wantPM != nil && row.pm != tc.wantPM[i]:
						t.Errorf("row %d: %q, want %q", i, row.pm, tc.wantPM[i])
					case tc.wantPM == nil && row.pm != "":
						t.Errorf("row %d: %q without standard errors", i, row.pm)
					}
				}
				last := rows[n]
				if last.label != "(intercept)" || !sameNum(parseNum(t, last.coef), *tc.r.Intercept) || last.pm != "" {
					t.Errorf("intercept row %+v, want (intercept) %v", last, *tc.r.Intercept)
				}
				for i, row := range rows {
					if row.coefEnd != header.coefEnd {
						t.Errorf("row %d: coefficient ends at cell %d, the column header at %d (not right-aligned)", i, row.coefEnd, header.coefEnd)
					}
				}
				if i := slices.Index(lines, "method "+tc.r.Method); i < 0 || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "ridge λ = ") {
					t.Errorf("no footer \"method %s\" then the ridge:\n%s", tc.r.Method, strings.Join(lines, "\n"))
				} else if v := strings.TrimSuffix(strings.TrimPrefix(lines[i+1], "ridge λ = "), " (on the scaled problem)"); !sameNum(parseNum(t, v), *tc.r.Ridge) {
					t.Errorf("footer %q, want ridge %v", lines[i+1], *tc.r.Ridge)
				}
				for _, l := range lines[1:] { // the subheader may wrap, as other kinds' do
					if charttest.Cells(l) > w {
						t.Errorf("line of %d cells at width %d: %q", charttest.Cells(l), w, l)
					}
				}
			})
		}
	}
}

// TestRenderSelected: a pcls release carries the features its
// selection kept (Selected); the others' coefficients are 0 by
// construction, so they are marked "not selected" rather than given an
// interval, and the selected ones keep theirs.
func TestRenderSelected(t *testing.T) {
	r := regRelease([]string{"hp", "weight", "year"}, []float64{0, -0.0064, 0.75}, []float64{0, 0.0018, 0.05}, ptr(-1400), ptr(31.2), "pcls")
	r.Selected = []string{"weight", "year"}
	lines := Kind{}.Render(r, chart.Options{Width: 80, Color: true})
	if strings.Contains(strings.Join(lines, "\n"), chart.Yellow) {
		t.Errorf("yellow note for a well-formed pcls release:\n%s", strings.Join(lines, "\n"))
	}
	_, rows := parseRegRows(t, lines)
	// 1.96 × 0.0018 = 0.003528 and 1.96 × 0.05 = 0.098, by hand.
	want := []string{"not selected", "± 0.003528", "± 0.098", ""}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if rows[i].pm != w {
			t.Errorf("row %s: %q, want %q", rows[i].label, rows[i].pm, w)
		}
	}
}

// TestRenderMalformed feeds broken regression releases and checks
// that each is explained by the yellow note it calls for, with what can
// still be shown.
func TestRenderMalformed(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	two := []string{"x", "y"}
	cases := []struct {
		name string
		r    schema.Release
		note string   // the yellow note
		also []string // more text the output must have
	}{
		{"no coefficients", regRelease(two, nil, nil, ptr(1), ptr(0), "ssp"), "regression with no coefficients in the release", nil},
		{"fewer names", regRelease([]string{"x"}, []float64{1, 2}, []float64{1, 1}, ptr(0), ptr(0), "ssp"),
			"1 feature names for 2 coefficients: features are labelled by index", []string{"#0 ", "#1 "}},
		{"more names", regRelease([]string{"x", "y", "z"}, []float64{1, 2}, nil, ptr(0), ptr(0), "ssp"),
			"3 feature names for 2 coefficients: features are labelled by index", []string{"#1 "}},
		{"standard errors too short", regRelease(two, []float64{1, 2}, []float64{0.5}, ptr(0), ptr(0), "adassp"),
			"1 standard errors for 2 coefficients: coefficients shown without them", nil},
		{"NaN coefficient", regRelease(two, []float64{nan, 2}, []float64{1, 1}, ptr(0), ptr(0), "adassp"),
			"1 of 2 coefficients NaN or infinite", []string{"NaN  ± 1.96"}},
		{"infinite coefficient", regRelease(two, []float64{1, -inf}, nil, ptr(0), ptr(0), "adassp"),
			"1 of 2 coefficients NaN or infinite", []string{"-Inf"}},
		{"negative and NaN standard errors", regRelease(two, []float64{1, 2}, []float64{-1, nan}, ptr(0), ptr(0), "adaops"),
			"2 of 2 standard errors NaN, infinite or negative", []string{"± -1.96", "± NaN"}},
		{"no intercept", regRelease(two, []float64{1, 2}, nil, nil, ptr(0), "ssp"), "no intercept in the release", nil},
		{"infinite intercept", regRelease(two, []float64{1, 2}, nil, ptr(inf), ptr(0), "ssp"), "intercept +Inf", []string{"(intercept)"}},
		{"no method", regRelease(two, []float64{1, 2}, nil, ptr(0), ptr(0), ""), "no method in the release", []string{"method ?"}},
		{"no ridge", regRelease(two, []float64{1, 2}, nil, ptr(0), nil, "ssp"), "no ridge in the release", nil},
		{"NaN ridge", regRelease(two, []float64{1, 2}, nil, ptr(0), ptr(nan), "ssp"), "ridge NaN: want a finite λ ≥ 0", nil},
		{"negative ridge", regRelease(two, []float64{1, 2}, nil, ptr(0), ptr(-1), "ssp"), "ridge -1: want a finite λ ≥ 0", nil},
		{"names that drive the terminal", regRelease([]string{"\x1b[2Jx", "tab\there"}, []float64{1, 2}, nil, ptr(0), ptr(0), "ss\x1bp"),
			"", []string{"?[2Jx", "tab?here", "method ss?p"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			colored := strings.Join(Kind{}.Render(c.r, chart.Options{Width: 60, Color: true}), "\n")
			plain := strings.Join(Kind{}.Render(c.r, chart.Options{Width: 60}), "\n")
			if c.note != "" && !strings.Contains(colored, chart.Yellow+c.note+chart.Reset) {
				t.Errorf("no yellow note %q:\n%s", c.note, plain)
			}
			for _, want := range c.also {
				if !strings.Contains(plain, want) {
					t.Errorf("output lacks %q:\n%s", want, plain)
				}
			}
			if strings.ContainsRune(plain, '\x1b') || strings.ContainsRune(plain, '\t') {
				t.Errorf("control character in the output:\n%q", plain)
			}
		})
	}
}

// TestRenderFuzz draws random, mostly broken regression releases
// (lengths that disagree, NaN and infinite values, missing pointers, names
// with control characters, selected features of a pcls release that may
// not be features) at random widths, from a fixed seed. None may panic; every chart has a first line, holds no
// control character but newlines and, with colours off, no escape code.
func TestRenderFuzz(t *testing.T) {
	rng := rand.New(rand.NewPCG(2025, 7))
	values := []float64{0, -0.5, 1, 1e-300, 1e300, -1e300, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64}
	names := []string{"", "x", "a long feature name that goes on and on and on and on and on", "\x1b[2J", "tab\there", "new\nline", "\x00", "ünï", "(intercept)"}
	num := func() float64 {
		if rng.IntN(3) == 0 {
			return values[rng.IntN(len(values))]
		}
		return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(13)-6))
	}
	floats := func(n int) []float64 {
		if rng.IntN(5) == 0 {
			return nil
		}
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = num()
		}
		return xs
	}
	opt := func() *float64 {
		if rng.IntN(4) == 0 {
			return nil
		}
		v := num()
		return &v
	}
	for i := range 3000 {
		n := rng.IntN(8)
		nn := n // names, standard errors: usually as many as coefficients
		if rng.IntN(3) == 0 {
			nn = rng.IntN(8)
		}
		fields := make([]string, nn)
		for j := range fields {
			fields[j] = names[rng.IntN(len(names))]
		}
		se := floats(n)
		if rng.IntN(3) == 0 {
			se = floats(rng.IntN(8))
		}
		method := []string{"ssp", "adassp", "ops", "adaops", "", "\x1b]0;x\x07"}[rng.IntN(6)]
		r := regRelease(fields, floats(n), se, opt(), opt(), method)
		if rng.IntN(3) == 0 { // a pcls release's selected features
			r.Selected = make([]string, rng.IntN(4))
			for j := range r.Selected {
				r.Selected[j] = names[rng.IntN(len(names))]
			}
		}
		o := chart.Options{Width: rng.IntN(220), Color: rng.IntN(2) == 0}
		lines := Kind{}.Render(r, o)
		out := strings.Join(lines, "\n")
		if len(lines) == 0 || lines[0] == "" {
			t.Fatalf("release %d %+v: no chart and no note", i, r)
		}
		if !o.Color && strings.Contains(out, "\x1b") {
			t.Fatalf("release %d %+v: escape code with colours off:\n%q", i, r, out)
		}
		text := chart.StripANSI(out)
		for _, ch := range text {
			if ch != '\n' && (ch < 0x20 || ch == 0x7f || (ch >= 0x80 && ch < 0xa0)) {
				t.Fatalf("release %d %+v: control character %q in the output:\n%q", i, r, ch, text)
			}
		}
	}
}
