package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// leadMany reads the keys whose flights this GetMany leads, in one pipeline,
// fills the misses, and ends every one of the flights: with its result, or
// its error, or gone (whoever joined reads it again) if this call's context
// ended first. Every key ends with a result or an error in b.
func (c *Engine[V]) leadMany(ctx context.Context, todo []string, fs []*flight.Flight[V], load BatchLoader[V], b *batch[V]) {
	returned := false
	var err error
	defer func() {
		for i, k := range todo {
			res, ok := b.res[k]
			switch {
			case ok:
			case !returned: // a panic on the way: release the joiners, re-raise
				res = flight.Result[V]{Gone: true}
			default:
				kerr, own := b.errs[k]
				if !own {
					// The step that failed left k undecided.
					kerr = err
					if kerr == nil {
						// Every path decides its keys; should one not,
						// the key fails rather than silently vanish.
						kerr = fmt.Errorf("cacheguard: cache: %q left undecided", k)
					}
					b.errs[k] = kerr
				}
				res = flight.Result[V]{Err: kerr}
				if errs.IsCtx(kerr) {
					res = flight.Result[V]{Gone: true}
				}
			}
			c.flights.Finish(fs[i], res)
		}
	}()
	err = c.readMany(ctx, todo, load, b)
	returned = true
}

// readMany is leadMany's work: what it does not decide key by key in b
// (none of them, or the ones a step left undecided) gets its error.
func (c *Engine[V]) readMany(ctx context.Context, todo []string, load BatchLoader[V], b *batch[V]) error {
	clock := c.Tier.Clock()
	gets := make([]*redis.StringCmd, len(todo))
	done, err := c.Redis.Allow(todo[0])
	if err != nil {
		return err
	}
	// Bounded by ctx on any client (internal/call); abandoned, the
	// replies are not read (the error returns below).
	_, err = call.Do(c.Redis.Calls(), ctx, 0, func(ctx context.Context) (struct{}, error) {
		for i, k := range todo {
			gets[i] = redis.NewStringCmd(ctx, "get", c.Keys.Key(k))
		}
		return struct{}{}, pipe.Send(ctx, c.Redis.Client().Pipeline(), gets)
	}, nil)
	err = errs.Caller(ctx, err)
	done(err)
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		return c.Redis.Error(todo[0], "get many", err)
	}
	// Reply errors belong to single keys: read them key by key below.
	// Tagged hits are checked together first: one read of tag times.
	raws, _, tagErr := dropInvalidatedMany(c, ctx, todo, gets, true)
	var misses []string
	for i, k := range todo {
		raw, err := gets[i].Bytes()
		err = errs.Caller(ctx, err)
		if errs.IsWrongType(err) { // another Redis type: foreign data, a miss
			c.Rec.Corrupt.Add(1)
			err = redis.Nil
		}
		if err == nil && wire.IsTagged(raw) {
			if tagErr != nil {
				b.fail(k, tagErr)
				continue
			}
			if raws[i] == nil {
				err = redis.Nil // invalidated by a tag: a miss
			}
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			// This key's reply failed (a refused command, a node that
			// did not answer): the others' replies still stand.
			b.fail(k, c.Redis.Error(k, "get many", err))
			continue
		}
		if err == nil {
			if r, env, ok := c.decodeHit(k, raw); ok {
				c.Rec.Reached(ctx, telemetry.TierRedis)
				c.Tier.Admit(k, r, len(raw), clock)
				b.put(k, r, telemetry.TierRedis)
				if !r.Null {
					c.maybeRefresh(ctx, k, c.Keys.Key(k), env, oneOf(load))
				}
				continue
			}
		}
		c.Rec.Misses.Add(1)
		c.Rec.Reached(ctx, telemetry.TierFill)
		if c.absent(ctx, c.cfg.MissFilter, k) {
			b.put(k, entry.Result[V]{Null: true, NoLocal: true}, telemetry.TierFill)
			continue
		}
		misses = append(misses, k)
	}
	if len(misses) == 0 {
		return nil
	}
	err = c.fillDetached(ctx, misses, load, b)
	for _, k := range misses { // as a Get's fill would be
		if res, ok := b.res[k]; ok {
			c.Tier.Admit(k, res.R, res.R.Size, clock)
		}
	}
	return err
}
