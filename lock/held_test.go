package lock

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// mutexIn reads the Mutex string at key. A released Mutex keeps its string
// (only the fencing token, until the lock's last lease ends), so the key's
// existence does not say it is held.
func mutexIn(ctx context.Context, rdb redis.Cmdable, key string) (wire.FencedLock, bool) {
	v, err := rdb.Get(ctx, key).Result()
	if err != nil {
		return wire.FencedLock{}, false
	}
	return wire.ParseFencedLock(v)
}

// heldIn reports whether the Mutex at key has an owner in Redis.
func heldIn(ctx context.Context, rdb redis.Cmdable, key string) bool {
	l, ok := mutexIn(ctx, rdb, key)
	return ok && l.Holds > 0
}

// setMutex writes l as the Mutex at key, keeping the key's lease.
func setMutex(ctx context.Context, rdb redis.Cmdable, key string, l wire.FencedLock) error {
	return rdb.SetArgs(ctx, key, l.String(), redis.SetArgs{KeepTTL: true}).Err()
}
