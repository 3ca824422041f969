package noise

import (
	"math/rand/v2"
	"testing"
)

// Benchmarks of the exact samplers, each reporting samples/s, beside the
// float samplers of math/rand/v2 measured in the same run. Run with
//
//	go test -run '^$' -bench . -benchtime 500ms ./mechanism/
//
// The samplers draw from a Source: "seeded" is SeededSource (ChaCha8 behind
// a mutex), "crypto" is CryptoSource (crypto/rand, buffered, behind a
// mutex), the one production uses.

// reportRate records the throughput of a benchmark loop of n iterations.
func reportRate(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}

// benchSources are the Sources the samplers are measured with.
var benchSources = []struct {
	name string
	src  func() Source
}{
	{"seeded", func() Source { return SeededSource(1) }},
	{"crypto", CryptoSource},
}

func BenchmarkFloatBaseline(b *testing.B) {
	b.Run("rand.NormFloat64", func(b *testing.B) {
		n, sink := 0, 0.0
		for b.Loop() {
			sink += rand.NormFloat64()
			n++
		}
		reportRate(b, n)
		_ = sink
	})
	b.Run("rand.ExpFloat64", func(b *testing.B) {
		n, sink := 0, 0.0
		for b.Loop() {
			sink += rand.ExpFloat64()
			n++
		}
		reportRate(b, n)
		_ = sink
	})
}

func BenchmarkSourceWord(b *testing.B) {
	for _, s := range benchSources {
		b.Run(s.name, func(b *testing.B) {
			src := s.src()
			n, sink := 0, uint64(0)
			for b.Loop() {
				sink ^= src.Uint64()
				n++
			}
			reportRate(b, n)
			_ = sink
		})
	}
}

func BenchmarkBernoulliExp(b *testing.B) {
	for _, g := range []struct {
		name string
		n, d uint64
	}{{"gamma=0.5", 1, 2}, {"gamma=1", 1, 1}, {"gamma=3", 3, 1}} {
		b.Run(g.name, func(b *testing.B) {
			r := rng{src: SeededSource(1)}
			n, sink := 0, 0
			for b.Loop() {
				r.words = 0
				if r.bernoulliExp(u128{0, g.n}, u128{0, g.d}) {
					sink++
				}
				n++
			}
			reportRate(b, n)
			_ = sink
		})
	}
}

func BenchmarkDiscreteLaplace(b *testing.B) {
	for _, s := range benchSources {
		for _, sc := range []struct {
			name string
			t    float64
		}{{"t=0.3", 0.3}, {"t=6", 6}, {"t=1e6", 1e6}, {"t=2^40", 1 << 40}} {
			b.Run(s.name+"/"+sc.name, func(b *testing.B) {
				sampler := New(s.src())
				n := 0
				var sink int64
				for b.Loop() {
					z, err := sampler.DiscreteLaplace(sc.t)
					if err != nil {
						b.Fatal(err)
					}
					sink += z
					n++
				}
				reportRate(b, n)
				_ = sink
			})
		}
	}
}

func BenchmarkDiscreteGaussian(b *testing.B) {
	for _, s := range benchSources {
		for _, sc := range []struct {
			name  string
			sigma float64
		}{
			{"sigma=0.6(24bit)", RoundUpSignificand(0.6)},
			{"sigma=3.7(24bit)", RoundUpSignificand(3.7)},
			{"sigma=1e6", 1e6},
			{"sigma=2^40-3", 1<<40 - 3},
			{"sigma=0.1(53bit,big)", 0.1},
			{"sigma=3.7(53bit,big)", 3.7},
		} {
			b.Run(s.name+"/"+sc.name, func(b *testing.B) {
				sampler := New(s.src())
				n := 0
				var sink int64
				for b.Loop() {
					z, err := sampler.DiscreteGaussian(sc.sigma)
					if err != nil {
						b.Fatal(err)
					}
					sink += z
					n++
				}
				reportRate(b, n)
				_ = sink
			})
		}
	}
}

func BenchmarkAddNoise(b *testing.B) {
	g, _ := Granularity(2.5)
	onGridSigma := g * float64(int64(2.5/g)) // whole grid steps, as Calibrate chooses
	for _, s := range benchSources {
		for _, sc := range []struct {
			name     string
			gaussian bool
			scale    float64
		}{
			{"AddLaplace/b=2.5", false, 2.5},
			{"AddGaussian/sigma=2.5(whole grid steps)", true, onGridSigma},
			{"AddGaussian/sigma=2.3(53bit,big)", true, 2.3},
		} {
			b.Run(s.name+"/"+sc.name, func(b *testing.B) {
				sampler := New(s.src())
				n, sink := 0, 0.0
				for b.Loop() {
					var v float64
					var err error
					if sc.gaussian {
						v, err = AddGaussian(sampler, 123.456, sc.scale)
					} else {
						v, err = AddLaplace(sampler, 123.456, sc.scale)
					}
					if err != nil {
						b.Fatal(err)
					}
					sink += v
					n++
				}
				reportRate(b, n)
				_ = sink
			})
		}
	}
}
