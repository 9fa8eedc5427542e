package engine

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/kind"
)

// A Get, top to bottom (cache.Get calls Front, then Remote): the argument
// checks, the hot-key count and the local tier (Front); the Bloom filter; then one GET, read solo when nobody
// else here reads the key (no flight, no allocation), shared otherwise
// (internal/flight: callers join only a read not sent yet, so none is
// handed a value older than its own start); the GET and the envelope decoded
// (read.go); on a miss the fill under a Redis lease (miss.go, fillmany.go); the answer
// admitted to the local tier if nothing invalidated the key since the read
// was sent; and when Redis fails, the outage policy (unavailable, below).

// GetMarked is Get that marks a local hit on the call's observation (the
// path of an observed Get), and says why a call that cannot start fails.
func (c *Engine[V]) GetMarked(ctx context.Context, key string, load Loader[V]) (V, error) {
	var zero V
	if load == nil {
		return zero, errs.ErrNilLoader
	}
	if err := c.Life.Check(ctx, key); err != nil {
		return zero, err
	}
	e, at := c.Front(ctx, key, load)
	if at != Hit {
		// Invalid cannot happen: the same checks passed just above, and a
		// Close since then is found by the read path.
		return c.Remote(ctx, key, load, e)
	}
	c.Rec.Reached(ctx, telemetry.TierLocal)
	if e.Null {
		return zero, errs.ErrNotFound
	}
	return e.Value, nil
}

// Where Front found a Get.
const (
	Invalid = iota // a bad argument, a closed cache or an ended context
	Miss           // not (freshly) in the local tier
	Hit            // a local hit, counted
)

// Front starts every Get: the argument checks, the hot-key count and the
// local tier. After a miss, e is the local entry past its freshness, if
// any, which an outage may still serve (Remote goes on from there). It
// records nothing when the checks fail, so that GetMarked can run them
// again to say why. cache.Get calls it itself, so that a local hit is
// answered through small functions only: through the larger read path it
// measured 25 % slower (a bigger frame to set up, and the value copied once
// more on the way out).
func (c *Engine[V]) Front(ctx context.Context, key string, load Loader[V]) (e *local.Entry[V], at int) {
	if load == nil || c.Life.Check(ctx, key) != nil {
		return nil, Invalid
	}
	if c.Hot != nil {
		c.Hot.Record(key)
	}
	if c.Tier == nil {
		return nil, Miss
	}
	fresh, e := c.Tier.Get(key)
	if !fresh {
		return e, Miss
	}
	c.Rec.LocalHits.Add(1) // Stats adds these to Hits
	return e, Hit
}

// Remote is the rest of a Get that the local tier did not answer: the
// Bloom filter, then Redis, shared with concurrent callers of the same key;
// stale is the local entry past its freshness, if any.
func (c *Engine[V]) Remote(ctx context.Context, key string, load Loader[V], stale *local.Entry[V]) (V, error) {
	var zero V
	if c.absent(ctx, c.cfg.Filter, key) {
		return zero, errs.ErrNotFound
	}
	gen, rkey := c.Keys.GenKey(key)
	var f *flight.Flight[V]
	lead := false
	// Nobody else reads the key here: read it solo. A caller that comes
	// meanwhile makes a flight standing for this read (EndSolo hands it
	// over), which this caller finishes, or on a miss leads the fill of.
	if sh, clock, ok := c.flights.StartSolo(rkey, c.Tier.Clock); ok {
		ended := false
		defer func() {
			if !ended { // a panic on the way: release whoever joined, re-raise
				if f := sh.EndSolo(rkey, false); f != nil {
					c.flights.Finish(f, flight.Result[V]{Gone: true})
				}
			}
		}()
		res, env, miss := c.read(ctx, key, rkey)
		f = sh.EndSolo(rkey, miss)
		ended = true
		if !miss {
			res, soft := c.refreshSoft(ctx, key, rkey, res, env, load)
			if f != nil { // a flight queued behind this read: it may go now
				c.flights.Finish(f, res)
			}
			if !soft {
				c.refreshAfterHit(ctx, key, rkey, res, env, load)
			}
			return c.answer(ctx, key, load, stale, c.sameGeneration(gen, res), clock)
		}
		c.leadMiss(ctx, f, key, rkey, load)
		lead = true
	}
	for ; ; f = nil {
		if f == nil {
			if f, lead = c.flights.Join(rkey); lead {
				c.lead(ctx, f, key, rkey, load)
			}
		}
		if !lead {
			f.Joined.Add(1)
			c.event(ctx, evShared, key, nil)
		}
		res, soft, err := c.waitFlight(ctx, f, stale)
		if err != nil {
			return zero, err
		}
		if soft { // the fill goes on without us (soft.go)
			if stale.Null {
				return zero, errs.ErrNotFound
			}
			return stale.Value, nil
		}
		if res.Gone {
			if lead && res.Err != nil {
				return zero, res.Err // our own context ended during the read
			}
			if err := ctx.Err(); err != nil {
				return zero, err
			}
			continue // the read we joined was abandoned: join or start another
		}
		if !lead {
			c.countJoined(ctx, res)
		} else if res.Tier == telemetry.TierFill && f.Joined.Load() > 0 {
			c.Rec.Shared(ctx)
		}
		return c.answer(ctx, key, load, stale, c.sameGeneration(gen, res), f.Clock())
	}
}

