package cache

import (
	"context"
	"testing"

	"github.com/cacheguard/cacheguard/cache/internal/local"
)

// Package-local microbenchmarks of the local hit path: the whole Get against
// a Get of the default store alone, the cost of everything around it. The
// side-by-side suite against other libraries (raw ristretto among them)
// lives in the benchmarks module.
func BenchmarkLocalHit(b *testing.B) {
	_, rdb := newSingleB(b)
	ctx := context.Background()
	c, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLocal(1<<20), WithLocalAdmitAll())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	<-c.bus.Subscribed()
	load := func(context.Context, string) (string, error) { return "v", nil }
	c.Get(ctx, "k", load)
	s, err := local.NewOtterStore[string](1 << 20)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Set("k", &LocalEntry[string]{Value: "v"}, 1, 0)
	b.Run("impl=store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Get("k")
		}
	})
	b.Run("impl=cacheguard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Get(ctx, "k", load)
		}
	})
}
