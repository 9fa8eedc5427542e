package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// sharedFill runs the fill of flight f, detached from any one caller's
// context (keeping its values) so that the first caller giving up does not
// fail the others, and ends f with its result; Close cancels it (detached).
// Flights of one key run one after another, so a key has one fill under
// way here.
func (c *Cache[V]) sharedFill(ctx context.Context, f *flight[V], key, rkey string, load Loader[V]) {
	started := c.goBackground(func() {
		r, err := detached(c, ctx, "fill", key, func(ctx context.Context) (result[V], error) {
			return c.fill(ctx, key, rkey, load)
		})
		c.flights.finish(f, flightResult[V]{r: r, tier: TierFill, err: err})
	})
	if !started {
		c.flights.finish(f, flightResult[V]{err: ErrClosed})
	}
}

// fill is the fill of one key: the per-key state machine of fillMany
// (lease, wait, load, fill, heal; a refused fill read again) for a batch of
// one, so that Get and GetMany follow one set of rules.
func (c *Cache[V]) fill(ctx context.Context, key, rkey string, load Loader[V]) (result[V], error) {
	b := &batch[V]{res: make(map[string]flightResult[V], 1), errs: map[string]error{}}
	err := c.fillMany(ctx, []string{key}, batchOf(load), b)
	if res, ok := b.res[key]; ok {
		return res.r, nil
	}
	if kerr, ok := b.errs[key]; ok {
		return result[V]{}, kerr
	}
	if err == nil {
		err = fmt.Errorf("cacheguard: cache: %q left undecided", key)
	}
	return result[V]{}, err
}

// batchOf loads a batch of one key through a loader.
func batchOf[V any](load Loader[V]) BatchLoader[V] {
	return func(ctx context.Context, keys []string) (map[string]V, error) {
		v, err := load(ctx, keys[0])
		if err != nil {
			return nil, err // ErrNotFound: the key is missing
		}
		return map[string]V{keys[0]: v}, nil
	}
}

// callLoader runs load through runLoad.
func (c *Cache[V]) callLoader(ctx context.Context, key string, load Loader[V]) (v V, err error) {
	if err := c.limit(ctx, LimitLoad, key); err != nil {
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
func (c *Cache[V]) runLoad(ctx context.Context, what string, call func(context.Context) error) (err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.loadTimeout, errLoadTimeout)
	defer cancel()
	release, err := c.loadSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	c.stats.loads.Add(1)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cacheguard: cache: %s panicked: %v", what, p)
		}
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && context.Cause(ctx) == errLoadTimeout {
			c.stats.loadTimeouts.Add(1)
			c.observedTimeout(ctx, false)
		}
	}()
	return call(ctx)
}

// errLoadTimeout is the cause of a load's context ended by WithLoadTimeout.
var errLoadTimeout = fmt.Errorf("cacheguard: cache: load timeout: %w", context.DeadlineExceeded)

// fillDetached runs fillMany for a GetMany's misses as a Get's fill runs:
// detached from the caller's context (keeping its values), so that the
// caller giving up does not fail the others who joined its reads, and
// cancelled by Close (detached). If ctx ends first, the caller keeps what
// the fill decided so far and leaves; the fill goes on and ends the keys'
// flights.
func (c *Cache[V]) fillDetached(ctx context.Context, keys []string, load BatchLoader[V], b *batch[V]) error {
	fb := &batch[V]{res: make(map[string]flightResult[V], len(keys)), errs: map[string]error{}, end: b.end, mu: new(sync.Mutex)}
	done := make(chan struct{})
	var err error
	started := c.goBackground(func() {
		defer close(done)
		_, err = detached(c, ctx, "fill", keys, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, c.fillMany(ctx, keys, load, fb)
		})
		fb.endUndecided(keys, err)
	})
	if !started {
		return ErrClosed
	}
	var ferr error
	select {
	case <-done:
		ferr = err
	case <-ctx.Done():
		ferr = ctx.Err()
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	for k, res := range fb.res {
		b.put(k, res.r, res.tier)
	}
	for k, kerr := range fb.errs {
		b.fail(k, kerr)
	}
	return ferr
}
