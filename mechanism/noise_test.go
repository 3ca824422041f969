package mechanism

import (
	"math"
	"sync"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestSeededSourceIsDeterministic(t *testing.T) {
	a, b, c := SeededSource(7), SeededSource(7), SeededSource(8)
	same, differ := true, false
	for range 1000 {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		same = same && x == y
		differ = differ || x != z
	}
	if !same {
		t.Error("two sources with seed 7 produced different streams")
	}
	if !differ {
		t.Error("seeds 7 and 8 produced the same 1000 words")
	}
}

// TestSourcesBitBalance checks that both sources produce balanced bits,
// including across CryptoSource's buffer refills (10000 words = 20 refills),
// and that CryptoSource is safe to share between goroutines (run with -race).
func TestSourcesBitBalance(t *testing.T) {
	const goroutines, perG = 4, 2500
	for _, tc := range []struct {
		name string
		src  Source
	}{
		{"crypto", CryptoSource()},
		{"seeded", SeededSource(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			ones := 0
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					local := 0
					for range perG {
						w := tc.src.Uint64()
						for ; w != 0; w &= w - 1 {
							local++
						}
					}
					mu.Lock()
					ones += local
					mu.Unlock()
				})
			}
			wg.Wait()
			// 640000 fair bits: z of the number of ones; false-failure
			// rate ≈ 5.7e-7 for the seeded source (the crypto source is not
			// seeded, so this is its per-run rate too).
			bits := goroutines * perG * 64
			if z := proportionZ(ones, bits, 0.5); math.Abs(z) > zMax {
				t.Errorf("%d ones in %d bits: z = %.2f", ones, bits, z)
			}
		})
	}
}

func TestUniform53Range(t *testing.T) {
	tests := []struct {
		w    uint64
		want float64
	}{
		{0, 0x1p-53},           // smallest: never 0
		{1<<11 - 1, 0x1p-53},   // low 11 bits are ignored
		{1 << 11, 2 * 0x1p-53}, // next grid point
		{math.MaxUint64, 1},    // largest: exactly 1
		{1 << 63, 0.5 + 0x1p-53},
	}
	for _, tc := range tests {
		if got := uniform53(tc.w); got != tc.want {
			t.Errorf("uniform53(%#x) = %v, want %v", tc.w, got, tc.want)
		}
	}
}

func TestNoiseRejectsInvalidScale(t *testing.T) {
	n := NewNoise(SeededSource(1))
	for _, s := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := n.Laplace(s); !math.IsNaN(got) {
			t.Errorf("Laplace(%v) = %v, want NaN", s, got)
		}
		if got := n.Gaussian(s); !math.IsNaN(got) {
			t.Errorf("Gaussian(%v) = %v, want NaN", s, got)
		}
	}
}

// TestNoiseExtremeWords drives the samplers with the extreme words: their
// outputs are finite, hit the documented truncation points, and the sign bit
// is the lowest bit.
func TestNoiseExtremeWords(t *testing.T) {
	maxLaplace := 53 * math.Ln2              // −log(2⁻⁵³)
	maxGauss := math.Sqrt(2 * 53 * math.Ln2) // sqrt(−2 log 2⁻⁵³), cos 0 = 1
	tests := []struct {
		name  string
		w     uint64
		lap   float64
		gauss float64
	}{
		{"all zero bits: largest positive", 0, maxLaplace, maxGauss},
		{"only sign bit set: largest negative", 1, -maxLaplace, -maxGauss},
		{"all one bits: u = 1 gives zero", math.MaxUint64, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := NewNoise(constSource(tc.w))
			const b, sigma = 2.5, 3.0
			if got, want := n.Laplace(b), b*tc.lap; math.Abs(got-want) > 1e-12*math.Abs(want) {
				t.Errorf("Laplace(%v) = %v, want %v", b, got, want)
			}
			got := n.Gaussian(sigma)
			if want := sigma * tc.gauss; math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("Gaussian(%v) = %v, want %v", sigma, got, want)
			}
		})
	}
}

func TestNewNoiseNilSourceUsesCrypto(t *testing.T) {
	n := NewNoise(nil)
	x, y := n.Laplace(1), n.Laplace(1)
	if math.IsNaN(x) || math.IsNaN(y) || x == y {
		t.Errorf("NewNoise(nil) draws %v, %v: want two distinct finite values", x, y)
	}
}

// distributionCase is one sampler to test against its exact law.
type distributionCase struct {
	name  string
	scale float64
	seed  uint64
}

