package engine

import (
	"context"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// lead runs the read of flight f: it waits for the key's read under way
// here, if any, then one GET, and on a miss the fill (which ends the flight
// when it is done). Whatever happens, f ends.
func (c *Engine[V]) lead(ctx context.Context, f *flight.Flight[V], key, rkey string, load Loader[V]) {
	ended := false
	defer func() {
		if !ended { // a panic on the way: release the callers, re-raise
			c.flights.Finish(f, flight.Result[V]{Gone: true})
		}
	}()
	if f.Prev() {
		c.event(ctx, evShared, key, nil) // queued behind the read under way
	}
	if err := f.Send(ctx, c.Tier.Clock); err != nil {
		ended = true
		c.flights.Finish(f, flight.Result[V]{Gone: true, Err: err})
		return
	}
	res, env, miss := c.read(ctx, key, rkey)
	ended = true
	if !miss {
		res, soft := c.refreshSoft(ctx, key, rkey, res, env, load)
		c.flights.Finish(f, res)
		if !soft {
			c.refreshAfterHit(ctx, key, rkey, res, env, load)
		}
		return
	}
	c.leadMiss(ctx, f, key, rkey, load)
}

// leadMiss runs the rest of flight f's read after a miss: the fill, which
// ends f when it is done. Whatever happens, f ends.
func (c *Engine[V]) leadMiss(ctx context.Context, f *flight.Flight[V], key, rkey string, load Loader[V]) {
	filling := false
	defer func() {
		if !filling { // a panic of the filter's: release the callers, re-raise
			c.flights.Finish(f, flight.Result[V]{Gone: true})
		}
	}()
	c.Rec.Misses.Add(1)
	c.Rec.Reached(ctx, telemetry.TierFill)
	absent := c.absent(ctx, c.cfg.MissFilter, key)
	filling = true
	if absent {
		c.flights.Finish(f, flight.Result[V]{R: entry.Result[V]{Null: true, NoLocal: true}, Tier: telemetry.TierFill})
		return
	}
	c.sharedFill(ctx, f, key, rkey, load) // which ends the flight
}
