package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dpstream/dpstream/mechanism/aggregate"
	"github.com/dpstream/dpstream/mechanism/rr"
)

// This file reads the release keys that belong to one or two kinds: the
// shape of a histogram (fields, bounds per field, bins), expected_events,
// max_per_bin, samples, and the producers' randomization of a
// randomized_response release. As everywhere in this package, a key given
// to a kind that ignores it is an error, because the user expects an
// effect that would not happen; with an unknown kind each value is still
// checked on its own, so that its mistakes are reported in the same run.

// histogram reads the keys that shape a histogram: field or fields (1 to
// aggregate.MaxHistogramDims distinct names), bounds (one [lo, hi] per
// field; [lo, hi] alone for one field) and bins (one integer for every
// field, one per field, or auto). It fills Fields, AxisBounds, Bounds,
// AxisBins, Bins and BinsAuto of a histogram, and returns the line of each
// item of fields, or nil when fields is not given. histogramCells checks
// the number of cells once expected_events is known.
func (d *decoder) histogram(m *mapping, path, kind string, kindOK bool, r *Release) []int {
	isHist := kind == KindHistogram
	histLike := isHist || !kindOK
	nf := 0 // number of fields; 0 while unknown, after an error reported elsewhere
	var fieldLines []int
	if m.has("fields") {
		line := m.values["fields"].Line
		switch {
		case !histLike:
			hint := ""
			switch kind {
			case KindCount:
			case KindRegression:
				hint = " (list the fields to fit on in features)"
			default:
				hint = " (use field for its one field)"
			}
			d.errorf(line, join(path, "fields"), "is only used with kind histogram, not %s%s", kind, hint)
		case m.has("field"):
			d.errorf(line, join(path, "fields"), "cannot be given together with field (line %d): use field for one field, or fields for 1 to %d",
				m.values["field"].Line, aggregate.MaxHistogramDims)
		default:
			if names, lines, ok := d.fieldList(m, path); ok {
				nf, fieldLines = len(names), lines
				if isHist {
					r.Fields, r.Field = names, names[0]
				}
			}
		}
	} else if isHist && r.Field != "" {
		nf = 1
		r.Fields = []string{r.Field}
	}

	if histLike && m.has("bounds") {
		if ab, ok := d.axisBounds(m, path, nf); ok {
			r.Bounds = ab[0]
			if isHist {
				r.AxisBounds = ab
			}
		}
	}

	if !m.has("bins") {
		if isHist {
			d.errorf(m.line, join(path, "bins"), "required for kind histogram: the number of equal-width bins (one integer for every field, a list with one per field, or %s with expected_events)", BinsAuto)
		}
		return fieldLines
	}
	if !histLike {
		hint := ""
		if kind == KindRandomizedResponse {
			hint = " (its categories are its bins)"
		}
		d.errorf(m.values["bins"].Line, join(path, "bins"), "is only used with kind histogram, not %s%s", kind, hint)
		return fieldLines
	}
	d.bins(m, path, nf, isHist, r)
	return fieldLines
}

// fieldList reads the names in fields and returns them with their lines.
func (d *decoder) fieldList(m *mapping, path string) ([]string, []int, bool) {
	fpath := join(path, "fields")
	items, line, ok := d.list(m, "fields")
	if !ok {
		return nil, nil, false
	}
	if len(items) < 1 || len(items) > aggregate.MaxHistogramDims {
		why := ""
		if len(items) > aggregate.MaxHistogramDims {
			// Cells multiply with every field, and the error rate of a
			// histogram degrades as n^{-2/(2+d)}.
			why = ": every field multiplies the number of cells"
		}
		d.errorf(line, fpath, "must list 1 to %d fields, got %d%s", aggregate.MaxHistogramDims, len(items), why)
		return nil, nil, false
	}
	names := make([]string, 0, len(items))
	lines := make([]int, 0, len(items))
	seen := map[string]int{} // name -> index in names
	ok = true
	for i, item := range items {
		ipath := index(fpath, i)
		ri := resolve(item)
		switch {
		case ri == nil || ri.Kind != yaml.ScalarNode || isNull(ri):
			d.errorf(item.Line, ipath, "must be a field name, got %s", describe(item))
			ok = false
		case strings.TrimSpace(ri.Value) == "":
			d.errorf(item.Line, ipath, "must name the event field to bin")
			ok = false
		default:
			if j, dup := seen[ri.Value]; dup {
				d.errorf(item.Line, ipath, "%q is also fields[%d]; the fields must be distinct", ri.Value, j)
				ok = false
				continue
			}
			seen[ri.Value] = i
			names = append(names, ri.Value)
			lines = append(lines, item.Line)
		}
	}
	if !ok {
		return nil, nil, false
	}
	return names, lines, true
}

