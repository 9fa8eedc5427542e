package cache

import (
	"context"

	"github.com/cacheguard/cacheguard/cache/internal/engine"
)

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
	e, at := c.eng.Front(ctx, key, load) // a local hit returns from here
	switch {
	case at == engine.Miss:
		if err := c.gens.Await(ctx); err != nil {
			var zero V
			return zero, err
		}
		return c.eng.Remote(ctx, key, load, e)
	case at == engine.Invalid:
		return c.eng.GetMarked(ctx, key, load) // which says why
	case e.Null:
		var zero V
		return zero, ErrNotFound
	}
	return e.Value, nil
}

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
