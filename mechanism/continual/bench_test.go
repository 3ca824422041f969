package continual

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkNext releases a whole horizon of T = 1024 windows per
// operation (a fresh releaser each time, plan and factor cached), with
// counts below 2^20 and noise below 2^40 in lattice units: the release
// stage's per-horizon arithmetic cost for each method.
func BenchmarkNext(b *testing.B) {
	const n = 1024
	rng := rand.New(rand.NewPCG(9, 10))
	x, z := make([]int64, n), make([]int64, n)
	for i := range x {
		x[i] = rng.Int64N(1 << 20)
		z[i] = rng.Int64N(1<<40) - 1<<39
	}
	for _, m := range Methods {
		p, err := NewPlan(m, n, 1, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(m), func(b *testing.B) {
			for b.Loop() {
				r, _ := NewReleaser(p)
				for i := range x {
					if _, err := r.Next(x[i], z[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
