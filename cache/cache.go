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

// Get returns the value for key, loading it with load on a miss.
//
// The read path: the local tier (hot keys only), then the Bloom filter (if
// any) may answer "absent" at once; then one GET. Callers in this process
// share a read only if it is not sent yet, so none is handed a value older
// than its own start, and a key has one read and one fill under way here at
// a time; on a miss the fill takes a Redis lease so that callers in other
// processes wait for it instead of loading too. A fill refused because a
// write landed meanwhile reads the key again. A missing row (load returns
// ErrNotFound) is cached as an absence for the null TTL and reported as
// ErrNotFound. A loader error is returned to every caller sharing the fill,
// and nothing is cached.
//
// Get returns ErrWaitTimeout when another process holds the lease longer than
// the wait budget, and an error wrapping ErrRedis when Redis fails: the
// database is not queried in either case (see WithLoadOnWaitTimeout).
func (c *Cache[V]) Get(ctx context.Context, key string, load Loader[V]) (V, error) {
	if c.observer != nil {
		return c.observeGet(ctx, key, load)
	}
	return c.eng.Get(ctx, key, load)
}

// BatchLoader loads the rows for keys in one go. Keys missing from the
// returned map are missing rows: they are cached as absences.
type BatchLoader[V any] func(ctx context.Context, keys []string) (map[string]V, error)

// GetMany returns the values for keys, loading all misses with one call to
// load. Keys that exist nowhere are absent from the result (not an error).
//
// Errors are per key. Keys that succeed are in the map whatever happened to
// the others; when some keys fail, the error is a *BatchError that holds the
// error of each failed key (Err, Keys) and lets errors.Is see all of them:
// errors.Is(err, ErrWaitTimeout) for a key whose lease another caller held
// past the wait budget (WithWait), ErrRedis for a key Redis failed and no
// stale entry or fallback load could answer, the loader's error for every key
// of the loader call that returned it, the context's error for keys left
// when ctx ended. A call that cannot start at all (a nil loader, an empty
// key, a closed cache, a context already ended) returns a nil map and that
// plain error, as Get would. A key of another Redis type (foreign data) is a
// miss, overwritten by the fill, not an error.
//
// Reads and lease writes are pipelined: one round trip per Redis node for the
// reads, one for the leases, one for the fills. Keys whose lease another
// caller holds are waited for (up to WithWait) and retried together, after
// the keys whose leases GetMany took are loaded. The fill runs detached from
// ctx, as a Get's does: if ctx ends first, GetMany returns what was decided
// and the fill goes on for whoever joined its reads; its leases are filled
// or released when it ends (Close cancels it and waits).
//
// GetMany shares Get's engine key by key: a key whose read by a Get or
// another GetMany in this process is not sent yet is joined, and one whose
// read is under way is read again after it, not loaded again; hits get the
// same early refresh; fills are admitted to the local tier; a refused fill
// reads its key again; and when Redis fails (or the breaker is open), each
// key left without an answer gets Get's outage policy: a stale local entry,
// else a capped fallback load of that key, else the error.
func (c *Cache[V]) GetMany(ctx context.Context, keys []string, load BatchLoader[V]) (map[string]V, error) {
	if c.observer != nil {
		return c.observeGetMany(ctx, keys, load)
	}
	return c.getMany(ctx, keys, load)
}

func (c *Cache[V]) getMany(ctx context.Context, keys []string, load BatchLoader[V]) (map[string]V, error) {
	out, failed, err := c.eng.GetMany(ctx, keys, load)
	if err != nil {
		return nil, err
	}
	return out, newBatchError(keys, failed)
}
