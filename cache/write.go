package cache

import (
	"context"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The write skeleton every write of keys shares (Set, Delete, MarkStale,
// DeleteKeepingVersion), and Set and Delete on it.

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

// Set stores v under key with the configured (jittered) TTL, replacing any
// value or lease. A fill in flight for key is then refused, so it cannot
// overwrite v with what it loaded earlier.
func (c *Cache[V]) Set(ctx context.Context, key string, v V) error {
	if err := c.check(ctx, key); err != nil {
		return err
	}
	base, cacheable := c.valueTTL(key, v)
	if !cacheable {
		return c.Delete(ctx, key) // not to be cached: the old value must go (ttlfunc.go)
	}
	payload, tags, err := c.encodeTagged(key, v)
	if err != nil {
		return err
	}
	env, ttl := c.taggedEntry(false, 0, 0, payload, base, tags, c.now(), nil)
	// The key's version stays (versionkeep.go).
	return c.writeKeys(ctx, "set", []string{key}, func(ctx context.Context) error {
		// Through the queue of the key's node: a burst of Sets shares
		// round trips (readbatch.go).
		_, err := c.runScripts(ctx, []script.Call{{Script: setKeepingVersionScript, Keys: []string{c.rkey(key)}, Args: []any{env, px(ttl)}}})
		return err
	})
}

// Delete removes the keys' entries (values, cached absences and leases), so
// that the next Get loads afresh and no fill started before Delete can land.
// Keys are removed with UNLINK, pipelined (one round trip per node on a
// cluster; a lone key's UNLINK shares a round trip with the other commands
// under way on its node); empty keys are rejected.
func (c *Cache[V]) Delete(ctx context.Context, keys ...string) error {
	return c.writeKeys(ctx, "delete", keys, func(ctx context.Context) error {
		if len(keys) == 1 { // through the queue of the key's node (readbatch.go)
			rkey := c.rkey(keys[0])
			cmd := redis.NewIntCmd(ctx, "unlink", rkey)
			if err := c.send(ctx, rkey, cmd, nil); err != nil {
				return err
			}
			return cmd.Err()
		}
		_, err := pipe.Run(ctx, c.rdb.Pipeline(), func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Unlink(ctx, c.rkey(k))
			}
			return nil
		})
		return err
	})
}
