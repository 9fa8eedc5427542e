package cache

import (
	"context"
	"errors"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// BatchLoader loads the rows for keys in one go. Keys missing from the
// returned map are missing rows: they are cached as absences.
type BatchLoader[V any] func(ctx context.Context, keys []string) (map[string]V, error)

// GetMany returns the values for keys, loading all misses with one call to
// load. Keys that exist nowhere are absent from the result (not an error).
//
// Errors are per key. Keys that succeed are in the map whatever happened to
// the others; when some keys fail, the error is a *BatchError that holds the
// error of each failed key (Err, Keys) and lets errors.Is see all of them:
// errors.Is(err, ErrWaitTimeout) for a key whose lease another caller held
// past the wait budget (WithWait), ErrRedis for a key Redis failed and no
// stale entry or fallback load could answer, the loader's error for every key
// of the loader call that returned it, the context's error for keys left
// when ctx ended. A call that cannot start at all (a nil loader, an empty
// key, a closed cache, a context already ended) returns a nil map and that
// plain error, as Get would. A key of another Redis type (foreign data) is a
// miss, overwritten by the fill, not an error.
//
// Reads and lease writes are pipelined: one round trip per Redis node for the
// reads, one for the leases, one for the fills. Keys whose lease another
// caller holds are waited for (up to WithWait) and retried together, after
// the keys whose leases GetMany took are loaded. The fill runs detached from
// ctx, as a Get's does: if ctx ends first, GetMany returns what was decided
// and the fill goes on for whoever joined its reads; its leases are filled
// or released when it ends (Close cancels it and waits).
//
// GetMany shares Get's engine key by key (engine.go): a key whose read by a
// Get or another GetMany in this process is not sent yet is joined, and one
// whose read is under way is read again after it, not loaded again; hits
// get the same early refresh; fills are admitted to the local tier; a
// refused fill reads its key again; and when Redis
// fails (or the breaker is open), each key left without an answer gets Get's
// outage policy: a stale local entry, else a capped fallback load of that
// key, else the error.
func (c *Cache[V]) GetMany(ctx context.Context, keys []string, load BatchLoader[V]) (map[string]V, error) {
	if c.cfg.observer != nil {
		return c.observeGetMany(ctx, keys, load)
	}
	return c.getMany(ctx, keys, load)
}

func (c *Cache[V]) getMany(ctx context.Context, keys []string, load BatchLoader[V]) (map[string]V, error) {
	if load == nil {
		return nil, ErrNilLoader
	}
	// Close cancels a GetMany in flight and waits for it, so that the
	// leases it holds are released and its keep-alive goroutine is gone.
	leave, ok := c.enter()
	if !ok {
		return nil, ErrClosed
	}
	defer leave()
	ctx, cancel := c.untilClosed(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k == "" || wire.ReservedKey(k) {
			return nil, ErrInvalidKey
		}
	}
	seen := make(map[string]bool, len(keys))
	out := make(map[string]V, len(keys))
	var todo []string
	var stale map[string]*LocalEntry[V] // expired local entries, for an outage
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if c.hot != nil {
			c.hot.Record(k)
		}
		if c.local != nil {
			fresh, e := c.localGet(k)
			if fresh {
				c.stats.localHits.Add(1)
				c.observed(ctx, TierLocal)
				if !e.Null {
					out[k] = e.Value
				}
				continue
			}
			if e != nil {
				if stale == nil {
					stale = map[string]*LocalEntry[V]{}
				}
				stale[k] = e
			}
		}
		if !c.absent(ctx, c.cfg.filter, k) {
			todo = append(todo, k)
		}
	}
	// Keys another call in this process is about to read (a Get or a
	// GetMany) are joined; the keys this call leads are read and filled in
	// one batch, those not read here at the moment first, then those queued
	// behind a read under way here (flight.go). A key whose read was
	// abandoned is joined (or led) again.
	errs := map[string]error{} // per key; see BatchError
	for len(todo) > 0 {
		var ready, queued, joined []string
		var readyF, queuedF, joinedF []*flight[V]
		for _, k := range todo {
			f, lead := c.flights.join(c.rkey(k))
			switch {
			case lead && f.prev == nil:
				ready, readyF = append(ready, k), append(readyF, f)
				continue
			case lead:
				queued, queuedF = append(queued, k), append(queuedF, f)
			default:
				f.joined.Add(1)
				joined, joinedF = append(joined, k), append(joinedF, f)
			}
			c.event(ctx, evShared, k, nil)
		}
		todo = nil
		c.leadGroup(ctx, ready, readyF, load, stale, out, errs)
		c.leadGroup(ctx, queued, queuedF, load, stale, out, errs)
		for i, k := range joined {
			res, err := joinedF[i].wait(ctx)
			switch {
			case err != nil:
				errs[k] = err // our context ended: the rest end at once too
				continue
			case res.gone:
				if err := ctx.Err(); err != nil {
					errs[k] = err
					continue
				}
				todo = append(todo, k)
				continue
			case res.err != nil:
				c.settleMany(ctx, k, load, stale[k], res.err, out, errs)
				continue
			}
			c.countJoined(ctx, res)
			c.admit(k, res.r, res.r.size, joinedF[i].clock)
			if !res.r.null {
				out[k] = res.r.v
			}
		}
	}
	return out, newBatchError(keys, errs)
}

// leadGroup reads and fills the keys whose flights fs this GetMany leads,
// once the reads they are queued behind have finished; keys that fail get
// Get's outage policy, each on its own.
func (c *Cache[V]) leadGroup(ctx context.Context, keys []string, fs []*flight[V], load BatchLoader[V], stale map[string]*LocalEntry[V], out map[string]V, errs map[string]error) {
	var sent []string
	var sentF []*flight[V]
	for i, f := range fs {
		if err := f.send(ctx, c.localClock); err != nil {
			c.flights.finish(f, flightResult[V]{gone: true})
			errs[keys[i]] = err
			continue
		}
		sent, sentF = append(sent, keys[i]), append(sentF, f)
	}
	if len(sent) == 0 {
		return
	}
	b := &batch[V]{out: out, res: make(map[string]flightResult[V], len(sent)), errs: map[string]error{}}
	byKey := make(map[string]*flight[V], len(sent))
	for i, k := range sent {
		byKey[k] = sentF[i]
	}
	b.end = func(k string, res flightResult[V]) {
		if f := byKey[k]; f != nil {
			c.flights.finish(f, res)
		}
	}
	c.leadMany(ctx, sent, sentF, load, b)
	for _, k := range sent {
		if err, failed := b.errs[k]; failed {
			c.settleMany(ctx, k, load, stale[k], err, out, errs)
		}
	}
}

// settleMany answers key of a GetMany that failed with err as Get would: a
// stale local entry or a capped fallback load when Redis failed. What is
// left of the failure is recorded in errs, as key's own.
func (c *Cache[V]) settleMany(ctx context.Context, key string, load BatchLoader[V], e *LocalEntry[V], err error, out map[string]V, errs map[string]error) {
	v, err := c.unavailable(ctx, key, oneOf(load), e, err)
	switch {
	case err == nil:
		out[key] = v
	case errors.Is(err, ErrNotFound): // no row: absent, not an error
	default:
		errs[key] = err
	}
}

// oneOf loads one key through a batch loader.
func oneOf[V any](load BatchLoader[V]) Loader[V] {
	return func(ctx context.Context, key string) (V, error) {
		rows, err := load(ctx, []string{key})
		v, ok := rows[key]
		if err == nil && !ok {
			err = ErrNotFound
		}
		return v, err
	}
}
