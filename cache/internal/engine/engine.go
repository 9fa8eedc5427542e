// Package engine is the cache's read engine: Get and GetMany from the
// local tier to the decoded value (get.go), the per-key state machine after
// a miss that Get and GetMany share (fillmany.go: lease, wait, load, fill,
// heal; a refused fill read again), early and soft refreshes, the loads and
// their bounds, and what a read does when Redis fails.
package engine

import (
	"context"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/generation"
	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/lease"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"golang.org/x/sync/singleflight"
)

// Loader loads one key (cache.Loader), BatchLoader many (cache.BatchLoader).
type (
	Loader[V any]      = func(ctx context.Context, key string) (V, error)
	BatchLoader[V any] = func(ctx context.Context, keys []string) (map[string]V, error)
)

// Filter answers "definitely absent" (cache.Filter).
type Filter interface {
	MayContain(ctx context.Context, key string) (bool, error)
}

// Limiter admits a Redis read (load false) or a load of key, as a
// cache.KeyLimiter does.
type Limiter func(ctx context.Context, load bool, key string) (allowed bool, err error)

// Config is the engine's; New's caller checked it.
type Config struct {
	Wait            time.Duration // the wait budget for another holder's fill
	LoadOnTimeout   bool          // load uncached past the wait budget
	LoadTimeout     time.Duration // the hard limit of a load
	SoftLoadTimeout time.Duration // 0: none (soft.go)
	EarlyBeta       float64       // XFetch's beta; 0: no early refresh
	Filter          Filter        // in front of Redis; nil: none
	MissFilter      Filter        // after a Redis miss; nil: none
	Limiter         Limiter       // nil: none
	FallbackLoads   int           // loads allowed while Redis fails; 0: none
	MaxLoads        int           // loads at once; 0: no cap
}

// Engine reads one cache's keys. Make it with New.
type Engine[V any] struct {
	Parts[V]
	cfg Config

	// flights coalesces the Redis reads of one key (internal/flight).
	flights flight.Table[V]
	// refreshing: rkey -> header (string) of the entry being refreshed
	// here (refresh.go).
	refreshing sync.Map
	// held: leases taken here and not yet given up, which Close releases
	// (held.go).
	held          sync.Map
	fallbackSem   chan struct{} // nil when off
	loadSem       chan struct{} // WithMaxLoads; nil when off
	fallbackGroup singleflight.Group
}

// Parts are the components an Engine reads through.
type Parts[V any] struct {
	Format *entry.Format[V]
	Tier   *local.Tier[V] // nil: no local tier
	Hot    local.HotKeys  // nil: none
	Keys   *generation.Keys
	Redis  *transport.Redis
	Copies *transport.Copies // nil: no hot-key copies
	// Replicas: the replication barrier of writes; nil unless reads go to
	// replicas.
	Replicas *transport.Replicas
	Leases   *lease.Leases
	Life     *life.Group
	Rec      *telemetry.Recorder
	Hooks    *hook.Set
}

// New returns the engine of cfg over p.
func New[V any](cfg Config, p Parts[V]) *Engine[V] {
	e := &Engine[V]{Parts: p, cfg: cfg}
	if cfg.MaxLoads > 0 {
		e.loadSem = make(chan struct{}, cfg.MaxLoads)
	}
	if cfg.FallbackLoads > 0 {
		e.fallbackSem = make(chan struct{}, cfg.FallbackLoads)
	}
	return e
}

// Forget makes callers that arrive after a write start a fallback load of
// their own instead of joining one that began before it (and may have
// loaded the old row), and lets them read without waiting for a read sent
// before the write (internal/flight; nobody joins a read already sent
// anyway).
func (c *Engine[V]) Forget(keys []string) {
	for _, k := range keys {
		c.flights.Forget(c.Keys.Key(k))
		c.fallbackGroup.Forget(k)
	}
}

// Busy describes the flight table's shards that are not idle (tests).
func (c *Engine[V]) Busy() []string { return c.flights.Busy() }
