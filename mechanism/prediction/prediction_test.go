package prediction

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpstream/dpstream/mechanism/noise"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// TestSharder: determinism, balance (a χ² test over 200,000 units with a
// fixed critical value), key dependence (another key moves about 1 − 1/r of
// the units), and the argument checks.
func TestSharder(t *testing.T) {
	const units = 200000
	other := []byte("fedcba9876543210fedcba9876543210")
	for _, r := range []int{1, 2, 5, 25, 50} {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			s, err := NewSharder(testKey, r)
			if err != nil {
				t.Fatal(err)
			}
			s2, _ := NewSharder(testKey, r)
			so, _ := NewSharder(other, r)
			counts := make([]int, r)
			moved := 0
			for u := range units {
				name := fmt.Sprintf("N%05dXX", u)
				k := s.ShardString(name)
				if k < 0 || k >= r {
					t.Fatalf("unit %s: shard %d outside [0, %d)", name, k, r)
				}
				if k2 := s2.Shard([]byte(name)); k2 != k {
					t.Fatalf("unit %s: shard %d then %d (not deterministic)", name, k, k2)
				}
				if so.ShardString(name) != k {
					moved++
				}
				counts[k]++
			}
			// χ² with r − 1 degrees of freedom: mean r − 1, sd √(2(r − 1));
			// 8 sd above the mean is exceeded with probability < 1e-9 for
			// these r (a balanced hash), and would not be by a biased one.
			var chi2 float64
			exp := float64(units) / float64(r)
			for _, c := range counts {
				chi2 += (float64(c) - exp) * (float64(c) - exp) / exp
			}
			if limit := float64(r-1) + 8*math.Sqrt(2*float64(r-1)); chi2 > limit {
				t.Errorf("χ² = %.1f over %d shards, above %.1f: counts %v", chi2, r, limit, counts)
			}
			// Under independent keys a unit keeps its shard with
			// probability 1/r: moved/units ≈ 1 − 1/r within 0.01 (≥ 7 sd).
			if want := 1 - 1/float64(r); math.Abs(float64(moved)/units-want) > 0.01 {
				t.Errorf("another key moved %.4f of the units, want %.4f", float64(moved)/units, want)
			}
		})
	}
	for _, c := range []struct {
		key    []byte
		shards int
	}{{testKey, 0}, {testKey, MaxShards + 1}, {testKey[:15], 5}, {nil, 5}} {
		if _, err := NewSharder(c.key, c.shards); err == nil {
			t.Errorf("NewSharder(%d-byte key, %d): no error", len(c.key), c.shards)
		}
	}
}

// TestFitRidge: recovers a known model from noiseless data (λ = 0 and a
// tiny λ), shrinks towards the mean for a huge λ, gives the zero model for
// an empty shard, is deterministic, and rejects bad input.
func TestFitRidge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w, b := []float64{2, -1, 0.5}, 3.0
	var x [][]float64
	var y []float64
	for range 500 {
		row := []float64{rng.NormFloat64(), rng.NormFloat64() * 10, rng.Float64()}
		x = append(x, row)
		y = append(y, Linear{Weights: w, Intercept: b}.Predict(row))
	}
	for _, c := range []struct {
		name   string
		lambda float64
		tol    float64
	}{{"exact", 0, 1e-9}, {"tiny penalty", 1e-6, 1e-6}} {
		m, err := FitRidge(x, y, 3, c.lambda)
		if err != nil {
			t.Fatal(err)
		}
		for j := range w {
			if math.Abs(m.Weights[j]-w[j]) > c.tol {
				t.Errorf("%s: weight %d = %v, want %v", c.name, j, m.Weights[j], w[j])
			}
		}
		if math.Abs(m.Intercept-b) > c.tol {
			t.Errorf("%s: intercept %v, want %v", c.name, m.Intercept, b)
		}
		again, _ := FitRidge(x, y, 3, c.lambda)
		if fmt.Sprint(again) != fmt.Sprint(m) {
			t.Errorf("%s: not deterministic: %v then %v", c.name, m, again)
		}
	}
	var ybar float64
	for _, v := range y {
		ybar += v / float64(len(y))
	}
	m, err := FitRidge(x, y, 3, 1e12)
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Predict(x[0]); math.Abs(p-ybar) > 1e-3 {
		t.Errorf("λ = 1e12: prediction %v, want the mean %v", p, ybar)
	}
	m, err = FitRidge(nil, nil, 3, 1)
	if err != nil || m.Predict([]float64{1, 2, 3}) != 0 || len(m.Weights) != 3 {
		t.Errorf("empty shard: %v, %v; want the zero model of dimension 3", m, err)
	}
	for _, c := range []struct {
		name   string
		x      [][]float64
		y      []float64
		dim    int
		lambda float64
	}{
		{"ragged", [][]float64{{1, 2}, {1}}, []float64{1, 2}, 2, 1},
		{"nan feature", [][]float64{{math.NaN()}}, []float64{1}, 1, 1},
		{"nan target", [][]float64{{1}}, []float64{math.NaN()}, 1, 1},
		{"length", [][]float64{{1}}, nil, 1, 1},
		{"negative lambda", [][]float64{{1}}, []float64{1}, 1, -1},
		{"dimension", nil, nil, 0, 1},
	} {
		if _, err := FitRidge(c.x, c.y, c.dim, c.lambda); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	// A singular X̃ᵀX̃ with λ = 0 (a numerical failure that depends on the
	// data) gives the zero model, never an error.
	m, err = FitRidge([][]float64{{1, 1}, {2, 2}}, []float64{1, 2}, 2, 0)
	if err != nil || m.Intercept != 0 || m.Weights[0] != 0 || m.Weights[1] != 0 {
		t.Errorf("singular: %+v, %v; want the zero model", m, err)
	}
}

