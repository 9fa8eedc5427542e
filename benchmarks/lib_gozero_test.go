package benchmarks

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/zeromicro/go-zero/core/logx"
	zcache "github.com/zeromicro/go-zero/core/stores/cache"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/core/syncx"
)

// go-zero keeps one go-redis client per address for the whole process, with
// the hooks of whichever *Redis asked first. So all go-zero caches here share
// one client and one round-trip counter (the benchmarks run one at a time,
// so deltas stay per benchmark), and one Stat (each Stat starts a logging
// goroutine that never ends).
var goZero struct {
	once sync.Once
	rds  *zredis.Redis
	stat *zcache.Stat
	rt   rtCounter
}

// errZeroNotFound is the "not found" error go-zero caches are built with.
var errZeroNotFound = errors.New("go-zero: not found")

func openGoZero(tb testing.TB, cfg implConfig) *cacheImpl {
	addr := redisAddr(tb)
	goZero.once.Do(func() {
		logx.Disable()
		goZero.rds = zredis.MustNewRedis(zredis.RedisConf{Host: addr, Type: zredis.NodeType},
			zredis.WithHook(&goZero.rt))
		goZero.stat = zcache.NewStat("bench")
	})
	c := zcache.NewNode(goZero.rds, syncx.NewSingleFlight(), goZero.stat, errZeroNotFound,
		zcache.WithExpiry(cfg.ttl), zcache.WithNotFoundExpiry(cfg.nullTTL))
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			var r row
			err := c.TakeCtx(ctx, &r, cfg.prefix+key, func(v any) error {
				got, err := cfg.db.load(ctx, key)
				if errors.Is(err, errNoRow) {
					return errZeroNotFound
				}
				*v.(*row) = got
				return err
			})
			if errors.Is(err, errZeroNotFound) {
				return r, errNoRow
			}
			return r, err
		},
		set:   func(ctx context.Context, key string, r row) error { return c.SetCtx(ctx, cfg.prefix+key, r) },
		del:   func(ctx context.Context, key string) error { return c.DelCtx(ctx, cfg.prefix+key) },
		close: func() {},
		rt:    &goZero.rt,
	}
}
