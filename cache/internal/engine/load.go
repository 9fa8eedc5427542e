package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/internal/kind"
	"golang.org/x/sync/singleflight"
)

// Bounds on what reaches the database: every load runs under the load
// timeout, WithMaxLoads caps the loads running at once, and
// WithFallbackLoads lets a bounded number of loads through while Redis is
// unavailable (what a Get does then: get.go, unavailable).

// callLoader runs load through runLoad.
func (c *Engine[V]) callLoader(ctx context.Context, key string, load Loader[V]) (v V, err error) {
	if err := c.limit(ctx, true, key); err != nil {
		return v, err
	}
	err = c.runLoad(ctx, fmt.Sprintf("loader for %q", key), func(ctx context.Context) (err error) {
		v, err = load(ctx, key)
		return err
	})
	return v, err
}

// runLoad runs one loader call: under the load timeout and the WithMaxLoads
// cap, counted, and with a panic turned into an error, since loads run on
// goroutines no caller could recover on.
func (c *Engine[V]) runLoad(ctx context.Context, what string, call func(context.Context) error) (err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.LoadTimeout, errLoadTimeout)
	defer cancel()
	release, err := c.loadSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	c.Rec.Loads.Add(1)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cacheguard: cache: %s panicked: %v", what, p)
		}
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && context.Cause(ctx) == errLoadTimeout {
			c.Rec.LoadTimeouts.Add(1)
			c.Rec.TimedOut(ctx, false)
		}
	}()
	return call(ctx)
}

// errLoadTimeout is the cause of a load's context ended by WithLoadTimeout.
var errLoadTimeout = kind.Errorf("cacheguard: cache: load timeout: %w", context.DeadlineExceeded)

// loadSlot waits for a place under the WithMaxLoads cap; release gives it
// back.
func (c *Engine[V]) loadSlot(ctx context.Context) (release func(), err error) {
	if c.loadSem == nil {
		return noopRelease, nil
	}
	select {
	case c.loadSem <- struct{}{}:
		return c.releaseSlot, nil
	default:
	}
	if c.Hooks != nil && c.Hooks.OnLoadWait != nil {
		c.Hooks.OnLoadWait()
	}
	select {
	case c.loadSem <- struct{}{}:
		return c.releaseSlot, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Engine[V]) releaseSlot() { <-c.loadSem }

func noopRelease() {}

// fallbackLoad answers a Get while Redis is unavailable: a direct load under
// the concurrency cap, shared by the callers of one key.
func (c *Engine[V]) fallbackLoad(ctx context.Context, key string, load Loader[V], redisErr error) (V, error) {
	var zero V
	if c.fallbackSem == nil {
		return zero, redisErr
	}
	// The shared load runs detached from any one caller (Close cancels it
	// and waits for it); each caller waits only as long as its own context.
	ch := make(chan singleflight.Result, 1)
	started := c.Life.Go(func() {
		v, err, shared := c.fallbackGroup.Do(key, func() (any, error) {
			// Inside Do's function: a panic leaving it would be raised
			// again in every caller of Do, where nobody recovers it.
			return life.Detached(c.Life, ctx, "fallback load", key, func(ctx context.Context) (any, error) {
				select {
				case c.fallbackSem <- struct{}{}:
				default:
					c.Rec.FallbackRejected.Add(1)
					return nil, redisErr
				}
				defer func() { <-c.fallbackSem }()
				c.Rec.FallbackLoads.Add(1)
				v, err := c.callLoader(ctx, key, load)
				if errors.Is(err, errs.ErrNotFound) {
					return entry.Result[V]{Null: true}, nil
				}
				if err != nil {
					c.Rec.LoadErrors.Add(1)
					return nil, err
				}
				return entry.Result[V]{V: v}, nil
			})
		})
		ch <- singleflight.Result{Val: v, Err: err, Shared: shared}
	})
	if !started {
		return zero, errs.ErrClosed
	}
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	if res.Err != nil {
		return zero, res.Err
	}
	r := res.Val.(entry.Result[V])
	if r.Null {
		return zero, errs.ErrNotFound
	}
	return r.V, nil
}
