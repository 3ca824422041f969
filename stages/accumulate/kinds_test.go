package accumulate

import (
	"fmt"

	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/kind/count"
	"github.com/dpstream/dpstream/kind/density"
	"github.com/dpstream/dpstream/kind/histogram"
	"github.com/dpstream/dpstream/kind/mean"
	"github.com/dpstream/dpstream/kind/randomizedresponse"
	"github.com/dpstream/dpstream/kind/regression"
	sumkind "github.com/dpstream/dpstream/kind/sum"
	"github.com/dpstream/dpstream/mechanism/aggregate"
	mregression "github.com/dpstream/dpstream/mechanism/regression"
	"github.com/dpstream/dpstream/schema"
)

// relSpec describes one release of a test stream the way the tests'
// reference models read it; build turns it into the stage's Release
// through its kind's package. Its first value is at the release's own
// index in Event.Values, its further ones where More and Regression say.
type relSpec struct {
	Name, Kind, Field string
	Lo, Hi            float64
	Bins              int
	// Terms is a density's number of cosine terms.
	Terms int
	// More are a histogram's second and third fields.
	More []moreField
	// BinCap is a histogram's or randomized_response's cap per cell.
	BinCap int
	// Categories is a randomized_response's number of categories.
	Categories int
	Regression *regFields
}

// moreField is a further field of a histogram over several fields.
type moreField struct {
	Axis  aggregate.Axis
	Value int // index of the field's value in Event.Values
}

// regFields are a regression's scaling and its features' indices in
// Event.Values (the target's value is the release's own).
type regFields struct {
	Scaling  mregression.Scaling
	Features []int
}

// testStat is a kind's statistic built from a relSpec, which it keeps for
// the reference models (specsOf).
type testStat struct {
	kind.Statistic
	spec relSpec
}

// statOf builds the statistic of release i of a stream with L = l.
func statOf(r relSpec, i, l int) (kind.Statistic, error) {
	switch r.Kind {
	case "count":
		return count.NewStatistic(), nil
	case "sum":
		return sumkind.NewStatistic(r.Lo, r.Hi, i)
	case "mean":
		return mean.NewStatistic(r.Lo, r.Hi, i)
	case "histogram":
		axes, at := []aggregate.Axis{{Lo: r.Lo, Hi: r.Hi, Bins: r.Bins}}, []int{i}
		for _, f := range r.More {
			axes, at = append(axes, f.Axis), append(at, f.Value)
		}
		return histogram.NewStatistic(axes, at, r.BinCap, l)
	case "randomized_response":
		return randomizedresponse.NewStatistic(r.Categories, i, r.BinCap, l)
	case "density":
		return density.NewStatistic(r.Lo, r.Hi, r.Terms, i)
	case "regression":
		if r.Regression == nil {
			return nil, fmt.Errorf("regression %s without fields", r.Name)
		}
		return regression.NewStatistic(r.Regression.Scaling, i, r.Regression.Features)
	}
	return nil, fmt.Errorf("unknown kind %q", r.Kind)
}

// build sets s's releases from specs, for its MaxEvents, and returns s. A
// spec no kind accepts panics: it is a mistake in the test.
func build(s *Stream, specs ...relSpec) *Stream {
	s.Releases = nil
	for i, r := range specs {
		st, err := statOf(r, i, s.MaxEvents)
		if err != nil {
			panic(fmt.Sprintf("release %s: %v", r.Name, err))
		}
		s.Releases = append(s.Releases, Release{Name: r.Name, Stat: testStat{Statistic: st, spec: r}})
	}
	return s
}

// specsOf returns the specs s was built from.
func specsOf(s *Stream) []relSpec {
	out := make([]relSpec, len(s.Releases))
	for i, r := range s.Releases {
		out[i] = r.Stat.(testStat).spec
	}
	return out
}

// spyStat is a statistic that records what the stage asks of it, and
// refuses events whose value at its index is refuse (when not 0).
type spyStat struct {
	at     int
	refuse float64
	log    *spyLog
}

// spyLog is what the stage asked of the spy statistics of one partition.
type spyLog struct {
	checks, adds, contribAdds, drops int
	units                            map[int]bool // unit indices added
}

func (s spyStat) NewWindow() kind.Accumulator { return &spyWindow{s: s} }
func (s spyStat) Norms() kind.Norms           { return kind.Norms{Head: 1} }

type spyWindow struct {
	s     spyStat
	n     int64
	units map[int]int64
}

func (w *spyWindow) Check(values []float64, _ []string) error {
	w.s.log.checks++
	if w.s.refuse != 0 && values[w.s.at] == w.s.refuse {
		return fmt.Errorf("refused %v", w.s.refuse)
	}
	return nil
}

func (w *spyWindow) Add(_ []float64, _ []string, unit int, contrib bool) error {
	l := w.s.log
	l.adds++
	if l.units == nil {
		l.units = map[int]bool{}
	}
	l.units[unit] = true
	w.n++
	if contrib {
		l.contribAdds++
		if w.units == nil {
			w.units = map[int]int64{}
		}
		w.units[unit]++
	}
	return nil
}

func (w *spyWindow) Stats(rs *schema.ReleaseStats) { rs.Count = w.n }

func (w *spyWindow) AppendNorms(buf []float64, unit, _ int) ([]float64, error) {
	return append(buf, float64(w.units[unit])), nil
}

func (w *spyWindow) DropUnits() {
	w.s.log.drops++
	w.units = nil
}
