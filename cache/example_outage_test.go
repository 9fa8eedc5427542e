package cache_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/cache"
)

// A client and a cache set up for Redis outages. go-redis's defaults retry a
// failed command 3 times and a failed dial 5 times, so against a dead server
// each call can take seconds while holding a pool slot; in front of a
// database failing fast is the better trade. While Redis is down the circuit
// breaker answers at once, and at most 8 loads at a time go straight to the
// database (without WithFallbackLoads, Get returns an error wrapping
// ErrRedis and the database sees nothing).
func Example_outage() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{
		Addr:                  mr.Addr(),
		MaxRetries:            -1, // the cache has its own answers for a failed call
		DialerRetries:         1,
		DialTimeout:           200 * time.Millisecond,
		ContextTimeoutEnabled: true, // context deadlines bound socket reads
	})
	defer rdb.Close()
	users, err := cache.New(rdb, cache.Values[User]{},
		cache.WithPrefix("user:"),
		cache.WithCircuitBreaker(5, time.Second),
		cache.WithFallbackLoads(8),
		cache.WithMaxLoads(32))
	if err != nil {
		panic(err)
	}
	defer users.Close()

	ctx := context.Background()
	mr.Close() // Redis goes away
	u, err := users.Get(ctx, "42", findUser)
	fmt.Println(u.Name, err)
	_, err = users.Get(ctx, "7", findUser)
	fmt.Println(errors.Is(err, cache.ErrNotFound))
	fmt.Println("fallback loads:", users.Stats().FallbackLoads)
	// Output:
	// Ada <nil>
	// true
	// fallback loads: 2
}