var noiseScales = []distributionCase{
	{"tiny", 1e-6, 11},
	{"unit", 1, 12},
	{"large", 1e4, 13},
}

const noiseSamples = 40000

func TestLaplaceDistribution(t *testing.T) {
	for _, tc := range noiseScales {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.scale
			n := NewNoise(SeededSource(tc.seed))
			xs := make([]float64, noiseSamples)
			for i := range xs {
				xs[i] = n.Laplace(b)
			}
			law := distuv.Laplace{Mu: 0, Scale: b}
			checkDistribution(t, xs, law.CDF, b, math.Sqrt(2)*b, math.Sqrt(20)*b*b, 2*b*b)
			// Tail: P(|X| > 5b) = e^{−5}. False-failure rate ≈ 5.7e-7.
			k := 0
			for _, x := range xs {
				if math.Abs(x) > 5*b {
					k++
				}
			}
			if z := proportionZ(k, len(xs), math.Exp(-5)); math.Abs(z) > zMax {
				t.Errorf("%d of %d draws beyond 5b, want about %.0f: z = %.2f", k, len(xs), float64(len(xs))*math.Exp(-5), z)
			}
		})
	}
}

func TestGaussianDistribution(t *testing.T) {
	for _, tc := range noiseScales {
		t.Run(tc.name, func(t *testing.T) {
			sigma := tc.scale
			n := NewNoise(SeededSource(tc.seed + 100))
			xs := make([]float64, noiseSamples)
			for i := range xs {
				xs[i] = n.Gaussian(sigma)
			}
			law := distuv.Normal{Mu: 0, Sigma: sigma}
			checkDistribution(t, xs, law.CDF, sigma, sigma, math.Sqrt(2)*sigma*sigma, sigma*sigma)
			// Tail: P(|X| > 3σ) = erfc(3/√2). False-failure rate ≈ 5.7e-7.
			k := 0
			for _, x := range xs {
				if math.Abs(x) > 3*sigma {
					k++
				}
			}
			p := math.Erfc(3 / math.Sqrt2)
			if z := proportionZ(k, len(xs), p); math.Abs(z) > zMax {
				t.Errorf("%d of %d draws beyond 3σ, want about %.0f: z = %.2f", k, len(xs), float64(len(xs))*p, z)
			}
		})
	}
}

// checkDistribution runs the checks shared by the samplers on xs, drawn from
// a symmetric law with the given CDF, standard deviation sd, variance v and
// standard deviation of (x − mean)² sdSq (so that the sample variance has
// standard error sdSq/√n).
func checkDistribution(t *testing.T, xs []float64, cdf func(float64) float64, scale, sd, sdSq, v float64) {
	t.Helper()
	n := len(xs)
	// Goodness of fit against the exact CDF; DKW false-failure rate 1e-6.
	if d, bound := ksStatistic(xs, cdf), dkwBound(n, 1e-6); d > bound {
		t.Errorf("KS distance to the exact CDF %.4f > %.4f (scale %v)", d, bound, scale)
	}
	// Mean 0: z-test, false-failure rate ≈ 5.7e-7.
	mean, variance := meanVar(xs)
	if z := mean / (sd / math.Sqrt(float64(n))); math.Abs(z) > zMax {
		t.Errorf("mean %v: z = %.2f (scale %v)", mean, z, scale)
	}
	// Variance: the sample variance is asymptotically normal with standard
	// error sdSq/√n; false-failure rate ≈ 5.7e-7.
	if z := (variance - v) / (sdSq / math.Sqrt(float64(n))); math.Abs(z) > zMax {
		t.Errorf("variance %v, want %v: z = %.2f", variance, v, z)
	}
	// Symmetry: the sign is a fair coin (false-failure rate ≈ 5.7e-7) and
	// |X| has the same law on both sides: two-sample KS, bounded by the sum
	// of two DKW bounds at 5e-7 each (false-failure rate ≤ 1e-6).
	var pos, neg []float64
	for _, x := range xs {
		if x > 0 {
			pos = append(pos, x)
		} else if x < 0 {
			neg = append(neg, -x)
		}
	}
	if z := proportionZ(len(pos), len(pos)+len(neg), 0.5); math.Abs(z) > zMax {
		t.Errorf("%d positive vs %d negative draws: z = %.2f", len(pos), len(neg), z)
	}
	if d, bound := ksTwoSample(pos, neg), dkwBound(len(pos), 5e-7)+dkwBound(len(neg), 5e-7); d > bound {
		t.Errorf("|X| differs between signs: KS %.4f > %.4f", d, bound)
	}
}
