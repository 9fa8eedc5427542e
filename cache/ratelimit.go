package cache

import (
	"context"
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
			return
		}
		c.limiter = func(ctx context.Context, load bool, key string) (bool, error) {
			op := LimitRead
			if load {
				op = LimitLoad
			}
			return l.Allow(ctx, op, key)
		}
	}
}
