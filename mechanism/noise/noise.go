package noise

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"sync"
)

// Source is a stream of uniformly random 64-bit words.
//
// All randomness the mechanisms use flows through a Source, so production
// draws from crypto/rand (CryptoSource) while tests replay a fixed seed
// (SeededSource). A Source shared between goroutines must be safe for
// concurrent use; both sources in this package are.
type Source interface {
	Uint64() uint64
}

// cryptoBufSize is how many bytes CryptoSource reads from the kernel at a
// time. Reading 8 bytes per call would cost a system call per noise draw;
// 4 KiB amortises it over 512 words.
const cryptoBufSize = 4096

// cryptoSource buffers crypto/rand. The mutex makes one instance safe to
// share: the buffer and its offset are the only state.
type cryptoSource struct {
	mu  sync.Mutex
	buf [cryptoBufSize]byte
	off int // index of the next unread byte; len(buf) means empty
}

// CryptoSource returns a Source backed by crypto/rand, buffered 4 KiB at a
// time and safe for concurrent use. It is the only Source production code
// should use (SPEC section 2).
func CryptoSource() Source {
	return &cryptoSource{off: cryptoBufSize}
}

// Uint64 returns the next 8 bytes of the buffer, refilling it from
// crypto/rand when it runs out.
func (c *cryptoSource) Uint64() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off+8 > len(c.buf) {
		// Since Go 1.24 crypto/rand.Read never returns an error: if the
		// kernel generator fails, the runtime terminates the program instead
		// of handing out weak bytes. There is therefore no error to check,
		// and no weaker fallback to take.
		rand.Read(c.buf[:])
		c.off = 0
	}
	v := binary.LittleEndian.Uint64(c.buf[c.off:])
	c.off += 8
	return v
}

// seededSource is a deterministic ChaCha8 stream behind a mutex, so a test
// that shares it between goroutines is still race-free.
type seededSource struct {
	mu  sync.Mutex
	rng *mrand.ChaCha8
}

// SeededSource returns a deterministic Source (ChaCha8 keyed by seed) that is
// safe for concurrent use. It is for tests only: anyone who knows the seed
// knows the noise, and so the data.
func SeededSource(seed uint64) Source {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:8], seed)
	return &seededSource{rng: mrand.NewChaCha8(key)}
}

// Uint64 returns the next word of the ChaCha8 stream.
func (s *seededSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Uint64()
}

// Noise draws the integer noise the release mechanisms add. Both methods
// are exact: the law of the result is exactly the one stated, with no
// floating-point approximation anywhere in the sampling (see New).
// Sums are released as fixed-point integers on a grid (Release), and other
// real-valued statistics get their noise through AddLaplace and
// AddGaussian, which put it on a grid (SPEC section 2); the interface has
// only the integer samplers so that no implementation can reintroduce
// floating-point noise.
//
// Both methods return an error, and no draw, when the scale is not finite
// and positive or exceeds 2^50 (a zero scale would silently release the
// exact value), or when the Source fails (see New).
type Sampler interface {
	// DiscreteLaplace returns Z with P(Z = k) ∝ exp(−|k|/t) on the integers
	// (the two-sided geometric distribution): mean 0, variance
	// 1/(2·sinh²(1/(2t))) < 2t², E|Z| = 1/sinh(1/t) < t. Adding it to an
	// integer statistic with L1 sensitivity Δ is (Δ/t)-DP.
	DiscreteLaplace(t float64) (int64, error)
	// DiscreteGaussian returns Z ~ N_Z(0, σ²), P(Z = k) ∝ exp(−k²/(2σ²))
	// on the integers: mean 0, variance below σ² by a relative
	// 8π²σ²·e^{−2π²σ²} to first order (2e-7 at σ = 1; by Poisson
	// summation). Adding it to an integer statistic with L2 sensitivity Δ
	// is (Δ²/(2σ²))-zCDP (CKS 2020, Thm. 4); see DiscreteGaussianDelta for
	// its exact (ε, δ).
	DiscreteGaussian(sigma float64) (int64, error)
}

// New returns a Noise drawing all its randomness from src. A nil src
// means CryptoSource(), so a forgotten argument never yields weak noise.
// The returned Noise keeps no state between calls (each draw has its own
// small bit buffer); it is safe for concurrent use when src is.
//
// The samplers are those of Canonne, Kamath & Steinke 2020 ("The Discrete
// Gaussian for Differential Privacy", NeurIPS, Algorithms 1–3): exact
// Bernoulli(exp(−γ)) coins for rational γ, a geometric sampler, the
// discrete Laplace by rejection and the discrete Gaussian by rejection from
// the discrete Laplace. A float64 scale is an exact dyadic rational m·2^e
// and is used as such. Every accept/reject decision compares integers
// (64-bit, 128-bit, or math/big when the rationals outgrow 128 bits), so
// unlike textbook floating-point samplers (Mironov 2012) nothing about the
// output depends on rounding.
//
// A draw that would consume more than 2^14 random words fails with an error
// rather than looping forever on a broken (for instance constant) Source;
// with a working Source that has probability far below 2^-1000.
func New(src Source) Sampler {
	if src == nil {
		src = CryptoSource()
	}
	return exactNoise{src: src}
}

// SourceOf returns the Source that a Noise made by New draws from, so
// that post-processing randomness (synthetic samples) follows the same
// seed in a seeded trial; for any other Noise it returns CryptoSource().
func SourceOf(n Sampler) Source {
	if e, ok := n.(exactNoise); ok && e.src != nil {
		return e.src
	}
	return CryptoSource()
}

// exactNoise implements Noise with the exact samplers of exact.go.
type exactNoise struct {
	src Source
}

// CheckDiscreteScale reports why s cannot be a discrete noise scale.
func CheckDiscreteScale(name string, s float64) error {
	if !ValidScale(s) || s > MaxDiscreteScale {
		return fmt.Errorf("%s = %v: must be finite, > 0 and at most 2^50", name, s)
	}
	return nil
}

// DiscreteLaplace implements Noise.
func (n exactNoise) DiscreteLaplace(t float64) (z int64, err error) {
	if err := CheckDiscreteScale("discrete laplace scale t", t); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("discrete laplace t=%v: %w", t, err)
		}
	}()
	defer catch(&err)
	r := rng{src: n.src}
	return r.discreteLaplace(laplaceFromFloat(t)), nil
}

// DiscreteGaussian implements Noise.
func (n exactNoise) DiscreteGaussian(sigma float64) (z int64, err error) {
	if err := CheckDiscreteScale("discrete gaussian sigma", sigma); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("discrete gaussian sigma=%v: %w", sigma, err)
		}
	}()
	defer catch(&err)
	r := rng{src: n.src}
	g := gaussFromFloat(sigma)
	return r.discreteGaussian(&g, false), nil
}

// ValidScale reports whether s can be used as a noise scale.
func ValidScale(s float64) bool {
	return s > 0 && !math.IsInf(s, 1)
}
