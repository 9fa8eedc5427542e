package cache

import (
	"context"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/redis/go-redis/v9"
)

// writeKeys runs send as a write of keys that invalidates them (Delete,
// MarkStale, DeleteKeepingVersion): the keys are checked, the call goes
// through the circuit breaker, a failure is a Redis error for op, and once
// Redis has it, callers that arrive later load afresh and other instances
// drop the keys from their local tiers.
func (c *Cache[V]) writeKeys(ctx context.Context, op string, keys []string, send func(ctx context.Context) error) error {
	if c.isClosed() {
		return ErrClosed
	}
	for _, k := range keys {
		if k == "" {
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
	err = callerErr(ctx, call.Err(c.calls, ctx, 0, send))
	done(err)
	if err != nil {
		return c.redisError(keys[0], op, err)
	}
	c.forget(keys)
	c.afterWrite(ctx, keys...)
	return nil
}

// writeEach is writeKeys running script once per key (prefixed), with args,
// in one pipeline by SHA (runScripts).
func (c *Cache[V]) writeEach(ctx context.Context, op string, script *redis.Script, keys []string, args ...any) error {
	return c.writeKeys(ctx, op, keys, func(ctx context.Context) error {
		calls := make([]scriptCall, len(keys))
		for i, k := range keys {
			calls[i] = scriptCall{script, []string{c.cfg.prefix + k}, args}
		}
		_, err := runScripts(ctx, c.rdb, calls)
		return err
	})
}
