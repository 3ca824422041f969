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
	"github.com/dpstream/dpstream/kind/regression"
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
				if r.Delta != 0 {
					t.Errorf("laplace release %q: delta %v", r.Name, r.Delta)
				}
			case config.NoiseGaussian:
				if !(r.Delta > 0 && r.Delta < 1) {
					t.Errorf("gaussian release %q: delta %v", r.Name, r.Delta)
				}
			case "":
				// A regression's method fixes its noise; every method is
				// (ε, δ)-DP.
				if r.Kind != config.KindRegression || !(r.Delta > 0 && r.Delta < 1) {
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
// stream s, restated from the package briefs.
func checkValidRelease(t *testing.T, s config.Stream, r config.Release) {
	t.Helper()
	lo, hi := r.Bounds[0], r.Bounds[1]
	isHist := r.Kind == config.KindHistogram
	isRR := r.Kind == config.KindRandomizedResponse
	switch r.Kind {
	case config.KindCount:
		if r.Field != "" || r.Bins != 0 || lo != 0 || hi != 0 {
			t.Errorf("count release %q has value settings", r.Name)
		}
	case config.KindRegression:
		checkValidRegression(t, s, r)
	case config.KindSum, config.KindMean, config.KindHistogram, config.KindDensity:
		if r.Field == "" || r.Field == s.PrivacyUnit || !(lo < hi) || math.IsInf(hi-lo, 0) {
			t.Errorf("release %q: field %q bounds %v", r.Name, r.Field, r.Bounds)
		}
		density := r.Kind == config.KindDensity
		validTerms := r.TermsAuto != (r.Terms >= 1 && r.Terms <= 1024)
		if density != validTerms || (r.TermsAuto && (r.ExpectedEvents < 1 || !(r.Smoothness > 0))) ||
			(!isHist && !r.TermsAuto && (r.ExpectedEvents != 0 || r.Smoothness != 0)) ||
			(r.GridPoints != 0 && (!density || r.GridPoints < 2 || r.GridPoints > 1<<16 || (r.Terms > 0 && r.GridPoints <= r.Terms))) {
			t.Errorf("release %q: kind %s terms %d auto %v expected %d smoothness %v grid %d",
				r.Name, r.Kind, r.Terms, r.TermsAuto, r.ExpectedEvents, r.Smoothness, r.GridPoints)
		}
	case config.KindRandomizedResponse:
		if r.Field == "" || r.Field == s.PrivacyUnit || lo != 0 || hi != 0 || r.Bins != 0 {
			t.Errorf("randomized_response release %q: field %q bounds %v bins %d", r.Name, r.Field, r.Bounds, r.Bins)
		}
		if len(r.Categories) < 2 || len(r.Categories) > 1000 {
			t.Errorf("randomized_response release %q: %d categories", r.Name, len(r.Categories))
		}
		seen := map[string]bool{}
		for _, c := range r.Categories {
			if strings.TrimSpace(c) == "" || seen[c] {
				t.Errorf("randomized_response release %q: category %q blank or repeated", r.Name, c)
			}
			seen[c] = true
		}
		validP := r.RRProbability > 0 && r.RRProbability < 1
		validEps := r.LocalEpsilon > 0 && !math.IsInf(r.LocalEpsilon, 0)
		if validP == validEps || (validP && r.LocalEpsilon != 0) || (validEps && r.RRProbability != 0) {
			t.Errorf("randomized_response release %q: p %v epsilon_local %v, want exactly one", r.Name, r.RRProbability, r.LocalEpsilon)
		}
	default:
		t.Errorf("release %q: kind %q", r.Name, r.Kind)
	}
	if r.Kind != config.KindRegression && (r.Method != "" || r.Features != nil || r.FeatureBounds != nil || r.Target != "" || r.TargetBounds != [2]float64{} ||
		r.Intercept || r.Lambda != 0 || r.Rho != 0 || r.Selection != "" || r.Radius != 0 || r.Penalty != 0 || r.MaxSupport != 0 || r.Supports != nil || r.SelectionShare != 0) {
		t.Errorf("release %q of kind %s has regression settings", r.Name, r.Kind)
	}
	if !isRR && (r.Categories != nil || r.RRProbability != 0 || r.LocalEpsilon != 0) {
		t.Errorf("release %q of kind %s has randomized response settings", r.Name, r.Kind)
	}
	if r.MaxPerBin != 0 && (!(isHist || isRR) || r.MaxPerBin < 1 || r.MaxPerBin > s.Contribution.MaxEventsPerWindow) {
		t.Errorf("release %q of kind %s: max_per_bin %d with L = %d", r.Name, r.Kind, r.MaxPerBin, s.Contribution.MaxEventsPerWindow)
	}
	if r.Samples != 0 && (!(isHist || r.Kind == config.KindDensity) || r.Samples < 0 || r.Samples > 100000) {
		t.Errorf("release %q of kind %s: samples %d", r.Name, r.Kind, r.Samples)
	}
	if !isHist {
		if r.Fields != nil || r.AxisBounds != nil || r.AxisBins != nil || r.BinsAuto || r.Bins != 0 {
			t.Errorf("release %q of kind %s has histogram settings", r.Name, r.Kind)
		}
		return
	}
	checkValidHistogram(t, s, r)
}

// checkValidRegression asserts the invariants of an accepted regression,
// restated from the brief: 1 to 64 distinct features and a target, none
// the privacy unit and the target not a feature, valid bounds, the
// settings of the method and none of another method's, and for pcls at
// most 4096 candidate models.
func checkValidRegression(t *testing.T, s config.Stream, r config.Release) {
	t.Helper()
	validBounds := func(b [2]float64) bool { return b[0] < b[1] && !math.IsInf(b[1]-b[0], 0) && !math.IsNaN(b[1]-b[0]) }
	if r.Target == "" || r.Target == s.PrivacyUnit || r.Field != r.Target || r.Bounds != r.TargetBounds || !validBounds(r.TargetBounds) {
		t.Errorf("regression %q: target %q bounds %v, field %q bounds %v", r.Name, r.Target, r.TargetBounds, r.Field, r.Bounds)
	}
	d := len(r.Features)
	if d < 1 || d > 64 || len(r.FeatureBounds) != d {
		t.Fatalf("regression %q: %d features, %d bounds", r.Name, d, len(r.FeatureBounds))
	}
	seen := map[string]bool{}
	for i, f := range r.Features {
		if strings.TrimSpace(f) == "" || f == s.PrivacyUnit || f == r.Target || seen[f] || !validBounds(r.FeatureBounds[i]) {
			t.Errorf("regression %q: feature %q bounds %v", r.Name, f, r.FeatureBounds[i])
		}
		seen[f] = true
	}
	finite := func(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
	switch r.Method {
	case regression.MethodSSP:
		if !(r.Lambda >= 0) || !finite(r.Lambda) || r.Rho != 0 {
			t.Errorf("ssp regression %q: lambda %v rho %v", r.Name, r.Lambda, r.Rho)
		}
	case regression.MethodOPS:
		if !(r.Lambda > 0) || !finite(r.Lambda) || r.Rho != 0 {
			t.Errorf("ops regression %q: lambda %v rho %v", r.Name, r.Lambda, r.Rho)
		}
	case regression.MethodAdaSSP, regression.MethodAdaOPS, regression.MethodPCLS:
		if r.Lambda != 0 || !(r.Rho > 0 && r.Rho < 1) {
			t.Errorf("%s regression %q: lambda %v rho %v", r.Method, r.Name, r.Lambda, r.Rho)
		}
	default:
		t.Errorf("regression %q: method %q", r.Name, r.Method)
	}
	if r.Method != regression.MethodPCLS {
		if r.Selection != "" || r.Radius != 0 || r.Penalty != 0 || r.MaxSupport != 0 || r.Supports != nil || r.SelectionShare != 0 {
			t.Errorf("%s regression %q has pcls settings", r.Method, r.Name)
		}
		return
	}
	if (r.Selection != regression.SelectionExponential && r.Selection != regression.SelectionNoisyMin) || !(r.Radius > 0) || !finite(r.Radius) ||
		!(r.Penalty >= 0) || !finite(r.Penalty) || !(r.SelectionShare > 0 && r.SelectionShare < 1) {
		t.Errorf("pcls regression %q: selection %q radius %v penalty %v share %v", r.Name, r.Selection, r.Radius, r.Penalty, r.SelectionShare)
	}
	switch {
	case r.MaxSupport != 0 && r.Supports == nil:
		// Σ C(d, k) for k = 1..MaxSupport, by Pascal's rule, saturating.
		if r.MaxSupport < 1 || r.MaxSupport > d {
			t.Fatalf("pcls regression %q: max_support %d of %d features", r.Name, r.MaxSupport, d)
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
			t.Errorf("pcls regression %q: max_support %d of %d features makes %v candidates", r.Name, r.MaxSupport, d, total)
		}
	case r.MaxSupport == 0 && r.Supports != nil:
		if len(r.Supports) < 1 || len(r.Supports) > 4096 {
			t.Errorf("pcls regression %q: %d supports", r.Name, len(r.Supports))
		}
		sets := map[string]bool{}
		for _, sup := range r.Supports {
			in := make([]bool, d)
			for _, name := range sup {
				i := slices.Index(r.Features, name)
				if i < 0 || in[i] {
					t.Errorf("pcls regression %q: support %q has %q, not a feature or repeated", r.Name, sup, name)
					continue
				}
				in[i] = true
			}
			key := fmt.Sprint(in)
			if len(sup) == 0 || sets[key] {
				t.Errorf("pcls regression %q: support %q empty or repeated", r.Name, sup)
			}
			sets[key] = true
		}
	default:
		t.Errorf("pcls regression %q: max_support %d and supports %v, want exactly one", r.Name, r.MaxSupport, r.Supports)
	}
}

// checkValidHistogram asserts the shape of an accepted histogram: 1 to 3
// distinct fields with one [lo, hi] each, and either bins: auto with a
// declared size, or bins per field whose product is at most 10000.
func checkValidHistogram(t *testing.T, s config.Stream, r config.Release) {
	t.Helper()
	n := len(r.Fields)
	if n < 1 || n > 3 || r.Fields[0] != r.Field || len(r.AxisBounds) != n || r.AxisBounds[0] != r.Bounds {
		t.Fatalf("histogram %q: field %q fields %q bounds %v axis bounds %v", r.Name, r.Field, r.Fields, r.Bounds, r.AxisBounds)
	}
	seen := map[string]bool{}
	for i, f := range r.Fields {
		if f == "" || f == s.PrivacyUnit || seen[f] {
			t.Errorf("histogram %q: field %q empty, the privacy unit or repeated", r.Name, f)
		}
		seen[f] = true
		a, b := r.AxisBounds[i][0], r.AxisBounds[i][1]
		if !(a < b) || math.IsInf(b-a, 0) || math.IsNaN(b-a) {
			t.Errorf("histogram %q: bounds %v of field %q", r.Name, r.AxisBounds[i], f)
		}
	}
	if r.BinsAuto {
		if r.Bins != 0 || r.AxisBins != nil || r.ExpectedEvents < 1 {
			t.Errorf("histogram %q: bins auto with bins %d %v, expected_events %d", r.Name, r.Bins, r.AxisBins, r.ExpectedEvents)
		}
		return
	}
	if len(r.AxisBins) != n || r.AxisBins[0] != r.Bins || r.ExpectedEvents != 0 {
		t.Fatalf("histogram %q: bins %d axis bins %v for %d fields, expected_events %d", r.Name, r.Bins, r.AxisBins, n, r.ExpectedEvents)
	}
	cells := 1
	for _, b := range r.AxisBins {
		if b < 1 || b > 10000 {
			t.Fatalf("histogram %q: axis bins %v", r.Name, r.AxisBins)
		}
		cells *= b
	}
	if cells > 10000 {
		t.Errorf("histogram %q: %v bins make %d cells, more than 10000", r.Name, r.AxisBins, cells)
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
