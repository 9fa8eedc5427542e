package benchmarks

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// openNaive is plain cache-aside on raw go-redis, what a caller writes by
// hand: GET and decode; on a miss query the database and SET with a fixed
// TTL. No singleflight, no absence caching, no jitter, no lease.
func openNaive(tb testing.TB, cfg implConfig) *cacheImpl {
	rdb, rt := cfg.client(tb)
	return cacheAside(rdb, rt, cfg)
}

// cacheAside is the hand-written cache-aside of openNaive on any go-redis
// command interface: a client, a cluster client, an AutoPipeliner, a
// batcher.
func cacheAside(rdb getSetDeler, rt *rtCounter, cfg implConfig) *cacheImpl {
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			var r row
			data, err := rdb.Get(ctx, cfg.prefix+key).Bytes()
			if err == nil {
				err = json.Unmarshal(data, &r)
				return r, err
			}
			if !errors.Is(err, redis.Nil) {
				return r, err
			}
			r, err = cfg.db.load(ctx, key)
			if err != nil {
				return r, err
			}
			data, err = json.Marshal(r)
			if err != nil {
				return r, err
			}
			return r, rdb.Set(ctx, cfg.prefix+key, data, cfg.ttl).Err()
		},
		set: func(ctx context.Context, key string, r row) error {
			data, err := json.Marshal(r)
			if err != nil {
				return err
			}
			return rdb.Set(ctx, cfg.prefix+key, data, cfg.ttl).Err()
		},
		del:   func(ctx context.Context, key string) error { return rdb.Del(ctx, cfg.prefix+key).Err() },
		close: func() {},
		rt:    rt,
	}
}

// getSetDeler is the part of go-redis's command interface cacheAside uses.
type getSetDeler interface {
	Get(ctx context.Context, key string) *redis.StringCmd
	Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}
