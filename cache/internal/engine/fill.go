package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// sharedFill runs the fill of flight f, detached from any one caller's
// context (keeping its values) so that the first caller giving up does not
// fail the others, and ends f with its result; Close cancels it (detached).
// Flights of one key run one after another, so a key has one fill under
// way here.
func (c *Engine[V]) sharedFill(ctx context.Context, f *flight.Flight[V], key, rkey string, load Loader[V]) {
	started := c.Life.Go(func() {
		r, err := life.Detached(c.Life, ctx, "fill", key, func(ctx context.Context) (entry.Result[V], error) {
			return c.fill(ctx, key, rkey, load)
		})
		c.flights.Finish(f, flight.Result[V]{R: r, Tier: telemetry.TierFill, Err: err})
	})
	if !started {
		c.flights.Finish(f, flight.Result[V]{Err: errs.ErrClosed})
	}
}

// fill is the fill of one key: the per-key state machine of fillMany
// (lease, wait, load, fill, heal; a refused fill read again) for a batch of
// one, so that Get and GetMany follow one set of rules.
func (c *Engine[V]) fill(ctx context.Context, key, rkey string, load Loader[V]) (entry.Result[V], error) {
	b := &batch[V]{res: make(map[string]flight.Result[V], 1), errs: map[string]error{}}
	err := c.fillMany(ctx, []string{key}, batchOf(load), b)
	if res, ok := b.res[key]; ok {
		return res.R, nil
	}
	if kerr, ok := b.errs[key]; ok {
		return entry.Result[V]{}, kerr
	}
	if err == nil {
		err = fmt.Errorf("cacheguard: cache: %q left undecided", key)
	}
	return entry.Result[V]{}, err
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

// fillDetached runs fillMany for a GetMany's misses as a Get's fill runs:
// detached from the caller's context (keeping its values), so that the
// caller giving up does not fail the others who joined its reads, and
// cancelled by Close (detached). If ctx ends first, the caller keeps what
// the fill decided so far and leaves; the fill goes on and ends the keys'
// flights.
func (c *Engine[V]) fillDetached(ctx context.Context, keys []string, load BatchLoader[V], b *batch[V]) error {
	fb := &batch[V]{res: make(map[string]flight.Result[V], len(keys)), errs: map[string]error{}, end: b.end, mu: new(sync.Mutex)}
	done := make(chan struct{})
	var err error
	started := c.Life.Go(func() {
		defer close(done)
		_, err = life.Detached(c.Life, ctx, "fill", keys, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, c.fillMany(ctx, keys, load, fb)
		})
		fb.endUndecided(keys, err)
	})
	if !started {
		return errs.ErrClosed
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
		b.put(k, res.R, res.Tier)
	}
	for k, kerr := range fb.errs {
		b.fail(k, kerr)
	}
	return ferr
}

// oneOf loads one key through a batch loader.
func oneOf[V any](load BatchLoader[V]) Loader[V] {
	return func(ctx context.Context, key string) (V, error) {
		rows, err := load(ctx, []string{key})
		v, ok := rows[key]
		if err == nil && !ok {
			err = errs.ErrNotFound
		}
		return v, err
	}
}
