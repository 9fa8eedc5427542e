package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/lease"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// fillMany is the read engine's per-key state machine after a miss, run
// for a batch of keys (Get runs it for one, fill.go): take the lease (SET
// NX GET, which also reads the key again), or find the value someone
// filled, or take over foreign bytes or a placeholder of its own that none
// of its fills holds (held.go), or heal a lease without a TTL (once
// per key), or wait for the holder (notified or polling, one wait budget);
// load the keys it holds with one loader call and fill them (loadfill.go);
// read a key whose fill was refused again (refused.go). Past the wait
// budget it follows WithLoadOnWaitTimeout. Every key ends with a result or
// an error in b, or is left to the step error returned.
func (c *Engine[V]) fillMany(ctx context.Context, pending []string, load BatchLoader[V], b *batch[V]) error {
	if pending = c.limitLoads(ctx, pending, b); len(pending) == 0 {
		return nil
	}
	deadline := time.Now().Add(c.cfg.Wait)
	backoff := lease.MinBackoff
	waited := false
	var refused refusals     // see refused.go
	var healChecked []string // keys whose lease without a TTL was looked for
	var w *lease.Waiter      // listening for fills of the keys we wait for
	defer func() { w.Leave() }()
	var round []lease.Lease // registered as held until the round ends (held.go)
	defer func() { c.unhold(round...) }()
	for {
		c.unhold(round...)
		leases := make([]lease.Lease, len(pending))
		acq := make([]*redis.StatusCmd, len(pending))
		for i, k := range pending {
			leases[i] = c.Leases.New(c.Keys.Key(k))
		}
		round = leases
		c.hold(round...)
		done, err := c.Redis.Allow(pending[0])
		if err != nil {
			return err
		}
		err = c.Leases.Acquire(ctx, leases, acq)
		c.Rec.Attempt(ctx)
		err = errs.Caller(ctx, err)
		done(err)
		// Read every reply before acting on an error, so that leases this
		// round did take are released rather than left to block others.
		var held []lease.Lease
		var heldKeys, waiting, foreign []string
		var waitPrev [][]byte // the placeholder seen under waiting[i] (nil: none)
		var foreignLeases []lease.Lease
		var foreignPrev [][]byte
		var firstErr error
		var lookalikes []int // indexes of pending whose lease may have no TTL
		// Envelopes found under tagged keys are checked together: one
		// read of tag times for the round.
		// The times read are the tags' times before any load of this
		// round starts: its fills record them (tags_check.go).
		tagged, seen, tagErr := dropInvalidatedMany(c, ctx, pending, acq, false)
		for i, k := range pending {
			prev, err := acq[i].Bytes()
			err = errs.Caller(ctx, err)
			switch {
			case errors.Is(err, redis.Nil):
				held, heldKeys = append(held, leases[i]), append(heldKeys, k)
				continue
			case errs.IsWrongType(err):
				// Another Redis type: taken over below (nil prev).
				foreign, foreignLeases, foreignPrev = append(foreign, k), append(foreignLeases, leases[i]), append(foreignPrev, nil)
				continue
			case errs.IsReply(err):
				// Redis refused this key's SET: no lease was taken, and
				// the other keys' replies stand.
				b.fail(k, c.Redis.Error(k, "acquire lease", err))
				continue
			case err != nil:
				if firstErr == nil {
					firstErr = c.Redis.Error(k, "acquire lease", err)
				}
				continue
			}
			switch entry.Classify(prev) {
			case entry.Lease:
				if string(wire.PlaceholderBase(prev)) == leases[i].Placeholder() {
					// Our own SET landed already: go-redis sent it again
					// after losing its reply, and the GET of the second
					// read the first one's placeholder. The lease is ours.
					held, heldKeys = append(held, leases[i]), append(heldKeys, k)
					continue
				}
				if c.orphan(prev) {
					break // ours and held by no fill of ours (held.go): taken over below
				}
				if !slices.Contains(healChecked, k) {
					healChecked = append(healChecked, k)
					lookalikes = append(lookalikes, i)
				}
				waiting, waitPrev = append(waiting, k), append(waitPrev, prev)
				continue
			case entry.Envelope:
				if wire.IsTagged(prev) {
					// Invalidated by a tag: taken over like foreign bytes.
					if tagErr != nil {
						b.fail(k, tagErr)
						continue
					}
					if tagged[i] == nil {
						break
					}
				}
				if r, _, ok := c.Format.Decode(k, prev); ok {
					b.put(k, r, telemetry.TierFill)
					continue
				}
			}
			foreign, foreignLeases, foreignPrev = append(foreign, k), append(foreignLeases, leases[i]), append(foreignPrev, prev)
		}
		if firstErr != nil {
			// A SET whose reply was lost (a timeout, a cancelled context)
			// may have taken its lease: release every one this round tried
			// (the script leaves keys that are not ours alone).
			c.Leases.Release(ctx, leases)
			return firstErr
		}
		if len(lookalikes) > 0 {
			healed, err := c.healMany(ctx, pending, leases, acq, lookalikes)
			if err != nil {
				c.Leases.Release(ctx, held)
				return err
			}
			if len(healed) > 0 {
				still, stillPrev := waiting[:0], waitPrev[:0]
				for i, k := range waiting {
					if l, ok := healed[k]; ok {
						held, heldKeys = append(held, l), append(heldKeys, k)
					} else {
						still, stillPrev = append(still, k), append(stillPrev, waitPrev[i])
					}
				}
				waiting, waitPrev = still, stillPrev
			}
		}
		for i, k := range foreign {
			var ok bool
			var err error
			if foreignPrev[i] == nil {
				ok, err = c.Leases.TakeOverType(ctx, foreignLeases[i])
			} else {
				ok, err = c.Leases.TakeOver(ctx, foreignLeases[i], foreignPrev[i])
			}
			if err != nil {
				c.Leases.Release(ctx, append(held, foreignLeases[i]))
				return c.Redis.Error(k, "take over", err)
			}
			if ok {
				held, heldKeys = append(held, foreignLeases[i]), append(heldKeys, k)
			} else {
				waiting, waitPrev = append(waiting, k), append(waitPrev, nil)
			}
		}
		if len(held) > 0 {
			again, err := c.loadAndFillMany(ctx, heldKeys, held, load, b, &refused, seen)
			if err != nil {
				// The loader's error is the error of the keys it was
				// asked for; keys another caller is filling are still
				// waited for.
				for _, k := range heldKeys {
					b.fail(k, err)
				}
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
			}
			if len(again) > 0 {
				// Refused fills: read those keys again now, each
				// wait with a budget of its own.
				pending = append(waiting, again...)
				deadline, backoff = time.Now().Add(c.cfg.Wait), lease.MinBackoff
				continue
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		ev := evLeaseWait
		if waited {
			ev = evLeaseWaitOn
		}
		waited = true
		for _, k := range waiting {
			c.event(ctx, ev, k, nil)
		}
		left := time.Until(deadline)
		if left <= 0 {
			for _, k := range waiting {
				c.event(ctx, evWaitTimeout, k, nil)
			}
			if c.cfg.LoadOnTimeout {
				return c.loadManyDirect(ctx, waiting, load, b)
			}
			for _, k := range waiting {
				b.fail(k, fmt.Errorf("%w: %q after %v", errs.ErrWaitTimeout, k, c.cfg.Wait))
			}
			return nil
		}
		pending = waiting
		if w == nil {
			w = c.Leases.Listen(ctx, c.Keys.Keys(waiting))
		}
		if w != nil && w.OK && !c.markManyWaited(ctx, waiting, waitPrev) {
			continue // one of them was filled or released meanwhile: look again now
		}
		if err := c.Leases.Await(ctx, w, &backoff, left, waiting[0]); err != nil {
			return err
		}
	}
}
