package benchmarks

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redis/rueidis"
)

// rueidis is used as a caller writes cache-aside on it: GET and decode
// (concurrent callers share round trips through its automatic pipelining);
// on a miss query the database and SET with a fixed TTL. With a local tier,
// the GET goes through DoCache: RESP3 client-side caching, the server
// invalidating the process's copy when the key changes, for localTTL at
// most. No singleflight, no absence caching, no jitter.
func openRueidis(tb testing.TB, cfg implConfig) *cacheImpl {
	c := newRueidis(tb, rueidisOption(tb, cfg))
	rt := &rtCounter{}
	get := func(ctx context.Context, key string) ([]byte, error) {
		cmd := c.B().Get().Key(key)
		if cfg.local {
			res := c.DoCache(ctx, cmd.Cache(), cfg.localTTL)
			if !res.IsCacheHit() {
				rt.count(doCacheMissCmds)
			}
			return res.AsBytes()
		}
		rt.count(1)
		return c.Do(ctx, cmd.Build()).AsBytes()
	}
	set := func(ctx context.Context, key string, r row) error {
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		rt.count(1)
		return c.Do(ctx, c.B().Set().Key(cfg.prefix+key).Value(rueidis.BinaryString(data)).Px(cfg.ttl).Build()).Error()
	}
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			var r row
			data, err := get(ctx, cfg.prefix+key)
			if err == nil {
				err = json.Unmarshal(data, &r)
				return r, err
			}
			if !rueidis.IsRedisNil(err) {
				return r, err
			}
			r, err = cfg.db.load(ctx, key)
			if err != nil {
				return r, err
			}
			return r, set(ctx, key, r)
		},
		set: set,
		del: func(ctx context.Context, key string) error {
			rt.count(1)
			return c.Do(ctx, c.B().Del().Key(cfg.prefix+key).Build()).Error()
		},
		close: func() {},
		rt:    rt,
	}
}

// doCacheMissCmds is what a DoCache that misses the process's copy sends in
// its one round trip: CLIENT CACHING YES, MULTI, PTTL, the GET, EXEC (the
// PTTL caps the copy's lifetime at the key's own).
const doCacheMissCmds = 5

// rueidisOption is the rueidis client option reaching cfg's server: the
// cluster's seeds, the Sentinels of its master, a server of the scenario's
// own, or the shared server.
func rueidisOption(tb testing.TB, cfg implConfig) rueidis.ClientOption {
	opt := rueidis.ClientOption{InitAddress: cfg.cluster}
	switch {
	case cfg.sentinel != nil:
		opt.InitAddress = cfg.sentinel.SentinelAddrs
		opt.Sentinel = rueidis.SentinelOption{MasterSet: cfg.sentinel.MasterName}
	case cfg.addr != "":
		opt.InitAddress = []string{cfg.addr}
	case len(cfg.cluster) == 0:
		opt.InitAddress = []string{redisAddr(tb)}
	}
	return opt
}

// newRueidis returns a rueidis client made with opt (its defaults
// otherwise; a cluster client when the addresses are cluster nodes), closed
// with the benchmark.
func newRueidis(tb testing.TB, opt rueidis.ClientOption) rueidis.Client {
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("rueidis: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}
