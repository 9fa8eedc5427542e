package cache

import (
	"context"
)

// solo reads rkey without a flight when nobody else is reading it (see
// flight.go). answered: res is the answer, read after clock. Otherwise the
// read became a flight: f is the one to wait on (lead: this caller started
// its fill), or nil when there was no solo read or it must start over.
func (c *Cache[V]) solo(ctx context.Context, key, rkey string, load Loader[V]) (f *flight[V], lead bool, res flightResult[V], clock localClock, answered bool) {
	sh, clock, ok := c.flights.startSolo(rkey, c.localClock)
	if !ok {
		return nil, false, res, clock, false
	}
	ended := false
	defer func() {
		if !ended { // a panic on the way: release whoever joined, re-raise
			if f := sh.endSolo(rkey, false); f != nil {
				c.flights.finish(f, flightResult[V]{gone: true})
			}
		}
	}()
	res, env, miss := c.read(ctx, key, rkey)
	f = sh.endSolo(rkey, miss)
	ended = true
	if !miss {
		res, soft := c.refreshSoft(ctx, key, rkey, res, env, load)
		if f != nil { // a flight queued behind this read: it may go now
			c.flights.finish(f, res)
		}
		if !soft {
			c.refreshAfterHit(ctx, key, rkey, res, env, load)
		}
		return nil, false, res, clock, true
	}
	c.leadMiss(ctx, f, key, rkey, load)
	return f, true, res, clock, false
}

// lead runs the read of flight f: it waits for the key's read under way
// here, if any, then one GET, and on a miss the fill (which ends the flight
// when it is done). Whatever happens, f ends.
func (c *Cache[V]) lead(ctx context.Context, f *flight[V], key, rkey string, load Loader[V]) {
	ended := false
	defer func() {
		if !ended { // a panic on the way: release the callers, re-raise
			c.flights.finish(f, flightResult[V]{gone: true})
		}
	}()
	if f.prev != nil {
		c.event(ctx, evShared, key, nil) // queued behind the read under way
	}
	if err := f.send(ctx, c.localClock); err != nil {
		ended = true
		c.flights.finish(f, flightResult[V]{gone: true, err: err})
		return
	}
	res, env, miss := c.read(ctx, key, rkey)
	ended = true
	if !miss {
		res, soft := c.refreshSoft(ctx, key, rkey, res, env, load)
		c.flights.finish(f, res)
		if !soft {
			c.refreshAfterHit(ctx, key, rkey, res, env, load)
		}
		return
	}
	c.leadMiss(ctx, f, key, rkey, load)
}

// leadMiss runs the rest of flight f's read after a miss: the fill, which
// ends f when it is done. Whatever happens, f ends.
func (c *Cache[V]) leadMiss(ctx context.Context, f *flight[V], key, rkey string, load Loader[V]) {
	filling := false
	defer func() {
		if !filling { // a panic of the filter's: release the callers, re-raise
			c.flights.finish(f, flightResult[V]{gone: true})
		}
	}()
	c.stats.misses.Add(1)
	c.observed(ctx, TierFill)
	absent := c.absent(ctx, c.cfg.missFilter, key)
	filling = true
	if absent {
		c.flights.finish(f, flightResult[V]{r: result[V]{null: true, noLocal: true}, tier: TierFill})
		return
	}
	c.sharedFill(ctx, f, key, rkey, load) // which ends the flight
}

// refreshAfterHit starts an early refresh of a value just read from Redis,
// if it is due (after the read's callers have their answer).
func (c *Cache[V]) refreshAfterHit(ctx context.Context, key, rkey string, res flightResult[V], env envelope, load Loader[V]) {
	if res.tier == TierRedis && !res.r.null {
		c.maybeRefresh(ctx, key, rkey, env, load)
	}
}
