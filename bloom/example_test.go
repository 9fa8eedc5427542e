package bloom_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/bloom"
	"github.com/redis/go-redis/v9"
)

// ids stands in for a query that streams the primary keys of a table.
func ids(yield func(string, error) bool) {
	for _, id := range []string{"1", "2", "3"} {
		if !yield(id, nil) {
			return
		}
	}
}

// A Local filter is warmed up from the table once; rows inserted later are
// added as they are written.
func ExampleLocal() {
	ctx := context.Background()
	f, err := bloom.NewLocal(1_000_000, 0.01)
	if err != nil {
		panic(err)
	}
	if err := f.Rebuild(ctx, ids); err != nil { // fills the filter and marks it ready
		panic(err)
	}
	f.Add(ctx, "4") // a row inserted after the warm-up

	for _, id := range []string{"1", "4", "404"} {
		ok, _ := f.MayContain(ctx, id)
		fmt.Printf("%s: %v\n", id, ok)
	}
	// Output:
	// 1: true
	// 4: true
	// 404: false
}

// A Redis filter is shared by every instance that opens it under the same
// name and size: a key added through one is seen by all.
func ExampleNewRedis() {
	mr := miniredis.NewMiniRedis() // any Redis: a *redis.Client, a cluster client...
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	a, err := bloom.NewRedis(ctx, rdb, "users", 1_000_000, 0.01)
	if err != nil {
		panic(err)
	}
	if err := a.Rebuild(ctx, ids); err != nil {
		panic(err)
	}
	b, _ := bloom.NewRedis(ctx, rdb, "users", 1_000_000, 0.01) // another instance
	a.Add(ctx, "4")

	found, _ := b.MayContainMany(ctx, []string{"1", "4", "404"})
	fmt.Println(found, slices.Contains(found, false))
	// Output:
	// [true true false] true
}
