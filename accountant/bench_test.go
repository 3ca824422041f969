package accountant

import "testing"

// benchCharges are the charges the benchmarks rotate through: one, two and
// three mechanisms, as a release stage makes them (a count with its noise, a
// mean's sum and count, a quantile's exponential mechanism), plus a
// randomized-response and a pure charge so the rotation is not all Gaussian.
var benchCharges = [][]Mechanism{
	{{Kind: KindGaussian, Scale: 40, Sensitivity: 1}},
	{{Kind: KindLaplace, Scale: 20, Sensitivity: 1}, {Kind: KindDiscreteGaussian, Scale: 30, Sensitivity: 1}},
	{{Kind: KindGaussian, Scale: 50, Sensitivity: 2}, {Kind: KindExponential, Epsilon: 0.01}, {Kind: KindZCDP, Epsilon: 1e-4, Count: 3}},
	{{Kind: KindRandomizedResponse, Epsilon: 0.9, K: 4}},
	{{Kind: KindPure, Epsilon: 0.001}, {Kind: KindDiscreteLaplace, Scale: 100, Sensitivity: 1}},
}

// benchBudget never refuses the benchmarks' charges, so every Try does the
// whole accepted path (compose, convert, commit).
var benchBudget = Budget{Epsilon: 1e9, Delta: 1e-6}

// BenchmarkAccountApply is the cost of one Apply of a charge of 1, 2 or 3
// mechanisms to a growing account.
func BenchmarkAccountApply(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		ms := benchCharges[n-1]
		b.Run(benchName(n), func(b *testing.B) {
			b.ReportAllocs()
			var a Account
			for b.Loop() {
				if err := a.Apply(ms); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAccountTry is the cost of one accepted Try of a charge of 1, 2 or
// 3 mechanisms: compose, convert the new curve at the budget's delta, commit.
func BenchmarkAccountTry(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		ms := benchCharges[n-1]
		b.Run(benchName(n), func(b *testing.B) {
			b.ReportAllocs()
			var a Account
			for b.Loop() {
				if ok, err := a.Try(benchBudget, ms); err != nil || !ok {
					b.Fatalf("Try = %v, %v", ok, err)
				}
			}
		})
	}
}

// BenchmarkAccountTryParallel runs accepted Trys from every core, each
// goroutine on its own account (one per shard, as the release stage does),
// sharing the package's caches.
func BenchmarkAccountTryParallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var a Account
		i := 0
		for pb.Next() {
			if ok, err := a.Try(benchBudget, benchCharges[i%len(benchCharges)]); err != nil || !ok {
				b.Errorf("Try = %v, %v", ok, err)
				return
			}
			i++
		}
	})
}

// BenchmarkCompose1e6 composes 10^6 charges (the rotation above) into one
// account with Apply, the ledger replay path; one op is the whole million.
func BenchmarkCompose1e6(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var a Account
		for i := range 1_000_000 {
			if err := a.Apply(benchCharges[i%len(benchCharges)]); err != nil {
				b.Fatal(err)
			}
		}
		if a.Charges != 1_000_000 {
			b.Fatalf("Charges = %d", a.Charges)
		}
	}
}

// BenchmarkTry1e6 offers 10^6 charges (the rotation above) to one account's
// budget filter with Try, the release path; one op is the whole million.
func BenchmarkTry1e6(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var a Account
		for i := range 1_000_000 {
			if ok, err := a.Try(benchBudget, benchCharges[i%len(benchCharges)]); err != nil || !ok {
				b.Fatalf("charge %d: Try = %v, %v", i, ok, err)
			}
		}
	}
}

// BenchmarkSpent is one conversion of a composed account at a fixed delta.
func BenchmarkSpent(b *testing.B) {
	b.ReportAllocs()
	var a Account
	for _, ms := range benchCharges {
		if err := a.Apply(ms); err != nil {
			b.Fatal(err)
		}
	}
	var sink float64
	for b.Loop() {
		sink += a.Spent(1e-6)
	}
	if !(sink > 0) {
		b.Fatal("Spent gave nothing")
	}
}

func benchName(n int) string {
	return [...]string{"", "1mech", "2mech", "3mech"}[n]
}
