package benchmarks

import (
	"context"
	"encoding/json"
	"testing"

	rcache "github.com/go-redis/cache/v9"
)

// go-redis/cache is used through Once (read-through, with singleflight per
// key in the process) and its default msgpack encoding; with a local tier, its
// TinyLFU in front of Redis. A loader error (including "no such row") is
// returned and nothing is cached: it has no absence caching. TTLs under 1 s
// are replaced by its 1 h default (none of the scenarios uses one).
func openGoRedisCache(tb testing.TB, cfg implConfig) *cacheImpl {
	rdb, rt := cfg.plainClient(tb)
	opt := &rcache.Options{Redis: rdb}
	switch cfg.codec {
	case "", "msgpack": // the default
	case "json":
		opt.Marshal, opt.Unmarshal = json.Marshal, json.Unmarshal
	default:
		tb.Fatalf("go-redis/cache: no codec %q", cfg.codec)
	}
	if cfg.local {
		opt.LocalCache = rcache.NewTinyLFU(cfg.localEntries, cfg.localTTL)
	}
	c := rcache.New(opt)
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			var r row
			err := c.Once(&rcache.Item{
				Ctx:   ctx,
				Key:   cfg.prefix + key,
				Value: &r,
				TTL:   cfg.ttl,
				Do:    func(*rcache.Item) (any, error) { return cfg.db.load(ctx, key) },
			})
			return r, err
		},
		set: func(ctx context.Context, key string, r row) error {
			return c.Set(&rcache.Item{Ctx: ctx, Key: cfg.prefix + key, Value: r, TTL: cfg.ttl})
		},
		del:   func(ctx context.Context, key string) error { return c.Delete(ctx, cfg.prefix+key) },
		close: func() {},
		rt:    rt,
	}
}
