package cache

import (
	"context"
	"testing"

	"github.com/dgraph-io/ristretto/v2"
)

// Package-local microbenchmarks of the local hit path; the side-by-side suite
// against other libraries lives in the benchmarks module.
func BenchmarkLocalHit(b *testing.B) {
	_, rdb := newSingleB(b)
	ctx := context.Background()
	c, err := New[string](rdb, WithLocal(1<<20), WithLocalAdmitAll())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	<-c.subscribed
	load := func(context.Context, string) (string, error) { return "v", nil }
	c.Get(ctx, "k", load)
	settle(c)
	r, _ := ristretto.NewCache(&ristretto.Config[string, string]{NumCounters: 1e5, MaxCost: 1 << 20, BufferItems: 64})
	defer r.Close()
	r.Set("k", "v", 1)
	r.Wait()
	b.Run("impl=ristretto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Get("k")
		}
	})
	b.Run("impl=cacheguard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Get(ctx, "k", load)
		}
	})
}
