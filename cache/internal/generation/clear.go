package generation

import (
	"context"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// Clear, in O(1): generations. Every key the cache reads and writes is
// derived by Key from the cache's generation (wire.EntryKey: prefix + key
// in generation 0, so a cache never cleared keeps its layout). The
// generation is an integer in Redis (wire.GenerationKey), synced after New and
// every health interval (sync.go). Clear moves it to a generation
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
//     the health bound H (interval + timeout, see docs/cache.md).
//     Until then its reads may still hit entries of the generation before,
//     and its writes (Delete, Set, a delayed double delete's first delete)
//     go to that generation: such a Delete does not reach an entry another
//     instance filled in the new generation before this one switched.
//   - Redis forgetting the generation (FLUSHALL, a restart without
//     persistence, a failover to a replica that missed it) is found by the
//     next sync of an instance that had one, which moves every instance to
//     a new generation (sync.go), so instances that disagreed
//     meanwhile agree again within H of the loss (2H for an instance that
//     cannot hear the channel either).
//   - Versions of versioned writes live in their entries: Clear forgets
//     them, as it forgets the values. Bloom filters describe the database,
//     not the cache: Clear leaves them alone.
//   - User keys must not begin with byte 0xFF (wire.GenerationMark):
//     ErrInvalidArgument.

// Clear moves the cache to a new generation and announces it (cache.Clear
// documents the promise). If ctx ends after Redis took the new generation,
// the switch and its announcement still happen.
func (c *Generations) Clear(ctx context.Context) error {
	if c.life.Closed() {
		return errs.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done, err := c.redis.Allow("")
	if err != nil {
		return err
	}
	own := c.keys.Gen()
	g, err := call.Do(c.redis.Calls(), ctx, 0, func(ctx context.Context) (uint64, error) {
		return clearScript.Run(ctx, c.redis.Client(), []string{wire.GenerationKey(c.keys.Prefix())}, own).Uint64()
	}, func(g uint64, err error) { // a Clear that landed after ctx ended
		if err == nil {
			c.cleared(ctx, g)
		}
	})
	err = errs.Caller(ctx, err)
	done(err)
	if err != nil {
		return c.redis.Error("", "clear", err)
	}
	c.cleared(ctx, g)
	return nil
}

// cleared switches to generation g, which this instance made, and tells the
// others.
func (c *Generations) cleared(ctx context.Context, g uint64) {
	c.rec.Clears.Add(1)
	c.keys.Move(g)
	c.bus.Publish(ctx, []string{wire.GenerationAnnouncement(g)})
}
