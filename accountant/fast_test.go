package accountant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// The tests in this file check the fast paths (mechanism cache, composed
// sums, table-driven conversion) against the code they replaced, kept below
// verbatim as references. Random inputs come from fixed seeds, so every run
// checks the same cases and a failure is reproducible.

// referenceEpsilon is Epsilon as it was before the conversion tables (commit
// 0e31a7c): a logarithm per order.
func referenceEpsilon(c Curve, delta float64) float64 {
	if math.IsNaN(delta) || delta < 0 || !c.valid() {
		return math.Inf(1)
	}
	if delta == 0 {
		for i := range numOrders {
			if c.entry(i) != 0 {
				return math.Inf(1)
			}
		}
		return 0
	}
	best := math.Inf(1)
	for i, a := range orders {
		r := c.entry(i)
		var eps float64
		switch {
		case r < 0:
			eps = 0
		case delta*delta+math.Expm1(-r) > 0:
			eps = 0
		case a > minConversionOrder:
			eps = r + math.Log1p(-1/a) - math.Log(delta*a)/(a-1)
		default:
			eps = math.Inf(1)
		}
		if eps < best {
			best = eps
		}
	}
	return math.Max(0, best)
}

// refAccount is Account as it was before the cache and the array curve
// (commit 0e31a7c): every charge recomputes its mechanisms' curves (uncached)
// and composes them with Curve.Add, and Spent uses referenceEpsilon.
type refAccount struct {
	curve                  Curve
	pure                   float64
	allPure                bool
	approxEps, approxDelta float64
	charges, refused       int
}

func (a *refAccount) empty() bool {
	if a.charges != 0 || a.pure != 0 || a.approxEps != 0 || a.approxDelta != 0 {
		return false
	}
	for _, v := range a.curve {
		if v != 0 {
			return false
		}
	}
	return true
}

func (a refAccount) spent(delta float64) float64 {
	if math.IsNaN(delta) || delta < 0 || !a.curve.wellFormed() {
		return math.Inf(1)
	}
	if a.approxDelta != 0 || a.approxEps != 0 {
		if !(a.approxDelta >= 0 && a.approxEps >= 0) || a.approxDelta >= delta {
			return math.Inf(1)
		}
		return referenceEpsilon(a.curve, delta-a.approxDelta) + a.approxEps
	}
	eps := referenceEpsilon(a.curve, delta)
	if a.allPure && a.pure >= 0 {
		eps = math.Min(eps, a.pure)
	}
	return eps
}

// with returns a after the charge ms (uncached curves), or an error.
func (a refAccount) with(ms []Mechanism) (refAccount, error) {
	if len(ms) == 0 {
		return a, fmt.Errorf("no mechanisms")
	}
	curve, pure, allPure, ae, ad := ZeroCurve(), 0.0, true, 0.0, 0.0
	for _, m := range ms {
		c, err := m.curve()
		if err != nil {
			return a, err
		}
		curve = curve.Add(c)
		if m.Kind == KindApproxDP {
			n := float64(m.count())
			ae += n * m.Epsilon
			ad += n * m.Delta
			allPure = false
			continue
		}
		if eps, ok := m.PureEpsilon(); ok {
			pure += eps
		} else {
			allPure = false
		}
	}
	next := a
	next.curve = a.curve.Add(curve)
	next.pure = a.pure + pure
	next.allPure = (a.allPure || a.empty()) && allPure
	next.approxEps = a.approxEps + ae
	next.approxDelta = a.approxDelta + ad
	return next, nil
}

func (a *refAccount) apply(ms []Mechanism) error {
	next, err := a.with(ms)
	if err != nil {
		return err
	}
	next.charges++
	*a = next
	return nil
}

func (a *refAccount) try(b Budget, ms []Mechanism) (bool, error) {
	if err := b.validate(); err != nil {
		return false, err
	}
	next, err := a.with(ms)
	if err != nil {
		return false, err
	}
	if next.spent(b.Delta) <= b.Epsilon+budgetTolerance*b.Epsilon {
		next.charges++
		*a = next
		return true, nil
	}
	a.refused++
	return false, nil
}