// axisBounds reads a histogram's bounds: [lo, hi] for one field, or one
// [lo, hi] per field, [[lo1, hi1], [lo2, hi2]], in the order of fields.
// nf is the number of fields, 0 when unknown (then the count is not
// checked against it).
func (d *decoder) axisBounds(m *mapping, path string, nf int) ([][2]float64, bool) {
	bpath := join(path, "bounds")
	items, line, ok := d.list(m, "bounds")
	if !ok {
		return nil, false
	}
	if len(items) == 0 || !isList(items[0]) {
		b, ok := d.boundsPair(items, line, bpath)
		if !ok {
			return nil, false
		}
		if nf > 1 {
			d.errorf(line, bpath, "is one [lo, hi], but the histogram has %d fields: give one [lo, hi] per field, in the order of fields, e.g. %s",
				nf, pairsExample(nf))
			return nil, false
		}
		return [][2]float64{b}, true
	}
	switch {
	case nf > 0 && len(items) != nf:
		d.errorf(line, bpath, "has %d [lo, hi] for %s: give one [lo, hi] per field, in the order of fields", len(items), nFields(nf))
		return nil, false
	case len(items) > aggregate.MaxHistogramDims:
		d.errorf(line, bpath, "has %d [lo, hi]; a histogram has at most %d fields", len(items), aggregate.MaxHistogramDims)
		return nil, false
	}
	out := make([][2]float64, len(items))
	ok = true
	for i, item := range items {
		ipath := index(bpath, i)
		ri := resolve(item)
		if ri == nil || ri.Kind != yaml.SequenceNode {
			d.errorf(item.Line, ipath, "must be [lo, hi], two numbers; got %s", describe(item))
			ok = false
			continue
		}
		b, good := d.boundsPair(ri.Content, item.Line, ipath)
		if !good {
			ok = false
			continue
		}
		out[i] = b
	}
	if !ok {
		return nil, false
	}
	return out, true
}

// nFields returns "1 field" or "n fields".
func nFields(n int) string {
	if n == 1 {
		return "1 field"
	}
	return strconv.Itoa(n) + " fields"
}

// isList reports whether n is (an alias of) a YAML list.
func isList(n *yaml.Node) bool {
	r := resolve(n)
	return r != nil && r.Kind == yaml.SequenceNode
}

