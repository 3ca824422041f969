package histogram

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/internal/keys"
	"github.com/dpstream/dpstream/mechanism/aggregate"
)

// MaxBins is the most cells a histogram may have (the product of its
// fields' bins). It bounds the memory and the size of a release (each cell
// is a noisy count in the release record, which must fit in one Kafka
// record); it does not affect privacy (the L1 sensitivity of a histogram
// does not depend on the number of bins).
const MaxBins = 10000

// BinsAuto is the value of bins that sizes them from expected_events
// (aggregate.AutoBins).
const BinsAuto = "auto"

// Doc describes the kind for the configuration reference.
func (Kind) Doc() string {
	return fmt.Sprintf("The counts of the kept events in the equal-width cells of 1 to %d fields, each clamped to its bounds, with independent noise per cell; optionally capped per unit and cell, and with synthetic samples (see [histograms](#histograms)).", aggregate.MaxHistogramDims)
}

// Fields are the fields, their bounds and bins, the cap and the samples.
func (Kind) Fields() []config.Field {
	return []config.Field{
		{Key: "field", Type: "field name", Default: "required unless `fields`", Doc: "the numeric event field to bin; not the privacy unit"},
		{Key: "fields", Type: "list of field names", Default: "`[field]`", Doc: fmt.Sprintf("instead of `field` (giving both is an error): 1–%d distinct fields, none the privacy unit; the histogram's cells are the product of the fields' bins", aggregate.MaxHistogramDims)},
		{Key: "bounds", Type: "`[lo, hi]`, or one `[lo, hi]` per field", Default: "required", Doc: "finite, `lo < hi`, `hi − lo` finite; values are clamped into it. Over several fields, one per field in the order of `fields`: `[[lo1, hi1], [lo2, hi2]]` (`[lo, hi]` alone only for one field)"},
		{Key: "bins", Type: "int, list of ints, or `auto`", Default: "required", Doc: fmt.Sprintf("equal-width bins per field, 1–%d each; one int applies to every field, a list gives one per field; the product over the fields must be ≤ %d. `auto` sizes them from `expected_events`: ⌈n^(1/(2+d))⌉ per field for d fields, reduced until the product is ≤ %d", MaxBins, MaxBins, MaxBins)},
		keys.ExpectedEventsDoc("`bins: auto`"),
		keys.MaxPerBinDoc("cell"),
		keys.SamplesDoc,
		config.ContinualField,
	}
}

// Decode reads a histogram's keys: field or fields, bounds (one [lo, hi]
// per field), bins (one integer for every field, one per field, or auto),
// expected_events with bins: auto, max_per_bin and samples. It checks the
// number of cells once expected_events is known.
func (Kind) Decode(p *config.Params, rel *config.Release) {
	r := &Config{}
	rel.Params = r
	defer p.Continual(rel)
	// The checks run in the order dpstream has always reported them in
	// (on a release written on one line, the sort by line keeps it):
	// field, a missing bounds, fields, the bounds' values, bins.
	keys.Field(p, &r.Field, Name, "fields", fmt.Sprintf(": the event field to bin (or fields: [a, b] for a histogram over 2 to %d fields)", aggregate.MaxHistogramDims))
	if !p.Has("bounds") {
		hint := ""
		if p.Has("fields") {
			hint = " (one [lo, hi] per field: [[lo1, hi1], [lo2, hi2]])"
		}
		p.Errorf(p.Line(), p.Path("bounds"), "required for kind %s: [lo, hi], the range values are clamped to%s", Name, hint)
	}
	if p.Has("field") && p.Has("fields") {
		p.Errorf(p.KeyLine("fields"), p.Path("fields"), "cannot be given together with field (line %d): use field for one field, or fields for 1 to %d",
			p.KeyLine("field"), aggregate.MaxHistogramDims)
	}
	nf := 0 // number of fields; 0 while unknown, after an error reported elsewhere
	switch {
	case p.Has("fields") && !p.Has("field"):
		if names, lines, ok := fieldList(p); ok {
			nf = len(names)
			r.Fields, r.Field = names, names[0]
			for i, n := range names {
				p.Aggregate(n, lines[i], config.Index(p.Path("fields"), i))
			}
		}
	case r.Field != "" && !p.Has("fields"):
		nf = 1
		r.Fields = []string{r.Field}
	}
	if p.Has("bounds") {
		if ab, ok := axisBounds(p, nf); ok {
			r.Bounds = ab[0]
			r.AxisBounds = ab
		}
	}
	if !p.Has("bins") {
		p.Errorf(p.Line(), p.Path("bins"), "required for kind histogram: the number of equal-width bins (one integer for every field, a list with one per field, or %s with expected_events)", BinsAuto)
	} else {
		bins(p, nf, r)
	}
	keys.ExpectedEvents(p, &r.ExpectedEvents, "bins", r.BinsAuto, "the bins, and so the shape of the release,")
	cells(p, r)
	keys.MaxPerBin(p, &r.MaxPerBin)
	keys.Samples(p, &r.Samples)
}