// sameAccount reports how acct differs from ref: the curves and sums must be
// equal as numbers (the same additions in the same order).
func sameAccount(acct *Account, ref *refAccount) error {
	for i := range acct.Curve {
		var want float64
		if ref.curve != nil {
			want = ref.curve[i]
		}
		if acct.Curve[i] != want {
			return fmt.Errorf("curve at order %v: %.17g, reference %.17g", orders[i], acct.Curve[i], want)
		}
	}
	if acct.Pure != ref.pure || acct.AllPure != ref.allPure || acct.ApproxEpsilon != ref.approxEps ||
		acct.ApproxDelta != ref.approxDelta || acct.Charges != ref.charges || acct.Refused != ref.refused {
		return fmt.Errorf("account %v %v %v %v %d %d, reference %v %v %v %v %d %d",
			acct.Pure, acct.AllPure, acct.ApproxEpsilon, acct.ApproxDelta, acct.Charges, acct.Refused,
			ref.pure, ref.allPure, ref.approxEps, ref.approxDelta, ref.charges, ref.refused)
	}
	return nil
}

// logUniform draws from [lo, hi] uniformly in log scale.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

// randomMechanism draws a valid mechanism of any kind, with parameters over
// many orders of magnitude and sometimes a Count.
func randomMechanism(r *rand.Rand) Mechanism {
	var m Mechanism
	switch r.IntN(9) {
	case 0:
		m = Mechanism{Kind: KindGaussian, Scale: logUniform(r, 0.05, 1e4), Sensitivity: logUniform(r, 0.1, 10)}
	case 1:
		m = Mechanism{Kind: KindDiscreteGaussian, Scale: logUniform(r, 0.5, 1e4), Sensitivity: float64(1 + r.IntN(5))}
	case 2:
		m = Mechanism{Kind: KindLaplace, Scale: logUniform(r, 0.05, 1e4), Sensitivity: logUniform(r, 0.1, 10)}
	case 3:
		m = Mechanism{Kind: KindDiscreteLaplace, Scale: logUniform(r, 0.5, 1e4), Sensitivity: float64(1 + r.IntN(5))}
	case 4:
		m = Mechanism{Kind: KindPure, Epsilon: logUniform(r, 1e-4, 5)}
	case 5:
		m = Mechanism{Kind: KindExponential, Epsilon: logUniform(r, 1e-4, 5)}
	case 6:
		m = Mechanism{Kind: KindRandomizedResponse, Epsilon: logUniform(r, 0.05, 1), K: 2 + r.IntN(20)}
	case 7:
		m = Mechanism{Kind: KindZCDP, Epsilon: logUniform(r, 1e-6, 1)}
	default:
		m = Mechanism{Kind: KindApproxDP, Epsilon: logUniform(r, 1e-3, 1), Delta: logUniform(r, 1e-12, 1e-7)}
	}
	if r.IntN(3) == 0 {
		m.Count = r.IntN(1000)
	}
	return m
}

// randomCurve draws a well-formed curve of one of several shapes.
func randomCurve(r *rand.Rand, delta float64) Curve {
	c := make(Curve, numOrders)
	switch r.IntN(5) {
	case 0, 1: // a composition of mechanisms, the shape accounts have
		for range 1 + r.IntN(5) {
			mc, err := randomMechanism(r).Curve()
			if err != nil {
				continue // parameters too extreme for a finite curve
			}
			for i := range c {
				c[i] += mc[i]
			}
		}
	case 2: // arbitrary non-negative entries, not monotone
		for i := range c {
			c[i] = logUniform(r, 1e-20, 1e3)
		}
	case 3: // entries around the Bretagnolle–Huber threshold −log(1−δ²)
		th := -math.Log1p(-delta * delta)
		for i := range c {
			s := logUniform(r, 1e-17, 10)
			if r.IntN(2) == 0 {
				s = -s / (1 + s)
			}
			c[i] = th * (1 + s)
			if r.IntN(20) == 0 {
				c[i] = th
			}
		}
	default: // a composition with zeros, +Inf and tiny entries sprinkled in
		mc, err := randomMechanism(r).Curve()
		if err == nil {
			copy(c, mc)
		}
		for range 1 + r.IntN(4) {
			switch i := r.IntN(numOrders); r.IntN(4) {
			case 0:
				c[i] = 0
			case 1:
				c[i] = math.Inf(1)
			case 2:
				c[i] = math.SmallestNonzeroFloat64 * float64(r.IntN(100))
			default:
				c[i] = logUniform(r, 1e-300, 1e-10)
			}
		}
	}
	return c
}

