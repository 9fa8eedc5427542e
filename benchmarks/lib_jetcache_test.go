package benchmarks

import (
	"context"
	"errors"
	"testing"

	jetcache "github.com/mgtv-tech/jetcache-go"
	jetjson "github.com/mgtv-tech/jetcache-go/encoding/json"
	jetlocal "github.com/mgtv-tech/jetcache-go/local"
	jetremote "github.com/mgtv-tech/jetcache-go/remote"
)

// errJetNotFound is the "not found" error jetcache caches are built with: a
// loader returning it makes jetcache cache a placeholder.
var errJetNotFound = errors.New("jetcache: not found")

// jetcache-go is used through Once (read-through, singleflight per key in the
// process) with its default msgpack codec; with a local tier, its TinyLFU
// (ristretto) in front of Redis. Statistics are off (they log every minute).
func openJetcache(tb testing.TB, cfg implConfig) *cacheImpl {
	rdb, rt := cfg.plainClient(tb)
	opts := []jetcache.Option{
		jetcache.WithName(cfg.prefix),
		jetcache.WithRemote(jetremote.NewGoRedisV9Adapter(rdb)),
		jetcache.WithErrNotFound(errJetNotFound),
		jetcache.WithRemoteExpiry(cfg.ttl),
		jetcache.WithNotFoundExpiry(cfg.nullTTL),
		jetcache.WithStatsDisabled(true),
	}
	switch cfg.codec {
	case "", "msgpack": // the default
	case "json":
		opts = append(opts, jetcache.WithCodec(jetjson.Name))
	default:
		tb.Fatalf("jetcache: no codec %q", cfg.codec)
	}
	if cfg.local {
		opts = append(opts, jetcache.WithLocal(jetlocal.NewTinyLFU(cfg.localEntries, cfg.localTTL)))
	}
	c := jetcache.New(opts...)
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			var r row
			err := c.Once(ctx, cfg.prefix+key, jetcache.Value(&r), jetcache.Do(func(ctx context.Context) (any, error) {
				got, err := cfg.db.load(ctx, key)
				if errors.Is(err, errNoRow) {
					return nil, errJetNotFound
				}
				return got, err
			}))
			if errors.Is(err, errJetNotFound) {
				return r, errNoRow
			}
			return r, err
		},
		set: func(ctx context.Context, key string, r row) error {
			return c.Set(ctx, cfg.prefix+key, jetcache.Value(r), jetcache.TTL(cfg.ttl))
		},
		del:   func(ctx context.Context, key string) error { return c.Delete(ctx, cfg.prefix+key) },
		close: c.Close,
		rt:    rt,
	}
}
