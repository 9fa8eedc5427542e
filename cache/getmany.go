package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
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
// the keys whose leases GetMany took are loaded. Leases GetMany took are
// released whatever ends the call.
//
// GetMany shares Get's path key by key: a key that a Get or another GetMany
// in this process is reading is joined, not read or loaded again (and they
// join GetMany's reads); hits get the same early refresh; and when Redis
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
		if k == "" {
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
			f, lead := c.flights.join(c.cfg.prefix + k)
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
			if c.hooks.onJoin != nil {
				c.hooks.onJoin(k)
			}
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
			c.flights.finish(c.cfg.prefix+keys[i], f, flightResult[V]{gone: true})
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
			c.flights.finish(c.cfg.prefix+k, f, res)
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

// batch collects what a GetMany's own reads and fills found, per key: a
// result, or the error of that key alone.
type batch[V any] struct {
	out  map[string]V
	res  map[string]flightResult[V]
	errs map[string]error
	// end hands a decided key's result to whoever joined its read at
	// once, not when the batch's slowest key is decided.
	end func(k string, res flightResult[V])
}

// fail records err as k's error. An error that ends a whole step (a lost
// pipeline, the caller's context) is not recorded key by key: leadMany
// gives it to every key left without a result or an error of its own.
func (b *batch[V]) fail(k string, err error) {
	if _, ok := b.res[k]; !ok {
		b.errs[k] = err
	}
}

func (b *batch[V]) put(k string, r result[V], tier Tier) {
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
						kerr = fmt.Errorf("cacheguard: %q left undecided", k)
					}
					b.errs[k] = kerr
				}
				res = flightResult[V]{err: kerr}
				if isCtxErr(kerr) {
					res = flightResult[V]{gone: true}
				}
			}
			c.flights.finish(c.cfg.prefix+k, fs[i], res)
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
		return c.redisError(todo[0], "get many", err)
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
					c.maybeRefresh(ctx, k, c.cfg.prefix+k, env, oneOf(load))
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
	err = c.fillMany(ctx, misses, load, b)
	for _, k := range misses { // as a Get's fill would be
		if res, ok := b.res[k]; ok {
			c.admit(k, res.r, res.r.size, clock)
		}
	}
	return err
}

// fillMany takes leases on misses, loads the ones it holds with one loader
// call, and waits for the rest; it adds what it finds to out.
func (c *Cache[V]) fillMany(ctx context.Context, pending []string, load BatchLoader[V], b *batch[V]) error {
	deadline := time.Now().Add(c.cfg.wait)
	backoff := minBackoff
	waited := false
	var refused refusals     // see refused.go
	var healChecked []string // keys whose lease without a TTL was looked for
	var w *fillWaiter        // listening for fills of the keys we wait for
	defer func() { w.leave() }()
	for {
		leases := make([]lease, len(pending))
		acq := make([]*redis.StatusCmd, len(pending))
		for i, k := range pending {
			l, err := c.newLease(c.cfg.prefix + k)
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
		var waitPrev [][]byte // the placeholder seen under waiting[i] (nil: none)
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
			case isReplyErr(err):
				// Redis refused this key's SET: no lease was taken, and
				// the other keys' replies stand.
				b.fail(k, c.redisError(k, "acquire lease", err))
				continue
			case err != nil:
				if firstErr == nil {
					firstErr = c.redisError(k, "acquire lease", err)
				}
				continue
			}
			switch classify(prev) {
			case kindLease:
				if !slices.Contains(healChecked, k) {
					healChecked = append(healChecked, k)
					lookalikes = append(lookalikes, i)
				}
				waiting, waitPrev = append(waiting, k), append(waitPrev, prev)
				continue
			case kindEnvelope:
				if r, _, ok := c.decodeEntry(k, prev); ok {
					b.put(k, r, TierFill)
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
				waiting, waitPrev = append(waiting, k), append(waitPrev, nil)
			}
		}
		if len(held) > 0 {
			again, err := c.loadAndFillMany(ctx, heldKeys, held, load, b, &refused)
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
				deadline, backoff = time.Now().Add(c.cfg.wait), minBackoff
				continue
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
				return c.loadManyDirect(ctx, waiting, load, b)
			}
			for _, k := range waiting {
				b.fail(k, fmt.Errorf("%w: %q after %v", ErrWaitTimeout, k, c.cfg.wait))
			}
			return nil
		}
		pending = waiting
		if w == nil {
			w = c.listenFills(ctx, c.prefixed(waiting))
		}
		if w != nil && w.ok && !c.markManyWaited(ctx, waiting, waitPrev) {
			continue // one of them was filled or released meanwhile: look again now
		}
		if err := c.awaitFill(ctx, w, &backoff, left, waiting[0]); err != nil {
			return err
		}
	}
}

