package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// New returns a Cache backed by rdb, which may be a *redis.Client, a
// *redis.ClusterClient, a failover client or a ring. It returns an error
// wrapping ErrInvalidOption when an option makes no sense.
//
// New asks Redis twice, for its version (ErrUnsupportedServer below 7.0) and
// for the cache's generation; each question waits at most the health-check
// timeout (WithInvalidationHealthCheck, default 1 s), whatever rdb's own
// timeouts (a ring's shards excepted: they are asked as they are). Redis
// need not be up: a question left unanswered is asked again in the
// background.
func New[V any](rdb redis.UniversalClient, opts ...Option) (*Cache[V], error) {
	cfg := defaultConfig()
	option.Apply(&cfg, opts)
	c, err := open[V](rdb, cfg)
	if err != nil {
		// A store given with WithLocalStore is the cache's from New on:
		// a New that fails closes it, however far it got (open closes
		// only the stores it built).
		if s, ok := cfg.local.store.(interface{ Close() }); ok {
			s.Close()
		}
		return nil, err
	}
	return c, nil
}

// open is New once the options are applied.
func open[V any](rdb redis.UniversalClient, cfg config) (*Cache[V], error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidOption)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkValueType[V](cfg.codec); err != nil {
		return nil, err
	}
	ttlFunc, err := ttlFuncOf[V](cfg)
	if err != nil {
		return nil, err
	}
	tagFn, err := tagFuncOf[V](cfg.tags)
	if err != nil {
		return nil, err
	}
	source, err := newSourceID()
	if err != nil {
		return nil, err
	}
	// Nothing above holds a resource; from here an error releases what
	// was made.
	syncRDB, closeSync := newSyncClient(rdb)
	if err := checkServerVersion(syncRDB, cfg.local.healthTimeout); err != nil {
		_ = closeSync()
		return nil, err
	}
	c := &Cache[V]{syncRDB: syncRDB, closeSync: closeSync, rdb: rdb, cfg: cfg, codec: newValueCodec[V](cfg.codec),
		log: option.Logger(cfg.logger), hot: cfg.local.hot, ttlFunc: ttlFunc, tagFn: tagFn, source: source}
	c.calls = call.For(rdb).Counting(&c.flight)
	c.logs = newLogAggregator(c.log, cfg.logInterval, nil)
	c.hooks = cfg.hooks
	c.subscribed = make(chan struct{})
	c.channel = cfg.local.channel
	if c.channel == "" {
		c.channel = wire.InvalidationChannelPrefix + cfg.prefix
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		o := cc.Options()
		c.replicaReads = o.ReadOnly || o.RouteByLatency || o.RouteRandomly
	}
	if cfg.breakerFailures > 0 {
		c.breaker = newBreaker(cfg.prefix, cfg.breakerFailures, cfg.breakerCooldown, func(from, to gobreaker.State) {
			c.report(logBreaker, "", fmt.Errorf("cacheguard: cache: redis circuit %s -> %s", from, to))
		})
	}
	if cfg.maxLoads > 0 {
		c.loadSem = make(chan struct{}, cfg.maxLoads)
	}
	if cfg.fallbackLoads > 0 {
		c.fallbackSem = make(chan struct{}, cfg.fallbackLoads)
	}
	c.closing, c.close = context.WithCancel(context.Background())
	if err := c.syncGeneration(context.Background()); err != nil {
		// Synced again every health interval (generation.go).
		c.report(logGeneration, "", c.redisError("", "sync generation", err))
	}
	c.hub = pubsub.Acquire(rdb)
	if cfg.local.enabled() {
		if err := c.startLocal(); err != nil {
			if c.local != nil && cfg.local.store == nil {
				c.local.Close() // a store built here may run goroutines of its own
			}
			c.close()
			_ = c.closeSync()
			_ = c.hub.Release(time.Time{}) // nothing subscribed yet: nothing to wait for
			return nil, err
		}
	} else {
		c.subscribe() // for the generations Clear announces (clear.go)
	}
	c.goBackground(c.runGenerationSync)
	return c, nil
}
