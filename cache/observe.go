package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// Tier says which part of the read path answered a Get or GetMany.
type Tier uint8

const (
	TierNone   = Tier(telemetry.TierNone)   // nothing answered: a Bloom filter rejection, or an error before any tier
	TierLocal  = Tier(telemetry.TierLocal)  // the in-process tier
	TierRedis  = Tier(telemetry.TierRedis)  // an entry read from Redis
	TierFill   = Tier(telemetry.TierFill)   // a fill run by another caller: coalesced in this process, or a lease wait across processes
	TierLoader = Tier(telemetry.TierLoader) // this call's own loader (a fill, or a fallback load while Redis was down)
)

func (t Tier) String() string {
	switch t {
	case TierLocal:
		return "local"
	case TierRedis:
		return "redis"
	case TierFill:
		return "fill"
	case TierLoader:
		return "loader"
	}
	return "none"
}

// GetInfo describes a finished Get or GetMany to an Observer.
type GetInfo struct {
	// Tier is the deepest tier the call reached; for GetMany, over all keys.
	Tier Tier
	// Coalesced: the call's fill was shared with other callers in this
	// process (Get only). With Tier TierFill it waited for another caller's
	// loader; with TierLoader others waited for its own.
	Coalesced bool
	// LeaseWaited: the call's fill found another holder's lease (another
	// process, or an earlier caller of this one) and waited for it;
	// LeaseWait is how long, from the first refusal to the attempt that
	// ended the wait (it found the filled value, took the lease over, or
	// gave up). A coalesced caller reports the wait of the fill it shared
	// only if it ran that fill itself.
	LeaseWaited bool
	LeaseWait   time.Duration
	// EarlyRefresh: the call served a value and started a background
	// refresh of it ahead of its expiry (XFetch, or stale-while-revalidate).
	EarlyRefresh bool
	// SoftTimeout: the call returned a stale value because the reload it
	// waited for outlasted WithSoftLoadTimeout; the reload went on in the
	// background. LoadTimeout: a load of the call was stopped by
	// WithLoadTimeout (the hard limit).
	SoftTimeout bool
	LoadTimeout bool
	Err         error // what the call returned (ErrNotFound included)
}

// Observer sees every Get and GetMany of a Cache, to build traces from (the
// otel module turns them into OpenTelemetry spans). Counters are not its job:
// Stats has them, read without any per-call cost.
//
// A panicking Observer does not fail the call: the panic is recovered,
// counted in Stats.ObserverPanics and passed to the error handler
// (WithErrorHandler), and the call goes on unobserved from that point.
//
// If the Observer also implements ValueSizeObserver it is told the size of
// every entry read from or written to Redis.
//
// StartGet is called when a call begins (op is "Get" or "GetMany"); the
// context it returns is the one the call goes on with, and end is called
// once when the call returns. StartLoad wraps each call of the caller's
// loader the same way: its context is derived from the Get's, so a span
// started there is a child of the Get's span. Both run on the caller's
// goroutine (StartLoad on the fill's) and must be safe for concurrent use.
type Observer interface {
	StartGet(ctx context.Context, op string, keys []string) (context.Context, func(GetInfo))
	StartLoad(ctx context.Context, keys []string) (context.Context, func(error))
}

// ValueSizeObserver is an optional extension of Observer: ValueSize is called
// with op "read" and the encoded size in bytes (header and compression
// included) of every entry decoded from Redis, and with op "write" for every
// entry encoded to be written. It runs on the caller's goroutine, inside the
// read or write path: it must be quick and safe for concurrent use.
type ValueSizeObserver interface {
	ValueSize(op string, bytes int)
}

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
	v, err := c.eng.GetMarked(ctx, key, wrapped)
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
