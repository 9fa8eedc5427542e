package cache

import (
	"context"
	"github.com/cacheguard/cacheguard/internal/wire"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// writeKeys runs send as a write of keys that invalidates them (Set,
// Delete, MarkStale, DeleteKeepingVersion): the keys are checked, the call goes
// through the circuit breaker, a failure is a Redis error for op, and once
// Redis has it, callers that arrive later load afresh and other instances
// drop the keys from their local tiers.
func (c *Cache[V]) writeKeys(ctx context.Context, op string, keys []string, send func(ctx context.Context) error) error {
	if c.isClosed() {
		return ErrClosed
	}
	for _, k := range keys {
		if k == "" || wire.ReservedKey(k) {
			return ErrInvalidKey
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done, err := c.allow(keys[0])
	if err != nil {
		return err
	}
	_, err = boundedWrite(c, ctx, keys, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, send(ctx)
	}, nil)
	err = callerErr(ctx, err)
	done(err)
	if err != nil {
		return c.redisError(keys[0], op, err)
	}
	c.forget(keys)
	c.afterWrite(ctx, keys...)
	return nil
}

// boundedWrite runs send, a write of keys, bounded by ctx on any client
// (internal/call). A write given up on at the deadline may still land: if
// it does (no error, and landed(v) when landed is not nil), the keys are
// invalidated then, here and in the other instances, as if it had returned
// in time.
func boundedWrite[V, T any](c *Cache[V], ctx context.Context, keys []string, send func(context.Context) (T, error), landed func(T) bool) (T, error) {
	return call.Do(c.calls, ctx, 0, send, func(v T, err error) {
		if err == nil && (landed == nil || landed(v)) {
			c.forget(keys)
			c.afterWrite(ctx, keys...)
		}
	})
}

// writeEach is writeKeys running s once per key (prefixed), with args, in
// one pipeline by SHA (script.Run).
func (c *Cache[V]) writeEach(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) error {
	return c.writeKeys(ctx, op, keys, func(ctx context.Context) error {
		calls := make([]script.Call, len(keys))
		for i, k := range keys {
			calls[i] = script.Call{Script: s, Keys: []string{c.rkey(k)}, Args: args}
		}
		_, err := script.Run(ctx, c.rdb, calls)
		return err
	})
}
