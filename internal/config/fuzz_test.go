package config_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/kind/count"
	"github.com/dpstream/dpstream/kind/density"
	"github.com/dpstream/dpstream/kind/histogram"
	"github.com/dpstream/dpstream/kind/quantiles"
	"github.com/dpstream/dpstream/kind/randomizedresponse"
	"github.com/dpstream/dpstream/kind/regression"
	"github.com/dpstream/dpstream/kind/sum"
)

// FuzzParse checks that no input makes Parse panic, that every rejection is
// made of *Error values sorted by line, and that every accepted config
// satisfies the rules the rest of dpstream relies on.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(testdataDir, "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(config.Example()))
	f.Add([]byte(minimal))
	for _, g := range goodRegressions {
		f.Add([]byte(withRelease(g.yaml)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data, "fuzz.yaml")
		if err != nil {
			if cfg != nil {
				t.Errorf("Parse returned a Config with an error")
			}
			errs := config.Errors(err)
			if len(errs) == 0 {
				t.Fatalf("error %v holds no *Error", err)
			}
			for i, e := range errs {
				if e.Msg == "" || e.Line < 0 || e.Path != "fuzz.yaml" {
					t.Errorf("malformed error %+v", *e)
				}
				if i > 0 && errs[i-1].Line > e.Line {
					t.Errorf("errors not sorted by line")
				}
			}
			return
		}
		checkValid(t, cfg)
	})
}

// checkValid asserts the invariants of an accepted config, restated from the
// package brief independently of the parser's code.
func checkValid(t *testing.T, cfg *config.Config) {
	t.Helper()
	if len(cfg.Streams) == 0 {
		t.Fatal("accepted a config without streams")
	}
	if cfg.Group == "" || cfg.Embedded.Addr == "" || cfg.Embedded.DataDir == "" {
		t.Errorf("empty group or embedded settings: %+v", cfg)
	}
	topics := map[string]bool{}
	for _, name := range []string{cfg.Topics.Partials, cfg.Topics.Releases, cfg.Topics.Ledger,
		cfg.Topics.Accountant, cfg.Topics.PDP, cfg.Topics.DeadLetter} {
		if name == "" || topics[name] {
			t.Errorf("internal topic %q empty or repeated", name)
		}
		topics[name] = true
	}
	names := map[string]bool{}
	for _, s := range cfg.Streams {
		if s.Name == "" || names[s.Name] {
			t.Errorf("stream name %q empty or repeated", s.Name)
		}
		names[s.Name] = true
		if s.Topic == "" || topics[s.Topic] {
			t.Errorf("stream topic %q empty or repeated", s.Topic)
		}
		topics[s.Topic] = true
		if s.Partitions < 1 || s.PrivacyUnit == "" {
			t.Errorf("stream %q: partitions %d, privacy unit %q", s.Name, s.Partitions, s.PrivacyUnit)
		}
		switch s.Format {
		case config.FormatJSON:
			if s.Schema != "" || s.SchemaID != 0 {
				t.Errorf("json stream %q has a schema", s.Name)
			}
		case config.FormatAvro, config.FormatConfluentAvro:
			if s.Schema == "" {
				t.Errorf("avro stream %q has no schema", s.Name)
			}
		default:
			t.Errorf("stream %q: format %q", s.Name, s.Format)
		}
		w := s.Window
		if w.Size <= 0 || w.Grace < 0 || w.IdleTimeout <= 0 {
			t.Errorf("stream %q: window %+v", s.Name, w)
		}
		if s.Contribution.MaxEventsPerWindow < 1 {
			t.Errorf("stream %q: contribution %d", s.Name, s.Contribution.MaxEventsPerWindow)
		}
		b := s.Budget
		if !(b.Epsilon > 0) || math.IsInf(b.Epsilon, 0) || !(b.Delta > 0 && b.Delta < 1) || b.Per < 0 || (b.Per > 0 && b.Per%w.Size != 0) {
			t.Errorf("stream %q: budget %+v", s.Name, b)
		}
		if len(s.Releases) == 0 {
			t.Errorf("stream %q has no releases", s.Name)
		}
		rnames := map[string]bool{}
		for _, r := range s.Releases {
			if r.Name == "" || rnames[r.Name] {
				t.Errorf("release name %q empty or repeated", r.Name)
			}
			rnames[r.Name] = true
			if !(r.Epsilon > 0) || math.IsInf(r.Epsilon, 0) {
				t.Errorf("release %q: epsilon %v", r.Name, r.Epsilon)
			}
			switch r.Noise {
			case config.NoiseLaplace:
				// With private key selection the δ is the selection's.
				if r.Delta != 0 && !privateSelection(r) {
					t.Errorf("laplace release %q: delta %v", r.Name, r.Delta)
				}
			case config.NoiseGaussian:
				if !(r.Delta > 0 && r.Delta < 1) {
					t.Errorf("gaussian release %q: delta %v", r.Name, r.Delta)
				}
			case "":
				// A regression's method fixes its noise; every method is
				// (ε, δ)-DP.
				if r.Kind != "regression" || !(r.Delta > 0 && r.Delta < 1) {
					t.Errorf("release %q of kind %s: no noise, delta %v", r.Name, r.Kind, r.Delta)
				}
			default:
				t.Errorf("release %q: noise %q", r.Name, r.Noise)
			}
			checkValidRelease(t, s, r)
		}
	}
}