// pairsExample returns "[[lo1, hi1], [lo2, hi2]]" for n pairs.
func pairsExample(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("[lo%d, hi%d]", i+1, i+1)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// bins reads a histogram's bins: auto, one integer for every field, or a
// list with one integer per field. nf is the number of fields (0 when
// unknown); values are stored only for a histogram whose fields are known.
func (d *decoder) bins(m *mapping, path string, nf int, isHist bool, r *Release) {
	bpath := join(path, "bins")
	v := m.values["bins"]
	line := v.Line
	rv := resolve(v)
	if rv != nil && rv.Kind == yaml.ScalarNode && rv.ShortTag() == "!!str" && rv.Value == BinsAuto {
		if isHist {
			r.BinsAuto = true
		}
		return
	}
	if rv != nil && rv.Kind == yaml.SequenceNode {
		items := rv.Content
		switch {
		case len(items) == 0:
			d.errorf(line, bpath, "must not be an empty list: give one integer per field, one integer for every field, or %s", BinsAuto)
			return
		case nf > 0 && len(items) != nf:
			d.errorf(line, bpath, "has %d entries for %s: give one per field, in the order of fields, or one integer for every field", len(items), nFields(nf))
			return
		case len(items) > aggregate.MaxHistogramDims:
			d.errorf(line, bpath, "has %d entries; a histogram has at most %d fields", len(items), aggregate.MaxHistogramDims)
			return
		}
		bins := make([]int, 0, len(items))
		ok := true
		for i, item := range items {
			n, isInt := intOf(resolve(item))
			switch {
			case !isInt:
				d.errorf(item.Line, index(bpath, i), "must be an integer, got %s", describe(item))
				ok = false
			case n < 1 || n > MaxBins:
				d.errorf(item.Line, index(bpath, i), "must be in 1..%d, got %d", MaxBins, n)
				ok = false
			default:
				bins = append(bins, n)
			}
		}
		if ok && isHist && nf > 0 {
			r.AxisBins, r.Bins = bins, bins[0]
		}
		return
	}
	n, isInt := intOf(rv)
	switch {
	case !isInt:
		d.errorf(line, bpath, "must be an integer (the bins of every field), a list of integers (one per field) or %s, got %s", BinsAuto, describe(v))
	case n < 1 || n > MaxBins:
		d.errorf(line, bpath, "must be in 1..%d, got %d", MaxBins, n)
	case isHist && nf > 0:
		r.Bins = n
		r.AxisBins = make([]int, nf)
		for i := range r.AxisBins {
			r.AxisBins[i] = n
		}
	}
}

// histogramCells checks that a histogram's cells (the product of the bins
// of its fields) are at most MaxBins. With bins: auto it checks the bins
// aggregate.AutoBins gives for expected_events, which the plan will use;
// AutoBins caps itself, so an error there is a bug, reported rather than
// left to fail later.
func (d *decoder) histogramCells(m *mapping, path string, r *Release) {
	if r.Kind != KindHistogram || len(r.Fields) == 0 || !m.has("bins") {
		return
	}
	bpath := join(path, "bins")
	line := m.values["bins"].Line
	if r.BinsAuto {
		if r.ExpectedEvents < 1 {
			return // expected_events is missing or invalid, and reported
		}
		bins := aggregate.AutoBins(float64(r.ExpectedEvents), len(r.Fields), MaxBins)
		if c, err := aggregate.CellCount(bins); err != nil || c > MaxBins {
			d.errorf(line, bpath, "internal error: auto chose bins %s for %d fields and expected_events %d, more than %d cells; give the bins explicitly",
				fmtInts(bins), len(r.Fields), r.ExpectedEvents, MaxBins)
		}
		return
	}
	if len(r.AxisBins) == 0 {
		return
	}
	if c, err := aggregate.CellCount(r.AxisBins); err == nil && c <= MaxBins {
		return
	}
	// Each entry is at most MaxBins and there are at most
	// MaxHistogramDims of them, so the product fits in an int64.
	var cells int64 = 1
	for _, b := range r.AxisBins {
		cells *= int64(b)
	}
	if rv := resolve(m.values["bins"]); rv != nil && rv.Kind == yaml.ScalarNode {
		d.errorf(line, bpath, "%d bins on each of %d fields make %d cells, more than %d; use fewer bins (or a list with one count per field)",
			r.Bins, len(r.Fields), cells, MaxBins)
		return
	}
	d.errorf(line, bpath, "%s make %d cells (the product of the bins of the fields), more than %d; use fewer bins",
		fmtInts(r.AxisBins), cells, MaxBins)
}

// fmtInts prints a list of integers as YAML would: [30, 400, 2].
func fmtInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// intOf decodes a resolved scalar holding an integer.
func intOf(v *yaml.Node) (int, bool) {
	if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		return 0, false
	}
	var i int
	if v.Decode(&i) != nil {
		return 0, false
	}
	return i, true
}