// TestFitLogistic: on 20,000 rows drawn from a known binary logistic
// model the fitted coefficients are within 0.15 of the truth (their
// standard errors are about 0.02–0.03); a three-class problem with
// separated clusters is classified with ≥ 95% accuracy; an empty shard and
// a one-class shard give finite models; bad input is rejected.
func TestFitLogistic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	truth := Linear{Weights: []float64{1.5, -2}, Intercept: -0.5}
	var x [][]float64
	var labels []int
	for range 20000 {
		row := []float64{rng.NormFloat64(), rng.NormFloat64()}
		l := 0
		if rng.Float64() < 1/(1+math.Exp(-truth.Predict(row))) {
			l = 1
		}
		x, labels = append(x, row), append(labels, l)
	}
	m, err := FitLogistic(x, labels, 2, 2, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Models[0]
	for j, w := range truth.Weights {
		if math.Abs(got.Weights[j]-w) > 0.15 {
			t.Errorf("weight %d = %v, want %v ± 0.15", j, got.Weights[j], w)
		}
	}
	if math.Abs(got.Intercept-truth.Intercept) > 0.15 {
		t.Errorf("intercept %v, want %v ± 0.15", got.Intercept, truth.Intercept)
	}

	centers := [][]float64{{0, 4}, {4, -2}, {-4, -2}}
	x, labels = nil, nil
	for i := range 3000 {
		c := i % 3
		x = append(x, []float64{centers[c][0] + rng.NormFloat64(), centers[c][1] + rng.NormFloat64()})
		labels = append(labels, c)
	}
	m3, err := FitLogistic(x, labels, 2, 3, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	right := 0
	for i, row := range x {
		if m3.Predict(row) == labels[i] {
			right++
		}
	}
	if acc := float64(right) / float64(len(x)); acc < 0.95 {
		t.Errorf("three clusters: accuracy %.3f, want ≥ 0.95", acc)
	}

	empty, err := FitLogistic(nil, nil, 2, 3, 1)
	if err != nil || empty.Predict([]float64{1, 1}) != 0 {
		t.Errorf("empty shard: %v, %v; want a model predicting 0", empty, err)
	}
	one, err := FitLogistic([][]float64{{1}, {2}, {3}}, []int{1, 1, 1}, 1, 2, 1)
	if err != nil || one.Predict([]float64{2}) != 1 || math.IsInf(one.Models[0].Intercept, 0) {
		t.Errorf("one-class shard: %v, %v; want a finite model predicting 1", one, err)
	}
	for _, c := range []struct {
		name    string
		labels  []int
		classes int
		lambda  float64
	}{{"label out of range", []int{2}, 2, 1}, {"negative label", []int{-1}, 2, 1}, {"one class", []int{0}, 1, 1}, {"zero lambda", []int{0}, 2, 0}} {
		if _, err := FitLogistic([][]float64{{1}}, c.labels, 1, c.classes, c.lambda); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestClassifyDistribution: the soft majority's frequencies over 200,000
// draws match exp(ε·votes_b/2)/Z within 6 standard errors (a false failure
// below 1e-8 per label; fixed seed), including a label with 0 votes, ties,
// a single label and a large gap; and bad input is rejected.
func TestClassifyDistribution(t *testing.T) {
	const n = 200000
	nz := noise.New(noise.SeededSource(7))
	for _, c := range []struct {
		votes []int
		eps   float64
	}{
		{[]int{3, 0, 0}, 1},
		{[]int{10, 10, 5}, 0.5},
		{[]int{0, 25}, 0.3},
		{[]int{7}, 1},
		{[]int{20, 13, 0, 1}, 0.8},
	} {
		z := 0.0
		for _, v := range c.votes {
			z += math.Exp(c.eps * float64(v) / 2)
		}
		counts := make([]int, len(c.votes))
		for range n {
			b, err := Classify(c.votes, c.eps, nz)
			if err != nil {
				t.Fatal(err)
			}
			counts[b]++
		}
		for b, v := range c.votes {
			p := math.Exp(c.eps*float64(v)/2) / z
			se := math.Sqrt(p * (1 - p) / n)
			if f := float64(counts[b]) / n; math.Abs(f-p) > 6*se+1e-12 {
				t.Errorf("votes %v ε=%v: label %d frequency %.5f, want %.5f ± %.5f", c.votes, c.eps, b, f, p, 6*se)
			}
		}
	}
	for _, c := range []struct {
		name  string
		votes []int
		eps   float64
		n     noise.Sampler
	}{
		{"no labels", nil, 1, nz}, {"negative votes", []int{1, -1}, 1, nz}, {"zero epsilon", []int{1}, 0, nz},
		{"infinite epsilon", []int{1}, math.Inf(1), nz}, {"tiny epsilon", []int{1}, 0x1p-60, nz}, {"nil noise", []int{1}, 1, nil},
	} {
		if _, err := Classify(c.votes, c.eps, c.n); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if v, err := Votes([]int{0, 2, 2, 1}, 3); err != nil || fmt.Sprint(v) != "[1 1 2]" {
		t.Errorf("Votes: %v, %v", v, err)
	}
	if _, err := Votes([]int{3}, 3); err == nil {
		t.Error("Votes with a label out of range: no error")
	}
}

// TestVoteScale: t = 2/ε rounded up, so that 2/t ≤ ε exactly.
func TestVoteScale(t *testing.T) {
	for _, eps := range []float64{1, 0.1, 0.3, 1.0 / 3, 2, 7, 1e-9} {
		tt, err := voteScale(eps)
		if err != nil {
			t.Fatal(err)
		}
		if exactProductBelow(tt, eps, 2) {
			t.Errorf("ε=%v: t=%v has t·ε < 2", eps, tt)
		}
		if prev := math.Nextafter(tt, 0); !exactProductBelow(prev, eps, 2) {
			t.Errorf("ε=%v: t=%v is not the smallest float64 with t·ε ≥ 2", eps, tt)
		}
	}
}

// TestLevelAndClamp: the fixed-point levels of clamped values, table-driven
// (bounds, the middle, outside, ties), and NaN.
func TestLevelAndClamp(t *testing.T) {
	for _, c := range []struct {
		v, lo, hi float64
		want      int64
		clamped   float64
	}{
		{-60, -60, 240, 0, -60},
		{240, -60, 240, fixedLevels, 240},
		{-1000, -60, 240, 0, -60},
		{1e300, -60, 240, fixedLevels, 240},
		{math.Inf(1), -60, 240, fixedLevels, 240},
		{math.Inf(-1), -60, 240, 0, -60},
		{90, -60, 240, fixedLevels / 2, 90},
		{0.5, 0, 1, fixedLevels / 2, 0.5},
		{0.5 / fixedLevels, 0, 1, 1, 0.5 / fixedLevels}, // a tie rounds up
		{0.49 / fixedLevels, 0, 1, 0, 0.49 / fixedLevels},
	} {
		got, err := level(c.v, c.lo, c.hi)
		if err != nil || got != c.want {
			t.Errorf("level(%v, [%v, %v]) = %d, %v; want %d", c.v, c.lo, c.hi, got, err, c.want)
		}
		if cl := Clamp(c.v, c.lo, c.hi); cl != c.clamped {
			t.Errorf("Clamp(%v, %v, %v) = %v, want %v", c.v, c.lo, c.hi, cl, c.clamped)
		}
	}
	// NaN (a model's arithmetic breaking down on a query) is level 0, a
	// public choice, never an error an output could depend on.
	if k, err := level(math.NaN(), 0, 1); err != nil || k != 0 {
		t.Errorf("level(NaN) = %d, %v; want 0, nil", k, err)
	}
}

// TestRegress: the answer is unbiased for the average of the clamped
// predictions (predictions outside the bounds are clamped): the mean of
// 20,000 answers is within 6 standard errors of it, and their standard
// deviation within 3% of NoiseStdDev; the charge is the calibrated one;
// bad specs and inputs are rejected.
func TestRegress(t *testing.T) {
	const n = 20000
	for _, kind := range []noise.Kind{noise.Laplace, noise.Gaussian} {
		delta := 0.0
		if kind == noise.Gaussian {
			delta = 1e-6
		}
		reg, err := NewRegressor(RegressSpec{Lo: -60, Hi: 240, Noise: kind, Epsilon: 1, Delta: delta})
		if err != nil {
			t.Fatal(err)
		}
		preds := []float64{-500, 10, 20, 30, 1e9} // clamped: −60, 10, 20, 30, 240
		want := (-60.0 + 10 + 20 + 30 + 240) / 5
		if a := reg.Aggregate(preds); math.Abs(a-want) > 1e-12 {
			t.Errorf("%s: Aggregate %v, want %v", kind, a, want)
		}
		nz := noise.New(noise.SeededSource(11))
		var s, s2 float64
		for range n {
			v, err := reg.Regress(preds, nz)
			if err != nil {
				t.Fatal(err)
			}
			s += v
			s2 += (v - want) * (v - want)
		}
		sd := reg.NoiseStdDev(len(preds))
		if mean := s / n; math.Abs(mean-want) > 6*sd/math.Sqrt(n)+300.0/fixedLevels {
			t.Errorf("%s: mean answer %v, want %v ± %v", kind, mean, want, 6*sd/math.Sqrt(n))
		}
		if got := math.Sqrt(s2 / n); math.Abs(got/sd-1) > 0.03 {
			t.Errorf("%s: answers' sd %v, NoiseStdDev %v", kind, got, sd)
		}
		c := reg.Charge()
		if c.Noise != kind.Discrete() || c.Sensitivity != fixedLevels || c.Epsilon != 1 || c.Delta != delta {
			t.Errorf("%s: charge %+v", kind, c)
		}
		if kind == noise.Laplace && c.Sensitivity/c.Scale > 1 {
			t.Errorf("laplace: charge Δ/t = %v above ε = 1", c.Sensitivity/c.Scale)
		}
	}
	reg, _ := NewRegressor(RegressSpec{Lo: 0, Hi: 1, Noise: noise.Laplace, Epsilon: 1})
	for _, c := range []struct {
		name  string
		preds []float64
		n     noise.Sampler
	}{{"no predictions", nil, noise.New(nil)}, {"nil noise", []float64{1}, nil}} {
		if _, err := reg.Regress(c.preds, c.n); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	for _, s := range []RegressSpec{
		{Lo: 1, Hi: 1, Noise: noise.Laplace, Epsilon: 1},
		{Lo: 0, Hi: math.Inf(1), Noise: noise.Laplace, Epsilon: 1},
		{Lo: 0, Hi: 1, Noise: noise.Laplace, Epsilon: 0},
		{Lo: 0, Hi: 1, Noise: noise.Laplace, Epsilon: 1, Delta: 1e-6},
		{Lo: 0, Hi: 1, Noise: noise.Gaussian, Epsilon: 1},
		{Lo: 0, Hi: 1, Noise: "uniform", Epsilon: 1},
		{Lo: 0, Hi: 1, Noise: noise.Laplace, Epsilon: 0x1p-40},
	} {
		if _, err := NewRegressor(s); !errors.Is(err, noise.ErrInvalidSpec) {
			t.Errorf("NewRegressor(%+v): %v, want ErrInvalidSpec", s, err)
		}
	}
}

// TestEvaluate: the private evaluation is unbiased for the models' mean
// clamped loss (6 standard errors over 20,000 answers), its noise does not
// grow with the batch, the loss helpers are right, and shapes are checked.
func TestEvaluate(t *testing.T) {
	const n = 20000
	for _, m := range []int{1, 100} {
		ev, err := NewEvaluator(EvalSpec{MaxLoss: 1, Queries: m, Noise: noise.Laplace, Epsilon: 1})
		if err != nil {
			t.Fatal(err)
		}
		losses := make([][]float64, 5)
		var want float64
		for i := range losses {
			losses[i] = make([]float64, m)
			for j := range m {
				losses[i][j] = float64((i + j) % 2)
				if j == 0 && i == 0 {
					losses[i][j] = 7 // clamped to 1
				}
				want += Clamp(losses[i][j], 0, 1) / float64(5*m)
			}
		}
		nz := noise.New(noise.SeededSource(13))
		var s float64
		for range n {
			v, err := ev.Evaluate(losses, nz)
			if err != nil {
				t.Fatal(err)
			}
			s += v
		}
		sd := ev.NoiseStdDev(5)
		if math.Abs(s/n-want) > 6*sd/math.Sqrt(n)+1e-6 {
			t.Errorf("m=%d: mean %v, want %v ± %v", m, s/n, want, 6*sd/math.Sqrt(n))
		}
		if math.Abs(sd-math.Sqrt2/5) > 0.01 {
			t.Errorf("m=%d: noise sd %v, want about √2/(r·ε) = %v", m, sd, math.Sqrt2/5)
		}
		if _, err := ev.Evaluate(losses[:0], nz); err == nil {
			t.Errorf("m=%d: no models: no error", m)
		}
		if _, err := ev.Evaluate([][]float64{make([]float64, m+1)}, nz); err == nil {
			t.Errorf("m=%d: wrong batch size: no error", m)
		}
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"0-1 right", ZeroOneLoss(2, 2), 0}, {"0-1 wrong", ZeroOneLoss(1, 2), 1},
		{"absolute clamped", AbsoluteLoss(500, -100, -60, 240), 300}, {"absolute", AbsoluteLoss(3, 5, 0, 10), 2},
		{"squared clamped", SquaredLoss(-100, 0, -60, 240), 3600}, {"squared", SquaredLoss(3, 5, 0, 10), 4},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, s := range []EvalSpec{
		{MaxLoss: 0, Queries: 1, Noise: noise.Laplace, Epsilon: 1},
		{MaxLoss: 1, Queries: 0, Noise: noise.Laplace, Epsilon: 1},
		{MaxLoss: 1, Queries: MaxEvalQueries + 1, Noise: noise.Laplace, Epsilon: 1},
		{MaxLoss: 1, Queries: 1, Noise: noise.Gaussian, Epsilon: 1},
	} {
		if _, err := NewEvaluator(s); !errors.Is(err, noise.ErrInvalidSpec) {
			t.Errorf("NewEvaluator(%+v): %v, want ErrInvalidSpec", s, err)
		}
	}
}

// TestFitRidgeGramMatchesFitRidge checks that the fit from sufficient
// statistics with an unpenalized column of ones is FitRidge's centered
// ridge with an unpenalized intercept, and that no rows give the zero
// model.
func TestFitRidgeGramMatchesFitRidge(t *testing.T) {
	x := [][]float64{{0.5, -1}, {0.25, 0.75}, {-0.5, 0.1}, {1, 1}, {0, -0.3}}
	y := []float64{1, -2, 0.5, 3, 0.25}
	const lambda = 0.7
	want, err := FitRidge(x, y, 2, lambda)
	if err != nil {
		t.Fatal(err)
	}
	const dim = 3 // two features and the intercept column, last
	xtx := make([]float64, dim*(dim+1)/2)
	xty := make([]float64, dim)
	for i, row := range x {
		r := []float64{row[0], row[1], 1}
		k := 0
		for a := range dim {
			for b := a; b < dim; b++ {
				xtx[k] += r[a] * r[b]
				k++
			}
			xty[a] += r[a] * y[i]
		}
	}
	got, err := FitRidgeGram(xtx, [][]float64{xty}, dim, lambda, dim-1)
	if err != nil {
		t.Fatal(err)
	}
	th := got[0]
	for j, w := range want.Weights {
		if math.Abs(th[j]-w) > 1e-12 {
			t.Errorf("weight %d: %v, FitRidge %v", j, th[j], w)
		}
	}
	if math.Abs(th[2]-want.Intercept) > 1e-12 {
		t.Errorf("intercept %v, FitRidge %v", th[2], want.Intercept)
	}
	zero, err := FitRidgeGram(make([]float64, 6), [][]float64{make([]float64, 3), make([]float64, 3)}, 3, lambda, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range zero {
		for _, v := range th {
			if v != 0 {
				t.Fatalf("no rows: %v, want the zero model", zero)
			}
		}
	}
	for _, tc := range []struct {
		name string
		xtx  []float64
		xty  [][]float64
		dim  int
		lam  float64
		free int
	}{
		{"short XᵀX", make([]float64, 5), [][]float64{make([]float64, 3)}, 3, 1, 2},
		{"short Xᵀy", make([]float64, 6), [][]float64{make([]float64, 2)}, 3, 1, 2},
		{"NaN", []float64{math.NaN(), 0, 0, 0, 0, 0}, [][]float64{make([]float64, 3)}, 3, 1, 2},
		{"negative lambda", make([]float64, 6), [][]float64{make([]float64, 3)}, 3, -1, 2},
		{"free out of range", make([]float64, 6), [][]float64{make([]float64, 3)}, 3, 1, 3},
	} {
		if _, err := FitRidgeGram(tc.xtx, tc.xty, tc.dim, tc.lam, tc.free); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