// checkValidRelease asserts the invariants of one accepted release of
// stream s, restated from the package briefs. A kind's keys are its own
// type (config.Release.Params), so no release can carry another kind's
// settings; what is left to check is each kind's own.
func checkValidRelease(t *testing.T, s config.Stream, r config.Release) {
	t.Helper()
	value := func(field string, b [2]float64) {
		if field == "" || field == s.PrivacyUnit || !(b[0] < b[1]) || math.IsInf(b[1]-b[0], 0) {
			t.Errorf("release %q: field %q bounds %v", r.Name, field, b)
		}
	}
	maxPerBin := func(c int) {
		if c != 0 && (c < 1 || c > s.Contribution.MaxEventsPerWindow) {
			t.Errorf("release %q of kind %s: max_per_bin %d with L = %d", r.Name, r.Kind, c, s.Contribution.MaxEventsPerWindow)
		}
	}
	samples := func(n int) {
		if n < 0 || n > 100000 {
			t.Errorf("release %q of kind %s: samples %d", r.Name, r.Kind, n)
		}
	}
	switch c := r.Params.(type) {
	case nil:
		if r.Kind != "count" && r.Kind != "count_units" {
			t.Errorf("release %q of kind %s has no configuration of its kind", r.Name, r.Kind)
		}
	case *sum.Config: // also mean.Config: both are a field and its bounds
		if r.Kind != "sum" && r.Kind != "mean" {
			t.Errorf("release %q of kind %s has a sum's configuration", r.Name, r.Kind)
		}
		value(c.Field, c.Bounds)
	case *histogram.Config:
		value(c.Field, c.Bounds)
		maxPerBin(c.MaxPerBin)
		samples(c.Samples)
		checkValidHistogram(t, s, r.Name, c)
	case *density.Config:
		value(c.Field, c.Bounds)
		samples(c.Samples)
		validTerms := c.TermsAuto != (c.Terms >= 1 && c.Terms <= 1024)
		if !validTerms || (c.TermsAuto && (c.ExpectedEvents < 1 || !(c.Smoothness > 0))) ||
			(!c.TermsAuto && (c.ExpectedEvents != 0 || c.Smoothness != 0)) ||
			(c.GridPoints != 0 && (c.GridPoints < 2 || c.GridPoints > 1<<16 || (c.Terms > 0 && c.GridPoints <= c.Terms))) {
			t.Errorf("release %q: terms %d auto %v expected %d smoothness %v grid %d",
				r.Name, c.Terms, c.TermsAuto, c.ExpectedEvents, c.Smoothness, c.GridPoints)
		}
	case *randomizedresponse.Config:
		if c.Field == "" || c.Field == s.PrivacyUnit {
			t.Errorf("randomized_response release %q: field %q", r.Name, c.Field)
		}
		maxPerBin(c.MaxPerBin)
		if len(c.Categories) < 2 || len(c.Categories) > 1000 {
			t.Errorf("randomized_response release %q: %d categories", r.Name, len(c.Categories))
		}
		seen := map[string]bool{}
		for _, cat := range c.Categories {
			if strings.TrimSpace(cat) == "" || seen[cat] {
				t.Errorf("randomized_response release %q: category %q blank or repeated", r.Name, cat)
			}
			seen[cat] = true
		}
		validP := c.RRProbability > 0 && c.RRProbability < 1
		validEps := c.LocalEpsilon > 0 && !math.IsInf(c.LocalEpsilon, 0)
		if validP == validEps || (validP && c.LocalEpsilon != 0) || (validEps && c.RRProbability != 0) {
			t.Errorf("randomized_response release %q: p %v epsilon_local %v, want exactly one", r.Name, c.RRProbability, c.LocalEpsilon)
		}
	case *regression.Config:
		checkValidRegression(t, s, r.Name, c)
	case *quantiles.Config:
		if len(c.Ranks) == 0 || c.Branching < 2 || c.Height < 1 {
			t.Errorf("release %q: ranks %v branching %d height %d", r.Name, c.Ranks, c.Branching, c.Height)
		}
		for _, q := range c.Ranks {
			if !(q >= 0 && q <= 1) {
				t.Errorf("release %q: rank %v", r.Name, q)
			}
		}
		checkValidGroup(t, s, r, &c.Config)
	case *count.GroupConfig:
		checkValidGroup(t, s, r, c)
	default:
		t.Errorf("release %q of kind %q: configuration of type %T", r.Name, r.Kind, r.Params)
	}
}