// expectedEvents reads expected_events, the declared number of kept events
// per window that terms: auto (density) and bins: auto (histogram) size
// the release for. It is required with either and an error elsewhere.
func (d *decoder) expectedEvents(m *mapping, path, kind string, kindOK bool, r *Release) {
	epath := join(path, "expected_events")
	if !m.has("expected_events") {
		// The shape of a release (its number of terms or bins) must not
		// depend on the window's own data, so auto needs a size declared
		// in advance.
		switch {
		case r.TermsAuto:
			d.errorf(m.values["terms"].Line, epath, "required with terms: %s: the expected number of kept events per window, declared in advance (the window's own count would make the number of terms depend on the data)", TermsAuto)
		case r.BinsAuto:
			d.errorf(m.values["bins"].Line, epath, "required with bins: %s: the expected number of kept events per window, declared in advance (the window's own count would make the bins, and so the shape of the release, depend on the data)", BinsAuto)
		}
		return
	}
	line := m.values["expected_events"].Line
	switch {
	case kindOK && kind != KindHistogram && kind != KindDensity:
		d.errorf(line, epath, "is only used with bins: %s (histogram) or terms: %s (density), not kind %s", BinsAuto, TermsAuto, kind)
		return
	case kind == KindHistogram && !r.BinsAuto && m.has("bins"):
		d.errorf(line, epath, "is only used with bins: %s (it sizes the bins)", BinsAuto)
		return
	case kind == KindDensity && !r.TermsAuto && m.has("terms"):
		d.errorf(line, epath, "is only used with terms: %s (it sizes the number of terms)", TermsAuto)
		return
	}
	v, line, ok := d.integer(m, "expected_events")
	if !ok {
		return
	}
	if v < 1 {
		d.errorf(line, epath, "must be >= 1, got %d", v)
		return
	}
	r.ExpectedEvents = v
}

// maxPerBin reads max_per_bin, the per-unit cap c on the events counted in
// one histogram cell or randomized_response category, and returns its
// line (0 if absent or invalid). That c is at most the stream's L is
// checked by the stream, which knows L.
func (d *decoder) maxPerBin(m *mapping, path, kind string, kindOK bool, r *Release) int {
	if !m.has("max_per_bin") {
		return 0
	}
	if kindOK && kind != KindHistogram && kind != KindRandomizedResponse {
		d.errorf(m.values["max_per_bin"].Line, join(path, "max_per_bin"), "is only used with kind histogram or randomized_response, not %s", kind)
		return 0
	}
	v, line, ok := d.integer(m, "max_per_bin")
	if !ok {
		return 0
	}
	if v < 1 {
		d.errorf(line, join(path, "max_per_bin"), "must be >= 1 (leave it out for no per-bin cap), got %d", v)
		return 0
	}
	r.MaxPerBin = v
	return line
}

// samples reads samples, the number of synthetic values a histogram or
// density release also publishes.
func (d *decoder) samples(m *mapping, path, kind string, kindOK bool, r *Release) {
	if !m.has("samples") {
		return
	}
	if kindOK && kind != KindHistogram && kind != KindDensity {
		d.errorf(m.values["samples"].Line, join(path, "samples"), "is only used with kind histogram or density, not %s", kind)
		return
	}
	v, line, ok := d.integer(m, "samples")
	if !ok {
		return
	}
	if v < 0 || v > MaxSamples {
		d.errorf(line, join(path, "samples"), "must be in 0..%d (0 or absent: none), got %d", MaxSamples, v)
		return
	}
	r.Samples = v
}

// rrKeys are the keys only a randomized_response release uses.
var rrKeys = []string{"categories", "p", "epsilon_local"}

