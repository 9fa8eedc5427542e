package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Clear, in O(1): generations. Every key the cache reads and writes is
// derived by rkey from the cache's generation (wire.EntryKey: prefix + key
// in generation 0, so a cache never cleared keeps its layout). The
// generation is an integer in Redis (wire.GenerationKey), read by New.
// Clear increments it (INCR), switches this instance and announces the new
// generation on the cache's invalidation channel; every instance (with or
// without a local tier: all of them subscribe) switches when it hears it and
// clears its local tier. The entries of older generations are never read
// again and expire by their TTL; nothing scans.
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
//   - An instance switches when the announcement arrives: until then (the
//     invalidation bound, see the package comment) its reads may still hit
//     entries of the generation before, and its writes (Delete, Set, a
//     delayed double delete's first delete) go to that generation. A message
//     lost or a subscription gap re-reads the generation from Redis when the
//     subscription is back (the local tier is cleared then anyway).
//   - Versions of versioned writes live in their entries: Clear forgets
//     them, as it forgets the values. Bloom filters describe the database,
//     not the cache: Clear leaves them alone.
//   - Known gap: a Clear announced between New's read of the generation
//     and the subscription's first confirmation is not seen until the
//     next subscription gap (reading it again at the first Up left a GET
//     that Close waits for on a frozen node).
//   - User keys must not begin with byte 0xFF (wire.GenerationMark):
//     ErrInvalidKey.

// genReadTimeout bounds the read of the generation at New and after a
// subscription gap.
const genReadTimeout = time.Second

// rkey is the Redis key of key's entry in the current generation.
func (c *Cache[V]) rkey(key string) string {
	_, rkey := c.genKey(key)
	return rkey
}

// genKey is rkey with the generation it was built in.
func (c *Cache[V]) genKey(key string) (gen uint64, rkey string) {
	gen = c.gen.Load()
	return gen, wire.EntryKey(c.cfg.prefix, gen, key)
}

// Clear empties the whole cache, for every instance and local tier, in O(1):
// it moves the cache to a new generation (see clear.go), whose keys are all
// empty. Entries of the old generation expire by their TTL. Other instances
// switch within the invalidation bound; this one has switched when Clear
// returns. If ctx ends after Redis took the new generation, the switch and
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
	g, err := call.Do(c.calls, ctx, 0, func(ctx context.Context) (uint64, error) {
		return c.rdb.Incr(ctx, wire.GenerationKey(c.cfg.prefix)).Uint64()
	}, func(g uint64, err error) { // an INCR that landed after ctx ended
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

// readGeneration reads the cache's generation from Redis and moves to it.
func (c *Cache[V]) readGeneration(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, genReadTimeout)
	defer cancel()
	g, err := call.Do(c.calls, ctx, 0, func(ctx context.Context) (uint64, error) {
		return c.rdb.Get(ctx, wire.GenerationKey(c.cfg.prefix)).Uint64()
	}, nil)
	if errors.Is(err, redis.Nil) {
		return nil // never cleared
	}
	if err != nil {
		return fmt.Errorf("cacheguard: read the generation of %q: %w", c.cfg.prefix, err)
	}
	c.setGeneration(g)
	return nil
}

// rereadGeneration reads the generation again in the background after a
// subscription gap, in which an announcement may have been lost.
func (c *Cache[V]) rereadGeneration() {
	c.goBackground(func() {
		if err := c.readGeneration(c.closing); err != nil && c.closing.Err() == nil {
			c.report(logSubscription, "", c.redisError("", "read generation", err))
		}
	})
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