// privateSelection reports whether r selects keys privately (its δ is
// the selection's).
func privateSelection(r config.Release) bool {
	switch c := r.Params.(type) {
	case *count.GroupConfig:
		return !c.Public()
	case *quantiles.Config:
		return !c.Public()
	}
	return false
}

// checkValidGroup asserts the invariants of a release's group-by keys: a
// key field that is not the unit, bounds within L, sorted distinct public
// keys or a selection with a share of the release's budget; without
// group_by (variance, quantiles) the one public key "".
func checkValidGroup(t *testing.T, s config.Stream, r config.Release, c *count.GroupConfig) {
	t.Helper()
	if c.Value.Field != "" && (c.Value.Field == s.PrivacyUnit || !(c.Value.Bounds[0] < c.Value.Bounds[1]) || math.IsInf(c.Value.Bounds[1]-c.Value.Bounds[0], 0)) {
		t.Errorf("release %q: field %q bounds %v", r.Name, c.Value.Field, c.Value.Bounds)
	}
	if c.GroupBy == "" {
		if len(c.Keys) != 1 || c.Keys[0] != "" || c.MaxKeys != 1 || c.PerKey != 0 {
			t.Errorf("release %q without group_by: keys %q max_keys %d max_per_key %d", r.Name, c.Keys, c.MaxKeys, c.PerKey)
		}
		return
	}
	{
		if c.GroupBy == "" || c.GroupBy == s.PrivacyUnit || c.MaxKeys < 1 || c.PerKey < 0 || c.PerKey > s.Contribution.MaxEventsPerWindow {
			t.Errorf("release %q: group_by %q max_keys %d max_per_key %d", r.Name, c.GroupBy, c.MaxKeys, c.PerKey)
		}
		if c.Public() {
			if len(c.Keys) == 0 || !slices.IsSorted(c.Keys) || len(slices.Compact(slices.Clone(c.Keys))) != len(c.Keys) {
				t.Errorf("release %q: public keys %q not sorted, distinct and non-empty", r.Name, c.Keys)
			}
			return
		}
		sel := c.Selection
		whole := r.Kind == "select_keys"
		okEps := sel.Epsilon > 0 && (sel.Epsilon < r.Epsilon || (whole && sel.Epsilon == r.Epsilon))
		okDelta := sel.Delta > 0 && (sel.Delta < r.Delta || ((whole || r.Noise != config.NoiseGaussian) && sel.Delta == r.Delta))
		if !okEps || !okDelta {
			t.Errorf("release %q: selection (ε=%v, δ=%v) of a release (ε=%v, δ=%v)", r.Name, sel.Epsilon, sel.Delta, r.Epsilon, r.Delta)
		}
	}
}

