package cache

import (
	"context"
	"fmt"

	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// WithObserver calls o around every Get, GetMany and loader call. Without it
// (the default) the read path pays one nil check.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = o }
}

// recoverObserver, deferred around a call into the Observer, turns its panic
// into a count and a report: observing must never fail the call observed.
func (c *Cache[V]) recoverObserver(what string) {
	if p := recover(); p != nil {
		c.rec.ObserverPanics.Add(1)
		c.rec.Report(telemetry.ObserverPanic, "", fmt.Errorf("cacheguard: cache: observer %s panicked: %v", what, p))
	}
}

// startGet calls the Observer's StartGet; a panic leaves the call
// unobserved (its context as it was, an end that does nothing).
func (c *Cache[V]) startGet(ctx context.Context, op string, keys []string) (context.Context, func(GetInfo)) {
	octx, end := ctx, func(GetInfo) {}
	func() {
		defer c.recoverObserver("StartGet")
		nctx, e := c.observer.StartGet(ctx, op, keys)
		if nctx != nil && e != nil {
			octx, end = nctx, e
		}
	}()
	return octx, func(gi GetInfo) {
		defer c.recoverObserver("end of " + op)
		end(gi)
	}
}

// startLoad calls the Observer's StartLoad the same way.
func (c *Cache[V]) startLoad(ctx context.Context, keys []string) (context.Context, func(error)) {
	lctx, done := ctx, func(error) {}
	func() {
		defer c.recoverObserver("StartLoad")
		nctx, d := c.observer.StartLoad(ctx, keys)
		if nctx != nil && d != nil {
			lctx, done = nctx, d
		}
	}()
	return lctx, func(err error) {
		defer c.recoverObserver("end of load")
		done(err)
	}
}

// observeGet runs Get under the observer: the loader is wrapped so that its
// calls are seen, and the call's context carries the observation the read
// path marks (internal/telemetry).
func (c *Cache[V]) observeGet(ctx context.Context, key string, load Loader[V]) (V, error) {
	keys := []string{key}
	ctx, end := c.startGet(ctx, "Get", keys)
	ctx, o := telemetry.Observe(ctx)
	var wrapped Loader[V]
	if load != nil {
		wrapped = func(lctx context.Context, k string) (V, error) {
			if telemetry.Of(lctx) == o { // not a background refresh
				o.Raise(telemetry.TierLoader)
			}
			lctx, done := c.startLoad(lctx, keys)
			v, err := load(lctx, k)
			done(err)
			return v, err
		}
	}
	var v V
	err := c.gens.Await(ctx)
	if err == nil {
		v, err = c.eng.GetMarked(ctx, key, wrapped)
	}
	end(infoOf(o, err))
	return v, err
}

// observeGetMany is observeGet for GetMany.
func (c *Cache[V]) observeGetMany(ctx context.Context, keys []string, load BatchLoader[V]) (map[string]V, error) {
	ctx, end := c.startGet(ctx, "GetMany", keys)
	ctx, o := telemetry.Observe(ctx)
	var wrapped BatchLoader[V]
	if load != nil {
		wrapped = func(lctx context.Context, ks []string) (map[string]V, error) {
			if telemetry.Of(lctx) == o { // not a background refresh
				o.Raise(telemetry.TierLoader)
			}
			lctx, done := c.startLoad(lctx, ks)
			rows, err := load(lctx, ks)
			done(err)
			return rows, err
		}
	}
	out, err := c.getMany(ctx, keys, wrapped)
	o.Unshare() // GetMany does not coalesce
	end(infoOf(o, err))
	return out, err
}

// infoOf is what the call observed by o learnt, for the Observer.
func infoOf(o *telemetry.Observation, err error) GetInfo {
	m := o.Marks()
	return GetInfo{Tier: Tier(m.Tier), Coalesced: m.Shared, EarlyRefresh: m.Early,
		SoftTimeout: m.SoftTimeout, LoadTimeout: m.Timeout, LeaseWaited: m.LeaseWaited, LeaseWait: m.LeaseWait, Err: err}
}

// sizesOf returns what hands entry sizes to the Observer, if it wants them.
func (c *Cache[V]) sizesOf(o Observer) func(op string, n int) {
	sizes, ok := o.(ValueSizeObserver)
	if !ok {
		return nil
	}
	return func(op string, n int) {
		defer c.recoverObserver("ValueSize")
		sizes.ValueSize(op, n)
	}
}
