package lock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// heldIn reports whether the Mutex hash at key has an owner in Redis. A
// released Mutex keeps its hash (only the fencing token, until the lock's
// last lease ends), so the key's existence does not say it is held.
func heldIn(ctx context.Context, rdb redis.Cmdable, key string) bool {
	n, err := rdb.HExists(ctx, key, "owner").Result()
	return err == nil && n
}