// checkValidRegression asserts the invariants of an accepted regression,
// restated from the brief: 1 to 64 distinct features and a target, none
// the privacy unit and the target not a feature, valid bounds, the
// settings of the method and none of another method's, and for pcls at
// most 4096 candidate models.
func checkValidRegression(t *testing.T, s config.Stream, name string, r *regression.Config) {
	t.Helper()
	validBounds := func(b [2]float64) bool { return b[0] < b[1] && !math.IsInf(b[1]-b[0], 0) && !math.IsNaN(b[1]-b[0]) }
	if r.Target == "" || r.Target == s.PrivacyUnit || !validBounds(r.TargetBounds) {
		t.Errorf("regression %q: target %q bounds %v", name, r.Target, r.TargetBounds)
	}
	d := len(r.Features)
	if d < 1 || d > 64 || len(r.FeatureBounds) != d {
		t.Fatalf("regression %q: %d features, %d bounds", name, d, len(r.FeatureBounds))
	}
	seen := map[string]bool{}
	for i, f := range r.Features {
		if strings.TrimSpace(f) == "" || f == s.PrivacyUnit || f == r.Target || seen[f] || !validBounds(r.FeatureBounds[i]) {
			t.Errorf("regression %q: feature %q bounds %v", name, f, r.FeatureBounds[i])
		}
		seen[f] = true
	}
	finite := func(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
	switch r.Method {
	case regression.MethodSSP:
		if !(r.Lambda >= 0) || !finite(r.Lambda) || r.Rho != 0 {
			t.Errorf("ssp regression %q: lambda %v rho %v", name, r.Lambda, r.Rho)
		}
	case regression.MethodOPS:
		if !(r.Lambda > 0) || !finite(r.Lambda) || r.Rho != 0 {
			t.Errorf("ops regression %q: lambda %v rho %v", name, r.Lambda, r.Rho)
		}
	case regression.MethodAdaSSP, regression.MethodAdaOPS, regression.MethodPCLS:
		if r.Lambda != 0 || !(r.Rho > 0 && r.Rho < 1) {
			t.Errorf("%s regression %q: lambda %v rho %v", r.Method, name, r.Lambda, r.Rho)
		}
	default:
		t.Errorf("regression %q: method %q", name, r.Method)
	}
	if r.Method != regression.MethodPCLS {
		if r.Selection != "" || r.Radius != 0 || r.Penalty != 0 || r.MaxSupport != 0 || r.Supports != nil || r.SelectionShare != 0 {
			t.Errorf("%s regression %q has pcls settings", r.Method, name)
		}
		return
	}
	if (r.Selection != regression.SelectionExponential && r.Selection != regression.SelectionNoisyMin) || !(r.Radius > 0) || !finite(r.Radius) ||
		!(r.Penalty >= 0) || !finite(r.Penalty) || !(r.SelectionShare > 0 && r.SelectionShare < 1) {
		t.Errorf("pcls regression %q: selection %q radius %v penalty %v share %v", name, r.Selection, r.Radius, r.Penalty, r.SelectionShare)
	}
	switch {
	case r.MaxSupport != 0 && r.Supports == nil:
		// Σ C(d, k) for k = 1..MaxSupport, by Pascal's rule, saturating.
		if r.MaxSupport < 1 || r.MaxSupport > d {
			t.Fatalf("pcls regression %q: max_support %d of %d features", name, r.MaxSupport, d)
		}
		row := make([]float64, d+1) // row[k] = C(n, k) for the current n
		row[0] = 1
		for n := 1; n <= d; n++ {
			for k := n; k >= 1; k-- {
				row[k] += row[k-1]
			}
		}
		var total float64
		for k := 1; k <= r.MaxSupport; k++ {
			total += row[k]
		}
		if total > 4096 {
			t.Errorf("pcls regression %q: max_support %d of %d features makes %v candidates", name, r.MaxSupport, d, total)
		}
	case r.MaxSupport == 0 && r.Supports != nil:
		if len(r.Supports) < 1 || len(r.Supports) > 4096 {
			t.Errorf("pcls regression %q: %d supports", name, len(r.Supports))
		}
		sets := map[string]bool{}
		for _, sup := range r.Supports {
			in := make([]bool, d)
			for _, name := range sup {
				i := slices.Index(r.Features, name)
				if i < 0 || in[i] {
					t.Errorf("pcls regression %q: support %q has %q, not a feature or repeated", name, sup, name)
					continue
				}
				in[i] = true
			}
			key := fmt.Sprint(in)
			if len(sup) == 0 || sets[key] {
				t.Errorf("pcls regression %q: support %q empty or repeated", name, sup)
			}
			sets[key] = true
		}
	default:
		t.Errorf("pcls regression %q: max_support %d and supports %v, want exactly one", name, r.MaxSupport, r.Supports)
	}
}

// checkValidHistogram asserts the shape of an accepted histogram: 1 to 3
// distinct fields with one [lo, hi] each, and either bins: auto with a
// declared size, or bins per field whose product is at most 10000.
func checkValidHistogram(t *testing.T, s config.Stream, name string, r *histogram.Config) {
	t.Helper()
	n := len(r.Fields)
	if n < 1 || n > 3 || r.Fields[0] != r.Field || len(r.AxisBounds) != n || r.AxisBounds[0] != r.Bounds {
		t.Fatalf("histogram %q: field %q fields %q bounds %v axis bounds %v", name, r.Field, r.Fields, r.Bounds, r.AxisBounds)
	}
	seen := map[string]bool{}
	for i, f := range r.Fields {
		if f == "" || f == s.PrivacyUnit || seen[f] {
			t.Errorf("histogram %q: field %q empty, the privacy unit or repeated", name, f)
		}
		seen[f] = true
		a, b := r.AxisBounds[i][0], r.AxisBounds[i][1]
		if !(a < b) || math.IsInf(b-a, 0) || math.IsNaN(b-a) {
			t.Errorf("histogram %q: bounds %v of field %q", name, r.AxisBounds[i], f)
		}
	}
	if r.BinsAuto {
		if r.Bins != 0 || r.AxisBins != nil || r.ExpectedEvents < 1 {
			t.Errorf("histogram %q: bins auto with bins %d %v, expected_events %d", name, r.Bins, r.AxisBins, r.ExpectedEvents)
		}
		return
	}
	if len(r.AxisBins) != n || r.AxisBins[0] != r.Bins || r.ExpectedEvents != 0 {
		t.Fatalf("histogram %q: bins %d axis bins %v for %d fields, expected_events %d", name, r.Bins, r.AxisBins, n, r.ExpectedEvents)
	}
	cells := 1
	for _, b := range r.AxisBins {
		if b < 1 || b > 10000 {
			t.Fatalf("histogram %q: axis bins %v", name, r.AxisBins)
		}
		cells *= b
	}
	if cells > 10000 {
		t.Errorf("histogram %q: %v bins make %d cells, more than 10000", name, r.AxisBins, cells)
	}
}

// TestAcceptedConfigsValid runs the fuzz invariants on the valid configs the
// other tests use, so that checkValid itself is exercised on every run.
func TestAcceptedConfigsValid(t *testing.T) {
	srcs := map[string]string{"example": config.Example(), "minimal": minimal}
	for _, g := range goodReleases {
		srcs[g.name] = withRelease(g.yaml)
	}
	for _, g := range goodRegressions {
		srcs[g.name] = withRelease(g.yaml)
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(src), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			checkValid(t, cfg)
		})
	}
}