// fieldList reads the names in fields and returns them with their lines.
func fieldList(p *config.Params) ([]string, []int, bool) {
	fpath := p.Path("fields")
	items, line, ok := p.List("fields")
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
		p.Errorf(line, fpath, "must list 1 to %d fields, got %d%s", aggregate.MaxHistogramDims, len(items), why)
		return nil, nil, false
	}
	names := make([]string, 0, len(items))
	lines := make([]int, 0, len(items))
	seen := map[string]int{} // name -> index in names
	ok = true
	for i, item := range items {
		ipath := config.Index(fpath, i)
		v, isScalar := item.Scalar()
		switch {
		case !isScalar:
			p.Errorf(item.Line(), ipath, "must be a field name, got %s", item.Describe())
			ok = false
		case strings.TrimSpace(v) == "":
			p.Errorf(item.Line(), ipath, "must name the event field to bin")
			ok = false
		default:
			if j, dup := seen[v]; dup {
				p.Errorf(item.Line(), ipath, "%q is also fields[%d]; the fields must be distinct", v, j)
				ok = false
				continue
			}
			seen[v] = i
			names = append(names, v)
			lines = append(lines, item.Line())
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
func axisBounds(p *config.Params, nf int) ([][2]float64, bool) {
	bpath := p.Path("bounds")
	items, line, ok := p.List("bounds")
	if !ok {
		return nil, false
	}
	if len(items) == 0 {
		b, ok := p.BoundsPair(items, line, bpath)
		return [][2]float64{b}, ok
	}
	if _, isList := items[0].Items(); !isList {
		b, ok := p.BoundsPair(items, line, bpath)
		if !ok {
			return nil, false
		}
		if nf > 1 {
			p.Errorf(line, bpath, "is one [lo, hi], but the histogram has %d fields: give one [lo, hi] per field, in the order of fields, e.g. %s",
				nf, pairsExample(nf))
			return nil, false
		}
		return [][2]float64{b}, true
	}
	switch {
	case nf > 0 && len(items) != nf:
		p.Errorf(line, bpath, "has %d [lo, hi] for %s: give one [lo, hi] per field, in the order of fields", len(items), nFields(nf))
		return nil, false
	case len(items) > aggregate.MaxHistogramDims:
		p.Errorf(line, bpath, "has %d [lo, hi]; a histogram has at most %d fields", len(items), aggregate.MaxHistogramDims)
		return nil, false
	}
	out := make([][2]float64, len(items))
	ok = true
	for i, item := range items {
		ipath := config.Index(bpath, i)
		pair, isList := item.Items()
		if !isList {
			p.Errorf(item.Line(), ipath, "must be [lo, hi], two numbers; got %s", item.Describe())
			ok = false
			continue
		}
		b, good := p.BoundsPair(pair, item.Line(), ipath)
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
func bins(p *config.Params, nf int, r *Config) {
	bpath := p.Path("bins")
	v, _ := p.Value("bins")
	line := v.Line()
	if v.Is(BinsAuto) {
		r.BinsAuto = true
		return
	}
	if items, isList := v.Items(); isList {
		switch {
		case len(items) == 0:
			p.Errorf(line, bpath, "must not be an empty list: give one integer per field, one integer for every field, or %s", BinsAuto)
			return
		case nf > 0 && len(items) != nf:
			p.Errorf(line, bpath, "has %d entries for %s: give one per field, in the order of fields, or one integer for every field", len(items), nFields(nf))
			return
		case len(items) > aggregate.MaxHistogramDims:
			p.Errorf(line, bpath, "has %d entries; a histogram has at most %d fields", len(items), aggregate.MaxHistogramDims)
			return
		}
		out := make([]int, 0, len(items))
		ok := true
		for i, item := range items {
			n, isInt := item.Int()
			switch {
			case !isInt:
				p.Errorf(item.Line(), config.Index(bpath, i), "must be an integer, got %s", item.Describe())
				ok = false
			case n < 1 || n > MaxBins:
				p.Errorf(item.Line(), config.Index(bpath, i), "must be in 1..%d, got %d", MaxBins, n)
				ok = false
			default:
				out = append(out, n)
			}
		}
		if ok && nf > 0 {
			r.AxisBins, r.Bins = out, out[0]
		}
		return
	}
	n, isInt := v.Int()
	switch {
	case !isInt:
		p.Errorf(line, bpath, "must be an integer (the bins of every field), a list of integers (one per field) or %s, got %s", BinsAuto, v.Describe())
	case n < 1 || n > MaxBins:
		p.Errorf(line, bpath, "must be in 1..%d, got %d", MaxBins, n)
	case nf > 0:
		r.Bins = n
		r.AxisBins = make([]int, nf)
		for i := range r.AxisBins {
			r.AxisBins[i] = n
		}
	}
}

// cells checks that a histogram's cells (the product of the bins of its
// fields) are at most MaxBins. With bins: auto it checks the bins
// aggregate.AutoBins gives for expected_events, which the plan will use;
// AutoBins caps itself, so an error there is a bug, reported rather than
// left to fail later.
func cells(p *config.Params, r *Config) {
	if len(r.Fields) == 0 || !p.Has("bins") {
		return
	}
	bpath := p.Path("bins")
	line := p.KeyLine("bins")
	if r.BinsAuto {
		if r.ExpectedEvents < 1 {
			return // expected_events is missing or invalid, and reported
		}
		bins := aggregate.AutoBins(float64(r.ExpectedEvents), len(r.Fields), MaxBins)
		if c, err := aggregate.CellCount(bins); err != nil || c > MaxBins {
			p.Errorf(line, bpath, "internal error: auto chose bins %s for %d fields and expected_events %d, more than %d cells; give the bins explicitly",
				config.FormatInts(bins), len(r.Fields), r.ExpectedEvents, MaxBins)
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
	var n int64 = 1
	for _, b := range r.AxisBins {
		n *= int64(b)
	}
	if v, _ := p.Value("bins"); v.IsScalar() {
		p.Errorf(line, bpath, "%d bins on each of %d fields make %d cells, more than %d; use fewer bins (or a list with one count per field)",
			r.Bins, len(r.Fields), n, MaxBins)
		return
	}
	p.Errorf(line, bpath, "%s make %d cells (the product of the bins of the fields), more than %d; use fewer bins",
		config.FormatInts(r.AxisBins), n, MaxBins)
}
