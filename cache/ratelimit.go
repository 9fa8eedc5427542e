package cache

import (
	"context"
	"errors"
	"fmt"
)

// Rate limits per key. A key hot enough to take a Redis node's traffic, or
// reloaded over and over (written to constantly, too large to cache, Redis
// down), can send more reads to Redis or loads to the database than either
// should take for one key. WithKeyRateLimit puts a KeyLimiter in front of
// both: every GET of the key sent to Redis by Get, and every loader call for
// it (fills, early refreshes, the fallback loads of an outage), asks it
// first. A refused read or load is answered from the local tier's entry if
// there is one still within its stale bound (as in an outage), else with an
// error wrapping ErrRateLimited; nothing is sent on.
//
// With a hot-key detector (WithHotKeys) only the keys it says are hot are
// limited, so the limiter costs nothing on the rest of the traffic; without
// one every key is. GetMany is not limited: its batch reads (MGET) and batch
// loads do not ask the limiter. The ratelimit module provides a limiter shared by every
// instance through Redis (GCRA) that falls back to each instance's share
// when Redis fails.

// ErrRateLimited is returned by Get when the key's rate limit refused the
// Redis read or the load it needed and no local entry could answer instead.
var ErrRateLimited = errors.New("cacheguard: cache: rate limited")

// LimitOp says what a KeyLimiter is asked to admit.
type LimitOp uint8

const (
	// LimitRead is a read of the key sent to Redis.
	LimitRead LimitOp = iota + 1
	// LimitLoad is a call of the loader for the key (a database read).
	LimitLoad
)

func (op LimitOp) String() string {
	switch op {
	case LimitRead:
		return "read"
	case LimitLoad:
		return "load"
	}
	return fmt.Sprintf("LimitOp(%d)", uint8(op))
}

// KeyLimiter admits or refuses one operation on one key. Allow must be safe
// for concurrent use and bounded by ctx. A non-nil error says the decision
// was not taken the usual way (say, by a local fallback because Redis
// failed): the cache reports it to its logger and error handler and goes by
// allowed all the same.
type KeyLimiter interface {
	Allow(ctx context.Context, op LimitOp, key string) (allowed bool, err error)
}

// WithKeyRateLimit limits the Redis reads and the loads of each key with l
// (see KeyLimiter; with WithHotKeys, of hot keys only).
func WithKeyRateLimit(l KeyLimiter) Option {
	return func(c *config) {
		if l == nil {
			c.errs.Invalid("nil key rate limiter")
		}
		c.limiter = l
	}
}

// limit asks the limiter whether op on key may go ahead, and returns an error
// wrapping ErrRateLimited if not.
func (c *Cache[V]) limit(ctx context.Context, op LimitOp, key string) error {
	l := c.cfg.limiter
	if l == nil || (c.hot != nil && !c.hot.IsHot(key)) {
		return nil
	}
	ok, err := l.Allow(ctx, op, key)
	if err != nil {
		c.report(logRateLimiter, key, fmt.Errorf("cacheguard: cache: rate limiter: %w", err))
	}
	if ok {
		return nil
	}
	c.stats.rateLimited.Add(1)
	return fmt.Errorf("%w: %s of %q", ErrRateLimited, op, key)
}

// limitRead is limit for a Redis read, as read's answer: a refusal is an
// answer with its error, which Get turns into rateLimited's.
func (c *Cache[V]) limitRead(ctx context.Context, key string) (flightResult[V], bool) {
	if err := c.limit(ctx, LimitRead, key); err != nil {
		return flightResult[V]{err: err}, true
	}
	return flightResult[V]{}, false
}

// rateLimited answers a Get whose read or load was refused: with the local
// tier's entry past its freshness if an outage could serve it, else with err.
func (c *Cache[V]) rateLimited(e *LocalEntry[V], err error) (V, error) {
	var zero V
	if !c.servableStale(e) {
		return zero, err
	}
	c.stats.rateLimitedLocal.Add(1)
	if e.Null {
		return zero, ErrNotFound
	}
	return e.Value, nil
}

// limitLoads asks the limiter for a load of each pending key before the
// engine takes a lease for it: a refused key ends in b with its error (no
// lease left under it, no loader called); the admitted keys are returned.
func (c *Cache[V]) limitLoads(ctx context.Context, pending []string, b *batch[V]) []string {
	if c.cfg.limiter == nil {
		return pending
	}
	admitted := pending[:0:0]
	for _, k := range pending {
		if err := c.limit(ctx, LimitLoad, k); err != nil {
			b.fail(k, err)
			continue
		}
		admitted = append(admitted, k)
	}
	return admitted
}
