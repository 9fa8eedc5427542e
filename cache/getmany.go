package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// BatchLoader loads the rows for keys in one go. Keys missing from the
// returned map are missing rows: they are cached as absences.
type BatchLoader[V any] func(ctx context.Context, keys []string) (map[string]V, error)

// GetMany returns the values for keys, loading all misses with one call to
// load. Keys that exist nowhere are absent from the result.
//
// Reads and lease writes are pipelined: one round trip per Redis node for the
// reads, one for the leases, one for the fills. Keys whose lease another
// caller holds are waited for (up to WithWait) and retried together. If the
// wait runs out, GetMany returns what it has with an error wrapping
// ErrWaitTimeout; after a Redis error it likewise returns what it has (local
// hits, say) with an error wrapping ErrRedis, and releases any lease it took.
// GetMany goes through the circuit breaker but has no stale or fallback
// answers: use Get for keys that must be served while Redis is down.
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
		if k == "" {
			return nil, ErrInvalidKey
		}
	}
	seen := make(map[string]bool, len(keys))
	out := make(map[string]V, len(keys))
	var todo []string
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if c.hot != nil {
			c.hot.Record(k)
		}
		if c.local != nil {
			if fresh, e := c.localGet(k); fresh {
				c.stats.localHits.Add(1)
				c.observed(ctx, TierLocal)
				if !e.Null {
					out[k] = e.Value
				}
				continue
			}
		}
		if !c.absent(ctx, c.cfg.filter, k) {
			todo = append(todo, k)
		}
	}
	if len(todo) == 0 {
		return out, nil
	}

	clock := c.localClock()
	gets := make([]*redis.StringCmd, len(todo))
	done, err := c.allow(todo[0])
	if err != nil {
		return out, err
	}
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range todo {
			gets[i] = p.Get(ctx, c.cfg.prefix+k)
		}
		return nil
	})
	err = callerErr(ctx, err)
	done(err)
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		return out, c.redisError(todo[0], "get many", err)
	}
	// Reply errors belong to single keys: read them key by key below.
	var misses []string
	for i, k := range todo {
		raw, err := gets[i].Bytes()
		err = callerErr(ctx, err)
		if isWrongType(err) { // another Redis type: foreign data, a miss
			c.stats.corrupt.Add(1)
			err = redis.Nil
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return out, c.redisError(k, "get many", err)
		}
		if err == nil {
			if r, _, ok := c.decodeHit(k, raw); ok {
				c.observed(ctx, TierRedis)
				c.admit(k, r, len(raw), clock)
				if !r.null {
					out[k] = r.v
				}
				continue
			}
		}
		c.stats.misses.Add(1)
		c.observed(ctx, TierFill)
		if !c.absent(ctx, c.cfg.missFilter, k) {
			misses = append(misses, k)
		}
	}
	if len(misses) == 0 {
		return out, nil
	}
	// Filled values reach the local tier on their next read from Redis.
	return out, c.fillMany(ctx, misses, load, out)
}

