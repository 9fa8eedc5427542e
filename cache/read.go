package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// read is the GET of a read: the breaker, the command and the decoding. On
// a miss nothing usable is cached and a fill comes next; otherwise res is the
// answer: a hit, an error, or gone with the error if ctx ended.
func (c *Cache[V]) read(ctx context.Context, key, rkey string) (res flightResult[V], env envelope, miss bool) {
	if res, limited := c.limitRead(ctx, key); limited {
		return res, env, false
	}
	done, err := c.allow(key)
	if err != nil {
		return flightResult[V]{err: err}, env, false
	}
	raw, err := c.getRaw(ctx, rkey)
	err = callerErr(ctx, err)
	done(err)
	if isWrongType(err) { // another Redis type: foreign data, a miss
		c.stats.corrupt.Add(1)
		err = redis.Nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		if isCtxErr(err) {
			return flightResult[V]{gone: true, err: err}, env, false
		}
		return flightResult[V]{err: c.redisError(key, "get", err)}, env, false
	}
	if err == nil && wire.IsTagged(raw) {
		raws := [][]byte{raw}
		if _, err := c.dropInvalidated(ctx, key, raws, true); err != nil {
			return flightResult[V]{gone: isCtxErr(err), err: err}, env, false
		}
		if raw = raws[0]; raw == nil {
			err = redis.Nil // invalidated by a tag: a miss
		}
	}
	if err == nil {
		if r, env, ok := c.decodeHit(key, raw); ok {
			c.observed(ctx, TierRedis)
			return flightResult[V]{r: r, tier: TierRedis}, env, false
		}
	}
	return res, env, true
}

// decodeHit turns the bytes of a GET into a result, counting it; ok is false
// for a lease placeholder or bytes that are not a decodable envelope (a miss).
func (c *Cache[V]) decodeHit(key string, raw []byte) (result[V], envelope, bool) {
	if classify(raw) == kindLease || isVersionTombstone(raw) {
		return result[V]{}, envelope{}, false // a miss, not corrupt data
	}
	r, env, ok := c.decodeEntry(key, raw)
	if c.replicaReads {
		// Possibly read from a replica that has not caught up with a
		// write whose invalidation already arrived: an admission's clock
		// check cannot see that, and the tier would keep the old value
		// for its whole TTL after the replica caught up.
		r.noLocal = true
	}
	switch {
	case !ok:
		c.stats.corrupt.Add(1)
	case r.null:
		c.stats.nullHits.Add(1)
	default:
		c.stats.hits.Add(1)
	}
	return r, env, ok
}

// decodeEntry decodes an envelope read from key; ok is false for anything
// else, or for a payload the codec cannot decode (reported).
func (c *Cache[V]) decodeEntry(key string, raw []byte) (result[V], envelope, bool) {
	env, ok := decodeEnvelope(raw)
	if !ok {
		return result[V]{}, env, false
	}
	c.observedSize("read", len(raw))
	r := result[V]{null: env.Null(), size: len(raw), noLocal: env.Flags&(wire.FlagStale|wire.FlagRefreshing) != 0}
	if env.Tags != nil {
		r.tagged = stampOf(env.TagInfo)
	}
	if !r.null {
		v, err := c.decodePayload(env)
		if err != nil {
			c.report(logUndecodable, key, fmt.Errorf("cacheguard: cache: decode %q: %w", key, err))
			return result[V]{}, env, false
		}
		r.v = v
	}
	return r, env, true
}
