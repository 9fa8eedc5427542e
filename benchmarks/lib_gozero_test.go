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

	// own are the clients of servers other than the shared one (a fault
	// storm's), by address, each with its counter.
	mu  sync.Mutex
	own map[string]*goZeroClient
}

// goZeroClient is go-zero's client of one address and its counter.
type goZeroClient struct {
	rds *zredis.Redis
	rt  *rtCounter
}

// errZeroNotFound is the "not found" error go-zero caches are built with.
var errZeroNotFound = errors.New("go-zero: not found")

func openGoZero(tb testing.TB, cfg implConfig) *cacheImpl {
	if cfg.sentinel != nil {
		tb.Fatal("go-zero: its Redis configuration has no Sentinel type (library.sentinel)")
	}
	addr := redisAddr(tb)
	goZero.once.Do(func() {
		logx.Disable()
		goZero.rds = zredis.MustNewRedis(zredis.RedisConf{Host: addr, Type: zredis.NodeType},
			zredis.WithHook(&goZero.rt))
		goZero.stat = zcache.NewStat("bench")
	})
	rds, rt := goZero.rds, &goZero.rt
	if cfg.addr != "" {
		own := goZeroOwn(cfg.addr)
		rds, rt = own.rds, own.rt
	}
	c := zcache.NewNode(rds, syncx.NewSingleFlight(), goZero.stat, errZeroNotFound,
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
		rt:    rt,
	}
}

// goZeroOwn returns go-zero's client of addr, made on first use.
func goZeroOwn(addr string) *goZeroClient {
	goZero.mu.Lock()
	defer goZero.mu.Unlock()
	if c, ok := goZero.own[addr]; ok {
		return c
	}
	if goZero.own == nil {
		goZero.own = map[string]*goZeroClient{}
	}
	c := &goZeroClient{rt: &rtCounter{}}
	c.rds = zredis.MustNewRedis(zredis.RedisConf{Host: addr, Type: zredis.NodeType}, zredis.WithHook(c.rt))
	goZero.own[addr] = c
	return c
}
