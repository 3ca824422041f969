package continual

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpstream/dpstream/mechanism/noise"
)

// seq returns a Draw handing out vals in order and counting its calls.
func seq(vals []float64, calls *int) Draw {
	return func() (float64, error) {
		if *calls >= len(vals) {
			return 0, errors.New("no more draws")
		}
		*calls++
		return vals[*calls-1], nil
	}
}

// TestReleaserIsTheFactorization: with the same draws, the streaming
// releaser's outputs equal A·x + B·z of the dense factorization, z's entry
// for a row of C being the draw of the window that completes it.
func TestReleaserIsTheFactorization(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range Methods {
		for n := 1; n <= 16; n++ {
			p, _ := NewPlan(m, n, 1, 1)
			_, b, drawOf := dense(t, p)
			draws := make([]float64, n)
			x := make([]int64, n)
			for i := range draws {
				draws[i] = rng.NormFloat64()
				x[i] = rng.Int64N(5)
			}
			calls := 0
			r, err := NewReleaser(p, seq(draws, &calls))
			if err != nil {
				t.Fatal(err)
			}
			var sum int64
			for i := 0; i < n; i++ {
				got, err := r.Next(x[i])
				if err != nil {
					t.Fatal(err)
				}
				sum += x[i]
				want := float64(sum)
				for row, w := range drawOf {
					want += b[i][row] * draws[w]
				}
				if math.Abs(got-want) > 1e-9 {
					t.Fatalf("%s T=%d window %d: released %v, want A·x+B·z = %v", m, n, i, got, want)
				}
			}
			if calls != n {
				t.Errorf("%s T=%d: %d draws, want one per window", m, n, calls)
			}
			if _, err := r.Next(1); err == nil {
				t.Errorf("%s T=%d: release past the horizon", m, n)
			}
		}
	}
}

// TestRestoreContinuesExactly: stopping after any window, exporting the
// state and restoring it gives the same outputs as an uninterrupted run,
// with no draw repeated or skipped.
func TestRestoreContinuesExactly(t *testing.T) {
	const n = 37
	rng := rand.New(rand.NewPCG(3, 4))
	draws := make([]float64, n)
	x := make([]int64, n)
	for i := range draws {
		draws[i] = rng.NormFloat64()
		x[i] = rng.Int64N(9)
	}
	for _, m := range Methods {
		p, _ := NewPlan(m, n, 1, 1)
		calls := 0
		ref, _ := NewReleaser(p, seq(draws, &calls))
		want := make([]float64, n)
		for i := range want {
			want[i], _ = ref.Next(x[i])
		}
		for stop := 0; stop <= n; stop++ {
			calls := 0
			d := seq(draws, &calls)
			r, _ := NewReleaser(p, d)
			for i := 0; i < stop; i++ {
				r.Next(x[i])
			}
			st := r.State()
			r2, err := RestoreReleaser(p, d, st)
			if err != nil {
				t.Fatalf("%s stop %d: %v", m, stop, err)
			}
			for i := stop; i < n; i++ {
				got, err := r2.Next(x[i])
				if err != nil || got != want[i] {
					t.Fatalf("%s stop %d window %d: %v, %v; want %v", m, stop, i, got, err, want[i])
				}
			}
			if calls != n {
				t.Errorf("%s stop %d: %d draws over the horizon, want %d", m, stop, calls, n)
			}
		}
	}
}

func TestRestoreRejects(t *testing.T) {
	p, _ := NewPlan(Tree, 8, 1, 1)
	d := func() (float64, error) { return 0, nil }
	for _, tc := range []struct {
		name string
		st   State
	}{
		{"other method", State{Method: Sqrt}},
		{"negative step", State{Method: Tree, Step: -1}},
		{"past horizon", State{Method: Tree, Step: 9}},
		{"wrong noise count", State{Method: Tree, Step: 3, Noise: []float64{1}}},
		{"NaN noise", State{Method: Tree, Step: 1, Noise: []float64{math.NaN()}}},
	} {
		if _, err := RestoreReleaser(p, d, tc.st); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, err := RestoreReleaser(p, nil, State{Method: Tree}); err == nil {
		t.Error("nil draw accepted")
	}
	if _, err := RestoreReleaser(p, d, State{Method: Tree, Params: []float64{1}}); err == nil {
		t.Error("tree state with parameters accepted")
	}
	// A blt state made under another fit (another horizon here) is refused.
	b8, _ := NewPlan(BLT, 8, 1, 1)
	b9, _ := NewPlan(BLT, 9, 1, 1)
	r9, _ := NewReleaser(b9, d)
	if _, err := RestoreReleaser(b8, d, r9.State()); err == nil {
		t.Error("blt state of another fit accepted")
	}
	st := r9.State()
	st.Params = st.Params[:1]
	if _, err := RestoreReleaser(b9, d, st); err == nil {
		t.Error("blt state with missing parameters accepted")
	}
	if _, err := RestoreReleaser(b9, d, r9.State()); err != nil {
		t.Errorf("blt state of the same fit refused: %v", err)
	}
}

// TestNextErrorsKeepState: a failed draw or an overflow leaves the state
// as it was, so a retry continues correctly.
func TestNextErrorsKeepState(t *testing.T) {
	p, _ := NewPlan(Sqrt, 8, 1, 1)
	fail := true
	r, _ := NewReleaser(p, func() (float64, error) {
		if fail {
			return 0, errors.New("source down")
		}
		return 0.5, nil
	})
	if _, err := r.Next(3); err == nil {
		t.Fatal("failed draw not reported")
	}
	if st := r.State(); st.Step != 0 || st.Sum != 0 || len(st.Noise) != 0 {
		t.Fatalf("state changed by a failed draw: %+v", st)
	}
	fail = false
	if got, err := r.Next(3); err != nil || got != 3.5 {
		t.Fatalf("retry: %v, %v; want 3.5", got, err)
	}
	if _, err := r.Next(math.MaxInt64); err == nil {
		t.Fatal("overflow not reported")
	}
	if st := r.State(); st.Step != 1 || st.Sum != 3 {
		t.Fatalf("state changed by an overflow: %+v", st)
	}
}

// TestDiscreteGaussianDraw: the integer-factor methods run on the exact
// discrete Gaussian sampler, and their totals are then integers.
func TestDiscreteGaussianDraw(t *testing.T) {
	s := noise.New(noise.SeededSource(140))
	for _, m := range []Method{PerWindow, Tree} {
		p, _ := NewPlan(m, 64, 1, 1)
		if !p.IntegerFactor() {
			t.Fatalf("%s: not an integer factor", m)
		}
		sigma, _ := p.SigmaForRho(0.5)
		r, _ := NewReleaser(p, func() (float64, error) {
			z, err := s.DiscreteGaussian(sigma)
			return float64(z), err
		})
		for i := 0; i < 64; i++ {
			v, err := r.Next(2)
			if err != nil || v != math.Trunc(v) {
				t.Fatalf("%s window %d: %v, %v; want an integer", m, i, v, err)
			}
		}
	}
	if sq, _ := NewPlan(Sqrt, 4, 1, 1); sq.IntegerFactor() {
		t.Error("sqrt claims an integer factor")
	}
}
