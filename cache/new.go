package cache

import (
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/bus"
	"github.com/cacheguard/cacheguard/cache/internal/engine"
	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/generation"
	"github.com/cacheguard/cacheguard/cache/internal/lease"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/cache/internal/write"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// New returns a Cache of values of type V backed by rdb, which may be a
// *redis.Client, a *redis.ClusterClient, a failover client or a ring.
// values holds what depends on V (tags, a TTL function, a local store of
// your own; the zero value for none), opts every other setting. It returns
// an error wrapping ErrInvalidOption when an option makes no sense.
//
// New does no I/O, so Redis need not be up and a frozen server cannot
// stall it. What a cache needs to ask Redis first (the servers' version,
// ErrUnsupportedServer below 7.0, and the cache's generation) is asked in
// the background at once, together for every cache of rdb in the process;
// a call made before the answer came waits for it, at most until its
// context ends or the health-check timeout (WithInvalidationHealthCheck,
// default 1 s) since New has passed. Ready waits for it with a context of
// the caller's, for a service that wants to fail fast at start.
func New[V any](rdb redis.UniversalClient, values Values[V], opts ...Option) (*Cache[V], error) {
	cfg := defaultConfig()
	option.Apply(&cfg, opts)
	if values.LocalStore != nil {
		cfg.chooseLocalStore("Values.LocalStore")
		cfg.local.given = true
	}
	c, err := open(rdb, values, cfg)
	if err != nil {
		// A store given in values is the cache's from New on: a New that
		// fails closes it, however far it got (open closes only the
		// stores it built).
		if values.LocalStore != nil {
			values.LocalStore.Close()
		}
		return nil, err
	}
	return c, nil
}

// open is New once the options are applied: it checks them, then builds
// the components bottom up (transport, bus, keys and generations, local
// tier, leases, read engine, write path) and starts what runs in the
// background.
func open[V any](rdb redis.UniversalClient, values Values[V], cfg config) (*Cache[V], error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidArgument)
	}
	cfg.validateCopies(rdb)
	cfg.validateReplicas(rdb)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkValueType[V](cfg.codec); err != nil {
		return nil, err
	}
	c := &Cache[V]{cfg: cfg, observer: cfg.observer, life: life.New()}
	hooks := cfg.hooks
	c.rec = telemetry.New(telemetry.NewLogs(option.Logger(cfg.logger), cfg.logInterval, nil), c.errorHandler(), cfg.observer != nil, c.sizesOf(cfg.observer))
	c.redis = transport.New(rdb, transport.Breaker{Name: "cacheguard:" + cfg.prefix, Failures: cfg.breakerFailures, Cooldown: cfg.breakerCooldown}, c.rec, hooks)
	// Nothing above holds a resource; from here an error releases what
	// was made.
	fail := func(err error) (*Cache[V], error) {
		if c.tier != nil && values.LocalStore == nil {
			c.tier.Close() // a store built here may run goroutines of its own
		}
		c.life.Close()
		if c.gens != nil {
			c.gens.Close()
		}
		if c.hub != nil {
			_ = c.hub.Release(time.Time{}) // nothing subscribed yet: nothing to wait for
		}
		return nil, err
	}
	c.keys = generation.NewKeys(cfg.prefix, func() {
		if c.tier != nil {
			c.tier.Flush()
		}
	}, c.rec, hooks)
	format := entry.New(entry.Config[V]{Codec: cfg.codec, TTL: cfg.ttl, NullTTL: cfg.nullTTL, Jitter: cfg.jitter,
		MaxValueSize: cfg.maxValueSize, CompressAt: cfg.compressAt, TTLFunc: values.TTL, Tags: values.Tags}, c.rec, hooks)
	if cfg.local.enabled() {
		store, err := newLocalStore(cfg.local, values.LocalStore)
		if err != nil {
			return fail(err)
		}
		c.tier = local.New(local.Config{TTL: cfg.local.ttl, Stale: cfg.local.stale, Jitter: cfg.jitter,
			AdmitAll: cfg.local.admitAll, Hot: cfg.local.hot,
			HealthInterval: cfg.local.healthInterval, HealthTimeout: cfg.local.healthTimeout}, store, c.life, c.rec, hooks)
	}
	c.hub = pubsub.Acquire(rdb)
	channel := cfg.local.channel
	if channel == "" {
		channel = wire.InvalidationChannelPrefix + cfg.prefix
	}
	var err error
	if c.bus, err = bus.New(bus.Config{Prefix: cfg.prefix, Channel: channel, HealthInterval: cfg.local.healthInterval,
		HealthTimeout: cfg.local.healthTimeout}, c.redis, c.hub, c.life, c.rec, hooks); err != nil {
		return fail(err)
	}
	c.gens = generation.New(generation.Config{HealthInterval: cfg.local.healthInterval, HealthTimeout: cfg.local.healthTimeout},
		c.keys, c.redis, c.bus, c.life, c.rec, c.hub)
	c.leases = lease.New(cfg.lease, c.redis, c.hub, c.life, c.rec, hooks)
	ms := newMasters(rdb)
	parts := engine.Parts[V]{Format: format, Tier: c.tier, Keys: c.keys, Redis: c.redis, Copies: cfg.newCopies(ms),
		Replicas: cfg.newReplicas(rdb), Leases: c.leases, Life: c.life, Rec: c.rec, Hooks: hooks}
	if cfg.local.hot != nil {
		parts.Hot = cfg.local.hot
	}
	c.eng = engine.New(engine.Config{Wait: cfg.wait, LoadOnTimeout: cfg.loadOnTimeout, LoadTimeout: cfg.loadTimeout,
		SoftLoadTimeout: cfg.softLoadTimeout, EarlyBeta: cfg.earlyBeta, Filter: cfg.filter, MissFilter: cfg.missFilter,
		Limiter: cfg.limiter, FallbackLoads: cfg.fallbackLoads, MaxLoads: cfg.maxLoads}, parts)
	c.write = write.New(write.Config{LoadTimeout: cfg.loadTimeout}, parts, c.bus, c.eng)
	if c.tier != nil && cfg.local.tracking {
		// Armed before the invalidation channel is subscribed, so that the
		// connection carrying it is dialled armed once, not twice.
		if err := c.tier.StartTracking(c.hub, cfg.prefix, c.keys, c.eng.Forget); err != nil {
			return fail(err)
		}
	}
	// Every cache subscribes, with or without a local tier: the
	// generations Clear announces travel on the channel too.
	c.bus.Subscribe(listener[V]{c})
	return c, nil
}

// errorHandler is the recorder's error handler: WithErrorHandler's
// function, told an error about a key as a *KeyError.
func (c *Cache[V]) errorHandler() func(key string, err error) {
	fn := c.cfg.onError
	if fn == nil {
		return nil
	}
	return func(key string, err error) {
		if key != "" {
			err = &KeyError{Key: key, Err: err}
		}
		fn(err)
	}
}
