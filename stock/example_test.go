package stock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/stock"
)

// Two units for three buyers: each purchase is one script in Redis, a retry
// with the same request id returns the first answer without deducting again,
// and nobody gets a unit that is not there.
func Example() {
	mr := miniredis.NewMiniRedis() // any Redis
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	inv, err := stock.New(rdb)
	if err != nil {
		panic(err)
	}
	if err := inv.Load(ctx, "sku-1", 2, stock.Window{Start: time.Now().Add(-time.Minute)}); err != nil {
		panic(err)
	}
	for _, buyer := range []string{"ann", "bob", "cid"} {
		r, err := inv.Reserve(ctx, "sku-1", buyer, "order-"+buyer, 1)
		fmt.Println(buyer, r.Outcome, err)
	}
	r, _ := inv.Reserve(ctx, "sku-1", "ann", "order-ann", 1) // a retry
	fmt.Println("ann again:", r.Outcome, "duplicate:", r.Duplicate)

	s, _ := inv.Status(ctx, "sku-1")
	fmt.Println("remaining:", s.Remaining, "reserved:", s.Reserved)
	// Output:
	// ann reserved <nil>
	// bob reserved <nil>
	// cid sold out <nil>
	// ann again: reserved duplicate: true
	// remaining: 0 reserved: 2
}
