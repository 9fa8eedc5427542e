package cache_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

// Clear empties the whole cache, on every instance, in O(1): nothing is
// scanned; the old entries expire by their TTL.
func ExampleCache_Clear() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	users, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("user:"))
	if err != nil {
		panic(err)
	}
	defer users.Close()
	ctx := context.Background()
	load := func(_ context.Context, id string) (string, error) { return "user " + id, nil }
	users.Get(ctx, "42", load) // a miss: loaded
	users.Get(ctx, "42", load) // a hit
	if err := users.Clear(ctx); err != nil {
		panic(err)
	}
	users.Get(ctx, "42", load) // a miss again: loaded
	st := users.Stats()
	fmt.Println("loads:", st.Loads, "clears:", st.Clears)
	// Output:
	// loads: 2 clears: 1
}
