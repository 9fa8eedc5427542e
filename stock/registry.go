package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// registerScript adds a sale to the sales registry unless the SKU is
// registered already; it answers the count registered before ("" if none).
//
// KEYS: sales   ARGV: sku buckets
var registerScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then return cur end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return ''
`)

// register puts sku in the sales registry with n buckets. fresh reports that
// this call added it; a SKU registered with another count is ErrSaleExists,
// and the registry is left as it was.
func (inv *Inventory) register(ctx context.Context, sku string, n int64) (fresh bool, err error) {
	cur, err := do(inv.calls, ctx, func(ctx context.Context) (string, error) {
		return registerScript.Run(ctx, inv.rdb, []string{salesKey(inv.cfg.ns)}, sku, n).Text()
	})
	if err != nil {
		return false, kind.Errorf("cacheguard: stock: load %s: %w", sku, err)
	}
	if cur == "" {
		return true, nil
	}
	if cur != strconv.FormatInt(n, 10) {
		return false, fmt.Errorf("%w: %s is loaded with %s buckets, this client has %d", ErrSaleExists, sku, cur, n)
	}
	return false, nil
}

// loadedBuckets is the bucket count the sale was loaded with.
func (inv *Inventory) loadedBuckets(ctx context.Context, sku string) (int, error) {
	s, err := do(inv.calls, ctx, func(ctx context.Context) (string, error) {
		return inv.rdb.HGet(ctx, salesKey(inv.cfg.ns), sku).Result()
	})
	if errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("%w: %s", ErrNoSale, sku)
	}
	if err != nil {
		return 0, kind.Errorf("cacheguard: stock: %s: %w", sku, err)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %s: bucket count %q", ErrNoSale, sku, s)
	}
	return n, nil
}

// checkBuckets explains a bucket of sku found without a sale: nil if the
// sale is not loaded at all, ErrBucketsMismatch if it is loaded with another
// bucket count than this Inventory's (the bucket asked for is beyond the
// sale's, or the sale has more than this client looks in).
func (inv *Inventory) checkBuckets(ctx context.Context, sku string) error {
	n, err := inv.loadedBuckets(ctx, sku)
	switch {
	case errors.Is(err, ErrNoSale):
		return nil
	case err != nil:
		return err
	case n != inv.cfg.buckets:
		return fmt.Errorf("%w: %s loaded with %d, client has %d", ErrBucketsMismatch, sku, n, inv.cfg.buckets)
	}
	return nil
}
