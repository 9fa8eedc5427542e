package cache

import (
	"context"

	"github.com/cacheguard/cacheguard/cache/internal/bus"
	"github.com/cacheguard/cacheguard/cache/internal/engine"
	"github.com/cacheguard/cacheguard/cache/internal/generation"
	"github.com/cacheguard/cacheguard/cache/internal/lease"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/cache/internal/write"
	"github.com/cacheguard/cacheguard/internal/pubsub"
)

// Loader loads the value for key from the source of truth. It returns
// ErrNotFound (or an error wrapping it) when there is no such row.
type Loader[V any] func(ctx context.Context, key string) (V, error)

// Cache is a read-through cache for values of type V in front of a loader.
// It is safe for concurrent use. Create it with New and release it with Close.
//
// A Cache is a facade over its components (each a package of
// cache/internal): the transport to Redis, the key naming and its
// generation, the invalidation bus, the local tier, the lease protocol, the
// read engine and the write path, which share one lifetime and one
// telemetry recorder.
type Cache[V any] struct {
	cfg      config
	life     *life.Group         // the background work Close cancels and waits for
	rec      *telemetry.Recorder // counters and reports
	redis    *transport.Redis    // every command to Redis
	hub      *pubsub.Hub         // the client's shared pub/sub connections
	bus      *bus.Bus            // the invalidation channel
	keys     *generation.Keys    // key naming in the current generation
	gens     *generation.Generations
	tier     *local.Tier[V] // nil: no local tier
	leases   *lease.Leases
	eng      *engine.Engine[V]
	write    *write.Writer[V]
	observer Observer // nil: none
}

// BatchLoader loads the rows for keys in one go. Keys missing from the
// returned map are missing rows: they are cached as absences.
type BatchLoader[V any] func(ctx context.Context, keys []string) (map[string]V, error)