// fillMany takes leases on misses, loads the ones it holds with one loader
// call, and waits for the rest; it adds what it finds to out.
func (c *Cache[V]) fillMany(ctx context.Context, pending []string, load BatchLoader[V], out map[string]V) error {
	deadline := time.Now().Add(c.cfg.wait)
	backoff := minBackoff
	waited := false
	for {
		leases := make([]lease, len(pending))
		acq := make([]*redis.StatusCmd, len(pending))
		for i, k := range pending {
			l, err := newLease(c.cfg.prefix + k)
			if err != nil {
				return err
			}
			leases[i] = l
		}
		done, err := c.allow(pending[0])
		if err != nil {
			return err
		}
		_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, l := range leases {
				acq[i] = p.SetArgs(ctx, l.key, l.ph, redis.SetArgs{Mode: "NX", Get: true, TTL: c.cfg.lease})
			}
			return nil
		})
		c.observedAttempt(ctx)
		err = callerErr(ctx, err)
		done(err)
		// Read every reply before acting on an error, so that leases this
		// round did take are released rather than left to block others.
		var held []lease
		var heldKeys, waiting, foreign []string
		var foreignLeases []lease
		var foreignPrev [][]byte
		var firstErr error
		var lookalikes []int // indexes of pending whose lease may have no TTL
		for i, k := range pending {
			prev, err := acq[i].Bytes()
			err = callerErr(ctx, err)
			switch {
			case errors.Is(err, redis.Nil):
				held, heldKeys = append(held, leases[i]), append(heldKeys, k)
				continue
			case isWrongType(err):
				// Another Redis type: taken over below (nil prev).
				foreign, foreignLeases, foreignPrev = append(foreign, k), append(foreignLeases, leases[i]), append(foreignPrev, nil)
				continue
			case err != nil:
				if firstErr == nil {
					firstErr = c.redisError(k, "acquire lease", err)
				}
				continue
			}
			switch classify(prev) {
			case kindLease:
				if !waited {
					lookalikes = append(lookalikes, i)
				}
				waiting = append(waiting, k)
				continue
			case kindEnvelope:
				if r, _, ok := c.decodeEntry(k, prev); ok {
					if !r.null {
						out[k] = r.v
					}
					continue
				}
			}
			foreign, foreignLeases, foreignPrev = append(foreign, k), append(foreignLeases, leases[i]), append(foreignPrev, prev)
		}
		if firstErr != nil {
			// A SET whose reply was lost (a timeout, a cancelled context)
			// may have taken its lease: release every one this round tried
			// (the script leaves keys that are not ours alone).
			c.releaseLeases(ctx, leases)
			return firstErr
		}
		if len(lookalikes) > 0 {
			healed, err := c.healMany(ctx, pending, leases, acq, lookalikes)
			if err != nil {
				c.releaseLeases(ctx, held)
				return err
			}
			if len(healed) > 0 {
				still := waiting[:0]
				for _, k := range waiting {
					if l, ok := healed[k]; ok {
						held, heldKeys = append(held, l), append(heldKeys, k)
					} else {
						still = append(still, k)
					}
				}
				waiting = still
			}
		}
		for i, k := range foreign {
			var ok bool
			var err error
			if foreignPrev[i] == nil {
				ok, err = foreignLeases[i].takeOverType(ctx, c.rdb, c.cfg.lease)
			} else {
				ok, err = foreignLeases[i].takeOver(ctx, c.rdb, foreignPrev[i], c.cfg.lease)
			}
			if err != nil {
				c.releaseLeases(ctx, append(held, foreignLeases[i]))
				return c.redisError(k, "take over", err)
			}
			if ok {
				held, heldKeys = append(held, foreignLeases[i]), append(heldKeys, k)
			} else {
				waiting = append(waiting, k)
			}
		}
		if len(held) > 0 {
			if err := c.loadAndFillMany(ctx, heldKeys, held, load, out); err != nil {
				return err
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if !waited {
			waited = true
			c.stats.leaseWaits.Add(uint64(len(waiting)))
		}
		c.observedWait(ctx)
		if c.hooks.onLeaseWait != nil {
			for _, k := range waiting {
				c.hooks.onLeaseWait(k)
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			c.stats.waitTimeouts.Add(uint64(len(waiting)))
			if c.cfg.loadOnTimeout {
				return c.loadManyDirect(ctx, waiting, load, out)
			}
			return fmt.Errorf("%w: %d keys (first %q) after %v", ErrWaitTimeout, len(waiting), waiting[0], c.cfg.wait)
		}
		pending = waiting
		if err := pause(ctx, &backoff, left); err != nil {
			return err
		}
	}
}

// loadAndFillMany loads keys (whose leases we hold) with one loader call and
// fills them through their leases in one pipeline.
func (c *Cache[V]) loadAndFillMany(ctx context.Context, keys []string, leases []lease, load BatchLoader[V], out map[string]V) error {
	c.hold(leases...)
	defer c.unhold(leases...)
	var rows map[string]V
	var err error
	start := time.Now()
	c.whileLeased(ctx, leases, func() { rows, err = c.callBatchLoader(ctx, keys, load) })
	delta := time.Since(start)
	if err != nil {
		c.stats.loadErrors.Add(1)
		c.releaseLeases(ctx, leases)
		return err
	}
	envs := make([][]byte, len(keys))
	ttls := make([]time.Duration, len(keys))
	for i, k := range keys {
		v, found := rows[k]
		if !found {
			envs[i], ttls[i] = c.entry(true, 0, delta, nil)
			continue
		}
		out[k] = v
		payload, err := c.encode(k, v)
		if err != nil {
			c.uncacheable(k, err)
			continue // envs[i] stays nil: release instead of fill
		}
		envs[i], ttls[i] = c.entry(false, 0, delta, payload)
	}
	fills := make([]*redis.Cmd, len(keys))
	calls := make([]scriptCall, len(leases))
	for i, l := range leases {
		if envs[i] == nil {
			calls[i] = scriptCall{releaseScript, []string{l.key}, []any{l.ph}}
			continue
		}
		calls[i] = scriptCall{swapScript, []string{l.key}, []any{l.ph, envs[i], ttls[i].Milliseconds()}}
	}
	cmds, err := runScripts(ctx, c.rdb, calls)
	for i := range leases {
		if envs[i] != nil {
			fills[i] = cmds[i]
		}
	}
	if err != nil {
		c.report(keys[0], c.redisError(keys[0], "fill many", err))
		// The values are good; they are just not cached. Release the
		// leases that did not fill.
		c.releaseLeases(ctx, leases)
		return nil
	}
	for i, f := range fills {
		if f == nil {
			continue
		}
		if err := f.Err(); err != nil {
			c.report(keys[i], c.redisError(keys[i], "fill", err))
			continue
		}
		ok := f.Val() == int64(1)
		if !ok {
			c.stats.rejectedFills.Add(1)
		}
		if c.hooks.onFill != nil {
			c.hooks.onFill(keys[i], ok)
		}
	}
	return nil
}

// healMany takes, in one pipeline, the keys (pending[i] for i in idx) whose
// placeholder has no TTL (see healScript); it returns the leases it took.
func (c *Cache[V]) healMany(ctx context.Context, pending []string, leases []lease, acq []*redis.StatusCmd, idx []int) (map[string]lease, error) {
	calls := make([]scriptCall, len(idx))
	for j, i := range idx {
		prev, _ := acq[i].Bytes()
		calls[j] = scriptCall{healScript, []string{leases[i].key}, []any{prev, leases[i].ph, c.cfg.lease.Milliseconds()}}
	}
	cmds, err := runScripts(ctx, c.rdb, calls)
	healed := map[string]lease{}
	for j, i := range idx {
		if n, err := cmds[j].Int(); err == nil && n == 1 {
			healed[pending[i]] = leases[i]
		}
	}
	if err = callerErr(ctx, err); err != nil {
		c.releaseLeases(ctx, leasesOf(healed))
		return nil, c.redisError(pending[idx[0]], "check leases", err)
	}
	return healed, nil
}

func leasesOf(m map[string]lease) []lease {
	ls := make([]lease, 0, len(m))
	for _, l := range m {
		ls = append(ls, l)
	}
	return ls
}

func (c *Cache[V]) loadManyDirect(ctx context.Context, keys []string, load BatchLoader[V], out map[string]V) error {
	rows, err := c.callBatchLoader(ctx, keys, load)
	if err != nil {
		c.stats.loadErrors.Add(1)
		return err
	}
	for _, k := range keys {
		if v, ok := rows[k]; ok {
			out[k] = v
		}
	}
	return nil
}

func (c *Cache[V]) callBatchLoader(ctx context.Context, keys []string, load BatchLoader[V]) (rows map[string]V, err error) {
	err = c.runLoad(ctx, "batch loader", func(ctx context.Context) (err error) {
		rows, err = load(ctx, keys)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil // all missing
	}
	return rows, err
}
