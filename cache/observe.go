package cache

import (
	"context"
	"sync/atomic"
)

// Tier says which part of the read path answered a Get or GetMany.
type Tier uint8

const (
	TierNone   Tier = iota // nothing answered: a Bloom filter rejection, or an error before any tier
	TierLocal              // the in-process tier
	TierRedis              // an entry read from Redis
	TierFill               // a fill run by another caller: coalesced in this process, or a lease wait across processes
	TierLoader             // this call's own loader (a fill, or a fallback load while Redis was down)
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
	Err       error // what the call returned (ErrNotFound included)
}

// Observer sees every Get and GetMany of a Cache, to build traces from (the
// otel module turns them into OpenTelemetry spans). Counters are not its job:
// Stats has them, read without any per-call cost.
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

// WithObserver calls o around every Get, GetMany and loader call. Without it
// (the default) the read path pays one nil check.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// observation is what one observed call learns on its way; the read path
// marks it through the context (observed).
type observation struct {
	tier   atomic.Uint32
	shared atomic.Bool
}

type observationKey struct{}

// raise records that the call reached t, keeping the deepest tier.
func (o *observation) raise(t Tier) {
	for {
		cur := o.tier.Load()
		if Tier(cur) >= t || o.tier.CompareAndSwap(cur, uint32(t)) {
			return
		}
	}
}

// observed marks the tier reached by the call whose context is ctx, if it is
// observed. Unobserved caches pay a nil check.
func (c *Cache[V]) observed(ctx context.Context, t Tier) {
	if c.cfg.observer == nil {
		return
	}
	if o, ok := ctx.Value(observationKey{}).(*observation); ok {
		o.raise(t)
	}
}

// observedShared marks the call whose context is ctx as coalesced.
func (c *Cache[V]) observedShared(ctx context.Context) {
	if c.cfg.observer == nil {
		return
	}
	if o, ok := ctx.Value(observationKey{}).(*observation); ok {
		o.shared.Store(true)
	}
}

// observeGet runs get under the observer: the loader is wrapped so that its
// calls are seen, and the call's context carries the observation the read
// path marks.
func (c *Cache[V]) observeGet(ctx context.Context, key string, load Loader[V]) (V, error) {
	obs := c.cfg.observer
	keys := []string{key}
	ctx, end := obs.StartGet(ctx, "Get", keys)
	o := &observation{}
	ctx = context.WithValue(ctx, observationKey{}, o)
	var wrapped Loader[V]
	if load != nil {
		wrapped = func(lctx context.Context, k string) (V, error) {
			o.raise(TierLoader)
			lctx, done := obs.StartLoad(lctx, keys)
			v, err := load(lctx, k)
			done(err)
			return v, err
		}
	}
	v, err := c.get(ctx, key, wrapped)
	end(GetInfo{Tier: Tier(o.tier.Load()), Coalesced: o.shared.Load(), Err: err})
	return v, err
}

// observeGetMany is observeGet for GetMany.
func (c *Cache[V]) observeGetMany(ctx context.Context, keys []string, load BatchLoader[V]) (map[string]V, error) {
	obs := c.cfg.observer
	ctx, end := obs.StartGet(ctx, "GetMany", keys)
	o := &observation{}
	ctx = context.WithValue(ctx, observationKey{}, o)
	var wrapped BatchLoader[V]
	if load != nil {
		wrapped = func(lctx context.Context, ks []string) (map[string]V, error) {
			o.raise(TierLoader)
			lctx, done := obs.StartLoad(lctx, ks)
			rows, err := load(lctx, ks)
			done(err)
			return rows, err
		}
	}
	out, err := c.getMany(ctx, keys, wrapped)
	end(GetInfo{Tier: Tier(o.tier.Load()), Err: err})
	return out, err
}