// sameGeneration keeps res out of the local tier if the cache moved to a
// new generation since its read chose its Redis key: the clock the read took
// after choosing it may postdate the move's clear of the tier.
func (c *Engine[V]) sameGeneration(gen uint64, res flight.Result[V]) flight.Result[V] {
	if c.Tier != nil && c.Keys.Gen() != gen {
		res.R.NoLocal = true
	}
	return res
}

// answer turns what a read found into Get's answer, admitting it to the
// local tier if nothing invalidated it since clock.
func (c *Engine[V]) answer(ctx context.Context, key string, load Loader[V], stale *local.Entry[V], res flight.Result[V], clock local.Clock) (V, error) {
	var zero V
	if res.Gone {
		return zero, res.Err // our own context ended during the read
	}
	if res.Err != nil {
		return c.unavailable(ctx, key, load, stale, res.Err)
	}
	c.Tier.Admit(key, res.R, res.R.Size, clock)
	if res.R.Null {
		return zero, errs.ErrNotFound
	}
	return res.R.V, nil
}

// countJoined counts, for a caller that joined another's flight, what the
// leader counted for itself, so that Stats add up to one per call.
func (c *Engine[V]) countJoined(ctx context.Context, res flight.Result[V]) {
	if res.Err != nil {
		return
	}
	c.Rec.Reached(ctx, res.Tier)
	switch {
	case res.Tier == telemetry.TierFill:
		c.Rec.Misses.Add(1)
		c.Rec.Shared(ctx)
	case res.R.Null:
		c.Rec.NullHits.Add(1)
	default:
		c.Rec.Hits.Add(1)
	}
}

// unavailable answers a Get when Redis failed: with the local tier's expired
// entry if it is within the stale bound (hot keys keep being served from
// memory rather than hitting the database) and was admitted since the tier
// was last cleared, else with a capped fallback load if configured, else
// with err.
func (c *Engine[V]) unavailable(ctx context.Context, key string, load Loader[V], e *local.Entry[V], err error) (V, error) {
	var zero V
	if errors.Is(err, errs.ErrRateLimited) {
		return c.rateLimited(e, err)
	}
	if !errors.Is(err, errs.ErrRedis) {
		return zero, err // the caller's context ended: nothing failed
	}
	if !c.Tier.ServableStale(e) {
		return c.fallbackLoad(ctx, key, load, err)
	}
	c.Rec.StaleServed.Add(1)
	c.Rec.Report(telemetry.StaleServed, key, kind.Errorf("cacheguard: cache: served a stale local entry: %w", err))
	if e.Null {
		return zero, errs.ErrNotFound
	}
	return e.Value, nil
}
