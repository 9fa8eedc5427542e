package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

// A Get that finds a stale entry waits at most the soft load timeout for
// its reload, then answers with the stale value; the reload lands in the
// background.
func ExampleWithSoftLoadTimeout() {
	mr := miniredis.NewMiniRedis()
	mr.Start()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	prices, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("price:"),
		cache.WithSoftLoadTimeout(20*time.Millisecond), // what a reader waits for a fresh value
		cache.WithLoadTimeout(5*time.Second),           // what a load may take at all
	)
	if err != nil {
		panic(err)
	}
	defer prices.Close()
	ctx := context.Background()
	prices.Set(ctx, "sku-1", "9.99")
	prices.MarkStale(ctx, time.Minute, "sku-1") // the row changed

	slowDB := func(context.Context, string) (string, error) {
		time.Sleep(100 * time.Millisecond) // a database under load
		return "8.99", nil
	}
	v, _ := prices.Get(ctx, "sku-1", slowDB)
	fmt.Println(v, prices.Stats().SoftTimeouts)
	// Output:
	// 9.99 1
}
