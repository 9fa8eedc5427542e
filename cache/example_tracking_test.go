package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

// With WithTracking, Redis itself invalidates the local tier: a price
// changed by another service, by redis-cli or by an expiry is not served
// from memory past the bound, not only one changed through a Cache. (Not
// run: it needs a Redis server, which miniredis cannot stand in for.)
func ExampleWithTracking() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	ctx := context.Background()

	prices, err := cache.New(rdb, cache.Values[string]{},
		cache.WithPrefix("price:"),
		cache.WithLocal(64<<20), // the tier Redis invalidates
		cache.WithLocalAdmitAll(),
		cache.WithLocalTTL(30*time.Second), // tracking, not the TTL, bounds staleness
		cache.WithTracking())
	if err != nil {
		panic(err)
	}
	defer prices.Close()

	p, err := prices.Get(ctx, "sku-42", func(ctx context.Context, key string) (string, error) {
		return "9.99", nil // the database's row
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(p)
	// Elsewhere: redis-cli DEL price:sku-42, or SET it, or let it expire:
	// this instance drops its local copy once Redis says so.
	s := prices.Stats()
	fmt.Println(s.TrackingInvalidations, s.TrackingFlushes, s.TrackingDowns)
}
