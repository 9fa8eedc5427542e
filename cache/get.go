package cache

import (
	"context"
	"errors"
	"fmt"
)

// result is what a shared fill hands to every caller waiting on it.
type result[V any] struct {
	v    V
	null bool
	size int // encoded size, the local tier's cost
	// noLocal keeps the result out of the local tier: its fill was refused
	// (a write raced it), or the entry is stale or being refreshed.
	noLocal bool
	// tagged is a tagged entry's tag section, kept by the local tier.
	tagged *tagStamp
}

// Get returns the value for key, loading it with load on a miss.
//
// The read path: the Bloom filter (if any) may answer "absent" at once; then
// one GET. Callers in this process share a read only if it is not sent yet
// (flight.go), so none is handed a value older than its own start, and a
// key has one read and one fill under way here at a time; on a miss the
// fill takes a Redis lease so that callers in other processes wait for it
// instead of loading too. A fill refused because a write landed meanwhile
// reads the key again (refused.go). A missing row (load returns
// ErrNotFound) is cached as an absence for the null TTL and reported as
// ErrNotFound. A loader error is returned to every caller sharing the fill,
// and nothing is cached.
//
// Get returns ErrWaitTimeout when another process holds the lease longer than
// the wait budget, and an error wrapping ErrRedis when Redis fails: the
// database is not queried in either case (see WithLoadOnWaitTimeout).
func (c *Cache[V]) Get(ctx context.Context, key string, load Loader[V]) (V, error) {
	if c.cfg.observer != nil {
		return c.observeGet(ctx, key, load)
	}
	// A local hit returns from here, through small functions only: through
	// the larger read path it measured 25 % slower (a bigger frame to set
	// up, and the value copied once more on the way out).
	e, at := c.front(ctx, key, load)
	switch {
	case at == frontMiss:
		return c.remote(ctx, key, load, e)
	case at == frontInvalid:
		return c.get(ctx, key, load) // which reports why
	case e.Null:
		var zero V
		return zero, ErrNotFound
	}
	return e.Value, nil
}

// get is Get without the observer (observeGet wraps it).
func (c *Cache[V]) get(ctx context.Context, key string, load Loader[V]) (V, error) {
	var zero V
	if load == nil {
		return zero, ErrNilLoader
	}
	if err := c.check(ctx, key); err != nil {
		return zero, err
	}
	e, at := c.front(ctx, key, load)
	if at != frontHit {
		// frontInvalid cannot happen: the same checks passed just above,
		// and a Close since then is found by the read path.
		return c.remote(ctx, key, load, e)
	}
	c.observed(ctx, TierLocal)
	if e.Null {
		return zero, ErrNotFound
	}
	return e.Value, nil
}

// Where front found a Get.
const (
	frontInvalid = iota // a bad argument, a closed cache or an ended context
	frontMiss           // not (freshly) in the local tier
	frontHit            // a local hit, counted
)

// front starts every Get: the argument checks, the hot-key count and the
// local tier. After a miss, e is the local entry past its freshness, if
// any, which an outage may still serve. It records nothing when the checks
// fail, so that get can run them again to say why.
func (c *Cache[V]) front(ctx context.Context, key string, load Loader[V]) (e *LocalEntry[V], at int) {
	if load == nil || c.check(ctx, key) != nil {
		return nil, frontInvalid
	}
	if c.hot != nil {
		c.hot.Record(key)
	}
	if c.local == nil {
		return nil, frontMiss
	}
	fresh, e := c.localGet(key)
	if !fresh {
		return e, frontMiss
	}
	c.stats.localHits.Add(1) // Stats adds these to Hits
	return e, frontHit
}

