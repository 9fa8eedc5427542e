package engine

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// The soft load timeout. WithLoadTimeout is the hard limit of a load: past
// it the load is cancelled and nothing is cached. WithSoftLoadTimeout(d) is
// how long a Get that holds an older value is willing to wait for a fresh
// one:
//
//   - an entry read from Redis that is due for a reload (stale after
//     MarkStale, or picked for an early refresh) is reloaded by the Get
//     that found it, which waits up to d for the refresh to land and
//     returns the refreshed value, or the entry it read; a reloaded value
//     not to be cached (Values.TTL answered 0) removes the entry instead
//     of replacing it and is returned all the same (entry.Format.ValueTTL);
//   - a Get whose local tier holds an expired entry still within its stale
//     bound (WithLocalStale), and whose read goes on to a fill, waits up to
//     d for the fill and returns the expired entry past it.
//
// Either way the load goes on in the background (tracked like other
// background work: Close cancels it and waits) and lands as any fill or
// refresh does, through its lease or its header compare-and-set, so a write
// that lands meanwhile still refuses it. Without the option a stale Redis
// entry is returned at once (its refresh runs in the background) and a
// local entry is served past its freshness only when Redis fails.

// refreshSoft runs, under WithSoftLoadTimeout, the refresh a hit res calls
// for and waits for it up to the soft timeout: it returns the refreshed
// value if it landed in time (a value not to be cached, once its refresh
// removed the entry), else res. ran is false without the option (the
// caller starts the refresh after answering, refreshAfterHit).
func (c *Engine[V]) refreshSoft(ctx context.Context, key, rkey string, res flight.Result[V], env wire.Envelope, load Loader[V]) (out flight.Result[V], ran bool) {
	if c.cfg.SoftLoadTimeout <= 0 {
		return res, false
	}
	if res.Tier != telemetry.TierRedis || res.R.Null {
		return res, true
	}
	done := c.maybeRefresh(ctx, key, rkey, env, load)
	if done == nil {
		return res, true
	}
	t := time.NewTimer(c.cfg.SoftLoadTimeout)
	defer t.Stop()
	select {
	case got := <-done:
		if got.landed {
			res.R = got.R
		}
		return res, true
	case <-t.C:
	case <-ctx.Done():
		return res, true
	}
	c.softTimedOut(ctx)
	return res, true
}

// waitFlight waits for the read of flight f. Under WithSoftLoadTimeout, with
// a servable expired local entry, it waits at most the soft timeout: soft
// reports that it ran out, and the flight goes on without this caller.
func (c *Engine[V]) waitFlight(ctx context.Context, f *flight.Flight[V], stale *local.Entry[V]) (res flight.Result[V], soft bool, err error) {
	if c.cfg.SoftLoadTimeout <= 0 || !c.Tier.ServableStale(stale) {
		res, err = f.Wait(ctx)
		return res, false, err
	}
	sctx, cancel := context.WithTimeout(ctx, c.cfg.SoftLoadTimeout)
	defer cancel()
	res, err = f.Wait(sctx)
	if err != nil && ctx.Err() == nil {
		c.softTimedOut(ctx)
		return res, true, nil
	}
	return res, false, err
}

// softTimedOut counts a Get answered stale past the soft timeout.
func (c *Engine[V]) softTimedOut(ctx context.Context) {
	c.Rec.SoftTimeouts.Add(1)
	c.Rec.TimedOut(ctx, true)
}