// loadAndFillMany loads keys (whose leases we hold) with one loader call and
// fills them through their leases in one pipeline. A key whose fill was
// refused (a write landed meanwhile) is returned in again, to be read
// again, while refused allows; past it, it gets the value as loaded,
// uncached.
func (c *Cache[V]) loadAndFillMany(ctx context.Context, keys []string, leases []lease, load BatchLoader[V], b *batch[V], refused *refusals) (again []string, err error) {
	c.hold(leases...)
	defer c.unhold(leases...)
	var rows map[string]V
	start := time.Now()
	c.whileLeased(ctx, leases, func() { rows, err = c.callBatchLoader(ctx, keys, load) })
	delta := time.Since(start)
	if c.hooks.afterLoad != nil {
		for _, k := range keys {
			c.hooks.afterLoad(k)
		}
	}
	if err != nil {
		c.stats.loadErrors.Add(1)
		c.releaseLeases(ctx, leases)
		return nil, err
	}
	rs := make([]result[V], len(keys))
	calls := make([]scriptCall, len(keys))
	for i, k := range keys {
		v, found := rows[k]
		var env []byte
		var ttl time.Duration
		if !found {
			rs[i] = result[V]{null: true}
			env, ttl = c.entry(true, 0, delta, nil)
		} else if payload, err := c.encode(k, v); err != nil {
			c.uncacheable(k, err)
			rs[i] = result[V]{v: v, noLocal: true}
		} else {
			rs[i] = result[V]{v: v, size: len(payload)}
			env, ttl = c.entry(false, 0, delta, payload)
		}
		if env == nil { // release instead of fill
			calls[i] = scriptCall{releaseScript, []string{leases[i].key}, leases[i].releaseArgs()}
			continue
		}
		calls[i] = scriptCall{fillScript, []string{leases[i].key}, leases[i].fillArgs(env, ttl)}
	}
	cmds, err := runScripts(ctx, c.rdb, calls)
	if err != nil {
		c.report(logFillFailed, keys[0], c.redisError(keys[0], "fill many", err))
		// The values are good; they are just not cached. Release the
		// leases that did not fill.
		c.releaseLeases(ctx, leases)
		for i, k := range keys {
			c.filled(k, calls[i], false)
			b.put(k, rs[i], TierFill)
		}
		return nil, nil
	}
	for i, k := range keys {
		if calls[i].script != fillScript {
			b.put(k, rs[i], TierFill)
			continue
		}
		if err := cmds[i].Err(); err != nil {
			c.report(logFillFailed, k, c.redisError(k, "fill", err))
			c.filled(k, calls[i], false)
			b.put(k, rs[i], TierFill)
			continue
		}
		ok := cmds[i].Val() == int64(1)
		c.filled(k, calls[i], ok)
		if ok {
			b.put(k, rs[i], TierFill)
			continue
		}
		c.stats.rejectedFills.Add(1)
		if refused.again(c.cfg.wait) {
			again = append(again, k)
			continue
		}
		rs[i].noLocal = true
		b.put(k, rs[i], TierFill)
	}
	return again, nil
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

func (c *Cache[V]) loadManyDirect(ctx context.Context, keys []string, load BatchLoader[V], b *batch[V]) error {
	rows, err := c.callBatchLoader(ctx, keys, load)
	if err != nil {
		c.stats.loadErrors.Add(1)
		return err
	}
	for _, k := range keys {
		v, ok := rows[k]
		b.put(k, result[V]{v: v, null: !ok, noLocal: true}, TierFill)
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

func (c *Cache[V]) prefixed(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = c.cfg.prefix + k
	}
	return out
}

// markManyWaited marks the placeholders seen under keys as waited for; false
// means one of them changed meanwhile (or the marks could not be set, and
// only polling is left for them): the caller should look again before
// waiting.
func (c *Cache[V]) markManyWaited(ctx context.Context, keys []string, prev [][]byte) bool {
	var rkeys []string
	var prevs [][]byte
	for i, k := range keys {
		if prev[i] != nil {
			rkeys, prevs = append(rkeys, c.cfg.prefix+k), append(prevs, prev[i])
		}
	}
	if len(rkeys) == 0 {
		return true // no placeholder seen (a takeover race): polling covers it
	}
	held, err := c.markWaited(ctx, rkeys, prevs)
	if err != nil {
		return true
	}
	for _, h := range held {
		if !h {
			return false
		}
	}
	return true
}

// isReplyErr reports an error Redis answered for one command (it did not
// run); anything else (a lost connection, a timeout) leaves unknown whether
// the command ran.
func isReplyErr(err error) bool {
	var reply redis.Error
	return err != nil && !errors.Is(err, redis.Nil) && errors.As(err, &reply)
}

// filled tells the test hook whether a fill landed (calls to the release
// script, for a value that cannot be cached, are not fills).
func (c *Cache[V]) filled(k string, call scriptCall, ok bool) {
	if call.script == fillScript && c.hooks.onFill != nil {
		c.hooks.onFill(k, ok)
	}
}
