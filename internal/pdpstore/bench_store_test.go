package pdpstore

import (
	"context"
	"os"
	"testing"
)

// The store side of BenchmarkMillionUnits: the on-disk store, rebuilt and
// caught up as the release stage's recoverPDP does. A baseline (an older
// store) runs bench_test.go with these four defined for it.

func benchOpenStore(b *testing.B, dir string) *Store {
	st, err := Open(dir, quiet)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func benchRebuild(b *testing.B, st *Store, n int, rec func(int) Record) {
	if _, err := st.CatchUp(context.Background(), genSource{n, rec}, quiet); err != nil {
		b.Fatal(err)
	}
}

// benchReopen restarts with the store's file: it reads nothing new.
func benchReopen(b *testing.B, st *Store, dir string, n int, rec func(int) Record) *Store {
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	st = benchOpenStore(b, dir)
	read, err := st.CatchUp(context.Background(), genSource{n, rec}, quiet)
	if err != nil || read != 0 {
		b.Fatalf("catch-up after a restart read %d records (%v), want 0", read, err)
	}
	return st
}

func benchFileMB(b *testing.B, st *Store) float64 {
	fi, err := os.Stat(st.Path())
	if err != nil {
		b.Fatal(err)
	}
	return float64(fi.Size()) / 1e6
}

// genSource is a one-partition pdp topic whose record i is rec(i).
type genSource struct {
	n   int
	rec func(int) Record
}

func (g genSource) Topic() string { return "pdp" }

func (g genSource) Offsets(context.Context) (map[int]int64, map[int]int64, error) {
	return map[int]int64{0: 0}, map[int]int64{0: int64(g.n)}, nil
}

func (g genSource) Read(_ context.Context, _ int, from, end int64, fn func(Record) error) error {
	for i := max(from, 0); i < end; i++ {
		if err := fn(g.rec(int(i))); err != nil {
			return err
		}
	}
	return nil
}
