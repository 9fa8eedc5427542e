package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// batch collects what a GetMany's own reads and fills found, per key: a
// result, or the error of that key alone.
type batch[V any] struct {
	out  map[string]V
	res  map[string]flightResult[V]
	errs map[string]error
	// end hands a decided key's result to whoever joined its read at
	// once, not when the batch's slowest key is decided.
	end func(k string, res flightResult[V])
	// mu guards res and errs of a batch filled detached (fill.go).
	mu *sync.Mutex
}

// fail records err as k's error. An error that ends a whole step (a lost
// pipeline, the caller's context) is not recorded key by key: leadMany
// gives it to every key left without a result or an error of its own.
func (b *batch[V]) fail(k string, err error) {
	if b.mu != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if _, ok := b.res[k]; !ok {
		b.errs[k] = err
	}
}

func (b *batch[V]) put(k string, r result[V], tier Tier) {
	if b.mu != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if !r.null && b.out != nil {
		b.out[k] = r.v
	}
	b.res[k] = flightResult[V]{r: r, tier: tier}
	if b.end != nil {
		b.end(k, b.res[k])
	}
}

// leadMany reads the keys whose flights this GetMany leads, in one pipeline,
// fills the misses, and ends every one of the flights: with its result, or
// its error, or gone (whoever joined reads it again) if this call's context
// ended first. Every key ends with a result or an error in b.
func (c *Cache[V]) leadMany(ctx context.Context, todo []string, fs []*flight[V], load BatchLoader[V], b *batch[V]) {
	returned := false
	var err error
	defer func() {
		for i, k := range todo {
			res, ok := b.res[k]
			switch {
			case ok:
			case !returned: // a panic on the way: release the joiners, re-raise
				res = flightResult[V]{gone: true}
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
				res = flightResult[V]{err: kerr}
				if isCtxErr(kerr) {
					res = flightResult[V]{gone: true}
				}
			}
			c.flights.finish(fs[i], res)
		}
	}()
	err = c.readMany(ctx, todo, load, b)
	returned = true
}

// readMany is leadMany's work: what it does not decide key by key in b
// (none of them, or the ones a step left undecided) gets its error.
func (c *Cache[V]) readMany(ctx context.Context, todo []string, load BatchLoader[V], b *batch[V]) error {
	clock := c.localClock()
	gets := make([]*redis.StringCmd, len(todo))
	done, err := c.allow(todo[0])
	if err != nil {
		return err
	}
	// Bounded by ctx on any client (internal/call); abandoned, the
	// replies are not read (the error returns below).
	_, err = call.Do(c.calls, ctx, 0, func(ctx context.Context) (struct{}, error) {
		for i, k := range todo {
			gets[i] = redis.NewStringCmd(ctx, "get", c.rkey(k))
		}
		return struct{}{}, pipe.Send(ctx, c.rdb.Pipeline(), gets)
	}, nil)
	err = callerErr(ctx, err)
	done(err)
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		return c.redisError(todo[0], "get many", err)
	}
	// Reply errors belong to single keys: read them key by key below.
	// Tagged hits are checked together first: one read of tag times.
	raws, _, tagErr := dropInvalidatedMany(c, ctx, todo, gets, true)
	var misses []string
	for i, k := range todo {
		raw, err := gets[i].Bytes()
		err = callerErr(ctx, err)
		if isWrongType(err) { // another Redis type: foreign data, a miss
			c.stats.corrupt.Add(1)
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
			b.fail(k, c.redisError(k, "get many", err))
			continue
		}
		if err == nil {
			if r, env, ok := c.decodeHit(k, raw); ok {
				c.observed(ctx, TierRedis)
				c.admit(k, r, len(raw), clock)
				b.put(k, r, TierRedis)
				if !r.null {
					c.maybeRefresh(ctx, k, c.rkey(k), env, oneOf(load))
				}
				continue
			}
		}
		c.stats.misses.Add(1)
		c.observed(ctx, TierFill)
		if c.absent(ctx, c.cfg.missFilter, k) {
			b.put(k, result[V]{null: true, noLocal: true}, TierFill)
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
			c.admit(k, res.r, res.r.size, clock)
		}
	}
	return err
}

// endUndecided ends the flights of keys the batch left without a result,
// with their error, or err (gone if it is a context's).
func (b *batch[V]) endUndecided(keys []string, err error) {
	if b.end == nil {
		return
	}
	b.mu.Lock()
	var ends []string
	var errs []error
	for _, k := range keys {
		if _, ok := b.res[k]; ok {
			continue
		}
		kerr := b.errs[k]
		if kerr == nil {
			kerr = err
		}
		if kerr == nil {
			kerr = fmt.Errorf("cacheguard: cache: %q left undecided", k)
		}
		ends, errs = append(ends, k), append(errs, kerr)
	}
	b.mu.Unlock()
	for i, k := range ends {
		res := flightResult[V]{err: errs[i]}
		if isCtxErr(errs[i]) {
			res = flightResult[V]{gone: true}
		}
		b.end(k, res)
	}
}