// randomDelta draws a conversion delta: mostly log-uniform over the whole
// float64 range below 1 (subnormals included), sometimes just below 1.
func randomDelta(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return 1 - logUniform(r, 1e-16, 1e-3)
	case 1:
		return logUniform(r, 5e-324, 1e-150)
	default:
		return logUniform(r, 1e-300, 0.9)
	}
}

// TestEpsilonFastMatchesReference compares Epsilon (tables, early exits) with
// referenceEpsilon on many random well-formed curves and deltas, and on
// corrupt input and edge deltas. The fast path evaluates the same expressions
// and must agree to 1e-12 relative (it is in fact bit-identical; the count is
// logged).
func TestEpsilonFastMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 5))
	edgeDeltas := []float64{0, math.SmallestNonzeroFloat64, 1e-160, 1e-12, 1e-6, 0.5,
		1 - 1e-9, 1 - 1e-10, math.Nextafter(1, 0), 1, 2, math.Inf(1), -1, math.NaN()}
	cases, exact := 0, 0
	check := func(name string, c Curve, delta float64) {
		t.Helper()
		cases++
		got, want := Epsilon(c, delta), referenceEpsilon(c, delta)
		if got == want || math.Float64bits(got) == math.Float64bits(want) {
			exact++
			return
		}
		if math.IsInf(want, 0) || want == 0 || math.IsNaN(got) || relErr(got, want) > 1e-12 {
			t.Fatalf("%s, delta %g: Epsilon %.17g, reference %.17g", name, delta, got, want)
		}
	}
	for n := range 4000 {
		delta := randomDelta(r)
		c := randomCurve(r, delta)
		check(fmt.Sprintf("curve %d", n), c, delta)
		check(fmt.Sprintf("curve %d", n), c, edgeDeltas[r.IntN(len(edgeDeltas))])
		check(fmt.Sprintf("curve %d", n), c, randomDelta(r)) // a delta the curve was not shaped for
	}
	// Corrupt or unusual input: NaN and negative entries, nil and wrong
	// lengths.
	for n := range 500 {
		delta := randomDelta(r)
		c := randomCurve(r, delta)
		switch i := r.IntN(numOrders); n % 3 {
		case 0:
			c[i] = math.NaN()
		case 1:
			c[i] = -logUniform(r, 1e-300, 1)
		default:
			c[i] = math.Copysign(0, -1)
		}
		check(fmt.Sprintf("corrupt curve %d", n), c, delta)
		check(fmt.Sprintf("corrupt curve %d", n), c, edgeDeltas[n%len(edgeDeltas)])
	}
	for _, delta := range append(edgeDeltas, 1e-5) {
		check("nil", nil, delta)
		check("zero", ZeroCurve(), delta)
		check("short", Curve{1, 2}, delta)
		check("inf", infCurve(), delta)
	}
	t.Logf("%d cases, %d bit-identical to the reference", cases, exact)
}

// TestAccountMatchesReference replays random charge sequences through Apply
// and Try and through refAccount (the previous implementation, uncached):
// the accounts must be equal after every charge, the filter's decisions the
// same and Spent within 1e-12.
func TestAccountMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 6))
	pool := make([]Mechanism, 60) // a release stage's few distinct mechanisms, reused
	for i := range pool {
		pool[i] = randomMechanism(r)
	}
	for seq := range 60 {
		budget := Budget{Epsilon: logUniform(r, 0.1, 100), Delta: []float64{0, 1e-9, 1e-6, 1e-3}[seq%4]}
		var acct Account
		var ref refAccount
		if seq%2 == 0 { // as the release stage creates accounts
			acct.AllPure, ref.allPure = true, true
		}
		for step := range 300 {
			ms := make([]Mechanism, 1+r.IntN(4))
			for i := range ms {
				if r.IntN(10) == 0 {
					ms[i] = randomMechanism(r) // sometimes a new one
				} else {
					ms[i] = pool[r.IntN(len(pool))]
				}
			}
			if step%3 == 0 {
				err, refErr := acct.Apply(ms), ref.apply(ms)
				if (err == nil) != (refErr == nil) {
					t.Fatalf("seq %d step %d: Apply error %v, reference %v", seq, step, err, refErr)
				}
			} else {
				ok, err := acct.Try(budget, ms)
				refOK, refErr := ref.try(budget, ms)
				if ok != refOK || (err == nil) != (refErr == nil) {
					t.Fatalf("seq %d step %d: Try %v, %v; reference %v, %v", seq, step, ok, err, refOK, refErr)
				}
			}
			if err := sameAccount(&acct, &ref); err != nil {
				t.Fatalf("seq %d step %d: %v", seq, step, err)
			}
			for _, d := range []float64{budget.Delta, 1e-5} {
				got, want := acct.Spent(d), ref.spent(d)
				if got != want && !(relErr(got, want) <= 1e-12) {
					t.Fatalf("seq %d step %d: Spent(%g) %.17g, reference %.17g", seq, step, d, got, want)
				}
			}
		}
	}
}