// remote is the rest of a Get that the local tier did not answer: the
// Bloom filter, then Redis, shared with concurrent callers of the same key;
// stale is the local entry past its freshness, if any.
func (c *Cache[V]) remote(ctx context.Context, key string, load Loader[V], stale *LocalEntry[V]) (V, error) {
	var zero V
	if c.absent(ctx, c.cfg.filter, key) {
		return zero, ErrNotFound
	}
	gen, rkey := c.genKey(key)
	f, lead, res, clock, answered := c.solo(ctx, key, rkey, load)
	if answered {
		return c.answer(ctx, key, load, stale, c.sameGeneration(gen, res), clock)
	}
	for ; ; f = nil {
		if f == nil {
			if f, lead = c.flights.join(rkey); lead {
				c.lead(ctx, f, key, rkey, load)
			}
		}
		if !lead {
			f.joined.Add(1)
			c.event(ctx, evShared, key, nil)
		}
		res, soft, err := c.waitFlight(ctx, f, stale)
		if err != nil {
			return zero, err
		}
		if soft { // the fill goes on without us (soft.go)
			if stale.Null {
				return zero, ErrNotFound
			}
			return stale.Value, nil
		}
		if res.gone {
			if lead && res.err != nil {
				return zero, res.err // our own context ended during the read
			}
			if err := ctx.Err(); err != nil {
				return zero, err
			}
			continue // the read we joined was abandoned: join or start another
		}
		if !lead {
			c.countJoined(ctx, res)
		} else if res.tier == TierFill && f.joined.Load() > 0 {
			c.observedShared(ctx)
		}
		return c.answer(ctx, key, load, stale, c.sameGeneration(gen, res), f.clock)
	}
}

// sameGeneration keeps res out of the local tier if the cache moved to a
// new generation since its read chose its Redis key: the clock the read took
// after choosing it may postdate the move's clear of the tier (clear.go).
func (c *Cache[V]) sameGeneration(gen uint64, res flightResult[V]) flightResult[V] {
	if c.local != nil && c.gen.Load() != gen {
		res.r.noLocal = true
	}
	return res
}

// answer turns what a read found into Get's answer, admitting it to the
// local tier if nothing invalidated it since clock.
func (c *Cache[V]) answer(ctx context.Context, key string, load Loader[V], stale *LocalEntry[V], res flightResult[V], clock localClock) (V, error) {
	var zero V
	if res.gone {
		return zero, res.err // our own context ended during the read
	}
	if res.err != nil {
		return c.unavailable(ctx, key, load, stale, res.err)
	}
	c.admit(key, res.r, res.r.size, clock)
	if res.r.null {
		return zero, ErrNotFound
	}
	return res.r.v, nil
}

// countJoined counts, for a caller that joined another's flight, what the
// leader counted for itself, so that Stats add up to one per call.
func (c *Cache[V]) countJoined(ctx context.Context, res flightResult[V]) {
	if res.err != nil {
		return
	}
	c.observed(ctx, res.tier)
	switch {
	case res.tier == TierFill:
		c.stats.misses.Add(1)
		c.observedShared(ctx)
	case res.r.null:
		c.stats.nullHits.Add(1)
	default:
		c.stats.hits.Add(1)
	}
}

// unavailable answers a Get when Redis failed: with the local tier's expired
// entry if it is within the stale bound (hot keys keep being served from
// memory rather than hitting the database) and was admitted since the tier
// was last cleared, else with a capped fallback load if configured, else
// with err.
func (c *Cache[V]) unavailable(ctx context.Context, key string, load Loader[V], e *LocalEntry[V], err error) (V, error) {
	var zero V
	if errors.Is(err, ErrRateLimited) {
		return c.rateLimited(e, err)
	}
	if !errors.Is(err, ErrRedis) {
		return zero, err // the caller's context ended: nothing failed
	}
	if !c.servableStale(e) {
		return c.fallbackLoad(ctx, key, load, err)
	}
	c.stats.staleServed.Add(1)
	c.report(logStaleServed, key, fmt.Errorf("cacheguard: cache: served a stale local entry: %w", err))
	if e.Null {
		return zero, ErrNotFound
	}
	return e.Value, nil
}
