package write

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/redis/go-redis/v9"
)

// The write skeleton every write of keys shares (Set, Delete, MarkStale,
// DeleteKeepingVersion), and Set and Delete on it.

// writeKeys runs send as a write of keys that invalidates them (Set,
// Delete, MarkStale, DeleteKeepingVersion): the keys are checked, the call goes
// through the circuit breaker, a failure is a Redis error for op, and once
// Redis has it, callers that arrive later load afresh and other instances
// drop the keys from their local tiers.
func (c *Writer[V]) writeKeys(ctx context.Context, op string, keys []string, send func(ctx context.Context) error) error {
	if c.Life.Closed() {
		return errs.ErrClosed
	}
	for _, k := range keys {
		if err := errs.CheckKey(k); err != nil {
			return err
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done, err := c.Redis.Allow(keys[0])
	if err != nil {
		return err
	}
	_, err = boundedWrite(c, ctx, keys, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, send(ctx)
	}, nil)
	err = errs.Caller(ctx, err)
	done(err)
	if err != nil {
		return c.Redis.Error(keys[0], op, err)
	}
	c.eng.Forget(keys)
	c.afterWrite(ctx, keys...)
	return c.replicated(ctx, op, keys[0], c.Keys.Keys(keys))
}

// boundedWrite runs send, a write of keys, bounded by ctx on any client
// (internal/call). A write given up on at the deadline may still land: if
// it does (no error, and landed(v) when landed is not nil), the keys are
// invalidated then, here and in the other instances, as if it had returned
// in time.
func boundedWrite[V, T any](c *Writer[V], ctx context.Context, keys []string, send func(context.Context) (T, error), landed func(T) bool) (T, error) {
	return call.Do(c.Redis.Calls(), ctx, 0, send, func(v T, err error) {
		if err == nil && (landed == nil || landed(v)) {
			c.eng.Forget(keys)
			c.afterWrite(ctx, keys...)
		}
	})
}

// writeEach is writeKeys running s once per key (prefixed), with d (named
// what, at least MinTTL: an expiry) as its argument, in one pipeline by SHA
// (script.Run).
func (c *Writer[V]) writeEach(ctx context.Context, op string, s *redis.Script, keys []string, what string, d time.Duration) error {
	if c.Life.Closed() {
		return errs.ErrClosed
	}
	if d < entry.MinTTL {
		return fmt.Errorf("%w: %s %v must be at least %v", errs.ErrInvalidArgument, what, d, entry.MinTTL)
	}
	return c.writeKeys(ctx, op, keys, func(ctx context.Context) error {
		calls := make([]script.Call, len(keys))
		for i, k := range keys {
			calls[i] = script.Call{Script: s, Keys: []string{c.Keys.Key(k)}, Args: []any{entry.PX(d)}}
		}
		_, err := script.Run(ctx, c.Redis.Client(), calls)
		return err
	})
}

// Set is cache.Set, which documents it.
func (c *Writer[V]) Set(ctx context.Context, key string, v V) error {
	if err := c.Life.Check(ctx, key); err != nil {
		return err
	}
	base, cacheable := c.Format.ValueTTL(key, v)
	if !cacheable {
		return c.Delete(ctx, key) // not to be cached: the old value must go (ttlfunc.go)
	}
	payload, tags, err := c.Format.EncodeTagged(key, v)
	if err != nil {
		return err
	}
	env, ttl := c.Format.TaggedEntry(false, 0, 0, payload, base, tags, c.Format.Now(), nil)
	// The key's version stays (versionkeep.go).
	return c.writeKeys(ctx, "set", []string{key}, func(ctx context.Context) error {
		// Through the queue of the key's node: a burst of Sets shares
		// round trips (readbatch.go).
		_, err := c.Redis.RunScripts(ctx, []script.Call{{Script: SetKeepingVersionScript, Keys: []string{c.Keys.Key(key)}, Args: []any{env, entry.PX(ttl)}}})
		return err
	})
}

// Delete is cache.Delete, which documents it.
func (c *Writer[V]) Delete(ctx context.Context, keys ...string) error {
	return c.writeKeys(ctx, "delete", keys, func(ctx context.Context) error {
		if len(keys) == 1 { // through the queue of the key's node (readbatch.go)
			rkey := c.Keys.Key(keys[0])
			cmd := redis.NewIntCmd(ctx, "unlink", rkey)
			if err := c.Redis.Send(ctx, rkey, cmd, nil); err != nil {
				return err
			}
			return cmd.Err()
		}
		_, err := pipe.Run(ctx, c.Redis.Client().Pipeline(), func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Unlink(ctx, c.Keys.Key(k))
			}
			return nil
		})
		return err
	})
}
