package engine

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// read is the GET of a read: the breaker, the command and the decoding. On
// a miss nothing usable is cached and a fill comes next; otherwise res is the
// answer: a hit, an error, or gone with the error if ctx ended.
func (c *Engine[V]) read(ctx context.Context, key, rkey string) (res flight.Result[V], env wire.Envelope, miss bool) {
	if res, limited := c.limitRead(ctx, key); limited {
		return res, env, false
	}
	done, err := c.Redis.Allow(key)
	if err != nil {
		return flight.Result[V]{Err: err}, env, false
	}
	raw, seed, fromCopy, err := c.getRaw(ctx, key, rkey)
	err = errs.Caller(ctx, err)
	done(err)
	if errs.IsWrongType(err) { // another Redis type: foreign data, a miss
		c.Rec.Corrupt.Add(1)
		err = redis.Nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		if errs.IsCtx(err) {
			return flight.Result[V]{Gone: true, Err: err}, env, false
		}
		return flight.Result[V]{Err: c.Redis.Error(key, "get", err)}, env, false
	}
	if err == nil && wire.IsTagged(raw) {
		raws := [][]byte{raw}
		if _, err := c.dropInvalidated(ctx, key, raws, true); err != nil {
			return flight.Result[V]{Gone: errs.IsCtx(err), Err: err}, env, false
		}
		if raw = raws[0]; raw == nil {
			err = redis.Nil // invalidated by a tag: a miss
		}
	}
	if err == nil {
		if r, env, ok := c.decodeHit(key, raw); ok {
			if fromCopy {
				// A copy may be a little older than the key (WithHotKeyCopies
				// bounds by how much): the local tier would keep it longer.
				r.NoLocal = true
				c.Rec.CopyReads.Add(1)
			}
			if seed != "" {
				c.seedCopy(ctx, key, seed, raw, env)
			}
			c.Rec.Reached(ctx, telemetry.TierRedis)
			return flight.Result[V]{R: r, Tier: telemetry.TierRedis}, env, false
		}
	}
	return res, env, true
}

// decodeHit turns the bytes of a GET into a result, counting it; ok is false
// for a lease placeholder or bytes that are not a decodable envelope (a miss).
func (c *Engine[V]) decodeHit(key string, raw []byte) (entry.Result[V], wire.Envelope, bool) {
	if entry.Classify(raw) == entry.Lease || wire.IsTombstone(raw) {
		return entry.Result[V]{}, wire.Envelope{}, false // a miss, not corrupt data
	}
	r, env, ok := c.Format.Decode(key, raw)
	if c.Redis.ReplicaReads() {
		// Possibly read from a replica that has not caught up with a
		// write whose invalidation already arrived: an admission's clock
		// check cannot see that, and the tier would keep the old value
		// for its whole TTL after the replica caught up.
		r.NoLocal = true
	}
	switch {
	case !ok:
		c.Rec.Corrupt.Add(1)
	case r.Null:
		c.Rec.NullHits.Add(1)
	default:
		c.Rec.Hits.Add(1)
	}
	return r, env, ok
}

// refreshAfterHit starts an early refresh of a value just read from Redis,
// if it is due (after the read's callers have their answer).
func (c *Engine[V]) refreshAfterHit(ctx context.Context, key, rkey string, res flight.Result[V], env wire.Envelope, load Loader[V]) {
	if res.Tier == telemetry.TierRedis && !res.R.Null {
		c.maybeRefresh(ctx, key, rkey, env, load)
	}
}