// randomizedResponse reads the keys of a randomized_response release:
// categories, and exactly one of p and epsilon_local, which describe how
// the producers randomized the field (rr.Randomizer). The release
// uses them to debias the counts; they do not change the central
// guarantee, whose noise is set by noise, epsilon and delta.
func (d *decoder) randomizedResponse(m *mapping, path, kind string, kindOK bool, r *Release) {
	isRR := kind == KindRandomizedResponse
	if kindOK && !isRR {
		for _, key := range rrKeys {
			if m.has(key) {
				d.errorf(m.values[key].Line, join(path, key), "is only used with kind randomized_response, not %s", kind)
			}
		}
		return
	}
	cats := d.categories(m, path, isRR)
	if isRR {
		r.Categories = cats
	}
	hasP, hasEps := m.has("p"), m.has("epsilon_local")
	switch {
	case hasP && hasEps:
		d.errorf(m.values["epsilon_local"].Line, join(path, "epsilon_local"), "cannot be given together with p (line %d): both describe the producers' randomization; give exactly one", m.values["p"].Line)
	case isRR && !hasP && !hasEps:
		d.errorf(m.line, join(path, "epsilon_local"), "required for kind randomized_response (or p instead): the local ε the producers randomized the field with; give exactly one of epsilon_local and p")
	}
	if v, line, ok := d.number(m, "p"); ok {
		switch {
		case !(v > 0 && v < 1): // also true for NaN
			d.errorf(line, join(path, "p"), "must be in (0, 1), the probability that a producer reports a uniform category instead of the true one, got %s", fmtFloat(v))
		case isRR && !hasEps:
			r.RRProbability = v
		}
	}
	if v, line, ok := d.number(m, "epsilon_local"); ok {
		switch {
		case !finite(v):
			d.errorf(line, join(path, "epsilon_local"), "must be finite, got %s", fmtFloat(v))
			return
		case v <= 0:
			d.errorf(line, join(path, "epsilon_local"), "must be > 0, got %s", fmtFloat(v))
			return
		}
		if len(cats) >= 2 {
			// The producers compute p from ε and k; refuse an ε for
			// which no float64 p exists rather than let them fail.
			if _, err := rr.ForEpsilon(len(cats), v); err != nil {
				d.errorf(line, join(path, "epsilon_local"), "%s is too large for %d categories: no randomization probability reaches it (e^ε overflows above about 709); use a smaller epsilon_local", fmtFloat(v), len(cats))
				return
			}
		}
		if isRR && !hasP {
			r.LocalEpsilon = v
		}
	}
}

// categories reads the categories of a randomized_response release: 2 to
// MaxCategories distinct, non-blank strings. It returns nil after an error.
func (d *decoder) categories(m *mapping, path string, required bool) []string {
	cpath := join(path, "categories")
	if !m.has("categories") {
		if required {
			d.errorf(m.line, cpath, "required for kind randomized_response: the values its field can take, e.g. [walk, bike, bus, car] (2 to %d)", MaxCategories)
		}
		return nil
	}
	items, line, ok := d.list(m, "categories")
	if !ok {
		return nil
	}
	if len(items) < 2 || len(items) > MaxCategories {
		d.errorf(line, cpath, "must list 2 to %d categories, got %d", MaxCategories, len(items))
		return nil
	}
	type seenAt struct{ index, line int }
	seen := map[string]seenAt{}
	out := make([]string, 0, len(items))
	ok = true
	for i, item := range items {
		ipath := index(cpath, i)
		ri := resolve(item)
		switch {
		case ri == nil || ri.Kind != yaml.ScalarNode || isNull(ri):
			d.errorf(item.Line, ipath, "must be a string, got %s", describe(item))
			ok = false
		case strings.TrimSpace(ri.Value) == "":
			d.errorf(item.Line, ipath, "must not be blank: a category is a value of the field")
			ok = false
		default:
			if first, dup := seen[ri.Value]; dup {
				d.errorf(item.Line, ipath, "%q is also categories[%d] (line %d); categories must be distinct", ri.Value, first.index, first.line)
				ok = false
				continue
			}
			seen[ri.Value] = seenAt{i, item.Line}
			out = append(out, ri.Value)
		}
	}
	if !ok {
		return nil
	}
	return out
}
