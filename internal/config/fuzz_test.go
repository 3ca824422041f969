package config

import (
	"math"
	"os"
	"path/filepath"
	"testing"
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
	f.Add([]byte(Example()))
	f.Add([]byte(minimal))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if cfg != nil {
				t.Errorf("Parse returned a Config with an error")
			}
			errs := Errors(err)
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
func checkValid(t *testing.T, cfg *Config) {
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
		case FormatJSON:
			if s.Schema != "" || s.SchemaID != 0 {
				t.Errorf("json stream %q has a schema", s.Name)
			}
		case FormatAvro, FormatConfluentAvro:
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
			case NoiseLaplace:
				if r.Delta != 0 {
					t.Errorf("laplace release %q: delta %v", r.Name, r.Delta)
				}
			case NoiseGaussian:
				if !(r.Delta > 0 && r.Delta < 1) {
					t.Errorf("gaussian release %q: delta %v", r.Name, r.Delta)
				}
			default:
				t.Errorf("release %q: noise %q", r.Name, r.Noise)
			}
			lo, hi := r.Bounds[0], r.Bounds[1]
			switch r.Kind {
			case KindCount:
				if r.Field != "" || r.Bins != 0 || lo != 0 || hi != 0 {
					t.Errorf("count release %q has value settings", r.Name)
				}
			case KindSum, KindMean, KindHistogram, KindDensity:
				if r.Field == "" || r.Field == s.PrivacyUnit || !(lo < hi) || math.IsInf(hi-lo, 0) {
					t.Errorf("release %q: field %q bounds %v", r.Name, r.Field, r.Bounds)
				}
				if (r.Kind == KindHistogram) != (r.Bins >= 1 && r.Bins <= 10000) {
					t.Errorf("release %q: kind %s bins %d", r.Name, r.Kind, r.Bins)
				}
				density := r.Kind == KindDensity
				validTerms := r.TermsAuto != (r.Terms >= 1 && r.Terms <= 1024)
				if density != validTerms || (r.TermsAuto && (r.ExpectedEvents < 1 || !(r.Smoothness > 0))) ||
					(!r.TermsAuto && (r.ExpectedEvents != 0 || r.Smoothness != 0)) ||
					(r.GridPoints != 0 && (!density || r.GridPoints < 2 || r.GridPoints > 1<<16 || (r.Terms > 0 && r.GridPoints <= r.Terms))) {
					t.Errorf("release %q: kind %s terms %d auto %v expected %d smoothness %v grid %d",
						r.Name, r.Kind, r.Terms, r.TermsAuto, r.ExpectedEvents, r.Smoothness, r.GridPoints)
				}
			default:
				t.Errorf("release %q: kind %q", r.Name, r.Kind)
			}
		}
	}
}

// TestAcceptedConfigsValid runs the fuzz invariants on the valid configs the
// other tests use, so that checkValid itself is exercised on every run.
func TestAcceptedConfigsValid(t *testing.T) {
	for name, src := range map[string]string{"example": Example(), "minimal": minimal} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Parse([]byte(src), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			checkValid(t, cfg)
		})
	}
}
