package engine

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// GetMany reads keys as cache.GetMany documents: it returns the values
// found, the error of each key that failed (nil: none), or a plain error
// when the call cannot start at all. It shares Get's engine key by key: a
// key whose read by a Get or another GetMany in this process is not sent
// yet is joined, and one whose read is under way is read again after it,
// not loaded again; hits get the same early refresh; fills are admitted to
// the local tier; a refused fill reads its key again; and each key left
// without an answer when Redis fails gets Get's outage policy.
func (c *Engine[V]) GetMany(ctx context.Context, keys []string, load BatchLoader[V]) (map[string]V, map[string]error, error) {
	if load == nil {
		return nil, nil, errs.ErrNilLoader
	}
	// Close cancels a GetMany in flight and waits for it, so that the
	// leases it holds are released and its keep-alive goroutine is gone.
	leave, ok := c.Life.Enter()
	if !ok {
		return nil, nil, errs.ErrClosed
	}
	defer leave()
	ctx, cancel := c.Life.UntilClosed(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		if err := errs.CheckKey(k); err != nil {
			return nil, nil, err
		}
	}
	seen := make(map[string]bool, len(keys))
	out := make(map[string]V, len(keys))
	var todo []string
	var stale map[string]*local.Entry[V] // expired local entries, for an outage
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if c.Hot != nil {
			c.Hot.Record(k)
		}
		if c.Tier != nil {
			fresh, e := c.Tier.Get(k)
			if fresh {
				c.Rec.LocalHits.Add(1)
				c.Rec.Reached(ctx, telemetry.TierLocal)
				if !e.Null {
					out[k] = e.Value
				}
				continue
			}
			if e != nil {
				if stale == nil {
					stale = map[string]*local.Entry[V]{}
				}
				stale[k] = e
			}
		}
		if !c.absent(ctx, c.cfg.Filter, k) {
			todo = append(todo, k)
		}
	}
	// Keys another call in this process is about to read (a Get or a
	// GetMany) are joined; the keys this call leads are read and filled in
	// one batch, those not read here at the moment first, then those queued
	// behind a read under way here (internal/flight). A key whose read was
	// abandoned is joined (or led) again.
	failed := map[string]error{} // per key; see cache.BatchError
	for len(todo) > 0 {
		var ready, queued, joined []string
		var readyF, queuedF, joinedF []*flight.Flight[V]
		for _, k := range todo {
			f, lead := c.flights.Join(c.Keys.Key(k))
			switch {
			case lead && !f.Prev():
				ready, readyF = append(ready, k), append(readyF, f)
				continue
			case lead:
				queued, queuedF = append(queued, k), append(queuedF, f)
			default:
				f.Joined.Add(1)
				joined, joinedF = append(joined, k), append(joinedF, f)
			}
			c.event(ctx, evShared, k, nil)
		}
		todo = nil
		c.leadGroup(ctx, ready, readyF, load, stale, out, failed)
		c.leadGroup(ctx, queued, queuedF, load, stale, out, failed)
		for i, k := range joined {
			res, err := joinedF[i].Wait(ctx)
			switch {
			case err != nil:
				failed[k] = err // our context ended: the rest end at once too
				continue
			case res.Gone:
				if err := ctx.Err(); err != nil {
					failed[k] = err
					continue
				}
				todo = append(todo, k)
				continue
			case res.Err != nil:
				c.settleMany(ctx, k, load, stale[k], res.Err, out, failed)
				continue
			}
			c.countJoined(ctx, res)
			c.Tier.Admit(k, res.R, res.R.Size, joinedF[i].Clock())
			if !res.R.Null {
				out[k] = res.R.V
			}
		}
	}
	return out, failed, nil
}

// leadGroup reads and fills the keys whose flights fs this GetMany leads,
// once the reads they are queued behind have finished; keys that fail get
// Get's outage policy, each on its own.
func (c *Engine[V]) leadGroup(ctx context.Context, keys []string, fs []*flight.Flight[V], load BatchLoader[V], stale map[string]*local.Entry[V], out map[string]V, failed map[string]error) {
	var sent []string
	var sentF []*flight.Flight[V]
	for i, f := range fs {
		if err := f.Send(ctx, c.Tier.Clock); err != nil {
			c.flights.Finish(f, flight.Result[V]{Gone: true})
			failed[keys[i]] = err
			continue
		}
		sent, sentF = append(sent, keys[i]), append(sentF, f)
	}
	if len(sent) == 0 {
		return
	}
	b := &batch[V]{out: out, res: make(map[string]flight.Result[V], len(sent)), errs: map[string]error{}}
	byKey := make(map[string]*flight.Flight[V], len(sent))
	for i, k := range sent {
		byKey[k] = sentF[i]
	}
	b.end = func(k string, res flight.Result[V]) {
		if f := byKey[k]; f != nil {
			c.flights.Finish(f, res)
		}
	}
	c.leadMany(ctx, sent, sentF, load, b)
	for _, k := range sent {
		if err, ok := b.errs[k]; ok {
			c.settleMany(ctx, k, load, stale[k], err, out, failed)
		}
	}
}

// settleMany answers key of a GetMany that failed with err as Get would: a
// stale local entry or a capped fallback load when Redis failed. What is
// left of the failure is recorded in failed, as key's own.
func (c *Engine[V]) settleMany(ctx context.Context, key string, load BatchLoader[V], e *local.Entry[V], err error, out map[string]V, failed map[string]error) {
	v, err := c.unavailable(ctx, key, oneOf(load), e, err)
	switch {
	case err == nil:
		out[key] = v
	case errors.Is(err, errs.ErrNotFound): // no row: absent, not an error
	default:
		failed[key] = err
	}
}
