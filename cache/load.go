package cache

import (
	"context"
	"errors"

	"golang.org/x/sync/singleflight"
)

// Bounds on what reaches the database: WithMaxLoads caps the loads running
// at once, and WithFallbackLoads lets a bounded number of loads through while
// Redis is unavailable (what a Get does then: breaker.go).

// WithFallbackLoads lets Get call its loader directly, without caching, when
// Redis is unavailable, with at most n such loads running at once in this
// process (callers of one key share a load). Callers beyond the cap get the
// Redis error. Off (0) by default: an outage of Redis then costs the database
// nothing.
func WithFallbackLoads(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.errs.Invalid("fallback loads %d must not be negative", n)
		}
		c.fallbackLoads = n
	}
}

// WithMaxLoads caps the loader calls running at once in this process, across
// all keys (fills, early refreshes and fallback loads alike). Leases already
// make it one load per key; the cap is for many keys missing together, as
// after a Redis restart or a mass expiry: loads beyond it wait their turn
// (their leases kept alive) instead of piling onto the database. Set it near
// the database connections this process may use. 0 (the default) means no
// cap.
func WithMaxLoads(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.errs.Invalid("max loads %d must not be negative", n)
		}
		c.maxLoads = n
	}
}

// loadSlot waits for a place under the WithMaxLoads cap; release gives it
// back.
func (c *Cache[V]) loadSlot(ctx context.Context) (release func(), err error) {
	if c.loadSem == nil {
		return noopRelease, nil
	}
	select {
	case c.loadSem <- struct{}{}:
		return c.releaseSlot, nil
	default:
	}
	if c.hooks != nil && c.hooks.onLoadWait != nil {
		c.hooks.onLoadWait()
	}
	select {
	case c.loadSem <- struct{}{}:
		return c.releaseSlot, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Cache[V]) releaseSlot() { <-c.loadSem }

func noopRelease() {}

// fallbackLoad answers a Get while Redis is unavailable: a direct load under
// the concurrency cap, shared by the callers of one key.
func (c *Cache[V]) fallbackLoad(ctx context.Context, key string, load Loader[V], redisErr error) (V, error) {
	var zero V
	if c.fallbackSem == nil {
		return zero, redisErr
	}
	// The shared load runs detached from any one caller (Close cancels it
	// and waits for it); each caller waits only as long as its own context.
	ch := make(chan singleflight.Result, 1)
	started := c.goBackground(func() {
		v, err, shared := c.fallbackGroup.Do(key, func() (any, error) {
			// Inside Do's function: a panic leaving it would be raised
			// again in every caller of Do, where nobody recovers it.
			return detached(c, ctx, "fallback load", key, func(ctx context.Context) (any, error) {
				select {
				case c.fallbackSem <- struct{}{}:
				default:
					c.stats.fallbackRejected.Add(1)
					return nil, redisErr
				}
				defer func() { <-c.fallbackSem }()
				c.stats.fallbackLoads.Add(1)
				v, err := c.callLoader(ctx, key, load)
				if errors.Is(err, ErrNotFound) {
					return result[V]{null: true}, nil
				}
				if err != nil {
					c.stats.loadErrors.Add(1)
					return nil, err
				}
				return result[V]{v: v}, nil
			})
		})
		ch <- singleflight.Result{Val: v, Err: err, Shared: shared}
	})
	if !started {
		return zero, ErrClosed
	}
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	if res.Err != nil {
		return zero, res.Err
	}
	r := res.Val.(result[V])
	if r.null {
		return zero, ErrNotFound
	}
	return r.v, nil
}
