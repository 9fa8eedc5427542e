package cache

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// Set stores v under key with the configured (jittered) TTL, replacing any
// value or lease. A fill in flight for key is then refused, so it cannot
// overwrite v with what it loaded earlier.
func (c *Cache[V]) Set(ctx context.Context, key string, v V) error {
	if err := c.gens.Await(ctx); err != nil {
		return err
	}
	return c.write.Set(ctx, key, v)
}

// Delete removes the keys' entries (values, cached absences and leases), so
// that the next Get loads afresh and no fill started before Delete can land.
// Keys are removed with UNLINK, pipelined (one round trip per node on a
// cluster; a lone key's UNLINK shares a round trip with the other commands
// under way on its node); empty keys are rejected.
func (c *Cache[V]) Delete(ctx context.Context, keys ...string) error {
	if err := c.gens.Await(ctx); err != nil {
		return err
	}
	return c.write.Delete(ctx, keys...)
}

// SetVersioned stores v under key only if version is newer than the version
// of the entry there (an entry written by Get's fill or Set has version 0). It
// reports whether v was stored.
func (c *Cache[V]) SetVersioned(ctx context.Context, key string, v V, version uint64) (bool, error) {
	if err := c.gens.Await(ctx); err != nil {
		return false, err
	}
	return c.write.SetVersioned(ctx, key, v, version)
}

// DeleteVersioned replaces the entry with a tombstone carrying version, unless
// a newer version is stored; Get answers ErrNotFound for the tombstone until
// the null TTL runs out, and an older SetVersioned is refused meanwhile. Use
// it when the row was deleted at that version.
func (c *Cache[V]) DeleteVersioned(ctx context.Context, key string, version uint64) (bool, error) {
	if err := c.gens.Await(ctx); err != nil {
		return false, err
	}
	return c.write.DeleteVersioned(ctx, key, version)
}

// DeleteKeepingVersion removes the keys like Delete, except that a key whose
// entry carries a version (a SetVersioned value or a DeleteVersioned
// tombstone) keeps that version for hold: readers miss and reload as after
// Delete, while a SetVersioned older than or equal to the kept version is
// refused until hold has passed. After hold the key is empty and a versioned
// write of any version lands again, so hold must exceed the longest time a
// versioned write can take to reach Redis. Keys without a version are simply
// deleted.
func (c *Cache[V]) DeleteKeepingVersion(ctx context.Context, hold time.Duration, keys ...string) error {
	if err := c.gens.Await(ctx); err != nil {
		return err
	}
	return c.write.DeleteKeepingVersion(ctx, hold, keys...)
}

// MarkStale marks the keys' entries stale instead of removing them: readers
// get the old value at once while exactly one caller reloads it, and a stale
// value is served for at most maxStale. Entries that hold no value (a lease, a
// cached absence) are deleted, so an in-flight fill is refused as after
// Delete.
func (c *Cache[V]) MarkStale(ctx context.Context, maxStale time.Duration, keys ...string) error {
	if err := c.gens.Await(ctx); err != nil {
		return err
	}
	return c.write.MarkStale(ctx, maxStale, keys...)
}

// InvalidateTags makes every entry carrying one of tags (see Values.Tags) a miss,
// for every instance and local tier: readers load it again. It writes one key
// per tag, never scans: O(len(tags)). Once it returns, no Get sees an entry
// of those tags loaded before it was called, on this instance at once and on
// the others within the local tier's bound (the instances' clocks must agree
// within 100 ms: docs/cache.md, "Tags"). It costs at most one
// more load per key across the fleet, whatever the clocks: the reload of an
// invalidated entry records the tag times it read. No tags is nothing to
// do; an empty tag, one over 256 bytes or more than 1024 tags
// are an error wrapping ErrInvalidArgument.
func (c *Cache[V]) InvalidateTags(ctx context.Context, tags ...string) error {
	if err := c.gens.Await(ctx); err != nil {
		return err
	}
	return c.write.InvalidateTags(ctx, tags...)
}

// Clear empties the whole cache, for every instance and local tier, in O(1):
// it moves the cache to a new generation (docs/cache.md,
// "Clear"), whose keys are all empty. Entries of the old generation expire
// by their TTL. Other instances switch within the health bound H (see the
// package comment and docs/cache.md), even those that cannot hear the invalidation channel;
// this one has switched when Clear returns, even after Redis lost the
// generation (FLUSHALL, a restart without persistence). If ctx ends after
// Redis took the new generation, the switch and its announcement still
// happen.
func (c *Cache[V]) Clear(ctx context.Context) error {
	if err := c.gens.Await(ctx); err != nil {
		return err
	}
	return c.gens.Clear(ctx)
}

// Ready waits until the cache has heard from Redis once: the servers'
// version was checked and the cache's generation read (New does no I/O and
// asks both in the background). It returns nil then, an error wrapping
// ErrUnsupportedServer for a server below Redis 7.0 (every call returns it
// too), or, when ctx ends first, an error wrapping ctx's error and the last
// failure to reach Redis. Calling it is optional: a service that wants to
// fail fast at start calls it with a deadline of its own; a call made
// before Ready would return waits for the same answer, at most the health
// timeout (WithInvalidationHealthCheck) from New.
func (c *Cache[V]) Ready(ctx context.Context) error {
	return c.gens.Ready(ctx)
}

// Inserted tells the cache that rows were inserted under keys, after their
// commit: it adds the keys to the cache's filter (WithBloom or
// WithBloomOnMiss, when the filter takes adds: bloom.Fleet, bloom.Redis,
// bloom.Local) and deletes any cached absence of them, in Redis and in every
// instance's local tier, so that the next Get on any instance loads the new
// row instead of answering ErrNotFound from an absence cached before (a read
// that raced the insert, or a key the filter let by). With a bloom.Fleet
// filter, every instance finds the keys within its bound.
func (c *Cache[V]) Inserted(ctx context.Context, keys ...string) error {
	for _, f := range []Filter{c.cfg.filter, c.cfg.missFilter} {
		if a, ok := f.(interface {
			Add(ctx context.Context, keys ...string) error
		}); ok {
			if err := a.Add(ctx, keys...); err != nil {
				return kind.Errorf("cacheguard: cache: inserted: add to the filter: %w", err)
			}
		}
	}
	return c.Delete(ctx, keys...)
}
