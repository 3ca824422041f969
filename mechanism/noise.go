package mechanism

import (
	"crypto/rand"
	"encoding/binary"
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

// Noise draws the noise the release mechanisms add.
//
// Both methods return NaN when the scale is not a finite positive number:
// a zero scale would silently release the exact value, and callers
// (Release) treat a non-finite draw as an error.
type Noise interface {
	// Laplace returns a draw from the Laplace distribution with density
	// exp(-|x|/b)/(2b): mean 0, variance 2b², E|X| = b.
	Laplace(b float64) float64
	// Gaussian returns a draw from N(0, sigma²).
	Gaussian(sigma float64) float64
}

// NewNoise returns a Noise drawing all its randomness from src. A nil src
// means CryptoSource(), so a forgotten argument never yields weak noise.
// The returned Noise keeps no state of its own; it is safe for concurrent
// use when src is.
//
// This is the interim floating-point implementation: textbook inversion and
// Box–Muller in float64, which Mironov (2012) showed can leak the true value
// through the pattern of reachable doubles once added to it. It will be
// replaced behind this same interface by exact discrete samplers (discrete
// Laplace; discrete Gaussian of Canonne, Kamath & Steinke 2020) and the
// granularity method of SPEC section 2.
func NewNoise(src Source) Noise {
	if src == nil {
		src = CryptoSource()
	}
	return floatNoise{src: src}
}

// floatNoise samples Laplace and Gaussian noise in float64 by inversion and
// Box–Muller. It is to be replaced by exact discrete samplers plus the
// granularity method (SPEC section 2) behind the same Noise interface.
type floatNoise struct {
	src Source
}

// uniform53 maps the top 53 bits of w to (k+1)·2⁻⁵³ with k in [0, 2⁵³), a
// uniform draw from the grid {2⁻⁵³, 2·2⁻⁵³, …, 1} ⊂ (0, 1]. Every grid point
// is exactly representable, and 0 is excluded so log(u) is finite.
func uniform53(w uint64) float64 {
	return float64(w>>11+1) * 0x1p-53
}

// validScale reports whether s can be used as a noise scale.
func validScale(s float64) bool {
	return s > 0 && !math.IsInf(s, 1)
}

// Laplace samples Laplace(0, b) by inverting its CDF.
//
// One 64-bit word gives 54 independent bits: the lowest is the sign and the
// top 53 give u = uniform53(w) in (0, 1]. The draw is sign·(−b·log u), which
// is exactly the inverse CDF F⁻¹(p) = b·log(2p) for p < 1/2 and
// −b·log(2 − 2p) for p ≥ 1/2 evaluated at p = u/2 (negative) or
// p = 1 − u/2 (positive), so p is uniform on a symmetric 54-bit grid in
// (0, 1) that never reaches 0 or 1. Computing log u rather than log(1 − p)
// avoids the cancellation that would flatten the tails. The set of reachable
// outputs is symmetric about 0, and |x| ≤ 53·log(2)·b ≈ 36.7·b: the tail
// beyond that has probability 2⁻⁵³ and is not sampled.
func (n floatNoise) Laplace(b float64) float64 {
	if !validScale(b) {
		return math.NaN()
	}
	w := n.src.Uint64()
	mag := -b * math.Log(uniform53(w))
	if w&1 == 1 {
		return -mag
	}
	return mag
}

// Gaussian samples N(0, sigma²) by the Box–Muller transform
// Z = R·cos Θ with R = sqrt(−2 log u₁), Θ uniform on [0, 2π).
//
// By the symmetry of cos, |cos Θ| has the law of cos Θ' with Θ' uniform on
// [0, π/2), and the sign of cos Θ is an independent fair coin. Drawing the
// sign from its own bit and Θ' = (π/2)·u₂ makes the set of reachable outputs
// exactly symmetric about 0. u₁ = uniform53 is in (0, 1] so R is finite,
// R ≤ sqrt(106·log 2) ≈ 8.57: the tail beyond 8.57σ (probability about
// 1e-17) is not sampled. The second Box–Muller variate is discarded so that
// the sampler keeps no state between calls.
func (n floatNoise) Gaussian(sigma float64) float64 {
	if !validScale(sigma) {
		return math.NaN()
	}
	w1 := n.src.Uint64()
	w2 := n.src.Uint64()
	r := math.Sqrt(-2 * math.Log(uniform53(w1)))
	theta := (math.Pi / 2) * (float64(w2>>11) * 0x1p-53) // [0, π/2)
	z := sigma * r * math.Cos(theta)
	if w2&1 == 1 {
		return -z
	}
	return z
}
