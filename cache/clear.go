package cache

import (
	"context"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// Clear, in O(1): generations. Every key the cache reads and writes is
// derived by rkey from the cache's generation (wire.EntryKey: prefix + key
// in generation 0, so a cache never cleared keeps its layout). The
// generation is an integer in Redis (wire.GenerationKey), synced by New and
// every health interval (generation.go). Clear moves it to a generation
// never used before (clearScript: above the key's, above this instance's
// and at least the Redis server's clock in microseconds, so a FLUSHALL or a
// restart that lost the key does not make it reuse one), switches this
// instance and announces the new generation on the cache's invalidation
// channel; every instance (with or without a local tier: all of them
// subscribe) switches when it hears it, or at its next sync, and clears its
// local tier. The entries of older generations are never read again and
// expire by their TTL; nothing scans.
//
// What follows from the model:
//
//   - A fill whose lease was taken in an older generation lands, if at all,
//     under that generation's key, which no reader reads any more: it cannot
//     become visible in the new one. Its callers (who called before the
//     Clear) get its value, which the local tier does not admit.
//   - A read started after the switch does not join a read of an older
//     generation (flights are per Redis key). Right after a Clear every key
//     is a miss: the leases keep it to one load per key across instances.
//   - An instance switches when the announcement arrives, or at its next
//     sync if it does not (a message lost, a subscription down or refused,
//     a Clear announced before its subscription was first confirmed): within
//     the health bound H (interval + timeout, see the package comment).
//     Until then its reads may still hit entries of the generation before,
//     and its writes (Delete, Set, a delayed double delete's first delete)
//     go to that generation: such a Delete does not reach an entry another
//     instance filled in the new generation before this one switched.
//   - Redis forgetting the generation (FLUSHALL, a restart without
//     persistence, a failover to a replica that missed it) is found by the
//     next sync of an instance that had one, which moves every instance to
//     a new generation (generation.go), so instances that disagreed
//     meanwhile agree again within H of the loss (2H for an instance that
//     cannot hear the channel either).
//   - Versions of versioned writes live in their entries: Clear forgets
//     them, as it forgets the values. Bloom filters describe the database,
//     not the cache: Clear leaves them alone.
//   - User keys must not begin with byte 0xFF (wire.GenerationMark):
//     ErrInvalidKey.

// Clear empties the whole cache, for every instance and local tier, in O(1):
// it moves the cache to a new generation (see clear.go), whose keys are all
// empty. Entries of the old generation expire by their TTL. Other instances
// switch within the health bound H (see the package comment), even those
// that cannot hear the invalidation channel; this one has switched when
// Clear returns, even after Redis lost the generation (FLUSHALL, a restart
// without persistence). If ctx ends after Redis took the new generation, the switch and
// its announcement still happen.
func (c *Cache[V]) Clear(ctx context.Context) error {
	if c.isClosed() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done, err := c.allow("")
	if err != nil {
		return err
	}
	own := c.gen.Load()
	g, err := call.Do(c.calls, ctx, 0, func(ctx context.Context) (uint64, error) {
		return clearScript.Run(ctx, c.rdb, []string{wire.GenerationKey(c.cfg.prefix)}, own).Uint64()
	}, func(g uint64, err error) { // a Clear that landed after ctx ended
		if err == nil {
			c.cleared(ctx, g)
		}
	})
	err = callerErr(ctx, err)
	done(err)
	if err != nil {
		return c.redisError("", "clear", err)
	}
	c.cleared(ctx, g)
	return nil
}

// cleared switches to generation g, which this instance made, and tells the
// others.
func (c *Cache[V]) cleared(ctx context.Context, g uint64) {
	c.stats.clears.Add(1)
	c.setGeneration(g)
	c.publish(ctx, []string{wire.GenerationAnnouncement(g)})
}

// setGeneration moves the cache to generation g if it is newer, clearing the
// local tier; it reports whether it moved.
func (c *Cache[V]) setGeneration(g uint64) bool {
	for {
		cur := c.gen.Load()
		if g <= cur {
			return false
		}
		if c.gen.CompareAndSwap(cur, g) {
			break
		}
	}
	c.stats.generations.Add(1)
	if c.local != nil {
		c.flushLocal()
	}
	if c.hooks != nil && c.hooks.onGeneration != nil {
		c.hooks.onGeneration(g)
	}
	return true
}

// onAnnouncements applies the generations announced among an invalidation
// message's keys.
func (c *Cache[V]) onAnnouncements(keys []string) {
	for _, k := range keys {
		if g, ok := wire.ParseGenerationAnnouncement(k); ok {
			c.setGeneration(g)
		}
	}
}