// TestCachedCurvesAreImmutable: the slice Mechanism.Curve returns is the
// caller's; changing it changes neither later curves nor accounts.
func TestCachedCurvesAreImmutable(t *testing.T) {
	m := Mechanism{Kind: KindGaussian, Scale: 7, Sensitivity: 1}
	want, err := m.curve()
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Curve()
	if err != nil {
		t.Fatal(err)
	}
	for i := range c {
		c[i] = -1
	}
	again, err := m.Curve()
	if err != nil {
		t.Fatal(err)
	}
	curvesClose(t, "curve after the caller changed a copy", again, want, 0)
	var a Account
	if err := a.Apply([]Mechanism{m}); err != nil {
		t.Fatal(err)
	}
	curvesClose(t, "account after the caller changed a copy", a.Curve[:], want, 0)
}

// TestAccountCopyIsSnapshot: a copy of an Account is independent of later
// charges to either (stages/release/predict.go restores a saved copy).
func TestAccountCopyIsSnapshot(t *testing.T) {
	g := []Mechanism{{Kind: KindGaussian, Scale: 3, Sensitivity: 1}}
	var a Account
	if err := a.Apply(g); err != nil {
		t.Fatal(err)
	}
	saved := a
	if ok, err := a.Try(Budget{Epsilon: 100, Delta: 1e-6}, g); err != nil || !ok {
		t.Fatalf("Try = %v, %v", ok, err)
	}
	if saved.Charges != 1 || saved.Curve == a.Curve {
		t.Fatalf("the saved copy followed the account: %d charges, same curve %v", saved.Charges, saved.Curve == a.Curve)
	}
	one, err := g[0].curve()
	if err != nil {
		t.Fatal(err)
	}
	curvesClose(t, "saved curve", saved.Curve[:], one, 0)
	a = saved
	if err := a.Apply(g); err != nil {
		t.Fatal(err)
	}
	curvesClose(t, "saved curve after the restored account was charged", saved.Curve[:], one, 0)
}

// TestMechanismCacheBounded fills the cache with many more distinct
// mechanisms than it holds: it stays within its bound, and every curve it
// hands out is still the uncached one.
func TestMechanismCacheBounded(t *testing.T) {
	const n = 4 * mechCacheShards * mechShardCap
	ms := make([]Mechanism, n)
	for i := range ms {
		ms[i] = Mechanism{Kind: KindLaplace, Scale: 1 + float64(i)/64, Sensitivity: 1}
		if _, err := lookup(ms[i]); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i := range mechCache {
		s := &mechCache[i]
		s.mu.Lock()
		if tab := s.t.Load(); tab != nil {
			if tab.n > mechShardCap {
				t.Errorf("shard %d holds %d entries, bound %d", i, tab.n, mechShardCap)
			}
			total += tab.n
		}
		s.mu.Unlock()
	}
	if total == 0 || total > mechCacheShards*mechShardCap {
		t.Errorf("cache holds %d entries, want between 1 and %d", total, mechCacheShards*mechShardCap)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		got, err := ms[i].Curve()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ms[i].curve()
		curvesClose(t, fmt.Sprintf("mechanism %d", i), got, want, 0)
	}
}

// TestMechanismCacheIgnoresSignOfZero: mechanisms equal as values (a zero
// field written as −0) share an entry or agree, and are charged the same.
func TestMechanismCacheIgnoresSignOfZero(t *testing.T) {
	plus := Mechanism{Kind: KindGaussian, Scale: 2, Sensitivity: 1}
	minus := plus
	minus.Epsilon = math.Copysign(0, -1)
	if mechHash(plus) != mechHash(minus) {
		t.Errorf("±0 hash differently")
	}
	a, err := lookup(plus)
	if err != nil {
		t.Fatal(err)
	}
	b, err := lookup(minus)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("±0 mechanisms got different cache entries")
	}
}

