package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/ratelimit"
)

// A key rewritten over and over cannot send more loads to the database than
// its budget: here one load a minute, shared by every instance on the Redis.
// The load the budget refuses is answered with cache.ErrRateLimited.
func Example() {
	ctx := context.Background()
	mr, err := miniredis.Run() // any Redis; an in-process one keeps the example self-contained
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	lim, err := ratelimit.New(rdb,
		ratelimit.WithLoads(ratelimit.Limit{Rate: 1, Per: time.Minute}), // per key, across the fleet
		ratelimit.WithInstances(4),                                      // each instance's share while Redis fails
	)
	if err != nil {
		panic(err)
	}
	users, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("user:"), cache.WithKeyRateLimit(lim))
	if err != nil {
		panic(err)
	}
	defer users.Close()

	loads := 0
	findUser := func(ctx context.Context, id string) (string, error) {
		loads++
		return "Ada", nil
	}
	name, err := users.Get(ctx, "42", findUser)
	fmt.Println(name, err)

	// The row changes; the next Get would load it again within the minute.
	if err := users.Delete(ctx, "42"); err != nil {
		panic(err)
	}
	_, err = users.Get(ctx, "42", findUser)
	fmt.Println(errors.Is(err, cache.ErrRateLimited), "loads:", loads)
	st := lim.Stats()
	fmt.Println("allowed:", st.Allowed, "limited:", st.Limited)
	// Output:
	// Ada <nil>
	// true loads: 1
	// allowed: 1 limited: 1
}
