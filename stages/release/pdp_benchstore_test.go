package release

import (
	"context"
	"os"
	"testing"

	"github.com/segmentio/kafka-go"
)

// The store side of BenchmarkPDPMillionUnits: the release stage's on-disk
// store, rebuilt and caught up as recoverPDP does.

func benchOpenStore(b *testing.B, dir string) *PDPStore {
	st, err := OpenPDPStore(dir, quiet)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func benchRebuild(b *testing.B, st *PDPStore, n int, rec func(int) kafka.Message) {
	if _, err := st.CatchUp(context.Background(), genSource{n, rec}, quiet); err != nil {
		b.Fatal(err)
	}
}

// benchReopen restarts with the store's file: it reads nothing new.
func benchReopen(b *testing.B, st *PDPStore, dir string, n int, rec func(int) kafka.Message) *PDPStore {
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

func benchFileMB(b *testing.B, st *PDPStore) float64 {
	fi, err := os.Stat(st.Path())
	if err != nil {
		b.Fatal(err)
	}
	return float64(fi.Size()) / 1e6
}

// genSource is a one-partition pdp topic whose record i is rec(i).
type genSource struct {
	n   int
	rec func(int) kafka.Message
}

func (g genSource) Topic() string { return "pdp" }

func (g genSource) Offsets(context.Context) (map[int]int64, map[int]int64, error) {
	return map[int]int64{0: 0}, map[int]int64{0: int64(g.n)}, nil
}

func (g genSource) Read(_ context.Context, _ int, from, end int64, fn func(kafka.Message) error) error {
	for i := max(from, 0); i < end; i++ {
		if err := fn(g.rec(int(i))); err != nil {
			return err
		}
	}
	return nil
}