// TestAccountConcurrentCharges: goroutines charging their own accounts from
// shared and ever-new mechanisms (evicting cache shards as they go) end with
// the accounts the reference computes sequentially. Run with -race.
func TestAccountConcurrentCharges(t *testing.T) {
	const workers = 6
	r := rand.New(rand.NewPCG(22, 7))
	var charges [workers][][]Mechanism
	for w := range charges {
		for range 400 {
			ms := make([]Mechanism, 1+r.IntN(3))
			for i := range ms {
				ms[i] = randomMechanism(r)
				if r.IntN(2) == 0 {
					ms[i] = Mechanism{Kind: KindGaussian, Scale: float64(1 + r.IntN(20)), Sensitivity: 1}
				}
			}
			charges[w] = append(charges[w], ms)
		}
	}
	var accts [workers]Account
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, ms := range charges[w] {
				if _, err := accts[w].Try(Budget{Epsilon: 50, Delta: 1e-6}, ms); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for w := range workers {
		var ref refAccount
		for _, ms := range charges[w] {
			if _, err := ref.try(Budget{Epsilon: 50, Delta: 1e-6}, ms); err != nil {
				t.Fatal(err)
			}
		}
		if err := sameAccount(&accts[w], &ref); err != nil {
			t.Errorf("worker %d: %v", w, err)
		}
	}
}

// TestChargesDoNotAllocate: Apply, Try and Spent with cached mechanisms
// allocate nothing (allocation counts are deterministic, unlike timings).
func TestChargesDoNotAllocate(t *testing.T) {
	for n := 1; n <= 3; n++ {
		ms := benchCharges[n-1]
		var a Account
		if err := a.Apply(ms); err != nil { // fills the caches
			t.Fatal(err)
		}
		a.Spent(benchBudget.Delta)
		if allocs := testing.AllocsPerRun(100, func() { _ = a.Apply(ms) }); allocs != 0 {
			t.Errorf("Apply of %d mechanisms: %v allocations", n, allocs)
		}
		if allocs := testing.AllocsPerRun(100, func() { _, _ = a.Try(benchBudget, ms) }); allocs != 0 {
			t.Errorf("Try of %d mechanisms: %v allocations", n, allocs)
		}
		if allocs := testing.AllocsPerRun(100, func() { a.Spent(benchBudget.Delta) }); allocs != 0 {
			t.Errorf("Spent: %v allocations", allocs)
		}
	}
}

// TestTryChecksChargeWithNegativeCurve: the constructors never give a
// negative entry, but if a cached curve had one the filter must still see
// the composed curve as corrupt (Spent +Inf, refused), as it did before the
// cache. The entry is planted in the cache for a mechanism no other test
// uses, and the shard is restored afterwards.
func TestTryChecksChargeWithNegativeCurve(t *testing.T) {
	m := Mechanism{Kind: KindZCDP, Epsilon: 0.123456789e-3}
	e, err := newMechEntry(m)
	if err != nil {
		t.Fatal(err)
	}
	e.curve[40] = -1e-3
	e.wellFormed = curveWellFormed(&e.curve)
	h := mechHash(m)
	s := &mechCache[h%mechCacheShards]
	s.mu.Lock()
	saved := s.t.Load()
	planted := new(mechTable)
	if saved != nil && saved.n < mechShardCap {
		*planted = *saved
	}
	if planted.find(m, h) == nil {
		planted.insert(e, h)
	}
	s.t.Store(planted)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.t.Store(saved)
		s.mu.Unlock()
	}()

	var a Account
	ok, err := a.Try(Budget{Epsilon: 1e6, Delta: 1e-6}, []Mechanism{m})
	if err != nil || ok {
		t.Fatalf("Try with a negative composed curve = %v, %v; want refused", ok, err)
	}
	if a.Refused != 1 || a.Charges != 0 {
		t.Errorf("Refused, Charges = %d, %d; want 1, 0", a.Refused, a.Charges)
	}
}
