package benchmarks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	gocache "github.com/eko/gocache/lib/v4/cache"
	gostore "github.com/eko/gocache/lib/v4/store"
	redisstore "github.com/eko/gocache/store/redis/v4"
	ristrettostore "github.com/eko/gocache/store/ristretto/v4"
)

// gocache (lib/v4) is used as its README shows for read-through: a loadable
// cache over a store, or over a chain of an in-process ristretto store and
// the Redis store when the scenario asks for a local tier. Its Redis store
// keeps what go-redis returns, a string, so rows are JSON strings decoded by
// the adapter. A loader error (including "no such row") is returned as it is
// and nothing is cached: gocache has no absence caching.
//
// The chain reads the Redis layer with GET plus TTL (two round trips) and
// copies a hit into the ristretto layer with the Redis TTL, so local entries
// live as long as the Redis entry.
func openGocache(tb testing.TB, cfg implConfig) *cacheImpl {
	rdb, rt := cfg.plainClient(tb)
	remote := gocache.New[string](redisstore.NewRedis(rdb, gostore.WithExpiration(cfg.ttl)))
	var backing gocache.CacheInterface[string] = remote
	if cfg.local {
		rc, err := ristretto.NewCache(&ristretto.Config[string, any]{
			NumCounters: int64(cfg.localEntries) * 10,
			MaxCost:     int64(cfg.localEntries),
			BufferItems: 64,
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(rc.Close)
		local := gocache.New[string](ristrettostore.NewRistretto(ristrettoAny{rc},
			gostore.WithCost(1), gostore.WithExpiration(cfg.localTTL)))
		backing = gocache.NewChain[string](local, remote)
	}
	load := func(ctx context.Context, k any) (string, []gostore.Option, error) {
		r, err := cfg.db.load(ctx, strings.TrimPrefix(k.(string), cfg.prefix))
		if err != nil {
			return "", nil, err
		}
		b, err := json.Marshal(r)
		return string(b), []gostore.Option{gostore.WithExpiration(cfg.ttl)}, err
	}
	c := gocache.NewLoadable[string](load, backing)
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			s, err := c.Get(ctx, cfg.prefix+key)
			if err != nil {
				return row{}, err
			}
			var r row
			err = json.Unmarshal([]byte(s), &r)
			return r, err
		},
		set: func(ctx context.Context, key string, r row) error {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			return c.Set(ctx, cfg.prefix+key, string(b), gostore.WithExpiration(cfg.ttl))
		},
		del:   func(ctx context.Context, key string) error { return c.Delete(ctx, cfg.prefix+key) },
		close: func() { c.Close() },
		rt:    rt,
	}
}

// ristrettoAny lets gocache's ristretto store, written against ristretto's
// untyped v0 API, drive ristretto v2 (the version cacheguard uses; v0 and
// the generic v1 cannot both be in one build).
type ristrettoAny struct {
	c *ristretto.Cache[string, any]
}

func (r ristrettoAny) Get(key any) (any, bool) { return r.c.Get(key.(string)) }
func (r ristrettoAny) SetWithTTL(key, value any, cost int64, ttl time.Duration) bool {
	return r.c.SetWithTTL(key.(string), value, cost, ttl)
}
func (r ristrettoAny) Del(key any) { r.c.Del(key.(string)) }
func (r ristrettoAny) Clear()      { r.c.Clear() }
func (r ristrettoAny) Wait()       { r.c.Wait() }
